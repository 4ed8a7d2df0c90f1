//! Benchmarks: a whole `simulate` of one host (fake server started,
//! every default want converged into a fresh engines directory; the target
//! is under 50 ms), and recipe selection alone for one host (`select`). The
//! whole matrix is `benches/matrix.rs` (and `ci/matrix-speed.sh` for the
//! release binary).
//!
//! Run with `cargo bench --bench simulate`; compare later work against it.

// The benchmark reads its host file directly.
#![allow(clippy::disallowed_methods)]

use criterion::{Criterion, criterion_group, criterion_main};
use llmgw::host::Host;
use llmgw::recipe::{self, Want};
use llmgw::sim::{default_wants, simulate};

fn host(file: &str) -> Host {
    let path = format!("{}/matrix/hosts/{file}", env!("CARGO_MANIFEST_DIR"));
    Host::from_json(&std::fs::read_to_string(&path).expect("a matrix host")).expect("valid host")
}

fn bench(c: &mut Criterion) {
    let wants = default_wants();
    for file in ["v100.json", "h100-ubuntu24.04-driver580.json"] {
        let host = host(file);
        c.bench_function(&format!("simulate {file} (every default want, end to end)"), |b| {
            b.iter(|| simulate(&host, &wants).expect("simulation starts"))
        });
    }
    let host = host("v100.json");
    let want = Want::parse("llama.cpp@b10850").expect("valid want");
    c.bench_function("select: plan llama.cpp on v100", |b| b.iter(|| recipe::plan(&want, &host)));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
