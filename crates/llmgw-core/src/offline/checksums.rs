//! The checksums an offline want trusts, as `--offline-sha256 FILE` gives
//! them: a plain map of asset name -> sha256, or a bundle's manifest.

use std::collections::BTreeMap;

use super::manifest::Manifest;
use crate::recipe::{Engine, is_sha256_hex, plain_name};

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
    Manifest(Manifest),
}

impl Checksums {
    /// asset name -> size in bytes for a want of `engine` at `version`:
    /// the manifest's entries of that engine and version; none of a plain
    /// map, which declares no size.
    pub fn sizes_for_want(&self, engine: Engine, version: &str) -> BTreeMap<String, u64> {
        match self {
            Checksums::Map(_) => BTreeMap::new(),
            Checksums::Manifest(m) => m.size_for(engine, version),
        }
    }

    /// asset name -> sha256 for a want of `engine` at `version`: the whole
    /// plain map, or the manifest's entries of that engine and version
    /// (empty when it lists none).
    pub fn for_want(&self, engine: Engine, version: &str) -> BTreeMap<String, String> {
        match self {
            Checksums::Map(m) => m.clone(),
            // A Python engine is never installed offline (its want is
            // `unsupported`, saying why); it keeps the checksums as given.
            Checksums::Manifest(m) if engine.from_pypi() => m.sha256_by_asset(),
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
        return Manifest::from_json(text).map(Checksums::Manifest);
    }
    if !value.is_object() {
        return Err(format!(".: {SHAPES}"));
    }
    let map =
        llmgw_model::strict_json::parse::<BTreeMap<String, String>>(text, &[]).map_err(|e| format!("{e}; {SHAPES}"))?;
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
        if !plain_name(name) {
            return Err(format!("`{name}` is not an asset's file name"));
        }
        if !is_sha256_hex(hex) {
            return Err(format!("{name}: `{hex}` is not a sha256 (64 hex digits)"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
