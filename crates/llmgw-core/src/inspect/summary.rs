//! One build summed up: every ELF file of PATH together.
//!
//! The floors are the highest symbol versions any file requires; the
//! kernel sets are the distinct SASS and PTX targets of every fatbin; what
//! follows from them (the GPUs it has kernels for, the driver it needs) is
//! [`llmgw_model::nvidia`]'s rules applied, each floor with its rule and source.

use std::collections::{BTreeMap, BTreeSet};

use super::fatbin::{EntryKind, Suffix, Target};
use super::{FileReport, VERSION_FAMILIES};
use llmgw_model::host::{ComputeCapability, DottedVersion};
use llmgw_model::nvidia::{self, DriverFloor};

/// The highest version of a symbol-version family the build requires, and
/// the first file (in PATH's order) that requires it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floor {
    /// `2.34`.
    pub version: DottedVersion,
    /// The file's path in PATH.
    pub file: String,
}

/// The CUDA toolkit a build was made with, and how that is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// `13.1`, or the major alone (`13`) when only the runtime's name says it.
    pub version: String,
    /// How it is known: `PTX ISA 9.1`, `libcudart.so.13`.
    pub from: String,
}

/// Which GPUs the build has kernels for, by compute capability.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Coverage {
    /// Those its machine code (SASS) runs on.
    pub sass: Vec<ComputeCapability>,
    /// Those only its PTX reaches, compiled by the driver (JIT).
    pub ptx_only: Vec<ComputeCapability>,
    /// Those it has no kernel for.
    pub none: Vec<ComputeCapability>,
}

/// Every file of a build together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// ELF files inspected.
    pub elf_files: usize,
    /// Those with a fatbin.
    pub cuda_files: usize,
    /// The floor of each of [`VERSION_FAMILIES`] (`GLIBC`, `GLIBCXX`, `CXXABI`), in that order.
    pub floors: [Option<Floor>; 3],
    /// The CUDA runtimes linked (`libcudart.so.13`), each once.
    pub cudart: Vec<String>,
    /// The distinct SASS targets, by number then suffix.
    pub sass: Vec<Target>,
    /// The distinct PTX targets.
    pub ptx: Vec<Target>,
    /// The distinct PTX ISA versions.
    pub ptx_isa: Vec<(u16, u16)>,
    /// Fatbin images, and how many are compressed.
    pub images: usize,
    /// Compressed images.
    pub compressed: usize,
    /// The toolkit: of the newest PTX ISA, else of the runtime.
    pub toolkit: Option<Toolkit>,
    /// The GPUs it has kernels for (empty without a fatbin).
    pub coverage: Coverage,
    /// The floors on the driver that loads its machine code.
    pub sass_driver: Vec<DriverFloor>,
    /// The floors on the driver that compiles its PTX: the above and JIT's own.
    pub ptx_driver: Vec<DriverFloor>,
    /// The toolkit that wrote its PTX when [`nvidia::ptx_jit_min_driver`]
    /// does not know it: no driver is known to compile that PTX.
    pub ptx_jit_unknown: Option<String>,
}

/// The compute capability a target is for: `sm_121a` → 12.1.
pub fn capability(t: &Target) -> ComputeCapability {
    ComputeCapability::new(t.major, t.minor)
}

/// A target written as the truth writes compute capabilities: `8.6`;
/// an arch-specific one `12.0a`; family-specific PTX `10.0f`. A
/// family-specific cubin (`sm_100f`) is written `10.0`: like any cubin it
/// runs on its family ([`nvidia::sass_runs_on`]).
pub fn label(kind: EntryKind, t: &Target) -> String {
    let suffix = match (kind, t.suffix) {
        (_, Suffix::ArchSpecific) => "a",
        (EntryKind::Ptx, Suffix::FamilySpecific) => "f",
        _ => "",
    };
    format!("{}{suffix}", capability(t))
}

