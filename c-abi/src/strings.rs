//! Strings out to C: those inside a report or an error, made and freed with it, and the
//! texts handed out alone, in memory from C's `malloc`.

use std::ffi::{c_char, CString};
use std::ptr;

/// A C string of `text`; a NUL inside it (a key quoted in a message, say) is spelled
/// `\u0000`, as the format spells it.
pub(crate) fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\\u0000")).expect("no NUL is left")
}

/// The strings a report or an error points to, freed when it is. Each is kept as the raw
/// pointer handed out, so that moving the owner never moves (or invalidates) them.
#[derive(Default)]
pub(crate) struct Strings(Vec<*mut c_char>);

impl Strings {
    /// Keeps `s`; its pointer stays valid until `self` is dropped.
    pub(crate) fn keep_c(&mut self, s: CString) -> *const c_char {
        let p = s.into_raw();
        self.0.push(p);
        p
    }

    /// Keeps `text` as a C string (see [`c_string`]).
    pub(crate) fn keep(&mut self, text: &str) -> *const c_char {
        self.keep_c(c_string(text))
    }

    /// Keeps a path's bytes (Unix) or its text, or gives NULL for none.
    pub(crate) fn keep_path(&mut self, path: Option<&std::path::Path>) -> *const c_char {
        let Some(path) = path else {
            return ptr::null();
        };
        #[cfg(unix)]
        let s = {
            use std::os::unix::ffi::OsStrExt;
            CString::new(path.as_os_str().as_bytes()).expect("a path has no NUL")
        };
        #[cfg(not(unix))]
        let s = c_string(&path.to_string_lossy());
        self.keep_c(s)
    }
}

impl Drop for Strings {
    fn drop(&mut self) {
        for &p in &self.0 {
            // SAFETY: each came from CString::into_raw, and is freed once, here; the
            // header forbids callers to write into them.
            drop(unsafe { CString::from_raw(p) });
        }
    }
}

/// `text` (with no NUL) in memory from C's `malloc`, NUL-terminated: a caller may change it
/// and `savechain_text_free` (C's `free`) still frees it. NULL when memory runs out.
pub(crate) fn malloc_text(text: &[u8]) -> *mut c_char {
    // SAFETY: a fresh allocation of len + 1 bytes, filled before it is handed out.
    unsafe {
        let p = libc::malloc(text.len() + 1).cast::<u8>();
        if p.is_null() {
            return ptr::null_mut();
        }
        ptr::copy_nonoverlapping(text.as_ptr(), p, text.len());
        *p.add(text.len()) = 0;
        p.cast()
    }
}
