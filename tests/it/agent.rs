//! The agent's loop on a simulated node, on tokio's paused clock: the exact
//! times of its passes (backoff 1, 2, 4 … 10 minutes after failures, 10
//! minutes after a clean pass), kicks, a wants file that changes, a library
//! removed between passes, the engine report, the status file; and the
//! command line's bad input.
//!
//! Each simulation is made and dropped outside the runtime (its fake server
//! has a runtime of its own); the loop runs its passes on the blocking pool,
//! during which the paused clock stands still.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assert_cmd::Command;
use llmgw::agent::{self, Agent, AgentConfig, AgentStatus, PassRecord, Running, Seen};
use llmgw::converge::{Outcome, State};
use llmgw::mock_server::embedded_catalog;
use llmgw::mock_server::truth::{Catalog, Fault};
use llmgw::recipe::{Engine, Want};
use llmgw::simulate::Simulation;
use llmgw::system::sim::MachineFaults;
use tokio::time::Instant;

fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap()
}

/// llama.cpp's release metadata answers 404 (a mirror missing the release)
/// for `times` requests, or always: one request per pass, no retry.
fn failing_mirror(times: Option<u64>) -> Catalog {
    let mut c = embedded_catalog().clone();
    c.faults.push(Fault {
        release: "ggml-org/llama.cpp@b10850".into(),
        asset: None,
        status: Some(404),
        body: None,
        times,
        retry_after_secs: None,
        rate_limit_reset_in_secs: None,
    });
    c
}

fn wants(list: &[&str]) -> Vec<Want> {
    list.iter().map(|w| Want::parse(w).unwrap()).collect()
}

fn agent_for(list: &[&str]) -> Agent {
    Agent::new(wants(list), "wants.json".into(), AgentConfig::default(), None)
}

fn v100(catalog: &Catalog) -> Arc<Mutex<Simulation>> {
    Arc::new(Mutex::new(Simulation::with_catalog(super::host("v100.json"), catalog).unwrap()))
}

/// The next pass: (minute:second it began, llama.cpp's state).
async fn next(running: &mut Running) -> PassRecord {
    running.passes.recv().await.expect("the loop is running")
}

fn began_and_state(p: &PassRecord) -> (u64, State) {
    (p.began.as_secs(), p.status.engines[0].state)
}

async fn stop(running: Running) {
    running.control.stop();
    running.task.await.unwrap();
}

#[test]
fn a_failing_mirror_is_retried_after_1_2_4_minutes_and_a_clean_pass_resets_the_backoff() {
    let node = v100(&failing_mirror(Some(3)));
    paused().block_on(async {
        let mut running = agent::spawn(node.clone(), agent_for(&["llama.cpp@b10850"]));
        let mut seen = vec![];
        for _ in 0..5 {
            seen.push(began_and_state(&next(&mut running).await));
        }
        assert_eq!(
            seen,
            [(0, State::Failed), (60, State::Failed), (180, State::Failed), (420, State::Ready), (1020, State::Ready)],
            "heals on the fourth pass; then every 10 minutes"
        );
        // The next pass (at 1620) fails: the package an upgrade removed
        // cannot be installed again. The backoff starts over at 1 minute.
        {
            let mut sim = node.lock().unwrap();
            sim.system_mut().host_mut().packages.installed.remove("libvulkan1");
            sim.set_machine_faults(MachineFaults { package_manager_fails: true, ..MachineFaults::default() });
        }
        let p = next(&mut running).await;
        assert_eq!(began_and_state(&p), (1620, State::Failed), "{}", p.status.engines[0].detail);
        assert_eq!(p.next, Duration::from_secs(60), "reset by the clean passes before");
        node.lock().unwrap().set_machine_faults(MachineFaults::default());
        assert_eq!(began_and_state(&next(&mut running).await), (1680, State::Ready));
        stop(running).await;
    });
}

#[test]
fn a_mirror_that_keeps_failing_is_retried_at_most_every_10_minutes() {
    let node = v100(&failing_mirror(None));
    paused().block_on(async {
        let mut running = agent::spawn(node.clone(), agent_for(&["llama.cpp@b10850"]));
        let mut began = vec![];
        for _ in 0..8 {
            let p = next(&mut running).await;
            assert_eq!(p.status.engines[0].state, State::Failed);
            assert!(p.status.engines[0].detail.contains("has no release `b10850`"), "{}", p.status.engines[0].detail);
            began.push(p.began.as_secs() / 60);
        }
        assert_eq!(began, [0, 1, 3, 7, 15, 25, 35, 45], "waits of 1, 2, 4, 8, then 10 minutes");
        stop(running).await;
    });
}

