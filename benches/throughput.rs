//! Throughput of the two stages every archive goes through, on this
//! machine's cores: sha256 (`sha2`, SHA-NI or ARMv8 SHA detected at run
//! time) over 64 MiB in memory, and gunzip + untar + the sha256 of every
//! unpacked file (`archive::unpack_tar_gz`, `flate2` on `zlib-rs`) of a
//! generated 64 MiB `.tar.gz` that looks like a CUDA build, into a fresh
//! temporary directory each time (made and removed outside the timing).
//!
//! Run with `cargo bench --bench throughput`; `ci/bench-vs-shell.sh` sets
//! the same stages against `sha256sum` and `tar xzf`.

// The benchmark writes its archives into temporary directories.
#![allow(clippy::disallowed_methods)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use llmgw_core::archive::{Limits, sha256_reader};
use llmgw_system::unpack::unpack_tar_gz;
use sha2::{Digest, Sha256};

#[path = "support/archive.rs"]
mod archive;

fn sha256(c: &mut Criterion) {
    let data = archive::random_bytes(64 << 20, 7);
    let mut g = c.benchmark_group("sha256");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("64 MiB in one update", |b| b.iter(|| Sha256::digest(&data)));
    g.bench_function("64 MiB through sha256_reader (256 KiB reads)", |b| {
        b.iter(|| sha256_reader(&data[..]).expect("reading memory"))
    });
    g.finish();
}

fn unpack(c: &mut Criterion) {
    let (gz, unpacked) = archive::cuda_like_tar_gz(64);
    let mut g = c.benchmark_group("unpack");
    g.throughput(Throughput::Bytes(gz.len() as u64));
    g.bench_function(
        format!("{} MiB .tar.gz to {} MiB (gunzip, untar, sha256 of each file)", gz.len() >> 20, unpacked >> 20),
        |b| {
            b.iter_batched(
                || tempfile::tempdir().expect("a temporary directory"),
                |dir| {
                    unpack_tar_gz(&gz[..], dir.path(), Limits::default()).expect("the archive unpacks");
                    dir
                },
                BatchSize::PerIteration,
            )
        },
    );
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = sha256, unpack
}
criterion_main!(benches);
