//! The C ABI against the library it wraps: the same results and the same errors for the
//! same input (property tests over random documents, and damaged ones); wrong arguments
//! refused with SAVECHAIN_ERROR_ARGUMENT, never a crash; one chain shared by threads.

// Results hold an error read field by field, compared whole: their size does not matter.
#![allow(clippy::result_large_err)]

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use proptest::prelude::*;
use savechain::text::Style;
use savechain::upgrade::{upgrade_file, Chain, Target};
use savechain::{Map, Meta, Options, Value};
use savechain_c::*;

/// An error the ABI stored, read into Rust, and freed.
#[derive(Debug, PartialEq)]
struct Read {
    kind: savechain_status,
    text: String,
    message: String,
    file: Option<String>,
    line: u64,
    column: u64,
    path: String,
    step: Option<String>,
    step_line: u64,
}

/// The array of `count` items at `p`, which is NULL exactly when `count` is 0 (the header).
///
/// # Safety
/// `p` is an array of a live report.
unsafe fn c_array<'a, T>(p: *const T, count: usize) -> &'a [T] {
    assert_eq!(
        p.is_null(),
        count == 0,
        "an array is NULL when empty, and only then"
    );
    match count {
        0 => &[],
        // SAFETY: the caller's promise.
        _ => unsafe { std::slice::from_raw_parts(p, count) },
    }
}

fn string(p: *const c_char) -> String {
    // SAFETY: strings of a live error or report.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

fn take_error(status: savechain_status, error: *mut savechain_error) -> Read {
    assert_ne!(status, savechain_status::SAVECHAIN_OK);
    assert!(!error.is_null());
    // SAFETY: the error a call just stored.
    let e = unsafe { &*error };
    assert_eq!(e.kind, status);
    let read = Read {
        kind: e.kind,
        text: string(e.text),
        message: string(e.message),
        file: (!e.file.is_null()).then(|| string(e.file)),
        line: e.line,
        column: e.column,
        path: string(e.path),
        step: (!e.failed_step.is_null()).then(|| string(e.failed_step)),
        step_line: e.step_line,
    };
    // SAFETY: stored by the call, freed once.
    unsafe { savechain_error_free(error) };
    read
}

/// What the ABI's error of the library's `e` must be.
fn expected(e: &savechain::Error) -> Read {
    Read {
        kind: status_of(e.kind()),
        text: e.to_string(),
        message: e.message().to_string(),
        file: e.file().map(|f| f.to_string_lossy().into_owned()),
        line: e.line().unwrap_or(0) as u64,
        column: e.column().unwrap_or(0) as u64,
        path: if e.path().is_root() {
            String::new()
        } else {
            e.path().to_string()
        },
        step: e.failed_step().map(str::to_string),
        step_line: e.step_line().unwrap_or(0) as u64,
    }
}

fn status_of(kind: savechain::ErrorKind) -> savechain_status {
    use savechain::ErrorKind as K;
    use savechain_status::*;
    match kind {
        K::Io => SAVECHAIN_ERROR_IO,
        K::Syntax => SAVECHAIN_ERROR_SYNTAX,
        K::Value => SAVECHAIN_ERROR_VALUE,
        K::Envelope => SAVECHAIN_ERROR_ENVELOPE,
        K::NotASave => SAVECHAIN_ERROR_NOT_A_SAVE,
        K::Usage => SAVECHAIN_ERROR_USAGE,
        K::Lua => SAVECHAIN_ERROR_LUA,
        K::Upgrade => SAVECHAIN_ERROR_UPGRADE,
        K::Changed => SAVECHAIN_ERROR_CHANGED,
        K::Shape => SAVECHAIN_ERROR_SHAPE,
        K::Compressed => SAVECHAIN_ERROR_COMPRESSED,
        _ => unreachable!("a kind this test does not know"),
    }
}

/// `savechain_format` of `text`, as the library's result.
fn abi_format(text: &[u8], style: u32) -> Result<Vec<u8>, Read> {
    let mut out: *mut c_char = ptr::null_mut();
    let mut len = usize::MAX;
    let mut error = ptr::null_mut();
    // SAFETY: valid pointers and lengths.
    let status = unsafe {
        savechain_format(
            text.as_ptr().cast(),
            text.len(),
            style,
            &mut out,
            &mut len,
            &mut error,
        )
    };
    if status != savechain_status::SAVECHAIN_OK {
        assert!(out.is_null());
        return Err(take_error(status, error));
    }
    assert!(error.is_null());
    // SAFETY: the text the call handed out, NUL-terminated.
    let bytes = unsafe { CStr::from_ptr(out) }.to_bytes().to_vec();
    assert_eq!(bytes.len(), len, "the length is the text's, up to its NUL");
    // SAFETY: handed out by the call, freed once.
    unsafe { savechain_text_free(out) };
    Ok(bytes)
}

fn abi_meta(text: &[u8]) -> Result<(u64, Vec<u8>), Read> {
    let mut version = 0;
    let mut meta: *mut c_char = ptr::null_mut();
    let mut len = 0;
    let mut error = ptr::null_mut();
    // SAFETY: valid pointers and lengths.
    let status = unsafe {
        savechain_read_meta(
            text.as_ptr().cast(),
            text.len(),
            &mut version,
            &mut meta,
            &mut len,
            &mut error,
        )
    };
    if status != savechain_status::SAVECHAIN_OK {
        return Err(take_error(status, error));
    }
    // SAFETY: handed out by the call.
    let bytes = unsafe { std::slice::from_raw_parts(meta.cast::<u8>(), len) }.to_vec();
    // SAFETY: handed out by the call, freed once.
    unsafe { savechain_text_free(meta) };
    Ok((version, bytes))
}

fn library_format(text: &[u8], style: u32) -> Result<Vec<u8>, Read> {
    let style = [Style::Pretty, Style::Compact, Style::Decimal][style as usize];
    savechain::text::reformat(text, style).map_err(|e| expected(&e))
}

fn library_meta(text: &[u8]) -> Result<(u64, Vec<u8>), Read> {
    let meta = Meta::from_slice(text).map_err(|e| expected(&e))?;
    Ok((
        meta.version,
        savechain::text::to_vec_compact(&meta.to_value()).unwrap(),
    ))
}

/// Any value of the format, small.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<u64>().prop_map(Value::from),
        any::<u64>().prop_map(|bits| Value::Double(f64::from_bits(bits))),
        ".{0,8}".prop_map(Value::String),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(Value::Bytes),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\u{0}\u{e9}]{0,4}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map>())),
        ]
    })
}

