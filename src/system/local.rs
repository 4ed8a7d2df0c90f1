//! The effects both systems do for real: HTTP through reqwest, files on the
//! local file system, safe unpacking. The simulated machine is real about
//! these (it downloads from the fake server over loopback and unpacks into a
//! real directory) and simulated about everything the host description
//! decides (processes, packages, free disk, clock).

// This module is where files are touched for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{DirEntry, Downloaded, FetchJob, Fetched, HttpResponse, SysError, UnpackedFile};
use crate::archive::{self, Limits};

/// An HTTP client and the local file system.
#[derive(Debug, Clone)]
pub struct Local {
    client: reqwest::blocking::Client,
    token: Option<String>,
    /// Whether writes are synced to disk before they count (a real node);
    /// a simulation's temporary directory needs no durability.
    durable: bool,
    /// A limit on each request (connect, headers, each read of the body)
    /// tighter than the client's, in place of it.
    request_timeout: Option<Duration>,
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

/// A new temporary directory named `<prefix><random>` for a simulation's
/// scratch (its engines directory, an offline bundle and mirror), removed
/// when dropped: under `TMPDIR` when that is set; else in memory, under
/// `/dev/shm`, when that is a directory one may write into; else under the
/// system's temporary directory.
///
/// Nothing in it outlives the process, and a simulation creates a few
/// hundred small files and directories: on a disk file system each creation
/// costs far more than on tmpfs (on ext4 without a journal, 2 shared cores,
/// `perf record` of `llmgw simulate` showed 40% of the time in ext4's inode
/// allocation: `ext4_create`/`ext4_mkdir` -> `recently_deleted`; the whole
/// matrix took 6.2 s with `/tmp` and 1.0 s with `/dev/shm`).
///
/// # Errors
/// The directory cannot be created anywhere.
pub fn scratch_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    let shm = Path::new("/dev/shm");
    if std::env::var_os("TMPDIR").is_none()
        && shm.is_dir()
        && let Ok(dir) = builder.tempdir_in(shm)
    {
        return Ok(dir);
    }
    builder.tempdir()
}

/// `User-Agent` sent with every request; GitHub refuses requests without one.
pub const USER_AGENT: &str = concat!("llmgw/", env!("CARGO_PKG_VERSION"));

impl Local {
    /// A client with `connect_timeout` and `read_timeout` (both seconds; the
    /// latter bounds each read of a blocking response, not the whole body), following up to 10 redirects; `token`, when given, is sent
    /// as a bearer token to GitHub's API (not to the redirected download host).
    ///
    /// # Errors
    /// [`SysError::Network`] when the TLS backend cannot be set up.
    pub fn new(connect_timeout: u64, read_timeout: u64, token: Option<String>) -> Result<Local, SysError> {
        Local::build(connect_timeout, read_timeout, token, true, true)
    }

    /// As [`Local::new`], ignoring proxy settings (`http_proxy`, `ALL_PROXY`),
    /// for the fake server on loopback, which no proxy can reach; and not
    /// syncing writes, for a simulation's temporary directory.
    ///
    /// # Errors
    /// As [`Local::new`].
    pub fn loopback(connect_timeout: u64, read_timeout: u64) -> Result<Local, SysError> {
        Local::build(connect_timeout, read_timeout, None, false, false)
    }

    fn build(
        connect_timeout: u64,
        read_timeout: u64,
        token: Option<String>,
        proxy: bool,
        durable: bool,
    ) -> Result<Local, SysError> {
        let builder =
            if proxy { reqwest::blocking::Client::builder() } else { reqwest::blocking::Client::builder().no_proxy() };
        let client = builder
            .user_agent(USER_AGENT)
            .connect_timeout(Duration::from_secs(connect_timeout))
            .timeout(Duration::from_secs(read_timeout))
            .redirect(reqwest::redirect::Policy::limited(10))
            .build()
            .map_err(|e| SysError::Network(e.without_url().to_string()))?;
        Ok(Local { client, token, durable, request_timeout: None })
    }

