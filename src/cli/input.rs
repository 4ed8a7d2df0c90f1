//! Reading what the user gave: host files, wants, wants files. Every
//! problem becomes a [`Failure::BadInput`] naming the file or flag and,
//! inside a file, the JSON path.

// The CLI reads the files the user names.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use llmgw_core::recipe::{Want, WantsFile};
use llmgw_core::report::{EXIT_BAD_INPUT, EXIT_INTERNAL};
use llmgw_model::host::Host;

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

/// A kind of file the user names, with the most it may be.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// In a message: `host file`.
    pub name: &'static str,
    /// What it is meant to be: `a host description`.
    pub what: &'static str,
    /// The most it may be, in bytes.
    pub max: u64,
}

/// A host description: a few kilobytes (the 8-GPU H100's is 1.2 KB).
pub const HOST: Kind = Kind { name: "host file", what: "a host description", max: 1 << 20 };
/// A wants file: a few hundred bytes a want.
pub const WANTS: Kind = Kind { name: "wants file", what: "a wants file", max: 1 << 20 };
/// A scenario: a few kilobytes.
pub const SCENARIO: Kind = Kind { name: "scenario file", what: "a scenario", max: 4 << 20 };
/// The agent's configuration.
pub const CONFIG: Kind = Kind { name: "configuration file", what: "an agent configuration", max: 1 << 20 };
/// The agent's status file: every status of a pass.
pub const STATUS: Kind = Kind { name: "status file", what: "an agent status file", max: 16 << 20 };
/// The matrix's golden file: every cell.
pub const GOLDEN: Kind = Kind { name: "golden file", what: "a golden file", max: 64 << 20 };
/// A matrix report (`--format json`) given to `matrix --merge`: a shard's
/// cells (about 750 bytes a cell) or summary.
pub const REPORT: Kind = Kind { name: "report file", what: "a matrix report", max: 1 << 30 };
/// A release's JSON as GitHub's API answers it (`plan --release`): a few
/// hundred bytes an asset.
pub const RELEASE: Kind = Kind { name: "release file", what: "a GitHub release JSON", max: 8 << 20 };
/// Checksums or a bundle's manifest.
pub const CHECKSUMS: Kind = Kind { name: "checksums file", what: "a checksums file or manifest", max: 16 << 20 };

/// Reads a file the user named as `kind`: a regular file of at most
/// `kind.max` bytes, or `-` for standard input (bounded the same), as UTF-8.
///
/// # Errors
/// [`Failure::BadInput`] naming the file and what is wrong with it.
pub fn read(kind: Kind, path: &Path) -> Result<String, Failure> {
    read_if_there(kind, path)?
        .ok_or_else(|| Failure::BadInput(format!("cannot read {} `{}`: it does not exist", kind.name, path.display())))
}

/// Reads and validates a host description: the file `path`, or, where
/// there is no such file, the embedded host it names (`v100`; or
/// `matrix/hosts/v100.json` outside the checkout, said on stderr).
pub fn host(path: &Path) -> Result<Host, Failure> {
    let text = match read_if_there(HOST, path)? {
        Some(text) => text,
        None => {
            embedded(path, "matrix/hosts", |n| format!("the embedded host `{n}`"), llmgw_sim::matrix::embedded::host)
                .ok_or_else(|| not_there(HOST, path, "an embedded host's name (llmgw list hosts)"))?
                .to_string()
        }
    };
    Host::from_json(&text).map_err(|e| Failure::BadInput(format!("host file `{}`: {e}", path.display())))
}

/// What `arg`, which is no file here, names of the embedded ones (found by
/// `find`): itself as a name (`v100`), or the file of the checkout it is
/// the path of (`<dir>/v100.json`), which is said on stderr (`what` names it).
fn embedded(
    arg: &Path,
    dir: &str,
    what: impl Fn(&str) -> String,
    find: impl Fn(&str) -> Option<&'static str>,
) -> Option<&'static str> {
    let arg = arg.to_str()?;
    if let Some(found) = find(arg) {
        return Some(found);
    }
    let name = arg.strip_prefix(dir)?.strip_prefix('/')?.strip_suffix(".json")?;
    let found = find(name)?;
    note!("llmgw: no file `{arg}` here (outside the checkout): {}", what(name));
    Some(found)
}

/// The error for a file that is not there, nor `what` else.
fn not_there(kind: Kind, path: &Path, what: &str) -> Failure {
    Failure::BadInput(format!("cannot read {} `{}`: it does not exist, nor is it {what}", kind.name, path.display()))
}