#[test]
fn a_kick_or_a_changed_wants_file_cuts_the_wait_short_and_a_malformed_one_is_ignored() {
    let node = v100(&failing_mirror(None));
    paused().block_on(async {
        let t0 = Instant::now();
        let mut running = agent::spawn(node.clone(), agent_for(&["llama.cpp@b10850"]));
        assert_eq!(next(&mut running).await.began.as_secs(), 0);
        assert_eq!(next(&mut running).await.began.as_secs(), 60);
        // Waiting until 180; a kick at 100 passes at once.
        tokio::time::sleep_until(t0 + Duration::from_secs(100)).await;
        running.control.kick();
        let p = next(&mut running).await;
        assert_eq!((p.began.as_secs(), p.next.as_secs()), (100, 240));
        // A malformed wants file at 200 changes nothing: no pass, the same wants.
        tokio::time::sleep_until(t0 + Duration::from_secs(200)).await;
        running.control.wants_file(r#"{"wants": [{"engine": "llama.cpp"}]}"#.into());
        let p = next(&mut running).await;
        assert_eq!(p.began.as_secs(), 340, "the wait it was in");
        assert_eq!(p.status.engines.len(), 1);
        // A good one at 400 is taken at once.
        tokio::time::sleep_until(t0 + Duration::from_secs(400)).await;
        running.control.wants_file(
            r#"{"wants": [{"engine": "llama.cpp", "version": "b10850"}, {"engine": "uv", "version": "0.12.20"}]}"#
                .into(),
        );
        let p = next(&mut running).await;
        assert_eq!(p.began.as_secs(), 400);
        let wants: Vec<_> = p.status.engines.iter().map(|s| (s.want.as_str(), s.state)).collect();
        assert_eq!(wants, [("llama.cpp@b10850", State::Failed), ("uv@0.12.20", State::Ready)]);
        assert_eq!(p.changes.len(), 1, "only uv is new; llama.cpp fails as before: {:?}", p.changes);
        stop(running).await;
    });
}

#[test]
fn a_library_removed_between_passes_is_found_by_the_next_recheck_and_reinstalled() {
    let node = v100(embedded_catalog());
    let dir = tempfile::tempdir().unwrap();
    let status_file = dir.path().join("status.json");
    let agent = Agent::new(
        wants(&["llama.cpp@b10850"]),
        "wants.json".into(),
        AgentConfig::default(),
        Some(status_file.clone()),
    );
    paused().block_on(async {
        let mut running = agent::spawn(node.clone(), agent);
        let p = next(&mut running).await;
        assert_eq!(began_and_state(&p), (0, State::Ready));
        assert_eq!(p.status.engines[0].attempts[0].outcome, Outcome::Installed);
        assert_eq!(p.changes.len(), 1);
        // An unrelated upgrade removes the Vulkan loader.
        node.lock().unwrap().system_mut().host_mut().packages.installed.remove("libvulkan1");

        let p = next(&mut running).await;
        assert_eq!(began_and_state(&p), (600, State::Ready), "found by the 10-minute re-check");
        let a = &p.status.engines[0].attempts;
        assert_eq!((a[0].outcome, a[1].outcome), (Outcome::Stale, Outcome::Installed), "{a:?}");
        assert!(a[0].reason.contains("libvulkan.so.1"), "{}", a[0].reason);
        assert!(node.lock().unwrap().system().host().packages.installed.contains("libvulkan1"), "installed again");

        let p = next(&mut running).await;
        assert_eq!(p.status.engines[0].attempts[0].outcome, Outcome::Verified);
        assert_eq!(p.changes.len(), 1, "the detail changed: verified, not installed");
        let p = next(&mut running).await;
        assert_eq!(p.began.as_secs(), 1800);
        assert!(p.changes.is_empty(), "an identical pass logs nothing: {:?}", p.changes);
        stop(running).await;
    });
    let written: AgentStatus = serde_json::from_str(&std::fs::read_to_string(&status_file).unwrap()).unwrap();
    assert_eq!((written.pass, written.next_pass_in_secs), (4, 600));
    assert_eq!(written.at, llmgw::system::sim::SIM_EPOCH + 1800, "on the simulated clock, which follows the passes");
    assert_eq!(written.engines[0].binary.as_deref(), Some("llama.cpp/b10850-vulkan/llama-b10850/llama-server"));
    assert_eq!(written.report.len(), 1);
    assert_eq!((written.report[0].engine, written.report[0].seen), (Engine::LlamaCpp, Seen::Installed));
}

#[test]
fn an_engine_built_by_hand_is_reported_and_never_installed_over_and_a_disabled_one_neither() {
    // The operator's own llama.cpp, somewhere else on the node.
    let mut theirs = Simulation::start(super::host("v100.json")).unwrap();
    theirs.converge(&wants(&["llama.cpp@b10850"]));
    let binary = theirs.engines_dir().join("llama.cpp/b10850-vulkan/llama-b10850/llama-server");
    let host = theirs.system().host().clone();
    let config = AgentConfig::from_json(&format!(
        r#"{{"engines": {{"disabled": ["vllm"], "binaries": {{"llama.cpp": "{}"}}}}}}"#,
        binary.display()
    ))
    .unwrap();
    let node = Arc::new(Mutex::new(Simulation::start(host).unwrap()));
    let agent = Agent::new(
        wants(&["llama.cpp@b10850", "vllm@0.20.1", "uv@0.12.20"]),
        "wants.json".into(),
        config.clone(),
        None,
    )
    .once();
    let p = paused().block_on(async {
        let mut running = agent::spawn(node.clone(), agent);
        let p = next(&mut running).await;
        running.task.await.unwrap();
        p
    });
    let installed: Vec<_> = p.status.engines.iter().map(|s| s.want.as_str()).collect();
    assert_eq!(installed, ["uv@0.12.20"]);
    let not: Vec<_> = p.status.not_installed.iter().map(|n| n.want.as_str()).collect();
    assert_eq!(not, ["llama.cpp@b10850", "vllm@0.20.1"]);
    assert!(!node.lock().unwrap().engines_dir().join("llama.cpp").exists(), "never installed over theirs");
    let report: Vec<_> = p.status.report.iter().map(|r| (r.engine, r.versions.join(","), r.seen)).collect();
    assert_eq!(report, [(Engine::LlamaCpp, "b10850".to_string(), Seen::Configured)], "uv is no engine to report");
}

fn llmgw() -> Command {
    Command::cargo_bin("llmgw").unwrap()
}

#[test]
fn agent_once_in_simulation_writes_the_status_file_and_report_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let (wants, status) = (dir.path().join("wants.json"), dir.path().join("status.json"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "llama.cpp", "version": "b10850"}]}"#).unwrap();
    let out = llmgw()
        .args(["agent", "--once", "--wants"])
        .arg(&wants)
        .arg("--host")
        .arg(super::host_path("v100.json"))
        .arg("--status-file")
        .arg(&status)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&status).unwrap()).unwrap();
    assert_eq!((v["pass"].as_u64(), v["next_pass_in_secs"].as_u64()), (Some(1), Some(600)));
    assert_eq!(v["engines"][0]["state"], "ready");
    let out = llmgw()
        .args(["agent", "--report", "--host"])
        .arg(super::host_path("v100.json"))
        .arg("--status-file")
        .arg(&status)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "llama.cpp  b10850  (installed and seen to run)\n");
    let out = llmgw()
        .args(["agent", "--report", "--format", "json", "--host"])
        .arg(super::host_path("v100.json"))
        .arg("--status-file")
        .arg(&status)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"engines": [{"engine": "llama.cpp", "versions": ["b10850"], "seen": "installed"}]})
    );
}

