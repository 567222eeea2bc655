//! The chain handle: a game's upgrade chain built from folders of Lua steps and mods,
//! with the limits its steps run under.

use std::ffi::c_char;
use std::time::Duration;

use savechain::lua::Limits;
use savechain::upgrade::Chain;

use crate::args;
use crate::error::{guard, savechain_error, savechain_status, Failure};

/// The least memory a step's Lua state may be given.
const MIN_MEMORY: u64 = 1 << 20;

/// A game's upgrade chain (opaque): its Lua steps, its version, its mods and the limits of
/// their steps. Made by `savechain_chain_new`, set up by the `savechain_chain_set_*` and
/// `savechain_chain_add_*` calls, freed by `savechain_chain_free`. Once set up it may be
/// used by any number of threads at once (it is only read); the calls that set it up
/// must not run while any other call uses it.
#[allow(non_camel_case_types)]
pub struct savechain_chain {
    pub(crate) chain: Chain,
    pub(crate) limits: Limits,
}

/// Makes the chain of the game at version `writer` (a semantic version such as "2.3.0",
/// written into every save it upgrades) from the Lua steps in the folder `steps_dir`
/// (files `NNNN-name.lua`, each upgrading version NNNN to NNNN+1; NULL for a game with no
/// steps yet), checked as the library's `Chain::from_lua_dir` checks it: a gap, a clash, a
/// misnamed file, a step that does not compile, or a `writer` that is not a semantic
/// version is a `SAVECHAIN_ERROR_UPGRADE` (a folder that cannot be read, `_IO`; a recorded
/// shape in its `shapes/` folder that is malformed, or a declared step that contradicts the
/// shapes, `_SHAPE`); one about
/// a step names its file (`file`, the path; `failed_step`, the file's name: the step after
/// a gap, the second of two from one version, the misnamed file; and `step_line` where
/// Lua gives the line; the error's `line` and `column` are about save text, and stay 0).
/// Each step's file is run once here, to get its function, under the default limits
/// (`savechain_chain_set_limits` applies to the steps' runs on saves).
///
/// On success `*chain_out` is the new chain, which the caller frees with
/// `savechain_chain_free`; on failure it is NULL.
///
/// # Safety
/// `writer` and `steps_dir` are NULL or NUL-terminated strings; `chain_out` points to
/// writable memory; `error_out` is NULL or points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn savechain_chain_new(
    writer: *const c_char,
    steps_dir: *const c_char,
    chain_out: *mut *mut savechain_chain,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        unsafe { args::cleared(chain_out, "chain_out") }?;
        // SAFETY: the caller's promise.
        let writer = unsafe { args::text(writer, "writer") }?;
        let chain = match steps_dir.is_null() {
            true => Chain::new(writer, Vec::new())?,
            // SAFETY: the caller's promise.
            false => Chain::from_lua_dir(writer, unsafe { args::path(steps_dir, "steps_dir") }?)?,
        };
        let handle = Box::new(savechain_chain {
            chain,
            limits: Limits::default(),
        });
        // SAFETY: checked non-NULL above.
        unsafe { *chain_out = Box::into_raw(handle) };
        Ok(())
    })
}

/// The chain handle behind `chain`, for reading.
///
/// # Safety
/// `chain` is NULL or a live chain.
pub(crate) unsafe fn chain_ref<'a>(
    chain: *const savechain_chain,
) -> Result<&'a savechain_chain, Failure> {
    // SAFETY: the caller's promise.
    unsafe { chain.as_ref() }.ok_or_else(|| Failure::Argument("chain is NULL".to_string()))
}

/// The chain handle behind `chain`, for setting up.
///
/// # Safety
/// `chain` is NULL or a live chain no other call is using.
unsafe fn chain_mut<'a>(chain: *mut savechain_chain) -> Result<&'a mut savechain_chain, Failure> {
    // SAFETY: the caller's promise.
    unsafe { chain.as_mut() }.ok_or_else(|| Failure::Argument("chain is NULL".to_string()))
}

