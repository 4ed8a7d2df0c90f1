//! `llmgw agent`: the provisioning loop on a node (or, with `--host`, on a
//! simulated one against the fake release server), and `--report`, the
//! engines the node can run. Arguments and rendering; the loop, its
//! runtime and signals are `llmgw_core::agent`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use llmgw_core::agent::{self, Agent, AgentConfig, AgentStatus, OnSystem};
use llmgw_core::converge::{self, Status};
use llmgw_core::report::{EXIT_INTERNAL, EXIT_OK, Report};
use llmgw_sim::Simulation;
use llmgw_system::agent::{RealNode, runtime};
use llmgw_system::real::Silent;

use super::input::{self, Failure};
use super::printer::{self, Format};
use super::{output, provision, settings};

/// Where the status file goes on a real node when `--status-file` is not given.
const STATUS_FILE: &str = "/var/lib/llmgw/agent-status.json";

/// Arguments of `agent`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw agent --wants /etc/llmgw/wants.json --config /etc/llmgw/agent.json\n  \
    llmgw agent --wants wants.json --host v100 --status-file status.json --once\n  \
    llmgw agent --host v100 --scenario machine-crash-before-rename --once   # the default wants\n  \
    llmgw agent --report --config /etc/llmgw/agent.json\n\n\
    Converges every want at start, again when the wants file changes (or on SIGHUP), and every 10\n\
    minutes otherwise, re-checking what is installed. After a pass with a failed want the next comes\n\
    after 1 minute, then 2, 4, 8, 10. SIGTERM stops it between passes (exit 0). See docs/guide/agent.md.")]
pub struct Args {
    /// The wants file ({"wants": [{"engine": …, "version": …}]}), watched for changes [with --host:
    /// default, the embedded wants of matrix/wants.json, not watched].
    #[arg(long = "wants", value_name = "FILE", required_unless_present_any = ["report", "host"])]
    wants_file: Option<PathBuf>,
    /// Where engines are installed [default: /opt/llmgw/engines; with --host, a temporary directory].
    #[arg(long, value_name = "DIR")]
    engines_dir: Option<PathBuf>,
    /// The agent's configuration ({"engines": {"disabled": […], "binaries": {ENGINE: PATH}}}).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where the statuses are written after each pass [default: /var/lib/llmgw/agent-status.json; with --host, none].
    #[arg(long, value_name = "FILE")]
    status_file: Option<PathBuf>,
    /// Simulate this described machine (a file, or an embedded host's name: v100) against the fake
    /// release server instead of working on this one.
    #[arg(long, value_name = "FILE|NAME")]
    host: Option<PathBuf>,
    /// With --host: a scenario (a variant of the truth, faults of the server or the machine), a file
    /// or an embedded scenario's name.
    #[arg(long, value_name = "FILE|NAME", requires = "host")]
    scenario: Option<PathBuf>,
    /// One pass, print its statuses as `simulate` does, then exit: 0 when every want is ready or not_here, 1
    /// otherwise, 3 when the status file could not be written.
    #[arg(long, conflicts_with = "report")]
    once: bool,
    /// Print the engines this node can run (the last pass's installs, and the configured binaries that answer) and exit.
    #[arg(long, conflicts_with_all = ["wants_file", "host", "scenario", "watch_secs"])]
    report: bool,
    /// The format of --report's and --once's output: text for a person, json for programs [default: text].
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Seconds between two reads of the wants file, to see it change.
    #[arg(long, value_name = "SECS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    watch_secs: u64,
    /// GitHub's API and token (on a node).
    #[command(flatten)]
    github: settings::GithubArgs,
    /// PyPI's and PyTorch's indexes (on a node).
    #[command(flatten)]
    indexes: settings::IndexArgs,
}

