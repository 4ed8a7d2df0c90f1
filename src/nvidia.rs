//! NVIDIA's rules: which driver runs which CUDA, and which kernels run on
//! which GPU. One place, each number beside its source.
//!
//! These are facts about NVIDIA's software, not choices of the installer:
//! recipes state what a build needs in their terms, and the simulated
//! machine ([`crate::sim::machine`]) decides with them whether a build's
//! kernels load on a host's GPUs.

use crate::host::{ComputeCapability, DriverVersion};

/// Oldest driver branch that runs CUDA 13.x binaries (minor-version
/// compatibility). Source: NVIDIA CUDA Compatibility guide, "Minor Version
/// Compatibility" (docs.nvidia.com/deploy/cuda-compatibility); uv's
/// `LINUX_CUDA_DRIVERS` table (cu130, cu132: 580).
pub const CUDA13_MIN_DRIVER: u32 = 580;

/// Oldest driver branch that runs CUDA 12.x binaries (minor-version
/// compatibility, 525.60.13). Source: as [`CUDA13_MIN_DRIVER`]; uv's table
/// (cu120–cu129: 525.60.13).
pub const CUDA12_MIN_DRIVER: u32 = 525;

/// Oldest driver branch that can load fatbins compressed by nvcc 12.4+
/// (ggml's `GGML_CUDA_COMPRESSION_MODE`, default `size`); older drivers fail
/// with "device kernel image is invalid" although the 525 floor is met.
/// Source: `ollama/ollama@discover/cuda_compat.go`
/// (`minFatbinCompressionNVIDIADriverMajor = 550`), ollama PR #16895 (a V100
/// on 535), canonical/inference-snaps#255.
pub const FATBIN_COMPRESSION_MIN_DRIVER: u32 = 550;

