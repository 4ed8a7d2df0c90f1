//! The truth: what each published build really contains and needs, read
//! from `mocks/` (embedded in the binary, so it runs from any directory).
//!
//! A [`Catalog`] holds [`Release`]s; each release's [`Asset`]s list their
//! files, and each ELF file is an [`ElfStub`] saying what it needs. The fake
//! release server packs these into real `.tar.gz` archives; the simulated
//! machine reads the stubs back from the unpacked tree.
//!
//! | file | what lives there |
//! | --- | --- |
//! | `mod.rs` | the catalog's types: releases, assets, files, indexes, wheels, faults |
//! | `embedded.rs` | the catalog compiled in from `mocks/` |
//! | `stub.rs` | what a simulated ELF file says of itself |
//! | `scenario.rs` | variants of the truth (`mocks/scenarios/`) |
//! | `validate.rs` | whether a catalog can be served |
//!
//! Uses: nothing of this crate. Below it: the host, the recipes, the note
//! a stub's file gives a real installer (`llmgw_core::converge`), PEP 503 names.

pub mod embedded;
pub mod scenario;
pub mod stub;
#[cfg(test)]
mod tests;
mod validate;
/// Wheel file names and their tags, which the recipes read as well.
pub use llmgw_core::recipe::wheel_name;

use serde::{Deserialize, Serialize};

use stub::ElfStub;

pub use embedded::embedded_catalog;
pub use validate::epoch;

/// Every release and package index the fake server publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// The GitHub releases, in no particular order.
    pub releases: Vec<Release>,
    /// The Python package indexes (PyPI, PyTorch's), in no particular order.
    #[serde(default)]
    pub indexes: Vec<Index>,
    /// Faults the server answers with before (or instead of) the truth:
    /// a scenario's, never `mocks/`'s own.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Faults of the simulated machine itself (a scenario's `machine`).
    #[serde(default)]
    pub machine: MachineFaults,
}

/// A fault the fake server answers with, for `times` requests or always:
/// an HTTP error `status`, or a `body` that goes wrong on the way. Exactly
/// one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The release, `owner/name@tag`: `ggml-org/llama.cpp@b10850`.
    pub release: String,
    /// The asset whose download fails; absent: the release's metadata fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset: Option<String>,
    /// The HTTP status answered: 500, 502, 503, 429, 403.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What goes wrong with an answer that starts well (200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyFault>,
    /// How many requests are answered so; absent: every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    /// A `Retry-After` header, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
    /// GitHub's rate limit used up (`x-ratelimit-remaining: 0`), resetting
    /// this many seconds after the simulation's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_reset_in_secs: Option<u64>,
}

/// An answer that starts as a success and goes wrong on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BodyFault {
    /// The body stops halfway, the headers having announced all of it; the
    /// server closes the connection (the client reads an early end of file).
    CutShort,
    /// The connection drops right after the headers, before one byte of a
    /// body they announced. (A TCP reset cannot be sent through the mock
    /// library; to the client both are a connection that broke off.)
    Reset,
    /// The whole body arrives with one byte changed (a flipped bit on the
    /// way, a bad cache): the digest no longer matches.
    OneByteChanged,
    /// The answer comes [`SLOW_FAULT_SECS`] late, past any timeout llmgw
    /// uses (a scenario shortens the machine's with `http_timeout_secs`).
    Slow,
    /// A redirect to itself, for ever.
    RedirectLoop,
    /// The whole body (an asset's; none for release metadata), then zeros
    /// without end, with no `Content-Length`: a hostile or broken server
    /// that never stops sending.
    Endless,
}

/// How late a [`BodyFault::Slow`] answer comes, in seconds: past the
/// longest HTTP timeout llmgw uses (60 s, `provision`).
pub const SLOW_FAULT_SECS: u64 = 600;

/// Faults of the simulated machine: a scenario's `machine`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MachineFaults {
    /// The package manager fails whatever it is asked to install.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub package_manager_fails: bool,
    /// The disk fills up once downloads and unpacking have written this many
    /// bytes: the write that crosses it fails with ENOSPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_full_after_bytes: Option<u64>,
    /// The installer dies (no cleanup runs) just before its N-th change to
    /// the machine, counting from 1: a download, an unpack, a directory made,
    /// renamed or removed, a file written, a package installed. Once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash_before_change: Option<u32>,
    /// The installer's HTTP timeout on this machine, in seconds, in place of
    /// its usual 30: a scenario with a slow answer sets it low so that the
    /// timeout is reached in a moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_timeout_secs: Option<u64>,
    /// The compute check's program (`llama-bench`) goes wrong whatever it
    /// is asked: it hangs until its time limit kills it, or prints nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_program: Option<ProgramFault>,
    /// The GPU of this index (in the host description's order, from 0)
    /// falls off the bus right after the first device listing: listed,
    /// then gone when the build computes on it. Once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_lost_after_listing: Option<usize>,
    /// Every model file (`.gguf`) the installer writes reaches the disk
    /// damaged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_damaged: Option<ModelDamage>,
}

