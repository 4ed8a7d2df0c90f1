//! A bundle's manifest: every file it carries, with its size and sha256,
//! sorted so that the same bundle is the same bytes. Its own sha256 travels
//! apart from the bundle and vouches for it on the other side.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::recipe::{Engine, is_sha256_hex, is_variant, plain_name, variants_in_words};
use crate::release::mirror::asset_path;
use llmgw_model::host::Arch;

/// The manifest's file name inside a bundle.
pub const MANIFEST: &str = "manifest.json";

/// What a bundle holds: `{"format": 1, "files": [{"engine", "version",
/// "variant", "arch", "asset", "size", "sha256"}, …], "llmgw": [{"version",
/// "arch", "target", "asset", "size", "sha256"}, …]}`, each list sorted
/// (by engine, version, arch, variant and asset; by version, arch, target
/// and asset), so that the same bundle is the same bytes from run to run.
/// `llmgw` (llmgw's own release archives, [`super::installer`]) is left
/// out when empty: a bundle without them is written as before it existed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The manifest's format: 1.
    pub format: u32,
    /// Every asset of the bundle.
    pub files: Vec<Entry>,
    /// llmgw's own release archives and their `.sha256` files, so that a
    /// site installs the installer from the mirror it installs engines from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llmgw: Vec<LlmgwEntry>,
}

pub use super::release::LlmgwEntry;

/// One asset of a bundle, for one build on one architecture.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The engine: `llama.cpp`, `uv`.
    pub engine: Engine,
    /// The version as the publisher tags it: `b10850`.
    pub version: String,
    /// The architecture the build is for: `amd64`, `arm64`.
    pub arch: Arch,
    /// The build: `cpu`, `cuda-13.3`, `x86_64`.
    pub variant: String,
    /// The release asset's file name.
    pub asset: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256 of the file, lowercase hex; checked against the publisher's
    /// digest when the bundle was made.
    pub sha256: String,
}

impl Entry {
    /// Where the asset lies in a bundle and in a mirror:
    /// `llama.cpp/b10850/llama-b10850-bin-ubuntu-x64.tar.gz`.
    pub fn path(&self) -> String {
        asset_path(self.engine, &self.version, &self.asset)
    }
}

impl Manifest {
    /// The manifest as written into a bundle: pretty JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a manifest always serializes");
        out.push(b'\n');
        out
    }

    /// Parses and checks a manifest: format 1, every engine known and
    /// carried by bundles (llama.cpp, uv), versions in the engine's form,
    /// variants the engine publishes, asset names plain file names, sha256
    /// 64 hex digits, no entry listed twice, and no file listed twice with
    /// different contents (one asset may serve two builds).
    ///
    /// # Errors
    /// A sentence beginning with the JSON path of the problem (`files[3].engine: …`).
    pub fn from_json(text: &str) -> Result<Manifest, String> {
        let m: Manifest = llmgw_model::strict_json::parse(text, &["files[*]"]).map_err(|e| e.to_string())?;
        if m.format != 1 {
            return Err(format!("format: {} is not a manifest format this llmgw reads (1)", m.format));
        }
        // One rule for a bundle imported and a manifest given as checksums:
        // an empty one vouches for nothing.
        if m.files.is_empty() {
            return Err("files: names no file; a manifest vouches for at least one".into());
        }
        let mut seen: BTreeMap<String, &Entry> = BTreeMap::new();
        let mut entries = std::collections::BTreeSet::new();
        for (i, e) in m.files.iter().enumerate() {
            let at = |what: &str, msg: String| format!("files[{i}].{what}: {msg}");
            if e.engine.from_pypi() {
                return Err(at(
                    "engine",
                    format!("{} is installed from PyPI, which a bundle does not carry", e.engine),
                ));
            }
            e.engine.check_version(&e.version).map_err(|m| at("version", m.to_string()))?;
            if !is_variant(e.engine, &e.variant) {
                return Err(at(
                    "variant",
                    format!(
                        "{} has no variant `{}`; its variants are {}",
                        e.engine,
                        e.variant,
                        variants_in_words(e.engine)
                    ),
                ));
            }
            if !plain_name(&e.asset) {
                return Err(at("asset", format!("`{}` is not a plain file name", e.asset)));
            }
            if !is_sha256_hex(&e.sha256) {
                return Err(at("sha256", format!("`{}` is not 64 hex digits", e.sha256)));
            }
            if !entries.insert((e.engine, &e.version, e.arch, &e.variant, &e.asset)) {
                return Err(format!(
                    "files[{i}]: {} {} {} {} `{}` is listed twice",
                    e.engine, e.version, e.arch, e.variant, e.asset
                ));
            }
            if let Some(other) = seen.insert(e.path(), e)
                && (other.size, &other.sha256) != (e.size, &e.sha256)
            {
                return Err(format!("files[{i}]: `{}` is listed twice with different contents", e.path()));
            }
        }
        let mut own = BTreeMap::new();
        for (i, e) in m.llmgw.iter().enumerate() {
            let at = |what: &str, msg: String| format!("llmgw[{i}].{what}: {msg}");
            super::release::check_version(&e.version).map_err(|m| at("version", m))?;
            if !super::release::targets(e.arch).contains(&e.target.as_str()) {
                return Err(at(
                    "target",
                    format!("`{}` is not a target llmgw is released for on {}", e.target, e.arch),
                ));
            }
            let archive = super::release::archive_name(&e.version, &e.target);
            if e.asset != archive && e.asset != format!("{archive}.sha256") {
                return Err(at("asset", format!("`{}` is neither `{archive}` nor its `.sha256`", e.asset)));
            }
            if !is_sha256_hex(&e.sha256) {
                return Err(at("sha256", format!("`{}` is not 64 hex digits", e.sha256)));
            }
            if own.insert(e.path(), ()).is_some() {
                return Err(format!("llmgw[{i}]: `{}` is listed twice", e.path()));
            }
        }
        Ok(m)
    }

    /// Every file once, the engines' and llmgw's own: path -> (size in bytes, sha256).
    pub fn files_by_path(&self) -> BTreeMap<String, (u64, String)> {
        let engines = self.files.iter().map(|e| (e.path(), (e.size, e.sha256.to_ascii_lowercase())));
        let own = self.llmgw.iter().map(|e| (e.path(), (e.size, e.sha256.to_ascii_lowercase())));
        engines.chain(own).collect()
    }

    /// asset name -> sha256 of the files of `engine` at `version`: the
    /// checksums an offline want of that version takes from a manifest.
    pub fn sha256_for(&self, engine: Engine, version: &str) -> BTreeMap<String, String> {
        self.files
            .iter()
            .filter(|e| e.engine == engine && e.version == version)
            .map(|e| (e.asset.clone(), e.sha256.to_ascii_lowercase()))
            .collect()
    }

    /// asset name -> size in bytes of the files of `engine` at `version`.
    pub fn size_for(&self, engine: Engine, version: &str) -> BTreeMap<String, u64> {
        self.files
            .iter()
            .filter(|e| e.engine == engine && e.version == version)
            .map(|e| (e.asset.clone(), e.size))
            .collect()
    }

    /// asset name -> sha256 of every file: the checksums the control plane
    /// holds for offline wants of a bundle of one version per engine.
    pub fn sha256_by_asset(&self) -> BTreeMap<String, String> {
        self.files.iter().map(|e| (e.asset.clone(), e.sha256.to_ascii_lowercase())).collect()
    }
}
