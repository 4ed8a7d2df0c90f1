//! The effects behind one trait: [`System`] is everything the installer does
//! to or asks of a machine (network, files, processes, disk, clock), and the
//! values that cross it. Nothing here does an effect: the real machine
//! (`llmgw_system::real::RealSystem`) and the simulated one
//! (`llmgw_sim::machine::SimSystem`) implement the trait, and the core
//! ([`crate::converge`]) sees only it, so both run the same convergence.
//!
//! Both machines are real about HTTP and the local file system: the
//! simulated machine downloads from the fake publisher over loopback and
//! installs into a real directory. That shared part is [`Effects`], whose
//! one implementation is `llmgw_system::Local`; the trait's default methods
//! go through it, and each machine overrides what it does otherwise.
//! Discovery's probe ([`crate::discover::Probe`]) and the agent's node
//! ([`crate::agent::Node`]) are narrower views of a machine over the same
//! implementations.
//!
//! Uses: `archive` and `facts`.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The start of every temporary file llmgw writes beside a file it replaces
/// atomically: one a kill left is recognised and removed by the next run.
pub const TEMPORARY_PREFIX: &str = ".llmgw-tmp-";

/// The most bytes [`System::read`] reads of a file whole (64 MiB): what is
/// read whole is a record, a configuration or a header, never a build.
pub const MAX_WHOLE_READ: u64 = 64 << 20;

/// A process to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    /// The program: a name looked up on `PATH` (`ldd`, `apt-get`) or a path.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it, beside the inherited ones.
    pub env: Vec<(String, String)>,
    /// How long it may run before it is killed, in seconds.
    pub timeout_secs: u64,
}

impl Cmd {
    /// A command with a 60-second limit and no extra environment.
    pub fn new(program: impl Into<PathBuf>, args: impl IntoIterator<Item = impl Into<String>>) -> Cmd {
        Cmd { program: program.into(), args: args.into_iter().map(Into::into).collect(), env: vec![], timeout_secs: 60 }
    }

    /// The same command with one more argument, a path.
    pub fn arg_path(mut self, path: &Path) -> Cmd {
        self.args.push(path.display().to_string());
        self
    }

    /// The same command with more arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Cmd {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The same command with another time limit, in seconds.
    pub fn timeout(mut self, secs: u64) -> Cmd {
        self.timeout_secs = secs;
        self
    }

    /// The same command with one more environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Cmd {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// The command line, for messages: `ldd llama-server`.
    pub fn display(&self) -> String {
        let name = self
            .program
            .file_name()
            .map_or_else(|| self.program.display().to_string(), |n| n.to_string_lossy().into_owned());
        std::iter::once(name).chain(self.args.iter().cloned()).collect::<Vec<_>>().join(" ")
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it, not llmgw: the signal's number (6 for `SIGABRT`).
    Signalled(i32),
    /// llmgw killed it, its whole process group, at its time limit.
    TimedOut {
        /// The limit, in seconds.
        secs: u64,
    },
}

impl Default for Ended {
    /// Exited 0.
    fn default() -> Ended {
        Ended::Exited(0)
    }
}

impl std::fmt::Display for Ended {
    /// `exited 1`, `was killed by a signal`, `was killed at its time limit of 120 s`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Exited(code) => write!(f, "exited {code}"),
            Ended::Signalled(_) => f.write_str("was killed by a signal"),
            Ended::TimedOut { secs } => write!(f, "was killed at its time limit of {secs} s"),
        }
    }
}

/// How much of each of a process's streams is kept, in bytes: the first
/// 1 MiB (a version line, `ldd`'s list, `llama-bench`'s rows and log are a
/// few KiB; `ldconfig -p` on a large machine a few hundred). What it
/// prints past that is read, so that it never blocks on a full pipe, and
/// counted, not kept.
pub const OUTPUT_KEPT_BYTES: u64 = 1024 * 1024;

/// Bytes a process printed past [`OUTPUT_KEPT_BYTES`] on each stream:
/// counted, not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeftOut {
    /// Of standard output, in bytes.
    pub stdout: u64,
    /// Of standard error, in bytes.
    pub stderr: u64,
}

