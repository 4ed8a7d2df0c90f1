//! `llmgw matrix`: every host against every want, compared with the golden
//! outcomes; for a fleet (`--hosts` of more than [`SUMMARY_OVER`] hosts) a
//! summary; `--merge` puts shards' reports back together.
//!
//! | file | what lives there |
//! | --- | --- |
//! | this file | the arguments, and [`Sink`]: each row of the run rendered or counted as it comes |
//! | `render.rs` | the cells as a table, markdown, JSON (streamed), JUnit; `--check`'s differences, `--diff`'s changes |
//! | `report.rs` | the summary as a table, markdown or JSON; the reports `--merge` reads |
//!
//! Host files are read through `input.rs` ([`input::fleet_host`]); the run
//! itself (grouping, summary, merge) is the library's `sim::matrix`. May
//! import the library and the command line's `input`, `output` and
//! `what_if`; nothing imports it but `cli/mod.rs`.

mod render;
mod report;

use std::path::PathBuf;

use llmgw_core::report::{EXIT_BAD_INPUT, EXIT_FAULT, EXIT_OK};
use llmgw_model::host::Host;
use llmgw_model::text;
use llmgw_sim::matrix::fleet::{self, FleetError, Row};
use llmgw_sim::matrix::summary::{self, Bad, Document, LeftOuts, Tally};
use llmgw_sim::matrix::{self, Cell, Checker, ExpectedFile, Shard, embedded};
use llmgw_sim::matrix_wants;
use llmgw_sim::truth::embedded_catalog;

use super::input::{self, Failure, Listed};
use super::output::{self, Stopped, Stream};
use super::what_if::WhatIf;

/// Above this many host files, the report is a summary unless `--cells`
/// asks for every cell: 200 hosts are 1,200 rows of cells, a screenful of
/// summary.
pub const SUMMARY_OVER: usize = 200;

/// Arguments of `matrix`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw matrix                                  # the table, hosts as rows, engines as columns\n  \
    llmgw matrix --check                          # exit 1 and the differences when an outcome changed\n  \
    llmgw matrix --update                         # rewrite matrix/expected.json (reviewed change)\n  \
    llmgw matrix --check --format junit --shard 2/4 > matrix-2.xml\n  \
    llmgw matrix --set nvidia.driver=580.95.05 --diff   # which cells a driver upgrade changes\n  \
    llmgw matrix --scenario llama-cuda-without-ptx --diff   # what a scenario changes\n  \
    llmgw matrix --hosts fleet/ --set nvidia.driver=580.95.05 --diff   # a fleet: how many nodes change, how\n  \
    llmgw matrix --merge shard-1.json shard-2.json --format json   # shards' reports as one\n\n\
    A cell marked !drift in the table (\"(drift)\" in --diff's lines and in summaries) is one whose\n\
    recipe's first candidate failed a check of what it really is (ldd, version, GPU): the recipe\n\
    believed that build runs there and it did not.\n\n\
    Without --hosts, the hosts of matrix/hosts/ and the golden file matrix/expected.json when run in\n\
    the checkout, else the embedded copies of both (said on stderr; `llmgw list hosts`).\n\n\
    Exit codes: 0 (with --check: no outcome differs; with --diff: whatever changes); 1 with --check\n\
    when an outcome differs; 2 bad input, bad host files included; 3 llmgw itself failed.\n\n\
    Host files that cannot be read, are malformed, or repeat another file's name are listed at the\n\
    end and not simulated; the rest are, and the exit code is 2.")]
