//! llama.cpp: prebuilt release archives of `ggml-org/llama.cpp`, one tag per
//! build number (`b11459`), binary `llama-server`.
//!
//! Which builds a release has is read from its asset names when they are
//! known ([`Published::Assets`]): `llama-<tag>-bin-ubuntu-<arch>.tar.gz`
//! (CPU), `…-vulkan-<arch>…`, and `…-cuda-<X.Y>-<arch>…` with its
//! `cudart-llama-<tag>-bin-ubuntu-cuda-<X.Y>-<arch>.tar.gz` companion; the
//! toolkit `X.Y` is read from the name, and what a CUDA build needs follows
//! from it (ggml's default kernels for that toolkit, the drivers of
//! [`llmgw_model::nvidia`]). Without the names (a plan made offline), the tag's
//! range decides ([`toolkits_of_tag`]).

use std::collections::BTreeMap;

use super::engine::{Descriptor, Publisher, Variants, VersionCheck, VersionSyntax, toolkit};
use super::{
    Build, Engine, Exclusion, GpuBackend, GpuCheck, GpuNeeds, Jit, ModelRun, Offer, Plan, Published, Refusal, Source,
    Want, pick, unsupported,
};
use llmgw_model::host::{Arch, ComputeCapability, Host, PackageFamily};
use llmgw_model::nvidia;

/// The GitHub repository of the releases.
pub(super) const REPO: &str = "ggml-org/llama.cpp";

/// llama.cpp: release archives whose asset lists say which builds each tag
/// has; variants `cpu`, `vulkan` and `cuda-<major>.<minor>` (`cuda-13.4`);
/// versions are build tags; `llama-server --version` says the build.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    engine: Engine::LlamaCpp,
    name: "llama.cpp",
    aliases: &["llamacpp", "llama-cpp"],
    publisher: Publisher::Releases { repo: REPO, assets_decide: true, skip_prereleases: false },
    variants: Variants::NamedAndCuda {
        named: &["cpu", "vulkan"],
        in_words: "cpu, vulkan, cuda-<X.Y> (cuda-13.4, cuda-12.8)",
    },
    versions: VersionSyntax::BuildTag,
    example: "b11459",
    checked_with: VersionCheck::VERSION_FLAG,
    reported: true,
    plan,
};

/// The CUDA toolkits of a tag's Linux CUDA builds when its asset list is not
/// known: none before b10969, 13.3 (and 12.8 on x64) up to b11070, 13.4
/// (and 12.8) after. Sources: ggml-org/llama.cpp#28186 added the Linux CUDA
/// builds (merged 2026-09-14; first seen in b10969; b10964 has none, by a
/// public log of its assets); #29202 moved them to 13.4 (merged 2026-09-21;
/// 13.3 seen up to b11070, 13.4 from b11081 in public asset listings; the
/// exact first 13.4 tag between them is UNCONFIRMED, taken as b11071).
pub(super) fn toolkits_of_tag(build: u64, arch: Arch) -> Vec<String> {
    let x64 = arch == Arch::Amd64;
    match build {
        0..=10968 => vec![],
        10969..=11070 => ["13.3"].into_iter().chain(x64.then_some("12.8")).map(str::to_string).collect(),
        _ => ["13.4"].into_iter().chain(x64.then_some("12.8")).map(str::to_string).collect(),
    }
}

