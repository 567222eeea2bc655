//! Peak heap memory: a counting global allocator for the benchmarks that report memory.
//!
//! Benchmarks include this file with `#[path = "support/alloc.rs"] mod alloc;` and install
//! it with `#[global_allocator] static ALLOCATOR: alloc::Counting = alloc::Counting;`.
//!
//! It counts the bytes requested through Rust's global allocator, which is also where Lua's
//! heap comes from: mlua gives every Lua state an allocator function that calls
//! `std::alloc` (mlua's `memory.rs`), so Lua strings and tables are counted like Rust's
//! own. Not counted: allocator overhead and fragmentation (this is not RSS; a `realloc`
//! counts as if in place), and C code that calls `malloc` itself, unless it is routed here
//! with [`malloc`], [`realloc`], [`calloc`] and [`free`] (see `support/cjson.rs`).
//!
//! Counting is on only while [`peak_of`] runs; otherwise it costs one relaxed load an
//! allocation.
//!
//! Underneath is the system allocator, what a Rust program gets by default, or mimalloc
//! when the bench is built with `SAVECHAIN_BENCH_MIMALLOC=1` in the environment (read at
//! compile time, so cargo rebuilds the bench when it changes): [`UNDERNEATH`] names it.

#![allow(dead_code)] // Each bench that includes this file uses a different part of it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

pub struct Counting;

const MIMALLOC: bool = option_env!("SAVECHAIN_BENCH_MIMALLOC").is_some();

/// The allocator the counts are of, for the tables.
pub const UNDERNEATH: &str = if MIMALLOC { "mimalloc" } else { "system" };

/// The system allocator or mimalloc, fixed when the bench is compiled.
struct Underneath;

unsafe impl GlobalAlloc for Underneath {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on (here and below).
        unsafe {
            match MIMALLOC {
                true => mimalloc::MiMalloc.alloc(layout),
                false => System.alloc(layout),
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            match MIMALLOC {
                true => mimalloc::MiMalloc.alloc_zeroed(layout),
                false => System.alloc_zeroed(layout),
            }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe {
            match MIMALLOC {
                true => mimalloc::MiMalloc.dealloc(p, layout),
                false => System.dealloc(p, layout),
            }
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            match MIMALLOC {
                true => mimalloc::MiMalloc.realloc(p, layout, new_size),
                false => System.realloc(p, layout, new_size),
            }
        }
    }
}

static COUNTING: AtomicBool = AtomicBool::new(false);
static IN_USE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn count(delta: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        let now = IN_USE.fetch_add(delta, Ordering::Relaxed) + delta;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { Underneath.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { Underneath.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: `p` came from this allocator with this layout.
        unsafe { Underneath.dealloc(p, layout) };
        count(-(layout.size() as isize));
    }

    // Forwarded (the default would allocate, copy and free), so that a growing buffer
    // costs what it costs with the system allocator. Counted as if in place.
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        let q = unsafe { Underneath.realloc(p, layout, new_size) };
        if !q.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        q
    }
}

/// Runs `f` and returns its result and the peak of heap bytes live at once while it ran,
/// above what was live when it started (memory allocated before and freed during `f`
/// lowers the count).
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    IN_USE.store(0, Ordering::SeqCst);
    PEAK.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let out = f();
    COUNTING.store(false, Ordering::SeqCst);
    (out, PEAK.load(Ordering::SeqCst).max(0) as usize)
}

/// Bytes live now above the start of the [`peak_of`] running (0 outside one).
pub fn in_use() -> isize {
    IN_USE.load(Ordering::SeqCst)
}

// Counting stand-ins for the C allocator, for C code whose calls are routed here. They
// count what `malloc_usable_size` says a block holds.

#[cfg(target_os = "linux")]
fn usable(p: *mut c_void) -> isize {
    if p.is_null() {
        0
    } else {
        // SAFETY: `p` is a live block of the C allocator.
        unsafe { libc::malloc_usable_size(p) as isize }
    }
}

/// `malloc`, counted.
#[cfg(target_os = "linux")]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: the C allocator, as the caller would have called it.
    let p = unsafe { libc::malloc(size) };
    count(usable(p));
    p
}

/// `calloc`, counted.
#[cfg(target_os = "linux")]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: as for `malloc`.
    let p = unsafe { libc::calloc(n, size) };
    count(usable(p));
    p
}

/// `realloc`, counted.
#[cfg(target_os = "linux")]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    let old = usable(p);
    // SAFETY: as for `malloc`; `p` is null or a live block.
    let q = unsafe { libc::realloc(p, size) };
    if !q.is_null() {
        count(usable(q) - old);
    } else if size == 0 && !p.is_null() {
        count(-old);
    }
    q
}

/// `free`, counted.
#[cfg(target_os = "linux")]
pub unsafe extern "C" fn free(p: *mut c_void) {
    count(-usable(p));
    // SAFETY: `p` is null or a live block of the C allocator.
    unsafe { libc::free(p) }
}
