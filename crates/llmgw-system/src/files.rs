//! Files for real, on the local file system: what both systems do with the
//! engines directory (the simulated machine installs into a real directory,
//! in a scratch directory of its own).
//!
//! Uses: `unpack`.

// This module is where files are touched for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use llmgw_core::archive::Limits;
use llmgw_core::system::{DirEntry, MAX_WHOLE_READ, Refusal, SysError, UnpackedFile};

use crate::unpack;

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
    let tagged = tagged_prefix(prefix);
    let shm = Path::new("/dev/shm");
    let parent = if std::env::var_os("TMPDIR").is_none() && shm.is_dir() && writable(shm) {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    remove_left_by_the_dead(&parent, prefix);
    SCRATCH.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((parent.clone(), tagged.clone()));
    // Counted while it is made, so that the sweep waits for it: a directory
    // made as the process is being stopped is gone before the process ends.
    MAKING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let made = if STOPPING.load(std::sync::atomic::Ordering::SeqCst) {
        Err(std::io::Error::other("the process is stopping"))
    } else {
        tempfile::Builder::new().prefix(&tagged).tempdir_in(&parent).and_then(|dir| {
            if STOPPING.load(std::sync::atomic::Ordering::SeqCst) {
                drop(dir);
                Err(std::io::Error::other("the process is stopping"))
            } else {
                Ok(dir)
            }
        })
    };
    MAKING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    made
}

/// Scratch directories being made at this moment.
static MAKING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether a directory takes a new entry (tmpfs mounted read-only, or not ours).
fn writable(dir: &Path) -> bool {
    rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

/// Where this process makes scratch directories, and under which prefix.
static SCRATCH: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());

/// Set once the process is being stopped: no scratch directory outlives it.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Removes every scratch directory this process made that is still there
/// (those being made meanwhile remove themselves): what a signal handler
/// does before the process ends, as a `TempDir` is removed only when
/// dropped, which a signal does not do.
pub fn remove_scratch() {
    STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
    // Those being made finish (and remove themselves) first; at most 2 s.
    for _ in 0..200 {
        if MAKING.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let places = SCRATCH.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    for (parent, tagged) in places {
        // The simulations still running write into their scratch while it is
        // removed (a file made in a directory being emptied fails its
        // removal): swept again until none is left, at most 100 times.
        for _ in 0..100 {
            let Ok(listing) = fs::read_dir(&parent) else { break };
            let mine: Vec<PathBuf> = listing
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&tagged))
                .map(|e| e.path())
                .collect();
            if mine.is_empty() {
                break;
            }
            for dir in mine {
                let _ = fs::remove_dir_all(dir);
            }
        }
    }
}

/// `prefix` with this process's id: `llmgw-sim-4242-`, so that a later run
/// can tell a directory whose process is gone.
pub fn tagged_prefix(prefix: &str) -> String {
    format!("{prefix}{}-", std::process::id())
}

/// Removes the directories in `dir` named by [`tagged_prefix`] of `prefix`
/// whose process is gone (`/proc/<pid>` absent; or with no process id, an
/// older llmgw's): what an interrupted run left where it had no chance to
/// clean up. Nothing else is touched; on a system without `/proc` nothing
/// is removed.
pub fn remove_left_by_the_dead(dir: &Path, prefix: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(listing) = fs::read_dir(dir) else { return };
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else { continue };
        // A name without a process id is an older llmgw's: stale as well.
        let running = rest
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if running || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match fs::remove_dir_all(entry.path()) {
            Ok(()) => tracing::info!("removed `{}`, which an interrupted llmgw run left", entry.path().display()),
            Err(e) => tracing::warn!("could not remove `{}`, left by an interrupted run: {e}", entry.path().display()),
        }
    }
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

pub use llmgw_core::system::TEMPORARY_PREFIX;

/// Where a write to a path lands, as [`check_output`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The file replaced: the path itself, or the file a symbolic link there points to.
    pub target: PathBuf,
    /// The permission bits of a file that is there, kept; `None` for a new file.
    pub mode: Option<u32>,
}

/// Why a path cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// It names no file (`/`, `..`).
    #[error("names no file")]
    NoFile,
    /// Its directory does not exist, or is not a directory.
    #[error("is in `{0}`, which is not an existing directory")]
    NoDirectory(PathBuf),
    /// Something other than a regular file is there: it would be destroyed.
    #[error("is {0}; only a regular file is replaced")]
    NotRegular(&'static str),
    /// A symbolic link to nothing: what it points to cannot be told.
    #[error("is a symbolic link to nothing")]
    DanglingLink,
}

