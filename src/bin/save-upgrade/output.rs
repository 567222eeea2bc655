//! Writing to standard output and standard error without panicking: a closed pipe
//! (`save-upgrade --dry-run saves/ | head`) is a normal end, noticed so that the run stops.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether standard output or standard error was closed by its reader: nothing more can be
/// said, so the work should stop.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

fn write(mut stream: impl Write, bytes: &[u8]) {
    if closed() {
        return;
    }
    if stream
        .write_all(bytes)
        .and_then(|()| stream.flush())
        .is_err()
    {
        // A reader that went away, or a full disk behind a redirection: either way there is
        // nobody left to tell.
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
        match closed() {
            true => Err(std::io::ErrorKind::BrokenPipe.into()),
            false => Ok(bytes.len()),
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
