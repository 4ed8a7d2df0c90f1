//! The machine a pass works on ([`Node`]): every effect of the agent goes
//! through it. A narrower view of a machine than [`System`]: it converges
//! wants, probes configured binaries, tells the time and writes the status
//! file, each through the [`System`] beneath it (or the simulation's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::report::{self, Probed};
use crate::converge::{self, Config, Status};
use crate::host::Host;
use crate::recipe::{Engine, Want};
use crate::sim::Simulation;
use crate::sim::machine::SIM_EPOCH;
use crate::system::System;
use crate::system::lock::EnginesLock;
use crate::system::real::RealSystem;

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

/// This node, for real: discovered again at the start of every pass, and
/// converged under the engines directory's lock, so that a `llmgw
/// provision` by hand waits for the pass (and the pass for it).
#[derive(Debug)]
pub struct RealNode(pub OnSystem<RealSystem>);

impl Node for RealNode {
    fn host_name(&self) -> String {
        self.0.host_name()
    }

    fn begin_pass(&mut self, _since_start: Duration) {
        // The machine as it is now: a driver upgraded since the last pass
        // changes which builds fit.
        let mut probe = crate::discover::RealProbe::default();
        match crate::discover::discover_at(&mut probe, &self.0.cfg.engines_dir) {
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

    fn probe(&mut self, binaries: &BTreeMap<Engine, PathBuf>) -> Probed {
        self.0.probe(binaries)
    }

    fn now(&mut self) -> u64 {
        self.0.now()
    }

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            System::create_dir_all(&mut self.0.sys, dir).map_err(|e| e.to_string())?;
        }
        self.0.write_atomic(path, contents)
    }
}
