//! `llmgw discover`: the captures of `tests/discover/` (written by hand from
//! the public formats of the files they stand for) replayed into host
//! descriptions that `simulate` accepts, and this machine described for real.

use std::path::PathBuf;

use assert_cmd::Command;
use llmgw_core::discover::{self, Discovered};
use llmgw_model::host::{Arch, Host, Libc, PackageFamily};
use llmgw_sim::{default_wants, simulate};
use llmgw_system::probe::ReplayProbe;

fn llmgw() -> Command {
    Command::cargo_bin("llmgw").unwrap()
}

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/discover").join(name)
}

fn replay(name: &str) -> Discovered {
    let mut probe = ReplayProbe::new(&capture(name)).unwrap();
    discover::discover(&mut probe).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What a capture must describe.
struct Expect {
    capture: &'static str,
    name: &'static str,
    arch: Arch,
    os: (&'static str, &'static str, PackageFamily),
    glibc: &'static str,
    glibcxx: &'static str,
    cpu: &'static str,
    flags: &'static [&'static str],
    /// Driver, GPU count, first GPU's name, compute capability, memory in MiB, Vulkan ICD.
    nvidia: Option<(&'static str, usize, &'static str, &'static str, u64, bool)>,
    disk_free_gb: u64,
    installed: &'static [&'static str],
    installable: bool,
    /// A word each warning must hold, in order.
    warnings: &'static [&'static str],
    /// State and variant of llama.cpp@b10850 and vllm@0.20.1 in simulation.
    outcomes: [(&'static str, &'static str); 2],
}

