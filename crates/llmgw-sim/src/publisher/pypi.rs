//! The fake publisher's package indexes, in PyPI's JSON simple API (PEP 691,
//! api-version 1.1) whatever the `Accept` header says:
//!
//! - index `pypi`: `GET /pypi/simple/{project}/`, its files at
//!   `/pypi/files/{h[0..2]}/{h[2..4]}/{h[4..]}/{filename}` where `h` is the
//!   wheel's sha256 in hex (PyPI's `/packages/…` scheme, with sha256 for blake2b);
//! - index `pytorch-{variant}`: `GET /whl/{variant}/{project}/`, its files at
//!   `/whl/{variant}/{filename}` as on `download.pytorch.org` (`+` written
//!   `%2B` in the URLs given).
//!
//! A project page lists every file of the project, sorted by file name, with
//! its `url`, `hashes.sha256`, `requires-python`, `core-metadata` (the sha256
//! of its `METADATA`), `size` in bytes and `upload-time`; `{file}.metadata`
//! serves the `METADATA` ([`wheel::metadata`], PEP 658). A project name that
//! is not normalized (PEP 503), or lacks the final `/`, answers 301 to the
//! normalized page, as PyPI does (pypi/warehouse `warehouse/api/simple.py`,
//! `simple_detail`: `HTTPMovedPermanently` to `project.normalized_name`;
//! `warehouse/views.py`: `append_slash=HTTPMovedPermanently`); an unknown
//! project is a 404.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sha2::{Digest, Sha256};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, Request, ResponseTemplate};

use super::github::to_json;
use super::{decoded_path, percent_decode, wheel};
use crate::truth::{Dist, Index, IndexKind};
use llmgw_core::recipe::compare_versions;

/// The media type of PyPI's JSON simple API, version 1 (PEP 691).
pub(super) const SIMPLE_JSON: &str = "application/vnd.pypi.simple.v1+json";

/// `meta.api-version` of every simple API answer: 1.1 adds `versions` and
/// each file's `size` and `upload-time` (PEP 700).
const SIMPLE_API_VERSION: &str = "1.1";

/// `upload-time` of an index file whose truth gives none, in PEP 700's
/// format: a fixed instant, invented, so that answers are the same from run
/// to run.
pub(super) const UPLOAD_TIME: &str = "2026-05-01T00:00:00.000000Z";

/// The body of a 404 from a package index (PyPI answers an unknown project
/// with 404; the body here is the simulation's).
pub(super) const NOT_FOUND_INDEX: &str = r#"{"message":"Not Found"}"#;

/// Where a package index is served.
struct Mount {
    /// The simple API's root path, no trailing slash: `/pypi/simple`, `/whl/cu129`.
    simple: String,
    /// How file paths are made.
    files: FileScheme,
}

/// How a package index lays out its files.
enum FileScheme {
    /// `{root}/{h[0..2]}/{h[2..4]}/{h[4..]}/{filename}`, `h` the sha256 hex
    /// of the file (PyPI's `/packages/…`, blake2b there).
    Hashed(String),
    /// `{root}/{filename}` (download.pytorch.org).
    Flat(String),
}

impl Mount {
    /// Where an index of this kind is served: `pypi` at `/pypi/simple`,
    /// `pytorch-<variant>` at `/whl/<variant>` (`pytorch-cu129` → `/whl/cu129`).
    fn of(kind: &IndexKind) -> Mount {
        match kind {
            IndexKind::Pypi => Mount { simple: "/pypi/simple".into(), files: FileScheme::Hashed("/pypi/files".into()) },
            IndexKind::Pytorch(variant) => {
                Mount { simple: format!("/whl/{variant}"), files: FileScheme::Flat(format!("/whl/{variant}")) }
            }
        }
    }

    /// The (percent-decoded) path of a file with these bytes' sha256 hex.
    fn file_path(&self, sha256: &str, filename: &str) -> String {
        match &self.files {
            FileScheme::Hashed(root) => {
                format!("{root}/{}/{}/{}/{filename}", &sha256[..2], &sha256[2..4], &sha256[4..])
            }
            FileScheme::Flat(root) => format!("{root}/{filename}"),
        }
    }
}

