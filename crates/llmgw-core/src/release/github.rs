//! GitHub's releases: the release-by-tag API, asset lookup and digests.
//!
//! `GET {api}/repos/{owner}/{repo}/releases/tags/{tag}` returns a release
//! whose `assets[]` carry `name`, `size`, `browser_download_url` and
//! `digest` (`"sha256:<hex>"`, computed by GitHub at upload; `null` for
//! assets uploaded before June 2025). Source: docs.github.com/rest/releases;
//! GitHub changelog 2025-06-03 "Releases now expose digests for release assets".

use serde::Deserialize;

use crate::system::System;

/// The public GitHub API; simulations point at the fake server instead.
pub const GITHUB_API: &str = "https://api.github.com";

/// A release as the API returns it (the fields the installer reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Release {
    /// The tag: `b10850`.
    pub tag_name: String,
    /// A draft (seen only by the repository's writers): never installed.
    #[serde(default)]
    pub draft: bool,
    /// Marked a prerelease (llama.cpp's `b<N>` releases are).
    #[serde(default)]
    pub prerelease: bool,
    /// The assets, as uploaded.
    pub assets: Vec<Asset>,
}

/// One release asset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Asset {
    /// File name: `llama-b10850-bin-ubuntu-x64.tar.gz`.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Where to download it (redirects to GitHub's asset host).
    pub browser_download_url: String,
    /// `sha256:<64 hex>`, or `null` for assets uploaded before June 2025.
    #[serde(default)]
    pub digest: Option<String>,
    /// Where the asset comes from, and so who vouches for `digest`: the
    /// publisher (from its API), or an offline mirror, whose digests are
    /// the control plane's.
    #[serde(skip)]
    pub digest_from: DigestFrom,
}

/// Where an asset comes from, and so who vouches for its digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DigestFrom {
    /// The publisher; the digest is its API's (GitHub's `digest` field).
    #[default]
    Publisher,
    /// An offline mirror; the digest is the control plane's `offline_sha256`.
    Mirror {
        /// The asset's path on the mirror (`uv/0.12.21/<asset>`,
        /// [`super::mirror::asset_path`]), for messages: the mirror's own
        /// URL differs from run to run in simulation.
        path: String,
    },
    /// The publisher, whose API gives no digest: the digest is the one the
    /// asset's `<asset>.sha256` in the same release gives ([`super::sidecar`]).
    Sidecar,
}

impl DigestFrom {
    /// Who vouches for the digest of `asset`, in words: `the publisher's
    /// digest`, `the digest in the publisher's uv-….tar.gz.sha256`.
    pub fn whose(&self, asset: &str) -> String {
        match self {
            DigestFrom::Publisher => "the publisher's digest".into(),
            DigestFrom::Mirror { .. } => "the control plane's offline_sha256".into(),
            DigestFrom::Sidecar => format!("the digest in the publisher's {asset}.sha256"),
        }
    }
}

/// What an asset was fetched for: what is not done with an asset that
/// cannot be verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Purpose {
    /// Installed on this node.
    #[default]
    Install,
    /// Carried into an offline bundle.
    Bundle,
}

impl std::fmt::Display for Purpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Purpose::Install => "installed",
            Purpose::Bundle => "bundled",
        })
    }
}

