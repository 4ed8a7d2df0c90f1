//! Host descriptions: what a machine is, as JSON (every field in matrix/README.md).
//!
//! [`Host`] is the parsed, validated form; [`Host::from_json`] parses strictly
//! (unknown fields are errors, a missing field names its JSON path) and
//! [`HostError`] says what was wrong and where. `llmgw discover` writes the
//! same format, so any real node can be replayed in simulation.
//!
//! `versions.rs` holds the version numbers (compute capability, driver,
//! dotted); `l4t.rs` a Jetson's L4T release; `mig.rs` a GPU's MIG
//! instances; `settings.rs` the `--set PATH=VALUE` changes. Uses: `strict_json`.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

mod l4t;
mod mig;
mod settings;
mod versions;

pub use l4t::{FIRST_SBSA_RELEASE, L4T_PATTERN, L4tParseError, L4tRelease};
pub use mig::{
    MAX_COMPUTE_SLICES, MIG_FROM_COMPUTE_CAPABILITY, MigError, MigInstance, MigProfile, MigProfileError, MigUuid,
    MigUuidError, check_instances,
};
pub use settings::Setting;
pub use versions::{ComputeCapability, DottedVersion, DriverVersion, VersionTextError};

/// A machine as the installer sees it.
///
/// Shape (every field required unless said otherwise):
///
/// ```json
/// {"name": "v100-ubuntu22.04-driver535", "arch": "amd64",
///  "os": {"id": "ubuntu", "version": "22.04", "package_family": "deb",
///         "libc": "glibc", "glibc": "2.35", "glibcxx": "3.4.30"},
///  "cpu": {"model": "Intel Xeon E5-2686 v4", "flags": ["avx2"]},
///  "nvidia": {"driver": "535.183.01", "vulkan_icd": true,
///             "gpus": [{"name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0", "memory_mib": 16384}]},
///  "disk_free_gb": 200,
///  "packages": {"installed": ["libgomp1"], "installable": true}}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// What the machine is, in a few words; shown in every report.
    pub name: String,
    /// Processor architecture.
    pub arch: Arch,
    /// Operating system and its C and C++ runtimes.
    pub os: Os,
    /// Processor model and flags.
    pub cpu: Cpu,
    /// The NVIDIA driver and GPUs; `null` or absent on a machine without one.
    #[serde(default)]
    pub nvidia: Option<Nvidia>,
    /// Free space, in GB (10^9 bytes), on the file system engines are installed to.
    pub disk_free_gb: u64,
    /// Operating system packages present and whether more can be installed.
    pub packages: Packages,
}

/// Processor architecture, in Go/Debian names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// x86-64.
    Amd64,
    /// 64-bit Arm (aarch64).
    Arm64,
    /// 64-bit little-endian POWER.
    Ppc64le,
    /// IBM Z.
    S390x,
    /// 64-bit RISC-V.
    Riscv64,
}

impl Arch {
    /// The name as written in host descriptions: `amd64`, `arm64`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
            Arch::Ppc64le => "ppc64le",
            Arch::S390x => "s390x",
            Arch::Riscv64 => "riscv64",
        }
    }

    /// The GNU triple's processor part: `x86_64`, `aarch64`, ….
    pub fn gnu(self) -> &'static str {
        match self {
            Arch::Amd64 => "x86_64",
            Arch::Arm64 => "aarch64",
            Arch::Ppc64le => "powerpc64le",
            Arch::S390x => "s390x",
            Arch::Riscv64 => "riscv64",
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The operating system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Os {
    /// `ID` of `/etc/os-release`: `ubuntu`, `debian`, `rhel`, `amzn`, `alpine`.
    pub id: String,
    /// `VERSION_ID` of `/etc/os-release`: `22.04`, `9`.
    pub version: String,
    /// Which package manager installs OS packages.
    pub package_family: PackageFamily,
    /// The C library kind.
    pub libc: Libc,
    /// glibc version `major.minor` (`2.35`); `null` (or absent) on a musl system.
    #[serde(default)]
    pub glibc: Option<DottedVersion>,
    /// The newest `GLIBCXX_3.4.N` the system libstdc++ provides, as `3.4.N`;
    /// `null` (or absent) where there is no libstdc++.
    #[serde(default)]
    pub glibcxx: Option<DottedVersion>,
    /// The system's own CPython, when it has one (`/usr/bin/python3.12`);
    /// absent: none that uv would find. What a Python engine's environment
    /// ran on before llmgw gave the engines a Python of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<SystemPython>,
    /// Whether this is WSL 2 (a `microsoft-standard-WSL2` kernel): the
    /// driver is the Windows host's, its `libcuda.so.1` and
    /// `libnvidia-ml.so.1` are in [`WSL_DRIVER_LIBRARIES`] (NVIDIA's "CUDA on
    /// WSL" user guide), and there is no `/proc/driver/nvidia`. Absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wsl: bool,
}

/// Where WSL 2 puts the Windows driver's Linux libraries (`libcuda.so.1`,
/// `libnvidia-ml.so.1`): a Linux driver's copies elsewhere must not be
/// loaded there. Source: NVIDIA's "CUDA on WSL" user guide ("the CUDA
/// driver installed on Windows host will be stubbed inside the WSL 2 as
/// libcuda.so"; "/usr/lib/wsl/lib").
pub const WSL_DRIVER_LIBRARIES: &str = "/usr/lib/wsl/lib";

/// The system's CPython: `{"version": "3.12.3", "headers": false}`.
///
/// Ubuntu 24.04 ships `/usr/bin/python3.12` without `Python.h`, which is in
/// the separate `python3.12-dev` package (packages.ubuntu.com/noble,
/// python3.12-dev's file list); Triton compiles its launcher against it at
/// first use (vllm-project/vllm#27890, sgl-project/sglang#1117).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemPython {
    /// Its version, `major.minor.patch`: `3.12.3`.
    pub version: String,
    /// Whether its C headers (`include/python3.12/Python.h`) are installed.
    pub headers: bool,
}