/// The driver branch a CUDA toolkit's PTX needs to be compiled by the driver
/// (JIT): PTX is only as portable as the driver is new, and a toolkit's PTX
/// ISA is first read by the driver branch the toolkit ships with. `None` for
/// a toolkit this table does not know (never guessed).
///
/// Sources: the driver in the file name of each toolkit's Linux runfile
/// (`cuda_<toolkit>_<driver>_linux.run`, NVIDIA's download catalog, first
/// update of each minor): 12.8.0 570.86.10, 12.9.0 575.51.03, 13.0.0
/// 580.65.06, 13.1.0 590.44.01, 13.2.0 595.45.04, 13.3.0 610.43.02; 13.4.1
/// 615.71.09 (its runfile no longer names the driver; the 615 branch is
/// "CUDA UMD 13.4" in public install scripts; 13.4.0 had no Linux runfile).
/// `ollama/ollama@discover/cuda_compat.go` agrees for 12.8
/// (`minLegacyComputeJITNVIDIADriverMajor = 570`). See docs/facts.md,
/// "CUDA toolkits and their drivers".
pub fn ptx_jit_min_driver(toolkit: &str) -> Option<u32> {
    let (major, minor) = toolkit.split_once('.')?;
    let (major, minor): (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
    match (major, minor) {
        (12, 8) => Some(570),
        (12, 9) => Some(575),
        (13, 0) => Some(580),
        (13, 1) => Some(590),
        (13, 2) => Some(595),
        (13, 3) => Some(610),
        (13, 4) => Some(615),
        _ => None,
    }
}

/// The driver branch that runs a CUDA runtime of this toolkit at all
/// (minor-version compatibility): 580 for 13.x, 525 for 12.x. `None` for a
/// toolkit older than 12 or newer than 13 (unknown here).
pub fn runtime_min_driver(toolkit: &str) -> Option<u32> {
    match toolkit.split('.').next()?.parse::<u32>().ok()? {
        13 => Some(CUDA13_MIN_DRIVER),
        12 => Some(CUDA12_MIN_DRIVER),
        _ => None,
    }
}

/// Whether machine code (SASS) built for `built` runs on a GPU of `gpu`:
/// same major, minor at least the build's. Source: NVIDIA CUDA C++
/// Programming Guide, "Binary Compatibility". `XXa` arch-specific cubins
/// run only on exactly that compute capability ([`CudaKernels::sass_exact`]).
pub fn sass_runs_on(built: ComputeCapability, gpu: ComputeCapability) -> bool {
    built.major == gpu.major && gpu.minor >= built.minor
}

/// Whether machine code for the families `sass` (`86-real`) or for exactly
/// `sass_exact` (`120a-real`) runs on a GPU of `gpu`.
pub fn sass_covers(sass: &[ComputeCapability], sass_exact: &[ComputeCapability], gpu: ComputeCapability) -> bool {
    sass.iter().any(|&b| sass_runs_on(b, gpu)) || sass_exact.contains(&gpu)
}

/// Whether PTX built for `built` can be compiled for `gpu`: any GPU of that
/// compute capability or newer. Source: CUDA C++ Programming Guide,
/// "Application Compatibility". The driver must also be new enough for the
/// toolkit's PTX ([`ptx_jit_min_driver`]).
pub fn ptx_runs_on(built: ComputeCapability, gpu: ComputeCapability) -> bool {
    built <= gpu
}

/// Whether PTX built for an architecture-specific target (`compute_120a`,
/// `exact`) or a family-specific one (`compute_100f`) can be compiled for
/// `gpu`: the first for exactly that compute capability, the second for the
/// members of its family (same major, minor at least the build's). Source:
/// CUDA C++ Programming Guide, "Feature Availability" (architecture-specific
/// and family-specific features); nvcc's `compute_XXXa`/`compute_XXXf`.
pub fn specific_ptx_runs_on(built: ComputeCapability, gpu: ComputeCapability, exact: bool) -> bool {
    if exact { built == gpu } else { sass_runs_on(built, gpu) }
}

/// The compute capabilities of NVIDIA's CUDA GPUs, Kepler to Blackwell:
/// what "the GPUs a build has kernels for" is asked of. Source: NVIDIA's
/// "CUDA GPU Compute Capability" table (developer.nvidia.com/cuda-gpus) and
/// the CUDA C++ Programming Guide's "Compute Capabilities" (10.1 is 11.0
/// since CUDA 13).
pub const COMPUTE_CAPABILITIES: &[ComputeCapability] = &[
    ComputeCapability::new(3, 5),
    ComputeCapability::new(3, 7),
    ComputeCapability::new(5, 0),
    ComputeCapability::new(5, 2),
    ComputeCapability::new(5, 3),
    ComputeCapability::new(6, 0),
    ComputeCapability::new(6, 1),
    ComputeCapability::new(6, 2),
    ComputeCapability::new(7, 0),
    ComputeCapability::new(7, 2),
    ComputeCapability::new(7, 5),
    ComputeCapability::new(8, 0),
    ComputeCapability::new(8, 6),
    ComputeCapability::new(8, 7),
    ComputeCapability::new(8, 9),
    ComputeCapability::new(9, 0),
    ComputeCapability::new(10, 0),
    ComputeCapability::new(10, 3),
    ComputeCapability::new(11, 0),
    ComputeCapability::new(12, 0),
    ComputeCapability::new(12, 1),
];

/// The CUDA toolkit (major, minor) whose compiler writes PTX of ISA version
/// `isa` (the `.version` line; a fatbin entry's header carries it): the
/// oldest toolkit, and so the oldest driver's compiler, that reads it.
/// `None` before PTX ISA 8.0 (CUDA 12.0).
///
/// Source: NVIDIA's PTX ISA release history ("PTX ISA Version / CUDA
/// Release", docs.nvidia.com/cuda/parallel-thread-execution, "Release
/// Notes"), as NVIDIA's `cuda-python` `cuda/bindings/utils/_ptx_utils.py`
/// tabulates it: 8.0–8.5 are CUDA 12.0–12.5, 8.6 is 12.7, 8.7 is 12.8, 8.8
/// is 12.9, 9.0 and 9.1 are 13.0 and 13.1. 9.2 and later follow 9.N = 13.N
/// (UNCONFIRMED beyond 9.1; nvcc 13.5 writes 9.5, tests/fixtures/cuda/).
pub fn ptx_isa_toolkit(isa: (u16, u16)) -> Option<(u32, u32)> {
    match isa {
        (8, m @ 0..=5) => Some((12, u32::from(m))),
        (8, 6) => Some((12, 7)),
        (8, 7) => Some((12, 8)),
        (8, 8) => Some((12, 9)),
        (9, m) => Some((13, u32::from(m))),
        _ => None,
    }
}

/// Where the driver floors below come from, in words.
pub mod source {
    /// [`super::CUDA13_MIN_DRIVER`], [`super::CUDA12_MIN_DRIVER`].
    pub const MINOR_VERSION_COMPATIBILITY: &str =
        "NVIDIA CUDA Compatibility guide, \"Minor Version Compatibility\" (docs.nvidia.com/deploy/cuda-compatibility)";
    /// [`super::FATBIN_COMPRESSION_MIN_DRIVER`].
    pub const FATBIN_COMPRESSION: &str =
        "ollama/ollama@discover/cuda_compat.go (minFatbinCompressionNVIDIADriverMajor = 550), ollama PR #16895";
    /// [`super::ptx_jit_min_driver`].
    pub const PTX_JIT: &str = "the driver each CUDA toolkit's Linux runfile ships (cuda_<toolkit>_<driver>_linux.run): 12.8 570, 12.9 575, 13.0 580, 13.1 590, 13.2 595, 13.3 610, 13.4 615; docs/facts.md, \"CUDA toolkits and their drivers\"";
}

/// One floor on the driver: the oldest driver branch a rule allows, the
/// rule in words, and where the rule comes from ([`source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverFloor {
    /// The driver branch: 580.
    pub driver: u32,
    /// The rule: "the CUDA 13 runtime needs driver 580".
    pub rule: String,
    /// Where the rule comes from.
    pub source: &'static str,
}

