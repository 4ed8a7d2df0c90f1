//! A fleet's summary: per want, how many hosts get each outcome (and with
//! `--diff`, how many change from what to what, with the first three hosts
//! of each change); the hosts left out by `--set` and the bad host files;
//! and [`merge`], which puts shards' reports back together.
//!
//! Outcomes are [`super::ExpectedCell::summary`]'s words (`ready
//! cuda-12.8`, `failed`, `ready cu12 0.19.1 (drift)`). The offline rows
//! (`X (offline)`) are rows of the matrix, not nodes: a summary leaves them
//! out. Every count is a number of hosts; examples are host ids, the first
//! in the order of ids, so a summary of shards merged is the summary of the
//! whole.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::fleet::Row;
use super::{Cell, Shard, is_offline_id};

/// Examples kept for each change, and in a report for each reason a host is left out.
pub const EXAMPLES: usize = 3;

/// Host ids kept for each reason a host is left out, to list on stderr.
pub const LEFT_OUT_KEPT: usize = 20;

/// How many hosts get one outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    /// The outcome in words: `ready cuda-12.8`.
    pub outcome: String,
    /// How many hosts, a count.
    pub hosts: u64,
}

/// How many hosts one change (with `--diff`) moves from one outcome to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// The outcome without the change.
    pub from: String,
    /// The outcome with it.
    pub to: String,
    /// How many hosts, a count.
    pub hosts: u64,
    /// The first [`EXAMPLES`] of them, host ids in order.
    pub examples: Vec<String>,
}

/// One want across the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WantSummary {
    /// The want: `llama.cpp@b10850`.
    pub want: String,
    /// The outcomes (with `--set`, of the changed hosts), most hosts first.
    pub outcomes: Vec<Count>,
    /// With `--diff`: the outcomes of the hosts unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<Count>>,
    /// With `--diff`: the outcomes that change, most hosts first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<Change>>,
}

/// A fleet in numbers: `--format json`'s `summary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Host files of the run (or shard).
    pub hosts: u64,
    /// Hosts simulated.
    pub simulated: u64,
    /// Hosts `--set` does not apply to.
    pub left_out: u64,
    /// Host files not simulated (unreadable, malformed, a name twice).
    pub bad: u64,
    /// With `--diff`: the `--set`s asked, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Vec<String>>,
    /// The scenario the hosts ran under (`--scenario`), by name; with
    /// `--diff`, the unchanged hosts ran against the embedded truth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Each want, in the order of the wants.
    pub wants: Vec<WantSummary>,
}

/// Hosts `--set` does not apply to, for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeftOut {
    /// Why (`nvidia.driver: \`nvidia\` is null on this host`).
    pub why: String,
    /// How many hosts, a count.
    pub hosts: u64,
    /// The first [`EXAMPLES`] of them, host ids in order.
    pub examples: Vec<String>,
}

/// A host file not simulated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bad {
    /// Its host id (its file's name without `.json`), escaped for a terminal.
    pub host: String,
    /// Its path, escaped for a terminal.
    pub path: String,
    /// Why it was not simulated.
    pub reason: String,
}

/// `llmgw matrix --format json`: the cells or the summary of a run, and
/// what was not simulated. Fields absent when empty, so that a whole run
/// of good hosts is `{"cells": […]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// `I/N` for a shard's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The summary (a fleet's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// Every cell, by host then want (`--cells`, the default up to the threshold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<Vec<Cell>>,
    /// Hosts `--set` does not apply to, by reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// Host files not simulated, in the order of ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bad: Vec<Bad>,
}

/// Hosts left out by `--set`, by reason: counts and the first
/// [`LEFT_OUT_KEPT`] ids of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftOuts {
    by_why: BTreeMap<String, (u64, Vec<String>)>,
}

impl LeftOuts {
    /// One more host left out.
    pub fn add(&mut self, id: &str, why: &str) {
        let (n, ids) = self.by_why.entry(why.to_string()).or_default();
        *n += 1;
        if ids.len() < LEFT_OUT_KEPT {
            ids.push(id.to_string());
        }
    }

    /// Each reason: how many hosts, and the first of them kept.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64, &[String])> {
        self.by_why.iter().map(|(why, (n, ids))| (why.as_str(), *n, ids.as_slice()))
    }

    /// Whether no host was left out.
    pub fn is_empty(&self) -> bool {
        self.by_why.is_empty()
    }

    /// As a report lists them: by reason, [`EXAMPLES`] ids each.
    pub fn list(&self) -> Vec<LeftOut> {
        self.iter()
            .map(|(why, hosts, ids)| LeftOut {
                why: why.to_string(),
                hosts,
                examples: ids.iter().take(EXAMPLES).cloned().collect(),
            })
            .collect()
    }

    /// Adds a report's list (a shard's).
    pub fn absorb(&mut self, list: &[LeftOut]) {
        for l in list {
            let (n, ids) = self.by_why.entry(l.why.clone()).or_default();
            *n += l.hosts;
            ids.extend(l.examples.iter().cloned());
            ids.sort();
            ids.dedup();
            ids.truncate(LEFT_OUT_KEPT);
        }
    }
}

