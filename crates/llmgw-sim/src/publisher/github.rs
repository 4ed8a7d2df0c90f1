//! GitHub's side of the fake publisher, in GitHub's REST shape (the
//! fields, their order, the headers; docs.github.com/rest/releases):
//!
//! - `GET /repos/{owner}/{repo}/releases/tags/{tag}`: the release JSON,
//!   assets with `digest` `sha256:<hex>`; an unknown tag is a 404 with
//!   GitHub's JSON body.
//! - `GET /{owner}/{repo}/releases/download/{tag}/{name}`: 302 to
//!   `/github-production-release-asset/{asset id}/{name}`, which serves the
//!   asset (as github.com redirects to `release-assets.githubusercontent.com`):
//!   a `.tar.gz` from [`tarball::build`], or a wheel from [`wheel::build`].
//! - `GET /repos/{owner}/{repo}/releases/assets/{id}`: the asset JSON, or with
//!   `Accept: application/octet-stream` a 302 to the asset.
//! - `GET /repos/{owner}/{repo}/releases?per_page=&page=`: the releases,
//!   newest first, a page at a time with a `Link` header to the next.
//!
//! API answers carry `x-ratelimit-*` headers as GitHub's do.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use serde::Serialize;
use sha2::{Digest, Sha256};
use wiremock::matchers::{header, method, path, path_regex};
use wiremock::{Mock, ResponseTemplate};

use super::{decoded_path, get_or_head, invalid, tarball, wheel};
use crate::truth::{self, Asset, Catalog, Release};

/// The content type GitHub gives a `.tar.gz` asset: UNCONFIRMED (set by
/// the uploader, docs.github.com/rest/releases/assets; what llama.cpp's and
/// uv's uploaders send is in mocks/README.md, "The server"). llmgw never
/// reads an asset's `content_type`.
const GZIP_CONTENT_TYPE: &str = "application/gzip";

/// The content type GitHub gives a `.sha256` sidecar: UNCONFIRMED (set by the uploader).
const TEXT_CONTENT_TYPE: &str = "text/plain";

/// The content type GitHub gives a wheel asset: UNCONFIRMED (set by the
/// uploader; `gh release upload` falls back to octet-stream for an
/// extension it does not know).
const WHEEL_CONTENT_TYPE: &str = "application/octet-stream";

/// `x-ratelimit-limit`: the unauthenticated REST limit, requests per hour.
/// Source: GitHub docs, "Rate limits for the REST API" (docs.github.com/rest/releases/assets).
const RATE_LIMIT: u32 = 60;

/// `x-ratelimit-reset` of every answer, Unix seconds: a fixed instant
/// (2026-11-01T00:00:00Z) so that answers are the same from run to run.
pub(super) const RATE_LIMIT_RESET: u64 = 1_793_491_200;

/// GitHub's answer to a release tag it does not know.
pub(super) const NOT_FOUND_TAG: &str = r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest/releases/releases#get-a-release-by-tag-name","status":"404"}"#;

/// GitHub's answer to any other API path it does not know.
const NOT_FOUND_API: &str =
    r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}"#;

/// The asset of `release` named `name`.
fn asset_of<'a>(release: &'a Release, name: &str) -> Option<&'a Asset> {
    release.assets.iter().find(|a| a.name == name)
}

/// What the download host serves for an asset: its bytes, or for a
/// `tampered` asset the same bytes with one changed, so that they no longer
/// match the digest GitHub computed at upload.
fn served_body(asset: Option<&Asset>, bytes: &[u8]) -> Vec<u8> {
    let mut body = bytes.to_vec();
    if asset.is_some_and(|a| a.tampered)
        && let Some(b) = body.get_mut(bytes.len() / 2)
    {
        *b ^= 0x01;
    }
    body
}

/// What the GitHub routes publish.
pub(super) struct Published {
    /// The routes of every release and asset.
    pub mocks: Vec<Mock>,
    /// Each asset's served path and bytes, by `owner/name@tag asset`: what
    /// a fault on that asset answers instead, or breaks off.
    pub assets: BTreeMap<String, (String, Vec<u8>)>,
    /// Paths (percent-decoded) of the asset bodies themselves.
    pub download_paths: BTreeSet<String>,
}

