//! SGLang: a Python environment with `sglang` from PyPI, run as a module
//! (`python -m sglang.launch_server`), so its binary is the environment's
//! Python and its proof is an import.

use super::python::{PYTHON, env_build, gpu_engine_here, torch_check};
use super::{GpuNeeds, Offer, Plan, PythonEnv, Refusal, Want, compare_versions, pick, unsupported};
use crate::host::{Arch, ComputeCapability, Host};
use crate::nvidia;

/// The variants of SGLang this recipe installs.
pub(super) const VARIANTS: &[&str] = &["cu13", "cu12"];

/// The first SGLang built for CUDA 13. Source: llmgw's Go recipe (`sglangCUDA13Since`).
const CUDA13_SINCE: &str = "0.5";

/// The GPUs sgl-kernel carries machine code for, by architecture and
/// CUDA major: `(family, arch-specific)`. It is SASS only (`code=sm_XX`,
/// no PTX), so a GPU it does not list gets no kernels at all. Always
/// sm_90; on x86 `ENABLE_BELOW_SM90` adds sm_80 and sm_89 (off on
/// aarch64); CUDA >= 12.8 adds sm_100a and sm_120a (aarch64 12.8/12.9 also
/// sm_101a); CUDA >= 13 adds sm_103a, and on aarch64 sm_110a and sm_121a.
/// An `a` build runs on exactly its compute capability. Source:
/// `sgl-project/sglang@sgl-kernel/CMakeLists.txt`; sglang#17333 (T4
/// unsupported); sglang#14984 (`sm_120a` is not forward compatible).
///
/// The first recipe (docs/facts.md §10) offered SGLang from 7.5 (CUDA 13) and 7.0 (CUDA 12):
/// the simulation's GPU check showed a T4 and a V100 failing to import
/// sgl_kernel, so these lists replace those thresholds.
fn kernels(arch: Arch, cuda13: bool) -> (&'static [ComputeCapability], &'static [ComputeCapability]) {
    const fn cc(major: u32, minor: u32) -> ComputeCapability {
        ComputeCapability::new(major, minor)
    }
    const X86_FAMILY: &[ComputeCapability] = &[cc(8, 0), cc(8, 9), cc(9, 0)];
    const ARM_FAMILY: &[ComputeCapability] = &[cc(9, 0)];
    const ARM_CU13: &[ComputeCapability] = &[cc(10, 0), cc(10, 3), cc(11, 0), cc(12, 0), cc(12, 1)];
    const ARM_CU12: &[ComputeCapability] = &[cc(10, 0), cc(10, 1), cc(12, 0)];
    const X86_CU13: &[ComputeCapability] = &[cc(10, 0), cc(10, 3), cc(12, 0)];
    const X86_CU12: &[ComputeCapability] = &[cc(10, 0), cc(12, 0)];
    match (arch, cuda13) {
        (Arch::Arm64, true) => (ARM_FAMILY, ARM_CU13),
        (Arch::Arm64, false) => (ARM_FAMILY, ARM_CU12),
        (_, true) => (X86_FAMILY, X86_CU13),
        (_, false) => (X86_FAMILY, X86_CU12),
    }
}

/// Plans SGLang on a host.
pub(super) fn plan(want: &Want, host: &Host) -> Result<Plan, Refusal> {
    gpu_engine_here("SGLang", host)?;
    let v = &want.version;
    let cuda13 = !compare_versions(v, CUDA13_SINCE).is_lt();
    // Every GPU needs a kernel of its own: SASS runs only within its major,
    // and an arch-specific build on its one compute capability.
    let (family, exact) = kernels(host.arch, cuda13);
    let nv = host.nvidia.as_ref().expect("a GPU engine's host has a GPU");
    let runs = |cc| nvidia::sass_covers(family, exact, cc);
    if let Some(g) = nv.gpus.iter().find(|g| !runs(g.compute_capability)) {
        let list: Vec<String> =
            family.iter().map(ToString::to_string).chain(exact.iter().map(|c| format!("{c} (exactly)"))).collect();
        return Err(unsupported(format!(
            "SGLang {v}'s kernels (sgl-kernel, machine code only) cover compute capability {} on {}; \
             this node's {} is {}",
            list.join(", "),
            host.arch,
            g.name,
            g.compute_capability
        )));
    }
    let env =
        PythonEnv { python: PYTHON.into(), requirements: vec![format!("sglang=={v}")], wheel: None, extra_index: None };
    let (variant, driver) =
        if cuda13 { ("cu13", nvidia::CUDA13_MIN_DRIVER) } else { ("cu12", nvidia::CUDA12_MIN_DRIVER) };
    let mut b = env_build(
        variant,
        v,
        env,
        "python",
        vec!["-c".into(), "import sglang; print('sglang', sglang.__version__)".into()],
        format!("sglang {v}"),
    );
    b.gpu = torch_check(&["sgl_kernel"]);
    let what = format!("SGLang {v} built for CUDA {}", if variant == "cu12" { "12" } else { "13" });
    pick(
        want,
        vec![Offer { build: b, needs: GpuNeeds { driver: Some(driver), min_cc: None, jit: None }, what }],
        host,
        vec![],
    )
}