/// A [`Summary`] in the making: rows counted as they pass.
#[derive(Debug, Clone)]
pub struct Tally {
    wants: Vec<String>,
    set: Option<Vec<String>>,
    scenario: Option<String>,
    counts: [u64; 3],
    outcomes: Vec<BTreeMap<String, u64>>,
    before: Vec<BTreeMap<String, u64>>,
    changes: Vec<BTreeMap<(String, String), Examples>>,
}

/// How many hosts, and the first of them.
type Examples = (u64, Vec<String>);

impl Tally {
    /// Counting for `wants`; with `diff`, the `--set`s of a `--diff` run.
    pub fn new(wants: Vec<String>, diff: Option<Vec<String>>) -> Tally {
        let n = wants.len();
        Tally {
            wants,
            set: diff,
            scenario: None,
            counts: [0; 3],
            outcomes: vec![BTreeMap::new(); n],
            before: vec![BTreeMap::new(); n],
            changes: vec![BTreeMap::new(); n],
        }
    }

    /// The same, counting a run under the scenario named `scenario`.
    pub fn under(mut self, scenario: Option<String>) -> Tally {
        self.scenario = scenario;
        self
    }

    /// Counts one row (an offline row is not a node: not counted).
    pub fn add(&mut self, row: &Row<'_>) {
        match row {
            Row::Bad { .. } => self.counts[2] += 1,
            Row::LeftOut { .. } => self.counts[1] += 1,
            Row::Cells { cells, .. } if cells.first().is_some_and(|c| is_offline_id(&c.host)) => {}
            Row::Cells { cells, before } => {
                self.counts[0] += 1;
                for (i, c) in cells.iter().enumerate() {
                    let Some(w) = self.wants.iter().position(|w| *w == c.want) else { continue };
                    let now = c.outcome().summary();
                    if let Some(b) = before.and_then(|b| b.get(i)) {
                        let was = b.outcome().summary();
                        *self.before[w].entry(was.clone()).or_default() += 1;
                        if was != now {
                            let (n, ex) = self.changes[w].entry((was, now.clone())).or_default();
                            *n += 1;
                            if ex.len() < EXAMPLES {
                                ex.push(c.host.clone());
                            }
                        }
                    }
                    *self.outcomes[w].entry(now).or_default() += 1;
                }
            }
        }
    }

    /// Counts hosts that were not simulated, from a report's lists.
    pub fn add_not_simulated(&mut self, left_out: u64, bad: u64) {
        self.counts[1] += left_out;
        self.counts[2] += bad;
    }

    /// The summary so far.
    pub fn summary(&self) -> Summary {
        let counts = |m: &BTreeMap<String, u64>| {
            let mut v: Vec<Count> = m.iter().map(|(o, n)| Count { outcome: o.clone(), hosts: *n }).collect();
            v.sort_by(|a, b| b.hosts.cmp(&a.hosts).then_with(|| a.outcome.cmp(&b.outcome)));
            v
        };
        let diff = self.set.is_some();
        let wants = self
            .wants
            .iter()
            .enumerate()
            .map(|(w, want)| {
                let mut changes: Vec<Change> = self.changes[w]
                    .iter()
                    .map(|((from, to), (n, ex))| Change {
                        from: from.clone(),
                        to: to.clone(),
                        hosts: *n,
                        examples: ex.clone(),
                    })
                    .collect();
                changes.sort_by(|a, b| b.hosts.cmp(&a.hosts).then_with(|| (&a.from, &a.to).cmp(&(&b.from, &b.to))));
                WantSummary {
                    want: want.clone(),
                    outcomes: counts(&self.outcomes[w]),
                    before: diff.then(|| counts(&self.before[w])),
                    changes: diff.then_some(changes),
                }
            })
            .collect();
        let [simulated, left_out, bad] = self.counts;
        Summary {
            hosts: simulated + left_out + bad,
            simulated,
            left_out,
            bad,
            set: self.set.clone(),
            scenario: self.scenario.clone(),
            wants,
        }
    }

