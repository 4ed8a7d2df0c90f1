//! The truth: what each published build really contains and needs, read
//! from `mocks/` (embedded in the binary, so it runs from any directory).
//!
//! A [`Catalog`] holds [`Release`]s; each release's [`Asset`]s list their
//! files, and each ELF file is an [`ElfStub`] saying what it needs. The fake
//! release server packs these into real `.tar.gz` archives; the simulated
//! machine reads the stubs back from the unpacked tree.

use serde::{Deserialize, Serialize};

use crate::system::sim::stub::ElfStub;

/// Every release the fake server publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// The releases, in no particular order.
    pub releases: Vec<Release>,
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
    /// Where each fact of this file comes from.
    pub sources: Vec<String>,
    /// The release's assets, in the order GitHub lists them.
    pub assets: Vec<Asset>,
}

/// One release asset: a `.tar.gz` whose every entry sits under `top`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asset {
    /// The asset's file name: `llama-b10850-bin-ubuntu-vulkan-x64.tar.gz`.
    pub name: String,
    /// The one top-level directory of the archive: `llama-b10850`.
    pub top: String,
    /// The files under `top`, in archive order.
    pub files: Vec<File>,
}

/// One file of an asset: a simulated ELF file or plain text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}
