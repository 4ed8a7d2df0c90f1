//! One host end to end in simulation: a fake release server on loopback, a
//! simulated machine over a fresh engines directory, and the same
//! convergence a real node runs.
//!
//! [`Simulation`] keeps its server and directory between convergences, so a
//! second one sees the first's installs; [`simulate`] is the one-shot form.
//! Reports never show the temporary engines directory: binaries are given
//! relative to it, so output is byte-identical from run to run.

use std::path::Path;
use std::sync::Arc;

use crate::converge::{self, Config, Releases, Status};
use crate::host::Host;
use crate::mock_server::{self, FakeServer, truth::Catalog};
use crate::recipe::{Plan, Want, WantsFile};
use crate::report::Report;
use crate::system::local::Local;
use crate::system::sim::{MachineFaults, SimSystem};

/// The wants a simulation converges when none are given: `matrix/wants.json`, embedded.
pub const DEFAULT_WANTS_JSON: &str = include_str!("../matrix/wants.json");

/// The default wants ([`DEFAULT_WANTS_JSON`]).
pub fn default_wants() -> Vec<Want> {
    WantsFile::from_json(DEFAULT_WANTS_JSON).expect("matrix/wants.json is valid (a unit test parses it)").wants
}

/// Why a simulation could not be set up (not an outcome of one).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The fake release server did not start.
    #[error("the fake release server did not start: {0}")]
    Server(String),
    /// The temporary engines directory could not be made.
    #[error("cannot create a temporary engines directory: {0}")]
    TempDir(std::io::Error),
    /// The HTTP client could not be set up.
    #[error("{0}")]
    Client(String),
}

/// A simulated host with its fake release server and engines directory.
pub struct Simulation {
    server: Arc<FakeServer>,
    dir: tempfile::TempDir,
    sys: SimSystem,
    cfg: Config,
}

impl Simulation {
    /// Starts a simulation of `host` against the embedded truth.
    ///
    /// # Errors
    /// [`SimError`] when the server, the directory or the client cannot be set up.
    pub fn start(host: Host) -> Result<Simulation, SimError> {
        Simulation::with_catalog(host, mock_server::embedded_catalog())
    }

    /// Starts a simulation of `host` against `catalog`.
    ///
    /// # Errors
    /// As [`Simulation::start`].
    pub fn with_catalog(host: Host, catalog: &Catalog) -> Result<Simulation, SimError> {
        let server = FakeServer::start(catalog).map_err(|e| SimError::Server(e.to_string()))?;
        let mut sim = Simulation::on(host, Arc::new(server))?;
        sim.set_machine_faults(catalog.machine.clone());
        Ok(sim)
    }

    /// The simulated machine's faults from now on (a scenario's `machine`).
    pub fn set_machine_faults(&mut self, faults: MachineFaults) {
        self.sys.set_faults(faults);
    }

    /// Starts a simulation of `host` against a server shared with other
    /// simulations (a matrix): each has its own engines directory and
    /// machine, and the server only serves.
    ///
    /// # Errors
    /// As [`Simulation::start`], but for the server.
    pub fn on(host: Host, server: Arc<FakeServer>) -> Result<Simulation, SimError> {
        let dir = crate::system::local::scratch_dir("llmgw-sim-").map_err(SimError::TempDir)?;
        let local = loopback_client()?;
        let cfg = Config {
            engines_dir: dir.path().join("engines"),
            github_api: server.base_url(),
            pypi_simple: server.pypi_simple_url(),
            pytorch_whl: server.pytorch_url(),
            check_timeout_secs: converge::CHECK_TIMEOUT_SECS,
        };
        Ok(Simulation { server, dir, sys: SimSystem::new(host, local), cfg })
    }

    /// Converges `wants` and reports, binaries relative to the engines directory.
    pub fn converge(&mut self, wants: &[Want]) -> Report {
        let host = self.sys.host().clone();
        let statuses = converge::converge(&mut self.sys, &host, &self.cfg, wants);
        self.report(&host, statuses)
    }

    /// Installs the first working build of a plan given whole (a test's
    /// candidates rather than the recipe's), and reports it.
    pub fn install_plan(&mut self, want: &Want, plan: Plan) -> Report {
        let host = self.sys.host().clone();
        let status = converge::install_plan(&mut self.sys, &host, &self.cfg, want, plan, &mut Releases::default());
        self.report(&host, vec![status])
    }

    fn report(&self, host: &Host, statuses: Vec<Status>) -> Report {
        let root = format!("{}/", self.cfg.engines_dir.display());
        let rel = |s: &str| s.replace(&root, "");
        let engines = statuses
            .into_iter()
            .map(|mut s| {
                s.detail = rel(&s.detail);
                s.binary = s.binary.as_deref().map(rel);
                for a in &mut s.attempts {
                    a.reason = rel(&a.reason);
                }
                s
            })
            .collect();
        Report { host: host.name.clone(), engines }
    }

    /// The fake release server (for counting its requests).
    pub fn server(&self) -> &FakeServer {
        &self.server
    }

    /// The simulated machine as it is now.
    pub fn system(&self) -> &SimSystem {
        &self.sys
    }

    /// The simulated machine, to change between convergences (a package
    /// removed by an unrelated upgrade).
    pub fn system_mut(&mut self) -> &mut SimSystem {
        &mut self.sys
    }

    /// Installs into `dir` from now on instead of the temporary engines
    /// directory (`llmgw agent --host … --engines-dir DIR`).
    pub fn set_engines_dir(&mut self, dir: std::path::PathBuf) {
        self.cfg.engines_dir = dir;
    }

    /// The engines directory (inside a temporary directory removed on drop,
    /// unless [`Simulation::set_engines_dir`] named another).
    pub fn engines_dir(&self) -> &Path {
        &self.cfg.engines_dir
    }

    /// The temporary directory holding everything this simulation wrote.
    pub fn work_dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The HTTP client of every simulation: built once (TLS set-up is not
/// free), cloned cheaply.
fn loopback_client() -> Result<Local, SimError> {
    static CLIENT: std::sync::OnceLock<Result<Local, String>> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| Local::loopback(5, 30).map_err(|e| e.to_string())).clone().map_err(SimError::Client)
}

/// Simulates `host` converging `wants` once, against the embedded truth.
///
/// # Errors
/// As [`Simulation::start`].
pub fn simulate(host: &Host, wants: &[Want]) -> Result<Report, SimError> {
    Ok(Simulation::start(host.clone())?.converge(wants))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embedded_wants_parse() {
        let w = super::default_wants();
        assert!(w.iter().any(|w| w.engine == crate::recipe::Engine::LlamaCpp));
    }
}
