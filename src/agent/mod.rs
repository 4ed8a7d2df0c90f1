//! The agent's provisioning loop (`llmgw agent`): keeps the engines a node
//! is asked for installed, finds out when one stops working, and says what
//! the node can run. A port of the seed's `provisionLoop`
//! (`internal/agent/provision.go`).
//!
//! - A *pass* converges every want once ([`Node::converge`]): an install
//!   already there is re-checked (its files still verify, its binary still
//!   starts, it still lists its GPU), a broken one is reinstalled.
//! - Passes come at start, on a kick ([`Event::Kick`], a good changed wants
//!   file [`Event::WantsFile`] the CLI sees, every SIGHUP [`Event::Reread`]),
//!   and otherwise when [`Schedule`] says: 10 minutes after a clean pass, 1,
//!   2, 4, … up to 10 minutes after a failed one. Events queued during a pass
//!   make one pass after it.
//! - A wants file that cannot be read or is malformed is logged once per
//!   change and kept in the status file's `wants_error`; the last good wants
//!   stay.
//! - After each pass: an engine's status is logged only when its state or
//!   detail changed ([`changes`]), at warning level for `failed` and
//!   `unsupported`; the [`AgentStatus`] is written atomically to the status
//!   file; a [`PassRecord`] goes to whoever watches (tests, with tokio's
//!   paused clock).
//! - [`Event::Stop`] (SIGTERM) ends the loop between passes; a pass in
//!   progress stops between two wants, never inside one's commit.
//! - On a [`Simulation`], a scenario's crash ([`crate::sim::machine::SimulatedCrash`]) is said
//!   and the want converged again, as `llmgw simulate` does.
//!
//! Every effect goes through the [`Node`]: a [`Simulation`] or a
//! [`OnSystem`] over any [`System`]. The waits are tokio's, so a test with a
//! paused clock sees the exact times of the passes.

pub mod config;
pub mod report;
pub mod schedule;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::converge::{self, Config, State, Status};
use crate::host::Host;
use crate::recipe::{Engine, Want, WantsFile};
use crate::sim::Simulation;
use crate::sim::machine::SIM_EPOCH;
use crate::system::System;

pub use config::AgentConfig;
pub use report::{Probed, Reported, Seen};
pub use schedule::{FIRST_RETRY, RECHECK_EVERY, Schedule};

/// The machine a pass works on: every effect of the agent goes through it.
/// Its methods block; the loop calls them from tokio's blocking pool.
pub trait Node: Send + 'static {
    /// The host's name, for the status file.
    fn host_name(&self) -> String;
    /// Called once at the start of each pass, before the first want, with
    /// the time since the loop started (tokio's clock): a real node looks
    /// at the machine again (a driver upgraded since); a simulated one moves
    /// its clock on to it. Nothing by default.
    fn begin_pass(&mut self, _since_start: Duration) {}
    /// Converges `wants` in order; one status per want.
    fn converge(&mut self, wants: &[Want]) -> Vec<Status>;
    /// What the configured binaries answer ([`report::probe`]).
    fn probe(&mut self, binaries: &BTreeMap<Engine, PathBuf>) -> Probed;
    /// The machine's clock, seconds since the Unix epoch (simulated in simulation).
    fn now(&mut self) -> u64;
    /// Writes `contents` to `path` atomically (a temporary beside it, renamed).
    ///
    /// # Errors
    /// The sentence of what could not be written.
    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), String>;
}

/// A simulated node: binaries in its statuses are relative to its engines
/// directory, so a status file is the same from run to run.
impl Node for Simulation {
    fn host_name(&self) -> String {
        self.system().host().name.clone()
    }

    /// The simulated clock goes on to [`SIM_EPOCH`] plus the loop's time,
    /// unless the retries of earlier passes took it further: the status
    /// file's `at` follows the passes.
    fn begin_pass(&mut self, since_start: Duration) {
        let sys = self.system_mut();
        let target = SIM_EPOCH + since_start.as_secs();
        if sys.clock() < target {
            sys.sleep(Duration::from_secs(target - sys.clock()));
        }
    }

    fn converge(&mut self, wants: &[Want]) -> Vec<Status> {
        self.on_crash(say_crash);
        Simulation::converge(self, wants).engines
    }

    fn probe(&mut self, binaries: &BTreeMap<Engine, PathBuf>) -> Probed {
        report::probe(self.system_mut(), binaries)
    }

