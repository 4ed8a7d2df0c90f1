//! `llmgw discover`: this machine as a host description (the format of
//! [`llmgw_model::host`]), so that any real node can be replayed in simulation.
//!
//! [`discover`] asks a [`Probe`] for every raw answer (a file, a command's
//! output, free disk, NVML) and turns them into a [`Host`] with the pure
//! parsers of [`parse`]. [`RealProbe`] asks this machine; [`Capture`] wraps
//! any probe and saves every answer into a folder, one file per source
//! (listed in [`probe`]); [`ReplayProbe`] answers from such a folder alone.
//!
//! Where each field comes from:
//!
//! - `arch`: `uname -m`.
//! - `os`: `/etc/os-release` (`ID`, `VERSION_ID`, the package family from
//!   `ID` and `ID_LIKE`); the C library from `ldd --version` (else
//!   `getconf GNU_LIBC_VERSION`); `glibcxx`, the newest `GLIBCXX_3.4.N` in
//!   the first `libstdc++.so.6` of [`libstdcxx_dirs`].
//! - `cpu`: `/proc/cpuinfo`.
//! - `nvidia`: NVML (`libnvidia-ml.so.1`: driver, and each GPU's name,
//!   compute capability, memory), else `nvidia-smi`'s CSV; the kernel
//!   module's version (`/sys/module/nvidia/version`, `/proc/driver/nvidia/version`)
//!   is checked against it; an integrated GPU without memory of its own
//!   (Jetson, GB10) is given `MemTotal` of `/proc/meminfo`; `vulkan_icd`:
//!   an `nvidia_icd*.json` in one of [`VULKAN_ICD_DIRS`]; each GPU's MIG
//!   instances from `nvidia-smi -L` ([`nvidia_smi_list_command`]); on arm64,
//!   a Jetson's L4T release from `/etc/nv_tegra_release`. A static (musl)
//!   llmgw cannot load NVML at all ([`STATIC_NO_NVML`]) and goes straight
//!   to `nvidia-smi`; [`Discovered::gpu_discovery`] says which was used and why.
//! - `os.wsl`: `/proc/version` names a WSL 2 kernel ([`parse::is_wsl2_kernel`]).
//! - `disk_free_gb`: statvfs of the engines directory (or its nearest existing ancestor).
//! - `packages`: the package manager's query for [`recipe_packages`];
//!   `installable` when running as root (effective uid 0) and the family's
//!   installer (`apt-get`, `dnf`, `apk`) is on `PATH`.
//! - `name`: `/proc/sys/kernel/hostname` and a few words: `dgx01 (8x NVIDIA
//!   H100 80GB HBM3, driver 580.95.05, ubuntu 24.04)`.
//!
//! A driver that is there but fails (NVML loads and errs, nvidia-smi exits
//! non-zero) is a warning in [`Discovered::warnings`], not a silent "no GPU";
//! the description then says `"nvidia": null`.
//!
//! Real effects through [`Probe`] (a narrower view of a machine than
//! [`crate::system::System`]: files, listings, commands, free disk, NVML,
//! each answer kept for replay). Uses: `parse` and `system` (commands).
//! The probes of a real machine are `llmgw_system::probe`.

pub mod parse;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::system::{Cmd, Output};
use llmgw_model::host::{
    Arch, ComputeCapability, Cpu, DriverVersion, Gpu, Host, Libc, Nvidia, Os, PackageFamily, Packages,
};
use parse::LibcVersion;

/// Where engines are installed unless `--engines-dir` says otherwise.
pub const DEFAULT_ENGINES_DIR: &str = "/opt/llmgw/engines";

/// The directories searched for NVIDIA's Vulkan ICD file, in this order
/// (the Vulkan loader's system locations).
pub const VULKAN_ICD_DIRS: [&str; 3] =
    ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d"];

/// The file NVML is loaded from: the driver's own soname, present wherever
/// the driver's user-space libraries are (the unversioned `libnvidia-ml.so`
/// only comes with development packages).
pub const NVML_LIBRARY: &str = "libnvidia-ml.so.1";

