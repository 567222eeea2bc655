//! Upgrades out to C: save text upgraded in memory, a file upgraded in place or into
//! another path, and the report of either.

use std::ffi::{c_char, CString};
use std::ptr;

use savechain::compress::{Codec, Compression};
use savechain::text::{reformat, Style};
use savechain::upgrade::{
    upgrade_file, FileReport, ModReport, ModStatus, StepReport, Target, UpgradedText,
};
use savechain::Options;

use crate::args;
use crate::chain::{chain_ref, savechain_chain};
use crate::codec;
use crate::error::{guard, savechain_error, savechain_status, Failure};
use crate::strings::Strings;

/// Flag: when a mod's step fails, upgrade the rest of the save and hold that mod's data
/// back at its old version, marked in the save (`meta.mods.<name>.held`), instead of
/// failing the save. The game's own steps always fail the save.
pub const SAVECHAIN_KEEP_GOING: u32 = 1;
/// Flag: fail a step that removes a path in the save it did not declare dropped.
pub const SAVECHAIN_STRICT: u32 = 2;
/// Flag, for `savechain_upgrade_file`: write nothing; the report says which steps would
/// run.
pub const SAVECHAIN_DRY_RUN: u32 = 4;
/// Flag, for `savechain_upgrade_file` with an `out_path`: replace a file found there that
/// holds something else than the upgrade writes, keeping it first beside it as
/// `<name>.v<N>.bak` (a save at version N) or `<name>.bak`. Without it, such a file is
/// refused (`SAVECHAIN_ERROR_USAGE`) and left as it is.
pub const SAVECHAIN_REPLACE_OUTPUT: u32 = 8;
/// Flag, for `savechain_upgrade_file`: store the save written as plain text. Without any
/// `SAVECHAIN_COMPRESS_*` flag, a save keeps the compression it has (a zstd save is
/// written zstd, at zstd's default level), and an output takes its source's.
pub const SAVECHAIN_COMPRESS_NONE: u32 = 16;
/// Flag, for `savechain_upgrade_file`: store the save written as zstd, at its default
/// level (3).
pub const SAVECHAIN_COMPRESS_ZSTD: u32 = 32;
/// Flag, for `savechain_upgrade_file`: store the save written as gzip, at its default
/// level (6).
pub const SAVECHAIN_COMPRESS_GZIP: u32 = 64;

/// One step that ran. Strings are NUL-terminated UTF-8 owned by the report.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct savechain_step {
    /// The step's name, its file's (`0003-hull.lua`).
    pub name: *const c_char,
    /// The version it upgraded from.
    pub from: u64,
    /// The version it made.
    pub to: u64,
    /// `"lua"`, `"rust"` or `"declared"`.
    pub kind: *const c_char,
    /// What the step says it does ("" when it says nothing).
    pub description: *const c_char,
    /// The mod the step is of, or NULL for a step of the game's chain.
    pub mod_name: *const c_char,
    /// The lines the step printed, in order: `printed_count` strings. Savechain shows them
    /// nowhere: the caller does, with the save and the step's name.
    pub printed: *const *const c_char,
    /// How many lines `printed` has.
    pub printed_count: usize,
}

/// Where one mod's data stands after the upgrade.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct savechain_mod {
    /// The mod's name, its key in `meta.mods`.
    pub name: *const c_char,
    /// Whether the save recorded a data version of the mod (`from`).
    pub has_from: bool,
    /// The data version the save had for it (when `has_from`).
    pub from: u64,
    /// Whether the save records one after the upgrade (`to`).
    pub has_to: bool,
    /// The data version it has after (when `has_to`).
    pub to: u64,
    /// `"upgraded"`, `"current"`, `"not-in-the-save"`, `"not-installed"`, `"held"` or
    /// `"waiting"` (the game's upgrade stopped before its latest version).
    pub status: *const c_char,
    /// For a mod held back (`SAVECHAIN_KEEP_GOING`): why; NULL otherwise.
    pub held_because: *const c_char,
    /// For a mod held back because a step failed: what its steps printed, each line as
    /// `step name: line` (`printed_count` of them; NULL when none).
    pub printed: *const *const c_char,
    /// How many lines `printed` has.
    pub printed_count: usize,
}

