//! vLLM: a Python environment with `vllm` from PyPI (CUDA 13 since 0.20,
//! CUDA 12 before), or, from 0.20 until torch 2.14 (vLLM 0.33), the same
//! version's CUDA 12.9 wheel from the GitHub release with torch from
//! PyTorch's cu129 index. Every fact here is read from the wheels PyPI
//! serves (`mocks/pypi/pypi.json` names each with its sha256).

use super::engine::{Descriptor, Publisher, Variants, VersionCheck, VersionSyntax};
use super::python::{PYTHON, env_build, gpu_engine_here, torch_check, torch_without_cuda};
use super::{
    Engine, Exclusion, ExtraIndex, GpuNeeds, Offer, Plan, PythonEnv, Refusal, ReleaseWheel, Want, compare_versions,
    pick, unsupported,
};
use llmgw_model::host::{Arch, ComputeCapability, Host};
use llmgw_model::nvidia;

/// vLLM: from PyPI (its CUDA 12.9 builds as wheels of its GitHub releases),
/// variants `cu13`, `cu129`, `cu12`; dotted versions; `vllm --version`.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    engine: Engine::Vllm,
    name: "vllm",
    aliases: &[],
    publisher: Publisher::PyPi { project: "vllm" },
    variants: Variants::Named(&["cu13", "cu129", "cu12"]),
    versions: VersionSyntax::Pep440,
    example: "0.20.1",
    checked_with: VersionCheck::VERSION_FLAG,
    reported: true,
    plan: |want, host, _| plan(want, host),
};

/// The first vLLM whose PyPI build is CUDA 13: PyPI's 0.20.0 and 0.20.1
/// wheels' `vllm/_C.abi3.so` need `libcudart.so.13` and pin torch 2.11.0
/// (CUDA 13.0), 0.19.1's need `libcudart.so.12` and pin torch 2.10.0 (CUDA
/// 12.8); 0.20 publishes `+cu129` on its GitHub release beside it. Sources:
/// the wheels read with readelf (`mocks/pypi/pypi.json` names each with its
/// sha256); vllm-project/vllm#39878.
const CUDA13_SINCE: &str = "0.20";

/// The first vLLM without a CUDA 12.9 build: 0.33.0 pins torch 2.14.0, and
/// PyTorch 2.14 publishes no CUDA 12.9 build ("the CUDA 12 (cu129) wheels
/// and images are retired, because PyTorch 2.14 publishes no CUDA 12.9
/// builds", docs.sglang.io); 0.32.0 pins torch 2.13.0. Sources: vLLM
/// 0.33.0's METADATA (`torch==2.14.0`, read); PyPI metadata of 0.32.0.
const NO_CU129_SINCE: &str = "0.33";

/// The oldest GPU a vLLM version's kernels cover, by architecture: where
/// its `_C` extension's machine code starts (one stray `sm_52` cubin in
/// 0.19.1 and one `sm_75` in 0.20's aarch64 build aside: a single kernel,
/// against 19 to 50 per other architecture). x86-64: 7.0 up to 0.19.1
/// (`sm_70` ×28), 7.5 from 0.20 (0.20.1 and 0.33.0 start at `sm_75`, as
/// torch 2.11's and 2.14's `libtorch_cuda.so` do); aarch64: 8.0 (0.19.1,
/// 0.20.1 and 0.33.0, and torch 2.11's and 2.14's aarch64 builds). Source:
/// cuobjdump of PyPI's vllm 0.19.1, 0.20.1 and 0.33.0 and torch wheels
/// (`mocks/pypi/pypi.json`).
fn min_compute(version: &str, arch: Arch) -> ComputeCapability {
    let old = compare_versions(version, CUDA13_SINCE).is_lt();
    match (arch, old) {
        (Arch::Arm64, _) => ComputeCapability::new(8, 0),
        (_, true) => ComputeCapability::new(7, 0),
        (_, false) => ComputeCapability::new(7, 5),
    }
}

/// The torch a vLLM version pins, for a message: 2.10.0 before 0.20, 2.11.0
/// in 0.20, 2.14.0 in 0.33. Source: each version's METADATA (read).
fn torch_of(version: &str) -> &'static str {
    if compare_versions(version, CUDA13_SINCE).is_lt() {
        "2.10.0"
    } else if compare_versions(version, NO_CU129_SINCE).is_lt() {
        "2.11.0"
    } else {
        "2.14.0"
    }
}

/// The newest vLLM built for GPUs older than every build of the version
/// asked for, by architecture and the oldest GPU it covers: a V100 gets
/// 0.19.1, where 0.20 and later have nothing for it. Source: llmgw's Go recipe (`vllmNewestFor`).
const NEWEST_FOR_OLD_GPUS: &[(Arch, ComputeCapability, &str)] =
    &[(Arch::Amd64, ComputeCapability::new(7, 0), "0.19.1")];

/// PyTorch's index of CUDA 12.9 builds; PyPI's torch is built for CUDA 13.
/// Only torch, torchvision and torchaudio are taken from it.
fn pytorch_cu129() -> ExtraIndex {
    ExtraIndex {
        name: "pytorch-cu129".into(),
        pytorch_path: "cu129".into(),
        packages: vec!["torch".into(), "torchvision".into(), "torchaudio".into()],
    }
}

