//! The fake release server the simulation downloads from, built from the
//! truth in `mocks/`: GitHub releases, PyPI and PyTorch's wheel index.
//!
//! [`embedded_catalog`] is the [`truth::Catalog`] compiled into the binary
//! (one JSON file per release under `mocks/<engine>/`, one per package index
//! under `mocks/pypi/`). [`FakeServer`] serves a catalog on loopback: GitHub's
//! REST shape (the release by tag with each asset's `digest`, the
//! `browser_download_url` that answers 302, and the asset behind it), and
//! each package index in PyPI's JSON simple API (PEP 691) with its wheels and
//! their core metadata (PEP 658). Every archive is built once per start by
//! [`tarball::build`], every wheel by [`wheel::build`]. One server stands for
//! `https://api.github.com`, `https://github.com`, `https://pypi.org` (with
//! `files.pythonhosted.org`) and `https://download.pytorch.org`.

mod broken;
pub mod mirror;
pub mod tarball;
pub mod truth;
pub mod wheel;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::net::TcpListener;
use std::sync::OnceLock;

use serde::Serialize;
use sha2::{Digest, Sha256};
use wiremock::matchers::{header, method, path, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::recipe::compare_versions;

use truth::{Asset, BodyFault, Catalog, Dist, Fault, Index, Release};

/// The releases compiled into the binary: (path in the repository, JSON).
/// A new release is one more line here and its file under `mocks/`.
const EMBEDDED: &[(&str, &str)] = &[
    ("mocks/llama.cpp/b10850.json", include_str!("../../mocks/llama.cpp/b10850.json")),
    ("mocks/uv/0.12.20.json", include_str!("../../mocks/uv/0.12.20.json")),
    ("mocks/vllm/0.20.1.json", include_str!("../../mocks/vllm/0.20.1.json")),
];

/// The package indexes compiled into the binary: (path in the repository,
/// JSON of one [`Index`]), each file named after its index.
const EMBEDDED_INDEXES: &[(&str, &str)] = &[
    ("mocks/pypi/pypi.json", include_str!("../../mocks/pypi/pypi.json")),
    ("mocks/pypi/pytorch-cu129.json", include_str!("../../mocks/pypi/pytorch-cu129.json")),
];

/// The media type of PyPI's JSON simple API, version 1 (PEP 691).
const SIMPLE_JSON: &str = "application/vnd.pypi.simple.v1+json";

/// `meta.api-version` of every simple API answer: 1.1 adds `versions` and
/// each file's `size` and `upload-time` (PEP 700).
const SIMPLE_API_VERSION: &str = "1.1";

/// `upload-time` of every index file, in PEP 700's format: a fixed instant,
/// invented, so that answers are the same from run to run.
const UPLOAD_TIME: &str = "2026-05-01T00:00:00.000000Z";

/// The body of a 404 from a package index (PyPI answers an unknown project
/// with 404; the body here is the simulation's).
const NOT_FOUND_INDEX: &str = r#"{"message":"Not Found"}"#;

/// The content type GitHub gives a `.tar.gz` asset: UNCONFIRMED (set by
/// the uploader, facts.md §2).
const GZIP_CONTENT_TYPE: &str = "application/gzip";

/// The content type GitHub gives a wheel asset: UNCONFIRMED (set by the
/// uploader; `gh release upload` falls back to octet-stream for an
/// extension it does not know).
const WHEEL_CONTENT_TYPE: &str = "application/octet-stream";

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

/// The answer of a fault: its status with GitHub's headers, or a body going
/// wrong. `body` is what the target serves when it is an asset; a body that
/// breaks off is a redirect to the next of `broken_urls`.
fn fault_answer<'a>(
    f: &Fault,
    base: &str,
    target: &str,
    body: Option<&[u8]>,
    broken_urls: &mut impl Iterator<Item = &'a str>,
) -> Result<ResponseTemplate, String> {
    let whole = || body.ok_or("a body fault of this kind needs an `asset`");
    let answer = match (f.status, f.body) {
        (Some(status), None) => {
            let mut answer = api_json(status, fault_body(status));
            if let Some(secs) = f.retry_after_secs {
                answer = answer.insert_header("retry-after", secs.to_string().as_str());
            }
            if let Some(secs) = f.rate_limit_reset_in_secs {
                answer = answer
                    .insert_header("x-ratelimit-remaining", "0")
                    .insert_header("x-ratelimit-reset", RATE_LIMIT_RESET.saturating_add(secs).to_string().as_str());
            }
            answer
        }
        (None, Some(kind)) => {
            if f.retry_after_secs.is_some() || f.rate_limit_reset_in_secs.is_some() {
                return Err("`retry_after_secs` and `rate_limit_reset_in_secs` go with a `status`, not a `body`".into());
            }
            let ok = || ResponseTemplate::new(200);
            match kind {
                BodyFault::CutShort | BodyFault::Reset => {
                    whole()?;
                    redirect(broken_urls.next().ok_or("no broken body served for it")?)
                }
                BodyFault::OneByteChanged => {
                    let mut changed = whole()?.to_vec();
                    let mid = changed.len() / 2;
                    if let Some(b) = changed.get_mut(mid) {
                        *b ^= 0x01;
                    }
                    ok().set_body_raw(changed, "application/octet-stream")
                }
                BodyFault::Slow => ok().set_delay(std::time::Duration::from_secs(truth::SLOW_FAULT_SECS)),
                BodyFault::RedirectLoop => redirect(&format!("{base}{target}")),
            }
        }
        _ => return Err("give exactly one of `status` and `body`".into()),
    };
    Ok(answer)
}

/// GitHub's body for an error status.
fn fault_body(status: u16) -> Vec<u8> {
    let message = match status {
        403 | 429 => {
            "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)"
        }
        500 => "Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    };
    serde_json::json!({ "message": message, "status": status.to_string() }).to_string().into_bytes()
}

/// The catalog embedded from `mocks/`: every release the fake server
/// publishes, parsed once.
///
/// # Panics
/// When a file does not parse, naming the file and the JSON path: they are
/// the project's own data, and a unit test parses them.
pub fn embedded_catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog {
        releases: EMBEDDED.iter().map(|(file, text)| parse(file, text)).collect(),
        indexes: EMBEDDED_INDEXES.iter().map(|(file, text)| parse(file, text)).collect(),
        faults: vec![],
        machine: Default::default(),
    })
}

