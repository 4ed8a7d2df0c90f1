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

/// Standard output written as results come (a fleet's cells), buffered:
/// each [`Stream::write`] is a copy into the buffer, a full buffer a write.
pub struct Stream {
    out: std::io::BufWriter<std::io::Stdout>,
}

/// Why a [`Stream`] stopped taking text.
#[derive(Debug)]
pub enum Stopped {
    /// The reader went away (`| head`): stop quietly, exit 0.
    Closed,
    /// Standard output cannot be written (a full disk).
    Failed(Failure),
}

impl Stream {
    /// Standard output, with a 256 KiB buffer.
    pub fn stdout() -> Stream {
        Stream { out: std::io::BufWriter::with_capacity(256 << 10, std::io::stdout()) }
    }

    /// Writes `text`.
    ///
    /// # Errors
    /// [`Stopped`]: the reader went away, or the write failed.
    pub fn write(&mut self, text: &str) -> Result<(), Stopped> {
        self.out.write_all(text.as_bytes()).map_err(stopped)
    }

    /// Writes what is buffered.
    ///
    /// # Errors
    /// As [`Stream::write`].
    pub fn flush(&mut self) -> Result<(), Stopped> {
        self.out.flush().map_err(stopped)
    }
}

fn stopped(e: std::io::Error) -> Stopped {
    if e.kind() == ErrorKind::BrokenPipe {
        Stopped::Closed
    } else {
        Stopped::Failed(Failure::Internal(format!("cannot write the output: {e}")))
    }
}