/// One file of a project page (PEP 691 and 700), keys in PyPI's
/// (alphabetical) order.
#[derive(Serialize)]
struct SimpleFile {
    #[serde(rename = "core-metadata")]
    core_metadata: BTreeMap<&'static str, String>,
    filename: String,
    hashes: BTreeMap<&'static str, String>,
    #[serde(rename = "requires-python", skip_serializing_if = "Option::is_none")]
    requires_python: Option<String>,
    /// Size of the wheel, in bytes.
    size: u64,
    #[serde(rename = "upload-time")]
    upload_time: String,
    url: String,
    yanked: bool,
}

/// A project page of the JSON simple API, keys in PyPI's order.
#[derive(Serialize)]
struct SimpleProject {
    files: Vec<SimpleFile>,
    meta: BTreeMap<&'static str, &'static str>,
    name: String,
    versions: Vec<String>,
}

/// Mounts one index of a valid catalog ([`crate::truth::Catalog::validate`]):
/// a route per wheel and per `.metadata` into `mocks`, each wheel's path
/// into `download_paths`, and one responder for every project page.
pub(super) fn routes(base: &str, index: &Index, mocks: &mut Vec<Mock>, download_paths: &mut BTreeSet<String>) {
    let Some(kind) = index.kind() else { return };
    let mount = Mount::of(&kind);
    let mut projects: BTreeMap<String, Vec<&Dist>> = BTreeMap::new();
    for dist in &index.dists {
        projects.entry(llmgw_model::pep503::normalize(&dist.name)).or_default().push(dist);
    }
    let mut pages = BTreeMap::new();
    for (name, mut dists) in projects {
        dists.sort_by(|a, b| a.filename.cmp(&b.filename));
        let mut files = Vec::new();
        for dist in &dists {
            let bytes = wheel::build(dist);
            let metadata = wheel::metadata(dist);
            let sha256 = hex::encode(Sha256::digest(&bytes));
            let file_path = mount.file_path(&sha256, &dist.filename);
            files.push(SimpleFile {
                core_metadata: BTreeMap::from([("sha256", hex::encode(Sha256::digest(metadata.as_bytes())))]),
                filename: dist.filename.clone(),
                hashes: BTreeMap::from([("sha256", sha256)]),
                requires_python: dist.requires_python.clone(),
                size: bytes.len() as u64,
                upload_time: dist.upload_time.clone().unwrap_or_else(|| UPLOAD_TIME.to_string()),
                url: format!("{base}{}", file_path.replace('+', "%2B")),
                yanked: false,
            });
            mocks.push(
                Mock::given(method("GET"))
                    .and(decoded_path(format!("{file_path}.metadata")))
                    .respond_with(ResponseTemplate::new(200).set_body_raw(metadata, "application/octet-stream"))
                    .with_priority(1),
            );
            mocks.push(
                Mock::given(method("GET"))
                    .and(decoded_path(file_path.clone()))
                    .respond_with(ResponseTemplate::new(200).set_body_raw(bytes, "application/octet-stream"))
                    .with_priority(1),
            );
            download_paths.insert(file_path);
        }
        let mut versions: Vec<String> = dists.iter().map(|d| d.version.clone()).collect();
        versions.sort_by(|a, b| compare_versions(a, b).then_with(|| a.cmp(b)));
        versions.dedup();
        let page = SimpleProject {
            files,
            meta: BTreeMap::from([("api-version", SIMPLE_API_VERSION)]),
            name: name.clone(),
            versions,
        };
        pages.insert(name, to_json(&page));
    }
    // One responder for every page under the root: the page, a 301 to the
    // normalized name with its final `/`, or a 404. Below the file routes,
    // which share `/whl/{variant}/` on PyTorch's layout.
    let root = mount.simple.clone();
    let location_base = format!("{base}{root}");
    mocks.push(Mock::given(method("GET")).and(path_regex(format!("^{}/[^/]+/?$", regex::escape(&root)))).respond_with(
        move |req: &Request| {
            let raw = req.url.path();
            let rest = &raw[root.len() + 1..];
            let (segment, slash) = match rest.strip_suffix('/') {
                Some(s) => (s, true),
                None => (rest, false),
            };
            let decoded = percent_decode(segment);
            let name = llmgw_model::pep503::normalize(&decoded);
            match pages.get(&name) {
                None => ResponseTemplate::new(404).set_body_raw(NOT_FOUND_INDEX, "application/json"),
                Some(_) if !slash || decoded != name => {
                    ResponseTemplate::new(301).insert_header("location", format!("{location_base}/{name}/").as_str())
                }
                Some(page) => ResponseTemplate::new(200).set_body_raw(page.clone(), SIMPLE_JSON),
            }
        },
    ));
}