/// One embedded file, parsed; panics naming the file and the JSON path.
fn parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> T {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A fake release server on `127.0.0.1`, serving every release and every
/// package index of a catalog until dropped.
///
/// GitHub routes (GitHub's REST shape, facts.md §2):
/// - `GET /repos/{owner}/{repo}/releases/tags/{tag}`: the release JSON,
///   assets with `digest` `sha256:<hex>`; an unknown tag is a 404 with
///   GitHub's JSON body.
/// - `GET /{owner}/{repo}/releases/download/{tag}/{name}`: 302 to
///   `/github-production-release-asset/{asset id}/{name}`, which serves the
///   asset (as github.com redirects to `release-assets.githubusercontent.com`):
///   a `.tar.gz` from [`tarball::build`], or a wheel from [`wheel::build`].
/// - `GET /repos/{owner}/{repo}/releases/assets/{id}`: the asset JSON, or with
///   `Accept: application/octet-stream` a 302 to the asset.
///
/// Package index routes, in PyPI's JSON simple API (PEP 691, api-version 1.1)
/// whatever the `Accept` header says:
/// - index `pypi`: `GET /pypi/simple/{project}/` ([`FakeServer::pypi_simple_url`]),
///   its files at `/pypi/files/{h[0..2]}/{h[2..4]}/{h[4..]}/{filename}`
///   where `h` is the wheel's sha256 in hex (PyPI's `/packages/…` scheme,
///   with sha256 for blake2b);
/// - index `pytorch-{variant}`: `GET /whl/{variant}/{project}/`
///   ([`FakeServer::pytorch_url`]), its files at `/whl/{variant}/{filename}`
///   as on `download.pytorch.org` (`+` written `%2B` in the URLs given).
///
/// A project page lists every file of the project, sorted by file name, with
/// its `url`, `hashes.sha256`, `requires-python`, `core-metadata` (the sha256
/// of its `METADATA`), `size` in bytes and `upload-time`; `{file}.metadata`
/// serves the `METADATA` ([`wheel::metadata`], PEP 658). A project name that
/// is not normalized (PEP 503), or lacks the final `/`, answers 301 to the
/// normalized page, as PyPI does; an unknown project is a 404.
///
/// Paths are compared percent-decoded, so `%2B` and `+` reach the same file.
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
    /// Paths (percent-decoded) of the asset bodies themselves: the archives
    /// and wheels of releases (`/github-production-release-asset/…`) and the
    /// wheels of the indexes; not the `.metadata` files.
    download_paths: BTreeSet<String>,
    /// Serves the bodies that break off mid-way, when a fault asks for one.
    _broken_host: Option<broken::BrokenHost>,
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
    /// release and index of the catalog; builds every archive and wheel (in
    /// memory) first.
    ///
    /// # Errors
    /// The runtime or the socket cannot be created; or the catalog is not
    /// servable (`InvalidData`): a `published_at` that is not RFC 3339 UTC, a
    /// release, asset, index or index file listed twice, two assets with the
    /// same id, a wheel asset whose `wheel.filename` is not its name or that
    /// also has `top` or `files`, an index name that is neither `pypi` nor
    /// `pytorch-<variant>`, a wheel file name that does not start with its
    /// dist's escaped name and version.
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
        // Accepted connections inherit TCP_NODELAY on Linux: without it, a
        // response's headers and body wait on the client's delayed ACK, and
        // a simulation spends its time waiting rather than working.
        socket2::SockRef::from(&listener).set_tcp_nodelay(true)?;
        let server = runtime.block_on(MockServer::builder().listener(listener).start());
        let base = server.uri();

        let mut mocks = Vec::new();
        let mut asset_paths: BTreeMap<String, (String, Vec<u8>)> = BTreeMap::new();
        let mut download_paths = BTreeSet::new();
        let mut releases = BTreeSet::new();
        let mut ids = BTreeMap::new();
        for release in &catalog.releases {
            if !releases.insert((release.repo.as_str(), release.tag.as_str())) {
                return Err(invalid(format!("release {}@{} is listed twice", release.repo, release.tag)));
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
                let (bytes, content_type) = match &asset.wheel {
                    None => (tarball::build(asset, mtime), GZIP_CONTENT_TYPE),
                    Some(dist) => {
                        let what = format!("{}@{} {}", release.repo, release.tag, asset.name);
                        if dist.filename != asset.name {
                            return Err(invalid(format!("{what}: wheel.filename is `{}`", dist.filename)));
                        }
                        if !asset.top.is_empty() || !asset.files.is_empty() {
                            return Err(invalid(format!("{what}: a wheel asset has no top or files")));
                        }
                        check_wheel_name(dist).map_err(|e| invalid(format!("{what}: {e}")))?;
                        (wheel::build(dist), WHEEL_CONTENT_TYPE)
                    }
                };
                served.push(Served::new(&base, release, asset, id, bytes, content_type));
            }
            let json = ApiRelease::new(&base, release, &served);
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
                asset_paths.insert(
                    format!("{}@{} {}", release.repo, release.tag, s.name),
                    (s.download_path.clone(), served_body(asset_of(release, &s.name), &s.bytes)),
                );
                if !download_paths.insert(s.download_path.clone()) {
                    return Err(invalid(format!(
                        "asset {} is listed twice in {}@{}",
                        s.name, release.repo, release.tag
                    )));
                }
            }
        }
        // Faults first (priority 1): they answer before the truth does.
        let mut targets = Vec::new();
        for f in &catalog.faults {
            let (target, body) = match &f.asset {
                Some(a) => asset_paths.get(&format!("{} {a}", f.release)).cloned().map(|(p, b)| (p, Some(b))),
                None => {
                    f.release.split_once('@').map(|(repo, tag)| (format!("/repos/{repo}/releases/tags/{tag}"), None))
                }
            }
            .ok_or_else(|| invalid(format!("fault on `{}`: no such release or asset", f.release)))?;
            targets.push((f, target, body));
        }
        // Bodies that break off mid-way come from the broken host, which
        // the fault's answer redirects to.
        let broken: Vec<broken::Broken> = targets
            .iter()
            .filter_map(|(f, _, body)| match (f.status, f.body, body) {
                (None, Some(kind @ (BodyFault::CutShort | BodyFault::Reset)), Some(whole)) => {
                    Some(broken::Broken { whole: whole.clone().into(), kind })
                }
                _ => None,
            })
            .collect();
        let broken_host = if broken.is_empty() { None } else { Some(broken::BrokenHost::start(broken)?) };
        let urls: Vec<String> = broken_host.iter().flat_map(|h| h.urls()).map(str::to_string).collect();
        let mut broken_urls = urls.iter().map(String::as_str);
        for (f, target, body) in targets {
            let answer = fault_answer(f, &base, &target, body.as_deref(), &mut broken_urls)
                .map_err(|why| invalid(format!("fault on `{}`: {why}", f.release)))?;
            let mut mock = Mock::given(method("GET")).and(decoded_path(target)).respond_with(answer).with_priority(1);
            match f.times {
                Some(0) => return Err(invalid(format!("fault on `{}`: `times` is 0", f.release))),
                Some(n) => mock = mock.up_to_n_times(n),
                None => {}
            }
            mocks.push(mock);
        }
        let mut mounts = BTreeSet::new();
        for index in &catalog.indexes {
            let mount = Mount::of(&index.name)
                .ok_or_else(|| invalid(format!("index `{}`: not `pypi` nor `pytorch-<variant>`", index.name)))?;
            if !mounts.insert(mount.simple.clone()) {
                return Err(invalid(format!("index `{}` is listed twice", index.name)));
            }
            serve_index(&base, index, &mount, &mut mocks, &mut download_paths)?;
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
        Ok(FakeServer { server, runtime, download_paths, _broken_host: broken_host })
    }

    /// The base URL standing for `https://api.github.com` and
    /// `https://github.com` (one server serves both), with no trailing
    /// slash: `http://127.0.0.1:40123`.
    pub fn base_url(&self) -> String {
        self.server.uri()
    }

    /// The fake PyPI's simple API, standing for `https://pypi.org/simple`
    /// (no trailing slash): `http://127.0.0.1:40123/pypi/simple`. A project's
    /// page is `{pypi_simple_url}/{normalized name}/`.
    pub fn pypi_simple_url(&self) -> String {
        format!("{}/pypi/simple", self.base_url())
    }

    /// The fake PyTorch wheel host, standing for
    /// `https://download.pytorch.org/whl` (no trailing slash):
    /// `http://127.0.0.1:40123/whl`. The index of a CUDA variant is
    /// `{pytorch_url}/cu129`, its project pages `{pytorch_url}/cu129/torch/`.
    pub fn pytorch_url(&self) -> String {
        format!("{}/whl", self.base_url())
    }

    /// Every request received so far, in order, as (method, path without
    /// the query, as sent: not percent-decoded):
    /// `("GET", "/repos/ggml-org/llama.cpp/releases/tags/b10850")`.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.runtime
            .block_on(self.server.received_requests())
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r.method.to_string(), r.url.path().to_string()))
            .collect()
    }

    /// Serves the mirror directory `dir` at `{base_url}/mirror`
    /// ([`FakeServer::mirror_url`]) besides the publisher; the paths served.
    ///
    /// # Errors
    /// The directory cannot be read ([`mirror::routes`]).
    pub fn serve_mirror(&self, dir: &std::path::Path) -> io::Result<Vec<String>> {
        let (mocks, files) = mirror::routes(dir)?;
        self.runtime.block_on(async {
            for m in mocks {
                self.server.register(m).await;
            }
        });
        Ok(files)
    }

    /// The URL of the mirror [`FakeServer::serve_mirror`] serves: `http://127.0.0.1:40123/mirror`.
    pub fn mirror_url(&self) -> String {
        format!("{}{}", self.base_url(), mirror::MIRROR_PATH)
    }

    /// Disables the publisher: from now on every request outside the
    /// mirror answers `503` ("the publisher is disabled: this is an offline
    /// site"), before any route of the truth or of a fault.
    pub fn disable_publisher(&self) {
        let mirror = format!("{}/", mirror::MIRROR_PATH);
        let mock = Mock::given(move |req: &Request| !req.url.path().starts_with(&mirror))
            .respond_with(api_json(
                503,
                br#"{"message":"the publisher is disabled: this is an offline site"}"#.to_vec(),
            ))
            .with_priority(1);
        self.runtime.block_on(self.server.register(mock));
    }

    /// Requests received so far outside the mirror: those that reached (or
    /// tried to reach) the publisher's GitHub, PyPI or PyTorch routes.
    pub fn publisher_requests(&self) -> Vec<(String, String)> {
        let mirror = format!("{}/", mirror::MIRROR_PATH);
        self.requests().into_iter().filter(|(_, p)| !p.starts_with(&mirror)).collect()
    }

    /// How many asset bodies were asked for: `GET` requests to the final
    /// location of a release asset (archive or wheel), whatever led there,
    /// and to a wheel of a package index; not the `.metadata` files nor
    /// the API and index pages.
    pub fn downloads(&self) -> usize {
        self.requests().iter().filter(|(m, p)| m == "GET" && self.download_paths.contains(&percent_decode(p))).count()
    }
}

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
    /// The mount of an index by its name: `pypi`, or `pytorch-<variant>`
    /// (`pytorch-cu129` → `/whl/cu129`); `None` for any other name.
    fn of(name: &str) -> Option<Mount> {
        if name == "pypi" {
            return Some(Mount { simple: "/pypi/simple".into(), files: FileScheme::Hashed("/pypi/files".into()) });
        }
        let variant = name.strip_prefix("pytorch-")?;
        let ok = !variant.is_empty() && variant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        ok.then(|| Mount { simple: format!("/whl/{variant}"), files: FileScheme::Flat(format!("/whl/{variant}")) })
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
    upload_time: &'static str,
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

/// Mounts one index: a route per wheel and per `.metadata`, and one
/// responder for every project page.
fn serve_index(
    base: &str,
    index: &Index,
    mount: &Mount,
    mocks: &mut Vec<Mock>,
    download_paths: &mut BTreeSet<String>,
) -> io::Result<()> {
    let mut projects: BTreeMap<String, Vec<&Dist>> = BTreeMap::new();
    let mut filenames = BTreeSet::new();
    for dist in &index.dists {
        check_wheel_name(dist).map_err(|e| invalid(format!("index `{}`: {e}", index.name)))?;
        if !filenames.insert(dist.filename.as_str()) {
            return Err(invalid(format!("index `{}`: {} is listed twice", index.name, dist.filename)));
        }
        projects.entry(crate::pep503::normalize(&dist.name)).or_default().push(dist);
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
                upload_time: UPLOAD_TIME,
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
            let name = crate::pep503::normalize(&decoded);
            match pages.get(&name) {
                None => ResponseTemplate::new(404).set_body_raw(NOT_FOUND_INDEX, "application/json"),
                Some(_) if !slash || decoded != name => {
                    ResponseTemplate::new(301).insert_header("location", format!("{location_base}/{name}/").as_str())
                }
                Some(page) => ResponseTemplate::new(200).set_body_raw(page.clone(), SIMPLE_JSON),
            }
        },
    ));
    Ok(())
}