const EXPECTED: &[Expect] = &[
    Expect {
        capture: "dgx-h100",
        name: "dgx01 (8x NVIDIA H100 80GB HBM3, driver 580.95.05, ubuntu 24.04)",
        arch: Arch::Amd64,
        os: ("ubuntu", "24.04", PackageFamily::Deb),
        glibc: "2.39",
        glibcxx: "3.4.33",
        cpu: "Intel(R) Xeon(R) Platinum 8480+",
        flags: &["avx2", "avx512f", "amx_tile", "fma"],
        nvidia: Some(("580.95.05", 8, "NVIDIA H100 80GB HBM3", "9.0", 81559, true)),
        disk_free_gb: 3517,
        installed: &["gcc", "libgomp1", "libvulkan1"],
        installable: true,
        warnings: &[],
        outcomes: [("ready", "cuda-12.8"), ("ready", "cu13")],
    },
    Expect {
        capture: "gh200",
        name: "gh200-01 (1x NVIDIA GH200 480GB, driver 580.95.05, ubuntu 24.04, arm64)",
        arch: Arch::Arm64,
        os: ("ubuntu", "24.04", PackageFamily::Deb),
        glibc: "2.39",
        glibcxx: "3.4.33",
        cpu: "Neoverse-V2",
        flags: &["asimd", "sve2", "i8mm", "bf16"],
        nvidia: Some(("580.95.05", 1, "NVIDIA GH200 480GB", "9.0", 97871, true)),
        disk_free_gb: 1500,
        installed: &["gcc", "libgomp1"],
        installable: true,
        warnings: &[],
        outcomes: [("ready", "vulkan"), ("ready", "cu13")],
    },
    Expect {
        capture: "jetson-agx-orin",
        name: "orin-agx (1x Orin (nvgpu), driver 540.4.0, ubuntu 22.04, arm64)",
        arch: Arch::Arm64,
        os: ("ubuntu", "22.04", PackageFamily::Deb),
        glibc: "2.35",
        glibcxx: "3.4.30",
        cpu: "Cortex-A78AE",
        flags: &["asimd", "asimddp", "paca"],
        // No memory of its own: the system's MemTotal.
        nvidia: Some(("540.4.0", 1, "Orin (nvgpu)", "8.7", 62841, true)),
        disk_free_gb: 180,
        installed: &["gcc", "libgomp1", "libvulkan1"],
        installable: true,
        warnings: &[],
        outcomes: [("failed", ""), ("unsupported", "")],
    },
    Expect {
        capture: "rhel9-a100",
        name: "gpu-a100-07.example.internal (4x NVIDIA A100-SXM4-80GB, driver 550.144.03, rhel 9.4)",
        arch: Arch::Amd64,
        os: ("rhel", "9.4", PackageFamily::Rpm),
        glibc: "2.34",
        glibcxx: "3.4.29",
        cpu: "AMD EPYC 7763 64-Core Processor",
        flags: &["avx2", "fma", "sse4_2"],
        nvidia: Some(("550.144.03", 4, "NVIDIA A100-SXM4-80GB", "8.0", 81920, false)),
        disk_free_gb: 900,
        installed: &["gcc", "libgomp"],
        installable: true,
        warnings: &[],
        outcomes: [("failed", ""), ("ready", "cu129")],
    },
    Expect {
        capture: "a100-mig",
        name: "a100-mig-01 (1x NVIDIA A100-SXM4-80GB, driver 535.216.01, ubuntu 22.04)",
        arch: Arch::Amd64,
        os: ("ubuntu", "22.04", PackageFamily::Deb),
        glibc: "2.35",
        glibcxx: "3.4.30",
        cpu: "Intel(R) Xeon(R) Platinum 8480+",
        flags: &["avx2"],
        nvidia: Some(("535.216.01", 1, "NVIDIA A100-SXM4-80GB", "8.0", 81920, false)),
        disk_free_gb: 2000,
        installed: &["gcc", "libgomp1", "libvulkan1"],
        installable: true,
        warnings: &[],
        outcomes: [("failed", ""), ("ready", "cu129")],
    },
    Expect {
        capture: "wsl2-rtx4050",
        name: "wsl-laptop (1x NVIDIA GeForce RTX 4050 Laptop GPU, driver 595.95, ubuntu 24.04)",
        arch: Arch::Amd64,
        os: ("ubuntu", "24.04", PackageFamily::Deb),
        glibc: "2.39",
        glibcxx: "3.4.33",
        cpu: "Intel(R) Xeon(R) Platinum 8480+",
        flags: &["avx2"],
        nvidia: Some(("595.95", 1, "NVIDIA GeForce RTX 4050 Laptop GPU", "8.9", 6141, false)),
        disk_free_gb: 2000,
        installed: &["gcc", "libgomp1", "libvulkan1"],
        installable: true,
        warnings: &[],
        outcomes: [("ready", "cuda-13.4"), ("ready", "cu13")],
    },
    Expect {
        capture: "laptop-nogpu",
        name: "thinkpad (no NVIDIA GPU, ubuntu 24.04)",
        arch: Arch::Amd64,
        os: ("ubuntu", "24.04", PackageFamily::Deb),
        glibc: "2.39",
        glibcxx: "3.4.33",
        cpu: "13th Gen Intel(R) Core(TM) i7-1365U",
        flags: &["avx2", "avx_vnni"],
        nvidia: None,
        disk_free_gb: 412,
        installed: &["libgomp1", "libvulkan1"],
        installable: false,
        warnings: &["not running as root"],
        outcomes: [("ready", "cpu"), ("not_here", "")],
    },
    Expect {
        capture: "h100-driver-down",
        name: "h100-node3 (no NVIDIA GPU, ubuntu 22.04)",
        arch: Arch::Amd64,
        os: ("ubuntu", "22.04", PackageFamily::Deb),
        glibc: "2.35",
        glibcxx: "3.4.30",
        cpu: "Intel(R) Xeon(R) Platinum 8480+",
        flags: &["avx2"],
        nvidia: None,
        disk_free_gb: 2000,
        installed: &["gcc", "libgomp1", "libvulkan1"],
        installable: true,
        warnings: &["NVIDIA driver is not loaded", "NVIDIA-SMI has failed"],
        outcomes: [("ready", "cpu"), ("not_here", "")],
    },
];

