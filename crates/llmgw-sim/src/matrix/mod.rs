//! The hardware matrix: every host description against every want, each in
//! its own simulation, compared with the golden outcomes of
//! `matrix/expected.json`; and the same over a fleet of captured nodes.
//!
//! | file | what lives there |
//! | --- | --- |
//! | this file | [`Cell`], [`Shard`], [`drift`], and [`run`]: every host simulated on its own, in parallel |
//! | `offline.rs` | [`run_offline`]: the offline rows (air-gapped hosts served from a mirror) |
//! | `golden.rs` | [`ExpectedFile`], the golden file, and [`compare`]/[`Checker`]: the [`Difference`]s from it |
//! | [`embedded`] | `matrix/hosts/` and `matrix/expected.json` compiled into the binary |
//! | [`fleet`] | a fleet: hosts read one at a time, identical machines simulated once, rows handed on in order |
//! | [`summary`] | a fleet's [`Summary`]: per want, how many hosts get each outcome or change; merged across shards |
//!
//! A cell is [`drift`] when the recipe's first candidate failed a check of
//! what the build really is: the recipe believed it runs and it did not,
//! even if a later build saved the node.
//!
//! Uses: `publisher` (the fake server) and `truth`. Beside them, the
//! crate's [`crate::Simulation`], and the real bundles of
//! [`llmgw_system::offline`] for the offline rows.
//! Nothing here reads a file the user names: the command line hands host
//! descriptions in.

pub mod embedded;
pub mod fleet;
mod golden;
mod offline;
pub mod summary;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use golden::{Checker, Difference, ExpectedCell, ExpectedFile, compare};
pub use offline::{OFFLINE_HOSTS, is_offline_id, offline_id, run_offline};
pub use summary::Summary;

use crate::publisher::FakeServer;
use crate::truth::Catalog;
use crate::{SimError, Simulation};
use llmgw_core::converge::{Outcome, Status};
use llmgw_core::recipe::Want;
use llmgw_model::host::Host;

/// One host and one want, simulated: an element of `--format json`'s
/// `cells`, read back by `matrix --merge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// The host's id: its file's name without `.json` (`v100`).
    pub host: String,
    /// The host description's `name`.
    pub host_name: String,
    /// The want: `llama.cpp@b10850`.
    pub want: String,
    /// What the simulation gave.
    pub status: Status,
    /// Why the cell is drift, when it is.
    pub drift: Option<String>,
}

impl Cell {
    /// The cell as the golden file records it.
    pub fn outcome(&self) -> ExpectedCell {
        ExpectedCell {
            host: self.host.clone(),
            want: self.want.clone(),
            state: self.status.state,
            variant: self.status.variant.clone(),
            version: self.status.version.clone(),
            drift: self.drift.is_some(),
            resolved: self.status.resolved.clone(),
            note: None,
        }
    }
}

/// A deterministic part of the matrix, by whole hosts: the hosts whose
/// index (in the order of their ids) is `index - 1` modulo `count`, with
/// every want of each (a host's wants converge together on one node: the
/// first Python engine installs gcc and uv, the next finds them, so a
/// cell's words depend on the other wants of its host). Every host has the
/// same wants, so the shards are balanced to one host. The shards `1/N` …
/// `N/N` together are the whole matrix, each cell in exactly one and the
/// same as in the whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: usize,
    /// Of how many.
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` with 1 <= I <= N.
    ///
    /// # Errors
    /// A sentence naming what is wrong.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("shard `{s}` is not I/N with 1 <= I <= N (like 2/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) =
            (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the host at `position` (in the order of host ids) belongs to this shard.
    pub fn holds(&self, position: usize) -> bool {
        position % self.count == self.index - 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a status is drift: the first build tried was the recipe's first
/// candidate and it failed one of the checks of what it really is.
pub fn drift(status: &Status) -> Option<String> {
    let first = status.attempts.iter().find(|a| a.outcome != Outcome::LeftOut)?;
    let check = first.check?;
    (first.outcome == Outcome::Failed).then(|| {
        format!(
            "the recipe's first candidate {} failed its {} check: {}",
            first.variant,
            check.in_words(),
            first.reason
        )
    })
}

/// Simulates every host against every want (restricted to `shard`), in
/// parallel on `threads` threads, against one fake server serving `catalog`.
/// Cells come back sorted by host, then in the order of `wants`.
///
/// # Errors
/// [`SimError`] when the server or a simulation cannot be set up.
pub fn run(
    hosts: &[(String, Host)],
    wants: &[Want],
    catalog: &Catalog,
    shard: Option<Shard>,
    threads: usize,
) -> Result<Vec<Cell>, SimError> {
    let mut hosts: Vec<&(String, Host)> = hosts.iter().collect();
    hosts.sort_by(|a, b| a.0.cmp(&b.0));
    // The wants of each host that fall in the shard, with their positions.
    type Work<'a> = (&'a (String, Host), Vec<(usize, Want)>);
    let mut work: Vec<Work> = Vec::new();
    for (h, host) in hosts.iter().enumerate() {
        let mine: Vec<(usize, Want)> = wants
            .iter()
            .enumerate()
            .filter(|_| shard.is_none_or(|s| s.holds(h)))
            .map(|(w, want)| (w, want.clone()))
            .collect();
        if !mine.is_empty() {
            work.push((host, mine));
        }
    }
    let server = Arc::new(FakeServer::start(catalog).map_err(|e| SimError::Server(e.to_string()))?);
    let next = AtomicUsize::new(0);
    let cells: Mutex<Vec<(String, usize, Cell)>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<SimError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1).min(work.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(((id, host), mine)) = work.get(i) else { break };
                    let wants: Vec<Want> = mine.iter().map(|(_, w)| w.clone()).collect();
                    let mut sim = match Simulation::on(host.clone(), server.clone()) {
                        Ok(mut sim) => {
                            sim.set_machine_faults(catalog.machine.clone());
                            sim
                        }
                        Err(e) => {
                            failure.lock().expect("no thread panics holding it").get_or_insert(e);
                            break;
                        }
                    };
                    // A scenario's crash is recovered from: the next convergence is the outcome.
                    let report = sim.converge(&wants);
                    let mut out = cells.lock().expect("no thread panics holding it");
                    for ((w, want), status) in mine.iter().zip(report.engines) {
                        let drift = drift(&status);
                        let cell = Cell {
                            host: id.clone(),
                            host_name: host.name.clone(),
                            want: want.to_string(),
                            status,
                            drift,
                        };
                        out.push((id.clone(), *w, cell));
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().expect("no thread panicked") {
        return Err(e);
    }
    let mut cells = cells.into_inner().expect("no thread panicked");
    cells.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok(cells.into_iter().map(|(_, _, c)| c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
        for bad in ["0/4", "5/4", "1", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (1..=3).map(|i| Shard { index: i, count: 3 }).collect();
        for p in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.holds(p)).count(), 1, "cell {p} in exactly one shard");
        }
    }
}