/// The text of a save holding `data`, then damaged at `at` (a byte replaced, or the text
/// cut) when `damage` says so.
fn save_text(data: Value, version: u64, damage: Option<(usize, u8, bool)>) -> Vec<u8> {
    let mut text = savechain::Save::new(version, data).to_vec().unwrap();
    if let Some((at, byte, cut)) = damage {
        let at = at % text.len();
        match cut {
            true => text.truncate(at),
            false => text[at] = byte,
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn format_and_read_meta_are_the_librarys(
        data in any_value(),
        version in 0u64..20,
        damage in proptest::option::of((any::<usize>(), any::<u8>(), any::<bool>())),
    ) {
        let text = save_text(data, version, damage);
        for style in [SAVECHAIN_PRETTY, SAVECHAIN_COMPACT, SAVECHAIN_DECIMAL] {
            prop_assert_eq!(abi_format(&text, style), library_format(&text, style));
        }
        prop_assert_eq!(abi_meta(&text), library_meta(&text));
    }
}

/// A folder with a chain of two Lua steps, one printing.
fn steps_folder() -> tempfile::TempDir {
    folder(&[
        (
            "0001-hp.lua",
            "return function(data) print('hp', data.hp) data.health = (data.hp or 0) * 10; data.hp = nil end",
        ),
        (
            "0002-name.lua",
            "return function(data) data.name = data.name or 'nobody' end",
        ),
    ])
}

/// A temporary folder holding `files` (path, text), their folders made.
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn c(text: &str) -> CString {
    CString::new(text).unwrap()
}

fn abi_chain(dir: &std::path::Path) -> *mut savechain_chain {
    let mut chain = ptr::null_mut();
    let path = c(dir.to_str().unwrap());
    // SAFETY: valid strings and out pointers.
    let status = unsafe {
        savechain_chain_new(
            c"1.2.0".as_ptr(),
            path.as_ptr(),
            &mut chain,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, savechain_status::SAVECHAIN_OK);
    chain
}

/// `savechain_upgrade_text`: (from, to, changed, text, step names, printed lines).
type Upgraded = (
    u64,
    u64,
    bool,
    Option<Vec<u8>>,
    Vec<String>,
    Vec<Vec<String>>,
);

fn abi_upgrade(
    chain: *const savechain_chain,
    text: &[u8],
    to: u64,
    flags: u32,
) -> Result<Upgraded, Read> {
    let mut report = ptr::null_mut();
    let mut error = ptr::null_mut();
    // SAFETY: a live chain, valid pointers and lengths.
    let status = unsafe {
        savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            to,
            flags,
            &mut report,
            &mut error,
        )
    };
    if status != savechain_status::SAVECHAIN_OK {
        assert!(report.is_null());
        return Err(take_error(status, error));
    }
    // SAFETY: the report the call stored.
    let r = unsafe { &*report };
    // SAFETY: the report's arrays, of the lengths it gives.
    let steps = unsafe { c_array(r.steps, r.step_count) };
    let names = steps.iter().map(|s| string(s.name)).collect();
    let printed = steps
        .iter()
        // SAFETY: as above.
        .map(|s| {
            unsafe { c_array(s.printed, s.printed_count) }
                .iter()
                .map(|&p| string(p))
                .collect()
        })
        .collect();
    // SAFETY: as above.
    let text = (!r.text.is_null())
        .then(|| unsafe { std::slice::from_raw_parts(r.text.cast::<u8>(), r.text_len) }.to_vec());
    let out = (r.from, r.to, r.changed, text, names, printed);
    // SAFETY: stored by the call, freed once.
    unsafe { savechain_report_free(report) };
    Ok(out)
}

fn library_upgrade(chain: &Chain, text: &[u8], to: u64) -> Result<Upgraded, Read> {
    let mut options = Options::default();
    options.target = (to != 0).then_some(to);
    let u = chain
        .upgrader()
        .upgrade_text(text, &options)
        .map_err(|e| expected(&e))?;
    let names = u.steps.iter().map(|s| s.name.clone()).collect();
    let printed = u.steps.iter().map(|s| s.printed.clone()).collect();
    // The ABI hands back canonical text also when nothing changed: the save as the library
    // stores it.
    let changed = u.text.is_some();
    let canonical = u
        .text
        .unwrap_or_else(|| savechain::Save::from_slice(text).unwrap().to_vec().unwrap());
    Ok((u.from, u.to, changed, Some(canonical), names, printed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn upgrades_of_text_are_the_librarys(
        data in any_value(),
        version in 0u64..5,
        to in 0u64..4,
        damage in proptest::option::of((any::<usize>(), any::<u8>(), any::<bool>())),
    ) {
        let dir = steps_folder();
        let chain = abi_chain(dir.path());
        let library = Chain::from_lua_dir("1.2.0", dir.path()).unwrap();
        let text = save_text(data, version, damage);
        prop_assert_eq!(abi_upgrade(chain, &text, to, 0), library_upgrade(&library, &text, to));
        // SAFETY: made above, freed once.
        unsafe { savechain_chain_free(chain) };
    }
}

#[test]
fn a_file_upgrades_in_place_with_its_backup_and_into_another_path_as_the_librarys() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let library = Chain::from_lua_dir("1.2.0", steps.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let original = br#"{"meta": {"version": 1}, "data": {"hp": 4}}"#;
    for name in ["abi.json", "lib.json"] {
        std::fs::write(dir.path().join(name), original).unwrap();
    }

    let abi_path = c(dir.path().join("abi.json").to_str().unwrap());
    let mut report = ptr::null_mut();
    // SAFETY: a live chain, valid strings and out pointers.
    let status = unsafe {
        savechain_upgrade_file(
            chain,
            abi_path.as_ptr(),
            ptr::null(),
            0,
            0,
            &mut report,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, savechain_status::SAVECHAIN_OK);
    // SAFETY: the report the call stored.
    let r = unsafe { &*report };
    assert_eq!((r.from, r.to, r.changed, r.step_count), (1, 3, true, 2));
    assert!(r.text.is_null());
    assert_eq!(
        string(r.written),
        dir.path().join("abi.json").to_str().unwrap()
    );
    assert_eq!(
        string(r.backup),
        dir.path().join("abi.json.v1.bak").to_str().unwrap()
    );
    // SAFETY: stored by the call, freed once.
    unsafe { savechain_report_free(report) };
    let lib = upgrade_file(
        &mut library.upgrader(),
        dir.path().join("lib.json"),
        Target::InPlace { backup: true },
        &Options::default(),
    )
    .unwrap();
    assert_eq!(lib.backup, Some(dir.path().join("lib.json.v1.bak")));
    assert_eq!(
        std::fs::read(dir.path().join("abi.json")).unwrap(),
        std::fs::read(dir.path().join("lib.json")).unwrap()
    );
    assert_eq!(
        std::fs::read(dir.path().join("abi.json.v1.bak")).unwrap(),
        original
    );

    // Into another path: the source is left alone; the output is the same save.
    std::fs::write(dir.path().join("old.json"), original).unwrap();
    let source = c(dir.path().join("old.json").to_str().unwrap());
    let out = c(dir.path().join("new/old.json").to_str().unwrap());
    // SAFETY: as above.
    let status = unsafe {
        savechain_upgrade_file(
            chain,
            source.as_ptr(),
            out.as_ptr(),
            0,
            0,
            &mut report,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, savechain_status::SAVECHAIN_OK);
    // SAFETY: as above.
    unsafe { savechain_report_free(report) };
    assert_eq!(
        std::fs::read(dir.path().join("old.json")).unwrap(),
        original
    );
    assert_eq!(
        std::fs::read(dir.path().join("new/old.json")).unwrap(),
        std::fs::read(dir.path().join("lib.json")).unwrap()
    );

    // A dry run writes nothing, and says what would run.
    std::fs::write(dir.path().join("dry.json"), original).unwrap();
    let dry = c(dir.path().join("dry.json").to_str().unwrap());
    // SAFETY: as above.
    let status = unsafe {
        savechain_upgrade_file(
            chain,
            dry.as_ptr(),
            ptr::null(),
            0,
            SAVECHAIN_DRY_RUN,
            &mut report,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, savechain_status::SAVECHAIN_OK);
    // SAFETY: as above.
    let r = unsafe { &*report };
    assert_eq!(
        (r.step_count, r.written, r.backup),
        (2, ptr::null(), ptr::null())
    );
    // SAFETY: as above.
    unsafe { savechain_report_free(report) };
    assert_eq!(
        std::fs::read(dir.path().join("dry.json")).unwrap(),
        original
    );
    assert!(!dir.path().join("dry.json.v1.bak").exists());

    // A file that fails is left as it was, and the error names it.
    std::fs::write(
        dir.path().join("bad.json"),
        b"{\"meta\": {\"version\": 1}, \"data\": [1,]}",
    )
    .unwrap();
    let bad = c(dir.path().join("bad.json").to_str().unwrap());
    let mut error = ptr::null_mut();
    // SAFETY: as above.
    let status = unsafe {
        savechain_upgrade_file(
            chain,
            bad.as_ptr(),
            ptr::null(),
            0,
            0,
            &mut report,
            &mut error,
        )
    };
    assert!(report.is_null());
    let e = take_error(status, error);
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_SYNTAX);
    assert_eq!(
        e.file.as_deref(),
        Some(dir.path().join("bad.json").to_str().unwrap())
    );
    assert_eq!((e.line, e.column, e.path.as_str()), (1, 37, "data"));
    assert!(!dir.path().join("bad.json.v1.bak").exists());
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

/// Calls with wrong arguments, each refused with SAVECHAIN_ERROR_ARGUMENT and a message
/// naming the argument.
#[test]
fn wrong_arguments_are_errors_not_crashes() {
    use savechain_status::SAVECHAIN_ERROR_ARGUMENT as ARGUMENT;
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let text = br#"{"meta": {"version": 1}, "data": {}}"#;
    let mut error = ptr::null_mut();
    let mut report = ptr::null_mut();
    let mut out: *mut c_char = ptr::null_mut();
    let mut made = ptr::null_mut();
    let refused = |status, error, about: &str| {
        let e = take_error(status, error);
        assert_eq!(e.kind, ARGUMENT, "{}", e.text);
        assert!(
            e.message.contains(about),
            "{} does not name {about}",
            e.message
        );
    };
    // SAFETY: each call is given what the header allows, or NULLs and wrong values it says
    // are refused.
    unsafe {
        let s = savechain_chain_new(ptr::null(), ptr::null(), &mut made, &mut error);
        refused(s, error, "writer");
        let s = savechain_chain_new(c"1.0.0".as_ptr(), ptr::null(), ptr::null_mut(), &mut error);
        refused(s, error, "chain_out");
        let s = savechain_chain_new(c"1.0.0\xff".as_ptr(), ptr::null(), &mut made, &mut error);
        refused(s, error, "writer is not UTF-8");
        assert!(made.is_null());
        let s = savechain_upgrade_text(
            ptr::null(),
            text.as_ptr().cast(),
            text.len(),
            0,
            0,
            &mut report,
            &mut error,
        );
        refused(s, error, "chain");
        let s = savechain_upgrade_text(chain, ptr::null(), 10, 0, 0, &mut report, &mut error);
        refused(s, error, "text is NULL with a length of 10");
        let s = savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            usize::MAX,
            0,
            0,
            &mut report,
            &mut error,
        );
        refused(s, error, "length of text");
        let s = savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            0,
            0x80,
            &mut report,
            &mut error,
        );
        refused(s, error, "flags");
        let s = savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            0,
            SAVECHAIN_DRY_RUN,
            &mut report,
            &mut error,
        );
        refused(s, error, "flags");
        let s = savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            0,
            0,
            ptr::null_mut(),
            &mut error,
        );
        refused(s, error, "report_out");
        let s = savechain_upgrade_file(
            chain,
            ptr::null(),
            ptr::null(),
            0,
            0,
            &mut report,
            &mut error,
        );
        refused(s, error, "path");
        let s = savechain_upgrade_file(
            chain,
            c"".as_ptr(),
            ptr::null(),
            0,
            0,
            &mut report,
            &mut error,
        );
        refused(s, error, "path is empty");
        let s = savechain_format(
            text.as_ptr().cast(),
            text.len(),
            3,
            &mut out,
            ptr::null_mut(),
            &mut error,
        );
        refused(s, error, "style");
        let s = savechain_read_meta(
            text.as_ptr().cast(),
            text.len(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            &mut error,
        );
        refused(s, error, "version_out");
        for seconds in [f64::NAN, -1.0, f64::INFINITY, 1e300] {
            let s = savechain_chain_set_limits(chain, 0, 0, seconds, &mut error);
            refused(s, error, "seconds");
        }
        let s = savechain_chain_set_limits(chain, 0, 1000, 0.0, &mut error);
        refused(s, error, "memory_bytes");
        let s = savechain_chain_set_game(chain, ptr::null(), &mut error);
        refused(s, error, "game");
        // Without an error_out, the status alone.
        let s = savechain_chain_set_game(ptr::null_mut(), c"x".as_ptr(), ptr::null_mut());
        assert_eq!(s, ARGUMENT);
        // The free functions and the getters take NULL.
        savechain_chain_free(ptr::null_mut());
        savechain_report_free(ptr::null_mut());
        savechain_error_free(ptr::null_mut());
        savechain_text_free(ptr::null_mut());
        assert_eq!(savechain_chain_latest(ptr::null()), 0);
        assert_eq!(
            CStr::from_ptr(savechain_status_name(999)).to_str(),
            Ok("unknown")
        );
        assert_eq!(
            CStr::from_ptr(savechain_status_name(2)).to_str(),
            Ok("syntax")
        );
        // Text may be given without a pointer when it is empty: a syntax error, not a crash.
        let s = savechain_format(
            ptr::null(),
            0,
            SAVECHAIN_PRETTY,
            &mut out,
            ptr::null_mut(),
            &mut error,
        );
        assert_eq!(
            take_error(s, error).kind,
            savechain_status::SAVECHAIN_ERROR_SYNTAX
        );
        savechain_chain_free(chain);
    }
}

#[test]
fn set_up_calls_that_fail_leave_the_chain_as_it_was() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let mut error = ptr::null_mut();
    // SAFETY: a live chain, valid strings.
    unsafe {
        let s = savechain_chain_set_game(chain, c"  ".as_ptr(), &mut error);
        assert_eq!(
            take_error(s, error).kind,
            savechain_status::SAVECHAIN_ERROR_UPGRADE
        );
        let s = savechain_chain_add_mods(chain, c"/no/such/folder".as_ptr(), &mut error);
        assert_eq!(
            take_error(s, error).kind,
            savechain_status::SAVECHAIN_ERROR_IO
        );
        // The chain still upgrades saves that name no game.
        let text = br#"{"meta": {"version": 1}, "data": {}}"#;
        let upgraded = abi_upgrade(chain, text, 0, 0).unwrap();
        assert_eq!((upgraded.0, upgraded.1), (1, 3));
        // The least memory a step may be given is enough to run one.
        let s = savechain_chain_set_limits(chain, 0, 1 << 20, 0.0, &mut error);
        assert_eq!(s, savechain_status::SAVECHAIN_OK);
        assert!(abi_upgrade(chain, text, 0, 0).is_ok());
        // Limits apply to the steps that run afterwards.
        let spin = tempfile::tempdir().unwrap();
        std::fs::write(
            spin.path().join("0001-spin.lua"),
            "return function() while true do end end",
        )
        .unwrap();
        let spinning = abi_chain(spin.path());
        assert_eq!(
            savechain_chain_set_limits(spinning, 100_000, 0, 0.0, ptr::null_mut()),
            savechain_status::SAVECHAIN_OK
        );
        let mut report = ptr::null_mut();
        let s = savechain_upgrade_text(
            spinning,
            text.as_ptr().cast(),
            text.len(),
            0,
            0,
            &mut report,
            &mut error,
        );
        let e = take_error(s, error);
        assert!(
            e.text.contains("more than 100000 Lua instructions"),
            "{}",
            e.text
        );
        savechain_chain_free(spinning);
        savechain_chain_free(chain);
    }
}

#[test]
fn a_chain_is_shared_by_threads_and_no_save_sees_anothers_steps() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("0001-count.lua"),
        "local calls = 0\nreturn function(data) calls = calls + 1; SEEN = (SEEN or 0) + 1; data.calls, data.seen = calls, SEEN end",
    )
    .unwrap();
    struct Shared(*mut savechain_chain);
    // SAFETY: the header: a set-up chain is only read, by any number of threads.
    unsafe impl Sync for Shared {}
    let chain = Shared(abi_chain(dir.path()));
    std::thread::scope(|scope| {
        for t in 0..4 {
            let chain = &chain;
            scope.spawn(move || {
                for i in 0..25 {
                    let text = format!(
                        r#"{{"meta": {{"version": 1}}, "data": {{"thread": {t}, "i": {i}}}}}"#
                    );
                    let upgraded = abi_upgrade(chain.0, text.as_bytes(), 0, 0).unwrap();
                    let save = savechain::Save::from_slice(&upgraded.3.unwrap()).unwrap();
                    assert_eq!(save.data["calls"].as_i64(), Some(1));
                    assert_eq!(save.data["seen"].as_i64(), Some(1));
                    assert_eq!(save.data["i"].as_i64(), Some(i));
                }
            });
        }
    });
    // SAFETY: made above, no thread uses it any more.
    unsafe { savechain_chain_free(chain.0) };
}

#[test]
fn a_current_save_comes_back_canonical_and_unchanged() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    // At the latest version, typed by hand: keys out of order, a decimal double.
    let text = b"{\"meta\":{\"version\":3},\"data\":{\"z\":1,\"a\":[\"d\",96.5]}}";
    let (from, to, changed, canonical, steps_run, _) = abi_upgrade(chain, text, 0, 0).unwrap();
    assert_eq!((from, to, changed, steps_run.len()), (3, 3, false, 0));
    assert_eq!(
        String::from_utf8(canonical.unwrap()).unwrap(),
        "{\n  \"meta\": {\n    \"version\": 3\n  },\n  \"data\": {\n    \"a\": [\"d\", \"0x1.82p+6\"],\n    \"z\": 1\n  }\n}\n"
    );
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

#[test]
fn formatted_saves_have_meta_first() {
    // As format revision 2 wrote it, data first.
    let old = b"{\"data\":{\"meta\":1,\"a\":2},\"meta\":{\"version\":3}}";
    let pretty = abi_format(old, SAVECHAIN_PRETTY).unwrap();
    assert_eq!(
        String::from_utf8(pretty).unwrap(),
        "{\n  \"meta\": {\n    \"version\": 3\n  },\n  \"data\": {\n    \"a\": 2,\n    \"meta\": 1\n  }\n}\n"
    );
    let compact = abi_format(old, SAVECHAIN_COMPACT).unwrap();
    assert_eq!(
        String::from_utf8(compact).unwrap(),
        r#"{"meta":{"version":3},"data":{"a":2,"meta":1}}"#
    );
}

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn abi_chain_of(writer: &str, dir: &std::path::Path) -> *mut savechain_chain {
    let mut chain = ptr::null_mut();
    let (writer, path) = (c(writer), c(dir.to_str().unwrap()));
    // SAFETY: valid strings and out pointers.
    let status =
        unsafe { savechain_chain_new(writer.as_ptr(), path.as_ptr(), &mut chain, ptr::null_mut()) };
    assert_eq!(status, savechain_status::SAVECHAIN_OK);
    chain
}

/// A mod of a report: (name, from, to, status, held because).
type ModRow = (String, Option<u64>, Option<u64>, String, Option<String>);

fn mods_of(r: &savechain_report) -> Vec<ModRow> {
    // SAFETY: the report's array of the length it gives.
    unsafe { c_array(r.mods, r.mod_count) }
        .iter()
        .map(|m| {
            (
                string(m.name),
                m.has_from.then_some(m.from),
                m.has_to.then_some(m.to),
                string(m.status),
                (!m.held_because.is_null()).then(|| string(m.held_because)),
            )
        })
        .collect()
}

#[test]
fn mods_upgrade_and_are_reported_as_the_library_reports_them() {
    let chain = abi_chain_of("0.1.0", &repo().join("upgrades"));
    let mods = c(repo().join("mods").to_str().unwrap());
    // SAFETY: a live chain no other call uses; valid strings.
    unsafe {
        let s = savechain_chain_set_game(chain, c"Starlane Traders".as_ptr(), ptr::null_mut());
        assert_eq!(s, savechain_status::SAVECHAIN_OK);
        let s = savechain_chain_add_mods(chain, mods.as_ptr(), ptr::null_mut());
        assert_eq!(s, savechain_status::SAVECHAIN_OK);
    }
    let library = Chain::from_lua_dir("0.1.0", repo().join("upgrades"))
        .unwrap()
        .for_game("Starlane Traders")
        .unwrap()
        .with_mods_dir(repo().join("mods"))
        .unwrap();
    for version in ["v1", "v2", "v3"] {
        let fixture = format!("mods/cartographer/fixtures/{version}/charted.json");
        let text = std::fs::read(repo().join(fixture)).unwrap();
        let mut report = ptr::null_mut();
        // SAFETY: a live chain, valid pointers and lengths.
        let status = unsafe {
            savechain_upgrade_text(
                chain,
                text.as_ptr().cast(),
                text.len(),
                0,
                0,
                &mut report,
                ptr::null_mut(),
            )
        };
        assert_eq!(status, savechain_status::SAVECHAIN_OK, "{version}");
        // SAFETY: the report the call stored.
        let r = unsafe { &*report };
        let expected = library
            .upgrader()
            .upgrade_text(&text, &Options::default())
            .unwrap();
        let rows: Vec<ModRow> = expected
            .mods
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    m.from,
                    m.to,
                    m.status.word().to_string(),
                    None,
                )
            })
            .collect();
        assert_eq!(mods_of(r), rows, "{version}");
        let want = format!("mods/cartographer/expected/{version}/charted.json");
        let want = std::fs::read(repo().join(want)).unwrap();
        // SAFETY: the report's text.
        let got = unsafe { std::slice::from_raw_parts(r.text.cast::<u8>(), r.text_len) };
        assert!(got == &want[..], "{version}: not the expected form");
        // SAFETY: the report's array.
        let steps = unsafe { c_array(r.steps, r.step_count) };
        for step in steps.iter().filter(|s| !s.mod_name.is_null()) {
            assert_eq!(string(step.mod_name), "cartographer");
        }
        // SAFETY: freed once.
        unsafe { savechain_report_free(report) };
    }
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