/// Why release metadata or an asset could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseError {
    /// The publisher has no release of that tag.
    #[error("{repo} has no release `{tag}`")]
    NoRelease {
        /// `owner/name`.
        repo: String,
        /// The tag asked for.
        tag: String,
    },
    /// The API answered with another error status.
    #[error("release `{tag}` of {repo}: HTTP {status}{}", if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Http {
        /// `owner/name`.
        repo: String,
        /// The tag asked for.
        tag: String,
        /// HTTP status.
        status: u16,
        /// GitHub's message.
        message: String,
    },
    /// The connection failed.
    #[error("release `{tag}` of {repo}: {message}")]
    Network {
        /// `owner/name`.
        repo: String,
        /// The tag asked for.
        tag: String,
        /// What broke.
        message: String,
    },
    /// The answer is not GitHub's release JSON.
    #[error("release `{tag}` of {repo}: the answer is not a GitHub release: {message}")]
    Malformed {
        /// `owner/name`.
        repo: String,
        /// The tag asked for.
        tag: String,
        /// The parser's message, with the JSON path.
        message: String,
    },
    /// The list of a repository's releases could not be had.
    #[error("the releases of {repo}: {message}")]
    Listing {
        /// `owner/name`.
        repo: String,
        /// What went wrong: the status and GitHub's message, the network, the JSON path.
        message: String,
    },
    /// An offline mirror lists no releases, only assets at their paths.
    #[error("release `{tag}` of {repo} is not listed by an offline mirror, which holds assets only")]
    NotOnMirror {
        /// `owner/name`.
        repo: String,
        /// The tag asked for.
        tag: String,
    },
    /// The release has no asset of that name.
    #[error("release `{tag}` has no asset `{asset}`")]
    NoAsset {
        /// The tag.
        tag: String,
        /// The asset asked for.
        asset: String,
    },
    /// The asset has no usable digest, so it cannot be verified.
    #[error("asset `{asset}` has no sha256 digest ({why}); it cannot be verified, so it is not {purpose}")]
    NoDigest {
        /// The asset.
        asset: String,
        /// `null`, or what the digest field held.
        why: String,
        /// What it was fetched for.
        purpose: Purpose,
    },
    /// GitHub gives the asset no digest, and its `.sha256` sidecar does not
    /// vouch for it: it cannot be fetched, or is not of a form that does.
    #[error(
        "asset `{asset}` has no sha256 digest from GitHub, and its {asset}.sha256 {problem}; it cannot be verified, so it is not {purpose}"
    )]
    Sidecar {
        /// The asset; its sidecar is `<asset>.sha256`.
        asset: String,
        /// What is wrong with the sidecar: `holds 2 lines; …`.
        problem: String,
        /// What it was fetched for.
        purpose: Purpose,
    },
}

impl ReleaseError {
    /// The same error for an asset fetched for `purpose`: an asset that
    /// cannot be verified is then said not to be bundled, say, rather than
    /// not installed.
    pub fn fetched_for(mut self, purpose: Purpose) -> ReleaseError {
        if let ReleaseError::NoDigest { purpose: p, .. } | ReleaseError::Sidecar { purpose: p, .. } = &mut self {
            *p = purpose;
        }
        self
    }
}

/// The URL of a release by tag.
pub fn release_url(api: &str, repo: &str, tag: &str) -> String {
    format!("{}/repos/{repo}/releases/tags/{tag}", api.trim_end_matches('/'))
}

/// Fetches a release's metadata.
///
/// # Errors
/// [`ReleaseError::NoRelease`] on 404, [`ReleaseError::Http`] on another
/// error status, [`ReleaseError::Network`], [`ReleaseError::Malformed`].
pub fn fetch(sys: &mut dyn System, api: &str, repo: &str, tag: &str) -> Result<Release, ReleaseError> {
    let url = release_url(api, repo, tag);
    let (repo_s, tag_s) = (repo.to_string(), tag.to_string());
    let resp = crate::retry::get(sys, &format!("release {tag} of {repo}"), &url, "application/vnd.github+json")
        .map_err(|e| ReleaseError::Network { repo: repo_s.clone(), tag: tag_s.clone(), message: e.to_string() })?;
    match resp.status {
        200 => {}
        404 => {
            return Err(ReleaseError::NoRelease { repo: repo_s, tag: tag_s });
        }
        status => {
            let message = github_message(&resp.body);
            return Err(ReleaseError::Http { repo: repo_s, tag: tag_s, status, message });
        }
    }
    let de = &mut serde_json::Deserializer::from_slice(&resp.body);
    let release: Release = serde_path_to_error::deserialize(de).map_err(|e| ReleaseError::Malformed {
        repo: repo_s.clone(),
        tag: tag_s.clone(),
        message: format!("{}: {}", e.path(), e.inner()),
    })?;
    // Every download URL parsed where it enters: a `file://`, `ftp://` or
    // relative one is the publisher's answer, refused now, never retried.
    for (i, a) in release.assets.iter().enumerate() {
        if let Err(why) = crate::recipe::check_http_url(&a.browser_download_url)
            .map_err(|e| e.to_string())
            .and_then(|()| super::hosts::check_asset_url(&a.browser_download_url, api).map_err(|e| e.to_string()))
        {
            return Err(ReleaseError::Malformed {
                repo: repo_s,
                tag: tag_s,
                message: format!("assets[{i}].browser_download_url: `{}` {why}", a.browser_download_url),
            });
        }
    }
    Ok(release)
}

/// Releases asked for per page of a list: GitHub's largest page. Source:
/// docs.github.com/rest/releases/releases#list-releases (`per_page`, max 100).
pub const LIST_PAGE: usize = 100;

