//! Engines, versions and wants: what a node is asked to have, parsed from
//! `ENGINE@VERSION[:VARIANT]` or from a wants file.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::engine::VersionSyntax;
use llmgw_model::sha256::Sha256;

/// An engine the installer knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Engine {
    /// llama.cpp's `llama-server`, from GitHub release archives.
    LlamaCpp,
    /// vLLM, a Python environment installed by uv.
    Vllm,
    /// SGLang, a Python environment installed by uv.
    Sglang,
    /// uv itself, a GitHub release archive; a tool for the Python engines.
    Uv,
}

impl Engine {
    /// Every engine, in the order reports list them.
    pub const ALL: [Engine; 4] = [Engine::LlamaCpp, Engine::Vllm, Engine::Sglang, Engine::Uv];

    /// The engine's name in wants and reports: `llama.cpp`, `vllm`, `sglang`, `uv`.
    pub fn as_str(self) -> &'static str {
        self.descriptor().name
    }

    /// Parses an engine name; `llamacpp` and `llama-cpp` are taken for `llama.cpp`.
    ///
    /// # Errors
    /// [`UnknownEngine`], naming the engine given.
    pub fn parse(s: &str) -> Result<Engine, UnknownEngine> {
        let name = s.trim().to_ascii_lowercase();
        let named = |e: &Engine| {
            let d = e.descriptor();
            d.name == name || d.aliases.contains(&name.as_str())
        };
        Engine::ALL.into_iter().find(named).ok_or_else(|| UnknownEngine(s.to_string()))
    }

    /// Whether `version` is written as this engine's publisher tags versions:
    /// `b<N>` for llama.cpp, dotted numbers (with an optional PEP 440
    /// suffix like `.post1`) for the others; or [`LATEST`].
    ///
    /// # Errors
    /// [`VersionError`], saying what form was expected.
    pub fn check_version(self, version: &str) -> Result<(), VersionError> {
        if version == LATEST {
            return Ok(());
        }
        let error = |problem| VersionError { engine: self, version: version.to_string(), problem };
        if version.len() > MAX_VERSION_BYTES {
            return Err(error(VersionProblem::TooLong));
        }
        if let Some(c) = version.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '.')) {
            return Err(error(VersionProblem::Char(c)));
        }
        let syntax = self.descriptor().versions;
        let ok = match syntax {
            VersionSyntax::BuildTag => {
                version.len() > 1 && version.starts_with('b') && version[1..].bytes().all(|c| c.is_ascii_digit())
            }
            VersionSyntax::Pep440 => pep440_release(version),
        };
        if ok { Ok(()) } else { Err(error(VersionProblem::Form(syntax))) }
    }
}

/// An engine name this llmgw does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine `{given}`; the engines are {known}", given = self.0, known = engines_in_words())]
pub struct UnknownEngine(pub String);

