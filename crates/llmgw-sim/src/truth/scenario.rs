//! Scenarios: a variant of the truth in `mocks/` that a simulation runs
//! against instead, to ask "what if a build is not what we believe?".
//!
//! A [`Scenario`] is a JSON file (`--scenario FILE`; a library of them in
//! `mocks/scenarios/`) whose `truth` entries each replace what one file of
//! one release asset is: its ggml backend (the kernels it carries), what it
//! needs, its symbol versions. [`Scenario::apply`] returns the changed
//! catalog, or says which entry names nothing that exists.

use serde::Deserialize;

use crate::truth::stub::Backend;
use crate::truth::{BodyFault, Catalog, Fault};
use llmgw_model::strict_json::{self, JsonError};

/// The longest wait a scenario may ask of the fake server, in seconds (a year).
const MAX_SCENARIO_SECS: u64 = 365 * 24 * 3600;

/// The longest HTTP timeout a scenario may give the machine, in seconds (an hour).
const MAX_HTTP_TIMEOUT_SECS: u64 = 3600;

/// A variant of the truth.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario asks, in a sentence.
    pub description: String,
    /// Where its facts come from.
    #[serde(default)]
    pub sources: Vec<String>,
    /// The files whose truth it changes.
    #[serde(default)]
    pub truth: Vec<TruthPatch>,
    /// Releases published beside the truth's: a newer one, made like an
    /// existing one, with some of its assets.
    #[serde(default)]
    pub releases: Vec<NewRelease>,
    /// What GitHub says of assets' digests instead: none in the API, a
    /// `.sha256` sidecar that disagrees, is malformed, or is not published.
    #[serde(default)]
    pub digests: Vec<DigestPatch>,
    /// Errors the fake server answers with.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Faults of the simulated machine: a failing package manager, a disk
    /// that fills up, a crash before the N-th change.
    #[serde(default)]
    pub machine: Option<super::MachineFaults>,
}

/// One file of one release asset, as the scenario would have it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TruthPatch {
    /// `owner/name@tag`: `ggml-org/llama.cpp@b10850`.
    pub release: String,
    /// The asset's name.
    pub asset: String,
    /// The file's path under the asset's top directory: `libggml-cuda.so`.
    pub path: String,
    /// The ggml backend the file is instead (its kernels).
    #[serde(default)]
    pub backend: Option<Backend>,
    /// The libraries it needs instead.
    #[serde(default)]
    pub needed: Option<Vec<String>>,
    /// The symbol versions it requires instead.
    #[serde(default)]
    pub requires: Option<Vec<String>>,
}

/// What the publisher says of one asset's digest, as the scenario would
/// have it. Source of the `null`: GitHub changelog 2025-06-03 ("Releases
/// now expose digests for release assets": none for older uploads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DigestPatch {
    /// `owner/name@tag`: `astral-sh/uv@0.13.9`.
    pub release: String,
    /// The asset's name: `uv-x86_64-unknown-linux-gnu.tar.gz`.
    pub asset: String,
    /// GitHub's API gives `null` for its `digest`.
    #[serde(default)]
    pub no_api_digest: bool,
    /// The one line its `<asset>.sha256` holds instead of `<sha256>  <asset>`
    /// (a newline is added after it).
    #[serde(default)]
    pub sidecar_line: Option<String>,
    /// The release publishes no `<asset>.sha256`.
    #[serde(default)]
    pub no_sidecar: bool,
}

/// The release of `catalog` that `name` (`owner/name@tag`) names, or why
/// not, said as standing at `at` (`truth[0]`).
fn release_mut<'a>(catalog: &'a mut Catalog, at: &str, name: &str) -> Result<&'a mut super::Release, String> {
    catalog
        .releases
        .iter_mut()
        .find(|r| r.is_named(name))
        .ok_or_else(|| format!("{at}: no release `{name}` in the truth"))
}

