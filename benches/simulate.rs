//! Benchmarks: a whole `simulate` of one host (fake server started,
//! every default want converged into a fresh engines directory; the target
//! is under 50 ms), recipe selection alone for one host (`select`), and
//! the GPU check of one installed build on the simulated machine: the
//! device listing alone, then the listing and the compute check (the tiny
//! model written, `llama-bench` run on every device, the model removed),
//! whose difference is what the compute check adds to a build (the target
//! is under 100 ms). The whole matrix is `benches/matrix.rs` (and
//! `ci/matrix-speed.sh` for the release binary).
//!
//! Run with `cargo bench --bench simulate`; compare later work against it.

// The benchmark reads its host file directly.
#![allow(clippy::disallowed_methods)]

use criterion::{Criterion, criterion_group, criterion_main};
use llmgw_core::converge::checks::gpu_computes;
use llmgw_core::recipe::{self, Want};
use llmgw_core::system::{Cmd, System};
use llmgw_model::host::Host;
use llmgw_sim::{Simulation, default_wants, simulate};

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
    compute_check(c);
}

/// The GPU check of llama.cpp b11459 installed on a host: listing alone,
/// then listing and computing on every device.
fn compute_check(c: &mut Criterion) {
    let want = Want::parse("llama.cpp@b11459").expect("valid want");
    for file in ["h100-ubuntu24.04-driver580.json", "v100.json", "nogpu-debian12.json"] {
        let host = host(file);
        let mut sim = Simulation::start(host.clone()).expect("simulation starts");
        let status = sim.converge(std::slice::from_ref(&want)).engines.remove(0);
        let variant = status.variant.expect("installed");
        let binary = sim.engines_dir().join(status.binary.expect("installed"));
        let build = recipe::plan(&want, &host).expect("a plan").candidates.into_iter().find(|b| b.variant == variant);
        let build = build.expect("the installed build is a candidate");
        let dir = sim.work_dir().join("bench-check");
        if let Some(gpu) = build.gpu_backend() {
            let list = Cmd::new(&binary, gpu.list_args.clone());
            c.bench_function(&format!("gpu check {file} {variant}: --list-devices alone"), |b| {
                b.iter(|| sim.system_mut().run(&list).expect("runs"))
            });
        }
        c.bench_function(&format!("gpu check {file} {variant}: listing and the compute check"), |b| {
            b.iter(|| {
                let done = gpu_computes(sim.system_mut(), &build, &binary, &host, &dir, 120);
                assert!(done.is_ok(), "{done:?}");
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
