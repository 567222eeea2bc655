//! Save text out to C without an upgrade: the canonical layouts, the decimal view, and a
//! save's version and `meta` read alone.

use std::ffi::c_char;
use std::ptr;

use savechain::text::{reformat, Style};
use savechain::Meta;

use crate::args;
use crate::codec;
use crate::error::{guard, savechain_error, savechain_status, Failure};
use crate::strings::malloc_text;

/// Style: the canonical layout a save is stored in (`meta` first, then every key sorted,
/// two-space indent, doubles as `["d", "<hexfloat>"]`).
pub const SAVECHAIN_PRETTY: u32 = 0;
/// Style: the same document on one line, without spaces.
pub const SAVECHAIN_COMPACT: u32 = 1;
/// Style: the decimal view for a person editing by hand: each double as its shortest
/// decimal, tagged `["d", 0.1]`, reading back as the same bits (docs/FORMAT.md 5.1).
pub const SAVECHAIN_DECIMAL: u32 = 2;

/// Hands `text` (NUL-free: canonical text escapes every control character) to the caller
/// through `out`, and its length through `out_len` when that is not NULL.
pub(crate) fn hand_out(
    text: &[u8],
    out: *mut *mut c_char,
    out_len: *mut usize,
) -> Result<(), Failure> {
    let copy = malloc_text(text);
    if copy.is_null() {
        return Err(Failure::Internal(format!(
            "out of memory for a text of {} bytes",
            text.len()
        )));
    }
    // SAFETY: the callers checked `out`; `out_len` is NULL or writable (the header).
    unsafe {
        *out = copy;
        if !out_len.is_null() {
            *out_len = text.len();
        }
    }
    Ok(())
}

/// Sets `*meta_out` to NULL when the caller asks for `meta` (`meta_out` not NULL): a caller
/// that frees it after a failure frees nothing.
///
/// # Safety
/// `meta_out` is NULL or writable.
pub(crate) unsafe fn clear_meta_out(meta_out: *mut *mut c_char) {
    if !meta_out.is_null() {
        // SAFETY: the caller's promise.
        unsafe { *meta_out = ptr::null_mut() };
    }
}

/// Hands `meta` out as compact text through `meta_out` (and its length through
/// `meta_len_out`) when the caller asks for it: `meta_out` not NULL.
pub(crate) fn hand_out_meta(
    meta: &Meta,
    meta_out: *mut *mut c_char,
    meta_len_out: *mut usize,
) -> Result<(), Failure> {
    if meta_out.is_null() {
        return Ok(());
    }
    let text = savechain::text::to_vec_compact(&meta.to_value())?;
    hand_out(&text, meta_out, meta_len_out)
}

/// Writes the document whose text is the `text_len` bytes at `text` in `style`
/// (`SAVECHAIN_PRETTY`, `SAVECHAIN_COMPACT` or `SAVECHAIN_DECIMAL`), every value kept
/// exactly. Any document of the format is accepted, a save or not. The bytes may be the
/// text compressed (zstd or gzip, known by their first bytes: a file's bytes as read);
/// the text written is plain. Compressed bytes that do not decompress, or decompress to
/// more than 1 GiB, are a `SAVECHAIN_ERROR_COMPRESSED`.
///
/// On success `*out` is the new text, NUL-terminated, freed by `savechain_text_free`,
/// and `*out_len` (when `out_len` is not NULL) its length without the NUL. Text that is
/// not the format's JSON is an error with its line, column and document path.
///
/// # Safety
/// `text` points to `text_len` readable bytes (or is NULL with `text_len` 0); `out` points
/// to writable memory; `out_len` and `error_out` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn savechain_format(
    text: *const c_char,
    text_len: usize,
    style: u32,
    out: *mut *mut c_char,
    out_len: *mut usize,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        unsafe { args::cleared(out, "out") }?;
        // SAFETY: the caller's promise.
        let text = unsafe { args::bytes(text, text_len, "text") }?;
        let style = match style {
            SAVECHAIN_PRETTY => Style::Pretty,
            SAVECHAIN_COMPACT => Style::Compact,
            SAVECHAIN_DECIMAL => Style::Decimal,
            other => {
                return Err(Failure::Argument(format!(
                    "style is {other}: SAVECHAIN_PRETTY, SAVECHAIN_COMPACT or SAVECHAIN_DECIMAL"
                )))
            }
        };
        hand_out(&reformat(&codec::text(text)?, style)?, out, out_len)
    })
}

/// Reads the version and `meta` of the save whose text is the `text_len` bytes at `text`
/// (or that text compressed, zstd or gzip, as for `savechain_format`), building nothing of
/// its data (the whole text is still checked as the format's JSON): to tell whether a
/// save in memory needs an upgrade (its version below `savechain_chain_latest`). For a
/// save in a file, `savechain_read_head` reads only the head of the file.
///
/// On success `*version_out` is `meta.version`, and, when `meta_out` is not NULL,
/// `*meta_out` is the `meta` object as compact canonical JSON, freed by
/// `savechain_text_free`, with its length in `*meta_len_out` (when not NULL). Text that
/// is not a save is an error (`SAVECHAIN_ERROR_NOT_A_SAVE` when it is JSON with no `meta`).
///
/// # Safety
/// `text` points to `text_len` readable bytes (or is NULL with `text_len` 0);
/// `version_out` points to writable memory; `meta_out`, `meta_len_out` and `error_out`
/// are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn savechain_read_meta(
    text: *const c_char,
    text_len: usize,
    version_out: *mut u64,
    meta_out: *mut *mut c_char,
    meta_len_out: *mut usize,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        unsafe { clear_meta_out(meta_out) };
        args::out(version_out, "version_out")?;
        // SAFETY: the caller's promise.
        let text = unsafe { args::bytes(text, text_len, "text") }?;
        let meta = Meta::from_slice(text)?;
        // SAFETY: checked non-NULL above.
        unsafe { *version_out = meta.version };
        hand_out_meta(&meta, meta_out, meta_len_out)
    })
}

/// Frees a text a savechain call stored. NULL is ignored. The caller may have changed the
/// text's bytes, not its size (it is freed with C's `free`).
///
/// # Safety
/// `text` is NULL or a text a savechain call stored, not freed before.
#[no_mangle]
pub unsafe extern "C" fn savechain_text_free(text: *mut c_char) {
    // SAFETY: the caller's promise: it came from `malloc_text`, C's malloc.
    unsafe { libc::free(text.cast()) };
}
