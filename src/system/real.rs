//! The real machine: a [`System`] that downloads from the real publishers
//! (or the addresses it is given), writes real files, runs real processes
//! within a time limit, and asks the kernel for free disk and the clock.
//!
//! [`RealSystem`] shares HTTP, files and unpacking with the simulated
//! machine ([`Local`]); what differs is that processes, the package manager,
//! disk and clock are real. Installing OS packages needs root: as another
//! user the package manager is not run, and the build fails with that
//! reason. [`EnginesLock`] keeps two installers off one engines directory.

// This module is where processes, the clock and the kernel are asked for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::local::Local;
use super::{Cmd, DirEntry, Downloaded, FetchJob, Fetched, HttpResponse, Output, SysError, System};

/// What a download shows while it runs; the library never draws, the
/// command line decides how (a progress bar on a terminal, nothing on a pipe).
pub trait Reporter: Send {
    /// A download of `what` (an asset's name) began; `total` bytes when known.
    fn start(&mut self, what: &str, total: Option<u64>);
    /// `done` bytes of the current download have arrived.
    fn advance(&mut self, done: u64, total: Option<u64>);
    /// The current download ended (well or not).
    fn finish(&mut self);
}

/// A reporter that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Reporter for Silent {
    fn start(&mut self, _: &str, _: Option<u64>) {}
    fn advance(&mut self, _: u64, _: Option<u64>) {}
    fn finish(&mut self) {}
}

/// The machine this process runs on.
pub struct RealSystem {
    local: Local,
    reporter: Box<dyn Reporter>,
}

impl std::fmt::Debug for RealSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealSystem").finish_non_exhaustive()
    }
}

impl RealSystem {
    /// The real machine, reaching the network through `local` and showing
    /// downloads through `reporter`.
    pub fn new(local: Local, reporter: Box<dyn Reporter>) -> RealSystem {
        RealSystem { local, reporter }
    }
}

/// The package managers' installing commands: they need root.
const INSTALLERS: &[&str] = &["apt-get", "dnf", "apk"];

impl System for RealSystem {
    fn http_get(&mut self, url: &str, accept: &str) -> Result<HttpResponse, SysError> {
        self.local.http_get(url, accept)
    }

    fn download(&mut self, url: &str, dest: &Path) -> Result<Downloaded, SysError> {
        let name = dest.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        self.reporter.start(&name, None);
        let reporter = &mut self.reporter;
        let result = self.local.download_reporting(url, dest, &mut |done, total| reporter.advance(done, total));
        self.reporter.finish();
        result
    }

