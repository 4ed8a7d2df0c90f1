//! HTTP for real, through reqwest: small documents read whole, downloads
//! hashed while they stream, and archives downloaded, hashed and unpacked in
//! one pass. Both systems use it: the simulated machine downloads from the
//! fake publisher over loopback.
//!
//! Uses: `unpack`.

// This module writes the files it downloads (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use llmgw_core::archive::Limits;
use llmgw_core::release::hosts::without_credentials;
use llmgw_core::system::{Downloaded, FetchJob, Fetched, HttpResponse, SysError, Wait};

use crate::unpack;

/// An HTTP client: timeouts, redirects, a GitHub token for GitHub's API.
#[derive(Debug, Clone)]
pub struct Http {
    client: reqwest::blocking::Client,
    token: Option<String>,
    /// Whether downloads are synced to disk before they count (a real
    /// node); a simulation's temporary directory needs no durability.
    durable: bool,
    /// A limit on each request (connect, headers, each read of the body)
    /// tighter than the client's, in place of it.
    request_timeout: Option<Duration>,
    /// The client's limit on each read (and on the headers), in seconds:
    /// what a read that timed out waited.
    read_timeout_secs: u64,
    /// The shortest deadline of a whole body, in seconds
    /// ([`MIN_DEADLINE_SECS`] unless a test shortens it).
    min_deadline_secs: u64,
}

/// Bytes read from the network at a time, and handed to the unpacker.
pub const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks waiting between the reader and the unpacker, at most: with
/// [`CHUNK_BYTES`], 4 MiB in flight per archive.
pub const PIPE_CHUNKS: usize = 16;