/// What an upgrade did. Strings are NUL-terminated UTF-8 (`written` and `backup`: the
/// paths' bytes); everything is owned by the report, valid until `savechain_report_free`.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct savechain_report {
    /// The save's version (the game's data version) before.
    pub from: u64,
    /// Its version after (with `SAVECHAIN_DRY_RUN`: would have).
    pub to: u64,
    /// `savechain_upgrade_text`: whether the save's content changed (a step ran, or a
    /// mod's mark was made or dropped); when false, `text` holds what the text given held,
    /// and is the same bytes when that text was canonical. `savechain_upgrade_file`:
    /// whether any step ran (with `SAVECHAIN_DRY_RUN`: would run); `written` says what
    /// was written.
    pub changed: bool,
    /// `savechain_upgrade_text`: the upgraded save's canonical text (pretty), `text_len`
    /// bytes and a NUL, also when nothing changed. NULL for a file.
    pub text: *const c_char,
    /// The length of `text` in bytes, without its NUL.
    pub text_len: usize,
    /// `savechain_upgrade_file`: the file written, or NULL when none was (a save already
    /// current, upgraded in place; a dry run; an `out_path` that already held exactly what
    /// the upgrade writes).
    pub written: *const c_char,
    /// `savechain_upgrade_file` in place: the backup of the original (`<name>.v<N>.bak`);
    /// into `out_path` with `SAVECHAIN_REPLACE_OUTPUT`: the backup of the file that was
    /// there; NULL when none was written.
    pub backup: *const c_char,
    /// The steps that ran, the game's then each mod's (with `SAVECHAIN_DRY_RUN`: would
    /// run): `step_count` of them.
    pub steps: *const savechain_step,
    /// How many steps `steps` has.
    pub step_count: usize,
    /// Every mod installed in the chain or recorded in the save: `mod_count` of them.
    pub mods: *const savechain_mod,
    /// How many mods `mods` has.
    pub mod_count: usize,
}

/// The report handed out, with everything its pointers point into: `public` first.
#[repr(C)]
struct OwnedReport {
    public: savechain_report,
    _strings: Strings,
    _steps: Vec<savechain_step>,
    _printed: Vec<Vec<*const c_char>>,
    _mods: Vec<savechain_mod>,
    _mod_printed: Vec<Vec<*const c_char>>,
}

/// The parts of a report that upgrades of text and of files share.
struct Parts<'a> {
    from: u64,
    to: u64,
    changed: bool,
    steps: &'a [StepReport],
    mods: &'a [ModReport],
}

