//! SGLang: a Python environment with `sglang` from PyPI, run as a module
//! (`python -m sglang.launch_server`), so its binary is the environment's
//! Python and its proof is an import. Every fact here is read from the
//! wheels PyPI serves (`mocks/pypi/pypi.json` names each with its sha256).

use super::engine::{Descriptor, Publisher, Variants, VersionCheck, VersionSyntax};
use super::python::{PYTHON, env_build, gpu_engine_here, torch_check, torch_without_cuda};
use super::{Engine, GpuNeeds, Offer, Plan, PythonEnv, Refusal, Want, compare_versions, pick, unsupported};
use llmgw_model::host::{Arch, ComputeCapability, Host};
use llmgw_model::nvidia;

/// SGLang: from PyPI, variants `cu13` and `cu12`; dotted versions; its
/// environment's Python imports it and prints its version.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    engine: Engine::Sglang,
    name: "sglang",
    aliases: &[],
    publisher: Publisher::PyPi { project: "sglang" },
    variants: Variants::Named(&["cu13", "cu12"]),
    versions: VersionSyntax::Pep440,
    example: "0.5.4",
    checked_with: VersionCheck { args: &["-c", "import sglang; print(sglang.__version__)"], asked: "`import sglang`" },
    reported: true,
    plan: |want, host, _| plan(want, host),
};

/// The first SGLang whose PyPI build is CUDA 13: 0.5.11 pins torch 2.11.0
/// and `cuda-python>=13.0`; 0.5.4 pins torch 2.8.0 (CUDA 12.8) and
/// sgl-kernel 0.3.16.post3 (`libcudart.so.12`), 0.5.10 torch 2.9.1 and
/// `cuda-python==12.9`. Its `cu130` extra (torch 2.9.0) is not PyPI's
/// default. Sources: sglang 0.5.4's METADATA and sgl-kernel 0.3.16.post3's
/// `common_ops.abi3.so` (read); PyPI metadata of 0.5.10 and 0.5.11.
const CUDA13_SINCE: &str = "0.5.11";

/// The first SGLang whose kernel package is `sglang-kernel` (0.4.x), the
/// renamed `sgl-kernel` (last 0.3.21); the module is still `sgl_kernel`.
/// Sources: PyPI metadata of sglang 0.5.9 (`sgl-kernel==0.3.21`) and 0.5.10
/// (`sglang-kernel==0.4.1`); sgl-project/sglang#20440.
const KERNEL_RENAMED_SINCE: &str = "0.5.10";

/// The first SGLang whose torch and kernels are in its own requirements:
/// 0.4.10 puts `torch==2.7.1` and `sgl-kernel==0.2.8` under the `srt` extra,
/// so it is installed as `sglang[srt]`; 0.5.4 requires them outright.
/// Source: both versions' METADATA (read).
const PLAIN_SINCE: &str = "0.5";

/// The torch an SGLang version pins, for a message. Source: METADATA of
/// 0.4.10 (2.7.1), 0.5.4 (2.8.0), 0.5.23 (2.14.1), read.
fn torch_of(version: &str) -> &'static str {
    if compare_versions(version, PLAIN_SINCE).is_lt() {
        "2.7.1"
    } else if compare_versions(version, CUDA13_SINCE).is_lt() {
        "2.8.0"
    } else {
        "2.14.1"
    }
}