    fn now(&mut self) -> u64 {
        self.system_mut().now()
    }

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), String> {
        self.on_crash(say_crash);
        self.recovering(|sim| sim.system_mut().write_atomic(path, contents).map_err(|e| e.to_string()))
    }
}

/// Logs a crash of the simulated installer as the simulation recovers
/// from it ([`Simulation::recovering`]), as `llmgw simulate` says them.
fn say_crash(c: crate::sim::machine::SimulatedCrash) {
    tracing::warn!(
        "the simulated installer crashed before its change {} (the scenario's); converging again",
        c.before_change
    );
}

/// A node over any [`System`] (the real one on a node): the host as
/// discovered, the installer's configuration.
#[derive(Debug)]
pub struct OnSystem<S> {
    /// The effects.
    pub sys: S,
    /// The host description converged for.
    pub host: Host,
    /// Where and from what to install.
    pub cfg: Config,
}

impl<S: System + Send + 'static> Node for OnSystem<S> {
    fn host_name(&self) -> String {
        self.host.name.clone()
    }

    fn converge(&mut self, wants: &[Want]) -> Vec<Status> {
        converge::converge(&mut self.sys, &self.host, &self.cfg, wants)
    }

    fn probe(&mut self, binaries: &BTreeMap<Engine, PathBuf>) -> Probed {
        report::probe(&mut self.sys, binaries)
    }

    fn now(&mut self) -> u64 {
        self.sys.now()
    }

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), String> {
        self.sys.write_atomic(path, contents).map_err(|e| e.to_string())
    }
}

/// What the loop is told while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Pass now, cutting the current wait short.
    Kick,
    /// The wants file's text, changed. A good one replaces the wants and
    /// passes now; a malformed one is logged with its path, the last good
    /// wants are kept until the next change, and the status file's
    /// `wants_error` says so.
    WantsFile(String),
    /// The wants file cannot be read (removed, unreadable): the sentence
    /// saying so. Logged, kept in the status file's `wants_error`; the last
    /// good wants are kept; no pass.
    WantsError(String),
    /// SIGHUP: the wants file read again (its text, or why it cannot be
    /// read), taken as [`Event::WantsFile`] or [`Event::WantsError`] are,
    /// and a pass now whatever it says.
    Reread(Result<String, String>),
    /// Stop between passes (SIGTERM, SIGINT).
    Stop,
}

/// A want the agent does not install, and why (the configuration disables
/// its engine, or names its binary).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotInstalled {
    /// The want as written: `sglang@0.5.4`.
    pub want: String,
    /// Why.
    pub reason: String,
}

/// The status file: what a control plane or an operator reads, written
/// atomically after each pass.
///
/// `{"host", "pass", "at", "next_pass_in_secs", "wants_error", "engines": [Status…],
/// "not_installed": [{"want", "reason"}], "report": [{"engine", "versions", "seen"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStatus {
    /// The host description's `name`.
    pub host: String,
    /// The pass's number, from 1.
    pub pass: u64,
    /// When the pass ended, seconds since the Unix epoch, on the node's
    /// clock (the simulated one in simulation).
    pub at: u64,
    /// Seconds until the next pass, unless a kick comes first; `null` when
    /// none follows (`--once`).
    pub next_pass_in_secs: Option<u64>,
    /// Why the wants file, as it is now, is not the wants converged
    /// (unreadable, malformed): the agent runs on its last good wants.
    /// `null` when the file is fine.
    pub wants_error: Option<String>,
    /// One status per want installed, as `simulate --format json` shows them.
    pub engines: Vec<Status>,
    /// The wants the configuration keeps from being installed.
    pub not_installed: Vec<NotInstalled>,
    /// The engine report ([`report`]): what this node can run.
    pub report: Vec<Reported>,
}

impl AgentStatus {
    /// Pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a status always serializes");
        s.push('\n');
        s
    }
}

/// One want's status that changed since the last pass (or is new).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The want as written.
    pub want: String,
    /// Its state now.
    pub state: State,
    /// Its detail now.
    pub detail: String,
}

impl Change {
    /// Whether it is logged as a warning: `failed` and `unsupported`.
    pub fn is_warning(&self) -> bool {
        self.state.is_fault()
    }
}

