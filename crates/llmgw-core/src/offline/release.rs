//! llmgw's own release archives, as `ci/release.sh` writes them and a
//! bundle carries them: their names, the targets per architecture, the
//! manifest's entry. Found on disk by `llmgw_system::offline::installer`.

use serde::{Deserialize, Serialize};

use llmgw_model::host::Arch;

/// The directory of a bundle and a mirror that holds llmgw's own release:
/// `llmgw/<version>/<asset>`. No engine is named so.
pub const MIRROR_DIR: &str = "llmgw";

/// The Rust targets llmgw is released for, by architecture: glibc (2.17 and
/// newer, NVML through `dlopen`) first, then static musl (GPUs through
/// `nvidia-smi`). Riscv64 has none.
pub fn targets(arch: Arch) -> &'static [&'static str] {
    match arch {
        Arch::Amd64 => &["x86_64-unknown-linux-gnu", "x86_64-unknown-linux-musl"],
        Arch::Arm64 => &["aarch64-unknown-linux-gnu", "aarch64-unknown-linux-musl"],
        Arch::Ppc64le => &["powerpc64le-unknown-linux-gnu"],
        Arch::S390x => &["s390x-unknown-linux-gnu"],
        Arch::Riscv64 => &[],
    }
}

/// `llmgw-<version>-<target>.tar.gz`.
pub fn archive_name(version: &str, target: &str) -> String {
    format!("llmgw-{version}-{target}.tar.gz")
}

/// Whether `version` is written as llmgw's versions are (Cargo's: digits,
/// dots, and a pre-release or build part of letters, digits, `-`, `+`, `.`).
///
/// # Errors
/// A sentence naming the version.
pub fn check_version(version: &str) -> Result<(), String> {
    let ok = version.starts_with(|c: char| c.is_ascii_digit())
        && version.len() <= 64
        && version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    if ok { Ok(()) } else { Err(format!("`{version}` is not a version of llmgw (such as 0.1.0)")) }
}

/// One file of llmgw's own release for one target: the archive
/// `llmgw-<version>-<target>.tar.gz` or its `.sha256` beside it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmgwEntry {
    /// llmgw's version: `0.1.0`.
    pub version: String,
    /// The architecture the binary is for: `amd64`.
    pub arch: Arch,
    /// The Rust target it was built for: `x86_64-unknown-linux-gnu`.
    pub target: String,
    /// The file's name.
    pub asset: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256 of the file, lowercase hex; checked against the `.sha256`
    /// beside the archive when the bundle was made.
    pub sha256: String,
}

impl LlmgwEntry {
    /// Where the file lies in a bundle and in a mirror:
    /// `llmgw/0.1.0/llmgw-0.1.0-x86_64-unknown-linux-gnu.tar.gz`.
    pub fn path(&self) -> String {
        format!("{}/{}/{}", MIRROR_DIR, self.version, self.asset)
    }
}
