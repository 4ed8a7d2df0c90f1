//! Recipes: which published builds of an engine may run on a host, best
//! first, and why each of the others cannot. Pure functions of (want, host).
//!
//! [`plan`] is the entry point: it returns a [`Plan`] (the candidates in
//! order and the builds left out, each with its sentence) or a [`Refusal`]
//! (the engine is not for this node, or nothing of it can run here).
//!
//! | file | what lives there |
//! | --- | --- |
//! | `engine.rs` | each engine's descriptor: publisher, variants, version syntax, version check |
//! | `want.rs` | wants and wants files, engines, versions |
//! | `wheel_name.rs` | wheel file names, their tags, and which hosts can install them |
//! | `llama_cpp.rs`, `uv.rs`, `vllm.rs`, `sglang.rs`, `python.rs` | each engine's recipe; what the Python engines share |
//!
//! Pure core: functions of (want, host), over `llmgw_model`'s host and
//! NVIDIA rules. Uses: nothing of this crate.

pub mod engine;
mod llama_cpp;
mod python;
mod sglang;
mod uv;
mod vllm;
mod want;
pub mod wheel_name;

use std::collections::BTreeMap;

use serde::Serialize;

use llmgw_model::host::{ComputeCapability, Host, PackageFamily};
use llmgw_model::nvidia;

pub use engine::{Descriptor, Publisher, VersionCheck, VersionSyntax};
pub use llama_cpp::build_in_version_line;
pub use python::{PYTHON, UV_VERSION};
pub use want::{
    Engine, LATEST, MAX_VERSION_BYTES, UnknownEngine, UrlError, VersionError, VersionProblem, Want, WantError,
    WantName, WantNameError, WantsFile, WantsFileError, check_http_url, compare_versions, first_repeat, is_sha256_hex,
    plain_name, wants_json_schema,
};

/// One published build, chosen for one machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Build {
    /// The variant naming the build: `cpu`, `cuda-13.3`, `vulkan`, `x86_64`, `cu13`.
    pub variant: String,
    /// The engine version this build is; can differ from the one asked for
    /// where only an older version runs on the host.
    pub version: String,
    /// Where the build comes from: release archives, or a Python environment.
    pub source: Source,
    /// OS packages the build needs, by package family.
    pub packages: BTreeMap<PackageFamily, Vec<String>>,
    /// The executable's file name, found anywhere in the unpacked tree (in
    /// a Python environment's `bin/`).
    pub binary: String,
    /// Arguments that make the binary print its version and exit 0.
    pub version_args: Vec<String>,
    /// Texts one of which the version command's output (stdout and stderr)
    /// must contain: the proof that what was installed is the version asked
    /// for (a program whose version line changed form has two).
    pub version_says: Vec<String>,
    /// Libraries the binary loads at run time (dlopen) rather than links,
    /// each found beside the binary: `ldd` of the binary cannot see what
    /// they need, so each is checked with its own `ldd`.
    pub runtime_libraries: Vec<String>,
    /// How the build shows that it computes: on the GPU, or for
    /// llama.cpp's CPU build on the CPU; `None` for a build that computes
    /// nothing (uv).
    pub gpu: Option<GpuCheck>,
    /// CPU flags the build is slow without; missing ones are a note, not a refusal.
    pub cpu_flags: Vec<String>,
    /// Free disk the installation needs before it starts, in GB (10^9 bytes).
    pub free_gb: u64,
    /// Why this build, when it is not the plain one.
    pub note: Option<String>,
    /// What must be installed first, converged as wants of their own
    /// (uv, which makes a Python engine's environment).
    #[serde(skip)]
    pub requires: Vec<Want>,
}

/// Where a build's files come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// `.tar.gz` assets of a GitHub release, unpacked in order into one directory.
    Archives {
        /// `owner/name` of the repository: `ggml-org/llama.cpp`.
        repo: String,
        /// The release tag: `b10850`, `0.12.20`.
        tag: String,
        /// The asset names.
        assets: Vec<String>,
        /// Those of `assets` whose files go beside the binary, whatever
        /// their archive's top-level directory: a runtime the binary's
        /// RUNPATH (`$ORIGIN`) must find (llama.cpp's `cudart-…` companion,
        /// which unpacks into a directory of its own).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        beside_binary: Vec<String>,
    },
    /// A Python environment created and filled by uv.
    Python(PythonEnv),
}

