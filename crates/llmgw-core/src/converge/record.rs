//! Install records and where installs live in the engines directory.
//!
//! Layout under the engines directory:
//!
//! ```text
//! <engines>/<engine>/<version>-<variant>/        the unpacked build (committed by rename)
//! <engines>/<engine>/<version>-<variant>.json    its install record, written last
//! <engines>/.staging/<engine>-<version>-<variant>/{downloads,unpacked,tree}   work in progress
//! <engines>/python/cpython-3.12.16-linux-x86_64-gnu/   the uv-managed CPython of the Python engines
//! ```
//!
//! The managed CPython lives outside every build's tree because a virtual
//! environment names its interpreter by absolute path (`home` in
//! `pyvenv.cfg`, even with `uv venv --relocatable`): one under staging would
//! be lost at the rename. uv installs it atomically itself (unpacked under
//! `python/.temp/`, then renamed), and each environment's record lists its
//! files, so verifying the install verifies the interpreter too.
//!
//! A directory without its record is not an install: a crash between the
//! rename and the record leaves nothing that counts as `ready`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::recipe::{Build, Engine, WantName};
use crate::system::{SysError, System, UnpackedFile};

/// What was installed, written beside the install once it was seen to work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallRecord {
    /// The engine.
    pub engine: Engine,
    /// The want it was installed for: `llama.cpp@b10850`, `llama.cpp@b10850:vulkan`.
    pub for_want: WantName,
    /// The version installed.
    pub version: String,
    /// The variant installed.
    pub variant: String,
    /// The binary, relative to the install directory, `/`-separated.
    pub binary: String,
    /// Every file placed, with size in bytes and sha256: re-verified on every convergence.
    pub files: Vec<UnpackedFile>,
    /// Each asset's name and the sha256 it was verified against.
    pub assets: Vec<AssetDigest>,
    /// Installs this one needs to keep working: `uv 0.12.20 x86_64` for a
    /// Python engine's environment.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// The uv-managed CPython a Python engine's environment runs on; absent
    /// for an archive build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<ManagedPython>,
    /// When it was installed, seconds since the Unix epoch.
    pub installed_at: u64,
}

/// The directory under the engines directory where uv installs the Python
/// engines' CPython (`uv python install --install-dir`).
pub const PYTHON_DIR: &str = "python";

/// A uv-managed CPython under the engines directory, as an install record
/// lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedPython {
    /// Its directory, relative to the engines directory, `/`-separated:
    /// `python/cpython-3.12.16-linux-x86_64-gnu`.
    pub dir: String,
    /// Every file in it with size in bytes and sha256, paths relative to `dir`.
    pub files: Vec<UnpackedFile>,
}

pub use crate::release::AssetDigest;

/// What building a tree in staging produced, for the install record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// Every file of the tree with its digest.
    pub files: Vec<UnpackedFile>,
    /// The assets downloaded and the digests they matched.
    pub assets: Vec<AssetDigest>,
    /// Installs this one depends on: `uv 0.12.20 x86_64`.
    pub depends_on: Vec<String>,
    /// The managed CPython the environment runs on.
    pub python: Option<ManagedPython>,
}

/// The paths of one build's install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// `<engines>/<engine>/<version>-<variant>`.
    pub install: PathBuf,
    /// `<engines>/<engine>/<version>-<variant>.json`.
    pub record: PathBuf,
    /// `<engines>/.staging/<engine>-<version>-<variant>`.
    pub staging: PathBuf,
}

impl Paths {
    /// The paths of `build` of `engine` under `engines`.
    pub fn new(engines: &Path, engine: Engine, build: &Build) -> Paths {
        Paths::of(engines, engine, &build.version, &build.variant)
    }

    /// As [`Paths::new`], from the version and variant alone (an install
    /// known by its record).
    pub fn of(engines: &Path, engine: Engine, version: &str, variant: &str) -> Paths {
        let id = format!("{version}-{variant}");
        let dir = engines.join(engine.as_str());
        Paths {
            install: dir.join(&id),
            record: dir.join(format!("{id}.json")),
            staging: engines.join(".staging").join(format!("{}-{id}", engine.as_str())),
        }
    }

    /// Where the assets are downloaded to.
    pub fn downloads(&self) -> PathBuf {
        self.staging.join("downloads")
    }

    /// Where the `i`-th asset of an archive build is unpacked, apart from
    /// the others, before they are put together in [`Paths::tree`].
    pub fn unpacked(&self, i: usize) -> PathBuf {
        self.staging.join("unpacked").join(i.to_string())
    }

    /// Where the assets are unpacked to, renamed to [`Paths::install`] on commit.
    pub fn tree(&self) -> PathBuf {
        self.staging.join("tree")
    }
}

/// Every regular file under `root` with its size and sha256, sorted by path
/// (relative, `/`-separated).
///
/// # Errors
/// A directory or file that cannot be read.
pub fn tree_files(sys: &mut dyn System, root: &Path) -> Result<Vec<UnpackedFile>, SysError> {
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([String::new()]);
    while let Some(rel) = queue.pop_front() {
        let dir = if rel.is_empty() { root.to_path_buf() } else { root.join(&rel) };
        for e in sys.list_dir(&dir)?.unwrap_or_default() {
            let path = if rel.is_empty() { e.name.clone() } else { format!("{rel}/{}", e.name) };
            if e.is_dir {
                queue.push_back(path);
                continue;
            }
            // One read gives both; a file gone meanwhile (a dangling link) is skipped.
            let Some((bytes, sha256)) = sys.sha256_file(&root.join(&path))? else {
                continue;
            };
            out.push(UnpackedFile { path, bytes, sha256 });
        }
    }
    out.sort();
    Ok(out)
}

/// Removes what an interrupted installer left: the staging area, every
/// install directory without its record (a crash between the rename and the
/// record), and a record's temporary (a crash between its write and its
/// rename). Nothing in them ever counted as installed.
///
/// # Errors
/// The sentence of what could not be listed or removed.
pub fn clean_incomplete(sys: &mut dyn crate::system::System, engines: &Path) -> Result<Vec<String>, String> {
    let mut removed = Vec::new();
    let staging = engines.join(".staging");
    if sys.list_dir(&staging).map_err(|e| e.to_string())?.is_some_and(|e| !e.is_empty()) {
        sys.remove(&staging).map_err(|e| e.to_string())?;
        removed.push(".staging".to_string());
    }
    // Only the engines' own folders: anything else an operator keeps in
    // the engines directory (models, lost+found) is not the installer's.
    for engine in Engine::ALL {
        let dir = engines.join(engine.as_str());
        let entries = sys.list_dir(&dir).map_err(|e| e.to_string())?.unwrap_or_default();
        for e in &entries {
            // A record's temporary, left by a kill between its write and its rename.
            let temporary = !e.is_dir && e.name.starts_with(crate::system::TEMPORARY_PREFIX);
            let record = format!("{}.json", e.name);
            let unrecorded = e.is_dir && !entries.iter().any(|r| !r.is_dir && r.name == record);
            if temporary || unrecorded {
                sys.remove(&dir.join(&e.name)).map_err(|e| e.to_string())?;
                removed.push(format!("{engine}/{}", e.name));
            }
        }
    }
    Ok(removed)
}
