//! The process around the agent's loop: tokio's runtime, the signals
//! (SIGHUP reads the wants file again, SIGTERM and SIGINT stop between
//! passes), the wants file watched for changes, and the places of the
//! status file and the engines directory checked before the first pass.

// The runtime reads the wants file it watches and checks the paths it is
// given on this machine (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llmgw_core::agent::node::Node;
use llmgw_core::agent::passes::{Agent, spawn};
use llmgw_core::agent::status::PassRecord;

/// The most a wants file may be, in bytes: a few hundred bytes a want.
pub const MAX_WANTS_BYTES: u64 = 1 << 20;

/// Why the agent could not run: bad input (a path), or the runtime itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// A path given is wrong (exit 2).
    #[error("{0}")]
    BadInput(String),
    /// The runtime or a signal handler could not be set up (exit 3).
    #[error("{0}")]
    Internal(String),
}

/// `--engines-dir`, absolute: a directory, or nothing yet.
pub fn check_engines_dir(dir: &Path, cwd: &Path) -> Result<PathBuf, RuntimeError> {
    let abs = cwd.join(dir);
    match std::fs::metadata(&abs) {
        Ok(m) if !m.is_dir() => {
            Err(RuntimeError::BadInput(format!("--engines-dir `{}` is not a directory", dir.display())))
        }
        _ => Ok(abs),
    }
}

/// Where the agent's files are, for [`check_status_file`]: the wants file,
/// the configuration, the engines directory (absolute).
#[derive(Debug, Clone, Copy)]
pub struct AgentPaths<'a> {
    /// The wants file.
    pub wants: &'a Path,
    /// The configuration file, when one is given.
    pub config: Option<&'a Path>,
    /// The engines directory, when the agent works on this machine.
    pub engines: Option<&'a Path>,
}

/// The status file `given` (`abs` made absolute), checked before the first
/// pass: not a directory, not a symbolic link (it is written only as
/// itself), in a directory that exists (the default one is made) and can
/// be written in, neither the wants file nor the configuration, which it
/// would overwrite, and not inside the engines directory, whose records,
/// builds and lock are the installer's.
pub fn check_status_file(
    given: &Path,
    abs: &Path,
    paths: AgentPaths<'_>,
    default: bool,
) -> Result<PathBuf, RuntimeError> {
    let AgentPaths { wants, config, engines } = paths;
    let bad = |why: String| RuntimeError::BadInput(format!("--status-file `{}` {why}", given.display()));
    if std::fs::symlink_metadata(abs).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad("is a symbolic link: the status file is written only as itself, never through a link".into()));
    }
    if abs.is_dir() {
        return Err(bad("is a directory".into()));
    }
    let (Some(dir), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(bad("names no file".into()));
    };
    if default {
        std::fs::create_dir_all(dir)
            .map_err(|e| bad(format!("is in `{}`, which cannot be made: {e}", dir.display())))?;
    }
    if !dir.is_dir() {
        return Err(bad(format!("is in `{}`, which is not an existing directory", dir.display())));
    }
    crate::files::check_output(abs).map_err(|why| bad(why.to_string()))?;
    crate::files::can_make_file_in(dir)
        .map_err(|e| bad(format!("cannot be written: no file can be made in `{}`: {e}", dir.display())))?;
    let canonical = |p: &Path| -> PathBuf {
        p.canonicalize().unwrap_or_else(|_| match (p.parent(), p.file_name()) {
            (Some(d), Some(n)) => d.canonicalize().map_or_else(|_| p.to_path_buf(), |d| d.join(n)),
            _ => p.to_path_buf(),
        })
    };
    let this = dir.canonicalize().map_or_else(|_| abs.to_path_buf(), |d| d.join(name));
    if canonical(wants) == this {
        return Err(bad(format!("is the wants file `{}`: it would be overwritten", wants.display())));
    }
    if let Some(c) = config.filter(|c| canonical(c) == this) {
        return Err(bad(format!("is the configuration file `{}`: it would be overwritten", c.display())));
    }
    // The engines directory as it will be (it may not be there yet): its
    // nearest existing ancestor resolved, the rest as given.
    if let Some(engines) = engines {
        let existing = engines.ancestors().find(|a| a.exists()).unwrap_or(engines);
        let rest = engines.strip_prefix(existing).unwrap_or(Path::new(""));
        let resolved = existing.canonicalize().map_or_else(|_| engines.to_path_buf(), |d| d.join(rest));
        if this.starts_with(&resolved) {
            return Err(bad(format!(
                "is inside the engines directory `{}`, whose records, builds and lock are the installer's",
                engines.display()
            )));
        }
    }
    Ok(abs.to_path_buf())
}

