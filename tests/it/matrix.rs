//! The hardware matrix: the golden file holds, shards add up to the whole,
//! a truth that differs from the recipe shows as drift, and what-if
//! questions answer with only what changes.

use llmgw_model::host::Host;
use llmgw_sim::default_wants;
use llmgw_sim::matrix::{self, Cell, ExpectedFile, Shard};
use llmgw_sim::truth::embedded_catalog;
use llmgw_sim::truth::scenario::Scenario;

fn llmgw() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("llmgw").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn hosts(files: &[&str]) -> Vec<(String, Host)> {
    files.iter().map(|f| (f.trim_end_matches(".json").to_string(), super::host(f))).collect()
}

#[test]
fn the_whole_matrix_matches_the_golden_file() {
    let out = llmgw().args(["matrix", "--check"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let golden =
        ExpectedFile::from_json(&std::fs::read_to_string(super::host_path("../expected.json")).unwrap()).unwrap();
    assert!(golden.cells.len() >= 48 * 4, "at least 48 hosts x every want: {}", golden.cells.len());
    assert_eq!(text, format!("all {} cells as expected\n", golden.cells.len()));
}

#[test]
fn shards_together_are_the_whole_run() {
    let hosts =
        hosts(&["v100.json", "h100-ubuntu24.04-driver580.json", "nogpu-debian12.json", "ac922-rhel8-ppc64le.json"]);
    let wants = default_wants();
    let key = |c: &Cell| (c.host.clone(), c.want.clone(), c.outcome());
    let whole: Vec<_> = matrix::run(&hosts, &wants, embedded_catalog(), None, 2).unwrap().iter().map(key).collect();
    let mut union = Vec::new();
    for i in 1..=3 {
        let part = matrix::run(&hosts, &wants, embedded_catalog(), Some(Shard { index: i, count: 3 }), 2).unwrap();
        assert!(!part.is_empty() && part.len() < whole.len(), "shard {i}/3 has {} cells", part.len());
        union.extend(part.iter().map(key));
    }
    union.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut sorted = whole.clone();
    sorted.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    assert_eq!(union, sorted);
}

#[test]
fn the_shards_json_together_is_byte_for_byte_the_whole_matrix() {
    let dir = super::host_path("");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    let hosts = hosts(&names);
    let wants = llmgw_sim::matrix_wants();
    let all = |shard| {
        let mut cells = matrix::run(&hosts, &wants, embedded_catalog(), shard, 2).unwrap();
        cells.extend(matrix::run_offline(&hosts, &wants, embedded_catalog(), shard).unwrap());
        cells.sort_by(|a, b| a.host.cmp(&b.host));
        cells
    };
    let whole = serde_json::to_string_pretty(&all(None)).unwrap();
    let mut union = Vec::new();
    for i in 1..=3 {
        union.extend(all(Some(Shard { index: i, count: 3 })));
    }
    union.sort_by(|a, b| a.host.cmp(&b.host));
    assert_eq!(serde_json::to_string_pretty(&union).unwrap(), whole, "every cell, every word, as in the whole");
}

#[test]
fn cuda_builds_without_ptx_show_as_drift_where_the_recipe_counted_on_ptx() {
    let text = std::fs::read_to_string(super::host_path("../../mocks/scenarios/llama-cuda-without-ptx.json")).unwrap();
    let catalog = Scenario::from_json(&text).unwrap().apply(embedded_catalog()).unwrap();
    let hosts = hosts(&[
        "h100-ubuntu24.04-driver580.json",
        "a100-ubuntu24.04-driver580.json",
        "b200-ubuntu24.04-driver580.json",
        "l4-smalldisk-ubuntu24.04-driver580.json",
    ]);
    let wants = vec![llmgw_core::recipe::Want::parse("llama.cpp@b11459").unwrap()];
    let cells = matrix::run(&hosts, &wants, &catalog, None, 2).unwrap();
    for c in &cells {
        if c.host.starts_with("l4") {
            assert!(c.drift.is_none(), "8.9 has SASS in every CUDA build: {:?}", c.drift);
            assert_eq!(c.status.variant.as_deref(), Some("cuda-13.4"));
            continue;
        }
        let drift = c.drift.as_deref().unwrap_or_else(|| panic!("{} is not drift", c.host));
        // Read from its files before it runs: no GPU of these nodes has a kernel in it.
        assert!(drift.contains("cuda-12.8 failed its inspect check"), "{drift}");
        assert_eq!(c.status.variant.as_deref(), Some("vulkan"), "{} falls back to the next build that works", c.host);
    }
    // Without the scenario there is no drift there.
    let plain = matrix::run(&hosts, &wants, embedded_catalog(), None, 2).unwrap();
    assert!(plain.iter().all(|c| c.drift.is_none()));
}

#[test]
fn a_changed_outcome_fails_the_check_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::create_dir(&hosts).unwrap();
    std::fs::copy(super::host_path("v100.json"), hosts.join("v100.json")).unwrap();
    let golden = dir.path().join("expected.json");
    let run = |args: &[&str]| {
        let mut c = llmgw();
        c.args(["matrix", "--hosts"]).arg(&hosts).arg("--expected").arg(&golden).args(args);
        c.output().unwrap()
    };
    assert_eq!(run(&["--update"]).status.code(), Some(0));
    // Golden says the V100 had cuda-12.8: now it is a difference.
    let text = std::fs::read_to_string(&golden).unwrap().replacen("\"vulkan\"", "\"cuda-12.8\"", 1);
    std::fs::write(&golden, text).unwrap();
    let table = run(&["--check"]);
    assert_eq!(table.status.code(), Some(1));
    let out = String::from_utf8(table.stdout).unwrap();
    let wants = llmgw_sim::matrix_wants().len();
    let differ = format!("1 of {wants} cells differ");
    assert!(out.contains("ready cuda-12.8") && out.contains("ready vulkan") && out.contains(&differ), "{out}");
    let junit = String::from_utf8(run(&["--check", "--format", "junit"]).stdout).unwrap();
    assert!(junit.contains("<failure") && junit.contains("expected ready cuda-12.8, now ready vulkan"), "{junit}");
    assert_eq!(junit.matches("<testcase").count(), wants, "one per want");
    let json: serde_json::Value = serde_json::from_slice(&run(&["--check", "--format", "json"]).stdout).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 1);
    let md = String::from_utf8(run(&["--check", "--format", "markdown"]).stdout).unwrap();
    assert!(md.lines().any(|l| l.starts_with("| v100")), "{md}");
}

