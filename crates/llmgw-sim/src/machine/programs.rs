//! Simulated processes: `ldd` of a file, and the programs of a simulated
//! build (their version command, `llama-server --list-devices` and
//! `llama-bench`).
//!
//! A program that cannot load exits 127 with the loader's message, as a
//! real one does. A llama.cpp program loads every ggml backend beside it
//! that the loader can resolve, silently skipping the others (a release
//! build's `ggml_backend_load_all` is silent). `--list-devices` lists every
//! device each backend's driver sees, whatever kernels the build carries
//! (listing launches none; only a CUDA runtime the driver cannot run lists
//! nothing). `llama-bench` loads the model (`gguf.rs`) and computes on the
//! device asked for: for CUDA the GPU decides
//! ([`llmgw_model::nvidia::CudaKernels::decide`]) and a refusal aborts in
//! ggml-cuda's words; Vulkan computes on every device its ICD lists.

use std::path::Path;

use super::backends::{devices, loaded_backends};
use super::ldd::resolve;
use super::{python, uv};
use crate::truth::ProgramFault;
use crate::truth::stub::{ElfStub, Emulated};
use llmgw_core::system::{DirEntry, Ended, Output, SysError};
use llmgw_model::host::Host;
use llmgw_system::Local;

/// `ldd FILE` on the simulated host.
pub(super) fn ldd(host: &Host, file: &Path, mut read: impl FnMut(&Path) -> Option<Vec<u8>>) -> Output {
    let Some(bytes) = read(file) else {
        return Output {
            ended: Ended::Exited(1),
            stderr: format!("ldd: {}: No such file or directory\n", file.display()),
            ..Output::default()
        };
    };
    let Some(stub) = ElfStub::from_bytes(&bytes) else {
        return Output { ended: Ended::Exited(1), stdout: "\tnot a dynamic executable\n".into(), ..Output::default() };
    };
    let res = resolve(host, file, &stub, read);
    let code = if res.missing_versions.is_empty() { 0 } else { 1 };
    Output { ended: Ended::Exited(code), stdout: res.ldd_text(file, host), stderr: String::new(), ..Output::default() }
}

/// How a simulated program is run: its time limit, and the fault of the
/// compute program, if any.
pub(super) struct Limits {
    /// The time limit, in seconds: a program that hangs is killed at it.
    pub timeout_secs: u64,
    /// What goes wrong with a `llama-bench`, whatever it is asked.
    pub bench_fault: Option<ProgramFault>,
}

/// A program killed at its time limit, as the real process runner ends it
/// (`llmgw_system::process::run_with_limit`): having printed nothing.
fn killed_at_limit(secs: u64) -> Output {
    Output { ended: Ended::TimedOut { secs }, ..Output::default() }
}

/// Runs the simulated program at `program` with `args`: a simulated ELF
/// file (uv and Python emulated, other programs' version command,
/// `--list-devices` and `llama-bench`), or a console script of a simulated
/// environment. The seconds it ran come back with it when they count (a
/// program killed at its limit).
pub(super) fn run(
    host: &Host,
    local: &Local,
    (program, args, env): (&Path, &[String], &[(String, String)]),
    limits: &Limits,
) -> Result<(Output, u64), SysError> {
    let out = run_program(host, local, (program, args, env), limits)?;
    let waited = match out.ended {
        Ended::TimedOut { secs } => secs,
        Ended::Exited(_) | Ended::Signalled(_) => 0,
    };
    Ok((out, waited))
}

fn run_program(
    host: &Host,
    local: &Local,
    (program, args, env): (&Path, &[String], &[(String, String)]),
    limits: &Limits,
) -> Result<Output, SysError> {
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
            ended: Ended::Exited(126),
            stderr: format!("{shown}: cannot execute binary file: {why}\n"),
            ..Output::default()
        });
    };
    let res = resolve(host, program, &stub, read);
    if let Some(e) = res.loader_error(program) {
        return Ok(Output { ended: Ended::Exited(127), stderr: format!("{e}\n"), ..Output::default() });
    }
    if let Some(v) = stub.version.as_ref().filter(|v| v.args == args) {
        return Ok(Output {
            ended: Ended::Exited(0),
            stdout: v.stdout.clone(),
            stderr: v.stderr.clone(),
            ..Output::default()
        });
    }
    match stub.emulates {
        Some(Emulated::Uv) => return Ok(uv::run(host, local, args, env)),
        Some(Emulated::Python) => return Ok(python::run(host, local, program, args)),
        None => {}
    }
    if stub.lists_devices && args == ["--list-devices"] {
        let dir = program.parent().unwrap_or(Path::new("/"));
        let entries = local.files.list_dir(dir).ok().flatten().unwrap_or_default();
        return Ok(list_devices(host, dir, &entries, read));
    }
    if stub.bench {
        return Ok(match limits.bench_fault {
            Some(ProgramFault::Hangs) => killed_at_limit(limits.timeout_secs),
            Some(ProgramFault::PrintsNothing) => Output { ended: Ended::Exited(0), ..Output::default() },
            None => {
                let dir = program.parent().unwrap_or(Path::new("/"));
                let entries = local.files.list_dir(dir).ok().flatten().unwrap_or_default();
                super::bench::run(host, dir, &entries, args, read)
            }
        });
    }
    Ok(Output {
        ended: Ended::Exited(1),
        stderr: format!("error: invalid argument: {}\n", args.join(" ")),
        ..Output::default()
    })
}

/// `llama-server --list-devices`: each backend beside the binary that loads,
/// and the devices it lists.
fn list_devices(host: &Host, dir: &Path, entries: &[DirEntry], read: impl FnMut(&Path) -> Option<Vec<u8>>) -> Output {
    let mut stdout = String::from("Available devices:\n");
    let mut stderr = String::new();
    let backends = loaded_backends(host, dir, entries, read);
    let listed = devices(host, &backends, &mut stderr);
    for d in &listed {
        let free = d.mib.saturating_sub(d.mib / 64);
        stdout.push_str(&format!("  {}: {} ({} MiB, {free} MiB free)\n", d.name, d.description, d.mib));
    }
    if listed.is_empty() {
        stdout.push_str("  (none)\n");
    }
    Output { ended: Ended::Exited(0), stdout, stderr, ..Output::default() }
}
