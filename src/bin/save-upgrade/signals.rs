//! Ctrl-C (SIGINT) and SIGTERM turned into a request to stop: the handler only sets a flag
//! that the library's batch reads ([`savechain::batch::Batch::stop_when`]), so that a run
//! ends cleanly, with its summary, instead of dying part way through a group of writes.
//!
//! A second Ctrl-C stops the run at once, as the default would: the handler is reset after
//! the first signal. What that leaves (temporary files) the next run removes.
//!
//! On Linux only (through `libc`, which the library already uses there); elsewhere the
//! signals keep their default, and a killed run's temporaries are removed by the next run.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The flag the handler sets.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// The signal received since [`install`], if any: its name and the exit status it calls
/// for (128 + its number, as shells report a process it ended).
pub fn received() -> Option<(&'static str, i32)> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        #[cfg(target_os = "linux")]
        libc::SIGINT => Some(("SIGINT", 128 + libc::SIGINT)),
        #[cfg(target_os = "linux")]
        libc::SIGTERM => Some(("SIGTERM", 128 + libc::SIGTERM)),
        other => Some(("a signal", 128 + other)),
    }
}

/// Handles SIGINT and SIGTERM from now on by setting the stop flag.
#[cfg(target_os = "linux")]
pub fn install() {
    extern "C" fn on_signal(signal: libc::c_int) {
        // Only stores to atomics: what a signal handler may do.
        SIGNAL.store(signal, Ordering::SeqCst);
        STOP.store(true, Ordering::SeqCst);
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed `sigaction` is a valid start; the handler is an `extern "C"` fn
        // that only touches atomics; `sigemptyset` and `sigaction` get valid pointers.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // A second signal takes the default (ends the run at once); system calls that
            // the signal interrupts are restarted, not failed.
            action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            // Failing leaves the default, which still never loses a save.
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Elsewhere the signals keep their default.
#[cfg(not(target_os = "linux"))]
pub fn install() {}