/// The newest releases of `repo`, newest first as GitHub lists them, at
/// most `at_most` (pages of [`LIST_PAGE`], following the `Link` header's
/// next page). Drafts are kept: the caller skips them.
///
/// # Errors
/// [`ReleaseError::Listing`]: an error status (GitHub's message), the
/// network, or an answer that is not a list of releases (its JSON path).
pub fn list(sys: &mut dyn System, api: &str, repo: &str, at_most: usize) -> Result<Vec<Release>, ReleaseError> {
    let fail = |message: String| ReleaseError::Listing { repo: repo.to_string(), message };
    let per_page = at_most.clamp(1, LIST_PAGE);
    let mut url = Some(format!("{}/repos/{repo}/releases?per_page={per_page}&page=1", api.trim_end_matches('/')));
    let mut out: Vec<Release> = Vec::new();
    while let Some(at) = url.take() {
        if out.len() >= at_most {
            break;
        }
        let resp = crate::retry::get(sys, &format!("the releases of {repo}"), &at, "application/vnd.github+json")
            .map_err(|e| fail(e.to_string()))?;
        if resp.status != 200 {
            let message = github_message(&resp.body);
            return Err(fail(format!(
                "HTTP {}{}",
                resp.status,
                if message.is_empty() { String::new() } else { format!(": {message}") }
            )));
        }
        let de = &mut serde_json::Deserializer::from_slice(&resp.body);
        let page: Vec<Release> = serde_path_to_error::deserialize(de)
            .map_err(|e| fail(format!("the answer is not a list of releases: {}: {}", e.path(), e.inner())))?;
        let empty = page.is_empty();
        out.extend(page);
        // The next page only from the publisher's own host: a Link elsewhere is not followed.
        url = resp.next.filter(|n| !empty && n.starts_with(api.trim_end_matches('/')));
    }
    out.truncate(at_most);
    for r in &out {
        for (i, a) in r.assets.iter().enumerate() {
            if let Err(why) = crate::recipe::check_http_url(&a.browser_download_url)
                .map_err(|e| e.to_string())
                .and_then(|()| super::hosts::check_asset_url(&a.browser_download_url, api).map_err(|e| e.to_string()))
            {
                return Err(fail(format!(
                    "release {}: assets[{i}].browser_download_url: `{}` {why}",
                    r.tag_name, a.browser_download_url
                )));
            }
        }
    }
    Ok(out)
}

impl Release {
    /// The asset named `name`.
    ///
    /// # Errors
    /// [`ReleaseError::NoAsset`].
    pub fn asset(&self, name: &str) -> Result<&Asset, ReleaseError> {
        self.assets
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| ReleaseError::NoAsset { tag: self.tag_name.clone(), asset: name.to_string() })
    }
}

impl Asset {
    /// The sha256 GitHub computed for the asset, lowercase hex.
    ///
    /// # Errors
    /// [`ReleaseError::NoDigest`] when the digest is `null`, of another
    /// algorithm, or not 64 hex digits.
    pub fn sha256(&self) -> Result<String, ReleaseError> {
        let no = |why: String| ReleaseError::NoDigest { asset: self.name.clone(), why, purpose: Purpose::Install };
        let d = self.digest.as_deref().ok_or_else(|| {
            no(match self.digest_from {
                DigestFrom::Publisher | DigestFrom::Sidecar => {
                    "GitHub gives none for assets uploaded before June 2025".into()
                }
                DigestFrom::Mirror { .. } => {
                    "the control plane's offline_sha256 holds none for it, and an offline install trusts no other"
                        .into()
                }
            })
        })?;
        let hex = d.strip_prefix("sha256:").ok_or_else(|| no(format!("`{d}` is not a sha256 digest")))?;
        let digest = llmgw_model::sha256::Sha256::parse(hex).map_err(|_| no(format!("`{d}` is not 64 hex digits")))?;
        Ok(digest.to_string())
    }
}

/// GitHub's error bodies are `{"message": "..."}`; anything else says nothing.
pub fn github_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Msg {
        message: String,
    }
    serde_json::from_slice::<Msg>(body).map(|m| m.message).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asset(digest: Option<&str>) -> Asset {
        Asset {
            name: "a.tar.gz".into(),
            size: 1,
            browser_download_url: "u".into(),
            digest: digest.map(str::to_string),
            digest_from: DigestFrom::Publisher,
        }
    }

    #[test]
    fn digests_are_checked_for_form() {
        let hex = "AB".repeat(32);
        assert_eq!(asset(Some(&format!("sha256:{hex}"))).sha256().unwrap(), "ab".repeat(32));
        assert!(asset(None).sha256().unwrap_err().to_string().contains("cannot be verified"));
        assert!(asset(Some("md5:00")).sha256().is_err());
        assert!(asset(Some("sha256:00")).sha256().is_err());
    }
}
