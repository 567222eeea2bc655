//! Any bytes, as save text given to the C ABI's text calls through its rlib
//! (`savechain_format` in each style, `savechain_read_meta`, `savechain_upgrade_text` with a
//! one-step Lua chain): each succeeds exactly when the library call it wraps does, hands out
//! the library's bytes (NUL-terminated, no NUL inside) and the library's versions, and
//! otherwise stores an error whose kind, text, message, path, line and column are the
//! library error's. An unknown style or flag is `SAVECHAIN_ERROR_ARGUMENT`. Everything
//! handed out is freed with the ABI's free functions, so a double free or a leak shows.
#![no_main]

use std::ffi::{c_char, CStr};
use std::ptr;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use savechain::lua::Limits;
use savechain::text::{self, Style};
use savechain::upgrade::Chain;
use savechain::{Error, ErrorKind, Meta, Options};
use savechain_c::savechain_status::{self, *};
use savechain_c::*;

/// A chain handle made once for the whole run. The ABI promises that a chain, once set up,
/// may be used from any thread (it is only read).
struct Handle(*mut savechain_chain);

// SAFETY: the header's promise above; the handle is never set up again or freed.
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

/// The same chain through the ABI and through the library, with the same limits.
struct Chains {
    c: Handle,
    rust: Chain,
    options: Options,
}

static CHAINS: OnceLock<Chains> = OnceLock::new();

// Small limits: a fuzz input must not run a step for long, and both sides must stop alike.
const INSTRUCTIONS: u64 = 1_000_000;
const MEMORY: u64 = 64 << 20;
const SECONDS: f64 = 1.0;

fn chains() -> &'static Chains {
    CHAINS.get_or_init(|| {
        let steps = tempfile::tempdir().unwrap();
        std::fs::write(
            steps.path().join("0001-touch.lua"),
            "return function(data) if type(data) == \"table\" then data.touched = true end end\n",
        )
        .unwrap();
        let dir = std::ffi::CString::new(steps.path().to_str().unwrap()).unwrap();
        let mut handle = ptr::null_mut();
        let mut error = ptr::null_mut();
        // SAFETY: NUL-terminated strings and writable out pointers.
        let status = unsafe {
            savechain_chain_new(c"1.0.0".as_ptr(), dir.as_ptr(), &mut handle, &mut error)
        };
        assert_eq!(status, SAVECHAIN_OK, "savechain_chain_new");
        assert!(!handle.is_null() && error.is_null());
        // SAFETY: a live chain no other call uses yet.
        let status = unsafe {
            savechain_chain_set_limits(handle, INSTRUCTIONS, MEMORY, SECONDS, &mut error)
        };
        assert_eq!(status, SAVECHAIN_OK, "savechain_chain_set_limits");
        let mut limits = Limits::new(INSTRUCTIONS, MEMORY as usize);
        limits.time = std::time::Duration::from_secs_f64(SECONDS);
        let mut options = Options::default();
        options.limits = limits;
        // Both chains hold their steps' source from here on: the folder can go.
        Chains {
            c: Handle(handle),
            rust: Chain::from_lua_dir("1.0.0", steps.path()).unwrap(),
            options,
        }
    })
}

/// A pointer an out argument starts as, so that a call that does not set it shows.
fn unset<T>() -> *mut T {
    ptr::dangling_mut()
}

/// The status the ABI gives for a library error of `kind` (c-abi/src/error.rs).
fn status_of(kind: ErrorKind) -> savechain_status {
    match kind {
        ErrorKind::Io => SAVECHAIN_ERROR_IO,
        ErrorKind::Syntax => SAVECHAIN_ERROR_SYNTAX,
        ErrorKind::Value => SAVECHAIN_ERROR_VALUE,
        ErrorKind::Envelope => SAVECHAIN_ERROR_ENVELOPE,
        ErrorKind::NotASave => SAVECHAIN_ERROR_NOT_A_SAVE,
        ErrorKind::Usage => SAVECHAIN_ERROR_USAGE,
        ErrorKind::Lua => SAVECHAIN_ERROR_LUA,
        ErrorKind::Upgrade => SAVECHAIN_ERROR_UPGRADE,
        ErrorKind::Changed => SAVECHAIN_ERROR_CHANGED,
        _ => SAVECHAIN_ERROR_INTERNAL,
    }
}

/// A string of an error as C reads it: a NUL inside (a key quoted in a message) is spelled
/// `\u0000`, as the ABI documents.
fn c_spelling(text: &str) -> String {
    text.replace('\0', "\\u0000")
}

/// The string at `p`, which must not be NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn string<'a>(call: &str, field: &str, p: *const c_char) -> &'a str {
    assert!(!p.is_null(), "{call}: error {field} is NULL");
    // SAFETY: the caller's promise.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .unwrap_or_else(|_| panic!("{call}: error {field} is not UTF-8"))
}