pub struct Args {
    /// The directory of host descriptions (every *.json in it) [default: matrix/hosts, or the
    /// embedded hosts outside the checkout].
    #[arg(long, value_name = "DIR")]
    hosts: Option<PathBuf>,
    /// A wants file; default: matrix/wants.json (embedded), then ENGINE@latest of every engine.
    #[arg(long, value_name = "FILE")]
    wants: Option<PathBuf>,
    /// The golden outcomes [default: matrix/expected.json, or the embedded one with the embedded hosts].
    #[arg(long, value_name = "FILE")]
    expected: Option<PathBuf>,
    /// Exit 1 when any outcome differs from the golden file, printing only the differences.
    #[arg(long, conflicts_with = "update")]
    check: bool,
    /// Rewrite the golden file with the outcomes of this run (reviewers' notes are kept).
    #[arg(long, conflicts_with = "merge")]
    update: bool,
    /// table for a terminal, markdown for a CI step summary, json, junit for CI test reports.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Run only the I-th of N deterministic parts of the hosts (1 <= I <= N).
    #[arg(long, value_name = "I/N", conflicts_with = "merge")]
    shard: Option<String>,
    /// Simulations run at once; default: the machine's cores.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Every cell, however many hosts (the default up to 200 hosts).
    #[arg(long, conflicts_with = "summary")]
    cells: bool,
    /// Per want, how many hosts get each outcome (with --diff: each change),
    /// however few hosts (the default above 200).
    #[arg(long, conflicts_with_all = ["check", "update"])]
    summary: bool,
    /// Put shards' reports (`--shard I/N --format json`, cells or summaries) back
    /// together into the whole run's report; with --check, compare it with the golden file.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["set", "scenario", "diff"])]
    merge: Vec<PathBuf>,
    /// Simulate every host on its own, not each distinct machine once
    /// (slow; the output is the same, byte for byte: for checking that).
    #[arg(long)]
    ungrouped: bool,
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
    let shard =
        args.shard.as_deref().map(Shard::parse).transpose().map_err(|e| Failure::BadInput(format!("--shard: {e}")))?;
    if args.update && (shard.is_some() || !args.what_if.set.is_empty() || args.what_if.scenario.is_some()) {
        return Err(Failure::BadInput(
            "--update writes the golden outcomes of the matrix as it is: leave out --shard, --set and --scenario"
                .into(),
        ));
    }
    if args.summary && args.format == Format::Junit {
        return Err(Failure::BadInput("--summary has no JUnit form: use table, markdown or json".into()));
    }
    let hosts = Hosts::of(&args)?;
    let golden = hosts.golden(&args);
    if args.update {
        match &golden {
            Golden::File(path) => input::output("--expected", path)?,
            Golden::Embedded => {
                return Err(Failure::BadInput(
                    "--update rewrites the checkout's matrix/expected.json: run it in the checkout \
                     (or give --hosts and --expected)"
                        .into(),
                ));
            }
        }
    }
    let expected = if args.check { Some(golden.read()?) } else { None };
    if !args.merge.is_empty() {
        return merge(&args, expected.as_ref(), &golden);
    }
    // Bad input is refused before anything is said about where the hosts come from.
    let wants = input::wants(&[], args.wants.as_deref(), matrix_wants)?;
    let catalog = args.what_if.catalog()?;
    let settings = args.what_if.settings()?;
    let (dir, listing) = match &hosts {
        Hosts::Dir(dir) => (dir.as_path(), input::host_listing(dir)?),
        Hosts::Embedded => {
            let what = if args.check { " and its golden outcomes" } else { "" };
            note!(
                "llmgw: no matrix/hosts/ here (outside the checkout): the {} hosts embedded in llmgw{what} \
                 (llmgw list hosts)",
                embedded::HOSTS.len()
            );
            let listed = embedded::HOSTS
                .iter()
                .map(|(id, _)| Listed { id: (*id).to_string(), file: format!("{id}.json").into() })
                .collect();
            (std::path::Path::new(DEFAULT_HOSTS), listed)
        }
    };
    let jobs = args.jobs.map_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()), usize::from);
    // The offline rows (an air-gapped node served from a mirror) come from
    // the truth as it is: a scenario's what-if is about the publisher.
    let offline = args.what_if.scenario.is_none();
    let columns: Vec<String> = wants.iter().map(ToString::to_string).collect();
    let summary = args.summary || (!args.cells && plain(&args) && listing.len() > SUMMARY_OVER);
    let diff = args.what_if.diff.then(|| args.what_if.set.clone());
    if diff.is_some() && !summary && plain(&args) && matches!(args.format, Format::Json | Format::Junit) {
        // The changed cells are lines of text; as `simulate --diff` says.
        return Err(Failure::BadInput(format!(
            "--diff lists the changed cells as text: leave out --format {}, or add --summary for a summary with \
             each change (`--summary --diff --format json`)",
            if args.format == Format::Json { "json" } else { "junit" }
        )));
    }
    // A scenario's diff: the unchanged hosts run against the embedded truth.
    let before_catalog = args.what_if.scenario.as_ref().map(|_| embedded_catalog());
    let mut expected = expected;
    if !offline && let Some(e) = &mut expected {
        // Not run under a scenario: not missing either.
        e.cells.retain(|c| !matrix::is_offline_id(&c.host));
    }
    let mut sink = Sink::new(&args, columns, diff, summary, shard, expected.as_ref());
    sink.listing = Some((dir, &listing));
    let ids: Vec<String> = listing.iter().map(|l| l.id.clone()).collect();
    let read = |p: usize| -> Result<Host, String> {
        match &hosts {
            Hosts::Dir(dir) => input::fleet_host(dir, &listing[p]),
            Hosts::Embedded => Host::from_json(embedded::HOSTS[p].1).map_err(|e| e.to_string()),
        }
    };
    let plan = fleet::Plan {
        wants: &wants,
        catalog: &catalog,
        settings: &settings,
        diff: args.what_if.diff,
        before_catalog,
        shard,
        jobs,
        group: !args.ungrouped,
        offline,
    };
    let totals = match fleet::run(&ids, &read, &plan, &mut |row| sink.row(row)) {
        Ok(t) => t,
        Err(FleetError::Sink(Stopped::Closed)) => return Ok(EXIT_OK),
        Err(FleetError::Sink(Stopped::Failed(f))) => return Err(f),
        Err(FleetError::Sim(e)) => return Err(Failure::Internal(e.to_string())),
    };
    if summary {
        note!(
            "llmgw: {} host(s), {} simulated as {} distinct machine simulation(s)",
            totals.hosts,
            totals.simulated,
            totals.simulations
        );
    }
    sink.finish(&args, &golden)
}