/// How the distribution packages software.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PackageFamily {
    /// dpkg and apt-get (Debian, Ubuntu).
    Deb,
    /// rpm and dnf (RHEL, Rocky, Alma, Amazon Linux, Fedora).
    Rpm,
    /// apk (Alpine).
    Apk,
    /// No package manager the installer can use.
    None,
}

impl PackageFamily {
    /// The name as written in host descriptions.
    pub fn as_str(self) -> &'static str {
        match self {
            PackageFamily::Deb => "deb",
            PackageFamily::Rpm => "rpm",
            PackageFamily::Apk => "apk",
            PackageFamily::None => "none",
        }
    }
}

/// The C library a system is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Libc {
    /// GNU C library.
    Glibc,
    /// musl (Alpine): loads no binary linked against glibc.
    Musl,
}

/// The processor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// Model name, as `/proc/cpuinfo` says it.
    pub model: String,
    /// Flags from `/proc/cpuinfo` (`avx2`, `fma`, …); a set, so order does not matter.
    pub flags: BTreeSet<String>,
}

/// The NVIDIA side of a machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nvidia {
    /// Kernel driver version: `535.183.01`.
    pub driver: DriverVersion,
    /// Whether the driver's Vulkan ICD is installed (false in many containers).
    #[serde(default = "yes", deserialize_with = "true_unless_false")]
    #[schemars(with = "Option<bool>")]
    pub vulkan_icd: bool,
    /// The GPUs, at least one.
    pub gpus: Vec<Gpu>,
    /// A Jetson's L4T release (`R36.4.3`, from `/etc/nv_tegra_release`):
    /// what decides its CUDA stack. Absent on every other machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l4t: Option<L4tRelease>,
}

fn yes() -> bool {
    true
}

/// `vulkan_icd`: absent or `null` is true.
fn true_unless_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

/// One NVIDIA GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Product name, as NVML says it: `Tesla V100-SXM2-16GB`.
    pub name: String,
    /// Compute capability; accepted as `"7.0"` or `7.0`.
    pub compute_capability: ComputeCapability,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// The MIG instances, when MIG mode is on: then CUDA's devices are
    /// these, not the GPU. Absent or empty: MIG off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigInstance>,
}

/// Operating system packages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Packages {
    /// Package names present, in the family's own names (`libgomp1`, `libgomp`).
    pub installed: BTreeSet<String>,
    /// Whether the package manager can install more (false: air-gapped, no repository).
    pub installable: bool,
}

/// Why a host description was refused.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Not JSON, or JSON not of the host shape; `path` is the JSON path of
    /// the problem (`nvidia.gpus[0].compute_capability`), `.` for the whole.
    #[error("{path}: {message}")]
    Shape {
        /// Where in the document.
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// Well-formed but contradictory (a glibc system without its glibc version).
    #[error("{path}: {message}")]
    Invalid {
        /// Where in the document.
        path: String,
        /// What is wrong there.
        message: String,
    },
}

