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
use llmgw_core::agent::{self, Agent, AgentConfig, AgentStatus, PassRecord, Running, Seen};
use llmgw_core::converge::{Outcome, State};
use llmgw_core::recipe::{Engine, Want};
use llmgw_sim::Simulation;
use llmgw_sim::truth::MachineFaults;
use llmgw_sim::truth::embedded_catalog;
use llmgw_sim::truth::{Catalog, Fault};
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
        let wants: Vec<_> = p.status.engines.iter().map(|s| (s.want.to_string(), s.state)).collect();
        assert_eq!(wants, [("llama.cpp@b10850".to_string(), State::Failed), ("uv@0.12.20".to_string(), State::Ready)]);
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
    assert_eq!((written.pass, written.next_pass_in_secs), (4, Some(600)));
    assert_eq!(written.at, llmgw_sim::machine::SIM_EPOCH + 1800, "on the simulated clock, which follows the passes");
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
    let installed: Vec<_> = p.status.engines.iter().map(|s| s.want.to_string()).collect();
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("host: v100-ubuntu22.04-driver535\n\nllama.cpp@b10850: ready vulkan\n"), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&status).unwrap()).unwrap();
    assert_eq!(v["pass"].as_u64(), Some(1));
    assert!(v["next_pass_in_secs"].is_null(), "no pass follows --once: {}", v["next_pass_in_secs"]);
    assert!(v["wants_error"].is_null());
    assert_eq!(v["engines"][0]["state"], "ready");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&status).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "a control plane or an operator reads it");
    let out = llmgw().args(["agent", "--report"]).arg("--status-file").arg(&status).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "llama.cpp  b10850  (installed and seen to run)\n");
    let out =
        llmgw().args(["agent", "--report", "--format", "json"]).arg("--status-file").arg(&status).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let keys: Vec<_> = ["\"engine\"", "\"versions\"", "\"seen\""].iter().map(|k| text.find(k).unwrap()).collect();
    assert!(keys.is_sorted(), "the keys in the status file's order: {text}");
    let written = std::fs::read_to_string(&status).unwrap();
    let report = &written[written.find("\"report\"").unwrap()..];
    let keys: Vec<_> = ["\"engine\"", "\"versions\"", "\"seen\""].iter().map(|k| report.find(k).unwrap()).collect();
    assert!(keys.is_sorted(), "{report}");
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

    fn converge(&mut self, wants: &[Want]) -> Vec<llmgw_core::converge::Status> {
        self.converged.lock().unwrap().extend(wants.iter().map(ToString::to_string));
        if let Some(c) = self.control.lock().unwrap().as_ref() {
            c.stop();
        }
        vec![]
    }

    fn probe(&mut self, _: &std::collections::BTreeMap<Engine, std::path::PathBuf>) -> agent::Probed {
        Default::default()
    }

    fn now(&mut self) -> u64 {
        0
    }

    fn write_atomic(&mut self, _: &std::path::Path, _: &[u8]) -> Result<(), llmgw_core::system::SysError> {
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

/// A running `llmgw agent`, killed when the test ends however it ends.
type AgentProcess = super::Running;

/// `llmgw agent` on a simulated V100, reading `wants` every `watch_secs`.
fn spawn_agent(wants: &Path, status: &Path, watch_secs: u64) -> AgentProcess {
    spawn_logging(wants, status, watch_secs, &[], None)
}

/// `llmgw -v agent` on a simulated V100 with `extra` arguments, its log in `log`.
fn spawn_logging(wants: &Path, status: &Path, watch_secs: u64, extra: &[&str], log: Option<&Path>) -> AgentProcess {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["-v", "agent", "--watch-secs", &watch_secs.to_string(), "--wants"])
        .arg(wants)
        .arg("--host")
        .arg(super::host_path("v100.json"))
        .arg("--status-file")
        .arg(status)
        .args(extra)
        .stderr(log.map_or_else(std::process::Stdio::null, |l| std::fs::File::create(l).unwrap().into()))
        .spawn()
        .unwrap();
    super::Running(child)
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

#[test]
fn every_sighup_makes_a_pass_and_is_logged_once() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = tempfile::tempdir().unwrap();
    let (wants, status, log) = (dir.path().join("wants.json"), dir.path().join("status.json"), dir.path().join("log"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#).unwrap();
    let mut child = spawn_logging(&wants, &status, 3600, &[], Some(&log));
    let pid = Pid::from_child(&child);
    wait_for_pass(&status, 1);
    for n in 2..=5 {
        kill_process(pid, Signal::HUP).unwrap();
        assert_eq!(wait_for_pass(&status, n).pass, n);
    }
    kill_process(pid, Signal::TERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.matches("SIGHUP: reading the wants file again").count(), 4, "{log}");
    assert_eq!(log.matches("SIGTERM: stopping between passes").count(), 1, "{log}");
}

#[test]
fn a_stop_by_sigterm_exits_0_even_after_a_failed_pass() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = tempfile::tempdir().unwrap();
    let (wants, status) = (dir.path().join("wants.json"), dir.path().join("status.json"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "llama.cpp", "version": "b10850"}]}"#).unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("mocks/scenarios/github-500-always.json");
    let scenario = scenario.to_str().unwrap();
    let mut child = spawn_logging(&wants, &status, 3600, &["--scenario", scenario], None);
    assert_eq!(wait_for_pass(&status, 1).engines[0].state, State::Failed);
    kill_process(Pid::from_child(&child), Signal::TERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0), "asked to stop: not a failure for systemd to restart");
}

