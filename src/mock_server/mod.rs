//! The fake GitHub release server the simulation downloads from, built from
//! the truth in `mocks/`.
//!
//! [`embedded_catalog`] is the [`truth::Catalog`] compiled into the binary
//! (one JSON file per release under `mocks/`). [`FakeServer`] serves a
//! catalog on loopback in GitHub's REST shape: the release by tag with each
//! asset's `digest`, the `browser_download_url` that answers 302, and the
//! archive behind it, each archive built once per start by
//! [`tarball::build`]. One server stands for both `https://api.github.com`
//! and `https://github.com`.

pub mod tarball;
pub mod truth;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::net::TcpListener;
use std::sync::OnceLock;

use serde::Serialize;
use sha2::{Digest, Sha256};
use wiremock::matchers::{header, method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use truth::{Asset, Catalog, Release};

/// The releases compiled into the binary: (path in the repository, JSON).
/// A new release is one more line here and its file under `mocks/`.
const EMBEDDED: &[(&str, &str)] = &[
    (
        "mocks/llama.cpp/b10850.json",
        include_str!("../../mocks/llama.cpp/b10850.json"),
    ),
    ("mocks/uv/0.12.20.json", include_str!("../../mocks/uv/0.12.20.json")),
];

/// `x-ratelimit-limit`: the unauthenticated REST limit, requests per hour.
/// Source: GitHub docs, "Rate limits for the REST API" (facts.md §2).
const RATE_LIMIT: u32 = 60;

/// `x-ratelimit-reset` of every answer, Unix seconds: a fixed instant
/// (2026-11-01T00:00:00Z) so that answers are the same from run to run.
const RATE_LIMIT_RESET: u64 = 1_793_491_200;

/// GitHub's answer to a release tag it does not know.
const NOT_FOUND_TAG: &str = r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest/releases/releases#get-a-release-by-tag-name","status":"404"}"#;

/// GitHub's answer to any other API path it does not know.
const NOT_FOUND_API: &str =
    r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}"#;

/// The catalog embedded from `mocks/`: every release the fake server
/// publishes, parsed once.
///
/// # Panics
/// When a file does not parse, naming the file and the JSON path: they are
/// the project's own data, and a unit test parses them.
pub fn embedded_catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog {
        releases: EMBEDDED
            .iter()
            .map(|(file, text)| {
                let de = &mut serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).unwrap_or_else(|e| panic!("{file}: {e}"))
            })
            .collect(),
    })
}

/// A fake GitHub release server on `127.0.0.1`, serving every release of a
/// catalog until dropped.
///
/// Routes (GitHub's REST shape, facts.md §2):
/// - `GET /repos/{owner}/{repo}/releases/tags/{tag}`: the release JSON,
///   assets with `digest` `sha256:<hex>`; an unknown tag is a 404 with
///   GitHub's JSON body.
/// - `GET /{owner}/{repo}/releases/download/{tag}/{name}`: 302 to
///   `/github-production-release-asset/{asset id}/{name}`, which serves the
///   archive (as github.com redirects to `release-assets.githubusercontent.com`).
/// - `GET /repos/{owner}/{repo}/releases/assets/{id}`: the asset JSON, or with
///   `Accept: application/octet-stream` a 302 to the archive.
///
/// API answers carry `x-ratelimit-*` headers as GitHub's do. The server runs
/// on its own thread, so blocking clients can talk to it; its methods block
/// on an internal runtime and must not be called (nor the server dropped)
/// from async code.
pub struct FakeServer {
    /// The wiremock server; dropped before the runtime.
    server: MockServer,
    /// Runs the few async calls wiremock's API needs (mounting, reading the
    /// recorded requests); the server itself serves from its own thread.
    runtime: tokio::runtime::Runtime,
    /// Paths of the archives themselves (`/github-production-release-asset/…`).
    download_paths: BTreeSet<String>,
}

impl fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeServer")
            .field("base_url", &self.base_url())
            .field("assets", &self.download_paths.len())
            .finish()
    }
}