impl Summary {
    /// Sums up `files`.
    pub fn of(files: &[FileReport]) -> Summary {
        let mut s = Summary { elf_files: files.len(), ..Summary::default() };
        let (mut sass, mut ptx) = (BTreeMap::new(), BTreeMap::new());
        let (mut isa, mut cudart) = (BTreeSet::new(), Vec::new());
        for f in files {
            for (i, family) in VERSION_FAMILIES.iter().enumerate() {
                if let Some(v) = f.floor(family)
                    && s.floors[i].as_ref().is_none_or(|have| v > have.version)
                {
                    s.floors[i] = Some(Floor { version: v, file: f.path.clone() });
                }
            }
            if let Some(c) = f.cudart()
                && !cudart.iter().any(|have| have == c)
            {
                cudart.push(c.to_string());
            }
            if !f.kernels.is_empty() {
                s.cuda_files += 1;
            }
            for k in &f.kernels {
                let e = &k.entry;
                s.images += 1;
                s.compressed += usize::from(e.compressed());
                let key = (e.target.arch, suffix_rank(e.target.suffix));
                match e.kind {
                    EntryKind::Elf => {
                        sass.insert(key, e.target);
                    }
                    EntryKind::Ptx => {
                        ptx.insert(key, e.target);
                    }
                    _ => {}
                }
                isa.extend(e.ptx_isa);
            }
        }
        cudart.sort();
        s.cudart = cudart;
        s.sass = sass.into_values().collect();
        s.ptx = ptx.into_values().collect();
        s.ptx_isa = isa.into_iter().collect();
        s.toolkit = toolkit(s.ptx_isa.last().copied(), &s.cudart);
        if s.images > 0 {
            s.coverage = coverage(&s.sass, &s.ptx);
            let runtime = runtime(&s.cudart).or_else(|| s.toolkit.as_ref().map(|t| t.version.clone()));
            s.sass_driver = nvidia::sass_driver_floors(runtime.as_deref(), s.compressed > 0);
            s.ptx_driver = s.sass_driver.clone();
            if !s.ptx.is_empty() {
                match s.toolkit.as_ref().map(|t| (t, nvidia::ptx_jit_floor(&t.version))) {
                    Some((_, Some(jit))) => s.ptx_driver.push(jit),
                    Some((t, None)) => s.ptx_jit_unknown = Some(t.version.clone()),
                    None => {}
                }
            }
        }
        s
    }

    /// The oldest driver branch that loads its machine code, when known.
    pub fn sass_driver_min(&self) -> Option<u32> {
        self.sass_driver.iter().map(|f| f.driver).max()
    }

    /// The oldest driver branch that compiles its PTX, when known (`None`
    /// for PTX of a toolkit the driver table does not know).
    pub fn ptx_driver_min(&self) -> Option<u32> {
        if self.ptx_jit_unknown.is_some() {
            return None;
        }
        self.ptx_driver.iter().map(|f| f.driver).max()
    }
}

fn suffix_rank(s: Suffix) -> u8 {
    match s {
        Suffix::None => 0,
        Suffix::FamilySpecific => 1,
        Suffix::ArchSpecific => 2,
    }
}

/// The toolkit of the newest PTX ISA (`9.1` → `13.1`); without PTX, the
/// runtime's major (`libcudart.so.13` → `13`).
fn toolkit(isa: Option<(u16, u16)>, cudart: &[String]) -> Option<Toolkit> {
    if let Some(isa) = isa
        && let Some((major, minor)) = nvidia::ptx_isa_toolkit(isa)
    {
        return Some(Toolkit { version: format!("{major}.{minor}"), from: format!("PTX ISA {}.{}", isa.0, isa.1) });
    }
    let name = cudart.iter().max_by_key(|c| runtime_major(c))?;
    Some(Toolkit { version: runtime_major(name)?.to_string(), from: name.clone() })
}

/// `libcudart.so.13` → 13.
fn runtime_major(cudart: &str) -> Option<u32> {
    cudart.strip_prefix("libcudart.so.")?.split('.').next()?.parse().ok()
}

/// The newest runtime linked, as a toolkit major: `13`.
fn runtime(cudart: &[String]) -> Option<String> {
    cudart.iter().filter_map(|c| runtime_major(c)).max().map(|m| m.to_string())
}

