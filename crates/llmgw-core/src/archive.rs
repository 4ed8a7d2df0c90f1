//! What unpacking an archive gives and may not do: the files placed with
//! their digests, the bounds, the refusals, and the sha256 of a stream.
//! The unpacker itself writes real files and lives with the real effects
//! (`llmgw_system::unpack`).
//!
//! The unpacker takes an allowlist view of an archive: only directories,
//! regular files, and links that stay inside the destination; only plain
//! path components (no absolute paths, no `..`); never through a symbolic
//! link an earlier entry made. Executable bits are kept, setuid, setgid and
//! sticky bits dropped, ownership never taken from the archive, and the
//! total unpacked size is bounded ([`Limits`]). Refusals are
//! [`UnpackError`]s naming the entry.
//!
//! Uses: nothing of this crate.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One regular file an archive placed, with its digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct UnpackedFile {
    /// Path relative to the directory unpacked into, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// sha256 of the contents, lowercase hex.
    pub sha256: String,
}

/// Bounds on what one archive may unpack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of file contents, all entries together. A gzip bomb stops here.
    pub max_bytes: u64,
    /// Most entries.
    pub max_entries: u64,
}

impl Default for Limits {
    /// 16 GiB and 200,000 entries: a CUDA build with its runtime is under
    /// 2 GB and a few hundred files.
    fn default() -> Self {
        Limits { max_bytes: 16 << 30, max_entries: 200_000 }
    }
}

/// Why an archive was refused or could not be unpacked.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    /// An entry the allowlist refuses, named as the archive names it.
    #[error("archive entry `{entry}` refused: {why}")]
    Refused {
        /// The entry's path in the archive.
        entry: String,
        /// What makes it unsafe.
        why: String,
    },
    /// The archive unpacks to more than [`Limits`] allow.
    #[error("archive unpacks to more than {limit} {what}; refused as a possible decompression bomb")]
    TooLarge {
        /// "bytes" or "entries".
        what: &'static str,
        /// The bound exceeded.
        limit: u64,
    },
    /// The archive is not a readable `.tar.gz` (truncated, corrupt).
    #[error("archive is not a readable .tar.gz: {0}")]
    Corrupt(String),
    /// Writing the unpacked files failed.
    #[error("{op} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// Where.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

/// The files placed, in the order they were written, reduced to one per
/// path: the last one written, as it is on disk. Sorted by path.
pub fn last_write_wins(files: Vec<UnpackedFile>) -> Vec<UnpackedFile> {
    let by_path: std::collections::BTreeMap<String, UnpackedFile> =
        files.into_iter().map(|f| (f.path.clone(), f)).collect();
    by_path.into_values().collect()
}

/// sha256 of everything `reader` yields, lowercase hex, and the byte count.
///
/// # Errors
/// The reader's.
pub fn sha256_reader(reader: impl Read) -> io::Result<(u64, String)> {
    sha256_copy(reader, io::sink())
}

/// Copies everything `reader` yields into `writer`, hashing it on the way:
/// the byte count and the sha256, lowercase hex.
///
/// # Errors
/// The reader's or the writer's.
pub fn sha256_copy(mut reader: impl Read, mut writer: impl Write) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut n_total = 0u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        writer.write_all(&buf[..n])?;
        n_total += n as u64;
    }
    Ok((n_total, hex::encode(hasher.finalize())))
}