/// A Python environment: an interpreter version and what uv installs into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PythonEnv {
    /// The interpreter version uv creates the environment with: `3.12`.
    pub python: String,
    /// Requirements installed from PyPI: `vllm==0.20.1`.
    pub requirements: Vec<String>,
    /// The engine itself as a wheel of a GitHub release, checked against
    /// GitHub's digest, when it is not on PyPI.
    pub wheel: Option<ReleaseWheel>,
    /// An index besides PyPI, for its named packages only.
    pub extra_index: Option<ExtraIndex>,
}

/// A wheel published as a GitHub release asset: the asset whose name starts
/// with `prefix` and ends with `suffix` (the manylinux part between changes
/// from release to release).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseWheel {
    /// `owner/name`: `vllm-project/vllm`.
    pub repo: String,
    /// The release tag: `v0.20.1`.
    pub tag: String,
    /// The start of the asset's name: `vllm-0.20.1+cu129-`.
    pub prefix: String,
    /// The end of the asset's name: `_x86_64.whl`.
    pub suffix: String,
}

/// A package index consulted for some packages only; every other package
/// comes from PyPI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtraIndex {
    /// The index's name in uv's configuration: `pytorch-cu129`.
    pub name: String,
    /// The path under the PyTorch wheel host: `cu129` (for
    /// `https://download.pytorch.org/whl/cu129`).
    pub pytorch_path: String,
    /// The packages taken from it: `torch`, `torchvision`, `torchaudio`.
    pub packages: Vec<String>,
}

/// How a GPU build shows that it computes: the backend library it loads,
/// the device names it lists with it, and the program that then computes
/// on each device listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuBackend {
    /// The backend library, beside the binary: `libggml-cuda.so`.
    pub library: String,
    /// The prefix of its devices in `--list-devices`: `CUDA` (CUDA0, CUDA1…), `Vulkan`.
    pub device_prefix: String,
    /// Arguments that list the devices: `--list-devices`.
    pub list_args: Vec<String>,
    /// What computes on each device listed, `{device}` its name.
    pub model_run: ModelRun,
}

/// A program of the build that loads the tiny model (`assets/tiny-llama.gguf`,
/// written for the check) and generates a few tokens with it: the proof
/// that the build has kernels that run here, which listing devices is not
/// (listing launches no kernel).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelRun {
    /// The program, beside the binary: `llama-bench`.
    pub program: String,
    /// Its arguments, `{model}` standing for the model file's path and
    /// `{device}` for the device it computes on (`CUDA0`).
    pub args: Vec<String>,
}

impl ModelRun {
    /// The arguments with the model's path and the device put in.
    pub fn args_for(&self, model: &std::path::Path, device: &str) -> Vec<String> {
        let model = model.display().to_string();
        self.args.iter().map(|a| a.replace("{model}", &model).replace("{device}", device)).collect()
    }
}

/// How a build proves that it computes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuCheck {
    /// The binary lists a device with its GPU backend library, then
    /// [`GpuBackend::model_run`] computes on every device listed.
    Devices(GpuBackend),
    /// A CPU build: the program computes on the CPU (no device).
    Cpu(ModelRun),
    /// The environment's Python computes on every GPU with torch, and
    /// imports each of `modules` (kernel packages) there.
    Torch {
        /// Modules the check also imports: `sgl_kernel`.
        modules: Vec<String>,
    },
}

impl Build {
    /// The GPU backend library, for a build that lists devices with one.
    pub fn gpu_backend(&self) -> Option<&GpuBackend> {
        match &self.gpu {
            Some(GpuCheck::Devices(b)) => Some(b),
            _ => None,
        }
    }

    /// The OS packages this build needs on a family; none for a family the
    /// recipe names nothing for.
    pub fn packages_for(&self, family: PackageFamily) -> &[String] {
        self.packages.get(&family).map_or(&[], Vec::as_slice)
    }
}

/// A build left out for a host, and why, in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exclusion {
    /// The variant left out.
    pub variant: String,
    /// Why: "llama.cpp built for CUDA 13.3 needs NVIDIA driver 580 or newer; this node has 535.183.01".
    pub reason: String,
}

/// What a recipe offers a host: candidates best first, and every build left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Builds that may run, in preference order; never empty.
    pub candidates: Vec<Build>,
    /// Builds the recipe knows and left out for this host, each with its reason.
    pub excluded: Vec<Exclusion>,
    /// Notes on the host that do not refuse a build (a missing `avx2`).
    pub notes: Vec<String>,
}