/// What ggml's default CUDA architectures put in a build of `toolkit`
/// (`CMAKE_CUDA_ARCHITECTURES` unset, `GGML_NATIVE=OFF`, as the release
/// workflow builds): before CUDA 13, `50-virtual 61-virtual 70-virtual
/// 75-virtual 80-virtual 86-real 89-real 90-virtual` plus `120a-real` from
/// 12.8 and `121a-real` from 12.9; from CUDA 13, `75-virtual 80-virtual
/// 86-real 89-real 90-virtual 120a-real 121a-real`. Sources:
/// `ggml-org/llama.cpp@ggml/src/ggml-cuda/CMakeLists.txt`; checked on real
/// builds: the official b11034 CUDA 13.3 archive (a user's cuobjdump
/// listing: SASS sm_86, sm_89, sm_120a, sm_121a) and npm
/// `@node-llama-cpp/linux-x64-cuda` 3.22.1 `libggml-cuda.so` (sha256
/// d6cd3ff39a43…, cuobjdump 13.5: SASS sm_86, sm_89, sm_120a, sm_121a; PTX
/// sm_75, sm_80, sm_90), and `…-cuda-ext` 3.22.1 (CUDA 12.4: SASS sm_86,
/// PTX sm_50, 61, 70, 75, 80; sha256 1c4817215f51…).
pub(super) fn ggml_default_kernels(toolkit: (u32, u32)) -> Kernels {
    let cc = ComputeCapability::new;
    if toolkit.0 >= 13 {
        return Kernels {
            sass: vec![cc(8, 6), cc(8, 9)],
            sass_exact: vec![cc(12, 0), cc(12, 1)],
            ptx: vec![cc(7, 5), cc(8, 0), cc(9, 0)],
        };
    }
    let mut sass_exact = vec![];
    if toolkit >= (12, 8) {
        sass_exact.push(cc(12, 0));
    }
    if toolkit >= (12, 9) {
        sass_exact.push(cc(12, 1));
    }
    let mut sass = vec![cc(8, 6)];
    if toolkit >= (11, 8) {
        sass.push(cc(8, 9));
    }
    Kernels { sass, sass_exact, ptx: vec![cc(5, 0), cc(6, 1), cc(7, 0), cc(7, 5), cc(8, 0), cc(9, 0)] }
}

/// The kernels of a CUDA build, by kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Kernels {
    /// SASS for a family.
    pub sass: Vec<ComputeCapability>,
    /// Arch-specific SASS (`120a`): exactly that compute capability.
    pub sass_exact: Vec<ComputeCapability>,
    /// PTX.
    pub ptx: Vec<ComputeCapability>,
}

/// `llama-server --version` on stderr, in both forms: `version: <N> (<commit>)`
/// before build 10470, `version: X.Y.Z[-dev] (build <N>, commit <commit>)`
/// since llama.cpp took semantic versions. Sources: `common/arg.cpp`;
/// unslothai/unsloth#9127 ("Before: `version: 10360 (90e6a9131)` / Now:
/// `version: 0.1.1-dev (build 10470, …)`"); the official b11505 archive's
/// `version: 0.6.0-dev (build 11505, commit ff5888f99)`.
fn version_says(build: u64) -> Vec<String> {
    vec![format!("version: {build} "), format!("(build {build},")]
}

/// The build number in what `llama-server --version` printed, in either
/// form of [`version_says`]: `version: 0.6.0-dev (build 11459, commit …)`
/// and `version: 10360 (90e6a9131)` are 11459 and 10360.
pub fn build_in_version_line(text: &str) -> Option<u64> {
    let digits = |s: &str| -> Option<u64> {
        let n: String = s.chars().take_while(char::is_ascii_digit).collect();
        n.parse().ok()
    };
    let line = text.lines().find_map(|l| l.trim_start().strip_prefix("version: "))?;
    match line.split_once("(build ") {
        Some((_, rest)) => digits(rest),
        None => line
            .split_once(' ')
            .map_or(Some(line), |(n, _)| Some(n))
            .and_then(|n| (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| digits(n)).flatten()),
    }
}

