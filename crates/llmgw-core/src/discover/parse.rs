//! Parsers of what a Linux machine says about itself: `/etc/os-release`,
//! `uname -m`, `ldd --version`, libstdc++'s symbol versions, `/proc/cpuinfo`,
//! `/proc/meminfo`, `nvidia-smi`'s CSV and `-L` list, the NVIDIA kernel
//! module's version files, `/proc/version` (WSL 2). Pure functions of text (or bytes), total: any input gives an
//! answer, never a panic. Formats and sources are named on each function.

use std::collections::BTreeSet;

use llmgw_model::host::{
    Arch, ComputeCapability, DottedVersion, DriverVersion, MigInstance, MigProfile, MigUuid, PackageFamily,
};

/// What `/etc/os-release` says (os-release(5)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OsRelease {
    /// `ID`, lowercase: `ubuntu`, `rhel`; `linux` when absent, as os-release(5) defaults it.
    pub id: String,
    /// `VERSION_ID`: `24.04`, `9.4`; `None` when absent (rolling releases, Debian testing).
    pub version_id: Option<String>,
    /// `ID_LIKE`, space-separated in the file: `["fedora"]` on RHEL, `["debian"]` on Ubuntu.
    pub id_like: Vec<String>,
    /// `PRETTY_NAME`, when given: `Ubuntu 24.04.1 LTS`.
    pub pretty_name: Option<String>,
}

/// Parses `/etc/os-release`: `KEY=value` lines, the value bare or in single
/// or double quotes, with shell-style backslash escapes inside double
/// quotes; `#` lines are comments.
pub fn os_release(text: &str) -> OsRelease {
    let mut r = OsRelease { id: "linux".into(), ..OsRelease::default() };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((key, raw)) = line.split_once('=') else { continue };
        let value = unquote(raw.trim());
        match key.trim() {
            "ID" if !value.is_empty() => r.id = value.to_ascii_lowercase(),
            "VERSION_ID" if !value.is_empty() => r.version_id = Some(value),
            "ID_LIKE" => r.id_like = value.split_whitespace().map(str::to_ascii_lowercase).collect(),
            "PRETTY_NAME" if !value.is_empty() => r.pretty_name = Some(value),
            _ => {}
        }
    }
    r
}

/// A value of os-release(5): `"a \"b\""` → `a "b"`, `'x'` → `x`, `x` → `x`.
fn unquote(v: &str) -> String {
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        return v[1..v.len() - 1].to_string();
    }
    let inner = if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') { &v[1..v.len() - 1] } else { v };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The package family of a distribution, from its `ID` and then each of its
/// `ID_LIKE` (first match wins): debian, ubuntu → deb; rhel, fedora,
/// centos, rocky, almalinux, amzn → rpm (dnf); alpine → apk; anything else
/// (SUSE's zypper, Arch's pacman) → none, a package manager the installer
/// does not drive.
pub fn package_family(id: &str, id_like: &[String]) -> PackageFamily {
    std::iter::once(id)
        .chain(id_like.iter().map(String::as_str))
        .find_map(|name| match name {
            "debian" | "ubuntu" => Some(PackageFamily::Deb),
            "rhel" | "fedora" | "centos" | "rocky" | "almalinux" | "amzn" => Some(PackageFamily::Rpm),
            "alpine" => Some(PackageFamily::Apk),
            _ => None,
        })
        .unwrap_or(PackageFamily::None)
}

/// The architecture `uname -m` names: `x86_64` → amd64, `aarch64` → arm64,
/// `ppc64le`, `s390x`, `riscv64`; `None` for one a host description cannot
/// say (`i686`, `armv7l`).
pub fn arch(uname_m: &str) -> Option<Arch> {
    match uname_m.trim() {
        "x86_64" | "amd64" => Some(Arch::Amd64),
        "aarch64" | "arm64" => Some(Arch::Arm64),
        "ppc64le" => Some(Arch::Ppc64le),
        "s390x" => Some(Arch::S390x),
        "riscv64" => Some(Arch::Riscv64),
        _ => None,
    }
}

