//! `ldd` output: which libraries and symbol versions the loader cannot find.
//!
//! glibc's `ldd` prints one line per library (`\tlibvulkan.so.1 => not found`)
//! and, before them, one line per missing symbol version
//! (`./bin: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.35' not found (required by ./bin)`).
//! musl's prints `Error loading shared library X: … (needed by Y)`.

use std::collections::BTreeSet;

/// What an `ldd` run says is missing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LddReport {
    /// Libraries not found, by soname, sorted.
    pub missing_libraries: BTreeSet<String>,
    /// Symbol versions not found, sorted by version then library.
    pub missing_versions: BTreeSet<MissingVersion>,
    /// Whether `ldd` said the file is not a dynamic executable.
    pub not_dynamic: bool,
}

/// One symbol version the system's libraries lack.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MissingVersion {
    /// The version: `GLIBC_2.35`, `GLIBCXX_3.4.30`.
    pub version: String,
    /// The library that lacks it, by file name: `libc.so.6`.
    pub library: String,
    /// The file that needs it, by file name: `llama-server`.
    pub required_by: String,
}

impl LddReport {
    /// Whether nothing is missing.
    pub fn is_clean(&self) -> bool {
        self.missing_libraries.is_empty() && self.missing_versions.is_empty()
    }
}

/// Parses `ldd`'s standard output and error together.
pub fn parse(text: &str) -> LddReport {
    let mut r = LddReport::default();
    for line in text.lines() {
        let t = line.trim();
        if let Some(lib) = t.strip_suffix("=> not found") {
            r.missing_libraries.insert(lib.trim().to_string());
        } else if let Some(rest) = t.strip_prefix("Error loading shared library ") {
            // musl: "Error loading shared library libfoo.so.1: No such file or directory (needed by /x)"
            if let Some((lib, _)) = rest.split_once(':') {
                r.missing_libraries.insert(lib.trim().to_string());
            }
        } else if t == "not a dynamic executable" || t.ends_with(": not a dynamic executable") {
            r.not_dynamic = true;
        } else if let Some(v) = missing_version(t) {
            r.missing_versions.insert(v);
        }
    }
    r
}

/// `<file>: <lib>: version `<V>' not found (required by <file2>)`
fn missing_version(t: &str) -> Option<MissingVersion> {
    let (head, tail) = t.split_once(": version `")?;
    let (version, rest) = tail.split_once('\'')?;
    let required_by = rest.trim().strip_prefix("not found (required by ")?.strip_suffix(')')?;
    let library = head.rsplit_once(": ").map_or(head, |(_, l)| l);
    Some(MissingVersion {
        version: version.to_string(),
        library: file_name(library),
        required_by: file_name(required_by),
    })
}

fn file_name(p: &str) -> String {
    p.rsplit('/').next().unwrap_or(p).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_glibc_ldd() {
        let out = "/opt/x/llama-server: /lib64/libc.so.6: version `GLIBC_2.35' not found (required by /opt/x/llama-server)\n\
                   /opt/x/llama-server: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /opt/x/libllama.so)\n\
                   \tlinux-vdso.so.1 (0x00007ffc8a5f2000)\n\
                   \tlibllama.so => /opt/x/libllama.so (0x00007f1e2c000000)\n\
                   \tlibvulkan.so.1 => not found\n";
        let r = parse(out);
        assert_eq!(r.missing_libraries.iter().collect::<Vec<_>>(), ["libvulkan.so.1"]);
        let v: Vec<_> = r
            .missing_versions
            .iter()
            .map(|m| (m.version.as_str(), m.library.as_str(), m.required_by.as_str()))
            .collect();
        assert_eq!(
            v,
            [("GLIBCXX_3.4.30", "libstdc++.so.6", "libllama.so"), ("GLIBC_2.35", "libc.so.6", "llama-server")]
        );
        assert!(!r.is_clean());
    }

    #[test]
    fn reads_musl_ldd_and_static_files() {
        let r = parse(
            "\t/lib/ld-musl-x86_64.so.1 (0x7f)\nError loading shared library libstdc++.so.6: No such file or directory (needed by /x/llama-server)\n",
        );
        assert!(r.missing_libraries.contains("libstdc++.so.6"));
        assert!(parse("\tnot a dynamic executable\n").not_dynamic);
        assert!(parse("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n").is_clean());
    }
}