#[test]
fn a_wants_file_that_goes_away_is_logged_once_and_shown_in_the_status_file() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = tempfile::tempdir().unwrap();
    let (wants, status, log) = (dir.path().join("wants.json"), dir.path().join("status.json"), dir.path().join("log"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#).unwrap();
    let mut child = spawn_logging(&wants, &status, 1, &[], Some(&log));
    let pid = Pid::from_child(&child);
    assert_eq!(wait_for_pass(&status, 1).wants_error, None);
    std::fs::remove_file(&wants).unwrap();
    // Written again without a pass, once the watcher sees it.
    let shown = (0..600)
        .find_map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::read_to_string(&status)
                .ok()
                .and_then(|t| serde_json::from_str::<AgentStatus>(&t).ok())
                .and_then(|s| s.wants_error)
        })
        .expect("the status file shows the wants file's problem");
    assert!(shown.starts_with(&format!("cannot read the wants file `{}`", wants.display())), "{shown}");
    // A SIGHUP passes on the last good wants; the same problem is not logged again.
    kill_process(pid, Signal::HUP).unwrap();
    let second = wait_for_pass(&status, 2);
    assert_eq!((second.engines.len(), second.wants_error.is_some()), (1, true));
    // Good again: the next pass says so.
    std::fs::write(&wants, r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#).unwrap();
    assert_eq!(wait_for_pass(&status, 3).wants_error, None);
    kill_process(pid, Signal::TERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.matches("cannot read the wants file").count(), 1, "{log}");
}