/// Every compute capability NVIDIA has made ([`nvidia::COMPUTE_CAPABILITIES`])
/// by what of this build runs there.
fn coverage(sass: &[Target], ptx: &[Target]) -> Coverage {
    let family: Vec<ComputeCapability> =
        sass.iter().filter(|t| t.suffix != Suffix::ArchSpecific).map(capability).collect();
    let exact: Vec<ComputeCapability> =
        sass.iter().filter(|t| t.suffix == Suffix::ArchSpecific).map(capability).collect();
    let mut c = Coverage::default();
    for &gpu in nvidia::COMPUTE_CAPABILITIES {
        let jit = ptx.iter().any(|t| match t.suffix {
            Suffix::None => nvidia::ptx_runs_on(capability(t), gpu),
            s => nvidia::specific_ptx_runs_on(capability(t), gpu, s == Suffix::ArchSpecific),
        });
        if nvidia::sass_covers(&family, &exact, gpu) {
            c.sass.push(gpu);
        } else if jit {
            c.ptx_only.push(gpu);
        } else {
            c.none.push(gpu);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::{ElfFacts, Kernel, VersionNeed};

    fn target(arch: u32, suffix: Suffix) -> Target {
        Target { arch, major: arch / 10, minor: arch % 10, suffix }
    }

    fn kernel(kind: EntryKind, arch: u32, suffix: Suffix, isa: Option<(u16, u16)>, compressed: bool) -> Kernel {
        let compression = if compressed {
            crate::inspect::fatbin::Compression::Zstd
        } else {
            crate::inspect::fatbin::Compression::None
        };
        Kernel {
            section: ".nv_fatbin",
            entry: crate::inspect::Entry {
                kind,
                target: target(arch, suffix),
                code_version: isa.unwrap_or((1, 8)),
                ptx_isa: isa,
                compression,
                stored_size: 8,
                payload_size: 8,
                uncompressed_size: None,
                offset: 0,
                payload_offset: 0,
                container_offset: 0,
                flags: 0,
                concatenated: None,
            },
        }
    }

    fn file(path: &str, needed: &[&str], versions: &[&str], kernels: Vec<Kernel>) -> FileReport {
        FileReport {
            path: path.into(),
            bytes: 1,
            elf: ElfFacts {
                needed: needed.iter().map(|s| s.to_string()).collect(),
                version_needs: vec![VersionNeed {
                    library: "libc.so.6".into(),
                    versions: versions.iter().map(|s| s.to_string()).collect(),
                }],
                ..ElfFacts::default()
            },
            kernels,
        }
    }

    #[test]
    fn floors_sets_coverage_and_drivers() {
        let cuda = file(
            "libggml-cuda.so",
            &["libcudart.so.13", "libc.so.6"],
            &["GLIBC_2.34", "GLIBCXX_3.4.30", "CXXABI_1.3.9", "GLIBC_2.2.5"],
            vec![
                kernel(EntryKind::Elf, 86, Suffix::None, None, true),
                kernel(EntryKind::Elf, 120, Suffix::ArchSpecific, None, true),
                kernel(EntryKind::Elf, 86, Suffix::None, None, true),
                kernel(EntryKind::Ptx, 75, Suffix::None, Some((9, 1)), true),
            ],
        );
        let base = file("libggml-base.so", &["libc.so.6"], &["GLIBC_2.35", "GLIBCXX_3.4.29"], vec![]);
        let s = Summary::of(&[cuda.clone(), base]);
        assert_eq!((s.elf_files, s.cuda_files, s.images, s.compressed), (2, 1, 4, 4));
        let floors: Vec<String> = s.floors.iter().map(|f| f.as_ref().unwrap().version.to_string()).collect();
        assert_eq!(floors, ["2.35", "3.4.30", "1.3.9"]);
        assert_eq!(s.floors[0].as_ref().unwrap().file, "libggml-base.so");
        assert_eq!(s.sass.iter().map(|t| t.to_string()).collect::<Vec<_>>(), ["sm_86", "sm_120a"]);
        assert_eq!(s.toolkit, Some(Toolkit { version: "13.1".into(), from: "PTX ISA 9.1".into() }));
        let cc = |v: &[ComputeCapability]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" ");
        assert_eq!(cc(&s.coverage.sass), "8.6 8.7 8.9 12.0");
        assert_eq!(cc(&s.coverage.ptx_only), "7.5 8.0 9.0 10.0 10.3 11.0 12.1");
        assert_eq!((s.sass_driver_min(), s.ptx_driver_min()), (Some(580), Some(590)));
        assert_eq!(cuda.requires(), ["GLIBC_2.2.5", "GLIBC_2.34", "GLIBCXX_3.4.30", "CXXABI_1.3.9"]);
    }

    #[test]
    fn labels_as_the_truth_writes_them() {
        assert_eq!(label(EntryKind::Elf, &target(86, Suffix::None)), "8.6");
        assert_eq!(label(EntryKind::Elf, &target(120, Suffix::ArchSpecific)), "12.0a");
        assert_eq!(label(EntryKind::Elf, &target(100, Suffix::FamilySpecific)), "10.0");
        assert_eq!(label(EntryKind::Ptx, &target(100, Suffix::FamilySpecific)), "10.0f");
    }

    #[test]
    fn without_ptx_the_runtime_names_the_toolkit() {
        let f = file(
            "a.so",
            &["libcudart.so.12"],
            &[],
            vec![kernel(EntryKind::Elf, 90, Suffix::ArchSpecific, None, false)],
        );
        let s = Summary::of(&[f]);
        assert_eq!(s.toolkit, Some(Toolkit { version: "12".into(), from: "libcudart.so.12".into() }));
        assert_eq!((s.sass_driver_min(), s.ptx_driver_min()), (Some(525), Some(525)));
        assert_eq!(s.coverage.sass, [ComputeCapability::new(9, 0)]);
        assert!(Summary::of(&[]).sass_driver.is_empty());
    }
}