/// Why a recipe offers nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The engine is not meant for this node (vLLM without an NVIDIA GPU):
    /// not a fault.
    #[error("{reason}")]
    NotHere {
        /// Why, in one sentence.
        reason: String,
    },
    /// The engine should run here and no published build can.
    #[error("{reason}")]
    Unsupported {
        /// Why, in one sentence per build left out.
        reason: String,
        /// Every build left out, with its reason.
        excluded: Vec<Exclusion>,
    },
}

impl Engine {
    /// The engine's descriptor, declared in its recipe's file.
    pub fn descriptor(self) -> &'static Descriptor {
        match self {
            Engine::LlamaCpp => &llama_cpp::DESCRIPTOR,
            Engine::Vllm => &vllm::DESCRIPTOR,
            Engine::Sglang => &sglang::DESCRIPTOR,
            Engine::Uv => &uv::DESCRIPTOR,
        }
    }
}

/// Whether `engine` publishes a build named `variant`, for checking a
/// want's `:VARIANT` (llama.cpp's CUDA builds are named after their
/// toolkit: any `cuda-X.Y`).
pub fn is_variant(engine: Engine, variant: &str) -> bool {
    engine.descriptor().is_variant(variant)
}

/// An engine's variants in words, for a message: `cu13, cu129, cu12`.
pub fn variants_in_words(engine: Engine) -> String {
    engine.descriptor().variants_in_words()
}

/// What is known of the release a want's builds are published in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published<'a> {
    /// The release's asset names, as the publisher (or a saved release
    /// JSON) lists them: a build whose assets are missing is left out.
    Assets(&'a [String]),
    /// Not known (a plan made offline): the recipe's rules decide.
    Unknown,
}

/// The GitHub release a want's builds are published in, when they are the
/// assets of one (llama.cpp): `(repo, tag)`. A release's asset list decides
/// which of its builds exist ([`plan_published`]).
pub fn release_of(want: &Want) -> Option<(&'static str, String)> {
    match want.engine.descriptor().publisher {
        Publisher::Releases { repo, assets_decide: true, .. } => Some((repo, want.version.clone())),
        _ => None,
    }
}

/// The GitHub repository whose releases publish `engine`'s builds:
/// `ggml-org/llama.cpp`, `astral-sh/uv`; `None` for the engines installed
/// from a package index.
pub fn repository_of(engine: Engine) -> Option<&'static str> {
    engine.descriptor().repository()
}

/// The candidates for a want on a host, best first, with every build left
/// out and why.
///
/// # Errors
/// [`Refusal::NotHere`] when the engine is not for this kind of node;
/// [`Refusal::Unsupported`] when no build can run, with every reason.
pub fn plan(want: &Want, host: &Host) -> Result<Plan, Refusal> {
    plan_published(want, host, Published::Unknown)
}

/// Why `ENGINE@latest` has no plan: a plan never asks the publisher, and
/// `latest` is resolved against it when the want is installed. Said by
/// `plan_published` and by `llmgw plan` (as bad input).
pub fn latest_is_not_planned(want: &Want) -> String {
    format!(
        "`{want}` names no version to plan: `latest` is resolved against the publisher when the want is \
         installed (simulate, provision, agent); plan a version such as {}@{}",
        want.engine,
        want.engine.descriptor().example
    )
}

/// As [`plan`], from what is known of the release: a build whose assets
/// the release lacks is left out, saying so.
///
/// # Errors
/// As [`plan`].
pub fn plan_published(want: &Want, host: &Host, published: Published) -> Result<Plan, Refusal> {
    if want.is_latest() {
        return Err(unsupported(latest_is_not_planned(want)));
    }
    // Every build here is linked against glibc: llama.cpp's and uv's are
    // built on glibc systems, and vLLM's and SGLang's wheels are manylinux.
    let gpu_engine = want.engine.from_pypi();
    if host.os.libc == llmgw_model::host::Libc::Musl && !(gpu_engine && host.nvidia.is_none()) {
        if want.engine == Engine::Uv {
            // uv publishes static musl builds, but it is installed here only
            // for vLLM and SGLang, which do not run on musl: not a fault.
            return Err(Refusal::NotHere {
                reason: format!(
                    "uv is installed only for vLLM and SGLang, whose wheels need glibc, and this is a musl system ({} {})",
                    host.os.id, host.os.version
                ),
            });
        }
        let why = format!("{}'s Linux builds need glibc", want.version);
        return Err(unsupported(format!(
            "{} {why}, and this is a musl system ({} {})",
            want.engine, host.os.id, host.os.version
        )));
    }
    (want.engine.descriptor().plan)(want, host, published)
}

