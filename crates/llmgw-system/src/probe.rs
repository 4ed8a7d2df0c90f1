//! The probes: [`RealProbe`] asks this machine, [`Capture`] saves what any
//! probe answers into a folder, [`ReplayProbe`] answers from such a folder.
//!
//! A capture folder holds one file per source, named by [`file_source`],
//! [`dir_source`] and [`command_source`]:
//!
//! | file | what it holds |
//! | --- | --- |
//! | `os-release` | `/etc/os-release` (or `/usr/lib/os-release`) |
//! | `cpuinfo`, `meminfo`, `hostname` | `/proc/cpuinfo`, `/proc/meminfo`, `/proc/sys/kernel/hostname` |
//! | `proc-driver-nvidia-version`, `sys-module-nvidia-version` | the NVIDIA kernel module's version files |
//! | `proc-version` | `/proc/version` (a WSL 2 kernel says so) |
//! | `nv-tegra-release` | `/etc/nv_tegra_release`, a Jetson's L4T release |
//! | `libstdcxx-glibcxx` | the `GLIBCXX_3.4[.N]` names in the system `libstdc++.so.6`, one a line |
//! | `vulkan-icd` | the paths of the files in the Vulkan `icd.d` directories, one a line |
//! | `uname-m`, `ldd-version`, `getconf-gnu-libc-version`, `nvidia-smi.csv`, `nvidia-smi-L`, `packages.txt` | a command's standard output (`nvidia-smi-L`: `nvidia-smi -L`, the GPUs and their MIG instances) |
//! | `NAME.stderr`, `NAME.exit` | beside a command's file: its standard error, and its exit code when not 0 (`killed` at its time limit) |
//! | `package-manager` | the path of the package manager's installer (`/usr/bin/apt-get`) |
//! | `statvfs` | free bytes of the engines directory's file system, then the engines directory asked about |
//! | `euid` | the effective user id |
//! | `nvml.json` | what NVML answered ([`NvmlReport`]) |
//!
//! A file that is absent means the machine has no such file, directory or
//! program (or NVML library); so a folder can be written by hand from the
//! public formats of these files.
//!
//! Uses: `files` and `process`.

// This module is where discovery touches files and processes for real,
// and where capture folders are written and read (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::files::{Files, free_bytes};
use llmgw_core::discover::{DiscoverError, NvmlReport, Probe, STATIC_NO_NVML, VULKAN_ICD_DIRS, parse};
#[cfg(not(target_env = "musl"))]
use llmgw_core::discover::{NVML_LIBRARY, NvmlGpu};
use llmgw_core::system::{Cmd, Ended, Output};

/// The capture file that answers for reading `path`; `None` for a file discovery does not read.
pub fn file_source(path: &Path) -> Option<&'static str> {
    let name = match path.to_str()? {
        "/etc/os-release" | "/usr/lib/os-release" => "os-release",
        "/proc/cpuinfo" => "cpuinfo",
        "/proc/meminfo" => "meminfo",
        "/proc/sys/kernel/hostname" => "hostname",
        "/proc/driver/nvidia/version" => "proc-driver-nvidia-version",
        "/sys/module/nvidia/version" => "sys-module-nvidia-version",
        "/proc/version" => "proc-version",
        "/etc/nv_tegra_release" => "nv-tegra-release",
        _ if path.file_name().is_some_and(|n| n == "libstdc++.so.6") => LIBSTDCXX,
        _ => return None,
    };
    Some(name)
}

/// The most bytes one file of a capture is (16 MiB): the largest is a
/// listing or a command's output of a few kilobytes; libstdc++ is kept as
/// its version names only.
pub const MAX_CAPTURE_FILE_BYTES: u64 = 16 << 20;

const LIBSTDCXX: &str = "libstdcxx-glibcxx";
const VULKAN_ICD: &str = "vulkan-icd";
const PACKAGE_MANAGER: &str = "package-manager";
const STATVFS: &str = "statvfs";
const EUID: &str = "euid";
const NVML: &str = "nvml.json";

/// The capture file that answers for listing `path`; `None` for a directory discovery does not list.
pub fn dir_source(path: &Path) -> Option<&'static str> {
    VULKAN_ICD_DIRS.iter().any(|d| Path::new(d) == path).then_some(VULKAN_ICD)
}