/// Where `--hosts` is by default: the checkout's.
const DEFAULT_HOSTS: &str = "matrix/hosts";
/// Where `--expected` is by default: the checkout's.
const DEFAULT_EXPECTED: &str = "matrix/expected.json";

/// Where the hosts come from.
enum Hosts {
    /// A directory: `--hosts`, or the checkout's `matrix/hosts/`.
    Dir(PathBuf),
    /// Outside the checkout, without `--hosts`: the embedded ones.
    Embedded,
}

impl Hosts {
    fn of(args: &Args) -> Result<Hosts, Failure> {
        Ok(match &args.hosts {
            Some(dir) => Hosts::Dir(dir.clone()),
            None if input::is_dir(std::path::Path::new(DEFAULT_HOSTS)) => Hosts::Dir(DEFAULT_HOSTS.into()),
            None => Hosts::Embedded,
        })
    }

    /// The golden file that goes with them.
    fn golden(&self, args: &Args) -> Golden {
        match (&args.expected, self) {
            (Some(path), _) => Golden::File(path.clone()),
            (None, Hosts::Dir(_)) => Golden::File(DEFAULT_EXPECTED.into()),
            (None, Hosts::Embedded) => Golden::Embedded,
        }
    }
}

/// Where the golden outcomes are.
enum Golden {
    /// `--expected`, or the checkout's `matrix/expected.json`.
    File(PathBuf),
    /// The embedded `matrix/expected.json`.
    Embedded,
}

impl Golden {
    fn read(&self) -> Result<ExpectedFile, Failure> {
        match self {
            Golden::File(path) => input::expected(path),
            Golden::Embedded => ExpectedFile::from_json(embedded::EXPECTED_JSON)
                .map_err(|e| Failure::Internal(format!("the embedded matrix/expected.json: {e}"))),
        }
    }

    /// As messages name it.
    fn display(&self) -> String {
        match self {
            Golden::File(path) => path.display().to_string(),
            Golden::Embedded => "the embedded matrix/expected.json".into(),
        }
    }
}

/// Whether the run is a report of the cells (or their summary), not a check or an update.
fn plain(args: &Args) -> bool {
    !args.check && !args.update && args.format != Format::Junit
}

/// `--merge`: the shards' reports as the whole run's.
fn merge(args: &Args, expected: Option<&ExpectedFile>, golden: &Golden) -> Result<i32, Failure> {
    let docs = report::read_reports(&args.merge)?;
    let whole = summary::merge(docs).map_err(|e| Failure::BadInput(format!("--merge: {e}")))?;
    if let Some(s) = &whole.summary {
        if args.cells || !plain(args) {
            return Err(Failure::BadInput(
                "--merge: the reports are summaries: they merge into a summary (table, markdown or json), \
                 not cells, a check or JUnit"
                    .into(),
            ));
        }
        let text = match args.format {
            Format::Json => report::summary_json(&whole),
            _ => report::summary_text(s, args.format == Format::Markdown),
        };
        output::emit(&text)?;
        list_bad(&whole.bad, s.hosts);
        return Ok(if whole.bad.is_empty() { EXIT_OK } else { EXIT_BAD_INPUT });
    }
    let cells = whole.cells.unwrap_or_default();
    let columns = summary::wants_of(&cells);
    let hosts = summary::rows_of(&cells).filter(|r| !matrix::is_offline_id(&r[0].host)).count()
        + whole.left_out.iter().map(|l| l.hosts as usize).sum::<usize>()
        + whole.bad.len();
    let as_summary = args.summary || (!args.cells && plain(args) && hosts > SUMMARY_OVER);
    let mut sink = Sink::new(args, columns, None, as_summary, None, expected);
    if let Mode::Summary(t) = &mut sink.mode {
        t.add_not_simulated(whole.left_out.iter().map(|l| l.hosts).sum(), whole.bad.len() as u64);
    }
    sink.left_out.absorb(&whole.left_out);
    sink.bad = whole.bad;
    for row in summary::rows_of(&cells) {
        match sink.row(Row::Cells { cells: row, before: None }) {
            Ok(()) => {}
            Err(Stopped::Closed) => return Ok(EXIT_OK),
            Err(Stopped::Failed(f)) => return Err(f),
        }
    }
    sink.finish(args, golden)
}

