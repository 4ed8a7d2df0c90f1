//! The status file ([`AgentStatus`]) a pass leaves for a control plane or
//! an operator, and what a pass logs ([`changes`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::report::Reported;
use crate::converge::{State, Status};
use crate::recipe::WantName;

/// A want the agent does not install, and why (the configuration disables
/// its engine, or names its binary).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotInstalled {
    /// The want as written: `sglang@0.5.4`.
    pub want: String,
    /// Why.
    pub reason: String,
}

/// The status file: what a control plane or an operator reads, written
/// atomically after each pass.
///
/// `{"host", "pass", "at", "next_pass_in_secs", "wants_error", "engines": [Status…],
/// "not_installed": [{"want", "reason"}], "report": [{"engine", "versions", "seen"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStatus {
    /// The host description's `name`.
    pub host: String,
    /// The pass's number, from 1.
    pub pass: u64,
    /// When the pass ended, seconds since the Unix epoch, on the node's
    /// clock (the simulated one in simulation).
    pub at: u64,
    /// Seconds until the next pass, unless a kick comes first; `null` when
    /// none follows (`--once`).
    pub next_pass_in_secs: Option<u64>,
    /// Why the wants file, as it is now, is not the wants converged
    /// (unreadable, malformed): the agent runs on its last good wants.
    /// `null` when the file is fine.
    pub wants_error: Option<String>,
    /// One status per want installed, as `simulate --format json` shows them.
    pub engines: Vec<Status>,
    /// The wants the configuration keeps from being installed.
    pub not_installed: Vec<NotInstalled>,
    /// The engine report ([`report`]): what this node can run.
    pub report: Vec<Reported>,
}

impl AgentStatus {
    /// Pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a status always serializes");
        s.push('\n');
        s
    }
}

/// One want's status that changed since the last pass (or is new).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The want.
    pub want: WantName,
    /// Its state now.
    pub state: State,
    /// Its detail now.
    pub detail: String,
}

impl Change {
    /// Whether it is logged as a warning: `failed` and `unsupported`.
    pub fn is_warning(&self) -> bool {
        self.state.is_fault()
    }
}

/// The statuses whose state or detail differ from `last` (the previous
/// pass's, by want), and `last` updated; wants no longer asked for are
/// forgotten.
pub fn changes(last: &mut BTreeMap<WantName, (State, String)>, statuses: &[Status]) -> Vec<Change> {
    let mut out = Vec::new();
    let mut now = BTreeMap::new();
    for s in statuses {
        let key = (s.state, s.detail.clone());
        if last.get(&s.want) != Some(&key) {
            out.push(Change { want: s.want.clone(), state: s.state, detail: s.detail.clone() });
        }
        now.insert(s.want.clone(), key);
    }
    *last = now;
    out
}

/// What one pass did, for whoever watches the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassRecord {
    /// When the pass began, on tokio's clock, since the loop started.
    pub began: Duration,
    /// The wait after it (before a kick).
    pub next: Duration,
    /// The statuses whose state or detail changed (those logged).
    pub changes: Vec<Change>,
    /// What the status file says after it.
    pub status: AgentStatus,
    /// Why the status file could not be written, when it could not.
    pub status_error: Option<String>,
}
