//! Saves in from C: the game's data stored as a save of its chain, atomically and under
//! the lock upgrades take.

use std::ffi::c_char;

use savechain::compress::Compression;

use crate::args;
use crate::chain::{chain_ref, savechain_chain};
use crate::codec;
use crate::error::{guard, savechain_error, savechain_status, Failure};

/// Stores a save of the chain's game at `path`, as the game writes it: `data` (the
/// `data_len` bytes of the game's data as JSON of the format; plain JSON is fine, a
/// double typed as a decimal is read as the nearest double) under a `meta` the chain
/// makes:
/// - `meta` NULL (with a `meta_len` of 0): a new save, at the chain's latest version, written by the chain's
///   `writer`, naming its game, recording each of its mods at its latest version;
/// - else the `meta_len` bytes at `meta`, the `meta` object of the save as it was loaded
///   and upgraded (`savechain_read_meta` of the upgraded text), whose other members (the
///   history, the game's own) are kept, with the writer and mods recorded as for a new
///   save. Its version must be the chain's latest: a save's data is only written in the
///   layout of the latest version, and other versions are refused
///   (`SAVECHAIN_ERROR_ARGUMENT`), never stored under a version its data does not have.
///
/// The file is written in the canonical layout, atomically (a temporary file, flushed,
/// renamed: the file is as it was or whole), and under the lock every savechain writer
/// takes: an upgrade of the same file running beside waits for it, or it for the upgrade,
/// and the newest save wins. Errors name the file, or the line, column and path in `data`
/// or `meta`.
///
/// # Safety
/// `chain` is a live chain; `path` a NUL-terminated string; `data` points to `data_len`
/// readable bytes, `meta` to `meta_len` (each NULL with a length of 0 allowed);
/// `error_out` is NULL or writable. A NULL `data` or `meta` with a length that is not 0
/// is refused (`SAVECHAIN_ERROR_ARGUMENT`).
#[no_mangle]
pub unsafe extern "C" fn savechain_store_file(
    chain: *const savechain_chain,
    path: *const c_char,
    data: *const c_char,
    data_len: usize,
    meta: *const c_char,
    meta_len: usize,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    // SAFETY: the caller's promise, passed on.
    unsafe {
        store(
            chain,
            path,
            data,
            data_len,
            meta,
            meta_len,
            || Ok(Compression::NONE),
            error_out,
        )
    }
}

/// `savechain_store_file`, the file's text stored as `codec` says: `SAVECHAIN_CODEC_NONE`
/// (plain, as `savechain_store_file` writes), `SAVECHAIN_CODEC_ZSTD` or
/// `SAVECHAIN_CODEC_GZIP`, at `level` (0: the codec's default, zstd 3 and gzip 6;
/// otherwise zstd 1 to 22, gzip 1 to 9; NONE takes 0). The same text and level always
/// give the same bytes. Every savechain call that reads saves reads the file back
/// (`savechain_read_head`, `savechain_upgrade_file`, and the text calls given its bytes),
/// whatever it is named; a name ending in `.json.zst` or `.json.gz` is what folder
/// searches (`save-upgrade`) look for. A codec or level out of range is a
/// `SAVECHAIN_ERROR_ARGUMENT`, and nothing is written.
///
/// # Safety
/// As `savechain_store_file`.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // The arguments of savechain_store_file, and how.
pub unsafe extern "C" fn savechain_store_file_compressed(
    chain: *const savechain_chain,
    path: *const c_char,
    data: *const c_char,
    data_len: usize,
    meta: *const c_char,
    meta_len: usize,
    codec: u32,
    level: i32,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    // SAFETY: the caller's promise, passed on.
    unsafe {
        store(
            chain,
            path,
            data,
            data_len,
            meta,
            meta_len,
            || codec::compression(codec, level),
            error_out,
        )
    }
}

/// The two calls' work, once `how` says how the file is stored.
///
/// # Safety
/// As `savechain_store_file`.
#[allow(clippy::too_many_arguments)]
unsafe fn store(
    chain: *const savechain_chain,
    path: *const c_char,
    data: *const c_char,
    data_len: usize,
    meta: *const c_char,
    meta_len: usize,
    how: impl FnOnce() -> Result<Compression, Failure>,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        let how = how()?;
        // SAFETY: the caller's promise.
        let handle = unsafe { chain_ref(chain) }?;
        // SAFETY: the caller's promise.
        let path = unsafe { args::path(path, "path") }?;
        // SAFETY: the caller's promise.
        let data = unsafe { args::bytes(data, data_len, "data") }?;
        let data = savechain::text::from_slice(data)?;
        // SAFETY: the caller's promise.
        let meta = unsafe { args::optional_bytes(meta, meta_len, "meta") }?;
        let save = match meta {
            None => handle.chain.new_save(data),
            Some(meta) => {
                let meta = meta_of(meta)?;
                let latest = handle.chain.latest();
                if meta.version != latest {
                    return Err(Failure::Argument(format!(
                        "meta is of version {}, and the chain writes saves of version {latest}: \
                         store the data of a save upgraded to the latest version",
                        meta.version
                    )));
                }
                handle.chain.resave(meta, data)
            }
        };
        save.store_with(&path, how)?;
        Ok(())
    })
}

/// The `meta` of a save from the JSON text of that object alone.
fn meta_of(text: &[u8]) -> Result<savechain::Meta, Failure> {
    let meta = savechain::text::from_slice(text)?;
    let envelope: savechain::Map = [("data", savechain::Value::Null), ("meta", meta)]
        .into_iter()
        .collect();
    Ok(savechain::Save::from_value(savechain::Value::Object(envelope))?.meta)
}
