//! Arguments in from C: pointers checked for NULL, strings for UTF-8, lengths for range,
//! each refusal a `SAVECHAIN_ERROR_ARGUMENT` naming the argument.

use std::ffi::{c_char, CStr};
use std::path::PathBuf;

use crate::error::Failure;

fn refuse<T>(message: String) -> Result<T, Failure> {
    Err(Failure::Argument(message))
}

/// The NUL-terminated UTF-8 string at `ptr`, the argument `what` of the call.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return refuse(format!("{what} is NULL"));
    }
    // SAFETY: the caller's promise.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => refuse(format!(
            "{what} is not UTF-8 (byte {} of it)",
            e.valid_up_to() + 1
        )),
    }
}

/// The file path at `ptr`, a NUL-terminated string: any bytes on Unix, where paths need
/// not be UTF-8; UTF-8 elsewhere.
///
/// # Safety
/// As [`text`].
pub(crate) unsafe fn path(ptr: *const c_char, what: &str) -> Result<PathBuf, Failure> {
    if ptr.is_null() {
        return refuse(format!("{what} is NULL"));
    }
    // SAFETY: the caller's promise.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    if bytes.is_empty() {
        return refuse(format!("{what} is empty"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        // SAFETY: the caller's promise.
        unsafe { text(ptr, what) }.map(PathBuf::from)
    }
}

/// The `len` bytes at `ptr`, the argument `what`: NULL is allowed for no bytes.
///
/// # Safety
/// `ptr` is NULL or points to `len` readable bytes that outlive `'a`.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return refuse(format!("{what} is NULL with a length of {len}"));
    }
    if len > isize::MAX as usize {
        return refuse(format!(
            "the length of {what} ({len}) is more than memory can hold"
        ));
    }
    // SAFETY: the caller's promise; the length is in range for a slice.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// The `len` bytes at `ptr`, the argument `what`, or `None` for NULL with a length of 0
/// (the argument left out); NULL with a length is refused, as with [`bytes`].
///
/// # Safety
/// As [`bytes`].
pub(crate) unsafe fn optional_bytes<'a>(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> Result<Option<&'a [u8]>, Failure> {
    match ptr.is_null() && len == 0 {
        true => Ok(None),
        // SAFETY: the caller's promise.
        false => unsafe { bytes(ptr, len, what) }.map(Some),
    }
}

/// Checks that `out` can take a result, the argument `what`.
pub(crate) fn out<T>(out: *mut T, what: &str) -> Result<(), Failure> {
    match out.is_null() {
        true => refuse(format!("{what} is NULL: the result has nowhere to go")),
        false => Ok(()),
    }
}

/// As [`out`], and sets `*out` to NULL: a caller that frees it after a failure frees
/// nothing.
///
/// # Safety
/// `out` is NULL or points to writable memory.
pub(crate) unsafe fn cleared<T>(out: *mut *mut T, what: &str) -> Result<(), Failure> {
    self::out(out, what)?;
    // SAFETY: not NULL; the caller's promise.
    unsafe { *out = std::ptr::null_mut() };
    Ok(())
}
