//! The layout of an offline site's mirror: a plain directory that any
//! static HTTP server can serve, laid out as `<mirror>/<engine>/<version>/<asset name>`
//! (`llama.cpp/b10850/llama-b10850-bin-ubuntu-x64.tar.gz`,
//! `uv/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz`), filled by
//! `llmgw bundle import` and read by offline wants.

use crate::recipe::Engine;

/// The path of an asset inside a mirror, `/`-separated:
/// `llama.cpp/b10850/llama-b10850-bin-ubuntu-x64.tar.gz`.
pub fn asset_path(engine: Engine, version: &str, asset: &str) -> String {
    format!("{engine}/{version}/{asset}")
}

/// The URL of an asset on a mirror served at `base` (a trailing `/` or not).
pub fn asset_url(base: &str, engine: Engine, version: &str, asset: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), asset_path(engine, version, asset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_are_served_under_engine_and_version() {
        assert_eq!(
            asset_url("http://m.internal/llmgw/", Engine::LlamaCpp, "b10850", "a.tar.gz"),
            "http://m.internal/llmgw/llama.cpp/b10850/a.tar.gz"
        );
    }
}