/// The routes of every release of `catalog`, served at `base`; builds
/// every archive and wheel (in memory).
///
/// # Errors
/// `InvalidData` when two assets have the same id (a hash collision of
/// their names), or a `published_at` that is not RFC 3339 UTC.
pub(super) fn routes(base: &str, catalog: &Catalog) -> io::Result<Published> {
    let mut mocks = Vec::new();
    let mut assets: BTreeMap<String, (String, Vec<u8>)> = BTreeMap::new();
    let mut download_paths = BTreeSet::new();
    let mut ids = BTreeMap::new();
    // Each repository's releases as its list serves them.
    let mut listed: BTreeMap<String, Vec<(String, String, serde_json::Value)>> = BTreeMap::new();
    for release in &catalog.releases {
        let mtime = truth::epoch(&release.published_at).ok_or_else(|| {
            invalid(format!(
                "release {}@{}: published_at `{}` is not RFC 3339 UTC",
                release.repo, release.tag, release.published_at
            ))
        })?;
        let mut served: Vec<Served> = Vec::new();
        // Archives and wheels first: a sidecar holds the digest of one of them.
        let mut order: Vec<&Asset> = release.assets.iter().filter(|a| a.sha256_of.is_none()).collect();
        order.extend(release.assets.iter().filter(|a| a.sha256_of.is_some()));
        for asset in order {
            let id = asset_id(release, asset);
            if let Some(other) = ids.insert(id, format!("{}@{} {}", release.repo, release.tag, asset.name)) {
                return Err(invalid(format!(
                    "assets {other} and {}@{} {} have the same id {id}",
                    release.repo, release.tag, asset.name
                )));
            }
            let (bytes, content_type) = match (&asset.wheel, &asset.sha256_of) {
                (_, Some(of)) => {
                    let hex = served.iter().find(|s| &s.name == of).map(|s| s.digest.trim_start_matches("sha256:"));
                    let line = format!("{}  {of}\n", hex.unwrap_or_default());
                    (asset.sidecar_text.clone().unwrap_or(line).into_bytes(), TEXT_CONTENT_TYPE)
                }
                (None, None) => (tarball::build(asset, mtime), GZIP_CONTENT_TYPE),
                (Some(dist), None) => (wheel::build(dist), WHEEL_CONTENT_TYPE),
            };
            served.push(Served::new(base, release, asset, id, bytes, content_type));
        }
        // Listed in the truth's order, as GitHub lists them.
        served.sort_by_key(|s| release.assets.iter().position(|a| a.name == s.name));
        let json = ApiRelease::new(base, release, &served);
        listed.entry(release.repo.clone()).or_default().push((
            release.published_at.clone(),
            release.tag.clone(),
            serde_json::to_value(&json).expect("API objects always serialize"),
        ));
        let release_path = format!("/repos/{}/releases/tags/{}", release.repo, release.tag);
        mocks.push(Mock::given(method("GET")).and(path(release_path)).respond_with(api_json(200, to_json(&json))));
        for (s, api) in served.iter().zip(&json.assets) {
            let location = format!("{base}{}", s.download_path);
            let download = format!("/{}/releases/download/{}/{}", release.repo, release.tag, s.name);
            mocks.push(Mock::given(get_or_head).and(decoded_path(download)).respond_with(redirect(&location)));
            let api_path = format!("/repos/{}/releases/assets/{}", release.repo, s.id);
            mocks.push(
                Mock::given(method("GET"))
                    .and(path(api_path.as_str()))
                    .and(header("accept", "application/octet-stream"))
                    .respond_with(redirect(&location))
                    .with_priority(1),
            );
            mocks.push(Mock::given(method("GET")).and(path(api_path)).respond_with(api_json(200, to_json(api))));
            mocks.push(
                Mock::given(get_or_head).and(decoded_path(s.download_path.clone())).respond_with(
                    ResponseTemplate::new(200)
                        .set_delay(std::time::Duration::from_millis(
                            asset_of(release, &s.name).map_or(0, |a| a.delay_ms),
                        ))
                        .set_body_raw(served_body(asset_of(release, &s.name), &s.bytes), "application/octet-stream")
                        .insert_header("content-disposition", format!("attachment; filename={}", s.name).as_str()),
                ),
            );
            assets.insert(
                format!("{}@{} {}", release.repo, release.tag, s.name),
                (s.download_path.clone(), served_body(asset_of(release, &s.name), &s.bytes)),
            );
            if !download_paths.insert(s.download_path.clone()) {
                return Err(invalid(format!("asset {} is listed twice in {}@{}", s.name, release.repo, release.tag)));
            }
        }
    }
    for (repo, mut releases) in listed {
        // Newest first, as GitHub lists them.
        releases.sort_by(|a, b| (&b.0, &b.1).cmp(&(&a.0, &a.1)));
        let releases: Vec<serde_json::Value> = releases.into_iter().map(|(_, _, json)| json).collect();
        let list_path = format!("/repos/{repo}/releases");
        let url = format!("{base}{list_path}");
        mocks.push(
            Mock::given(method("GET"))
                .and(path(list_path))
                .respond_with(move |req: &wiremock::Request| list_page(&url, &releases, req.url.query_pairs())),
        );
    }
    Ok(Published { mocks, assets, download_paths })
}