    /// The same client with every request limited to `secs` seconds
    /// (connect, headers, and each read of a body).
    pub fn with_request_timeout(mut self, secs: u64) -> Local {
        self.request_timeout = Some(Duration::from_secs(secs));
        self
    }

    fn get(&self, url: &str, accept: &str) -> Result<reqwest::blocking::Response, SysError> {
        let mut req = self.client.get(url).header(reqwest::header::ACCEPT, accept);
        if let Some(t) = self.request_timeout {
            req = req.timeout(t);
        }
        if let Some(t) = &self.token
            && url.starts_with("https://api.github.com/")
        {
            req = req.bearer_auth(t);
        }
        req.send().map_err(network)
    }

    /// See [`super::System::http_get`].
    pub fn http_get(&self, url: &str, accept: &str) -> Result<HttpResponse, SysError> {
        let resp = self.get(url, accept)?;
        let status = resp.status().as_u16();
        let wait = wait_of(resp.headers());
        let body = resp.bytes().map_err(network)?.to_vec();
        Ok(HttpResponse { status, body, wait })
    }

    /// See [`super::System::download`].
    pub fn download(&self, url: &str, dest: &Path) -> Result<Downloaded, SysError> {
        self.download_reporting(url, dest, &mut |_, _| {})
    }

    /// As [`Local::download`], calling `progress(bytes so far, total bytes
    /// when the server said)` as the body arrives.
    ///
    /// # Errors
    /// As [`super::System::download`].
    pub fn download_reporting(
        &self,
        url: &str,
        dest: &Path,
        progress: &mut dyn FnMut(u64, Option<u64>),
    ) -> Result<Downloaded, SysError> {
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
            let n = resp.read(&mut buf).map_err(|e| SysError::Network(format!("the download broke off: {e}")))?;
            if n == 0 {
                break;
            }
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
            return Err(SysError::Http { status: status.as_u16(), message: github_message(&body), wait });
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
        let mut resp = self.body(&job.url)?;
        let total = resp.content_length();
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(PIPE_CHUNKS);
            let into = job.into.as_path();
            let unpacker = s.spawn(move || {
                let chunks = Chunks { rx, chunk: Vec::new(), at: 0 };
                archive::unpack_tar_gz(chunks, into, Limits::default()).map_err(|e| e.to_string())
            });
            let mut hasher = Sha256::new();
            let mut bytes = 0u64;
            let mut pipe = Some(tx);
            let read = loop {
                // A full chunk at a time (the body arrives in pieces of a
                // few KiB): one allocation and one hand-over per CHUNK_BYTES,
                // not one zeroed CHUNK_BYTES buffer per piece.
                let mut buf = Vec::with_capacity(CHUNK_BYTES);
                let n = match resp.by_ref().take(CHUNK_BYTES as u64).read_to_end(&mut buf) {
                    Ok(0) => break Ok(()),
                    Ok(n) => n,
                    Err(e) => break Err(SysError::Network(format!("the download broke off: {e}"))),
                };
                hasher.update(&buf);
                bytes += n as u64;
                progress(bytes, total);
                // The unpacker hung up (done or refused): hash the rest alone.
                if pipe.as_ref().is_some_and(|p| p.send(buf).is_err()) {
                    pipe = None;
                }
            };
            drop(pipe);
            let unpacked = unpacker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            read?;
            Ok(Fetched { bytes, sha256: hex::encode(hasher.finalize()), unpacked })
        })
    }

    /// See [`super::System::merge_into`].
    pub fn merge_into(&self, from: &Path, into: &Path) -> Result<(), SysError> {
        let empty = fs::read_dir(into).map(|mut d| d.next().is_none());
        match empty {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return self.rename(from, into),
            Ok(true) => {
                fs::remove_dir(into).map_err(|e| SysError::io("remove", into, &e))?;
                return self.rename(from, into);
            }
            _ => {}
        }
        let mut entries: Vec<_> = fs::read_dir(from)
            .map_err(|e| SysError::io("read", from, &e))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(|e| SysError::io("read", from, &e))?;
        entries.sort();
        for name in entries {
            let (src, dst) = (from.join(&name), into.join(&name));
            let src_dir = fs::symlink_metadata(&src).is_ok_and(|m| m.is_dir());
            match fs::symlink_metadata(&dst) {
                // Both real directories (never a link followed): merge inside.
                Ok(m) if m.is_dir() && src_dir => self.merge_into(&src, &dst)?,
                Ok(m) if m.is_dir() => self.remove(&dst)?,
                Ok(_) => fs::remove_file(&dst).map_err(|e| SysError::io("replace", &dst, &e))?,
                Err(_) => {}
            }
            if fs::symlink_metadata(&src).is_ok() {
                self.rename(&src, &dst)?;
            }
        }
        self.remove(from)
    }

    /// Unpacks the wheel `bytes` into the existing directory `into` through
    /// [`archive::unpack_wheel`]'s allowlist; the files placed, sorted by path.
    ///
    /// # Errors
    /// [`SysError::Archive`] naming the refused entry or the corruption.
    pub fn unpack_wheel(&self, bytes: &[u8], into: &Path) -> Result<Vec<UnpackedFile>, SysError> {
        archive::unpack_wheel(std::io::Cursor::new(bytes), into, Limits::default())
            .map_err(|e| SysError::Archive(e.to_string()))
    }

    /// See [`super::System::sha256_file`].
    pub fn sha256_file(&self, path: &Path) -> Result<Option<(u64, String)>, SysError> {
        match fs::File::open(path) {
            Ok(f) => archive::sha256_reader(f).map(Some).map_err(|e| SysError::io("read", path, &e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SysError::io("open", path, &e)),
        }
    }

    /// See [`super::System::create_dir_all`].
    pub fn create_dir_all(&self, path: &Path) -> Result<(), SysError> {
        fs::create_dir_all(path).map_err(|e| SysError::io("create", path, &e))
    }

    /// See [`super::System::remove`].
    pub fn remove(&self, path: &Path) -> Result<(), SysError> {
        let result = match fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(path),
            Ok(_) => fs::remove_file(path),
            Err(e) => Err(e),
        };
        match result {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SysError::io("remove", path, &e)),
            _ => Ok(()),
        }
    }

    /// See [`super::System::rename`].
    pub fn rename(&self, from: &Path, to: &Path) -> Result<(), SysError> {
        fs::rename(from, to).map_err(|e| SysError::io("rename to", to, &e))
    }

    /// See [`super::System::write_atomic`]. The file is readable by all
    /// (0644: a status file is read by a control plane or an operator; a
    /// temporary file would otherwise keep its 0600), and an error names
    /// `path`, never the temporary beside it.
    pub fn write_atomic(&self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        use std::os::unix::fs::PermissionsExt;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut tmp =
            tempfile::NamedTempFile::new_in(dir).map_err(|e| SysError::io("create a file in", dir, &bare(&e)))?;
        tmp.write_all(contents).map_err(|e| SysError::io("write", path, &bare(&e)))?;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))
            .map_err(|e| SysError::io("set permissions of", path, &bare(&e)))?;
        if self.durable {
            tmp.as_file().sync_all().map_err(|e| SysError::io("sync", path, &bare(&e)))?;
        }
        tmp.persist(path).map_err(|e| SysError::io("replace", path, &bare(&e.error)))?;
        Ok(())
    }

    /// Writes a file whole with permission bits `mode`, creating its
    /// directory; what the simulated uv writes into an environment.
    ///
    /// # Errors
    /// [`SysError::Io`] naming the path.
    pub fn write_file(&self, path: &Path, contents: &[u8], mode: u32) -> Result<(), SysError> {
        use std::os::unix::fs::PermissionsExt;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| SysError::io("create", dir, &e))?;
        }
        fs::write(path, contents).map_err(|e| SysError::io("write", path, &e))?;
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(|e| SysError::io("set permissions of", path, &e))
    }

    /// Bytes of all regular files under `path` (not following links); 0
    /// when there is nothing there. What the simulated machine has used of
    /// its disk.
    pub fn bytes_under(&self, path: &Path) -> u64 {
        let Ok(meta) = fs::symlink_metadata(path) else { return 0 };
        if meta.is_file() {
            return meta.len();
        }
        if !meta.is_dir() {
            return 0;
        }
        fs::read_dir(path).map(|rd| rd.flatten().map(|e| self.bytes_under(&e.path())).sum()).unwrap_or(0)
    }

    /// See [`super::System::read`].
    pub fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, SysError> {
        match fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SysError::io("read", path, &e)),
        }
    }

    /// See [`super::System::list_dir`].
    pub fn list_dir(&self, path: &Path) -> Result<Option<Vec<DirEntry>>, SysError> {
        let rd = match fs::read_dir(path) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(SysError::io("list", path, &e)),
        };
        let mut out = Vec::new();
        for e in rd {
            let e = e.map_err(|e| SysError::io("list", path, &e))?;
            let is_dir = e.file_type().map_err(|err| SysError::io("stat", &e.path(), &err))?.is_dir();
            out.push(DirEntry { name: e.file_name().to_string_lossy().into_owned(), is_dir });
        }
        out.sort();
        Ok(Some(out))
    }
}

