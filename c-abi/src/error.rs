//! Errors out to C: the status every call returns, the error struct a caller reads, and the
//! guard that turns a Rust error or panic into both.

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use savechain::{ErrorKind, LuaFailure};

use crate::strings::Strings;

/// What a call did: `SAVECHAIN_OK`, or the kind of problem that stopped it (the kinds of the
/// library's `ErrorKind`, and two of the ABI's own).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum savechain_status {
    /// It worked.
    SAVECHAIN_OK = 0,
    /// Reading or writing a file failed.
    SAVECHAIN_ERROR_IO = 1,
    /// The text is not strict JSON, or not UTF-8.
    SAVECHAIN_ERROR_SYNTAX = 2,
    /// Valid JSON that holds something a save cannot: a malformed tag, an integer out of
    /// range, a duplicate key, nesting that is too deep.
    SAVECHAIN_ERROR_VALUE = 3,
    /// A save whose envelope is broken: `meta.version` negative or too large, `meta.writer`
    /// not a semantic version.
    SAVECHAIN_ERROR_ENVELOPE = 4,
    /// JSON that is not a save at all: its top level is not an object whose `meta` is an
    /// object holding an integer `version` (a settings file, say).
    SAVECHAIN_ERROR_NOT_A_SAVE = 5,
    /// Files that cannot be worked on as asked: `savechain_upgrade_file`'s `out_path`
    /// holds something else than the upgrade writes (see `SAVECHAIN_REPLACE_OUTPUT`).
    SAVECHAIN_ERROR_USAGE = 6,
    /// Lua failed outside a step's run on a save: savechain's own Lua state could not be
    /// made (out of memory).
    SAVECHAIN_ERROR_LUA = 7,
    /// The chain is malformed (a gap, a step that does not compile), a save's version is
    /// outside it (a save newer than the game), or a step failed on the save: then
    /// `lua_failure` says why a Lua step did (an error it raised, a limit it ran out of).
    SAVECHAIN_ERROR_UPGRADE = 8,
    /// Another program wrote the file while it was being upgraded: it is left as that
    /// program made it, and upgrading again works on its new content.
    SAVECHAIN_ERROR_CHANGED = 9,
    /// The call's arguments are wrong: a NULL pointer where one is required, a string that
    /// is not UTF-8, an unknown flag or style, a limit out of range.
    SAVECHAIN_ERROR_ARGUMENT = 10,
    /// A bug in savechain, caught at the boundary (a panic), or memory that ran out for a
    /// text handed out. The library may be used on; a file the call upgraded is left old
    /// or whole, as by any failure.
    SAVECHAIN_ERROR_INTERNAL = 11,
    /// A recorded shape (the `shapes/` folder beside the steps) is malformed, or a declared
    /// step contradicts the shapes of its versions: the chain is not made.
    SAVECHAIN_ERROR_SHAPE = 12,
    /// Compressed bytes (zstd or gzip, known by their first bytes) that do not decompress:
    /// truncated, corrupt, a failed checksum, bytes after the end; or that decompress to
    /// more text than the limit (1 GiB), a decompression bomb. The message names the codec
    /// and the compressed byte where decoding stopped.
    SAVECHAIN_ERROR_COMPRESSED = 13,
}

/// Why Lua failed, for errors of `SAVECHAIN_ERROR_LUA`, and of `SAVECHAIN_ERROR_UPGRADE`
/// that a Lua step caused.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum savechain_lua_failure {
    /// Lua did not fail (or the error says no more).
    SAVECHAIN_LUA_NONE = 0,
    /// A script ran more instructions than its limit.
    SAVECHAIN_LUA_INSTRUCTIONS = 1,
    /// A script needed more memory than its limit.
    SAVECHAIN_LUA_MEMORY = 2,
    /// A script ran longer than its time limit.
    SAVECHAIN_LUA_TIME = 3,
    /// A file did not compile.
    SAVECHAIN_LUA_SYNTAX = 4,
    /// A script raised an error, or did what the sandbox refuses.
    SAVECHAIN_LUA_RUNTIME = 5,
    /// A script left a value a save cannot hold (a function, say).
    SAVECHAIN_LUA_UNSAVEABLE = 6,
}

