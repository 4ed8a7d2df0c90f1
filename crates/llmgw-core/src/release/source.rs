//! Where a want's builds come from, decided once: the publisher, or an
//! offline site's mirror ([`Origin`]); and the release metadata one pass of
//! the installer has seen ([`ReleaseSource`]), so that the builds of one
//! release share one request.

use std::collections::BTreeMap;

use super::github::{self, Asset, DigestFrom, Release, ReleaseError};
use super::{mirror, sidecar};
use crate::recipe::{Engine, Want};
use crate::system::System;

/// Where a want's builds come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The publisher: GitHub's releases (and PyPI, for the Python engines).
    Publisher,
    /// An offline site's mirror: every asset from `base` (laid out as
    /// [`mirror::asset_path`] says), checked against `sha256` alone (asset
    /// name -> lowercase hex, the control plane's); the publisher is never
    /// contacted, not even for release metadata.
    Mirror {
        /// The mirror's URL: `http://mirror.internal/llmgw`.
        base: String,
        /// asset name -> sha256, lowercase hex.
        sha256: BTreeMap<String, String>,
        /// asset name -> size in bytes, where a manifest declared it.
        size: BTreeMap<String, u64>,
    },
}

impl Origin {
    /// The origin of a want: its `offline_base` and `offline_sha256`, or the publisher.
    pub fn of(want: &Want) -> Origin {
        match &want.offline_base {
            Some(base) => Origin::Mirror {
                base: base.clone(),
                sha256: want.offline_sha256.iter().map(|(k, v)| (k.clone(), v.to_ascii_lowercase())).collect(),
                size: want.offline_size.clone(),
            },
            None => Origin::Publisher,
        }
    }

    /// Whether this is an offline mirror.
    pub fn is_mirror(&self) -> bool {
        matches!(self, Origin::Mirror { .. })
    }
}

/// The releases of one origin as one pass of the installer sees them:
/// the publisher's fetched once per release (an error too: a release that
/// is not there costs one request per pass), a mirror's made up from its
/// layout and the control plane's checksums.
#[derive(Debug, Clone)]
pub struct ReleaseSource {
    /// Base URL of GitHub's REST API ([`github::GITHUB_API`], or a fake server's).
    api: String,
    origin: Origin,
    seen: BTreeMap<(String, String), Result<Release, ReleaseError>>,
}

impl ReleaseSource {
    /// The releases of `origin`; the publisher's are asked of the API at `api`.
    pub fn new(api: &str, origin: Origin) -> ReleaseSource {
        ReleaseSource { api: api.to_string(), origin, seen: BTreeMap::new() }
    }

    /// Where the releases come from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Release `tag` of `repo`, fetched once per pass.
    ///
    /// # Errors
    /// What [`github::fetch`] says; [`ReleaseError::NotOnMirror`] for a
    /// mirror, which lists no releases (only assets by their path).
    pub fn release(&mut self, sys: &mut dyn System, repo: &str, tag: &str) -> Result<Release, ReleaseError> {
        if self.origin.is_mirror() {
            return Err(ReleaseError::NotOnMirror { repo: repo.to_string(), tag: tag.to_string() });
        }
        let api = &self.api;
        self.seen
            .entry((repo.to_string(), tag.to_string()))
            .or_insert_with(|| github::fetch(sys, api, repo, tag))
            .clone()
    }

    /// The asset `name` of a build of `engine` at `version`, published in
    /// release `tag` of `repo`: from the release (the publisher's digest),
    /// or, when the API gives none, its `.sha256` beside it in the release
    /// ([`sidecar::with_digest`]); or at its place on the mirror (the
    /// control plane's digest, none when the checksums do not name it:
    /// [`Asset::sha256`] then refuses it).
    ///
    /// # Errors
    /// As [`ReleaseSource::release`] and [`sidecar::with_digest`].
    pub fn asset(
        &mut self,
        sys: &mut dyn System,
        engine: Engine,
        version: &str,
        (repo, tag): (&str, &str),
        name: &str,
    ) -> Result<Asset, ReleaseError> {
        match &self.origin {
            Origin::Publisher => {
                let release = self.release(sys, repo, tag)?;
                let asset = sidecar::with_digest(sys, &release, name)?;
                // Kept with the release: a sidecar is read once a pass.
                if asset.digest_from == DigestFrom::Sidecar
                    && let Some(Ok(seen)) = self.seen.get_mut(&(repo.to_string(), tag.to_string()))
                    && let Some(a) = seen.assets.iter_mut().find(|a| a.name == name)
                {
                    a.clone_from(&asset);
                }
                Ok(asset)
            }
            Origin::Mirror { base, sha256, size } => Ok(Asset {
                name: name.to_string(),
                size: size.get(name).copied().unwrap_or(0),
                browser_download_url: mirror::asset_url(base, engine, version, name),
                digest: sha256.get(name).map(|h| format!("sha256:{h}")),
                digest_from: DigestFrom::Mirror { path: mirror::asset_path(engine, version, name) },
            }),
        }
    }
}