/// The statuses whose state or detail differ from `last` (the previous
/// pass's, by want), and `last` updated; wants no longer asked for are
/// forgotten.
pub fn changes(last: &mut BTreeMap<String, (State, String)>, statuses: &[Status]) -> Vec<Change> {
    let mut out = Vec::new();
    let mut now = BTreeMap::new();
    for s in statuses {
        let key = (s.state, s.detail.clone());
        if last.get(&s.want) != Some(&key) {
            out.push(Change { want: s.want.clone(), state: s.state, detail: s.detail.clone() });
        }
        now.insert(s.want.clone(), key);
    }
    *last = now;
    out
}

/// What one pass did, for whoever watches the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassRecord {
    /// When the pass began, on tokio's clock, since the loop started.
    pub began: Duration,
    /// The wait after it (before a kick).
    pub next: Duration,
    /// The statuses whose state or detail changed (those logged).
    pub changes: Vec<Change>,
    /// What the status file says after it.
    pub status: AgentStatus,
    /// Why the status file could not be written, when it could not.
    pub status_error: Option<String>,
}

/// The agent's state between passes.
#[derive(Debug)]
pub struct Agent {
    wants: Vec<Want>,
    wants_path: PathBuf,
    config: AgentConfig,
    status_file: Option<PathBuf>,
    schedule: Schedule,
    last: BTreeMap<String, (State, String)>,
    /// What the configured binaries answered in the last pass.
    configured: Probed,
    passes: u64,
    once: bool,
    /// Why the wants file is not the wants converged, if it is not.
    wants_error: Option<String>,
    /// The status last written, to write again when only `wants_error` changes.
    last_status: Option<AgentStatus>,
}

impl Agent {
    /// An agent for `wants` (read from `wants_path`, named in messages),
    /// with `config`, writing its status to `status_file` when given.
    pub fn new(wants: Vec<Want>, wants_path: PathBuf, config: AgentConfig, status_file: Option<PathBuf>) -> Agent {
        let agent = Agent {
            wants,
            wants_path,
            config,
            status_file,
            schedule: Schedule::default(),
            last: BTreeMap::new(),
            configured: BTreeMap::new(),
            passes: 0,
            once: false,
            wants_error: None,
            last_status: None,
        };
        agent.log_not_installed();
        agent
    }

    /// The same agent, stopping after its first pass (`--once`).
    pub fn once(mut self) -> Agent {
        self.once = true;
        self
    }

    /// The wants as asked (the configuration's exclusions included).
    pub fn wants(&self) -> &[Want] {
        &self.wants
    }

    /// Takes a changed wants file: its wants replace the current ones.
    ///
    /// # Errors
    /// `wants file `PATH`: JSON-PATH: …` when it is malformed; the current
    /// wants stay.
    pub fn take_wants_file(&mut self, text: &str) -> Result<(), String> {
        let file =
            WantsFile::from_json(text).map_err(|e| format!("wants file `{}`: {e}", self.wants_path.display()))?;
        if file.wants != self.wants {
            tracing::info!(
                "wants changed: {}",
                file.wants.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            );
            self.wants = file.wants;
            self.log_not_installed();
        }
        Ok(())
    }

    /// Why the wants file is not the wants converged (`None`: it is fine).
    pub fn wants_error(&self) -> Option<&str> {
        self.wants_error.as_deref()
    }

    /// Records that the wants file is fine (`None`) or why not, logging a
    /// new problem once; whether that changed anything.
    fn set_wants_error(&mut self, error: Option<String>) -> bool {
        if error == self.wants_error {
            return false;
        }
        if let Some(e) = &error {
            tracing::error!("{e}; keeping the last good wants until the file changes again");
        }
        self.wants_error = error;
        true
    }

    /// Takes an event: `None` to stop, else whether it asks for a pass now.
    fn take(&mut self, ev: Event) -> Option<bool> {
        let (text, pass) = match ev {
            Event::Stop => return None,
            Event::Kick => return Some(true),
            Event::WantsFile(t) => (Ok(t), false),
            Event::WantsError(e) => (Err(e), false),
            Event::Reread(r) => (r, true),
        };
        match text.and_then(|t| self.take_wants_file(&t)) {
            Ok(()) => {
                self.set_wants_error(None);
                Some(true)
            }
            Err(e) => {
                self.set_wants_error(Some(e));
                Some(pass)
            }
        }
    }

    fn not_installed(&self) -> (Vec<Want>, Vec<NotInstalled>) {
        let (keep, skip) = self.config.wants_to_install(&self.wants);
        (keep, skip.into_iter().map(|(w, r)| NotInstalled { want: w.to_string(), reason: r.to_string() }).collect())
    }

