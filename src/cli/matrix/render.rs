//! Rendering the matrix's cells: the table and markdown (hosts as rows,
//! wants as columns), JSON written cell by cell as the cells come, JUnit,
//! `--check`'s differences and `--diff`'s changed cells.
//!
//! JSON and `--diff` stream; a table, markdown and JUnit cannot: a table's
//! columns are as wide as their widest cell (known at the end), and JUnit's
//! root element carries the totals. The table keeps only each row's words
//! (about 100 bytes a host), JUnit every test case.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use comfy_table::{Table, presets};
use llmgw_model::text;
use llmgw_sim::matrix::summary::Document;
use llmgw_sim::matrix::{Cell, Difference};

/// The cell's text in a table: the variant when ready (and the version
/// when it is not the one asked for), else the state; for an
/// `ENGINE@latest` want, the version it resolved to when that is not the
/// one installed (`cu12 0.19.1 (latest 0.33.0)`, `unsupported (latest
/// 0.5.23)`); `!` marks drift.
pub fn cell_text(c: &Cell) -> String {
    let s = &c.status;
    let ready = s.state == llmgw_core::converge::State::Ready;
    let mut t = match (&s.variant, ready) {
        (Some(v), true) => {
            if s.version == s.want.version {
                v.clone()
            } else {
                format!("{v} {}", s.version)
            }
        }
        _ => s.state.as_str().to_string(),
    };
    if let Some(r) = &s.resolved
        && (!ready || *r != s.version)
    {
        t.push_str(&format!(" (latest {r})"));
    }
    if c.drift.is_some() {
        t.push_str(" !drift");
    }
    t
}

/// A table's rows as they come: each host's words per want, and the
/// cells that are drift.
#[derive(Debug, Default)]
pub struct Rows {
    rows: Vec<(String, Vec<String>)>,
    drift: Vec<(String, String, String)>,
}

impl Rows {
    /// Adds one host's cells; `columns` are the wants, in order.
    pub fn add(&mut self, cells: &[Cell], columns: &[String]) {
        let Some(first) = cells.first() else { return };
        let by_want: BTreeMap<&str, String> = cells.iter().map(|c| (c.want.as_str(), cell_text(c))).collect();
        let words = columns.iter().map(|w| by_want.get(w.as_str()).cloned().unwrap_or_default()).collect();
        self.rows.push((first.host.clone(), words));
        for c in cells {
            if let Some(d) = &c.drift {
                self.drift.push((c.host.clone(), c.want.clone(), d.clone()));
            }
        }
    }

    /// Hosts as rows, wants as columns, then the cells that are drift.
    pub fn table(&self, columns: &[String], markdown: bool) -> String {
        let mut t = Table::new();
        t.load_style(if markdown { presets::ASCII_MARKDOWN } else { presets::UTF8_FULL_CONDENSED });
        t.set_header(std::iter::once("host".to_string()).chain(columns.iter().cloned()));
        let cell = |text: &str| if markdown { text::for_markdown_cell(text) } else { text::for_terminal(text) };
        for (host, words) in &self.rows {
            t.add_row(std::iter::once(cell(host)).chain(words.iter().map(|w| cell(w))));
        }
        let mut out = format!("{t}\n");
        if !self.drift.is_empty() {
            let _ = writeln!(
                out,
                "\n{} cell(s) are drift (the recipe's first candidate failed a check there):",
                self.drift.len()
            );
            for (host, want, why) in &self.drift {
                let _ = writeln!(
                    out,
                    "{}- {} {}: {}",
                    if markdown { "" } else { "  " },
                    text::for_terminal(host),
                    want,
                    text::for_terminal(why)
                );
            }
        }
        out
    }
}

/// `--format json` written as it comes, one cell at a time: the whole
/// [`Document`] pretty-printed, each cell's keys sorted (as a
/// `serde_json::Value` has them), the document's in its fields' order.
#[derive(Debug)]
pub struct JsonCells {
    shard: Option<String>,
    started: bool,
}

impl JsonCells {
    /// A report, a shard's when `shard` is given (`I/N`).
    pub fn new(shard: Option<String>) -> JsonCells {
        JsonCells { shard, started: false }
    }