/// Checks a failed call's status and error against the library's error, and frees the error.
///
/// # Safety
/// `error` is what the call stored in its `error_out`.
unsafe fn check_error(
    call: &str,
    status: savechain_status,
    error: *mut savechain_error,
    expected: &Error,
) {
    assert_eq!(
        status,
        status_of(expected.kind()),
        "{call}: status of {expected}"
    );
    assert!(
        !error.is_null() && error != unset(),
        "{call}: failed with no error"
    );
    // SAFETY: a live error from the call.
    let e = unsafe { &*error };
    assert_eq!(e.kind, status, "{call}: error kind is not the status");
    // SAFETY: the error's strings are NUL-terminated (or NULL, which `string` refuses).
    unsafe {
        assert_eq!(
            string(call, "text", e.text),
            c_spelling(&expected.to_string())
        );
        assert_eq!(
            string(call, "message", e.message),
            c_spelling(expected.message())
        );
        let path = match expected.path().is_root() {
            true => String::new(),
            false => c_spelling(&expected.path().to_string()),
        };
        assert_eq!(string(call, "path", e.path), path, "{call}: error path");
        // Text calls name no file.
        assert!(
            e.file.is_null() && expected.file().is_none(),
            "{call}: a file"
        );
        match expected.failed_mod() {
            Some(m) => assert_eq!(string(call, "failed_mod", e.failed_mod), c_spelling(m)),
            None => assert!(e.failed_mod.is_null(), "{call}: failed_mod"),
        }
        match expected.failed_step() {
            Some(step) => assert_eq!(string(call, "failed_step", e.failed_step), c_spelling(step)),
            None => assert!(e.failed_step.is_null(), "{call}: failed_step"),
        }
        let step_line = expected.step_line().map_or(0, |l| l as u64);
        assert_eq!(e.step_line, step_line, "{call}: step_line");
    }
    let (line, column) = expected
        .location()
        .map_or((0, 0), |l| (l.line as u64, l.column as u64));
    assert_eq!(
        (e.line, e.column),
        (line, column),
        "{call}: line and column of {expected}"
    );
    // SAFETY: stored by the call, freed once.
    unsafe { savechain_error_free(error) };
}

/// Checks a call refused its arguments, and frees the error.
///
/// # Safety
/// As [`check_error`].
unsafe fn check_argument(call: &str, status: savechain_status, error: *mut savechain_error) {
    assert_eq!(status, SAVECHAIN_ERROR_ARGUMENT, "{call}");
    assert!(
        !error.is_null() && error != unset(),
        "{call}: failed with no error"
    );
    // SAFETY: a live error from the call.
    assert_eq!(unsafe { (*error).kind }, SAVECHAIN_ERROR_ARGUMENT, "{call}");
    // SAFETY: stored by the call, freed once.
    unsafe { savechain_error_free(error) };
}

/// The `len` bytes of a text handed out at `p`, which must be followed by a NUL and hold
/// none.
///
/// # Safety
/// `p` is NULL or points to `len + 1` readable bytes.
unsafe fn bytes<'a>(call: &str, p: *const c_char, len: usize) -> &'a [u8] {
    assert!(!p.is_null(), "{call}: NULL text");
    // SAFETY: the caller's promise.
    let with_nul = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len + 1) };
    assert_eq!(with_nul[len], 0, "{call}: no NUL after {len} bytes");
    assert!(
        !with_nul[..len].contains(&0),
        "{call}: a NUL inside the text"
    );
    &with_nul[..len]
}

fn check_format(data: &[u8]) {
    for (style, c_style) in [
        (Style::Pretty, SAVECHAIN_PRETTY),
        (Style::Compact, SAVECHAIN_COMPACT),
        (Style::Decimal, SAVECHAIN_DECIMAL),
    ] {
        let call = &format!("savechain_format({style:?})");
        let (mut out, mut out_len, mut error) = (unset(), usize::MAX, unset());
        // SAFETY: `data` is `data.len()` readable bytes; the out pointers are writable.
        let status = unsafe {
            savechain_format(
                data.as_ptr().cast(),
                data.len(),
                c_style,
                &mut out,
                &mut out_len,
                &mut error,
            )
        };
        match text::reformat(data, style) {
            Ok(expected) => {
                assert_eq!(status, SAVECHAIN_OK, "{call}: the library wrote it");
                assert!(error.is_null(), "{call}: an error on success");
                // SAFETY: a text of `out_len` bytes and a NUL, from the call.
                assert!(
                    unsafe { bytes(call, out, out_len) } == &expected[..],
                    "{call}: other bytes"
                );
            }
            Err(expected) => {
                assert!(out.is_null(), "{call}: out not NULL after a failure");
                // SAFETY: stored by the call.
                unsafe { check_error(call, status, error, &expected) };
            }
        }
        // SAFETY: NULL or the text of the call, freed once.
        unsafe { savechain_text_free(out) };
    }
    let (mut out, mut error) = (unset(), unset());
    // SAFETY: as above; no out_len.
    let status = unsafe {
        savechain_format(
            data.as_ptr().cast(),
            data.len(),
            7,
            &mut out,
            ptr::null_mut(),
            &mut error,
        )
    };
    assert!(out.is_null(), "savechain_format(7): out not NULL");
    // SAFETY: stored by the call.
    unsafe { check_argument("savechain_format(7)", status, error) };
}

