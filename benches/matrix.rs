//! The whole hardware matrix through the library, as `llmgw matrix` runs it:
//! every host of `matrix/hosts/` against every default want on all cores,
//! plus the offline rows (a bundle made, imported into a mirror, and served).
//! The target is under 3 s on a 2-core machine; `ci/matrix-speed.sh` times
//! the release binary end to end.
//!
//! Run with `cargo bench --bench matrix`.

// The benchmark reads the host files directly.
#![allow(clippy::disallowed_methods)]

use criterion::{Criterion, criterion_group, criterion_main};
use llmgw_model::host::Host;
use llmgw_sim::default_wants;
use llmgw_sim::matrix;
use llmgw_sim::truth::embedded_catalog;

fn hosts() -> Vec<(String, Host)> {
    let dir = format!("{}/matrix/hosts", env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("matrix/hosts")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let id = p.file_stem().expect("a file name").to_string_lossy().into_owned();
            (id, Host::from_json(&std::fs::read_to_string(p).expect("a host file")).expect("a valid host"))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let hosts = hosts();
    let wants = default_wants();
    let catalog = embedded_catalog();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    c.bench_function(&format!("matrix: {} hosts x {} wants + offline rows", hosts.len(), wants.len()), |b| {
        b.iter(|| {
            let mut cells = matrix::run(&hosts, &wants, catalog, None, threads).expect("the matrix runs");
            cells.extend(matrix::run_offline(&hosts, &wants, catalog, None).expect("the offline rows run"));
            cells
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