/// The C library a system runs on, as its tools say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibcVersion {
    /// glibc, with its version `major.minor` (`2.35`).
    Glibc(DottedVersion),
    /// musl.
    Musl,
}

/// Reads `ldd --version` (standard output and error together).
///
/// glibc's first line ends with the version: `ldd (Ubuntu GLIBC
/// 2.35-0ubuntu3.8) 2.35`, `ldd (GNU libc) 2.34` (RHEL 9); a development
/// snapshot's `2.39.9000` is 2.39. musl's `ldd` prints `musl libc (x86_64)`
/// and its version on standard error, and exits 1.
pub fn ldd_version(text: &str) -> Option<LibcVersion> {
    if text.lines().any(|l| l.trim_start().starts_with("musl libc")) {
        return Some(LibcVersion::Musl);
    }
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if !first.starts_with("ldd") {
        return None;
    }
    glibc_version(first.split_whitespace().last()?).map(LibcVersion::Glibc)
}

/// Reads `getconf GNU_LIBC_VERSION`: `glibc 2.36`.
pub fn getconf_glibc(text: &str) -> Option<DottedVersion> {
    let rest = text.trim().strip_prefix("glibc")?;
    glibc_version(rest.trim())
}

/// `2.35`, `2.39.9000`, `2.35-0ubuntu3` → `2.35`: major 2, and a minor.
fn glibc_version(token: &str) -> Option<DottedVersion> {
    let mut parts = token.split(['.', '-']);
    let major: u32 = parts.next()?.parse().ok()?;
    let minor_text = parts.next()?;
    let digits: String = minor_text.chars().take_while(char::is_ascii_digit).collect();
    let minor: u32 = digits.parse().ok()?;
    (major == 2).then(|| DottedVersion::parse(&format!("{major}.{minor}")).ok()).flatten()
}

/// The `GLIBCXX_3.4[.N]` symbol-version names in a file's bytes (a
/// `libstdc++.so.6`, or a list of them one a line), without repeats,
/// oldest first.
pub fn glibcxx_versions(bytes: &[u8]) -> Vec<String> {
    const PREFIX: &[u8] = b"GLIBCXX_3.4";
    let mut found: BTreeSet<(DottedVersion, String)> = BTreeSet::new();
    let mut at = 0;
    while let Some(off) = bytes[at..].windows(PREFIX.len()).position(|w| w == PREFIX) {
        let start = at + off;
        let mut end = start + PREFIX.len();
        // ".N" after "3.4", digits only: "GLIBCXX_3.4.30", not "GLIBCXX_3.4.x".
        if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end += 1;
            while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
        }
        // "GLIBCXX_3.4" followed by another digit ("GLIBCXX_3.45") is not a version name.
        if !bytes.get(end).is_some_and(u8::is_ascii_digit) {
            let name = String::from_utf8_lossy(&bytes[start..end]).into_owned();
            if let Ok(v) = DottedVersion::parse(&name["GLIBCXX_".len()..]) {
                found.insert((v, name));
            }
        }
        at = end;
    }
    found.into_iter().map(|(_, name)| name).collect()
}

/// The newest of `GLIBCXX_3.4.N` names, as `3.4.N`; `None` without any.
pub fn newest_glibcxx(names: &[String]) -> Option<DottedVersion> {
    names.iter().filter_map(|n| DottedVersion::parse(n.strip_prefix("GLIBCXX_")?).ok()).max()
}

/// What `/proc/cpuinfo` says of the processor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuInfo {
    /// The model, when the file names one (see [`cpuinfo`]).
    pub model: Option<String>,
    /// The feature flags: x86 `flags`, arm64 `Features`, s390x `features`.
    pub flags: BTreeSet<String>,
}

