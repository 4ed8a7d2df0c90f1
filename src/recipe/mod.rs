//! Recipes: which published builds of an engine may run on a host, best
//! first, and why each of the others cannot. Pure functions of (want, host).
//!
//! [`plan`] is the entry point: it returns a [`Plan`] (the candidates in
//! order and the builds left out, each with its sentence) or a [`Refusal`]
//! (the engine is not for this node, or nothing of it can run here).

mod llama_cpp;
mod uv;
mod want;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::host::{ComputeCapability, Host, PackageFamily};
use crate::nvidia;

pub use want::{Engine, Want, WantsFile, compare_versions};

/// One published build, chosen for one machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Build {
    /// The variant naming the build: `cpu`, `cuda-13.3`, `vulkan`, `x86_64`.
    pub variant: String,
    /// The engine version this build is; can differ from the one asked for
    /// where only an older version runs on the host.
    pub version: String,
    /// The GitHub repository whose release carries the assets: `ggml-org/llama.cpp`.
    pub repo: String,
    /// The release tag: `b10850`, `0.12.20`, `v0.20.1`.
    pub tag: String,
    /// Release asset names, unpacked in order into one directory.
    pub assets: Vec<String>,
    /// OS packages the build needs, by package family.
    pub packages: BTreeMap<PackageFamily, Vec<String>>,
    /// The executable's file name, found anywhere in the unpacked tree.
    pub binary: String,
    /// Arguments that make the binary print its version and exit 0.
    pub version_args: Vec<String>,
    /// Text the version command's output (stdout and stderr) must contain:
    /// the proof that the archive is the version asked for.
    pub version_says: String,
    /// Libraries the binary loads at run time (dlopen) rather than links,
    /// each found beside the binary: `ldd` of the binary cannot see what
    /// they need, so each is checked with its own `ldd`.
    pub runtime_libraries: Vec<String>,
    /// The GPU backend, when the build computes on GPUs: it must list a
    /// device, or the build is not installed.
    pub gpu: Option<GpuBackend>,
    /// CPU flags the build is slow without; missing ones are a note, not a refusal.
    pub cpu_flags: Vec<String>,
    /// Free disk the installation needs before it starts, in GB (10^9 bytes).
    pub free_gb: u64,
    /// Why this build, when it is not the plain one.
    pub note: Option<String>,
}

/// How a GPU build shows that it computes: the backend library it loads
/// and the device names it lists with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuBackend {
    /// The backend library, beside the binary: `libggml-cuda.so`.
    pub library: String,
    /// The prefix of its devices in `--list-devices`: `CUDA` (CUDA0, CUDA1…), `Vulkan`.
    pub device_prefix: String,
    /// Arguments that list the devices: `--list-devices`.
    pub list_args: Vec<String>,
}

impl Build {
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

/// The variants an engine publishes, for checking a want's `:VARIANT`.
pub fn variants(engine: Engine) -> &'static [&'static str] {
    match engine {
        Engine::LlamaCpp => llama_cpp::VARIANTS,
        Engine::Uv => uv::VARIANTS,
        Engine::Vllm => &["cu13", "cu129", "cu12"],
        Engine::Sglang => &["cu13", "cu12"],
    }
}

/// The candidates for a want on a host, best first, with every build left
/// out and why.
///
/// # Errors
/// [`Refusal::NotHere`] when the engine is not for this kind of node;
/// [`Refusal::Unsupported`] when no build can run, with every reason.
pub fn plan(want: &Want, host: &Host) -> Result<Plan, Refusal> {
    match want.engine {
        Engine::LlamaCpp => llama_cpp::plan(want, host),
        Engine::Uv => uv::plan(want, host),
        Engine::Vllm | Engine::Sglang => Err(Refusal::Unsupported {
            reason: format!("this installer has no recipe for {} yet", want.engine),
            excluded: vec![],
        }),
    }
}

/// What a build needs of the host's NVIDIA side.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GpuNeeds {
    /// Driver branch every GPU needs (the CUDA runtime, compressed fatbins).
    pub driver: Option<u32>,
    /// Oldest compute capability with kernels in the build.
    pub min_cc: Option<ComputeCapability>,
    /// GPUs not covered by these SASS compute capabilities run the build's
    /// PTX, which needs the second driver branch.
    pub jit: Option<(&'static [ComputeCapability], u32)>,
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
            why.push(format!(
                "has kernels for compute capability {min} and newer; this node's lowest is {lowest}"
            ));
        }
        // The driver a host needs is the most any of its GPUs needs: a GPU
        // the build carries only as PTX needs the driver that compiles it.
        let mut need = self.driver.map(|d| (d, String::new()));
        if let Some((sass, jit_driver)) = self.jit {
            for g in &nv.gpus {
                let cc = g.compute_capability;
                let covered = sass.iter().any(|&s| nvidia::sass_runs_on(s, cc));
                if !covered
                    && (self.min_cc.is_none_or(|m| cc >= m))
                    && need.as_ref().is_none_or(|(d, _)| *d < jit_driver)
                {
                    need = Some((jit_driver, format!(" (compute capability {cc} is carried as PTX only)")));
                }
            }
        }
        if let Some((d, because)) = need
            && have < d
        {
            why.push(format!(
                "needs NVIDIA driver {d} or newer{because}; this node has {}",
                nv.driver
            ));
        }
        if why.is_empty() {
            None
        } else {
            Some(format!("{what} {}", why.join(", and ")))
        }
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
            excluded.push(Exclusion {
                variant: o.build.variant,
                reason: format!("not the variant asked for ({v})"),
            });
            continue;
        }
        match o.needs.refusal(&o.what, host) {
            Some(reason) => excluded.push(Exclusion {
                variant: o.build.variant,
                reason,
            }),
            None => candidates.push(o.build),
        }
    }
    if !candidates.is_empty() {
        return Ok(Plan {
            candidates,
            excluded,
            notes,
        });
    }
    let reason = match &want.variant {
        Some(v) if !known.contains(v) => {
            format!(
                "{} {} has no {v} build for this node; it has {}",
                want.engine,
                want.version,
                known.join(", ")
            )
        }
        asked => {
            let why: Vec<&str> = excluded
                .iter()
                .filter(|e| asked.as_ref().is_none_or(|v| **v == e.variant))
                .map(|e| e.reason.as_str())
                .collect();
            format!(
                "no build of {} {} runs on this node: {}",
                want.engine,
                want.version,
                why.join("; ")
            )
        }
    };
    Err(Refusal::Unsupported { reason, excluded })
}

/// An `Unsupported` with no builds to list: the sentence says why none could be.
pub(crate) fn unsupported(sentence: String) -> Refusal {
    Refusal::Unsupported {
        reason: sentence,
        excluded: vec![],
    }
}
