//! The real machine: a [`System`] that downloads from the real publishers
//! (or the addresses it is given), writes real files, runs real processes
//! within a time limit, and asks the kernel for free disk and the clock.
//!
//! [`RealSystem`] shares HTTP and files with the simulated machine
//! ([`Local`]); what differs is that processes, the package manager, disk
//! and clock are real, and downloads show their progress. Installing OS
//! packages needs root: as another user the package manager is not run, and
//! the build fails with that reason.
//!
//! Uses: `files`, `http` and `process`.

// This module is where the clock and the kernel are asked for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::time::Duration;

use super::files::{Files, free_bytes};
use super::http::Http;
use super::process::run_with_limit;
use llmgw_core::system::{Cmd, Downloaded, Effects, FetchJob, Fetched, Output, SysError, System};

use crate::Local;

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
    effects: Local,
    reporter: Box<dyn Reporter>,
}

impl std::fmt::Debug for RealSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealSystem").finish_non_exhaustive()
    }
}

impl RealSystem {
    /// The real machine, reaching the network through `http`, its files
    /// synced before they count, and showing downloads through `reporter`.
    pub fn new(http: Http, reporter: Box<dyn Reporter>) -> RealSystem {
        RealSystem { effects: Local { http, files: Files::durable() }, reporter }
    }
}

/// The package managers' installing commands: they need root.
const INSTALLERS: &[&str] = &["apt-get", "dnf", "apk"];

impl System for RealSystem {
    fn effects(&self) -> &dyn Effects {
        &self.effects
    }

    fn retrying(&mut self, message: &str) {
        // Real waits: said at the default level, not left silent.
        tracing::warn!("{message}");
    }

    fn download(&mut self, url: &str, dest: &Path, size: Option<u64>) -> Result<Downloaded, SysError> {
        let name = dest.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        self.reporter.start(&name, None);
        let reporter = &mut self.reporter;
        let result =
            self.effects.http.download_reporting(url, dest, size, &mut |done, total| reporter.advance(done, total));
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
        let results = self.effects.http.fetch_unpack(jobs, &|i, done, total| {
            let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (seen.0[i], seen.1[i]) = (done, total);
            let sum = seen.0.iter().sum();
            let all = seen.1.iter().try_fold(0u64, |acc, t| t.map(|t| acc + t));
            reporter.lock().unwrap_or_else(std::sync::PoisonError::into_inner).advance(sum, all);
        });
        self.reporter.finish();
        results
    }

    fn run(&mut self, cmd: &Cmd) -> Result<Output, SysError> {
        let program = cmd.program.to_string_lossy().into_owned();
        let euid = rustix::process::geteuid();
        if INSTALLERS.contains(&program.as_str()) && !euid.is_root() {
            return Ok(Output::exited(
                1,
                "",
                format!(
                    "installing OS packages needs root, and llmgw runs as uid {}; install them by hand or run as root\n",
                    euid.as_raw()
                ),
            ));
        }
        run_with_limit(cmd).map_err(|e| SysError::Spawn { program, message: e.to_string() })
    }

    fn disk_free(&mut self, path: &Path) -> Result<u64, SysError> {
        free_bytes(path)
    }

    fn now(&mut self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }

    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::lock::EnginesLock;
    use llmgw_core::system::Ended;

    fn sys() -> RealSystem {
        RealSystem::new(Http::loopback(5, 5).unwrap(), Box::new(Silent))
    }

    #[test]
    fn runs_processes_and_kills_them_at_their_limit() {
        let out = sys().run(&Cmd::new("sh", ["-c", "echo out; echo err >&2; exit 3"])).unwrap();
        assert_eq!((out.ended, out.stdout.as_str(), out.stderr.as_str()), (Ended::Exited(3), "out\n", "err\n"));
        let hung = sys().run(&Cmd::new("sleep", ["5"]).timeout(1)).unwrap();
        assert_eq!(
            (hung.ended, hung.stderr.as_str()),
            (Ended::TimedOut { secs: 1 }, ""),
            "nothing added to what it said"
        );
        let aborted = sys().run(&Cmd::new("sh", ["-c", "kill -ABRT $$"])).unwrap();
        assert_eq!(aborted.ended, Ended::Signalled(6));
        assert!(matches!(sys().run(&Cmd::new("/nonexistent/x", ["y"])), Err(SysError::Spawn { .. })));
    }

    #[test]
    fn a_grandchild_holding_the_pipes_does_not_outlive_the_limit() {
        let started = Instant::now();
        let out = sys().run(&Cmd::new("sh", ["-c", "sleep 30 & sleep 30"]).timeout(1)).unwrap();
        assert_eq!(out.ended, Ended::TimedOut { secs: 1 });
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }

    #[test]
    fn what_a_program_leaves_in_its_group_is_killed_when_it_exits() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        // Two children that do not hold the pipes, and a parent that exits 0 at once.
        let script =
            format!("for i in 1 2; do sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> {}; done", pids.display());
        let started = Instant::now();
        let out = sys().run(&Cmd::new("sh", ["-c", &script])).unwrap();
        assert_eq!(out.ended, Ended::Exited(0));
        assert!(started.elapsed() < Duration::from_secs(10));
        let pids = std::fs::read_to_string(&pids).unwrap();
        for pid in pids.lines() {
            // Gone, or a zombie its new parent has not reaped yet. SIGKILL
            // is delivered asynchronously: a loaded machine may take a
            // moment to end a killed process, never 300 s.
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().chars().next());
                if matches!(state, None | Some(Some('Z' | 'X'))) {
                    break;
                }
                assert!(Instant::now() < deadline, "sleep {pid} is still running 10 s after its parent ended: {stat}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    #[test]
    fn a_flood_of_output_is_counted_not_kept() {
        let out = sys().run(&Cmd::new("sh", ["-c", "head -c 5000000 /dev/zero | tr '\\0' y; echo err >&2"])).unwrap();
        assert_eq!(out.ended, Ended::Exited(0));
        assert_eq!(out.stdout.len() as u64, llmgw_core::system::OUTPUT_KEPT_BYTES);
        assert_eq!(out.left_out.stdout, 5_000_000 - llmgw_core::system::OUTPUT_KEPT_BYTES);
        assert_eq!((out.stderr.as_str(), out.left_out.stderr), ("err\n", 0));
        assert_eq!(out.left_out_words().as_deref(), Some("it printed 5.0 MB; the first 1 MiB of each stream kept"));
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