#[test]
fn keep_going_holds_a_failing_mod_back_and_strict_fails_an_undeclared_removal() {
    let dir = folder(&[
        (
            "steps/0001-cut.lua",
            "return function(data) data.gone = nil end",
        ),
        (
            "mods/broken/mod.json",
            r#"{"name": "broken", "release": "1.0.0"}"#,
        ),
        (
            "mods/broken/0001-oops.lua",
            "return function(data) error('no fuel') end",
        ),
    ]);
    let chain = abi_chain_of("1.0.0", &dir.path().join("steps"));
    let mods = c(dir.path().join("mods").to_str().unwrap());
    // SAFETY: a live chain, valid string.
    let s = unsafe { savechain_chain_add_mods(chain, mods.as_ptr(), ptr::null_mut()) };
    assert_eq!(s, savechain_status::SAVECHAIN_OK);
    let text = br#"{"meta": {"version": 1, "mods": {"broken": {"version": 1}}}, "data": {"mods": {"broken": {}}}}"#;

    // Without a flag the mod fails the save.
    let e = abi_upgrade(chain, text, 0, 0).unwrap_err();
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_UPGRADE);
    assert!(e.text.contains("no fuel"), "{}", e.text);
    // With SAVECHAIN_KEEP_GOING it is held back, and the rest upgraded.
    let mut report = ptr::null_mut();
    // SAFETY: a live chain, valid pointers.
    let status = unsafe {
        savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            0,
            SAVECHAIN_KEEP_GOING,
            &mut report,
            ptr::null_mut(),
        )
    };
    assert_eq!(status, savechain_status::SAVECHAIN_OK);
    // SAFETY: the report the call stored.
    let rows = mods_of(unsafe { &*report });
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].0.as_str(), rows[0].3.as_str()), ("broken", "held"));
    assert!(
        rows[0].4.as_deref().unwrap().contains("no fuel"),
        "{:?}",
        rows[0].4
    );
    // SAFETY: freed once.
    unsafe { savechain_report_free(report) };

    // SAVECHAIN_STRICT: the game's step removed `gone` without declaring it.
    let plain = br#"{"meta": {"version": 1}, "data": {"gone": 1}}"#;
    assert!(abi_upgrade(chain, plain, 0, 0).is_ok());
    let e = abi_upgrade(chain, plain, 0, SAVECHAIN_STRICT).unwrap_err();
    assert!(e.text.contains("gone"), "{}", e.text);
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

