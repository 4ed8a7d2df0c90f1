//! What every unpacking target checks afterwards.

use std::path::Path;

use llmgw::archive::Limits;

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
