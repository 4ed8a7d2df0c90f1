//! Files for real, on the local file system: what both systems do with the
//! engines directory (the simulated machine installs into a real directory,
//! in a scratch directory of its own).

// This module is where files are touched for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io::Write;
use std::path::Path;

use super::{DirEntry, SysError, UnpackedFile};
use crate::archive::{self, Limits};

/// The local file system, as the installer writes it.
#[derive(Debug, Clone, Copy)]
pub struct Files {
    /// Whether writes are synced to disk before they count (a real node);
    /// a simulation's temporary directory needs no durability.
    durable: bool,
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

/// Free space, in bytes, of the file system holding `path`, asked of the
/// nearest directory that exists (the engines directory may not yet):
/// `statvfs`'s blocks available to an unprivileged user times its fragment size.
///
/// # Errors
/// [`SysError::Io`] when `statvfs` fails.
pub fn free_bytes(path: &Path) -> Result<u64, SysError> {
    let at = path.ancestors().find(|p| !p.as_os_str().is_empty() && p.exists()).unwrap_or(Path::new("/"));
    let st = rustix::fs::statvfs(at).map_err(|e| SysError::io("statvfs", at, &std::io::Error::from(e)))?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

impl Files {
    /// Files whose writes are synced before they count: a node's.
    pub fn durable() -> Files {
        Files { durable: true }
    }

    /// Files never synced: a simulation's scratch, gone with the process.
    pub fn scratch() -> Files {
        Files { durable: false }
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

    /// See [`super::System::list_dir`]: `None` when there is no directory
    /// there (nothing, or a file).
    pub fn list_dir(&self, path: &Path) -> Result<Option<Vec<DirEntry>>, SysError> {
        let rd = match fs::read_dir(path) {
            Ok(rd) => rd,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                return Ok(None);
            }
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

    fn local() -> Files {
        Files::durable()
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
