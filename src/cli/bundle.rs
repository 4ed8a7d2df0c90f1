//! `llmgw bundle create` and `llmgw bundle import`: every build a cluster
//! could need, fetched from the publisher into a directory or tar, and
//! imported into an offline site's mirror after every byte is checked.

use std::fmt::Write as _;
use std::path::PathBuf;

use llmgw_core::report::{EXIT_FAULT, EXIT_OK};
use llmgw_model::host::Arch;
use llmgw_system::offline::bundle::{self, BundleError};
use llmgw_system::offline::installer;

use super::input::{self, Failure};
use super::{output, progress, settings};

/// Arguments of `bundle`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// create or import.
    #[command(subcommand)]
    command: Command,
}

/// The bundle subcommands.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Fetch every build of each want for each architecture from the publisher into a directory or a tar.
    Create(CreateArgs),
    /// Check a bundle against its manifest's sha256 and place its files in a mirror directory.
    Import(ImportArgs),
}

/// Arguments of `bundle create`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  \
    llmgw bundle create --want llama.cpp@b10850 --want uv@0.12.20 \\\n      \
    --arch amd64 --arch arm64 --out llmgw-bundle.tar\n\n\
    Writes the bundle (manifest.json and <engine>/<version>/<asset>) and prints\n\
    the manifest's sha256, also written beside the bundle in\n\
    <out>.manifest.sha256: carry it apart from the bundle, to\n\
    `bundle import --manifest-sha256`.\n\n\
    --llmgw-dir dist/ also carries llmgw's own release archives for each\n\
    --arch (as ci/release.sh writes them), under llmgw/<version>/.\n\n\
    vLLM and SGLang are installed from PyPI, which a bundle does not carry.")]
struct CreateArgs {
    /// ENGINE@VERSION[:VARIANT] (llama.cpp, uv); repeatable. Without a variant, every build.
    #[arg(long = "want", value_name = "ENGINE@VERSION[:VARIANT]")]
    wants: Vec<String>,
    /// A wants file instead of --want.
    #[arg(long = "wants", value_name = "FILE")]
    wants_file: Option<PathBuf>,
    /// An architecture the builds are for: amd64 (or x86_64), arm64 (or aarch64); repeatable.
    #[arg(long = "arch", value_name = "ARCH", value_parser = parse_arch, required = true)]
    arches: Vec<Arch>,
    /// Where to write the bundle: a new directory, or a tar file when it ends in .tar.
    #[arg(long, value_name = "DIR|FILE.tar")]
    out: PathBuf,
    /// Also carry llmgw itself: the release archives of one version in DIR
    /// (llmgw-<version>-<target>.tar.gz and its .sha256, as ci/release.sh
    /// writes them) for each --arch, each checked against its .sha256 first.
    #[arg(long, value_name = "DIR")]
    llmgw_dir: Option<PathBuf>,
    /// GitHub's API and token.
    #[command(flatten)]
    github: settings::GithubArgs,
}

/// Arguments of `bundle import`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  \
    llmgw bundle import llmgw-bundle.tar \\\n      \
    --manifest-sha256 $(cat llmgw-bundle.tar.manifest.sha256) \\\n      \
    --mirror /srv/llmgw-mirror\n\n\
    Nothing is placed in the mirror unless the manifest has that sha256 and\n\
    every file of the bundle matches it, with no file missing and none extra.\n\
    Importing the same bundle again changes nothing.")]
struct ImportArgs {
    /// The bundle: a directory or a tar made by `bundle create`.
    #[arg(value_name = "BUNDLE")]
    bundle: PathBuf,
    /// The manifest's sha256 as `bundle create` printed it, carried apart from the bundle.
    #[arg(long, value_name = "HEX")]
    manifest_sha256: String,
    /// The mirror directory (created if absent, in an existing directory), laid out <engine>/<version>/<asset>.
    #[arg(long, value_name = "DIR")]
    mirror: PathBuf,
}

