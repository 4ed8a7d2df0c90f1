//! The simulated machine: a [`System`] that answers as the host described
//! in a [`Host`] would, in the real tools' output formats.
//!
//! Real about the network (the fake release server on loopback) and the
//! files (a real directory), through [`Local`]; simulated about what the
//! host description decides: `ldd` and programs ([`ldd`], `programs.rs`;
//! `llama-bench` and its model loader in `bench.rs` and `gguf.rs`, the ggml
//! backends both load in `backends.rs`), the package manager
//! (`packages.rs`), Python and uv (`python.rs`, `uv/`), free disk and the
//! clock. Installing a package changes the
//! simulated host, so a second convergence sees it.
//!
//! Uses: `truth` (what a file of a build says of itself).

mod backends;
mod bench;
mod gguf;
pub mod ldd;
mod packages;
mod programs;
mod python;
pub mod uv;

use std::path::Path;
use std::time::Duration;

use crate::truth::stub::{Backend, ElfStub};
use crate::truth::{MachineFaults, ModelDamage};
use llmgw_core::system::{Cmd, Downloaded, Effects, Ended, FetchJob, Fetched, Output, SysError, System};
use llmgw_model::host::{ComputeCapability, Host};
use llmgw_system::Local;
use llmgw_system::files::Files;
use llmgw_system::http::Http;

/// The simulated clock's start: 2026-11-01T00:00:00Z, in seconds since the
/// Unix epoch. Every simulation starts here, so its output never depends
/// on when it ran.
pub const SIM_EPOCH: u64 = 1_793_491_200;

/// A described machine.
#[derive(Debug)]
pub struct SimSystem {
    host: Host,
    effects: Local,
    clock: u64,
    commands: Vec<String>,
    faults: MachineFaults,
    /// Changes made to the machine so far (for [`MachineFaults::crash_before_change`]).
    changes: u32,
    /// Bytes written by downloads and unpacking so far (for [`MachineFaults::disk_full_after_bytes`]).
    written: u64,
}

/// What a simulated crash unwinds with (never through the panic hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimulatedCrash {
    /// The change it happened before, from 1.
    pub before_change: u32,
}

impl SimSystem {
    /// The machine `host`, reaching the network through `http`, its files
    /// in a scratch directory (never synced).
    pub fn new(host: Host, http: Http) -> SimSystem {
        SimSystem {
            host,
            effects: Local { http, files: Files::scratch() },
            clock: SIM_EPOCH,
            commands: Vec::new(),
            faults: MachineFaults::default(),
            changes: 0,
            written: 0,
        }
    }

    /// The machine's faults from now on.
    pub fn set_faults(&mut self, faults: MachineFaults) {
        if let Some(secs) = faults.http_timeout_secs {
            self.effects.http = self.effects.http.clone().with_request_timeout(secs);
        }
        self.faults = faults;
    }

    /// Counts a change to the machine, dying first if this is the one to crash before.
    fn change(&mut self) {
        self.changes += 1;
        if self.faults.crash_before_change == Some(self.changes) {
            self.faults.crash_before_change = None;
            std::panic::resume_unwind(Box::new(SimulatedCrash { before_change: self.changes }));
        }
    }

