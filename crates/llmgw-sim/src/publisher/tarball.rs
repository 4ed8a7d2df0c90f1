//! Deterministic `.tar.gz` archives built from an [`Asset`] of the truth.
//!
//! [`build`] packs an asset as the publishers' `tar -czf` would: one
//! top-level directory, then every file in the order the truth lists it.
//! Everything that could vary is fixed (owner 0:0 with no names, one mtime,
//! a gzip header with no name and mtime 0), so the same asset always gives
//! the same bytes and therefore the same digest: every mtime is the release's
//! `published_at` ([`crate::truth::epoch`]).

use std::collections::BTreeSet;
use std::io::Write;

use flate2::{Compression, GzBuilder};

use crate::truth::Asset;

/// Mode of ELF files (executables and shared libraries) in the archive.
const ELF_MODE: u32 = 0o755;
/// Mode of text files in the archive.
const TEXT_MODE: u32 = 0o644;
/// Mode of directories in the archive.
const DIR_MODE: u32 = 0o755;
/// Mode of symbolic links in the archive (as GNU tar writes them).
const LINK_MODE: u32 = 0o777;

/// The asset as a gzip-compressed tar archive; every entry's mtime is
/// `mtime` (Unix seconds).
///
/// Entries: `top/`, then for each file its not yet written parent
/// directories and `top/path`: a symbolic link for a file with a `link`. ELF files hold [`ElfStub::to_bytes`] with mode
/// 0755, text files their text with mode 0644 (a file with neither is empty);
/// GNU headers, uid and gid 0, empty user and group names. The gzip header
/// carries no file name and mtime 0, compression level 6 (the default).
/// An asset with its `archive` given is those bytes as they are.
///
/// [`ElfStub::to_bytes`]: crate::truth::stub::ElfStub::to_bytes
pub fn build(asset: &Asset, mtime: u64) -> Vec<u8> {
    if let Some(bytes) = &asset.archive {
        return bytes.clone();
    }
    let gz = GzBuilder::new().mtime(0).write(Vec::new(), Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut dirs = BTreeSet::new();
    append_dir(&mut tar, &format!("{}/", asset.top), mtime);
    for file in &asset.files {
        // Parent directories below `top`, outermost first, once each.
        let mut parent = String::new();
        let parts: Vec<&str> = file.path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            parent.push_str(part);
            parent.push('/');
            if dirs.insert(parent.clone()) {
                append_dir(&mut tar, &format!("{}/{parent}", asset.top), mtime);
            }
        }
        if let Some(target) = &file.link {
            let mut header = header(tar::EntryType::Symlink, LINK_MODE, mtime);
            tar.append_link(&mut header, format!("{}/{}", asset.top, file.path), target)
                .expect("writing a tar entry to memory cannot fail");
            continue;
        }
        let (data, mode) = match (&file.raw, &file.elf, &file.text) {
            (Some(raw), _, _) => (raw.clone(), ELF_MODE),
            (None, Some(stub), _) => (stub.to_bytes(), ELF_MODE),
            (None, None, Some(text)) => (text.clone().into_bytes(), TEXT_MODE),
            (None, None, None) => (Vec::new(), TEXT_MODE),
        };
        let mut header = header(tar::EntryType::Regular, mode, mtime);
        header.set_size(data.len() as u64);
        tar.append_data(&mut header, format!("{}/{}", asset.top, file.path), data.as_slice())
            .expect("writing a tar entry to memory cannot fail");
    }
    let gz = tar.into_inner().expect("finishing a tar archive in memory cannot fail");
    gz.finish().expect("finishing a gzip stream in memory cannot fail")
}

/// A GNU header of the given type, mode and mtime (Unix seconds), owned by
/// 0:0 with empty names; path and size are set by the caller.
fn header(kind: tar::EntryType, mode: u32, mtime: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h.set_size(0);
    h.set_username("").expect("an empty user name fits");
    h.set_groupname("").expect("an empty group name fits");
    h
}

/// Appends a directory entry; `path` ends with `/`.
fn append_dir<W: Write>(tar: &mut tar::Builder<W>, path: &str, mtime: u64) {
    let mut h = header(tar::EntryType::Directory, DIR_MODE, mtime);
    tar.append_data(&mut h, path, std::io::empty()).expect("writing a tar entry to memory cannot fail");
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::truth::File;
    use crate::truth::stub::{ElfStub, VersionOutput};

    fn asset() -> Asset {
        let server = ElfStub {
            needed: vec!["libllama.so".into(), "libc.so.6".into()],
            requires: vec!["GLIBC_2.35".into()],
            runpath: Some("$ORIGIN".into()),
            version: Some(VersionOutput {
                args: vec!["--version".into()],
                stdout: String::new(),
                stderr: "version: 1\n".into(),
            }),
            lists_devices: true,
            backend: None,
            emulates: None,
            ..ElfStub::default()
        };
        Asset {
            name: "t.tar.gz".into(),
            top: "llama-b1".into(),
            files: vec![
                File { path: "llama-server".into(), elf: Some(server), ..File::default() },
                File { path: "lib/deep/libllama.so".into(), elf: Some(ElfStub::default()), ..File::default() },
                File { path: "lib/other.so".into(), elf: Some(ElfStub::default()), ..File::default() },
                File { path: "LICENSE".into(), text: Some("MIT License\n".into()), ..File::default() },
                File { path: "lib/deep/libllama.so.0".into(), link: Some("libllama.so".into()), ..File::default() },
            ],
            ..Asset::default()
        }
    }

    #[test]
    fn is_byte_identical_between_calls() {
        let a = build(&asset(), 1_792_504_991);
        assert_eq!(a, build(&asset(), 1_792_504_991));
        assert_ne!(a, build(&asset(), 1_792_504_992));
        // gzip header: magic, deflate, no flags (no name), mtime 0.
        assert_eq!(&a[..8], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn reads_back_with_paths_modes_and_contents() {
        let bytes = build(&asset(), 1_792_504_991);
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let h = entry.header().clone();
            assert_eq!((h.uid().unwrap(), h.gid().unwrap(), h.mtime().unwrap()), (0, 0, 1_792_504_991));
            assert_eq!(h.username().unwrap(), Some(""));
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            if path == "llama-b1/llama-server" {
                assert_eq!(ElfStub::from_bytes(&data), asset().files[0].elf);
            }
            if path == "llama-b1/LICENSE" {
                assert_eq!(data, b"MIT License\n");
            }
            if path == "llama-b1/lib/deep/libllama.so.0" {
                assert_eq!(entry.link_name().unwrap().unwrap().to_str(), Some("libllama.so"));
            }
            seen.push((path, h.entry_type(), h.mode().unwrap()));
        }
        use tar::EntryType::{Directory as D, Regular as R, Symlink as L};
        let want = [
            ("llama-b1/", D, 0o755),
            ("llama-b1/llama-server", R, 0o755),
            ("llama-b1/lib/", D, 0o755),
            ("llama-b1/lib/deep/", D, 0o755),
            ("llama-b1/lib/deep/libllama.so", R, 0o755),
            ("llama-b1/lib/other.so", R, 0o755),
            ("llama-b1/LICENSE", R, 0o644),
            ("llama-b1/lib/deep/libllama.so.0", L, 0o777),
        ];
        let want: Vec<_> = want.iter().map(|(p, t, m)| (p.to_string(), *t, *m)).collect();
        assert_eq!(seen, want);
    }
}