#[test]
fn update_refuses_a_shard_a_setting_or_a_scenario() {
    llmgw().args(["matrix", "--update", "--shard", "1/2"]).assert().code(2);
    llmgw().args(["matrix", "--update", "--set", "disk_free_gb=10"]).assert().code(2);
    llmgw().args(["matrix", "--update", "--scenario", "mocks/scenarios/github-500-always.json"]).assert().code(2);
}

#[test]
fn what_if_shows_only_what_changes() {
    // A driver alone changes nothing on Ubuntu 22.04: the CUDA builds need glibc 2.38.
    let what_if = |sets: &[&str]| {
        let mut c = llmgw();
        c.args(["simulate", "--host", "matrix/hosts/v100.json", "--diff"]);
        for s in sets {
            c.args(["--set", s]);
        }
        String::from_utf8(c.output().unwrap().stdout).unwrap()
    };
    assert_eq!(
        what_if(&["nvidia.driver=580.95.05"]),
        "host: v100-ubuntu22.04-driver535\nwith nvidia.driver=580.95.05:\n  nothing changes\n"
    );
    assert_eq!(
        what_if(&["nvidia.driver=580.95.05", "os.glibc=2.39", "os.glibcxx=3.4.33"]),
        "host: v100-ubuntu22.04-driver535\nwith nvidia.driver=580.95.05, os.glibc=2.39, os.glibcxx=3.4.33:\n  \
         llama.cpp@b11459: vulkan b11459 -> cuda-12.8 b11459\n"
    );
    let bad =
        llmgw().args(["simulate", "--host", "matrix/hosts/v100.json", "--set", "nvidia.drvier=1"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown field `drvier`"));
}

#[test]
fn a_driver_upgrade_across_the_matrix_lists_the_cells_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["h100-ubuntu24.04-driver580.json", "nogpu-debian12.json"] {
        std::fs::copy(super::host_path(f), dir.path().join(f)).unwrap();
    }
    // Driver 615 JITs CUDA 13.4's PTX: the H100 moves to the newer build.
    let out = llmgw()
        .args(["matrix", "--hosts"])
        .arg(dir.path())
        .args(["--set", "nvidia.driver=615.71.09", "--diff"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The GPU-less host has no driver to set: it is left out, said so.
    assert_eq!(out.status.code(), Some(0), "{text}{stderr}");
    assert!(stderr.contains("left out 1 host(s)") && stderr.contains("nogpu-debian12"), "{stderr}");
    assert!(text.contains("h100-ubuntu24.04-driver580 llama.cpp@b11459: ready cuda-12.8 -> ready cuda-13.4"), "{text}");
    assert!(!text.contains("uv@"), "unchanged cells are not shown: {text}");
}