/// What a finished process left.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// How it ended.
    pub ended: Ended,
    /// Standard output, its first [`OUTPUT_KEPT_BYTES`], lossily decoded as UTF-8.
    pub stdout: String,
    /// Standard error, its first [`OUTPUT_KEPT_BYTES`], lossily decoded as UTF-8.
    pub stderr: String,
    /// What it printed past those, counted.
    pub left_out: LeftOut,
}

impl Output {
    /// A process that exited `code`, printing `stdout` and `stderr`, all kept.
    pub fn exited(code: i32, stdout: impl Into<String>, stderr: impl Into<String>) -> Output {
        Output {
            ended: Ended::Exited(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            left_out: LeftOut::default(),
        }
    }

    /// Whether the process exited 0.
    pub fn success(&self) -> bool {
        self.ended == Ended::Exited(0)
    }

    /// Its exit code; `None` when it was killed.
    pub fn code(&self) -> Option<i32> {
        match self.ended {
            Ended::Exited(code) => Some(code),
            Ended::Signalled(_) | Ended::TimedOut { .. } => None,
        }
    }

    /// How much it printed when some was left out, in words: `it printed
    /// 3.3 GB; the first 1 MiB of each stream kept`; `None` when all was kept.
    pub fn left_out_words(&self) -> Option<String> {
        let LeftOut { stdout, stderr } = self.left_out;
        if stdout == 0 && stderr == 0 {
            return None;
        }
        let kept = |left: u64, text: &str| if left > 0 { OUTPUT_KEPT_BYTES } else { text.len() as u64 };
        let printed = kept(stdout, &self.stdout) + stdout + kept(stderr, &self.stderr) + stderr;
        Some(format!(
            "it printed {}; the first {} of each stream kept",
            decimal_bytes(printed),
            binary_bytes(OUTPUT_KEPT_BYTES)
        ))
    }
}

/// A byte count in decimal units, as a download's size is said: `3.3 GB`,
/// `512 bytes`.
fn decimal_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 4] =
        [(1_000_000_000_000, "TB"), (1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB")];
    match UNITS.iter().find(|(size, _)| n >= *size) {
        Some((size, unit)) => format!("{:.1} {unit}", n as f64 / *size as f64),
        None => format!("{n} bytes"),
    }
}

/// A power-of-two byte count: `1 MiB`, `64 KiB`.
fn binary_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// A response read whole: release metadata, never an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// HTTP status after redirects.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// When to ask again, from the answer's headers.
    pub wait: Wait,
    /// The next page of a list: the `Link` header's `rel="next"` URL (RFC
    /// 8288; GitHub paginates its lists so).
    pub next: Option<String>,
}

/// What an answer says about asking again: `Retry-After` (seconds), and
/// GitHub's rate limit (`x-ratelimit-remaining: 0` with `x-ratelimit-reset`,
/// Unix seconds). Source: GitHub docs, "Rate limits for the REST API".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wait {
    /// `Retry-After`, in seconds.
    pub retry_after_secs: Option<u64>,
    /// When an exhausted rate limit resets, Unix seconds.
    pub rate_limit_reset: Option<u64>,
}

/// A file downloaded to disk with its digest computed on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// Bytes written.
    pub bytes: u64,
    /// sha256 of those bytes, lowercase hex.
    pub sha256: String,
}

/// One archive to download and unpack in a single pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchJob {
    /// Where the archive is (redirects are followed).
    pub url: String,
    /// The existing, empty directory it unpacks into.
    pub into: PathBuf,
    /// The body's size as its publisher declared it, in bytes: a body that
    /// goes on past it is cut there and refused. `None` when nobody
    /// declared one (an offline mirror's asset).
    pub size: Option<u64>,
}

/// What one pass over an archive's bytes gave: the body's size and digest,
/// and what unpacking it did. The digest covers the whole body even when
/// unpacking stopped early (the rest is read and hashed), so a refusal can
/// be told apart from a body damaged on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Bytes of the body received.
    pub bytes: u64,
    /// sha256 of the body, lowercase hex.
    pub sha256: String,
    /// The regular files placed, sorted by path; or why the archive was
    /// refused or could not be read (what it placed stays for the caller).
    pub unpacked: Result<Vec<UnpackedFile>, String>,
}