#[test]
fn a_malformed_wants_or_configuration_file_at_start_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (wants, config) = (dir.path().join("wants.json"), dir.path().join("agent.json"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "llama.cpp", "version": "10850"}]}"#).unwrap();
    std::fs::write(&config, r#"{"engines": {"disabled": ["ollama"]}}"#).unwrap();
    let run = |extra: &[&std::path::Path]| {
        let mut cmd = llmgw();
        cmd.args(["agent", "--once", "--host"]).arg(super::host_path("v100.json")).arg("--wants").arg(&wants);
        if let Some(c) = extra.first() {
            cmd.arg("--config").arg(c);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&[&config]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "configuration file `{}`: engines.disabled[0]: unknown engine `ollama`",
            config.display()
        )),
        "{err}"
    );
    let (code, err) = run(&[]);
    assert_eq!(code, Some(2));
    assert!(err.contains(&format!("wants file `{}`: wants[0]", wants.display())), "{err}");
    assert!(err.contains("not a build tag"), "{err}");
}

/// A node that asks the loop to stop while it converges its first want,
/// as SIGTERM would in the middle of a pass.
struct StoppedMidPass {
    control: Arc<Mutex<Option<agent::Control>>>,
    converged: Arc<Mutex<Vec<String>>>,
    written: Arc<Mutex<u32>>,
}

