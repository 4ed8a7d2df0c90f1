//! The hardware matrix: every host description against every want, each in
//! its own simulation, compared with the golden outcomes of
//! `matrix/expected.json`.
//!
//! [`run`] simulates the hosts in parallel against one shared fake server
//! and returns [`Cell`]s sorted by host then want; [`Shard`] picks a
//! deterministic part of them; [`ExpectedFile`] is the golden file and
//! [`compare`] the [`Difference`]s from it. A cell is [`drift`] when the
//! recipe's first candidate failed a check of what the build really is: the
//! recipe believed it runs and it did not, even if a later build saved the
//! node.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::converge::{Outcome, State, Status};
use crate::host::Host;
use crate::recipe::Want;
use crate::sim::publisher::FakeServer;
use crate::sim::truth::Catalog;
use crate::sim::{SimError, Simulation};
use crate::strict_json;

/// One host and one want, simulated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

/// Hosts the matrix also runs in offline mode, when its hosts directory
/// holds them: two air-gapped nodes, an arm64 GPU node and an arm64 node
/// without a GPU, so that a bundle of both architectures is exercised.
pub const OFFLINE_HOSTS: &[&str] = &[
    "gh200-ubuntu24.04-driver580",
    "l40s-airgapped-ubuntu22.04-driver580",
    "nogpu-ubuntu24.04-arm64",
    "v100-airgapped-driver535",
];

/// The host id of a host's offline row: `v100-airgapped-driver535 (offline)`.
pub fn offline_id(host: &str) -> String {
    format!("{host} (offline)")
}

/// The offline rows of the matrix: each host of [`OFFLINE_HOSTS`] in `hosts`
/// installs the archive engines of `wants` (llama.cpp, uv) as an offline
/// site's node would. A bundle of every build of those wants, for the
/// architectures of those hosts, is created from a fake publisher serving
/// `catalog` and imported into a mirror, which a second fake server serves
/// with the publisher's routes disabled; each host then converges offline
/// wants against it, with the manifest's checksums. Cells are as
/// [`run`]'s, their host id [`offline_id`]; a host's offline row is in the
/// shard of its host; none when no such host is in `hosts` or the shard.
///
/// # Errors
/// [`SimError`] when a server cannot start, or the bundle cannot be made or
/// imported.
pub fn run_offline(
    hosts: &[(String, Host)],
    wants: &[Want],
    catalog: &Catalog,
    shard: Option<Shard>,
) -> Result<Vec<Cell>, SimError> {
    use crate::offline::bundle;
    use crate::recipe::Engine;
    let mut ids: Vec<&str> = hosts.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    let in_shard = |id: &str| shard.is_none_or(|s| ids.iter().position(|i| *i == id).is_some_and(|p| s.holds(p)));
    let mut chosen: Vec<&(String, Host)> =
        hosts.iter().filter(|(id, _)| OFFLINE_HOSTS.contains(&id.as_str()) && in_shard(id)).collect();
    chosen.sort_by(|a, b| a.0.cmp(&b.0));
    let wants: Vec<Want> =
        wants.iter().filter(|w| matches!(w.engine, Engine::LlamaCpp | Engine::Uv)).cloned().collect();
    if chosen.is_empty() || wants.is_empty() {
        return Ok(vec![]);
    }
    let mut arches: Vec<crate::host::Arch> = chosen.iter().map(|(_, h)| h.arch).collect();
    arches.sort();
    arches.dedup();
    let failed = |what: &str, e: &dyn fmt::Display| SimError::Server(format!("the offline rows' {what}: {e}"));
    let work = crate::system::files::scratch_dir("llmgw-offline-").map_err(SimError::TempDir)?;
    let publisher = FakeServer::start(catalog).map_err(|e| SimError::Server(e.to_string()))?;
    let local = crate::system::http::Http::loopback(5, 30).map_err(|e| SimError::Client(e.to_string()))?;
    let mut sys = crate::system::real::RealSystem::new(local, Box::new(crate::system::real::Silent));
    let out = work.path().join("bundle");
    let made =
        bundle::create(&mut sys, &publisher.base_url(), &wants, &arches, &out).map_err(|e| failed("bundle", &e))?;
    let mirror = work.path().join("mirror");
    bundle::import(&out, &made.manifest_sha256, &mirror).map_err(|e| failed("import", &e))?;
    // The site: its mirror, and no publisher (its routes answer 503).
    let bare = Catalog { releases: vec![], indexes: vec![], faults: vec![], machine: Default::default() };
    let site = Arc::new(FakeServer::start(&bare).map_err(|e| SimError::Server(e.to_string()))?);
    site.serve_mirror(&mirror).map_err(|e| failed("mirror", &e))?;
    site.disable_publisher();
    let sums = made.manifest.sha256_by_asset();
    let offline: Vec<Want> = wants
        .iter()
        .map(|w| {
            w.clone()
                .offline(&site.mirror_url(), sums.clone())
                .expect("a fake server's URL and a manifest's sums are valid")
        })
        .collect();
    let mut cells = Vec::new();
    for (id, host) in chosen {
        let mut sim = Simulation::on(host.clone(), site.clone())?;
        let report = sim.converge(&offline);
        for (want, status) in wants.iter().zip(report.engines) {
            let drift = drift(&status);
            cells.push(Cell {
                host: offline_id(id),
                host_name: host.name.clone(),
                want: want.to_string(),
                status,
                drift,
            });
        }
    }
    Ok(cells)
}