/// Why a static llmgw (the release's musl builds) never loads NVML, whatever
/// the machine: discovery says it once, in [`Discovered::gpu_discovery`],
/// and lists the GPUs with `nvidia-smi` instead.
pub const STATIC_NO_NVML: &str = "NVML cannot be loaded by a static binary: this llmgw is linked statically \
     (musl), which cannot dlopen, and libnvidia-ml.so.1 is a glibc shared library";

/// A machine described, and what did not go as it should on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// The host description, valid for [`Host::from_json`].
    pub host: Host,
    /// Sentences about what could not be read or does not add up (a driver
    /// that fails, a version file that disagrees); each is worth a look.
    pub warnings: Vec<String>,
    /// How the NVIDIA driver and GPUs were looked for, and what that found,
    /// in one sentence: `NVML (libnvidia-ml.so.1): driver 580.95.05, 8 GPUs`,
    /// or `nvidia-smi (` why not NVML `): …`.
    pub gpu_discovery: String,
}

/// Why no host description could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoverError {
    /// A source every host description needs is missing or unreadable
    /// (`what`: `uname -m`, `ldd --version`), or says something a host
    /// description cannot hold (an `i686` machine).
    #[error("{what}: {message}")]
    Source {
        /// The source: a command line or a path.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// A file could not be read, or a program run, for a reason other than
    /// its absence (permission denied).
    #[error("{op} `{path}`: {message}")]
    Io {
        /// What was being done: "read", "list", "run", "statvfs", "write".
        op: &'static str,
        /// The path or program.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// A capture folder is missing, or holds an answer that cannot be read back.
    #[error("replay `{path}`: {message}")]
    Replay {
        /// The folder or the file in it.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The description assembled is not a valid host description: a bug in llmgw.
    #[error("the discovered description is not a valid host description: {0}")]
    Invalid(String),
}

impl From<crate::system::SysError> for DiscoverError {
    /// A file-system error of the installer's own files, as discovery says it.
    fn from(e: crate::system::SysError) -> DiscoverError {
        match e {
            crate::system::SysError::Io { op, path, message } => DiscoverError::Io { op, path, message },
            other => DiscoverError::Source { what: "the machine".into(), message: other.to_string() },
        }
    }
}

/// What NVML answered, as captured in `nvml.json`.
///
/// ```json
/// {"driver": "580.95.05", "gpus": [{"name": "NVIDIA H100 80GB HBM3",
///   "compute_capability": "9.0", "memory_total_bytes": 85520809984}]}
/// ```
/// or, for a driver that is there but fails, `{"error": "NVIDIA driver is not loaded"}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmlReport {
    /// `nvmlSystemGetDriverVersion`: `580.95.05`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Why NVML failed as a whole (initialization, counting devices), in
    /// NVML's words; `None` when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each GPU, by NVML index.
    #[serde(default)]
    pub gpus: Vec<NvmlGpu>,
}

/// One GPU as NVML answered for it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmlGpu {
    /// `nvmlDeviceGetName`: `NVIDIA H100 80GB HBM3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `nvmlDeviceGetCudaComputeCapability` as `major.minor`: `9.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    /// `nvmlDeviceGetMemoryInfo_v2`'s total, in bytes; `None` where NVML
    /// says "not supported" (an integrated GPU: Jetson, GB10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<u64>,
    /// What failed for this GPU (a lost GPU, a query that errs), in NVML's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything discovery asks of a machine. Each answer is raw (what the
/// file holds, what the program printed); [`discover`] interprets them.
pub trait Probe {
    /// The bytes of a file; `Ok(None)` when it does not exist.
    ///
    /// # Errors
    /// [`DiscoverError::Io`] when it exists and cannot be read.
    fn read_file(&mut self, path: &Path) -> Result<Option<Vec<u8>>, DiscoverError>;

    /// The names of the entries of a directory, sorted; `Ok(None)` when it does not exist.
    ///
    /// # Errors
    /// [`DiscoverError::Io`] when it exists and cannot be listed.
    fn list_dir(&mut self, path: &Path) -> Result<Option<Vec<String>>, DiscoverError>;

    /// Runs a command to completion within its time limit (`LC_ALL=C`, so
    /// tools speak the language the parsers read); `Ok(None)` when the
    /// program does not exist. A program that ran and failed, or was killed
    /// at its time limit ([`crate::system::Ended::TimedOut`]), is an [`Output`].
    ///
    /// # Errors
    /// [`DiscoverError::Io`] when it exists and cannot be started.
    fn run(&mut self, cmd: &Cmd) -> Result<Option<Output>, DiscoverError>;

    /// Where a program is, searching `PATH` and then `/usr/sbin`, `/sbin`,
    /// `/usr/bin`, `/bin`; `Ok(None)` when it is nowhere.
    ///
    /// # Errors
    /// [`DiscoverError`] when the answer cannot be had.
    fn find_program(&mut self, name: &str) -> Result<Option<PathBuf>, DiscoverError>;

    /// Free bytes an unprivileged user may use (statvfs `f_bavail` ×
    /// `f_frsize`) on the file system holding `path`, or its nearest
    /// existing ancestor when `path` does not exist yet.
    ///
    /// # Errors
    /// [`DiscoverError`] when statvfs fails.
    fn free_bytes(&mut self, path: &Path) -> Result<u64, DiscoverError>;

    /// The effective user id of this process (0: root).
    ///
    /// # Errors
    /// [`DiscoverError`] when the answer cannot be had (a replay without it).
    fn euid(&mut self) -> Result<u32, DiscoverError>;

    /// What NVML answers (loaded from [`NVML_LIBRARY`]); `Ok(None)` when
    /// the library cannot be loaded (no NVIDIA driver's user space here).
    ///
    /// # Errors
    /// [`DiscoverError`] when a replayed answer cannot be read.
    fn nvml(&mut self) -> Result<Option<NvmlReport>, DiscoverError>;

    /// Why this probe can never load NVML, whatever the machine has
    /// ([`STATIC_NO_NVML`] for a static build); `None` (the default) when
    /// [`Probe::nvml`] is worth asking. Discovery then goes straight to
    /// `nvidia-smi` and says why.
    fn nvml_unloadable(&self) -> Option<&'static str> {
        None
    }
}

