//! `llmgw inspect`: what a build really is, read from its ELF files and
//! CUDA fatbins rather than from what its publisher says.
//!
//! - `elf.rs`: an ELF file's `DT_SONAME`, `DT_NEEDED`, `DT_RUNPATH`/`DT_RPATH`,
//!   symbol-version needs and fatbin sections, with the `object` crate.
//! - `fatbin.rs`: the CUDA fatbin container (`.nv_fatbin`, `__nv_relfatbin`),
//!   headers only (docs/fatbin.md).
//! - `summary.rs`: one build (every file of PATH) summed up: glibc and
//!   libstdc++ floors, SASS and PTX sets, the GPUs it has kernels for and the
//!   driver it needs, by [`llmgw_model::nvidia`]'s rules.
//! - `walk.rs` (real effects, see clippy.toml): PATH, a directory, an archive
//!   (`.tar.gz`, `.tgz`, `.zip`, `.whl`) or one file, into inspected files;
//!   archive members through memory or an anonymous temporary file.
//!
//! This file: [`FileReport`] (one ELF file inspected), [`inspect_reader`],
//! and [`InspectError`]. Every read is bounded; nothing reads a whole
//! library or a fatbin payload into memory.
//!
//! Uses: `facts` (what a file needs of a node). Reading paths, directories
//! and archives is `llmgw_system::walk`; the command line maps a report
//! onto the truth's `ElfStub`.

use std::collections::BTreeSet;
use std::io::{Read, Seek};

use object::read::ReadCache;

use llmgw_model::host::DottedVersion;

pub mod elf;
pub mod fatbin;
pub mod summary;

pub use elf::{ElfError, ElfFacts, SectionRange, VersionNeed};
pub use fatbin::{Entry, EntryKind, FatbinError, Suffix, Target};
pub use summary::{Coverage, Floor, Summary, Toolkit};

/// The symbol-version families a build's floors are taken of, as the
/// truth's `requires` lists them: glibc, libstdc++, its C++ ABI.
pub const VERSION_FAMILIES: [&str; 3] = ["GLIBC", "GLIBCXX", "CXXABI"];

/// One ELF file inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// Where it is in PATH: relative to the directory, the member's path in
    /// the archive, or the file's name; `/`-separated.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// What its headers say.
    pub elf: ElfFacts,
    /// Every image of its fatbins, in file order, `.nv_fatbin` first.
    pub kernels: Vec<Kernel>,
}

/// One image of a fatbin (a cubin or a PTX file) and the section holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// `.nv_fatbin` or `__nv_relfatbin`.
    pub section: &'static str,
    /// What its header says.
    pub entry: Entry,
}

impl FileReport {
    /// The CUDA runtime it links: the first `DT_NEEDED` named `libcudart.so…`.
    pub fn cudart(&self) -> Option<&str> {
        self.elf.needed.iter().map(String::as_str).find(|n| n.starts_with("libcudart.so"))
    }

    /// The symbol versions it requires of glibc, libstdc++ and its ABI
    /// ([`VERSION_FAMILIES`]: `GLIBC_2.17`, `GLIBCXX_3.4.30`, `CXXABI_1.3.9`),
    /// each once, by family then version.
    pub fn requires(&self) -> Vec<String> {
        let mut set: BTreeSet<(usize, DottedVersion, &str)> = BTreeSet::new();
        for name in self.elf.version_needs.iter().flat_map(|n| &n.versions) {
            if let Some((family, version)) = version_of(name) {
                set.insert((family, version, name));
            }
        }
        set.into_iter().map(|(_, _, name)| name.to_string()).collect()
    }

    /// The highest version of the family `GLIBC`, `GLIBCXX` or `CXXABI` it requires.
    pub fn floor(&self, family: &str) -> Option<DottedVersion> {
        let index = VERSION_FAMILIES.iter().position(|f| *f == family)?;
        let names = self.elf.version_needs.iter().flat_map(|n| &n.versions);
        names.filter_map(|n| version_of(n)).filter(|(f, _)| *f == index).map(|(_, v)| v).max()
    }

    /// The PTX ISA versions of its PTX images, each once, lowest first.
    pub fn ptx_isa(&self) -> Vec<(u16, u16)> {
        let set: BTreeSet<(u16, u16)> = self.kernels.iter().filter_map(|k| k.entry.ptx_isa).collect();
        set.into_iter().collect()
    }

