//! Behaviour at the edges, each found by trying the tool as a new user
//! would: proxies, the order of wants, packages and missing releases,
//! machines without a package manager, GPUs only PTX serves, musl.

use llmgw_core::converge::{Outcome, State};
use llmgw_core::recipe::Want;
use llmgw_model::host::Host;
use llmgw_sim::{Simulation, simulate};

fn wants(list: &[&str]) -> Vec<Want> {
    list.iter().map(|w| Want::parse(w).unwrap()).collect()
}

/// A matrix host with `edit` applied to its JSON text.
fn edited(file: &str, edit: impl Fn(&mut serde_json::Value)) -> Host {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(super::host_path(file)).unwrap()).unwrap();
    edit(&mut v);
    Host::from_json(&v.to_string()).unwrap()
}

#[test]
fn a_proxy_in_the_environment_does_not_reach_the_loopback_server() {
    let out = assert_cmd::Command::cargo_bin("llmgw")
        .unwrap()
        .args(["simulate", "--want", "uv@0.12.20", "--host"])
        .arg(super::host_path("v100.json"))
        .env("http_proxy", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("ALL_PROXY", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn an_install_asked_for_by_variant_does_not_answer_a_want_without_one() {
    let mut sim = Simulation::start(super::host("a100-ubuntu24.04-driver580.json")).unwrap();
    let r = sim.converge(&wants(&["llama.cpp@b11459:vulkan", "llama.cpp@b11459"]));
    assert_eq!(r.engines[0].variant.as_deref(), Some("vulkan"));
    assert_eq!(r.engines[1].variant.as_deref(), Some("cuda-12.8"), "{:?}", r.engines[1].attempts);
    // And each is found again, as it was asked for.
    let again = sim.converge(&wants(&["llama.cpp@b11459:vulkan", "llama.cpp@b11459"]));
    assert!(again.engines.iter().all(|s| s.attempts[0].outcome == Outcome::Verified));
}

#[test]
fn a_missing_release_installs_no_package_and_hides_nothing() {
    let r = simulate(&super::host("v100.json"), &wants(&["llama.cpp@b99999", "llama.cpp@b10850"])).unwrap();
    assert_eq!(r.engines[0].state, State::Failed);
    assert!(r.engines[0].detail.contains("ggml-org/llama.cpp has no release `b99999`"), "{}", r.engines[0].detail);
    let vulkan = r.engines[1].attempts.iter().find(|a| a.variant == "vulkan").unwrap();
    assert!(vulkan.reason.contains("installed the OS package libvulkan1"), "{}", vulkan.reason);
}

#[test]
fn a_small_disk_is_named_after_the_release_is_found() {
    let host = edited("v100.json", |v| v["disk_free_gb"] = 1.into());
    let r = simulate(&host, &wants(&["llama.cpp@b99999", "llama.cpp@b10850"])).unwrap();
    assert!(r.engines[0].detail.contains("no release `b99999`"), "{}", r.engines[0].detail);
    assert!(
        r.engines[1].detail.contains("needs 2 GB free for the engines, and 1.0 GB is free"),
        "{}",
        r.engines[1].detail
    );
}

#[test]
fn packages_installed_for_a_build_that_then_fails_are_reported() {
    let host = edited("v100.json", |v| v["os"]["glibc"] = "2.31".into());
    let r = simulate(&host, &wants(&["llama.cpp@b10850"])).unwrap();
    assert_eq!(r.engines[0].state, State::Failed);
    assert!(
        r.engines[0].detail.contains("(the OS package libvulkan1 was installed for it)"),
        "{}",
        r.engines[0].detail
    );
}

#[test]
fn without_a_package_manager_the_failure_says_which_packages_would_have_helped() {
    let host = edited("v100.json", |v| v["os"]["package_family"] = "none".into());
    let r = simulate(&host, &wants(&["llama.cpp@b10850"])).unwrap();
    assert_eq!(r.engines[0].state, State::Failed);
    let d = &r.engines[0].detail;
    assert!(
        d.contains("not found: libvulkan.so.1") && d.contains("no package manager") && d.contains("libvulkan1 on deb"),
        "{d}"
    );
}

#[test]
fn a_gb10_class_gpu_on_x86_is_not_served_by_the_arch_specific_12_0_code() {
    let host = edited("rtx3090-ubuntu22.04-driver550.json", |v| {
        v["nvidia"]["gpus"][0]["name"] = "NVIDIA RTX PRO 12.1 (hypothetical)".into();
        v["nvidia"]["gpus"][0]["compute_capability"] = "12.1".into();
    });
    let r = simulate(&host, &wants(&["llama.cpp@b11459"])).unwrap();
    assert_eq!(r.engines[0].variant.as_deref(), Some("vulkan"));
    let cuda = r.engines[0].attempts.iter().find(|a| a.variant == "cuda-12.8").unwrap();
    assert!(cuda.reason.contains("compute capability 12.1 is carried as PTX only"), "{}", cuda.reason);
}

#[test]
fn musl_systems_get_no_glibc_build() {
    let host = edited("nogpu-debian12.json", |v| {
        v["os"] = serde_json::json!({"id": "alpine", "version": "3.20", "package_family": "apk", "libc": "musl", "glibc": null, "glibcxx": "3.4.33"});
    });
    let r = simulate(&host, &wants(&["llama.cpp@b10850", "uv@0.12.20"])).unwrap();
    assert_eq!(r.engines[0].state, State::Unsupported, "{}", r.engines[0].detail);
    assert!(r.engines[0].detail.contains("need glibc, and this is a musl system"), "{}", r.engines[0].detail);
    // uv is only for the Python engines, which do not run here: not a fault.
    assert_eq!(r.engines[1].state, State::NotHere, "{}", r.engines[1].detail);
}

#[test]
fn text_output_says_why_a_want_is_unsupported() {
    let out = assert_cmd::Command::cargo_bin("llmgw")
        .unwrap()
        .args(["simulate", "--want", "uv@0.12.20:aarch64", "--host"])
        .arg(super::host_path("v100.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("uv 0.12.20 has no aarch64 build for this node; it has x86_64"), "{text}");
}

#[test]
fn a_full_disk_under_standard_output_is_an_error_not_a_panic() {
    let Ok(full) = std::fs::File::create("/dev/full") else { return };
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["plan", "--host"])
        .arg(super::host_path("v100.json"))
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write the output"));
}