/// The reading end of the pipe between a download and its unpacker.
struct Chunks {
    rx: std::sync::mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() {
            match self.rx.recv() {
                Ok(next) => (self.chunk, self.at) = (next, 0),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The most a document may be (release metadata, an index page), in bytes:
/// llama.cpp's release JSON with its 36 assets is about 60 KB.
pub const MAX_DOCUMENT_BYTES: u64 = 8 * 1024 * 1024;

/// The most a download nobody declared the size of may be, in bytes: the
/// unpacker's own bound ([`archive::Limits`]).
pub const MAX_UNDECLARED_BYTES: u64 = 16 * 1024 * 1024 * 1024;

/// A download's deadline: this long at least, in seconds ...
pub const MIN_DEADLINE_SECS: u64 = 300;
/// ... and as long as its size takes at this rate, in bytes per second (a
/// quarter of a megabyte: a node slower than that is better told so).
pub const MIN_BYTES_PER_SEC: u64 = 256 * 1024;

/// What a body may still be: bytes and time. Both are checked after every
/// read, however few bytes it gave: a body trickling one byte a second
/// meets its deadline as a fast one does.
struct Budget {
    limit: u64,
    why: &'static str,
    started: Instant,
    deadline_secs: u64,
    read: u64,
}

impl Budget {
    /// The budget of a body of `size` bytes, or of an undeclared one: at
    /// least `min_deadline_secs`, and as long as the size takes at [`MIN_BYTES_PER_SEC`].
    fn for_download(size: Option<u64>, min_deadline_secs: u64) -> Budget {
        let (limit, why) = match size {
            Some(n) => (n, "the size the publisher declared"),
            None => (MAX_UNDECLARED_BYTES, "the most an undeclared download may be"),
        };
        Budget::new(limit, why, min_deadline_secs.max(limit / MIN_BYTES_PER_SEC))
    }

    /// The most the next read may ask for of `wanted`: one byte past the
    /// limit at most, enough to know the body goes on.
    fn next_read(&self, wanted: usize) -> usize {
        let room = self.limit.saturating_sub(self.read).saturating_add(1);
        wanted.min(usize::try_from(room).unwrap_or(usize::MAX))
    }

    fn new(limit: u64, why: &'static str, deadline_secs: u64) -> Budget {
        Budget { limit, why, started: Instant::now(), deadline_secs, read: 0 }
    }

    /// Counts `n` more bytes read.
    fn spend(&mut self, n: usize) -> Result<(), SysError> {
        self.read += n as u64;
        if self.read > self.limit {
            return Err(SysError::TooLong { limit: self.limit, why: self.why });
        }
        if self.started.elapsed() > Duration::from_secs(self.deadline_secs) {
            let min_rate = self.limit / self.deadline_secs.max(1);
            return Err(SysError::TooSlow { secs: self.deadline_secs, min_rate });
        }
        Ok(())
    }
}

/// The REST API version asked of GitHub, so that a newer default changes
/// nothing. Source: GitHub docs, "API Versions" (`X-GitHub-Api-Version`;
/// 2022-11-28 is the version the release and asset shapes read here are of).
pub const GITHUB_API_VERSION: &str = "2022-11-28";

/// Where GitHub's API answers; its token goes there only.
const GITHUB_API_PREFIX: &str = "https://api.github.com/";

/// `User-Agent` sent with every request; GitHub refuses requests without one.
pub const USER_AGENT: &str = concat!("llmgw/", env!("CARGO_PKG_VERSION"));

impl Http {
    /// A client with `connect_timeout` and `read_timeout` (both seconds; the
    /// latter bounds each read of a blocking response, not the whole body), following up to 10 redirects; `token`, when given, is sent
    /// as a bearer token to GitHub's API (not to the redirected download host).
    ///
    /// # Errors
    /// [`SysError::Network`] when the TLS backend cannot be set up.
    pub fn new(connect_timeout: u64, read_timeout: u64, token: Option<String>) -> Result<Http, SysError> {
        Http::build(connect_timeout, read_timeout, token, true, true)
    }

    /// As [`Http::new`], ignoring proxy settings (`http_proxy`, `ALL_PROXY`),
    /// for the fake server on loopback, which no proxy can reach; not
    /// syncing writes, for a simulation's temporary directory; and trusting
    /// no certificate authority (the fake server speaks plain HTTP), so that
    /// a machine without CA certificates (a minimal container, a chroot)
    /// still simulates.
    ///
    /// # Errors
    /// As [`Http::new`].
    pub fn loopback(connect_timeout: u64, read_timeout: u64) -> Result<Http, SysError> {
        Http::build(connect_timeout, read_timeout, None, false, false)
    }

    fn build(
        connect_timeout: u64,
        read_timeout: u64,
        token: Option<String>,
        proxy: bool,
        durable: bool,
    ) -> Result<Http, SysError> {
        // rustls's cryptography: ring's, for the process (already there is fine).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = if proxy {
            reqwest::blocking::Client::builder()
        } else {
            // Loopback is plain HTTP: no roots to load, so none are needed on the machine.
            let tls = rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            reqwest::blocking::Client::builder().no_proxy().tls_backend_preconfigured(tls)
        };
        let client = builder
            .user_agent(USER_AGENT)
            .connect_timeout(Duration::from_secs(connect_timeout))
            .timeout(Duration::from_secs(read_timeout))
            .redirect(redirect_policy())
            .build()
            .map_err(|e| {
                SysError::Network(format!(
                    "cannot set up the HTTPS client ({}); a machine without CA certificates needs its \
                     ca-certificates package, or SSL_CERT_FILE naming a bundle",
                    with_sources(&e.without_url())
                ))
            })?;
        Ok(Http {
            client,
            token,
            durable,
            request_timeout: None,
            read_timeout_secs: read_timeout,
            min_deadline_secs: MIN_DEADLINE_SECS,
        })
    }

    /// The same client with the shortest deadline of a whole body
    /// `secs` seconds in place of [`MIN_DEADLINE_SECS`]: for a test of the
    /// deadline that cannot wait five minutes.
    pub fn with_min_deadline(mut self, secs: u64) -> Http {
        self.min_deadline_secs = secs;
        self
    }

    /// The same client with every request limited to `secs` seconds
    /// (connect, headers, and each read of a body).
    pub fn with_request_timeout(mut self, secs: u64) -> Http {
        self.request_timeout = Some(Duration::from_secs(secs));
        self.read_timeout_secs = secs;
        self
    }

    fn get(&self, url: &str, accept: &str) -> Result<reqwest::blocking::Response, SysError> {
        let mut req = self.client.get(url).header(reqwest::header::ACCEPT, accept);
        if url.starts_with(GITHUB_API_PREFIX) || accept.starts_with("application/vnd.github") {
            req = req.header("x-github-api-version", GITHUB_API_VERSION);
        }
        if let Some(t) = self.request_timeout {
            req = req.timeout(t);
        }
        if let Some(t) = &self.token
            && url.starts_with(GITHUB_API_PREFIX)
        {
            req = req.bearer_auth(t);
        }
        let resp = req.send().map_err(network)?;
        if resp.status().is_redirection()
            && let Some(to) = resp.headers().get(reqwest::header::LOCATION)
        {
            return Err(unfollowed(resp.url(), &String::from_utf8_lossy(to.as_bytes())));
        }
        Ok(resp)
    }

    /// See [`super::System::http_get`].
    pub fn http_get(&self, url: &str, accept: &str) -> Result<HttpResponse, SysError> {
        self.http_get_at_most(url, accept, (MAX_DOCUMENT_BYTES, "more than release metadata ever is"))
    }

    /// See [`super::System::http_get_at_most`].
    pub fn http_get_at_most(
        &self,
        url: &str,
        accept: &str,
        (limit, why): (u64, &'static str),
    ) -> Result<HttpResponse, SysError> {
        let resp = self.get(url, accept)?;
        let status = resp.status().as_u16();
        let wait = wait_of(resp.headers());
        let next = resp.headers().get("link").and_then(|v| v.to_str().ok()).and_then(next_link);
        let mut budget = Budget::new(limit, why, self.min_deadline_secs);
        let mut body = Vec::new();
        let mut resp = resp;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let want = budget.next_read(buf.len());
            let n = resp.read(&mut buf[..want]).map_err(|e| self.broke_off(&e))?;
            if n == 0 {
                break;
            }
            budget.spend(n)?;
            body.extend_from_slice(&buf[..n]);
        }
        Ok(HttpResponse { status, body, wait, next })
    }

    /// See [`super::System::download`].
    pub fn download(&self, url: &str, dest: &Path, size: Option<u64>) -> Result<Downloaded, SysError> {
        self.download_reporting(url, dest, size, &mut |_, _| {})
    }

    /// As [`Http::download`], calling `progress(bytes so far, total bytes
    /// when the server said)` as the body arrives.
    ///
    /// # Errors
    /// As [`super::System::download`].
    pub fn download_reporting(
        &self,
        url: &str,
        dest: &Path,
        size: Option<u64>,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<Downloaded, SysError> {
        let mut budget = Budget::for_download(size, self.min_deadline_secs);
        let mut resp = self.body(url)?;
        let total = resp.content_length();
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dest)
            .map_err(|e| SysError::io("create", dest, &e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut bytes = 0u64;
        loop {
            let want = budget.next_read(buf.len());
            let n = resp.read(&mut buf[..want]).map_err(|e| self.broke_off(&e))?;
            if n == 0 {
                break;
            }
            budget.spend(n)?;
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(|e| SysError::io("write", dest, &e))?;
            bytes += n as u64;
            progress(bytes, total);
        }
        if self.durable {
            out.sync_all().map_err(|e| SysError::io("sync", dest, &e))?;
        }
        Ok(Downloaded { bytes, sha256: hex::encode(hasher.finalize()) })
    }

    /// A successful response whose body is to be read, or the error status
    /// as [`SysError::Http`] with the server's message.
    fn body(&self, url: &str) -> Result<reqwest::blocking::Response, SysError> {
        let mut resp = self.get(url, "application/octet-stream")?;
        let status = resp.status();
        if !status.is_success() {
            let wait = wait_of(resp.headers());
            let mut body = Vec::new();
            let _ = resp.by_ref().take(64 * 1024).read_to_end(&mut body);
            return Err(SysError::Http {
                status: status.as_u16(),
                message: llmgw_core::release::github::github_message(&body),
                wait,
            });
        }
        Ok(resp)
    }

    /// See [`super::System::fetch_unpack`]: each job on a thread of its
    /// own, calling `progress(job, bytes so far, total bytes when the server
    /// said)` as its body arrives.
    pub fn fetch_unpack(
        &self,
        jobs: &[FetchJob],
        progress: &(dyn Fn(usize, u64, Option<u64>) + Sync),
    ) -> Vec<Result<Fetched, SysError>> {
        if let [job] = jobs {
            return vec![self.fetch_unpack_one(job, &|done, total| progress(0, done, total))];
        }
        std::thread::scope(|s| {
            let running: Vec<_> = jobs
                .iter()
                .enumerate()
                .map(|(i, job)| s.spawn(move || self.fetch_unpack_one(job, &|done, total| progress(i, done, total))))
                .collect();
            running.into_iter().map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        })
    }

    /// One archive in one pass, on two threads: this one reads the body and
    /// hashes it, the other inflates and unpacks what it is handed (at
    /// most [`PIPE_CHUNKS`] chunks of [`CHUNK_BYTES`] in between, so memory
    /// does not grow with the archive). When unpacking stops early, the
    /// rest of the body is still read and hashed.
    fn fetch_unpack_one(&self, job: &FetchJob, progress: &dyn Fn(u64, Option<u64>)) -> Result<Fetched, SysError> {
        let mut budget = Budget::for_download(job.size, self.min_deadline_secs);
        let mut resp = self.body(&job.url)?;
        let total = resp.content_length();
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(PIPE_CHUNKS);
            let into = job.into.as_path();
            let unpacker = s.spawn(move || {
                let chunks = Chunks { rx, chunk: Vec::new(), at: 0 };
                unpack::unpack_tar_gz(chunks, into, Limits::default()).map_err(|e| e.to_string())
            });
            let mut hasher = Sha256::new();
            let mut bytes = 0u64;
            let mut pipe = Some(tx);
            let read = loop {
                // A full chunk at a time (the body arrives in pieces of a
                // few KiB): one hand-over per CHUNK_BYTES; the budget (bytes
                // and deadline) checked after every read of a piece.
                let (buf, ended) = match self.next_chunk(&mut resp, &mut budget) {
                    Ok(chunk) => chunk,
                    Err(e) => break Err(e),
                };
                let n = buf.len();
                if n == 0 {
                    break Ok(());
                }
                hasher.update(&buf);
                bytes += n as u64;
                progress(bytes, total);
                // The unpacker hung up (done or refused): hash the rest alone.
                if pipe.as_ref().is_some_and(|p| p.send(buf).is_err()) {
                    pipe = None;
                }
                if ended {
                    break Ok(());
                }
            };
            drop(pipe);
            let unpacked = unpacker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            read?;
            Ok(Fetched { bytes, sha256: hex::encode(hasher.finalize()), unpacked })
        })
    }
}

impl Http {
    /// Up to [`CHUNK_BYTES`] of the body, read piece by piece with the
    /// budget checked after each; and whether the body ended.
    fn next_chunk(
        &self,
        resp: &mut reqwest::blocking::Response,
        budget: &mut Budget,
    ) -> Result<(Vec<u8>, bool), SysError> {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let mut filled = 0;
        while filled < CHUNK_BYTES {
            let want = budget.next_read(CHUNK_BYTES - filled);
            let n = resp.read(&mut buf[filled..filled + want]).map_err(|e| self.broke_off(&e))?;
            if n == 0 {
                buf.truncate(filled);
                return Ok((buf, true));
            }
            budget.spend(n)?;
            filled += n;
        }
        Ok((buf, false))
    }

    /// A body that stopped arriving: a read that timed out (no byte for the
    /// client's read limit) says so; else the connection broke.
    fn broke_off(&self, e: &std::io::Error) -> SysError {
        let timed_out = e.kind() == std::io::ErrorKind::TimedOut
            || std::iter::successors(e.get_ref().map(|s| s as &(dyn std::error::Error + 'static)), |s| s.source())
                .any(|s| s.downcast_ref::<reqwest::Error>().is_some_and(reqwest::Error::is_timeout));
        if timed_out {
            return SysError::Network(format!(
                "the download timed out: no byte arrived for {} s, the limit on each read",
                self.read_timeout_secs
            ));
        }
        SysError::Network(format!("the download broke off: {e}"))
    }
}

/// A redirect refused by [`llmgw_core::release::hosts::check_redirect`].
#[derive(Debug)]
struct RefusedRedirect {
    url: String,
    rule: String,
}

impl std::fmt::Display for RefusedRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused to follow the server to `{}`: {}", self.url, self.rule)
    }
}

impl std::error::Error for RefusedRedirect {}

/// A redirect the client gave back unfollowed (it follows http and https
/// only): refused, naming where it went and the rule.
fn unfollowed(from: &reqwest::Url, location: &str) -> SysError {
    match from.join(location) {
        Ok(to) => {
            let rule = llmgw_core::release::hosts::check_redirect(from, &to)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "a redirect the HTTP client does not follow".to_string());
            SysError::RefusedUrl { url: without_credentials(to.as_str()), rule }
        }
        Err(e) => SysError::RefusedUrl {
            url: without_credentials(location),
            rule: format!("a redirect to no valid URL ({e})"),
        },
    }
}

/// Up to 10 redirects, each where [`llmgw_core::release::hosts::check_redirect`] allows.
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > 10 {
            return attempt.error("too many redirects");
        }
        let checked = match attempt.previous().last() {
            Some(from) => llmgw_core::release::hosts::check_redirect(from, attempt.url()).map_err(|e| e.to_string()),
            None => Ok(()),
        };
        match checked {
            Ok(()) => attempt.follow(),
            Err(rule) => {
                let url = without_credentials(attempt.url().as_str());
                attempt.error(RefusedRedirect { url, rule })
            }
        }
    })
}