#[test]
fn out_pointers_are_cleared_on_failure_and_error_out_on_success() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    // Not NULL, never read: a call that leaves an out pointer as it found it shows.
    let junk = ptr::dangling_mut::<c_char>();
    let mut report = ptr::dangling_mut::<savechain_report>();
    let mut error = ptr::dangling_mut::<savechain_error>();
    let text = b"not a save";
    // SAFETY: a live chain; out pointers are only written.
    unsafe {
        let s = savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            0,
            0,
            &mut report,
            &mut error,
        );
        assert!(report.is_null());
        take_error(s, error);
        let mut out = junk;
        let s = savechain_format(
            text.as_ptr().cast(),
            text.len(),
            SAVECHAIN_PRETTY,
            &mut out,
            ptr::null_mut(),
            &mut error,
        );
        assert!(out.is_null());
        take_error(s, error);
        let mut meta = junk;
        let mut version = 77;
        let s = savechain_read_meta(
            text.as_ptr().cast(),
            text.len(),
            &mut version,
            &mut meta,
            ptr::null_mut(),
            &mut error,
        );
        assert!(meta.is_null());
        assert_eq!(version, 77, "written on success only");
        take_error(s, error);
        let mut made = ptr::dangling_mut::<savechain_chain>();
        let s = savechain_chain_new(
            c"not a version".as_ptr(),
            ptr::null(),
            &mut made,
            &mut error,
        );
        assert!(made.is_null());
        take_error(s, error);
        error = ptr::dangling_mut::<savechain_error>();
        let save = br#"{"meta": {"version": 3}, "data": {}}"#;
        let s = savechain_upgrade_text(
            chain,
            save.as_ptr().cast(),
            save.len(),
            0,
            0,
            &mut report,
            &mut error,
        );
        assert_eq!(s, savechain_status::SAVECHAIN_OK);
        assert!(error.is_null());
        savechain_report_free(report);
        savechain_chain_free(chain);
    }
}

