//! What the `input_json` target checks of one input; `cargo test` replays
//! the corpus through the same function (tests/it/fuzz_seeds.rs).

use llmgw_core::recipe::{Want, WantsFile};

/// Parses `data` as each kind of input file and as a want; panics when an
/// accepted value breaks what the parsers promise.
pub fn input(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(file) = WantsFile::from_json(text) {
        for w in &file.wants {
            accepted(w);
        }
    }
    if let Ok(w) = Want::parse(text) {
        accepted(&w);
        assert_eq!(Want::parse(&w.to_string()).expect("a want's own words parse"), w);
    }
    if let Ok(sums) = llmgw_core::offline::checksums::checksums_from_json(text) {
        for (name, hex) in sums.for_want(llmgw_core::recipe::Engine::Uv, "0.12.20") {
            assert!(llmgw_core::recipe::plain_name(&name) && llmgw_core::recipe::is_sha256_hex(&hex), "{name}: {hex}");
        }
    }
    let _ = llmgw_sim::truth::scenario::Scenario::from_json(text);
    let _ = llmgw_core::agent::AgentConfig::from_json(text);
}

fn accepted(w: &Want) {
    w.engine.check_version(&w.version).expect("an accepted version is in its engine's form");
    assert!(w.version.len() <= llmgw_core::recipe::MAX_VERSION_BYTES, "{}", w.version);
    llmgw_model::text::check(&w.to_string()).expect("an accepted want prints as it is");
    if let Some(base) = &w.offline_base {
        llmgw_core::recipe::check_http_url(base).expect("an accepted mirror is a URL");
    }
}
