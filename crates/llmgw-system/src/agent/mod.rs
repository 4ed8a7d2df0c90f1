//! This node as the agent's [`Node`]: discovered again at the start of
//! every pass and converged under the engines directory's lock; and the
//! process around the agent's loop ([`runtime`]).
//!
//! Uses: `files`, `lock`, `probe` and `real`.

pub mod runtime;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use llmgw_core::agent::report::Probed;
use llmgw_core::agent::{Node, OnSystem};
use llmgw_core::converge::Status;
use llmgw_core::recipe::{Engine, Want};
use llmgw_core::system::{SysError, System};

use crate::lock::EnginesLock;
use crate::real::RealSystem;

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
        let mut probe = crate::probe::RealProbe::default();
        match llmgw_core::discover::discover_at(&mut probe, &self.0.cfg.engines_dir) {
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

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            System::create_dir_all(&mut self.0.sys, dir)?;
        }
        Node::write_atomic(&mut self.0, path, contents)
    }
}