pub use crate::archive::UnpackedFile;

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirEntry {
    /// The entry's file name.
    pub name: String,
    /// Whether it is a directory (a symbolic link is not followed).
    pub is_dir: bool,
    /// Whether it is a symbolic link (to whatever, or to nothing).
    pub is_link: bool,
}

/// A failed effect, in words a user can act on. No variant carries a URL
/// (its host and port differ between runs); callers name the asset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SysError {
    /// The server answered with an HTTP error status.
    #[error("HTTP {status}{}", if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Http {
        /// The status code.
        status: u16,
        /// The server's message, when it gave one.
        message: String,
        /// When to ask again, from the answer's headers.
        wait: Wait,
    },
    /// The connection failed or broke off (refused, reset, timed out, cut short).
    #[error("{0}")]
    Network(String),
    /// The network cannot reach the server at all, and asking again in a
    /// few seconds cannot change that: no route to it, or its name cannot
    /// be resolved on a machine with no resolver configured (or does not exist).
    #[error("{0}")]
    Unreachable(String),
    /// A body went on past what it may be: the size its publisher declared
    /// for an asset, or what a document (release metadata) ever is.
    #[error("the answer goes on past {limit} bytes, {why}; it was cut there")]
    TooLong {
        /// The most it may be, in bytes.
        limit: u64,
        /// Why that is the most: `the size the publisher declared`.
        why: &'static str,
    },
    /// A download took longer than its deadline: the rate below which a
    /// body counts as stalled, however steadily it trickles.
    #[error("the download took longer than {secs} s, its deadline (at least {min_rate} bytes a second)")]
    TooSlow {
        /// The deadline, in seconds.
        secs: u64,
        /// The average rate it stands for, in bytes per second.
        min_rate: u64,
    },
    /// The request cannot be made at all (a URL the client refuses, a
    /// scheme it does not speak): asking again cannot help.
    #[error("the request cannot be made: {0}")]
    Request(String),
    /// A redirect llmgw does not follow: to another scheme (`file://`), or
    /// to a host the download may not go to
    /// ([`crate::release::hosts::check_redirect`]). The one variant that
    /// names a URL: the one refused, which the simulation never sends.
    #[error("refused to follow the server to `{url}`: {rule}")]
    RefusedUrl {
        /// The URL redirected to.
        url: String,
        /// The rule it breaks, in words.
        rule: String,
    },
    /// The server sent the request round more redirects than llmgw follows
    /// (10): a loop, not worth asking again.
    #[error("the server redirected more than 10 times (a redirect loop)")]
    TooManyRedirects,
    /// A file-system operation failed.
    #[error("{op} `{path}`: {message}")]
    Io {
        /// What was being done: "create", "rename", "remove".
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// An archive was refused or could not be read.
    #[error("{0}")]
    Archive(String),
    /// A file-system path was refused before anything was read from,
    /// written to or removed at it: what is there is not what is expected
    /// (a FIFO, a device or a symbolic link where a file is read; a file
    /// larger than any such file is), or the path leads outside the
    /// directory it must stay in.
    #[error("{op} `{}`: {why}", path.display())]
    Refused {
        /// What was to be done: "read", "remove", "lock".
        op: &'static str,
        /// The path refused.
        path: PathBuf,
        /// What is wrong with it.
        why: Refusal,
    },
    /// A program could not be started.
    #[error("cannot run `{program}`: {message}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        message: String,
    },
}

/// Why a path was refused ([`SysError::Refused`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Something other than a regular file is there: reading a FIFO could
    /// wait for ever, a device never end.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// A symbolic link, which is never followed there: `at` is the link
    /// (the path itself or a directory on the way to it).
    #[error("`{}` is a symbolic link, which is not followed there", at.display())]
    Link {
        /// The link.
        at: PathBuf,
    },
    /// Larger than such a file ever is.
    #[error("it is larger than {max} bytes, more than {what} ever is")]
    TooLarge {
        /// The most it may be, in bytes.
        max: u64,
        /// What it is: `an install record`.
        what: &'static str,
    },
    /// Not a plain path inside `root` (absolute elsewhere, `..`, empty).
    #[error("it is not inside `{}`", root.display())]
    Outside {
        /// The directory it must stay in.
        root: PathBuf,
    },
}

