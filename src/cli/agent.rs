//! `llmgw agent`: the provisioning loop on a node (or, with `--host`, on a
//! simulated one against the fake release server), and `--report`, the
//! engines the node can run. Arguments, signals, the wants file's watch and
//! rendering; the loop itself is `llmgw::agent`.

// The CLI reads the wants file it watches, and runs the loop's runtime.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llmgw::agent::{self, Agent, AgentConfig, AgentStatus, Node, OnSystem};
use llmgw::converge::{self, Config, PYPI_SIMPLE, PYTORCH_WHL, Status};
use llmgw::recipe::{Engine, Want};
use llmgw::release::GITHUB_API;
use llmgw::report::{EXIT_INTERNAL, EXIT_OK, Report};
use llmgw::sim::Simulation;
use llmgw::system::http::Http;
use llmgw::system::lock::EnginesLock;
use llmgw::system::real::{RealSystem, Silent};

use super::input::{self, Failure};
use super::{output, provision, simulate};

/// Where the status file goes on a real node when `--status-file` is not given.
const STATUS_FILE: &str = "/var/lib/llmgw/agent-status.json";

/// Arguments of `agent`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw agent --wants /etc/llmgw/wants.json --config /etc/llmgw/agent.json\n  \
    llmgw agent --wants wants.json --host matrix/hosts/v100.json --status-file status.json --once\n  \
    llmgw agent --report --config /etc/llmgw/agent.json\n\n\
    Converges every want at start, again when the wants file changes (or on SIGHUP), and every 10\n\
    minutes otherwise, re-checking what is installed. After a pass with a failed want the next comes\n\
    after 1 minute, then 2, 4, 8, 10. SIGTERM stops it between passes (exit 0). See README.md, \"Running the agent\".")]
pub struct Args {
    /// The wants file ({"wants": [{"engine": …, "version": …}]}), watched for changes.
    #[arg(long = "wants", value_name = "FILE", required_unless_present = "report")]
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
    /// Simulate this described machine against the fake release server instead of working on this one.
    #[arg(long, value_name = "FILE")]
    host: Option<PathBuf>,
    /// With --host: a scenario (a variant of the truth, faults of the server or the machine).
    #[arg(long, value_name = "FILE", requires = "host")]
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
    format: Option<simulate::Format>,
    /// Seconds between two reads of the wants file, to see it change.
    #[arg(long, value_name = "SECS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    watch_secs: u64,
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
    let wants_path = args.wants_file.clone().expect("clap requires --wants without --report");
    let wants = input::wants(&[], Some(&wants_path), Vec::new)?;
    // Paths as they are now: neither a later change of directory nor a
    // command run elsewhere (the simulated installer's) changes them.
    let cwd =
        std::env::current_dir().map_err(|e| Failure::Internal(format!("cannot tell the current directory: {e}")))?;
    let status_file = match status_file {
        Some(p) => {
            Some(check_status_file(&p, &cwd.join(&p), &wants_path, args.config.as_deref(), args.status_file.is_none())?)
        }
        None => None,
    };
    let engines_dir = match &args.engines_dir {
        Some(dir) => Some(check_engines_dir(dir, &cwd)?),
        None => None,
    };
    let mut agent = Agent::new(wants, wants_path.clone(), config, status_file);
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
            run_loop(sim, agent, &wants_path, watch)?
        }
        None => {
            let engines_dir = engines_dir.unwrap_or_else(|| PathBuf::from("/opt/llmgw/engines"));
            let host = provision::this_machine(&engines_dir)?;
            let local =
                Http::new(10, 60, std::env::var("GITHUB_TOKEN").ok()).map_err(|e| Failure::Internal(e.to_string()))?;
            let cfg = Config {
                engines_dir,
                github_api: GITHUB_API.to_string(),
                pypi_simple: PYPI_SIMPLE.to_string(),
                pytorch_whl: PYTORCH_WHL.to_string(),
                check_timeout_secs: converge::CHECK_TIMEOUT_SECS,
                not_a_build: Some(llmgw::sim::truth::stub::NOT_A_BUILD),
            };
            run_loop(
                Locked(OnSystem { sys: RealSystem::new(local, Box::new(Silent)), host, cfg }),
                agent,
                &wants_path,
                watch,
            )?
        }
    };
    // Stopped by a signal (SIGTERM, SIGINT): asked for, so 0.
    let Some(pass) = last.filter(|_| args.once) else { return Ok(EXIT_OK) };
    let report = Report { host: pass.status.host.clone(), engines: pass.status.engines.clone() };
    match args.format.unwrap_or(simulate::Format::Text) {
        simulate::Format::Json => output::emit(&report.to_json())?,
        simulate::Format::Text => output::emit(&simulate::text(&report))?,
    }
    if let Some(e) = &pass.status_error {
        eprintln!("llmgw: error: {e}");
        return Ok(EXIT_INTERNAL);
    }
    Ok(report.exit_code())
}