/// Runs `agent`.
pub fn run(args: Args) -> Result<i32, Failure> {
    if args.format.is_some() && !args.once && !args.report {
        return Err(Failure::BadInput("--format is for --once or --report: a running agent prints nothing".into()));
    }
    let config = match &args.config {
        Some(p) => input::agent_config(p)?,
        None => AgentConfig::default(),
    };
    let status_file = args.status_file.clone().or_else(|| args.host.is_none().then(|| PathBuf::from(STATUS_FILE)));
    if args.report {
        return report(&args, &config, status_file.as_deref());
    }
    // The wants, and the file watched for them: none for the embedded wants.
    let (wants, wants_path) = match &args.wants_file {
        Some(path) => {
            let there = input::read_if_there(input::WANTS, path)?.is_some();
            (input::wants(&[], Some(path), Vec::new)?, there.then(|| path.clone()))
        }
        None => (llmgw_sim::default_wants(), None),
    };
    let label = wants_path.clone().unwrap_or_else(|| PathBuf::from("matrix/wants.json (embedded)"));
    // Paths as they are now: neither a later change of directory nor a
    // command run elsewhere (the simulated installer's) changes them.
    let cwd =
        std::env::current_dir().map_err(|e| Failure::Internal(format!("cannot tell the current directory: {e}")))?;
    let engines_dir = match &args.engines_dir {
        Some(dir) => Some(runtime::check_engines_dir(dir, &cwd).map_err(failure)?),
        None => None,
    };
    // On this machine the engines directory is known now (a simulation's
    // default is a temporary directory of its own).
    let real_engines = match args.host {
        Some(_) => engines_dir.clone(),
        None => Some(engines_dir.clone().unwrap_or_else(|| PathBuf::from(settings::DEFAULT_ENGINES_DIR))),
    };
    let paths = runtime::AgentPaths { wants: &label, config: args.config.as_deref(), engines: real_engines.as_deref() };
    let status_file = match status_file {
        Some(p) => {
            Some(runtime::check_status_file(&p, &cwd.join(&p), paths, args.status_file.is_none()).map_err(failure)?)
        }
        None => None,
    };
    let mut agent = Agent::new(wants, label, config, status_file);
    if args.once {
        agent = agent.once();
    }
    let watch = Duration::from_secs(args.watch_secs);
    let last = match &args.host {
        Some(host) => {
            let mut sim = simulation(host, args.scenario.as_deref())?;
            if let Some(dir) = engines_dir {
                sim.set_engines_dir(dir);
            }
            runtime::run_loop(sim, agent, wants_path.as_deref(), watch).map_err(failure)?
        }
        None => {
            let engines_dir = engines_dir.unwrap_or_else(|| PathBuf::from(settings::DEFAULT_ENGINES_DIR));
            let host = provision::this_machine(&engines_dir)?;
            let sys = args.github.real_system(Box::new(Silent))?;
            let cfg = settings::config(engines_dir, &args.github, &args.indexes, converge::CHECK_TIMEOUT_SECS);
            let node = RealNode(OnSystem { sys, host, cfg });
            runtime::run_loop(node, agent, wants_path.as_deref(), watch).map_err(failure)?
        }
    };
    // Stopped by a signal (SIGTERM, SIGINT): asked for, so 0.
    let Some(pass) = last.filter(|_| args.once) else { return Ok(EXIT_OK) };
    let report = Report { host: pass.status.host.clone(), engines: pass.status.engines.clone() };
    let format = args.format.unwrap_or_default();
    let mut text = printer::report(&report, format);
    if format == printer::Format::Text {
        // The wants the configuration keeps out, as the status file lists them.
        for n in &pass.status.not_installed {
            text.push_str(&format!("\n{}: not installed\n  {}\n", n.want, n.reason));
        }
    }
    output::emit(&text)?;
    if let Some(e) = &pass.status_error {
        eprintln!("llmgw: error: {}", llmgw_model::text::for_terminal(&e.to_string()));
        return Ok(EXIT_INTERNAL);
    }
    Ok(report.exit_code())
}

fn simulation(host: &Path, scenario: Option<&Path>) -> Result<Simulation, Failure> {
    let host = input::host(host)?;
    let catalog = input::catalog(scenario)?;
    Simulation::with_catalog(host, &catalog).map_err(|e| Failure::Internal(e.to_string()))
}

/// `--report`: the last pass's installs (from the status file) merged with
/// what the configured binaries answer now.
fn report(args: &Args, config: &AgentConfig, status_file: Option<&Path>) -> Result<i32, Failure> {
    let last: Vec<Status> = match status_file {
        Some(p) => match input::read_if_there(input::STATUS, p)? {
            Some(text) => {
                serde_json::from_str::<AgentStatus>(&text)
                    .map_err(|e| Failure::BadInput(format!("status file `{}`: {e}", p.display())))?
                    .engines
            }
            None => {
                note!("llmgw: no status file `{}` yet: nothing installed by the agent is reported", p.display());
                vec![]
            }
        },
        None => vec![],
    };
    let mut sys = args.github.real_system(Box::new(Silent))?;
    let reported = agent::engine_report(&mut sys, &last, config);
    output::emit(&printer::engines(&reported, args.format.unwrap_or_default()))?;
    Ok(EXIT_OK)
}

/// A failure of the agent's runtime, as the command line reports it.
fn failure(e: runtime::RuntimeError) -> Failure {
    match e {
        runtime::RuntimeError::BadInput(m) => Failure::BadInput(m),
        runtime::RuntimeError::Internal(m) => Failure::Internal(m),
    }
}
