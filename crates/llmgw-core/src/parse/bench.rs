//! `llama-bench -o jsonl -v`: the rows it prints on stdout, and the line of
//! its log (stderr) that says why it failed.
//!
//! Format (llama.cpp's `tools/llama-bench/llama-bench.cpp`, `jsonl_printer`;
//! seen on b11312, ci/tiny-model/llama-cpu-check.out.txt): one JSON object
//! per test and line, `{"build_commit": "0c1e570", "build_number": 11312,
//! …, "backends": "CPU", …, "n_gpu_layers": 99, …, "devices": "auto", …,
//! "n_prompt": 8, "n_gen": 0, …, "avg_ts": 2538.29, …}`; `-p 8 -n 8` gives
//! a prompt row (pp8) then a generation row (tg8). With `-v` the log is
//! written line by line as it comes (llama.cpp's default log callback), so
//! a failure's lines are there when the process ends, whatever killed it.

use serde::Deserialize;

/// One test's result.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Row {
    /// Tokens of prompt processed (`pp8`: 8), 0 for a generation test.
    #[serde(default)]
    pub n_prompt: u64,
    /// Tokens generated (`tg8`: 8), 0 for a prompt test.
    #[serde(default)]
    pub n_gen: u64,
    /// The average rate, tokens per second.
    #[serde(default)]
    pub avg_ts: f64,
    /// The backends the build loaded: `CUDA`, `Vulkan`, `CPU`.
    #[serde(default)]
    pub backends: String,
    /// The devices asked for: `CUDA0`, `none`, `auto`.
    #[serde(default)]
    pub devices: String,
}

impl Row {
    /// Whether this row shows tokens generated at a real rate: a
    /// generation test with a positive, finite tokens per second.
    pub fn generated(&self) -> bool {
        self.n_gen > 0 && self.avg_ts.is_finite() && self.avg_ts > 0.0
    }
}

/// The rows of `stdout`; lines that are not a JSON object of that shape
/// (a header, a warning) are skipped.
pub fn rows(stdout: &str) -> Vec<Row> {
    stdout.lines().filter(|l| l.trim_start().starts_with('{')).filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// What marks the line that says why, best first: CUDA's error (after the
/// op that failed: `ggml_cuda_compute_forward: RMS_NORM failed` then
/// `CUDA error: no kernel image is available for execution on the
/// device`), memory running out (`cudaMalloc failed: out of memory`,
/// Vulkan's `ErrorOutOfDeviceMemory`), the model's loader
/// (`gguf_init_from_reader: invalid magic characters …`, `llama_model_load:
/// error loading model: …`), then any error, then any failure. Sources:
/// ggml-cuda.cu (`ggml_cuda_error`, `ggml_backend_cuda_buffer_type_alloc_buffer`),
/// ggml-org/llama.cpp#4215, #6433, #20431, and the loader's lines seen in
/// ci/tiny-model/llama-cpu-check.out.txt.
const MARKERS: &[&str] = &[
    "CUDA error: ",
    "out of memory",
    "ErrorOutOfDeviceMemory",
    "ErrorDeviceLost",
    "gguf_init_from_reader: ",
    "error loading model: ",
    "error: ",
    "error",
    "failed",
];

/// The line of `log` that says why the program failed, trimmed: the first
/// line with the best of [`MARKERS`]; `None` when no line has any.
pub fn error_line(log: &str) -> Option<String> {
    let lower: Vec<(String, &str)> = log.lines().map(|l| (l.to_ascii_lowercase(), l)).collect();
    MARKERS.iter().find_map(|m| {
        let m = m.to_ascii_lowercase();
        lower.iter().find(|(low, _)| low.contains(&m)).map(|(_, l)| l.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_rows_of_a_real_run() {
        // b11312's CPU build on the tiny model (ci/tiny-model/llama-cpu-check.out.txt), shortened.
        let out = "{\"build_commit\": \"0c1e570\", \"build_number\": 11312, \"backends\": \"CPU\", \"n_gpu_layers\": 99, \"devices\": \"auto\", \"n_prompt\": 8, \"n_gen\": 0, \"avg_ns\": 3151727, \"avg_ts\": 2538.290912, \"samples_ts\": [ 2538.29 ]}\n\
                   {\"build_commit\": \"0c1e570\", \"build_number\": 11312, \"backends\": \"CPU\", \"n_gpu_layers\": 99, \"devices\": \"auto\", \"n_prompt\": 0, \"n_gen\": 8, \"avg_ns\": 822969, \"avg_ts\": 9720.900787, \"samples_ts\": [ 9720.9 ]}\n";
        let r = rows(out);
        assert_eq!(r.len(), 2);
        assert!(!r[0].generated() && r[1].generated());
        assert_eq!((r[1].n_gen, r[1].backends.as_str()), (8, "CPU"));
        assert!(rows("").is_empty() && rows("| model | size |\n{not json\n").is_empty());
        assert!(!rows("{\"n_gen\": 8, \"avg_ts\": 0.0}").iter().any(Row::generated), "no rate, no tokens");
    }

    #[test]
    fn the_line_that_says_why_is_cudas_then_the_loaders_then_any_error() {
        // A build without a kernel for the GPU: the op's line comes first, CUDA's says why.
        let cuda = "load_tensors: offloaded 3/3 layers to GPU\nggml_cuda_compute_forward: RMS_NORM failed\n\
                    CUDA error: no kernel image is available for execution on the device\n  current device: 0, in function ggml_cuda_compute_forward at ggml-cuda.cu:2353\n  err\nggml-cuda.cu:97: CUDA error\n";
        assert_eq!(
            error_line(cuda).as_deref(),
            Some("CUDA error: no kernel image is available for execution on the device")
        );
        // ggml-org/llama.cpp#20431: the weights do not fit.
        let oom = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144817.04 MiB on device 0: cudaMalloc failed: out of memory\n\
                   alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624\n\
                   llama_model_load: error loading model: unable to allocate CUDA0 buffer\n";
        assert!(error_line(oom).unwrap().ends_with("cudaMalloc failed: out of memory"));
        // The loader's own words, seen on b11312 (magic, then a truncated file).
        let magic = "gguf_init_from_reader: invalid magic characters: 'GGUX', expected 'GGUF'\n\
                     llama_model_load: error loading model: llama_model_loader: failed to load model from m.gguf\n\
                     llama_bench: error: failed to load model 'm.gguf'\n";
        assert_eq!(
            error_line(magic).as_deref(),
            Some("gguf_init_from_reader: invalid magic characters: 'GGUX', expected 'GGUF'")
        );
        let cut = "llama_model_load: error loading model: tensor 'blk.0.ffn_down.weight' data is not within the file bounds, model is corrupted or incomplete\n\
                   llama_model_load_from_file_impl: failed to load model\n";
        assert!(error_line(cut).unwrap().contains("data is not within the file bounds"));
        assert_eq!(
            error_line("error: invalid device: CUDA1\nerror: invalid parameter for argument: -dev\n").as_deref(),
            Some("error: invalid device: CUDA1")
        );
        assert_eq!(error_line("print_info: n_vocab = 302\n"), None);
    }
}