/// `--engines-dir`, absolute: a directory, or nothing yet.
fn check_engines_dir(dir: &Path, cwd: &Path) -> Result<PathBuf, Failure> {
    let abs = cwd.join(dir);
    match std::fs::metadata(&abs) {
        Ok(m) if !m.is_dir() => Err(Failure::BadInput(format!("--engines-dir `{}` is not a directory", dir.display()))),
        _ => Ok(abs),
    }
}

/// The status file `given` (`abs` made absolute), checked before the first
/// pass: not a directory, in a directory that exists (the default one is
/// made) and can be written in, and neither the wants file nor the
/// configuration, which it would overwrite.
fn check_status_file(
    given: &Path,
    abs: &Path,
    wants: &Path,
    config: Option<&Path>,
    default: bool,
) -> Result<PathBuf, Failure> {
    let bad = |why: String| Failure::BadInput(format!("--status-file `{}` {why}", given.display()));
    if abs.is_dir() {
        return Err(bad("is a directory".into()));
    }
    let (Some(dir), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(bad("names no file".into()));
    };
    if default {
        std::fs::create_dir_all(dir)
            .map_err(|e| bad(format!("is in `{}`, which cannot be made: {e}", dir.display())))?;
    }
    if !dir.is_dir() {
        return Err(bad(format!("is in `{}`, which is not an existing directory", dir.display())));
    }
    tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| bad(format!("cannot be written: no file can be made in `{}`: {}", dir.display(), os_error(&e))))?;
    let canonical = |p: &Path| -> PathBuf {
        p.canonicalize().unwrap_or_else(|_| match (p.parent(), p.file_name()) {
            (Some(d), Some(n)) => d.canonicalize().map_or_else(|_| p.to_path_buf(), |d| d.join(n)),
            _ => p.to_path_buf(),
        })
    };
    let this = dir.canonicalize().map_or_else(|_| abs.to_path_buf(), |d| d.join(name));
    if canonical(wants) == this {
        return Err(bad(format!("is the wants file `{}`: it would be overwritten", wants.display())));
    }
    if let Some(c) = config.filter(|c| canonical(c) == this) {
        return Err(bad(format!("is the configuration file `{}`: it would be overwritten", c.display())));
    }
    Ok(abs.to_path_buf())
}

/// A real node whose passes take the engines directory's lock, so that a
/// `llmgw provision` by hand waits for the pass (and the pass for it).
struct Locked(OnSystem<RealSystem>);

impl Node for Locked {
    fn host_name(&self) -> String {
        self.0.host_name()
    }

    fn begin_pass(&mut self, _since_start: Duration) {
        // The machine as it is now: a driver upgraded since the last pass
        // changes which builds fit.
        let mut probe = llmgw::discover::RealProbe::default();
        match llmgw::discover::discover_at(&mut probe, &self.0.cfg.engines_dir) {
            Ok(found) => self.0.host = found.host,
            Err(e) => tracing::warn!("cannot discover this machine again, converging for it as it was: {e}"),
        }
    }

    fn converge(&mut self, wants: &[Want]) -> Vec<Status> {
        let _lock = match EnginesLock::acquire(&self.0.cfg.engines_dir) {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::error!("cannot take the engines directory's lock: {e}");
                None
            }
        };
        self.0.converge(wants)
    }

    fn probe(&mut self, binaries: &BTreeMap<Engine, PathBuf>) -> agent::Probed {
        self.0.probe(binaries)
    }

    fn now(&mut self) -> u64 {
        self.0.now()
    }

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            llmgw::system::System::create_dir_all(&mut self.0.sys, dir).map_err(|e| e.to_string())?;
        }
        self.0.write_atomic(path, contents)
    }
}

fn simulation(host: &Path, scenario: Option<&Path>) -> Result<Simulation, Failure> {
    let host = input::host(host)?;
    let catalog = input::catalog(scenario)?;
    Simulation::with_catalog(host, &catalog).map_err(|e| Failure::Internal(e.to_string()))
}

