//! A Python package index's project page, in its JSON form (PEP 691, with
//! PEP 700's `versions`): the files a project publishes, what a `latest`
//! want of vLLM or SGLang looks at.
//!
//! `GET {index}/{project}/` with `Accept: application/vnd.pypi.simple.v1+json`
//! answers `{"meta": {"api-version": "1.1"}, "name": …, "files": [{"filename",
//! "url", "hashes", "requires-python", "yanked", …}], "versions": […]}`.
//! Source: peps.python.org/pep-0691, pep-0700.

use serde::Deserialize;

use crate::system::System;

/// The media type of the JSON simple API, version 1 (PEP 691).
pub const SIMPLE_JSON: &str = "application/vnd.pypi.simple.v1+json";

/// One file of a project page.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IndexFile {
    /// `vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl`.
    pub filename: String,
    /// `>=3.11`, when the index says (PEP 691's `requires-python`).
    #[serde(default, rename = "requires-python")]
    pub requires_python: Option<String>,
    /// `false`, `true` or the reason it was yanked (PEP 592): a yanked
    /// file is not chosen for an unpinned version.
    #[serde(default)]
    pub yanked: Yanked,
}

/// PEP 592's `yanked`: a boolean or the reason as a string.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Yanked {
    /// `false` or `true`.
    Flag(bool),
    /// Yanked, with the reason.
    Reason(String),
}

impl Default for Yanked {
    fn default() -> Yanked {
        Yanked::Flag(false)
    }
}

impl Yanked {
    /// Whether the file is yanked.
    pub fn is_yanked(&self) -> bool {
        matches!(self, Yanked::Flag(true) | Yanked::Reason(_))
    }
}

#[derive(Deserialize)]
struct Page {
    files: Vec<IndexFile>,
}

/// Why a project page could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{project} on {index}: {message}")]
pub struct IndexError {
    /// The project asked for.
    pub project: String,
    /// The index's simple root.
    pub index: String,
    /// What went wrong: `HTTP 404`, the network, the JSON path.
    pub message: String,
}

/// The files of `project` on the simple index at `index`
/// (`https://pypi.org/simple`).
///
/// # Errors
/// [`IndexError`]: an error status (404: the index has no such project),
/// the network, or an answer that is not a project page (its JSON path).
pub fn project_files(sys: &mut dyn System, index: &str, project: &str) -> Result<Vec<IndexFile>, IndexError> {
    let fail = |message: String| IndexError { project: project.to_string(), index: index.to_string(), message };
    let url = format!("{}/{project}/", index.trim_end_matches('/'));
    let resp = crate::retry::get(sys, &format!("{project} on the package index"), &url, SIMPLE_JSON)
        .map_err(|e| fail(e.to_string()))?;
    match resp.status {
        200 => {}
        404 => return Err(fail("the index has no such project (HTTP 404)".into())),
        s => return Err(fail(format!("HTTP {s}"))),
    }
    let de = &mut serde_json::Deserializer::from_slice(&resp.body);
    let page: Page = serde_path_to_error::deserialize(de)
        .map_err(|e| fail(format!("the answer is not a PEP 691 project page: {}: {}", e.path(), e.inner())))?;
    Ok(page.files)
}