fn network(e: reqwest::Error) -> SysError {
    if e.is_redirect() {
        return SysError::TooManyRedirects;
    }
    let e = e.without_url();
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    SysError::Network(msg)
}

/// What an answer's headers say about asking again.
fn wait_of(headers: &reqwest::header::HeaderMap) -> super::Wait {
    let number =
        |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    super::Wait {
        retry_after_secs: number("retry-after"),
        rate_limit_reset: (number("x-ratelimit-remaining") == Some(0)).then(|| number("x-ratelimit-reset")).flatten(),
    }
}

/// GitHub's error bodies are `{"message": "..."}`; anything else says nothing.
pub(crate) fn github_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Msg {
        message: String,
    }
    serde_json::from_slice::<Msg>(body).map(|m| m.message).unwrap_or_default()
}

/// An I/O error without the path tempfile adds to it (`… at path
/// "/dir/.tmpXXXXXX"`: a temporary's name means nothing to whoever reads the
/// message).
fn bare(e: &std::io::Error) -> std::io::Error {
    if let Some(code) = e.raw_os_error() {
        return std::io::Error::from_raw_os_error(code);
    }
    let said = e.to_string();
    match said.rfind(" at path ") {
        Some(i) => std::io::Error::new(e.kind(), &said[..i]),
        None => std::io::Error::new(e.kind(), said),
    }
}

#[cfg(test)]
mod write_atomic_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn local() -> Local {
        Local::new(1, 1, None).unwrap()
    }

    #[test]
    fn a_file_written_atomically_is_readable_by_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.json");
        local().write_atomic(&path, b"{}\n").unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
    }

    #[test]
    fn a_failed_write_names_the_file_not_its_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let err = local().write_atomic(&dir.path().join("nodir/s.json"), b"{}").unwrap_err().to_string();
        let err = err.replace(&dir.path().display().to_string(), "DIR");
        assert_eq!(err, "create a file in `DIR/nodir`: No such file or directory (os error 2)");
        let err = local().write_atomic(dir.path(), b"{}").unwrap_err().to_string();
        assert!(!err.replace(&dir.path().display().to_string(), "DIR").contains(".tmp"), "{err}");
    }
}
