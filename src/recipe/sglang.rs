//! SGLang: a Python environment with `sglang` from PyPI, run as a module
//! (`python -m sglang.launch_server`), so its binary is the environment's
//! Python and its proof is an import.

use super::python::{PYTHON, env_build, gpu_engine_here, torch_check};
use super::{GpuNeeds, Offer, Plan, PythonEnv, Refusal, Want, compare_versions, pick, unsupported};
use crate::host::{Arch, ComputeCapability, Host};
use crate::nvidia;

/// The variants of SGLang this recipe installs.
pub(super) const VARIANTS: &[&str] = &["cu13", "cu12"];

/// The first SGLang built for CUDA 13. Source: the seed (`sglangCUDA13Since`).
const CUDA13_SINCE: &str = "0.5";

/// The GPUs sgl-kernel carries machine code for, by architecture. It is
/// SASS only (`code=sm_XX`, no PTX), so a GPU it does not list gets no
/// kernels at all; on x86 it is built with `ENABLE_BELOW_SM90` (sm_80,
/// sm_89), on aarch64 without. Source: `sgl-project/sglang@sgl-kernel/CMakeLists.txt`;
/// sglang#17333 (T4 unsupported); `../shared/facts.md` section 4.
///
/// The seed's recipe offered SGLang from 7.5 (CUDA 13) and 7.0 (CUDA 12):
/// the simulation's GPU check showed a T4 and a V100 failing to import
/// sgl_kernel, so these lists replace those thresholds.
fn kernels(arch: Arch) -> &'static [ComputeCapability] {
    const X86: &[ComputeCapability] = &[
        ComputeCapability::new(8, 0),
        ComputeCapability::new(8, 9),
        ComputeCapability::new(9, 0),
        ComputeCapability::new(10, 0),
        ComputeCapability::new(12, 0),
    ];
    const ARM: &[ComputeCapability] =
        &[ComputeCapability::new(9, 0), ComputeCapability::new(10, 0), ComputeCapability::new(12, 0)];
    if arch == Arch::Arm64 { ARM } else { X86 }
}

/// Plans SGLang on a host.
pub(super) fn plan(want: &Want, host: &Host) -> Result<Plan, Refusal> {
    gpu_engine_here("SGLang", host)?;
    let v = &want.version;
    // Every GPU needs a kernel of its own: SASS runs only within its major.
    let sass = kernels(host.arch);
    let nv = host.nvidia.as_ref().expect("a GPU engine's host has a GPU");
    if let Some(g) = nv.gpus.iter().find(|g| !sass.iter().any(|&s| nvidia::sass_runs_on(s, g.compute_capability))) {
        let list: Vec<String> = sass.iter().map(ToString::to_string).collect();
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
    let (variant, driver) = if compare_versions(v, CUDA13_SINCE).is_lt() {
        ("cu12", nvidia::CUDA12_MIN_DRIVER)
    } else {
        ("cu13", nvidia::CUDA13_MIN_DRIVER)
    };
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