/// How a program goes wrong, whatever it is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProgramFault {
    /// It never ends: the time limit kills it, having printed nothing.
    Hangs,
    /// It exits 0 having printed nothing at all.
    PrintsNothing,
}

/// How a model file is damaged on its way to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelDamage {
    /// Only its first half is written.
    Truncated,
    /// Its magic `GGUF` reads `GGUX`.
    CorruptedMagic,
}

/// One GitHub release of one engine version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// The engine: `llama.cpp`, `uv`.
    pub engine: String,
    /// The engine version: `b10850`, `0.12.20`.
    pub version: String,
    /// `owner/name` of the GitHub repository.
    pub repo: String,
    /// The release tag (`b10850`, `0.12.20`, `v0.20.1`).
    pub tag: String,
    /// The commit the release was built from, short form.
    pub commit: String,
    /// When it was published, RFC 3339 UTC; also every archive entry's mtime.
    pub published_at: String,
    /// Whether GitHub marks it a prerelease (llama.cpp's `b<N>` releases
    /// are since 2026-08-25; docs/facts.md §1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prerelease: bool,
    /// Where each fact of this file comes from.
    pub sources: Vec<String>,
    /// The release's assets, in the order GitHub lists them.
    pub assets: Vec<Asset>,
}

impl Release {
    /// Whether this is the release `name` names: `owner/name@tag`
    /// (`ggml-org/llama.cpp@b10850`), as scenarios and faults name one.
    pub fn is_named(&self, name: &str) -> bool {
        name.split_once('@') == Some((self.repo.as_str(), self.tag.as_str()))
    }
}

/// One release asset: a `.tar.gz` whose every entry sits under `top`, or a
/// Python wheel (`wheel`, with `top` and `files` empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asset {
    /// The asset's file name: `llama-b10850-bin-ubuntu-vulkan-x64.tar.gz`.
    pub name: String,
    /// The one top-level directory of the archive: `llama-b10850`.
    #[serde(default)]
    pub top: String,
    /// The files under `top`, in archive order.
    #[serde(default)]
    pub files: Vec<File>,
    /// For a wheel asset, what the wheel is; its `filename` is the asset's `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wheel: Option<Dist>,
    /// Whether the download host serves bytes other than those GitHub
    /// digested (one byte changed): a corrupted mirror, for tests.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tampered: bool,
    /// Milliseconds the download host waits before answering: a slow
    /// mirror, for tests that interrupt a download.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Whether GitHub's API gives no `digest` for it (`null`): assets
    /// uploaded before June 2025. Source: GitHub changelog 2025-06-03
    /// ("Releases now expose digests for release assets"), PyGithub#3324.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_api_digest: bool,
    /// Instead of an archive, the asset is the `.sha256` file of the asset
    /// named here, as uv publishes one beside each archive: one line,
    /// `<64 hex>  <name>` and a newline. Source: astral-sh/uv
    /// `.github/workflows/build-release-binaries.yml` (`shasum -a 256
    /// <archive> > <archive>.sha256`; `sha256sum` writes two spaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_of: Option<String>,
    /// For a `sha256_of` asset: what it holds instead of the true line (a
    /// sidecar that disagrees with the archive, or is not a sidecar at
    /// all), set by a scenario's `digests[]`. Not read from `mocks/`.
    #[serde(skip)]
    pub sidecar_text: Option<String>,
    /// The archive's bytes as they are, in place of one built from `files`
    /// (GitHub's digest is of these): a hostile archive, for tests. Not read
    /// from `mocks/`.
    #[serde(skip)]
    pub archive: Option<Vec<u8>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One file of an asset: a simulated ELF file, plain text or a symbolic link.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// Path under the asset's `top`, `/`-separated: `llama-server`.
    pub path: String,
    /// An ELF file (executable or shared library, mode 0755) and what it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elf: Option<ElfStub>,
    /// A text file's contents (mode 0644).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Raw bytes (mode 0755): a real program built by a test, for the real
    /// machine's `ldd` and processes. Not read from `mocks/`.
    #[serde(skip)]
    pub raw: Option<Vec<u8>>,
    /// A symbolic link to this target instead of a file, relative to the
    /// link's directory and staying inside the asset (`libllama.so.0`, as
    /// the archives' SONAME chains `libllama.so -> libllama.so.0 ->
    /// libllama.so.0.6.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// A Python package index the fake server serves in PyPI's JSON simple API
