//! Reading what the user gave: host files, wants, wants files. Every
//! problem becomes a [`Failure::BadInput`] naming the file or flag and,
//! inside a file, the JSON path.

// The CLI reads the files the user names.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

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
