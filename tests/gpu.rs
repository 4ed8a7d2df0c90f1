//! The check on a real NVIDIA GPU, built by `ci/gpu-bundle.sh` into the
//! bundle (`bin/gpu-tests`, static) and run by `ci/gpu-check.sh --from DIR`
//! on the lent machine, one test per step (never by `cargo test`: it needs
//! the `gpu-check` feature). What each test reads is named by the script in
//! the environment:
//!
//! - `LLMGW_BIN`: the bundle's `llmgw`; `LLMGW_GPU_BUNDLE`: the bundle;
//! - `LLMGW_GPU_HOST`: this machine as `llmgw discover` described it (or,
//!   rehearsing where no GPU is, the bundle's `hosts/rehearsal.json`);
//! - `LLMGW_GPU_SMI`: `nvidia-smi --query-gpu=driver_version,compute_cap,name,memory.total
//!   --format=csv,noheader,nounits`;
//! - `LLMGW_GPU_LLAMA`: the real llama.cpp CUDA build's folder;
//! - `LLMGW_GPU_OUT`: where a test leaves what it wrote.
//!
//! A failed test's panic message is the line that decided it; the script
//! prints it.

#![cfg(feature = "gpu-check")]
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

use llmgw_core::recipe::{self, GpuCheck, Want};
use serde_json::Value;

#[path = "support/gpu_bundle.rs"]
mod gpu_bundle;
use gpu_bundle::{Programs, assert_old_refused_next_installed, assert_refused_without_a_driver, cuda_order};