/// The OS packages the recipes name, in the family's own names: OpenMP's
/// runtime and the Vulkan loader for llama.cpp (`recipe/llama_cpp.rs`) and
/// the C compiler Triton needs for vLLM and SGLang (`recipe/python.rs`).
/// None for a family without a package manager.
pub fn recipe_packages(family: PackageFamily) -> Vec<String> {
    let names: &[&str] = match family {
        PackageFamily::Deb => &["libgomp1", "libvulkan1", "gcc"],
        PackageFamily::Rpm | PackageFamily::Apk => &["libgomp", "vulkan-loader", "gcc"],
        PackageFamily::None => &[],
    };
    names.iter().map(|n| (*n).to_string()).collect()
}

/// The directories searched for the system `libstdc++.so.6`, in order:
/// the Debian multiarch directory of this architecture, then the RPM and
/// plain ones.
pub fn libstdcxx_dirs(arch: Arch) -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from(format!("/usr/lib/{}-linux-gnu", arch.gnu()))];
    dirs.extend(["/usr/lib64", "/lib64", "/usr/lib"].map(PathBuf::from));
    dirs
}

/// `uname -m`.
pub fn uname_command() -> Cmd {
    Cmd::new("uname", ["-m"]).timeout(10)
}

/// `ldd --version`.
pub fn ldd_command() -> Cmd {
    Cmd::new("ldd", ["--version"]).timeout(10)
}

/// `getconf GNU_LIBC_VERSION`, asked when `ldd` is missing.
pub fn getconf_command() -> Cmd {
    Cmd::new("getconf", ["GNU_LIBC_VERSION"]).timeout(10)
}

/// `nvidia-smi -L`: every GPU and, under it, its MIG instances; asked
/// whenever GPUs were found (NVML's own MIG calls are not read yet); 30
/// seconds, as [`nvidia_smi_command`].
pub fn nvidia_smi_list_command() -> Cmd {
    Cmd::new("nvidia-smi", ["-L"]).timeout(30)
}

/// The file a Jetson's L4T release is read from (its first line).
pub const NV_TEGRA_RELEASE: &str = "/etc/nv_tegra_release";

