//! The simulated `llama-bench`: `-m MODEL -dev DEVICE … -o jsonl -v`, as
//! llama.cpp's `tools/llama-bench/llama-bench.cpp` (b11312) runs it.
//!
//! It loads the ggml backends beside it (no CPU backend: `main: error: CPU
//! backend is not loaded`), takes the device by name (`error: invalid
//! device: CUDA1` for one no backend lists), loads the model (`gguf.rs`,
//! then `llama_bench: error: failed to load model '…'`), and computes: on
//! a CUDA device the GPU decides ([`llmgw_model::nvidia::CudaKernels::decide`]),
//! and a refusal at the first kernel aborts in ggml-cuda.cu's words,
//! killed by SIGABRT; Vulkan and the CPU compute. Success is two JSON rows
//! on stdout, prompt (pp8) then generation (tg8), with fixed rates: the
//! output never depends on when it ran.

use std::path::Path;

use super::backends::{Kernels, devices, loaded_backends};
use super::gguf;
use crate::truth::stub::Backend;
use llmgw_core::system::{DirEntry, Ended, Output};
use llmgw_model::host::Host;
use llmgw_model::nvidia::CudaStep;

/// Where ggml-cuda.cu sits in the release build's tree, as `__FILE__` names
/// it in an abort: GitHub's runner checkout of ggml-org/llama.cpp (the
/// directory is UNCONFIRMED for the release jobs; the line numbers are
/// b11312's: `CUDA_CHECK(err)` in `ggml_cuda_compute_forward` at 2419,
/// `GGML_ABORT` in `ggml_cuda_error` at 109).
const GGML_CUDA_CU: &str = "/home/runner/work/llama.cpp/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu";

/// The value after `flag` in `args`.
fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// Runs the simulated `llama-bench` in `dir` (its directory, listed in `entries`).
pub(super) fn run(
    host: &Host,
    dir: &Path,
    entries: &[DirEntry],
    args: &[String],
    mut read: impl FnMut(&Path) -> Option<Vec<u8>>,
) -> Output {
    let fail = |ended: Ended, stderr: String| Output { ended, stderr, ..Output::default() };
    let backends = loaded_backends(host, dir, entries, &mut read);
    if !backends.iter().any(|(_, b)| *b == Backend::Cpu) {
        return fail(Ended::Exited(1), "main: error: CPU backend is not loaded\n".into());
    }
    let mut log = String::new();
    let listed = devices(host, &backends, &mut log);
    let (Some(model), Some(device)) = (value(args, "-m"), value(args, "-dev")) else {
        return fail(Ended::Exited(1), format!("{log}error: invalid parameter for argument: {}\n", args.join(" ")));
    };
    let on = match device {
        "none" => None,
        name => match listed.iter().find(|d| d.name == name) {
            Some(d) => Some(d),
            None => {
                return fail(
                    Ended::Exited(1),
                    format!("{log}error: invalid device: {name}\nerror: invalid parameter for argument: -dev\n"),
                );
            }
        },
    };
    let loaded = match read(Path::new(model)) {
        Some(bytes) => gguf::load(&bytes),
        None => {
            Err(vec![format!("gguf_init_from_file: failed to open GGUF file '{model}' (No such file or directory)")])
        }
    };
    let layers = match loaded {
        Ok(m) => m.layers,
        Err(lines) => {
            for l in lines {
                log.push_str(&l);
                log.push('\n');
            }
            if !log.contains("error loading model: ") {
                log.push_str(&format!(
                    "llama_model_load: error loading model: llama_model_loader: failed to load model from {model}\n"
                ));
            }
            log.push_str(&format!(
                "llama_model_load_from_file_impl: failed to load model\nllama_bench: error: failed to load model '{model}'\n"
            ));
            return fail(Ended::Exited(1), log);
        }
    };
    let Some(d) = on else {
        return generated(log, model, "CPU", "none", "");
    };
    log.push_str(&format!(
        "load_tensors: offloading {layers} repeating layers to GPU\nload_tensors: offloaded {}/{} layers to GPU\n",
        layers + 1,
        layers + 1
    ));
    let nv = host.nvidia.as_ref().expect("a device is one of the host's GPUs");
    let gpu = &nv.gpus[d.gpu];
    let backend = backends.iter().map(|(_, b)| b).find(|b| d.name.starts_with(label(b)));
    if let Some(Backend::Cuda { toolkit, sass, ptx, compressed }) = backend {
        let kernels = Kernels::new(toolkit, sass, ptx, *compressed);
        if let Some(r) =
            kernels.get().decide(gpu.compute_capability, &nv.driver).filter(|r| r.step == CudaStep::FirstKernel)
        {
            let index = d.name.trim_start_matches("CUDA");
            log.push_str(&format!(
                "ggml_cuda_compute_forward: RMS_NORM failed\nCUDA error: {}\n  current device: {index}, in function ggml_cuda_compute_forward at {GGML_CUDA_CU}:2419\n  err\n{GGML_CUDA_CU}:109: CUDA error\n",
                r.error
            ));
            // ggml-cuda aborts: SIGABRT.
            return fail(Ended::Signalled(6), log);
        }
    }
    let info = backend.map_or("", label);
    generated(log, model, info, &d.name, &gpu.name)
}

/// The device names' prefix of a backend.
fn label(b: &Backend) -> &'static str {
    match b {
        Backend::Cuda { .. } => "CUDA",
        Backend::Vulkan => "Vulkan",
        Backend::Cpu | Backend::Rpc => "CPU",
    }
}

/// Success: the prompt and generation rows, fixed rates.
fn generated(log: String, model: &str, backends: &str, devices: &str, gpu_info: &str) -> Output {
    let row = |n_prompt: u32, n_gen: u32, avg_ts: &str| {
        let model = serde_json::to_string(model).expect("a string serializes");
        format!(
            "{{\"gpu_info\": \"{gpu_info}\", \"backends\": \"{backends}\", \"model_filename\": {model}, \
             \"model_type\": \"llama ?B F16\", \"n_gpu_layers\": 99, \"devices\": \"{devices}\", \"n_prompt\": {n_prompt}, \
             \"n_gen\": {n_gen}, \"avg_ts\": {avg_ts}}}\n"
        )
    };
    Output {
        ended: Ended::Exited(0),
        stdout: format!("{}{}", row(8, 0, "2538.290912"), row(0, 8, "9720.900787")),
        stderr: log,
        ..Output::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flags_value_is_the_next_argument() {
        let args: Vec<String> = ["-m", "m.gguf", "-dev", "CUDA0"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            (value(&args, "-m"), value(&args, "-dev"), value(&args, "-n")),
            (Some("m.gguf"), Some("CUDA0"), None)
        );
    }
}