/// The compute check's program: `llama-bench` generating from the tiny
/// model on `device` (`CUDA0`, `Vulkan1`, or `none`: the CPU) with every
/// layer offloaded, a prompt of 8 tokens then 8 generated, once, without
/// warm-up, results as JSON lines on stdout and the log written as it comes
/// (`-v`). Every Linux release archive carries it (release.yml builds the
/// tools and packs `build/bin` whole; ggml-org/llama.cpp#28186's smoke test
/// runs it in the CUDA build directory). Not `llama-completion`: its logger
/// can lose the last lines at exit and still exit 0
/// (ggml-org/llama.cpp#22273; ci/tiny-model/llama-cpp-facts.md).
fn bench(device: &str) -> ModelRun {
    let args = ["-m", "{model}", "-dev", device, "-ngl", "99", "-p", "8", "-n", "8", "-r", "1", "--no-warmup"];
    ModelRun {
        program: "llama-bench".to_string(),
        args: args.iter().chain(&["-o", "jsonl", "-v"]).map(|a| a.to_string()).collect(),
    }
}

/// Plans llama.cpp on a host, from the release's assets when `published`
/// lists them.
pub(super) fn plan(want: &Want, host: &Host, published: Published) -> Result<Plan, Refusal> {
    let arch = host.arch;
    let Some(in_names) = asset_arch(arch) else {
        return Err(unsupported(format!(
            "llama.cpp publishes no Linux build for {arch} that this installer can use (only x64 and arm64)"
        )));
    };
    let v = &want.version;
    let build_number: u64 = v[1..].parse().map_err(|_| unsupported(format!("`{v}` is not a build tag")))?;
    let has = |name: &str| match published {
        Published::Assets(names) => names.iter().any(|n| n == name),
        Published::Unknown => true,
    };
    let base = |variant: &str, assets: Vec<String>, beside_binary: Vec<String>| Build {
        variant: variant.to_string(),
        version: v.clone(),
        source: Source::Archives { repo: REPO.to_string(), tag: v.clone(), assets, beside_binary },
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
        version_says: version_says(build_number),
        // With GGML_BACKEND_DL the CPU backends are loaded at run time; the
        // baseline variant is the one every CPU of the architecture loads.
        runtime_libraries: vec![
            if arch == Arch::Amd64 { "libggml-cpu-x64.so" } else { "libggml-cpu-armv8.0_1.so" }.to_string(),
        ],
        gpu: Some(GpuCheck::Cpu(bench("none"))),
        // The archive carries a CPU backend per generation, down to SSE4.2;
        // below AVX2 it runs several times slower.
        cpu_flags: if arch == Arch::Amd64 { vec!["avx2".to_string()] } else { vec![] },
        free_gb: 2,
        note: None,
        requires: vec![],
    };
    let notes = missing_flags_note(host, &base("cpu", vec![], vec![]));
    let cpu_asset = format!("llama-{v}-bin-ubuntu-{in_names}.tar.gz");
    let vulkan_asset = format!("llama-{v}-bin-ubuntu-vulkan-{in_names}.tar.gz");
    let missing = |asset: &str| format!("release {v} has no asset {asset}");

    if host.nvidia.is_none() {
        // No NVIDIA GPU: the CPU build, the only one that runs without a GPU.
        if !has(&cpu_asset) {
            return Err(unsupported(format!("llama.cpp for the CPU cannot be installed: {}", missing(&cpu_asset))));
        }
        let cpu = base("cpu", vec![cpu_asset], vec![]);
        let mut plan = pick(
            want,
            vec![Offer { build: cpu, needs: GpuNeeds::default(), what: "llama.cpp for the CPU".into() }],
            host,
            notes,
        )?;
        // The GPU builds are left out too, and say why.
        let mut gpu: Vec<String> =
            cuda_builds(v, build_number, arch, published).into_iter().map(|c| c.variant).collect();
        gpu.push("vulkan".into());
        plan.excluded.extend(gpu.into_iter().map(|g| Exclusion {
            reason: format!("llama.cpp's {g} build is installed on nodes with an NVIDIA GPU; this node has none"),
            variant: g,
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
    // on the CPU. GPU builds best first (the newest toolkit first); the
    // release carries the CUDA runtime beside each CUDA build, so the node
    // needs a driver and no toolkit.
    let mut offers = Vec::new();
    let mut excluded = Vec::new();
    for CudaBuild { variant, found } in cuda_builds(v, build_number, arch, published) {
        let CudaAssets { toolkit: tk, engine, cudart } = match found {
            Ok(found) => found,
            Err(why) => {
                excluded.push(Exclusion { variant, reason: why });
                continue;
            }
        };
        let Some(jit_driver) = nvidia::ptx_jit_min_driver(&format!("{}.{}", tk.0, tk.1)) else {
            excluded.push(Exclusion {
                reason: format!(
                    "llama.cpp built for CUDA {}.{}, which the installer's tables of NVIDIA drivers do not know (crates/llmgw-model/src/nvidia.rs)",
                    tk.0, tk.1
                ),
                variant,
            });
            continue;
        };
        let mut b = base(&variant, vec![engine, cudart.clone()], vec![cudart]);
        b.gpu = Some(GpuCheck::Devices(GpuBackend {
            library: "libggml-cuda.so".into(),
            device_prefix: "CUDA".into(),
            list_args: vec!["--list-devices".into()],
            model_run: bench("{device}"),
        }));
        b.free_gb = 4;
        let k = ggml_default_kernels(tk);
        let min_cc = k.sass.iter().chain(&k.sass_exact).chain(&k.ptx).min().copied();
        let runtime = nvidia::runtime_min_driver(&format!("{}.{}", tk.0, tk.1)).unwrap_or(nvidia::CUDA13_MIN_DRIVER);
        // ggml compresses its fatbins (GGML_CUDA_COMPRESSION_MODE, default
        // `size`): drivers before 550 cannot load them.
        let driver = runtime.max(nvidia::FATBIN_COMPRESSION_MIN_DRIVER);
        offers.push(Offer {
            build: b,
            needs: GpuNeeds {
                driver: Some(driver),
                min_cc,
                jit: Some(Jit { sass: k.sass, sass_exact: k.sass_exact, driver: jit_driver }),
            },
            what: format!("llama.cpp built for CUDA {}.{}", tk.0, tk.1),
        });
    }
    if has(&vulkan_asset) {
        let mut vulkan = base("vulkan", vec![vulkan_asset], vec![]);
        vulkan.gpu = Some(GpuCheck::Devices(GpuBackend {
            library: "libggml-vulkan.so".into(),
            device_prefix: "Vulkan".into(),
            list_args: vec!["--list-devices".into()],
            model_run: bench("{device}"),
        }));
        for (family, loader) in [
            (PackageFamily::Deb, "libvulkan1"),
            (PackageFamily::Rpm, "vulkan-loader"),
            (PackageFamily::Apk, "vulkan-loader"),
        ] {
            vulkan.packages.get_mut(&family).expect("every family has libgomp").push(loader.to_string());
        }
        // Vulkan runs on any card whose driver has Vulkan: the generations the
        // CUDA builds no longer cover. Whether it does is the GPU check's to see.
        offers.push(Offer { build: vulkan, needs: GpuNeeds::default(), what: "llama.cpp built for Vulkan".into() });
    } else {
        excluded.push(Exclusion { variant: "vulkan".into(), reason: missing(&vulkan_asset) });
    }
    let mut plan = match pick(want, offers, host, notes) {
        Ok(plan) => plan,
        Err(Refusal::Unsupported { reason, excluded: mut more }) => {
            // Nothing was offered (the release lacks every GPU build): the
            // reasons are the builds this recipe left out.
            let reason = match more.is_empty() {
                true => format!(
                    "no build of llama.cpp {v} runs on this node: {}",
                    excluded.iter().map(|e| format!("{}: {}", e.variant, e.reason)).collect::<Vec<_>>().join("; ")
                ),
                false => reason,
            };
            more.extend(excluded);
            return Err(Refusal::Unsupported { reason, excluded: more });
        }
        Err(e) => return Err(e),
    };
    plan.excluded.extend(excluded);
    Ok(plan)
}

/// A CUDA build of a release: its variant, and its assets or why it is left out.
struct CudaBuild {
    /// `cuda-13.4`, or `cuda` for the entry saying there is none.
    variant: String,
    /// Its toolkit and assets, or why it is left out, in a sentence.
    found: Result<CudaAssets, String>,
}

/// A CUDA build's toolkit and its two assets.
struct CudaAssets {
    /// The toolkit `(major, minor)`, read from the asset's name: `(13, 4)`.
    toolkit: (u32, u32),
    /// The engine's asset: `llama-b11459-bin-ubuntu-cuda-13.4-x64.tar.gz`.
    engine: String,
    /// Its CUDA runtime companion: `cudart-llama-b11459-bin-ubuntu-cuda-13.4-x64.tar.gz`.
    cudart: String,
}

/// How llama.cpp's asset names write an architecture (`x64`, `arm64`);
/// `None` for one it publishes no Linux build for.
fn asset_arch(arch: Arch) -> Option<&'static str> {
    match arch {
        Arch::Amd64 => Some("x64"),
        Arch::Arm64 => Some("arm64"),
        _ => None,
    }
}

/// The CUDA builds of release `v` for `arch`, newest toolkit first: from
/// the asset names when they are listed (a build lacking its companion is
/// left out, saying so), else from the tag's range. One `cuda` entry
/// saying why when there is none.
fn cuda_builds(v: &str, build: u64, host_arch: Arch, published: Published) -> Vec<CudaBuild> {
    let arch = asset_arch(host_arch).unwrap_or_default();
    let companion = |tk: &str| format!("cudart-llama-{v}-bin-ubuntu-cuda-{tk}-{arch}.tar.gz");
    let engine = |tk: &str| format!("llama-{v}-bin-ubuntu-cuda-{tk}-{arch}.tar.gz");
    let mut found: Vec<CudaBuild> = match published {
        Published::Assets(names) => {
            let prefix = format!("llama-{v}-bin-ubuntu-cuda-");
            let suffix = format!("-{arch}.tar.gz");
            names
                .iter()
                .filter_map(|n| n.strip_prefix(&prefix)?.strip_suffix(&suffix))
                .map(|tk| {
                    let variant = format!("cuda-{tk}");
                    let found = match toolkit(tk) {
                        None => Err(format!("`{}` names no CUDA toolkit `X.Y` the installer can read", engine(tk))),
                        Some(_) if !names.iter().any(|n| *n == companion(tk)) => Err(format!(
                            "release {v} has {} without its CUDA runtime {}: the build cannot load",
                            engine(tk),
                            companion(tk)
                        )),
                        Some(t) => Ok(CudaAssets { toolkit: t, engine: engine(tk), cudart: companion(tk) }),
                    };
                    CudaBuild { variant, found }
                })
                .collect()
        }
        Published::Unknown => toolkits_of_tag(build, host_arch)
            .into_iter()
            .map(|tk| {
                let t = toolkit(&tk).expect("the tag table's toolkits are X.Y");
                let assets = CudaAssets { toolkit: t, engine: engine(&tk), cudart: companion(&tk) };
                CudaBuild { variant: format!("cuda-{tk}"), found: Ok(assets) }
            })
            .collect(),
    };
    found.sort_by_key(|c| std::cmp::Reverse(c.found.as_ref().map(|a| a.toolkit).unwrap_or((0, 0))));
    if found.is_empty() {
        let why = match published {
            Published::Assets(_) => format!("release {v} has no Linux CUDA build for {arch} (no {})", engine("<X.Y>")),
            Published::Unknown => {
                format!("llama.cpp {v} publishes no Linux CUDA build: they start at b10969 (ggml-org/llama.cpp#28186)")
            }
        };
        found.push(CudaBuild { variant: "cuda".into(), found: Err(why) });
    }
    found
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
    use crate::recipe::Engine;

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

    fn want(tag: &str) -> Want {
        Want::new(Engine::LlamaCpp, tag)
    }

    fn variants(p: &Plan) -> Vec<&str> {
        p.candidates.iter().map(|b| b.variant.as_str()).collect()
    }

    /// The Linux assets of b11459, from a public listing of its release.
    fn b11459() -> Vec<String> {
        ["x64", "arm64", "vulkan-x64", "vulkan-arm64", "cuda-12.8-x64", "cuda-13.4-x64", "cuda-13.4-arm64"]
            .iter()
            .map(|s| format!("llama-b11459-bin-ubuntu-{s}.tar.gz"))
            .chain(
                ["12.8-x64", "13.4-x64", "13.4-arm64"]
                    .map(|s| format!("cudart-llama-b11459-bin-ubuntu-cuda-{s}.tar.gz")),
            )
            .collect()
    }

    #[test]
    fn an_h100_on_580_takes_cuda_12_8_as_13_4s_ptx_needs_615() {
        let assets = b11459();
        let p = plan(&want("b11459"), &host("amd64", Some("580.95.05"), &["9.0"]), Published::Assets(&assets)).unwrap();
        assert_eq!(variants(&p), ["cuda-12.8", "vulkan"]);
        assert_eq!(
            p.excluded[0].reason,
            "llama.cpp built for CUDA 13.4 needs NVIDIA driver 615 or newer (compute capability 9.0 is carried as PTX only); \
             this node has 580.95.05"
        );
        let Source::Archives { assets, beside_binary, .. } = &p.candidates[0].source else { panic!("archives") };
        assert_eq!(assets[1], "cudart-llama-b11459-bin-ubuntu-cuda-12.8-x64.tar.gz");
        assert_eq!(beside_binary, &assets[1..], "the runtime goes beside llama-server");
    }

    #[test]
    fn sass_gpus_take_the_newest_toolkit_their_driver_runs() {
        let assets = b11459();
        let p = plan(&want("b11459"), &host("amd64", Some("580.95.05"), &["8.9"]), Published::Assets(&assets)).unwrap();
        assert_eq!(variants(&p), ["cuda-13.4", "cuda-12.8", "vulkan"]);
        let p =
            plan(&want("b11459"), &host("amd64", Some("535.183.01"), &["8.6"]), Published::Assets(&assets)).unwrap();
        assert_eq!(variants(&p), ["vulkan"], "compressed fatbins need 550: {:?}", p.excluded);
        let p = plan(&want("b11459"), &host("arm64", Some("580.95.05"), &["9.0"]), Published::Assets(&assets)).unwrap();
        assert_eq!(variants(&p), ["vulkan"], "no CUDA 12 build for arm64");
    }

    #[test]
    fn a_release_without_cuda_builds_says_so_and_a_missing_companion_is_named() {
        let assets: Vec<String> =
            ["x64", "vulkan-x64"].iter().map(|s| format!("llama-b10850-bin-ubuntu-{s}.tar.gz")).collect();
        let p = plan(&want("b10850"), &host("amd64", Some("580.95.05"), &["9.0"]), Published::Assets(&assets)).unwrap();
        assert_eq!(variants(&p), ["vulkan"]);
        assert_eq!(p.excluded[0].variant, "cuda");
        assert!(p.excluded[0].reason.starts_with("release b10850 has no Linux CUDA build for x64"), "{:?}", p.excluded);
        let p = plan(&want("b10850"), &host("amd64", Some("580.95.05"), &["9.0"]), Published::Unknown).unwrap();
        assert!(p.excluded[0].reason.contains("they start at b10969"), "{:?}", p.excluded);
        let mut partial = b11459();
        partial.retain(|n| !n.starts_with("cudart-llama-b11459-bin-ubuntu-cuda-12.8"));
        let p =
            plan(&want("b11459"), &host("amd64", Some("580.95.05"), &["8.9"]), Published::Assets(&partial)).unwrap();
        assert_eq!(variants(&p), ["cuda-13.4", "vulkan"]);
        assert!(p.excluded.iter().any(|e| e.variant == "cuda-12.8" && e.reason.contains("without its CUDA runtime")));
    }

    #[test]
    fn an_unknown_toolkit_is_left_out_naming_it_never_guessed() {
        let mut assets = b11459();
        assets.push("llama-b11459-bin-ubuntu-cuda-14.0-x64.tar.gz".into());
        assets.push("cudart-llama-b11459-bin-ubuntu-cuda-14.0-x64.tar.gz".into());
        let p = plan(&want("b11459"), &host("amd64", Some("615.71.09"), &["9.0"]), Published::Assets(&assets)).unwrap();
        let e = p.excluded.iter().find(|e| e.variant == "cuda-14.0").expect("left out");
        assert!(
            e.reason.contains("CUDA 14.0, which the installer's tables of NVIDIA drivers do not know"),
            "{}",
            e.reason
        );
        assert_eq!(variants(&p), ["cuda-13.4", "cuda-12.8", "vulkan"]);
    }

    #[test]
    fn no_gpu_gets_the_cpu_build_and_the_tags_range_decides_without_assets() {
        let p = plan(&want("b11459"), &host("amd64", None, &[]), Published::Unknown).unwrap();
        assert_eq!(variants(&p), ["cpu"]);
        let left: Vec<&str> = p.excluded.iter().map(|e| e.variant.as_str()).collect();
        assert_eq!(left, ["cuda-13.4", "cuda-12.8", "vulkan"], "every GPU build is left out, with its reason");
        assert_eq!(toolkits_of_tag(11000, Arch::Arm64), ["13.3"]);
        assert!(toolkits_of_tag(10900, Arch::Amd64).is_empty());
    }

    #[test]
    fn the_cpu_build_is_refused_on_a_gpu_node_even_when_asked_for() {
        let mut w = want("b11459");
        w.variant = Some("cpu".into());
        let Err(Refusal::Unsupported { reason, .. }) =
            plan(&w, &host("amd64", Some("580.95.05"), &["9.0"]), Published::Unknown)
        else {
            panic!("expected a refusal")
        };
        assert!(reason.contains("not installed on a node with an NVIDIA GPU"), "{reason}");
    }

    #[test]
    fn both_version_lines_name_their_build() {
        let new = "version: 0.6.0-dev (build 11505, commit ff5888f99)\nbuilt with GNU 11.4.0 for Linux x86_64\n";
        assert_eq!(build_in_version_line(new), Some(11505));
        assert_eq!(build_in_version_line("version: 10360 (90e6a9131)\n"), Some(10360));
        assert_eq!(
            build_in_version_line(
                "ggml_cuda_init: found 1 CUDA devices\nversion: 0.4.1-dev (build 10991, commit 930e2fa59)"
            ),
            Some(10991)
        );
        assert_eq!(build_in_version_line("version: 0.6.0-dev\n"), None);
        assert_eq!(build_in_version_line("llama-server 1.0\n"), None);
    }

    #[test]
    fn ggmls_default_kernels_by_toolkit() {
        let k = ggml_default_kernels((13, 4));
        assert_eq!((k.sass.len(), k.sass_exact.len(), k.ptx[0].to_string()), (2, 2, "7.5".to_string()));
        let k = ggml_default_kernels((12, 8));
        assert_eq!(k.sass_exact, [ComputeCapability::new(12, 0)]);
        assert_eq!(k.ptx[0].to_string(), "5.0");
        let is_variant = |v| DESCRIPTOR.is_variant(v);
        assert!(is_variant("cuda-13.4") && is_variant("vulkan") && !is_variant("cuda-13") && !is_variant("rocm"));
    }
}