/// An architecture flag: `amd64`, `arm64`, ….
pub fn parse_arch(s: &str) -> Result<Arch, String> {
    // The GNU names (uv's variants, `uname -m`) are the same architectures.
    let name = match s {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    serde_json::from_value(serde_json::Value::String(name.to_string())).map_err(|_| {
        format!(
            "unknown architecture `{s}`; the architectures are amd64 (x86_64), arm64 (aarch64), ppc64le, s390x, riscv64"
        )
    })
}

/// Runs `bundle`.
pub fn run(args: Args) -> Result<i32, Failure> {
    match args.command {
        Command::Create(a) => create(a),
        Command::Import(a) => import(a),
    }
}

fn failure(e: BundleError) -> Result<i32, Failure> {
    match e {
        BundleError::Refused(m) => Err(Failure::BadInput(m)),
        BundleError::Io(m) => Err(Failure::Internal(m)),
        BundleError::Fetch(m) => {
            eprintln!("llmgw: error: {}; no bundle was written", llmgw_model::text::for_terminal(&m));
            Ok(EXIT_FAULT)
        }
    }
}

/// `1 file`, `12 files`.
fn files(n: usize) -> String {
    format!("{n} file{}", if n == 1 { "" } else { "s" })
}

fn create(args: CreateArgs) -> Result<i32, Failure> {
    let all = input::wants(&args.wants, args.wants_file.as_deref(), Vec::new)?;
    // Python engines are skipped with a note while another want remains;
    // with none left, bundle::create refuses them in words.
    let (python, carried): (Vec<_>, Vec<_>) = all.iter().cloned().partition(|w| w.engine.from_pypi());
    let wants = if carried.is_empty() {
        all
    } else {
        for w in &python {
            note!("llmgw: note: {w}: not carried by bundles (installed from PyPI)");
        }
        carried
    };
    // llmgw's own archives are checked before anything is downloaded.
    let own = match &args.llmgw_dir {
        Some(dir) => match installer::find(dir, &args.arches) {
            Ok(found) => found,
            Err(refused) => return failure(BundleError::Refused(refused)),
        },
        None => vec![],
    };
    let mut sys = args.github.real_system(progress::reporter())?;
    let made = match bundle::create(&mut sys, &args.github.github_api, &wants, &args.arches, &own, &args.out) {
        Ok(m) => m,
        Err(e) => return failure(e),
    };
    let mut out = format!(
        "bundle `{}`: {}, {} bytes\n",
        args.out.display(),
        files(made.manifest.files_by_path().len()),
        made.bytes
    );
    let engines = made
        .manifest
        .files
        .iter()
        .map(|e| [format!("{}@{}", e.engine, e.version), e.arch.to_string(), e.variant.clone(), e.asset.clone()]);
    let own = made
        .manifest
        .llmgw
        .iter()
        .map(|e| [format!("llmgw@{}", e.version), e.arch.to_string(), e.target.clone(), e.asset.clone()]);
    let rows: Vec<[String; 4]> = engines.chain(own).collect();
    let width = |i: usize| rows.iter().map(|r| r[i].len()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for [what, arch, variant, asset] in &rows {
        let _ = writeln!(out, "  {what:<w0$}  {arch:<w1$}  {variant:<w2$}  {asset}");
    }
    let _ = writeln!(out, "manifest sha256: {}", made.manifest_sha256);
    let _ =
        writeln!(out, "written beside the bundle to `{}`: carry it apart from the bundle", made.sha256_file.display());
    output::emit(&out)?;
    Ok(EXIT_OK)
}

fn import(args: ImportArgs) -> Result<i32, Failure> {
    let done = match bundle::import(&args.bundle, &args.manifest_sha256, &args.mirror) {
        Ok(d) => d,
        Err(e) => return failure(e),
    };
    let mirror = args.mirror.display();
    let text = if done.placed.is_empty() {
        match done.already.len() {
            1 => format!("nothing to import: the mirror `{mirror}` already holds the bundle's one file\n"),
            n => format!("nothing to import: the mirror `{mirror}` already holds all {n} files of the bundle\n"),
        }
    } else {
        let mut t = format!(
            "imported {} into the mirror `{mirror}` ({} already there)\n",
            files(done.placed.len()),
            done.already.len()
        );
        for p in &done.placed {
            let _ = writeln!(t, "  {p}");
        }
        t
    };
    output::emit(&text)?;
    Ok(EXIT_OK)
}