/// Names the game the chain's saves belong to: the chain then upgrades only saves whose
/// `meta.game` is exactly `game`, and refuses a save that names another game or none. An
/// empty name is an error; on failure the chain is as it was.
///
/// # Safety
/// `chain` is a live chain no other call is using; `game` a NUL-terminated string;
/// `error_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn savechain_chain_set_game(
    chain: *mut savechain_chain,
    game: *const c_char,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        let handle = unsafe { chain_mut(chain) }?;
        // SAFETY: the caller's promise.
        let game = unsafe { args::text(game, "game") }?;
        handle.chain = handle.chain.clone().for_game(game)?;
        Ok(())
    })
}

/// Adds the mods of the folder `mods_dir` (one folder per mod, each with its `mod.json`
/// and its own Lua steps), put in order after the game's steps as the library's
/// `Chain::with_mods_dir` does. A malformed mod, or a mod of a name the chain has, is an
/// error naming its file; on failure the chain is as it was.
///
/// # Safety
/// As `savechain_chain_set_game`.
#[no_mangle]
pub unsafe extern "C" fn savechain_chain_add_mods(
    chain: *mut savechain_chain,
    mods_dir: *const c_char,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        let handle = unsafe { chain_mut(chain) }?;
        // SAFETY: the caller's promise.
        let dir = unsafe { args::path(mods_dir, "mods_dir") }?;
        handle.chain = handle.chain.clone().with_mods_dir(dir)?;
        Ok(())
    })
}

/// Sets what each Lua step may use, per step run: `instructions` (Lua VM instructions),
/// `memory_bytes` (what its Lua state may hold, 1 MiB at least) and `seconds` (processor
/// time). 0 keeps a limit as it is; the defaults are 300 million instructions, 1 GiB and
/// 30 seconds. A step that goes over a limit fails its save alone. Less memory than 1 MiB,
/// and a negative, NaN or infinite `seconds`, are errors, and the chain is then as it was.
///
/// # Safety
/// `chain` is a live chain no other call is using; `error_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn savechain_chain_set_limits(
    chain: *mut savechain_chain,
    instructions: u64,
    memory_bytes: u64,
    seconds: f64,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        let handle = unsafe { chain_mut(chain) }?;
        let time = match seconds {
            0.0 => handle.limits.time,
            s => Duration::try_from_secs_f64(s).map_err(|_| {
                Failure::Argument(format!(
                    "seconds is {s:e}: a limit is a number of seconds above 0 (0 keeps the limit)"
                ))
            })?,
        };
        if memory_bytes != 0 && memory_bytes < MIN_MEMORY {
            return Err(Failure::Argument(format!(
                "memory_bytes is {memory_bytes}: below 1 MiB, no step's Lua state has room to run"
            )));
        }
        if instructions != 0 {
            handle.limits.instructions = instructions;
        }
        if memory_bytes != 0 {
            handle.limits.memory = usize::try_from(memory_bytes).unwrap_or(usize::MAX);
        }
        handle.limits.time = time;
        Ok(())
    })
}

/// The chain's latest version: what its saves are upgraded to. 0 when `chain` is NULL.
///
/// # Safety
/// `chain` is NULL or a live chain.
#[no_mangle]
pub unsafe extern "C" fn savechain_chain_latest(chain: *const savechain_chain) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { chain.as_ref() }.map_or(0, |c| c.chain.latest())
}

/// The oldest version the chain upgrades from (its first step's; 1 for a chain with no
/// steps); a save older than it is refused. 0 when `chain` is NULL.
///
/// # Safety
/// `chain` is NULL or a live chain.
#[no_mangle]
pub unsafe extern "C" fn savechain_chain_oldest(chain: *const savechain_chain) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { chain.as_ref() }.map_or(0, |c| c.chain.oldest())
}

/// Frees a chain. NULL is ignored.
///
/// # Safety
/// `chain` is NULL or a chain from `savechain_chain_new`, not freed before, that no other
/// call is using.
#[no_mangle]
pub unsafe extern "C" fn savechain_chain_free(chain: *mut savechain_chain) {
    if !chain.is_null() {
        // SAFETY: the caller's promise: it came from Box::into_raw.
        drop(unsafe { Box::from_raw(chain) });
    }
}