fn check_read_meta(data: &[u8]) {
    let expected = Meta::from_slice(data);
    for with_meta in [false, true] {
        let call = &format!("savechain_read_meta(meta_out: {with_meta})");
        let (mut version, mut meta, mut meta_len, mut error) =
            (u64::MAX, unset(), usize::MAX, unset());
        let (meta_out, meta_len_out) = match with_meta {
            true => (&mut meta as *mut _, &mut meta_len as *mut _),
            false => (ptr::null_mut(), ptr::null_mut()),
        };
        // SAFETY: `data` is readable; the out pointers are writable or NULL.
        let status = unsafe {
            savechain_read_meta(
                data.as_ptr().cast(),
                data.len(),
                &mut version,
                meta_out,
                meta_len_out,
                &mut error,
            )
        };
        // With `meta_out` the call writes `meta` too, which may fail on its own.
        let text = match (&expected, with_meta) {
            (Ok(m), true) => text::to_vec_compact(&m.to_value()).map(Some),
            (Ok(_), false) => Ok(None),
            (Err(_), _) => Ok(None),
        };
        match (&expected, &text) {
            (Ok(m), Ok(text)) => {
                assert_eq!(status, SAVECHAIN_OK, "{call}: the library read it");
                assert!(error.is_null(), "{call}: an error on success");
                assert_eq!(version, m.version, "{call}: version");
                if let Some(text) = text {
                    // SAFETY: a text of `meta_len` bytes and a NUL, from the call.
                    assert!(
                        unsafe { bytes(call, meta, meta_len) } == &text[..],
                        "{call}: other meta"
                    );
                }
            }
            (Err(e), _) | (Ok(_), Err(e)) => {
                if with_meta {
                    assert!(meta.is_null(), "{call}: meta_out not NULL after a failure");
                }
                // SAFETY: stored by the call.
                unsafe { check_error(call, status, error, e) };
            }
        }
        if with_meta {
            // SAFETY: NULL or the text of the call, freed once.
            unsafe { savechain_text_free(meta) };
        }
    }
}

fn check_upgrade(data: &[u8]) {
    let chains = chains();
    let call = "savechain_upgrade_text";
    let (mut report, mut error) = (unset(), unset());
    // SAFETY: a live chain, readable `data`, writable out pointers.
    let status = unsafe {
        savechain_upgrade_text(
            chains.c.0,
            data.as_ptr().cast(),
            data.len(),
            0,
            0,
            &mut report,
            &mut error,
        )
    };
    match chains.rust.upgrader().upgrade_text(data, &chains.options) {
        Ok(expected) => {
            assert_eq!(status, SAVECHAIN_OK, "{call}: the library upgraded it");
            assert!(error.is_null(), "{call}: an error on success");
            assert!(!report.is_null() && report != unset(), "{call}: no report");
            // SAFETY: a live report from the call.
            let r = unsafe { &*report };
            assert_eq!(
                (r.from, r.to),
                (expected.from, expected.to),
                "{call}: versions"
            );
            assert_eq!(r.changed, expected.text.is_some(), "{call}: changed");
            // Unchanged, the save comes back as the library writes it: loaded and stored.
            let text = match expected.text {
                Some(text) => text,
                None => savechain::Save::from_slice(data).unwrap().to_vec().unwrap(),
            };
            assert!(
                // SAFETY: a text of `text_len` bytes and a NUL, owned by the report.
                unsafe { bytes(call, r.text, r.text_len) } == &text[..],
                "{call}: other text"
            );
            assert_eq!(r.step_count, expected.steps.len(), "{call}: steps");
            assert_eq!(r.mod_count, expected.mods.len(), "{call}: mods");
        }
        Err(expected) => {
            assert!(report.is_null(), "{call}: report not NULL after a failure");
            // SAFETY: stored by the call.
            unsafe { check_error(call, status, error, &expected) };
        }
    }
    // SAFETY: NULL or the report of the call, freed once.
    unsafe { savechain_report_free(report) };

    let (mut report, mut error) = (unset(), unset());
    // SAFETY: as above.
    let status = unsafe {
        savechain_upgrade_text(
            chains.c.0,
            data.as_ptr().cast(),
            data.len(),
            0,
            0x80,
            &mut report,
            &mut error,
        )
    };
    assert!(report.is_null(), "{call}(flags 0x80): report not NULL");
    // SAFETY: stored by the call.
    unsafe { check_argument("savechain_upgrade_text(flags 0x80)", status, error) };
}

fuzz_target!(|data: &[u8]| {
    check_format(data);
    check_read_meta(data);
    check_upgrade(data);
});
