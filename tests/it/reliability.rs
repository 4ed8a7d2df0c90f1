//! The reliability report: every fault scenario of `mocks/scenarios/` on
//! several hosts with every default want, a crash before every change of a
//! whole node's installation, and hostile archives published with a digest
//! that matches them. After each run, every want reported `ready` must be
//! whole (its record there, every file matching its sha256, its binary
//! there), nothing may be left half-installed (an install directory without
//! its record, anything in staging), and nothing may be written outside the
//! engines directory.
//!
//! `ci/reliability.sh` runs this test with `--nocapture` and prints the
//! figures it ends with; README quotes them.

use std::path::{Path, PathBuf};

use llmgw_core::converge::State;
use llmgw_core::converge::record::InstallRecord;
use llmgw_core::recipe::Want;
use llmgw_core::report::Report;
use llmgw_sim::truth::Catalog;
use llmgw_sim::truth::embedded_catalog;
use llmgw_sim::truth::scenario::Scenario;
use llmgw_sim::{Simulation, default_wants};

const HOSTS: &[&str] = &["v100.json", "h100-ubuntu24.04-driver580.json", "nogpu-debian12.json"];

/// What is wrong with the engines directory after a run, in words; empty
/// when every `ready` want is whole and nothing is half-installed.
fn violations(sim: &Simulation, report: &Report) -> Vec<String> {
    let engines = sim.engines_dir();
    let mut wrong = Vec::new();
    for s in report.engines.iter().filter(|s| s.state == State::Ready) {
        let (Some(variant), Some(binary)) = (&s.variant, &s.binary) else {
            wrong.push(format!("{}: ready without a variant or binary", s.want));
            continue;
        };
        let dir = engines.join(s.engine.as_str()).join(format!("{}-{variant}", s.version));
        let record = record_of(&dir);
        let Some(record) =
            std::fs::read_to_string(&record).ok().and_then(|t| serde_json::from_str::<InstallRecord>(&t).ok())
        else {
            wrong.push(format!("{}: ready without a readable record at {}", s.want, record.display()));
            continue;
        };
        if !engines.join(binary).is_file() {
            wrong.push(format!("{}: ready, but its binary {binary} is missing", s.want));
        }
        for f in &record.files {
            let path = dir.join(&f.path);
            match std::fs::read(&path) {
                Ok(bytes) if llmgw_core::archive::sha256_reader(&bytes[..]).unwrap().1 == f.sha256 => {}
                Ok(_) => wrong.push(format!("{}: ready, but {} does not match its sha256", s.want, f.path)),
                Err(_) if std::fs::symlink_metadata(&path).is_ok() => {}
                Err(_) => wrong.push(format!("{}: ready, but {} is missing", s.want, f.path)),
            }
        }
        // A Python environment's interpreter, under the engines directory.
        for f in record.python.iter().flat_map(|p| p.files.iter().map(move |f| (engines.join(&p.dir), f))) {
            match std::fs::read(f.0.join(&f.1.path)) {
                Ok(bytes) if llmgw_core::archive::sha256_reader(&bytes[..]).unwrap().1 == f.1.sha256 => {}
                _ => wrong.push(format!("{}: ready, but its Python's {} is not as recorded", s.want, f.1.path)),
            }
        }
    }
    wrong.extend(half_installed(engines));
    wrong
}

/// `<engines>/<engine>/<version>-<variant>.json`, beside the install directory.
fn record_of(install: &Path) -> PathBuf {
    PathBuf::from(format!("{}.json", install.display()))
}

/// Install directories without their record, and anything in staging.
fn half_installed(engines: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    let list = |p: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(p).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default()
    };
    for leftover in list(&engines.join(".staging")) {
        wrong.push(format!("staging left: {}", leftover.display()));
    }
    // uv's managed Pythons: each whole, nothing left half-unpacked in uv's `.temp`.
    let pythons = engines.join(llmgw_core::converge::PYTHON_DIR);
    for python in list(&pythons).into_iter().filter(|p| p.is_dir()) {
        let whole = python.ends_with(".temp") && list(&python).is_empty() || python.join("bin/python3.12").is_file();
        if !whole {
            wrong.push(format!("a managed Python half-installed: {}", python.display()));
        }
    }
    for engine_dir in list(engines).into_iter().filter(|p| !p.ends_with(".staging") && p != &pythons && p.is_dir()) {
        for install in list(&engine_dir).into_iter().filter(|p| p.is_dir()) {
            if !record_of(&install).is_file() {
                wrong.push(format!("an install directory without its record: {}", install.display()));
            }
        }
    }
    wrong
}

/// Converges, recovering from a simulated crash the way the next run of
/// the installer would (the same directory): the report, and whether a
/// crash happened on the way.
fn converge_through_crash(sim: &mut Simulation, wants: &[Want]) -> (Report, bool) {
    let report = sim.converge(wants);
    (report, !sim.take_crashes().is_empty())
}

fn scenarios() -> Vec<(String, Catalog)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mocks/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let catalog = Scenario::from_json(&text).unwrap().apply(embedded_catalog()).unwrap();
            (p.file_stem().unwrap().to_string_lossy().into_owned(), catalog)
        })
        .collect()
}

