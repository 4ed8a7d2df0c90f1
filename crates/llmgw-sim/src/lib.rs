//! The simulation wing: the same convergence a real node runs, against a
//! described machine and a fake publisher, so that any node can be replayed
//! anywhere and a recipe change shows which machines change outcome.
//!
//! | folder | what lives there |
//! | --- | --- |
//! | [`truth`] | what each published build really contains and needs (`mocks/`, embedded), scenarios and faults |
//! | [`publisher`] | the fake GitHub, PyPI and PyTorch index on loopback, serving the truth |
//! | [`machine`] | the simulated machine: a [`llmgw_core::system::System`] that answers as the host description would |
//! | [`matrix`] | every host against every want, compared with the golden outcomes |
//!
//! [`Simulation`] (this file) is one host end to end: it keeps its server
//! and directory between convergences, so a second one sees the first's
//! installs, and it recovers from a scenario's simulated crash in one place
//! ([`Simulation::recovering`]) for `simulate`, the matrix and the agent.
//! Reports never show the temporary engines directory: binaries are given
//! relative to it, so output is byte-identical from run to run.
//!
//! May import the core (`recipe`, `converge`, `release`, `host`, `nvidia`,
//! `parse`), `system` (the trait, and the real HTTP client and files it
//! stands on) and `offline` (the matrix's offline rows); nothing imports
//! `sim` but `agent` (a simulated node) and the command line.

pub mod machine;
pub mod matrix;
pub mod node;
pub mod publisher;
pub mod runnable;
pub mod truth;

use std::path::Path;
use std::sync::Arc;

use llmgw_core::converge::{self, Config, Installer, Status};
use llmgw_core::recipe::{Plan, Want, WantsFile};
use llmgw_core::report::Report;
use llmgw_model::host::Host;
use llmgw_system::http::Http;
use machine::{SimSystem, SimulatedCrash};
use publisher::FakeServer;
use truth::{Catalog, MachineFaults};

/// The wants a simulation converges when none are given: `matrix/wants.json`, embedded.
pub const DEFAULT_WANTS_JSON: &str = include_str!("../../../matrix/wants.json");

/// The default wants ([`DEFAULT_WANTS_JSON`]).
pub fn default_wants() -> Vec<Want> {
    WantsFile::from_json(DEFAULT_WANTS_JSON).expect("matrix/wants.json is valid (a unit test parses it)").wants
}

/// The wants the matrix runs when none are given: the default wants (the
/// seed's pins), then `ENGINE@latest` of every engine, in
/// [`llmgw_core::recipe::Engine::ALL`]'s order.
pub fn matrix_wants() -> Vec<Want> {
    let mut wants = default_wants();
    wants.extend(llmgw_core::recipe::Engine::ALL.iter().map(|e| {
        Want::parse(&format!("{e}@{}", llmgw_core::recipe::LATEST)).expect("ENGINE@latest is a want of every engine")
    }));
    wants
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
    /// Crashes recovered from since [`Simulation::take_crashes`] was last called.
    crashes: Vec<SimulatedCrash>,
    /// Called with each crash as it is recovered from, before the run again.
    on_crash: Option<Box<dyn FnMut(SimulatedCrash) + Send>>,
}

impl Simulation {
    /// Starts a simulation of `host` against the embedded truth.
    ///
    /// # Errors
    /// [`SimError`] when the server, the directory or the client cannot be set up.
    pub fn start(host: Host) -> Result<Simulation, SimError> {
        Simulation::with_catalog(host, truth::embedded_catalog())
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
        let dir = llmgw_system::files::scratch_dir("llmgw-sim-").map_err(SimError::TempDir)?;
        let local = loopback_client()?;
        let cfg = Config {
            engines_dir: dir.path().join("engines"),
            github_api: server.base_url(),
            pypi_simple: server.pypi_simple_url(),
            pytorch_whl: server.pytorch_url(),
            python_mirror: server.python_mirror_url(),
            check_timeout_secs: converge::CHECK_TIMEOUT_SECS,
            not_a_build: Some(truth::stub::NOT_A_BUILD),
        };
        Ok(Simulation { server, dir, sys: SimSystem::new(host, local), cfg, crashes: Vec::new(), on_crash: None })
    }