/// The engines in words: `llama.cpp, vllm, sglang and uv`.
fn engines_in_words() -> String {
    let names: Vec<&str> = Engine::ALL.iter().map(|e| e.as_str()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// A version not written as an engine's publisher tags versions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.in_words())]
pub struct VersionError {
    /// The engine.
    pub engine: Engine,
    /// The version given.
    pub version: String,
    /// What is wrong with it.
    pub problem: VersionProblem,
}

/// What is wrong with a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionProblem {
    /// Longer than [`MAX_VERSION_BYTES`].
    TooLong,
    /// Holds this character, which is not a letter, a digit or a dot.
    Char(char),
    /// Not of the engine's version syntax.
    Form(VersionSyntax),
}

impl VersionError {
    fn in_words(&self) -> String {
        let (engine, version) = (self.engine, self.version.as_str());
        let shown = llmgw_model::text::for_terminal;
        match self.problem {
            VersionProblem::TooLong => {
                let start: String = version.chars().take(16).collect();
                format!(
                    "version `{}…` of {engine} is {} bytes long; versions are at most {MAX_VERSION_BYTES}",
                    shown(&start),
                    version.len()
                )
            }
            VersionProblem::Char(c) => format!(
                "version `{}` of {engine} holds `{}`; versions are letters, digits and dots",
                shown(version),
                shown(c.encode_utf8(&mut [0; 4]))
            ),
            VersionProblem::Form(syntax) => {
                let mut why = match syntax {
                    VersionSyntax::BuildTag => {
                        format!("version `{version}` of {engine} is not a build tag like b10850")
                    }
                    VersionSyntax::Pep440 => {
                        format!("version `{version}` of {engine} is not a dotted version like 0.20.1 (no leading v)")
                    }
                };
                if version.eq_ignore_ascii_case(LATEST) {
                    why.push_str(&format!(", nor `{LATEST}` (in lower case)"));
                }
                why
            }
        }
    }
}

/// Why a want, as given on the command line or in a wants file, is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WantError {
    /// Not `ENGINE@VERSION[:VARIANT]`.
    #[error("want `{0}` is not ENGINE@VERSION[:VARIANT] (like llama.cpp@b10850)")]
    Form(String),
    /// The engine is not known.
    #[error(transparent)]
    Engine(#[from] UnknownEngine),
    /// The version is not in the engine's form.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// A variant the engine never publishes.
    #[error(
        "{engine} has no variant `{}`; its variants are {}",
        llmgw_model::text::for_terminal(variant),
        engine.descriptor().variants_in_words()
    )]
    Variant {
        /// The engine.
        engine: Engine,
        /// The variant given.
        variant: String,
    },
    /// An offline want asks for `latest`.
    #[error(
        "version: an offline want names its version; `{LATEST}` is resolved against the publisher's release list, \
         which an offline mirror does not carry"
    )]
    LatestOffline,
    /// `offline_base` is not a URL a mirror can be.
    #[error("offline_base: `{}` {why}", llmgw_model::text::without_credentials(base))]
    OfflineBase {
        /// The URL given.
        base: String,
        /// What is wrong with it.
        #[source]
        why: UrlError,
    },
    /// A mirror without checksums.
    #[error(
        "offline_sha256: names no checksum; an offline want needs the control plane's checksums of its assets beside \
         offline_base"
    )]
    NoChecksums,
    /// Checksums without a mirror.
    #[error("offline_sha256: checksums are given without offline_base, the mirror they are for")]
    ChecksumsWithoutMirror,
    /// A checksum for something that is not an asset's file name.
    #[error("offline_sha256: `{0}` is not an asset's file name")]
    AssetName(String),
    /// A checksum that is not a sha256.
    #[error("offline_sha256.{asset}: `{hex}` is not a sha256 (64 hex digits)")]
    NotSha256 {
        /// The asset.
        asset: String,
        /// What was given for it.
        hex: String,
    },
}

impl WantError {
    /// Whether the message begins with the field it is about
    /// (`offline_sha256.<asset>: …`), which a JSON path then leads to with a dot.
    pub fn names_its_field(&self) -> bool {
        matches!(
            self,
            WantError::OfflineBase { .. }
                | WantError::NoChecksums
                | WantError::ChecksumsWithoutMirror
                | WantError::AssetName(_)
                | WantError::NotSha256 { .. }
        )
    }
}

/// What is wrong with a URL given as a base (a mirror, an API), said to
/// follow the URL: "has no host".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// No `scheme://`.
    #[error("is not an http:// or https:// URL")]
    NotHttp,
    /// Another scheme.
    #[error("has the scheme `{0}`; only http:// and https:// are supported")]
    Scheme(String),
    /// White space in it.
    #[error("contains white space")]
    WhiteSpace,
    /// No host.
    #[error("has no host")]
    NoHost,
    /// Not a URL the HTTP client reads.
    #[error("is not a valid URL: {0}")]
    Invalid(#[source] url::ParseError),
    /// A query string.
    #[error("has a query string, which is not supported: asset paths are appended to the URL")]
    Query,
    /// A fragment.
    #[error("has a fragment (#), which is not supported: asset paths are appended to the URL")]
    Fragment,
}

/// Why a wants file is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WantsFileError {
    /// Not a wants file's JSON: the parser's message, with the JSON path.
    #[error(transparent)]
    Json(#[from] llmgw_model::strict_json::JsonError),
    /// No want.
    #[error("wants: lists no want; a node asked for nothing needs no wants file")]
    Empty,
    /// A want refused.
    #[error("wants[{index}]{}{error}", if error.names_its_field() { "." } else { ": " })]
    Want {
        /// Its index in `wants`.
        index: usize,
        /// Why.
        #[source]
        error: WantError,
    },
    /// A want given twice.
    #[error("wants[{later}]: {want} is wants[{earlier}] again; give each want once")]
    Repeat {
        /// The want.
        want: WantName,
        /// The index of its first.
        earlier: usize,
        /// The index of the repeat.
        later: usize,
    },
}