#[test]
fn an_output_that_is_the_save_itself_and_a_dry_run_with_an_output_are_refused() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let dir = tempfile::tempdir().unwrap();
    let original = br#"{"meta": {"version": 1}, "data": {"hp": 4}}"#;
    std::fs::write(dir.path().join("s.json"), original).unwrap();
    std::os::unix::fs::symlink(dir.path().join("s.json"), dir.path().join("link.json")).unwrap();
    let path = c(dir.path().join("s.json").to_str().unwrap());
    let link = c(dir.path().join("link.json").to_str().unwrap());
    let mut report = ptr::null_mut();
    let mut error = ptr::null_mut();
    // SAFETY: a live chain, valid strings and out pointers.
    unsafe {
        let s = savechain_upgrade_file(
            chain,
            path.as_ptr(),
            link.as_ptr(),
            0,
            0,
            &mut report,
            &mut error,
        );
        let e = take_error(s, error);
        assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_IO);
        assert!(e.message.contains("is the save itself"), "{}", e.message);
        let s = savechain_upgrade_file(
            chain,
            path.as_ptr(),
            link.as_ptr(),
            0,
            SAVECHAIN_DRY_RUN,
            &mut report,
            &mut error,
        );
        assert_eq!(
            take_error(s, error).kind,
            savechain_status::SAVECHAIN_ERROR_ARGUMENT
        );
        savechain_chain_free(chain);
    }
    assert_eq!(std::fs::read(dir.path().join("s.json")).unwrap(), original);
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(names, 2, "only the save and its link");
}

#[test]
fn a_step_that_fails_or_does_not_compile_is_named_with_its_line() {
    let typo = tempfile::tempdir().unwrap();
    std::fs::write(
        typo.path().join("0001-typo.lua"),
        "return function(data)\n  data.x = = 1\nend\n",
    )
    .unwrap();
    let mut made = ptr::null_mut();
    let mut error = ptr::null_mut();
    let dir = c(typo.path().to_str().unwrap());
    // SAFETY: valid strings and out pointers.
    let s = unsafe { savechain_chain_new(c"1.0.0".as_ptr(), dir.as_ptr(), &mut made, &mut error) };
    let e = take_error(s, error);
    assert_eq!((e.step.as_deref(), e.step_line), (Some("0001-typo.lua"), 2));
    assert_eq!((e.line, e.column), (0, 0), "about no save text");
    assert!(e.file.unwrap().ends_with("0001-typo.lua"));

    let hull = tempfile::tempdir().unwrap();
    std::fs::write(
        hull.path().join("0001-hull.lua"),
        "return function(data)\n  data.hull = data.hull * 2\nend\n",
    )
    .unwrap();
    let chain = abi_chain(hull.path());
    let e = abi_upgrade(chain, br#"{"meta": {"version": 1}, "data": {}}"#, 0, 0).unwrap_err();
    assert_eq!((e.step.as_deref(), e.step_line), (Some("0001-hull.lua"), 2));
    assert!(e.text.contains("failed on line 2"), "{}", e.text);
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

#[test]
fn what_a_failing_step_printed_comes_with_its_error_and_with_its_held_mod() {
    let dir = folder(&[
        (
            "steps/0001-ok.lua",
            "return function(data) print('first', 1) end",
        ),
        (
            "steps/0002-bad.lua",
            "return function(data) print('counter is', data.n) error('broken') end",
        ),
        (
            "mods/flaky/mod.json",
            r#"{"name": "flaky", "release": "1.0.0"}"#,
        ),
        (
            "mods/flaky/0001-x.lua",
            "return function(data) print('flaky here') error('no') end",
        ),
    ]);
    let chain = abi_chain_of("1.0.0", &dir.path().join("steps"));
    let text = br#"{"meta": {"version": 1}, "data": {"n": 7}}"#;
    let mut report = ptr::null_mut();
    let mut error = ptr::null_mut();
    // SAFETY: a live chain, valid pointers; the error's array of the length it gives.
    unsafe {
        let s = savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            0,
            0,
            &mut report,
            &mut error,
        );
        assert_eq!(s, savechain_status::SAVECHAIN_ERROR_UPGRADE);
        let e = &*error;
        let lines: Vec<String> = c_array(e.printed, e.printed_count)
            .iter()
            .map(|&p| string(p))
            .collect();
        assert_eq!(
            lines,
            ["0001-ok.lua: first\t1", "0002-bad.lua: counter is\t7"]
        );
        savechain_error_free(error);
    }
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };

    // A mod held back keeps what its steps printed in its row of the report.
    let game = tempfile::tempdir().unwrap();
    let chain = abi_chain_of("1.0.0", game.path());
    let mods = c(dir.path().join("mods").to_str().unwrap());
    let text = br#"{"meta": {"version": 1, "mods": {"flaky": {"version": 1}}}, "data": {"mods": {"flaky": {}}}}"#;
    // SAFETY: a live chain, valid pointers; the report's arrays of the lengths they give.
    unsafe {
        assert_eq!(
            savechain_chain_add_mods(chain, mods.as_ptr(), ptr::null_mut()),
            savechain_status::SAVECHAIN_OK
        );
        let s = savechain_upgrade_text(
            chain,
            text.as_ptr().cast(),
            text.len(),
            0,
            SAVECHAIN_KEEP_GOING,
            &mut report,
            &mut error,
        );
        assert_eq!(s, savechain_status::SAVECHAIN_OK);
        let m = &c_array((*report).mods, (*report).mod_count)[0];
        let lines: Vec<String> = c_array(m.printed, m.printed_count)
            .iter()
            .map(|&p| string(p))
            .collect();
        assert_eq!(lines, ["0001-x.lua: flaky here"]);
        savechain_report_free(report);
        savechain_chain_free(chain);
    }
}

fn store(
    chain: *const savechain_chain,
    path: &std::path::Path,
    data: &[u8],
    meta: Option<&[u8]>,
) -> Result<(), Read> {
    let path = c(path.to_str().unwrap());
    let (meta_ptr, meta_len) = meta.map_or((ptr::null(), 0), |m| (m.as_ptr().cast(), m.len()));
    let mut error = ptr::null_mut();
    // SAFETY: a live chain, valid pointers and lengths.
    let s = unsafe {
        savechain_store_file(
            chain,
            path.as_ptr(),
            data.as_ptr().cast(),
            data.len(),
            meta_ptr,
            meta_len,
            &mut error,
        )
    };
    match s {
        savechain_status::SAVECHAIN_OK => Ok(()),
        _ => Err(take_error(s, error)),
    }
}

#[test]
fn a_game_stores_new_and_loaded_saves_as_the_library_does() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let library = Chain::from_lua_dir("1.2.0", steps.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = br#"{"hp": 3, "pos": [1.5, ["d", "-0x0p+0"]], "big": 18446744073709551615}"#;

    // A new save: meta made by the chain.
    store(chain, &dir.path().join("new.json"), data, None).unwrap();
    let expected = library
        .new_save(savechain::text::from_slice(data).unwrap())
        .to_vec()
        .unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("new.json")).unwrap(),
        expected
    );

    // A loaded save stored again: its meta's other members kept.
    let loaded = br#"{"meta": {"version": 1, "slot": 2}, "data": {"hp": 3}}"#;
    let upgraded = abi_upgrade(chain, loaded, 0, 0).unwrap().3.unwrap();
    let (_, meta) = abi_meta(&upgraded).unwrap();
    store(
        chain,
        &dir.path().join("again.json"),
        br#"{"hp": 4}"#,
        Some(&meta),
    )
    .unwrap();
    let again = savechain::Save::load(dir.path().join("again.json")).unwrap();
    assert_eq!(again.meta.version, 3);
    assert_eq!(again.meta.extra["slot"].as_u64(), Some(2));
    assert!(again.meta.extra.get("history").is_some());
    assert_eq!(again.data["hp"].as_i64(), Some(4));

    // A meta of another version is refused: its data's layout would be mislabelled.
    let e = store(
        chain,
        &dir.path().join("old.json"),
        br#"{"hp": 4}"#,
        Some(br#"{"version": 1}"#),
    )
    .unwrap_err();
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_ARGUMENT);
    assert!(e.message.contains("version 1"), "{}", e.message);
    // Data that is not JSON is refused where it breaks; nothing is written.
    let e = store(chain, &dir.path().join("bad.json"), b"{\"hp\": 3,\n}", None).unwrap_err();
    assert_eq!(
        (e.kind, e.line, e.column),
        (savechain_status::SAVECHAIN_ERROR_SYNTAX, 2, 1)
    );
    let e = store(
        chain,
        &dir.path().join("bad.json"),
        br#"{"hp": 3}"#,
        Some(b"[]"),
    )
    .unwrap_err();
    // A meta that is no object makes no save (docs/FORMAT.md, section 1).
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_NOT_A_SAVE);
    assert!(!dir.path().join("old.json").exists() && !dir.path().join("bad.json").exists());
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