#[test]
fn every_capture_replays_into_the_machine_it_was() {
    for e in EXPECTED {
        let Discovered { host, warnings, .. } = replay(e.capture);
        let at = e.capture;
        assert_eq!(host.name, e.name, "{at}");
        assert_eq!(host.arch, e.arch, "{at}");
        assert_eq!((host.os.id.as_str(), host.os.version.as_str(), host.os.package_family), e.os, "{at}");
        assert_eq!(host.os.libc, Libc::Glibc, "{at}");
        assert_eq!(host.os.glibc.as_ref().map(ToString::to_string).as_deref(), Some(e.glibc), "{at}");
        assert_eq!(host.os.glibcxx.as_ref().map(ToString::to_string).as_deref(), Some(e.glibcxx), "{at}");
        assert_eq!(host.cpu.model, e.cpu, "{at}");
        for f in e.flags {
            assert!(host.cpu.flags.contains(*f), "{at}: no flag {f}");
        }
        let nvidia = host.nvidia.as_ref().map(|n| {
            let g = &n.gpus[0];
            assert!(n.gpus.iter().all(|o| o == g), "{at}: GPUs differ");
            (
                n.driver.to_string(),
                n.gpus.len(),
                g.name.clone(),
                g.compute_capability.to_string(),
                g.memory_mib,
                n.vulkan_icd,
            )
        });
        let want =
            e.nvidia.map(|(d, n, name, cc, mib, icd)| (d.to_string(), n, name.to_string(), cc.to_string(), mib, icd));
        assert_eq!(nvidia, want, "{at}");
        assert_eq!(host.disk_free_gb, e.disk_free_gb, "{at}");
        assert_eq!(host.packages.installed.iter().map(String::as_str).collect::<Vec<_>>(), e.installed, "{at}");
        assert_eq!(host.packages.installable, e.installable, "{at}");
        assert_eq!(warnings.len(), e.warnings.len(), "{at}: {warnings:?}");
        for (w, says) in warnings.iter().zip(e.warnings) {
            assert!(w.contains(says), "{at}: `{w}` does not say `{says}`");
        }

        // What discover prints is what simulate reads, unchanged.
        let text = serde_json::to_string(&host).unwrap();
        assert_eq!(Host::from_json(&text).unwrap(), host, "{at}");
        let pretty = serde_json::to_string_pretty(&host).unwrap();
        assert_eq!(Host::from_json(&pretty).unwrap(), host, "{at}");

        let report = simulate(&host, &default_wants()).unwrap_or_else(|err| panic!("{at}: {err}"));
        let outcome = |want: &str| {
            let s = report.engines.iter().find(|s| s.want == want).unwrap();
            (s.state.as_str(), s.variant.clone().unwrap_or_default())
        };
        for (want, (state, variant)) in ["llama.cpp@b11459", "vllm@0.20.1"].iter().zip(e.outcomes) {
            assert_eq!(outcome(want), (state, variant.to_string()), "{at}: {want}");
        }
    }
}

/// What issue 28 added to the host format, read from the captures: a
/// Jetson's L4T release, a GPU's MIG instances, WSL 2; and nothing of them
/// on the machines that have none.
#[test]
fn l4t_mig_and_wsl_are_read_where_the_machine_has_them() {
    let orin = replay("jetson-agx-orin").host;
    assert_eq!(orin.nvidia.as_ref().unwrap().l4t.map(|r| r.to_string()).as_deref(), Some("R36.4.3"));
    let mig = replay("a100-mig").host;
    let instances = &mig.nvidia.as_ref().unwrap().gpus[0].mig;
    assert_eq!(instances.len(), 7);
    assert!(instances.iter().all(|m| m.profile.to_string() == "1g.10gb" && m.memory_mib == 9536));
    assert_eq!(instances[0].uuid.as_str(), "MIG-feb88891-0321-5fef-9c87-d4af3b54259e");
    let wsl = replay("wsl2-rtx4050").host;
    assert!(wsl.os.wsl);
    for e in EXPECTED {
        let h = replay(e.capture).host;
        assert_eq!(h.os.wsl, e.capture == "wsl2-rtx4050", "{}", e.capture);
        let nv = h.nvidia.iter();
        assert_eq!(nv.clone().any(|n| n.l4t.is_some()), e.capture == "jetson-agx-orin", "{}", e.capture);
        assert_eq!(nv.flat_map(|n| &n.gpus).any(|g| !g.mig.is_empty()), e.capture == "a100-mig", "{}", e.capture);
    }
}