fn report(parts: Parts<'_>, text: Option<Vec<u8>>, file: Option<&FileReport>) -> Box<OwnedReport> {
    let mut strings = Strings::default();
    let mut printed: Vec<Vec<*const c_char>> = parts
        .steps
        .iter()
        .map(|s| s.printed.iter().map(|line| strings.keep(line)).collect())
        .collect();
    let steps = parts
        .steps
        .iter()
        .zip(&mut printed)
        .map(|(step, lines)| savechain_step {
            name: strings.keep(&step.name),
            from: step.from,
            to: step.to,
            kind: strings.keep(step.kind),
            description: strings.keep(&step.description),
            mod_name: step
                .in_mod
                .as_deref()
                .map_or(ptr::null(), |m| strings.keep(m)),
            printed: array(lines),
            printed_count: lines.len(),
        })
        .collect::<Vec<_>>();
    let mut mod_printed: Vec<Vec<*const c_char>> = parts
        .mods
        .iter()
        .map(|m| {
            m.printed
                .iter()
                .map(|(step, line)| strings.keep(&format!("{step}: {line}")))
                .collect()
        })
        .collect();
    let mods = parts
        .mods
        .iter()
        .zip(&mut mod_printed)
        .map(|(m, lines)| savechain_mod {
            name: strings.keep(&m.name),
            has_from: m.from.is_some(),
            from: m.from.unwrap_or(0),
            has_to: m.to.is_some(),
            to: m.to.unwrap_or(0),
            status: strings.keep(m.status.word()),
            held_because: match &m.status {
                ModStatus::Held(why) => strings.keep(why),
                _ => ptr::null(),
            },
            printed: array(lines),
            printed_count: lines.len(),
        })
        .collect::<Vec<_>>();
    let text_len = text.as_ref().map_or(0, Vec::len);
    // Canonical text escapes every control character: it has no NUL.
    let text = text.map_or(ptr::null(), |t| {
        strings.keep_c(CString::new(t).expect("canonical text has no NUL"))
    });
    let public = savechain_report {
        from: parts.from,
        to: parts.to,
        changed: parts.changed,
        text,
        text_len,
        written: strings.keep_path(file.and_then(|f| f.written.as_deref())),
        backup: strings.keep_path(file.and_then(|f| f.backup.as_deref())),
        steps: array(&steps),
        step_count: steps.len(),
        mods: array(&mods),
        mod_count: mods.len(),
    };
    Box::new(OwnedReport {
        public,
        _strings: strings,
        _steps: steps,
        _printed: printed,
        _mods: mods,
        _mod_printed: mod_printed,
    })
}

/// The failure of an upgrade, with what the steps that ran printed (`step: line`).
fn with_printed(error: savechain::Error, ran: &[StepReport]) -> Failure {
    let printed = ran
        .iter()
        .flat_map(|step| {
            step.printed
                .iter()
                .map(|line| format!("{}: {line}", step.name))
        })
        .collect();
    Failure::Library(error, printed)
}

/// The C array of `items`: NULL when there are none. Its heap buffer does not move when
/// the Vec does.
fn array<T>(items: &[T]) -> *const T {
    match items.is_empty() {
        true => ptr::null(),
        false => items.as_ptr(),
    }
}

/// The run options of a call: the chain's limits, the target version and the flags.
fn options(chain: &savechain_chain, to: u64, flags: u32, allowed: u32) -> Result<Options, Failure> {
    if flags & !allowed != 0 {
        return Err(Failure::Argument(format!(
            "flags has bits this call does not take: {:#x}",
            flags & !allowed
        )));
    }
    let mut options = Options::default();
    options.limits = chain.limits;
    options.target = (to != 0).then_some(to);
    options.keep_going = flags & SAVECHAIN_KEEP_GOING != 0;
    options.strict = flags & SAVECHAIN_STRICT != 0;
    options.replace_outputs = flags & SAVECHAIN_REPLACE_OUTPUT != 0;
    let compress = [
        (SAVECHAIN_COMPRESS_NONE, Codec::Plain),
        (SAVECHAIN_COMPRESS_ZSTD, Codec::Zstd),
        (SAVECHAIN_COMPRESS_GZIP, Codec::Gzip),
    ];
    let mut asked = compress.iter().filter(|(flag, _)| flags & flag != 0);
    options.compression = asked.next().map(|&(_, codec)| Compression::new(codec));
    if asked.next().is_some() {
        return Err(Failure::Argument(
            "flags has more than one SAVECHAIN_COMPRESS_* flag: pass one, or none to keep \
             each save's compression"
                .to_string(),
        ));
    }
    Ok(options)
}

