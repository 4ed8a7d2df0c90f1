//! The Python is the engines' (issue 16, point 6): uv installs a CPython
//! under the engines directory from the Python mirror it is given, the
//! environment runs on it and on no other, its install record lists the
//! interpreter's files, and the GPU check compiles and runs a Triton
//! kernel, which on a node whose own Python lacks `Python.h` fails in
//! Triton's words when the environment runs on that Python.

use std::path::{Path, PathBuf};

use llmgw_core::converge::{Outcome, State};
use llmgw_core::recipe::Want;
use llmgw_core::system::{Cmd, System};
use llmgw_sim::Simulation;

/// Ubuntu 24.04's `/usr/bin/python3.12` without `python3.12-dev`.
const HOST: &str = "h100-ubuntu24.04-driver580.json";

/// The managed CPython uv 0.13.9 installs for 3.12 on x86-64 (docs/facts.md §5.4).
const CPYTHON: &str = "cpython-3.12.16-linux-x86_64-gnu";

/// Its archive, as uv asks the mirror for it.
const ARCHIVE: &str = "20261110/cpython-3.12.16%2B20261110-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz";

fn vllm() -> Vec<Want> {
    vec![Want::parse("vllm@0.20.1").unwrap()]
}

fn record(sim: &Simulation, file: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(sim.engines_dir().join(file)).unwrap()).unwrap()
}

/// How many times the mirror was asked for the x86-64 archive.
fn archive_requests(sim: &Simulation) -> usize {
    let path = format!("/astral-sh/python-build-standalone/releases/download/{ARCHIVE}");
    sim.server().requests().iter().filter(|(m, p)| m == "GET" && *p == path).count()
}

