//! What the verbs print on standard output, and what becomes of a verb
//! whose reader has gone.
//!
//! `ambient journal | head` closes the pipe after ten lines; `println!`
//! would then panic ("failed printing to stdout: Broken pipe", exit 101).
//! Every printing verb writes through [`outln!`] instead, which hands back
//! [`OutputError::Closed`] there, and [`super::dispatch`] ends the verb
//! quietly with exit 0: a reader that has seen enough is not a failure. Any
//! other write error (a full disk under `>`) is an error like any other,
//! named and exit 1.

use std::fmt;
use std::io::{self, Write};

#[derive(Debug, thiserror::Error)]
pub(crate) enum OutputError {
    /// The reader went away (a closed pipe): the verb stops, quietly.
    #[error("standard output was closed by its reader")]
    Closed,
    /// Anything else (a full disk): the verb fails, naming it. The cause is
    /// in the message, not a source, so `main`'s chain says it once.
    #[error("cannot write to standard output: {0}")]
    Write(io::Error),
}

impl From<io::Error> for OutputError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Self::Closed
        } else {
            Self::Write(e)
        }
    }
}

/// Whether `e` is a verb stopped by its reader going away.
pub(crate) fn closed(e: &anyhow::Error) -> bool {
    matches!(e.downcast_ref::<OutputError>(), Some(OutputError::Closed))
}

/// Writes `args` and a line ending (the body of [`outln!`]).
pub(crate) fn line(args: fmt::Arguments<'_>) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Writes `args` without a line ending and shows it now: a question
/// waiting on the same line for its answer.
pub(crate) fn prompt(args: fmt::Arguments<'_>) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.flush()?;
    Ok(())
}

/// Runs `write` on standard output, buffered, and flushes it: for a verb
/// that streams a document (an export) through a writer. A closed pipe
/// comes back as [`OutputError::Closed`], whatever error type `write` wraps
/// it in.
pub(crate) fn stream<T, E>(write: impl FnOnce(&mut dyn Write) -> Result<T, E>) -> anyhow::Result<T>
where
    E: Into<anyhow::Error>,
{
    let mut watched = Watched {
        inner: io::BufWriter::new(io::stdout().lock()),
        closed: false,
    };
    let written = write(&mut watched);
    let flushed = watched.flush();
    if watched.closed {
        return Err(OutputError::Closed.into());
    }
    let value = written.map_err(Into::into)?;
    flushed.map_err(OutputError::from)?;
    Ok(value)
}

/// A writer that remembers whether its reader went away, so the error a
/// caller wrapped it in can be told from any other.
struct Watched<W: Write> {
    inner: W,
    closed: bool,
}

impl<W: Write> Watched<W> {
    fn seen<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r
            && e.kind() == io::ErrorKind::BrokenPipe
        {
            self.closed = true;
        }
        r
    }
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.seen(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        self.seen(r)
    }
}

/// `println!` for the verbs: `outln!("{n} calls")?;` — a closed pipe is an
/// [`OutputError::Closed`] to return, not a panic.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_is_closed_and_anything_else_an_error() {
        let closed: OutputError = io::Error::from(io::ErrorKind::BrokenPipe).into();
        assert!(matches!(closed, OutputError::Closed));
        assert!(super::closed(&anyhow::Error::from(closed)));
        let full: OutputError = io::Error::from(io::ErrorKind::StorageFull).into();
        assert!(matches!(full, OutputError::Write(_)));
        assert!(!super::closed(&anyhow::Error::from(full)));
        assert!(!super::closed(&anyhow::anyhow!("Broken pipe")));
    }
}
