//! The outcome of one want: [`Status`], with every build tried or left out
//! ([`Attempt`]).

use serde::{Deserialize, Serialize};

use crate::recipe::{Engine, Want, WantName};

/// Where a want stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Installed, verified, and seen to work (on the GPU, for a GPU build).
    Ready,
    /// Every candidate failed; `detail` says why each did.
    Failed,
    /// No published build can run on this node.
    Unsupported,
    /// The engine is not for this node (a GPU engine without a GPU): not a fault.
    NotHere,
}

impl State {
    /// The state as written in reports: `ready`, `not_here`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ready => "ready",
            State::Failed => "failed",
            State::Unsupported => "unsupported",
            State::NotHere => "not_here",
        }
    }

    /// Whether this state counts as a fault for the exit code (failed, unsupported).
    pub fn is_fault(self) -> bool {
        matches!(self, State::Failed | State::Unsupported)
    }
}

/// What happened to one build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Installed and seen to work.
    Installed,
    /// Installed earlier; its files still verify and it still works.
    Verified,
    /// Installed earlier and no longer whole or working; removed.
    Stale,
    /// Tried and failed.
    Failed,
    /// Not tried: the recipe left it out for this host.
    LeftOut,
}

impl Outcome {
    /// The outcome as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Installed => "installed",
            Outcome::Verified => "verified",
            Outcome::Stale => "stale",
            Outcome::Failed => "failed",
            Outcome::LeftOut => "left_out",
        }
    }
}

/// One build tried or left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The build's variant.
    pub variant: String,
    /// What happened.
    pub outcome: Outcome,
    /// Why, in the words of the check that decided it.
    pub reason: String,
    /// For a build that failed one of the checks of what it really is
    /// (`ldd`, its version command, the GPU check), which; absent when it
    /// failed before (disk, packages, download) or did not fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Check>,
}

impl Attempt {
    /// An attempt that no check decided.
    pub fn new(variant: impl Into<String>, outcome: Outcome, reason: impl Into<String>) -> Attempt {
        Attempt { variant: variant.into(), outcome, reason: reason.into(), check: None }
    }
}

/// The checks of what an installed build really is: a failure of one of
/// them on a recipe's first candidate is drift (the recipe believed the
/// build runs here, and it did not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The build's files read before it ran: a symbol version above the
    /// node's, or CUDA code for none of its GPUs.
    Inspect,
    /// The loader: `ldd` found a library or symbol version missing.
    Ldd,
    /// The version command failed or named another version.
    Version,
    /// The GPU check: no device listed, or (Python's torch check) no
    /// computation on a GPU.
    Gpu,
    /// The compute check: the tiny model did not run on a device listed
    /// (or on the CPU, for a CPU build).
    Compute,
}

impl Check {
    /// The check in a sentence: `ldd`, `version`, `GPU`, `compute`.
    pub fn in_words(self) -> &'static str {
        match self {
            Check::Inspect => "inspect",
            Check::Ldd => "ldd",
            Check::Version => "version",
            Check::Gpu => "GPU",
            Check::Compute => "compute",
        }
    }
}

/// The outcome for one want; the JSON shape README.md documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The want this status answers, as written: `vllm@0.20.1`, `llama.cpp@b10850:vulkan`.
    pub want: WantName,
    /// The engine.
    pub engine: Engine,
    /// The version installed (can differ from the one asked for), or asked for.
    pub version: String,
    /// The variant installed; `null` when none is.
    pub variant: Option<String>,
    /// Where it stands.
    pub state: State,
    /// One line on why: what was installed, or why nothing could be.
    pub detail: String,
    /// Notes that do not change the state (a missing `avx2`); `null` when none.
    pub note: Option<String>,
    /// The installed binary's path; `null` when nothing is installed.
    pub binary: Option<String>,
    /// Every build tried or left out, in the recipe's order.
    pub attempts: Vec<Attempt>,
    /// For an `ENGINE@latest` want, the version `latest` resolved to on
    /// this pass (`b11459`; what was tried, even when an earlier install
    /// stays or the recipe fell back to another); absent for a pinned
    /// want and when `latest` could not be resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
}

impl Status {
    /// The status of `want` in `state`, saying `detail`: its version the
    /// one asked for, nothing installed, no build tried, no note. Every
    /// status starts here; [`Status::installed`] adds the build a ready one
    /// installed.
    pub fn new(want: &Want, state: State, detail: String) -> Status {
        Status {
            want: want.name(),
            engine: want.engine,
            version: want.version.clone(),
            variant: None,
            state,
            detail,
            note: None,
            binary: None,
            attempts: vec![],
            resolved: None,
        }
    }

    /// This status with a build installed: its version and variant (the
    /// version can differ from the one asked for), and its binary's path.
    pub fn installed(mut self, version: &str, variant: &str, binary: &std::path::Path) -> Status {
        self.version = version.to_string();
        self.variant = Some(variant.to_string());
        self.binary = Some(binary.display().to_string());
        self
    }
}