/// The capture file that answers for running `cmd`; `None` for a command discovery does not run.
pub fn command_source(cmd: &Cmd) -> Option<&'static str> {
    let program = cmd.program.file_name()?.to_str()?;
    let first = cmd.args.first().map(String::as_str);
    Some(match (program, first) {
        ("uname", Some("-m")) => "uname-m",
        ("ldd", Some("--version")) => "ldd-version",
        ("getconf", Some("GNU_LIBC_VERSION")) => "getconf-gnu-libc-version",
        ("nvidia-smi", Some("-L")) => "nvidia-smi-L",
        ("nvidia-smi", _) => "nvidia-smi.csv",
        ("dpkg-query" | "rpm" | "apk", _) => "packages.txt",
        _ => return None,
    })
}

/// This machine, asked directly.
#[derive(Debug, Clone, Default)]
pub struct RealProbe {}

impl RealProbe {
    /// A probe of this machine.
    pub fn new() -> RealProbe {
        RealProbe {}
    }
}

fn io(op: &'static str, path: &Path, e: &std::io::Error) -> DiscoverError {
    DiscoverError::Io { op, path: path.to_path_buf(), message: e.to_string() }
}

/// The real probe reads and lists with the installer's own files
/// ([`crate::files`]), runs with its own runner
/// ([`crate::process`]), and asks the same `statvfs`.
impl Probe for RealProbe {
    fn read_file(&mut self, path: &Path) -> Result<Option<Vec<u8>>, DiscoverError> {
        Files::durable().read(path).map_err(DiscoverError::from)
    }

    fn list_dir(&mut self, path: &Path) -> Result<Option<Vec<String>>, DiscoverError> {
        let listing = Files::durable().list_dir(path).map_err(DiscoverError::from)?;
        Ok(listing.map(|entries| entries.into_iter().map(|e| e.name).collect()))
    }

    fn run(&mut self, cmd: &Cmd) -> Result<Option<Output>, DiscoverError> {
        // The installer's own runner (time limit, process group), in the C locale.
        let cmd = cmd.clone().env("LC_ALL", "C");
        match crate::process::run_with_limit(&cmd) {
            Ok(out) => Ok(Some(out)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            // execvp says EACCES when a folder on PATH cannot be searched by
            // this user, though the program is in none of them (execvp(3)):
            // missing, unless an executable of that name is there to run.
            Err(e)
                if e.kind() == ErrorKind::PermissionDenied
                    && !cmd.program.as_os_str().as_encoded_bytes().contains(&b'/')
                    && self.find_program(&cmd.program.to_string_lossy())?.is_none() =>
            {
                Ok(None)
            }
            Err(e) => Err(io("run", &cmd.program, &e)),
        }
    }

    fn find_program(&mut self, name: &str) -> Result<Option<PathBuf>, DiscoverError> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::env::split_paths(&path).chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
        Ok(dirs.map(|d| d.join(name)).find(|p| is_executable(p)))
    }

    fn free_bytes(&mut self, path: &Path) -> Result<u64, DiscoverError> {
        free_bytes(path).map_err(DiscoverError::from)
    }

    fn euid(&mut self) -> Result<u32, DiscoverError> {
        Ok(rustix::process::geteuid().as_raw())
    }

    fn nvml(&mut self) -> Result<Option<NvmlReport>, DiscoverError> {
        if self.nvml_unloadable().is_some() {
            return Ok(None);
        }
        nvml_report()
    }

    /// [`STATIC_NO_NVML`] in a musl build (the release's static binaries),
    /// decided when llmgw is compiled; `None` in a glibc build.
    fn nvml_unloadable(&self) -> Option<&'static str> {
        cfg!(target_env = "musl").then_some(STATIC_NO_NVML)
    }
}

/// A static (musl) llmgw carries no NVML code: nvml-wrapper is a dependency
/// of the other builds only (Cargo.toml).
#[cfg(target_env = "musl")]
fn nvml_report() -> Result<Option<NvmlReport>, DiscoverError> {
    Ok(None)
}

