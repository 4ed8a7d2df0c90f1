//! `llmgw matrix`: every host against every want, compared with the golden
//! outcomes; arguments and rendering (table, markdown, json, junit).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use comfy_table::{Table, presets};
use llmgw::host::Host;
use llmgw::recipe::Want;
use llmgw::report::{EXIT_FAULT, EXIT_OK};
use llmgw::sim::default_wants;
use llmgw::sim::matrix::{self, Cell, Difference, ExpectedFile, Shard};
use llmgw::text;

use super::input::{self, Failure};
use super::output;
use super::what_if::WhatIf;

/// Arguments of `matrix`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw matrix                                  # the table, hosts as rows, engines as columns\n  \
    llmgw matrix --check                          # exit 1 and the differences when an outcome changed\n  \
    llmgw matrix --update                         # rewrite matrix/expected.json (reviewed change)\n  \
    llmgw matrix --check --format junit --shard 2/4 > matrix-2.xml\n  \
    llmgw matrix --set nvidia.driver=580.95.05 --diff   # which cells a driver upgrade changes\n\n\
    A cell marked (drift) is one whose recipe's first candidate failed a check of what it really is\n\
    (ldd, version, GPU): the recipe believed that build runs there and it did not.")]
pub struct Args {
    /// The directory of host descriptions (every *.json in it).
    #[arg(long, value_name = "DIR", default_value = "matrix/hosts")]
    hosts: PathBuf,
    /// A wants file; default: matrix/wants.json (embedded).
    #[arg(long, value_name = "FILE")]
    wants: Option<PathBuf>,
    /// The golden outcomes.
    #[arg(long, value_name = "FILE", default_value = "matrix/expected.json")]
    expected: PathBuf,
    /// Exit 1 when any outcome differs from the golden file, printing only the differences.
    #[arg(long, conflicts_with = "update")]
    check: bool,
    /// Rewrite the golden file with the outcomes of this run (reviewers' notes are kept).
    #[arg(long)]
    update: bool,
    /// table for a terminal, markdown for a CI step summary, json, junit for CI test reports.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Run only the I-th of N deterministic parts of the cells (1 <= I <= N).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Simulations run at once; default: the machine's cores.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// What if: --scenario, --set, --diff.
    #[command(flatten)]
    what_if: WhatIf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Table,
    Markdown,
    Json,
    Junit,
}

/// Runs `matrix`.
pub fn run(args: Args) -> Result<i32, Failure> {
    let hosts = input::hosts_dir(&args.hosts)?;
    let wants = input::wants(&[], args.wants.as_deref(), default_wants)?;
    let shard =
        args.shard.as_deref().map(Shard::parse).transpose().map_err(|e| Failure::BadInput(format!("--shard: {e}")))?;
    if args.update && (shard.is_some() || !args.what_if.set.is_empty() || args.what_if.scenario.is_some()) {
        return Err(Failure::BadInput(
            "--update writes the golden outcomes of the matrix as it is: leave out --shard, --set and --scenario"
                .into(),
        ));
    }
    if args.update {
        input::output("--expected", &args.expected)?;
    }
    let catalog = args.what_if.catalog()?;
    let settings = args.what_if.settings()?;
    // A change applies to the hosts it can: a driver to those with a GPU.
    // The others are left out, said so; a change no host takes is an error.
    let mut originals: Vec<(String, Host)> = Vec::new();
    let mut changed: Vec<(String, Host)> = Vec::new();
    let mut refused: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for (id, h) in &hosts {
        match h.with_settings(&settings) {
            Ok(c) => {
                originals.push((id.clone(), h.clone()));
                changed.push((id.clone(), c));
            }
            Err(e) if changed.is_empty() && refused.values().map(Vec::len).sum::<usize>() + 1 == hosts.len() => {
                return Err(Failure::BadInput(format!("--set on {id}: {e} (and on every other host)")));
            }
            Err(e) => refused.entry(e).or_default().push(id.clone()),
        }
    }
    for (why, ids) in &refused {
        eprintln!("llmgw: --set left out {} host(s) it does not apply to ({why}): {}", ids.len(), ids.join(", "));
    }
    let jobs = args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()), usize::from);
    // The offline rows (an air-gapped node served from a mirror) come from
    // the truth as it is: a scenario's what-if is about the publisher.
    let offline = args.what_if.scenario.is_none();
    let run = |hosts: &[(String, Host)]| {
        let mut cells =
            matrix::run(hosts, &wants, &catalog, shard, jobs).map_err(|e| Failure::Internal(e.to_string()))?;
        if offline {
            cells.extend(
                matrix::run_offline(hosts, &wants, &catalog, shard).map_err(|e| Failure::Internal(e.to_string()))?,
            );
            // By host, each offline row after its host's online one.
            cells.sort_by(|a, b| a.host.cmp(&b.host));
        }
        Ok::<_, Failure>(cells)
    };

    if args.what_if.diff {
        let before = run(&originals)?;
        let after = run(&changed)?;
        output::emit(&what_if(&before, &after, &args.what_if.set))?;
        return Ok(EXIT_OK);
    }
    let cells = run(&changed)?;

    if args.update {
        let old = input::expected(&args.expected).ok();
        let new = ExpectedFile::updated(&cells, old.as_ref());
        let changed = old.as_ref().map_or(new.cells.len(), |o| matrix::compare(&cells, o, true).len());
        input::write_output("--expected", &args.expected, new.to_json().as_bytes())?;
        output::emit(&format!("wrote {} cells to {} ({changed} changed)\n", new.cells.len(), args.expected.display()))?;
        return Ok(EXIT_OK);
    }
    if args.check {
        let mut expected = input::expected(&args.expected)?;
        if !offline {
            // Not run under a scenario: not missing either.
            expected.cells.retain(|c| !c.host.ends_with(" (offline)"));
        }
        let diffs = matrix::compare(&cells, &expected, shard.is_none());
        let text = match args.format {
            Format::Junit => junit(&cells, Some(&diffs)),
            Format::Json => format!("{}\n", serde_json::to_string_pretty(&diffs).expect("differences serialize")),
            Format::Table | Format::Markdown => differences(&diffs, args.format == Format::Markdown, cells.len()),
        };
        output::emit(&text)?;
        return Ok(if diffs.is_empty() { EXIT_OK } else { EXIT_FAULT });
    }
    let text = match args.format {
        Format::Table => table(&cells, &wants, false),
        Format::Markdown => table(&cells, &wants, true),
        Format::Json => {
            format!(
                "{}\n",
                serde_json::to_string_pretty(&serde_json::json!({"cells": cells})).expect("cells serialize")
            )
        }
        Format::Junit => junit(&cells, None),
    };
    output::emit(&text)?;
    Ok(EXIT_OK)
}

