//! Integration tests: one binary, one module per topic.

// Tests read and break files directly.
#![allow(clippy::disallowed_methods)]

mod agent;
mod anywhere;
mod architecture;
mod cases;
mod cli;
mod discover;
mod docs;
mod edges;
mod faults;
mod fleet;
mod fuzz_seeds;
mod gpu_bundle;
mod gpu_check;
mod help_examples;
mod hostile;
mod hostile_fs;
mod hostile_http;
mod inspect;
mod invariants;
mod latest;
mod managed_python;
mod matrix;
mod offline;
mod outcomes;
mod python_engines;
mod real;
mod real_uv;
mod reliability;
mod rerun;
mod schema;
mod sidecar;

use std::path::PathBuf;

use llmgw_model::host::Host;

/// The path of a host file in `matrix/hosts/`.
pub fn host_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("matrix/hosts").join(file)
}

/// A host description from `matrix/hosts/`.
pub fn host(file: &str) -> Host {
    let text = std::fs::read_to_string(host_path(file)).unwrap();
    Host::from_json(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// An HTTP client for a test that asks the fake server itself: rustls's
/// ring provider installed first (llmgw builds with `rustls-no-provider`
/// and installs it in its own client, which a test run alone may not have
/// made yet).
pub fn http_client() -> reqwest::blocking::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::new()
}

/// The asset named `name` of any release of `catalog`, to change.
pub fn asset_mut<'a>(catalog: &'a mut llmgw_sim::truth::Catalog, name: &str) -> &'a mut llmgw_sim::truth::Asset {
    catalog.releases.iter_mut().flat_map(|r| r.assets.iter_mut()).find(|a| a.name == name).unwrap()
}

/// A child process (an agent, a mock server) killed when the test ends
/// however it ends: a failed assertion leaves nothing behind holding the
/// test's output open.
pub struct Running(pub std::process::Child);

impl std::ops::Deref for Running {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