impl FakeServer {
    /// Starts the server on 127.0.0.1 (a random free port) serving every
    /// release of the catalog; builds every archive (in memory) first.
    ///
    /// # Errors
    /// The runtime or the socket cannot be created; or the catalog is not
    /// servable (`InvalidData`): a `published_at` that is not RFC 3339 UTC, a
    /// release or asset listed twice, two assets with the same id.
    pub fn start(catalog: &Catalog) -> io::Result<FakeServer> {
        FakeServer::start_on(catalog, 0)
    }

    /// As [`FakeServer::start`], on `127.0.0.1:port` (0: a random free port).
    ///
    /// # Errors
    /// As [`FakeServer::start`]; the port is taken (`AddrInUse`).
    pub fn start_on(catalog: &Catalog, port: u16) -> io::Result<FakeServer> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let server = runtime.block_on(MockServer::builder().listener(listener).start());
        let base = server.uri();

        let mut mocks = Vec::new();
        let mut download_paths = BTreeSet::new();
        let mut releases = BTreeSet::new();
        let mut ids = BTreeMap::new();
        for release in &catalog.releases {
            if !releases.insert((release.repo.as_str(), release.tag.as_str())) {
                return Err(invalid(format!(
                    "release {}@{} is listed twice",
                    release.repo, release.tag
                )));
            }
            let mtime = tarball::epoch(&release.published_at).ok_or_else(|| {
                invalid(format!(
                    "release {}@{}: published_at `{}` is not RFC 3339 UTC",
                    release.repo, release.tag, release.published_at
                ))
            })?;
            let mut served = Vec::new();
            for asset in &release.assets {
                let id = asset_id(release, asset);
                if let Some(other) = ids.insert(id, format!("{}@{} {}", release.repo, release.tag, asset.name)) {
                    return Err(invalid(format!(
                        "assets {other} and {}@{} {} have the same id {id}",
                        release.repo, release.tag, asset.name
                    )));
                }
                served.push(Served::new(&base, release, asset, id, tarball::build(asset, mtime)));
            }
            let json = ApiRelease::new(&base, release, &served);
            let release_path = format!("/repos/{}/releases/tags/{}", release.repo, release.tag);
            mocks.push(
                Mock::given(method("GET"))
                    .and(path(release_path))
                    .respond_with(api_json(200, to_json(&json))),
            );
            for (s, api) in served.iter().zip(&json.assets) {
                let location = format!("{base}{}", s.download_path);
                let download = format!("/{}/releases/download/{}/{}", release.repo, release.tag, s.name);
                mocks.push(
                    Mock::given(method("GET"))
                        .and(path(download))
                        .respond_with(redirect(&location)),
                );
                let api_path = format!("/repos/{}/releases/assets/{}", release.repo, s.id);
                mocks.push(
                    Mock::given(method("GET"))
                        .and(path(api_path.as_str()))
                        .and(header("accept", "application/octet-stream"))
                        .respond_with(redirect(&location))
                        .with_priority(1),
                );
                mocks.push(
                    Mock::given(method("GET"))
                        .and(path(api_path))
                        .respond_with(api_json(200, to_json(api))),
                );
                mocks.push(
                    Mock::given(method("GET"))
                        .and(path(s.download_path.as_str()))
                        .respond_with(
                            ResponseTemplate::new(200)
                                .set_body_raw(s.bytes.clone(), "application/octet-stream")
                                .insert_header(
                                    "content-disposition",
                                    format!("attachment; filename={}", s.name).as_str(),
                                ),
                        ),
                );
                if !download_paths.insert(s.download_path.clone()) {
                    return Err(invalid(format!(
                        "asset {} is listed twice in {}@{}",
                        s.name, release.repo, release.tag
                    )));
                }
            }
        }
        // Below every exact route (priority 5): GitHub's 404 bodies.
        mocks.push(
            Mock::given(method("GET"))
                .and(path_regex(r"^/repos/[^/]+/[^/]+/releases/tags/[^/]+$"))
                .respond_with(api_json(404, NOT_FOUND_TAG.as_bytes().to_vec()))
                .with_priority(10),
        );
        mocks.push(
            Mock::given(path_regex(r"^/repos/"))
                .respond_with(api_json(404, NOT_FOUND_API.as_bytes().to_vec()))
                .with_priority(20),
        );
        runtime.block_on(async {
            for mock in mocks {
                server.register(mock).await;
            }
        });
        Ok(FakeServer {
            server,
            runtime,
            download_paths,
        })
    }

    /// The base URL standing for `https://api.github.com` and
    /// `https://github.com` (one server serves both), with no trailing
    /// slash: `http://127.0.0.1:40123`.
    pub fn base_url(&self) -> String {
        self.server.uri()
    }

    /// Every request received so far, in order, as (method, path without
    /// the query): `("GET", "/repos/ggml-org/llama.cpp/releases/tags/b10850")`.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.runtime
            .block_on(self.server.received_requests())
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r.method.to_string(), r.url.path().to_string()))
            .collect()
    }

    /// How many asset bodies were asked for: `GET` requests to the final
    /// download location of an asset, whatever led there.
    pub fn downloads(&self) -> usize {
        self.requests()
            .iter()
            .filter(|(m, p)| m == "GET" && self.download_paths.contains(p))
            .count()
    }
}