/// Runs the loop until SIGTERM/SIGINT (or after one pass with `--once`):
/// SIGHUP re-reads the wants file and passes, and a change seen every
/// `watch` is taken. Wants from no file (`None`: the embedded default
/// wants of a simulation) are not watched; SIGHUP then only passes. The
/// last pass's record, if any.
pub fn run_loop<N: Node>(
    node: N,
    agent: Agent,
    wants_path: Option<&Path>,
    watch: Duration,
) -> Result<Option<PassRecord>, RuntimeError> {
    // The node is dropped here, outside the runtime: its HTTP client and the
    // fake server's own runtime may not be dropped inside one.
    let node = Arc::new(Mutex::new(node));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| RuntimeError::Internal(format!("cannot start the agent's runtime: {e}")))?;
    let read = |path: &Option<PathBuf>| path.as_deref().map(read_wants);
    let wants_path = wants_path.map(Path::to_path_buf);
    let first = read(&wants_path);
    let last = rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        // The handlers first, each made once for the whole run: a signal
        // before them would end the process, one between two of them would be lost.
        let (mut hup, mut term, mut int) = (
            signal(SignalKind::hangup()).map_err(|e| RuntimeError::Internal(format!("SIGHUP: {e}")))?,
            signal(SignalKind::terminate()).map_err(|e| RuntimeError::Internal(format!("SIGTERM: {e}")))?,
            signal(SignalKind::interrupt()).map_err(|e| RuntimeError::Internal(format!("SIGINT: {e}")))?,
        );
        let mut running = spawn(node.clone(), agent);
        let control = running.control.clone();
        let watcher = tokio::spawn(async move {
            // What the file said when last looked at: its text or why it cannot be read.
            let mut last = first;
            let mut tick = tokio::time::interval(watch);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = hup.recv() => {
                        tracing::info!("SIGHUP: reading the wants file again");
                        last = read(&wants_path);
                        match &last {
                            Some(text) => control.reread(text.clone()),
                            None => control.kick(),
                        }
                    }
                    _ = term.recv() => { tracing::info!("SIGTERM: stopping between passes"); control.stop() }
                    _ = int.recv() => { tracing::info!("SIGINT: stopping between passes"); control.stop() }
                    _ = tick.tick() => {
                        // Told once per change: a file that stays unreadable is not told again.
                        let now = read(&wants_path);
                        if now != last {
                            match &now {
                                Some(Ok(text)) => { tracing::info!("the wants file changed"); control.wants_file(text.clone()) }
                                Some(Err(e)) => control.wants_error(e.clone()),
                                None => {}
                            }
                            last = now;
                        }
                    }
                }
            }
        });
        let mut last = None;
        while let Some(pass) = running.passes.recv().await {
            last = Some(pass);
        }
        watcher.abort();
        if let Err(e) = running.task.await
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
        Ok::<_, RuntimeError>(last)
    })?;
    drop(rt);
    drop(node);
    Ok(last)
}

/// The wants file's text, or the sentence saying why it cannot be read.
pub fn read_wants(path: &Path) -> Result<String, String> {
    let cannot = |why: String| format!("cannot read the wants file `{}`: {why}", path.display());
    let bytes = crate::files::read_input(path, MAX_WANTS_BYTES, "a wants file").map_err(|e| cannot(e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| cannot("it is not UTF-8 text".into()))
}
