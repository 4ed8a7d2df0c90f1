//! A fleet: identical machines simulated once give the rows of simulating
//! every host (a proptest over random groupings), bad host files are listed
//! and the rest simulated, a large fleet's report is a summary, and shards'
//! reports merged are the whole run's, byte for byte.

use std::path::Path;

use llmgw_core::recipe::Want;
use llmgw_model::host::{Host, Setting};
use llmgw_sim::matrix::fleet::{self, Plan, Row};
use llmgw_sim::matrix::summary::{Document, Tally};
use llmgw_sim::matrix::{self, Cell};
use llmgw_sim::truth::embedded_catalog;
use proptest::prelude::*;

fn llmgw() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("llmgw").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Two wants: a build from GitHub and a Python engine (quick to simulate).
fn wants() -> Vec<Want> {
    ["llama.cpp@b10850", "uv@0.12.20"].iter().map(|w| Want::parse(w).unwrap()).collect()
}

/// Runs a fleet of `hosts` (sorted by id) through `fleet::run`, every row kept.
fn run_fleet(
    hosts: &[(String, Host)],
    settings: &[Setting],
    diff: bool,
    group: bool,
) -> (Vec<Cell>, Vec<Cell>, Vec<String>) {
    let ids: Vec<String> = hosts.iter().map(|(id, _)| id.clone()).collect();
    let read = |p: usize| -> Result<Host, String> { Ok(hosts[p].1.clone()) };
    let wants = wants();
    let plan = Plan {
        wants: &wants,
        catalog: embedded_catalog(),
        settings,
        diff,
        before_catalog: None,
        shard: None,
        jobs: 2,
        group,
        offline: false,
    };
    let (mut after, mut before, mut other) = (Vec::new(), Vec::new(), Vec::new());
    fleet::run::<()>(&ids, &read, &plan, &mut |row| {
        match row {
            Row::Cells { cells, before: b } => {
                after.extend_from_slice(cells);
                before.extend(b.into_iter().flatten().cloned());
            }
            Row::Bad { id, reason } => other.push(format!("bad {id}: {reason}")),
            Row::LeftOut { id, why } => other.push(format!("left out {id}: {why}")),
        }
        Ok(())
    })
    .unwrap();
    (after, before, other)
}

/// A host of `matrix/hosts/` renamed, with a disk size when given.
fn variant(file: &str, name: &str, disk: Option<u64>) -> Host {
    let mut h = super::host(file);
    h.name = name.to_string();
    if let Some(d) = disk {
        h.disk_free_gb = d;
    }
    h
}

const BASES: &[&str] = &["v100.json", "nogpu-debian12.json", "t4-ubuntu22.04-driver580.json"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// Hosts drawn from three machines (each maybe with a small disk), with
    /// their own names and ids in any order: grouped, the rows are those of
    /// simulating every host on its own, byte for byte; with a `--set` and
    /// `--diff` too.
    #[test]
    fn grouping_changes_no_byte(
        picks in proptest::collection::vec((0..BASES.len(), proptest::option::of(prop_oneof![Just(5u64), Just(500u64)]), 0u32..1000), 2..7),
        set in any::<bool>(),
    ) {
        let mut hosts: Vec<(String, Host)> = picks
            .iter()
            .enumerate()
            .map(|(i, (b, disk, tag))| (format!("h{tag:03}-{i}"), variant(BASES[*b], &format!("node {tag} {i}"), *disk)))
            .collect();
        hosts.sort_by(|a, b| a.0.cmp(&b.0));
        let settings: Vec<Setting> = if set { vec![Setting::parse("disk_free_gb=7").unwrap()] } else { vec![] };
        let grouped = run_fleet(&hosts, &settings, set, true);
        let ungrouped = run_fleet(&hosts, &settings, set, false);
        let json = |c: &Vec<Cell>| serde_json::to_string_pretty(c).unwrap();
        prop_assert_eq!(json(&grouped.0), json(&ungrouped.0));
        prop_assert_eq!(json(&grouped.1), json(&ungrouped.1));
        prop_assert_eq!(&grouped.2, &ungrouped.2);
        if !set {
            // And as the matrix has always run them: each host its own simulation.
            let reference = matrix::run(&hosts, &wants(), embedded_catalog(), None, 2).unwrap();
            prop_assert_eq!(json(&grouped.0), json(&reference));
        }
    }
}

#[test]
fn the_machine_key_ignores_the_name_and_nothing_else() {
    let a = variant("v100.json", "a", None);
    let b = variant("v100.json", "b", None);
    assert_eq!(fleet::machine_key(&a), fleet::machine_key(&b));
    assert_ne!(fleet::machine_key(&a), fleet::machine_key(&variant("v100.json", "a", Some(5))));
    let mut c = a.clone();
    c.packages.installed.insert("gcc".into());
    assert_ne!(fleet::machine_key(&a), fleet::machine_key(&c));
}

