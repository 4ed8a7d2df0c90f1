//! `ENGINE@latest`: the newest version of an engine this node can use,
//! asked of the publisher on every convergence.
//!
//! - llama.cpp: the newest `b<N>` release (prereleases included, as every
//!   build release is one; drafts never) whose assets make a build this
//!   host can use, looking at most at [`RELEASES_LOOKED_AT`] releases;
//! - uv: the newest release that is not a prerelease, the same way;
//! - vLLM and SGLang: the newest final version (PEP 440 order) on the
//!   package index with a wheel this host's platform and Python can install.

use super::Config;
use crate::recipe::wheel_name::WheelName;
use crate::recipe::{self, Published, Publisher, Want, compare_versions};
use crate::release::{self, index};
use crate::system::System;
use llmgw_model::host::Host;

/// How many of a repository's newest releases a `latest` want looks at
/// before it gives up: llama.cpp publishes several build releases a day, so
/// this is about a week of them; one page of GitHub's list.
pub const RELEASES_LOOKED_AT: usize = 50;

/// What a `latest` want resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The version: `b11459`, `0.33.0`.
    pub version: String,
    /// Newer versions passed over, each with why: `b11461: release b11461 has no asset …`.
    pub skipped: Vec<String>,
}

/// Why a `latest` want resolved to no version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LatestError {
    /// The list of releases could not be had.
    #[error(transparent)]
    Releases(#[from] release::ReleaseError),
    /// The package index could not be asked.
    #[error(transparent)]
    Index(#[from] index::IndexError),
    /// None of the releases looked at has a build this host can use.
    #[error("none of the newest {looked_at} release(s) of {repo} has a build this node can use{}", newest(skipped))]
    NoRelease {
        /// `owner/name`.
        repo: String,
        /// How many releases were looked at.
        looked_at: usize,
        /// Each release passed over, with why: `b11461: a draft`.
        skipped: Vec<String>,
    },
    /// None of the final versions on the index has a wheel this host can install.
    #[error(
        "none of the {versions} final version(s) of {project} on the package index has a wheel this node can install{}",
        newest(skipped)
    )]
    NoVersion {
        /// The PyPI project.
        project: String,
        /// How many final versions the index lists.
        versions: usize,
        /// Each version passed over, with why.
        skipped: Vec<String>,
    },
}

/// ` (the newest, <why>)` for the first release or version passed over.
fn newest(skipped: &[String]) -> String {
    match skipped.first() {
        Some(first) => format!(" (the newest, {first})"),
        None => String::new(),
    }
}

/// Resolves `want` (its version [`recipe::LATEST`]) for `host`.
///
/// # Errors
/// [`LatestError`], naming what was looked at: the releases or the index
/// page that could not be had, or that none of them has a build for this host.
pub fn resolve(sys: &mut dyn System, cfg: &Config, want: &Want, host: &Host) -> Result<Resolved, LatestError> {
    match want.engine.descriptor().publisher {
        Publisher::Releases { repo, skip_prereleases, .. } => {
            from_releases(sys, cfg, want, host, repo, skip_prereleases)
        }
        Publisher::PyPi { .. } => from_index(sys, cfg, want, host),
    }
}

fn from_releases(
    sys: &mut dyn System,
    cfg: &Config,
    want: &Want,
    host: &Host,
    repo: &str,
    skip_prereleases: bool,
) -> Result<Resolved, LatestError> {
    let releases = release::list(sys, &cfg.github_api, repo, RELEASES_LOOKED_AT)?;
    let mut skipped = Vec::new();
    for r in &releases {
        let tag = &r.tag_name;
        let why = if r.draft {
            Some("a draft".to_string())
        } else if r.prerelease && skip_prereleases {
            Some("a prerelease".to_string())
        } else if let Err(e) = want.engine.check_version(tag) {
            // llama.cpp's vX.Y.Z releases carry only `nightly-tag.txt`.
            Some(format!("not a release of builds ({e})"))
        } else {
            let names: Vec<String> = r.assets.iter().map(|a| a.name.clone()).collect();
            match recipe::plan_published(&want.at(tag), host, Published::Assets(&names)) {
                Ok(plan) if !plan.candidates.is_empty() => {
                    return Ok(Resolved { version: tag.clone(), skipped });
                }
                Ok(_) => Some("no build of it runs here".to_string()),
                Err(recipe::Refusal::Unsupported { reason, .. } | recipe::Refusal::NotHere { reason }) => Some(reason),
            }
        };
        if let Some(why) = why {
            skipped.push(format!("{tag}: {why}"));
        }
    }
    Err(LatestError::NoRelease { repo: repo.to_string(), looked_at: releases.len(), skipped })
}

fn from_index(sys: &mut dyn System, cfg: &Config, want: &Want, host: &Host) -> Result<Resolved, LatestError> {
    use std::str::FromStr;
    let project = want.engine.as_str();
    let files = index::project_files(sys, &cfg.pypi_simple, project)?;
    let python_minor: u32 = recipe::PYTHON.split('.').nth(1).and_then(|m| m.parse().ok()).unwrap_or(12);
    // Each final version's wheels, newest first.
    let mut versions: Vec<(String, Vec<WheelName>)> = Vec::new();
    for f in files.iter().filter(|f| !f.yanked.is_yanked()) {
        let Some(wheel) = WheelName::parse(&f.filename) else { continue };
        let Ok(v) = pep440_rs::Version::from_str(&wheel.version) else { continue };
        if v.any_prerelease() || !v.local().is_empty() {
            continue;
        }
        let version = wheel.version.clone();
        match versions.iter_mut().find(|(have, _)| *have == version) {
            Some((_, wheels)) => wheels.push(wheel),
            None => versions.push((version, vec![wheel])),
        }
    }
    versions.sort_by(|a, b| compare_versions(&b.0, &a.0));
    let mut skipped = Vec::new();
    for (version, wheels) in &versions {
        if wheels.iter().any(|w| w.fits_platform(host) && w.fits_python(python_minor)) {
            return Ok(Resolved { version: version.clone(), skipped });
        }
        skipped.push(format!(
            "{version}: no wheel for {} with glibc {} and Python {}",
            host.arch,
            host.os.glibc.as_ref().map_or("-".to_string(), ToString::to_string),
            recipe::PYTHON
        ));
    }
    Err(LatestError::NoVersion { project: project.to_string(), versions: versions.len(), skipped })
}