    /// The text that puts `cells` next.
    pub fn cells(&mut self, cells: &[Cell]) -> String {
        let mut out = String::with_capacity(cells.len() * 1024);
        for c in cells {
            if self.started {
                out.push_str(",\n");
            } else {
                self.started = true;
                let head = Document { shard: self.shard.clone(), ..Document::default() };
                let head = serde_json::to_string_pretty(&head).expect("a document serializes");
                // `{}` or `{\n  "shard": "1/2"\n}`: the opening, then the cells.
                match head.strip_suffix("\n}") {
                    Some(open) => {
                        out.push_str(open);
                        out.push_str(",\n");
                    }
                    None => out.push_str("{\n"),
                }
                out.push_str("  \"cells\": [\n");
            }
            // Through a `Value`: its keys sorted, as the report always had them.
            let json = serde_json::to_value(c).and_then(|v| serde_json::to_string_pretty(&v));
            let json = json.expect("a cell serializes");
            for (i, line) in json.lines().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str("    ");
                out.push_str(line);
            }
        }
        out
    }

    /// The end of the report: what follows the cells (`rest`'s hosts left
    /// out and bad files), or the whole report when no cell came.
    pub fn end(self, rest: Document) -> String {
        if !self.started {
            let whole = Document { shard: self.shard, cells: Some(Vec::new()), ..rest };
            return format!("{}\n", serde_json::to_string_pretty(&whole).expect("a document serializes"));
        }
        let tail = Document { left_out: rest.left_out, bad: rest.bad, ..Document::default() };
        let tail = serde_json::to_string_pretty(&tail).expect("a document serializes");
        match tail.strip_prefix("{\n") {
            Some(more) => format!("\n  ],\n{more}\n"),
            None => "\n  ]\n}\n".to_string(),
        }
    }
}

/// `--check`'s report: only the differences, golden and now side by side.
pub fn differences(diffs: &[Difference], markdown: bool, ran: usize) -> String {
    if diffs.is_empty() {
        return format!("all {ran} cells as expected\n");
    }
    let mut t = Table::new();
    t.load_style(if markdown { presets::ASCII_MARKDOWN } else { presets::UTF8_FULL_CONDENSED });
    t.set_header(["host", "want", "expected", "now"]);
    let cell = |text: &str| if markdown { text::for_markdown_cell(text) } else { text::for_terminal(text) };
    for d in diffs {
        t.add_row([
            cell(&d.host),
            d.want.clone(),
            d.expected.as_ref().map_or("(not in the golden file)".into(), |e| e.summary()),
            d.actual.as_ref().map_or("(not run: host or want gone)".into(), |a| a.summary()),
        ]);
    }
    format!("{t}\n{} of {ran} cells differ from the golden file\n", diffs.len())
}

/// One test suite per host, one test case per want; a failure per
/// difference from the golden file (with `--check`), drift as stderr.
pub fn junit(cells: &[Cell], diffs: Option<&[Difference]>) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let differing: BTreeMap<(&str, &str), &Difference> =
        diffs.unwrap_or_default().iter().map(|d| ((d.host.as_str(), d.want.as_str()), d)).collect();
    let mut report = Report::new("llmgw matrix");
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for c in cells {
        let status = match differing.get(&(c.host.as_str(), c.want.as_str())) {
            Some(d) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let expected = d.expected.as_ref().map_or("(not in the golden file)".into(), |e| e.summary());
                let now = d.actual.as_ref().map_or("(not run)".into(), |a| a.summary());
                s.set_message(format!("expected {expected}, now {now}: {}", c.status.detail));
                s
            }
            None => TestCaseStatus::success(),
        };
        let mut case = TestCase::new(c.want.clone(), status);
        case.set_classname(format!("matrix.{}", c.host));
        case.set_system_out(format!("{}: {}", cell_text(c), c.status.detail));
        if let Some(d) = &c.drift {
            case.set_system_err(format!("drift: {d}"));
        }
        suites.entry(c.host.as_str()).or_insert_with(|| TestSuite::new(c.host.clone())).add_test_case(case);
    }
    // Golden cells no longer run fail under their host too.
    for d in differing.values().filter(|d| d.actual.is_none()) {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(format!(
            "expected {}, now not run: its host or want is gone",
            d.expected.as_ref().map_or(String::new(), |e| e.summary())
        ));
        let mut case = TestCase::new(d.want.clone(), s);
        case.set_classname(format!("matrix.{}", d.host));
        suites.entry(d.host.as_str()).or_insert_with(|| TestSuite::new(d.host.clone())).add_test_case(case);
    }
    report.add_test_suites(suites.into_values());
    let mut xml = report.to_string().unwrap_or_else(|e| format!("<!-- cannot write the report: {e} -->"));
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

/// `--diff`'s lines for one host: its cells whose outcome the change changes.
pub fn changed(before: &[Cell], after: &[Cell]) -> String {
    let mut out = String::new();
    for (b, a) in before.iter().zip(after) {
        let (was, now) = (b.outcome().summary(), a.outcome().summary());
        if was != now {
            let _ = writeln!(out, "  {} {}: {was} -> {now}", b.host, b.want);
        }
    }
    out
}