fn env_path(name: &str) -> PathBuf {
    PathBuf::from(std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run ci/gpu-check.sh --from DIR")))
}

fn json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn discover_agrees_with_nvidia_smi() {
    let host = json(&env_path("LLMGW_GPU_HOST"));
    let smi = std::fs::read_to_string(env_path("LLMGW_GPU_SMI")).unwrap();
    let rows: Vec<Vec<&str>> =
        smi.lines().filter(|l| !l.trim().is_empty()).map(|l| l.splitn(4, ',').map(str::trim).collect()).collect();
    let nv = &host["nvidia"];
    assert!(nv.is_object(), "discover found no NVIDIA GPU; nvidia-smi lists {} GPU(s)", rows.len());
    assert_eq!(nv["driver"].as_str(), Some(rows[0][0]), "discover's driver is not nvidia-smi's");
    let gpus = nv["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), rows.len(), "discover found {} GPUs, nvidia-smi lists {}", gpus.len(), rows.len());
    let mut said = Vec::new();
    for (i, (g, row)) in gpus.iter().zip(&rows).enumerate() {
        let (cc, name, mib) = (row[1], row[2], row[3]);
        assert_eq!(g["name"].as_str(), Some(name), "GPU {i}: discover's name is not nvidia-smi's");
        assert_eq!(
            g["compute_capability"].as_str(),
            Some(cc),
            "GPU {i}: discover's compute capability is not nvidia-smi's"
        );
        assert_eq!(
            g["memory_mib"].as_u64().map(|m| m.to_string()).as_deref(),
            Some(mib),
            "GPU {i}: discover's memory (MiB) is not nvidia-smi's"
        );
        said.push(format!("GPU {i}: {name}, {cc}, {mib} MiB"));
    }
    println!("decided: discover agrees with nvidia-smi: driver {}; {}", rows[0][0], said.join("; "));
}

#[test]
fn provision_refuses_the_old_build_in_cudas_words_and_installs_the_next() {
    let bundle = env_path("LLMGW_GPU_BUNDLE");
    let dir = tempfile::tempdir().unwrap();
    let (host_file, host) = gpu_bundle::host_without_packages(&env_path("LLMGW_GPU_HOST"), dir.path());
    let programs = Programs::read(&bundle);
    let (devices, listing) = programs.devices_here();
    let (order, left_out) = cuda_order(&host);
    println!("the recipe's CUDA builds for this host, in order: {order:?}; left out: {left_out:?}");
    assert!(!order.is_empty(), "the recipe tries no CUDA build on this host: {}", left_out.join("; "));
    let llmgw = env_path("LLMGW_BIN");
    let run = |old_in: &str, engines: &str| {
        let server = llmgw_sim::publisher::FakeServer::start(&gpu_bundle::catalog(&programs, old_in)).unwrap();
        let (s, said) = gpu_bundle::provision(
            &llmgw,
            &host_file,
            &dir.path().join(engines),
            &server.base_url(),
            "llama.cpp@b10850",
        );
        println!("{said}");
        s
    };
    let s = run(&order[0], "engines");
    if devices.is_empty() {
        // No driver here (a rehearsal): the checks up to the listing.
        println!("no CUDA device here ({}): every build refused at the listing", listing.trim());
        assert_refused_without_a_driver(&s, &order);
        println!(
            "decided: no driver here: {} build(s) downloaded, verified, unpacked, ldd and version passed, refused at the listing: {}",
            order.len(),
            gpu_bundle::tried(&s)[0].reason
        );
        return;
    }
    if order.len() >= 2 {
        assert_old_refused_next_installed(&s, &order);
        println!(
            "decided: {} refused at the compute step ({}); {} installed: {}",
            order[0],
            gpu_bundle::NO_KERNEL_IMAGE,
            order[1],
            gpu_bundle::tried(&s)[1].reason
        );
        return;
    }
    // One CUDA build runs on this driver: the refusal, then the same build
    // with the new stand-in in it.
    let first = gpu_bundle::tried(&s)[0].clone();
    assert_eq!(
        (first.outcome, first.check),
        (llmgw_core::converge::Outcome::Failed, Some(llmgw_core::converge::Check::Compute)),
        "{}",
        first.reason
    );
    assert!(first.reason.contains(gpu_bundle::NO_KERNEL_IMAGE), "{}", first.reason);
    let again = run("none", "engines-again");
    assert_eq!(again.state, llmgw_core::converge::State::Ready, "{}", gpu_bundle::said(&again));
    println!(
        "decided: only {} runs on this driver: refused with the old stand-in ({}), installed with the new one",
        order[0],
        gpu_bundle::NO_KERNEL_IMAGE
    );
}

#[test]
fn the_real_llama_bench_computes_with_llmgws_gpu_check() {
    let llama = env_path("LLMGW_GPU_LLAMA");
    let host_text = std::fs::read_to_string(env_path("LLMGW_GPU_HOST")).unwrap();
    let host = llmgw_model::host::Host::from_json(&host_text).unwrap();
    // The recipe's GPU check of a CUDA build of llama.cpp b11312 (the
    // build's version): listing with `--list-devices`, then llama-bench on
    // the tiny model on every device, with the recipe's own arguments.
    let want = Want::parse("llama.cpp@b11312").unwrap();
    let plan = recipe::plan(&want, &host).unwrap_or_else(|e| panic!("the recipe plans no build of b11312 here: {e:?}"));
    let mut build = plan
        .candidates
        .into_iter()
        .find(|b| matches!(&b.gpu, Some(GpuCheck::Devices(g)) if g.device_prefix == "CUDA"))
        .expect(
            "the recipe offers no CUDA build of llama.cpp b11312 to this host (its driver is too old for CUDA 12.8's)",
        );
    // This build, said as it is: CUDA 13.5 for sm_90, llama-bench listing too.
    build.variant = "cuda-13.5 (ci/gpu-bundle.sh, sm_90)".into();
    build.binary = "llama-bench".into();
    let bench = llama.join("llama-bench");
    let http = llmgw_system::http::Http::loopback(10, 60).unwrap();
    let mut sys = llmgw_system::real::RealSystem::new(http, Box::new(llmgw_system::real::Silent));
    let dir = tempfile::tempdir().unwrap();
    match llmgw_core::converge::checks::gpu_computes(&mut sys, &build, &bench, &host, &dir.path().join("check"), 120) {
        Ok(words) => println!("decided: the real llama-bench {words}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_python_gpu_check_computes_with_the_torch_installed_here() {
    let out = env_path("LLMGW_GPU_OUT");
    let script = out.join(llmgw_core::converge::checks::GPU_CHECK_FILE);
    std::fs::write(&script, llmgw_core::converge::torch_check_script(&[])).unwrap();
    let run = std::process::Command::new("python3").arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    println!("{stdout}{stderr}");
    let last = stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(run.status.success(), "{last}");
    let gpus = json(&env_path("LLMGW_GPU_HOST"))["nvidia"]["gpus"].as_array().map_or(0, Vec::len);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("cuda:")).count(), gpus, "not every GPU computed");
    println!("decided: torch computes on {gpus} GPU(s); {}", stdout.lines().last().unwrap_or(""));
}
