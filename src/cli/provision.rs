//! `llmgw provision`: this machine, for real: discover it (or take a host
//! description), converge the wants into the engines directory, print the
//! statuses as `simulate` does.

use std::path::PathBuf;

use llmgw_core::converge;
use llmgw_core::recipe;
use llmgw_core::report::Report;
use llmgw_model::host::Host;
use llmgw_system::lock::EnginesLock;

use super::input::{self, Failure};
use super::printer::{self, Format};
use super::{output, progress, settings};

/// Arguments of `provision`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw provision --want llama.cpp@b10850\n  \
    llmgw provision --want vllm@0.20.1 --engines-dir /srv/engines --format json\n  \
    llmgw provision --want llama.cpp@b10850 --dry-run\n\n\
    Installs land in <engines-dir>/<engine>/<version>-<variant>/, renamed into place from a staging\n\
    directory once they are verified and seen to work, with an install record written last.\n\
    Installing OS packages needs root. Two provisions on one engines directory take turns.")]
pub struct Args {
    /// An engine to install: ENGINE@VERSION[:VARIANT]. Repeatable.
    #[arg(long = "want", value_name = "ENGINE@VERSION[:VARIANT]")]
    wants: Vec<String>,
    /// A wants file instead of --want.
    #[arg(long = "wants", value_name = "FILE")]
    wants_file: Option<PathBuf>,
    /// Where engines are installed.
    #[arg(long, value_name = "DIR", default_value = settings::DEFAULT_ENGINES_DIR)]
    engines_dir: PathBuf,
    /// text for a person; json for programs (as simulate's).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Print what would be tried and why, and touch nothing.
    #[arg(long)]
    dry_run: bool,
    /// Take this host description instead of discovering the machine.
    #[arg(long, value_name = "FILE")]
    host: Option<PathBuf>,
    /// GitHub's API and token.
    #[command(flatten)]
    github: settings::GithubArgs,
    /// PyPI's and PyTorch's indexes.
    #[command(flatten)]
    indexes: settings::IndexArgs,
    /// Seconds a build's version command or GPU check may run before it is killed.
    #[arg(long, value_name = "SECS", default_value_t = converge::CHECK_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=converge::MAX_CHECK_TIMEOUT_SECS))]
    check_timeout: u64,
    /// Offline: --offline-base, --offline-sha256.
    #[command(flatten)]
    offline: super::offline::Offline,
}

/// Runs `provision`.
pub fn run(args: Args) -> Result<i32, Failure> {
    let wants = args.offline.apply(input::wants(&args.wants, args.wants_file.as_deref(), Vec::new)?)?;
    if wants.is_empty() {
        return Err(Failure::BadInput("provision needs --want ENGINE@VERSION or --wants FILE".into()));
    }
    let host = match &args.host {
        Some(path) => input::host(path)?,
        None => this_machine(&args.engines_dir)?,
    };
    if args.dry_run {
        let plans: Vec<_> = wants.iter().map(|w| (w.clone(), recipe::plan(w, &host))).collect();
        let text = match args.format {
            Format::Json => printer::plans(&host, &plans, args.format),
            Format::Text => format!(
                "{}\n(--dry-run: nothing was downloaded, installed or changed)\n",
                printer::plans(&host, &plans, args.format)
            ),
        };
        output::emit(&text)?;
        return Ok(llmgw_core::report::EXIT_OK);
    }
    // Absolute, so that what is printed (`binary:`) and recorded holds from anywhere.
    let engines_dir = std::path::absolute(&args.engines_dir)
        .map_err(|e| Failure::BadInput(format!("--engines-dir `{}`: {e}", args.engines_dir.display())))?;
    let _lock = EnginesLock::acquire(&engines_dir).map_err(|e| {
        let why = match e {
            // The path is the flag's own: said once.
            llmgw_core::system::SysError::Io { path, message, .. } if path == engines_dir => message,
            e => e.to_string(),
        };
        Failure::BadInput(format!("--engines-dir `{}`: {why}", args.engines_dir.display()))
    })?;
    let mut sys = args.github.real_system(progress::reporter())?;
    let cfg = settings::config(engines_dir, &args.github, &args.indexes, args.check_timeout);
    let statuses = converge::converge(&mut sys, &host, &cfg, &wants);
    let report = Report { host: host.name.clone(), engines: statuses };
    output::emit(&printer::report(&report, args.format))?;
    Ok(report.exit_code())
}

/// This machine as a host description, its warnings on stderr.
pub(super) fn this_machine(engines_dir: &std::path::Path) -> Result<Host, Failure> {
    let mut probe = llmgw_system::probe::RealProbe::default();
    let found = llmgw_core::discover::discover_at(&mut probe, engines_dir)
        .map_err(|e| Failure::Internal(format!("cannot discover this machine: {e}")))?;
    tracing::info!("GPU discovery: {}", found.gpu_discovery);
    for w in &found.warnings {
        eprintln!("llmgw: warning: {w}");
    }
    Ok(found.host)
}