/// Upgrades the save whose text is the `text_len` bytes at `text` (UTF-8; no NUL needed;
/// or that text compressed, zstd or gzip, known by its first bytes, decompressed to at
/// most 1 GiB: the report's text is plain) to version `to` (0: the chain's latest; a save at `to` or past it is left as it is),
/// in memory, as the library's
/// `Upgrader::upgrade_text` does. `flags`: 0, or `SAVECHAIN_KEEP_GOING` and
/// `SAVECHAIN_STRICT` or-ed.
///
/// On success `*report_out` is the report, with the upgraded save's canonical text (a
/// save already current comes back canonical too, its content unchanged), freed by
/// `savechain_report_free`. Text that is not a save, a save newer than the chain or of
/// another game, and a step that fails are errors with the line, column and document path
/// where they apply; the error's file is NULL. Steps run in sandboxes of their own, with
/// the chain's limits: nothing one upgrade's steps do reaches another's.
///
/// # Safety
/// `chain` is a live chain; `text` points to `text_len` readable bytes (or is NULL with
/// `text_len` 0); `report_out` points to writable memory; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn savechain_upgrade_text(
    chain: *const savechain_chain,
    text: *const c_char,
    text_len: usize,
    to: u64,
    flags: u32,
    report_out: *mut *mut savechain_report,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        unsafe { args::cleared(report_out, "report_out") }?;
        // SAFETY: the caller's promise.
        let handle = unsafe { chain_ref(chain) }?;
        // SAFETY: the caller's promise.
        let given = unsafe { args::bytes(text, text_len, "text") }?;
        let plain = codec::text(given)?;
        let given = &*plain;
        let options = options(handle, to, flags, SAVECHAIN_KEEP_GOING | SAVECHAIN_STRICT)?;
        let UpgradedText {
            text,
            from,
            to,
            steps,
            mods,
            ..
        } = {
            let mut upgrader = handle.chain.upgrader();
            let upgraded = upgrader.upgrade_text(given, &options);
            upgraded.map_err(|e| with_printed(e, upgrader.failed_steps()))?
        };
        let changed = text.is_some();
        // A save that did not change is handed back canonical too: an engine stores what
        // it gets, and a hand-edited save comes back in the layout savechain writes.
        let text = match text {
            Some(text) => text,
            None => reformat(given, Style::Pretty)?,
        };
        let parts = Parts {
            from,
            to,
            changed,
            steps: &steps,
            mods: &mods,
        };
        let owned = report(parts, Some(text), None);
        // SAFETY: checked non-NULL above.
        unsafe { *report_out = Box::into_raw(owned).cast::<savechain_report>() };
        Ok(())
    })
}