/// `nvidia-smi --query-gpu=driver_version,compute_cap,name,memory.total --format=csv,noheader`,
/// asked when NVML cannot be loaded or fails; 30 seconds, since a wedged
/// GPU can hang it.
pub fn nvidia_smi_command() -> Cmd {
    Cmd::new("nvidia-smi", ["--query-gpu=driver_version,compute_cap,name,memory.total", "--format=csv,noheader"])
        .timeout(30)
}

/// Describes the machine `probe` answers for, with the engines directory
/// at [`DEFAULT_ENGINES_DIR`].
///
/// # Errors
/// See [`discover_at`].
pub fn discover(probe: &mut dyn Probe) -> Result<Discovered, DiscoverError> {
    discover_at(probe, Path::new(DEFAULT_ENGINES_DIR))
}

/// Describes the machine `probe` answers for; free disk is measured where
/// engines will be installed, `engines_dir`.
///
/// # Errors
/// [`DiscoverError::Source`] when the architecture or the C library cannot
/// be told, or is one a host description cannot hold; the probe's errors
/// for what must be read (free disk, the user id); [`DiscoverError::Invalid`]
/// when the result is not a valid host description (a bug).
pub fn discover_at(probe: &mut dyn Probe, engines_dir: &Path) -> Result<Discovered, DiscoverError> {
    let mut warnings = vec![];

    let uname = uname_command();
    let out = probe.run(&uname)?.ok_or_else(|| source(&uname.display(), "the program is missing"))?;
    let arch = parse::arch(&out.stdout).ok_or_else(|| {
        source(&uname.display(), &format!("`{}` is no architecture a host description can hold", out.stdout.trim()))
    })?;

    let release = match read_text(probe, "/etc/os-release")?.or(read_text(probe, "/usr/lib/os-release")?) {
        Some(t) => parse::os_release(&t),
        None => {
            warnings.push(
                "neither /etc/os-release nor /usr/lib/os-release exists: os.id is `linux`, with no package manager"
                    .into(),
            );
            parse::os_release("")
        }
    };
    let family = parse::package_family(&release.id, &release.id_like);
    let (libc, glibc) = libc(probe)?;
    let glibcxx = glibcxx(probe, arch, &mut warnings)?;
    let os = Os {
        id: parse::sanitize(&release.id),
        version: parse::sanitize(release.version_id.as_deref().unwrap_or("unknown")),
        package_family: family,
        libc,
        glibc,
        glibcxx,
        // Not looked for: the engines run on a Python of their own.
        python: None,
        wsl: read_text(probe, "/proc/version")?.is_some_and(|t| parse::is_wsl2_kernel(&t)),
    };
    if os.wsl && read_text(probe, "/proc/driver/nvidia/version")?.is_some() {
        // WSL 2's GPU is the Windows driver's, reached through /dev/dxg:
        // its kernel has no NVIDIA module (NVIDIA's CUDA on WSL user guide).
        return Err(source(
            "/proc/driver/nvidia/version",
            "is present, yet /proc/version names a WSL 2 kernel, which has no NVIDIA kernel module: \
             these answers are not of one machine",
        ));
    }

    let cpu = match read_text(probe, "/proc/cpuinfo")? {
        Some(t) => parse::cpuinfo(&t, arch),
        None => {
            warnings.push("/proc/cpuinfo does not exist: cpu.model is `unknown`, with no flags".into());
            parse::CpuInfo::default()
        }
    };
    let model = cpu.model.as_deref().map(parse::sanitize).filter(|m| !m.is_empty());
    let cpu = Cpu {
        model: model.unwrap_or_else(|| "unknown".into()),
        flags: cpu.flags.iter().filter(|f| !f.chars().any(char::is_control)).cloned().collect(),
    };

    let disk_free_gb = parse::whole_gb(probe.free_bytes(engines_dir)?);
    let packages = packages(probe, family, &mut warnings)?;
    let (nvidia, gpu_discovery) = nvidia(probe, arch, &mut warnings)?;

    let hostname = read_text(probe, "/proc/sys/kernel/hostname")?.map(|h| parse::sanitize(&h)).unwrap_or_default();
    let hostname = if hostname.is_empty() { "unknown-host".to_string() } else { hostname };
    let mut about = vec![];
    match &nvidia {
        Some(nv) => {
            about.push(parse::gpu_summary(nv.gpus.iter().map(|g| g.name.as_str())));
            about.push(format!("driver {}", nv.driver));
        }
        None => about.push("no NVIDIA GPU".into()),
    }
    about.push(format!("{} {}", os.id, os.version));
    if arch != Arch::Amd64 {
        about.push(arch.to_string());
    }
    let name = parse::sanitize(&format!("{hostname} ({})", about.join(", ")));

    let host = Host { name, arch, os, cpu, nvidia, disk_free_gb, packages };
    // What is printed must be what `simulate --host` accepts, unchanged.
    let text = serde_json::to_string(&host).map_err(|e| DiscoverError::Invalid(e.to_string()))?;
    Host::from_json(&text).map_err(|e| DiscoverError::Invalid(e.to_string()))?;
    Ok(Discovered { host, warnings, gpu_discovery })
}

