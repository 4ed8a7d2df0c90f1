//! An offline site's mirror served by the fake server: every file of a
//! mirror directory at `/mirror/<path>` (so `{base}/mirror` is the
//! `offline_base` of offline wants), as a plain static HTTP server would.

// The mirror is a directory on disk, read once when it is mounted.
#![allow(clippy::disallowed_methods)]

use std::io;
use std::path::{Path, PathBuf};

use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

/// The path under which a mirror is served: `/mirror`.
pub const MIRROR_PATH: &str = "/mirror";

/// A route per regular file of the directory `dir` (recursively): `GET
/// /mirror/<path relative to dir>` answers the file's bytes, `HEAD` the
/// same headers without them. Symbolic links and other special files are
/// not served (a warning names each). Returns the routes and the paths
/// served, sorted.
///
/// # Errors
/// The directory cannot be listed or a file read; a name is not UTF-8.
pub fn routes(dir: &Path) -> io::Result<(Vec<Mock>, Vec<String>)> {
    let mut files = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for entry in std::fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let rel = rel.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_dir() {
                todo.push(rel);
            } else if !kind.is_file() {
                // A static server of the mirror serves its regular files only.
                let what = if kind.is_symlink() { "a symbolic link" } else { "not a regular file" };
                tracing::warn!("mirror: `{}` is {what}; not served", rel.display());
            } else {
                let name = rel.to_str().ok_or_else(|| io::Error::other(format!("`{}` is not UTF-8", rel.display())))?;
                files.push(name.replace('\\', "/"));
            }
        }
    }
    files.sort();
    let mut mocks = Vec::new();
    for f in &files {
        let body = std::fs::read(dir.join(f))?;
        mocks.push(
            Mock::given(method("HEAD"))
                .and(path(format!("{MIRROR_PATH}/{f}")))
                .respond_with(ResponseTemplate::new(200).set_body_raw(body.clone(), "application/octet-stream")),
        );
        mocks.push(
            Mock::given(method("GET"))
                .and(path(format!("{MIRROR_PATH}/{f}")))
                .respond_with(ResponseTemplate::new(200).set_body_raw(body, "application/octet-stream")),
        );
    }
    Ok((mocks, files))
}
