//! What the Python engines (vLLM, SGLang) share: a uv-made Python 3.12
//! environment, a C compiler, 25 GB, a GPU check, and NVIDIA-only builds.

use std::collections::BTreeMap;

use super::{Build, GpuCheck, PythonEnv, Refusal, Source};
use llmgw_model::host::{Arch, Host, PackageFamily};

/// The uv that creates the Python engines' environments: the newest on
/// PyPI (0.13.9, uploaded 2026-11-17; `mocks/uv/0.13.9.json`), the one the
/// real-uv comparison runs (`tests/it/real_uv.rs`). uv itself is installed
/// through its own recipe first.
pub const UV_VERSION: &str = "0.13.9";

/// The interpreter the Python engines run on; uv fetches it, so the node's
/// own Python (or its absence) does not matter. 3.12 is in every version's
/// `Requires-Python` (vLLM 0.19.1 `<3.14,>=3.10`, 0.20.1 `<3.15,>=3.10`,
/// 0.33.0 `<3.15,>=3.11`; SGLang 0.4.10 `>=3.8`, 0.5.4 `>=3.10`, 0.5.23
/// `>=3.11`), and the only CPython that every wheel with a CPython tag
/// fits: vLLM 0.20's DeepGEMM extension is `cpython-312`, SGLang 0.5.23 is
/// published as `cp312` and `cp313` wheels. Source: the METADATA and file
/// names of the wheels read (`mocks/pypi/pypi.json`).
pub const PYTHON: &str = "3.12";

/// Free disk a Python engine needs before it starts, in GB: torch and its
/// CUDA libraries are several gigabytes, and an environment that fills the
/// disk halfway leaves the node worse off than one never begun. Source: llmgw's Go recipe (`FreeGB`).
pub const FREE_GB: u64 = 25;

/// A Python engine needs a C compiler at run time: Triton builds a small
/// launcher for its kernels the first time a model loads, and without gcc
/// that load fails long after the installation looked finished. Source: llmgw's Go recipe (`compilerPackages`).
fn compiler_packages() -> BTreeMap<PackageFamily, Vec<String>> {
    [PackageFamily::Deb, PackageFamily::Rpm, PackageFamily::Apk]
        .into_iter()
        .map(|f| (f, vec!["gcc".to_string()]))
        .collect()
}

/// Whether a Python GPU engine is published for this machine at all: x86-64
/// and aarch64 only, and an NVIDIA GPU (without one it is `not_here`).
pub(super) fn gpu_engine_here(engine: &str, host: &Host) -> Result<(), Refusal> {
    // Not for this node before anything else: without a GPU the
    // architecture does not matter.
    if host.nvidia.is_none() {
        return Err(Refusal::NotHere {
            reason: format!("{engine} runs on NVIDIA GPUs and this node has none; it serves llama.cpp models"),
        });
    }
    if !matches!(host.arch, Arch::Amd64 | Arch::Arm64) {
        return Err(super::unsupported(format!("{engine} publishes no Linux build for {}", host.arch)));
    }
    // Jetson's integrated GPUs (Xavier 7.2, Orin 8.7) run CUDA through
    // JetPack's own libraries; the aarch64 CUDA wheels on PyPI and PyTorch's
    // index are built for Arm servers with discrete GPUs (SBSA). Source:
    // NVIDIA's PyTorch for Jetson pages (separate JetPack wheels);
    // bitsandbytes-foundation/bitsandbytes#1941. UNCONFIRMED for every wheel.
    if let Some(g) = host.nvidia.iter().flat_map(|n| &n.gpus).find(|g| {
        host.arch == Arch::Arm64 && matches!((g.compute_capability.major, g.compute_capability.minor), (7, 2) | (8, 7))
    }) {
        return Err(super::unsupported(format!(
            "{engine}'s aarch64 CUDA wheels are built for Arm servers (SBSA), not for Jetson's integrated GPU ({}, compute capability {})",
            g.name, g.compute_capability
        )));
    }
    Ok(())
}

/// The refusal of an engine version on aarch64 whose pinned torch PyPI
/// publishes without CUDA there: torch 2.7.1, 2.8.0 and 2.10.0's aarch64
/// wheels carry no `libtorch_cuda.so` (99, 102 and 146 MB against 821, 888
/// and 916 MB for x86-64); 2.11.0's is the first with CUDA. Source: the
/// wheels read (`mocks/pypi/pypi.json`).
pub(super) fn torch_without_cuda(engine: &str, version: &str, torch: &str) -> Refusal {
    super::unsupported(format!(
        "{engine} {version} needs torch {torch}, whose aarch64 wheel on PyPI is built without CUDA"
    ))
}

/// A Python-environment build of `variant`, version `version`.
pub(super) fn env_build(
    variant: &str,
    version: &str,
    env: PythonEnv,
    binary: &str,
    version_args: Vec<String>,
    says: String,
) -> Build {
    Build {
        variant: variant.to_string(),
        version: version.to_string(),
        source: Source::Python(env),
        packages: compiler_packages(),
        binary: binary.to_string(),
        version_args,
        version_says: vec![says],
        runtime_libraries: vec![],
        gpu: None,
        cpu_flags: vec![],
        free_gb: FREE_GB,
        note: None,
        // uv makes the environment: installed first, through its own recipe.
        requires: vec![super::Want::new(super::Engine::Uv, UV_VERSION)],
    }
}

/// The GPU check of a Python engine: torch computes on every GPU, and
/// each of `modules` imports there.
pub(super) fn torch_check(modules: &[&str]) -> Option<GpuCheck> {
    Some(GpuCheck::Torch { modules: modules.iter().map(|m| m.to_string()).collect() })
}
