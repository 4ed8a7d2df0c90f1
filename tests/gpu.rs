//! The check on a real NVIDIA GPU, driven by `ci/gpu-check.sh` on a machine
//! that has one (never by `cargo test`: it needs the `gpu-check` feature).
//!
//! The script builds two programs with nvcc that answer as `llama-server`
//! (`--list-devices`, launching nothing) and as `llama-bench` (a kernel
//! launched on the device asked for, CUDA's error line and an abort when it
//! cannot run), and names them in `LLMGW_GPU_GOOD` (machine code for this
//! GPU) and `LLMGW_GPU_OLD` (machine code for an older generation only, no
//! PTX), and this machine as discovered in `LLMGW_GPU_HOST`. `provision`
//! against the fake server must list the GPU with the old build, refuse it
//! at the compute step in CUDA's words and install the next; the Python
//! GPU check must compute with the torch installed here.

#![cfg(feature = "gpu-check")]
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use llmgw_sim::publisher::FakeServer;
#[path = "support/built.rs"]
mod built;
use built::{asset, build, raw, release};
use serde_json::Value;

fn env_path(name: &str) -> PathBuf {
    PathBuf::from(std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run ci/gpu-check.sh")))
}

/// The machine as discovered, without its package manager (nothing outside
/// the machine can be reached, so no package can be installed).
fn host(dir: &Path) -> (PathBuf, Value) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(env_path("LLMGW_GPU_HOST")).unwrap()).unwrap();
    v["os"]["package_family"] = "none".into();
    let path = dir.join("host.json");
    std::fs::write(&path, v.to_string()).unwrap();
    (path, v)
}

#[test]
fn the_real_compute_check_refuses_code_for_another_gpu_and_installs_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (host, v) = host(dir.path());
    assert_eq!(v["arch"], "amd64", "the CUDA 12.8 build is x64 only");
    let good = std::fs::read(env_path("LLMGW_GPU_GOOD")).unwrap();
    let old = std::fs::read(env_path("LLMGW_GPU_OLD")).unwrap();
    // A small shared library stands for each ggml backend module (ldd checks them).
    let lib = std::fs::read(env_path("LLMGW_GPU_LIB")).unwrap();
    let catalog = release(
        vec![
            asset("llama-b10850-bin-ubuntu-cuda-13.3-x64.tar.gz", build(&old, &lib, Some("libggml-cuda.so"))),
            asset("cudart-llama-b10850-bin-ubuntu-cuda-13.3-x64.tar.gz", vec![raw("libcudart.so.13", &lib)]),
            asset("llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz", build(&good, &lib, Some("libggml-cuda.so"))),
            asset("cudart-llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz", vec![raw("libcudart.so.12", &lib)]),
            asset("llama-b10850-bin-ubuntu-vulkan-x64.tar.gz", build(&good, &lib, Some("libggml-vulkan.so"))),
        ],
        "programs built by ci/gpu-check.sh with nvcc",
    );
    let server = FakeServer::start(&catalog).unwrap();
    let engines = dir.path().join("engines");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llmgw"))
        .args(["provision", "--format", "json", "--want", "llama.cpp@b10850", "--host"])
        .arg(&host)
        .arg("--engines-dir")
        .arg(&engines)
        .args(["--github-api", &server.base_url()])
        .output()
        .unwrap();
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
    let s = &report["engines"][0];
    let tried: Vec<&Value> = s["attempts"].as_array().unwrap().iter().filter(|a| a["outcome"] != "left_out").collect();
    // Driver 580 or newer: cuda-13.3 (old code) is tried first and refused.
    if let Some(first) = tried.iter().find(|a| a["variant"] == "cuda-13.3") {
        // Listed (listing launches no kernel), then refused at the compute
        // step in the CUDA runtime's own words.
        assert_eq!(first["outcome"], "failed", "{s}");
        assert_eq!(first["check"], "compute", "{s}");
        let reason = first["reason"].as_str().unwrap();
        assert!(reason.contains("CUDA error: no kernel image is available for execution on the device"), "{reason}");
    }
    assert_eq!((s["state"].as_str(), s["variant"].as_str()), (Some("ready"), Some("cuda-12.8")), "{s}");
    assert!(
        s["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["reason"].as_str().unwrap_or("").contains("computes on CUDA0"))
    );
}

#[test]
fn the_python_gpu_check_computes_with_the_torch_installed_here() {
    let script = llmgw_core::converge::torch_check_script(&[]);
    let out = std::process::Command::new("python3").args(["-c", &script]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
    let gpus =
        serde_json::from_str::<Value>(&std::fs::read_to_string(env_path("LLMGW_GPU_HOST")).unwrap()).unwrap()["nvidia"]
            ["gpus"]
            .as_array()
            .map_or(0, Vec::len);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("cuda:")).count(), gpus, "every GPU computed");
}
