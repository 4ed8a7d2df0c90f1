//! Processes for real: each in a process group of its own, the whole group
//! killed when the process ends and at its time limit, the first
//! [`OUTPUT_KEPT_BYTES`] of each pipe kept and the rest counted.
//!
//! Uses: nothing of this crate.

// This module is where processes and the clock are used for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use llmgw_core::system::{Cmd, Ended, LeftOut, OUTPUT_KEPT_BYTES, Output};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// How long the pipes are waited for once the process group is gone: a
/// process that left the group (`setsid`) and holds them open does not
/// keep llmgw waiting longer.
const PIPES_PATIENCE: Duration = Duration::from_secs(2);

/// What a pipe's reader has so far: the bytes kept, the bytes counted past
/// them, whether the pipe closed.
#[derive(Default)]
struct Pipe {
    kept: Vec<u8>,
    left_out: u64,
    closed: bool,
}

/// Reads `from` to its end on a thread of its own: a chatty program never
/// blocks on a full pipe, and never fills llmgw's memory.
fn drain(mut from: impl Read + Send + 'static) -> Arc<Mutex<Pipe>> {
    let pipe = Arc::new(Mutex::new(Pipe::default()));
    let theirs = Arc::clone(&pipe);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut p = theirs.lock().unwrap_or_else(PoisonError::into_inner);
            let room = usize::try_from(OUTPUT_KEPT_BYTES).unwrap_or(usize::MAX).saturating_sub(p.kept.len());
            let keep = n.min(room);
            p.kept.extend_from_slice(&buf[..keep]);
            p.left_out += (n - keep) as u64;
        }
        theirs.lock().unwrap_or_else(PoisonError::into_inner).closed = true;
    });
    pipe
}

/// Kills every process left in the group `group`; none left is no error.
fn kill_group(group: Pid) {
    let _ = rustix::process::kill_process_group(group, Signal::KILL);
}

/// Runs `cmd` in a process group of its own, its output captured (the
/// first [`OUTPUT_KEPT_BYTES`] of each stream kept, the rest counted in
/// [`Output::left_out`]). When the process exits, whatever it left running
/// in its group is killed before it is reaped (so the group's id cannot
/// have been taken by another process); at its time limit the whole group
/// is killed and the outcome is [`Ended::TimedOut`]. A grandchild holding
/// the output pipes (Python's workers, uv's builds, a `sleep 300 &`)
/// neither outlives llmgw nor keeps it waiting.
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
    let group = Pid::from_child(&child);
    let stdout = drain(child.stdout.take().expect("stdout is piped"));
    let stderr = drain(child.stderr.take().expect("stderr is piped"));
    let deadline = Instant::now() + Duration::from_secs(cmd.timeout_secs);
    let ended = loop {
        // Asked without reaping: the exited leader keeps the group's id ours.
        let exited = rustix::process::waitid(
            WaitId::Pid(group),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        )?;
        if exited.is_some() {
            kill_group(group);
            let status = child.wait()?;
            break match (status.code(), status.signal()) {
                (Some(code), _) => Ended::Exited(code),
                (None, signal) => Ended::Signalled(signal.unwrap_or(0)),
            };
        }
        if Instant::now() >= deadline {
            kill_group(group);
            let _ = child.kill();
            let _ = child.wait();
            break Ended::TimedOut { secs: cmd.timeout_secs };
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The pipes close when every holder has exited; the group is gone, so wait only briefly.
    let waiting = Instant::now();
    let closed = |p: &Arc<Mutex<Pipe>>| p.lock().unwrap_or_else(PoisonError::into_inner).closed;
    while !(closed(&stdout) && closed(&stderr)) && waiting.elapsed() < PIPES_PATIENCE {
        std::thread::sleep(Duration::from_millis(5));
    }
    let take = |p: &Arc<Mutex<Pipe>>| {
        let mut p = p.lock().unwrap_or_else(PoisonError::into_inner);
        (String::from_utf8_lossy(&std::mem::take(&mut p.kept)).into_owned(), p.left_out)
    };
    let ((stdout, out_left), (stderr, err_left)) = (take(&stdout), take(&stderr));
    Ok(Output { ended, stdout, stderr, left_out: LeftOut { stdout: out_left, stderr: err_left } })
}