/// What a build needs of the host's NVIDIA side.
#[derive(Debug, Clone, Default)]
pub(crate) struct GpuNeeds {
    /// Driver branch every GPU needs (the CUDA runtime, compressed fatbins).
    pub driver: Option<u32>,
    /// Oldest compute capability with kernels in the build.
    pub min_cc: Option<ComputeCapability>,
    /// GPUs the build's machine code does not cover run its PTX, which
    /// needs a newer driver.
    pub jit: Option<Jit>,
}

/// A build's machine code, and the driver its PTX needs on other GPUs.
#[derive(Debug, Clone)]
pub(crate) struct Jit {
    /// SASS for the family (`86-real` runs on 8.6, 8.7, 8.9).
    pub sass: Vec<ComputeCapability>,
    /// Arch-specific SASS (`120a-real` runs on 12.0 alone).
    pub sass_exact: Vec<ComputeCapability>,
    /// The driver branch that compiles the PTX.
    pub driver: u32,
}

impl GpuNeeds {
    /// Why a host cannot run a build described as `what`, or `None`.
    pub(crate) fn refusal(&self, what: &str, host: &Host) -> Option<String> {
        let nv = host.nvidia.as_ref()?;
        let have = nv.driver.major();
        let mut why = Vec::new();
        let lowest = host.min_compute_capability()?;
        if let Some(min) = self.min_cc
            && lowest < min
        {
            why.push(format!("has kernels for compute capability {min} and newer; this node's lowest is {lowest}"));
        }
        // The driver a host needs is the most any of its GPUs needs: a GPU
        // the build carries only as PTX needs the driver that compiles it.
        let mut need = self.driver.map(|d| (d, String::new()));
        if let Some(jit) = &self.jit {
            for g in &nv.gpus {
                let cc = g.compute_capability;
                let covered = nvidia::sass_covers(&jit.sass, &jit.sass_exact, cc);
                if !covered && self.min_cc.is_none_or(|m| cc >= m) && need.as_ref().is_none_or(|(d, _)| *d < jit.driver)
                {
                    need = Some((jit.driver, format!(" (compute capability {cc} is carried as PTX only)")));
                }
            }
        }
        if let Some((d, because)) = need
            && have < d
        {
            why.push(format!("needs NVIDIA driver {d} or newer{because}; this node has {}", nv.driver));
        }
        if why.is_empty() { None } else { Some(format!("{what} {}", why.join(", and "))) }
    }
}

/// One build the recipe knows and what it needs of the GPU side.
pub(crate) struct Offer {
    pub build: Build,
    pub needs: GpuNeeds,
    /// The build in words: "llama.cpp built for CUDA 13.3".
    pub what: String,
}

/// Keeps the offers a host can run, in order, restricted to the variant
/// asked for; with none left, says why each went.
pub(crate) fn pick(want: &Want, offers: Vec<Offer>, host: &Host, notes: Vec<String>) -> Result<Plan, Refusal> {
    let known: Vec<String> = offers.iter().map(|o| o.build.variant.clone()).collect();
    let mut candidates = Vec::new();
    let mut excluded = Vec::new();
    for o in offers {
        if let Some(v) = &want.variant
            && *v != o.build.variant
        {
            excluded.push(Exclusion { variant: o.build.variant, reason: format!("not the variant asked for ({v})") });
            continue;
        }
        match o.needs.refusal(&o.what, host) {
            Some(reason) => excluded.push(Exclusion { variant: o.build.variant, reason }),
            None => candidates.push(o.build),
        }
    }
    if !candidates.is_empty() {
        return Ok(Plan { candidates, excluded, notes });
    }
    let reason = match &want.variant {
        Some(v) if !known.contains(v) => {
            format!("{} {} has no {v} build for this node; it has {}", want.engine, want.version, known.join(", "))
        }
        asked => {
            let why: Vec<&str> = excluded
                .iter()
                .filter(|e| asked.as_ref().is_none_or(|v| **v == e.variant))
                .map(|e| e.reason.as_str())
                .collect();
            format!("no build of {} {} runs on this node: {}", want.engine, want.version, why.join("; "))
        }
    };
    Err(Refusal::Unsupported { reason, excluded })
}

/// An `Unsupported` with no builds to list: the sentence says why none could be.
pub(crate) fn unsupported(sentence: String) -> Refusal {
    Refusal::Unsupported { reason: sentence, excluded: vec![] }
}
