//! PATH into inspected ELF files: a directory (walked in name order,
//! symbolic links never followed), an archive (`.tar.gz`/`.tgz`, `.zip`,
//! `.whl`: streamed member by member, nothing unpacked), or one file.
//!
//! Every file is told by its first four bytes: an ELF file is inspected,
//! anything else in a directory or an archive is counted and skipped. An
//! archive's ELF member is copied, bounded by its declared size and
//! [`Limits`], into memory when small ([`IN_MEMORY_BYTES`]) and into an
//! anonymous temporary file otherwise (`tempfile::tempfile`: in the
//! temporary directory, gone when closed), and inspected from there.
//!
//! Uses: nothing of this crate.

// Real effects: this module reads the files and archives the user names
// (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fs::{self, File};
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use llmgw_core::archive::Limits;
use llmgw_core::inspect::elf::has_elf_magic;
use llmgw_core::inspect::{FileReport, InspectError, Summary, inspect_reader};

/// Archive members up to this size are inspected in memory; larger ones
/// from an anonymous temporary file.
pub const IN_MEMORY_BYTES: u64 = 16 << 20;

/// The longest symbolic link target read from an archive member.
const MAX_LINK_BYTES: u64 = 4096;

/// What PATH holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// Every ELF file, by path.
    pub files: Vec<FileReport>,
    /// What was not inspected.
    pub skipped: Skipped,
    /// The files together.
    pub summary: Summary,
}

/// What PATH holds that was not inspected.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Skipped {
    /// Regular files that are not ELF (text, Python, headers, empty files).
    pub not_elf: u64,
    /// Symbolic links, and an archive's hard links: never followed.
    pub links: Vec<Link>,
    /// Anything else: FIFOs, devices, sockets.
    pub other: Vec<String>,
}

/// A link that was not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Where it is in PATH.
    pub path: String,
    /// What it points to, as written.
    pub target: String,
    /// Where that is: "in the tree", "out of the tree", "nowhere", "hard link".
    pub lands: &'static str,
}

/// Inspects PATH: a directory, an archive named `.tar.gz`, `.tgz`, `.tar`,
/// `.zip` or `.whl`, or one ELF file. At most `limits.max_entries` entries are
/// looked at, and at most `limits.max_bytes` bytes of ELF members are
/// copied out of an archive.
///
/// # Errors
/// [`InspectError`]: PATH alone is not an ELF file (or is empty); an ELF
/// file or fatbin in it is malformed (naming the offset); a symbolic link
/// in it loops; an archive is corrupt; a limit is passed; a read fails.
pub fn inspect_path(path: &Path, limits: Limits) -> Result<Inspection, InspectError> {
    let meta = fs::metadata(path).map_err(|source| io_error("read", quote(path), source))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let lower = name.to_lowercase();
    let mut walk = Walk { limits, files: Vec::new(), skipped: Skipped::default(), entries: 0, copied: 0 };
    if meta.is_dir() {
        walk.directory(path)?;
    } else if !meta.is_file() {
        return Err(InspectError::NotAFile { file: quote(path) });
    } else if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") {
        walk.tar(path, true)?;
    } else if lower.ends_with(".tar") {
        walk.tar(path, false)?;
    } else if lower.ends_with(".zip") || lower.ends_with(".whl") {
        walk.zip(path)?;
    } else {
        walk.one_file(path, &name)?;
    }
    let mut files = walk.files;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let summary = Summary::of(&files);
    Ok(Inspection { files, skipped: walk.skipped, summary })
}

fn quote(path: &Path) -> String {
    format!("`{}`", path.display())
}

fn member(archive: &Path, name: &str) -> String {
    format!("`{name}` in `{}`", archive.display())
}

fn io_error(op: &'static str, file: String, source: io::Error) -> InspectError {
    InspectError::Io { op, file, source }
}

/// The words for a file whose magic is an archive's, named otherwise.
fn archive_hint(head: &[u8], kind: &str, names: &str) -> String {
    format!("it starts with {}, which is {kind}: inspect reads an archive named {names}", hex_bytes(head))
}

/// Whether `f` holds a POSIX tar archive: `ustar` at offset 257 of its
/// first header (POSIX.1-1988, `magic` field of the ustar header).
fn is_tar(f: &mut File) -> bool {
    let mut field = [0u8; 5];
    f.seek(SeekFrom::Start(257)).is_ok() && f.read_exact(&mut field).is_ok() && &field == b"ustar"
}

/// Reads up to four bytes: the magic, or less at the end of the file.
fn magic(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(4);
    r.take(4).read_to_end(&mut head)?;
    Ok(head)
}

