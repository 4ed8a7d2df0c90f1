//! The agent's provisioning loop (`llmgw agent`): keeps the engines a node
//! is asked for installed, finds out when one stops working, and says what
//! the node can run, as llmgw's first version did (docs/facts.md §10).
//!
//! - A *pass* converges every want once ([`Node::converge`]): an install
//!   already there is re-checked (its files still verify, its binary still
//!   starts, it still lists its GPU), a broken one is reinstalled.
//! - Passes come at start, on a kick ([`Event::Kick`], a good changed wants
//!   file [`Event::WantsFile`] the CLI sees, every SIGHUP [`Event::Reread`]),
//!   and otherwise when [`Schedule`] says: 10 minutes after a clean pass, 1,
//!   2, 4, … up to 10 minutes after a failed one. Events queued during a pass
//!   make one pass after it.
//! - A wants file that cannot be read or is malformed is logged once per
//!   change and kept in the status file's `wants_error`; the last good wants
//!   stay.
//! - After each pass: an engine's status is logged only when its state or
//!   detail changed ([`changes`]), at warning level for `failed` and
//!   `unsupported`; the [`AgentStatus`] is written atomically to the status
//!   file; a [`PassRecord`] goes to whoever watches (tests, with tokio's
//!   paused clock).
//! - [`Event::Stop`] (SIGTERM) ends the loop between passes; a pass in
//!   progress stops between two wants, never inside one's commit.
//! - On a [`Simulation`], a scenario's crash ([`llmgw_sim::machine::SimulatedCrash`]) is said
//!   and the want converged again, as `llmgw simulate` does.
//!
//! Every effect goes through the [`Node`]: a simulation, or a
//! [`node::OnSystem`] over any [`crate::system::System`] ([`node::RealNode`] on a node).
//! The waits are tokio's, so a test with a paused clock sees the exact times
//! of the passes.
//!
//! | file | what lives there |
//! | --- | --- |
//! | `node.rs` | the machine a pass works on: simulated, over a system, or this node (discovered again each pass, under the engines directory's lock) |
//! | `passes.rs` | the loop: events, passes, the schedule's waits, stopping |
//! | `status.rs` | the status file and what is logged after a pass |
//! | `runtime.rs` | the process around the loop: tokio's runtime, signals, the wants file watched, the status file's place checked |
//! | `config.rs`, `report.rs`, `schedule.rs` | `agent.json`; the engine report; when the next pass comes |
//!
//! Uses: `converge`, `recipe` and `system`. This node and a simulated one
//! are nodes of the crates above (`llmgw_system::agent`, `llmgw_sim::node`).

pub mod config;
pub mod node;
pub mod passes;
pub mod report;
pub mod schedule;
pub mod status;

pub use config::AgentConfig;
pub use node::{Node, OnSystem};
pub use passes::{Agent, Control, Event, Running, run, spawn};
pub use report::{Probed, Reported, Seen};
pub use schedule::{FIRST_RETRY, RECHECK_EVERY, Schedule};
pub use status::{AgentStatus, Change, NotInstalled, PassRecord, changes};

use crate::converge::Status;
use crate::system::System;

/// The engine report of a node between runs of the agent (`llmgw agent
/// --report`): the versions `last` (the status file's statuses) shows
/// installed and seen to run, merged with what the configured binaries
/// answer now.
pub fn engine_report(sys: &mut dyn System, last: &[Status], config: &AgentConfig) -> Vec<Reported> {
    let configured = report::probe(sys, &config.engines.binaries);
    report::merge(&report::installed(last), &configured, &config.engines.disabled)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::converge::State;
    use crate::recipe::Want;

    fn status(want: &str, state: State, detail: &str) -> Status {
        Status::new(&Want::parse(want).unwrap(), state, detail.into())
    }

    #[test]
    fn only_changes_are_logged_and_a_second_identical_pass_logs_nothing() {
        let mut last = BTreeMap::new();
        let first = [status("llama.cpp@b10850", State::Failed, "HTTP 404"), status("uv@0.12.20", State::Ready, "ok")];
        let c = changes(&mut last, &first);
        assert_eq!(c.len(), 2);
        assert!(c[0].is_warning() && !c[1].is_warning());
        assert!(changes(&mut last, &first).is_empty());
        let second = [status("llama.cpp@b10850", State::Failed, "HTTP 500"), status("uv@0.12.20", State::Ready, "ok")];
        let c = changes(&mut last, &second);
        assert_eq!(c.iter().map(|c| c.detail.as_str()).collect::<Vec<_>>(), ["HTTP 500"], "the detail changed");
        // A want no longer asked for is forgotten: asked again, it is new.
        changes(&mut last, &second[1..]);
        assert_eq!(changes(&mut last, &second).len(), 1);
    }
}