impl agent::Node for StoppedMidPass {
    fn host_name(&self) -> String {
        "scripted".into()
    }

    fn converge(&mut self, wants: &[Want]) -> Vec<llmgw::converge::Status> {
        self.converged.lock().unwrap().extend(wants.iter().map(ToString::to_string));
        if let Some(c) = self.control.lock().unwrap().as_ref() {
            c.stop();
        }
        vec![]
    }

    fn probe(
        &mut self,
        _: &std::collections::BTreeMap<Engine, std::path::PathBuf>,
    ) -> std::collections::BTreeMap<Engine, String> {
        Default::default()
    }

    fn now(&mut self) -> u64 {
        0
    }

    fn write_atomic(&mut self, _: &std::path::Path, _: &[u8]) -> Result<(), String> {
        *self.written.lock().unwrap() += 1;
        Ok(())
    }
}

#[test]
fn a_stop_during_a_pass_ends_it_after_the_want_in_progress_and_writes_nothing_half_done() {
    let control = Arc::new(Mutex::new(None));
    let (converged, written) = (Arc::new(Mutex::new(vec![])), Arc::new(Mutex::new(0)));
    let node = Arc::new(Mutex::new(StoppedMidPass {
        control: control.clone(),
        converged: converged.clone(),
        written: written.clone(),
    }));
    let agent = Agent::new(
        wants(&["llama.cpp@b10850", "uv@0.12.20"]),
        "wants.json".into(),
        AgentConfig::default(),
        Some("status.json".into()),
    );
    paused().block_on(async {
        let mut running = agent::spawn(node, agent);
        // Handed over before the loop's task first runs (one thread).
        *control.lock().unwrap() = Some(running.control.clone());
        assert!(running.passes.recv().await.is_none(), "no record of a pass cut short; the loop ended");
        running.task.await.unwrap();
    });
    assert_eq!(*converged.lock().unwrap(), ["llama.cpp@b10850"], "uv was not begun");
    assert_eq!(*written.lock().unwrap(), 0, "no status file for a pass cut short");
}

/// Waits (up to a minute, polling) until the status file says pass `n`.
fn wait_for_pass(status: &std::path::Path, n: u64) -> AgentStatus {
    for _ in 0..600 {
        if let Some(s) = std::fs::read_to_string(status).ok().and_then(|t| serde_json::from_str::<AgentStatus>(&t).ok())
            && s.pass >= n
        {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no pass {n} in `{}` within a minute", status.display());
}

/// `llmgw agent` on a simulated V100, reading `wants` every `watch_secs`.
fn spawn_agent(wants: &Path, status: &Path, watch_secs: u64) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["agent", "--watch-secs", &watch_secs.to_string(), "--wants"])
        .arg(wants)
        .arg("--host")
        .arg(super::host_path("v100.json"))
        .arg("--status-file")
        .arg(status)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn the_agent_rereads_its_wants_on_sighup_and_exits_0_on_sigterm() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = tempfile::tempdir().unwrap();
    let (wants, status) = (dir.path().join("wants.json"), dir.path().join("status.json"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#).unwrap();
    let mut child = spawn_agent(&wants, &status, 3600);
    let pid = Pid::from_child(&child);
    assert_eq!(wait_for_pass(&status, 1).engines.len(), 1);
    std::fs::write(
        &wants,
        r#"{"wants": [{"engine": "uv", "version": "0.12.20"}, {"engine": "llama.cpp", "version": "b10850"}]}"#,
    )
    .unwrap();
    kill_process(pid, Signal::HUP).unwrap();
    let second = wait_for_pass(&status, 2);
    assert_eq!(second.engines.iter().map(|s| s.state).collect::<Vec<_>>(), [State::Ready, State::Ready]);
    kill_process(pid, Signal::TERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_change_of_the_wants_file_is_seen_without_a_signal() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = tempfile::tempdir().unwrap();
    let (wants, status) = (dir.path().join("wants.json"), dir.path().join("status.json"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#).unwrap();
    let mut child = spawn_agent(&wants, &status, 1);
    wait_for_pass(&status, 1);
    std::fs::write(&wants, r#"{"wants": [{"engine": "llama.cpp", "version": "b10850"}]}"#).unwrap();
    let second = wait_for_pass(&status, 2);
    assert_eq!(second.engines[0].want, "llama.cpp@b10850");
    kill_process(Pid::from_child(&child), Signal::TERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
