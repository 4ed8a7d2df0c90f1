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

/// Reads the checksums of an offline want (`--offline-sha256 FILE`): a JSON
/// object of asset name -> sha256 (`{"uv-x86_64-unknown-linux-gnu.tar.gz":
/// "<64 hex>"}`), or a bundle's `manifest.json` (its assets' sha256).
///
/// # Errors
/// A sentence beginning with the JSON path of the problem.
pub fn checksums_from_json(text: &str) -> Result<BTreeMap<String, String>, String> {
    let value: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| format!("line {} column {}: not JSON ({e})", e.line(), e.column()))?;
    let map = if value.get("files").is_some() && value.get("format").is_some() {
        super::bundle::Manifest::from_json(text)?.sha256_by_asset()
    } else {
        crate::strict_json::parse::<BTreeMap<String, String>>(text, &[]).map_err(|e| e.to_string())?
    };
    if map.is_empty() {
        return Err(".: names no checksum; an offline install trusts no other".into());
    }
    for (name, hex) in &map {
        if hex.len() != 64 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("{name}: `{hex}` is not a sha256 (64 hex digits)"));
        }
    }
    Ok(map)
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
        assert_eq!(m["a.tar.gz"], hex);
        assert!(
            checksums_from_json(r#"{"a.tar.gz": "00"}"#).unwrap_err().starts_with("a.tar.gz: `00` is not a sha256")
        );
        assert!(checksums_from_json("{}").unwrap_err().contains("names no checksum"));
    }
}
