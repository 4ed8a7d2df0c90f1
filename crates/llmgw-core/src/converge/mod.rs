//! The installer: wants in, [`Status`]es out, every effect through the
//! [`System`] trait (the steps are in docs/concepts/convergence.md).
//!
//! For one want: the recipe's [`Plan`]; an install already recorded whose
//! files still verify and which still works is `ready` without a download;
//! otherwise each candidate in turn — free disk, OS packages, release
//! metadata, download and sha256 against the publisher's digest, safe unpack
//! into staging, the binary, `ldd`, the version command, the GPU listing,
//! the tiny model computed on every GPU (or on the CPU) —
//! and the first that passes is committed by rename, its record written
//! last. A failed build costs its download: its staging is removed and the
//! next is tried.
//!
//! | file | what lives there |
//! | --- | --- |
//! | `installer.rs` | [`Installer`]: one pass over a machine, the steps of a want in order |
//! | `latest.rs` | what an `ENGINE@latest` want resolves to: the newest release or index version this host can use |
//! | `archives.rs`, `python.rs` | a build from release archives; a Python environment made by uv |
//! | `checks.rs` | what proves a build works: `ldd`, the version command, the GPU listing |
//! | `compute.rs` | the compute check: the tiny model (embedded) run on every device listed, or the CPU |
//! | `packages.rs` | the OS packages a build needs |
//! | `failure.rs`, `status.rs`, `record.rs` | why a build failed; the outcome of a want; install records and where installs live |
//!
//! Part of the pure core: every effect through [`System`]. Uses: `archive`
//! (what unpacking gives), `facts`, `parse`, `recipe`, `release` and
//! `system` (the trait).

mod archives;
pub mod checks;
pub mod compute;
mod exists;
pub mod failure;
mod installer;
pub mod latest;
mod packages;
mod python;
pub mod record;
pub mod status;

use std::path::PathBuf;

use crate::recipe::Want;
use crate::system::System;
use llmgw_model::host::Host;

pub use checks::{NotABuild, torch_check_script};
pub use compute::{TINY_MODEL, TINY_MODEL_FILE, TINY_MODEL_SHA256};
pub use failure::BuildFailure;
pub use installer::Installer;
pub use python::uv_project;
pub use record::{InstallRecord, ManagedPython, PYTHON_DIR, Paths};
pub use status::{Attempt, Check, Outcome, State, Status};

/// Where and from what the installer installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The engines directory: `/opt/llmgw/engines`.
    pub engines_dir: PathBuf,
    /// Base URL of GitHub's REST API ([`crate::release::GITHUB_API`], or the fake server's).
    pub github_api: String,
    /// PyPI's simple index ([`PYPI_SIMPLE`], or the fake server's).
    pub pypi_simple: String,
    /// PyTorch's wheel host, under which each CUDA version has its index
    /// ([`PYTORCH_WHL`], or the fake server's).
    pub pytorch_whl: String,
    /// Where uv downloads the Python engines' CPython from: the base URL
    /// that replaces python-build-standalone's release downloads in each
    /// archive's URL (`uv python install --mirror`; [`PYTHON_INSTALL_MIRROR`],
    /// a mirror, or the fake server's).
    pub python_mirror: String,
    /// Seconds a build's version command and GPU check may run before they
    /// are killed and the build counts as failed ([`CHECK_TIMEOUT_SECS`]).
    pub check_timeout_secs: u64,
    /// Stand-ins that are no real build, refused in their own words when
    /// `ldd` finds them (the fake publisher's programs); `None` on a node
    /// installing from the real publishers.
    pub not_a_build: Option<NotABuild>,
}

/// The default limit of a check's process, in seconds: a GPU check imports
/// torch and initialises CUDA, which takes tens of seconds on a cold node.
pub const CHECK_TIMEOUT_SECS: u64 = 120;

/// The longest a check may be given, in seconds (a day): a longer limit is
/// no limit, and a deadline that far would overflow the clock's arithmetic.
pub const MAX_CHECK_TIMEOUT_SECS: u64 = 86_400;

/// PyPI's simple index, which uv reads in its JSON form (PEP 691).
pub const PYPI_SIMPLE: &str = "https://pypi.org/simple";

/// Where uv 0.13.9 downloads CPython from: python-build-standalone's
/// releases as Astral serves them, `{PYTHON_INSTALL_MIRROR}/{tag}/{archive}`
/// (`uv python list --only-downloads --output-format json` of uv 0.13.9
/// gives `https://releases.astral.sh/github/python-build-standalone/releases/download/20261110/cpython-3.12.16%2B20261110-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz`;
/// docs/facts.md §5.4). GitHub's own
/// `https://github.com/astral-sh/python-build-standalone/releases/download`
/// has the same layout.
pub const PYTHON_INSTALL_MIRROR: &str = "https://releases.astral.sh/github/python-build-standalone/releases/download";

/// PyTorch's wheel indexes, one per CUDA version: `{PYTORCH_WHL}/cu129`.
pub const PYTORCH_WHL: &str = "https://download.pytorch.org/whl";

/// Converges every want in order on one machine; one status per want
/// ([`Installer::converge`]).
pub fn converge(sys: &mut dyn System, host: &Host, cfg: &Config, wants: &[Want]) -> Vec<Status> {
    Installer::new(sys, host, cfg).converge(wants)
}