    fn fetch_unpack(&mut self, jobs: &[FetchJob]) -> Vec<Result<Fetched, SysError>> {
        // One bar for the jobs together: the sum of their bytes.
        let what = jobs
            .iter()
            .map(|j| j.url.rsplit('/').next().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        self.reporter.start(&what, None);
        let seen = std::sync::Mutex::new((vec![0u64; jobs.len()], vec![None::<u64>; jobs.len()]));
        let reporter = std::sync::Mutex::new(&mut self.reporter);
        let results = self.local.fetch_unpack(jobs, &|i, done, total| {
            let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (seen.0[i], seen.1[i]) = (done, total);
            let sum = seen.0.iter().sum();
            let all = seen.1.iter().try_fold(0u64, |acc, t| t.map(|t| acc + t));
            reporter.lock().unwrap_or_else(std::sync::PoisonError::into_inner).advance(sum, all);
        });
        self.reporter.finish();
        results
    }

    fn merge_into(&mut self, from: &Path, into: &Path) -> Result<(), SysError> {
        self.local.merge_into(from, into)
    }

    fn sha256_file(&mut self, path: &Path) -> Result<Option<(u64, String)>, SysError> {
        self.local.sha256_file(path)
    }

    fn run(&mut self, cmd: &Cmd) -> Result<Output, SysError> {
        let program = cmd.program.to_string_lossy().into_owned();
        let euid = rustix::process::geteuid();
        if INSTALLERS.contains(&program.as_str()) && !euid.is_root() {
            return Ok(Output {
                code: Some(1),
                stdout: String::new(),
                stderr: format!(
                    "installing OS packages needs root, and llmgw runs as uid {}; install them by hand or run as root\n",
                    euid.as_raw()
                ),
            });
        }
        run_with_limit(cmd).map_err(|e| SysError::Spawn { program, message: e.to_string() })
    }

    fn disk_free(&mut self, path: &Path) -> Result<u64, SysError> {
        // The nearest directory that exists: the engines directory may not yet.
        let mut at = path;
        while !at.exists() {
            at = at.parent().unwrap_or(Path::new("/"));
        }
        let st = rustix::fs::statvfs(at).map_err(|e| SysError::io("statvfs", at, &std::io::Error::from(e)))?;
        Ok(st.f_bavail.saturating_mul(st.f_frsize))
    }

    fn create_dir_all(&mut self, path: &Path) -> Result<(), SysError> {
        self.local.create_dir_all(path)
    }

    fn remove(&mut self, path: &Path) -> Result<(), SysError> {
        self.local.remove(path)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> Result<(), SysError> {
        self.local.rename(from, to)
    }

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        self.local.write_atomic(path, contents)
    }

    fn read(&mut self, path: &Path) -> Result<Option<Vec<u8>>, SysError> {
        self.local.read(path)
    }

    fn list_dir(&mut self, path: &Path) -> Result<Option<Vec<DirEntry>>, SysError> {
        self.local.list_dir(path)
    }

    fn now(&mut self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }

    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Runs `cmd`, its output captured, killing it at its time limit (then the
/// exit code is `None` and standard error says so). The process runs in a
/// process group of its own, and the whole group is killed: a grandchild
/// holding the output pipes (Python's workers, uv's builds) cannot keep the
/// installer waiting past the limit.
///
/// # Errors
/// The `std::io::Error` of a program that cannot be started (`NotFound`
/// for one that does not exist) or waited for.
pub fn run_with_limit(cmd: &Cmd) -> std::io::Result<Output> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(&cmd.program)
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    // Read both pipes on threads so a chatty program never blocks on a full pipe.
    let (tx, rx) = std::sync::mpsc::channel::<(bool, String)>();
    let drain = |mut pipe: Box<dyn Read + Send>, is_out: bool, tx: std::sync::mpsc::Sender<(bool, String)>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            let _ = tx.send((is_out, String::from_utf8_lossy(&buf).into_owned()));
        });
    };
    drain(Box::new(child.stdout.take().expect("stdout is piped")), true, tx.clone());
    drain(Box::new(child.stderr.take().expect("stderr is piped")), false, tx);
    let deadline = Instant::now() + Duration::from_secs(cmd.timeout_secs);
    let (code, killed) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.code(), false),
            Ok(None) if Instant::now() >= deadline => {
                let group = rustix::process::Pid::from_child(&child);
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(e),
        }
    };
    // The pipes close when every holder has exited; after a kill, wait only briefly.
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let patience = if killed { Duration::from_millis(500) } else { Duration::from_secs(3600) };
    for _ in 0..2 {
        match rx.recv_timeout(patience) {
            Ok((true, s)) => stdout = s,
            Ok((false, s)) => stderr = s,
            Err(_) => break,
        }
    }
    if killed {
        stderr.push_str(&format!("llmgw: killed after its limit of {} s\n", cmd.timeout_secs));
    }
    Ok(Output { code, stdout, stderr })
}

/// An exclusive lock on an engines directory, held while a convergence runs
/// there: a second installer waits for the first, then finds its work done.
/// Released when dropped (or when the process ends).
#[derive(Debug)]
pub struct EnginesLock {
    _file: std::fs::File,
}

impl EnginesLock {
    /// Takes the lock `<dir>/.lock`, creating the directory; waits while
    /// another process holds it.
    ///
    /// # Errors
    /// [`SysError::Io`] when the directory or the lock file cannot be made.
    pub fn acquire(dir: &Path) -> Result<EnginesLock, SysError> {
        std::fs::create_dir_all(dir).map_err(|e| SysError::io("create", dir, &e))?;
        let path = dir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| SysError::io("open", &path, &e))?;
        file.lock().map_err(|e| SysError::io("lock", &path, &e))?;
        Ok(EnginesLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sys() -> RealSystem {
        RealSystem::new(Local::loopback(5, 5).unwrap(), Box::new(Silent))
    }

    #[test]
    fn runs_processes_and_kills_them_at_their_limit() {
        let out = sys().run(&Cmd::new("sh", ["-c", "echo out; echo err >&2; exit 3"])).unwrap();
        assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (Some(3), "out\n", "err\n"));
        let hung = sys().run(&Cmd::new("sleep", ["5"]).timeout(1)).unwrap();
        assert_eq!(hung.code, None);
        assert!(hung.stderr.contains("killed after its limit of 1 s"));
        assert!(matches!(sys().run(&Cmd::new("/nonexistent/x", ["y"])), Err(SysError::Spawn { .. })));
    }

    #[test]
    fn a_grandchild_holding_the_pipes_does_not_outlive_the_limit() {
        let started = Instant::now();
        let out = sys().run(&Cmd::new("sh", ["-c", "sleep 30 & sleep 30"]).timeout(1)).unwrap();
        assert_eq!(out.code, None);
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }

    #[test]
    fn free_disk_is_asked_of_the_nearest_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(sys().disk_free(&dir.path().join("not/yet/there")).unwrap() > 0);
    }

    #[test]
    fn a_second_lock_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = EnginesLock::acquire(dir.path()).unwrap();
        let path = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _second = EnginesLock::acquire(&path).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "the second waits");
        drop(first);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "and then gets it");
        t.join().unwrap();
    }
}