/// The most GPUs a host description may list: a bound on the work one
/// host makes (the simulation checks every GPU against every build; 5,000
/// GPUs took 43 s), far above the largest single node (an HGX board holds
/// 8 or 16; NVIDIA's NVL72 rack is 18 nodes of 4).
pub const MAX_GPUS: usize = 256;

/// The longest name a host or a GPU may have, in characters: a hostname is
/// at most 253 (RFC 1035's 255 octets of a wire name), NVML's device name
/// at most 96 (nvml.h, `NVML_DEVICE_NAME_V2_BUFFER_SIZE`, "large enough for
/// nvmlDeviceGetName"); a name is printed on every line of a fleet's
/// report.
pub const MAX_NAME_CHARS: usize = 256;

/// The JSON Schema (draft 2020-12) of a host description, generated from
/// [`Host`] itself (`llmgw schema host`): for editors, which check a file as
/// it is typed. The parser is stricter where the schema cannot say it: a
/// GPU's MIG instances must fit it (memory, compute slices, one UUID each,
/// MIG from compute capability 8.0; `Host::from_json`).
pub fn json_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(Host).to_value();
    schema["$id"] = "https://github.com/llmgw/llmgw/schema/host.json".into();
    // What `Host::validate` checks beyond the types, said in the schema's terms.
    let not_blank = serde_json::json!("\\S");
    schema["properties"]["name"]["pattern"] = not_blank.clone();
    schema["properties"]["name"]["maxLength"] = MAX_NAME_CHARS.into();
    let defs = &mut schema["$defs"];
    defs["Gpu"]["properties"]["name"]["pattern"] = not_blank;
    defs["Gpu"]["properties"]["name"]["maxLength"] = MAX_NAME_CHARS.into();
    defs["Nvidia"]["properties"]["gpus"]["minItems"] = 1.into();
    defs["Nvidia"]["properties"]["gpus"]["maxItems"] = MAX_GPUS.into();
    defs["Gpu"]["properties"]["mig"]["maxItems"] = MAX_COMPUTE_SLICES.into();
    let version = |pattern: &str| serde_json::json!([{"type": "string", "pattern": pattern}, {"type": "null"}]);
    defs["Os"]["properties"]["glibc"]["anyOf"] = version("^\\s*2\\.[0-9]+\\s*$");
    defs["Os"]["properties"]["glibcxx"]["anyOf"] = version("^\\s*3\\.4\\.[0-9]+\\s*$");
    defs["Os"]["if"] = serde_json::json!({"properties": {"libc": {"const": "glibc"}}});
    defs["Os"]["then"] = serde_json::json!({"required": ["glibc"], "properties": {"glibc": {"type": "string"}}});
    defs["Os"]["else"] = serde_json::json!({"properties": {"glibc": {"type": "null"}}});
    // A set: the parser takes a name given twice as once.
    for (def, field) in [("Cpu", "flags"), ("Packages", "installed")] {
        if let Some(p) = defs[def]["properties"][field].as_object_mut() {
            p.remove("uniqueItems");
        }
    }
    // An L4T release is a Jetson's, and a Jetson is arm64.
    schema["if"] = serde_json::json!({
        "required": ["nvidia"],
        "properties": {"nvidia": {"type": "object", "required": ["l4t"]}}
    });
    schema["then"] = serde_json::json!({"properties": {"arch": {"const": "arm64"}}});
    schema
}

impl Host {
    /// Parses and validates a host description.
    ///
    /// # Errors
    /// [`HostError::Shape`] for malformed JSON, an unknown or missing field or
    /// a value of the wrong form, naming the JSON path; [`HostError::Invalid`]
    /// for a description whose parts contradict each other.
    pub fn from_json(text: &str) -> Result<Host, HostError> {
        let host: Host = crate::strict_json::parse(
            text,
            &["os", "cpu", "nvidia", "nvidia.gpus[*]", "nvidia.gpus[*].mig[*]", "packages"],
        )
        .map_err(|e| HostError::Shape { path: e.path, message: e.message })?;
        host.validate()?;
        Ok(host)
    }

