//! `llmgw provision`: this machine, for real: discover it (or take a host
//! description), converge the wants into the engines directory, print the
//! statuses as `simulate` does.

use std::path::PathBuf;

use llmgw::converge::{self, Config, PYPI_SIMPLE, PYTORCH_WHL};
use llmgw::host::Host;
use llmgw::recipe;
use llmgw::release::GITHUB_API;
use llmgw::report::Report;
use llmgw::system::http::Http;
use llmgw::system::lock::EnginesLock;
use llmgw::system::real::RealSystem;

use super::input::{self, Failure};
use super::{output, plan, progress, simulate};

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
    #[arg(long, value_name = "DIR", default_value = "/opt/llmgw/engines")]
    engines_dir: PathBuf,
    /// text for a person; json for programs (as simulate's).
    #[arg(long, value_enum, default_value_t = simulate::Format::Text)]
    format: simulate::Format,
    /// Print what would be tried and why, and touch nothing.
    #[arg(long)]
    dry_run: bool,
    /// Take this host description instead of discovering the machine.
    #[arg(long, value_name = "FILE")]
    host: Option<PathBuf>,
    /// GitHub's REST API (a mirror, or the fake server in tests).
    #[arg(long, value_name = "URL", env = "LLMGW_GITHUB_API", default_value = GITHUB_API, value_parser = input::http_url)]
    github_api: String,
    /// PyPI's simple index.
    #[arg(long, value_name = "URL", env = "LLMGW_PYPI_INDEX", default_value = PYPI_SIMPLE, value_parser = input::http_url)]
    pypi_index: String,
    /// PyTorch's wheel host, under which each CUDA version has its index.
    #[arg(long, value_name = "URL", env = "LLMGW_PYTORCH_INDEX", default_value = PYTORCH_WHL, value_parser = input::http_url)]
    pytorch_index: String,
    /// Seconds a build's version command or GPU check may run before it is killed.
    #[arg(long, value_name = "SECS", default_value_t = converge::CHECK_TIMEOUT_SECS)]
    check_timeout: u64,
    /// A GitHub token, sent to GitHub's API only (a higher rate limit).
    #[arg(long, env = "GITHUB_TOKEN", hide_env_values = true, hide = true)]
    github_token: Option<String>,
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
            simulate::Format::Json => plan::json_document(&host, &plans),
            simulate::Format::Text => {
                format!("{}\n(--dry-run: nothing was downloaded, installed or changed)\n", plan::text(&host, &plans))
            }
        };
        output::emit(&text)?;
        return Ok(llmgw::report::EXIT_OK);
    }
    let _lock = EnginesLock::acquire(&args.engines_dir)
        .map_err(|e| Failure::BadInput(format!("--engines-dir `{}`: {e}", args.engines_dir.display())))?;
    let local = Http::new(10, 60, args.github_token.clone()).map_err(|e| Failure::Internal(e.to_string()))?;
    let mut sys = RealSystem::new(local, progress::reporter());
    let cfg = Config {
        engines_dir: args.engines_dir.clone(),
        github_api: args.github_api.clone(),
        pypi_simple: args.pypi_index.clone(),
        pytorch_whl: args.pytorch_index.clone(),
        check_timeout_secs: args.check_timeout,
        not_a_build: Some(llmgw::sim::truth::stub::NOT_A_BUILD),
    };
    let statuses = converge::converge(&mut sys, &host, &cfg, &wants);
    let report = Report { host: host.name.clone(), engines: statuses };
    match args.format {
        simulate::Format::Json => output::emit(&report.to_json())?,
        simulate::Format::Text => output::emit(&simulate::text(&report))?,
    }
    Ok(report.exit_code())
}

/// This machine as a host description, its warnings on stderr.
pub(super) fn this_machine(engines_dir: &std::path::Path) -> Result<Host, Failure> {
    let mut probe = llmgw::discover::RealProbe::default();
    let found = llmgw::discover::discover_at(&mut probe, engines_dir)
        .map_err(|e| Failure::Internal(format!("cannot discover this machine: {e}")))?;
    for w in &found.warnings {
        eprintln!("llmgw: warning: {w}");
    }
    Ok(found.host)
}
