//! A simulation as the agent's [`Node`]: binaries in its statuses are
//! relative to its engines directory, so a status file is the same from
//! run to run.
//!
//! Uses: `machine`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use llmgw_core::agent::Node;
use llmgw_core::agent::report::{self, Probed};
use llmgw_core::converge::Status;
use llmgw_core::recipe::{Engine, Want};
use llmgw_core::system::{SysError, System};

use crate::Simulation;
use crate::machine::{SIM_EPOCH, SimulatedCrash};

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

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        self.on_crash(say_crash);
        self.recovering(|sim| sim.system_mut().write_atomic_as_itself(path, contents))
    }
}

/// Logs a crash of the simulated installer as the simulation recovers
/// from it ([`Simulation::recovering`]), as `llmgw simulate` says them.
fn say_crash(c: SimulatedCrash) {
    tracing::warn!(
        "the simulated installer crashed before its change {} (the scenario's); converging again",
        c.before_change
    );
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::PathBuf;

    use llmgw_core::agent::report;
    use llmgw_core::recipe::Engine;

    #[test]
    fn a_configured_binary_that_does_not_answer_is_reported_as_such_and_logged_in_words() {
        let mut sys = crate::machine::SimSystem::new(
            llmgw_model::host::Host::from_json(include_str!("../../../matrix/hosts/nogpu-debian12.json")).unwrap(),
            llmgw_system::http::Http::new(1, 1, None).unwrap(),
        );
        let probed = report::probe(&mut sys, &[(Engine::Vllm, PathBuf::from("/nonexistent/vllm"))].into());
        let why = probed[&Engine::Vllm].clone().unwrap_err();
        assert!(why.starts_with("vllm's configured binary /nonexistent/vllm does not answer --version: "), "{why}");
        assert!(!why.contains("Some("), "{why}");
        let r = report::merge(&BTreeMap::new(), &probed, &BTreeSet::new());
        assert_eq!(r, [report::Reported { engine: Engine::Vllm, versions: vec![], seen: report::Seen::NotAnswering }]);
    }
}
