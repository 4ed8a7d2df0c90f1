//! The golden outcomes of `matrix/expected.json` and the differences from
//! them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Cell;
use llmgw_core::converge::State;
use llmgw_core::recipe::WantName;
use llmgw_model::strict_json;

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
    /// For an `ENGINE@latest` want, the version it resolved to on this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// A reviewer's note on why this outcome is right; kept by `--update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ExpectedCell {
    /// Whether two outcomes are the same (notes aside).
    pub fn same_outcome(&self, other: &ExpectedCell) -> bool {
        (self.state, &self.variant, &self.version, self.drift, &self.resolved)
            == (other.state, &other.variant, &other.version, other.drift, &other.resolved)
    }

    /// The outcome in a few words: `ready cuda-12.8`, `failed`, `ready cu12 0.19.1 (drift)`.
    pub fn summary(&self) -> String {
        let mut s = self.state.as_str().to_string();
        if let Some(v) = &self.variant {
            s.push(' ');
            s.push_str(v);
        }
        // The golden file names the want as written; its version asked for is read by the one parser.
        let asked = WantName::parse(&self.want).map(|w| w.version);
        if self.state == State::Ready && asked.as_deref() != Ok(self.version.as_str()) {
            s.push(' ');
            s.push_str(&self.version);
        }
        if let Some(r) = &self.resolved
            && (self.state != State::Ready || *r != self.version)
        {
            s.push_str(&format!(" (latest {r})"));
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
    let mut checker = Checker::new(expected);
    for c in cells {
        checker.check(c);
    }
    checker.finish(whole)
}

/// [`compare`] one cell at a time, for cells that stream past: the
/// differences so far, and which golden cells were run (one flag each, so
/// memory is the golden file's, not the run's).
#[derive(Debug)]
pub struct Checker<'a> {
    expected: &'a ExpectedFile,
    golden: BTreeMap<(&'a str, &'a str), usize>,
    ran: Vec<bool>,
    differences: Vec<Difference>,
    cells: usize,
}

impl<'a> Checker<'a> {
    /// A check against `expected`.
    pub fn new(expected: &'a ExpectedFile) -> Checker<'a> {
        let golden = expected.cells.iter().enumerate().map(|(i, c)| ((c.host.as_str(), c.want.as_str()), i)).collect();
        Checker { expected, golden, ran: vec![false; expected.cells.len()], differences: Vec::new(), cells: 0 }
    }

    /// Checks one cell; its difference, when it has one, is kept (and returned).
    pub fn check(&mut self, c: &Cell) -> Option<&Difference> {
        self.cells += 1;
        let now = c.outcome();
        let e = self.golden.get(&(c.host.as_str(), c.want.as_str())).copied();
        if let Some(i) = e {
            self.ran[i] = true;
        }
        let e = e.map(|i| &self.expected.cells[i]);
        if e.is_some_and(|e| e.same_outcome(&now)) {
            return None;
        }
        self.differences.push(Difference {
            host: c.host.clone(),
            want: c.want.clone(),
            expected: e.cloned(),
            actual: Some(now),
        });
        self.differences.last()
    }

    /// The cells checked so far.
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// The differences: those of the cells checked, in their order, then
    /// with `whole` (no shard) the golden cells not run, in the golden
    /// file's order.
    pub fn finish(mut self, whole: bool) -> Vec<Difference> {
        if whole {
            for (e, _) in self.expected.cells.iter().zip(&self.ran).filter(|(_, ran)| !**ran) {
                self.differences.push(Difference {
                    host: e.host.clone(),
                    want: e.want.clone(),
                    expected: Some(e.clone()),
                    actual: None,
                });
            }
        }
        self.differences
    }
}