fn source(what: &str, message: &str) -> DiscoverError {
    DiscoverError::Source { what: what.to_string(), message: message.to_string() }
}

fn read_text(probe: &mut dyn Probe, path: &str) -> Result<Option<String>, DiscoverError> {
    Ok(probe.read_file(Path::new(path))?.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// What a command printed, standard output then standard error.
fn said(out: &Output) -> String {
    format!("{}{}", out.stdout, out.stderr)
}

/// The C library: `ldd --version`, else `getconf GNU_LIBC_VERSION`.
fn libc(probe: &mut dyn Probe) -> Result<(Libc, Option<llmgw_model::host::DottedVersion>), DiscoverError> {
    let ldd = ldd_command();
    let ldd_said = probe.run(&ldd)?.map(|o| said(&o));
    match ldd_said.as_deref().and_then(parse::ldd_version) {
        Some(LibcVersion::Glibc(v)) => return Ok((Libc::Glibc, Some(v))),
        Some(LibcVersion::Musl) => return Ok((Libc::Musl, None)),
        None => {}
    }
    let getconf = getconf_command();
    if let Some(out) = probe.run(&getconf)?
        && out.success()
        && let Some(v) = parse::getconf_glibc(&out.stdout)
    {
        return Ok((Libc::Glibc, Some(v)));
    }
    let ldd_says = match &ldd_said {
        None => "is missing".to_string(),
        Some(t) => format!("says `{}`", parse::first_line(t)),
    };
    Err(source(
        &ldd.display(),
        &format!("{ldd_says}, and `{}` gives no glibc version either: the C library cannot be told", getconf.display()),
    ))
}

/// The newest `GLIBCXX_3.4.N` of the first `libstdc++.so.6` found.
fn glibcxx(
    probe: &mut dyn Probe,
    arch: Arch,
    warnings: &mut Vec<String>,
) -> Result<Option<llmgw_model::host::DottedVersion>, DiscoverError> {
    for dir in libstdcxx_dirs(arch) {
        let path = dir.join("libstdc++.so.6");
        if let Some(bytes) = probe.read_file(&path)? {
            let newest = parse::newest_glibcxx(&parse::glibcxx_versions(&bytes));
            if newest.is_none() {
                warnings.push(format!("{} names no GLIBCXX_3.4.N symbol version: os.glibcxx is null", path.display()));
            }
            return Ok(newest);
        }
    }
    Ok(None)
}

/// Which of the recipes' packages are installed, and whether more can be.
fn packages(
    probe: &mut dyn Probe,
    family: PackageFamily,
    warnings: &mut Vec<String>,
) -> Result<Packages, DiscoverError> {
    let names = recipe_packages(family);
    let mut installed = BTreeSet::new();
    if let Some(query) = crate::parse::packages::query_command(family, &names) {
        match probe.run(&query)? {
            Some(out) => installed = crate::parse::packages::parse_installed(family, &out.stdout),
            None => warnings.push(format!(
                "this {} system has no `{}`: no OS package is listed as installed",
                family.as_str(),
                query.program.display()
            )),
        }
    }
    let installer = crate::parse::packages::install_command(family, &[]).map(|c| c.program.display().to_string());
    let installable = match installer {
        None => false,
        Some(program) => {
            let found = probe.find_program(&program)?.is_some();
            let root = probe.euid()? == 0;
            if found && !root {
                warnings.push(format!(
                    "not running as root: packages.installable is false (llmgw installs OS packages with {program} only as root)"
                ));
            }
            found && root
        }
    };
    Ok(Packages { installed, installable })
}

/// The NVIDIA driver and GPUs: NVML, else nvidia-smi; `None` without them,
/// with a warning when a driver is there but fails; and the sentence of
/// [`Discovered::gpu_discovery`].
fn nvidia(
    probe: &mut dyn Probe,
    arch: Arch,
    warnings: &mut Vec<String>,
) -> Result<(Option<Nvidia>, String), DiscoverError> {
    let kernel = kernel_module(probe, warnings)?;
    let mut found: Option<(DriverVersion, NvmlRows)> = None;
    let unloadable = probe.nvml_unloadable();
    let nvml = if unloadable.is_some() { None } else { probe.nvml()? };
    // How the GPUs were looked for, then what that found.
    let mut how = format!("NVML ({NVML_LIBRARY})");
    let mut what = String::new();
    if let Some(report) = &nvml {
        found = from_nvml(report, warnings);
    }
    if found.is_none() {
        how = match (unloadable, &nvml) {
            (Some(why), _) => format!("nvidia-smi ({why})"),
            (None, None) => format!("nvidia-smi ({NVML_LIBRARY} cannot be loaded on this machine)"),
            (None, Some(_)) => format!("nvidia-smi (NVML, {NVML_LIBRARY}, failed: see the warning)"),
        };
        let smi = nvidia_smi_command();
        match probe.run(&smi)? {
            None if nvml.is_none() => {
                what = "nvidia-smi is not on this machine: no NVIDIA GPU".into();
                if unloadable.is_none() {
                    how = format!("neither {NVML_LIBRARY} nor nvidia-smi is on this machine");
                    what = "no NVIDIA GPU".into();
                }
                if let Some(k) = &kernel {
                    let missing = match unloadable {
                        Some(_) => "nvidia-smi is not here (and a static llmgw cannot load NVML)".to_string(),
                        None => format!("neither {NVML_LIBRARY} nor nvidia-smi is here"),
                    };
                    warnings.push(format!(
                        "the NVIDIA kernel module {k} is loaded, but {missing}: its GPUs cannot be listed (\"nvidia\": null)"
                    ));
                }
            }
            None => what = "nvidia-smi is not on this machine: no NVIDIA GPU".into(),
            Some(out) if !out.success() => {
                let code = out.ended;
                let line = parse::first_line(&said(&out)).to_string();
                warnings.push(format!("the NVIDIA driver is there but failing: nvidia-smi {code}: {line}"));
                what = format!("nvidia-smi {code}: no NVIDIA GPU listed");
            }
            Some(out) => match parse::nvidia_smi_csv(&out.stdout) {
                Err(e) => {
                    warnings.push(format!("nvidia-smi answered what llmgw cannot read: {e}"));
                    what = "its answer cannot be read: no NVIDIA GPU listed".into();
                }
                Ok(rows) if rows.is_empty() => {
                    warnings.push("nvidia-smi lists no GPU".into());
                    what = "nvidia-smi lists no GPU".into();
                }
                Ok(rows) => {
                    let driver = rows[0].driver.clone();
                    if rows.iter().any(|r| r.driver != driver) {
                        warnings.push(format!("nvidia-smi gives different driver versions; using {driver}"));
                    }
                    found = Some((
                        driver,
                        rows.into_iter().map(|r| (r.name, r.compute_capability, r.memory_mib)).collect(),
                    ));
                }
            },
        }
    }
    let said = |what: &str| format!("{how}: {what}");
    let Some((driver, rows)) = found else { return Ok((None, said(&what))) };
    if let Some(k) = &kernel
        && *k != driver
    {
        warnings.push(format!(
            "the NVIDIA kernel module is {k} but its user-space libraries say {driver}: using {driver}; \
             a mismatch stops CUDA from starting until the node is rebooted or the module reloaded"
        ));
    }
    let mut system_mib: Option<Option<u64>> = None;
    let mut mig = mig_instances(probe, warnings)?;
    let mut gpus = vec![];
    for (i, (name, cc, memory)) in rows.into_iter().enumerate() {
        let name = parse::sanitize(&name);
        let name = if name.is_empty() { "unknown NVIDIA GPU".to_string() } else { name };
        let Some(compute_capability) = cc else {
            warnings.push(format!("GPU {i} ({name}) gives no compute capability: left out"));
            continue;
        };
        let memory_mib = match memory {
            Some(m) => m,
            None => {
                // An integrated GPU (Jetson, GB10) shares the system's memory.
                if system_mib.is_none() {
                    system_mib = Some(read_text(probe, "/proc/meminfo")?.as_deref().and_then(parse::meminfo_total_mib));
                }
                system_mib.flatten().unwrap_or_else(|| {
                    warnings.push(format!("GPU {i} ({name}) gives no memory size, nor does /proc/meminfo: 0 MiB"));
                    0
                })
            }
        };
        gpus.push(Gpu { name, compute_capability, memory_mib, mig: mig.remove(&i).unwrap_or_default() });
    }
    if gpus.is_empty() {
        return Ok((None, said(&format!("driver {driver}, no GPU with a compute capability"))));
    }
    let mut vulkan_icd = false;
    for dir in VULKAN_ICD_DIRS {
        if let Some(names) = probe.list_dir(Path::new(dir))? {
            vulkan_icd |= names.iter().any(|n| parse::is_nvidia_icd(n));
        }
    }
    let count = match gpus.len() {
        1 => "1 GPU".to_string(),
        n => format!("{n} GPUs"),
    };
    let l4t = if arch == Arch::Arm64 { l4t_release(probe, warnings)? } else { None };
    let sentence = said(&format!("driver {driver}, {count}"));
    Ok((Some(Nvidia { driver, vulkan_icd, gpus, l4t }), sentence))
}

/// Each GPU's MIG instances, by GPU index, from `nvidia-smi -L`; none where
/// nvidia-smi is missing, fails or lists none (a warning for the failures).
fn mig_instances(
    probe: &mut dyn Probe,
    warnings: &mut Vec<String>,
) -> Result<std::collections::BTreeMap<usize, Vec<llmgw_model::host::MigInstance>>, DiscoverError> {
    let list = nvidia_smi_list_command();
    let Some(out) = probe.run(&list)? else { return Ok(Default::default()) };
    if !out.success() {
        warnings.push(format!(
            "`{}` failed ({}): MIG instances, if any, are not listed",
            list.display(),
            parse::first_line(&said(&out))
        ));
        return Ok(Default::default());
    }
    Ok(parse::nvidia_smi_mig(&out.stdout).unwrap_or_else(|e| {
        warnings
            .push(format!("`{}` answered what llmgw cannot read: {e}; MIG instances are not listed", list.display()));
        Default::default()
    }))
}

/// A Jetson's L4T release from [`NV_TEGRA_RELEASE`]'s first line; `None`
/// where the file is absent (every machine but a Jetson, and a Jetson's
/// container without it), with a warning where it cannot be read.
fn l4t_release(
    probe: &mut dyn Probe,
    warnings: &mut Vec<String>,
) -> Result<Option<llmgw_model::host::L4tRelease>, DiscoverError> {
    let Some(text) = read_text(probe, NV_TEGRA_RELEASE)? else { return Ok(None) };
    let first = parse::first_line(&text);
    let release = llmgw_model::host::L4tRelease::from_nv_tegra_release(first);
    if release.is_none() {
        warnings.push(format!(
            "{NV_TEGRA_RELEASE}: `{}` is not `# R<n> (release), REVISION: <n>.<n>, …`: nvidia.l4t is left out",
            parse::sanitize(first)
        ));
    }
    Ok(release)
}

/// The kernel module's version, as uv reads it: `/sys/module/nvidia/version`,
/// else `/proc/driver/nvidia/version`.
fn kernel_module(probe: &mut dyn Probe, warnings: &mut Vec<String>) -> Result<Option<DriverVersion>, DiscoverError> {
    let sys = read_text(probe, "/sys/module/nvidia/version")?;
    let proc = read_text(probe, "/proc/driver/nvidia/version")?;
    if let Some(t) = &sys {
        match parse::sys_module_version(t) {
            Some(v) => return Ok(Some(v)),
            None => {
                warnings.push(format!("/sys/module/nvidia/version holds `{}`, not a version", parse::first_line(t)))
            }
        }
    }
    Ok(proc.as_deref().and_then(parse::proc_driver_version))
}

/// GPUs as NVML or nvidia-smi gave them: name, compute capability, memory in MiB.
type NvmlRows = Vec<(String, Option<ComputeCapability>, Option<u64>)>;

/// The driver and GPUs NVML gave; `None`, with a warning, when it failed.
fn from_nvml(report: &NvmlReport, warnings: &mut Vec<String>) -> Option<(DriverVersion, NvmlRows)> {
    if let Some(e) = &report.error {
        warnings.push(format!("the NVIDIA driver is there but failing: NVML ({NVML_LIBRARY}) says: {e}"));
        return None;
    }
    let driver = match report.driver.as_deref().map(DriverVersion::parse) {
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            warnings.push(format!("NVML: {e}"));
            return None;
        }
        None => {
            warnings.push("NVML gives no driver version".into());
            return None;
        }
    };
    let mut rows = vec![];
    for (i, g) in report.gpus.iter().enumerate() {
        let name = g.name.clone().unwrap_or_default();
        if let Some(e) = &g.error
            && (g.name.is_none() || g.compute_capability.is_none())
        {
            warnings.push(format!("NVML cannot query GPU {i}: {e}; left out"));
            continue;
        }
        let cc = match g.compute_capability.as_deref().map(ComputeCapability::parse) {
            Some(Ok(cc)) => Some(cc),
            Some(Err(e)) => {
                warnings.push(format!("NVML, GPU {i}: {e}"));
                None
            }
            None => None,
        };
        rows.push((name, cc, g.memory_total_bytes.map(|b| b / (1024 * 1024))));
    }
    if rows.is_empty() {
        warnings.push(format!("NVML answers (driver {driver}) but lists no GPU"));
        return None;
    }
    Some((driver, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nvml_h100() -> NvmlReport {
        NvmlReport {
            driver: Some("580.95.05".into()),
            error: None,
            gpus: vec![
                NvmlGpu {
                    name: Some("NVIDIA H100 80GB HBM3".into()),
                    compute_capability: Some("9.0".into()),
                    memory_total_bytes: Some(81559 * 1024 * 1024),
                    error: None,
                };
                2
            ],
        }
    }

    #[test]
    fn nvml_reports_become_rows_or_warnings() {
        let mut w = vec![];
        let (d, rows) = from_nvml(&nvml_h100(), &mut w).unwrap();
        assert_eq!(d.to_string(), "580.95.05");
        assert_eq!(rows[1], ("NVIDIA H100 80GB HBM3".to_string(), Some(ComputeCapability::new(9, 0)), Some(81559)));
        assert!(w.is_empty());

        let failing = NvmlReport { error: Some("NVIDIA driver is not loaded".into()), ..NvmlReport::default() };
        assert!(from_nvml(&failing, &mut w).is_none());
        assert!(w[0].contains("failing") && w[0].contains("not loaded"), "{w:?}");

        let mut lost = nvml_h100();
        lost.gpus[1] = NvmlGpu { error: Some("GPU is lost".into()), ..NvmlGpu::default() };
        let mut w = vec![];
        let (_, rows) = from_nvml(&lost, &mut w).unwrap();
        assert_eq!(rows.len(), 1);
        assert!(w[0].contains("GPU 1: GPU is lost"), "{w:?}");
    }

    #[test]
    fn nvml_json_reads_back_what_it_wrote() {
        let text = serde_json::to_string(&nvml_h100()).unwrap();
        let back: NvmlReport = llmgw_model::strict_json::parse(&text, &["gpus[*]"]).unwrap();
        assert_eq!(back, nvml_h100());
        assert!(!text.contains("error"), "{text}");
    }

    #[test]
    fn recipe_packages_follow_the_family() {
        assert_eq!(recipe_packages(PackageFamily::Deb), ["libgomp1", "libvulkan1", "gcc"]);
        assert_eq!(recipe_packages(PackageFamily::Rpm), ["libgomp", "vulkan-loader", "gcc"]);
        assert!(recipe_packages(PackageFamily::None).is_empty());
        assert_eq!(libstdcxx_dirs(Arch::Arm64)[0], PathBuf::from("/usr/lib/aarch64-linux-gnu"));
    }
}
