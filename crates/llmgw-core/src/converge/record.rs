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
//!
//! A record is input like any other: anyone who can write the engines
//! directory can write one. [`load`] reads it as a regular file of at most
//! [`MAX_RECORD_BYTES`] (no link followed), strictly, and [`check`] confines
//! every path in it: its engine, version and variant are those its file
//! name says, its binary and files plain relative paths inside its install
//! directory, its managed CPython a directory of [`PYTHON_DIR`], and its
//! binary among the files it covers with a sha256. A record that breaks one
//! of these is set aside (renamed `<name>.rejected`), never followed.
//! What the installer removes in the engines directory goes through
//! [`remove`], which refuses a path outside it or through a link.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::recipe::{Build, Engine, WantName};
use crate::system::{Refusal, SysError, System, UnpackedFile};

/// The most bytes an install record is (64 MiB): a Python environment with
/// torch lists some 20,000 files at about 150 bytes each, 3 MB.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// Why an install record is not followed, and is set aside.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordDefect {
    /// What is there is not a file that can be a record: a FIFO, a
    /// device, a link, more bytes than a record ever is.
    #[error("{0}")]
    NotAFile(Refusal),
    /// Not the JSON of an install record.
    #[error("it is not an install record: {0}")]
    NotARecord(String),
    /// It records another build than its name says.
    #[error("it records {engine} {version} {variant}, not the build its name `{name}` says")]
    Misnamed {
        /// The record's file name.
        name: String,
        /// The engine it records.
        engine: String,
        /// The version it records.
        version: String,
        /// The variant it records.
        variant: String,
    },
    /// A path in it is not a plain relative path inside where it must be.
    #[error("its {field} `{path}` is not a plain relative path inside {within}")]
    Outside {
        /// Which of its fields: `binary`, `files[3].path`, `python.dir`.
        field: String,
        /// The path as the record gives it.
        path: String,
        /// Where it must be: `its install directory`.
        within: &'static str,
    },
    /// Its binary is not among the files it covers with a sha256: it would
    /// run unverified.
    #[error("its binary `{0}` is not among the files it lists with their sha256")]
    Uncovered(String),
}

/// Why an install record could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// It is not one to follow; it was set aside as `<name>.rejected`
    /// (when that rename failed, `set_aside` says why).
    #[error("the install record `{engine}/{name}` was set aside as `{name}.rejected`: {defect}{}", set_aside.as_ref().map_or(String::new(), |e| format!(" (the rename failed: {e})")))]
    Rejected {
        /// Its engine's directory.
        engine: Engine,
        /// Its file name.
        name: String,
        /// What is wrong with it.
        defect: Box<RecordDefect>,
        /// Why it could not be renamed, when it could not.
        set_aside: Option<String>,
    },
    /// It could not be read (permissions, an I/O error): left as it is.
    #[error("{0}")]
    Io(SysError),
}

/// Whether `path` is a plain relative path, `/`-separated: no empty,
/// `.` or `..` component, not absolute, no NUL.
pub fn is_plain_relative(path: &str) -> bool {
    !path.is_empty() && path.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'))
}

/// Whether `name` can be one component of a name in the engines directory
/// that is the installer's: plain, no `/`, not hidden (`.staging`, `.lock`).
fn is_plain_name(name: &str) -> bool {
    is_plain_relative(name) && !name.contains('/') && !name.starts_with('.')
}