impl DigestPatch {
    /// Applies the patch to `catalog`; `at` is where it stands (`digests[0]`).
    fn apply(&self, at: &str, catalog: &mut Catalog) -> Result<(), String> {
        if self.sidecar_line.is_some() && self.no_sidecar {
            return Err(format!("{at}: give `sidecar_line` or `no_sidecar`, not both"));
        }
        if !self.no_api_digest && !self.no_sidecar && self.sidecar_line.is_none() {
            return Err(format!("{at}: changes nothing: give `no_api_digest`, `sidecar_line` or `no_sidecar`"));
        }
        if self.sidecar_line.is_some() && !self.no_api_digest {
            return Err(format!(
                "{at}: a `sidecar_line` is read only when GitHub gives no digest: add `\"no_api_digest\": true`"
            ));
        }
        let release = release_mut(catalog, at, &self.release)?;
        let asset = release
            .assets
            .iter_mut()
            .find(|a| a.name == self.asset && a.sha256_of.is_none())
            .ok_or_else(|| format!("{at}: release `{}` has no archive `{}`", self.release, self.asset))?;
        asset.no_api_digest |= self.no_api_digest;
        let sidecar = format!("{}.sha256", self.asset);
        let at_sidecar = release.assets.iter().position(|a| a.name == sidecar && a.sha256_of.is_some());
        if self.no_sidecar || self.sidecar_line.is_some() {
            let Some(i) = at_sidecar else {
                return Err(format!("{at}: release `{}` publishes no `{sidecar}` to change", self.release));
            };
            match &self.sidecar_line {
                Some(line) => release.assets[i].sidecar_text = Some(format!("{line}\n")),
                None => drop(release.assets.remove(i)),
            }
        }
        Ok(())
    }
}

/// A release the scenario publishes: a copy of release `like` of the same
/// repository under tag `release`, with only `assets` of its assets (named
/// with the new tag), published at `published_at`. Its programs print the
/// new build number.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRelease {
    /// `owner/name@tag`: `ggml-org/llama.cpp@b11461`.
    pub release: String,
    /// The tag of the release it is made like: `b11459`.
    pub like: String,
    /// When it was published, RFC 3339 UTC.
    pub published_at: String,
    /// The assets it has, by their new names; `like`'s others are left out.
    pub assets: Vec<String>,
}

impl NewRelease {
    /// The release, made from `catalog`'s release `like`.
    fn make(&self, at: &str, catalog: &Catalog) -> Result<super::Release, String> {
        let (repo, tag) = self
            .release
            .split_once('@')
            .ok_or_else(|| format!("{at}.release: `{}` is not owner/name@tag", self.release))?;
        if catalog.releases.iter().any(|r| r.repo == repo && r.tag == tag) {
            return Err(format!("{at}.release: the truth already has `{}`", self.release));
        }
        let like = catalog
            .releases
            .iter()
            .find(|r| r.repo == repo && r.tag == self.like)
            .ok_or_else(|| format!("{at}.like: no release `{repo}@{}` in the truth", self.like))?;
        if super::epoch(&self.published_at).is_none() {
            return Err(format!("{at}.published_at: `{}` is not RFC 3339 UTC", self.published_at));
        }
        let renamed = |text: &str| {
            let mut t = text.replace(&like.tag, tag);
            // A build number in a version line: `(build 11459,` and `version: 11459 `.
            if let (Some(old), Some(new)) = (like.tag.strip_prefix('b'), tag.strip_prefix('b')) {
                t = t.replace(&format!("build {old},"), &format!("build {new},"));
                t = t.replace(&format!("version: {old} "), &format!("version: {new} "));
            }
            t
        };
        let mut release = like.clone();
        release.tag = tag.to_string();
        release.version = tag.to_string();
        release.published_at = self.published_at.clone();
        release.sources = vec![format!("made by a scenario like {repo}@{}", like.tag)];
        release.assets = Vec::new();
        for name in &self.assets {
            let mut asset = like
                .assets
                .iter()
                .find(|a| &renamed(&a.name) == name)
                .ok_or_else(|| format!("{at}.assets: `{name}` is no asset of {} renamed", self.like))?
                .clone();
            asset.name = name.clone();
            asset.top = renamed(&asset.top);
            for f in &mut asset.files {
                if let Some(v) = f.elf.as_mut().and_then(|e| e.version.as_mut()) {
                    v.stdout = renamed(&v.stdout);
                    v.stderr = renamed(&v.stderr);
                }
            }
            if let Some(of) = &asset.sha256_of {
                asset.sha256_of = Some(renamed(of));
            }
            release.assets.push(asset);
        }
        Ok(release)
    }
}

