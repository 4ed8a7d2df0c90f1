//! `ENGINE@latest`: resolved against the publisher on every convergence,
//! a release without this node's builds passed over, and an upgrade that
//! never leaves the engine without a ready install.

use std::path::Path;

use llmgw_core::converge::State;
use llmgw_core::recipe::Want;
use llmgw_sim::Simulation;
use llmgw_sim::truth::scenario::Scenario;
use llmgw_sim::truth::{Catalog, embedded_catalog};
use sha2::{Digest, Sha256};

fn latest() -> Vec<Want> {
    vec![Want::parse("llama.cpp@latest").unwrap()]
}

/// The embedded truth with the releases `tags` published after b11459,
/// each like it with every asset.
fn with_newer(tags: &[&str]) -> Catalog {
    let b11459 = embedded_catalog().releases.iter().find(|r| r.tag == "b11459").unwrap();
    let releases: Vec<serde_json::Value> = tags
        .iter()
        .enumerate()
        .map(|(i, tag)| {
            let assets: Vec<String> = b11459.assets.iter().map(|a| a.name.replace("b11459", tag)).collect();
            serde_json::json!({
                "release": format!("ggml-org/llama.cpp@{tag}"),
                "like": "b11459",
                "published_at": format!("2026-11-0{}T10:00:00Z", i + 1),
                "assets": assets,
            })
        })
        .collect();
    let text = serde_json::json!({"description": "newer releases", "releases": releases}).to_string();
    Scenario::from_json(&text).unwrap().apply(embedded_catalog()).unwrap()
}

#[test]
fn latest_is_the_newest_release_with_a_build_for_this_node_and_says_what_it_passed_over() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("mocks/scenarios/llama-latest-partial-release.json"),
    )
    .unwrap();
    let catalog = Scenario::from_json(&text).unwrap().apply(embedded_catalog()).unwrap();

    let mut gpu = Simulation::with_catalog(super::host("h100-ubuntu24.04-driver580.json"), &catalog).unwrap();
    let s = gpu.converge(&latest()).engines.remove(0);
    assert_eq!(
        (s.want.to_string().as_str(), s.state, s.version.as_str()),
        ("llama.cpp@latest", State::Ready, "b11459")
    );
    let note = s.note.unwrap_or_default();
    assert!(note.contains("b11461: no build of llama.cpp b11461 runs on this node"), "{note}");
    assert!(note.contains("has no Linux CUDA build for x64"), "{note}");

    let mut cpu = Simulation::with_catalog(super::host("nogpu-debian12.json"), &catalog).unwrap();
    let s = cpu.converge(&latest()).engines.remove(0);
    assert_eq!((s.state, s.version.as_str(), s.variant.as_deref()), (State::Ready, "b11461", Some("cpu")));
}

#[test]
fn latest_of_uv_and_of_a_python_engine_name_the_version_they_resolved_to() {
    let wants = [Want::parse("uv@latest").unwrap(), Want::parse("vllm@latest").unwrap()];
    let mut sim = Simulation::start(super::host("h100-ubuntu24.04-driver580.json")).unwrap();
    let r = sim.converge(&wants);
    for s in &r.engines {
        assert_eq!(s.state, State::Ready, "{}: {}", s.want, s.detail);
        assert!(s.want.version == "latest" && !s.version.is_empty() && s.version != "latest", "{s:?}");
    }
    // The newest on the index that this host can install, by PEP 440.
    let newest_vllm = embedded_catalog()
        .indexes
        .iter()
        .flat_map(|i| &i.dists)
        .filter(|d| d.name == "vllm")
        .map(|d| d.version.clone())
        .max_by(|a, b| llmgw_core::recipe::compare_versions(a, b))
        .unwrap();
    assert_eq!(r.engines[1].version, newest_vllm);
}

#[test]
fn an_offline_or_planned_latest_is_refused_in_words() {
    let e = Want::parse("llama.cpp@latest")
        .unwrap()
        .offline("http://mirror.internal/llmgw", [("a.tar.gz".to_string(), "0".repeat(64))].into())
        .unwrap_err();
    assert_eq!(e, llmgw_core::recipe::WantError::LatestOffline);
    assert!(e.to_string().contains("an offline want names its version"), "{e}");
    let Err(llmgw_core::recipe::Refusal::Unsupported { reason, .. }) =
        llmgw_core::recipe::plan(&latest()[0], &super::host("v100.json"))
    else {
        panic!("plan of latest")
    };
    assert!(reason.contains("resolved against the publisher when the want is installed"), "{reason}");
}

#[test]
fn no_release_this_node_can_use_fails_naming_what_was_looked_at() {
    // Every release of llama.cpp without its Linux builds.
    let mut catalog = embedded_catalog().clone();
    for r in catalog.releases.iter_mut().filter(|r| r.repo == "ggml-org/llama.cpp") {
        r.assets.retain(|a| a.name.contains("vulkan-arm64"));
    }
    let mut sim = Simulation::with_catalog(super::host("nogpu-debian12.json"), &catalog).unwrap();
    let s = sim.converge(&latest()).engines.remove(0);
    assert_eq!(s.state, State::Failed);
    assert!(
        s.detail
            .starts_with("could not resolve llama.cpp@latest: none of the newest 2 release(s) of ggml-org/llama.cpp"),
        "{}",
        s.detail
    );
}