/// Reads `/proc/cpuinfo` (`key\t: value` lines; the first processor's
/// block decides).
///
/// The model: x86 `model name` (`Intel(R) Xeon(R) Platinum 8480+`); arm64
/// the core that `CPU implementer` and `CPU part` name, as lscpu names it
/// (`Neoverse-V2` for 0x41/0xd4f), else `Model name` or `model name` where
/// the kernel gives one (Jetson's `ARMv8 Processor rev 1 (v8l)` says less
/// than the part), else `ARM part 0x41/0xd99`; ppc64le `cpu` (`POWER10
/// (architected), altivec supported`); s390x `vendor_id` and the machine
/// type of `processor 0` (`IBM/S390 (machine 3931)`); riscv64 `uarch`.
pub fn cpuinfo(text: &str, arch: Arch) -> CpuInfo {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let words = |v: Option<String>| -> BTreeSet<String> {
        v.map(|v| v.split_whitespace().map(str::to_string).collect()).unwrap_or_default()
    };
    let non_empty = |v: Option<String>| v.filter(|s| !s.is_empty());
    match arch {
        Arch::Amd64 => CpuInfo { model: non_empty(field("model name")), flags: words(field("flags")) },
        Arch::Arm64 => {
            let ids = field("CPU implementer").and_then(|i| hex(&i)).zip(field("CPU part").and_then(|p| hex(&p)));
            let model = ids
                .and_then(|(i, p)| arm_core_name(i, p))
                .map(str::to_string)
                .or_else(|| non_empty(field("Model name")))
                .or_else(|| non_empty(field("model name")))
                .or_else(|| ids.map(|(i, p)| format!("ARM part {i:#x}/{p:#x}")));
            CpuInfo { model, flags: words(field("Features")) }
        }
        Arch::Ppc64le => CpuInfo { model: non_empty(field("cpu")), flags: BTreeSet::new() },
        Arch::S390x => {
            let machine = text.lines().find_map(|l| {
                let rest = l.trim().strip_prefix("processor 0:")?;
                rest.split(',').find_map(|kv| {
                    Some(kv.trim().strip_prefix("machine")?.trim_start().strip_prefix('=')?.trim().to_string())
                })
            });
            let model = non_empty(field("vendor_id")).map(|v| match &machine {
                Some(m) => format!("{v} (machine {m})"),
                None => v,
            });
            CpuInfo { model, flags: words(field("features")) }
        }
        Arch::Riscv64 => CpuInfo { model: non_empty(field("uarch")), flags: BTreeSet::new() },
    }
}

fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim().strip_prefix("0x").or_else(|| s.trim().strip_prefix("0X"))?, 16).ok()
}

/// The core an arm64 `CPU implementer`/`CPU part` pair names, as util-linux's
/// lscpu (`sys-utils/lscpu-arm.c`) names it; `None` for one not listed here.
pub fn arm_core_name(implementer: u32, part: u32) -> Option<&'static str> {
    const ARM: &[(u32, &str)] = &[
        (0xd03, "Cortex-A53"),
        (0xd04, "Cortex-A35"),
        (0xd05, "Cortex-A55"),
        (0xd07, "Cortex-A57"),
        (0xd08, "Cortex-A72"),
        (0xd09, "Cortex-A73"),
        (0xd0a, "Cortex-A75"),
        (0xd0b, "Cortex-A76"),
        (0xd0c, "Neoverse-N1"),
        (0xd0d, "Cortex-A77"),
        (0xd0e, "Cortex-A76AE"),
        (0xd40, "Neoverse-V1"),
        (0xd41, "Cortex-A78"),
        (0xd42, "Cortex-A78AE"),
        (0xd44, "Cortex-X1"),
        (0xd46, "Cortex-A510"),
        (0xd47, "Cortex-A710"),
        (0xd48, "Cortex-X2"),
        (0xd49, "Neoverse-N2"),
        (0xd4a, "Neoverse-E1"),
        (0xd4b, "Cortex-A78C"),
        (0xd4d, "Cortex-A715"),
        (0xd4e, "Cortex-X3"),
        (0xd4f, "Neoverse-V2"),
        (0xd80, "Cortex-A520"),
        (0xd81, "Cortex-A720"),
        (0xd82, "Cortex-X4"),
        (0xd83, "Neoverse-V3AE"),
        (0xd84, "Neoverse-V3"),
        (0xd85, "Cortex-X925"),
        (0xd87, "Cortex-A725"),
        (0xd8e, "Neoverse-N3"),
    ];
    match implementer {
        0x41 => ARM.iter().find(|(p, _)| *p == part).map(|(_, n)| *n),
        _ => None,
    }
}