/// A capture that is not of one machine: a WSL 2 kernel, which has no
/// NVIDIA kernel module, beside that module's version file.
#[test]
fn a_wsl_kernel_beside_an_nvidia_kernel_module_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(capture("wsl2-rtx4050")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    std::fs::write(
        dir.path().join("proc-driver-nvidia-version"),
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  595.95  Release Build\n",
    )
    .unwrap();
    let out = llmgw().args(["discover", "--replay"]).arg(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/proc/driver/nvidia/version") && stderr.contains("WSL 2"), "{stderr}");
}

#[test]
fn every_capture_folder_is_expected() {
    let mut folders: Vec<String> = std::fs::read_dir(capture(""))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut expected: Vec<&str> = EXPECTED.iter().map(|e| e.capture).collect();
    expected.sort_unstable();
    assert_eq!(folders, expected);
}

#[test]
fn replay_on_the_command_line_prints_the_same_json() {
    let out = llmgw().args(["discover", "--replay"]).arg(capture("dgx-h100")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    let host = replay("dgx-h100").host;
    assert_eq!(printed, format!("{}\n", serde_json::to_string_pretty(&host).unwrap()));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "llmgw: GPU discovery: NVML (libnvidia-ml.so.1): driver 580.95.05, 8 GPUs\n"
    );

    let out = llmgw().args(["discover", "--replay"]).arg(capture("h100-driver-down")).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(
        lines[0],
        "llmgw: GPU discovery: nvidia-smi (NVML, libnvidia-ml.so.1, failed: see the warning): \
         nvidia-smi exited 9: no NVIDIA GPU listed"
    );
    assert!(lines[1..].iter().all(|l| l.starts_with("llmgw: warning: ")), "{stderr}");
}

#[test]
fn bad_replay_and_capture_folders_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    llmgw().args(["discover", "--replay"]).arg(dir.path().join("none")).assert().code(2);
    // An empty folder answers nothing: not even the architecture.
    llmgw().args(["discover", "--replay"]).arg(dir.path()).assert().code(2);
    std::fs::write(dir.path().join("uname-m"), "x86_64\n").unwrap();
    llmgw().args(["discover", "--capture"]).arg(dir.path()).assert().code(2);
    // A whole capture with an NVML answer that is not one.
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    for entry in std::fs::read_dir(capture("dgx-h100")).unwrap().flatten() {
        std::fs::copy(entry.path(), broken.join(entry.file_name())).unwrap();
    }
    std::fs::write(broken.join("nvml.json"), "{\"gpus\": 3}").unwrap();
    let out = llmgw().args(["discover", "--replay"]).arg(&broken).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("llmgw: error: --replay `") && stderr.contains("nvml.json"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn this_machine_is_described_and_simulated() {
    let dir = tempfile::tempdir().unwrap();
    let out = llmgw().arg("discover").args(["--engines-dir"]).arg(dir.path().join("engines")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let (first, rest) = stderr.split_once('\n').unwrap_or((&stderr, ""));
    // A glibc build tries NVML first; this machine has neither it nor nvidia-smi.
    assert_eq!(
        first,
        "llmgw: GPU discovery: neither libnvidia-ml.so.1 nor nvidia-smi is on this machine: no NVIDIA GPU"
    );
    assert!(rest.lines().all(|l| l.starts_with("llmgw: warning: ")), "{stderr}");
    let host_file = dir.path().join("me.json");
    std::fs::write(&host_file, &out.stdout).unwrap();
    Host::from_json(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let sim = llmgw().args(["simulate", "--host"]).arg(&host_file).output().unwrap();
    let code = sim.status.code();
    assert!(matches!(code, Some(0 | 1)), "simulate exited {code:?}: {}", String::from_utf8_lossy(&sim.stderr));
}

#[test]
fn a_capture_of_this_machine_replays_to_the_same_description() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("capture");
    let out_file = dir.path().join("direct.json");
    let direct = llmgw().args(["discover", "--capture"]).arg(&folder).arg("--output").arg(&out_file).output().unwrap();
    assert_eq!(direct.status.code(), Some(0), "{}", String::from_utf8_lossy(&direct.stderr));
    assert!(direct.stdout.is_empty(), "--output writes the file, not stdout");
    for source in ["uname-m", "os-release", "cpuinfo", "statvfs"] {
        assert!(folder.join(source).is_file(), "no {source} captured");
    }
    let replayed = llmgw().args(["discover", "--replay"]).arg(&folder).output().unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(std::fs::read(&out_file).unwrap(), replayed.stdout);
}

/// A replayed machine as a static (musl) llmgw sees it: NVML is never asked.
struct Static(ReplayProbe);

impl discover::Probe for Static {
    fn read_file(&mut self, p: &std::path::Path) -> Result<Option<Vec<u8>>, discover::DiscoverError> {
        self.0.read_file(p)
    }
    fn list_dir(&mut self, p: &std::path::Path) -> Result<Option<Vec<String>>, discover::DiscoverError> {
        self.0.list_dir(p)
    }
    fn run(
        &mut self,
        c: &llmgw_core::system::Cmd,
    ) -> Result<Option<llmgw_core::system::Output>, discover::DiscoverError> {
        self.0.run(c)
    }
    fn find_program(&mut self, n: &str) -> Result<Option<PathBuf>, discover::DiscoverError> {
        self.0.find_program(n)
    }
    fn free_bytes(&mut self, p: &std::path::Path) -> Result<u64, discover::DiscoverError> {
        self.0.free_bytes(p)
    }
    fn euid(&mut self) -> Result<u32, discover::DiscoverError> {
        self.0.euid()
    }
    fn nvml(&mut self) -> Result<Option<discover::NvmlReport>, discover::DiscoverError> {
        panic!("a static llmgw never asks NVML")
    }
    fn nvml_unloadable(&self) -> Option<&'static str> {
        Some(discover::STATIC_NO_NVML)
    }
}

#[test]
fn a_static_llmgw_lists_gpus_with_nvidia_smi_and_says_why_once() {
    let why = "NVML cannot be loaded by a static binary: this llmgw is linked statically (musl), \
               which cannot dlopen, and libnvidia-ml.so.1 is a glibc shared library";
    assert_eq!(discover::STATIC_NO_NVML, why);
    // A GH200 answers through nvidia-smi: the same machine as a glibc llmgw finds.
    let static_gh200 = discover::discover(&mut Static(ReplayProbe::new(&capture("gh200")).unwrap())).unwrap();
    let glibc_gh200 = replay("gh200");
    assert_eq!(static_gh200.host, glibc_gh200.host);
    assert_eq!(static_gh200.warnings, glibc_gh200.warnings);
    assert_eq!(static_gh200.gpu_discovery, format!("nvidia-smi ({why}): driver 580.95.05, 1 GPU"));
    assert_eq!(
        glibc_gh200.gpu_discovery,
        "nvidia-smi (libnvidia-ml.so.1 cannot be loaded on this machine): driver 580.95.05, 1 GPU"
    );
    // A DGX whose GPUs only NVML lists: a static llmgw finds none, and says why.
    let dgx = discover::discover(&mut Static(ReplayProbe::new(&capture("dgx-h100")).unwrap())).unwrap();
    assert_eq!(dgx.host.nvidia, None);
    assert_eq!(dgx.gpu_discovery, format!("nvidia-smi ({why}): nvidia-smi is not on this machine: no NVIDIA GPU"));
    assert_eq!(dgx.gpu_discovery.matches("static binary").count(), 1, "said once");
    assert_eq!(
        dgx.warnings,
        ["the NVIDIA kernel module 580.95.05 is loaded, but nvidia-smi is not here (and a static llmgw cannot \
          load NVML): its GPUs cannot be listed (\"nvidia\": null)"]
    );
    // This build decides at compile time: a glibc build asks NVML, a musl build never does.
    use discover::Probe as _;
    let real = llmgw_system::probe::RealProbe::new();
    assert_eq!(real.nvml_unloadable(), cfg!(target_env = "musl").then_some(why));
}