/// The version a want names to mean "the newest this node can use",
/// resolved against the publisher on every pass: `llama.cpp@latest`.
pub const LATEST: &str = "latest";

/// The longest version a want may name, in bytes: real ones are a dozen
/// (`0.5.5.post1`, `b11459`); a long one would become a file name too long.
pub const MAX_VERSION_BYTES: usize = 64;

/// Whether `v` is a version as the Python publishers tag them: a PEP 440
/// version (checked by `pep440_rs`) of at least two dotted numbers, without
/// a leading `v`, an epoch or a local label: `0.20.1`, `0.5.5.post1`, `0.21.0rc1`.
fn pep440_release(v: &str) -> bool {
    use std::str::FromStr;
    v.bytes().next().is_some_and(|c| c.is_ascii_digit())
        && !v.contains(['+', '!'])
        && v.split('.').take(2).count() == 2
        && v.split('.').nth(1).is_some_and(|p| p.bytes().next().is_some_and(|c| c.is_ascii_digit()))
        && pep440_rs::Version::from_str(v).is_ok()
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Engine {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl schemars::JsonSchema for Engine {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Engine".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Engine::ALL
            .iter()
            .flat_map(|e| std::iter::once(&e.descriptor().name).chain(e.descriptor().aliases))
            .copied()
            .collect();
        schemars::json_schema!({
            "description": "The engine (`llamacpp` and `llama-cpp` are taken for `llama.cpp`; the parser also takes any case)",
            "enum": names
        })
    }
}

impl<'de> Deserialize<'de> for Engine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Engine::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// One engine at one version, optionally one variant, that a node is asked to have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Want {
    /// The engine.
    pub engine: Engine,
    /// The version as its publisher tags it: `b10850`, `0.12.20`.
    pub version: String,
    /// A variant chosen for the node (`vulkan`, `cuda-12.8`); absent leaves
    /// the choice to the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// An offline site's mirror, from which alone this want installs:
    /// `http://mirror.internal/llmgw` (its layout: `release::mirror`). With
    /// it the publisher is never contacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offline_base: Option<String>,
    /// With `offline_base`: asset name -> sha256 (64 hex digits), the
    /// checksums the control plane holds. The only ones an offline install
    /// trusts: an asset not named here is refused before it is downloaded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub offline_sha256: BTreeMap<String, String>,
    /// With `offline_base`: asset name -> size in bytes, when the checksums
    /// came from a bundle's manifest (`--offline-sha256 manifest.json`),
    /// which declares them: a mirror's body going on past it is cut there
    /// and refused. Not part of a wants file.
    #[serde(skip)]
    #[schemars(skip)]
    pub offline_size: BTreeMap<String, u64>,
}

impl Want {
    /// Parses `ENGINE@VERSION[:VARIANT]`: `llama.cpp@b10850`, `llama.cpp@b10850:vulkan`.
    ///
    /// # Errors
    /// [`WantError`] naming the part that is wrong: the form, the engine,
    /// the version, or a variant the engine never publishes.
    pub fn parse(s: &str) -> Result<Want, WantError> {
        let (engine, rest) = s.split_once('@').ok_or_else(|| WantError::Form(s.to_string()))?;
        let (version, variant) = match rest.split_once(':') {
            Some((v, var)) => (v, Some(var.to_string())),
            None => (rest, None),
        };
        let want = Want { variant, ..Want::new(Engine::parse(engine)?, version) };
        want.validate()?;
        Ok(want)
    }

    /// A want of `engine` at `version`, the variant left to the machine, online.
    pub fn new(engine: Engine, version: &str) -> Want {
        Want {
            engine,
            version: version.to_string(),
            variant: None,
            offline_base: None,
            offline_sha256: BTreeMap::new(),
            offline_size: BTreeMap::new(),
        }
    }

