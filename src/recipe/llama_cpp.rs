//! llama.cpp: prebuilt release archives of `ggml-org/llama.cpp`, one tag per
//! build number (`b10850`), binary `llama-server`.

use std::collections::BTreeMap;

use super::{
    Build, Exclusion, GpuBackend, GpuCheck, GpuNeeds, Jit, Offer, Plan, Refusal, Source, Want, pick, unsupported,
};
use crate::host::{Arch, ComputeCapability, Host, PackageFamily};
use crate::nvidia;

/// The variants llama.cpp publishes for Linux that this recipe installs.
pub(super) const VARIANTS: &[&str] = &["cpu", "cuda-13.3", "cuda-12.8", "vulkan"];

/// The GitHub repository of the releases.
const REPO: &str = "ggml-org/llama.cpp";

/// The CUDA 13 toolkit of the Linux CUDA builds. Source: the release's
/// asset names (`llama-<tag>-bin-ubuntu-cuda-13.3-x64.tar.gz`), from
/// `ggml-org/llama.cpp#28186` (Linux CUDA builds added, about b10800); later
/// tags (b11101) carry 13.4 after `#29147`, which this recipe does not know yet.
const CUDA13: &str = "13.3";

/// The CUDA 12 toolkit of the x64 Linux CUDA build (x64 only). Source: as [`CUDA13`].
const CUDA12: &str = "12.8";

/// The compute capabilities llama.cpp's CUDA 12.8 build carries as machine
/// code for their family; the rest (5.0, 6.1, 7.0, 7.5, 8.0, 9.0) it carries
/// as PTX. Source: ggml's default `CMAKE_CUDA_ARCHITECTURES` for CUDA 12.8
/// with `GGML_NATIVE=OFF` (`ggml/src/ggml-cuda/CMakeLists.txt`): `86-real 89-real`.
const CUDA12_SASS: &[ComputeCapability] = &[ComputeCapability::new(8, 6), ComputeCapability::new(8, 9)];

/// Arch-specific machine code of the CUDA 12.8 build: `120a-real` (ggml
/// rewrites 120 to 120a), which runs on 12.0 alone, so a GB10 (12.1) needs
/// the PTX. Source: as [`CUDA12_SASS`].
const CUDA12_SASS_EXACT: &[ComputeCapability] = &[ComputeCapability::new(12, 0)];

/// The oldest GPU the CUDA 12.8 build has kernels for: `50-virtual`. Source: as [`CUDA12_SASS`].
const CUDA12_MIN_CC: ComputeCapability = ComputeCapability::new(5, 0);

/// The oldest GPU the CUDA 13 builds have kernels for: CUDA 13 dropped
/// everything below Turing. Source: NVIDIA, "Navigating GPU Architecture
/// Support" (CUDA 13.0 removes CC < 7.5); ggml's CUDA >= 13 list starts at `75`.
const CUDA13_MIN_CC: ComputeCapability = ComputeCapability::new(7, 5);

/// The driver the CUDA 12.8 build needs on a GPU it carries as SASS. The
/// seed's recipe said 525 (CUDA 12's minor-version floor); the simulation's
/// GPU check showed an RTX 3090 on 535 listing no CUDA device, because the
/// build's fatbins are compressed (ggml's default `GGML_CUDA_COMPRESSION_MODE`)
/// and drivers before 550 cannot load them. Source:
/// `ollama/ollama@discover/cuda_compat.go`, PR #16895.
const CUDA12_SASS_DRIVER: u32 = nvidia::FATBIN_COMPRESSION_MIN_DRIVER;

/// The driver the CUDA 12.8 build needs on a GPU it carries only as PTX:
/// the driver compiles the PTX and must be as new as CUDA 12.8 (570.124.06).
/// The recipe's own number, so a change to it shows in the matrix against
/// the simulated world's ([`nvidia::ptx_jit_min_driver`]). Source:
/// `ollama/ollama@discover/cuda_compat.go` (`minLegacyComputeJITNVIDIADriverMajor = 570`).
const CUDA12_PTX_DRIVER: u32 = 570;

