//! A second convergence finds the install and downloads nothing; a broken
//! install is found and replaced.

use llmgw_core::converge::{Outcome, State};
use llmgw_core::recipe::Want;
use llmgw_sim::{Simulation, default_wants};

#[test]
fn a_second_convergence_downloads_nothing() {
    let mut sim = Simulation::start(super::host("h100-ubuntu24.04-driver580.json")).unwrap();
    let first = sim.converge(&default_wants());
    assert!(first.engines.iter().all(|s| s.state == State::Ready), "{first:?}");
    let downloads = sim.server().downloads();
    assert!(downloads >= 4, "llama.cpp's two archives, uv's, and the Python wheels: {downloads}");
    let requests = sim.server().requests().len();

    let second = sim.converge(&default_wants());
    assert_eq!(sim.server().downloads(), downloads, "nothing downloaded again");
    assert_eq!(sim.server().requests().len(), requests, "not even release metadata or an index page is asked for");
    for s in &second.engines {
        assert_eq!(s.state, State::Ready);
        assert_eq!(s.attempts[0].outcome, Outcome::Verified, "{:?}", s.attempts);
    }
    assert_eq!(first.engines[0].binary, second.engines[0].binary);
}

#[test]
fn a_library_removed_after_install_is_found_and_the_build_reinstalled() {
    let mut sim = Simulation::start(super::host("v100.json")).unwrap();
    let want = [Want::parse("llama.cpp@b10850").unwrap()];
    sim.converge(&want);
    let lib = sim.engines_dir().join("llama.cpp/b10850-vulkan/llama-b10850/libggml-vulkan.so");
    std::fs::remove_file(&lib).unwrap();

    let again = sim.converge(&want).engines.remove(0);
    assert_eq!(again.state, State::Ready);
    assert_eq!(again.attempts[0].outcome, Outcome::Stale);
    assert!(again.attempts[0].reason.contains("libggml-vulkan.so is missing"), "{}", again.attempts[0].reason);
    assert!(lib.exists(), "reinstalled");
    assert_eq!(sim.server().downloads(), 2, "the vulkan archive, twice");
}

#[test]
fn a_failed_build_leaves_no_staging_and_no_install() {
    let mut sim = Simulation::start(super::host("nogpu-ubuntu20.04.json")).unwrap();
    let s = sim.converge(&[Want::parse("llama.cpp@b10850").unwrap()]).engines.remove(0);
    assert_eq!(s.state, State::Failed);
    let staging = sim.engines_dir().join(".staging");
    let left: Vec<_> = std::fs::read_dir(&staging).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "staging left behind: {left:?}");
    assert!(!sim.engines_dir().join("llama.cpp/b10850-cpu").exists());
}

#[test]
fn what_an_interrupted_install_left_is_cleaned_and_never_counted() {
    let mut sim = Simulation::start(super::host("nogpu-debian12.json")).unwrap();
    let want = [Want::parse("llama.cpp@b10850").unwrap()];
    sim.converge(&want);
    // A crash after the rename and before the record; and staging left behind.
    let record = sim.engines_dir().join("llama.cpp/b10850-cpu.json");
    std::fs::remove_file(&record).unwrap();
    std::fs::create_dir_all(sim.engines_dir().join(".staging/llama.cpp-b10850-cpu/tree")).unwrap();
    let s = sim.converge(&want).engines.remove(0);
    assert_eq!(s.state, State::Ready);
    assert_eq!(s.attempts[0].outcome, Outcome::Installed, "not verified: without its record it was no install");
    assert!(record.exists());
    assert!(!sim.engines_dir().join(".staging/llama.cpp-b10850-cpu").exists());
}
