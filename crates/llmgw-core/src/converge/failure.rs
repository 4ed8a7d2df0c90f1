//! Why a build failed: [`BuildFailure`], one variant per step that can
//! fail, each carrying what the sentence needs. `Display` writes the
//! sentence a status shows; [`BuildFailure::check`] follows from the
//! variant; paths are made relative to the engines directory when the
//! failure is rendered ([`BuildFailure::relative_to`]), so that a report
//! names no temporary directory.

use std::path::Path;

use super::status::Check;
use crate::release::{ReleaseError, VerifyError};
use crate::system::SysError;

/// Why a build failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildFailure {
    /// Release metadata or an asset is missing, or an asset has no usable
    /// digest (it is never downloaded then).
    #[error("{0}")]
    Release(#[from] ReleaseError),
    /// The engines' file system has less free space than the build needs.
    #[error("needs {need_gb} GB free for the engines, and {:.1} GB is free", (*.free_bytes / 100_000_000) as f64 / 10.0)]
    Disk {
        /// What the build needs, in GB (10^9 bytes).
        need_gb: u64,
        /// What is free, in bytes.
        free_bytes: u64,
    },
    /// OS packages could not be installed, or a compiler the build needs
    /// is missing where no package manager can install it.
    #[error("{0}")]
    Packages(String),
    /// An asset could not be downloaded, or did not match its digest twice.
    #[error("{0}")]
    Verify(#[from] VerifyError),
    /// The publisher's own archive, refused by the unpacker (a path outside
    /// the tree, a device node, a bomb).
    #[error("unpacking {asset}: {message}")]
    Unpack {
        /// The asset's name.
        asset: String,
        /// The unpacker's reason.
        message: String,
    },
    /// A build this one needs first (uv, for a Python environment) is not ready.
    #[error("needs {want} to create its environment, and {engine} {state}: {detail}")]
    Requirement {
        /// The requirement, in words: `uv 0.12.20`.
        want: String,
        /// Its engine: `uv`.
        engine: String,
        /// Its state, in words: `failed`, `not here`.
        state: String,
        /// Its status's detail.
        detail: String,
    },
    /// The Python package index has no such version, or did not answer well.
    #[error("{0}")]
    Index(String),
    /// A step of uv failed (`uv venv`, `uv pip install`), in uv's own words.
    #[error("{step} {ended}: {said}")]
    Uv {
        /// The step: `uv pip install`.
        step: &'static str,
        /// How it ended.
        ended: crate::system::Ended,
        /// uv's report on one line.
        said: String,
    },
    /// uv could not be run at all.
    #[error("{step}: {error}")]
    UvNotRun {
        /// The step: `uv venv`.
        step: &'static str,
        /// Why it could not run.
        error: SysError,
    },
    /// The unpacked tree or environment holds no such binary.
    #[error("the installed tree holds no {0}")]
    NoBinary(String),
    /// Read before anything of it ran ([`crate::facts`]): a symbol version
    /// above the node's, or CUDA code for none of its GPUs.
    #[error("inspected before running: {0}")]
    Inspected(String),
    /// `ldd` found a library or a symbol version missing.
    #[error("{0}")]
    Ldd(String),
    /// The version command failed or named another version.
    #[error("{0}")]
    Version(String),
    /// The GPU check: no device listed, or no computation on a GPU
    /// (Python's torch check).
    #[error("{0}")]
    Gpu(String),
    /// The compute check: the tiny model did not run on a device listed,
    /// or on the CPU.
    #[error("{0}")]
    Compute(String),
    /// An install made earlier is no longer what its record says: a file
    /// changed or missing, the record unreadable.
    #[error("{0}")]
    NotAsRecorded(String),
    /// An effect failed: a file written, a directory made, a program run.
    #[error("{0}")]
    System(#[from] SysError),
    /// A failure after OS packages were installed for the build (they stay:
    /// the node was changed all the same).
    #[error("{failure} ({} {} installed for it)", packages_in_words(.installed), if .installed.len() == 1 { "was" } else { "were" })]
    AfterPackages {
        /// What failed.
        failure: Box<BuildFailure>,
        /// The packages installed for the build.
        installed: Vec<String>,
    },
    /// A failure on a system without a package manager the installer can
    /// use, for a build that elsewhere takes libraries from packages.
    #[error(
        "{failure} (this system has no package manager the installer can use; elsewhere the build takes its libraries from {packages})"
    )]
    NoPackageManager {
        /// What failed.
        failure: Box<BuildFailure>,
        /// The packages by family, in words: `libgomp1 on deb; libgomp on rpm`.
        packages: String,
    },
}

impl BuildFailure {
    /// The check of what the build really is that failed, when one did:
    /// `ldd`, the version command or the GPU check (a failure of one of
    /// them on the recipe's first candidate is drift).
    pub fn check(&self) -> Option<Check> {
        match self {
            BuildFailure::Inspected(_) => Some(Check::Inspect),
            BuildFailure::Ldd(_) => Some(Check::Ldd),
            BuildFailure::Version(_) => Some(Check::Version),
            BuildFailure::Gpu(_) => Some(Check::Gpu),
            BuildFailure::Compute(_) => Some(Check::Compute),
            BuildFailure::AfterPackages { failure, .. } | BuildFailure::NoPackageManager { failure, .. } => {
                failure.check()
            }
            _ => None,
        }
    }

    /// The same failure with every path under `root` written relative to
    /// it (`.staging/uv-0.12.20-x86_64/tree`): what a report shows.
    pub fn relative_to(mut self, root: &Path) -> BuildFailure {
        let strip = |p: &mut std::path::PathBuf| {
            if let Ok(rel) = p.strip_prefix(root) {
                *p = rel.to_path_buf();
            }
        };
        match &mut self {
            BuildFailure::System(SysError::Io { path, .. } | SysError::Refused { path, .. })
            | BuildFailure::Verify(VerifyError::Download { error: SysError::Io { path, .. }, .. }) => strip(path),
            BuildFailure::System(SysError::Spawn { program, .. })
            | BuildFailure::UvNotRun { error: SysError::Spawn { program, .. }, .. } => {
                let mut p = std::path::PathBuf::from(&*program);
                strip(&mut p);
                *program = p.display().to_string();
            }
            BuildFailure::AfterPackages { failure, .. } | BuildFailure::NoPackageManager { failure, .. } => {
                **failure = (**failure).clone().relative_to(root);
            }
            _ => {}
        }
        self
    }
}

/// `the OS package gcc`, `the OS packages libgomp1, libvulkan1`.
pub fn packages_in_words(names: &[String]) -> String {
    format!("the OS package{} {}", if names.len() == 1 { "" } else { "s" }, names.join(", "))
}
