//! The ggml backends a llama.cpp program loads and the devices they list:
//! shared by `--list-devices` (`programs.rs`) and `llama-bench` (`bench.rs`).
//!
//! Every library `libggml-*.so` beside the program whose stub is a backend
//! and that the loader resolves is loaded, in name order (what
//! `ggml_backend_load_all` finds; the others are skipped silently, as in
//! release builds). A CUDA backend lists every GPU the driver sees once its
//! runtime starts ([`llmgw_model::nvidia::CudaStep::Init`]); Vulkan lists every
//! NVIDIA GPU whose driver has its ICD.

use std::path::{Path, PathBuf};

use super::ldd::resolve;
use super::python;
use crate::truth::stub::{Backend, ElfStub};
use llmgw_core::system::DirEntry;
use llmgw_model::host::{ComputeCapability, Host};
use llmgw_model::nvidia::{CudaKernels, CudaStep};

/// The ggml backends beside a program that load, in name order, with
/// each one's path: what `ggml_backend_load_all` finds.
pub(super) fn loaded_backends(
    host: &Host,
    dir: &Path,
    entries: &[DirEntry],
    mut read: impl FnMut(&Path) -> Option<Vec<u8>>,
) -> Vec<(PathBuf, Backend)> {
    let mut out = Vec::new();
    for e in entries.iter().filter(|e| !e.is_dir && e.name.starts_with("libggml-") && e.name.ends_with(".so")) {
        let path = dir.join(&e.name);
        let Some(stub) = read(&path).and_then(|b| ElfStub::from_bytes(&b)) else {
            continue;
        };
        let Some(backend) = stub.backend.clone() else { continue };
        if resolve(host, &path, &stub, &mut read).loads() {
            out.push((path, backend)); // the others are skipped silently, as in release builds
        }
    }
    out
}

/// One device a backend lists: its name in the list (`CUDA0`), the GPU's
/// description and memory (MiB), and for CUDA its index among the host's GPUs.
pub(super) struct Device {
    /// `CUDA0`, `Vulkan1`.
    pub name: String,
    /// The GPU's name: `NVIDIA H100 80GB HBM3`.
    pub description: String,
    /// Total memory, MiB.
    pub mib: u64,
    /// The GPU, by index in the host description.
    pub gpu: usize,
}

/// The devices the loaded backends list, in the order ggml registers them;
/// each backend's own diagnostics go to `log`.
pub(super) fn devices(host: &Host, backends: &[(PathBuf, Backend)], log: &mut String) -> Vec<Device> {
    let mut out = Vec::new();
    for (path, backend) in backends {
        let (label, gpus) = match backend {
            Backend::Cpu | Backend::Rpc => continue,
            Backend::Cuda { toolkit, sass, ptx, compressed } => {
                ("CUDA", cuda_devices(host, toolkit, sass, ptx, *compressed, log))
            }
            Backend::Vulkan => ("Vulkan", vulkan_devices(host, log)),
        };
        log.push_str(&format!("load_backend: loaded {label} backend from {}\n", path.display()));
        for (i, gpu) in gpus.into_iter().enumerate() {
            let g = &host.nvidia.as_ref().expect("devices come from the host's GPUs").gpus[gpu];
            out.push(Device { name: format!("{label}{i}"), description: g.name.clone(), mib: g.memory_mib, gpu });
        }
    }
    out
}

/// The host's GPUs (by index) a CUDA backend lists: every one the driver
/// sees, once the runtime starts; when it cannot, none, and why goes to
/// `log` in ggml's words. What the kernels can run is the computation's
/// business, not the listing's.
fn cuda_devices(
    host: &Host,
    toolkit: &str,
    sass: &[String],
    ptx: &[String],
    compressed: bool,
    log: &mut String,
) -> Vec<usize> {
    let Some(nv) = &host.nvidia else {
        log.push_str("ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected\n");
        return vec![];
    };
    let kernels = Kernels::new(toolkit, sass, ptx, compressed);
    let first = nv.gpus.first().and_then(|g| kernels.get().decide(g.compute_capability, &nv.driver));
    if let Some(r) = first.filter(|r| r.step == CudaStep::Init) {
        log.push_str(&format!("ggml_cuda_init: failed to initialize CUDA: {}\n", r.error));
        return vec![];
    }
    log.push_str(&format!("ggml_cuda_init: found {} CUDA devices:\n", nv.gpus.len()));
    for (i, g) in nv.gpus.iter().enumerate() {
        log.push_str(&format!("  Device {i}: {}, compute capability {}, VMM: yes\n", g.name, g.compute_capability));
    }
    (0..nv.gpus.len()).collect()
}

/// A CUDA backend's kernels as [`CudaKernels`] wants them.
pub(super) struct Kernels<'a> {
    toolkit: &'a str,
    sass: Vec<ComputeCapability>,
    exact: Vec<ComputeCapability>,
    ptx: Vec<ComputeCapability>,
    compressed: bool,
}

impl<'a> Kernels<'a> {
    /// From the truth's words: `sass` with `12.0a` for arch-specific cubins.
    pub(super) fn new(toolkit: &'a str, sass: &[String], ptx: &[String], compressed: bool) -> Kernels<'a> {
        let (sass, exact) = python::split_sass(sass);
        let ptx = ptx.iter().filter_map(|s| ComputeCapability::parse(s).ok()).collect();
        Kernels { toolkit, sass, exact, ptx, compressed }
    }

    /// The kernels, borrowed.
    pub(super) fn get(&self) -> CudaKernels<'_> {
        CudaKernels {
            toolkit: self.toolkit,
            sass: &self.sass,
            sass_exact: &self.exact,
            ptx: &self.ptx,
            compressed: self.compressed,
        }
    }
}

/// The GPUs (by index) the Vulkan backend sees: every NVIDIA GPU, where the
/// driver's Vulkan ICD is installed. A software rasteriser (llvmpipe) is a
/// CPU-type device that ggml does not select, so without the ICD it lists
/// none (ggml-vulkan.cpp, `ggml_vk_instance_init`).
fn vulkan_devices(host: &Host, log: &mut String) -> Vec<usize> {
    match &host.nvidia {
        Some(nv) if nv.vulkan_icd => (0..nv.gpus.len()).collect(),
        _ => {
            log.push_str("ggml_vulkan: No devices found.\n");
            vec![]
        }
    }
}
