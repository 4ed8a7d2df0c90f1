//! What the targets check: every unpacking target afterwards, and the
//! fatbin target on each input.

// Each target uses a part of it.
#![allow(dead_code)]

use std::path::Path;

use llmgw_core::archive::Limits;

/// The bounds every unpacking target uses: 512 KiB and 1,000 entries, so
/// that the seed `bomb.*` (1 MiB of zeros) is one.
pub const LIMITS: Limits = Limits { max_bytes: 512 << 10, max_entries: 1000 };

/// Nothing but `dest` under `root`; under `dest`, no symbolic link that
/// leads out of it, and no special file, whether the unpack succeeded or not.
pub fn assert_inside(root: &Path, dest: &Path) {
    let top: Vec<_> = std::fs::read_dir(root).expect("root").flatten().map(|e| e.path()).collect();
    assert_eq!(top, [dest.to_path_buf()], "something was written beside the destination");
    let real_dest = dest.canonicalize().expect("dest");
    let mut stack = vec![dest.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("a directory").flatten() {
            let meta = std::fs::symlink_metadata(e.path()).expect("metadata");
            let ft = meta.file_type();
            if ft.is_symlink() {
                if let Ok(target) = e.path().canonicalize() {
                    assert!(target.starts_with(&real_dest), "{} leads to {}", e.path().display(), target.display());
                }
            } else if ft.is_dir() {
                stack.push(e.path());
            } else {
                assert!(ft.is_file(), "special file {}", e.path().display());
                use std::os::unix::fs::PermissionsExt;
                assert_eq!(
                    meta.permissions().mode() & 0o7000,
                    0,
                    "setuid/setgid/sticky kept on {}",
                    e.path().display()
                );
            }
        }
    }
}

/// Where the fatbin target's section sits in its imagined file.
pub const FATBIN_BASE: u64 = 0x2020;

/// The fatbin parser on `data` as a section at [`FATBIN_BASE`]: read from
/// memory and read at offsets from a file, it gives the same entries or the
/// same error; an error names an offset within the section, every entry
/// lies within it. Whether it parsed.
pub fn check_fatbin(data: &[u8]) -> bool {
    use llmgw_core::inspect::fatbin::{parse_section, parse_section_at};
    let from_slice = parse_section(data, FATBIN_BASE);
    let mut file = std::io::Cursor::new([vec![0u8; FATBIN_BASE as usize], data.to_vec()].concat());
    let from_file = parse_section_at(&mut file, FATBIN_BASE, data.len() as u64);
    assert_eq!(from_slice, from_file, "the two readers differ");
    let end = FATBIN_BASE + data.len() as u64;
    match from_slice {
        Ok(entries) => {
            for e in &entries {
                assert!(FATBIN_BASE <= e.container_offset && e.container_offset < e.offset, "{e:?}");
                assert!(e.offset < end && e.payload_offset <= end, "{e:?}");
            }
            true
        }
        Err(e) => {
            assert!((FATBIN_BASE..=end).contains(&e.offset), "{e}");
            false
        }
    }
}
