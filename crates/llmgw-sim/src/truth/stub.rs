//! Simulated executables and libraries: what a file of a simulated build
//! says about itself, in place of ELF headers.
//!
//! The fake release server writes every ELF file of a build's truth as an
//! [`ElfStub`]: the ELF magic, a marker line, then one line of JSON. The
//! simulated machine reads it back from the unpacked tree to answer `ldd`,
//! the version command, `--list-devices` and `llama-bench` for that very
//! file, so what is checked is what was downloaded, unpacked and is still
//! on disk.

use serde::{Deserialize, Serialize};

/// The first bytes of every simulated ELF file: the real ELF magic, then a
/// marker no real ELF has there.
pub const MAGIC: &[u8] = b"\x7fELF\n#llmgw-simulated-elf\n";

/// What the installer says of a stub that reaches a real machine (`llmgw
/// provision` against the fake publisher): the real `ldd` finds no dynamic
/// executable, and this says why.
pub const NOT_A_BUILD: llmgw_core::converge::NotABuild = llmgw_core::converge::NotABuild {
    magic: MAGIC,
    says: "is a simulated program from llmgw's fake release server, not a real build: it runs only in `llmgw simulate`",
};

/// What one ELF file needs and does.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElfStub {
    /// `DT_NEEDED`: libraries the loader must find (`libllama.so`, `libc.so.6`).
    #[serde(default)]
    pub needed: Vec<String>,
    /// Symbol versions the file requires of system libraries: `GLIBC_2.35`, `GLIBCXX_3.4.30`.
    #[serde(default)]
    pub requires: Vec<String>,
    /// `DT_RUNPATH`; `$ORIGIN` is the file's own directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runpath: Option<String>,
    /// What the program prints for its version command, when it is a program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionOutput>,
    /// Whether the program answers `--list-devices` as `llama-server` does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lists_devices: bool,
    /// Whether the program runs a model as `llama-bench` does (`-m FILE
    /// -dev DEVICE … -o jsonl`): loads it with the backends beside it and
    /// computes on the device, the GPU deciding as the real one would.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bench: bool,
    /// The ggml backend this library is, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    /// The program the simulated machine runs this file as, beyond its
    /// version command: `uv` (venv, pip install) or `python` (`-c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulates: Option<Emulated>,
}

/// Programs the simulated machine emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Emulated {
    /// uv: `uv venv`, `uv pip install`.
    Uv,
    /// A Python interpreter of a uv environment: `python -c CODE`.
    Python,
}

/// A program's version output.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionOutput {
    /// The arguments that print it: `["--version"]`.
    pub args: Vec<String>,
    /// What goes to standard output.
    #[serde(default)]
    pub stdout: String,
    /// What goes to standard error (`llama-server` prints its version there).
    #[serde(default)]
    pub stderr: String,
}

/// A ggml backend module, loaded by `llama-server` at run time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Backend {
    /// A CPU backend: lists no device.
    Cpu,
    /// The RPC backend: lists no device without servers.
    Rpc,
    /// The Vulkan backend: lists each GPU whose driver has a Vulkan ICD.
    Vulkan,
    /// The CUDA backend and the kernels it carries.
    Cuda {
        /// CUDA toolkit it was built with: `12.8`.
        toolkit: String,
        /// Compute capabilities carried as machine code: `["8.6", "8.9"]`.
        sass: Vec<String>,
        /// Compute capabilities carried as PTX.
        ptx: Vec<String>,
        /// Whether its fatbins are compressed.
        compressed: bool,
    },
}

impl ElfStub {
    /// The file's bytes: [`MAGIC`] then the JSON on one line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(serde_json::to_vec(self).expect("a stub always serializes"));
        out.push(b'\n');
        out
    }

    /// Reads a file's bytes back; `None` for anything that is not a
    /// simulated ELF file (a text file, a corrupted one).
    pub fn from_bytes(bytes: &[u8]) -> Option<ElfStub> {
        serde_json::from_slice(bytes.strip_prefix(MAGIC)?).ok()
    }

    /// Whether the bytes start like an ELF file (real or simulated).
    pub fn looks_like_elf(bytes: &[u8]) -> bool {
        bytes.starts_with(b"\x7fELF")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_other_files() {
        let stub = ElfStub {
            needed: vec!["libc.so.6".into()],
            requires: vec!["GLIBC_2.35".into()],
            backend: Some(Backend::Cuda {
                toolkit: "12.8".into(),
                sass: vec!["8.6".into()],
                ptx: vec![],
                compressed: true,
            }),
            ..ElfStub::default()
        };
        assert_eq!(ElfStub::from_bytes(&stub.to_bytes()), Some(stub.clone()));
        assert_eq!(ElfStub::from_bytes(b"MIT License"), None);
        let mut flipped = stub.to_bytes();
        let last = flipped.len() - 3;
        flipped[last] ^= 0x20;
        assert_eq!(ElfStub::from_bytes(&flipped), None);
    }
}