/// The embedded scenario named `name` (`mocks/scenarios/<name>.json`).
fn embedded_scenario(name: &str) -> Option<&'static str> {
    llmgw_sim::truth::embedded::SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// The embedded default wants for `matrix/wants.json` outside the checkout.
fn embedded_wants(name: &str) -> Option<&'static str> {
    (name == "wants").then_some(llmgw_sim::DEFAULT_WANTS_JSON)
}

/// The wants file `path`, or the embedded default wants when it is the
/// checkout's `matrix/wants.json` and there is no such file here.
///
/// # Errors
/// As [`read`].
pub fn wants_text(path: &Path) -> Result<String, Failure> {
    match read_if_there(WANTS, path)? {
        Some(text) => Ok(text),
        None => embedded(path, "matrix", |_| "the embedded default wants".into(), embedded_wants)
            .filter(|_| path != Path::new("wants"))
            .map(str::to_string)
            .ok_or_else(|| not_there(WANTS, path, "matrix/wants.json (embedded)")),
    }
}

/// The wants: each `--want`, else those of `--wants FILE`, else `default`.
pub fn wants(flags: &[String], file: Option<&Path>, default: impl FnOnce() -> Vec<Want>) -> Result<Vec<Want>, Failure> {
    if !flags.is_empty() && file.is_some() {
        return Err(Failure::BadInput("give wants either with --want or with --wants FILE, not both".into()));
    }
    if let Some(path) = file {
        let text = wants_text(path)?;
        return WantsFile::from_json(&text)
            .map(|f| f.wants)
            .map_err(|e| Failure::BadInput(format!("wants file `{}`: {e}", path.display())));
    }
    if flags.is_empty() {
        return Ok(default());
    }
    let wants: Vec<Want> = flags
        .iter()
        .map(|s| Want::parse(s).map_err(|e| Failure::BadInput(format!("--want `{s}`: {e}"))))
        .collect::<Result<_, _>>()?;
    if let Some((i, j)) = llmgw_core::recipe::first_repeat(&wants) {
        return Err(Failure::BadInput(format!(
            "--want `{}` is --want `{}` again; give each want once",
            flags[j], flags[i]
        )));
    }
    Ok(wants)
}

/// A URL flag (`--github-api`, `--offline-base`): http:// or https:// with
/// a host, checked when the command line is parsed.
pub fn http_url(s: &str) -> Result<String, String> {
    llmgw_core::recipe::check_http_url(s)
        .map_err(|e| format!("`{}` {e}", llmgw_core::release::hosts::without_credentials(s)))?;
    Ok(s.to_string())
}

/// Reads and checks the agent's configuration file.
pub fn agent_config(path: &Path) -> Result<llmgw_core::agent::AgentConfig, Failure> {
    let text = read(CONFIG, path)?;
    llmgw_core::agent::AgentConfig::from_json(&text)
        .map_err(|e| Failure::BadInput(format!("configuration file `{}`: {e}", path.display())))
}

/// As [`read`], `None` when the file does not exist.
///
/// # Errors
/// As [`read`].
pub fn read_if_there(kind: Kind, path: &Path) -> Result<Option<String>, Failure> {
    read_bytes(kind, path)
        .map_err(|why| Failure::BadInput(format!("cannot read {} `{}`: {why}", kind.name, path.display())))
}