/// Plans vLLM on a host.
///
/// The version asked for, in the build the machine runs: CUDA 13 where the
/// driver allows, the same version's CUDA 12.9 build where it does not. One
/// version across the cluster wherever the GPUs allow it. Where they do not
/// (GPUs older than every build of that version), the newest version built
/// for them, said so in a note.
pub(super) fn plan(want: &Want, host: &Host) -> Result<Plan, Refusal> {
    gpu_engine_here("vLLM", host)?;
    if host.arch == Arch::Arm64 && compare_versions(&want.version, CUDA13_SINCE).is_lt() {
        return Err(torch_without_cuda("vLLM", &want.version, torch_of(&want.version)));
    }
    let lowest = host.min_compute_capability().expect("a GPU engine's host has a GPU");
    let (mut v, mut note) = (want.version.clone(), None);
    if lowest < min_compute(&v, host.arch) {
        let older = NEWEST_FOR_OLD_GPUS.iter().rev().find(|(a, from, _)| *a == host.arch && lowest >= *from);
        let Some((_, _, older)) = older else {
            return Err(unsupported(format!(
                "no vLLM is built for GPUs of compute capability {lowest} on {}: vLLM {} needs {} or newer",
                host.arch,
                want.version,
                min_compute(&want.version, host.arch)
            )));
        };
        note = Some(format!(
            "vLLM {older}, the newest built for compute capability {lowest}, instead of {}",
            want.version
        ));
        v = older.to_string();
    }
    let min_cc = Some(min_compute(&v, host.arch));
    let pypi = |variant: &str| {
        let env = PythonEnv {
            python: PYTHON.into(),
            requirements: vec![format!("vllm=={v}")],
            wheel: None,
            extra_index: None,
        };
        let mut b = env_build(variant, &v, env, "vllm", vec!["--version".into()], v.clone());
        b.gpu = torch_check(&[]);
        b.note = note.clone();
        b
    };
    let mut w = want.clone();
    if compare_versions(&v, CUDA13_SINCE).is_lt() {
        // PyPI's own build is CUDA 12 and is the only one; asked for cu129, this is it.
        let mut notes = vec![];
        if w.variant.as_deref() == Some("cu129") {
            w.variant = Some("cu12".into());
            notes.push(format!("cu129 was asked for; vLLM {v}'s CUDA 12 build is its PyPI build, cu12"));
        }
        let needs = GpuNeeds { driver: Some(nvidia::CUDA12_MIN_DRIVER), min_cc, jit: None };
        return pick(&w, vec![Offer { build: pypi("cu12"), needs, what: format!("vLLM {v}") }], host, notes)
            .map_err(|r| downgraded(r, &note));
    }
    let cu13 = Offer {
        build: pypi("cu13"),
        needs: GpuNeeds { driver: Some(nvidia::CUDA13_MIN_DRIVER), min_cc, jit: None },
        what: format!("vLLM {v} built for CUDA 13"),
    };
    if !compare_versions(&v, NO_CU129_SINCE).is_lt() {
        let gone = Exclusion {
            variant: "cu129".into(),
            reason: format!(
                "vLLM {v} has no CUDA 12.9 build: it needs torch {}, which PyTorch publishes for CUDA 13 only",
                torch_of(&v)
            ),
        };
        return with_exclusion(pick(&w, vec![cu13], host, vec![]), gone).map_err(|r| downgraded(r, &note));
    }
    let arch = if host.arch == Arch::Arm64 { "aarch64" } else { "x86_64" };
    let mut cu129 = pypi("cu129");
    if let super::Source::Python(env) = &mut cu129.source {
        env.requirements.clear();
        // Found in the release's assets rather than named: the manylinux tag
        // in the file's name changes between versions (2_28, 2_31, 2_35).
        env.wheel = Some(ReleaseWheel {
            repo: "vllm-project/vllm".into(),
            tag: format!("v{v}"),
            prefix: format!("vllm-{v}+cu129-"),
            suffix: format!("_{arch}.whl"),
        });
        env.extra_index = Some(pytorch_cu129());
    }
    pick(
        &w,
        vec![
            cu13,
            Offer {
                build: cu129,
                needs: GpuNeeds { driver: Some(nvidia::CUDA12_MIN_DRIVER), min_cc, jit: None },
                what: format!("vLLM {v} built for CUDA 12.9"),
            },
        ],
        host,
        vec![],
    )
    .map_err(|r| downgraded(r, &note))
}

/// A plan or refusal with one more build left out, and why.
fn with_exclusion(r: Result<Plan, Refusal>, gone: Exclusion) -> Result<Plan, Refusal> {
    match r {
        Ok(mut p) => {
            p.excluded.push(gone);
            Ok(p)
        }
        Err(Refusal::Unsupported { reason, mut excluded }) => {
            let reason = format!("{reason}; {}", gone.reason);
            excluded.push(gone);
            Err(Refusal::Unsupported { reason, excluded })
        }
        Err(r) => Err(r),
    }
}

/// A refusal of the older vLLM chosen for old GPUs, saying why it was chosen.
fn downgraded(r: Refusal, note: &Option<String>) -> Refusal {
    match (r, note) {
        (Refusal::Unsupported { reason, excluded }, Some(n)) => {
            Refusal::Unsupported { reason: format!("{n}, and that one cannot run either: {reason}"), excluded }
        }
        (r, _) => r,
    }
}