/// The GPUs an SGLang version's kernels carry machine code for, by
/// architecture: `(family, arch-specific)`, or `None` where PyPI has no
/// wheel of them. Machine code only (no PTX), loaded at import, so a GPU
/// they do not list gets no kernels at all; an `a` build runs on exactly its
/// compute capability. From `sgl_kernel/(sm90/)common_ops.abi3.so` as
/// cuobjdump lists it:
/// - before 0.5: sgl-kernel 0.2.8, x86-64 `sm_75 sm_80 sm_89 sm_90 sm_90a`;
///   no aarch64 wheel;
/// - 0.5 to 0.5.10: sgl-kernel 0.3.16.post3, x86-64 `sm_80 sm_89 sm_90
///   sm_90a sm_100a sm_101a sm_120a`, aarch64 `sm_90 sm_90a sm_100a sm_101a
///   sm_120a`;
/// - from 0.5.11: sglang-kernel 0.4.10, x86-64 `sm_80 sm_89 sm_90 sm_90a
///   sm_100 sm_120a`, aarch64 `sm_90 sm_100 sm_110a sm_120a sm_121a`
///   (`sm_100` a family build: flag 0x200000 in its fatbin entries).
///
/// Source: the wheels read (`mocks/pypi/pypi.json`); sgl-project/sglang#17333
/// (no kernels for a T4 fails the import).
fn kernels(version: &str, arch: Arch) -> Option<(&'static [ComputeCapability], &'static [ComputeCapability])> {
    const fn cc(major: u32, minor: u32) -> ComputeCapability {
        ComputeCapability::new(major, minor)
    }
    const V02_X86: &[ComputeCapability] = &[cc(7, 5), cc(8, 0), cc(8, 9), cc(9, 0)];
    const V03_X86: &[ComputeCapability] = &[cc(8, 0), cc(8, 9), cc(9, 0)];
    const V03_ARM: &[ComputeCapability] = &[cc(9, 0)];
    const V03_EXACT: &[ComputeCapability] = &[cc(10, 0), cc(10, 1), cc(12, 0)];
    const V04_X86: &[ComputeCapability] = &[cc(8, 0), cc(8, 9), cc(9, 0), cc(10, 0)];
    const V04_X86_EXACT: &[ComputeCapability] = &[cc(12, 0)];
    const V04_ARM: &[ComputeCapability] = &[cc(9, 0), cc(10, 0)];
    const V04_ARM_EXACT: &[ComputeCapability] = &[cc(11, 0), cc(12, 0), cc(12, 1)];
    let arm = arch == Arch::Arm64;
    if compare_versions(version, PLAIN_SINCE).is_lt() {
        return (!arm).then_some((V02_X86, &[]));
    }
    if compare_versions(version, CUDA13_SINCE).is_lt() {
        return Some(if arm { (V03_ARM, V03_EXACT) } else { (V03_X86, V03_EXACT) });
    }
    Some(if arm { (V04_ARM, V04_ARM_EXACT) } else { (V04_X86, V04_X86_EXACT) })
}

/// Plans SGLang on a host.
pub(super) fn plan(want: &Want, host: &Host) -> Result<Plan, Refusal> {
    gpu_engine_here("SGLang", host)?;
    let v = &want.version;
    let cuda13 = !compare_versions(v, CUDA13_SINCE).is_lt();
    let package = if compare_versions(v, KERNEL_RENAMED_SINCE).is_lt() { "sgl-kernel" } else { "sglang-kernel" };
    let Some((family, exact)) = kernels(v, host.arch) else {
        return Err(unsupported(format!("SGLang {v}'s kernels ({package}) have no wheel for {} on PyPI", host.arch)));
    };
    // torch before 2.11 has no CUDA in its aarch64 wheels.
    if host.arch == Arch::Arm64 && !cuda13 {
        return Err(torch_without_cuda("SGLang", v, torch_of(v)));
    }
    // Every GPU needs a kernel of its own: SASS runs only within its major,
    // and an arch-specific build on its one compute capability.
    let nv = host.nvidia.as_ref().expect("a GPU engine's host has a GPU");
    let runs = |cc| nvidia::sass_covers(family, exact, cc);
    if let Some(g) = nv.gpus.iter().find(|g| !runs(g.compute_capability)) {
        let list: Vec<String> =
            family.iter().map(ToString::to_string).chain(exact.iter().map(|c| format!("{c} (exactly)"))).collect();
        return Err(unsupported(format!(
            "SGLang {v}'s kernels ({package}, machine code only) cover compute capability {} on {}; \
             this node's {} is {}",
            list.join(", "),
            host.arch,
            g.name,
            g.compute_capability
        )));
    }
    let requirement =
        if compare_versions(v, PLAIN_SINCE).is_lt() { format!("sglang[srt]=={v}") } else { format!("sglang=={v}") };
    let env = PythonEnv { python: PYTHON.into(), requirements: vec![requirement], wheel: None, extra_index: None };
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