#[test]
fn a_host_name_repeated_is_a_bad_file_and_a_left_out_host_is_counted() {
    let hosts = vec![
        ("a".to_string(), variant("v100.json", "same", None)),
        ("b".to_string(), variant("nogpu-debian12.json", "other", None)),
        ("c".to_string(), variant("v100.json", "same", Some(50))),
    ];
    let set = [Setting::parse("nvidia.driver=580.95.05").unwrap()];
    let (cells, before, other) = run_fleet(&hosts, &set, true, true);
    assert!(cells.iter().all(|c| c.host == "a"), "only a is simulated: {other:?}");
    assert_eq!(before.len(), cells.len());
    assert_eq!(other.len(), 2, "{other:?}");
    assert!(other[0].starts_with("left out b: nvidia.driver"), "{other:?}");
    assert!(other[1].starts_with("bad c: name: `same` is already the name of host `a`"), "{other:?}");
}

/// A fleet directory: `copies` of each of `files` (new names), plus what `extra` writes.
fn fleet_dir(files: &[&str], copies: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        let text = std::fs::read_to_string(super::host_path(f)).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let name = v["name"].as_str().unwrap().to_string();
        for i in 0..copies {
            v["name"] = format!("{name} #{i}").into();
            let id = format!("{}-{i:03}", f.trim_end_matches(".json"));
            std::fs::write(dir.path().join(format!("{id}.json")), serde_json::to_string_pretty(&v).unwrap()).unwrap();
        }
    }
    dir
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let wants = wants_file();
    let out = llmgw().args(["matrix", "--hosts"]).arg(dir).args(["--wants"]).arg(&wants).args(args).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// Two wants, in a temporary file removed when it is dropped.
fn wants_file() -> tempfile::TempPath {
    let mut f = tempfile::Builder::new().prefix("llmgw-fleet-wants-").suffix(".json").tempfile().unwrap();
    std::io::Write::write_all(
        &mut f,
        br#"{"wants": [{"engine": "llama.cpp", "version": "b11459"}, {"engine": "uv", "version": "0.12.20"}]}"#,
    )
    .unwrap();
    f.into_temp_path()
}

#[test]
fn bad_host_files_are_listed_and_the_rest_simulated() {
    let dir = fleet_dir(&["v100.json", "nogpu-debian12.json"], 2);
    std::fs::write(dir.path().join("broken.json"), "{\"name\": ").unwrap();
    std::fs::create_dir(dir.path().join("folder.json")).unwrap();
    let twin = std::fs::read_to_string(dir.path().join("v100-000.json")).unwrap();
    std::fs::write(dir.path().join("zz-twin.json"), twin).unwrap();
    let (code, out, err) = run(dir.path(), &["--format", "json"]);
    assert_eq!(code, 2, "some hosts were not simulated: {err}");
    let doc: Document = serde_json::from_str(&out).unwrap();
    assert_eq!(doc.cells.as_ref().unwrap().len(), 4 * 2, "the four good hosts, every want");
    let bad: Vec<(&str, &str)> = doc.bad.iter().map(|b| (b.host.as_str(), b.reason.as_str())).collect();
    assert_eq!(bad.len(), 3, "{bad:?}");
    assert!(bad[0].0 == "broken" && bad[0].1.contains("line 1 column"), "{bad:?}");
    assert!(bad[1].0 == "folder" && bad[1].1.contains("a directory"), "{bad:?}");
    assert!(bad[2].0 == "zz-twin" && bad[2].1.contains("already the name of host `v100-000`"), "{bad:?}");
    assert!(doc.bad[0].path.ends_with("broken.json"), "{:?}", doc.bad[0]);
    for name in ["broken.json", "folder.json", "zz-twin.json"] {
        assert!(err.contains(name), "stderr names {name}: {err}");
    }
    assert!(err.contains("3 of 7 host file(s) not simulated"), "{err}");
    // The summary counts them.
    let (code, out, _) = run(dir.path(), &["--summary", "--format", "json"]);
    assert_eq!(code, 2);
    let doc: Document = serde_json::from_str(&out).unwrap();
    let s = doc.summary.unwrap();
    assert_eq!((s.hosts, s.simulated, s.bad, s.left_out), (7, 4, 3, 0));
    assert_eq!(doc.bad.len(), 3);
}