    /// Adds another run's summary (a shard's): counts add up, and the
    /// examples of a change are the first of both.
    ///
    /// # Errors
    /// A sentence when the two are not of the same wants or `--set`.
    pub fn absorb(&mut self, s: &Summary) -> Result<(), String> {
        let wants: Vec<&str> = s.wants.iter().map(|w| w.want.as_str()).collect();
        if wants != self.wants.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(format!("its wants ({}) are not {}", wants.join(", "), self.wants.join(", ")));
        }
        if s.set != self.set {
            let say =
                |s: &Option<Vec<String>>| s.as_ref().map_or("no --diff".into(), |s| format!("--set {}", s.join(" ")));
            return Err(format!("it was run with {}, not {}", say(&s.set), say(&self.set)));
        }
        if s.scenario != self.scenario {
            let say = |s: &Option<String>| s.as_ref().map_or("no scenario".into(), |s| format!("scenario {s}"));
            return Err(format!("it was run under {}, not {}", say(&s.scenario), say(&self.scenario)));
        }
        self.counts[0] += s.simulated;
        self.counts[1] += s.left_out;
        self.counts[2] += s.bad;
        for (w, ws) in s.wants.iter().enumerate() {
            for c in &ws.outcomes {
                *self.outcomes[w].entry(c.outcome.clone()).or_default() += c.hosts;
            }
            for c in ws.before.iter().flatten() {
                *self.before[w].entry(c.outcome.clone()).or_default() += c.hosts;
            }
            for c in ws.changes.iter().flatten() {
                let (n, ex) = self.changes[w].entry((c.from.clone(), c.to.clone())).or_default();
                *n += c.hosts;
                ex.extend(c.examples.iter().cloned());
                ex.sort();
                ex.dedup();
                ex.truncate(EXAMPLES);
            }
        }
        Ok(())
    }
}

/// The wants of cells as a run gave them: those of the first host that is
/// not an offline row, in order.
pub fn wants_of(cells: &[Cell]) -> Vec<String> {
    let Some(first) = cells.iter().find(|c| !is_offline_id(&c.host)) else { return Vec::new() };
    cells
        .iter()
        .skip_while(|c| c.host != first.host)
        .take_while(|c| c.host == first.host)
        .map(|c| c.want.clone())
        .collect()
}

/// The hosts' rows of cells (consecutive cells of one host), in order.
pub fn rows_of(cells: &[Cell]) -> impl Iterator<Item = &[Cell]> {
    cells.chunk_by(|a, b| a.host == b.host)
}

/// Puts the reports of the shards `1/N` … `N/N` of one run back together:
/// the whole run's cells (by host, then want) or its summary, its hosts
/// left out and its bad files. `docs` are each report with its name (for
/// messages).
///
/// # Errors
/// A sentence naming the report: not a shard's, a shard twice or missing,
/// shards of different runs, cells and summaries mixed.
pub fn merge(docs: Vec<(String, Document)>) -> Result<Document, String> {
    let Some(count) = docs.first().and_then(|(_, d)| d.shard.as_deref()).and_then(|s| Shard::parse(s).ok()) else {
        let name = docs.first().map_or("", |(n, _)| n.as_str());
        return Err(format!("`{name}` is not a shard's report (run it with --shard I/N --format json)"));
    };
    let mut seen = vec![false; count.count];
    for (name, d) in &docs {
        let s = d
            .shard
            .as_deref()
            .and_then(|s| Shard::parse(s).ok())
            .ok_or_else(|| format!("`{name}` is not a shard's report (run it with --shard I/N --format json)"))?;
        if s.count != count.count {
            return Err(format!("`{name}` is shard {s}, of another split than {count}"));
        }
        if std::mem::replace(&mut seen[s.index - 1], true) {
            return Err(format!("`{name}` is shard {s}, given twice"));
        }
        if d.summary.is_some() != docs[0].1.summary.is_some() || d.summary.is_some() == d.cells.is_some() {
            return Err(format!("`{name}` mixes summaries and cells: merge the reports of one run"));
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(format!("shard {}/{} is missing", missing + 1, count.count));
    }
    let mut left_out = LeftOuts::default();
    let mut bad: Vec<Bad> = Vec::new();
    let mut whole = Document::default();
    let mut tally: Option<Tally> = None;
    let mut cells: Vec<Cell> = Vec::new();
    let mut hosts: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (name, d) in docs {
        let mine: std::collections::BTreeSet<&str> = d.cells.iter().flatten().map(|c| c.host.as_str()).collect();
        if let Some(twice) = mine.iter().find(|h| hosts.contains(**h)) {
            return Err(format!("`{name}`: host `{twice}` is in another shard too: merge the reports of one run"));
        }
        hosts.extend(mine.into_iter().map(String::from));
        left_out.absorb(&d.left_out);
        bad.extend(d.bad);
        if let Some(s) = d.summary {
            let t = tally.get_or_insert_with(|| {
                Tally::new(s.wants.iter().map(|w| w.want.clone()).collect(), s.set.clone()).under(s.scenario.clone())
            });
            t.absorb(&s).map_err(|e| format!("`{name}`: {e}"))?;
        }
        cells.extend(d.cells.into_iter().flatten());
    }
    // Each shard's in order of ids: a stable sort by host keeps every host's wants in order.
    bad.sort_by(|a, b| a.host.cmp(&b.host));
    if let Some(t) = tally {
        whole.summary = Some(t.summary());
    } else {
        cells.sort_by(|a, b| a.host.cmp(&b.host));
        whole.cells = Some(cells);
    }
    whole.left_out = left_out.list();
    whole.bad = bad;
    Ok(whole)
}