/// A `.tar.gz` of `entries` written as a hostile archiver would (raw names).
fn hostile(entries: &[(&str, tar::EntryType, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, kind, link) in entries {
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_entry_type(*kind);
        h.set_mode(0o755);
        let body: &[u8] = if *kind == tar::EntryType::Regular { b"#!/bin/sh\necho owned\n" } else { b"" };
        h.set_size(body.len() as u64);
        if !link.is_empty() {
            h.set_link_name(link).unwrap();
        }
        h.set_cksum();
        b.append(&h, body).unwrap();
    }
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

#[test]
fn reliability_report() {
    use tar::EntryType::{Block, Char, Directory, Fifo, Link, Regular, Symlink};
    let wants = default_wants();
    let mut wrong = Vec::new();
    let (mut fault_runs, mut crash_points, mut hostile_refused, mut ready_checked) = (0, 0, 0, 0);

    // 1. Every scenario on every host, converged twice (the second run
    // re-checks what the first left).
    let scenarios = scenarios();
    for (name, catalog) in &scenarios {
        for host in HOSTS {
            let mut sim = Simulation::with_catalog(super::host(host), catalog).unwrap();
            for pass in 1..=2 {
                let (report, _) = converge_through_crash(&mut sim, &wants);
                ready_checked += report.engines.iter().filter(|s| s.state == State::Ready).count();
                wrong.extend(
                    violations(&sim, &report).into_iter().map(|v| format!("{name} on {host}, pass {pass}: {v}")),
                );
                fault_runs += 1;
            }
        }
    }

    // 2. A crash before every change of a whole node's installation (an
    // H100: llama.cpp's two CUDA archives, uv, vLLM's environments).
    for k in 1.. {
        let mut catalog = embedded_catalog().clone();
        catalog.machine.crash_before_change = Some(k);
        let mut sim = Simulation::with_catalog(super::host("h100-ubuntu24.04-driver580.json"), &catalog).unwrap();
        let (report, crashed) = converge_through_crash(&mut sim, &wants);
        wrong.extend(violations(&sim, &report).into_iter().map(|v| format!("crash before change {k}: {v}")));
        ready_checked += report.engines.iter().filter(|s| s.state == State::Ready).count();
        if !crashed {
            break;
        }
        crash_points += 1;
    }

    // 3. Hostile archives, published with a digest that matches them.
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("escaped");
    let escape_abs = escape.to_string_lossy().into_owned();
    let kinds: Vec<(&str, Vec<u8>)> = vec![
        ("`..` in a path", hostile(&[("llama-b10850/../../../../escaped", Regular, "")])),
        ("an absolute path", hostile(&[(&escape_abs, Regular, "")])),
        ("a symbolic link out", hostile(&[("llama-b10850/lib", Symlink, "../../../..")])),
        ("an absolute symbolic link", hostile(&[("llama-b10850/lib", Symlink, &escape_abs)])),
        (
            "a write through a link",
            hostile(&[
                ("llama-b10850", Directory, ""),
                ("llama-b10850/d", Symlink, "."),
                ("llama-b10850/d/x", Regular, ""),
            ]),
        ),
        ("a hard link out", hostile(&[("llama-b10850/passwd", Link, "/etc/passwd")])),
        ("a hard link to nothing placed", hostile(&[("llama-b10850/shadow", Link, "etc/shadow")])),
        ("a FIFO", hostile(&[("llama-b10850/fifo", Fifo, "")])),
        ("a character device", hostile(&[("llama-b10850/mem", Char, "")])),
        ("a block device", hostile(&[("llama-b10850/sda", Block, "")])),
    ];
    for (kind, bytes) in &kinds {
        let mut catalog = embedded_catalog().clone();
        super::asset_mut(&mut catalog, "llama-b10850-bin-ubuntu-vulkan-x64.tar.gz").archive = Some(bytes.clone());
        let mut sim = Simulation::with_catalog(super::host("v100.json"), &catalog).unwrap();
        let report = sim.converge(&[Want::parse("llama.cpp@b10850").unwrap()]);
        let s = &report.engines[0];
        let reason = &s.attempts[0].reason;
        if s.state == State::Failed
            && reason.contains("unpacking llama-b10850-bin-ubuntu-vulkan-x64.tar.gz: archive entry")
        {
            hostile_refused += 1;
        } else {
            wrong.push(format!("hostile archive with {kind}: {:?}, {reason}", s.state));
        }
        wrong.extend(violations(&sim, &report).into_iter().map(|v| format!("hostile archive with {kind}: {v}")));
        if escape.exists() || sim.work_dir().parent().is_some_and(|p| p.join("escaped").exists()) {
            wrong.push(format!("hostile archive with {kind}: a file escaped"));
        }
    }

    println!("reliability report");
    println!(
        "  fault scenarios:              {} (mocks/scenarios/), on {} hosts, {fault_runs} runs",
        scenarios.len(),
        HOSTS.len()
    );
    println!("  crashes, one before each change of a whole H100 installation: {crash_points}");
    println!("  hostile archives refused:     {hostile_refused} of {}", kinds.len());
    println!("  wants reported ready, each checked whole: {ready_checked}");
    println!("  ready but half-installed or unverified: {}", wrong.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(hostile_refused, kinds.len());
    assert!(crash_points >= 20, "a whole node's installation has many changes: {crash_points}");
}

#[test]
fn every_scenario_file_is_embedded_by_its_name() {
    let on_disk: Vec<String> = scenarios().into_iter().map(|(name, _)| name).collect();
    let embedded: Vec<String> =
        llmgw_sim::truth::embedded::SCENARIOS.iter().map(|(name, _)| name.to_string()).collect();
    assert_eq!(
        on_disk, embedded,
        "add each file of mocks/scenarios/ to SCENARIOS (crates/llmgw-sim/src/truth/embedded.rs)"
    );
}
