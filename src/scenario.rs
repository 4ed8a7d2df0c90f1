//! Scenarios: a variant of the truth in `mocks/` that a simulation runs
//! against instead, to ask "what if a build is not what we believe?".
//!
//! A [`Scenario`] is a JSON file (`--scenario FILE`; a library of them in
//! `mocks/scenarios/`) whose `truth` entries each replace what one file of
//! one release asset is: its ggml backend (the kernels it carries), what it
//! needs, its symbol versions. [`Scenario::apply`] returns the changed
//! catalog, or says which entry names nothing that exists.

use serde::Deserialize;

use crate::mock_server::truth::{Catalog, Fault};
use crate::strict_json::{self, JsonError};
use crate::system::sim::stub::Backend;

/// A variant of the truth.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
    /// Errors the fake server answers with.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Faults of the simulated machine: a failing package manager, a disk
    /// that fills up, a crash before the N-th change.
    #[serde(default)]
    pub machine: Option<crate::system::sim::MachineFaults>,
}

/// One file of one release asset, as the scenario would have it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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

impl Scenario {
    /// Parses a scenario file.
    ///
    /// # Errors
    /// A [`JsonError`] naming where the file is wrong.
    pub fn from_json(text: &str) -> Result<Scenario, JsonError> {
        strict_json::parse(text, &["truth[*]", "faults[*]"])
    }

    /// The catalog with every patch applied.
    ///
    /// # Errors
    /// `truth[i]: …` naming the release, asset or file that does not exist,
    /// or a file that is not an ELF file.
    pub fn apply(&self, catalog: &Catalog) -> Result<Catalog, String> {
        let mut out = catalog.clone();
        for (i, p) in self.truth.iter().enumerate() {
            let at = format!("truth[{i}]");
            let release = out
                .releases
                .iter_mut()
                .find(|r| format!("{}@{}", r.repo, r.tag) == p.release)
                .ok_or_else(|| format!("{at}: no release `{}` in the truth", p.release))?;
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
        for (i, f) in self.faults.iter().enumerate() {
            let release = out
                .releases
                .iter()
                .find(|r| format!("{}@{}", r.repo, r.tag) == f.release)
                .ok_or_else(|| format!("faults[{i}]: no release `{}` in the truth", f.release))?;
            if let Some(a) = &f.asset
                && !release.assets.iter().any(|x| &x.name == a)
            {
                return Err(format!("faults[{i}]: release `{}` has no asset `{a}`", f.release));
            }
            if !(400..600).contains(&f.status) {
                return Err(format!("faults[{i}]: status {} is not an HTTP error", f.status));
            }
        }
        out.faults.extend(self.faults.iter().cloned());
        if let Some(m) = &self.machine {
            out.machine = m.clone();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_server::embedded_catalog;

    #[test]
    fn the_shipped_scenarios_apply() {
        for text in [
            include_str!("../mocks/scenarios/llama-cuda13-ggml-default-archs.json"),
            include_str!("../mocks/scenarios/github-503-twice.json"),
            include_str!("../mocks/scenarios/github-429-retry-after.json"),
            include_str!("../mocks/scenarios/github-rate-limit-exhausted.json"),
            include_str!("../mocks/scenarios/github-500-always.json"),
            include_str!("../mocks/scenarios/machine-package-manager-fails.json"),
            include_str!("../mocks/scenarios/machine-disk-fills-up.json"),
            include_str!("../mocks/scenarios/machine-crash-before-rename.json"),
        ] {
            let s = Scenario::from_json(text).unwrap();
            s.apply(embedded_catalog()).unwrap();
        }
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
