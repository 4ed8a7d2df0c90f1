//! `llmgw simulate`: one described machine, end to end, against the fake
//! release server.

use std::fmt::Write as _;
use std::path::PathBuf;

use llmgw_core::converge::{State, Status};
use llmgw_core::report::Report;
use llmgw_model::host::Host;
use llmgw_sim::truth::{Catalog, embedded_catalog};
use llmgw_sim::{Simulation, default_wants};

use super::input::{self, Failure};
use super::output;
use super::printer::{self, Format};
use super::what_if::WhatIf;

/// Arguments of `simulate`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw simulate --host v100\n  \
    llmgw simulate --host node.json --want llama.cpp@b10850 --want uv@0.12.20 --format json\n  \
    llmgw simulate --host v100 --set nvidia.driver=580.95.05 --diff\n  \
    llmgw simulate --host h100-ubuntu24.04-driver580 --scenario llama-cuda-without-ptx --diff\n\n\
    --host takes a file or the name of an embedded host (`llmgw list hosts`), --scenario a file or\n\
    the name of an embedded scenario (`llmgw list scenarios`).\n\n\
    Exit codes: 0 every want ready or not_here (with --diff: after the change); 1 any failed or\n\
    unsupported; 2 bad input; 3 llmgw itself failed.")]
pub struct Args {
    /// The host description (JSON) of the machine to simulate, or the name of an embedded one (v100).
    #[arg(long, value_name = "FILE|NAME")]
    host: PathBuf,
    /// An engine to install: ENGINE@VERSION[:VARIANT], e.g. llama.cpp@b10850 or
    /// llama.cpp@b10850:vulkan. Repeatable. Default: the wants of matrix/wants.json (embedded).
    #[arg(long = "want", value_name = "ENGINE@VERSION[:VARIANT]")]
    wants: Vec<String>,
    /// A wants file ({"wants": [{"engine": …, "version": …}]}) instead of --want.
    #[arg(long = "wants", value_name = "FILE")]
    wants_file: Option<PathBuf>,
    /// text for a person; json for programs (the shape is in docs/guide/simulate.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// What if: --scenario, --set, --diff.
    #[command(flatten)]
    what_if: WhatIf,
    /// Offline: --offline-base, --offline-sha256.
    #[command(flatten)]
    offline: super::offline::Offline,
}

/// Runs `simulate`.
pub fn run(args: Args) -> Result<i32, Failure> {
    if args.what_if.diff && args.format == Format::Json {
        return Err(Failure::BadInput(
            "--diff prints what changes as text: leave out --format json (for JSON, run simulate with and \
             without the change, or `matrix --hosts DIR --summary --diff --format json`)"
                .into(),
        ));
    }
    let original = input::host(&args.host)?;
    let wants = args.offline.apply(input::wants(&args.wants, args.wants_file.as_deref(), default_wants)?)?;
    let catalog = args.what_if.catalog()?;
    let settings = args.what_if.settings()?;
    let host = original.with_settings(&settings).map_err(|e| Failure::BadInput(format!("--set: {e}")))?;
    let simulate = |host: Host, catalog: &Catalog| -> Result<Report, Failure> {
        let mut sim = Simulation::with_catalog(host, catalog).map_err(|e| Failure::Internal(e.to_string()))?;
        // A scenario's crash ends the simulated installer without cleanup;
        // what matters is what the next convergence makes of it.
        sim.on_crash(|c| {
            note!(
                "llmgw: the simulated installer crashed before its change {} (the scenario's); converging again:",
                c.before_change
            )
        });
        Ok(sim.converge(&wants))
    };
    if args.what_if.diff {
        // Before: the machine as described, against the embedded truth.
        let before = simulate(original, embedded_catalog())?;
        let after = simulate(host, &catalog)?;
        output::emit(&changes(&before, &after, &args.what_if.change()))?;
        return Ok(after.exit_code());
    }
    let report = simulate(host, &catalog)?;
    let mut text = printer::report(&report, args.format);
    if args.format == Format::Text && (!settings.is_empty() || args.what_if.scenario.is_some()) {
        // Said under the host: the machine and the truth are not as described.
        let at = text.find('\n').map_or(text.len(), |i| i + 1);
        text.insert_str(at, &format!("with {}\n", args.what_if.change()));
    }
    output::emit(&text)?;
    Ok(report.exit_code())
}

/// `--diff`: per engine, what the change changes: `llama.cpp: vulkan -> cuda-12.8`.
fn changes(before: &Report, after: &Report, change: &str) -> String {
    let mut out = format!("host: {}\nwith {change}:\n", after.host);
    let mut n = 0;
    for (b, a) in before.engines.iter().zip(&after.engines) {
        let (was, now) = (outcome(b), outcome(a));
        if was != now {
            n += 1;
            let _ = writeln!(out, "  {}: {was} -> {now}", a.want);
        }
    }
    if n == 0 {
        out.push_str("  nothing changes\n");
    }
    out
}

/// An outcome in a few words: the variant (and version) when ready, else the state.
fn outcome(s: &Status) -> String {
    match (&s.variant, s.state) {
        (Some(v), State::Ready) => format!("{v} {}", s.version),
        _ => s.state.as_str().to_string(),
    }
}