/// What NVML answers, loaded with `dlopen` from [`NVML_LIBRARY`]; `None`
/// when it cannot be loaded.
#[cfg(not(target_env = "musl"))]
fn nvml_report() -> Result<Option<NvmlReport>, DiscoverError> {
    use nvml_wrapper::error::NvmlError;
    let nvml = match nvml_wrapper::Nvml::builder().lib_path(std::ffi::OsStr::new(NVML_LIBRARY)).init() {
        Ok(n) => n,
        // No library: no NVIDIA driver's user space on this machine.
        Err(NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound) => return Ok(None),
        Err(e) => return Ok(Some(NvmlReport { error: Some(e.to_string()), ..NvmlReport::default() })),
    };
    let driver = match nvml.sys_driver_version() {
        Ok(d) => d,
        Err(e) => return Ok(Some(NvmlReport { error: Some(e.to_string()), ..NvmlReport::default() })),
    };
    let count = match nvml.device_count() {
        Ok(c) => c,
        Err(e) => return Ok(Some(NvmlReport { driver: Some(driver), error: Some(e.to_string()), gpus: vec![] })),
    };
    let mut gpus = vec![];
    for i in 0..count {
        let device = match nvml.device_by_index(i) {
            Ok(d) => d,
            Err(e) => {
                gpus.push(NvmlGpu { error: Some(e.to_string()), ..NvmlGpu::default() });
                continue;
            }
        };
        let mut errors = vec![];
        let name = device.name().map_err(|e| errors.push(format!("name: {e}"))).ok();
        let compute_capability = device
            .cuda_compute_capability()
            .map(|c| format!("{}.{}", c.major, c.minor))
            .map_err(|e| errors.push(format!("compute capability: {e}")))
            .ok();
        let memory_total_bytes = match device.memory_info() {
            Ok(m) => Some(m.total),
            // An integrated GPU (Jetson, GB10) has no memory of its own.
            Err(NvmlError::NotSupported) => None,
            Err(e) => {
                errors.push(format!("memory: {e}"));
                None
            }
        };
        let error = (!errors.is_empty()).then(|| errors.join("; "));
        gpus.push(NvmlGpu { name, compute_capability, memory_total_bytes, error });
    }
    Ok(Some(NvmlReport { driver: Some(driver), error: None, gpus }))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A probe that passes every question to another and keeps each answer,
/// to be written into a capture folder by [`Capture::finish`].
pub struct Capture<'a> {
    inner: &'a mut dyn Probe,
    files: BTreeMap<String, Vec<u8>>,
}

impl<'a> Capture<'a> {
    /// Captures what `inner` answers.
    pub fn new(inner: &'a mut dyn Probe) -> Capture<'a> {
        Capture { inner, files: BTreeMap::new() }
    }

    /// The capture files kept so far, by name.
    pub fn files(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.files
    }

    /// Writes the files kept into `dir` (created with its parents), which
    /// must be empty or not exist: a file left from another machine would
    /// be read back as this one's. Returns the paths written.
    ///
    /// # Errors
    /// [`DiscoverError::Io`] when `dir` holds anything or a file cannot be written.
    pub fn finish(self, dir: &Path) -> Result<Vec<PathBuf>, DiscoverError> {
        Capture::check_folder(dir)?;
        std::fs::create_dir_all(dir).map_err(|e| io("create", dir, &e))?;
        let mut written = vec![];
        for (name, bytes) in &self.files {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|e| io("write", &path, &e))?;
            written.push(path);
        }
        Ok(written)
    }

    /// Checks that `dir` can receive a capture: it does not exist, or is an
    /// empty directory. Worth asking before discovery starts.
    ///
    /// # Errors
    /// [`DiscoverError::Io`] naming `dir` when it holds anything or is not a directory.
    pub fn check_folder(dir: &Path) -> Result<(), DiscoverError> {
        let refuse =
            |message: &str| DiscoverError::Io { op: "capture into", path: dir.to_path_buf(), message: message.into() };
        match std::fs::read_dir(dir) {
            Ok(mut entries) => match entries.next() {
                Some(_) => Err(refuse("the folder is not empty (a capture folder holds one machine)")),
                None => Ok(()),
            },
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(refuse(&e.to_string())),
        }
    }

