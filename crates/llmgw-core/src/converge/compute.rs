//! The compute check: a program of the build (llama.cpp's `llama-bench`)
//! loads the tiny model and generates a few tokens with it, on every device
//! the build listed, or on the CPU for a CPU build. Listing devices
//! launches no kernel; generating runs the build's kernels on the GPU, so a
//! build without a kernel image for it, or whose PTX the driver cannot
//! compile, fails here and not at the first request it serves
//! (ggml-org/llama.cpp#4215, #1648).
//!
//! Every effect goes through [`System`]: the model is written into a
//! directory of the build's staging, the program is run with the check's
//! time limit, and the directory is removed whatever the outcome.

use std::path::{Path, PathBuf};

use crate::parse::bench;
use crate::recipe::{Build, ModelRun};
use crate::system::{Cmd, System};

/// The tiny model: a llama-architecture GGUF with random weights, 302
/// tokens of vocabulary, 2 layers, n_embd 64, context 128, f16, 284,032
/// bytes. Made by `ci/tiny-model/make_tiny_gguf.py` (gguf 0.19.0 from PyPI,
/// seed 20260101); `ci/llama-cpu-check.sh` shows a real llama.cpp b11312
/// loading it and generating (ci/tiny-model/README.md).
pub const TINY_MODEL: &[u8] = include_bytes!("../../../../assets/tiny-llama.gguf");

/// The model's file name where the check writes it.
pub const TINY_MODEL_FILE: &str = "tiny-llama.gguf";

/// sha256 of [`TINY_MODEL`], lowercase hex (ci/tiny-model/README.md).
pub const TINY_MODEL_SHA256: &str = "96d5a7574e7e32ecb840da5c89009259efb2dd05d4217d93c8ef969888765602";

/// Where the program computes: a listed device, or the CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A device as `--list-devices` named it: `("CUDA0", "NVIDIA H100 80GB HBM3")`.
    Device(String, String),
    /// The CPU (the run's arguments say so themselves: `-dev none`).
    Cpu,
}

/// How one run went wrong: what the process did, and its own line saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    /// `exited 1`, `was killed by a signal`, `was killed at its time limit of 120 s`.
    how: String,
    /// The program's error line, or what is missing when it printed none.
    said: String,
}

/// Runs `run` on every target, with the model written into `dir` (made
/// here, removed here); what proved it in words: `computes on CUDA0–CUDA1:
/// 2× NVIDIA L4`, `computes on the CPU`.
///
/// # Errors
/// One sentence naming each device that did not compute and the program's
/// own error line for it, and those that did.
pub fn model_computes(
    sys: &mut dyn System,
    build: &Build,
    binary: &Path,
    run: &ModelRun,
    targets: &[Target],
    dir: &Path,
    timeout: u64,
) -> Result<String, String> {
    let bin_dir = binary.parent().unwrap_or(Path::new("/"));
    let program = bin_dir.join(&run.program);
    let beside = sys.list_dir(bin_dir).map_err(|e| e.to_string())?.unwrap_or_default();
    if !beside.iter().any(|e| !e.is_dir && e.name == run.program) {
        return Err(format!("there is no {} beside {}", run.program, build.binary));
    }
    let model = dir.join(TINY_MODEL_FILE);
    let written = sys.create_dir_all(dir).and_then(|()| sys.write_atomic(&model, TINY_MODEL));
    let result = match written {
        Ok(()) => each_target(sys, run, &program, &model, targets, timeout),
        Err(e) => Err(format!("writing the model for the compute check: {e}")),
    };
    let _ = sys.remove(dir);
    result
}

/// Runs the program on each target in turn; every target is tried, so a
/// node with one bad GPU among good ones says which.
fn each_target(
    sys: &mut dyn System,
    run: &ModelRun,
    program: &PathBuf,
    model: &Path,
    targets: &[Target],
    timeout: u64,
) -> Result<String, String> {
    let mut computed: Vec<(String, String)> = Vec::new();
    let mut failed: Vec<(Failure, Vec<(String, String)>)> = Vec::new();
    for t in targets {
        let (device, words) = match t {
            Target::Device(id, what) => (id.as_str(), (id.clone(), what.clone())),
            Target::Cpu => ("none", ("the CPU".to_string(), String::new())),
        };
        let cmd = Cmd::new(program, run.args_for(model, device)).timeout(timeout);
        match one_run(sys, &cmd, run, model) {
            Ok(()) => computed.push(words),
            Err(f) => match failed.iter_mut().find(|(g, _)| *g == f) {
                Some((_, devices)) => devices.push(words),
                None => failed.push((f, vec![words])),
            },
        }
    }
    if failed.is_empty() {
        return Ok(match targets {
            [Target::Cpu] => "computes on the CPU".to_string(),
            _ => format!("computes on {}", devices_in_words(computed)),
        });
    }
    let mut parts: Vec<String> = failed
        .iter()
        .map(|(f, devices)| format!("{} on {} {}{}", run.program, failed_devices(devices), f.how, f.said))
        .collect();
    if !computed.is_empty() {
        parts.push(format!("it computes on {}", devices_in_words(computed)));
    }
    Err(parts.join("; "))
}