/// Plans llama.cpp on a host.
pub(super) fn plan(want: &Want, host: &Host) -> Result<Plan, Refusal> {
    let arch = match host.arch {
        Arch::Amd64 => "x64",
        Arch::Arm64 => "arm64",
        other => {
            return Err(unsupported(format!(
                "llama.cpp publishes no Linux build for {other} that this installer can use (only x64 and arm64)"
            )));
        }
    };
    let v = &want.version;
    let base = |variant: &str, assets: Vec<String>| Build {
        variant: variant.to_string(),
        version: v.clone(),
        source: Source::Archives { repo: REPO.to_string(), tag: v.clone(), assets },
        // Everything else the build links is in the archive or in any glibc
        // system; OpenMP's runtime (the CPU backends link it) is what minimal
        // and cloud images lack.
        packages: BTreeMap::from([
            (PackageFamily::Deb, vec!["libgomp1".to_string()]),
            (PackageFamily::Rpm, vec!["libgomp".to_string()]),
            (PackageFamily::Apk, vec!["libgomp".to_string()]),
        ]),
        binary: "llama-server".to_string(),
        version_args: vec!["--version".to_string()],
        // `llama-server --version` prints "version: <build number> (<commit>)"
        // on stderr (common/arg.cpp).
        version_says: format!("version: {} ", &v[1..]),
        // With GGML_BACKEND_DL the CPU backends are loaded at run time; the
        // baseline variant is the one every CPU of the architecture loads.
        runtime_libraries: vec![
            if arch == "x64" { "libggml-cpu-x64.so" } else { "libggml-cpu-armv8.0_1.so" }.to_string(),
        ],
        gpu: None,
        // The archive carries a CPU backend per generation, down to SSE4.2;
        // below AVX2 it runs several times slower.
        cpu_flags: if arch == "x64" { vec!["avx2".to_string()] } else { vec![] },
        free_gb: 2,
        note: None,
        requires: vec![],
    };
    let notes = missing_flags_note(host, &base("cpu", vec![]));

    if host.nvidia.is_none() {
        // No NVIDIA GPU: the CPU build, the only one that runs without a GPU.
        let cpu = base("cpu", vec![format!("llama-{v}-bin-ubuntu-{arch}.tar.gz")]);
        let mut plan = pick(
            want,
            vec![Offer { build: cpu, needs: GpuNeeds::default(), what: "llama.cpp for the CPU".into() }],
            host,
            notes,
        )?;
        // The GPU builds are left out too, and say why.
        let gpu_variants = VARIANTS.iter().filter(|&&g| g != "cpu" && (arch == "x64" || g != "cuda-12.8"));
        plan.excluded.extend(gpu_variants.map(|g| Exclusion {
            variant: g.to_string(),
            reason: format!("llama.cpp's {g} build is installed on nodes with an NVIDIA GPU; this node has none"),
        }));
        return Ok(plan);
    }

    if want.variant.as_deref() == Some("cpu") {
        return Err(unsupported(
            "llama.cpp's cpu build is not installed on a node with an NVIDIA GPU: it would serve GPU placements on the CPU; \
             ask for vulkan or a cuda variant"
                .to_string(),
        ));
    }
    // On an NVIDIA node never the CPU build: that is a GPU placement served
    // on the CPU. GPU builds best first; the release carries the CUDA runtime
    // beside each CUDA build, so the node needs a driver and no toolkit.
    let cuda = |toolkit: &str| {
        let stem = format!("bin-ubuntu-cuda-{toolkit}-{arch}.tar.gz");
        let mut b =
            base(&format!("cuda-{toolkit}"), vec![format!("llama-{v}-{stem}"), format!("cudart-llama-{v}-{stem}")]);
        b.gpu = Some(GpuCheck::Devices(GpuBackend {
            library: "libggml-cuda.so".into(),
            device_prefix: "CUDA".into(),
            list_args: vec!["--list-devices".into()],
        }));
        b.free_gb = 4;
        b
    };
    let mut vulkan = base("vulkan", vec![format!("llama-{v}-bin-ubuntu-vulkan-{arch}.tar.gz")]);
    vulkan.gpu = Some(GpuCheck::Devices(GpuBackend {
        library: "libggml-vulkan.so".into(),
        device_prefix: "Vulkan".into(),
        list_args: vec!["--list-devices".into()],
    }));
    for (family, loader) in [
        (PackageFamily::Deb, "libvulkan1"),
        (PackageFamily::Rpm, "vulkan-loader"),
        (PackageFamily::Apk, "vulkan-loader"),
    ] {
        vulkan.packages.get_mut(&family).expect("every family has libgomp").push(loader.to_string());
    }

    let mut offers = vec![Offer {
        build: cuda(CUDA13),
        needs: GpuNeeds { driver: Some(nvidia::CUDA13_MIN_DRIVER), min_cc: Some(CUDA13_MIN_CC), jit: None },
        what: format!("llama.cpp built for CUDA {CUDA13}"),
    }];
    if arch == "x64" {
        offers.push(Offer {
            build: cuda(CUDA12),
            needs: GpuNeeds {
                driver: Some(CUDA12_SASS_DRIVER),
                min_cc: Some(CUDA12_MIN_CC),
                jit: Some(Jit { sass: CUDA12_SASS, sass_exact: CUDA12_SASS_EXACT, driver: CUDA12_PTX_DRIVER }),
            },
            what: format!("llama.cpp built for CUDA {CUDA12}"),
        });
    }
    // Vulkan runs on any card whose driver has Vulkan: the generations the
    // CUDA builds no longer cover. Whether it does is the GPU check's to see.
    offers.push(Offer { build: vulkan, needs: GpuNeeds::default(), what: "llama.cpp built for Vulkan".into() });
    pick(want, offers, host, notes)
}