    fn validate(&self) -> Result<(), HostError> {
        let invalid = |path: &str, message: &str| HostError::Invalid { path: path.into(), message: message.into() };
        if self.name.trim().is_empty() {
            return Err(invalid("name", "must say what the machine is"));
        }
        let too_long = |name: &str| name.chars().count() > MAX_NAME_CHARS;
        let long = |n: &str| format!("is {} characters long; a name has at most {MAX_NAME_CHARS}", n.chars().count());
        if too_long(&self.name) {
            return Err(invalid("name", &long(&self.name)));
        }
        // Every string was checked by the one rule for text from files
        // when the document was read (crate::strict_json, crate::text).
        if self.os.libc == Libc::Glibc && self.os.glibc.is_none() {
            return Err(invalid("os.glibc", "a glibc system must give its glibc version (like \"2.35\")"));
        }
        if let Some(g) = &self.os.glibc
            && (g.parts().len() != 2 || g.parts()[0] != 2)
        {
            return Err(invalid("os.glibc", &format!("`{g}` is not a glibc version like \"2.35\"")));
        }
        if let Some(g) = &self.os.glibcxx
            && (g.parts().len() != 3 || g.parts()[..2] != [3, 4])
        {
            return Err(invalid("os.glibcxx", &format!("`{g}` is not a GLIBCXX version like \"3.4.30\"")));
        }
        if self.os.libc == Libc::Musl && self.os.glibc.is_some() {
            return Err(invalid("os.glibc", "a musl system has no glibc; use null"));
        }
        if let Some(nv) = &self.nvidia {
            if nv.gpus.is_empty() {
                return Err(invalid("nvidia.gpus", "lists no GPU; a machine without NVIDIA GPUs has \"nvidia\": null"));
            }
            if nv.gpus.len() > MAX_GPUS {
                return Err(invalid(
                    "nvidia.gpus",
                    &format!("lists {} GPUs; a machine has at most {MAX_GPUS}", nv.gpus.len()),
                ));
            }
            for (i, g) in nv.gpus.iter().enumerate() {
                if g.name.trim().is_empty() {
                    return Err(invalid(&format!("nvidia.gpus[{i}].name"), "is empty"));
                }
                if too_long(&g.name) {
                    return Err(invalid(&format!("nvidia.gpus[{i}].name"), &long(&g.name)));
                }
                let cc = (g.compute_capability.major, g.compute_capability.minor);
                mig::check_instances(&g.mig, cc, g.memory_mib)
                    .map_err(|e| invalid(&format!("nvidia.gpus[{i}].mig"), &e.to_string()))?;
            }
            let mut uuids = BTreeSet::new();
            for (i, g) in nv.gpus.iter().enumerate() {
                for (j, m) in g.mig.iter().enumerate() {
                    if !uuids.insert(&m.uuid) {
                        let path = format!("nvidia.gpus[{i}].mig[{j}].uuid");
                        return Err(invalid(&path, &format!("{} is given to another instance too", m.uuid)));
                    }
                }
            }
            if nv.l4t.is_some() && self.arch != Arch::Arm64 {
                return Err(invalid(
                    "nvidia.l4t",
                    &format!("an L4T release is a Jetson's, and a Jetson is arm64, not {}", self.arch),
                ));
            }
        }
        Ok(())
    }

    /// The compute capability selection goes by: the lowest of the GPUs',
    /// since a build must run on every card. `None` without NVIDIA GPUs.
    pub fn min_compute_capability(&self) -> Option<ComputeCapability> {
        self.nvidia.as_ref()?.gpus.iter().map(|g| g.compute_capability).min()
    }

    /// The NVIDIA driver, when there is one.
    pub fn driver(&self) -> Option<&DriverVersion> {
        self.nvidia.as_ref().map(|n| &n.driver)
    }