/// One line of `nvidia-smi --query-gpu=driver_version,compute_cap,name,memory.total --format=csv,noheader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmiGpu {
    /// `driver_version`: `580.95.05`.
    pub driver: DriverVersion,
    /// `compute_cap`: `9.0`; `None` where nvidia-smi says `[N/A]`.
    pub compute_capability: Option<ComputeCapability>,
    /// `name`: `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// `memory.total` in MiB (`81559 MiB`); `None` where nvidia-smi says
    /// `[N/A]` or `[Not Supported]` (Jetson, GB10: the GPU shares the system's memory).
    pub memory_mib: Option<u64>,
}

/// Parses the CSV lines of the query above, one GPU a line:
/// `580.95.05, 9.0, NVIDIA H100 80GB HBM3, 81559 MiB`. A name may hold
/// commas: the first two fields and the last are split off, the rest is the name.
///
/// # Errors
/// A sentence quoting the first line that is not of that form.
pub fn nvidia_smi_csv(text: &str) -> Result<Vec<SmiGpu>, String> {
    let mut gpus = vec![];
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let bad = || format!("`{line}` is not `driver_version, compute_cap, name, memory.total`");
        let mut head = line.splitn(3, ',');
        let (Some(driver), Some(cc), Some(rest)) = (head.next(), head.next(), head.next()) else {
            return Err(bad());
        };
        let (name, memory) = rest.rsplit_once(',').ok_or_else(bad)?;
        let driver = DriverVersion::parse(driver.trim()).map_err(|_| bad())?;
        let name = name.trim();
        if name.is_empty() {
            return Err(bad());
        }
        let compute_capability = ComputeCapability::parse(cc.trim()).ok();
        let memory = memory.trim();
        let memory_mib = memory.strip_suffix("MiB").and_then(|n| n.trim().parse().ok());
        if memory_mib.is_none() && !memory.starts_with('[') {
            return Err(bad());
        }
        gpus.push(SmiGpu { driver, compute_capability, name: name.to_string(), memory_mib });
    }
    Ok(gpus)
}

/// The MIG instances `nvidia-smi -L` lists, per GPU index: under each
/// `GPU <i>: <name> (UUID: GPU-…)` line, its instances as
/// `  MIG 3g.40gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)`
/// (NVIDIA/nvidia-container-toolkit#203 quotes that form). nvidia-smi -L
/// gives no instance's memory: it is the profile's GB as 10^9 bytes, in
/// whole MiB (`40gb`: 38,146 MiB), below what the name rounds to, so that a
/// model judged to fit does (an H100 80GB's 81,559 MiB holds two `3g.40gb`
/// so counted, not two 40,960 MiB ones). GPUs without instances are absent
/// from the map.
///
/// # Errors
/// [`MigListError`] quoting the first `MIG` line that is not of that form,
/// or one before any `GPU` line.
pub fn nvidia_smi_mig(text: &str) -> Result<std::collections::BTreeMap<usize, Vec<MigInstance>>, MigListError> {
    let mut out: std::collections::BTreeMap<usize, Vec<MigInstance>> = Default::default();
    let mut gpu: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("GPU ") {
            gpu = rest.split_once(':').and_then(|(i, _)| i.trim().parse().ok());
            continue;
        }
        let Some(rest) = trimmed.strip_prefix("MIG ") else { continue };
        let bad = || MigListError::NotAnInstance { line: trimmed.to_string() };
        let i = gpu.ok_or_else(|| MigListError::BeforeAnyGpu { line: trimmed.to_string() })?;
        let (profile, rest) = rest.trim_start().split_once(char::is_whitespace).ok_or_else(bad)?;
        let uuid = rest.split_once("(UUID:").and_then(|(_, u)| u.trim().strip_suffix(')')).ok_or_else(bad)?;
        let profile = MigProfile::parse(profile).map_err(MigListError::Profile)?;
        let uuid = MigUuid::parse(uuid.trim()).map_err(MigListError::Uuid)?;
        let memory_mib = u64::from(profile.memory_gb()) * 1_000_000_000 / (1024 * 1024);
        out.entry(i).or_default().push(MigInstance { profile, memory_mib, uuid });
    }
    Ok(out)
}