    /// Whether the want asks for the newest version ([`LATEST`]).
    pub fn is_latest(&self) -> bool {
        self.version == LATEST
    }

    /// The same want at `version`: what a `latest` want resolved to.
    pub fn at(&self, version: &str) -> Want {
        Want { version: version.to_string(), ..self.clone() }
    }

    /// This want served from an offline mirror at `base`, checked against
    /// `sha256` (asset name -> hex digest) only.
    ///
    /// # Errors
    /// As [`Want::validate`].
    pub fn offline(mut self, base: &str, sha256: BTreeMap<String, String>) -> Result<Want, WantError> {
        self.offline_base = Some(base.to_string());
        self.offline_sha256 = sha256;
        self.validate()?;
        Ok(self)
    }

    /// Checks the version's form, that the variant is one the engine
    /// publishes, and the offline fields: `offline_base` an `http://` or
    /// `https://` URL, every `offline_sha256` value 64 hex digits, and no
    /// checksums without a mirror.
    ///
    /// # Errors
    /// As [`Want::parse`]; for the offline fields, the [`WantError`] of the
    /// field ([`WantError::names_its_field`]).
    pub fn validate(&self) -> Result<(), WantError> {
        self.engine.check_version(&self.version)?;
        if let Some(v) = &self.variant
            && !super::is_variant(self.engine, v)
        {
            return Err(WantError::Variant { engine: self.engine, variant: v.clone() });
        }
        match &self.offline_base {
            Some(_) if self.is_latest() => return Err(WantError::LatestOffline),
            Some(base) => {
                check_http_url(base).map_err(|why| WantError::OfflineBase { base: base.clone(), why })?;
                if self.offline_sha256.is_empty() {
                    return Err(WantError::NoChecksums);
                }
            }
            None if !self.offline_sha256.is_empty() => return Err(WantError::ChecksumsWithoutMirror),
            None => {}
        }
        for (name, hex) in &self.offline_sha256 {
            if !plain_name(name) {
                return Err(WantError::AssetName(name.clone()));
            }
            if !is_sha256_hex(hex) {
                return Err(WantError::NotSha256 { asset: name.clone(), hex: hex.clone() });
            }
        }
        Ok(())
    }
}

/// Whether `name` is a plain file name, as an asset's is: not empty, not
/// `.` or `..`, no separator and no NUL.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Whether `hex` is a sha256 digest: 64 hex digits (either case), as
/// [`Sha256::parse`] reads them.
pub fn is_sha256_hex(hex: &str) -> bool {
    Sha256::is_hex(hex)
}

/// Checks that `url` is an `http://` or `https://` URL (the scheme in any
/// case) with a host, and no query string, fragment or white space: a base
/// that paths are appended to (a mirror, an API).
///
/// # Errors
/// [`UrlError`], said to follow the URL: "has no host".
pub fn check_http_url(url: &str) -> Result<(), UrlError> {
    let Some((scheme, _)) = url.split_once("://") else {
        return Err(UrlError::NotHttp);
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(UrlError::Scheme(scheme.to_string()));
    }
    if url.contains(char::is_whitespace) {
        return Err(UrlError::WhiteSpace);
    }
    // Parsed whole, as the HTTP client will: a bad port, an unclosed
    // bracket or a bad escape is refused here, not after five retries.
    let parsed = url::Url::parse(url).map_err(|e| match e {
        url::ParseError::EmptyHost => UrlError::NoHost,
        e => UrlError::Invalid(e),
    })?;
    if parsed.query().is_some() || url.contains('?') {
        return Err(UrlError::Query);
    }
    if parsed.fragment().is_some() || url.contains('#') {
        return Err(UrlError::Fragment);
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(UrlError::NoHost);
    }
    Ok(())
}

impl fmt::Display for Want {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_name(f, self.engine, &self.version, self.variant.as_deref())
    }
}

/// What a want names — its engine, version and variant — apart from where
/// it installs from: the want a status answers and an install record was
/// made for. Written, and read back from a record, as
/// `ENGINE@VERSION[:VARIANT]`: `llama.cpp@b10850:vulkan`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WantName {
    /// The engine.
    pub engine: Engine,
    /// The version asked for, as written: `b10850`, `latest`.
    pub version: String,
    /// The variant asked for by name; `None` leaves the choice to the machine.
    pub variant: Option<String>,
}

