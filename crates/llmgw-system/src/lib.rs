//! llmgw's real effects: where the core's [`llmgw_core::system::System`] is
//! done on this machine.
//!
//! | module | what lives there |
//! | --- | --- |
//! | [`http`] | HTTP through reqwest: documents, downloads, archives unpacked as they stream |
//! | [`files`] | the local file system: atomic writes, renames, listings, free space |
//! | [`unpack`] | safe streaming unpack of archives and wheels, with hashing |
//! | [`process`] | processes with a time limit, their whole group killed at it |
//! | [`lock`] | the engines directory's lock |
//! | [`real`] | [`real::RealSystem`]: this machine |
//! | [`walk`] | `llmgw inspect`'s reading of paths, directories and archives |
//! | [`probe`] | discovery's probes of this machine: real, captured, replayed |
//! | [`offline`] | bundles made and imported, llmgw's own release archives |
//! | [`agent`] | this node as the agent's node, and the process around the loop |
//!
//! [`Local`] is what both machines are real about (HTTP and files): the
//! simulated machine of `llmgw-sim` stands on it too.
//!
//! Depends on `llmgw-model` and `llmgw-core`; never on the simulation.

#![deny(missing_docs)]

pub mod agent;
pub mod files;
pub mod http;
pub mod lock;
pub mod offline;
pub mod probe;
pub mod process;
pub mod real;
pub mod unpack;
pub mod walk;

use std::path::Path;

use llmgw_core::facts::FileFacts;
use llmgw_core::system::{DirEntry, Downloaded, Effects, FetchJob, Fetched, HttpResponse, SysError};

use files::Files;
use http::Http;

/// What every machine is real about: HTTP and the local file system (the
/// simulated machine downloads from the fake publisher over loopback and
/// installs into a real directory). The one implementation of the core's
/// [`Effects`].
#[derive(Debug, Clone)]
pub struct Local {
    /// The HTTP client.
    pub http: Http,
    /// The file system.
    pub files: Files,
}

impl Effects for Local {
    fn http_get(&self, url: &str, accept: &str) -> Result<HttpResponse, SysError> {
        self.http.http_get(url, accept)
    }

    fn http_get_at_most(&self, url: &str, accept: &str, limit: (u64, &'static str)) -> Result<HttpResponse, SysError> {
        self.http.http_get_at_most(url, accept, limit)
    }

    fn download(&self, url: &str, dest: &Path, size: Option<u64>) -> Result<Downloaded, SysError> {
        self.http.download(url, dest, size)
    }

    fn fetch_unpack(
        &self,
        jobs: &[FetchJob],
        progress: &(dyn Fn(usize, u64, Option<u64>) + Sync),
    ) -> Vec<Result<Fetched, SysError>> {
        self.http.fetch_unpack(jobs, progress)
    }

    /// The files' own ELF and fatbin headers, read by [`walk::inspect_path`].
    fn build_facts(&self, root: &Path) -> Result<Vec<FileFacts>, SysError> {
        let seen = walk::inspect_path(root, llmgw_core::archive::Limits::default()).map_err(|e| SysError::Io {
            op: "inspect",
            path: root.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(seen.files.iter().map(llmgw_core::inspect::FileReport::facts).collect())
    }

    fn merge_into(&self, from: &Path, into: &Path) -> Result<(), SysError> {
        self.files.merge_into(from, into)
    }

    fn sha256_file(&self, path: &Path) -> Result<Option<(u64, String)>, SysError> {
        self.files.sha256_file(path)
    }

    fn sha256_beneath(&self, root: &Path, rel: &str) -> Result<Option<(u64, String)>, SysError> {
        self.files.sha256_beneath(root, rel)
    }

    fn read_beneath(&self, root: &Path, rel: &str, max: (u64, &'static str)) -> Result<Option<Vec<u8>>, SysError> {
        self.files.read_beneath(root, rel, max)
    }

    fn check_beneath(&self, root: &Path, path: &Path) -> Result<(), SysError> {
        self.files.check_beneath(root, path)
    }

    fn check_not_link(&self, path: &Path) -> Result<(), SysError> {
        self.files.check_not_link(path)
    }

    fn create_dir_all(&self, path: &Path) -> Result<(), SysError> {
        self.files.create_dir_all(path)
    }

    fn remove(&self, path: &Path) -> Result<(), SysError> {
        self.files.remove(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<(), SysError> {
        self.files.rename(from, to)
    }

    fn write_atomic(&self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        self.files.write_atomic(path, contents)
    }

    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, SysError> {
        self.files.read(path)
    }

    fn list_dir(&self, path: &Path) -> Result<Option<Vec<DirEntry>>, SysError> {
        self.files.list_dir(path)
    }
}