/// Where a write to `path` would land: the path itself or the regular file
/// a symbolic link there points to, with that file's permission bits.
///
/// # Errors
/// [`OutputError`]: a path whose directory does not exist, or where
/// something other than a regular file is.
pub fn check_output(path: &Path) -> Result<Output, OutputError> {
    use std::os::unix::fs::PermissionsExt;
    if path.file_name().is_none() {
        return Err(OutputError::NoFile);
    }
    let kind_of = kind_in_words;
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).map_err(|_| OutputError::DanglingLink)?,
        _ => path.to_path_buf(),
    };
    match fs::metadata(&target) {
        Ok(m) if m.is_file() => Ok(Output { target, mode: Some(m.permissions().mode() & 0o7777) }),
        Ok(m) => Err(OutputError::NotRegular(kind_of(m.file_type()))),
        Err(_) => {
            let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !dir.is_dir() {
                return Err(OutputError::NoDirectory(dir.to_path_buf()));
            }
            Ok(Output { target, mode: None })
        }
    }
}

/// Whether a file can be made in `dir` (where an output's temporary goes
/// before it is renamed over it): a read-only file system, a folder of
/// another user or a pseudo-file system says no. A temporary file is made
/// and removed.
///
/// # Errors
/// The operating system's words, without the temporary's name.
pub fn can_make_file_in(dir: &Path) -> Result<(), String> {
    tempfile::NamedTempFile::new_in(dir).map(drop).map_err(|e| {
        let said = e.to_string();
        said.rfind(" at path ").map_or(said.clone(), |i| said[..i].to_string())
    })
}

/// Why a file the user names could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Nothing there.
    #[error("it does not exist")]
    NotFound,
    /// Something other than a regular file: a directory, a FIFO, a device
    /// (`/dev/zero` would never end, a FIFO could wait for ever).
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// More bytes than such a file ever is.
    #[error("it is larger than {max} bytes, more than {what} ever is")]
    TooLarge {
        /// The most it may be, in bytes.
        max: u64,
        /// What it is meant to be: `a host description`.
        what: &'static str,
    },
    /// The operating system's error.
    #[error("{0}")]
    Io(String),
}