/// An error, as a caller reads it. Every string is NUL-terminated UTF-8 owned by the error,
/// valid until `savechain_error_free`.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct savechain_error {
    /// The kind of problem; never `SAVECHAIN_OK`.
    pub kind: savechain_status,
    /// The whole error as savechain prints it, for a log or a player:
    /// `file:line:column: at data.ship.hull: message`, leaving out what is not known.
    pub text: *const c_char,
    /// What went wrong and what was expected, alone.
    pub message: *const c_char,
    /// The file the error is about, or NULL.
    pub file: *const c_char,
    /// The line in the text, counted from 1; 0 when the error is not about a place in a
    /// text.
    pub line: u64,
    /// The column in that line, in characters, counted from 1; 0 when not known.
    pub column: u64,
    /// The path inside the document (`data.ship.hull`, `data.items[3]`), or "" for the
    /// whole document or an error about no part of one.
    pub path: *const c_char,
    /// The mod whose step or data failed, or NULL.
    pub failed_mod: *const c_char,
    /// The step the error is about (its file's name, `0003-hull.lua`), or NULL: it failed
    /// on the save, or its file does not compile.
    pub failed_step: *const c_char,
    /// The line of that step's file the failure is at, when Lua says; 0 otherwise.
    pub step_line: u64,
    /// What the steps that ran printed before the upgrade failed, the failed step's
    /// lines last, each as `step name: line` (`printed_count` of them; NULL when none): a
    /// step's `print` is most wanted when it fails.
    pub printed: *const *const c_char,
    /// How many lines `printed` has.
    pub printed_count: usize,
    /// Why Lua failed, or `SAVECHAIN_LUA_NONE`.
    pub lua_failure: savechain_lua_failure,
}

/// The error handed out, with the strings its pointers point into: `public` first, so a
/// pointer to it is a pointer to the struct the caller reads.
#[repr(C)]
struct OwnedError {
    public: savechain_error,
    _strings: Strings,
    _printed: Vec<*const c_char>,
}

/// Why a call failed, before it is handed out.
pub(crate) enum Failure {
    /// The library refused; the lines the steps that ran printed, when an upgrade did.
    Library(savechain::Error, Vec<String>),
    /// The arguments were wrong.
    Argument(String),
    /// A panic was caught.
    Internal(String),
}

impl From<savechain::Error> for Failure {
    fn from(e: savechain::Error) -> Failure {
        Failure::Library(e, Vec::new())
    }
}

fn status_of(kind: ErrorKind) -> savechain_status {
    use savechain_status::*;
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
        ErrorKind::Shape => SAVECHAIN_ERROR_SHAPE,
        ErrorKind::Compressed => SAVECHAIN_ERROR_COMPRESSED,
        // A kind added to the library later, before this crate maps it.
        _ => SAVECHAIN_ERROR_INTERNAL,
    }
}

fn lua_failure_of(failure: Option<LuaFailure>) -> savechain_lua_failure {
    use savechain_lua_failure::*;
    match failure {
        None => SAVECHAIN_LUA_NONE,
        Some(LuaFailure::InstructionBudget) => SAVECHAIN_LUA_INSTRUCTIONS,
        Some(LuaFailure::MemoryLimit) => SAVECHAIN_LUA_MEMORY,
        Some(LuaFailure::TimeLimit) => SAVECHAIN_LUA_TIME,
        Some(LuaFailure::Syntax) => SAVECHAIN_LUA_SYNTAX,
        Some(LuaFailure::Runtime) => SAVECHAIN_LUA_RUNTIME,
        Some(LuaFailure::Unsaveable) => SAVECHAIN_LUA_UNSAVEABLE,
        Some(_) => SAVECHAIN_LUA_RUNTIME,
    }
}

impl Failure {
    fn status(&self) -> savechain_status {
        match self {
            Failure::Library(e, _) => status_of(e.kind()),
            Failure::Argument(_) => savechain_status::SAVECHAIN_ERROR_ARGUMENT,
            Failure::Internal(_) => savechain_status::SAVECHAIN_ERROR_INTERNAL,
        }
    }

