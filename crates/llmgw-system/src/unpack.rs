//! Safe streaming unpack of `.tar.gz` archives and wheels into a real
//! directory, hashing every file on the way (the rules in
//! [`llmgw_core::archive`]).
//!
//! Uses: nothing of this crate.

// This module is where files are touched for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use llmgw_core::archive::{Limits, UnpackError, UnpackedFile, last_write_wins};
use sha2::{Digest, Sha256};

/// Unpacks the `.tar.gz` stream `reader` into the existing directory `dest`.
///
/// Returns every regular file placed (and hard link made), with its size in
/// bytes and sha256, sorted by path. On error, what was written so far stays
/// for the caller to remove with the rest of its staging directory.
///
/// # Errors
/// [`UnpackError::Refused`] for an entry outside the allowlist,
/// [`UnpackError::TooLarge`] past `limits`, [`UnpackError::Corrupt`] for a
/// stream that is not gzip'd tar, [`UnpackError::Io`] when writing fails.
pub fn unpack_tar_gz(reader: impl Read, dest: &Path, limits: Limits) -> Result<Vec<UnpackedFile>, UnpackError> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let mut files = Vec::new();
    let mut writer = Writer::new(limits);
    let mut count: u64 = 0;
    let entries = archive.entries().map_err(|e| UnpackError::Corrupt(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| UnpackError::Corrupt(e.to_string()))?;
        count += 1;
        if count > limits.max_entries {
            return Err(UnpackError::TooLarge { what: "entries", limit: limits.max_entries });
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let refuse = |why: &str| UnpackError::Refused { entry: raw.clone(), why: why.to_string() };
        let rel = safe_relative(&raw).map_err(|why| refuse(&why))?;
        if rel.as_os_str().is_empty() {
            continue; // "./" itself
        }
        let target = dest.join(&rel);
        check_no_symlink_parents(dest, &rel).map_err(|why| refuse(&why))?;
        let kind = entry.header().entry_type();
        let mode = entry.header().mode().map_err(|e| UnpackError::Corrupt(e.to_string()))? & 0o777;
        match kind {
            tar::EntryType::Directory => {
                create_dir(&target)?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                files.push(writer.place_file(&mut entry, &target, &rel, &raw, mode)?);
            }
            tar::EntryType::Symlink => {
                let link = entry
                    .link_name()
                    .map_err(|e| UnpackError::Corrupt(e.to_string()))?
                    .ok_or_else(|| refuse("symbolic link without a target"))?;
                let parent = rel.parent().unwrap_or(Path::new(""));
                if link.is_absolute() || !stays_inside(parent, &link) {
                    return Err(refuse(&format!(
                        "symbolic link to `{}` points outside the archive's directory",
                        link.display()
                    )));
                }
                if let Some(p) = target.parent() {
                    create_dir(p)?;
                }
                remove_existing(&target, &raw)?;
                std::os::unix::fs::symlink(&link, &target).map_err(|source| UnpackError::Io {
                    op: "create symbolic link",
                    path: target.clone(),
                    source,
                })?;
            }
            tar::EntryType::Link => {
                let link = entry
                    .link_name()
                    .map_err(|e| UnpackError::Corrupt(e.to_string()))?
                    .ok_or_else(|| refuse("hard link without a target"))?;
                let link_rel = safe_relative(&link.to_string_lossy())
                    .map_err(|why| refuse(&format!("hard link to `{}`: {why}", link.display())))?;
                check_no_symlink_parents(dest, &link_rel).map_err(|why| refuse(&why))?;
                let source = dest.join(&link_rel);
                let meta = fs::symlink_metadata(&source).map_err(|_| {
                    refuse(&format!("hard link to `{}`, which the archive has not placed", link.display()))
                })?;
                if !meta.is_file() {
                    return Err(refuse(&format!("hard link to `{}`, which is not a regular file", link.display())));
                }
                if let Some(p) = target.parent() {
                    create_dir(p)?;
                }
                remove_existing(&target, &raw)?;
                fs::hard_link(&source, &target).map_err(|source| UnpackError::Io {
                    op: "create hard link",
                    path: target.clone(),
                    source,
                })?;
                let linked = slash_path(&link_rel);
                if let Some(f) = files.iter().find(|f| f.path == linked).cloned() {
                    files.push(UnpackedFile { path: slash_path(&rel), ..f });
                }
            }
            tar::EntryType::XGlobalHeader
            | tar::EntryType::XHeader
            | tar::EntryType::GNULongName
            | tar::EntryType::GNULongLink => {}
            other => return Err(refuse(&format!("{} entries are not unpacked", kind_name(other)))),
        }
    }
    Ok(last_write_wins(files))
}