/// The texts and errors handed out, and their free functions, without Lua: small enough
/// for Miri (`cargo +nightly miri test -p savechain-c --test abi without_lua`), which
/// checks the ownership of what the ABI hands out under Rust's aliasing rules.
#[test]
fn texts_and_errors_without_lua() {
    let save = br#"{"meta": {"version": 2, "slot": 1}, "data": {"hp": ["d", "0x1.8p+1"]}}"#;
    for style in [SAVECHAIN_PRETTY, SAVECHAIN_COMPACT, SAVECHAIN_DECIMAL] {
        assert_eq!(abi_format(save, style), library_format(save, style));
    }
    assert_eq!(abi_meta(save), library_meta(save));
    let broken = b"{\"meta\": {\"version\": 2}, \"data\": {\"a\\u0000b\": 1, \"a\\u0000b\": 2}}";
    let e = abi_format(broken, SAVECHAIN_PRETTY).unwrap_err();
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_VALUE);
    assert!(e.text.contains(r#"duplicate key "a\0b""#), "{}", e.text);
    assert_eq!(
        abi_meta(b"[1, 2]").unwrap_err().kind,
        savechain_status::SAVECHAIN_ERROR_NOT_A_SAVE
    );
}

/// Finding 2 of issue 28, through the C ABI: upgrading into an output again leaves it
/// alone when it holds the upgrade (`written` NULL), refuses it by name when it holds
/// anything else (a player changed it), and with SAVECHAIN_REPLACE_OUTPUT replaces it
/// after keeping it as a backup.
#[test]
fn an_output_is_never_replaced_silently() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let dir = tempfile::tempdir().unwrap();
    let original = br#"{"meta": {"version": 1}, "data": {"hp": 4}}"#;
    std::fs::write(dir.path().join("old.json"), original).unwrap();
    let source = c(dir.path().join("old.json").to_str().unwrap());
    let out_path = dir.path().join("new.json");
    let out = c(out_path.to_str().unwrap());
    let upgrade = |flags: u32| {
        let mut report = ptr::null_mut();
        let mut error = ptr::null_mut();
        // SAFETY: a live chain, valid strings and out pointers.
        let status = unsafe {
            savechain_upgrade_file(
                chain,
                source.as_ptr(),
                out.as_ptr(),
                0,
                flags,
                &mut report,
                &mut error,
            )
        };
        if status != savechain_status::SAVECHAIN_OK {
            return Err(take_error(status, error));
        }
        // SAFETY: the report the call stored.
        let r = unsafe { &*report };
        let paths = (
            (!r.written.is_null()).then(|| string(r.written)),
            (!r.backup.is_null()).then(|| string(r.backup)),
        );
        // SAFETY: stored by the call, freed once.
        unsafe { savechain_report_free(report) };
        Ok(paths)
    };
    let first = upgrade(0).unwrap();
    assert_eq!(first, (Some(out_path.to_str().unwrap().to_string()), None));
    let upgraded = std::fs::read(&out_path).unwrap();
    // Again: the output holds the upgrade already; nothing is written.
    let mtime = std::fs::metadata(&out_path).unwrap().modified().unwrap();
    assert_eq!(upgrade(0).unwrap(), (None, None));
    assert_eq!(
        std::fs::metadata(&out_path).unwrap().modified().unwrap(),
        mtime
    );
    // Played on: refused, naming the output, and left as it is.
    let played = br#"{"meta": {"version": 3}, "data": {"health": 99}}"#;
    std::fs::write(&out_path, played).unwrap();
    let e = upgrade(0).unwrap_err();
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_USAGE);
    assert!(
        e.message.contains(out_path.to_str().unwrap())
            && e.message.contains("pass SAVECHAIN_REPLACE_OUTPUT")
            && !e.message.contains("Options::"),
        "{}",
        e.message
    );
    assert_eq!(std::fs::read(&out_path).unwrap(), played);
    // Asked to: replaced, what was there kept as new.json.v3.bak.
    let backup = dir.path().join("new.json.v3.bak");
    let replaced = upgrade(SAVECHAIN_REPLACE_OUTPUT).unwrap();
    assert_eq!(replaced.1.as_deref(), backup.to_str());
    assert_eq!(std::fs::read(&out_path).unwrap(), upgraded);
    assert_eq!(std::fs::read(&backup).unwrap(), played);
    assert_eq!(
        std::fs::read(dir.path().join("old.json")).unwrap(),
        original
    );
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

/// Finding 6 of issue 28, through the C ABI: a dry run fails a read-only save with steps to
/// run, as the upgrade in place would, and passes one that is current.
#[cfg(unix)]
#[test]
fn a_dry_run_fails_a_read_only_save_as_the_upgrade_would() {
    use std::os::unix::fs::PermissionsExt;
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let dir = tempfile::tempdir().unwrap();
    let dry_run = |name: &str, text: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let path = c(path.to_str().unwrap());
        let mut report = ptr::null_mut();
        let mut error = ptr::null_mut();
        // SAFETY: a live chain, valid strings and out pointers.
        let status = unsafe {
            savechain_upgrade_file(
                chain,
                path.as_ptr(),
                ptr::null(),
                0,
                SAVECHAIN_DRY_RUN,
                &mut report,
                &mut error,
            )
        };
        if status != savechain_status::SAVECHAIN_OK {
            return Err(take_error(status, error));
        }
        // SAFETY: stored by the call, freed once.
        unsafe { savechain_report_free(report) };
        Ok(())
    };
    let e = dry_run(
        "old.json",
        br#"{"meta": {"version": 1}, "data": {"hp": 4}}"#,
    )
    .unwrap_err();
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_IO);
    assert!(e.message.contains("the save is read-only"), "{}", e.message);
    dry_run("current.json", br#"{"meta": {"version": 3}, "data": {}}"#).unwrap();
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

/// A chain's set-up errors name the step file they are about, as the header says, in
/// `file` (its path) and `failed_step` (its name): the step after a gap, the second of two
/// from one version, a misnamed file; as the library's own errors do.
#[test]
fn chain_set_up_errors_name_the_step_and_its_file() {
    let body = "return function(data) end";
    for (files, named) in [
        (
            &[("0001-a.lua", body), ("0003-c.lua", body)][..],
            "0003-c.lua",
        ),
        (
            &[("0001-a.lua", body), ("0001-b.lua", body)][..],
            "0001-b.lua",
        ),
        (
            &[("0001-a.lua", body), ("0002_B.lua", body)][..],
            "0002_B.lua",
        ),
        (&[("0000-zero.lua", body)][..], "0000-zero.lua"),
    ] {
        let dir = folder(files);
        let mut made = ptr::null_mut();
        let mut error = ptr::null_mut();
        let path = c(dir.path().to_str().unwrap());
        // SAFETY: valid strings and out pointers.
        let s =
            unsafe { savechain_chain_new(c"1.0.0".as_ptr(), path.as_ptr(), &mut made, &mut error) };
        let e = take_error(s, error);
        assert!(made.is_null());
        assert_eq!(
            e.kind,
            savechain_status::SAVECHAIN_ERROR_UPGRADE,
            "{}",
            e.text
        );
        assert_eq!(e.step.as_deref(), Some(named), "{}", e.text);
        let file = dir.path().join(named);
        assert_eq!(e.file.as_deref(), file.to_str(), "{}", e.text);
        assert!(e.text.starts_with(file.to_str().unwrap()), "{}", e.text);
        let library = Chain::from_lua_dir("1.0.0", dir.path()).unwrap_err();
        assert_eq!(e, expected(&library));
    }
}

/// `meta` NULL with a length is the caller's mistake, refused as the same mistake with
/// `data` is; it does not store a new save in place of the loaded one (its history lost).
#[test]
fn store_file_refuses_a_null_meta_with_a_length() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slot.json");
    let target = c(path.to_str().unwrap());
    let data = br#"{"hp": 4}"#;
    let mut error = ptr::null_mut();
    // SAFETY: a live chain; meta NULL with a length, the mistake under test.
    let s = unsafe {
        savechain_store_file(
            chain,
            target.as_ptr(),
            data.as_ptr().cast(),
            data.len(),
            ptr::null(),
            12,
            &mut error,
        )
    };
    let e = take_error(s, error);
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_ARGUMENT);
    assert!(
        e.message.contains("meta is NULL with a length of 12"),
        "{}",
        e.message
    );
    assert!(!path.exists());
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