impl SysError {
    /// Whether this is a refusal of what is at a path ([`SysError::Refused`]).
    pub fn is_refused(&self) -> bool {
        matches!(self, SysError::Refused { .. })
    }

    /// An [`SysError::Io`] from a `std::io::Error`.
    pub fn io(op: &'static str, path: &Path, e: &std::io::Error) -> SysError {
        SysError::Io { op, path: path.to_path_buf(), message: e.to_string() }
    }
}

/// What every system is real about: HTTP and the local file system.
/// [`System`]'s default methods go through it; its one implementation is
/// `llmgw_system::Local` (reqwest and the local file system), which the
/// real and the simulated machine both hold.
///
/// Every method may fail with a [`SysError`] saying what, and where.
pub trait Effects {
    /// As [`System::http_get`].
    ///
    /// # Errors
    /// As [`System::http_get`].
    fn http_get(&self, url: &str, accept: &str) -> Result<HttpResponse, SysError>;

    /// As [`System::http_get_at_most`].
    ///
    /// # Errors
    /// As [`System::http_get_at_most`].
    fn http_get_at_most(&self, url: &str, accept: &str, limit: (u64, &'static str)) -> Result<HttpResponse, SysError>;

    /// As [`System::download`].
    ///
    /// # Errors
    /// As [`System::download`].
    fn download(&self, url: &str, dest: &Path, size: Option<u64>) -> Result<Downloaded, SysError>;

    /// As [`System::fetch_unpack`], `progress` told of every chunk
    /// (`(job index, bytes so far, size declared)`).
    fn fetch_unpack(
        &self,
        jobs: &[FetchJob],
        progress: &(dyn Fn(usize, u64, Option<u64>) + Sync),
    ) -> Vec<Result<Fetched, SysError>>;

    /// As [`System::build_facts`].
    ///
    /// # Errors
    /// As [`System::build_facts`].
    fn build_facts(&self, root: &Path) -> Result<Vec<crate::facts::FileFacts>, SysError>;

    /// As [`System::merge_into`].
    ///
    /// # Errors
    /// As [`System::merge_into`].
    fn merge_into(&self, from: &Path, into: &Path) -> Result<(), SysError>;

    /// As [`System::sha256_file`].
    ///
    /// # Errors
    /// As [`System::sha256_file`].
    fn sha256_file(&self, path: &Path) -> Result<Option<(u64, String)>, SysError>;

    /// As [`System::sha256_beneath`].
    ///
    /// # Errors
    /// As [`System::sha256_beneath`].
    fn sha256_beneath(&self, root: &Path, rel: &str) -> Result<Option<(u64, String)>, SysError>;

    /// As [`System::read_beneath`].
    ///
    /// # Errors
    /// As [`System::read_beneath`].
    fn read_beneath(&self, root: &Path, rel: &str, max: (u64, &'static str)) -> Result<Option<Vec<u8>>, SysError>;

    /// Whether `path` lies inside the directory `root` with no symbolic
    /// link and nothing but directories on the way (the last component
    /// itself may be anything: it is removed as itself).
    ///
    /// # Errors
    /// [`SysError::Refused`]: [`Refusal::Outside`] for a path that is not
    /// `root` joined with plain components, [`Refusal::Link`] naming the
    /// link on the way.
    fn check_beneath(&self, root: &Path, path: &Path) -> Result<(), SysError>;

    /// Whether `path` is other than a symbolic link (nothing there is fine).
    ///
    /// # Errors
    /// [`SysError::Refused`] with [`Refusal::Link`] when it is one.
    fn check_not_link(&self, path: &Path) -> Result<(), SysError>;

    /// As [`System::create_dir_all`].
    ///
    /// # Errors
    /// As [`System::create_dir_all`].
    fn create_dir_all(&self, path: &Path) -> Result<(), SysError>;

    /// As [`System::remove`].
    ///
    /// # Errors
    /// As [`System::remove`].
    fn remove(&self, path: &Path) -> Result<(), SysError>;

    /// As [`System::rename`].
    ///
    /// # Errors
    /// As [`System::rename`].
    fn rename(&self, from: &Path, to: &Path) -> Result<(), SysError>;

    /// As [`System::write_atomic`].
    ///
    /// # Errors
    /// As [`System::write_atomic`].
    fn write_atomic(&self, path: &Path, contents: &[u8]) -> Result<(), SysError>;

    /// As [`System::read`].
    ///
    /// # Errors
    /// As [`System::read`].
    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, SysError>;

    /// As [`System::list_dir`].
    ///
    /// # Errors
    /// As [`System::list_dir`].
    fn list_dir(&self, path: &Path) -> Result<Option<Vec<DirEntry>>, SysError>;
}

/// Everything the installer does to or asks of a machine.
///
/// Paths are absolute. Every method may fail with a [`SysError`] saying
/// what, and where; none panics on a machine's answer. The methods with a
/// default are done with [`System::effects`]; an implementation overrides
/// those it does otherwise (the simulated machine counts its changes).
pub trait System {
    /// The HTTP client and files this machine is real about.
    fn effects(&self) -> &dyn Effects;

    /// What each file of the build unpacked under `root` needs of a node
    /// (symbol versions, CUDA kernels), read without running anything:
    /// the files' own ELF and fatbin headers ([`crate::inspect`]); the
    /// simulated machine reads its stubs instead. Paths relative to `root`.
    ///
    /// # Errors
    /// [`SysError::Io`] naming the file that could not be read or is not
    /// the ELF it claims to be.
    fn build_facts(&mut self, root: &Path) -> Result<Vec<crate::facts::FileFacts>, SysError> {
        self.effects().build_facts(root)
    }

    /// GETs a small document (release metadata), following redirects.
    /// `accept` is the `Accept` header. An HTTP error status is returned as
    /// a response, not an error; a broken connection is [`SysError::Network`].
    fn http_get(&mut self, url: &str, accept: &str) -> Result<HttpResponse, SysError> {
        self.effects().http_get(url, accept)
    }

    /// As [`System::http_get`], for a document that is never more than
    /// `limit` bytes (`why` says why, for the error): a body going on past
    /// it is [`SysError::TooLong`], read no further.
    fn http_get_at_most(
        &mut self,
        url: &str,
        accept: &str,
        (limit, why): (u64, &'static str),
    ) -> Result<HttpResponse, SysError> {
        self.effects().http_get_at_most(url, accept, (limit, why))
    }

    /// Downloads `url` to the new file `dest`, following redirects, hashing
    /// with sha256 on the way; a body longer than `size` bytes (when given)
    /// is [`SysError::TooLong`]. An HTTP error status is [`SysError::Http`].
    fn download(&mut self, url: &str, dest: &Path, size: Option<u64>) -> Result<Downloaded, SysError> {
        self.effects().download(url, dest, size)
    }

    /// Downloads and unpacks each `.tar.gz` of `jobs` in one pass over its
    /// bytes (sha256 computed on the way, nothing kept of the archive
    /// itself), the jobs side by side; one result per job, in order. An
    /// entry that would land outside `into` is refused (see
    /// [`crate::archive`]). An HTTP error status is [`SysError::Http`], a
    /// connection that breaks off [`SysError::Network`].
    fn fetch_unpack(&mut self, jobs: &[FetchJob]) -> Vec<Result<Fetched, SysError>> {
        self.effects().fetch_unpack(jobs, &|_, _, _| {})
    }

    /// Moves everything under `from` into the directory `into` (made when
    /// missing), a file of `from` replacing one of the same path, then
    /// removes `from`: the assets of one build unpacked apart, put together
    /// in order.
    fn merge_into(&mut self, from: &Path, into: &Path) -> Result<(), SysError> {
        self.effects().merge_into(from, into)
    }

    /// Size in bytes and sha256 (lowercase hex) of a file, read once;
    /// `None` when it does not exist. A symbolic link there is not followed
    /// ([`Refusal::Link`]), nor is anything but a regular file read
    /// ([`Refusal::NotRegular`]: a FIFO is refused without waiting).
    fn sha256_file(&mut self, path: &Path) -> Result<Option<(u64, String)>, SysError> {
        self.effects().sha256_file(path)
    }

    /// As [`System::sha256_file`], for the file at `rel` (`/`-separated,
    /// plain components) inside the directory `root`, reached without
    /// following a symbolic link anywhere below `root`: what verifies an
    /// installed file is the file itself, in its place.
    ///
    /// # Errors
    /// [`SysError::Refused`]: a `rel` that is not plain, a link on the way
    /// or at the end, something not a regular file.
    fn sha256_beneath(&mut self, root: &Path, rel: &str) -> Result<Option<(u64, String)>, SysError> {
        self.effects().sha256_beneath(root, rel)
    }

    /// Reads the regular file at `rel` inside `root` whole, reached as
    /// [`System::sha256_beneath`] reaches it, if it is at most `max.0`
    /// bytes (`max.1` names what it is, for the error); `None` when it
    /// does not exist. At most `max.0 + 1` bytes are read.
    ///
    /// # Errors
    /// As [`System::sha256_beneath`]; [`Refusal::TooLarge`].
    fn read_beneath(&mut self, root: &Path, rel: &str, max: (u64, &'static str)) -> Result<Option<Vec<u8>>, SysError> {
        self.effects().read_beneath(root, rel, max)
    }

    /// Removes `path` (a file, a link as itself, or a directory tree) if it
    /// lies inside `root` with no symbolic link on the way
    /// ([`Effects::check_beneath`]); nothing there is not an error. What
    /// the installer removes in the engines directory goes through here.
    ///
    /// # Errors
    /// [`SysError::Refused`] for a path outside `root` or through a link,
    /// nothing removed; as [`System::remove`].
    fn remove_beneath(&mut self, root: &Path, path: &Path) -> Result<(), SysError> {
        self.effects().check_beneath(root, path)?;
        self.remove(path)
    }

    /// Runs a process to completion within its time limit. A process that
    /// ran and failed is an [`Output`]; one that could not start is [`SysError::Spawn`].
    fn run(&mut self, cmd: &Cmd) -> Result<Output, SysError>;

    /// Free space, in bytes, of the file system holding `path`.
    fn disk_free(&mut self, path: &Path) -> Result<u64, SysError>;

    /// Creates a directory and its parents.
    fn create_dir_all(&mut self, path: &Path) -> Result<(), SysError> {
        self.effects().create_dir_all(path)
    }

    /// Removes a file or a directory tree; nothing there is not an error.
    fn remove(&mut self, path: &Path) -> Result<(), SysError> {
        self.effects().remove(path)
    }

    /// Renames within one file system (atomic for a directory).
    fn rename(&mut self, from: &Path, to: &Path) -> Result<(), SysError> {
        self.effects().rename(from, to)
    }

    /// Writes a file whole and atomically: a temporary beside it, synced, renamed.
    fn write_atomic(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        self.effects().write_atomic(path, contents)
    }

    /// As [`System::write_atomic`], for a file that is written only as
    /// itself (the agent's status file): a symbolic link at `path` is
    /// refused, not written through.
    ///
    /// # Errors
    /// [`SysError::Refused`] for a link; as [`System::write_atomic`].
    fn write_atomic_as_itself(&mut self, path: &Path, contents: &[u8]) -> Result<(), SysError> {
        self.effects().check_not_link(path)?;
        self.write_atomic(path, contents)
    }

    /// Reads a regular file whole (a link to one is followed); `None` when
    /// it does not exist. Anything else there is refused without waiting
    /// ([`Refusal::NotRegular`]), and so is a file larger than
    /// [`MAX_WHOLE_READ`] ([`Refusal::TooLarge`]).
    fn read(&mut self, path: &Path) -> Result<Option<Vec<u8>>, SysError> {
        self.effects().read(path)
    }

    /// Lists a directory, sorted by name; `None` when there is no
    /// directory there (nothing, or a file).
    fn list_dir(&mut self, path: &Path) -> Result<Option<Vec<DirEntry>>, SysError> {
        self.effects().list_dir(path)
    }

    /// Seconds since the Unix epoch (simulated in simulation).
    fn now(&mut self) -> u64;

    /// Waits (advances the clock in simulation).
    fn sleep(&mut self, d: Duration);

    /// Says that a request failed and is asked again after a wait
    /// (`message`: what failed, how, when it is asked again, which attempt
    /// that is). At info level here (a simulation's waits take no time);
    /// a real machine, whose waits are real, says it at the default level.
    fn retrying(&mut self, message: &str) {
        tracing::info!("{message}");
    }
}