/// Upgrades the save in the file `path` to version `to` (0: the chain's latest), as the
/// library's `upgrade_file` does: into the file `out_path` (its folder made; the source
/// left as it is; a save already current copied byte for byte), or, when `out_path` is
/// NULL, in place, after keeping the original beside it as `<name>.v<N>.bak` (a different
/// file of that name is never overwritten). Every write is atomic (a temporary file,
/// flushed, renamed): a crash or a failure leaves each file as it was or whole. A save
/// already current is not rewritten in place. An `out_path` that is the save itself
/// (through a link, say) is an error (`SAVECHAIN_ERROR_IO`): that would replace the
/// original without its backup. `flags`: 0, or `SAVECHAIN_KEEP_GOING`, `SAVECHAIN_STRICT`,
/// `SAVECHAIN_DRY_RUN` and `SAVECHAIN_REPLACE_OUTPUT` or-ed, and at most one of
/// `SAVECHAIN_COMPRESS_NONE`, `_ZSTD` and `_GZIP`; a dry run writes nothing and
/// takes no `out_path`; in place, it fails a read-only save with steps to run, as the
/// upgrade would.
///
/// A compressed save (zstd or gzip, known by its first bytes, whatever the file's name) is
/// read as a plain one, and written with the same compression (its backup holds its bytes
/// as they were), unless a `SAVECHAIN_COMPRESS_*` flag says how to store it. Compressed
/// bytes that do not decompress are a `SAVECHAIN_ERROR_COMPRESSED`, and nothing is written.
///
/// A file already at `out_path` is never replaced silently: when it holds exactly what
/// the upgrade writes (an earlier call's output), it is left alone and `written` is NULL;
/// when it holds anything else (a save a player changed there, a file that is not a
/// save), the call fails with `SAVECHAIN_ERROR_USAGE`, naming it, and it is left as it is,
/// unless `SAVECHAIN_REPLACE_OUTPUT`: it is then first kept beside it as a backup
/// (`backup`), then replaced.
///
/// On success `*report_out` is the report (with the paths written), freed by
/// `savechain_report_free`. Errors name the file. On any error the save is as it was,
/// never replaced and never half-written; what may remain is a backup already made (it
/// holds the save as it was read) and the folders of `out_path`. Upgrades of different
/// files may run at once on different threads; two upgrades in place of one file at once
/// wait for each other (an advisory lock on the save, which every savechain writer takes).
///
/// # Safety
/// `chain` is a live chain; `path` a NUL-terminated string; `out_path` NULL or one;
/// `report_out` writable; `error_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn savechain_upgrade_file(
    chain: *const savechain_chain,
    path: *const c_char,
    out_path: *const c_char,
    to: u64,
    flags: u32,
    report_out: *mut *mut savechain_report,
    error_out: *mut *mut savechain_error,
) -> savechain_status {
    guard(error_out, || {
        // SAFETY: the caller's promise.
        unsafe { args::cleared(report_out, "report_out") }?;
        // SAFETY: the caller's promise.
        let handle = unsafe { chain_ref(chain) }?;
        // SAFETY: the caller's promise.
        let path = unsafe { args::path(path, "path") }?;
        let out = match out_path.is_null() {
            true => None,
            // SAFETY: the caller's promise.
            false => Some(unsafe { args::path(out_path, "out_path") }?),
        };
        if out.is_some() && flags & SAVECHAIN_DRY_RUN != 0 {
            return Err(Failure::Argument(
                "out_path is given with SAVECHAIN_DRY_RUN, which writes nothing: pass NULL"
                    .to_string(),
            ));
        }
        let all = SAVECHAIN_KEEP_GOING
            | SAVECHAIN_STRICT
            | SAVECHAIN_DRY_RUN
            | SAVECHAIN_REPLACE_OUTPUT
            | SAVECHAIN_COMPRESS_NONE
            | SAVECHAIN_COMPRESS_ZSTD
            | SAVECHAIN_COMPRESS_GZIP;
        let options = options(handle, to, flags, all)?;
        let target = match (&out, flags & SAVECHAIN_DRY_RUN != 0) {
            (_, true) => Target::Nowhere,
            (Some(out), false) => Target::To(out),
            (None, false) => Target::InPlace { backup: true },
        };
        let mut upgrader = handle.chain.upgrader();
        let file = upgrade_file(&mut upgrader, &path, target, &options)
            .map_err(|e| with_printed(e, upgrader.failed_steps()))?;
        let changed = !file.was_current();
        let parts = Parts {
            from: file.from,
            to: file.to,
            changed,
            steps: &file.steps,
            mods: &file.mods,
        };
        let owned = report(parts, None, Some(&file));
        // SAFETY: checked non-NULL above.
        unsafe { *report_out = Box::into_raw(owned).cast::<savechain_report>() };
        Ok(())
    })
}

/// Frees a report. NULL is ignored.
///
/// # Safety
/// `report` is NULL or a report a savechain call stored, not freed before.
#[no_mangle]
pub unsafe extern "C" fn savechain_report_free(report: *mut savechain_report) {
    if !report.is_null() {
        // SAFETY: the caller's promise: it came from `report`, a Box<OwnedReport>.
        drop(unsafe { Box::from_raw(report.cast::<OwnedReport>()) });
    }
}