/// Unpacks the wheel (a zip archive, PEP 427) `reader` into the existing
/// directory `dest`, through the same allowlist as [`unpack_tar_gz`]: only
/// directories and regular files (a wheel has no links: a symbolic link,
/// device or FIFO entry is refused), only plain path components, the
/// archive's execute bits kept and every other special bit dropped, the
/// total size bounded by `limits` whatever the entries declare.
///
/// Returns every file placed with its size in bytes and sha256, sorted by
/// path. On error, what was written so far stays for the caller to remove
/// with the rest of its staging directory.
///
/// # Errors
/// As [`unpack_tar_gz`]; [`UnpackError::Corrupt`] for a stream that is not a zip.
pub fn unpack_wheel(
    reader: impl Read + io::Seek,
    dest: &Path,
    limits: Limits,
) -> Result<Vec<UnpackedFile>, UnpackError> {
    let mut zip = zip::ZipArchive::new(reader).map_err(|e| UnpackError::Corrupt(e.to_string()))?;
    if zip.len() as u64 > limits.max_entries {
        return Err(UnpackError::TooLarge { what: "entries", limit: limits.max_entries });
    }
    let mut files = Vec::new();
    let mut writer = Writer::new(limits);
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| UnpackError::Corrupt(e.to_string()))?;
        let raw = String::from_utf8_lossy(entry.name_raw()).into_owned();
        let refuse = |why: &str| UnpackError::Refused { entry: raw.clone(), why: why.to_string() };
        let rel = safe_relative(&raw).map_err(|why| refuse(&why))?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        check_no_symlink_parents(dest, &rel).map_err(|why| refuse(&why))?;
        let target = dest.join(&rel);
        // The file type is in the upper bits of the Unix mode, when the
        // archiver recorded one (S_IFMT, <sys/stat.h>).
        let unix = entry.unix_mode();
        match unix.map(|m| m & 0o170000) {
            None | Some(0) | Some(0o100000) | Some(0o040000) => {}
            Some(0o120000) => return Err(refuse("symbolic links are not unpacked from a wheel")),
            Some(other) => return Err(refuse(&format!("special file (mode {other:o}) entries are not unpacked"))),
        }
        if entry.is_dir() {
            create_dir(&target)?;
            continue;
        }
        let mode = unix.map_or(0o644, |m| m & 0o777);
        files.push(writer.place_file(&mut entry, &target, &rel, &raw, mode)?);
    }
    Ok(last_write_wins(files))
}

/// The entry path as plain components, or why not.
fn safe_relative(raw: &str) -> Result<PathBuf, String> {
    let mut out = PathBuf::new();
    for c in Path::new(raw).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err("its path climbs out with `..`".into()),
            Component::RootDir | Component::Prefix(_) => return Err("its path is absolute".into()),
        }
    }
    Ok(out)
}

/// Whether a relative link target, read from directory `parent` (relative
/// to the destination), stays inside the destination.
fn stays_inside(parent: &Path, link: &Path) -> bool {
    let mut depth: i64 = parent.components().count() as i64;
    for c in link.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Refuses a path whose directories include a symbolic link: an earlier
/// entry could aim one anywhere, and writing through it escapes.
fn check_no_symlink_parents(dest: &Path, rel: &Path) -> Result<(), String> {
    let mut at = dest.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for c in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push(c);
        if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err("its path goes through a symbolic link".into());
        }
    }
    Ok(())
}

fn create_dir(p: &Path) -> Result<(), UnpackError> {
    fs::create_dir_all(p).map_err(|source| UnpackError::Io { op: "create directory", path: p.to_path_buf(), source })
}

/// Removes a file or link an earlier entry placed at `p`, so the new entry
/// replaces it rather than writing through it; a directory there is refused.
fn remove_existing(p: &Path, raw: &str) -> Result<(), UnpackError> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => Err(UnpackError::Refused {
            entry: raw.to_string(),
            why: "a directory of the same name is already there".into(),
        }),
        Ok(_) => fs::remove_file(p).map_err(|source| UnpackError::Io { op: "replace", path: p.to_path_buf(), source }),
        Err(_) => Ok(()),
    }
}

/// Writes an archive's regular files: within its [`Limits`] (the bytes
/// written so far are counted), through one copy buffer.
struct Writer {
    limits: Limits,
    total: u64,
    buf: Vec<u8>,
}

impl Writer {
    fn new(limits: Limits) -> Writer {
        Writer { limits, total: 0, buf: vec![0u8; COPY_BYTES] }
    }

    /// Writes the regular file `rel` (named `raw` in the archive) at
    /// `target` from `reader`, replacing what an earlier entry put there,
    /// with `mode`'s permission bits; past the limits it is refused.
    fn place_file(
        &mut self,
        reader: &mut impl Read,
        target: &Path,
        rel: &Path,
        raw: &str,
        mode: u32,
    ) -> Result<UnpackedFile, UnpackError> {
        if let Some(parent) = target.parent() {
            create_dir(parent)?;
        }
        remove_existing(target, raw)?;
        let max = self.limits.max_bytes;
        let (bytes, sha256) = write_file(reader, target, max - self.total, max, &mut self.buf)?;
        self.total += bytes;
        set_mode(target, mode)?;
        Ok(UnpackedFile { path: slash_path(rel), bytes, sha256 })
    }
}