    fn log_not_installed(&self) {
        for n in self.not_installed().1 {
            tracing::info!(want = %n.want, "not installed: {}", n.reason);
        }
    }
}

/// The handle of a running loop.
#[derive(Debug, Clone)]
pub struct Control {
    events: mpsc::UnboundedSender<Event>,
    stop: Arc<AtomicBool>,
}

impl Control {
    /// Passes now.
    pub fn kick(&self) {
        let _ = self.events.send(Event::Kick);
    }

    /// Hands the loop the wants file's changed text.
    pub fn wants_file(&self, text: String) {
        let _ = self.events.send(Event::WantsFile(text));
    }

    /// Tells the loop the wants file cannot be read, and why.
    pub fn wants_error(&self, error: String) {
        let _ = self.events.send(Event::WantsError(error));
    }

    /// SIGHUP: hands the loop the wants file read again (or why it cannot
    /// be), and passes now.
    pub fn reread(&self, text: Result<String, String>) {
        let _ = self.events.send(Event::Reread(text));
    }

    /// Stops the loop between passes; a pass in progress stops between two wants.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.events.send(Event::Stop);
    }
}

/// A loop started by [`spawn`].
#[derive(Debug)]
pub struct Running {
    /// Its handle.
    pub control: Control,
    /// A record of every pass, as it ends.
    pub passes: mpsc::UnboundedReceiver<PassRecord>,
    /// The loop; it ends on [`Control::stop`] (or after one pass, [`Agent::once`]).
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts the loop on the current tokio runtime: the first pass at once.
pub fn spawn<N: Node>(node: Arc<Mutex<N>>, agent: Agent) -> Running {
    let (events_tx, events) = mpsc::unbounded_channel();
    let (passes_tx, passes) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let control = Control { events: events_tx, stop: stop.clone() };
    let task = tokio::spawn(run(node, agent, events, stop, passes_tx));
    Running { control, passes, task }
}

/// The loop: waits for the next pass's time or an event, passes, reports,
/// until told to stop.
pub async fn run<N: Node>(
    node: Arc<Mutex<N>>,
    mut agent: Agent,
    mut events: mpsc::UnboundedReceiver<Event>,
    stop: Arc<AtomicBool>,
    passes: mpsc::UnboundedSender<PassRecord>,
) {
    let start = Instant::now();
    let mut next_at = start;
    'passes: loop {
        let error_before = agent.wants_error.clone();
        let mut due = tokio::select! {
            biased;
            ev = events.recv() => match ev.and_then(|ev| agent.take(ev)) {
                None => break,
                Some(due) => due,
            },
            () = tokio::time::sleep_until(next_at) => true,
        };
        // Whatever else came meanwhile (several SIGHUPs during a pass) makes one pass.
        while let Ok(ev) = events.try_recv() {
            match agent.take(ev) {
                None => break 'passes,
                Some(d) => due |= d,
            }
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if !due {
            if agent.wants_error != error_before
                && let Some(mut status) = agent.last_status.clone()
            {
                // No pass, but the status file says the wants file's problem.
                status.wants_error.clone_from(&agent.wants_error);
                if let Some(e) = write_status(&node, &agent, &status).await {
                    tracing::error!("{e}");
                }
                agent.last_status = Some(status);
            }
            continue;
        }
        let began = Instant::now();
        let Some(record) = pass(&node, &mut agent, &stop, began - start).await else {
            tracing::info!("stopped between two wants of a pass");
            break;
        };
        next_at = began + record.next;
        let _ = passes.send(record);
        if agent.once {
            break;
        }
    }
}

/// One pass: converge, probe, log changes, schedule, write the status file.
/// `None` when told to stop before its end.
async fn pass<N: Node>(
    node: &Arc<Mutex<N>>,
    agent: &mut Agent,
    stop: &Arc<AtomicBool>,
    began: Duration,
) -> Option<PassRecord> {
    let (wants, not_installed) = agent.not_installed();
    let binaries = agent.config.engines.binaries.clone();
    let (n, flag) = (node.clone(), stop.clone());
    let done = blocking(move || {
        let mut node = n.lock().unwrap_or_else(PoisonError::into_inner);
        node.begin_pass(began);
        let mut statuses = Vec::new();
        for w in &wants {
            if flag.load(Ordering::SeqCst) {
                return None;
            }
            statuses.extend(node.converge(std::slice::from_ref(w)));
        }
        let configured = node.probe(&binaries);
        Some((statuses, configured, node.now(), node.host_name()))
    })
    .await?;
    let (statuses, configured, at, host) = done;

    agent.passes += 1;
    let changes = changes(&mut agent.last, &statuses);
    for c in &changes {
        if c.is_warning() {
            tracing::warn!(want = %c.want, state = c.state.as_str(), "{}", c.detail);
        } else {
            tracing::info!(want = %c.want, state = c.state.as_str(), "{}", c.detail);
        }
    }
    if configured != agent.configured {
        let named: Vec<String> =
            configured.iter().filter_map(|(e, v)| v.as_ref().ok().map(|v| format!("{e} {v}"))).collect();
        tracing::info!("engines named in the configuration that answer: {}", named.join(", "));
        agent.configured = configured.clone();
    }
    let next = agent.schedule.after_pass(statuses.iter().any(|s| s.state == State::Failed));
    let report = report::merge(&report::installed(&statuses), &configured, &agent.config.engines.disabled);
    let status = AgentStatus {
        host,
        pass: agent.passes,
        at,
        next_pass_in_secs: (!agent.once).then_some(next.as_secs()),
        wants_error: agent.wants_error.clone(),
        engines: statuses,
        not_installed,
        report,
    };
    let status_error = write_status(node, agent, &status).await;
    if let Some(e) = &status_error {
        tracing::error!("{e}");
    }
    agent.last_status = Some(status.clone());
    tracing::debug!(pass = agent.passes, next_in_secs = next.as_secs(), "pass done");
    Some(PassRecord { began, next, changes, status, status_error })
}

/// Writes `status` to the agent's status file, if it has one: why it could
/// not, if it could not.
async fn write_status<N: Node>(node: &Arc<Mutex<N>>, agent: &Agent, status: &AgentStatus) -> Option<String> {
    let path = agent.status_file.clone()?;
    let (n, json) = (node.clone(), status.to_json());
    blocking(move || {
        let mut node = n.lock().unwrap_or_else(PoisonError::into_inner);
        node.write_atomic(&path, json.as_bytes())
            .err()
            .map(|e| format!("cannot write the status file `{}`: {e}", path.display()))
    })
    .await
}

/// Runs blocking work on tokio's blocking pool (the paused test clock does
/// not advance meanwhile); a panic in it (a simulated crash) goes on
/// unwinding here.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Option<T> + Send + 'static) -> Option<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => None,
    }
}