/// One golden outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCell {
    /// The host's id (its file's name without `.json`).
    pub host: String,
    /// The want.
    pub want: String,
    /// The state.
    pub state: State,
    /// The variant installed; `null` when none is.
    pub variant: Option<String>,
    /// The version installed (or asked for, when none is).
    pub version: String,
    /// Whether the cell is drift.
    #[serde(default)]
    pub drift: bool,
    /// A reviewer's note on why this outcome is right; kept by `--update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ExpectedCell {
    /// Whether two outcomes are the same (notes aside).
    pub fn same_outcome(&self, other: &ExpectedCell) -> bool {
        (self.state, &self.variant, &self.version, self.drift)
            == (other.state, &other.variant, &other.version, other.drift)
    }

    /// The outcome in a few words: `ready cuda-12.8`, `failed`, `ready cu12 0.19.1 (drift)`.
    pub fn summary(&self) -> String {
        let mut s = self.state.as_str().to_string();
        if let Some(v) = &self.variant {
            s.push(' ');
            s.push_str(v);
        }
        if self.state == State::Ready
            && !self.want.ends_with(&format!("@{}", self.version))
            && !self.want.contains(&format!("@{}:", self.version))
        {
            s.push(' ');
            s.push_str(&self.version);
        }
        if self.drift {
            s.push_str(" (drift)");
        }
        s
    }
}

/// `matrix/expected.json`: `{"cells": [ExpectedCell…]}`, sorted by host then want.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFile {
    /// The golden outcomes.
    pub cells: Vec<ExpectedCell>,
}

impl ExpectedFile {
    /// Parses the golden file.
    ///
    /// # Errors
    /// A sentence with the JSON path of the problem.
    pub fn from_json(text: &str) -> Result<ExpectedFile, String> {
        strict_json::parse(text, &["cells[*]"]).map_err(|e| e.to_string())
    }

    /// The golden file for `cells`, keeping the notes of `old` where the
    /// outcome did not change; sorted by host, then want as `old` or the
    /// run ordered them.
    pub fn updated(cells: &[Cell], old: Option<&ExpectedFile>) -> ExpectedFile {
        let notes: BTreeMap<(&str, &str), &ExpectedCell> =
            old.map(|o| o.cells.iter().map(|c| ((c.host.as_str(), c.want.as_str()), c)).collect()).unwrap_or_default();
        let cells = cells
            .iter()
            .map(|c| {
                let mut e = c.outcome();
                if let Some(prev) = notes.get(&(c.host.as_str(), c.want.as_str())).filter(|p| p.same_outcome(&e)) {
                    e.note = prev.note.clone();
                }
                e
            })
            .collect();
        ExpectedFile { cells }
    }

    /// The file as written: pretty JSON, one cell per object, final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("the golden file always serializes");
        s.push('\n');
        s
    }
}

/// A cell whose outcome is not the golden one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The host's id.
    pub host: String,
    /// The want.
    pub want: String,
    /// The golden outcome; `None` for a cell the golden file lacks.
    pub expected: Option<ExpectedCell>,
    /// The outcome now; `None` for a golden cell no longer run (its host or
    /// want is gone).
    pub actual: Option<ExpectedCell>,
}

/// The cells whose outcome differs from `expected`. With `whole` (no
/// shard), golden cells that were not run are differences too.
pub fn compare(cells: &[Cell], expected: &ExpectedFile, whole: bool) -> Vec<Difference> {
    let golden: BTreeMap<(&str, &str), &ExpectedCell> =
        expected.cells.iter().map(|c| ((c.host.as_str(), c.want.as_str()), c)).collect();
    let mut out = Vec::new();
    for c in cells {
        let now = c.outcome();
        match golden.get(&(c.host.as_str(), c.want.as_str())) {
            Some(e) if e.same_outcome(&now) => {}
            e => out.push(Difference {
                host: c.host.clone(),
                want: c.want.clone(),
                expected: e.map(|e| (*e).clone()),
                actual: Some(now),
            }),
        }
    }
    if whole {
        let ran: std::collections::BTreeSet<(&str, &str)> =
            cells.iter().map(|c| (c.host.as_str(), c.want.as_str())).collect();
        for e in &expected.cells {
            if !ran.contains(&(e.host.as_str(), e.want.as_str())) {
                out.push(Difference {
                    host: e.host.clone(),
                    want: e.want.clone(),
                    expected: Some(e.clone()),
                    actual: None,
                });
            }
        }
    }
    out
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