    /// The error struct of this failure, allocated for the caller.
    fn into_c(self) -> *mut savechain_error {
        let kind = self.status();
        let mut strings = Strings::default();
        let printed: Vec<*const c_char> = match &self {
            Failure::Library(_, lines) => lines.iter().map(|l| strings.keep(l)).collect(),
            _ => Vec::new(),
        };
        let printed_array = match printed.is_empty() {
            true => ptr::null(),
            false => printed.as_ptr(),
        };
        let mut keep = |text: &str| strings.keep(text);
        let public = match &self {
            Failure::Library(e, _) => {
                let location = e.location();
                let file = e.file().map(|f| f.to_string_lossy().into_owned());
                // How a C caller asks for what the library's message leaves to the tool.
                let hint = match e.output_backup() {
                    Some(_) => "; to replace it, pass SAVECHAIN_REPLACE_OUTPUT",
                    None => "",
                };
                savechain_error {
                    kind,
                    text: keep(&format!("{e}{hint}")),
                    message: keep(&format!("{}{hint}", e.message())),
                    file: file.as_deref().map_or(ptr::null(), &mut keep),
                    line: location.map_or(0, |l| l.line as u64),
                    column: location.map_or(0, |l| l.column as u64),
                    path: match e.path().is_root() {
                        true => keep(""),
                        false => keep(&e.path().to_string()),
                    },
                    failed_mod: e.failed_mod().map_or(ptr::null(), &mut keep),
                    failed_step: e.failed_step().map_or(ptr::null(), &mut keep),
                    step_line: e.step_line().map_or(0, |l| l as u64),
                    printed: printed_array,
                    printed_count: printed.len(),
                    lua_failure: lua_failure_of(e.lua_failure()),
                }
            }
            Failure::Argument(message) | Failure::Internal(message) => {
                let message = keep(message);
                savechain_error {
                    kind,
                    text: message,
                    message,
                    file: ptr::null(),
                    line: 0,
                    column: 0,
                    path: keep(""),
                    failed_mod: ptr::null(),
                    failed_step: ptr::null(),
                    step_line: 0,
                    printed: ptr::null(),
                    printed_count: 0,
                    lua_failure: savechain_lua_failure::SAVECHAIN_LUA_NONE,
                }
            }
        };
        let owned = Box::new(OwnedError {
            public,
            _strings: strings,
            _printed: printed,
        });
        Box::into_raw(owned).cast::<savechain_error>()
    }
}

/// Runs `body` at the boundary: its failure, or a panic inside it, becomes the status
/// returned and, when `error_out` is not NULL, an error stored there (NULL on success).
pub(crate) fn guard(
    error_out: *mut *mut savechain_error,
    body: impl FnOnce() -> Result<(), Failure>,
) -> savechain_status {
    if !error_out.is_null() {
        // SAFETY: the caller passes NULL or a pointer it may write through (the header).
        unsafe { *error_out = ptr::null_mut() };
    }
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return savechain_status::SAVECHAIN_OK,
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Failure::Internal(format!(
                "savechain failed inside (a bug; please report it): {what}"
            ))
        }
    };
    let status = failure.status();
    if !error_out.is_null() {
        // A panic while making the error (out of memory) must not cross the boundary
        // either: the caller then has the status alone.
        if let Ok(error) = catch_unwind(AssertUnwindSafe(|| failure.into_c())) {
            // SAFETY: as above.
            unsafe { *error_out = error };
        }
    }
    status
}

/// A word naming `status`, for logs: "ok", "io", "syntax", "value", "envelope",
/// "not-a-save" (as `save-upgrade --report` spells it), "usage", "lua", "upgrade",
/// "changed", "argument", "internal", "shape", "compressed"; "unknown" for a value that
/// is none of these. The string is static.
#[no_mangle]
pub extern "C" fn savechain_status_name(status: c_int) -> *const c_char {
    use savechain_status::*;
    let name: &'static CStr = match status {
        s if s == SAVECHAIN_OK as c_int => c"ok",
        s if s == SAVECHAIN_ERROR_IO as c_int => c"io",
        s if s == SAVECHAIN_ERROR_SYNTAX as c_int => c"syntax",
        s if s == SAVECHAIN_ERROR_VALUE as c_int => c"value",
        s if s == SAVECHAIN_ERROR_ENVELOPE as c_int => c"envelope",
        s if s == SAVECHAIN_ERROR_NOT_A_SAVE as c_int => c"not-a-save",
        s if s == SAVECHAIN_ERROR_USAGE as c_int => c"usage",
        s if s == SAVECHAIN_ERROR_LUA as c_int => c"lua",
        s if s == SAVECHAIN_ERROR_UPGRADE as c_int => c"upgrade",
        s if s == SAVECHAIN_ERROR_CHANGED as c_int => c"changed",
        s if s == SAVECHAIN_ERROR_ARGUMENT as c_int => c"argument",
        s if s == SAVECHAIN_ERROR_INTERNAL as c_int => c"internal",
        s if s == SAVECHAIN_ERROR_SHAPE as c_int => c"shape",
        s if s == SAVECHAIN_ERROR_COMPRESSED as c_int => c"compressed",
        _ => c"unknown",
    };
    name.as_ptr()
}

/// Frees an error a call stored. NULL is ignored.
///
/// # Safety
/// `error` is NULL or an error a savechain call stored, not freed before.
#[no_mangle]
pub unsafe extern "C" fn savechain_error_free(error: *mut savechain_error) {
    if !error.is_null() {
        // SAFETY: the caller's promise: it came from `Failure::into_c`, a Box<OwnedError>.
        drop(unsafe { Box::from_raw(error.cast::<OwnedError>()) });
    }
}