    /// Converges `wants` and reports, binaries relative to the engines
    /// directory; a scenario's crash is recovered from ([`Simulation::recovering`]).
    pub fn converge(&mut self, wants: &[Want]) -> Report {
        self.recovering(|sim| {
            let host = sim.sys.host().clone();
            let statuses = converge::converge(&mut sim.sys, &host, &sim.cfg, wants);
            sim.report(&host, statuses)
        })
    }

    /// The version the `latest` want `want` resolves to on this host
    /// against this simulation's publisher, as a convergence would resolve
    /// it ([`converge::latest::resolve`]); nothing is installed.
    ///
    /// # Errors
    /// Why it could not be resolved: [`converge::latest::LatestError`].
    pub fn resolve_latest(&mut self, want: &Want) -> Result<String, converge::latest::LatestError> {
        let host = self.sys.host().clone();
        converge::latest::resolve(&mut self.sys, &self.cfg, want, &host).map(|r| r.version)
    }

    /// Runs `f` on the simulation. When a scenario's crash ends the
    /// simulated installer in the middle ([`SimulatedCrash`]: no cleanup
    /// runs, as after a `kill -9`), the crash is kept for
    /// [`Simulation::take_crashes`] and `f` runs again: a crash happens
    /// once, and what the next run makes of what it left is the outcome.
    /// Any other panic goes on unwinding.
    pub fn recovering<T>(&mut self, mut f: impl FnMut(&mut Simulation) -> T) -> T {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self))) {
            Ok(v) => v,
            Err(payload) => match payload.downcast::<SimulatedCrash>() {
                Ok(crash) => {
                    if let Some(say) = &mut self.on_crash {
                        say(*crash);
                    }
                    self.crashes.push(*crash);
                    f(self)
                }
                Err(payload) => std::panic::resume_unwind(payload),
            },
        }
    }

    /// The crashes recovered from since the last call, in order.
    pub fn take_crashes(&mut self) -> Vec<SimulatedCrash> {
        std::mem::take(&mut self.crashes)
    }

    /// Says each crash as it is recovered from, before the run again
    /// (`llmgw simulate` on stderr, the agent in its log).
    pub fn on_crash(&mut self, say: impl FnMut(SimulatedCrash) + Send + 'static) {
        self.on_crash = Some(Box::new(say));
    }

    /// Installs the first working build of a plan given whole (a test's
    /// candidates rather than the recipe's), and reports it.
    pub fn install_plan(&mut self, want: &Want, plan: Plan) -> Report {
        let host = self.sys.host().clone();
        let status = Installer::new(&mut self.sys, &host, &self.cfg).install_plan(want, plan);
        self.report(&host, vec![status])
    }

    /// The statuses as a report, each binary relative to the engines
    /// directory (the failures' paths already are: [`converge::BuildFailure::relative_to`]).
    fn report(&self, host: &Host, statuses: Vec<Status>) -> Report {
        let engines = statuses
            .into_iter()
            .map(|mut s| {
                s.binary = s.binary.map(|b| {
                    std::path::Path::new(&b)
                        .strip_prefix(&self.cfg.engines_dir)
                        .map_or(b.clone(), |r| r.display().to_string())
                });
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

    /// Where uv downloads the Python engines' CPython from, from now on,
    /// in place of the fake server's python-build-standalone downloads.
    pub fn set_python_mirror(&mut self, url: &str) {
        self.cfg.python_mirror = url.to_string();
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
fn loopback_client() -> Result<Http, SimError> {
    static CLIENT: std::sync::OnceLock<Result<Http, String>> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| Http::loopback(5, 30).map_err(|e| e.to_string())).clone().map_err(SimError::Client)
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
        assert!(w.iter().any(|w| w.engine == llmgw_core::recipe::Engine::LlamaCpp));
    }
}
