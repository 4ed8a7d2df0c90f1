//! Processes for real: run with a time limit, the whole process group
//! killed at it, the output of both pipes captured.
//!
//! Uses: nothing of this crate.

// This module is where processes and the clock are used for real (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use llmgw_core::system::{Cmd, Output};

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