/// (PEP 691): PyPI itself, or the PyTorch index of one CUDA version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Index {
    /// Which index: `pypi`, or `pytorch-cu129` (served under `/whl/cu129/`).
    pub name: String,
    /// Where each fact of this file comes from.
    pub sources: Vec<String>,
    /// Every wheel the index serves.
    pub dists: Vec<Dist>,
}

/// One wheel of one version of one project, and what it really holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// The project's name as published: `torch`, `sgl-kernel`.
    pub name: String,
    /// The version, local part included: `2.11.0+cu129`.
    pub version: String,
    /// The wheel's file name; its tags say which Pythons and platforms it
    /// installs on: `torch-2.11.0+cu129-cp312-cp312-manylinux_2_28_x86_64.whl`.
    pub filename: String,
    /// `Requires-Python`, when the project states one: `>=3.10`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_python: Option<String>,
    /// `Requires-Dist`: exact pins (`torch==2.11.0`) or bare names.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Top-level modules it installs: `["torch"]`, `["sgl_kernel"]`.
    pub modules: Vec<String>,
    /// Console scripts it installs into the environment's `bin/`: `["vllm"]`.
    #[serde(default)]
    pub scripts: Vec<String>,
    /// The GPU kernels it carries, for a package that computes on the GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<CudaTruth>,
    /// The wheel's ELF files that set its floors (the highest `GLIBC_` and
    /// `GLIBCXX_` any of its files needs), each written into the wheel as a
    /// stub and loaded when the package is imported: a newer glibc than the
    /// host's fails the import in the loader's words, whatever the wheel's
    /// platform tag says (vllm-project/vllm#41103).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elf: Vec<WheelElf>,
    /// When PyPI received the file, PEP 700's `upload-time` (RFC 3339 UTC);
    /// absent: the publisher's fixed instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_time: Option<String>,
}

/// One ELF file of a wheel (an extension module or a library it carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WheelElf {
    /// Its path in the wheel, `/`-separated: `vllm/_C.abi3.so`.
    pub path: String,
    /// The system libraries of its `DT_NEEDED` (`libc.so.6`,
    /// `libstdc++.so.6`, `libcuda.so.1`); those of the packages it needs
    /// (`libtorch.so`) are loaded by importing them first.
    #[serde(default)]
    pub needed: Vec<String>,
    /// The highest symbol version of each kind it needs: `GLIBC_2.34`,
    /// `GLIBCXX_3.4.21`, `CXXABI_1.3.9`.
    #[serde(default)]
    pub requires: Vec<String>,
}

impl Dist {
    /// The wheel's `.dist-info` directory name: `sgl_kernel-0.3.16.dist-info`,
    /// `torch-2.11.0+cu129.dist-info` (the name escaped per the binary
    /// distribution format: runs of `-`, `_`, `.` become one `_`, lowercase; the
    /// version as the truth writes it).
    pub fn dist_info(&self) -> String {
        format!("{}-{}.dist-info", llmgw_model::pep503::wheel_escape(&self.name), self.version)
    }
}

/// Which index an [`Index`] is, from its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum IndexKind {
    /// `pypi`: PyPI itself.
    Pypi,
    /// `pytorch-<variant>`: PyTorch's index of one CUDA version (`cu129`).
    Pytorch(String),
}

impl Index {
    /// Which index this is; `None` for a name that is neither `pypi` nor
    /// `pytorch-<variant>` (lowercase letters and digits).
    pub fn kind(&self) -> Option<IndexKind> {
        if self.name == "pypi" {
            return Some(IndexKind::Pypi);
        }
        let variant = self.name.strip_prefix("pytorch-")?;
        let ok = !variant.is_empty() && variant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        ok.then(|| IndexKind::Pytorch(variant.to_string()))
    }
}

/// What one CUDA package carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaTruth {
    /// The CUDA toolkit it was built with: `13.0`, `12.9`.
    pub toolkit: String,
    /// Compute capabilities carried as machine code: `["7.5", "8.0", …]`.
    pub sass: Vec<String>,
    /// Compute capabilities carried as PTX.
    #[serde(default)]
    pub ptx: Vec<String>,
    /// `import` fails on a GPU it has no kernels for (sgl-kernel loads its
    /// ops at import); otherwise the first computation does (torch).
    #[serde(default)]
    pub fails_at_import: bool,
}