/// As [`read_if_there`], the error only why (no path).
fn read_bytes(kind: Kind, path: &Path) -> Result<Option<String>, String> {
    use llmgw_system::files::{InputError, read_input};
    let bytes = if path == Path::new("-") {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::io::stdin().take(kind.max + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        if bytes.len() as u64 > kind.max {
            return Err(InputError::TooLarge { max: kind.max, what: kind.what }.to_string());
        }
        bytes
    } else {
        match read_input(path, kind.max, kind.what) {
            Ok(b) => b,
            Err(InputError::NotFound) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        }
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| format!("it is not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

/// The truth to simulate against: the embedded one, or a scenario's variant of it.
pub fn catalog(scenario: Option<&Path>) -> Result<llmgw_sim::truth::Catalog, Failure> {
    let base = llmgw_sim::truth::embedded_catalog();
    let Some(path) = scenario else { return Ok(base.clone()) };
    let text = match read_if_there(SCENARIO, path)? {
        Some(text) => text,
        None => embedded(path, "mocks/scenarios", |n| format!("the embedded scenario `{n}`"), embedded_scenario)
            .ok_or_else(|| not_there(SCENARIO, path, "an embedded scenario's name (llmgw list scenarios)"))?
            .to_string(),
    };
    let s = llmgw_sim::truth::scenario::Scenario::from_json(&text)
        .map_err(|e| Failure::BadInput(format!("scenario file `{}`: {e}", path.display())))?;
    s.apply(base).map_err(|e| Failure::BadInput(format!("scenario file `{}`: {e}", path.display())))
}

/// Checks an output path the user named (`flag` says which) before any
/// work is done: its directory exists and a file can be made there (a
/// read-only file system, a folder of another user), and what is there (if
/// anything) is a regular file or a link to one.
///
/// # Errors
/// [`Failure::BadInput`] naming the flag and the path.
pub fn output(flag: &str, path: &Path) -> Result<(), Failure> {
    let out = llmgw_system::files::check_output(path)
        .map_err(|why| Failure::BadInput(format!("{flag} `{}` {why}", path.display())))?;
    // Written as a temporary beside it, renamed over it: that must be possible.
    let dir = out.target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    llmgw_system::files::can_make_file_in(dir).map_err(|e| {
        Failure::BadInput(format!(
            "{flag} `{}` cannot be written: no file can be made in `{}`: {e}",
            path.display(),
            dir.display()
        ))
    })
}

/// Writes a file the user named (`flag`), atomically: a temporary beside it,
/// renamed over it; a symbolic link written through, a file's mode kept.
///
/// # Errors
/// [`Failure::BadInput`] for a path that cannot be an output;
/// [`Failure::Internal`] when the write itself fails.
pub fn write_output(flag: &str, path: &Path, contents: &[u8]) -> Result<(), Failure> {
    output(flag, path)?;
    llmgw_system::files::Files::durable()
        .write_atomic(path, contents)
        .map_err(|e| Failure::Internal(format!("cannot write {flag} `{}`: {e}", path.display())))
}

/// Whether `path` is a directory (a link to one counts).
pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}

/// One host file of a `--hosts` directory.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its host id: the file's name without `.json`.
    pub id: String,
    /// The file's name.
    pub file: std::ffi::OsString,
}

/// The `*.json` files of a `--hosts` directory, sorted by host id (the
/// order of the matrix's rows); nothing is read but the directory.
///
/// # Errors
/// [`Failure::BadInput`] when the directory cannot be listed or holds no
/// host description.
pub fn host_listing(dir: &Path) -> Result<Vec<Listed>, Failure> {
    let listing = std::fs::read_dir(dir)
        .map_err(|e| Failure::BadInput(format!("--hosts `{}`: cannot list it: {e}", dir.display())))?;
    let mut files: Vec<Listed> = listing
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| Path::new(n).extension().is_some_and(|x| x == "json"))
        .map(|file| {
            let id = Path::new(&file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            Listed { id, file }
        })
        .collect();
    files.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.file.cmp(&b.file)));
    if files.is_empty() {
        return Err(Failure::BadInput(format!("--hosts `{}` holds no *.json host description", dir.display())));
    }
    Ok(files)
}

/// Reads the host file `listed` of `dir` for a fleet: its description, or
/// why it cannot be had, in a sentence that does not repeat the path (the
/// report lists it beside).
pub fn fleet_host(dir: &Path, listed: &Listed) -> Result<Host, String> {
    if listed.file.to_str().is_none() {
        return Err("the file name is not UTF-8; a host id is printed in every report".into());
    }
    // A host's id is its file's name: text from outside, one rule.
    llmgw_model::text::check(&listed.id)
        .map_err(|why| format!("the file name {why}; a host id is printed in every report"))?;
    let path = dir.join(&listed.file);
    let text = match read_bytes(HOST, &path) {
        Ok(Some(text)) => text,
        Ok(None) => return Err("it is gone (removed while the run went on)".into()),
        Err(why) => return Err(why),
    };
    Host::from_json(&text).map_err(|e| e.to_string())
}

/// Reads and validates the golden outcomes of the matrix.
pub fn expected(path: &Path) -> Result<llmgw_sim::matrix::ExpectedFile, Failure> {
    let text = read_if_there(GOLDEN, path)?.ok_or_else(|| {
        Failure::BadInput(format!(
            "cannot read the golden file `{}`: it does not exist (make it with --update)",
            path.display()
        ))
    })?;
    llmgw_sim::matrix::ExpectedFile::from_json(&text)
        .map_err(|e| Failure::BadInput(format!("golden file `{}`: {e}", path.display())))
}