/// Why a line of `nvidia-smi -L` cannot be read ([`nvidia_smi_mig`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigListError {
    /// A `MIG` line not of the form `MIG <profile> Device <n>: (UUID: MIG-…)`.
    #[error("`{line}` is not `MIG <profile> Device <n>: (UUID: MIG-…)`")]
    NotAnInstance {
        /// The line, trimmed.
        line: String,
    },
    /// A `MIG` line before any `GPU <i>:` line.
    #[error("`{line}` comes before any `GPU <i>:` line")]
    BeforeAnyGpu {
        /// The line, trimmed.
        line: String,
    },
    /// Its profile is not one nvidia-smi names.
    #[error(transparent)]
    Profile(#[from] llmgw_model::host::MigProfileError),
    /// Its UUID is not a MIG UUID of drivers R470 and later.
    #[error(transparent)]
    Uuid(#[from] llmgw_model::host::MigUuidError),
}

/// Whether `/proc/version` names a WSL 2 kernel: Microsoft's kernels say
/// `microsoft-standard-WSL2` in their release (`6.6.87.2-microsoft-standard-WSL2`,
/// vllm-project/vllm#47387); WSL 1 (`4.4.0-19041-Microsoft`) has no GPU
/// support and is not WSL 2.
pub fn is_wsl2_kernel(proc_version: &str) -> bool {
    let lower = proc_version.to_ascii_lowercase();
    lower.contains("microsoft") && lower.contains("wsl2")
}

/// The kernel module's version in `/proc/driver/nvidia/version`: its first
/// line split on a double space, field 1, as uv reads it:
/// `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.144.03  Release Build  (…)`
/// → `550.144.03`. `None` for another form.
pub fn proc_driver_version(text: &str) -> Option<DriverVersion> {
    let first = text.lines().next()?;
    if !first.starts_with("NVRM version:") {
        return None;
    }
    DriverVersion::parse(first.split("  ").nth(1)?.trim()).ok()
}

/// The kernel module's version in `/sys/module/nvidia/version`: the whole
/// file, trimmed (`550.144.03`).
pub fn sys_module_version(text: &str) -> Option<DriverVersion> {
    DriverVersion::parse(text.trim()).ok()
}

/// `MemTotal` of `/proc/meminfo` (`MemTotal:       65011264 kB`), in MiB, rounded down.
pub fn meminfo_total_mib(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kb: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kb / 1024)
}

/// A number alone on the first line (the captured `statvfs` free bytes, `euid`).
pub fn first_number(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Bytes in whole GB (10^9 bytes), rounded down.
pub fn whole_gb(bytes: u64) -> u64 {
    bytes / 1_000_000_000
}

/// Whether a file in a Vulkan `icd.d` directory is NVIDIA's ICD:
/// `nvidia_icd.json`, or an architecture-suffixed `nvidia_icd.x86_64.json`.
pub fn is_nvidia_icd(file_name: &str) -> bool {
    file_name
        .strip_prefix("nvidia_icd")
        .is_some_and(|rest| rest == ".json" || (rest.starts_with('.') && rest.ends_with(".json")))
}

/// Text safe to print: every control character (a newline, an escape)
/// becomes a space, and the ends are trimmed.
pub fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().to_string()
}

