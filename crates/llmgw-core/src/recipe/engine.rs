//! Engine descriptors: what the installer knows of each engine beyond its
//! recipe, as data — how its builds are published, its variants, how its
//! versions are written, how an installed binary is asked its version, and
//! the recipe that plans it. Each engine's file (`llama_cpp.rs`, `uv.rs`,
//! `vllm.rs`, `sglang.rs`) declares its [`Descriptor`]; everything that
//! differs by engine outside the recipes asks the descriptor, so adding an
//! engine is its file, its truth, and its name in [`Engine`].

use llmgw_model::host::Host;

use super::{Engine, Plan, Published, Refusal, Want};

/// What the installer knows of one engine.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    /// The engine described.
    pub engine: Engine,
    /// Its name in wants and reports: `llama.cpp`, `vllm`.
    pub name: &'static str,
    /// Other names a want may give it (`llamacpp`, `llama-cpp`), lower case.
    pub aliases: &'static [&'static str],
    /// Where its builds are published.
    pub publisher: Publisher,
    /// The variants it publishes.
    pub variants: Variants,
    /// How its publisher writes versions.
    pub versions: VersionSyntax,
    /// A version of it whose builds were read into the truth, for a message
    /// that suggests one: `b11459`, `0.20.1`.
    pub example: &'static str,
    /// How an installed binary of it (a configured one) is asked its version.
    pub checked_with: VersionCheck,
    /// Whether a node reports it among its engines: uv, a tool the Python
    /// engines are installed with, is not reported.
    pub reported: bool,
    /// The recipe: which of its builds may run on a host, best first.
    pub(crate) plan: fn(&Want, &Host, Published) -> Result<Plan, Refusal>,
}

/// Where an engine's builds are published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    /// Archives attached to the GitHub releases of `repo`, one release per version.
    Releases {
        /// `owner/name`: `ggml-org/llama.cpp`, `astral-sh/uv`.
        repo: &'static str,
        /// Whether a release's asset list decides which builds the version
        /// has (llama.cpp's builds come and go between releases); when not,
        /// the recipe's rules alone decide.
        assets_decide: bool,
        /// Whether a release marked prerelease is passed over when `latest`
        /// is resolved (uv's are; every llama.cpp release is a build).
        skip_prereleases: bool,
    },
    /// Wheels on PyPI, installed into a Python environment by uv: never
    /// carried by an offline mirror or bundle.
    PyPi {
        /// The PyPI project: `vllm`, `sglang`.
        project: &'static str,
    },
}

/// The variants an engine publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variants {
    /// Exactly these names: `cu13`, `cu129`, `cu12`.
    Named(&'static [&'static str]),
    /// These names, and `cuda-<major>.<minor>` for any CUDA toolkit
    /// (llama.cpp's CUDA builds are named after theirs).
    NamedAndCuda {
        /// The fixed names: `cpu`, `vulkan`.
        named: &'static [&'static str],
        /// Every variant in words, for a message.
        in_words: &'static str,
    },
}

/// How a publisher writes an engine's versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSyntax {
    /// A build tag, `b` and the build number: `b10850`; ordered by the number.
    BuildTag,
    /// A PEP 440 release of at least two dotted numbers, no leading `v`:
    /// `0.20.1`, `0.5.5.post1`.
    Pep440,
}

/// How an installed binary is asked its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionCheck {
    /// The arguments: `--version`, or an interpreter's `-c` and a program.
    pub args: &'static [&'static str],
    /// What was asked, in words: `--version`, `` `import sglang` ``.
    pub asked: &'static str,
}

impl VersionCheck {
    /// The program's own `--version`.
    pub const VERSION_FLAG: VersionCheck = VersionCheck { args: &["--version"], asked: "--version" };
}

impl Descriptor {
    /// Whether its builds come from PyPI (vLLM, SGLang) rather than release archives.
    pub fn from_pypi(&self) -> bool {
        matches!(self.publisher, Publisher::PyPi { .. })
    }

    /// The GitHub repository whose releases publish its builds, for an
    /// engine published as release archives.
    pub fn repository(&self) -> Option<&'static str> {
        match self.publisher {
            Publisher::Releases { repo, .. } => Some(repo),
            Publisher::PyPi { .. } => None,
        }
    }

    /// Whether it publishes a build named `variant`.
    pub fn is_variant(&self, variant: &str) -> bool {
        match self.variants {
            Variants::Named(names) => names.contains(&variant),
            Variants::NamedAndCuda { named, .. } => {
                named.contains(&variant) || variant.strip_prefix("cuda-").and_then(toolkit).is_some()
            }
        }
    }

    /// Its variants in words, for a message: `cu13, cu129, cu12`.
    pub fn variants_in_words(&self) -> String {
        match self.variants {
            Variants::Named(names) => names.join(", "),
            Variants::NamedAndCuda { in_words, .. } => in_words.to_string(),
        }
    }
}

/// A CUDA toolkit `major.minor` read from text, each part one to three
/// digits: `13.4` → `(13, 4)`.
pub(crate) fn toolkit(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('.')?;
    let ok = |t: &str| !t.is_empty() && t.len() <= 3 && t.bytes().all(|c| c.is_ascii_digit());
    (ok(a) && ok(b)).then(|| (a.parse().ok(), b.parse().ok())).and_then(|(a, b)| Some((a?, b?)))
}

impl Engine {
    /// Whether its builds come from PyPI: [`Descriptor::from_pypi`].
    pub fn from_pypi(self) -> bool {
        self.descriptor().from_pypi()
    }
}
