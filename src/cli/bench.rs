//! Hidden commands for `ci/bench-vs-shell.sh`: llmgw's sha256 of a file and
//! its unpacker alone, so that each stage of an install can be timed against
//! the shell tool that does the same (`sha256sum`, `tar xzf`) on the same file.

// These commands read a file named on the command line and write into a
// directory named there, as `sha256sum` and `tar` do.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

use llmgw_core::archive::{self, Limits};

use super::input::Failure;

/// Arguments of `bench-sha256`.
#[derive(Debug, clap::Args)]
pub struct Sha256Args {
    /// The file to hash.
    file: PathBuf,
}

/// Arguments of `bench-unpack`.
#[derive(Debug, clap::Args)]
pub struct UnpackArgs {
    /// The `.tar.gz` to unpack.
    archive: PathBuf,
    /// The directory to unpack into; created when missing.
    into: PathBuf,
}

/// Prints `<sha256>  <file>` as `sha256sum` does, hashing with the reader
/// every downloaded or installed file goes through ([`archive::sha256_reader`]).
pub fn sha256(args: Sha256Args) -> Result<i32, Failure> {
    let f = std::fs::File::open(&args.file)
        .map_err(|e| Failure::BadInput(format!("cannot open `{}`: {e}", args.file.display())))?;
    let (_, hex) = archive::sha256_reader(f)
        .map_err(|e| Failure::BadInput(format!("cannot read `{}`: {e}", args.file.display())))?;
    println!("{hex}  {}", args.file.display());
    Ok(0)
}

/// Unpacks the archive with [`llmgw_system::unpack::unpack_tar_gz`] (the allowlist, each
/// file's sha256) and prints how many files and bytes it placed.
pub fn unpack(args: UnpackArgs) -> Result<i32, Failure> {
    let f = std::fs::File::open(&args.archive)
        .map_err(|e| Failure::BadInput(format!("cannot open `{}`: {e}", args.archive.display())))?;
    std::fs::create_dir_all(&args.into)
        .map_err(|e| Failure::BadInput(format!("cannot create `{}`: {e}", args.into.display())))?;
    let files = llmgw_system::unpack::unpack_tar_gz(f, &args.into, Limits::default())
        .map_err(|e| Failure::BadInput(format!("`{}`: {e}", args.archive.display())))?;
    let bytes: u64 = files.iter().map(|f| f.bytes).sum();
    println!("{} files, {bytes} bytes", files.len());
    Ok(0)
}
