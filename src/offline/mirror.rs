//! The mirror of an offline site: a plain directory that any static HTTP
//! server can serve, laid out as `<mirror>/<engine>/<version>/<asset name>`
//! (`llama.cpp/b10850/llama-b10850-bin-ubuntu-x64.tar.gz`,
//! `uv/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz`), filled by
//! `llmgw bundle import`.
//!
//! An offline want names the mirror's URL (`offline_base`) and the
//! checksums the control plane holds (`offline_sha256`); [`releases`] turns
//! them into the release metadata the installer would otherwise have asked
//! the publisher for, so the verified download path is the same one.

use std::collections::BTreeMap;

use crate::converge::Releases;
use crate::recipe::{Engine, Plan, Source};
use crate::release::{Asset, DigestFrom, Release};

/// The path of an asset inside a mirror, `/`-separated:
/// `llama.cpp/b10850/llama-b10850-bin-ubuntu-x64.tar.gz`.
pub fn asset_path(engine: Engine, version: &str, asset: &str) -> String {
    format!("{engine}/{version}/{asset}")
}

/// The URL of an asset on a mirror served at `base` (a trailing `/` or not).
pub fn asset_url(base: &str, engine: Engine, version: &str, asset: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), asset_path(engine, version, asset))
}

/// The releases of every candidate of `plan` as the mirror at `base` serves
/// them: each asset's URL on the mirror and its digest from `sha256` (asset
/// name -> hex, the control plane's). An asset `sha256` does not name has no
/// digest, so the installer refuses it before downloading anything of its
/// build. Sizes are unknown offline (0 bytes).
pub fn releases(base: &str, sha256: &BTreeMap<String, String>, engine: Engine, plan: &Plan) -> Releases {
    let mut by_release: BTreeMap<(String, String), Release> = BTreeMap::new();
    for build in &plan.candidates {
        let Source::Archives { repo, tag, assets } = &build.source else { continue };
        let release = by_release
            .entry((repo.clone(), tag.clone()))
            .or_insert_with(|| Release { tag_name: tag.clone(), assets: vec![] });
        for name in assets {
            if release.assets.iter().any(|a| &a.name == name) {
                continue;
            }
            release.assets.push(Asset {
                name: name.clone(),
                size: 0,
                browser_download_url: asset_url(base, engine, &build.version, name),
                digest: sha256.get(name).map(|h| format!("sha256:{}", h.to_ascii_lowercase())),
                digest_from: DigestFrom::ControlPlane,
            });
        }
    }
    Releases::known(by_release.into_iter().map(|((repo, tag), r)| (repo, tag, r)))
}

/// The checksums the control plane holds, as `--offline-sha256 FILE` gives
/// them: a plain map of asset name -> sha256, or a bundle's manifest, whose
/// entries also say which engine and version each asset is of (uv's asset
/// names carry no version, so a manifest of two uv versions names the same
/// asset twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksums {
    /// asset name -> sha256, for whatever want it is given with.
    Map(BTreeMap<String, String>),
    /// A bundle's manifest: each want takes the entries of its engine and version.
    Manifest(super::bundle::Manifest),
}

impl Checksums {
    /// asset name -> sha256 for a want of `engine` at `version`: the whole
    /// plain map, or the manifest's entries of that engine and version
    /// (empty when it lists none).
    pub fn for_want(&self, engine: Engine, version: &str) -> BTreeMap<String, String> {
        match self {
            Checksums::Map(m) => m.clone(),
            // A Python engine is never installed offline (its want is
            // `unsupported`, saying why); it keeps the checksums as given.
            Checksums::Manifest(m) if matches!(engine, Engine::Vllm | Engine::Sglang) => m.sha256_by_asset(),
            Checksums::Manifest(m) => m.sha256_for(engine, version),
        }
    }
}

/// The shapes `--offline-sha256` takes, for a message about another.
const SHAPES: &str = "expected a JSON object {\"<asset name>\": \"<sha256>\"} or a bundle's manifest.json";

/// Reads the checksums of an offline want (`--offline-sha256 FILE`): a JSON
/// object of asset name -> sha256 (`{"uv-x86_64-unknown-linux-gnu.tar.gz":
/// "<64 hex>"}`), or a bundle's `manifest.json` ([`Checksums`]).
///
/// # Errors
/// A sentence beginning with the JSON path of the problem.
pub fn checksums_from_json(text: &str) -> Result<Checksums, String> {
    let value: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| format!("line {} column {}: not JSON ({e}); {SHAPES}", e.line(), e.column()))?;
    if value.get("files").is_some() && value.get("format").is_some() {
        let m = super::bundle::Manifest::from_json(text)?;
        if m.files.is_empty() {
            return Err("files: names no checksum; an offline install trusts no other".into());
        }
        return Ok(Checksums::Manifest(m));
    }
    if !value.is_object() {
        return Err(format!(".: {SHAPES}"));
    }
    let map = crate::strict_json::parse::<BTreeMap<String, String>>(text, &[]).map_err(|e| format!("{e}; {SHAPES}"))?;
    check_checksums(&map)?;
    Ok(Checksums::Map(map))
}

/// Checks a map of asset name -> sha256: not empty, every name a plain
/// file name, every value 64 hex digits.
///
/// # Errors
/// A sentence beginning with the JSON path of the problem (`.`, or the
/// asset's name).
pub fn check_checksums(map: &BTreeMap<String, String>) -> Result<(), String> {
    if map.is_empty() {
        return Err(".: names no checksum; an offline install trusts no other".into());
    }
    for (name, hex) in map {
        if !super::bundle::plain_name(name) {
            return Err(format!("`{name}` is not an asset's file name"));
        }
        if hex.len() != 64 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("{name}: `{hex}` is not a sha256 (64 hex digits)"));
        }
    }
    Ok(())
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

    #[test]
    fn checksums_are_a_map_or_a_manifest() {
        let hex = "ab".repeat(32);
        let m = checksums_from_json(&format!(r#"{{"a.tar.gz": "{hex}"}}"#)).unwrap();
        assert_eq!(m.for_want(Engine::Uv, "0.1.0")["a.tar.gz"], hex);
        assert!(
            checksums_from_json(r#"{"a.tar.gz": "00"}"#).unwrap_err().starts_with("a.tar.gz: `00` is not a sha256")
        );
        assert!(checksums_from_json("{}").unwrap_err().contains("names no checksum"));
        assert!(checksums_from_json(&format!(r#"{{"": "{hex}"}}"#)).unwrap_err().contains("not an asset's file name"));
        let e = checksums_from_json(&format!("{hex}  uv.tar.gz")).unwrap_err();
        assert!(e.contains("expected a JSON object") && e.contains("manifest.json"), "{e}");
    }
}