/// A mod's status is spelt as `save-upgrade --report` and the Lua module spell it
/// (`not-in-the-save`, `not-installed`: one word each), so that a status read from one
/// interface can be looked for in another's output.
#[test]
fn mod_statuses_are_spelt_as_the_report_spells_them() {
    let game = || {
        let chain = abi_chain_of("0.1.0", &repo().join("upgrades"));
        // SAFETY: a live chain no other call uses; a valid string.
        let s = unsafe {
            savechain_chain_set_game(chain, c"Starlane Traders".as_ptr(), ptr::null_mut())
        };
        assert_eq!(s, savechain_status::SAVECHAIN_OK);
        chain
    };
    let with_mods = game();
    let mods = c(repo().join("mods").to_str().unwrap());
    // SAFETY: a live chain no other call uses; a valid string.
    let s = unsafe { savechain_chain_add_mods(with_mods, mods.as_ptr(), ptr::null_mut()) };
    assert_eq!(s, savechain_status::SAVECHAIN_OK);
    let without_mods = game();
    let charted = repo().join("mods/cartographer/fixtures/v1/charted.json");
    let charted = std::fs::read(charted).unwrap();
    let plain = std::fs::read(repo().join("fixtures/v1/small.json")).unwrap();
    for (chain, text, status) in [
        (with_mods, &charted, "upgraded"),
        (with_mods, &plain, "not-in-the-save"),
        (without_mods, &charted, "not-installed"),
    ] {
        let mut report = ptr::null_mut();
        // SAFETY: a live chain, valid pointers and lengths.
        let s = unsafe {
            savechain_upgrade_text(
                chain,
                text.as_ptr().cast(),
                text.len(),
                0,
                0,
                &mut report,
                ptr::null_mut(),
            )
        };
        assert_eq!(s, savechain_status::SAVECHAIN_OK);
        // SAFETY: the report the call stored.
        let rows = mods_of(unsafe { &*report });
        assert_eq!(rows[0].3, status, "{rows:?}");
        // SAFETY: freed once.
        unsafe { savechain_report_free(report) };
    }
    // SAFETY: made above, freed once each.
    unsafe {
        savechain_chain_free(with_mods);
        savechain_chain_free(without_mods);
    }
}

/// The name of the status of JSON that is not a save is the word `save-upgrade --report`
/// gives such a file, `not-a-save`; the others are one word already.
#[test]
fn status_names_are_spelt_as_the_report_spells_them() {
    use savechain_status::*;
    let name = |status: savechain_status| {
        // SAFETY: a static string.
        unsafe { CStr::from_ptr(savechain_status_name(status as i32)) }
            .to_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(name(SAVECHAIN_ERROR_NOT_A_SAVE), "not-a-save");
    assert_eq!(name(SAVECHAIN_ERROR_COMPRESSED), "compressed");
    assert_eq!(SAVECHAIN_ERROR_COMPRESSED as i32, 13);
    for status in [
        SAVECHAIN_OK,
        SAVECHAIN_ERROR_IO,
        SAVECHAIN_ERROR_SYNTAX,
        SAVECHAIN_ERROR_VALUE,
        SAVECHAIN_ERROR_ENVELOPE,
        SAVECHAIN_ERROR_NOT_A_SAVE,
        SAVECHAIN_ERROR_USAGE,
        SAVECHAIN_ERROR_LUA,
        SAVECHAIN_ERROR_UPGRADE,
        SAVECHAIN_ERROR_CHANGED,
        SAVECHAIN_ERROR_ARGUMENT,
        SAVECHAIN_ERROR_INTERNAL,
        SAVECHAIN_ERROR_SHAPE,
        SAVECHAIN_ERROR_COMPRESSED,
    ] {
        assert!(!name(status).contains(' '), "{}", name(status));
    }
}

#[test]
fn a_steps_folder_whose_shapes_do_not_fit_is_a_shape_error_naming_the_step() {
    // Version 1's recorded shape has no `hp` to rename.
    let dir = folder(&[
        (
            "0001-health.json",
            r#"{"changes": [{"rename": "hp", "to": "health"}]}"#,
        ),
        (
            "shapes/0001.json",
            r#"{"data": {"object": {"life": "u32"}}, "savechain_shape": 1, "version": 1}"#,
        ),
    ]);
    let steps = c(dir.path().to_str().unwrap());
    let (mut made, mut error) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: valid strings and out-pointers.
    let status =
        unsafe { savechain_chain_new(c"1.1.0".as_ptr(), steps.as_ptr(), &mut made, &mut error) };
    assert_eq!(status, savechain_status::SAVECHAIN_ERROR_SHAPE);
    assert!(made.is_null());
    let read = take_error(status, error);
    assert!(
        read.message.contains("0001-health.json"),
        "{}",
        read.message
    );
    assert!(read.message.contains("hp"), "{}", read.message);
    // SAFETY: a status the library defines.
    let name = unsafe { CStr::from_ptr(savechain_status_name(status as i32)) };
    assert_eq!(name.to_str().unwrap(), "shape");
}

const CODECS: [savechain::compress::Codec; 2] = [
    savechain::compress::Codec::Zstd,
    savechain::compress::Codec::Gzip,
];

fn packed(text: &[u8], codec: savechain::compress::Codec) -> Vec<u8> {
    use savechain::compress::{compress, Compression};
    compress(text, Compression::new(codec))
}

/// Every call that takes save text takes it compressed, giving what it gives for the
/// text; damaged compressed bytes are SAVECHAIN_ERROR_COMPRESSED.
#[test]
fn the_text_calls_take_compressed_bytes() {
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let text = br#"{"meta": {"version": 1, "slot": 2}, "data": {"hp": 4, "x": ["d", "0x1.8p+1"]}}"#;
    for codec in CODECS {
        let bytes = packed(text, codec);
        for style in [SAVECHAIN_PRETTY, SAVECHAIN_COMPACT, SAVECHAIN_DECIMAL] {
            assert_eq!(
                abi_format(&bytes, style),
                library_format(text, style),
                "{codec}"
            );
        }
        assert_eq!(abi_meta(&bytes), library_meta(text));
        assert_eq!(
            abi_upgrade(chain, &bytes, 0, 0),
            abi_upgrade(chain, text, 0, 0)
        );
        // A current save comes back as its plain canonical text.
        let current = abi_upgrade(chain, text, 0, 0).unwrap().3.unwrap();
        let again = abi_upgrade(chain, &packed(&current, codec), 0, 0).unwrap();
        assert_eq!((again.2, again.3), (false, Some(current)));

        let cut = &bytes[..bytes.len() - 5];
        let errors = [
            abi_format(cut, SAVECHAIN_PRETTY).unwrap_err(),
            abi_meta(cut).unwrap_err(),
            abi_upgrade(chain, cut, 0, 0).unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_COMPRESSED);
            assert!(
                e.message.contains(&format!("the {codec} data is damaged")),
                "{}",
                e.message
            );
        }
    }
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

fn store_compressed(
    chain: *const savechain_chain,
    path: &std::path::Path,
    data: &[u8],
    codec: u32,
    level: i32,
) -> Result<(), Read> {
    let path = c(path.to_str().unwrap());
    let mut error = ptr::null_mut();
    // SAFETY: a live chain, valid pointers and lengths.
    let s = unsafe {
        savechain_store_file_compressed(
            chain,
            path.as_ptr(),
            data.as_ptr().cast(),
            data.len(),
            ptr::null(),
            0,
            codec,
            level,
            &mut error,
        )
    };
    match s {
        savechain_status::SAVECHAIN_OK => Ok(()),
        _ => Err(take_error(s, error)),
    }
}

#[test]
fn a_save_is_stored_compressed_reproducibly() {
    use savechain::compress::{Codec, Compression};
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let dir = tempfile::tempdir().unwrap();
    let data = br#"{"hp": 3, "name": "Kestrel"}"#;
    store(chain, &dir.path().join("plain.json"), data, None).unwrap();
    let plain = std::fs::read(dir.path().join("plain.json")).unwrap();
    let cases = [
        (SAVECHAIN_CODEC_NONE, 0, Compression::NONE),
        (SAVECHAIN_CODEC_ZSTD, 0, Compression::new(Codec::Zstd)),
        (
            SAVECHAIN_CODEC_ZSTD,
            19,
            Compression::with_level(Codec::Zstd, 19).unwrap(),
        ),
        (SAVECHAIN_CODEC_GZIP, 0, Compression::new(Codec::Gzip)),
        (
            SAVECHAIN_CODEC_GZIP,
            1,
            Compression::with_level(Codec::Gzip, 1).unwrap(),
        ),
    ];
    for (codec, level, how) in cases {
        let path = dir.path().join(format!("s{codec}-{level}.json"));
        store_compressed(chain, &path, data, codec, level).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(Codec::of(&bytes), how.codec());
        assert_eq!(bytes, savechain::compress::compress(&plain, how), "{how}");
    }
    for (codec, level, words) in [
        (7, 0, "codec is 7"),
        (SAVECHAIN_CODEC_ZSTD, 23, "zstd has no level 23"),
        (SAVECHAIN_CODEC_GZIP, -1, "gzip has no level -1"),
        (SAVECHAIN_CODEC_NONE, 3, "takes none"),
    ] {
        let path = dir.path().join("refused.json");
        let e = store_compressed(chain, &path, data, codec, level).unwrap_err();
        assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_ARGUMENT);
        assert!(e.message.contains(words), "{}", e.message);
        assert!(!path.exists());
    }
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}