fn network(e: reqwest::Error) -> SysError {
    if e.is_redirect() {
        let refused = std::iter::successors(std::error::Error::source(&e), |s| s.source())
            .find_map(|s| s.downcast_ref::<RefusedRedirect>());
        return match refused {
            Some(r) => SysError::RefusedUrl { url: r.url.clone(), rule: r.rule.clone() },
            None => SysError::TooManyRedirects,
        };
    }
    if e.is_builder() {
        let e = e.without_url();
        let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string);
        return SysError::Request(why);
    }
    let host = e.url().and_then(|u| u.host_str()).map(str::to_string);
    let e = e.without_url();
    let msg = with_sources(&e);
    let cause = std::iter::successors(std::error::Error::source(&e), |s| s.source())
        .filter_map(|s| s.downcast_ref::<std::io::Error>())
        .fold(Cause::Other, |cause, io| cause.or(Cause::of(io)));
    let resolver = || fs::read_to_string("/etc/resolv.conf").ok();
    match unmendable(cause, host.as_deref().unwrap_or("the server"), resolver) {
        Some(why) => SysError::Unreachable(format!("{msg} ({why}; not asked again)")),
        None => SysError::Network(msg),
    }
}

/// An error and every source under it, as `outer: inner: innermost`.
fn with_sources(e: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(e), |s| s.source()).map(ToString::to_string).collect::<Vec<_>>().join(": ")
}

