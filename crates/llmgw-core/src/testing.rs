//! What the core's unit tests share: machines with no effects at all.
//!
//! Uses: `facts` and `system`.

use std::path::Path;

use crate::facts::FileFacts;
use crate::system::{DirEntry, Downloaded, Effects, FetchJob, Fetched, HttpResponse, SysError};

/// Effects that a test's machine never reaches: each one panics, naming
/// itself, so a test that reaches one says so.
pub struct NoEffects;

impl Effects for NoEffects {
    fn http_get(&self, url: &str, _: &str) -> Result<HttpResponse, SysError> {
        panic!("no HTTP here: GET {url}")
    }
    fn http_get_at_most(&self, url: &str, _: &str, _: (u64, &'static str)) -> Result<HttpResponse, SysError> {
        panic!("no HTTP here: GET {url}")
    }
    fn download(&self, url: &str, _: &Path, _: Option<u64>) -> Result<Downloaded, SysError> {
        panic!("no HTTP here: download {url}")
    }
    fn fetch_unpack(
        &self,
        _: &[FetchJob],
        _: &(dyn Fn(usize, u64, Option<u64>) + Sync),
    ) -> Vec<Result<Fetched, SysError>> {
        panic!("no HTTP here: fetch_unpack")
    }
    fn build_facts(&self, root: &Path) -> Result<Vec<FileFacts>, SysError> {
        panic!("no files here: build_facts {}", root.display())
    }
    fn merge_into(&self, from: &Path, _: &Path) -> Result<(), SysError> {
        panic!("no files here: merge_into {}", from.display())
    }
    fn sha256_file(&self, path: &Path) -> Result<Option<(u64, String)>, SysError> {
        panic!("no files here: sha256 {}", path.display())
    }
    fn sha256_beneath(&self, root: &Path, rel: &str) -> Result<Option<(u64, String)>, SysError> {
        panic!("no files here: sha256 {}/{rel}", root.display())
    }
    fn read_beneath(&self, root: &Path, rel: &str, _: (u64, &'static str)) -> Result<Option<Vec<u8>>, SysError> {
        panic!("no files here: read {}/{rel}", root.display())
    }
    fn check_beneath(&self, _: &Path, path: &Path) -> Result<(), SysError> {
        panic!("no files here: check {}", path.display())
    }
    fn check_not_link(&self, path: &Path) -> Result<(), SysError> {
        panic!("no files here: check {}", path.display())
    }
    fn create_dir_all(&self, path: &Path) -> Result<(), SysError> {
        panic!("no files here: create {}", path.display())
    }
    fn remove(&self, path: &Path) -> Result<(), SysError> {
        panic!("no files here: remove {}", path.display())
    }
    fn rename(&self, from: &Path, _: &Path) -> Result<(), SysError> {
        panic!("no files here: rename {}", from.display())
    }
    fn write_atomic(&self, path: &Path, _: &[u8]) -> Result<(), SysError> {
        panic!("no files here: write {}", path.display())
    }
    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, SysError> {
        panic!("no files here: read {}", path.display())
    }
    fn list_dir(&self, path: &Path) -> Result<Option<Vec<DirEntry>>, SysError> {
        panic!("no files here: list {}", path.display())
    }
}