    fn keep(&mut self, name: &str, bytes: impl Into<Vec<u8>>) {
        self.files.insert(name.to_string(), bytes.into());
    }
}

impl Probe for Capture<'_> {
    fn read_file(&mut self, path: &Path) -> Result<Option<Vec<u8>>, DiscoverError> {
        let answer = self.inner.read_file(path)?;
        if let (Some(name), Some(bytes)) = (file_source(path), &answer)
            && !self.files.contains_key(name)
        {
            if name == LIBSTDCXX {
                // The library is megabytes; its version names are what is read of it.
                let names = parse::glibcxx_versions(bytes);
                self.keep(name, names.iter().map(|n| format!("{n}\n")).collect::<String>());
            } else {
                self.keep(name, bytes.clone());
            }
        }
        Ok(answer)
    }

    fn list_dir(&mut self, path: &Path) -> Result<Option<Vec<String>>, DiscoverError> {
        let answer = self.inner.list_dir(path)?;
        if let Some(name) = dir_source(path) {
            let mut text = self.files.remove(name).unwrap_or_default();
            for entry in answer.iter().flatten() {
                text.extend_from_slice(format!("{}\n", path.join(entry).display()).as_bytes());
            }
            self.keep(name, text);
        }
        Ok(answer)
    }

    fn run(&mut self, cmd: &Cmd) -> Result<Option<Output>, DiscoverError> {
        let answer = self.inner.run(cmd)?;
        if let (Some(name), Some(out)) = (command_source(cmd), &answer) {
            self.keep(name, out.stdout.clone());
            if !out.stderr.is_empty() {
                self.keep(&format!("{name}.stderr"), out.stderr.clone());
            }
            match out.ended {
                Ended::Exited(0) => {}
                Ended::Exited(c) => self.keep(&format!("{name}.exit"), format!("{c}\n")),
                Ended::Signalled(n) => self.keep(&format!("{name}.exit"), format!("signal {n}\n")),
                Ended::TimedOut { .. } => self.keep(&format!("{name}.exit"), "killed\n"),
            }
        }
        Ok(answer)
    }

    fn find_program(&mut self, name: &str) -> Result<Option<PathBuf>, DiscoverError> {
        let answer = self.inner.find_program(name)?;
        if let Some(p) = &answer {
            self.keep(PACKAGE_MANAGER, format!("{}\n", p.display()));
        }
        Ok(answer)
    }

    fn free_bytes(&mut self, path: &Path) -> Result<u64, DiscoverError> {
        let answer = self.inner.free_bytes(path)?;
        self.keep(STATVFS, format!("{answer}\n{}\n", path.display()));
        Ok(answer)
    }

    fn euid(&mut self) -> Result<u32, DiscoverError> {
        let answer = self.inner.euid()?;
        self.keep(EUID, format!("{answer}\n"));
        Ok(answer)
    }

    /// The probe captured: a static llmgw's capture has no `nvml.json`,
    /// as a machine without NVML's library has none.
    fn nvml_unloadable(&self) -> Option<&'static str> {
        self.inner.nvml_unloadable()
    }

    fn nvml(&mut self) -> Result<Option<NvmlReport>, DiscoverError> {
        let answer = self.inner.nvml()?;
        if let Some(report) = &answer {
            let text = serde_json::to_string_pretty(report).expect("an NVML report serializes");
            self.keep(NVML, format!("{text}\n"));
        }
        Ok(answer)
    }
}

/// A machine as a capture folder says it is, reading nothing else.
#[derive(Debug, Clone)]
pub struct ReplayProbe {
    dir: PathBuf,
}