/// What a connection's failure was, as far as asking again is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// No route to the network or the host.
    NoRoute,
    /// The name does not exist (`Name or service not known`).
    NoSuchName,
    /// The name could not be resolved now (`Temporary failure in name resolution`).
    ResolverFailed,
    /// Anything else: a refused or reset connection, a timeout.
    Other,
}

impl Cause {
    fn of(e: &std::io::Error) -> Cause {
        use std::io::ErrorKind;
        if matches!(e.kind(), ErrorKind::NetworkUnreachable | ErrorKind::HostUnreachable) {
            return Cause::NoRoute;
        }
        // getaddrinfo's words (gai_strerror), as the standard library passes them on.
        let said = e.to_string();
        if said.contains("Name or service not known") || said.contains("No address associated with hostname") {
            Cause::NoSuchName
        } else if said.contains("failed to lookup address information") {
            Cause::ResolverFailed
        } else {
            Cause::Other
        }
    }

    fn or(self, other: Cause) -> Cause {
        if self == Cause::Other { other } else { self }
    }
}

/// Why no retry can mend a failure of `cause` reaching `host`, or `None`
/// when one may: no route; a name that does not exist; a name that cannot
/// be resolved on a machine whose `/etc/resolv.conf` (`resolv_conf` reads
/// it) names no nameserver.
fn unmendable(cause: Cause, host: &str, resolv_conf: impl FnOnce() -> Option<String>) -> Option<String> {
    match cause {
        Cause::NoRoute => Some(format!("this machine has no route to {host}")),
        Cause::NoSuchName => Some(format!("the name {host} does not exist")),
        Cause::ResolverFailed => {
            let configured =
                resolv_conf().is_some_and(|t| t.lines().any(|l| l.split_whitespace().next() == Some("nameserver")));
            (!configured).then(|| {
                format!(
                    "cannot resolve {host}: this machine has no resolver configured (no nameserver in /etc/resolv.conf)"
                )
            })
        }
        Cause::Other => None,
    }
}

