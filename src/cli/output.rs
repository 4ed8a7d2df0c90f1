//! Writing results to standard output: a reader that went away (`| head`)
//! ends the command quietly; any other failure to write is reported, never
//! a panic.

use std::io::{ErrorKind, Write};

use super::input::Failure;

/// Writes `text` to standard output and flushes it.
///
/// # Errors
/// [`Failure::Internal`] when standard output cannot be written (a full
/// disk); a closed pipe is not an error.
pub fn emit(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(Failure::Internal(format!("cannot write the output: {e}"))),
        _ => Ok(()),
    }
}
