//! Whether the version a want asks for is published at all, asked when the
//! recipe's rules refuse the want on this node: "PyPI has no sglang 0.5.5"
//! comes before any reason a build of it could not run here (a driver that
//! version would need, kernels it would lack), which would otherwise speak
//! of a version that does not exist.
//!
//! llama.cpp's release is asked for before the rules run (its assets decide
//! which builds exist), so only uv's release and the Python engines' PyPI
//! pages are asked here. An answer that cannot be had (the network, a 500)
//! leaves the rules' refusal as it is.

use super::Config;
use super::failure::BuildFailure;
use crate::recipe::{Publisher, Want};
use crate::release::{ReleaseError, ReleaseSource};
use crate::system::System;

/// The versions PyPI lists for `project` on the simple index of `cfg`
/// (PEP 691 JSON, its `versions`, PEP 700); none for a project PyPI does not
/// have (404).
///
/// # Errors
/// [`BuildFailure::Index`]: the index could not be asked, answered another
/// status, or with a page that is not PEP 691 JSON.
pub(super) fn pypi_versions(sys: &mut dyn System, cfg: &Config, project: &str) -> Result<Vec<String>, BuildFailure> {
    let url = format!("{}/{project}/", cfg.pypi_simple.trim_end_matches('/'));
    let resp = sys
        .http_get(&url, "application/vnd.pypi.simple.v1+json")
        .map_err(|e| BuildFailure::Index(format!("PyPI ({project}): {e}")))?;
    #[derive(serde::Deserialize)]
    struct Page {
        versions: Vec<String>,
    }
    match resp.status {
        200 => Ok(serde_json::from_slice::<Page>(&resp.body)
            .map_err(|e| {
                BuildFailure::Index(format!(
                    "PyPI ({project}): the project page is not PEP 691 JSON with `versions`: {e}"
                ))
            })?
            .versions),
        404 => Ok(vec![]),
        status => Err(BuildFailure::Index(format!("PyPI ({project}): HTTP {status}"))),
    }
}

/// Whether `versions` has `version`, by itself or with a local label
/// (`0.20.1+cu129` is 0.20.1).
pub(super) fn lists(versions: &[String], version: &str) -> bool {
    versions.iter().any(|v| v == version || v.split('+').next() == Some(version))
}

/// Why the version `want` asks for does not exist at its publisher: `None`
/// when it does, when the publisher could not be asked, or for llama.cpp,
/// whose release was asked for already.
pub(super) fn unpublished(
    sys: &mut dyn System,
    cfg: &Config,
    source: &mut ReleaseSource,
    want: &Want,
) -> Option<String> {
    match want.engine.descriptor().publisher {
        Publisher::Releases { assets_decide: true, .. } => None,
        Publisher::Releases { repo, .. } => match source.release(sys, repo, &want.version) {
            Err(e @ ReleaseError::NoRelease { .. }) => Some(e.to_string()),
            _ => None,
        },
        Publisher::PyPi { project } => {
            let versions = pypi_versions(sys, cfg, project).ok()?;
            (!lists(&versions, &want.version)).then(|| format!("PyPI has no {project} {}", want.version))
        }
    }
}