impl Want {
    /// What this want names, without its origin.
    pub fn name(&self) -> WantName {
        WantName { engine: self.engine, version: self.version.clone(), variant: self.variant.clone() }
    }
}

impl WantName {
    /// Reads `ENGINE@VERSION[:VARIANT]` as a status or record writes it;
    /// the version and variant are taken as written (a record names what
    /// an earlier llmgw accepted).
    ///
    /// # Errors
    /// [`WantNameError`]: no `@`, or an engine this llmgw does not know.
    pub fn parse(s: &str) -> Result<WantName, WantNameError> {
        let (engine, rest) = s.split_once('@').ok_or_else(|| WantNameError::Form(s.to_string()))?;
        let engine = Engine::parse(engine).map_err(|_| WantNameError::Engine(engine.to_string()))?;
        let (version, variant) = match rest.split_once(':') {
            Some((v, var)) => (v, Some(var.to_string())),
            None => (rest, None),
        };
        Ok(WantName { engine, version: version.to_string(), variant })
    }
}

/// Why a text is not a [`WantName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WantNameError {
    /// Not `ENGINE@VERSION[:VARIANT]`.
    #[error("`{0}` is not ENGINE@VERSION[:VARIANT]")]
    Form(String),
    /// The engine is not one this llmgw knows.
    #[error("`{0}` is not an engine this llmgw knows")]
    Engine(String),
}

impl fmt::Display for WantName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_name(f, self.engine, &self.version, self.variant.as_deref())
    }
}

fn write_name(f: &mut fmt::Formatter<'_>, engine: Engine, version: &str, variant: Option<&str>) -> fmt::Result {
    write!(f, "{engine}@{version}")?;
    if let Some(v) = variant {
        write!(f, ":{v}")?;
    }
    Ok(())
}

impl PartialEq<&str> for WantName {
    /// Whether `ENGINE@VERSION[:VARIANT]` written out is `other`.
    fn eq(&self, other: &&str) -> bool {
        let rest = other.strip_prefix(self.engine.as_str()).and_then(|r| r.strip_prefix('@'));
        let Some(rest) = rest.and_then(|r| r.strip_prefix(self.version.as_str())) else { return false };
        match &self.variant {
            None => rest.is_empty(),
            Some(v) => rest.strip_prefix(':') == Some(v.as_str()),
        }
    }
}

impl Serialize for WantName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for WantName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        WantName::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Compares two versions by PEP 440 (`0.9` before `0.20`, `0.21.0rc1`
/// before `0.21.0` before `0.21.0.post1`; a leading `v` is ignored), with
/// the `pep440_rs` crate. Two texts that are not PEP 440 versions compare
/// by their dotted numbers.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    use std::str::FromStr;
    match (pep440_rs::Version::from_str(a), pep440_rs::Version::from_str(b)) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => {
            let nums = |s: &str| -> Vec<u64> {
                s.trim_start_matches('v')
                    .split('.')
                    .map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0))
                    .collect()
            };
            nums(a).cmp(&nums(b))
        }
    }
}

/// A wants file: `{"wants": [{"engine": "llama.cpp", "version": "b10850"}, …]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WantsFile {
    /// The wants, in the order they are converged.
    pub wants: Vec<Want>,
}

/// The first want that repeats an earlier one — the same engine, version,
/// variant (`llamacpp` is `llama.cpp`) and offline mirror (a want online and
/// the same from a mirror are two) — as `(earlier, later)`
/// indexes: a node converges a want once, and a report or a matrix with two
/// of it would disagree with itself.
pub fn first_repeat(wants: &[Want]) -> Option<(usize, usize)> {
    wants.iter().enumerate().find_map(|(j, w)| {
        wants[..j]
            .iter()
            .position(|v| {
                v.engine == w.engine
                    && v.version == w.version
                    && v.variant == w.variant
                    && v.offline_base == w.offline_base
            })
            .map(|i| (i, j))
    })
}

