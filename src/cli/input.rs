//! Reading what the user gave: host files, wants, wants files. Every
//! problem becomes a [`Failure::BadInput`] naming the file or flag and,
//! inside a file, the JSON path.

// The CLI reads the files the user names.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use llmgw::host::Host;
use llmgw::recipe::{Want, WantsFile};
use llmgw::report::{EXIT_BAD_INPUT, EXIT_INTERNAL};

/// Why a command could not produce a result.
#[derive(Debug)]
pub enum Failure {
    /// The input is wrong: exit 2.
    BadInput(String),
    /// llmgw itself failed: exit 3.
    Internal(String),
}

impl Failure {
    /// The exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::BadInput(_) => EXIT_BAD_INPUT,
            Failure::Internal(_) => EXIT_INTERNAL,
        }
    }

    /// The one-line message.
    pub fn message(&self) -> &str {
        match self {
            Failure::BadInput(m) | Failure::Internal(m) => m,
        }
    }
}

fn read(kind: &str, path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure::BadInput(format!("cannot read {kind} `{}`: {e}", path.display())))
}

/// Reads and validates a host description.
pub fn host(path: &Path) -> Result<Host, Failure> {
    let text = read("host file", path)?;
    Host::from_json(&text).map_err(|e| Failure::BadInput(format!("host file `{}`: {e}", path.display())))
}

/// The wants: each `--want`, else those of `--wants FILE`, else `default`.
pub fn wants(flags: &[String], file: Option<&Path>, default: impl FnOnce() -> Vec<Want>) -> Result<Vec<Want>, Failure> {
    if !flags.is_empty() && file.is_some() {
        return Err(Failure::BadInput("give wants either with --want or with --wants FILE, not both".into()));
    }
    if let Some(path) = file {
        let text = read("wants file", path)?;
        return WantsFile::from_json(&text)
            .map(|f| f.wants)
            .map_err(|e| Failure::BadInput(format!("wants file `{}`: {e}", path.display())));
    }
    if flags.is_empty() {
        return Ok(default());
    }
    flags.iter().map(|s| Want::parse(s).map_err(|e| Failure::BadInput(format!("--want `{s}`: {e}")))).collect()
}

/// A URL flag (`--github-api`, `--offline-base`): http:// or https:// with
/// a host, checked when the command line is parsed.
pub fn http_url(s: &str) -> Result<String, String> {
    llmgw::recipe::check_http_url(s).map_err(|e| format!("`{s}` {e}"))?;
    Ok(s.to_string())
}

/// Reads and checks the agent's configuration file.
pub fn agent_config(path: &Path) -> Result<llmgw::agent::AgentConfig, Failure> {
    let text = read("configuration file", path)?;
    llmgw::agent::AgentConfig::from_json(&text)
        .map_err(|e| Failure::BadInput(format!("configuration file `{}`: {e}", path.display())))
}

/// Reads a file the user named, if it is there: `None` when it does not exist.
pub fn read_if_there(kind: &str, path: &Path) -> Result<Option<String>, Failure> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::BadInput(format!("cannot read {kind} `{}`: {e}", path.display()))),
    }
}

/// The truth to simulate against: the embedded one, or a scenario's variant of it.
pub fn catalog(scenario: Option<&Path>) -> Result<llmgw::sim::truth::Catalog, Failure> {
    let base = llmgw::sim::truth::embedded_catalog();
    let Some(path) = scenario else { return Ok(base.clone()) };
    let text = read("scenario file", path)?;
    let s = llmgw::sim::truth::scenario::Scenario::from_json(&text)
        .map_err(|e| Failure::BadInput(format!("scenario file `{}`: {e}", path.display())))?;
    s.apply(base).map_err(|e| Failure::BadInput(format!("scenario file `{}`: {e}", path.display())))
}

/// Writes a file the user named, atomically: a temporary beside it, renamed over it.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    let fail = |e: &dyn std::fmt::Display| Failure::Internal(format!("cannot write `{}`: {e}", path.display()));
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(&e))?;
    tmp.write_all(contents).and_then(|()| tmp.as_file().sync_all()).map_err(|e| fail(&e))?;
    tmp.persist(path).map_err(|e| fail(&e.error))?;
    Ok(())
}

/// Every `*.json` host description in `dir`, by file name without `.json`.
pub fn hosts_dir(dir: &Path) -> Result<Vec<(String, Host)>, Failure> {
    let listing = std::fs::read_dir(dir)
        .map_err(|e| Failure::BadInput(format!("--hosts `{}`: cannot list it: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> =
        listing.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    if files.is_empty() {
        return Err(Failure::BadInput(format!("--hosts `{}` holds no *.json host description", dir.display())));
    }
    files
        .iter()
        .map(|p| {
            let id = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            host(p).map(|h| (id, h))
        })
        .collect()
}

/// Reads and validates the golden outcomes of the matrix.
pub fn expected(path: &Path) -> Result<llmgw::sim::matrix::ExpectedFile, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::BadInput(format!("cannot read the golden file `{}`: {e} (make it with --update)", path.display()))
    })?;
    llmgw::sim::matrix::ExpectedFile::from_json(&text)
        .map_err(|e| Failure::BadInput(format!("golden file `{}`: {e}", path.display())))
}
