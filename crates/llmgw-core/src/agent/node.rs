//! The machine a pass works on ([`Node`]): every effect of the agent goes
//! through it. A narrower view of a machine than [`System`]: it converges
//! wants, probes configured binaries, tells the time and writes the status
//! file, each through the [`System`] beneath it. Its implementations: [`OnSystem`]
//! (any [`System`]), this node (`llmgw_system::agent::RealNode`) and a
//! simulation (`llmgw_sim`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::report::{self, Probed};
use crate::converge::{self, Config, Status};
use crate::recipe::{Engine, Want};
use crate::system::{SysError, System};
use llmgw_model::host::Host;

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
    /// Writes `contents` to `path` atomically (a temporary beside it,
    /// renamed), never through a symbolic link there
    /// ([`System::write_atomic_as_itself`]): the status file.
    ///
    /// # Errors
    /// The [`SysError`] of what could not be written.
    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError>;
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

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        self.sys.write_atomic_as_itself(path, contents)
    }
}
