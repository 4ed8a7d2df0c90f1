//! Rendering a fleet's summary (table, markdown, JSON) and reading the
//! shards' reports that `matrix --merge` puts together.

use std::fmt::Write as _;
use std::path::PathBuf;

use comfy_table::{Table, presets};
use llmgw_model::text;
use llmgw_sim::matrix::summary::{Document, Summary};

use super::super::input::{self, Failure};

/// The summary as a table (or markdown): the hosts in numbers, then per
/// want each outcome and how many hosts get it; with `--diff`, each change
/// with its hosts and the first of them.
pub fn summary_text(s: &Summary, markdown: bool) -> String {
    let mut out = String::new();
    let mut numbers = vec![format!("{} simulated", s.simulated)];
    if s.left_out > 0 {
        numbers.push(format!("{} left out by --set", s.left_out));
    }
    if s.bad > 0 {
        numbers.push(format!("{} bad host file(s), not simulated", s.bad));
    }
    let numbers = format!("{} hosts: {}", s.hosts, numbers.join(", "));
    let mut t = Table::new();
    t.load_style(if markdown { presets::ASCII_MARKDOWN } else { presets::UTF8_FULL_CONDENSED });
    let cell = |text: &str| if markdown { text::for_markdown_cell(text) } else { text::for_terminal(text) };
    let scenario = s.scenario.as_ref().map(|n| format!("scenario {n}"));
    match &s.set {
        Some(set) => {
            let change: Vec<&str> = scenario.iter().map(String::as_str).chain(set.iter().map(String::as_str)).collect();
            let _ = writeln!(out, "with {}: {numbers}", change.join(", "));
            t.set_header(["want", "before", "after", "hosts", "examples"]);
            for w in &s.wants {
                for c in w.changes.iter().flatten() {
                    t.add_row([
                        w.want.clone(),
                        cell(&c.from),
                        cell(&c.to),
                        c.hosts.to_string(),
                        cell(&c.examples.join(", ")),
                    ]);
                }
            }
            if s.wants.iter().all(|w| w.changes.as_ref().is_none_or(Vec::is_empty)) {
                out.push_str("no cell changes\n");
                return out;
            }
        }
        None => {
            match &scenario {
                Some(scenario) => {
                    let _ = writeln!(out, "under {scenario}: {numbers}");
                }
                None => {
                    let _ = writeln!(out, "{numbers}");
                }
            }
            t.set_header(["want", "outcome", "hosts"]);
            for w in &s.wants {
                for (i, c) in w.outcomes.iter().enumerate() {
                    let want = if i == 0 { w.want.clone() } else { String::new() };
                    t.add_row([want, cell(&c.outcome), c.hosts.to_string()]);
                }
            }
        }
    }
    let _ = writeln!(out, "{t}");
    out
}

/// The summary as `--format json`: [`Document`] with `summary`.
pub fn summary_json(doc: &Document) -> String {
    format!("{}\n", serde_json::to_string_pretty(doc).expect("a document serializes"))
}

/// Reads the reports given to `--merge`, each with its name.
///
/// # Errors
/// [`Failure::BadInput`] naming the file that cannot be read or is not a report.
pub fn read_reports(paths: &[PathBuf]) -> Result<Vec<(String, Document)>, Failure> {
    paths
        .iter()
        .map(|p| {
            let text = input::read(input::REPORT, p)?;
            let objects = ["summary", "summary.wants[*]", "cells[*]", "cells[*].status", "left_out[*]", "bad[*]"];
            let doc: Document = llmgw_model::strict_json::parse(&text, &objects)
                .map_err(|e| Failure::BadInput(format!("report file `{}`: {e}", p.display())))?;
            Ok((p.display().to_string(), doc))
        })
        .collect()
}