    /// What the file needs of a node ([`crate::facts`]), its path under
    /// `root` as given: symbol versions, and its kernels with the toolkit
    /// of its newest PTX (else its runtime's major). Arch-specific PTX
    /// (`compute_120a`) is counted with the arch-specific machine code,
    /// family PTX (`compute_100f`) with the family's: both serve those GPUs.
    pub fn facts(&self) -> crate::facts::FileFacts {
        let mut cuda = crate::facts::CudaFacts::default();
        for k in &self.kernels {
            let cc = llmgw_model::host::ComputeCapability::new(k.entry.target.major, k.entry.target.minor);
            let list = match (k.entry.kind, k.entry.target.suffix) {
                (EntryKind::Elf | EntryKind::Ptx, Suffix::ArchSpecific) => &mut cuda.sass_exact,
                (EntryKind::Elf, _) | (EntryKind::Ptx, Suffix::FamilySpecific) => &mut cuda.sass,
                (EntryKind::Ptx, Suffix::None) => &mut cuda.ptx,
                _ => continue,
            };
            if !list.contains(&cc) {
                list.push(cc);
            }
            cuda.compressed |= k.entry.compressed();
        }
        let toolkit = self
            .ptx_isa()
            .last()
            .and_then(|&isa| llmgw_model::nvidia::ptx_isa_toolkit(isa))
            .map(|(a, b)| format!("{a}.{b}"))
            .or_else(|| self.cudart().and_then(|c| c.strip_prefix("libcudart.so.")).map(str::to_string));
        let has_kernels = !(cuda.sass.is_empty() && cuda.sass_exact.is_empty() && cuda.ptx.is_empty());
        crate::facts::FileFacts {
            path: self.path.clone(),
            requires: self.requires(),
            cuda: has_kernels.then(|| crate::facts::CudaFacts { toolkit: toolkit.unwrap_or_default(), ..cuda }),
        }
    }
}

/// `GLIBCXX_3.4.30` → (index of `GLIBCXX` in [`VERSION_FAMILIES`], 3.4.30).
fn version_of(name: &str) -> Option<(usize, DottedVersion)> {
    let (family, version) = name.split_once('_')?;
    let index = VERSION_FAMILIES.iter().position(|f| *f == family)?;
    Some((index, DottedVersion::parse(version).ok()?))
}

/// Why PATH, or a file in it, could not be inspected. Each names the file
/// (`dir/a.so`, or `torch/lib/a.so` in `x.whl`) and, inside a file, the offset.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// Opening or reading failed.
    #[error("cannot {op} {file}: {source}")]
    Io {
        /// What was being done: "open", "read", "list".
        op: &'static str,
        /// The file, quoted.
        file: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// PATH itself is one file and not an ELF file (inside a directory or
    /// an archive such a file is skipped and counted).
    #[error("{file} is not an ELF file ({what})")]
    NotElf {
        /// The file, quoted.
        file: String,
        /// What it is instead: "it is empty (0 bytes)", "it starts with 3c 21 44 4f".
        what: String,
    },
    /// An ELF file whose headers cannot be read: cut short, malformed.
    #[error("{file}: {source}")]
    Elf {
        /// The file, quoted.
        file: String,
        /// What is wrong and at which offset.
        source: ElfError,
    },
    /// A fatbin section that cannot be read.
    #[error("{file}: section {section}: {source}")]
    Fatbin {
        /// The file, quoted.
        file: String,
        /// `.nv_fatbin` or `__nv_relfatbin`.
        section: &'static str,
        /// What is wrong and at which offset.
        source: FatbinError,
    },
    /// A symbolic link in the tree that leads round in a loop.
    #[error("{file} is a symbolic link that leads round in a loop")]
    LinkLoop {
        /// The link, quoted.
        file: String,
    },
    /// PATH is neither a regular file, a directory nor an archive.
    #[error("{file} is not a regular file or a directory")]
    NotAFile {
        /// PATH, quoted.
        file: String,
    },
    /// An archive that cannot be read (not gzip'd tar, not a zip, cut short).
    #[error("archive {file}: {detail}")]
    Archive {
        /// The archive, quoted.
        file: String,
        /// What is wrong.
        detail: String,
    },
    /// More than the limits allow: files in PATH, bytes of a member.
    #[error("{file}: {what} is more than {limit}; refused")]
    TooLarge {
        /// The file or archive, quoted.
        file: String,
        /// What is too large.
        what: String,
        /// The limit.
        limit: u64,
    },
}

/// Inspects the ELF file `reader` (a `File`, a `Cursor` over bytes),
/// `bytes` long, named `file` in errors and `path` in the report: its
/// headers through a lazy [`ReadCache`], then each fatbin section's headers
/// at their offsets.
///
/// # Errors
/// [`InspectError::Elf`] or [`InspectError::Fatbin`], naming the offset.
pub fn inspect_reader<R: Read + Seek>(
    reader: R,
    path: &str,
    file: &str,
    bytes: u64,
) -> Result<FileReport, InspectError> {
    let cache = ReadCache::new(reader);
    let elf = elf::read(&cache).map_err(|source| InspectError::Elf { file: file.to_string(), source })?;
    let mut reader = cache.into_inner();
    let mut kernels = Vec::new();
    let mut sections = elf.fatbin_sections.clone();
    // `.nv_fatbin` first: what cuobjdump lists.
    sections.sort_by_key(|s| (s.name != fatbin::SECTION_FATBIN, s.offset));
    for s in &sections {
        let entries = fatbin::parse_section_at(&mut reader, s.offset, s.size)
            .map_err(|source| InspectError::Fatbin { file: file.to_string(), section: s.name, source })?;
        kernels.extend(entries.into_iter().map(|entry| Kernel { section: s.name, entry }));
    }
    Ok(FileReport { path: path.to_string(), bytes, elf, kernels })
}
