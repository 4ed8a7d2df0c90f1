//! llmgw's own release archives, as `ci/release.sh` writes them, carried by
//! a bundle so that an offline site installs the installer from the mirror
//! it installs engines from, checked against the same manifest.
//!
//! A release directory holds, per Rust target, `llmgw-<version>-<target>.tar.gz`
//! (a directory `llmgw-<version>-<target>/` with the binary `llmgw`,
//! README.md, LICENSE, CHANGELOG.md, `llmgw-agent.service`, the man page
//! `llmgw.1` and `completions/`) and beside it
//! `llmgw-<version>-<target>.tar.gz.sha256` (`<sha256>  <name>`, as
//! `sha256sum` writes it). [`find`] takes those of one version for the
//! architectures asked for, each archive checked against its `.sha256` and
//! opened to see that it holds the binary, before anything is bundled.

// Release archives are files on the operator's machine, read here as
// bundle.rs reads a bundle.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use llmgw_core::offline::release::{LlmgwEntry, archive_name, check_version, targets};
use llmgw_core::release::sidecar::{self, MAX_SIDECAR_BYTES};
use llmgw_model::host::Arch;

/// One file of a release found in a directory, with its manifest entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The manifest entry: size and sha256 as read from the file.
    pub entry: LlmgwEntry,
    /// The file in the release directory.
    pub path: PathBuf,
}

/// The release archives in `dir` for each of `arches` (every target of
/// [`targets`] present, at least one per architecture), each followed by its
/// `.sha256`, sorted as the manifest is.
///
/// # Errors
/// The refusal, one sentence (the command's exit 2), naming `--llmgw-dir` and the file: the directory
/// cannot be listed; it holds archives of more than one version; an
/// architecture has none (or llmgw is not released for it), or only its
/// static (musl) archive without the glibc one; an archive has
/// no `.sha256` beside it, or one that is not `sha256sum`'s line for it, or
/// its bytes do not match; an archive that is not a gzip tar holding
/// `llmgw-<version>-<target>/llmgw`.
pub fn find(dir: &Path, arches: &[Arch]) -> Result<Vec<Found>, String> {
    let refuse = |what: String| format!("--llmgw-dir `{}`: {what}", dir.display());
    let listing = fs::read_dir(dir).map_err(|e| refuse(e.to_string()))?;
    let mut names = BTreeSet::new();
    for entry in listing {
        names.insert(entry.map_err(|e| refuse(e.to_string()))?.file_name().to_string_lossy().into_owned());
    }
    // (version, arch, target) of every archive for the architectures asked.
    let mut archives = Vec::new();
    for name in &names {
        let Some(stem) = name.strip_prefix("llmgw-").and_then(|n| n.strip_suffix(".tar.gz")) else { continue };
        for &arch in arches {
            for target in targets(arch) {
                if let Some(version) = stem.strip_suffix(&format!("-{target}"))
                    && check_version(version).is_ok()
                {
                    archives.push((version.to_string(), arch, (*target).to_string()));
                }
            }
        }
    }
    let versions: BTreeSet<&str> = archives.iter().map(|(v, _, _)| v.as_str()).collect();
    if versions.len() > 1 {
        let list: Vec<&str> = versions.into_iter().collect();
        return Err(refuse(format!(
            "holds llmgw release archives of versions {}; give a directory of one release",
            list.join(", ")
        )));
    }
    for &arch in arches {
        if !archives.iter().any(|(_, a, _)| *a == arch) {
            let expected: Vec<String> = targets(arch).iter().map(|t| archive_name("VERSION", t)).collect();
            let why = if expected.is_empty() {
                format!("llmgw is not released for {arch}")
            } else {
                format!("has no llmgw release archive for {arch} ({})", expected.join(" or "))
            };
            return Err(refuse(why));
        }
        // The glibc build is the one that finds GPUs through NVML: a
        // directory with only the static one would carry less than the
        // release without a word.
        let glibc = targets(arch)[0];
        if !archives.iter().any(|(_, a, t)| *a == arch && t == glibc) {
            let version = archives.iter().find(|(_, a, _)| *a == arch).map_or("VERSION", |(v, _, _)| v.as_str());
            return Err(refuse(format!(
                "has no glibc release archive for {arch} (`{}`), only the static one: give the whole release",
                archive_name(version, glibc)
            )));
        }
    }
    let mut out = Vec::new();
    for (version, arch, target) in archives {
        let asset = archive_name(&version, &target);
        let path = dir.join(&asset);
        let sidecar_name = sidecar::name_of(&asset);
        let sidecar_path = dir.join(&sidecar_name);
        // Read as a release's sidecar is, and bounded as one.
        let said =
            crate::files::read_input(&sidecar_path, MAX_SIDECAR_BYTES, "a sha256 line").map_err(|e| match e {
                crate::files::InputError::TooLarge { .. } => refuse(format!(
                    "`{sidecar_name}` is longer than {MAX_SIDECAR_BYTES} bytes; a sha256 line is 100 or so"
                )),
                e => refuse(format!("`{sidecar_name}`, the sha256 of `{asset}`: {e}")),
            })?;
        let want = sidecar::parse(&said, &asset)
            .map_err(|why| refuse(format!("`{sidecar_name}`, the sha256 of `{asset}`, {why}")))?;
        let file = crate::files::open_regular(&path, true)
            .map_err(|e| refuse(format!("`{asset}`: {}", in_words(e))))?
            .ok_or_else(|| refuse(format!("`{asset}`: it does not exist")))?;
        let (size, got) = llmgw_core::archive::sha256_reader(file).map_err(|e| refuse(format!("`{asset}`: {e}")))?;
        if got != want {
            return Err(refuse(format!("`{asset}` has sha256 {got}; `{sidecar_name}` says {want}")));
        }
        let binary = format!("llmgw-{version}-{target}/llmgw");
        match holds_file(&path, &binary) {
            Ok(true) => {}
            Ok(false) => return Err(refuse(format!("`{asset}` does not hold `{binary}`"))),
            Err(e) => return Err(refuse(format!("`{asset}` is not a gzip tar: {e}"))),
        }
        let (sidecar_size, sidecar_sha256) = llmgw_core::archive::sha256_reader(said.as_slice())
            .map_err(|e| refuse(format!("`{sidecar_name}`: {e}")))?;
        let entry = LlmgwEntry { version: version.clone(), arch, target: target.clone(), asset, size, sha256: got };
        out.push(Found { entry: entry.clone(), path });
        let entry = LlmgwEntry { asset: sidecar_name, size: sidecar_size, sha256: sidecar_sha256, ..entry };
        out.push(Found { entry, path: sidecar_path });
    }
    out.sort_by(|a, b| a.entry.cmp(&b.entry));
    Ok(out)
}