/// The floors on the driver that loads a build's machine code: its CUDA
/// runtime's ([`runtime_min_driver`] of `runtime`, the toolkit its runtime
/// is of: `13`, `12.8`) and, when any of its fatbins is compressed,
/// [`FATBIN_COMPRESSION_MIN_DRIVER`]. A runtime this table does not know
/// gives no floor.
pub fn sass_driver_floors(runtime: Option<&str>, compressed: bool) -> Vec<DriverFloor> {
    let mut out = Vec::new();
    if let Some(toolkit) = runtime
        && let Some(driver) = runtime_min_driver(toolkit)
    {
        let major = toolkit.split('.').next().unwrap_or(toolkit);
        out.push(DriverFloor {
            driver,
            rule: format!("the CUDA {major} runtime needs driver {driver}"),
            source: source::MINOR_VERSION_COMPATIBILITY,
        });
    }
    if compressed {
        out.push(DriverFloor {
            driver: FATBIN_COMPRESSION_MIN_DRIVER,
            rule: format!("compressed fatbins need driver {FATBIN_COMPRESSION_MIN_DRIVER}"),
            source: source::FATBIN_COMPRESSION,
        });
    }
    out
}

/// The floor on the driver that compiles (JIT) PTX written by CUDA
/// `toolkit` (`13.1`): [`ptx_jit_min_driver`]; `None` for a toolkit it does
/// not know.
pub fn ptx_jit_floor(toolkit: &str) -> Option<DriverFloor> {
    let driver = ptx_jit_min_driver(toolkit)?;
    Some(DriverFloor {
        driver,
        rule: format!("CUDA {toolkit}'s PTX needs driver {driver} to be compiled"),
        source: source::PTX_JIT,
    })
}

/// What one CUDA build carries: its toolkit, its kernels, and whether its
/// fatbins are compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaKernels<'a> {
    /// The toolkit it was built with: `12.8`.
    pub toolkit: &'a str,
    /// Compute capabilities carried as machine code for the family
    /// (`86-real`: runs on 8.6, 8.7, 8.9).
    pub sass: &'a [ComputeCapability],
    /// Compute capabilities carried as arch-specific machine code (`120a-real`):
    /// runs on exactly that compute capability. Source: CUDA C++ Programming
    /// Guide, "Feature Availability" (arch-specific features); ggml's
    /// CMakeLists rewrites 120 to 120a.
    pub sass_exact: &'a [ComputeCapability],
    /// Compute capabilities carried as PTX.
    pub ptx: &'a [ComputeCapability],
    /// Whether the fatbins are compressed (needs [`FATBIN_COMPRESSION_MIN_DRIVER`]).
    pub compressed: bool,
}