/// A note for each CPU flag a build is slow without and the host lacks.
fn missing_flags_note(host: &Host, build: &Build) -> Vec<String> {
    build
        .cpu_flags
        .iter()
        .filter(|f| !host.cpu.flags.contains(*f))
        .map(|f| format!("this CPU has no {f}: llama.cpp runs on an older CPU backend, several times slower"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::{Engine, plan};

    fn host(arch: &str, driver: Option<&str>, ccs: &[&str]) -> Host {
        let nvidia = driver.map(|d| {
            let gpus: Vec<String> = ccs
                .iter()
                .map(|cc| format!(r#"{{"name": "GPU {cc}", "compute_capability": "{cc}", "memory_mib": 16384}}"#))
                .collect();
            format!(r#"{{"driver": "{d}", "gpus": [{}]}}"#, gpus.join(","))
        });
        Host::from_json(&format!(
            r#"{{"name": "t", "arch": "{arch}",
                "os": {{"id": "ubuntu", "version": "24.04", "package_family": "deb", "libc": "glibc", "glibc": "2.39", "glibcxx": "3.4.33"}},
                "cpu": {{"model": "x", "flags": ["avx2"]}}, "nvidia": {},
                "disk_free_gb": 100, "packages": {{"installed": [], "installable": true}}}}"#,
            nvidia.unwrap_or_else(|| "null".into())
        ))
        .unwrap()
    }

    fn want() -> Want {
        Want::new(Engine::LlamaCpp, "b10850")
    }

    fn variants(p: &Plan) -> Vec<&str> {
        p.candidates.iter().map(|b| b.variant.as_str()).collect()
    }

    #[test]
    fn v100_on_535_gets_only_vulkan_with_both_cuda_reasons() {
        let p = plan(&want(), &host("amd64", Some("535.183.01"), &["7.0"])).unwrap();
        assert_eq!(variants(&p), ["vulkan"]);
        assert_eq!(
            p.excluded[0].reason,
            "llama.cpp built for CUDA 13.3 has kernels for compute capability 7.5 and newer; this node's lowest is 7.0, \
             and needs NVIDIA driver 580 or newer; this node has 535.183.01"
        );
        assert_eq!(
            p.excluded[1].reason,
            "llama.cpp built for CUDA 12.8 needs NVIDIA driver 570 or newer (compute capability 7.0 is carried as PTX only); \
             this node has 535.183.01"
        );
    }

    #[test]
    fn sass_gpus_need_550_for_compressed_fatbins() {
        let on_535 = plan(&want(), &host("amd64", Some("535.183.01"), &["8.6"])).unwrap();
        assert_eq!(variants(&on_535), ["vulkan"]);
        assert!(on_535.excluded[1].reason.contains("needs NVIDIA driver 550 or newer"), "{:?}", on_535.excluded);
        let on_550 = plan(&want(), &host("amd64", Some("550.144.03"), &["8.6"])).unwrap();
        assert_eq!(variants(&on_550), ["cuda-12.8", "vulkan"]);
    }

    #[test]
    fn a_mixed_node_needs_the_driver_its_ptx_gpu_needs() {
        let p = plan(&want(), &host("amd64", Some("550.144.03"), &["8.6", "9.0"])).unwrap();
        assert_eq!(variants(&p), ["vulkan"]);
        assert!(p.excluded[1].reason.contains("compute capability 9.0 is carried as PTX only"));
    }

    #[test]
    fn no_cuda_12_build_on_arm64_and_never_cpu_on_a_gpu_node() {
        let p = plan(&want(), &host("arm64", Some("570.133.20"), &["9.0"])).unwrap();
        assert_eq!(variants(&p), ["vulkan"]);
        let p = plan(&want(), &host("arm64", Some("580.95.05"), &["9.0"])).unwrap();
        assert_eq!(variants(&p), ["cuda-13.3", "vulkan"]);
        let Source::Archives { assets, .. } = &p.candidates[0].source else { panic!("archives") };
        assert_eq!(assets[1], "cudart-llama-b10850-bin-ubuntu-cuda-13.3-arm64.tar.gz");
    }

    #[test]
    fn the_cpu_build_is_refused_on_a_gpu_node_even_when_asked_for() {
        let mut w = want();
        w.variant = Some("cpu".into());
        let Err(Refusal::Unsupported { reason, .. }) = plan(&w, &host("amd64", Some("580.95.05"), &["9.0"])) else {
            panic!("expected a refusal")
        };
        assert!(reason.contains("not installed on a node with an NVIDIA GPU"), "{reason}");
    }

    #[test]
    fn no_gpu_gets_the_cpu_build() {
        let p = plan(&want(), &host("amd64", None, &[])).unwrap();
        assert_eq!(variants(&p), ["cpu"]);
        let left: Vec<&str> = p.excluded.iter().map(|e| e.variant.as_str()).collect();
        assert_eq!(left, ["cuda-13.3", "cuda-12.8", "vulkan"], "every GPU build is left out, with its reason");
        let Source::Archives { assets, .. } = &p.candidates[0].source else { panic!("archives") };
        assert_eq!(assets, &["llama-b10850-bin-ubuntu-x64.tar.gz"]);
    }

    #[test]
    fn a_variant_the_node_cannot_run_is_refused_with_the_reason() {
        let mut w = want();
        w.variant = Some("cuda-13.3".into());
        let Err(Refusal::Unsupported { reason, .. }) = plan(&w, &host("amd64", Some("535.183.01"), &["7.0"])) else {
            panic!("expected a refusal")
        };
        assert!(reason.contains("needs NVIDIA driver 580"), "{reason}");
        w.variant = Some("cuda-12.8".into());
        let Err(Refusal::Unsupported { reason, .. }) = plan(&w, &host("arm64", Some("580.95.05"), &["9.0"])) else {
            panic!("expected a refusal")
        };
        assert_eq!(reason, "llama.cpp b10850 has no cuda-12.8 build for this node; it has cuda-13.3, vulkan");
    }
}