/// Checks the record read from `<engines>/<engine>/<name>` against what
/// its place says and confines every path in it (see the module's words).
///
/// # Errors
/// The first [`RecordDefect`] found.
pub fn check(record: &InstallRecord, engine: Engine, name: &str) -> Result<(), RecordDefect> {
    let misnamed = || RecordDefect::Misnamed {
        name: name.to_string(),
        engine: record.engine.to_string(),
        version: record.version.clone(),
        variant: record.variant.clone(),
    };
    if record.engine != engine
        || !is_plain_name(&record.version)
        || !is_plain_name(&record.variant)
        || format!("{}-{}.json", record.version, record.variant) != name
    {
        return Err(misnamed());
    }
    let outside = |field: String, path: &str, within| RecordDefect::Outside { field, path: path.to_string(), within };
    if !is_plain_relative(&record.binary) {
        return Err(outside("binary".into(), &record.binary, "its install directory"));
    }
    for (i, f) in record.files.iter().enumerate() {
        if !is_plain_relative(&f.path) {
            return Err(outside(format!("files[{i}].path"), &f.path, "its install directory"));
        }
    }
    if !record.files.iter().any(|f| f.path == record.binary) {
        return Err(RecordDefect::Uncovered(record.binary.clone()));
    }
    if let Some(python) = &record.python {
        let under = python.dir.strip_prefix(PYTHON_DIR).and_then(|rest| rest.strip_prefix('/'));
        if !under.is_some_and(is_plain_name) {
            return Err(outside("python.dir".into(), &python.dir, "the engines directory's `python/`"));
        }
        for (i, f) in python.files.iter().enumerate() {
            if !is_plain_relative(&f.path) {
                return Err(outside(format!("python.files[{i}].path"), &f.path, "its directory"));
            }
        }
    }
    Ok(())
}

/// The install record `<engines>/<engine>/<name>`, read as a regular file
/// of at most [`MAX_RECORD_BYTES`] without following a link, parsed
/// strictly and [`check`]ed; `None` when there is none. One that is not
/// to be followed is set aside (renamed `<name>.rejected`) and said.
///
/// # Errors
/// [`RecordError::Rejected`] for a record set aside, [`RecordError::Io`]
/// for one that could not be read.
pub fn load(
    sys: &mut dyn System,
    engines: &Path,
    engine: Engine,
    name: &str,
) -> Result<Option<InstallRecord>, RecordError> {
    let rel = format!("{engine}/{name}");
    let defect = match sys.read_beneath(engines, &rel, (MAX_RECORD_BYTES, "an install record")) {
        Ok(None) => return Ok(None),
        Ok(Some(bytes)) => match std::str::from_utf8(&bytes) {
            Ok(text) => match llmgw_model::strict_json::parse::<InstallRecord>(text, &[]) {
                Ok(record) => match check(&record, engine, name) {
                    Ok(()) => return Ok(Some(record)),
                    Err(defect) => defect,
                },
                Err(e) => RecordDefect::NotARecord(e.to_string()),
            },
            Err(e) => RecordDefect::NotARecord(format!("it is not UTF-8: {e}")),
        },
        Err(SysError::Refused { why, .. }) => RecordDefect::NotAFile(why),
        Err(e) => return Err(RecordError::Io(e)),
    };
    let dir = engines.join(engine.as_str());
    let set_aside = sys.rename(&dir.join(name), &dir.join(format!("{name}.rejected"))).err().map(|e| e.to_string());
    let e = RecordError::Rejected { engine, name: name.to_string(), defect: Box::new(defect), set_aside };
    tracing::warn!("{e}");
    Err(e)
}

/// Removes `path` (a file, a link as itself, a directory tree) when it lies
/// inside the engines directory `engines`, reached through no symbolic
/// link: the one way the installer removes anything there.
///
/// # Errors
/// [`SysError::Refused`] for a path outside it or through a link (nothing
/// is removed); what removing failed with.
pub fn remove(sys: &mut dyn System, engines: &Path, path: &Path) -> Result<(), SysError> {
    sys.remove_beneath(engines, path)
}

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
/// (relative, `/`-separated); symbolic links are neither followed nor listed.
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
            // A link is not a file of the tree: never read through (what it
            // points to is covered where it lies, or not at all).
            if e.is_link {
                continue;
            }
            // One read gives both; a file gone meanwhile is skipped.
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
        remove(sys, engines, &staging).map_err(|e| e.to_string())?;
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
                remove(sys, engines, &dir.join(&e.name)).map_err(|e| e.to_string())?;
                removed.push(format!("{engine}/{}", e.name));
            }
        }
    }
    Ok(removed)
}