/// The cell's text in a table: the variant when ready, else the state; `!` marks drift.
fn cell_text(c: &Cell) -> String {
    let s = &c.status;
    let mut t = match (&s.variant, s.state) {
        (Some(v), llmgw::converge::State::Ready) => {
            let asked = c.want.split(['@', ':']).nth(1).unwrap_or_default();
            if s.version == asked { v.clone() } else { format!("{v} {}", s.version) }
        }
        _ => s.state.as_str().to_string(),
    };
    if c.drift.is_some() {
        t.push_str(" !drift");
    }
    t
}

/// Hosts as rows, wants as columns.
fn table(cells: &[Cell], wants: &[Want], markdown: bool) -> String {
    let columns: Vec<String> = wants.iter().map(ToString::to_string).collect();
    let mut rows: BTreeMap<&str, BTreeMap<&str, String>> = BTreeMap::new();
    for c in cells {
        rows.entry(c.host.as_str()).or_default().insert(c.want.as_str(), cell_text(c));
    }
    let mut t = Table::new();
    t.load_style(if markdown { presets::ASCII_MARKDOWN } else { presets::UTF8_FULL_CONDENSED });
    t.set_header(std::iter::once("host".to_string()).chain(columns.iter().cloned()));
    let cell = |text: &str| if markdown { text::for_markdown_cell(text) } else { text::for_terminal(text) };
    for (host, by_want) in &rows {
        t.add_row(
            std::iter::once(cell(host))
                .chain(columns.iter().map(|w| cell(&by_want.get(w.as_str()).cloned().unwrap_or_default()))),
        );
    }
    let drift: Vec<&Cell> = cells.iter().filter(|c| c.drift.is_some()).collect();
    let mut out = format!("{t}\n");
    if !drift.is_empty() {
        let _ =
            writeln!(out, "\n{} cell(s) are drift (the recipe's first candidate failed a check there):", drift.len());
        for c in drift {
            let _ = writeln!(
                out,
                "{}- {} {}: {}",
                if markdown { "" } else { "  " },
                text::for_terminal(&c.host),
                c.want,
                text::for_terminal(c.drift.as_deref().unwrap_or_default())
            );
        }
    }
    out
}

/// `--check`'s report: only the differences, golden and now side by side.
fn differences(diffs: &[Difference], markdown: bool, ran: usize) -> String {
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
fn junit(cells: &[Cell], diffs: Option<&[Difference]>) -> String {
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

/// `--diff`: the cells a change changes, before -> after.
fn what_if(before: &[Cell], after: &[Cell], set: &[String]) -> String {
    let mut out = format!("with {}:\n", set.join(", "));
    let mut n = 0;
    for (b, a) in before.iter().zip(after) {
        let (was, now) = (b.outcome().summary(), a.outcome().summary());
        if was != now {
            n += 1;
            let _ = writeln!(out, "  {} {}: {was} -> {now}", b.host, b.want);
        }
    }
    if n == 0 {
        out.push_str("  no cell changes\n");
    }
    out
}