    /// Free disk in bytes (`disk_free_gb` × 10^9).
    pub fn disk_free_bytes(&self) -> u64 {
        self.disk_free_gb.saturating_mul(1_000_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V100: &str = r#"{
      "name": "v100", "arch": "amd64",
      "os": {"id": "ubuntu", "version": "22.04", "package_family": "deb", "libc": "glibc", "glibc": "2.35", "glibcxx": "3.4.30"},
      "cpu": {"model": "Xeon", "flags": ["avx2"]},
      "nvidia": {"driver": "535.183.01", "gpus": [{"name": "Tesla V100-SXM2-16GB", "compute_capability": 7.0, "memory_mib": 16384}]},
      "disk_free_gb": 200,
      "packages": {"installed": ["libgomp1"], "installable": true}
    }"#;

    #[test]
    fn parses_the_design_example_with_a_numeric_compute_capability() {
        let h = Host::from_json(V100).unwrap();
        assert_eq!(h.min_compute_capability(), Some(ComputeCapability::new(7, 0)));
        assert_eq!(h.driver().unwrap().major(), 535);
        assert!(h.nvidia.as_ref().unwrap().vulkan_icd, "vulkan_icd defaults to true");
    }

    #[test]
    fn unknown_field_is_named_with_its_path() {
        let text = V100.replace("\"memory_mib\"", "\"vram\": 1, \"memory_mib\"");
        let e = Host::from_json(&text).unwrap_err().to_string();
        assert!(e.starts_with("nvidia.gpus[0]"), "{e}");
        assert!(e.contains("unknown field `vram`"), "{e}");
    }

    #[test]
    fn missing_field_is_named_with_its_path() {
        let text = V100.replace("\"package_family\": \"deb\", ", "");
        let e = Host::from_json(&text).unwrap_err().to_string();
        assert_eq!(e, "os: missing field `package_family`");
    }

    #[test]
    fn a_musl_host_needs_no_glibc_key_and_glibcxx_is_checked() {
        let musl = V100
            .replace("\"libc\": \"glibc\", \"glibc\": \"2.35\", \"glibcxx\": \"3.4.30\"", "\"libc\": \"musl\"")
            .replace("\"package_family\": \"deb\"", "\"package_family\": \"apk\"");
        let h = Host::from_json(&musl).unwrap();
        assert_eq!((h.os.glibc, h.os.glibcxx), (None, None));
        let e = Host::from_json(&V100.replace("\"glibc\": \"2.35\", ", "")).unwrap_err().to_string();
        assert!(e.starts_with("os.glibc: a glibc system must give its glibc version"), "{e}");
        for bad in ["3.4", "1", "4.0.0"] {
            let e = Host::from_json(&V100.replace("\"3.4.30\"", &format!("\"{bad}\""))).unwrap_err().to_string();
            assert!(e.starts_with("os.glibcxx: "), "{bad}: {e}");
        }
    }

    #[test]
    fn malformed_compute_capability_names_the_gpu() {
        for bad in ["\"7\"", "7", "\"sm_70\"", "\"7.0.1\""] {
            let text = V100.replace("7.0,", &format!("{bad},"));
            let e = Host::from_json(&text).unwrap_err().to_string();
            assert!(e.starts_with("nvidia.gpus[0].compute_capability: "), "{bad}: {e}");
        }
    }

    #[test]
    fn the_lowest_compute_capability_decides() {
        let text = V100.replace(
            "\"memory_mib\": 16384}]",
            "\"memory_mib\": 16384}, {\"name\": \"Tesla K80\", \"compute_capability\": \"3.7\", \"memory_mib\": 12288}]",
        );
        let h = Host::from_json(&text).unwrap();
        assert_eq!(h.min_compute_capability().unwrap().to_string(), "3.7");
    }

    #[test]
    fn an_empty_gpu_list_is_refused() {
        let text = V100.replace(
            "[{\"name\": \"Tesla V100-SXM2-16GB\", \"compute_capability\": 7.0, \"memory_mib\": 16384}]",
            "[]",
        );
        let e = Host::from_json(&text).unwrap_err().to_string();
        assert!(e.starts_with("nvidia.gpus: lists no GPU"), "{e}");
    }

    #[test]
    fn not_json_is_refused_with_its_line_and_column() {
        let e = Host::from_json("{").unwrap_err().to_string();
        assert_eq!(e, "line 1 column 1: EOF while parsing an object");
        let e = Host::from_json(&format!("{V100} garbage")).unwrap_err().to_string();
        assert!(e.ends_with("trailing characters"), "{e}");
    }

    #[test]
    fn odd_compute_capabilities_are_refused_not_misread() {
        for bad in ["\"7.05\"", "7.05", "\"0.0\"", "true", "null"] {
            let text = V100.replace("7.0,", &format!("{bad},"));
            let e = Host::from_json(&text).unwrap_err().to_string();
            assert!(e.starts_with("nvidia.gpus[0].compute_capability: "), "{bad}: {e}");
            assert!(!e.contains("untagged"), "{bad}: {e}");
        }
    }

    #[test]
    fn control_characters_in_names_are_refused() {
        let e = Host::from_json(&V100.replace("\"name\": \"v100\"", "\"name\": \"v100\\u001b[31m\"")).unwrap_err();
        assert!(e.to_string().starts_with("name: the text holds a control character"), "{e}");
    }

    #[test]
    fn versions_compare_numerically() {
        assert!(DottedVersion::parse("2.9").unwrap() < DottedVersion::parse("2.35").unwrap());
        assert!(DriverVersion::parse("535.183.01").unwrap() < DriverVersion::parse("550.54.14").unwrap());
        assert!(ComputeCapability::new(8, 9) < ComputeCapability::new(12, 0));
    }
}