/// Whether the install `id` (`b11459-cuda-12.8`) of llama.cpp is whole:
/// its record, and every file it lists with its sha256.
fn whole(engines: &Path, id: &str) -> bool {
    let Ok(text) = std::fs::read(engines.join(format!("llama.cpp/{id}.json"))) else { return false };
    let record: llmgw_core::converge::InstallRecord = serde_json::from_slice(&text).unwrap();
    record.files.iter().all(|f| {
        std::fs::read(engines.join("llama.cpp").join(id).join(&f.path))
            .is_ok_and(|b| hex::encode(Sha256::digest(&b)) == f.sha256)
    })
}

/// Copies a tree, links as links.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
fn an_upgrade_of_latest_keeps_the_old_build_whole_at_every_step_and_keeps_two_versions() {
    use std::sync::{Arc, Mutex};
    let host = super::host("h100-ubuntu24.04-driver580.json");
    let mut first = Simulation::start(host.clone()).unwrap();
    let s = first.converge(&latest()).engines.remove(0);
    assert_eq!((s.state, s.version.as_str()), (State::Ready, "b11459"));
    let before = tempfile::tempdir().unwrap();
    copy_tree(first.engines_dir(), before.path());
    let host = first.system().host().clone();

    // b11461 is published: every step of its install, crashed before, leaves b11459 whole.
    let newer = with_newer(&["b11461"]);
    let mut crashes = 0;
    let mut upgraded = None;
    for k in 1.. {
        let mut catalog = newer.clone();
        catalog.machine.crash_before_change = Some(k);
        let mut sim = Simulation::with_catalog(host.clone(), &catalog).unwrap();
        let engines = tempfile::tempdir().unwrap();
        copy_tree(before.path(), engines.path());
        sim.set_engines_dir(engines.path().to_path_buf());
        let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
        let (at, dir) = (seen.clone(), engines.path().to_path_buf());
        sim.on_crash(move |_| at.lock().unwrap().push(whole(&dir, "b11459-cuda-12.8")));
        let s = sim.converge(&latest()).engines.remove(0);
        assert_eq!((s.state, s.version.as_str()), (State::Ready, "b11461"), "crash before change {k}: {}", s.detail);
        let seen = seen.lock().unwrap().clone();
        match seen.as_slice() {
            [] => {
                upgraded = Some((sim, engines));
                break;
            }
            [was_whole] => assert!(was_whole, "b11459 was not whole at the crash before change {k}"),
            more => panic!("one crash per run: {more:?}"),
        }
        crashes += 1;
    }
    assert!(crashes >= 5, "every change of the upgrade was crashed before: {crashes}");
    let (sim, engines) = upgraded.unwrap();
    assert!(whole(engines.path(), "b11461-cuda-12.8") && whole(engines.path(), "b11459-cuda-12.8"), "both kept");

    // b11462 then: it and b11461 stay, b11459 goes.
    let mut next = Simulation::with_catalog(sim.system().host().clone(), &with_newer(&["b11461", "b11462"])).unwrap();
    next.set_engines_dir(engines.path().to_path_buf());
    let s = next.converge(&latest()).engines.remove(0);
    assert_eq!((s.state, s.version.as_str()), (State::Ready, "b11462"));
    assert!(whole(engines.path(), "b11462-cuda-12.8") && whole(engines.path(), "b11461-cuda-12.8"));
    assert!(!engines.path().join("llama.cpp/b11459-cuda-12.8.json").exists(), "at most two versions");
    assert!(!engines.path().join("llama.cpp/b11459-cuda-12.8").exists());
}

#[test]
fn a_newer_release_that_fails_here_leaves_the_earlier_one_ready_saying_why() {
    let host = super::host("h100-ubuntu24.04-driver580.json");
    let mut first = Simulation::start(host).unwrap();
    assert_eq!(first.converge(&latest()).engines[0].version, "b11459");
    // b11461's CUDA build is published with a digest its bytes do not match, and its Vulkan build too.
    let mut catalog = with_newer(&["b11461"]);
    for a in catalog.releases.iter_mut().filter(|r| r.tag == "b11461").flat_map(|r| r.assets.iter_mut()) {
        a.tampered = true;
    }
    let mut next = Simulation::with_catalog(first.system().host().clone(), &catalog).unwrap();
    next.set_engines_dir(first.engines_dir().to_path_buf());
    let s = next.converge(&latest()).engines.remove(0);
    assert_eq!(
        (s.want.to_string().as_str(), s.state, s.version.as_str()),
        ("llama.cpp@latest", State::Ready, "b11459")
    );
    let note = s.note.unwrap_or_default();
    assert!(note.starts_with("llama.cpp@latest is b11461, which did not install here"), "{note}");
    assert!(note.ends_with("b11459 stays"), "{note}");
}