impl ReplayProbe {
    /// Replays the capture folder `dir`.
    ///
    /// # Errors
    /// [`DiscoverError::Replay`] when `dir` is not a directory.
    pub fn new(dir: &Path) -> Result<ReplayProbe, DiscoverError> {
        if !dir.is_dir() {
            let what = match std::fs::metadata(dir) {
                Ok(m) => format!("it is {}", crate::files::kind_in_words(m.file_type())),
                Err(e) if e.kind() == ErrorKind::NotFound => "no such directory".to_string(),
                Err(e) => e.to_string(),
            };
            let message =
                format!("not a capture folder ({what}); give the folder `llmgw discover --capture DIR` wrote");
            return Err(DiscoverError::Replay { path: dir.to_path_buf(), message });
        }
        if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none()) {
            let message = "not a capture folder (it is empty); give the folder `llmgw discover --capture DIR` wrote";
            return Err(DiscoverError::Replay { path: dir.to_path_buf(), message: message.into() });
        }
        Ok(ReplayProbe { dir: dir.to_path_buf() })
    }

    /// A capture file's bytes; `None` when the folder lacks it.
    fn file(&self, name: &str) -> Result<Option<Vec<u8>>, DiscoverError> {
        let path = self.dir.join(name);
        // A regular file of a capture's size, refused at once otherwise (a
        // FIFO would wait for ever, a device or a sparse giant never end).
        match crate::files::read_input(&path, MAX_CAPTURE_FILE_BYTES, "a capture's file") {
            Ok(b) => Ok(Some(b)),
            Err(crate::files::InputError::NotFound) => Ok(None),
            Err(e) => Err(DiscoverError::Replay { path, message: e.to_string() }),
        }
    }

    fn text(&self, name: &str) -> Result<Option<String>, DiscoverError> {
        Ok(self.file(name)?.map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    fn unknown(&self, what: &str) -> DiscoverError {
        DiscoverError::Replay { path: self.dir.clone(), message: format!("a capture holds no answer for {what}") }
    }

    fn required_number(&self, name: &str) -> Result<u64, DiscoverError> {
        let path = self.dir.join(name);
        let text =
            self.text(name)?.ok_or_else(|| DiscoverError::Replay { path: path.clone(), message: "missing".into() })?;
        parse::first_number(&text).ok_or_else(|| DiscoverError::Replay {
            path,
            message: format!("`{}` is not a number", parse::first_line(&text)),
        })
    }
}

impl Probe for ReplayProbe {
    fn read_file(&mut self, path: &Path) -> Result<Option<Vec<u8>>, DiscoverError> {
        let name = file_source(path).ok_or_else(|| self.unknown(&format!("reading {}", path.display())))?;
        self.file(name)
    }

    fn list_dir(&mut self, path: &Path) -> Result<Option<Vec<String>>, DiscoverError> {
        let name = dir_source(path).ok_or_else(|| self.unknown(&format!("listing {}", path.display())))?;
        let Some(text) = self.text(name)? else { return Ok(None) };
        let mut names: Vec<String> = text
            .lines()
            .map(|l| Path::new(l.trim()))
            .filter(|p| p.parent() == Some(path))
            .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Ok((!names.is_empty()).then_some(names))
    }

    fn run(&mut self, cmd: &Cmd) -> Result<Option<Output>, DiscoverError> {
        let name = command_source(cmd).ok_or_else(|| self.unknown(&format!("running `{}`", cmd.display())))?;
        let Some(stdout) = self.text(name)? else { return Ok(None) };
        let stderr = self.text(&format!("{name}.stderr"))?.unwrap_or_default();
        let bad = |t: &str| DiscoverError::Replay {
            path: self.dir.join(format!("{name}.exit")),
            message: format!("`{t}` is neither an exit code, `signal N` nor `killed`"),
        };
        let ended = match self.text(&format!("{name}.exit"))?.as_deref().map(str::trim) {
            None => Ended::Exited(0),
            Some("killed") => Ended::TimedOut { secs: cmd.timeout_secs },
            Some(t) => match t.strip_prefix("signal ") {
                Some(n) => Ended::Signalled(n.trim().parse::<i32>().map_err(|_| bad(t))?),
                None => Ended::Exited(t.parse::<i32>().map_err(|_| bad(t))?),
            },
        };
        Ok(Some(Output { ended, stdout, stderr, ..Output::default() }))
    }

    fn find_program(&mut self, name: &str) -> Result<Option<PathBuf>, DiscoverError> {
        let found = self.text(PACKAGE_MANAGER)?.map(|t| PathBuf::from(parse::first_line(&t)));
        Ok(found.filter(|p| p.file_name().is_some_and(|n| n == name)))
    }

    fn free_bytes(&mut self, _path: &Path) -> Result<u64, DiscoverError> {
        self.required_number(STATVFS)
    }

    fn euid(&mut self) -> Result<u32, DiscoverError> {
        let n = self.required_number(EUID)?;
        u32::try_from(n)
            .map_err(|_| DiscoverError::Replay { path: self.dir.join(EUID), message: format!("{n} is no user id") })
    }

    fn nvml(&mut self) -> Result<Option<NvmlReport>, DiscoverError> {
        let Some(text) = self.text(NVML)? else { return Ok(None) };
        llmgw_model::strict_json::parse(&text, &["gpus[*]"])
            .map(Some)
            .map_err(|e| DiscoverError::Replay { path: self.dir.join(NVML), message: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_has_one_name() {
        assert_eq!(file_source(Path::new("/usr/lib64/libstdc++.so.6")), Some(LIBSTDCXX));
        assert_eq!(file_source(Path::new("/etc/passwd")), None);
        assert_eq!(dir_source(Path::new("/etc/vulkan/icd.d")), Some(VULKAN_ICD));
        assert_eq!(command_source(&llmgw_core::discover::nvidia_smi_command()), Some("nvidia-smi.csv"));
        assert_eq!(command_source(&Cmd::new("rm", ["-rf"])), None);
    }

    #[test]
    fn the_real_probe_runs_and_reads() {
        let mut p = RealProbe::new();
        let out = p.run(&Cmd::new("sh", ["-c", "echo out; echo err >&2; exit 3"])).unwrap().unwrap();
        assert_eq!((out.code(), out.stdout.as_str(), out.stderr.as_str()), (Some(3), "out\n", "err\n"));
        assert_eq!(p.run(&Cmd::new("llmgw-no-such-program", ["x"])).unwrap(), None);
        let slow = p.run(&Cmd::new("sleep", ["5"]).timeout(0)).unwrap().unwrap();
        assert_eq!(slow.ended, Ended::TimedOut { secs: 0 });
        assert_eq!(p.read_file(Path::new("/no/such/file")).unwrap(), None);
        assert!(p.free_bytes(Path::new("/no/such/dir/below")).unwrap() > 0);
        assert!(p.find_program("sh").unwrap().is_some());
    }

    #[test]
    fn a_capture_replays_as_it_was_answered() {
        let dir = tempfile::tempdir().unwrap();
        let mut real = RealProbe::new();
        let mut cap = Capture::new(&mut real);
        let failing = Cmd::new("sh", ["-c", "echo out; echo err >&2; exit 3"]);
        // `sh -c` is no source; ask through a source name instead.
        let _ = cap.run(&failing).unwrap();
        assert!(cap.files().is_empty());
        cap.keep("nvidia-smi.csv", "NVIDIA-SMI has failed\n");
        cap.keep("nvidia-smi.csv.exit", "9\n");
        cap.keep(VULKAN_ICD, "/etc/vulkan/icd.d/nvidia_icd.json\n/usr/share/vulkan/icd.d/intel_icd.x86_64.json\n");
        cap.finish(dir.path()).unwrap();
        let mut replay = ReplayProbe::new(dir.path()).unwrap();
        let out = replay.run(&llmgw_core::discover::nvidia_smi_command()).unwrap().unwrap();
        assert_eq!((out.code(), out.stdout.as_str()), (Some(9), "NVIDIA-SMI has failed\n"));
        assert_eq!(replay.list_dir(Path::new("/etc/vulkan/icd.d")).unwrap().unwrap(), ["nvidia_icd.json"]);
        assert_eq!(replay.list_dir(Path::new("/usr/local/share/vulkan/icd.d")).unwrap(), None);
        assert_eq!(replay.run(&llmgw_core::discover::uname_command()).unwrap(), None);
        assert_eq!(replay.nvml().unwrap(), None);
        assert!(matches!(replay.euid(), Err(DiscoverError::Replay { .. })));
        assert!(replay.read_file(Path::new("/etc/shadow")).is_err());
        // A folder that holds something is not captured into.
        let mut real = RealProbe::new();
        assert!(Capture::new(&mut real).finish(dir.path()).is_err());
        assert!(ReplayProbe::new(&dir.path().join("nope")).is_err());
    }
}