/// What something that is not a regular file is, in words for an error:
/// `a directory`, `a FIFO`, `a device`, `a socket`, `a special file`
/// (`a regular file` for one).
pub fn kind_in_words(t: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// The bytes of a file the user names (a host description, a wants file, a
/// scenario), refused unless it is a regular file (a link to one is fine)
/// of at most `max` bytes; `what` it is meant to be says why in the error.
/// The file is opened without blocking and checked after it is open, so a
/// FIFO never holds the caller and a file swapped for a device in between
/// is still refused; at most `max + 1` bytes are ever read.
///
/// # Errors
/// [`InputError`], saying what is wrong with the file.
pub fn read_input(path: &Path, max: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file =
        fs::OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32).open(path).map_err(
            |e| match e.kind() {
                std::io::ErrorKind::NotFound => InputError::NotFound,
                _ => InputError::Io(e.to_string()),
            },
        )?;
    let kind = file.metadata().map_err(|e| InputError::Io(e.to_string()))?.file_type();
    if !kind.is_file() {
        return Err(InputError::NotRegular(kind_in_words(kind)));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| InputError::Io(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(InputError::TooLarge { max, what });
    }
    Ok(bytes)
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
    /// [`unpack::unpack_wheel`]'s allowlist; the files placed, sorted by path.
    ///
    /// # Errors
    /// [`SysError::Archive`] naming the refused entry or the corruption.
    pub fn unpack_wheel(&self, bytes: &[u8], into: &Path) -> Result<Vec<UnpackedFile>, SysError> {
        unpack::unpack_wheel(std::io::Cursor::new(bytes), into, Limits::default())
            .map_err(|e| SysError::Archive(e.to_string()))
    }

    /// Unpacks the `.tar.gz` `bytes` into the existing directory `into`
    /// through [`unpack::unpack_tar_gz`]'s allowlist; the files placed.
    ///
    /// # Errors
    /// [`SysError::Archive`] naming the refused entry or the corruption.
    pub fn unpack_tar_gz(&self, bytes: &[u8], into: &Path) -> Result<Vec<UnpackedFile>, SysError> {
        unpack::unpack_tar_gz(bytes, into, Limits::default()).map_err(|e| SysError::Archive(e.to_string()))
    }

    /// See [`super::System::sha256_file`]: the file at `path` itself, a
    /// link there not followed, opened without blocking and read only once
    /// it is seen to be a regular file.
    pub fn sha256_file(&self, path: &Path) -> Result<Option<(u64, String)>, SysError> {
        match open_regular(path, false)? {
            Some(f) => llmgw_core::archive::sha256_reader(f).map(Some).map_err(|e| SysError::io("read", path, &e)),
            None => Ok(None),
        }
    }

    /// See [`super::System::sha256_beneath`].
    pub fn sha256_beneath(&self, root: &Path, rel: &str) -> Result<Option<(u64, String)>, SysError> {
        let path = root.join(rel);
        match open_beneath(root, rel)? {
            Some(f) => llmgw_core::archive::sha256_reader(f).map(Some).map_err(|e| SysError::io("read", &path, &e)),
            None => Ok(None),
        }
    }

    /// See [`super::System::read_beneath`].
    pub fn read_beneath(
        &self,
        root: &Path,
        rel: &str,
        (max, what): (u64, &'static str),
    ) -> Result<Option<Vec<u8>>, SysError> {
        let path = root.join(rel);
        match open_beneath(root, rel)? {
            Some(f) => read_capped(f, &path, max, what).map(Some),
            None => Ok(None),
        }
    }

    /// See [`llmgw_core::system::Effects::check_not_link`].
    pub fn check_not_link(&self, path: &Path) -> Result<(), SysError> {
        match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => Err(SysError::Refused {
                op: "write",
                path: path.to_path_buf(),
                why: Refusal::Link { at: path.to_path_buf() },
            }),
            _ => Ok(()),
        }
    }

    /// See [`llmgw_core::system::Effects::check_beneath`].
    pub fn check_beneath(&self, root: &Path, path: &Path) -> Result<(), SysError> {
        let outside = || SysError::Refused {
            op: "remove",
            path: path.to_path_buf(),
            why: Refusal::Outside { root: root.to_path_buf() },
        };
        let rel = path.strip_prefix(root).map_err(|_| outside())?;
        let parts: Vec<_> = rel.components().collect();
        if parts.is_empty() || !parts.iter().all(|c| matches!(c, std::path::Component::Normal(_))) {
            return Err(outside());
        }
        let mut at = root.to_path_buf();
        for part in &parts[..parts.len() - 1] {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(SysError::Refused {
                        op: "remove",
                        path: path.to_path_buf(),
                        why: Refusal::Link { at },
                    });
                }
                Ok(m) if !m.is_dir() => {
                    return Err(SysError::Refused {
                        op: "remove",
                        path: path.to_path_buf(),
                        why: Refusal::NotRegular(kind_in_words(m.file_type())),
                    });
                }
                // Nothing there: nothing below it to remove either.
                _ => {}
            }
        }
        Ok(())
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
    ///
    /// What is at `path` is never destroyed: a symbolic link is written
    /// through (the file it points to is replaced, the link stays), a file
    /// that exists keeps its permission bits, and anything else (a
    /// directory, a device, a FIFO, a link to nothing) is refused
    /// ([`check_output`]). The temporary is named `.llmgw-tmp-…`, so that
    /// one a kill left behind can be told apart and removed.
    pub fn write_atomic(&self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        use std::os::unix::fs::PermissionsExt;
        let Output { target, mode } = check_output(path).map_err(|why| SysError::Io {
            op: "write",
            path: path.to_path_buf(),
            message: why.to_string(),
        })?;
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMPORARY_PREFIX)
            .tempfile_in(dir)
            .map_err(|e| SysError::io("create a file in", dir, &bare(&e)))?;
        tmp.write_all(contents).map_err(|e| SysError::io("write", path, &bare(&e)))?;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(mode.unwrap_or(0o644)))
            .map_err(|e| SysError::io("set permissions of", path, &bare(&e)))?;
        if self.durable {
            tmp.as_file().sync_all().map_err(|e| SysError::io("sync", path, &bare(&e)))?;
        }
        tmp.persist(&target).map_err(|e| SysError::io("replace", path, &bare(&e.error)))?;
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

    /// See [`super::System::read`]: a regular file (a link to one
    /// followed), opened without blocking, at most [`MAX_WHOLE_READ`] bytes.
    pub fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, SysError> {
        match open_regular(path, true)? {
            Some(f) => read_capped(f, path, MAX_WHOLE_READ, "a file read whole").map(Some),
            None => Ok(None),
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
            let kind = e.file_type().map_err(|err| SysError::io("stat", &e.path(), &err))?;
            let name = e.file_name().to_string_lossy().into_owned();
            out.push(DirEntry { name, is_dir: kind.is_dir(), is_link: kind.is_symlink() });
        }
        out.sort();
        Ok(Some(out))
    }
}