/// What opening a file refused or failed with, without the path (the
/// caller names it).
fn in_words(e: llmgw_core::system::SysError) -> String {
    match e {
        llmgw_core::system::SysError::Refused { why, .. } => why.to_string(),
        llmgw_core::system::SysError::Io { message, .. } => message,
        e => e.to_string(),
    }
}

/// Whether the gzip tar at `path` holds a regular file at `inner`.
fn holds_file(path: &Path, inner: &str) -> io::Result<bool> {
    let gz = flate2::read::GzDecoder::new(io::BufReader::new(fs::File::open(path)?));
    let mut tar = tar::Archive::new(gz);
    for entry in tar.entries()? {
        let mut entry = entry?;
        let name = entry.path()?.to_string_lossy().trim_start_matches("./").to_string();
        if name == inner && entry.header().entry_type() == tar::EntryType::Regular {
            return Ok(true);
        }
        // Read through to the next header (and see that the data is whole).
        io::copy(&mut entry, &mut io::sink())?;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_released_architecture_has_a_glibc_target_first() {
        for arch in [Arch::Amd64, Arch::Arm64, Arch::Ppc64le, Arch::S390x] {
            assert!(targets(arch)[0].starts_with(arch.gnu()) && targets(arch)[0].ends_with("-gnu"), "{arch}");
        }
        assert!(targets(Arch::Riscv64).is_empty());
        assert!(check_version("0.1.0").is_ok() && check_version("1.2.3-rc.1+g1").is_ok());
        assert!(check_version("../x").is_err() && check_version("v1").is_err() && check_version("").is_err());
    }
}
