//! The engines directory's lock: two installers (a `provision` by hand, the
//! agent's pass) take turns on one engines directory.
//!
//! Uses: `files`.

// This module opens the lock file for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use std::os::unix::fs::OpenOptionsExt;

use llmgw_core::system::{Refusal, SysError};

/// An exclusive lock on an engines directory, held while a convergence runs
/// there: a second installer waits for the first, then finds its work done.
/// Released when dropped (or when the process ends).
#[derive(Debug)]
pub struct EnginesLock {
    _file: std::fs::File,
}

impl EnginesLock {
    /// Takes the lock `<dir>/.lock`, creating the directory; waits while
    /// another process holds it.
    ///
    /// # Errors
    /// [`SysError::Io`] when the directory or the lock file cannot be made;
    /// [`SysError::Refused`] when `.lock` is there and is not a regular
    /// file (a FIFO, a device, a symbolic link), said at once.
    pub fn acquire(dir: &Path) -> Result<EnginesLock, SysError> {
        // Something at the path that is not a directory (a file, a device, a
        // link to nothing) is said as that, not as "File exists".
        if std::fs::symlink_metadata(dir).is_ok() && !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
            let is = std::fs::metadata(dir)
                .map_or("a symbolic link to nothing", |m| crate::files::kind_in_words(m.file_type()));
            return Err(SysError::Io {
                op: "use",
                path: dir.to_path_buf(),
                message: format!("it is {is}, not a directory: give a directory, or a path where one can be made"),
            });
        }
        std::fs::create_dir_all(dir).map_err(|e| SysError::io("create", dir, &e))?;
        let path = dir.join(".lock");
        // Opened as what it must be, a regular file: not through a link,
        // without blocking (a FIFO there would hold the opener for ever),
        // and refused as what it is otherwise, before it is locked.
        let refused = |why| SysError::Refused { op: "lock", path: path.clone(), why };
        let what_is_there = || match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => Some(refused(Refusal::Link { at: path.clone() })),
            Ok(m) if !m.is_file() => Some(refused(Refusal::NotRegular(crate::files::kind_in_words(m.file_type())))),
            _ => None,
        };
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(flags.bits() as i32)
            .open(&path)
            .map_err(|e| what_is_there().unwrap_or_else(|| SysError::io("open", &path, &e)))?;
        let kind = file.metadata().map_err(|e| SysError::io("stat", &path, &e))?.file_type();
        if !kind.is_file() {
            return Err(refused(Refusal::NotRegular(crate::files::kind_in_words(kind))));
        }
        file.lock().map_err(|e| SysError::io("lock", &path, &e))?;
        Ok(EnginesLock { _file: file })
    }
}