/// One run: generated tokens, or how it failed.
fn one_run(sys: &mut dyn System, cmd: &Cmd, run: &ModelRun, model: &Path) -> Result<(), Failure> {
    let out = match sys.run(cmd) {
        Ok(out) => out,
        Err(e) => {
            let why = match e {
                crate::system::SysError::Spawn { message, .. } => message,
                other => other.to_string(),
            };
            return Err(Failure { how: "could not be run".into(), said: format!(": {why}") });
        }
    };
    if out.success() && bench::rows(&out.stdout).iter().any(bench::Row::generated) {
        return Ok(());
    }
    let how = out.ended.to_string();
    let dir = cmd.program.parent().map(|d| format!("{}/", d.display())).unwrap_or_default();
    let clean = |l: String| l.replace(&model.display().to_string(), TINY_MODEL_FILE).replace(&dir, "");
    let said = match bench::error_line(&out.stderr) {
        Some(line) => format!(": {}", clean(line)),
        None if out.stderr.trim().is_empty() && out.stdout.trim().is_empty() => ", printing nothing".to_string(),
        None => format!(", printing no row of tokens generated (`-o jsonl`) and no error line of {}", run.program),
    };
    let said = match out.left_out_words() {
        Some(printed) => format!("{said} ({printed})"),
        None => said,
    };
    Err(Failure { how, said })
}

/// Failed devices in words: `CUDA0 (Tesla T4)`, `CUDA0, CUDA2 (2× Tesla T4)`,
/// `CUDA0–CUDA7 (8× NVIDIA H100 80GB HBM3)`, `the CPU`.
fn failed_devices(devices: &[(String, String)]) -> String {
    let ids: Vec<&str> = devices.iter().map(|(id, _)| id.as_str()).collect();
    let split = |id: &str| {
        let digits = id.trim_start_matches(|c: char| !c.is_ascii_digit());
        (id[..id.len() - digits.len()].to_string(), digits.parse::<u64>().ok())
    };
    let numbered: Vec<(String, Option<u64>)> = ids.iter().map(|id| split(id)).collect();
    let consecutive = ids.len() > 2
        && numbered.windows(2).all(|w| w[0].0 == w[1].0 && w[0].1.zip(w[1].1).is_some_and(|(a, b)| b == a + 1));
    let ids = match (consecutive, ids.first(), ids.last()) {
        (true, Some(first), Some(last)) => format!("{first}–{last}"),
        _ => ids.join(", "),
    };
    let mut groups: Vec<(usize, &str)> = Vec::new();
    for (_, what) in devices.iter().filter(|(_, w)| !w.is_empty()) {
        match groups.iter_mut().find(|(_, w)| *w == what.as_str()) {
            Some((n, _)) => *n += 1,
            None => groups.push((1, what)),
        }
    }
    let whats: Vec<String> = match groups.as_slice() {
        [] => return ids,
        [(1, w)] => vec![w.to_string()],
        _ => groups.iter().map(|(n, w)| format!("{n}× {w}")).collect(),
    };
    format!("{ids} ({})", whats.join(", "))
}

/// Devices as `(id, description)` in a few words: `CUDA0: NVIDIA H100`, or
/// for several `CUDA0–CUDA7: 8× NVIDIA H100 80GB HBM3`.
pub(super) fn devices_in_words(devices: Vec<(String, String)>) -> String {
    match devices.as_slice() {
        [] => String::new(),
        [(id, what)] => format!("{id}: {what}"),
        [(first, _), .., (last, _)] => {
            let mut groups: Vec<(usize, &str)> = Vec::new();
            for (_, what) in &devices {
                match groups.iter_mut().find(|(_, w)| *w == what.as_str()) {
                    Some((n, _)) => *n += 1,
                    None => groups.push((1, what)),
                }
            }
            let groups: Vec<String> = groups.iter().map(|(n, w)| format!("{n}× {w}")).collect();
            format!("{first}–{last}: {}", groups.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_model_is_the_committed_file() {
        let (size, sha) = crate::archive::sha256_reader(TINY_MODEL).unwrap();
        assert_eq!((size, sha.as_str()), (284_032, TINY_MODEL_SHA256));
        assert!(TINY_MODEL.starts_with(b"GGUF"));
    }

    #[test]
    fn failed_devices_are_named_with_their_gpus() {
        let t4 = |i: u32| (format!("CUDA{i}"), "Tesla T4".to_string());
        assert_eq!(failed_devices(&[t4(0)]), "CUDA0 (Tesla T4)");
        assert_eq!(failed_devices(&[t4(0), t4(2)]), "CUDA0, CUDA2 (2× Tesla T4)");
        assert_eq!(failed_devices(&[t4(0), t4(1), t4(2)]), "CUDA0–CUDA2 (3× Tesla T4)");
        let mixed = [t4(0), ("CUDA1".to_string(), "NVIDIA L4".to_string())];
        assert_eq!(failed_devices(&mixed), "CUDA0, CUDA1 (1× Tesla T4, 1× NVIDIA L4)");
        assert_eq!(failed_devices(&[("the CPU".into(), String::new())]), "the CPU");
    }
}