    /// Counts `bytes` written; past the disk's end, `path` is removed and the write fails.
    fn wrote(&mut self, bytes: u64, path: &Path) -> Result<(), SysError> {
        self.written += bytes;
        match self.faults.disk_full_after_bytes {
            Some(limit) if self.written > limit => {
                let _ = self.effects.files.remove(path);
                Err(SysError::Io {
                    op: "write",
                    path: path.to_path_buf(),
                    message: "No space left on device (os error 28)".into(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The host as it is now (packages installed by a convergence included).
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The host, to change as an unrelated upgrade would (a package removed).
    pub fn host_mut(&mut self) -> &mut Host {
        &mut self.host
    }

    /// The simulated clock: seconds since the Unix epoch, from [`SIM_EPOCH`]
    /// plus every wait so far.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Every command run so far, as command lines, in order.
    pub fn commands(&self) -> &[String] {
        &self.commands
    }

    fn read_file(&self, p: &Path) -> Option<Vec<u8>> {
        self.effects.files.read(p).ok().flatten()
    }
}

impl System for SimSystem {
    fn effects(&self) -> &dyn Effects {
        &self.effects
    }

    /// The truth's stubs under `root` read as the real inspection reads
    /// ELF files: each stub's symbol versions and its CUDA backend's
    /// kernels. Files that are no stub (text, a test's real program) say
    /// nothing; a directory that cannot be listed is the error.
    fn build_facts(&mut self, root: &Path) -> Result<Vec<llmgw_core::facts::FileFacts>, SysError> {
        let mut out = Vec::new();
        let mut queue = std::collections::VecDeque::from([String::new()]);
        while let Some(rel) = queue.pop_front() {
            let dir = if rel.is_empty() { root.to_path_buf() } else { root.join(&rel) };
            for e in self.effects.files.list_dir(&dir)?.unwrap_or_default() {
                let path = if rel.is_empty() { e.name.clone() } else { format!("{rel}/{}", e.name) };
                if e.is_dir {
                    queue.push_back(path);
                    continue;
                }
                let Some(stub) = self.read_file(&root.join(&path)).and_then(|b| ElfStub::from_bytes(&b)) else {
                    continue;
                };
                let cuda = match &stub.backend {
                    Some(Backend::Cuda { toolkit, sass, ptx, compressed }) => {
                        let (sass, sass_exact) = python::split_sass(sass);
                        let ptx = ptx.iter().filter_map(|c| ComputeCapability::parse(c).ok()).collect();
                        Some(llmgw_core::facts::CudaFacts {
                            toolkit: toolkit.clone(),
                            sass,
                            sass_exact,
                            ptx,
                            compressed: *compressed,
                        })
                    }
                    _ => None,
                };
                out.push(llmgw_core::facts::FileFacts { path, requires: stub.requires.clone(), cuda });
            }
        }
        Ok(out)
    }

    fn download(&mut self, url: &str, dest: &Path, size: Option<u64>) -> Result<Downloaded, SysError> {
        self.change();
        let got = self.effects.http.download(url, dest, size)?;
        self.wrote(got.bytes, dest)?;
        Ok(got)
    }

    fn fetch_unpack(&mut self, jobs: &[FetchJob]) -> Vec<Result<Fetched, SysError>> {
        for _ in jobs {
            self.change();
        }
        let results = self.effects.http.fetch_unpack(jobs, &|_, _, _| {});
        // The disk is charged in job order, whatever order they finished in.
        results
            .into_iter()
            .zip(jobs)
            .map(|(r, job)| {
                let got = r?;
                let unpacked: u64 = got.unpacked.as_ref().map_or(0, |f| f.iter().map(|f| f.bytes).sum());
                self.wrote(unpacked, &job.into)?;
                Ok(got)
            })
            .collect()
    }

    fn merge_into(&mut self, from: &Path, into: &Path) -> Result<(), SysError> {
        self.change();
        self.effects.files.merge_into(from, into)
    }

    fn run(&mut self, cmd: &Cmd) -> Result<Output, SysError> {
        self.commands.push(cmd.display());
        let name = cmd.program.to_string_lossy().into_owned();
        if packages::INSTALLERS.contains(&name.as_str()) {
            self.change();
        }
        if let Some(out) = packages::run(&mut self.host, &name, &cmd.args, self.faults.package_manager_fails) {
            return out;
        }
        if name == "gcc" {
            // The compiler of whichever package manager installed it.
            return match self.host.packages.installed.contains("gcc") {
                true => {
                    Ok(Output { ended: Ended::Exited(0), stdout: "gcc (GCC) 12.2.0\n".into(), ..Output::default() })
                }
                false => Err(SysError::Spawn { program: name, message: "No such file or directory".into() }),
            };
        }
        if name == "ldd" {
            let [file] = cmd.args.as_slice() else {
                return Ok(Output {
                    ended: Ended::Exited(1),
                    stderr: "ldd: missing file arguments\n".into(),
                    ..Output::default()
                });
            };
            return Ok(programs::ldd(&self.host, Path::new(file), |p| self.read_file(p)));
        }
        if cmd.program.is_absolute() {
            let host = self.host.clone();
            let limits = programs::Limits { timeout_secs: cmd.timeout_secs, bench_fault: self.faults.compute_program };
            let (out, waited) = programs::run(&host, &self.effects, (&cmd.program, &cmd.args, &cmd.env), &limits)?;
            self.clock += waited;
            if cmd.args == ["--list-devices"]
                && let Some(i) = self.faults.gpu_lost_after_listing.take()
                && let Some(nv) = self.host.nvidia.as_mut()
                && i < nv.gpus.len()
            {
                // Off the bus: the driver no longer sees it (NVIDIA Xid 79);
                // without another, the node has no GPU left.
                nv.gpus.remove(i);
                if nv.gpus.is_empty() {
                    self.host.nvidia = None;
                }
            }
            return Ok(out);
        }
        Err(SysError::Spawn { program: name, message: "No such file or directory".into() })
    }

    /// The host's free disk less what has been written under `path` (the
    /// engines directory) since the simulation began.
    fn disk_free(&mut self, path: &Path) -> Result<u64, SysError> {
        Ok(self.host.disk_free_bytes().saturating_sub(self.effects.files.bytes_under(path)))
    }

    fn create_dir_all(&mut self, path: &Path) -> Result<(), SysError> {
        self.change();
        self.effects.files.create_dir_all(path)
    }

    fn remove(&mut self, path: &Path) -> Result<(), SysError> {
        self.change();
        self.effects.files.remove(path)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> Result<(), SysError> {
        self.change();
        self.effects.files.rename(from, to)
    }

    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        self.change();
        let damaged: Vec<u8>;
        let contents = match self.faults.model_damaged.filter(|_| path.extension().is_some_and(|e| e == "gguf")) {
            Some(ModelDamage::Truncated) => &contents[..contents.len() / 2],
            Some(ModelDamage::CorruptedMagic) => {
                damaged = contents.iter().enumerate().map(|(i, &b)| if i == 3 { b'X' } else { b }).collect();
                &damaged
            }
            None => contents,
        };
        self.effects.files.write_atomic(path, contents)
    }

    fn now(&mut self) -> u64 {
        self.clock
    }

    fn sleep(&mut self, d: Duration) {
        self.clock += d.as_secs();
    }
}