impl Scenario {
    /// Parses a scenario file.
    ///
    /// # Errors
    /// A [`JsonError`] naming where the file is wrong.
    pub fn from_json(text: &str) -> Result<Scenario, JsonError> {
        strict_json::parse(text, &["truth[*]", "digests[*]", "faults[*]", "releases[*]"])
    }

    /// The catalog with every patch applied.
    ///
    /// # Errors
    /// `truth[i]: …` naming the release, asset or file that does not exist,
    /// or a file that is not an ELF file.
    pub fn apply(&self, catalog: &Catalog) -> Result<Catalog, String> {
        let mut out = catalog.clone();
        for (i, r) in self.releases.iter().enumerate() {
            let release = r.make(&format!("releases[{i}]"), &out)?;
            out.releases.push(release);
        }
        for (i, p) in self.truth.iter().enumerate() {
            let at = format!("truth[{i}]");
            let release = release_mut(&mut out, &at, &p.release)?;
            let asset = release
                .assets
                .iter_mut()
                .find(|a| a.name == p.asset)
                .ok_or_else(|| format!("{at}: release `{}` has no asset `{}`", p.release, p.asset))?;
            let file = asset
                .files
                .iter_mut()
                .find(|f| f.path == p.path)
                .ok_or_else(|| format!("{at}: asset `{}` has no file `{}`", p.asset, p.path))?;
            let elf = file.elf.as_mut().ok_or_else(|| format!("{at}: `{}` is not an ELF file", p.path))?;
            if let Some(b) = &p.backend {
                elf.backend = Some(b.clone());
            }
            if let Some(n) = &p.needed {
                elf.needed = n.clone();
            }
            if let Some(r) = &p.requires {
                elf.requires = r.clone();
            }
        }
        for (i, d) in self.digests.iter().enumerate() {
            d.apply(&format!("digests[{i}]"), &mut out)?;
        }
        for (i, f) in self.faults.iter().enumerate() {
            let release = release_mut(&mut out, &format!("faults[{i}]"), &f.release)?;
            if let Some(a) = &f.asset
                && !release.assets.iter().any(|x| &x.name == a)
            {
                return Err(format!("faults[{i}]: release `{}` has no asset `{a}`", f.release));
            }
            if f.times == Some(0) {
                return Err(format!(
                    "faults[{i}].times: 0 answers nothing; give 1 or more, or leave it out for always"
                ));
            }
            if let Some(secs) = f.rate_limit_reset_in_secs
                && secs > MAX_SCENARIO_SECS
            {
                return Err(format!("faults[{i}].rate_limit_reset_in_secs: {secs} is more than a year"));
            }
            if let Some(secs) = f.retry_after_secs
                && secs > MAX_SCENARIO_SECS
            {
                return Err(format!("faults[{i}].retry_after_secs: {secs} is more than a year"));
            }
            let timeout_set = self.machine.as_ref().is_some_and(|m| m.http_timeout_secs.is_some());
            if f.body == Some(BodyFault::Slow) && !timeout_set {
                return Err(format!(
                    "faults[{i}].body: a `slow` answer waits out the installer's real timeout (30 s) on every \
                     attempt; set `machine.http_timeout_secs` (1) to make it quick"
                ));
            }
            match (f.status, f.body) {
                (Some(status), None) if !(400..600).contains(&status) => {
                    return Err(format!("faults[{i}].status: {status} is not an HTTP error"));
                }
                (Some(_), None) => {}
                (None, Some(body)) => {
                    let needs_asset =
                        matches!(body, BodyFault::CutShort | BodyFault::Reset | BodyFault::OneByteChanged);
                    if needs_asset && f.asset.is_none() {
                        return Err(format!("faults[{i}].body: a body fault of this kind needs an `asset`"));
                    }
                    if f.retry_after_secs.is_some() || f.rate_limit_reset_in_secs.is_some() {
                        return Err(format!(
                            "faults[{i}]: `retry_after_secs` and `rate_limit_reset_in_secs` go with a `status`, not a `body`"
                        ));
                    }
                }
                _ => return Err(format!("faults[{i}]: give exactly one of `status` and `body`")),
            }
        }
        out.faults.extend(self.faults.iter().cloned());
        if let Some(m) = &self.machine {
            match m.http_timeout_secs {
                Some(0) => {
                    return Err("machine.http_timeout_secs: 0 would time out every request; give 1 or more".into());
                }
                Some(secs) if secs > MAX_HTTP_TIMEOUT_SECS => {
                    return Err(format!("machine.http_timeout_secs: {secs} is more than an hour"));
                }
                _ => {}
            }
            if m.crash_before_change == Some(0) {
                return Err("machine.crash_before_change: changes count from 1".into());
            }
            out.machine = m.clone();
        }
        Ok(out)
    }
}

