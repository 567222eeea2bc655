//! A save file's head out to C: its `meta` read from the first bytes of the file (a
//! compressed save decompressed only that far), with what the reading cost.

use std::ffi::c_char;
use std::time::UNIX_EPOCH;

use savechain::head;

use crate::args;
use crate::codec;
use crate::error::{guard, savechain_error, savechain_status};
use crate::text::{clear_meta_out, hand_out_meta};

/// What `savechain_read_head` found besides `meta`: the caller's memory, filled on
/// success.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct savechain_head {
    /// The save's `meta.version`.
    pub version: u64,
    /// How the file is stored: `SAVECHAIN_CODEC_NONE`, `_ZSTD` or `_GZIP`.
    pub codec: u32,
    /// Whether the whole text was read: the save's first member is not `meta` (a save
    /// written before format revision 3, with `data` first).
    pub whole: bool,
    /// The bytes read from the file (compressed bytes, for a compressed save).
    pub bytes_read: u64,
    /// The bytes of text read (decompressed, for a compressed save).
    pub text_read: u64,
    /// The file's size in bytes, as stored.
    pub size: u64,
    /// Whether the system gave the file's modification time.
    pub has_modified: bool,
    /// The file's modification time: seconds since 1970-01-01 UTC (negative before it).
    pub modified_seconds: i64,
    /// The nanoseconds past `modified_seconds` (0 to 999999999).
    pub modified_nanoseconds: u32,
}

/// Reads the `meta` of the save in the file `path` from the head of the file, as the
/// library's `head::read` does: for a load menu or a list of saves, which want each
/// save's version, game and time without reading its data. The file must be a regular
/// file (a FIFO or a device is refused, never waited on). A compressed save (zstd or gzip,
/// known by its first bytes, whatever the file's name) is decompressed only as far as it
/// is read. A save written with `meta` first (format revision 3's canonical text, which
/// every savechain writer writes) costs a read of its head: 4 KiB of text unless
/// `meta` is longer; one with `data` first is read whole (`whole`).
///
/// On success `*head_out` is filled, and, when `meta_out` is not NULL, `*meta_out` is the
/// `meta` object as compact canonical JSON, freed by `savechain_text_free`, with its
/// length in `*meta_len_out` (when not NULL). What follows `meta` is not read, so a save
/// whose head reads may still fail to load. Errors name the file, and the line and column
/// where its head is wrong: a syntax error (`SAVECHAIN_ERROR_SYNTAX`), JSON that is not a
/// save (`_NOT_A_SAVE`), a broken `meta` (`_ENVELOPE`), damaged compressed data
/// (`_COMPRESSED`), a file that cannot be read (`_IO`).
///
/// # Safety
/// `path` is a NUL-terminated string; `head_out` points to writable memory; `meta_out`,
/// `meta_len_out` and `error_out` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn savechain_read_head(
    path: *const c_char,
    head_out: *mut savechain_head,
    meta_out: *mut *mut c_char,
    meta_len_out: *mut usize,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        unsafe { clear_meta_out(meta_out) };
        args::out(head_out, "head_out")?;
        // SAFETY: the caller's promise.
        let path = unsafe { args::path(path, "path") }?;
        let head = head::read(&path)?;
        let modified = head.modified.map(|at| match at.duration_since(UNIX_EPOCH) {
            Ok(after) => (after.as_secs() as i64, after.subsec_nanos()),
            Err(before) => {
                let before = before.duration();
                let (secs, nanos) = (before.as_secs() as i64, before.subsec_nanos());
                match nanos {
                    0 => (-secs, 0),
                    _ => (-secs - 1, 1_000_000_000 - nanos),
                }
            }
        });
        let filled = savechain_head {
            version: head.meta.version,
            codec: codec::constant(head.codec),
            whole: head.whole,
            bytes_read: head.bytes_read,
            text_read: head.text_read,
            size: head.size,
            has_modified: modified.is_some(),
            modified_seconds: modified.map_or(0, |m| m.0),
            modified_nanoseconds: modified.map_or(0, |m| m.1),
        };
        hand_out_meta(&head.meta, meta_out, meta_len_out)?;
        // SAFETY: checked non-NULL above.
        unsafe { *head_out = filled };
        Ok(())
    })
}
