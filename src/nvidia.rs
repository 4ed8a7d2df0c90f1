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

/// Where a CUDA program meets a [`CudaRefusal`]: when the CUDA runtime
/// starts (`cudaGetDeviceCount`, which `--list-devices` calls), or at the
/// first kernel launched on the GPU (which listing devices never does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaStep {
    /// The runtime does not start: no device of the backend is listed.
    Init,
    /// The device is listed, and its first kernel fails.
    FirstKernel,
}

/// Why a CUDA build cannot compute on a GPU: CUDA's own error string
/// (`cudaGetErrorString`, what a program prints after `CUDA error: `), the
/// step it comes at, and the rule behind it in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaRefusal {
    /// When it happens.
    pub step: CudaStep,
    /// CUDA's string, exactly: `no kernel image is available for execution
    /// on the device` (cudaErrorNoKernelImageForDevice, 209), `the provided
    /// PTX was compiled with an unsupported toolchain.` (222, its period
    /// included), `device kernel image is invalid` (200), `CUDA driver
    /// version is insufficient for CUDA runtime version` (35). Source: CUDA
    /// Runtime API, `cudaError` (docs.nvidia.com/cuda/cuda-runtime-api).
    pub error: &'static str,
    /// The rule that decided it: `CUDA 13.4 PTX for compute capability 9.0
    /// needs driver 615, this is 580.95.05`.
    pub why: String,
}

impl std::fmt::Display for CudaRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.error, self.why)
    }
}

/// `cudaErrorInsufficientDriver`'s string.
pub const CUDA_INSUFFICIENT_DRIVER: &str = "CUDA driver version is insufficient for CUDA runtime version";

impl CudaKernels<'_> {
    /// Why this build cannot compute on a GPU of `gpu` under `driver`, or
    /// `None` when it can: the one decision, as the driver makes it. The
    /// runtime must run on the driver (else nothing starts); a compressed
    /// fatbin needs [`FATBIN_COMPRESSION_MIN_DRIVER`]; then machine code of
    /// the GPU's family (`sm_86` runs on 8.6 and 8.9, `sm_90a` on 9.0
    /// alone), else PTX of a compute capability at or below the GPU's,
    /// JIT-compiled only by a driver as new as the toolkit that wrote it
    /// ([`ptx_jit_min_driver`]).
    pub fn decide(&self, gpu: ComputeCapability, driver: &DriverVersion) -> Option<CudaRefusal> {
        let have = driver.major();
        let refuse = |step, error, why| Some(CudaRefusal { step, error, why });
        match runtime_min_driver(self.toolkit) {
            Some(need) if have >= need => {}
            Some(need) => {
                let why = format!("CUDA {} needs driver {need}, this is {driver}", self.toolkit);
                return refuse(CudaStep::Init, CUDA_INSUFFICIENT_DRIVER, why);
            }
            None => {
                let why = format!("no driver known to run CUDA {}", self.toolkit);
                return refuse(CudaStep::Init, CUDA_INSUFFICIENT_DRIVER, why);
            }
        }
        if self.compressed && have < FATBIN_COMPRESSION_MIN_DRIVER {
            let why = format!("compressed fatbin needs driver {FATBIN_COMPRESSION_MIN_DRIVER}, this is {driver}");
            return refuse(CudaStep::FirstKernel, "device kernel image is invalid", why);
        }
        if sass_covers(self.sass, self.sass_exact, gpu) {
            return None;
        }
        let jit = ptx_jit_min_driver(self.toolkit);
        match self.ptx.iter().any(|&b| ptx_runs_on(b, gpu)) {
            true if jit.is_some_and(|need| have >= need) => None,
            true => refuse(
                CudaStep::FirstKernel,
                "the provided PTX was compiled with an unsupported toolchain.",
                format!(
                    "CUDA {} PTX for compute capability {gpu} needs driver {}, this is {driver}",
                    self.toolkit,
                    jit.map_or("unknown".to_string(), |n| n.to_string())
                ),
            ),
            false => refuse(
                CudaStep::FirstKernel,
                "no kernel image is available for execution on the device",
                format!("compute capability {gpu}"),
            ),
        }
    }

    /// [`CudaKernels::decide`] in one sentence: CUDA's string, then the
    /// rule in brackets.
    pub fn refusal(&self, gpu: ComputeCapability, driver: &DriverVersion) -> Option<String> {
        self.decide(gpu, driver).map(|r| r.to_string())
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
    fn cuda_13_needs_580() {
        let k = CudaKernels { toolkit: "13.3", sass: &[cc("9.0")], sass_exact: &[], ptx: &[], compressed: true };
        assert!(k.refusal(cc("9.0"), &drv("570.133.20")).unwrap().contains("insufficient"));
        assert_eq!(k.refusal(cc("9.0"), &drv("580.95.05")), None);
    }
}