/// The first line that says something, trimmed: what a failing tool said.
pub fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// GPUs counted by name, in order of first appearance: `8x NVIDIA H100
/// 80GB HBM3`, `1x NVIDIA A100-PCIE-40GB + 1x Tesla T4`.
pub fn gpu_summary<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut counts: Vec<(&str, usize)> = vec![];
    for n in names {
        match counts.iter_mut().find(|(m, _)| *m == n) {
            Some((_, c)) => *c += 1,
            None => counts.push((n, 1)),
        }
    }
    counts.iter().map(|(n, c)| format!("{c}x {n}")).collect::<Vec<_>>().join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_of_ubuntu_rhel_and_alpine() {
        let u = os_release(
            "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nID=ubuntu\nID_LIKE=debian\n",
        );
        assert_eq!((u.id.as_str(), u.version_id.as_deref()), ("ubuntu", Some("24.04")));
        assert_eq!(package_family(&u.id, &u.id_like), PackageFamily::Deb);
        let r = os_release("NAME=\"Red Hat Enterprise Linux\"\nID=\"rhel\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.4\"\n");
        assert_eq!((r.id.as_str(), r.version_id.as_deref()), ("rhel", Some("9.4")));
        assert_eq!(package_family(&r.id, &r.id_like), PackageFamily::Rpm);
        let a = os_release("NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.21.2\n");
        assert_eq!(package_family(&a.id, &a.id_like), PackageFamily::Apk);
    }

    #[test]
    fn os_release_defaults_quotes_and_families_by_likeness() {
        let e = os_release("");
        assert_eq!((e.id.as_str(), e.version_id), ("linux", None));
        let o = os_release("# comment\nID='ol'\nID_LIKE=\"rhel fedora\"\nPRETTY_NAME=\"Oracle \\\"Linux\\\"\"\n");
        assert_eq!(o.id, "ol");
        assert_eq!(o.pretty_name.as_deref(), Some("Oracle \"Linux\""));
        assert_eq!(package_family(&o.id, &o.id_like), PackageFamily::Rpm);
        let s = os_release("ID=\"opensuse-leap\"\nID_LIKE=\"suse opensuse\"\n");
        assert_eq!(package_family(&s.id, &s.id_like), PackageFamily::None);
        let m = os_release("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n");
        assert_eq!(package_family(&m.id, &m.id_like), PackageFamily::Deb);
        assert_eq!(package_family("amzn", &[]), PackageFamily::Rpm);
    }

    #[test]
    fn architectures() {
        assert_eq!(arch("x86_64\n"), Some(Arch::Amd64));
        assert_eq!(arch("aarch64"), Some(Arch::Arm64));
        assert_eq!(arch("ppc64le"), Some(Arch::Ppc64le));
        assert_eq!(arch("s390x"), Some(Arch::S390x));
        assert_eq!(arch("riscv64"), Some(Arch::Riscv64));
        assert_eq!(arch("armv7l"), None);
        assert_eq!(arch(""), None);
    }

    #[test]
    fn ldd_versions_of_glibc_and_musl() {
        let v = |t: &str| match ldd_version(t) {
            Some(LibcVersion::Glibc(v)) => v.to_string(),
            other => format!("{other:?}"),
        };
        assert_eq!(
            v("ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\nCopyright (C) 2022 Free Software Foundation, Inc.\n"),
            "2.35"
        );
        assert_eq!(v("ldd (GNU libc) 2.34\n"), "2.34");
        assert_eq!(v("ldd (Debian GLIBC 2.36-9+deb12u14) 2.36\n"), "2.36");
        assert_eq!(v("ldd (GNU libc) 2.39.9000\n"), "2.39");
        let musl = "musl libc (x86_64)\nVersion 1.2.5\nDynamic Program Loader\nUsage: ldd [options] [--] pathname\n";
        assert_eq!(ldd_version(musl), Some(LibcVersion::Musl));
        assert_eq!(ldd_version(""), None);
        assert_eq!(ldd_version("bash: ldd: command not found"), None);
        assert_eq!(ldd_version("ldd (weird) 3.1"), None);
        assert_eq!(getconf_glibc("glibc 2.36\n").unwrap().to_string(), "2.36");
        assert_eq!(getconf_glibc("NPTL 2.36"), None);
    }

    #[test]
    fn glibcxx_names_in_bytes() {
        let bytes = b"\x7fELF\0GLIBCXX_3.4\0GLIBCXX_3.4.9\0GLIBCXX_3.4.30\0GLIBCXX_3.4.21\0GLIBCXX_TUNABLES\0GLIBCXX_3.4.30\0CXXABI_1.3.13\0GLIBCXX_3.4.";
        let names = glibcxx_versions(bytes);
        assert_eq!(names, ["GLIBCXX_3.4", "GLIBCXX_3.4.9", "GLIBCXX_3.4.21", "GLIBCXX_3.4.30"]);
        assert_eq!(newest_glibcxx(&names).unwrap().to_string(), "3.4.30");
        assert_eq!(
            newest_glibcxx(&glibcxx_versions(b"GLIBCXX_3.4.28\nGLIBCXX_3.4.29\n")).unwrap().to_string(),
            "3.4.29"
        );
        assert!(glibcxx_versions(b"").is_empty());
        assert!(glibcxx_versions(b"GLIBCXX_3.45").is_empty());
        assert_eq!(newest_glibcxx(&[]), None);
    }

    #[test]
    fn cpuinfo_of_x86_and_arm64() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: fpu sse4_2 avx avx2 fma\n\nprocessor\t: 1\nmodel name\t: other\n";
        let c = cpuinfo(x86, Arch::Amd64);
        assert_eq!(c.model.as_deref(), Some("Intel(R) Xeon(R) Platinum 8480+"));
        assert!(c.flags.contains("avx2") && c.flags.len() == 5);
        let arm = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve2 i8mm bf16\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n";
        let c = cpuinfo(arm, Arch::Arm64);
        assert_eq!(c.model.as_deref(), Some("Neoverse-V2"));
        assert!(c.flags.contains("sve2"));
        let jetson =
            "processor\t: 0\nmodel name\t: ARMv8 Processor rev 1 (v8l)\nCPU implementer\t: 0x41\nCPU part\t: 0xd42\n";
        assert_eq!(cpuinfo(jetson, Arch::Arm64).model.as_deref(), Some("Cortex-A78AE"));
        let unknown = cpuinfo("CPU implementer\t: 0x61\nCPU part\t: 0x022\n", Arch::Arm64);
        assert_eq!(unknown.model.as_deref(), Some("ARM part 0x61/0x22"));
        let named = cpuinfo("Model name\t: Kunpeng-920\nCPU implementer\t: 0x48\nCPU part\t: 0xd01\n", Arch::Arm64);
        assert_eq!(named.model.as_deref(), Some("Kunpeng-920"));
        assert_eq!(cpuinfo("", Arch::Arm64), CpuInfo::default());
        assert_eq!(cpuinfo("garbage without colons", Arch::Amd64), CpuInfo::default());
    }

    #[test]
    fn cpuinfo_of_power_and_z() {
        let p = cpuinfo("processor\t: 0\ncpu\t\t: POWER10 (architected), altivec supported\n", Arch::Ppc64le);
        assert_eq!(p.model.as_deref(), Some("POWER10 (architected), altivec supported"));
        let z = "vendor_id       : IBM/S390\n# processors    : 4\nfeatures\t: esan3 zarch stfle msa\nprocessor 0: version = 00,  identification = 0A2B38,  machine = 3931\n";
        let c = cpuinfo(z, Arch::S390x);
        assert_eq!(c.model.as_deref(), Some("IBM/S390 (machine 3931)"));
        assert!(c.flags.contains("zarch"));
    }

    #[test]
    fn nvidia_smi_lines() {
        let g = nvidia_smi_csv(
            "580.95.05, 9.0, NVIDIA H100 80GB HBM3, 81559 MiB\n580.95.05, 9.0, NVIDIA H100 80GB HBM3, 81559 MiB\n",
        )
        .unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].driver.to_string(), "580.95.05");
        assert_eq!(g[0].compute_capability, Some(ComputeCapability::new(9, 0)));
        assert_eq!((g[0].name.as_str(), g[0].memory_mib), ("NVIDIA H100 80GB HBM3", Some(81559)));
        let jetson = nvidia_smi_csv("540.4.0, 8.7, Orin (nvgpu), [N/A]\n").unwrap();
        assert_eq!((jetson[0].memory_mib, jetson[0].compute_capability), (None, Some(ComputeCapability::new(8, 7))));
        let comma = nvidia_smi_csv("535.183.01, 7.0, Tesla V100, SXM2, 16384 MiB").unwrap();
        assert_eq!(comma[0].name, "Tesla V100, SXM2");
        assert!(nvidia_smi_csv("").unwrap().is_empty());
        for bad in [
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            "Field \"compute_cap\" is not a valid field to query.",
            "580.95.05, 9.0, , 81559 MiB",
            "580.95.05, 9.0, H100, lots",
        ] {
            assert!(nvidia_smi_csv(bad).unwrap_err().contains(bad), "{bad}");
        }
    }

    #[test]
    fn kernel_module_versions() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.144.03  Release Build  (dvs-builder@U16-I3-D08-1-2)  Mon Dec 30 17:10:10 UTC 2024\nGCC version:  gcc version 12.3.0\n";
        assert_eq!(proc_driver_version(open).unwrap().to_string(), "550.144.03");
        let old = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n";
        assert_eq!(proc_driver_version(old).unwrap().to_string(), "535.183.01");
        assert_eq!(proc_driver_version("garbage"), None);
        assert_eq!(proc_driver_version(""), None);
        assert_eq!(sys_module_version("550.144.03\n").unwrap().to_string(), "550.144.03");
        assert_eq!(sys_module_version("not a version"), None);
    }

    #[test]
    fn small_numbers_and_names() {
        assert_eq!(meminfo_total_mib("MemTotal:       64348696 kB\nMemFree: 1 kB\n"), Some(62840));
        assert_eq!(meminfo_total_mib("MemFree: 1 kB\n"), None);
        assert_eq!(first_number("69208612864\n/opt\n"), Some(69_208_612_864));
        assert_eq!(first_number("x"), None);
        assert_eq!(whole_gb(69_208_612_864), 69);
        assert!(is_nvidia_icd("nvidia_icd.json") && is_nvidia_icd("nvidia_icd.x86_64.json"));
        assert!(!is_nvidia_icd("intel_icd.x86_64.json") && !is_nvidia_icd("nvidia_icd.json.bak"));
        assert_eq!(sanitize(" dgx01\n\u{1b}[31m "), "dgx01  [31m");
        assert_eq!(first_line("\n  NVIDIA-SMI has failed \nmore"), "NVIDIA-SMI has failed");
        assert_eq!(gpu_summary(["A", "A", "B"]), "2x A + 1x B");
    }

    #[test]
    fn mig_instances_are_read_under_their_gpu() {
        let text = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5f3c2ad1-0000-0000-0000-000000000000)\n  \
            MIG 3g.40gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)\n  \
            MIG 1g.10gb+me  Device  1: (UUID: MIG-1929581a-2be6-5dec-bf34-0954c6c529a6)\n\
            GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-6f3c2ad1-0000-0000-0000-000000000000)\n";
        let mig = nvidia_smi_mig(text).unwrap();
        assert_eq!(mig.len(), 1);
        let profiles: Vec<String> = mig[&0].iter().map(|m| m.profile.to_string()).collect();
        assert_eq!(profiles, ["3g.40gb", "1g.10gb+me"]);
        assert_eq!(mig[&0][0].memory_mib, 38_146);
        assert!(nvidia_smi_mig("  MIG 3g.40gb Device 0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)").is_err());
        assert!(nvidia_smi_mig("GPU 0: x\n  MIG 3g.40gb Device 0: (UUID: MIG-GPU-1/2/0)").is_err());
        assert_eq!(nvidia_smi_mig("GPU 0: Tesla T4 (UUID: GPU-1)\n").unwrap().len(), 0);
    }

    #[test]
    fn wsl2_kernels_are_told_from_wsl1_and_linux() {
        assert!(is_wsl2_kernel(
            "Linux version 6.6.87.2-microsoft-standard-WSL2 (root@439a258ad544) (gcc (GCC) 11.2.0)"
        ));
        assert!(!is_wsl2_kernel("Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0)"));
        assert!(!is_wsl2_kernel("Linux version 6.8.0-45-generic (buildd@lcy02-amd64-022)"));
    }
}
