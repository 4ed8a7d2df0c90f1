//! What a simulation does when SIGINT or SIGTERM stops it: its scratch
//! directories (under `/dev/shm`, memory no later run would free) are
//! removed, then the process ends as the signal would have ended it (exit
//! 130 or 143). A kill that leaves no chance is mended by the next run,
//! which removes what a dead process left (`system::files::scratch_dir`).

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
            llmgw::system::files::remove_scratch();
            std::process::exit(code);
        });
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch for SIGINT and SIGTERM: {e}; an interrupted run leaves its scratch for the next");
    }
}