/// The engine report of a node between runs of the agent (`llmgw agent
/// --report`): the versions `last` (the status file's statuses) shows
/// installed and seen to run, merged with what the configured binaries
/// answer now.
pub fn engine_report(sys: &mut dyn System, last: &[Status], config: &AgentConfig) -> Vec<Reported> {
    let configured = report::probe(sys, &config.engines.binaries);
    report::merge(&report::installed(last), &configured, &config.engines.disabled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::converge::Status;

    fn status(want: &str, state: State, detail: &str) -> Status {
        let w = Want::parse(want).unwrap();
        Status {
            want: want.into(),
            engine: w.engine,
            version: w.version,
            variant: None,
            state,
            detail: detail.into(),
            note: None,
            binary: None,
            attempts: vec![],
        }
    }

    #[test]
    fn only_changes_are_logged_and_a_second_identical_pass_logs_nothing() {
        let mut last = BTreeMap::new();
        let first = [status("llama.cpp@b10850", State::Failed, "HTTP 404"), status("uv@0.12.20", State::Ready, "ok")];
        let c = changes(&mut last, &first);
        assert_eq!(c.len(), 2);
        assert!(c[0].is_warning() && !c[1].is_warning());
        assert!(changes(&mut last, &first).is_empty());
        let second = [status("llama.cpp@b10850", State::Failed, "HTTP 500"), status("uv@0.12.20", State::Ready, "ok")];
        let c = changes(&mut last, &second);
        assert_eq!(c.iter().map(|c| c.detail.as_str()).collect::<Vec<_>>(), ["HTTP 500"], "the detail changed");
        // A want no longer asked for is forgotten: asked again, it is new.
        changes(&mut last, &second[1..]);
        assert_eq!(changes(&mut last, &second).len(), 1);
    }
}