/// Runs the loop until SIGTERM/SIGINT (or after one pass with `--once`):
/// SIGHUP re-reads the wants file and passes, and a change seen every
/// `watch` is taken. The last pass's record, if any.
fn run_loop<N: Node>(
    node: N,
    agent: Agent,
    wants_path: &Path,
    watch: Duration,
) -> Result<Option<agent::PassRecord>, Failure> {
    // The node is dropped here, outside the runtime: its HTTP client and the
    // fake server's own runtime may not be dropped inside one.
    let node = Arc::new(Mutex::new(node));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the agent's runtime: {e}")))?;
    let first = read_wants(wants_path);
    let wants_path = wants_path.to_path_buf();
    let last = rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        // The handlers first, each made once for the whole run: a signal
        // before them would end the process, one between two of them would be lost.
        let (mut hup, mut term, mut int) = (
            signal(SignalKind::hangup()).map_err(|e| Failure::Internal(format!("SIGHUP: {e}")))?,
            signal(SignalKind::terminate()).map_err(|e| Failure::Internal(format!("SIGTERM: {e}")))?,
            signal(SignalKind::interrupt()).map_err(|e| Failure::Internal(format!("SIGINT: {e}")))?,
        );
        let mut running = agent::spawn(node.clone(), agent);
        let control = running.control.clone();
        let watcher = tokio::spawn(async move {
            // What the file said when last looked at: its text or why it cannot be read.
            let mut last = first;
            let mut tick = tokio::time::interval(watch);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = hup.recv() => {
                        tracing::info!("SIGHUP: reading the wants file again");
                        last = read_wants(&wants_path);
                        control.reread(last.clone());
                    }
                    _ = term.recv() => { tracing::info!("SIGTERM: stopping between passes"); control.stop() }
                    _ = int.recv() => { tracing::info!("SIGINT: stopping between passes"); control.stop() }
                    _ = tick.tick() => {
                        // Told once per change: a file that stays unreadable is not told again.
                        let now = read_wants(&wants_path);
                        if now != last {
                            match &now {
                                Ok(text) => { tracing::info!("the wants file changed"); control.wants_file(text.clone()) }
                                Err(e) => control.wants_error(e.clone()),
                            }
                            last = now;
                        }
                    }
                }
            }
        });
        let mut last = None;
        while let Some(pass) = running.passes.recv().await {
            last = Some(pass);
        }
        watcher.abort();
        if let Err(e) = running.task.await
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
        Ok::<_, Failure>(last)
    })?;
    drop(rt);
    drop(node);
    Ok(last)
}

/// An I/O error's own words, without the temporary file's name tempfile
/// adds (`… at path "/dir/.tmpXXXXXX"`).
fn os_error(e: &std::io::Error) -> String {
    let said = e.to_string();
    said.rfind(" at path ").map_or(said.clone(), |i| said[..i].to_string())
}

/// The wants file's text, or the sentence saying why it cannot be read.
fn read_wants(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read the wants file `{}`: {e}", path.display()))
}

/// `--report`: the last pass's installs (from the status file) merged with
/// what the configured binaries answer now.
fn report(args: &Args, config: &AgentConfig, status_file: Option<&Path>) -> Result<i32, Failure> {
    let last: Vec<Status> = match status_file {
        Some(p) => match input::read_if_there("status file", p)? {
            Some(text) => {
                serde_json::from_str::<AgentStatus>(&text)
                    .map_err(|e| Failure::BadInput(format!("status file `{}`: {e}", p.display())))?
                    .engines
            }
            None => {
                eprintln!("llmgw: no status file `{}` yet: nothing installed by the agent is reported", p.display());
                vec![]
            }
        },
        None => vec![],
    };
    let local = Http::new(10, 60, None).map_err(|e| Failure::Internal(e.to_string()))?;
    let reported = agent::engine_report(&mut RealSystem::new(local, Box::new(Silent)), &last, config);
    /// `{"engines": [Reported…]}`: the status file's type, keys in its order.
    #[derive(serde::Serialize)]
    struct Engines<'a> {
        engines: &'a [agent::Reported],
    }
    match args.format.unwrap_or(simulate::Format::Text) {
        simulate::Format::Json => {
            let mut s =
                serde_json::to_string_pretty(&Engines { engines: &reported }).expect("a report always serializes");
            s.push('\n');
            output::emit(&s)?;
        }
        simulate::Format::Text => output::emit(&agent::report::text(&reported))?,
    }
    Ok(EXIT_OK)
}