fn read_head(path: &std::path::Path) -> Result<(savechain_head, Vec<u8>), Read> {
    let path = c(path.to_str().unwrap());
    let mut head = savechain_head::default();
    let mut meta: *mut c_char = ptr::null_mut();
    let mut len = 0;
    let mut error = ptr::null_mut();
    // SAFETY: valid pointers.
    let s =
        unsafe { savechain_read_head(path.as_ptr(), &mut head, &mut meta, &mut len, &mut error) };
    if s != savechain_status::SAVECHAIN_OK {
        assert!(meta.is_null());
        return Err(take_error(s, error));
    }
    // SAFETY: handed out by the call.
    let bytes = unsafe { std::slice::from_raw_parts(meta.cast::<u8>(), len) }.to_vec();
    // SAFETY: handed out by the call, freed once.
    unsafe { savechain_text_free(meta) };
    Ok((head, bytes))
}

#[test]
fn the_head_of_a_file_is_read_as_the_library_reads_it() {
    use savechain::compress::Codec;
    let dir = tempfile::tempdir().unwrap();
    let mut data = String::from("[");
    for i in 0..200_000 {
        data.push_str(&format!("\"entry {i} {}\",", i * 7919 % 10007));
    }
    data.push_str("0]");
    let text = format!(
        r#"{{"meta": {{"version": 4, "game": "Starlane Traders", "writer": "1.0.0"}}, "data": {data}}}"#
    );
    for (codec, constant) in [
        (Codec::Plain, SAVECHAIN_CODEC_NONE),
        (Codec::Zstd, SAVECHAIN_CODEC_ZSTD),
        (Codec::Gzip, SAVECHAIN_CODEC_GZIP),
    ] {
        let path = dir.path().join(format!("big{constant}.json"));
        std::fs::write(&path, packed(text.as_bytes(), codec)).unwrap();
        let (head, meta) = read_head(&path).unwrap();
        let library = savechain::head::read(&path).unwrap();
        assert_eq!(
            meta,
            savechain::text::to_vec_compact(&library.meta.to_value()).unwrap()
        );
        assert_eq!((head.version, head.codec, head.whole), (4, constant, false));
        assert_eq!(
            (head.bytes_read, head.text_read, head.size),
            (library.bytes_read, library.text_read, library.size)
        );
        assert!(
            head.bytes_read * 4 < head.size,
            "{codec}: {} of {}",
            head.bytes_read,
            head.size
        );
        let since = library
            .modified
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        assert!(head.has_modified);
        assert_eq!(
            (head.modified_seconds, head.modified_nanoseconds),
            (since.as_secs() as i64, since.subsec_nanos())
        );
    }

    // Data first: read whole, and said.
    let old = dir.path().join("old.json");
    std::fs::write(
        &old,
        packed(br#"{"data": [1, 2], "meta": {"version": 2}}"#, Codec::Zstd),
    )
    .unwrap();
    let (head, meta) = read_head(&old).unwrap();
    assert!(head.whole);
    assert_eq!(meta, br#"{"version":2}"#);

    // A damaged head names the file, line and column; damaged compressed bytes their codec.
    let torn = dir.path().join("torn.json");
    std::fs::write(
        &torn,
        "{\"meta\": {\"version\": 2,\n  \"game\" 3}, \"data\": 1}",
    )
    .unwrap();
    let e = read_head(&torn).unwrap_err();
    assert_eq!(
        (e.kind, e.line, e.column),
        (savechain_status::SAVECHAIN_ERROR_SYNTAX, 2, 10)
    );
    assert_eq!(e.file.as_deref(), torn.to_str());
    std::fs::write(&torn, &packed(text.as_bytes(), Codec::Gzip)[..30]).unwrap();
    let e = read_head(&torn).unwrap_err();
    assert_eq!(
        e.kind,
        savechain_status::SAVECHAIN_ERROR_COMPRESSED,
        "{}",
        e.text
    );
    let e = read_head(&dir.path().join("missing.json")).unwrap_err();
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_IO);

    // The meta is optional; the head is not.
    let path = c(old.to_str().unwrap());
    let mut head = savechain_head::default();
    // SAFETY: valid pointers, NULL where allowed.
    let s = unsafe {
        savechain_read_head(
            path.as_ptr(),
            &mut head,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!((s, head.version), (savechain_status::SAVECHAIN_OK, 2));
    let mut error = ptr::null_mut();
    // SAFETY: valid pointers, NULL where allowed and one where not.
    let s = unsafe {
        savechain_read_head(
            path.as_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            &mut error,
        )
    };
    assert_eq!(
        take_error(s, error).kind,
        savechain_status::SAVECHAIN_ERROR_ARGUMENT
    );
    // SAFETY: as above.
    let s = unsafe {
        savechain_read_head(
            ptr::null(),
            &mut head,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    assert_eq!(s, savechain_status::SAVECHAIN_ERROR_ARGUMENT);
}

fn upgrade_in_place(
    chain: *const savechain_chain,
    path: &std::path::Path,
    flags: u32,
) -> Result<(), Read> {
    let path = c(path.to_str().unwrap());
    let mut report = ptr::null_mut();
    let mut error = ptr::null_mut();
    // SAFETY: a live chain, valid strings and out pointers.
    let s = unsafe {
        savechain_upgrade_file(
            chain,
            path.as_ptr(),
            ptr::null(),
            0,
            flags,
            &mut report,
            &mut error,
        )
    };
    if s != savechain_status::SAVECHAIN_OK {
        return Err(take_error(s, error));
    }
    // SAFETY: stored by the call, freed once.
    unsafe { savechain_report_free(report) };
    Ok(())
}

/// An upgrade in place keeps a save's compression, its backup the original's bytes; a
/// SAVECHAIN_COMPRESS_* flag stores it otherwise; two such flags are refused.
#[test]
fn a_file_upgrade_keeps_the_compression_unless_told() {
    use savechain::compress::Codec;
    let steps = steps_folder();
    let chain = abi_chain(steps.path());
    let dir = tempfile::tempdir().unwrap();
    let original = br#"{"meta": {"version": 1}, "data": {"hp": 4}}"#;
    for (codec, flags, written) in [
        (Codec::Zstd, 0, Codec::Zstd),
        (Codec::Gzip, 0, Codec::Gzip),
        (Codec::Zstd, SAVECHAIN_COMPRESS_GZIP, Codec::Gzip),
        (Codec::Plain, SAVECHAIN_COMPRESS_ZSTD, Codec::Zstd),
        (Codec::Gzip, SAVECHAIN_COMPRESS_NONE, Codec::Plain),
    ] {
        let path = dir.path().join(format!("{codec}-{flags}.json"));
        let bytes = packed(original, codec);
        std::fs::write(&path, &bytes).unwrap();
        upgrade_in_place(chain, &path, flags).unwrap();
        let after = std::fs::read(&path).unwrap();
        assert_eq!(Codec::of(&after), written, "{codec} with flags {flags}");
        assert_eq!(savechain::Save::from_slice(&after).unwrap().meta.version, 3);
        let backup = dir.path().join(format!("{codec}-{flags}.json.v1.bak"));
        assert_eq!(std::fs::read(backup).unwrap(), bytes);
    }
    let path = dir.path().join("two.json");
    std::fs::write(&path, original).unwrap();
    let e = upgrade_in_place(
        chain,
        &path,
        SAVECHAIN_COMPRESS_ZSTD | SAVECHAIN_COMPRESS_GZIP,
    )
    .unwrap_err();
    assert_eq!(e.kind, savechain_status::SAVECHAIN_ERROR_ARGUMENT);
    assert!(
        e.message.contains("more than one SAVECHAIN_COMPRESS_"),
        "{}",
        e.message
    );
    assert_eq!(std::fs::read(&path).unwrap(), original);

    // Damaged compressed bytes: an error of their kind, nothing written.
    let cut = &packed(original, Codec::Zstd)[..20];
    std::fs::write(&path, cut).unwrap();
    let e = upgrade_in_place(chain, &path, 0).unwrap_err();
    assert_eq!(
        e.kind,
        savechain_status::SAVECHAIN_ERROR_COMPRESSED,
        "{}",
        e.text
    );
    assert_eq!(std::fs::read(&path).unwrap(), cut);
    // SAFETY: made above, freed once.
    unsafe { savechain_chain_free(chain) };
}