/// What the rows become.
enum Mode<'a> {
    /// `--format json`: written as the cells come.
    Json(render::JsonCells),
    /// A table or markdown: the rows' words, kept.
    Table(render::Rows, bool),
    /// JUnit: every cell, kept.
    Junit(Vec<Cell>),
    /// `--check`: differences, and with JUnit every cell.
    Check(Checker<'a>, Option<Vec<Cell>>),
    /// `--update`: every cell, kept.
    Update(Vec<Cell>),
    /// `--diff`: the changed cells, written as they come; how many.
    Diff(Vec<String>, bool, usize),
    /// The summary: counts.
    Summary(Tally),
}

/// The rows of a run (or of shards merged), rendered or counted as they
/// come; what was left out and what was bad, kept for the end.
struct Sink<'a> {
    mode: Mode<'a>,
    out: Stream,
    columns: Vec<String>,
    shard: Option<Shard>,
    simulated: usize,
    left_out: LeftOuts,
    last_left_out: Option<(String, String)>,
    bad: Vec<Bad>,
    /// The directory and its listing, to say a bad file's path.
    listing: Option<(&'a std::path::Path, &'a [Listed])>,
}

impl<'a> Sink<'a> {
    fn new(
        args: &Args,
        columns: Vec<String>,
        diff: Option<Vec<String>>,
        summary: bool,
        shard: Option<Shard>,
        expected: Option<&'a ExpectedFile>,
    ) -> Sink<'a> {
        let mode = match (expected, &diff) {
            _ if args.update => Mode::Update(Vec::new()),
            (Some(e), _) => Mode::Check(Checker::new(e), (args.format == Format::Junit).then(Vec::new)),
            _ if summary => Mode::Summary(Tally::new(columns.clone(), diff).under(args.what_if.scenario_name())),
            (None, Some(_)) => Mode::Diff(vec![args.what_if.change()], false, 0),
            (None, None) => match args.format {
                Format::Json => Mode::Json(render::JsonCells::new(shard.map(|s| s.to_string()))),
                Format::Junit => Mode::Junit(Vec::new()),
                Format::Table | Format::Markdown => {
                    Mode::Table(render::Rows::default(), args.format == Format::Markdown)
                }
            },
        };
        Sink {
            mode,
            out: Stream::stdout(),
            columns,
            shard,
            simulated: 0,
            left_out: LeftOuts::default(),
            last_left_out: None,
            bad: Vec::new(),
            listing: None,
        }
    }

    /// One row of the run.
    fn row(&mut self, row: Row<'_>) -> Result<(), Stopped> {
        if let Mode::Summary(t) = &mut self.mode {
            t.add(&row);
        }
        let (cells, before) = match row {
            Row::Cells { cells, before } => (cells, before),
            Row::LeftOut { id, why } => {
                self.left_out.add(id, why);
                self.last_left_out = Some((id.to_string(), why.to_string()));
                return Ok(());
            }
            Row::Bad { id, reason } => {
                let path = self.path_of(id);
                self.bad.push(Bad {
                    host: text::for_terminal(id),
                    path: text::for_terminal(&path),
                    reason: reason.to_string(),
                });
                return Ok(());
            }
        };
        if !cells.first().is_some_and(|c| matrix::is_offline_id(&c.host)) {
            self.simulated += 1;
        }
        match &mut self.mode {
            Mode::Json(j) => {
                let text = j.cells(cells);
                self.out.write(&text)?;
            }
            Mode::Table(rows, _) => rows.add(cells, &self.columns),
            Mode::Junit(all) | Mode::Update(all) => all.extend_from_slice(cells),
            Mode::Check(checker, junit) => {
                for c in cells {
                    checker.check(c);
                }
                if let Some(all) = junit {
                    all.extend_from_slice(cells);
                }
            }
            Mode::Diff(set, started, n) => {
                let text = render::changed(before.unwrap_or_default(), cells);
                if !*started {
                    *started = true;
                    self.out.write(&format!("with {}:\n", set.join(", ")))?;
                }
                *n += text.lines().count();
                self.out.write(&text)?;
            }
            Mode::Summary(_) => {}
        }
        Ok(())
    }

    /// The path of the host file `id`, as the user named its directory.
    fn path_of(&self, id: &str) -> String {
        let Some((dir, listing)) = self.listing else { return format!("{id}.json") };
        let at = listing.partition_point(|l| l.id.as_str() < id);
        listing.get(at).map_or_else(|| format!("{id}.json"), |l| dir.join(&l.file).display().to_string())
    }

    /// The end of the run: the rest of the report, what was left out and
    /// what was bad (on stderr), and the exit code.
    fn finish(mut self, args: &Args, golden: &Golden) -> Result<i32, Failure> {
        if self.simulated == 0
            && let Some((id, why)) = &self.last_left_out
        {
            return Err(Failure::BadInput(format!("--set on {id}: {why} (and on every other host)")));
        }
        let hosts = self.simulated + self.left_out.iter().map(|(_, n, _)| n as usize).sum::<usize>() + self.bad.len();
        let rest = Document {
            left_out: self.left_out.list(),
            bad: self.bad.clone(),
            shard: self.shard.map(|s| s.to_string()),
            ..Document::default()
        };
        let mut code = EXIT_OK;
        let text = match self.mode {
            Mode::Json(j) => j.end(rest),
            Mode::Table(rows, markdown) => rows.table(&self.columns, markdown),
            Mode::Junit(cells) => render::junit(&cells, None),
            Mode::Update(_) if !self.bad.is_empty() => {
                list_bad(&self.bad, hosts as u64);
                return Err(Failure::BadInput(format!(
                    "--update: {} host file(s) not simulated (listed above): {} left as it was",
                    self.bad.len(),
                    golden.display()
                )));
            }
            Mode::Update(cells) => {
                let Golden::File(path) = golden else {
                    return Err(Failure::Internal("--update without a golden file to write".into()));
                };
                let old = input::expected(path).ok();
                let new = ExpectedFile::updated(&cells, old.as_ref());
                let changed = old.as_ref().map_or(new.cells.len(), |o| matrix::compare(&cells, o, true).len());
                input::write_output("--expected", path, new.to_json().as_bytes())?;
                format!("wrote {} cells to {} ({changed} changed)\n", new.cells.len(), path.display())
            }
            Mode::Check(checker, junit) => {
                let ran = checker.cells();
                let diffs = checker.finish(self.shard.is_none());
                if !diffs.is_empty() {
                    code = EXIT_FAULT;
                }
                match (args.format, junit) {
                    (_, Some(cells)) => render::junit(&cells, Some(&diffs)),
                    (Format::Json, _) => {
                        format!("{}\n", serde_json::to_string_pretty(&diffs).expect("differences serialize"))
                    }
                    _ => render::differences(&diffs, args.format == Format::Markdown, ran),
                }
            }
            Mode::Diff(set, started, n) => {
                let mut text = if started { String::new() } else { format!("with {}:\n", set.join(", ")) };
                if n == 0 {
                    text.push_str("  no cell changes\n");
                }
                text
            }
            Mode::Summary(t) => {
                let s = t.summary();
                match args.format {
                    Format::Json => report::summary_json(&Document { summary: Some(s), ..rest }),
                    _ => report::summary_text(&s, args.format == Format::Markdown),
                }
            }
        };
        match self.out.write(&text).and_then(|()| self.out.flush()) {
            Err(Stopped::Failed(f)) => return Err(f),
            Err(Stopped::Closed) | Ok(()) => {}
        }
        for (why, n, ids) in self.left_out.iter() {
            let more = if n as usize > ids.len() {
                format!(", … and {} more", n as usize - ids.len())
            } else {
                String::new()
            };
            note!("llmgw: --set left out {n} host(s) it does not apply to ({why}): {}{more}", ids.join(", "));
        }
        list_bad(&self.bad, hosts as u64);
        Ok(if self.bad.is_empty() { code } else { EXIT_BAD_INPUT })
    }
}

/// The bad host files on stderr, path and reason, and how many of the hosts they are.
fn list_bad(bad: &[Bad], hosts: u64) {
    for b in bad {
        eprintln!("llmgw: host file `{}` not simulated: {}", b.path, text::for_terminal(&b.reason));
    }
    if !bad.is_empty() {
        eprintln!("llmgw: {} of {hosts} host file(s) not simulated (listed above)", bad.len());
    }
}