/// GitHub's default and largest `per_page` of a list. Source:
/// docs.github.com/rest/using-the-rest-api/using-pagination-in-the-rest-api.
const PER_PAGE_DEFAULT: usize = 30;
/// See [`PER_PAGE_DEFAULT`].
const PER_PAGE_MAX: usize = 100;

/// One page of a release list (`GET /repos/{o}/{r}/releases?per_page=&page=`),
/// with GitHub's `Link` header naming the next and last pages when there
/// are more: `<…?per_page=2&page=2>; rel="next", <…&page=3>; rel="last"`.
fn list_page<'a>(
    url: &str,
    releases: &[serde_json::Value],
    query: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
) -> ResponseTemplate {
    let (mut per_page, mut page) = (PER_PAGE_DEFAULT, 1usize);
    for (k, v) in query {
        match k.as_ref() {
            "per_page" => per_page = v.parse::<usize>().unwrap_or(PER_PAGE_DEFAULT).clamp(1, PER_PAGE_MAX),
            "page" => page = v.parse::<usize>().unwrap_or(1).max(1),
            _ => {}
        }
    }
    let start = (page - 1).saturating_mul(per_page);
    let body: Vec<&serde_json::Value> = releases.iter().skip(start).take(per_page).collect();
    let last = releases.len().div_ceil(per_page).max(1);
    let mut answer = api_json(200, to_json(&body));
    if page < last {
        let link = format!(
            "<{url}?per_page={per_page}&page={}>; rel=\"next\", <{url}?per_page={per_page}&page={last}>; rel=\"last\"",
            page + 1
        );
        answer = answer.insert_header("link", link.as_str());
    }
    answer
}

/// GitHub's 404 bodies, below every exact route (priority 10 and 20): an
/// unknown release tag, and any other API path.
pub(super) fn not_found_routes() -> Vec<Mock> {
    vec![
        Mock::given(method("GET"))
            .and(path_regex(r"^/repos/[^/]+/[^/]+/releases/tags/[^/]+$"))
            .respond_with(api_json(404, NOT_FOUND_TAG.as_bytes().to_vec()))
            .with_priority(10),
        Mock::given(path_regex(r"^/repos/"))
            .respond_with(api_json(404, NOT_FOUND_API.as_bytes().to_vec()))
            .with_priority(20),
    ]
}

/// One asset as served: its id, bytes, and where they are.
struct Served {
    /// The asset's file name.
    name: String,
    /// The asset id (see [`asset_id`]).
    id: u64,
    /// The archive or wheel.
    bytes: Vec<u8>,
    /// The asset's `content_type` in the API.
    content_type: &'static str,
    /// `sha256:<hex>` of `bytes`.
    digest: String,
    /// The path that serves `bytes`: `/github-production-release-asset/{id}/{name}`.
    download_path: String,
    /// `{base}/{owner}/{repo}/releases/download/{tag}/{name}`.
    browser_download_url: String,
}

impl Served {
    fn new(
        base: &str,
        release: &Release,
        asset: &Asset,
        id: u64,
        bytes: Vec<u8>,
        content_type: &'static str,
    ) -> Served {
        Served {
            name: asset.name.clone(),
            id,
            content_type,
            digest: format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
            bytes,
            download_path: format!("/github-production-release-asset/{id}/{}", asset.name),
            browser_download_url: format!("{base}/{}/releases/download/{}/{}", release.repo, release.tag, asset.name),
        }
    }
}

/// A release object as `GET /repos/{o}/{r}/releases/tags/{tag}` returns it,
/// fields in GitHub's order (docs.github.com/rest/releases; docs.github.com/rest/releases).
#[derive(Serialize)]
struct ApiRelease {
    url: String,
    assets_url: String,
    upload_url: String,
    html_url: String,
    id: u64,
    author: ApiUser,
    node_id: String,
    tag_name: String,
    target_commitish: String,
    name: String,
    draft: bool,
    prerelease: bool,
    created_at: String,
    updated_at: String,
    published_at: String,
    assets: Vec<ApiAsset>,
    tarball_url: String,
    zipball_url: String,
    body: String,
}