/// One asset as served: its id, archive bytes, and where they are.
struct Served {
    /// The asset's file name.
    name: String,
    /// The asset id (see [`asset_id`]).
    id: u64,
    /// The archive.
    bytes: Vec<u8>,
    /// `sha256:<hex>` of `bytes`.
    digest: String,
    /// The path that serves `bytes`: `/github-production-release-asset/{id}/{name}`.
    download_path: String,
    /// `{base}/{owner}/{repo}/releases/download/{tag}/{name}`.
    browser_download_url: String,
}

impl Served {
    fn new(base: &str, release: &Release, asset: &Asset, id: u64, bytes: Vec<u8>) -> Served {
        Served {
            name: asset.name.clone(),
            id,
            digest: format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
            bytes,
            download_path: format!("/github-production-release-asset/{id}/{}", asset.name),
            browser_download_url: format!(
                "{base}/{}/releases/download/{}/{}",
                release.repo, release.tag, asset.name
            ),
        }
    }
}

/// A release object as `GET /repos/{o}/{r}/releases/tags/{tag}` returns it,
/// fields in GitHub's order (docs.github.com/rest/releases; facts.md §2).
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
            prerelease: false,
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
                    content_type: "application/gzip".into(),
                    state: "uploaded".into(),
                    size: s.bytes.len() as u64,
                    digest: Some(s.digest.clone()),
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
    /// Size of the archive, in bytes.
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
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    100_000_000 + hash % 900_000_000
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("API objects always serialize")
}