struct Walk {
    limits: Limits,
    files: Vec<FileReport>,
    skipped: Skipped,
    entries: u64,
    copied: u64,
}

impl Walk {
    /// Counts one more entry against the limit.
    fn count(&mut self, file: impl FnOnce() -> String) -> Result<(), InspectError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            let limit = self.limits.max_entries;
            return Err(InspectError::TooLarge { file: file(), what: "the number of entries".into(), limit });
        }
        Ok(())
    }

    fn one_file(&mut self, path: &Path, name: &str) -> Result<(), InspectError> {
        let mut f = File::open(path).map_err(|source| io_error("open", quote(path), source))?;
        let head = magic(&mut f).map_err(|source| io_error("read", quote(path), source))?;
        if !has_elf_magic(&head) {
            let what = match head.as_slice() {
                [] => "it is empty (0 bytes)".to_string(),
                [0x1f, 0x8b, ..] => archive_hint(&head, "gzip data", ".tar.gz or .tgz"),
                [b'P', b'K', 3, 4] => archive_hint(&head, "a zip archive", ".zip or .whl"),
                _ if is_tar(&mut f) => archive_hint(&head, "a tar archive", ".tar"),
                _ => format!("it starts with {}", hex_bytes(&head)),
            };
            return Err(InspectError::NotElf { file: quote(path), what });
        }
        let bytes = f.metadata().map_err(|source| io_error("read", quote(path), source))?.len();
        f.seek(SeekFrom::Start(0)).map_err(|source| io_error("read", quote(path), source))?;
        self.files.push(inspect_reader(f, name, &quote(path), bytes)?);
        Ok(())
    }

    fn directory(&mut self, root: &Path) -> Result<(), InspectError> {
        let real_root = fs::canonicalize(root).map_err(|source| io_error("read", quote(root), source))?;
        let mut todo: Vec<PathBuf> = vec![PathBuf::new()];
        while let Some(rel) = todo.pop() {
            let dir = root.join(&rel);
            let list = fs::read_dir(&dir).map_err(|source| io_error("list", quote(&dir), source))?;
            let mut names = Vec::new();
            for e in list {
                names.push(e.map_err(|source| io_error("list", quote(&dir), source))?.file_name());
                self.count(|| quote(root))?;
            }
            names.sort();
            let mut subdirectories = Vec::new();
            for name in names {
                let rel = rel.join(&name);
                let full = root.join(&rel);
                let shown = rel.to_string_lossy().into_owned();
                let meta = fs::symlink_metadata(&full).map_err(|source| io_error("read", quote(&full), source))?;
                let kind = meta.file_type();
                if kind.is_symlink() {
                    self.skipped.links.push(link_in_tree(&full, &real_root, shown)?);
                } else if kind.is_dir() {
                    subdirectories.push(rel);
                } else if kind.is_file() {
                    let mut f = File::open(&full).map_err(|source| io_error("open", quote(&full), source))?;
                    let head = magic(&mut f).map_err(|source| io_error("read", quote(&full), source))?;
                    if has_elf_magic(&head) {
                        f.seek(SeekFrom::Start(0)).map_err(|source| io_error("read", quote(&full), source))?;
                        self.files.push(inspect_reader(f, &shown, &quote(&full), meta.len())?);
                    } else {
                        self.skipped.not_elf += 1;
                    }
                } else {
                    self.skipped.other.push(shown);
                }
            }
            // Depth first, in name order.
            todo.extend(subdirectories.into_iter().rev());
        }
        Ok(())
    }

    /// A tar archive, gzip-compressed when `gzip`.
    fn tar(&mut self, path: &Path, gzip: bool) -> Result<(), InspectError> {
        let f = BufReader::new(File::open(path).map_err(|source| io_error("open", quote(path), source))?);
        let reader: Box<dyn Read> = if gzip { Box::new(flate2::read::GzDecoder::new(f)) } else { Box::new(f) };
        let mut archive = tar::Archive::new(reader);
        let corrupt = |e: io::Error| InspectError::Archive { file: quote(path), detail: e.to_string() };
        for entry in archive.entries().map_err(corrupt)? {
            let mut entry = entry.map_err(corrupt)?;
            self.count(|| quote(path))?;
            let name = String::from_utf8_lossy(&entry.path_bytes()).trim_start_matches("./").to_string();
            match entry.header().entry_type() {
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    let size = entry.size();
                    self.member(path, &name, &mut entry, size)?;
                }
                t @ (tar::EntryType::Symlink | tar::EntryType::Link) => {
                    let target = entry.link_name_bytes().map(|b| String::from_utf8_lossy(&b).into_owned());
                    let lands = if t == tar::EntryType::Link { "hard link" } else { "not followed" };
                    self.skipped.links.push(Link { path: name, target: target.unwrap_or_default(), lands });
                }
                tar::EntryType::Directory
                | tar::EntryType::XGlobalHeader
                | tar::EntryType::XHeader
                | tar::EntryType::GNULongName
                | tar::EntryType::GNULongLink => {}
                _ => self.skipped.other.push(name),
            }
        }
        Ok(())
    }

    fn zip(&mut self, path: &Path) -> Result<(), InspectError> {
        let f = File::open(path).map_err(|source| io_error("open", quote(path), source))?;
        let corrupt = |e: zip::result::ZipError| InspectError::Archive { file: quote(path), detail: e.to_string() };
        let mut zip = zip::ZipArchive::new(BufReader::new(f)).map_err(corrupt)?;
        for i in 0..zip.len() {
            self.count(|| quote(path))?;
            let mut entry = zip.by_index(i).map_err(corrupt)?;
            let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
            // The file type is in the upper bits of the Unix mode, when the
            // archiver recorded one (S_IFMT, <sys/stat.h>).
            match entry.unix_mode().map(|m| m & 0o170000) {
                _ if entry.is_dir() => {}
                None | Some(0) | Some(0o100000) => {
                    let size = entry.size();
                    self.member(path, &name, &mut entry, size)?;
                }
                Some(0o120000) => {
                    let mut target = Vec::new();
                    let read = (&mut entry).take(MAX_LINK_BYTES).read_to_end(&mut target);
                    read.map_err(|source| io_error("read", member(path, &name), source))?;
                    let target = String::from_utf8_lossy(&target).into_owned();
                    self.skipped.links.push(Link { path: name, target, lands: "not followed" });
                }
                Some(_) => self.skipped.other.push(name),
            }
        }
        Ok(())
    }

    /// An archive member of `size` bytes (as declared), read from `r`:
    /// counted when not ELF, else copied out (bounded) and inspected.
    fn member(&mut self, archive: &Path, name: &str, r: &mut impl Read, size: u64) -> Result<(), InspectError> {
        let file = member(archive, name);
        let head = magic(r).map_err(|source| io_error("read", file.clone(), source))?;
        if !has_elf_magic(&head) {
            self.skipped.not_elf += 1;
            return Ok(());
        }
        let limit = self.limits.max_bytes;
        self.copied = self.copied.saturating_add(size);
        if size > limit || self.copied > limit {
            return Err(InspectError::TooLarge { file, what: format!("{size} bytes of ELF member"), limit });
        }
        // What is left of the member, never more than it declared.
        let mut rest = r.take(size.saturating_sub(4));
        let cut_short = |got: u64| InspectError::Archive {
            file: format!("`{}`", archive.display()),
            detail: format!("member `{name}` declares {size} bytes and holds {got}"),
        };
        if size <= IN_MEMORY_BYTES {
            // Bounded just above.
            let mut bytes = Vec::with_capacity(size as usize);
            bytes.extend_from_slice(&head);
            rest.read_to_end(&mut bytes).map_err(|source| io_error("read", file.clone(), source))?;
            if bytes.len() as u64 != size {
                return Err(cut_short(bytes.len() as u64));
            }
            self.files.push(inspect_reader(Cursor::new(bytes), name, &file, size)?);
        } else {
            let mut tmp =
                tempfile::tempfile().map_err(|source| io_error("create a temporary file for", file.clone(), source))?;
            let copied = tmp
                .write_all(&head)
                .and_then(|()| io::copy(&mut rest, &mut tmp))
                .map_err(|source| io_error("copy", file.clone(), source))?;
            if copied + 4 != size {
                return Err(cut_short(copied + 4));
            }
            tmp.seek(SeekFrom::Start(0)).map_err(|source| io_error("read", file.clone(), source))?;
            self.files.push(inspect_reader(BufReader::new(tmp), name, &file, size)?);
        }
        Ok(())
    }
}

/// A symbolic link of a directory walk, never followed: where it points,
/// and whether that is inside the tree; a loop is an error.
fn link_in_tree(full: &Path, real_root: &Path, shown: String) -> Result<Link, InspectError> {
    let target = fs::read_link(full).map(|t| t.to_string_lossy().into_owned()).unwrap_or_default();
    let lands = match fs::canonicalize(full) {
        Ok(t) if t.starts_with(real_root) => "in the tree",
        Ok(_) => "out of the tree",
        Err(e) if rustix::io::Errno::from_io_error(&e) == Some(rustix::io::Errno::LOOP) => {
            return Err(InspectError::LinkLoop { file: quote(full) });
        }
        Err(_) => "nowhere",
    };
    Ok(Link { path: shown, target, lands })
}

fn hex_bytes(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}
