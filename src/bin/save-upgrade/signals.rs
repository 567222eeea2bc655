//! Ctrl-C (SIGINT) and SIGTERM turned into requests to stop: the handler only sets flags
//! that the library's batch reads ([`savechain::batch::Batch::stop_when`] and
//! [`savechain::batch::Batch::abandon_when`]), so that a run ends with its summary and its
//! report, and with no temporary file left, however it is stopped.
//!
//! One request may arrive more than once: `timeout`, systemd, Slurm and Kubernetes send
//! SIGTERM to the process and then to its group, and a process gets each. So the signal
//! that made the first request, arriving again within [`SAME_REQUEST`], is that request
//! again. A later one, or the other signal (SIGINT after SIGTERM), is a second request:
//! stop at once. The batch then abandons the saves under way (their originals intact, their
//! temporaries removed) and the run still prints its summary and writes its report. A
//! third request ends the run as the default would; the next run removes what that left.
//!
//! On Linux only (through `libc`, which the library already uses there); elsewhere the
//! signals keep their default, and a killed run's temporaries are removed by the next run.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// How long the same signal again is the same request.
#[cfg(target_os = "linux")]
const SAME_REQUEST: u64 = 1_000_000_000;

static STOP: AtomicBool = AtomicBool::new(false);
static AT_ONCE: AtomicBool = AtomicBool::new(false);
/// The signal of the first request and when it came (monotonic nanoseconds).
static FIRST: AtomicI32 = AtomicI32::new(0);
static FIRST_AT: AtomicU64 = AtomicU64::new(0);
/// The signal of the second request (stop at once) and when it came.
static SECOND: AtomicI32 = AtomicI32::new(0);
static SECOND_AT: AtomicU64 = AtomicU64::new(0);

/// Set for a run that cannot abandon the work under way (`cache build`): a second request
/// then ends it as the default would, as a third does elsewhere.
static SECOND_ENDS: AtomicBool = AtomicBool::new(false);

/// The flag of a request to stop: no save is started after it.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// The flag of a second request: the saves under way are abandoned.
pub fn at_once_flag() -> &'static AtomicBool {
    &AT_ONCE
}

/// The signal that stopped the run, if any (the second request's when there was one): its
/// name, the exit status it calls for (128 + its number, as shells report a process it
/// ended), and whether it asked to stop at once.
pub fn received() -> Option<(&'static str, i32, bool)> {
    let at_once = AT_ONCE.load(Ordering::SeqCst);
    let signal = match at_once {
        true => SECOND.load(Ordering::SeqCst),
        false => FIRST.load(Ordering::SeqCst),
    };
    let name = match signal {
        0 => return None,
        #[cfg(target_os = "linux")]
        libc::SIGINT => "SIGINT",
        #[cfg(target_os = "linux")]
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    };
    Some((name, 128 + signal, at_once))
}

/// Handles SIGINT and SIGTERM from now on, for a run that can abandon the saves under way
/// on a second request ([`at_once_flag`]).
pub fn install() {
    install_handler(false);
}

/// Handles SIGINT and SIGTERM from now on, for a run that can only stop between two saves:
/// a second request ends it at once, as the default would (what that leaves, temporary
/// files, the next run removes).
pub fn install_second_ends() {
    install_handler(true);
}

#[cfg(target_os = "linux")]
fn install_handler(second_ends: bool) {
    SECOND_ENDS.store(second_ends, Ordering::SeqCst);
    extern "C" fn on_signal(signal: libc::c_int) {
        // Only atomics, `clock_gettime`, `signal` and `raise`: what a handler may use. The
        // two signals are blocked while it runs (`sa_mask`), so it never runs twice at once.
        let now = monotonic_nanos();
        let again = |of: &AtomicI32, at: &AtomicU64| {
            of.load(Ordering::SeqCst) == signal
                && now.saturating_sub(at.load(Ordering::SeqCst)) < SAME_REQUEST
        };
        if !STOP.load(Ordering::SeqCst) {
            FIRST.store(signal, Ordering::SeqCst);
            FIRST_AT.store(now, Ordering::SeqCst);
            STOP.store(true, Ordering::SeqCst);
        } else if again(&FIRST, &FIRST_AT) {
            // The first request, delivered again (to the process, then to its group).
        } else if !AT_ONCE.load(Ordering::SeqCst) && !SECOND_ENDS.load(Ordering::SeqCst) {
            SECOND.store(signal, Ordering::SeqCst);
            SECOND_AT.store(now, Ordering::SeqCst);
            AT_ONCE.store(true, Ordering::SeqCst);
        } else if !again(&SECOND, &SECOND_AT) {
            // A third request: the default, ending the run now. The signal is blocked until
            // the handler returns, and then ends the process.
            // SAFETY: `signal` and `raise` are async-signal-safe.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed `sigaction` is a valid start; the handler is an `extern "C"` fn
        // that does only what a handler may; `sigemptyset`, `sigaddset` and `sigaction` get
        // valid pointers.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // System calls that the signal interrupts are restarted, not failed.
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaddset(&mut action.sa_mask, libc::SIGINT);
            libc::sigaddset(&mut action.sa_mask, libc::SIGTERM);
            // Failing leaves the default, which still never loses a save.
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Nanoseconds on the monotonic clock (`clock_gettime`, which a signal handler may call).
#[cfg(target_os = "linux")]
fn monotonic_nanos() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as u64)
}

/// Elsewhere the signals keep their default.
#[cfg(not(target_os = "linux"))]
fn install_handler(_second_ends: bool) {}