/// What an answer's headers say about asking again.
fn wait_of(headers: &reqwest::header::HeaderMap) -> Wait {
    let number =
        |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    Wait {
        retry_after_secs: number("retry-after"),
        rate_limit_reset: (number("x-ratelimit-remaining") == Some(0)).then(|| number("x-ratelimit-reset")).flatten(),
    }
}

/// The `rel="next"` URL of a `Link` header: `<https://…&page=2>;
/// rel="next", <…>; rel="last"` gives `https://…&page=2`.
fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.trim().split_once(';')?;
        let is_next = params.split(';').any(|p| {
            p.trim().strip_prefix("rel=").is_some_and(|r| r.trim_matches('"').split(' ').any(|r| r == "next"))
        });
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_no_retry_can_mend_is_told_apart() {
        let io = |kind| std::io::Error::from(kind);
        let gai = |said: &str| std::io::Error::other(format!("failed to lookup address information: {said}"));
        assert_eq!(Cause::of(&io(std::io::ErrorKind::NetworkUnreachable)), Cause::NoRoute);
        assert_eq!(Cause::of(&io(std::io::ErrorKind::HostUnreachable)), Cause::NoRoute);
        assert_eq!(Cause::of(&io(std::io::ErrorKind::ConnectionRefused)), Cause::Other);
        assert_eq!(Cause::of(&gai("Name or service not known")), Cause::NoSuchName);
        assert_eq!(Cause::of(&gai("Temporary failure in name resolution")), Cause::ResolverFailed);
        let with = |conf: Option<&str>| {
            let conf = conf.map(str::to_string);
            unmendable(Cause::ResolverFailed, "api.github.com", move || conf)
        };
        // A resolver that failed now may answer later; none configured never will.
        assert_eq!(with(Some("search example.com\nnameserver 10.0.0.53\n")), None);
        let none = "cannot resolve api.github.com: this machine has no resolver configured (no nameserver in /etc/resolv.conf)";
        assert_eq!(with(Some("# nameserver 10.0.0.53\nsearch example.com\n")).as_deref(), Some(none));
        assert_eq!(with(None).as_deref(), Some(none));
        assert_eq!(
            unmendable(Cause::NoRoute, "api.github.com", || None).as_deref(),
            Some("this machine has no route to api.github.com")
        );
        assert_eq!(unmendable(Cause::Other, "api.github.com", || None), None);
    }

    #[test]
    fn a_closed_port_is_worth_asking_again() {
        let http = Http::loopback(2, 2).unwrap();
        // A port nobody listens on: refused, which a restarting server mends.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let refused = http.http_get(&format!("http://127.0.0.1:{port}/"), "*/*").unwrap_err();
        assert!(matches!(refused, SysError::Network(_)), "{refused:?}");
    }

    #[test]
    fn the_next_page_is_read_from_githubs_link_header() {
        let link = r#"<https://api.github.com/repositories/1/releases?per_page=2&page=2>; rel="next", <https://api.github.com/repositories/1/releases?per_page=2&page=9>; rel="last""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://api.github.com/repositories/1/releases?per_page=2&page=2")
        );
        let last_page = r#"<https://x/releases?page=1>; rel="first", <https://x/releases?page=8>; rel="prev""#;
        assert_eq!(next_link(last_page), None);
        assert_eq!(next_link("garbage"), None);
    }
}