#[test]
fn a_large_fleet_reports_a_summary_with_the_changes_and_examples() {
    // 201 hosts of three machines: more than 200, so a summary by default.
    // Driver 615 JITs CUDA 13.4's PTX: the H100s move to it; the T4s'
    // Ubuntu 22.04 runs no CUDA build (glibc 2.38) with either driver.
    let dir =
        fleet_dir(&["h100-ubuntu24.04-driver580.json", "nogpu-debian12.json", "t4-ubuntu22.04-driver580.json"], 67);
    let (code, out, err) = run(dir.path(), &["--set", "nvidia.driver=615.71.09", "--diff", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Document = serde_json::from_str(&out).unwrap();
    let s = doc.summary.expect("a summary, not cells");
    assert!(doc.cells.is_none());
    assert_eq!((s.hosts, s.simulated, s.left_out, s.bad), (201, 134, 67, 0));
    assert_eq!(s.set.as_deref(), Some(&["nvidia.driver=615.71.09".to_string()][..]));
    let llama = &s.wants[0];
    assert_eq!(llama.want, "llama.cpp@b11459");
    let changes = llama.changes.as_ref().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let change = &changes[0];
    assert_eq!((change.from.as_str(), change.to.as_str(), change.hosts), ("ready cuda-12.8", "ready cuda-13.4", 67));
    let examples: Vec<String> = (0..3).map(|i| format!("h100-ubuntu24.04-driver580-{i:03}")).collect();
    assert_eq!(change.examples, examples);
    assert_eq!(doc.left_out[0].hosts, 67);
    assert!(err.contains("as 4 distinct machine simulation(s)"), "the H100 and the T4, each before and after: {err}");
    // The table says the same; --cells lists every cell.
    let (_, table, _) = run(dir.path(), &["--set", "nvidia.driver=615.71.09", "--diff"]);
    assert!(
        table.starts_with("with nvidia.driver=615.71.09: 201 hosts: 134 simulated, 67 left out by --set"),
        "{table}"
    );
    assert!(table.contains("ready cuda-13.4") && table.contains(&examples.join(", ")), "{table}");
    let (_, cells, _) = run(dir.path(), &["--cells", "--format", "json"]);
    let doc: Document = serde_json::from_str(&cells).unwrap();
    assert_eq!(doc.cells.unwrap().len(), 201 * 2);
}

#[test]
fn shards_merged_are_the_whole_run_byte_for_byte() {
    let dir = fleet_dir(&["v100.json", "nogpu-debian12.json", "t4-ubuntu22.04-driver580.json"], 3);
    std::fs::write(dir.path().join("broken.json"), "[]").unwrap();
    let scratch = tempfile::tempdir().unwrap();
    for (what, extra) in [
        ("cells", &["--format", "json"][..]),
        ("summary", &["--summary", "--format", "json"][..]),
        ("diff", &["--summary", "--format", "json", "--set", "disk_free_gb=5", "--diff"][..]),
    ] {
        let (code, whole, err) = run(dir.path(), extra);
        assert_eq!(code, 2, "{what}: the broken file: {err}");
        let mut parts = Vec::new();
        for i in 1..=3 {
            let (_, part, _) = run(dir.path(), &[extra, &["--shard", &format!("{i}/3")]].concat());
            let path = scratch.path().join(format!("{what}-{i}.json"));
            std::fs::write(&path, part).unwrap();
            parts.push(path);
        }
        let out = llmgw().args(["matrix", "--format", "json", "--merge"]).args(&parts).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{what}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), whole, "{what}: the merge is the whole");
        if what == "cells" {
            // The cells merged, as a table, are the whole run's table.
            let merged = llmgw().args(["matrix", "--merge"]).args(&parts).output().unwrap();
            let (_, table, _) = run(dir.path(), &[]);
            assert_eq!(String::from_utf8(merged.stdout).unwrap(), table);
        }
    }
    // A shard missing, or given twice, is refused.
    let one = scratch.path().join("cells-1.json");
    for parts in [vec![one.clone()], vec![one.clone(), one.clone(), scratch.path().join("cells-2.json")]] {
        let out = llmgw().args(["matrix", "--merge"]).args(&parts).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("missing") || err.contains("given twice"), "{err}");
    }
}

#[test]
fn a_tally_of_cells_is_the_summary_of_the_run() {
    let hosts =
        vec![("a".to_string(), variant("v100.json", "a", None)), ("b".to_string(), variant("v100.json", "b", None))];
    let (cells, _, _) = run_fleet(&hosts, &[], false, true);
    let mut t = Tally::new(wants().iter().map(ToString::to_string).collect(), None);
    for row in matrix::summary::rows_of(&cells) {
        t.add(&Row::Cells { cells: row, before: None });
    }
    let s = t.summary();
    assert_eq!((s.hosts, s.simulated), (2, 2));
    assert_eq!(s.wants[0].outcomes[0].outcome, "ready vulkan");
    assert_eq!(s.wants[0].outcomes[0].hosts, 2);
}

#[test]
fn a_set_name_is_every_changed_hosts_name_grouped_or_not() {
    let hosts =
        vec![("a".to_string(), variant("v100.json", "a", None)), ("b".to_string(), variant("v100.json", "b", None))];
    let set = [Setting::parse("name=renamed").unwrap()];
    let grouped = run_fleet(&hosts, &set, true, true);
    assert!(grouped.0.iter().all(|c| c.host_name == "renamed"), "after the change");
    assert_eq!(grouped.1.iter().map(|c| c.host_name.as_str()).collect::<Vec<_>>()[..], ["a", "a", "b", "b"]);
    let ungrouped = run_fleet(&hosts, &set, true, false);
    assert_eq!(serde_json::to_string(&grouped.0).unwrap(), serde_json::to_string(&ungrouped.0).unwrap());
    assert_eq!(serde_json::to_string(&grouped.1).unwrap(), serde_json::to_string(&ungrouped.1).unwrap());
}
