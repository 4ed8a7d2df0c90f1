//! The provisioning loop: [`run`] takes [`Event`]s and makes passes when
//! they and the [`super::Schedule`] say; [`spawn`] runs it on a tokio task.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::config::AgentConfig;
use super::node::Node;
use super::report::{self, Probed};
use super::schedule::Schedule;
use super::status::{AgentStatus, NotInstalled, PassRecord, changes};
use crate::converge::State;
use crate::recipe::{Want, WantName, WantsFile};

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

/// The agent's state between passes.
#[derive(Debug)]
pub struct Agent {
    wants: Vec<Want>,
    wants_path: PathBuf,
    config: AgentConfig,
    status_file: Option<PathBuf>,
    schedule: Schedule,
    last: BTreeMap<WantName, (State, String)>,
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
