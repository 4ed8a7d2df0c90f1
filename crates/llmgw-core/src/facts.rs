//! What a build's files need of a node, read before anything of the build
//! runs, and the one rule that says whether this node can run them.
//!
//! On a real node the facts come from the unpacked files themselves
//! ([`crate::inspect`]: ELF symbol versions, CUDA fatbins); in simulation
//! from the truth's stubs of the same files. [`refusal`] decides for both,
//! with [`llmgw_model::nvidia::CudaKernels::refusal`] for the kernels, the same
//! function the simulated GPU uses, so the simulation and a real node
//! cannot disagree about a build.
//!
//! Uses: nothing of this crate.

use llmgw_model::host::{ComputeCapability, DottedVersion, Host, Libc};
use llmgw_model::nvidia::CudaKernels;

/// One file of a build, as far as the node is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileFacts {
    /// Path under the build's root, `/`-separated: `llama-b11459/libggml-cuda.so`.
    pub path: String,
    /// Symbol versions it requires of the system: `GLIBC_2.38`, `GLIBCXX_3.4.32`.
    pub requires: Vec<String>,
    /// Its CUDA kernels, when it carries a fatbin.
    pub cuda: Option<CudaFacts>,
}

/// The CUDA kernels of one file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CudaFacts {
    /// The toolkit it was built with, `major.minor` (`13.4`), or the runtime's major (`13`).
    pub toolkit: String,
    /// Machine code (SASS) for a family: `sm_86` runs on 8.6 and 8.9.
    pub sass: Vec<ComputeCapability>,
    /// Architecture-specific machine code (`sm_120a`): exactly that GPU.
    pub sass_exact: Vec<ComputeCapability>,
    /// PTX, compiled by the driver for any GPU of that compute capability or newer.
    pub ptx: Vec<ComputeCapability>,
    /// Whether any of its fatbins is compressed.
    pub compressed: bool,
}