#[test]
fn vllms_environment_runs_on_the_managed_python_under_the_engines_directory() {
    let host = super::host(HOST);
    assert!(host.os.python.as_ref().is_some_and(|p| !p.headers), "the node's own Python lacks its headers");
    let mut sim = Simulation::start(host).unwrap();
    let s = sim.converge(&vllm()).engines.remove(0);
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    let proved = &s.attempts.iter().find(|a| a.outcome == Outcome::Installed).unwrap().reason;
    assert!(proved.contains("a Triton kernel compiles and runs on cuda:0"), "{proved}");

    // The interpreter lies under the engines directory, and the record lists its files.
    let python = sim.engines_dir().join("python").join(CPYTHON);
    assert!(python.join("bin/python3.12").is_file());
    assert!(python.join("include/python3.12/Python.h").is_file());
    let rec = record(&sim, "vllm/0.20.1-cu13.json");
    assert_eq!(rec["python"]["dir"], format!("python/{CPYTHON}"));
    let files: Vec<&str> =
        rec["python"]["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert!(files.contains(&"bin/python3.12") && files.contains(&"include/python3.12/Python.h"), "{files:?}");
    // The environment names it as its base interpreter.
    let cfg = std::fs::read_to_string(sim.engines_dir().join("vllm/0.20.1-cu13/pyvenv.cfg")).unwrap();
    assert!(cfg.contains(&format!("home = {}", python.join("bin").display())), "{cfg}");

    // uv was told the mirror, and to take a managed Python only.
    let mirror = sim.server().python_mirror_url();
    let commands = sim.system().commands().to_vec();
    assert!(
        commands.iter().any(|c| c.contains("python install") && c.contains(&format!("--mirror {mirror}"))),
        "{commands:#?}"
    );
    assert!(commands.iter().any(|c| c.contains(" venv ") && c.contains("--managed-python")), "{commands:#?}");
    assert_eq!(archive_requests(&sim), 1, "the fake server served the python-build-standalone archive");
}

#[test]
fn sglang_shares_the_managed_python_and_a_second_pass_fetches_nothing() {
    let mut sim = Simulation::start(super::host(HOST)).unwrap();
    let wants = vec![Want::parse("vllm@0.20.1").unwrap(), Want::parse("sglang@0.5.4").unwrap()];
    let report = sim.converge(&wants);
    assert!(report.engines.iter().all(|s| s.state == State::Ready), "{:#?}", report.engines);
    assert_eq!(archive_requests(&sim), 1, "one CPython for both engines");
    assert_eq!(record(&sim, "sglang/0.5.4-cu12.json")["python"]["dir"], format!("python/{CPYTHON}"));
    let downloads = sim.server().downloads();
    let again = sim.converge(&wants);
    assert!(again.engines.iter().all(|s| s.attempts[0].outcome == Outcome::Verified), "{:#?}", again.engines);
    assert_eq!(sim.server().downloads(), downloads);
}

#[test]
fn a_changed_interpreter_fails_verification_and_is_installed_again() {
    let mut sim = Simulation::start(super::host(HOST)).unwrap();
    assert_eq!(sim.converge(&vllm()).engines[0].state, State::Ready);
    let interpreter = sim.engines_dir().join("python").join(CPYTHON).join("bin/python3.12");
    let mut bytes = std::fs::read(&interpreter).unwrap();
    bytes.extend_from_slice(b"\n# changed\n");
    std::fs::write(&interpreter, bytes).unwrap();

    let s = sim.converge(&vllm()).engines.remove(0);
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    let broken = s.attempts.iter().find(|a| a.outcome == Outcome::Stale).unwrap();
    // `bin/python3` links to `bin/python3.12`: the first of the two listed says it.
    assert!(broken.reason.contains(&format!("python/{CPYTHON}/bin/python3")), "{:#?}", s.attempts);
    assert!(broken.reason.contains("no longer matches its sha256"), "{:#?}", s.attempts);
    assert_eq!(archive_requests(&sim), 2, "the interpreter was fetched again");
    let rec = record(&sim, "vllm/0.20.1-cu13.json");
    let listed = rec["python"]["files"].as_array().unwrap().iter().find(|f| f["path"] == "bin/python3.12").cloned();
    let (_, sha) = llmgw_core::archive::sha256_reader(std::fs::File::open(&interpreter).unwrap()).unwrap();
    assert_eq!(listed.unwrap()["sha256"], sha, "the record verifies the interpreter as it is now");
}

/// Runs the GPU check of `env` (an environment's root) on the simulated machine.
fn gpu_check(sim: &mut Simulation, env: &Path) -> llmgw_core::system::Output {
    let script = env.join("check.py");
    let modules = ["vllm".to_string()];
    std::fs::write(&script, llmgw_core::converge::torch_check_script(&modules)).unwrap();
    sim.system_mut().run(&Cmd::new(env.join("bin/python"), [script.display().to_string()])).unwrap()
}

#[test]
fn on_the_nodes_headerless_python_triton_fails_in_its_own_words() {
    let mut sim = Simulation::start(super::host(HOST)).unwrap();
    assert_eq!(sim.converge(&vllm()).engines[0].state, State::Ready);
    let installed = sim.engines_dir().join("vllm/0.20.1-cu13");
    let ok = gpu_check(&mut sim, &installed);
    assert!(ok.success(), "{}", ok.stderr);

    // The old way: `uv venv` without --managed-python takes the node's /usr/bin/python3.12.
    let uv = PathBuf::from(sim.engines_dir()).join("uv/0.13.9-x86_64/uv-x86_64-unknown-linux-gnu/uv");
    let old = sim.work_dir().join("old-env");
    let venv = Cmd::new(&uv, ["venv", "--relocatable", "--python", "3.12"]).arg_path(&old);
    let out = sim.system_mut().run(&venv).unwrap();
    assert!(out.success(), "{}", out.stderr);
    assert!(out.stderr.contains("Using CPython 3.12.3 interpreter at: /usr/bin/python3.12"), "{}", out.stderr);
    // The same packages, on the node's Python.
    let site = "lib/python3.12/site-packages";
    let copied = std::process::Command::new("cp")
        .args(["-a", &format!("{}/.", installed.join(site).display()), &old.join(site).display().to_string()])
        .status()
        .unwrap();
    assert!(copied.success());
    let failed = gpu_check(&mut sim, &old);
    assert_eq!(failed.code(), Some(1));
    assert!(failed.stderr.contains("fatal error: Python.h: No such file or directory"), "{}", failed.stderr);
    assert!(failed.stderr.contains("compilation terminated."), "{}", failed.stderr);
    assert!(failed.stdout.contains("cuda:0"), "torch itself computed: {}", failed.stdout);

    // With --managed-python and downloads off, uv refuses the node's Python.
    let empty = sim.work_dir().join("no-pythons");
    let strict = Cmd::new(&uv, ["venv", "--managed-python", "--no-python-downloads", "--python", "3.12"])
        .arg_path(&sim.work_dir().join("strict-env"))
        .env("UV_PYTHON_INSTALL_DIR", &empty.display().to_string());
    let refused = sim.system_mut().run(&strict).unwrap();
    assert_eq!(refused.code(), Some(2));
    assert!(
        refused.stderr.contains("No interpreter found for Python 3.12 in managed installations"),
        "{}",
        refused.stderr
    );
}

#[test]
fn an_unreachable_mirror_fails_the_build_in_uvs_words() {
    let mut sim = Simulation::start(super::host(HOST)).unwrap();
    sim.set_python_mirror("http://127.0.0.1:9/nowhere");
    let s = sim.converge(&vllm()).engines.remove(0);
    assert_eq!(s.state, State::Failed);
    assert!(s.detail.contains("uv python install"), "{}", s.detail);
    assert!(s.detail.contains("Failed to install cpython-3.12.16-linux-x86_64-gnu"), "{}", s.detail);
    assert!(!sim.engines_dir().join("vllm/0.20.1-cu13").exists());
}