/// The JSON Schema (draft 2020-12) of a wants file, generated from
/// [`WantsFile`] itself (`llmgw schema wants`). Versions and variants are
/// checked against each engine by the parser alone (`WantsFile::from_json`).
pub fn wants_json_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(WantsFile).to_value();
    schema["$id"] = "https://github.com/llmgw/llmgw/schema/wants.json".into();
    // A want given twice is refused (`first_repeat`); the schema sees the exact repeats.
    schema["properties"]["wants"]["uniqueItems"] = true.into();
    // What `from_json` and `Want::validate` check beyond the types, said in the schema's terms.
    schema["properties"]["wants"]["minItems"] = 1.into();
    let want = &mut schema["$defs"]["Want"];
    let sha256 = &mut want["properties"]["offline_sha256"];
    sha256["additionalProperties"]["pattern"] = "^[0-9a-fA-F]{64}$".into();
    sha256["propertyNames"] = serde_json::json!({"pattern": r"^[^/\\\x00]+$", "not": {"enum": [".", ".."]}});
    // A mirror needs the checksums of its assets, and checksums need their mirror.
    let given =
        |field: &str, then: serde_json::Value| serde_json::json!({"required": [field], "properties": {field: then}});
    want["allOf"] = serde_json::json!([
        {"if": given("offline_base", serde_json::json!({"type": "string"})),
         "then": given("offline_sha256", serde_json::json!({"minProperties": 1}))},
        {"if": given("offline_sha256", serde_json::json!({"minProperties": 1})),
         "then": given("offline_base", serde_json::json!({"type": "string"}))},
    ]);
    schema
}

