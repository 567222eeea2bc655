//! Writing to standard output and standard error without panicking: a closed pipe
//! (`save-upgrade --dry-run saves/ | head`) is a normal end, noticed so that the run stops;
//! any other failure (a full disk behind a redirection) also stops it, and fails it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);
static FAILED: AtomicBool = AtomicBool::new(false);

/// Whether standard output or standard error was closed by its reader: nothing more can be
/// said, so the work should stop.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Whether standard output or standard error failed for another reason than a reader that
/// went away: what was written is cut short, so the run must not end as a success.
pub fn failed() -> bool {
    FAILED.load(Ordering::Relaxed)
}

fn write(mut stream: impl Write, bytes: &[u8]) {
    if closed() {
        return;
    }
    if let Err(e) = stream.write_all(bytes).and_then(|()| stream.flush()) {
        // A reader that went away is a normal end; a full disk behind a redirection leaves
        // a file cut short, which the exit status must say.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            FAILED.store(true, Ordering::Relaxed);
        }
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Writes machine output to standard output.
pub fn out(text: &str) {
    write(std::io::stdout().lock(), text.as_bytes());
}

/// Writes machine output that need not be text (a compressed save) to standard output.
pub fn out_bytes(bytes: &[u8]) {
    write(std::io::stdout().lock(), bytes);
}

/// Standard output as a writer, for a long text written in pieces: each goes out as
/// [`out_bytes`] sends it, and once the reader has gone a write fails, so that the writing
/// stops ([`closed`] says why).
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        out_bytes(bytes);
        match (closed(), failed()) {
            (false, _) => Ok(bytes.len()),
            (true, false) => Err(std::io::ErrorKind::BrokenPipe.into()),
            (true, true) => Err(std::io::Error::other("standard output failed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes text for people to standard error.
pub fn err(text: &str) {
    write(std::io::stderr().lock(), text.as_bytes());
}

/// `println!` to standard output that never panics.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::out(&format!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::err(&format!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {errln, outln};
