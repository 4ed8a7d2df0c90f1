//! Benchmarks: a whole `simulate` of one host (fake server started,
//! every default want converged into a fresh engines directory), and
//! recipe selection alone.
//!
//! Run with `cargo bench --bench simulate`; compare later work against it.

// The benchmark reads its host file directly.
#![allow(clippy::disallowed_methods)]

use criterion::{Criterion, criterion_group, criterion_main};
use llmgw::host::Host;
use llmgw::recipe::{self, Want};
use llmgw::simulate::{default_wants, simulate};

fn v100() -> Host {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/matrix/hosts/v100.json");
    Host::from_json(&std::fs::read_to_string(path).expect("matrix/hosts/v100.json")).expect("valid host")
}

fn bench(c: &mut Criterion) {
    let host = v100();
    let wants = default_wants();
    c.bench_function("simulate v100 (llama.cpp + uv, end to end)", |b| {
        b.iter(|| {
            let report = simulate(&host, &wants).expect("simulation starts");
            assert_eq!(report.exit_code(), 0);
            report
        })
    });
    let want = Want::parse("llama.cpp@b10850").expect("valid want");
    c.bench_function("plan llama.cpp on v100", |b| b.iter(|| recipe::plan(&want, &host)));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
