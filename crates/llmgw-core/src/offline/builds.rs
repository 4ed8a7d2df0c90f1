//! `builds(engine, version, arch)`: every build of a version published for
//! an architecture (DESIGN.md section 5): what an offline bundle carries,
//! for nodes it has not seen.
//!
//! Read from the same recipes the nodes choose from, asked as a machine with
//! no GPU and as one with any NVIDIA GPU and the newest driver, so a bundle
//! and the nodes that install from it cannot disagree about which files a
//! build is. Archive engines only: a Python engine is an environment of
//! PyPI packages, which no bundle carries.

use serde::Serialize;

use crate::recipe::{self, Build, Engine, Source, Want};
use llmgw_model::host::{Arch, Host};

/// One build as a bundle carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundledBuild {
    /// The variant: `cpu`, `cuda-13.4`, `x86_64`.
    pub variant: String,
    /// `owner/name` of the GitHub repository publishing it: `ggml-org/llama.cpp`.
    pub repo: String,
    /// The release tag: `b11459`.
    pub tag: String,
    /// The release assets that make the build, in unpacking order.
    pub assets: Vec<String>,
}

/// Why the builds of a version cannot be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildsError {
    /// A Python engine: its builds are environments from PyPI.
    #[error(
        "{0} is installed from PyPI (a Python environment of several gigabytes), which an offline bundle does not carry; \
         bundles carry llama.cpp and uv"
    )]
    FromPyPI(Engine),
    /// The version is not written as the publisher tags it.
    #[error(transparent)]
    BadVersion(#[from] crate::recipe::VersionError),
    /// The engine publishes nothing this installer uses for the architecture.
    #[error("no build of {engine} {version} for {arch}: {reason}")]
    NoBuild {
        /// The engine.
        engine: Engine,
        /// The version asked for.
        version: String,
        /// The architecture asked for.
        arch: Arch,
        /// The recipe's reason.
        reason: String,
    },
}

/// Every build of `engine` at `version` for `arch`, in the recipe's order
/// (the build for a machine without a GPU first, then the GPU builds best
/// first), each with its assets.
///
/// # Errors
/// [`BuildsError::FromPyPI`] for vLLM and SGLang; [`BuildsError::BadVersion`]
/// when `version` is not in the engine's form; [`BuildsError::NoBuild`] when
/// the engine publishes no build for `arch` that this installer uses.
pub fn builds(engine: Engine, version: &str, arch: Arch) -> Result<Vec<BundledBuild>, BuildsError> {
    if engine.from_pypi() {
        return Err(BuildsError::FromPyPI(engine));
    }
    engine.check_version(version).map_err(BuildsError::BadVersion)?;
    let want = Want::new(engine, version);
    let mut out: Vec<BundledBuild> = Vec::new();
    let mut reasons = Vec::new();
    for host in [any_machine(arch, false), any_machine(arch, true)] {
        match recipe::plan(&want, &host) {
            Ok(plan) => {
                for b in plan.candidates.iter().filter_map(bundled) {
                    if !out.iter().any(|o| o.variant == b.variant) {
                        out.push(b);
                    }
                }
            }
            Err(e) => reasons.push(e.to_string()),
        }
    }
    if out.is_empty() {
        reasons.dedup();
        return Err(BuildsError::NoBuild { engine, version: version.to_string(), arch, reason: reasons.join("; ") });
    }
    Ok(out)
}

fn bundled(b: &Build) -> Option<BundledBuild> {
    match &b.source {
        Source::Archives { repo, tag, assets, .. } => Some(BundledBuild {
            variant: b.variant.clone(),
            repo: repo.clone(),
            tag: tag.clone(),
            assets: assets.clone(),
        }),
        Source::Python(_) => None,
    }
}

/// A machine of `arch` that every build of the architecture fits: the newest
/// C and C++ runtimes, room on disk, and with `gpu` any NVIDIA GPU that
/// every GPU build has kernels for and the newest driver.
fn any_machine(arch: Arch, gpu: bool) -> Host {
    let nvidia = if gpu {
        r#"{"driver": "9999.99.99", "gpus": [{"name": "any NVIDIA GPU", "compute_capability": "9.0", "memory_mib": 81920}]}"#
    } else {
        "null"
    };
    let text = format!(
        r#"{{"name": "any {arch} machine", "arch": "{arch}",
            "os": {{"id": "ubuntu", "version": "24.04", "package_family": "deb", "libc": "glibc",
                    "glibc": "2.99", "glibcxx": "3.4.99"}},
            "cpu": {{"model": "any", "flags": ["avx2", "fma", "sse4_2"]}},
            "nvidia": {nvidia}, "disk_free_gb": 100000,
            "packages": {{"installed": [], "installable": true}}}}"#
    );
    Host::from_json(&text).expect("the machine every build fits is a valid host description")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variants(engine: Engine, arch: Arch) -> Vec<String> {
        builds(engine, if engine == Engine::Uv { "0.12.20" } else { "b11459" }, arch)
            .unwrap()
            .into_iter()
            .map(|b| b.variant)
            .collect()
    }

    #[test]
    fn every_llama_cpp_build_per_architecture() {
        assert_eq!(variants(Engine::LlamaCpp, Arch::Amd64), ["cpu", "cuda-13.4", "cuda-12.8", "vulkan"]);
        assert_eq!(variants(Engine::LlamaCpp, Arch::Arm64), ["cpu", "cuda-13.4", "vulkan"]);
        assert_eq!(variants(Engine::Uv, Arch::Arm64), ["aarch64"]);
        let cuda = &builds(Engine::LlamaCpp, "b11459", Arch::Amd64).unwrap()[1];
        assert_eq!(
            cuda.assets,
            ["llama-b11459-bin-ubuntu-cuda-13.4-x64.tar.gz", "cudart-llama-b11459-bin-ubuntu-cuda-13.4-x64.tar.gz"]
        );
    }

    #[test]
    fn python_engines_and_other_architectures_are_refused_in_words() {
        let e = builds(Engine::Vllm, "0.20.1", Arch::Amd64).unwrap_err().to_string();
        assert!(e.contains("vllm is installed from PyPI") && e.contains("offline bundle does not carry"), "{e}");
        let e = builds(Engine::LlamaCpp, "b11459", Arch::Ppc64le).unwrap_err().to_string();
        assert!(e.starts_with("no build of llama.cpp b11459 for ppc64le: "), "{e}");
        assert!(builds(Engine::LlamaCpp, "10850", Arch::Amd64).is_err());
    }
}