/// Why this node cannot run the build whose files are `files`, or `None`
/// when nothing read from them says so:
///
/// - a symbol version above the node's glibc or libstdc++ (`GLIBC_2.38`
///   on glibc 2.35), naming the file and the symbol;
/// - CUDA kernels for none of the node's GPUs: for each GPU, no file of
///   the build has machine code of its family nor PTX this driver can
///   compile (what the loader would say, naming the GPU and the file).
///
/// A build without CUDA code, or a node without an NVIDIA GPU, is not
/// refused for its kernels (the CPU and Vulkan builds; the GPU check runs
/// after).
pub fn refusal(files: &[FileFacts], host: &Host) -> Option<String> {
    // Every symbol version the node lacks, with the first file needing it.
    let glibc = host.os.glibc.as_ref().filter(|_| host.os.libc == Libc::Glibc);
    let mut missing: Vec<(DottedVersion, &str, &str)> = Vec::new();
    for f in files {
        for v in &f.requires {
            let (need, have) = match (v.strip_prefix("GLIBC_"), v.strip_prefix("GLIBCXX_")) {
                (Some(n), _) => (n, glibc),
                (_, Some(n)) => (n, host.os.glibcxx.as_ref()),
                _ => continue,
            };
            let Ok(need) = DottedVersion::parse(need) else { continue };
            if have.is_none_or(|have| *have < need) && !missing.iter().any(|(_, sym, _)| *sym == v.as_str()) {
                missing.push((need, v.as_str(), f.path.as_str()));
            }
        }
    }
    if !missing.is_empty() {
        missing.sort_by(|a, b| (a.1.starts_with("GLIBCXX"), &a.0).cmp(&(b.1.starts_with("GLIBCXX"), &b.0)));
        let named: Vec<String> = missing.iter().map(|(_, sym, file)| format!("{sym} (`{file}`)")).collect();
        let has = |v: Option<&DottedVersion>| v.map_or("none".to_string(), ToString::to_string);
        return Some(format!(
            "needs {}; this node has glibc {} and libstdc++ GLIBCXX_{}",
            named.join(", "),
            has(glibc),
            has(host.os.glibcxx.as_ref())
        ));
    }
    let nvidia = host.nvidia.as_ref()?;
    let cuda: Vec<(&FileFacts, &CudaFacts)> = files.iter().filter_map(|f| Some((f, f.cuda.as_ref()?))).collect();
    if cuda.is_empty() {
        return None;
    }
    let mut why: Vec<String> = Vec::new();
    let mut uncovered = 0;
    for gpu in &nvidia.gpus {
        let mut reasons = Vec::new();
        for (f, c) in &cuda {
            let kernels = CudaKernels {
                toolkit: &c.toolkit,
                sass: &c.sass,
                sass_exact: &c.sass_exact,
                ptx: &c.ptx,
                compressed: c.compressed,
            };
            match kernels.refusal(gpu.compute_capability, &nvidia.driver) {
                None => {
                    reasons.clear();
                    break;
                }
                Some(r) => reasons.push(format!("`{}`: {r}", f.path)),
            }
        }
        if !reasons.is_empty() {
            uncovered += 1;
            let said = format!("{} ({}): {}", gpu.name, gpu.compute_capability, reasons.join("; "));
            if !why.contains(&said) {
                why.push(said);
            }
        }
    }
    // Refused only when no GPU of the node gets a kernel; one GPU without
    // any is the GPU check's to say, on that GPU.
    (uncovered == nvidia.gpus.len() && uncovered > 0)
        .then(|| format!("its CUDA code runs on no GPU of this node: {}", why.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(glibc: &str, driver: &str, cc: &str) -> Host {
        Host::from_json(&format!(
            r#"{{"name": "t", "arch": "amd64",
                "os": {{"id": "ubuntu", "version": "x", "package_family": "deb", "libc": "glibc", "glibc": "{glibc}", "glibcxx": "3.4.30"}},
                "cpu": {{"model": "x", "flags": []}},
                "nvidia": {{"driver": "{driver}", "gpus": [{{"name": "GPU", "compute_capability": "{cc}", "memory_mib": 16384}}]}},
                "disk_free_gb": 100, "packages": {{"installed": [], "installable": true}}}}"#
        ))
        .unwrap()
    }

    fn ggml_cuda_13_4() -> FileFacts {
        let cc = ComputeCapability::new;
        FileFacts {
            path: "llama-b11459/libggml-cuda.so".into(),
            requires: vec!["GLIBC_2.34".into(), "GLIBCXX_3.4.30".into(), "CXXABI_1.3.13".into()],
            cuda: Some(CudaFacts {
                toolkit: "13.4".into(),
                sass: vec![cc(8, 6), cc(8, 9)],
                sass_exact: vec![cc(12, 0), cc(12, 1)],
                ptx: vec![cc(7, 5), cc(8, 0), cc(9, 0)],
                compressed: true,
            }),
        }
    }

    #[test]
    fn a_symbol_above_the_nodes_glibc_names_the_file_and_the_symbol() {
        let mut f = ggml_cuda_13_4();
        f.requires.push("GLIBC_2.38".into());
        assert_eq!(
            refusal(&[f], &host("2.35", "580.95.05", "8.9")).as_deref(),
            Some(
                "needs GLIBC_2.38 (`llama-b11459/libggml-cuda.so`); this node has glibc 2.35 and libstdc++ GLIBCXX_3.4.30"
            )
        );
    }

    #[test]
    fn kernels_decide_as_the_loader_does() {
        let f = [ggml_cuda_13_4()];
        assert_eq!(refusal(&f, &host("2.39", "580.95.05", "8.9")), None, "SASS of the family");
        assert_eq!(refusal(&f, &host("2.39", "615.71.09", "9.0")), None, "PTX the driver compiles");
        let r = refusal(&f, &host("2.39", "580.95.05", "9.0")).unwrap();
        assert!(
            r.contains(
                "GPU (9.0): `llama-b11459/libggml-cuda.so`: the provided PTX was compiled with an unsupported toolchain"
            ),
            "{r}"
        );
        let r = refusal(&f, &host("2.39", "580.95.05", "7.0")).unwrap();
        assert!(r.contains("no kernel image is available for execution on the device"), "{r}");
        assert_eq!(refusal(&[FileFacts::default()], &host("2.39", "580.95.05", "7.0")), None, "no CUDA code");
    }
}