/// Checks that a wheel's file name is `{escaped name}-{version}-…`, the
/// name escaped as in the wheel's `.dist-info` ([`wheel::dist_info`]).
fn check_wheel_name(dist: &Dist) -> Result<(), String> {
    let info = wheel::dist_info(dist);
    let prefix = format!("{}-", info.strip_suffix(".dist-info").unwrap_or(&info));
    if dist.filename.starts_with(&prefix) && dist.filename.ends_with(".whl") && !wheel::tags(&dist.filename).is_empty()
    {
        Ok(())
    } else {
        Err(format!("wheel file name `{}` is not `{prefix}<tags>.whl`", dist.filename))
    }
}

/// A matcher of the request's path, percent-decoded, against `expected`
/// (itself decoded): `/…/vllm-0.20.1%2Bcu129-…` and `/…/vllm-0.20.1+cu129-…`
/// are the same file.
fn decoded_path(expected: String) -> impl Fn(&Request) -> bool + Send + Sync {
    move |req: &Request| percent_decode(req.url.path()) == expected
}

/// `%XX` escapes decoded (as bytes, then UTF-8 with replacement).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
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
                    content_type: s.content_type.into(),
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

/// GET, or HEAD: the same headers without the body, as GitHub's download
/// hosts answer it.
fn get_or_head(req: &Request) -> bool {
    req.method == wiremock::http::Method::GET || req.method == wiremock::http::Method::HEAD
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use serde_json::Value;

    use super::*;
    use crate::host::Host;
    use crate::recipe::{Engine, Source, Want, plan};
    use crate::system::sim::stub::{Backend, ElfStub};

    fn client(follow: bool) -> reqwest::blocking::Client {
        let policy = if follow { reqwest::redirect::Policy::limited(10) } else { reqwest::redirect::Policy::none() };
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
        release["assets"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap()
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
                if let Some(w) = &a.wheel {
                    assert_eq!(
                        (w.filename.as_str(), a.top.as_str(), a.files.len()),
                        (a.name.as_str(), "", 0),
                        "{file}"
                    );
                    assert_eq!(check_wheel_name(w), Ok(()), "{file}");
                }
                for f in &a.files {
                    assert!(f.elf.is_some() != f.text.is_some(), "{file} {} {}: one of elf or text", a.name, f.path);
                    for v in f.elf.iter().flat_map(|e| &e.requires) {
                        let ok = ["GLIBC_2.", "GLIBCXX_3.4.", "CXXABI_1.3."].iter().any(|p| {
                            v.strip_prefix(p).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                        });
                        assert!(ok, "{file} {} {}: symbol version `{v}`", a.name, f.path);
                    }
                }
            }
        }
    }

    /// The index named `name` of the embedded catalog.
    fn index(name: &str) -> &'static Index {
        embedded_catalog().indexes.iter().find(|i| i.name == name).unwrap()
    }

    /// Whether `req` (`name==version` or a bare name) is served by one of
    /// `dists`: a `==V` pin matches V and V+local (PEP 440).
    fn served_by<'a>(req: &str, mut dists: impl Iterator<Item = &'a Dist>) -> bool {
        let (name, version) = req.split_once("==").map_or((req, None), |(n, v)| (n, Some(v)));
        dists.any(|d| {
            crate::pep503::normalize(&d.name) == crate::pep503::normalize(name)
                && version.is_none_or(|v| d.version == v || d.version.starts_with(&format!("{v}+")))
        })
    }

    #[test]
    fn the_embedded_indexes_parse_and_every_pin_is_served() {
        let catalog = embedded_catalog();
        assert_eq!(catalog.indexes.len(), EMBEDDED_INDEXES.len());
        let pypi = index("pypi");
        for ((file, _), i) in EMBEDDED_INDEXES.iter().zip(&catalog.indexes) {
            assert_eq!(*file, format!("mocks/pypi/{}.json", i.name));
            assert!(!i.sources.is_empty(), "{file}");
            assert!(Mount::of(&i.name).is_some(), "{file}");
            let mut names = BTreeSet::new();
            for d in &i.dists {
                assert!(names.insert(d.filename.as_str()), "{file}: {} twice", d.filename);
                assert_eq!(check_wheel_name(d), Ok(()), "{file}");
                assert!(!d.modules.is_empty(), "{file} {}", d.filename);
                // Requirements: from this index, or from PyPI (uv takes the
                // others there).
                for req in &d.requires {
                    assert!(
                        served_by(req, i.dists.iter().chain(&pypi.dists)),
                        "{file} {}: nothing serves {req}",
                        d.filename
                    );
                }
                if let Some(c) = &d.cuda {
                    assert!(!c.sass.is_empty() && !c.toolkit.is_empty(), "{file} {}", d.filename);
                    // `X.Y`, or `X.Ya` for an arch-specific cubin; PTX never arch-specific.
                    let cc = |s: &str| {
                        s.split_once('.').is_some_and(|(a, b)| [a, b].iter().all(|p| p.parse::<u8>().is_ok()))
                    };
                    for s in &c.sass {
                        assert!(cc(s.strip_suffix('a').unwrap_or(s)), "{file} {}: sass `{s}`", d.filename);
                    }
                    assert!(c.ptx.iter().all(|s| cc(s)), "{file} {}: ptx {:?}", d.filename, c.ptx);
                }
                // Platform wheels come in pairs: x86_64 and aarch64.
                let tags = wheel::tags(&d.filename);
                if let Some(other) = tags.first().filter(|t| t.ends_with("_x86_64")).map(|_| "aarch64") {
                    let twin = d.filename.replace("x86_64", other);
                    assert!(i.dists.iter().any(|o| o.filename == twin), "{file}: no {twin}");
                }
            }
        }
        // The PyTorch index holds torch, torchvision, torchaudio, all +cu129;
        // PyPI holds no local versions.
        let cu129 = index("pytorch-cu129");
        let projects: BTreeSet<&str> = cu129.dists.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(projects, BTreeSet::from(["torch", "torchaudio", "torchvision"]));
        assert!(cu129.dists.iter().all(|d| d.version.ends_with("+cu129")));
        assert!(pypi.dists.iter().all(|d| !d.version.contains('+')));
        // The release wheels' pins: from PyTorch's cu129 index or PyPI.
        for r in &catalog.releases {
            for w in r.assets.iter().filter_map(|a| a.wheel.as_ref()) {
                for req in &w.requires {
                    assert!(
                        served_by(req, cu129.dists.iter().chain(&pypi.dists)),
                        "{}: nothing serves {req}",
                        w.filename
                    );
                }
            }
        }
        // sgl-kernel has SASS only and fails at import; torch at first use.
        for d in &pypi.dists {
            let c = d.cuda.as_ref();
            if d.name == "sgl-kernel" {
                assert!(c.is_some_and(|c| c.ptx.is_empty() && c.fails_at_import), "{}", d.filename);
            } else {
                assert!(c.is_none_or(|c| !c.fails_at_import), "{}", d.filename);
            }
        }
    }

    #[test]
    fn the_llama_cpp_truth_has_what_the_checks_rely_on() {
        let r = embedded_catalog().releases.iter().find(|r| r.engine == "llama.cpp").unwrap();
        for a in &r.assets {
            assert_eq!(a.top, "llama-b10850", "{}", a.name);
            let has = |p: &str| a.files.iter().any(|f| f.path == p);
            if a.name.starts_with("cudart-") {
                let major = if a.name.contains("cuda-12.8") { "12" } else { "13" };
                assert!(has(&format!("libcudart.so.{major}")) && has(&format!("libcublas.so.{major}")), "{}", a.name);
                assert!(!has("LICENSE"), "{}: would overwrite the build's LICENSE", a.name);
                continue;
            }
            let arch = if a.name.ends_with("-x64.tar.gz") { "x64" } else { "arm64" };
            assert!(has(if arch == "x64" { "libggml-cpu-x64.so" } else { "libggml-cpu-armv8.0_1.so" }), "{}", a.name);
            let server = a.files.iter().find(|f| f.path == "llama-server").unwrap().elf.as_ref().unwrap();
            assert!(server.lists_devices);
            assert!(server.version.as_ref().unwrap().stderr.starts_with("version: 10850 (fe14399)\n"));
            let (glibc, glibcxx) =
                if arch == "x64" { ("GLIBC_2.35", "GLIBCXX_3.4.30") } else { ("GLIBC_2.39", "GLIBCXX_3.4.33") };
            for f in a.files.iter().filter(|f| f.path == "llama-server" || f.path.starts_with("libggml")) {
                let req = &f.elf.as_ref().unwrap().requires;
                assert!(req.iter().any(|v| v == glibc) && req.iter().any(|v| v == glibcxx), "{} {}", a.name, f.path);
            }
            let backend =
                |lib: &str| a.files.iter().find(|f| f.path == lib).and_then(|f| f.elf.as_ref()?.backend.clone());
            if let Some(tk) = ["12.8", "13.3"].into_iter().find(|tk| a.name.contains(&format!("cuda-{tk}"))) {
                let Some(Backend::Cuda { toolkit, compressed, .. }) = backend("libggml-cuda.so") else {
                    panic!("{}", a.name)
                };
                assert_eq!((toolkit.as_str(), compressed), (tk, true));
            }
            assert_eq!(a.name.contains("vulkan"), backend("libggml-vulkan.so") == Some(Backend::Vulkan), "{}", a.name);
        }
    }

    #[test]
    fn every_asset_the_recipes_ask_for_is_published() {
        let catalog = embedded_catalog();
        let published: BTreeSet<(&str, &str, &str)> = catalog
            .releases
            .iter()
            .flat_map(|r| r.assets.iter().map(move |a| (r.repo.as_str(), r.tag.as_str(), a.name.as_str())))
            .collect();
        // Every engine version published: the releases, and the engines' own
        // projects on PyPI.
        let mut wants: BTreeSet<(String, String)> =
            catalog.releases.iter().map(|r| (r.engine.clone(), r.version.clone())).collect();
        for d in &index("pypi").dists {
            if Engine::parse(&d.name).is_ok() {
                wants.insert((d.name.clone(), d.version.clone()));
            }
        }
        let (mut asked, mut wheels, mut requirements) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        for arch in ["amd64", "arm64"] {
            for nvidia in [
                "null",
                r#"{"driver": "580.95.05", "gpus": [{"name": "A10", "compute_capability": "8.6", "memory_mib": 24576}]}"#,
                r#"{"driver": "535.183.01", "gpus": [{"name": "A10", "compute_capability": "8.6", "memory_mib": 24576}]}"#,
            ] {
                let host = Host::from_json(&format!(
                    r#"{{"name": "t", "arch": "{arch}",
                        "os": {{"id": "ubuntu", "version": "24.04", "package_family": "deb", "libc": "glibc", "glibc": "2.39", "glibcxx": "3.4.33"}},
                        "cpu": {{"model": "x", "flags": ["avx2"]}}, "nvidia": {nvidia},
                        "disk_free_gb": 100, "packages": {{"installed": [], "installable": true}}}}"#
                ))
                .unwrap();
                for (engine, version) in &wants {
                    let want = Want::new(Engine::parse(engine).unwrap(), version);
                    let Ok(p) = plan(&want, &host) else { continue };
                    for b in &p.candidates {
                        match &b.source {
                            Source::Archives { repo, tag, assets } => {
                                for a in assets {
                                    asked.insert((repo.clone(), tag.clone(), a.clone()));
                                }
                            }
                            Source::Python(env) => {
                                if let Some(w) = &env.wheel {
                                    let matching: Vec<_> = published
                                        .iter()
                                        .filter(|(r, t, n)| {
                                            (*r, *t) == (w.repo.as_str(), w.tag.as_str())
                                                && n.starts_with(&w.prefix)
                                                && n.ends_with(&w.suffix)
                                        })
                                        .collect();
                                    assert_eq!(matching.len(), 1, "{w:?}: {matching:?}");
                                    wheels.insert(matching[0].2.to_string());
                                }
                                if let Some(x) = &env.extra_index {
                                    assert!(
                                        catalog.indexes.iter().any(|i| i.name == x.name
                                            && Mount::of(&i.name).unwrap().simple
                                                == format!("/whl/{}", x.pytorch_path)),
                                        "{x:?}"
                                    );
                                }
                                requirements.extend(env.requirements.iter().cloned());
                            }
                        }
                    }
                }
            }
        }
        // Every archive build is a candidate on one of these hosts: cpu x2,
        // cuda-13.3 x2 (two assets each), cuda-12.8 (two assets), vulkan x2, uv x2.
        assert_eq!(asked.len(), 12, "{asked:#?}");
        for (repo, tag, name) in &asked {
            assert!(published.contains(&(repo.as_str(), tag.as_str(), name.as_str())), "{repo}@{tag} has no {name}");
        }
        // vLLM's CUDA 12.9 build, on each architecture.
        assert_eq!(
            wheels,
            BTreeSet::from([
                "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_aarch64.whl".to_string(),
                "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl".to_string(),
            ])
        );
        assert!(requirements.len() >= 4, "{requirements:?}");
        for req in &requirements {
            assert!(served_by(req, index("pypi").dists.iter()), "PyPI has no {req}");
        }
    }

    #[test]
    fn serves_the_release_and_each_archive_matches_its_digest() {
        let server = FakeServer::start(embedded_catalog()).unwrap();
        let base = server.base_url();
        let release = release_json(&server, "ggml-org/llama.cpp", "b10850");
        assert_eq!(release["tag_name"], "b10850");
        assert_eq!(release["target_commitish"], "master");
        assert_eq!((release["draft"].as_bool(), release["prerelease"].as_bool()), (Some(false), Some(false)));
        assert_eq!(release["assets"].as_array().unwrap().len(), 10);

        let name = "llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz";
        let a = asset(&release, name);
        let id = a["id"].as_u64().unwrap();
        assert_eq!(a["url"], format!("{base}/repos/ggml-org/llama.cpp/releases/assets/{id}"));
        assert_eq!(a["browser_download_url"], format!("{base}/ggml-org/llama.cpp/releases/download/b10850/{name}"));
        assert_eq!((a["state"].as_str(), a["content_type"].as_str()), (Some("uploaded"), Some("application/gzip")));
        assert!(a["label"].is_null());

        // The download answers 302 to the archive's location, as github.com does.
        let url = a["browser_download_url"].as_str().unwrap();
        let hop = client(false).get(url).send().unwrap();
        assert_eq!(hop.status(), 302);
        assert_eq!(hop.headers()["location"], format!("{base}/github-production-release-asset/{id}/{name}"));
        assert_eq!(server.downloads(), 0);

        let resp = client(true).get(url).send().unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/octet-stream");
        let length: u64 = resp.headers()["content-length"].to_str().unwrap().parse().unwrap();
        let body = resp.bytes().unwrap();
        assert_eq!((length, body.len() as u64), (a["size"].as_u64().unwrap(), length));
        assert_eq!(format!("sha256:{}", hex::encode(Sha256::digest(&body))), a["digest"].as_str().unwrap());
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
        let Some(Backend::Cuda { sass, .. }) = cuda.and_then(|s| s.backend) else { panic!("no CUDA backend") };
        assert_eq!(sass, ["8.6", "8.9", "12.0a"]);

        // Every other asset, through the API's octet-stream route.
        for each in release["assets"].as_array().unwrap() {
            let api = client(true).get(each["url"].as_str().unwrap());
            let body = api.header("accept", "application/octet-stream").send().unwrap().bytes().unwrap();
            assert_eq!(format!("sha256:{}", hex::encode(Sha256::digest(&body))), each["digest"].as_str().unwrap());
        }
        assert_eq!(server.downloads(), 11);
        let meta = client(true).get(a["url"].as_str().unwrap()).send().unwrap().bytes().unwrap();
        let meta: Value = serde_json::from_slice(&meta).unwrap();
        assert_eq!(meta["digest"], a["digest"]);
        assert_eq!(server.downloads(), 11);

        let requests = server.requests();
        assert_eq!(requests[0], ("GET".to_string(), "/repos/ggml-org/llama.cpp/releases/tags/b10850".to_string()));
        assert_eq!(requests[1], ("GET".to_string(), format!("/ggml-org/llama.cpp/releases/download/b10850/{name}")));
        assert_eq!(requests.len(), 1 + 1 + 2 + 2 * 10 + 1);

        let uv = release_json(&server, "astral-sh/uv", "0.12.20");
        assert_eq!((uv["tag_name"].as_str(), uv["target_commitish"].as_str()), (Some("0.12.20"), Some("main")));
    }

    #[test]
    fn archives_and_ids_are_the_same_from_start_to_start() {
        let digests = |s: &FakeServer| -> Vec<(Value, Value, Value)> {
            [("ggml-org/llama.cpp", "b10850"), ("astral-sh/uv", "0.12.20"), ("vllm-project/vllm", "v0.20.1")]
                .iter()
                .flat_map(|(repo, tag)| {
                    let r = release_json(s, repo, tag);
                    let assets = r["assets"].as_array().unwrap().clone();
                    assets.into_iter().map(|a| (a["name"].clone(), a["id"].clone(), a["digest"].clone()))
                })
                .collect()
        };
        let (a, b) = (FakeServer::start(embedded_catalog()).unwrap(), FakeServer::start(embedded_catalog()).unwrap());
        assert_ne!(a.base_url(), b.base_url());
        assert_eq!(digests(&a), digests(&b));
        let url = |s: &FakeServer| {
            format!("{}/astral-sh/uv/releases/download/0.12.20/uv-aarch64-unknown-linux-gnu.tar.gz", s.base_url())
        };
        let body = |s: &FakeServer| client(true).get(url(s)).send().unwrap().bytes().unwrap();
        assert_eq!(body(&a), body(&b));
        assert_eq!((a.downloads(), b.downloads()), (1, 1));
        // The index pages differ only in the server's address.
        for project in ["torch", "sgl-kernel", "numpy"] {
            let page = |s: &FakeServer| {
                let text = client(true).get(format!("{}/{project}/", s.pypi_simple_url())).send().unwrap().text();
                text.unwrap().replace(&s.base_url(), "BASE")
            };
            assert_eq!(page(&a), page(&b), "{project}");
        }
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
        let missing = format!("{}/ggml-org/llama.cpp/releases/download/b10850/nope.tar.gz", server.base_url());
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
        assert!(FakeServer::start(&catalog).unwrap_err().to_string().contains("listed twice"));

        let refused = |change: &dyn Fn(&mut Catalog)| {
            let mut catalog = embedded_catalog().clone();
            change(&mut catalog);
            let err = FakeServer::start(&catalog).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            err.to_string()
        };
        let vllm = |c: &mut Catalog| -> usize { c.releases.iter().position(|r| r.engine == "vllm").unwrap() };
        let err = refused(&|c| {
            let i = vllm(c);
            c.releases[i].assets[0].wheel.as_mut().unwrap().filename = "vllm-0.20.1-py3-none-any.whl".into();
        });
        assert!(err.contains("wheel.filename is `vllm-0.20.1-py3-none-any.whl`"), "{err}");
        let err = refused(&|c| {
            let i = vllm(c);
            c.releases[i].assets[0].top = "vllm".into();
        });
        assert!(err.contains("a wheel asset has no top or files"), "{err}");
        let err = refused(&|c| c.indexes[0].name = "conda".into());
        assert!(err.contains("index `conda`: not `pypi` nor `pytorch-<variant>`"), "{err}");
        let err = refused(&|c| c.indexes.push(c.indexes[1].clone()));
        assert!(err.contains("index `pytorch-cu129` is listed twice"), "{err}");
        let err = refused(&|c| {
            let d = c.indexes[0].dists[0].clone();
            c.indexes[0].dists.push(d);
        });
        assert!(err.contains("is listed twice"), "{err}");
        let err = refused(&|c| c.indexes[0].dists[0].version = "0.20.2".into());
        assert!(err.contains("is not `vllm-0.20.2-<tags>.whl`"), "{err}");
    }

    /// GETs a project page of the JSON simple API, asserting a 200 in PEP 691's type.
    fn simple_json(url: &str) -> Value {
        let resp = client(false).get(url).header("accept", SIMPLE_JSON).send().unwrap();
        assert_eq!(resp.status(), 200, "{url}");
        assert_eq!(resp.headers()["content-type"], SIMPLE_JSON);
        serde_json::from_slice(&resp.bytes().unwrap()).unwrap()
    }

    /// The files of a wheel, by name.
    fn unzip(bytes: &[u8]) -> BTreeMap<String, String> {
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        (0..zip.len())
            .map(|i| {
                let mut f = zip.by_index(i).unwrap();
                let mut text = String::new();
                f.read_to_string(&mut text).unwrap();
                (f.name().unwrap().to_string(), text)
            })
            .collect()
    }

    /// Downloads every file of a project page, checking its sha256, size and
    /// core metadata; returns (filename, the Dist the wheel says it is).
    fn check_files(page: &Value) -> Vec<(String, Dist)> {
        let mut out = Vec::new();
        for f in page["files"].as_array().unwrap() {
            let (name, url) = (f["filename"].as_str().unwrap(), f["url"].as_str().unwrap());
            let body = client(false).get(url).send().unwrap();
            assert_eq!(body.status(), 200, "{url}");
            let body = body.bytes().unwrap();
            assert_eq!(hex::encode(Sha256::digest(&body)), f["hashes"]["sha256"].as_str().unwrap(), "{name}");
            assert_eq!(body.len() as u64, f["size"].as_u64().unwrap(), "{name}");
            assert_eq!(f["upload-time"], UPLOAD_TIME);
            assert_eq!(f["yanked"], false);
            let meta = client(false).get(format!("{url}.metadata")).send().unwrap().text().unwrap();
            assert_eq!(hex::encode(Sha256::digest(meta.as_bytes())), f["core-metadata"]["sha256"].as_str().unwrap());
            let files = unzip(&body);
            let (info, _) = files.keys().find(|k| k.ends_with(".dist-info/METADATA")).unwrap().split_once('/').unwrap();
            assert_eq!(files[&format!("{info}/METADATA")], meta, "{name}");
            let dist: Dist = serde_json::from_str(&files[&format!("{info}/{}", wheel::SIM_FILE)]).unwrap();
            assert_eq!(dist.filename, name);
            assert_eq!(f.get("requires-python").and_then(Value::as_str), dist.requires_python.as_deref(), "{name}");
            out.push((name.to_string(), dist));
        }
        out
    }

    #[test]
    fn serves_pypi_and_the_pytorch_index_in_the_json_simple_api() {
        let server = FakeServer::start(embedded_catalog()).unwrap();
        let (pypi, whl) = (server.pypi_simple_url(), server.pytorch_url());
        assert_eq!(
            (pypi.clone(), whl.clone()),
            (format!("{}/pypi/simple", server.base_url()), format!("{}/whl", server.base_url()))
        );

        // PyPI's torch: CUDA 13.0 and 12.8 builds, no +cu129.
        let torch = simple_json(&format!("{pypi}/torch/"));
        assert_eq!(torch["meta"]["api-version"], "1.1");
        assert_eq!(torch["name"], "torch");
        assert_eq!(torch["versions"], serde_json::json!(["2.10.0", "2.11.0"]));
        let files = check_files(&torch);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "torch-2.10.0-cp312-cp312-manylinux_2_28_aarch64.whl",
                "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                "torch-2.11.0-cp312-cp312-manylinux_2_28_aarch64.whl",
                "torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            ]
        );
        let toolkit = |d: &Dist| d.cuda.as_ref().unwrap().toolkit.clone();
        assert_eq!(toolkit(&files[3].1), "13.0");
        assert_eq!(toolkit(&files[1].1), "12.8");
        assert!(torch["files"][0]["url"].as_str().unwrap().starts_with(&format!("{}/pypi/files/", server.base_url())));
        assert_eq!(server.downloads(), 4);

        // The cu129 index: only torch, torchvision and torchaudio, +cu129.
        let cu129 = simple_json(&format!("{whl}/cu129/torch/"));
        assert_eq!(cu129["versions"], serde_json::json!(["2.11.0+cu129"]));
        let files = check_files(&cu129);
        assert_eq!(files.len(), 2);
        assert!(files.iter().all(|(_, d)| d.version == "2.11.0+cu129" && toolkit(d) == "12.9"));
        let url = cu129["files"][1]["url"].as_str().unwrap();
        assert_eq!(url, format!("{whl}/cu129/torch-2.11.0%2Bcu129-cp312-cp312-manylinux_2_28_x86_64.whl"));
        assert_eq!(server.downloads(), 6);
        // The same file with a literal `+`.
        let plus = client(false).get(url.replace("%2B", "+")).send().unwrap();
        assert_eq!(plus.status(), 200);
        assert_eq!(
            hex::encode(Sha256::digest(plus.bytes().unwrap())),
            cu129["files"][1]["hashes"]["sha256"].as_str().unwrap()
        );
        assert_eq!(server.downloads(), 7);
        for p in ["torchvision", "torchaudio"] {
            assert_eq!(simple_json(&format!("{whl}/cu129/{p}/"))["files"].as_array().unwrap().len(), 2);
        }
        let numpy = client(false).get(format!("{whl}/cu129/numpy/")).send().unwrap();
        assert_eq!(numpy.status(), 404);
        assert_eq!(numpy.text().unwrap(), NOT_FOUND_INDEX);
        assert_eq!(client(false).get(format!("{pypi}/no-such-project/")).send().unwrap().status(), 404);

        // numpy on PyPI: compressed tags, Requires-Python.
        let numpy = simple_json(&format!("{pypi}/numpy/"));
        assert_eq!(
            numpy["files"][1]["filename"],
            "numpy-2.3.4-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
        );
        assert_eq!(numpy["files"][1]["requires-python"], ">=3.11");

        // Names are normalized (PEP 503): 301 to the page, as PyPI answers.
        for asked in ["SGL_Kernel/", "sgl.kernel/", "sgl-kernel"] {
            let resp = client(false).get(format!("{pypi}/{asked}")).send().unwrap();
            assert_eq!(resp.status(), 301, "{asked}");
            assert_eq!(resp.headers()["location"], format!("{pypi}/sgl-kernel/"));
        }
        let kernel = simple_json(&format!("{pypi}/sgl-kernel/"));
        assert_eq!(kernel["versions"], serde_json::json!(["0.2.8", "0.3.16"]));
        let kernels = check_files(&kernel);
        let k = &kernels.iter().find(|(n, _)| n == "sgl_kernel-0.3.16-cp310-abi3-manylinux2014_aarch64.whl").unwrap().1;
        assert!(k.cuda.as_ref().is_some_and(|c| c.fails_at_import && c.ptx.is_empty()));
        // A .metadata is not a download.
        assert_eq!(server.downloads(), 7 + 4);
    }

    #[test]
    fn serves_the_vllm_release_wheels() {
        let server = FakeServer::start(embedded_catalog()).unwrap();
        let release = release_json(&server, "vllm-project/vllm", "v0.20.1");
        assert_eq!(release["tag_name"], "v0.20.1");
        let names: Vec<&str> =
            release["assets"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl",
                "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_aarch64.whl"
            ]
        );
        for (n, name) in names.iter().enumerate() {
            let a = asset(&release, name);
            assert_eq!(a["content_type"], "application/octet-stream");
            let url = a["browser_download_url"].as_str().unwrap();
            for url in [url.to_string(), url.replace('+', "%2B")] {
                let body = client(true).get(&url).send().unwrap();
                assert_eq!(body.status(), 200, "{url}");
                let body = body.bytes().unwrap();
                assert_eq!(format!("sha256:{}", hex::encode(Sha256::digest(&body))), a["digest"].as_str().unwrap());
                assert_eq!(body.len() as u64, a["size"].as_u64().unwrap());
                let files = unzip(&body);
                let meta = &files["vllm-0.20.1+cu129.dist-info/METADATA"];
                assert!(meta.contains("Version: 0.20.1+cu129\n") && meta.contains("Requires-Dist: torch==2.11.0\n"));
                let dist: Dist = serde_json::from_str(&files["vllm-0.20.1+cu129.dist-info/llmgw-sim.json"]).unwrap();
                assert_eq!(dist.cuda.unwrap().toolkit, "12.9");
                assert!(files.contains_key("vllm/__init__.py"));
            }
            assert_eq!(server.downloads(), 2 * (n + 1));
        }
    }
}
