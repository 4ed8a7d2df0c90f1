//! The fake publisher the simulation downloads from, built from the truth
//! ([`crate::truth`]): GitHub releases, PyPI and PyTorch's wheel index,
//! an offline site's mirror, and the faults a scenario asks for.
//!
//! [`FakeServer`] serves a catalog on loopback. Every archive is built once
//! per start by [`tarball::build`], every wheel by [`wheel::build`]. One
//! server stands for `https://api.github.com`, `https://github.com`,
//! `https://pypi.org` (with `files.pythonhosted.org`) and
//! `https://download.pytorch.org`. Each file serves one of them:
//!
//! | file | serves |
//! | --- | --- |
//! | `github.rs` | releases by tag, their assets, GitHub's 404s; python-build-standalone's CPython archives, uv's Python mirror |
//! | `pypi.rs` | PyPI's and PyTorch's indexes (PEP 691, 658, 700) |
//! | `mirror.rs` | an offline site's mirror directory |
//! | `faults.rs`, `broken.rs` | a scenario's faults; bodies that break off |
//! | `tarball.rs`, `wheel.rs` | the archives and wheels, byte for byte the same from run to run |
//!
//! Uses: `truth`. Below it: [`llmgw_core::recipe`] (version order),
//! [`llmgw_model::pep503`].

mod broken;
mod faults;
mod github;
pub mod mirror;
mod pypi;
pub mod tarball;
#[cfg(test)]
mod tests;
pub mod wheel;

use std::collections::BTreeSet;
use std::fmt;
use std::io;
use std::net::TcpListener;

use wiremock::{Mock, MockServer, Request};

use crate::truth::Catalog;
use github::api_json;

/// The repository whose releases hold the CPython archives uv installs
/// (`mocks/python/`): its GitHub release downloads are uv's Python mirror.
pub const PYTHON_BUILD_STANDALONE: &str = "astral-sh/python-build-standalone";

/// A fake release server on `127.0.0.1`, serving every release and every
/// package index of a catalog until dropped.
///
/// The routes are [`github`]'s (releases and their assets), [`pypi`]'s
/// (PyPI and PyTorch's indexes), [`faults`]' (a scenario's answers before
/// the truth's) and, once asked, [`mirror`]'s. Paths are compared percent-decoded, so `%2B` and `+` reach the same file.
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
    /// servable (`InvalidData`, [`Catalog::validate`]'s sentence), or two
    /// assets have the same id.
    pub fn start(catalog: &Catalog) -> io::Result<FakeServer> {
        FakeServer::start_on(catalog, 0)
    }

    /// As [`FakeServer::start`], on `127.0.0.1:port` (0: a random free port).
    ///
    /// # Errors
    /// As [`FakeServer::start`]; the port is taken (`AddrInUse`).
    pub fn start_on(catalog: &Catalog, port: u16) -> io::Result<FakeServer> {
        FakeServer::start_with(catalog, port, true)
    }

    /// As [`FakeServer::start`], keeping no record of the requests
    /// ([`FakeServer::requests`] is then empty): a fleet's thousands of
    /// simulations would keep some hundred kilobytes each.
    ///
    /// # Errors
    /// As [`FakeServer::start`].
    pub fn start_unrecorded(catalog: &Catalog) -> io::Result<FakeServer> {
        FakeServer::start_with(catalog, 0, false)
    }

    fn start_with(catalog: &Catalog, port: u16, record: bool) -> io::Result<FakeServer> {
        catalog.validate().map_err(invalid)?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        // Accepted connections inherit TCP_NODELAY on Linux: without it, a
        // response's headers and body wait on the client's delayed ACK, and
        // a simulation spends its time waiting rather than working.
        socket2::SockRef::from(&listener).set_tcp_nodelay(true)?;
        let builder = MockServer::builder().listener(listener);
        let builder = if record { builder } else { builder.disable_request_recording() };
        let server = runtime.block_on(builder.start());
        let base = server.uri();

        let github::Published { mut mocks, assets, mut download_paths } = github::routes(&base, catalog)?;
        let (fault_mocks, broken_host) = faults::routes(&base, &catalog.faults, &assets)?;
        mocks.extend(fault_mocks);
        for index in &catalog.indexes {
            pypi::routes(&base, index, &mut mocks, &mut download_paths);
        }
        mocks.extend(github::not_found_routes());
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

    /// The fake python-build-standalone downloads, standing for uv's Python
    /// install mirror (`https://releases.astral.sh/github/python-build-standalone/releases/download`,
    /// no trailing slash): `http://127.0.0.1:40123/astral-sh/python-build-standalone/releases/download`.
    /// An archive is `{python_mirror_url}/{tag}/{name}`, GitHub's release
    /// download of the truth's `mocks/python/` release.
    pub fn python_mirror_url(&self) -> String {
        format!("{}/{PYTHON_BUILD_STANDALONE}/releases/download", self.base_url())
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

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// GET, or HEAD: the same headers without the body, as GitHub's download
/// hosts answer it.
fn get_or_head(req: &Request) -> bool {
    req.method == wiremock::http::Method::GET || req.method == wiremock::http::Method::HEAD
}
