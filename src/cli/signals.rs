//! What a simulation does when SIGINT or SIGTERM stops it: its scratch
//! directories (under `/dev/shm`, memory no later run would free) are
//! removed, then the process ends as the signal would have ended it (exit
//! 130 or 143). A kill that leaves no chance is mended by the next run,
//! which removes what a dead process left (`system::files::scratch_dir`).

use std::sync::atomic::{AtomicI32, Ordering};

/// The exit code of the signal that is stopping the process (130 for
/// SIGINT, 143 for SIGTERM); 0 while none is.
static STOPPED_BY: AtomicI32 = AtomicI32::new(0);

/// Watches SIGINT and SIGTERM on a thread of its own for the rest of the process.
pub fn remove_scratch_when_stopped() {
    let spawned = std::thread::Builder::new().name("llmgw-signals".into()).spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
                return;
            };
            let code = tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
            };
            STOPPED_BY.store(code, Ordering::SeqCst);
            llmgw_system::files::remove_scratch();
            std::process::exit(code);
        });
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch for SIGINT and SIGTERM: {e}; an interrupted run leaves its scratch for the next");
    }
}

/// `result`, unless a signal is stopping the process: then what the run
/// ended with (most often an error the stop itself caused, "the process is
/// stopping") is not said, and the process ends as the signal ends it, once
/// the scratch is removed (at most 10 s).
pub fn unless_stopped<T>(result: T) -> T {
    let code = STOPPED_BY.load(Ordering::SeqCst);
    if code == 0 {
        return result;
    }
    // The signal's thread ends the process when its sweep is done: a real
    // wait, for a real thread, not a simulated one.
    #[allow(clippy::disallowed_methods)]
    std::thread::sleep(std::time::Duration::from_secs(10));
    std::process::exit(code);
}