impl CudaKernels<'_> {
    /// Why this build cannot compute on a GPU of `gpu` under `driver`, or
    /// `None` when it can. The sentence is the loader's view of it: the
    /// runtime the driver cannot run, the compressed fatbin it cannot load,
    /// the kernel image that is missing.
    pub fn refusal(&self, gpu: ComputeCapability, driver: &DriverVersion) -> Option<String> {
        let have = driver.major();
        match runtime_min_driver(self.toolkit) {
            Some(need) if have >= need => {}
            Some(need) => {
                return Some(format!(
                    "CUDA driver version is insufficient for CUDA runtime version (CUDA {} needs driver {need}, this is {driver})",
                    self.toolkit
                ));
            }
            None => return Some(format!("no driver known to run CUDA {}", self.toolkit)),
        }
        if self.compressed && have < FATBIN_COMPRESSION_MIN_DRIVER {
            return Some(format!(
                "device kernel image is invalid (compressed fatbin needs driver {FATBIN_COMPRESSION_MIN_DRIVER}, this is {driver})"
            ));
        }
        if sass_covers(self.sass, self.sass_exact, gpu) {
            return None;
        }
        let jit = ptx_jit_min_driver(self.toolkit);
        match self.ptx.iter().any(|&b| ptx_runs_on(b, gpu)) {
            true if jit.is_some_and(|need| have >= need) => None,
            true => Some(format!(
                "the provided PTX was compiled with an unsupported toolchain (CUDA {} PTX for compute capability {gpu} needs driver {}, this is {driver})",
                self.toolkit,
                jit.map_or("unknown".to_string(), |n| n.to_string())
            )),
            false => {
                Some(format!("no kernel image is available for execution on the device (compute capability {gpu})"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(s: &str) -> ComputeCapability {
        ComputeCapability::parse(s).unwrap()
    }
    fn drv(s: &str) -> DriverVersion {
        DriverVersion::parse(s).unwrap()
    }

    #[test]
    fn sass_is_forward_compatible_within_a_major_only() {
        assert!(sass_runs_on(cc("8.6"), cc("8.9")));
        assert!(sass_runs_on(cc("8.6"), cc("8.7")));
        assert!(!sass_runs_on(cc("8.6"), cc("8.0")));
        assert!(!sass_runs_on(cc("8.9"), cc("9.0")));
    }

    #[test]
    fn cuda_12_8_build_on_a_3090() {
        let sass = [cc("8.6"), cc("8.9")];
        let exact = [cc("12.0")];
        let ptx = [cc("5.0"), cc("6.1"), cc("7.0"), cc("7.5"), cc("8.0"), cc("9.0")];
        let k = CudaKernels { toolkit: "12.8", sass: &sass, sass_exact: &exact, ptx: &ptx, compressed: true };
        assert_eq!(k.refusal(cc("8.6"), &drv("550.54.14")), None);
        let on_535 = k.refusal(cc("8.6"), &drv("535.183.01")).unwrap();
        assert!(on_535.contains("compressed fatbin needs driver 550"), "{on_535}");
        // A T4 has only PTX: 570 needed for CUDA 12.8's.
        assert!(k.refusal(cc("7.5"), &drv("550.54.14")).unwrap().contains("needs driver 570"));
        assert_eq!(k.refusal(cc("7.5"), &drv("570.124.06")), None);
        // 120a-real is for 12.0 alone: a GB10 (12.1) needs the 9.0 PTX, so 570.
        assert_eq!(k.refusal(cc("12.0"), &drv("550.144.03")), None);
        assert!(k.refusal(cc("12.1"), &drv("550.144.03")).unwrap().contains("needs driver 570"));
        // A Kepler card predates every kernel.
        assert!(k.refusal(cc("3.7"), &drv("570.124.06")).unwrap().contains("no kernel image"));
    }

    #[test]
    fn ptx_isa_versions_name_their_toolkit() {
        assert_eq!(ptx_isa_toolkit((8, 8)), Some((12, 9)));
        assert_eq!(ptx_isa_toolkit((8, 6)), Some((12, 7)));
        assert_eq!(ptx_isa_toolkit((9, 1)), Some((13, 1)));
        assert_eq!(ptx_isa_toolkit((7, 8)), None);
    }

    #[test]
    fn driver_floors_name_their_rule() {
        let f = sass_driver_floors(Some("13"), true);
        assert_eq!(f.iter().map(|f| f.driver).collect::<Vec<_>>(), [580, 550]);
        assert!(f[0].rule.contains("CUDA 13 runtime"), "{}", f[0].rule);
        assert!(sass_driver_floors(None, false).is_empty());
        assert_eq!(ptx_jit_floor("13.1").map(|f| f.driver), Some(590));
        assert_eq!(ptx_jit_floor("12.4"), None);
        assert!(specific_ptx_runs_on(cc("10.0"), cc("10.3"), false));
        assert!(!specific_ptx_runs_on(cc("12.0"), cc("12.1"), true));
    }

    #[test]
    fn cuda_13_needs_580() {
        let k = CudaKernels { toolkit: "13.3", sass: &[cc("9.0")], sass_exact: &[], ptx: &[], compressed: true };
        assert!(k.refusal(cc("9.0"), &drv("570.133.20")).unwrap().contains("insufficient"));
        assert_eq!(k.refusal(cc("9.0"), &drv("580.95.05")), None);
    }
}