/// Bytes copied at a time from an archive entry to its file: one buffer per
/// archive, reused for every entry (a fresh zeroed one per file cost a
/// 256 KiB memset for each of a simulation's many small files).
const COPY_BYTES: usize = 256 * 1024;

fn write_file(
    reader: &mut impl Read,
    target: &Path,
    budget: u64,
    limit: u64,
    buf: &mut [u8],
) -> Result<(u64, String), UnpackError> {
    let io_err = |op, source| UnpackError::Io { op, path: target.to_path_buf(), source };
    // create_new: never follows a link planted at this name.
    let mut out = fs::OpenOptions::new().write(true).create_new(true).open(target).map_err(|e| io_err("create", e))?;
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    loop {
        let n = reader.read(buf).map_err(|e| UnpackError::Corrupt(e.to_string()))?;
        if n == 0 {
            break;
        }
        written += n as u64;
        if written > budget {
            return Err(UnpackError::TooLarge { what: "bytes", limit });
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| io_err("write", e))?;
    }
    Ok((written, hex::encode(hasher.finalize())))
}

fn set_mode(p: &Path, mode: u32) -> Result<(), UnpackError> {
    // Owner may always read and write what it unpacked; the archive's
    // execute bits are kept; setuid, setgid and sticky never are.
    let mode = (mode & 0o777) | 0o600;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).map_err(|source| UnpackError::Io {
        op: "set permissions of",
        path: p.to_path_buf(),
        source,
    })
}

