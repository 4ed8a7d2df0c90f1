//! The engines directory's lock: two installers (a `provision` by hand, the
//! agent's pass) take turns on one engines directory.

// This module opens the lock file for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use super::SysError;

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
    /// [`SysError::Io`] when the directory or the lock file cannot be made.
    pub fn acquire(dir: &Path) -> Result<EnginesLock, SysError> {
        std::fs::create_dir_all(dir).map_err(|e| SysError::io("create", dir, &e))?;
        let path = dir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| SysError::io("open", &path, &e))?;
        file.lock().map_err(|e| SysError::io("lock", &path, &e))?;
        Ok(EnginesLock { _file: file })
    }
}
