//! The GPU check's bundle, rehearsed where no GPU is (issue 31): the
//! committed fixture `tests/fixtures/gpu-bundle/` (the bundle
//! `ci/gpu-bundle.sh` makes, without its large files) goes through
//! `ci/gpu-check.sh --rehearse` with this build's llmgw, and its stand-ins
//! through a real provision against the fake server, so that neither the
//! bundle's format nor the script's logic can rot between lent machines.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

#[path = "../support/gpu_bundle.rs"]
mod support;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture() -> PathBuf {
    repo().join("tests/fixtures/gpu-bundle")
}

/// `ci/gpu-check.sh --from BUNDLE --rehearse` with this build's llmgw: its
/// exit code and what it printed.
fn rehearse(bundle: &Path) -> (Option<i32>, String) {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new("bash")
        .arg(repo().join("ci/gpu-check.sh"))
        .arg("--from")
        .arg(bundle)
        .arg("--rehearse")
        .args(["--llmgw", env!("CARGO_BIN_EXE_llmgw")])
        .arg("--out")
        .arg(out.path())
        .env_remove("OUT")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    for f in ["gpu-check.log", "gpu-check.tar.gz"] {
        assert!(out.path().join(f).is_file(), "no {f} written: {said}");
    }
    (run.status.code(), said)
}

fn line<'a>(said: &'a str, step: &str) -> &'a str {
    let prefix = format!("gpu-check: {step}: ");
    said.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no line for {step}: {said}"))
}

#[test]
fn the_rehearsal_passes_on_the_committed_bundle_and_says_each_step() {
    let (code, said) = rehearse(&fixture());
    assert_eq!(code, Some(0), "{said}");
    for step in ["bundle", "llmgw", "programs", "server", "capture"] {
        assert!(line(&said, step).contains(": passed: "), "{said}");
    }
    assert!(line(&said, "bundle").contains("each with the size and sha256 MANIFEST.txt gives"), "{said}");
    assert!(line(&said, "programs").contains("sass=sm_80,sm_86,sm_89,sm_90,sm_100,sm_120 ptx=sm_120"), "{said}");
    assert!(line(&said, "server").contains("HTTP/1.1 200 OK"), "{said}");
    // A fixture carries no bin/gpu-tests and no llama/: said, not failed.
    assert!(line(&said, "provision").contains("skipped: this bundle has no bin/gpu-tests"), "{said}");
    assert!(line(&said, "llama").contains("skipped: this bundle has no llama/"), "{said}");
    for step in ["driver", "discover", "mig", "torch"] {
        assert!(line(&said, step).ends_with("skipped: a rehearsal (it needs a GPU)"), "{said}");
    }
}

/// A copy of the fixture to damage.
fn copy_of_fixture(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let to = dir.join("bundle");
    let status = Command::new("cp").arg("-a").arg(fixture()).arg(&to).status().unwrap();
    assert!(status.success());
    to
}

/// What is done to a copy of the bundle.
type Damage = fn(&Path);

#[test]
fn a_damaged_bundle_fails_its_first_step_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Damage, &str); 3] = [
        (
            "a changed byte",
            |b| {
                let p = b.join("programs/standin-new");
                let mut bytes = std::fs::read(&p).unwrap();
                let last = bytes.len() - 1;
                bytes[last] ^= 0xff;
                std::fs::write(&p, bytes).unwrap();
            },
            "bundle: failed: programs/standin-new: sha256 ",
        ),
        (
            "a file gone",
            |b| std::fs::remove_file(b.join("hosts/rehearsal.json")).unwrap(),
            "bundle: failed: hosts/rehearsal.json: listed in MANIFEST.txt, not in the bundle",
        ),
        (
            "a file more",
            |b| std::fs::write(b.join("programs/extra"), "x").unwrap(),
            "bundle: failed: not in MANIFEST.txt: programs/extra",
        ),
    ];
    for (i, (what, damage, says)) in cases.iter().enumerate() {
        let bundle = copy_of_fixture(&dir.path().join(i.to_string()));
        damage(&bundle);
        let (code, said) = rehearse(&bundle);
        assert_eq!(code, Some(1), "{what}: {said}");
        assert!(said.contains(&format!("gpu-check: {says}")), "{what}: {said}");
    }
}

#[test]
fn the_fixture_was_made_from_the_stand_ins_committed_sources() {
    let manifest = std::fs::read_to_string(fixture().join("MANIFEST.txt")).unwrap();
    for source in ["ci/gpu-bundle/standin.c", "ci/gpu-bundle/probe.cu"] {
        let sha = hex::encode(Sha256::digest(std::fs::read(repo().join(source)).unwrap()));
        assert!(
            manifest.contains(&format!("{source} (sha256 {sha})")),
            "{source} changed since tests/fixtures/gpu-bundle was made: run ci/gpu-bundle.sh --fixture tests/fixtures/gpu-bundle"
        );
    }
}

#[test]
fn provision_installs_the_fixtures_stand_ins_up_to_the_listing_where_no_driver_is() {
    let dir = tempfile::tempdir().unwrap();
    let (host_file, host) = support::host_without_packages(&fixture().join("hosts/rehearsal.json"), dir.path());
    let programs = support::Programs::read(&fixture());
    let (devices, listing) = programs.devices_here();
    let (order, left_out) = support::cuda_order(&host);
    // An H200 on driver 590: more than one CUDA build for the old stand-in
    // to be refused in before the next is installed.
    assert!(order.len() >= 2, "CUDA builds tried: {order:?}; left out: {left_out:?}");
    let server = llmgw_sim::publisher::FakeServer::start(&support::catalog(&programs, &order[0])).unwrap();
    let engines = dir.path().join("engines");
    let (s, said) = support::provision(
        Path::new(env!("CARGO_BIN_EXE_llmgw")),
        &host_file,
        &engines,
        &server.base_url(),
        "llama.cpp@b10850",
    );
    if devices.is_empty() {
        assert!(listing.contains(support::NO_DRIVER), "{listing}");
        support::assert_refused_without_a_driver(&s, &order);
    } else {
        // A machine with an NVIDIA driver runs the check itself.
        support::assert_old_refused_next_installed(&s, &order);
    }
    assert!(said.contains("llama.cpp@b10850"), "{said}");
}