/// Opens `path` for reading as what it is expected to be, a regular file:
/// without blocking (a FIFO never holds the caller), a symbolic link
/// followed only when `follow`, and checked after it is open, so a file
/// swapped for a device in between is still refused. `None`: nothing there.
///
/// # Errors
/// [`SysError::Refused`] naming what is there instead; [`SysError::Io`].
pub fn open_regular(path: &Path, follow: bool) -> Result<Option<fs::File>, SysError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC;
    if !follow {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let opened = fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            if !follow && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(SysError::Refused {
                    op: "read",
                    path: path.to_path_buf(),
                    why: Refusal::Link { at: path.to_path_buf() },
                });
            }
            return Err(SysError::io("open", path, &e));
        }
    };
    regular_or_refused(file, path).map(Some)
}

/// `file` when it is a regular file; else what it is, refused.
fn regular_or_refused(file: fs::File, path: &Path) -> Result<fs::File, SysError> {
    let kind = file.metadata().map_err(|e| SysError::io("stat", path, &e))?.file_type();
    if !kind.is_file() {
        return Err(SysError::Refused {
            op: "read",
            path: path.to_path_buf(),
            why: Refusal::NotRegular(kind_in_words(kind)),
        });
    }
    Ok(file)
}

/// Opens the regular file `root/rel` without following a symbolic link
/// anywhere below `root` (`root` itself may be one): each directory on the
/// way is opened from the one before it with `O_NOFOLLOW`, the file too.
/// `None`: nothing there.
///
/// # Errors
/// [`SysError::Refused`]: `rel` not plain components ([`Refusal::Outside`]),
/// a link on the way ([`Refusal::Link`] naming it), not a regular file.
pub fn open_beneath(root: &Path, rel: &str) -> Result<Option<fs::File>, SysError> {
    use rustix::fs::{Mode, OFlags};
    let path = root.join(rel);
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.iter().any(|c| c.is_empty() || *c == "." || *c == ".." || c.contains('\0')) {
        return Err(SysError::Refused { op: "read", path, why: Refusal::Outside { root: root.to_path_buf() } });
    }
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = match rustix::fs::open(root, dir_flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => return Ok(None),
        Err(e) => return Err(SysError::io("open", root, &std::io::Error::from(e))),
    };
    let mut at = root.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let last = i + 1 == parts.len();
        let flags = if last {
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC
        } else {
            dir_flags | OFlags::NOFOLLOW
        };
        match rustix::fs::openat(&dir, *part, flags, Mode::empty()) {
            Ok(fd) if last => return regular_or_refused(fs::File::from(fd), &path).map(Some),
            Ok(fd) => dir = fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => {
                let is = rustix::fs::statat(&dir, *part, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok();
                let kind = is.map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode));
                return Err(match kind {
                    Some(rustix::fs::FileType::Symlink) => {
                        SysError::Refused { op: "read", path, why: Refusal::Link { at } }
                    }
                    // A file where a directory is on the way: nothing at the path.
                    Some(_) if !last && e == rustix::io::Errno::NOTDIR => return Ok(None),
                    _ => SysError::io("open", &at, &std::io::Error::from(e)),
                });
            }
        }
    }
    unreachable!("a path has at least one component")
}

/// The bytes of the open regular file `file` (at `path`), at most `max`
/// of them: at most `max + 1` are read, and one more is [`Refusal::TooLarge`].
fn read_capped(file: fs::File, path: &Path, max: u64, what: &'static str) -> Result<Vec<u8>, SysError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| SysError::io("read", path, &e))?;
    if bytes.len() as u64 > max {
        return Err(SysError::Refused { op: "read", path: path.to_path_buf(), why: Refusal::TooLarge { max, what } });
    }
    Ok(bytes)
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
        assert_eq!(err, "write `DIR/nodir/s.json`: is in `DIR/nodir`, which is not an existing directory");
        let err = local().write_atomic(dir.path(), b"{}").unwrap_err().to_string();
        assert!(!err.replace(&dir.path().display().to_string(), "DIR").contains(".tmp"), "{err}");
    }
}