impl WantsFile {
    /// Parses and validates a wants file.
    ///
    /// # Errors
    /// [`WantsFileError`], said beginning with the JSON path of the problem
    /// (`wants[1].version: …`).
    pub fn from_json(text: &str) -> Result<WantsFile, WantsFileError> {
        let file: WantsFile = llmgw_model::strict_json::parse(text, &["wants[*]"])?;
        if file.wants.is_empty() {
            return Err(WantsFileError::Empty);
        }
        for (index, w) in file.wants.iter().enumerate() {
            w.validate().map_err(|error| WantsFileError::Want { index, error })?;
        }
        if let Some((earlier, later)) = first_repeat(&file.wants) {
            return Err(WantsFileError::Repeat { want: file.wants[later].name(), earlier, later });
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("llama.cpp@b10850", Engine::LlamaCpp, "b10850", None)]
    #[case("llamacpp@b10850:vulkan", Engine::LlamaCpp, "b10850", Some("vulkan"))]
    #[case("uv@0.12.20", Engine::Uv, "0.12.20", None)]
    #[case("llama.cpp@latest:vulkan", Engine::LlamaCpp, "latest", Some("vulkan"))]
    #[case("sglang@latest", Engine::Sglang, "latest", None)]
    fn parses_wants(#[case] s: &str, #[case] e: Engine, #[case] v: &str, #[case] var: Option<&str>) {
        let w = Want::parse(s).unwrap();
        assert_eq!((w.engine, w.version.as_str(), w.variant.as_deref()), (e, v, var));
    }

    #[rstest]
    #[case("llama.cpp", "not ENGINE@VERSION")]
    #[case("ollama@0.1", "unknown engine `ollama`")]
    #[case("llama.cpp@10850", "not a build tag")]
    #[case("uv@v0.12.20", "no leading v")]
    #[case("uv@Latest", "not a dotted version")]
    #[case("uv@0.1abc", "not a dotted version")]
    #[case("uv@0.1....", "not a dotted version")]
    #[case("uv@1", "not a dotted version")]
    #[case("llama.cpp@b10850:rocm", "has no variant `rocm`")]
    #[case("uv@0.12.20\n", "version `0.12.20\\u{000a}` of uv holds `\\u{000a}`; versions are letters, digits and dots")]
    #[case("uv@ 0.12.20", "holds ` `")]
    #[case("vllm@0.20.1\u{202e}", "holds `\\u{202e}`")]
    fn refuses_bad_wants(#[case] s: &str, #[case] says: &str) {
        let e = Want::parse(s).unwrap_err().to_string();
        assert!(e.contains(says), "{s}: {e}");
    }

    #[test]
    fn urls_are_parsed_whole_where_they_enter() {
        for (url, says) in [
            ("http://h:99999/x", "is not a valid URL: invalid port number"),
            ("http://[::1/x", "is not a valid URL: invalid IPv6 address"),
            ("http://%zz/", "is not a valid URL"),
            ("ftp://h/x", "has the scheme `ftp`"),
            ("http://", "has no host"),
            ("http://h/x?a=1", "has a query string"),
        ] {
            let e = check_http_url(url).unwrap_err().to_string();
            assert!(e.starts_with(says), "{url}: {e}");
        }
        assert!(check_http_url("HTTPS://mirror.internal:8443/llmgw").is_ok());
    }

    #[test]
    fn a_version_too_long_to_be_a_file_name_is_refused() {
        let long = format!("llama.cpp@b{}", "1".repeat(5000));
        let e = Want::parse(&long).unwrap_err().to_string();
        assert_eq!(e, "version `b111111111111111…` of llama.cpp is 5001 bytes long; versions are at most 64");
    }

    #[test]
    fn pep440_releases_are_taken() {
        for v in ["0.20.1", "0.5.5.post1", "0.21.0rc1", "2.11.0"] {
            assert!(pep440_release(v), "{v}");
        }
    }

    #[test]
    fn wants_files_are_strict() {
        assert!(WantsFile::from_json(r#"{"wants": []}"#).unwrap_err().to_string().contains("lists no want"));
        assert!(
            WantsFile::from_json(r#"{"wants": [["uv", "0.12.20"]]}"#)
                .unwrap_err()
                .to_string()
                .starts_with("wants[0]: expected an object")
        );
        assert!(WantsFile::from_json(r#"{"wants": [{"engine": "uv", "version": "0.12.20"}]} x"#).is_err());
    }

    #[test]
    fn offline_fields_are_checked_and_named() {
        let hex = "ab".repeat(32);
        let ok = format!(
            r#"{{"wants": [{{"engine": "uv", "version": "0.12.20", "offline_base": "http://m/x", "offline_sha256": {{"a.tar.gz": "{hex}"}}}}]}}"#
        );
        let w = &WantsFile::from_json(&ok).unwrap().wants[0];
        assert_eq!((w.offline_base.as_deref(), w.offline_sha256.len()), (Some("http://m/x"), 1));
        assert!(WantsFile::from_json(&ok.replace("http://m/x", "HTTPS://m/x")).is_ok(), "a scheme in any case");
        let cases = [
            (ok.replace("http://m/x", "ftp://m"), "wants[0].offline_base: `ftp://m` has the scheme `ftp`"),
            (
                ok.replace("http://m/x", "http://m/x?token=a"),
                "wants[0].offline_base: `http://m/x?token=a` has a query string",
            ),
            (ok.replace("http://m/x", "http://"), "wants[0].offline_base: `http://` has no host"),
            (
                ok.replace(&format!(r#", "offline_sha256": {{"a.tar.gz": "{hex}"}}"#), ""),
                "wants[0].offline_sha256: names no checksum",
            ),
            (ok.replace(&format!(r#"{{"a.tar.gz": "{hex}"}}"#), "{}"), "wants[0].offline_sha256: names no checksum"),
            (ok.replace("a.tar.gz", ""), "wants[0].offline_sha256: `` is not an asset's file name"),
            (ok.replace(&hex, "00"), "wants[0].offline_sha256.a.tar.gz: `00` is not a sha256"),
            (
                ok.replace(r#""offline_base": "http://m/x", "#, ""),
                "wants[0].offline_sha256: checksums are given without",
            ),
            (ok.replace("offline_base", "offline_url"), "wants[0].offline_url: unknown field `offline_url`"),
        ];
        for (text, says) in cases {
            let e = WantsFile::from_json(&text).unwrap_err().to_string();
            assert!(e.starts_with(says), "{e}");
        }
    }

    #[test]
    fn versions_compare_by_pep_440() {
        assert_eq!(compare_versions("0.9.2", "0.20"), Ordering::Less);
        assert_eq!(compare_versions("v0.20.0", "0.20"), Ordering::Equal);
        assert_eq!(compare_versions("0.5.5.post1", "0.5.5"), Ordering::Greater);
        assert_eq!(compare_versions("0.21.0rc1", "0.21.0"), Ordering::Less);
        assert!(!pep440_release("1.0a1b2rc3"));
    }
}
