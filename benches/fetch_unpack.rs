//! Download + sha256 + unpack of a generated 512 MiB `.tar.gz` over
//! loopback, in one pass (`Local::fetch_unpack`: a reader thread hashing
//! the body, an unpacker thread inflating, untarring and hashing each file),
//! from the fake server's offline mirror (`FakeServer::serve_mirror`, the
//! body held in memory), into a fresh temporary directory each time (made
//! and removed outside the timing). The archive is made once, before any
//! timing; `LLMGW_BENCH_MIB` sets its size (default 512).
//!
//! Run with `cargo bench --bench fetch_unpack`; `ci/bench-vs-shell.sh` sets
//! the whole `llmgw provision` against the shell pipelines.

// The benchmark writes its archive into a mirror directory and reads its size from the environment.
#![allow(clippy::disallowed_methods)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use llmgw_core::system::FetchJob;
use llmgw_sim::publisher::FakeServer;
use llmgw_sim::truth::embedded_catalog;
use llmgw_system::http::Http;

#[path = "support/archive.rs"]
mod archive;

fn bench(c: &mut Criterion) {
    let mib: usize = std::env::var("LLMGW_BENCH_MIB").ok().and_then(|s| s.parse().ok()).unwrap_or(512);
    let (gz, unpacked) = archive::cuda_like_tar_gz(mib);
    let mirror = tempfile::tempdir().expect("a temporary directory");
    let asset = "llama-b10850-bin-ubuntu-x64.tar.gz";
    std::fs::create_dir_all(mirror.path().join("llama.cpp/b10850")).expect("the mirror's directory");
    std::fs::write(mirror.path().join("llama.cpp/b10850").join(asset), &gz).expect("the mirror's file");
    let server = FakeServer::start(embedded_catalog()).expect("the fake server starts");
    server.serve_mirror(mirror.path()).expect("the mirror is served");
    let url = format!("{}/llama.cpp/b10850/{asset}", server.mirror_url());
    let local = Http::loopback(10, 600).expect("an HTTP client");

    let mut g = c.benchmark_group("fetch_unpack");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(gz.len() as u64));
    let name = format!("{} MiB .tar.gz ({} MiB unpacked) over loopback", gz.len() >> 20, unpacked >> 20);
    g.bench_function(name, |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("a temporary directory"),
            |dir| {
                let job = FetchJob { url: url.clone(), into: dir.path().to_path_buf(), size: None };
                let fetched = local.fetch_unpack(&[job], &|_, _, _| {}).pop().expect("one result");
                let fetched = fetched.expect("the download succeeds");
                assert!(fetched.unpacked.is_ok(), "{:?}", fetched.unpacked);
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