/// `llmgw agent --once` on the simulated machine without a GPU, in `dir`.
fn once_in(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = llmgw()
        .current_dir(dir)
        .args(["agent", "--once", "--host"])
        .arg(super::host_path("nogpu-debian12.json"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn uv_wants(dir: &Path) {
    std::fs::write(dir.join("wants.json"), r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#).unwrap();
}

#[test]
fn a_status_file_that_would_overwrite_the_wants_or_the_configuration_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    uv_wants(dir.path());
    std::fs::write(dir.path().join("agent.json"), "{}").unwrap();
    let (code, _, err) = once_in(dir.path(), &["--wants", "wants.json", "--status-file", "wants.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--status-file `wants.json` is the wants file"), "{err}");
    let (code, _, err) =
        once_in(dir.path(), &["--wants", "wants.json", "--config", "agent.json", "--status-file", "./agent.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--status-file `./agent.json` is the configuration file"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.path().join("agent.json")).unwrap(), "{}", "untouched");
}

#[test]
fn a_status_file_that_cannot_be_written_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    uv_wants(dir.path());
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    for (given, said) in [
        ("nodir/s.json", "which is not an existing directory"),
        ("adir", "is a directory"),
        ("/proc/s.json", "cannot be written"),
    ] {
        let (code, _, err) = once_in(dir.path(), &["--wants", "wants.json", "--status-file", given]);
        assert_eq!(code, Some(2), "{given}: {err}");
        assert!(err.contains(&format!("--status-file `{given}` ")) && err.contains(said), "{err}");
        assert!(!err.replace(&dir.path().display().to_string(), "DIR").contains(".tmp"), "{err}");
    }
}

#[test]
fn an_engines_dir_that_is_a_file_is_refused_and_a_relative_one_works() {
    let dir = tempfile::tempdir().unwrap();
    uv_wants(dir.path());
    std::fs::write(dir.path().join("efile"), "").unwrap();
    let (code, _, err) = once_in(dir.path(), &["--wants", "wants.json", "--engines-dir", "efile"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--engines-dir `efile` is not a directory"), "{err}");
    let (code, out, err) =
        once_in(dir.path(), &["--wants", "wants.json", "--engines-dir", "./eng4", "--status-file", "s.json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("uv@0.12.20: ready"), "{out}");
    assert!(dir.path().join("eng4/uv/0.12.20-x86_64").is_dir());
    assert!(dir.path().join("s.json").is_file());
}

#[test]
fn agent_once_prints_json_as_simulate_does() {
    let dir = tempfile::tempdir().unwrap();
    uv_wants(dir.path());
    let (code, out, err) = once_in(dir.path(), &["--wants", "wants.json", "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["host"].as_str(), v["engines"][0]["state"].as_str()), (Some("nogpu-debian12-amd64"), Some("ready")));
}

#[test]
fn a_crash_scenario_is_recovered_from_as_simulate_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wants.json"), r#"{"wants": [{"engine": "llama.cpp", "version": "b10850"}]}"#)
        .unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("mocks/scenarios/machine-crash-before-rename.json");
    let out = llmgw()
        .current_dir(dir.path())
        .args(["agent", "--once", "--wants", "wants.json", "--status-file", "s.json", "--host"])
        .arg(super::host_path("v100.json"))
        .arg("--scenario")
        .arg(&scenario)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("the simulated installer crashed before its change 9"), "{err}");
    let s: AgentStatus = serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(s.engines[0].state, State::Ready);
}

#[test]
fn a_crash_scenario_in_the_running_loop_is_recovered_from() {
    let mut catalog = embedded_catalog().clone();
    catalog.machine.crash_before_change = Some(9);
    let node = v100(&catalog);
    paused().block_on(async {
        let mut running = agent::spawn(node.clone(), agent_for(&["llama.cpp@b10850"]));
        assert_eq!(began_and_state(&next(&mut running).await), (0, State::Ready));
        assert_eq!(began_and_state(&next(&mut running).await), (600, State::Ready));
        stop(running).await;
    });
}

#[test]
fn format_without_once_or_report_is_refused() {
    let out = llmgw().args(["agent", "--wants", "w.json", "--format", "json"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--format is for --once or --report"), "{err}");
}

#[test]
fn report_refuses_the_arguments_it_would_ignore() {
    for extra in [&["--host", "h.json"][..], &["--wants", "w.json"], &["--watch-secs", "3"]] {
        let out = llmgw().args(["agent", "--report"]).args(extra).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("cannot be used with"), "{err}");
    }
}

#[test]
fn a_status_file_that_cannot_be_written_later_is_said_without_a_temporary_name() {
    let dir = tempfile::tempdir().unwrap();
    let node = Arc::new(Mutex::new(Simulation::start(super::host("v100.json")).unwrap()));
    let agent = Agent::new(
        wants(&["uv@0.12.20"]),
        "wants.json".into(),
        AgentConfig::default(),
        Some(dir.path().join("gone/status.json")),
    )
    .once();
    let p = paused().block_on(async {
        let mut running = agent::spawn(node.clone(), agent);
        let p = next(&mut running).await;
        running.task.await.unwrap();
        p
    });
    let e = p.status_error.expect("not written");
    let e = e.replace(&dir.path().display().to_string(), "DIR");
    assert_eq!(
        e,
        "cannot write the status file `DIR/gone/status.json`: write `DIR/gone/status.json`: \
         is in `DIR/gone`, which is not an existing directory"
    );
}

#[test]
fn a_wants_file_that_cannot_be_read_is_in_the_status_until_a_good_one_comes() {
    let node = v100(embedded_catalog());
    paused().block_on(async {
        let mut running = agent::spawn(node.clone(), agent_for(&["uv@0.12.20"]));
        assert_eq!(next(&mut running).await.status.wants_error, None);
        running.control.reread(Err("cannot read the wants file `wants.json`: gone".into()));
        let p = next(&mut running).await;
        assert_eq!(p.status.wants_error.as_deref(), Some("cannot read the wants file `wants.json`: gone"));
        assert_eq!(p.status.engines.len(), 1, "the last good wants");
        running.control.wants_file(r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#.into());
        assert_eq!(next(&mut running).await.status.wants_error, None);
        stop(running).await;
    });
}

#[test]
fn a_wants_file_turned_into_a_fifo_or_a_device_never_blocks_the_agent() {
    use rustix::process::{Pid, Signal, kill_process};
    let dir = tempfile::tempdir().unwrap();
    let (wants, status) = (dir.path().join("wants.json"), dir.path().join("status.json"));
    std::fs::write(&wants, r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]}"#).unwrap();
    let mut child = spawn_logging(&wants, &status, 1, &[], None);
    let pid = Pid::from_child(&child);
    assert_eq!(wait_for_pass(&status, 1).wants_error, None);
    let shown = |says: &str| {
        (0..600).find_map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::read_to_string(&status)
                .ok()
                .and_then(|t| serde_json::from_str::<AgentStatus>(&t).ok())
                .and_then(|s| s.wants_error)
                .filter(|e| e.contains(says))
        })
    };
    std::fs::remove_file(&wants).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&wants).status().unwrap().success());
    let e = shown("FIFO").expect("a FIFO is said in wants_error, not waited on");
    assert!(e.ends_with("it is a FIFO, not a regular file"), "{e}");
    std::fs::remove_file(&wants).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &wants).unwrap();
    let e = shown("device").expect("a device is said in wants_error, not read for ever");
    assert!(e.ends_with("it is a device, not a regular file"), "{e}");
    kill_process(pid, Signal::TERM).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0), "it stops when told");
}