/// A JSON answer with GitHub's API headers.
fn api_json(status: u16, body: Vec<u8>) -> ResponseTemplate {
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
fn redirect(location: &str) -> ResponseTemplate {
    ResponseTemplate::new(302).insert_header("location", location)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use serde_json::Value;

    use super::*;
    use crate::host::Host;
    use crate::recipe::{Engine, Want, plan};
    use crate::system::sim::stub::{Backend, ElfStub};

    fn client(follow: bool) -> reqwest::blocking::Client {
        let policy = if follow {
            reqwest::redirect::Policy::limited(10)
        } else {
            reqwest::redirect::Policy::none()
        };
        reqwest::blocking::Client::builder().redirect(policy).build().unwrap()
    }

    fn release_json(server: &FakeServer, repo: &str, tag: &str) -> Value {
        let url = format!("{}/repos/{repo}/releases/tags/{tag}", server.base_url());
        let resp = client(true).get(url).send().unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/json; charset=utf-8");
        assert_eq!(resp.headers()["x-ratelimit-remaining"], "59");
        assert_eq!(resp.headers()["x-ratelimit-resource"], "core");
        serde_json::from_slice(&resp.bytes().unwrap()).unwrap()
    }

    fn asset<'a>(release: &'a Value, name: &str) -> &'a Value {
        release["assets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap()
    }

    #[test]
    fn the_embedded_catalog_parses_and_each_file_is_its_release() {
        let catalog = embedded_catalog();
        assert_eq!(catalog.releases.len(), EMBEDDED.len());
        for ((file, _), r) in EMBEDDED.iter().zip(&catalog.releases) {
            assert_eq!(*file, format!("mocks/{}/{}.json", r.engine, r.version));
            assert!(tarball::epoch(&r.published_at).is_some(), "{file}");
            assert!(!r.sources.is_empty(), "{file}");
            for a in &r.assets {
                for f in &a.files {
                    assert!(
                        f.elf.is_some() != f.text.is_some(),
                        "{file} {} {}: one of elf or text",
                        a.name,
                        f.path
                    );
                    for v in f.elf.iter().flat_map(|e| &e.requires) {
                        let ok = ["GLIBC_2.", "GLIBCXX_3.4.", "CXXABI_1.3."].iter().any(|p| {
                            v.strip_prefix(p)
                                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                        });
                        assert!(ok, "{file} {} {}: symbol version `{v}`", a.name, f.path);
                    }
                }
            }
        }
    }

    #[test]
    fn the_llama_cpp_truth_has_what_the_checks_rely_on() {
        let r = embedded_catalog()
            .releases
            .iter()
            .find(|r| r.engine == "llama.cpp")
            .unwrap();
        for a in &r.assets {
            assert_eq!(a.top, "llama-b10850", "{}", a.name);
            let has = |p: &str| a.files.iter().any(|f| f.path == p);
            if a.name.starts_with("cudart-") {
                let major = if a.name.contains("cuda-12.8") { "12" } else { "13" };
                assert!(
                    has(&format!("libcudart.so.{major}")) && has(&format!("libcublas.so.{major}")),
                    "{}",
                    a.name
                );
                assert!(!has("LICENSE"), "{}: would overwrite the build's LICENSE", a.name);
                continue;
            }
            let arch = if a.name.ends_with("-x64.tar.gz") {
                "x64"
            } else {
                "arm64"
            };
            assert!(
                has(if arch == "x64" {
                    "libggml-cpu-x64.so"
                } else {
                    "libggml-cpu-armv8.0_1.so"
                }),
                "{}",
                a.name
            );
            let server = a
                .files
                .iter()
                .find(|f| f.path == "llama-server")
                .unwrap()
                .elf
                .as_ref()
                .unwrap();
            assert!(server.lists_devices);
            assert!(
                server
                    .version
                    .as_ref()
                    .unwrap()
                    .stderr
                    .starts_with("version: 10850 (fe14399)\n")
            );
            let (glibc, glibcxx) = if arch == "x64" {
                ("GLIBC_2.35", "GLIBCXX_3.4.30")
            } else {
                ("GLIBC_2.39", "GLIBCXX_3.4.33")
            };
            for f in a
                .files
                .iter()
                .filter(|f| f.path == "llama-server" || f.path.starts_with("libggml"))
            {
                let req = &f.elf.as_ref().unwrap().requires;
                assert!(
                    req.iter().any(|v| v == glibc) && req.iter().any(|v| v == glibcxx),
                    "{} {}",
                    a.name,
                    f.path
                );
            }
            let backend = |lib: &str| {
                a.files
                    .iter()
                    .find(|f| f.path == lib)
                    .and_then(|f| f.elf.as_ref()?.backend.clone())
            };
            if let Some(tk) = ["12.8", "13.3"]
                .into_iter()
                .find(|tk| a.name.contains(&format!("cuda-{tk}")))
            {
                let Some(Backend::Cuda {
                    toolkit, compressed, ..
                }) = backend("libggml-cuda.so")
                else {
                    panic!("{}", a.name)
                };
                assert_eq!((toolkit.as_str(), compressed), (tk, true));
            }
            assert_eq!(
                a.name.contains("vulkan"),
                backend("libggml-vulkan.so") == Some(Backend::Vulkan),
                "{}",
                a.name
            );
        }
    }

    #[test]
    fn every_asset_the_recipes_ask_for_is_published() {
        let catalog = embedded_catalog();
        let published: BTreeSet<(&str, &str, &str)> = catalog
            .releases
            .iter()
            .flat_map(|r| {
                r.assets
                    .iter()
                    .map(move |a| (r.repo.as_str(), r.tag.as_str(), a.name.as_str()))
            })
            .collect();
        let mut asked = BTreeSet::new();
        for arch in ["amd64", "arm64"] {
            for nvidia in [
                "null",
                r#"{"driver": "580.95.05", "gpus": [{"name": "A10", "compute_capability": "8.6", "memory_mib": 24576}]}"#,
            ] {
                let host = Host::from_json(&format!(
                    r#"{{"name": "t", "arch": "{arch}",
                        "os": {{"id": "ubuntu", "version": "24.04", "package_family": "deb", "libc": "glibc", "glibc": "2.39", "glibcxx": "3.4.33"}},
                        "cpu": {{"model": "x", "flags": ["avx2"]}}, "nvidia": {nvidia},
                        "disk_free_gb": 100, "packages": {{"installed": [], "installable": true}}}}"#
                ))
                .unwrap();
                for r in &catalog.releases {
                    let engine = Engine::parse(&r.engine).unwrap();
                    let want = Want {
                        engine,
                        version: r.version.clone(),
                        variant: None,
                    };
                    let Ok(p) = plan(&want, &host) else { continue };
                    for b in &p.candidates {
                        for a in &b.assets {
                            asked.insert((b.repo.clone(), b.tag.clone(), a.clone()));
                        }
                    }
                }
            }
        }
        // Every build is a candidate on one of these hosts: cpu x2, cuda-13.3
        // x2 (two assets each), cuda-12.8 (two assets), vulkan x2, uv x2.
        assert_eq!(asked.len(), 12, "{asked:#?}");
        for (repo, tag, name) in &asked {
            assert!(
                published.contains(&(repo.as_str(), tag.as_str(), name.as_str())),
                "{repo}@{tag} has no {name}"
            );
        }
    }

    #[test]
    fn serves_the_release_and_each_archive_matches_its_digest() {
        let server = FakeServer::start(embedded_catalog()).unwrap();
        let base = server.base_url();
        let release = release_json(&server, "ggml-org/llama.cpp", "b10850");
        assert_eq!(release["tag_name"], "b10850");
        assert_eq!(release["target_commitish"], "master");
        assert_eq!(
            (release["draft"].as_bool(), release["prerelease"].as_bool()),
            (Some(false), Some(false))
        );
        assert_eq!(release["assets"].as_array().unwrap().len(), 10);

        let name = "llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz";
        let a = asset(&release, name);
        let id = a["id"].as_u64().unwrap();
        assert_eq!(
            a["url"],
            format!("{base}/repos/ggml-org/llama.cpp/releases/assets/{id}")
        );
        assert_eq!(
            a["browser_download_url"],
            format!("{base}/ggml-org/llama.cpp/releases/download/b10850/{name}")
        );
        assert_eq!(
            (a["state"].as_str(), a["content_type"].as_str()),
            (Some("uploaded"), Some("application/gzip"))
        );
        assert!(a["label"].is_null());

        // The download answers 302 to the archive's location, as github.com does.
        let url = a["browser_download_url"].as_str().unwrap();
        let hop = client(false).get(url).send().unwrap();
        assert_eq!(hop.status(), 302);
        assert_eq!(
            hop.headers()["location"],
            format!("{base}/github-production-release-asset/{id}/{name}")
        );
        assert_eq!(server.downloads(), 0);

        let resp = client(true).get(url).send().unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/octet-stream");
        let length: u64 = resp.headers()["content-length"].to_str().unwrap().parse().unwrap();
        let body = resp.bytes().unwrap();
        assert_eq!((length, body.len() as u64), (a["size"].as_u64().unwrap(), length));
        assert_eq!(
            format!("sha256:{}", hex::encode(Sha256::digest(&body))),
            a["digest"].as_str().unwrap()
        );
        assert_eq!(server.downloads(), 1);

        // The archive holds the truth: the CUDA backend's stub, under llama-b10850/.
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&body[..]));
        let mut cuda = None;
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            assert!(path.starts_with("llama-b10850/"), "{path}");
            if path == "llama-b10850/libggml-cuda.so" {
                assert_eq!(entry.header().mode().unwrap(), 0o755);
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                cuda = ElfStub::from_bytes(&data);
            }
        }
        let Some(Backend::Cuda { sass, .. }) = cuda.and_then(|s| s.backend) else {
            panic!("no CUDA backend")
        };
        assert_eq!(sass, ["8.6", "8.9", "12.0"]);

        // Every other asset, through the API's octet-stream route.
        for each in release["assets"].as_array().unwrap() {
            let api = client(true).get(each["url"].as_str().unwrap());
            let body = api
                .header("accept", "application/octet-stream")
                .send()
                .unwrap()
                .bytes()
                .unwrap();
            assert_eq!(
                format!("sha256:{}", hex::encode(Sha256::digest(&body))),
                each["digest"].as_str().unwrap()
            );
        }
        assert_eq!(server.downloads(), 11);
        let meta = client(true)
            .get(a["url"].as_str().unwrap())
            .send()
            .unwrap()
            .bytes()
            .unwrap();
        let meta: Value = serde_json::from_slice(&meta).unwrap();
        assert_eq!(meta["digest"], a["digest"]);
        assert_eq!(server.downloads(), 11);

        let requests = server.requests();
        assert_eq!(
            requests[0],
            (
                "GET".to_string(),
                "/repos/ggml-org/llama.cpp/releases/tags/b10850".to_string()
            )
        );
        assert_eq!(
            requests[1],
            (
                "GET".to_string(),
                format!("/ggml-org/llama.cpp/releases/download/b10850/{name}")
            )
        );
        assert_eq!(requests.len(), 1 + 1 + 2 + 2 * 10 + 1);

        let uv = release_json(&server, "astral-sh/uv", "0.12.20");
        assert_eq!(
            (uv["tag_name"].as_str(), uv["target_commitish"].as_str()),
            (Some("0.12.20"), Some("main"))
        );
    }

    #[test]
    fn archives_and_ids_are_the_same_from_start_to_start() {
        let digests = |s: &FakeServer| -> Vec<(Value, Value, Value)> {
            [("ggml-org/llama.cpp", "b10850"), ("astral-sh/uv", "0.12.20")]
                .iter()
                .flat_map(|(repo, tag)| {
                    let r = release_json(s, repo, tag);
                    let assets = r["assets"].as_array().unwrap().clone();
                    assets
                        .into_iter()
                        .map(|a| (a["name"].clone(), a["id"].clone(), a["digest"].clone()))
                })
                .collect()
        };
        let (a, b) = (
            FakeServer::start(embedded_catalog()).unwrap(),
            FakeServer::start(embedded_catalog()).unwrap(),
        );
        assert_ne!(a.base_url(), b.base_url());
        assert_eq!(digests(&a), digests(&b));
        let url = |s: &FakeServer| {
            format!(
                "{}/astral-sh/uv/releases/download/0.12.20/uv-aarch64-unknown-linux-gnu.tar.gz",
                s.base_url()
            )
        };
        let body = |s: &FakeServer| client(true).get(url(s)).send().unwrap().bytes().unwrap();
        assert_eq!(body(&a), body(&b));
        assert_eq!((a.downloads(), b.downloads()), (1, 1));
    }

    #[test]
    fn an_unknown_tag_is_githubs_404() {
        let server = FakeServer::start(embedded_catalog()).unwrap();
        let url = format!("{}/repos/ggml-org/llama.cpp/releases/tags/b99999", server.base_url());
        let resp = client(true).get(url).send().unwrap();
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.headers()["content-type"], "application/json; charset=utf-8");
        assert_eq!(resp.headers()["x-ratelimit-limit"], "60");
        assert_eq!(resp.text().unwrap(), NOT_FOUND_TAG);
        let missing = format!(
            "{}/ggml-org/llama.cpp/releases/download/b10850/nope.tar.gz",
            server.base_url()
        );
        assert_eq!(client(true).get(missing).send().unwrap().status(), 404);
        assert_eq!(server.downloads(), 0);
        assert_eq!(server.requests().len(), 2);
    }

    #[test]
    fn a_bad_catalog_is_refused() {
        let mut catalog = embedded_catalog().clone();
        catalog.releases[0].published_at = "yesterday".into();
        let err = FakeServer::start(&catalog).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("published_at `yesterday`"), "{err}");
        let mut catalog = embedded_catalog().clone();
        catalog.releases.push(catalog.releases[1].clone());
        assert!(
            FakeServer::start(&catalog)
                .unwrap_err()
                .to_string()
                .contains("listed twice")
        );
    }
}