/// The JSON Schema (draft 2020-12) of a scenario file, generated from
/// [`Scenario`] itself (`llmgw schema scenario`), with the limits
/// [`Scenario::apply`] checks that a schema can say: a fault is a `status`
/// (an HTTP error, 400–599) or a `body`, never both; `times` from 1; waits
/// of at most a year; a machine's `http_timeout_secs` from 1 to 3600 and
/// `crash_before_change` from 1. What only the truth can decide (that a
/// release, asset or file exists) and a `slow` body without a short
/// timeout are checked by the parser alone.
pub fn json_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(Scenario).to_value();
    schema["$id"] = "https://github.com/llmgw/llmgw/schema/scenario.json".into();
    let defs = &mut schema["$defs"];
    let fault = &mut defs["Fault"];
    fault["properties"]["status"]["minimum"] = 400.into();
    fault["properties"]["status"]["maximum"] = 599.into();
    fault["properties"]["times"]["minimum"] = 1.into();
    for wait in ["retry_after_secs", "rate_limit_reset_in_secs"] {
        fault["properties"][wait]["maximum"] = MAX_SCENARIO_SECS.into();
    }
    // Given (not null): a field a fault sets.
    let given = |field: &str, ty: &str| serde_json::json!({"required": [field], "properties": {field: {"type": ty}}});
    let waits = serde_json::json!({"anyOf": [given("retry_after_secs", "integer"), given("rate_limit_reset_in_secs", "integer")]});
    fault["oneOf"] = serde_json::json!([
        given("status", "integer"),
        {"allOf": [given("body", "string"), {"not": waits}]},
    ]);
    // A body fault that breaks an asset's bytes names the asset.
    fault["if"] = serde_json::json!({"required": ["body"], "properties": {"body": {"enum": ["cut_short", "reset", "one_byte_changed"]}}});
    fault["then"] = given("asset", "string");
    // A sidecar is given a line or is not published, not both.
    let published = serde_json::json!({"required": ["no_sidecar"], "properties": {"no_sidecar": {"const": true}}});
    defs["DigestPatch"]["not"] = serde_json::json!({"allOf": [given("sidecar_line", "string"), published]});
    // It changes something, and a sidecar's line is read only without GitHub's digest.
    let set = |field: &str| serde_json::json!({"required": [field], "properties": {field: {"const": true}}});
    defs["DigestPatch"]["anyOf"] =
        serde_json::json!([set("no_api_digest"), set("no_sidecar"), given("sidecar_line", "string")]);
    defs["DigestPatch"]["if"] = given("sidecar_line", "string");
    defs["DigestPatch"]["then"] = set("no_api_digest");
    let machine = &mut defs["MachineFaults"]["properties"];
    machine["http_timeout_secs"]["minimum"] = 1.into();
    machine["http_timeout_secs"]["maximum"] = MAX_HTTP_TIMEOUT_SECS.into();
    machine["crash_before_change"]["minimum"] = 1.into();
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::truth::embedded_catalog;

    #[test]
    fn the_shipped_scenarios_apply() {
        for (name, text) in crate::truth::embedded::SCENARIOS {
            let s = Scenario::from_json(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            s.apply(embedded_catalog()).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn a_fault_must_be_a_status_or_a_body_and_say_where() {
        let fault = |rest: &str| {
            let text =
                format!(r#"{{"description": "x", "faults": [{{"release": "ggml-org/llama.cpp@b10850", {rest}}}]}}"#);
            Scenario::from_json(&text).map_err(|e| e.to_string()).and_then(|s| s.apply(embedded_catalog()).map(drop))
        };
        assert_eq!(
            fault(r#""status": 503, "body": "reset", "asset": "llama-b10850-bin-ubuntu-vulkan-x64.tar.gz""#)
                .unwrap_err(),
            "faults[0]: give exactly one of `status` and `body`"
        );
        assert_eq!(fault(r#""times": 1"#).unwrap_err(), "faults[0]: give exactly one of `status` and `body`");
        assert_eq!(
            fault(r#""body": "cut_short""#).unwrap_err(),
            "faults[0].body: a body fault of this kind needs an `asset`"
        );
        assert_eq!(fault(r#""status": 200"#).unwrap_err(), "faults[0].status: 200 is not an HTTP error");
        assert!(fault(r#""body": "redirect_loop""#).is_ok(), "the metadata can loop too");
        let zero = Scenario::from_json(r#"{"description": "x", "machine": {"http_timeout_secs": 0}}"#).unwrap();
        assert!(zero.apply(embedded_catalog()).unwrap_err().starts_with("machine.http_timeout_secs: 0"));
        let asset = r#""asset": "llama-b10850-bin-ubuntu-vulkan-x64.tar.gz""#;
        assert!(
            fault(&format!(r#"{asset}, "status": 503, "times": 0"#)).unwrap_err().starts_with("faults[0].times: 0")
        );
        assert!(
            fault(r#""status": 403, "rate_limit_reset_in_secs": 18446744073709551615"#)
                .unwrap_err()
                .starts_with("faults[0].rate_limit_reset_in_secs: 18446744073709551615 is more than a year")
        );
        assert!(fault(&format!(r#"{asset}, "body": "slow""#)).unwrap_err().contains("machine.http_timeout_secs"));
        let crash0 = Scenario::from_json(r#"{"description": "x", "machine": {"crash_before_change": 0}}"#).unwrap();
        assert!(crash0.apply(embedded_catalog()).unwrap_err().starts_with("machine.crash_before_change"));
        let e = fault(r#""body": "truncated""#).unwrap_err();
        assert!(e.contains("faults[0].body") && e.contains("cut_short"), "{e}");
    }

    #[test]
    fn a_patch_naming_nothing_is_refused_with_where() {
        let s = Scenario::from_json(
            r#"{"description": "x", "truth": [{"release": "ggml-org/llama.cpp@b10850", "asset": "nope.tar.gz", "path": "x"}]}"#,
        )
        .unwrap();
        assert_eq!(
            s.apply(embedded_catalog()).unwrap_err(),
            "truth[0]: release `ggml-org/llama.cpp@b10850` has no asset `nope.tar.gz`"
        );
    }
}
