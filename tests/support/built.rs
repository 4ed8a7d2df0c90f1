//! A llama.cpp b10850 release of real programs built by a test (`cc`,
//! `nvcc`), for the real path: shared by `tests/it/real.rs` and `tests/gpu.rs`.

use llmgw_sim::truth::{Asset, Catalog, File, Release};

/// A file of real bytes (mode 0755) at `path` under the archive's top directory.
pub fn raw(path: &str, bytes: &[u8]) -> File {
    File { path: path.into(), raw: Some(bytes.to_vec()), ..File::default() }
}

/// An asset of `files` under `llama-b10850/`.
pub fn asset(name: &str, files: Vec<File>) -> Asset {
    Asset { name: name.into(), top: "llama-b10850".into(), files, ..Asset::default() }
}

/// The backend modules beside `llama-server`: the baseline CPU backend and,
/// for a GPU build, its backend module (`libggml-cuda.so`), each `lib`'s bytes.
pub fn backends(lib: &[u8], gpu: Option<&str>) -> Vec<File> {
    let mut files = vec![raw("libggml-cpu-x64.so", lib)];
    files.extend(gpu.map(|b| raw(b, lib)));
    files
}

/// A build's archive: `server` as `llama-server` and as `llama-bench` (the
/// programs answer both), with its [`backends`].
pub fn build(server: &[u8], lib: &[u8], gpu: Option<&str>) -> Vec<File> {
    let mut files = vec![raw("llama-server", server), raw("llama-bench", server)];
    files.extend(backends(lib, gpu));
    files
}

/// The release `ggml-org/llama.cpp@b10850` with `assets`, its sources saying
/// how the programs were made; no index, no fault.
pub fn release(assets: Vec<Asset>, made_by: &str) -> Catalog {
    Catalog {
        releases: vec![Release {
            engine: "llama.cpp".into(),
            version: "b10850".into(),
            repo: "ggml-org/llama.cpp".into(),
            tag: "b10850".into(),
            commit: "fe14399".into(),
            published_at: "2026-10-20T14:03:11Z".into(),
            prerelease: true,
            sources: vec![made_by.into()],
            assets,
        }],
        indexes: vec![],
        faults: vec![],
        machine: Default::default(),
    }
}