fn slash_path(p: &Path) -> String {
    p.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

fn kind_name(t: tar::EntryType) -> &'static str {
    match t {
        tar::EntryType::Char => "character device",
        tar::EntryType::Block => "block device",
        tar::EntryType::Fifo => "FIFO",
        _ => "special",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn tar_gz(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        build(&mut b);
        let tar = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    fn header(path: &str, kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        // set_path refuses `..`; write the raw name as a hostile archive would.
        let name = path.as_bytes();
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(size);
        h.set_cksum();
        h
    }

    fn file(b: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32, body: &[u8]) {
        b.append(&header(path, tar::EntryType::Regular, mode, body.len() as u64), body).unwrap();
    }

    fn link(b: &mut tar::Builder<Vec<u8>>, path: &str, kind: tar::EntryType, to: &str) {
        let mut h = header(path, kind, 0o777, 0);
        h.set_link_name(to).unwrap();
        h.set_cksum();
        b.append(&h, &[][..]).unwrap();
    }

    #[test]
    fn unpacks_files_with_digests_and_keeps_only_permission_bits() {
        let gz = tar_gz(|b| {
            file(b, "llama-b1/llama-server", 0o4755, b"server");
            file(b, "llama-b1/LICENSE", 0o644, b"MIT");
            link(b, "llama-b1/libggml.so.0", tar::EntryType::Symlink, "libggml.so");
        });
        let dir = tempfile::tempdir().unwrap();
        let files = unpack_tar_gz(&gz[..], dir.path(), Limits::default()).unwrap();
        assert_eq!(
            files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["llama-b1/LICENSE", "llama-b1/llama-server"]
        );
        assert_eq!(files[1].sha256, hex::encode(Sha256::digest(b"server")));
        let mode = fs::metadata(dir.path().join("llama-b1/llama-server")).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o755, "setuid dropped, execute kept");
    }

    #[test]
    fn refuses_escapes_and_special_files() {
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("..", tar_gz(|b| file(b, "../evil", 0o644, b"x"))),
            ("absolute", tar_gz(|b| file(b, "/tmp/evil", 0o644, b"x"))),
            ("outside", tar_gz(|b| link(b, "a/up", tar::EntryType::Symlink, "../../etc"))),
            ("outside", tar_gz(|b| link(b, "abs", tar::EntryType::Symlink, "/etc/passwd"))),
            (
                "through a symbolic link",
                tar_gz(|b| {
                    link(b, "d", tar::EntryType::Symlink, ".");
                    file(b, "d/x", 0o644, b"x");
                }),
            ),
            ("FIFO", tar_gz(|b| b.append(&header("fifo", tar::EntryType::Fifo, 0o644, 0), &[][..]).unwrap())),
            ("not placed", tar_gz(|b| link(b, "h", tar::EntryType::Link, "etc/shadow"))),
        ];
        for (says, gz) in cases {
            let dir = tempfile::tempdir().unwrap();
            let inner = dir.path().join("staging");
            fs::create_dir(&inner).unwrap();
            let e = unpack_tar_gz(&gz[..], &inner, Limits::default()).unwrap_err().to_string();
            assert!(e.contains(says), "expected `{says}` in: {e}");
            assert!(!dir.path().join("evil").exists());
        }
    }

    #[test]
    fn a_bomb_stops_at_the_byte_limit() {
        let zeros = vec![0u8; 1 << 20];
        let gz = tar_gz(|b| file(b, "big", 0o644, &zeros));
        let dir = tempfile::tempdir().unwrap();
        let e = unpack_tar_gz(&gz[..], dir.path(), Limits { max_bytes: 1000, max_entries: 10 }).unwrap_err();
        assert!(matches!(e, UnpackError::TooLarge { what: "bytes", .. }), "{e}");
    }

    #[test]
    fn a_path_written_twice_keeps_the_digest_of_what_is_on_disk() {
        let gz = tar_gz(|b| {
            file(b, "f", 0o644, b"zzz-first");
            file(b, "f", 0o644, b"aaa-last");
        });
        let dir = tempfile::tempdir().unwrap();
        let files = unpack_tar_gz(&gz[..], dir.path(), Limits::default()).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].sha256, hex::encode(Sha256::digest(b"aaa-last")));
        assert_eq!(fs::read(dir.path().join("f")).unwrap(), b"aaa-last");
    }

    fn wheel(build: impl FnOnce(&mut zip::ZipWriter<io::Cursor<Vec<u8>>>)) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        build(&mut w);
        w.finish().unwrap().into_inner()
    }

    fn wheel_file(w: &mut zip::ZipWriter<io::Cursor<Vec<u8>>>, name: &str, mode: u32, body: &[u8]) {
        let opts = zip::write::SimpleFileOptions::default().unix_permissions(mode);
        w.start_file(name, opts).unwrap();
        w.write_all(body).unwrap();
    }

    #[test]
    fn a_wheel_unpacks_with_digests_and_execute_bits() {
        let whl = wheel(|w| {
            wheel_file(w, "vllm/__init__.py", 0o644, b"x = 1");
            wheel_file(w, "vllm-0.20.1.data/scripts/vllm", 0o755, b"#!python");
        });
        let dir = tempfile::tempdir().unwrap();
        let files = unpack_wheel(io::Cursor::new(whl), dir.path(), Limits::default()).unwrap();
        assert_eq!(
            files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["vllm-0.20.1.data/scripts/vllm", "vllm/__init__.py"]
        );
        assert_eq!(files[1].sha256, hex::encode(Sha256::digest(b"x = 1")));
        let mode = |p: &str| fs::metadata(dir.path().join(p)).unwrap().mode() & 0o7777;
        assert_eq!((mode("vllm-0.20.1.data/scripts/vllm"), mode("vllm/__init__.py")), (0o755, 0o644));
    }

    #[test]
    fn hostile_wheels_are_refused() {
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("..", wheel(|w| wheel_file(w, "../evil.py", 0o644, b"x"))),
            ("absolute", wheel(|w| wheel_file(w, "/tmp/evil.py", 0o644, b"x"))),
            (
                "symbolic links are not unpacked",
                wheel(|w| w.add_symlink("pkg/link", "/etc/passwd", zip::write::SimpleFileOptions::default()).unwrap()),
            ),
            ("not a readable", b"PK\x03\x04 not a zip".to_vec()),
        ];
        for (says, whl) in cases {
            let dir = tempfile::tempdir().unwrap();
            let inner = dir.path().join("site-packages");
            fs::create_dir(&inner).unwrap();
            let e = unpack_wheel(io::Cursor::new(whl), &inner, Limits::default()).unwrap_err().to_string();
            assert!(e.contains(says), "expected `{says}` in: {e}");
            assert!(!dir.path().join("evil.py").exists() && !inner.join("pkg/link").exists());
        }
    }

    #[test]
    fn a_wheel_bomb_stops_at_the_byte_limit() {
        let whl = wheel(|w| wheel_file(w, "big.bin", 0o644, &vec![0u8; 1 << 20]));
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits { max_bytes: 1000, max_entries: 10 };
        let e = unpack_wheel(io::Cursor::new(whl), dir.path(), limits).unwrap_err();
        assert!(matches!(e, UnpackError::TooLarge { what: "bytes", .. }), "{e}");
    }

    #[test]
    fn truncated_archives_are_corrupt() {
        let gz = tar_gz(|b| file(b, "f", 0o644, &[7u8; 100_000]));
        let dir = tempfile::tempdir().unwrap();
        let e = unpack_tar_gz(&gz[..gz.len() / 2], dir.path(), Limits::default()).unwrap_err();
        assert!(matches!(e, UnpackError::Corrupt(_)), "{e}");
    }
}
