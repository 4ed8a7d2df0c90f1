//! Integration tests: one binary, one module per topic.

// Tests read and break files directly.
#![allow(clippy::disallowed_methods)]

mod agent;
mod anywhere;
mod architecture;
mod cli;
mod discover;
mod edges;
mod faults;
mod fleet;
mod fuzz_seeds;
mod gpu_check;
mod hostile;
mod inspect;
mod invariants;
mod latest;
mod matrix;
mod offline;
mod outcomes;
mod python_engines;
mod real;
mod real_uv;
mod reliability;
mod rerun;
mod schema;

use std::path::PathBuf;

use llmgw::host::Host;

/// The path of a host file in `matrix/hosts/`.
pub fn host_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("matrix/hosts").join(file)
}

/// A host description from `matrix/hosts/`.
pub fn host(file: &str) -> Host {
    let text = std::fs::read_to_string(host_path(file)).unwrap();
    Host::from_json(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The asset named `name` of any release of `catalog`, to change.
pub fn asset_mut<'a>(catalog: &'a mut llmgw::sim::truth::Catalog, name: &str) -> &'a mut llmgw::sim::truth::Asset {
    catalog.releases.iter_mut().flat_map(|r| r.assets.iter_mut()).find(|a| a.name == name).unwrap()
}