impl ApiRelease {
    fn new(base: &str, release: &Release, served: &[Served]) -> ApiRelease {
        let repo = &release.repo;
        let id = stable_id(&format!("release {repo} {}", release.tag));
        let api = format!("{base}/repos/{repo}");
        let at = release.published_at.clone();
        ApiRelease {
            url: format!("{api}/releases/{id}"),
            assets_url: format!("{api}/releases/{id}/assets"),
            upload_url: format!("{api}/releases/{id}/assets{{?name,label}}"),
            html_url: format!("{base}/{repo}/releases/tag/{}", release.tag),
            id,
            author: ApiUser::actions_bot(base),
            node_id: format!("RE_kwDO{id:X}"),
            tag_name: release.tag.clone(),
            target_commitish: default_branch(repo).to_string(),
            name: release.tag.clone(),
            draft: false,
            prerelease: release.prerelease,
            created_at: at.clone(),
            updated_at: at.clone(),
            published_at: at.clone(),
            assets: served
                .iter()
                .map(|s| ApiAsset {
                    url: format!("{api}/releases/assets/{}", s.id),
                    id: s.id,
                    node_id: format!("RA_kwDO{:X}", s.id),
                    name: s.name.clone(),
                    label: None,
                    uploader: ApiUser::actions_bot(base),
                    content_type: s.content_type.into(),
                    state: "uploaded".into(),
                    size: s.bytes.len() as u64,
                    digest: (!asset_of(release, &s.name).is_some_and(|a| a.no_api_digest)).then(|| s.digest.clone()),
                    download_count: 0,
                    created_at: at.clone(),
                    updated_at: at.clone(),
                    browser_download_url: s.browser_download_url.clone(),
                })
                .collect(),
            tarball_url: format!("{api}/tarball/{}", release.tag),
            zipball_url: format!("{api}/zipball/{}", release.tag),
            body: format!(
                "<details open>\n\n{} {} built from {}.\n\n</details>\n\nServed by the llmgw fake release server from mocks/.\n",
                release.engine, release.version, release.commit
            ),
        }
    }
}

/// A release asset object, fields in GitHub's order.
#[derive(Serialize)]
struct ApiAsset {
    url: String,
    id: u64,
    node_id: String,
    name: String,
    label: Option<String>,
    uploader: ApiUser,
    content_type: String,
    state: String,
    /// Size of the archive or wheel, in bytes.
    size: u64,
    digest: Option<String>,
    download_count: u64,
    created_at: String,
    updated_at: String,
    browser_download_url: String,
}

/// The user that published a release or uploaded an asset.
#[derive(Serialize)]
struct ApiUser {
    login: String,
    id: u64,
    node_id: String,
    url: String,
    html_url: String,
    #[serde(rename = "type")]
    kind: String,
    site_admin: bool,
}

impl ApiUser {
    /// `github-actions[bot]`, which publishes releases made by workflows
    /// (llama.cpp's release.yml); its id and node id are GitHub's.
    fn actions_bot(base: &str) -> ApiUser {
        ApiUser {
            login: "github-actions[bot]".into(),
            id: 41_898_282,
            node_id: "MDM6Qm90NDE4OTgyODI=".into(),
            url: format!("{base}/users/github-actions%5Bbot%5D"),
            html_url: format!("{base}/apps/github-actions"),
            kind: "Bot".into(),
            site_admin: false,
        }
    }
}

/// The branch a repository's releases are made from: `master` for
/// llama.cpp (release.yml runs on pushes to master), `main` elsewhere.
fn default_branch(repo: &str) -> &'static str {
    if repo == "ggml-org/llama.cpp" { "master" } else { "main" }
}

/// An asset's id: stable across runs and catalogs (a hash of repository,
/// tag and name), nine digits like GitHub's.
fn asset_id(release: &Release, asset: &Asset) -> u64 {
    stable_id(&format!("asset {} {} {}", release.repo, release.tag, asset.name))
}

/// A nine-digit number from FNV-1a (64 bits) of `key`.
fn stable_id(key: &str) -> u64 {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    100_000_000 + hash % 900_000_000
}

pub(super) fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("API objects always serialize")
}

/// A JSON answer with GitHub's API headers.
pub(super) fn api_json(status: u16, body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_raw(body, "application/json; charset=utf-8")
        .insert_header("x-github-api-version-selected", "2022-11-28")
        .insert_header("x-ratelimit-limit", RATE_LIMIT.to_string().as_str())
        .insert_header("x-ratelimit-remaining", (RATE_LIMIT - 1).to_string().as_str())
        .insert_header("x-ratelimit-reset", RATE_LIMIT_RESET.to_string().as_str())
        .insert_header("x-ratelimit-used", "1")
        .insert_header("x-ratelimit-resource", "core")
}

/// A `302 Found` to `location`, as github.com answers a download.
pub(super) fn redirect(location: &str) -> ResponseTemplate {
    ResponseTemplate::new(302).insert_header("location", location)
}
