//! Simulated processes: `ldd` of a file, and the programs of a simulated
//! build (their version command and `llama-server --list-devices`).
//!
//! A program that cannot load exits 127 with the loader's message, as a
//! real one does. `--list-devices` loads every ggml backend beside the
//! binary that the loader can resolve, silently skipping the others (a
//! release build's `ggml_backend_load_all` is silent), and lists the GPUs
//! each can compute on ([`crate::nvidia::CudaKernels::refusal`] for CUDA, a
//! driver with a Vulkan ICD for Vulkan).

use std::path::Path;

use super::ldd::resolve;
use super::{python, uv};
use crate::host::{ComputeCapability, Host};
use crate::nvidia::CudaKernels;
use crate::sim::truth::stub::{Backend, ElfStub, Emulated};
use crate::system::Effects;
use crate::system::{DirEntry, Output, SysError};

/// `ldd FILE` on the simulated host.
pub(super) fn ldd(host: &Host, file: &Path, mut read: impl FnMut(&Path) -> Option<Vec<u8>>) -> Output {
    let Some(bytes) = read(file) else {
        return Output {
            code: Some(1),
            stderr: format!("ldd: {}: No such file or directory\n", file.display()),
            ..Output::default()
        };
    };
    let Some(stub) = ElfStub::from_bytes(&bytes) else {
        return Output { code: Some(1), stdout: "\tnot a dynamic executable\n".into(), ..Output::default() };
    };
    let res = resolve(host, file, &stub, read);
    let code = if res.missing_versions.is_empty() { 0 } else { 1 };
    Output { code: Some(code), stdout: res.ldd_text(file, host), stderr: String::new() }
}

/// Runs the simulated program at `program` with `args`: a simulated ELF
/// file (uv and Python emulated, other programs' version command and
/// `--list-devices`), or a console script of a simulated environment.
pub(super) fn run(host: &Host, local: &Effects, program: &Path, args: &[String]) -> Result<Output, SysError> {
    let shown = program.display().to_string();
    let read = |p: &Path| local.files.read(p).ok().flatten();
    let Some(bytes) = read(program) else {
        return Err(SysError::Spawn { program: shown, message: "No such file or directory".into() });
    };
    if bytes.starts_with(b"#!") {
        return Ok(python::run_script(host, local, program, &String::from_utf8_lossy(&bytes), args));
    }
    let Some(stub) = ElfStub::from_bytes(&bytes) else {
        let why = if ElfStub::looks_like_elf(&bytes) { "Exec format error" } else { "Permission denied" };
        return Ok(Output {
            code: Some(126),
            stderr: format!("{shown}: cannot execute binary file: {why}\n"),
            ..Output::default()
        });
    };
    let res = resolve(host, program, &stub, read);
    if let Some(e) = res.loader_error(program) {
        return Ok(Output { code: Some(127), stderr: format!("{e}\n"), ..Output::default() });
    }
    if let Some(v) = stub.version.as_ref().filter(|v| v.args == args) {
        return Ok(Output { code: Some(0), stdout: v.stdout.clone(), stderr: v.stderr.clone() });
    }
    match stub.emulates {
        Some(Emulated::Uv) => return Ok(uv::run(host, local, args)),
        Some(Emulated::Python) => return Ok(python::run(host, local, program, args)),
        None => {}
    }
    if stub.lists_devices && args == ["--list-devices"] {
        let dir = program.parent().unwrap_or(Path::new("/"));
        let entries = local.files.list_dir(dir).ok().flatten().unwrap_or_default();
        return Ok(list_devices(host, dir, &entries, read));
    }
    Ok(Output { code: Some(1), stderr: format!("error: invalid argument: {}\n", args.join(" ")), ..Output::default() })
}

/// `llama-server --list-devices`: each backend beside the binary that loads,
/// and the devices it lists.
fn list_devices(
    host: &Host,
    dir: &Path,
    entries: &[DirEntry],
    mut read: impl FnMut(&Path) -> Option<Vec<u8>>,
) -> Output {
    let mut stdout = String::from("Available devices:\n");
    let mut stderr = String::new();
    let mut listed = 0;
    for e in entries.iter().filter(|e| !e.is_dir && e.name.starts_with("libggml-") && e.name.ends_with(".so")) {
        let path = dir.join(&e.name);
        let Some(stub) = read(&path).and_then(|b| ElfStub::from_bytes(&b)) else {
            continue;
        };
        let Some(backend) = &stub.backend else { continue };
        if !resolve(host, &path, &stub, &mut read).loads() {
            continue; // silent, as ggml_backend_load_all is in release builds
        }
        let (label, devices) = match backend {
            Backend::Cpu | Backend::Rpc => continue,
            Backend::Cuda { toolkit, sass, ptx, compressed } => {
                ("CUDA", cuda_devices(host, toolkit, sass, ptx, *compressed, &mut stderr))
            }
            Backend::Vulkan => ("Vulkan", vulkan_devices(host, &mut stderr)),
        };
        stderr.push_str(&format!("load_backend: loaded {label} backend from {}\n", path.display()));
        for (i, (name, mib)) in devices.iter().enumerate() {
            stdout.push_str(&format!("  {label}{i}: {name} ({mib} MiB, {} MiB free)\n", mib.saturating_sub(mib / 64)));
            listed += 1;
        }
    }
    if listed == 0 {
        stdout.push_str("  (none)\n");
    }
    Output { code: Some(0), stdout, stderr }
}

/// The GPUs a CUDA backend can compute on; why each other cannot goes to `log`.
fn cuda_devices(
    host: &Host,
    toolkit: &str,
    sass: &[String],
    ptx: &[String],
    compressed: bool,
    log: &mut String,
) -> Vec<(String, u64)> {
    let Some(nv) = &host.nvidia else {
        log.push_str("ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected\n");
        return vec![];
    };
    let (sass, exact) = python::split_sass(sass);
    let ptx: Vec<ComputeCapability> = ptx.iter().filter_map(|s| ComputeCapability::parse(s).ok()).collect();
    let kernels = CudaKernels { toolkit, sass: &sass, sass_exact: &exact, ptx: &ptx, compressed };
    let mut out = Vec::new();
    for (i, g) in nv.gpus.iter().enumerate() {
        match kernels.refusal(g.compute_capability, &nv.driver) {
            None => out.push((g.name.clone(), g.memory_mib)),
            Some(why) => log.push_str(&format!("ggml_cuda_init: device {i} ({}): {why}\n", g.name)),
        }
    }
    out
}

/// The GPUs the Vulkan backend sees: every NVIDIA GPU, where the driver's
/// Vulkan ICD is installed.
fn vulkan_devices(host: &Host, log: &mut String) -> Vec<(String, u64)> {
    match &host.nvidia {
        Some(nv) if nv.vulkan_icd => nv.gpus.iter().map(|g| (g.name.clone(), g.memory_mib)).collect(),
        _ => {
            log.push_str("ggml_vulkan: No devices found.\n");
            vec![]
        }
    }
}
