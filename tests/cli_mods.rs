//! `save-upgrade` with mods (`--mods DIR`, `--keep-going`), as players and mod authors use
//! it: each namespace's version after upgrades in place and into another folder, absent mods
//! kept byte for byte, failing and held mods, caches refused after a mod changes, `test`
//! on a mod's fixtures, what `--check`, `--dry-run`, `--diff`, `--report`, `chain` and
//! `inspect` say about mods, hostile mod steps, and manifest errors.
//!
//! Wherever files are involved, every file of the folder is compared byte for byte before
//! and after; what a run writes is parsed to check each namespace's version.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use savechain::{Options, Save, Value};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What a run of `save-upgrade` gave.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `save-upgrade args` in `cwd`.
fn run(cwd: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs and checks the exit status.
fn run_ok(cwd: &Path, args: &[&str], code: i32) -> Run {
    let out = run(cwd, args);
    assert_eq!(out.code, Some(code), "save-upgrade {args:?}:\n{out}");
    out
}

/// Copies the folder `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `dir`, by its path below it (`a/b.json`), with its bytes; empty when
/// the folder does not exist.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, prefix: &str, into: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &format!("{name}/"), into);
            } else {
                into.insert(name, fs::read(entry.path()).unwrap());
            }
        }
    }
    let mut all = BTreeMap::new();
    if dir.exists() {
        walk(dir, "", &mut all);
    }
    all
}

/// The names of the files under `dir`.
fn names(dir: &Path) -> Vec<String> {
    files(dir).into_keys().collect()
}

/// Asserts that `dir` holds exactly the files of `before`, byte for byte.
fn assert_unchanged(dir: &Path, before: &BTreeMap<String, Vec<u8>>, what: &str) {
    let after = files(dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "{what}: the files of {}",
        dir.display()
    );
    for (name, bytes) in before {
        assert!(
            after[name] == *bytes,
            "{what}: {name} changed:\n{}",
            String::from_utf8_lossy(&after[name])
        );
    }
}

fn parse(bytes: &[u8]) -> Value {
    savechain::text::from_slice(bytes).unwrap()
}

fn read(path: impl AsRef<Path>) -> Value {
    parse(&fs::read(path).unwrap())
}

/// The value at `path` (`meta.mods.cartographer.version`) of a save or report.
fn at<'v>(value: &'v Value, path: &str) -> &'v Value {
    value
        .pointer(path)
        .unwrap_or_else(|| panic!("nothing at {path} in {value}"))
}

/// The compact canonical text of the value at `path`, for comparisons in one line.
fn text_at(value: &Value, path: &str) -> String {
    at(value, path).to_string()
}

/// Asserts that the canonical text `after` holds the subtree at `path` (keys only, such as
/// `data.mods.radio`) exactly as the canonical text of `before`'s has it: the same lines,
/// indented where the subtree sits.
fn assert_subtree_kept(before: &[u8], after: &[u8], path: &str) {
    let before = parse(before);
    let subtree = at(&before, path);
    let key = path.rsplit('.').next().unwrap();
    let indent = " ".repeat(2 * path.split('.').count());
    let text = savechain::text::to_string(subtree).unwrap();
    let lines = text.trim_end().replace('\n', &format!("\n{indent}"));
    let expected = format!("\n{indent}\"{key}\": {lines}");
    let after = String::from_utf8_lossy(after);
    assert!(
        after.contains(&expected),
        "{path} is not kept as it was:\n{expected}\n--- in\n{after}"
    );
    // And the same value when read back (the text above could sit elsewhere).
    assert_eq!(text_at(&parse(after.as_bytes()), path), subtree.to_string());
}

/// Writes a file, making its folder.
fn write(path: impl AsRef<Path>, text: &str) {
    let path = path.as_ref();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Writes a mod's folder `dir`: its manifest and its steps (`(file name, source)`).
fn write_mod(dir: &Path, manifest: &str, steps: &[(&str, &str)]) {
    write(dir.join("mod.json"), manifest);
    for (name, source) in steps {
        write(dir.join(name), source);
    }
}

/// A temporary folder with a copy of the example mod at `mods/cartographer`.
fn with_cartographer() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(ROOT).join("mods/cartographer"),
        &dir.path().join("mods/cartographer"),
    );
    dir
}

/// Copies an example save (`examples/saves/<name>`) or another file of the repository to
/// `to`.
fn copy_in(from: &str, to: &Path) {
    fs::create_dir_all(to.parent().unwrap()).unwrap();
    fs::copy(Path::new(ROOT).join(from), to).unwrap();
}

/// The game of the tests that bring their own chain (`--upgrades game --writer 2.0.0`):
/// one step from version 1 to 2 that gives the ship a shield.
fn write_game(root: &Path) {
    write(
        root.join("game/0001-shield.lua"),
        "-- Ships get a shield.\nreturn function(data) data.ship.shield = 100 end\n",
    );
}

const OWN: [&str; 4] = ["--upgrades", "game", "--writer", "2.0.0"];

/// `OWN`, then `rest`.
fn own<'a>(rest: &[&'a str]) -> Vec<&'a str> {
    OWN.iter().copied().chain(rest.iter().copied()).collect()
}

/// The mod `tinker` at release 1.2.0: data version 1 to 3.
fn write_tinker(mods: &Path) {
    write_mod(
        &mods.join("tinker"),
        r#"{"name": "tinker", "release": "1.2.0", "after": []}"#,
        &[
            (
                "0001-charge.lua",
                "-- Charge in tenths.\nreturn function(data) data.mods.tinker.charge = data.mods.tinker.charge * 10 end\n",
            ),
            (
                "0002-gadgets.lua",
                "-- Gadgets, none yet.\nreturn function(data) data.mods.tinker.gadgets = require('savechain').array() end\n",
            ),
        ],
    );
}

/// The example game's chain with the mods of `mods`, as the binary has it: what an upgrade
/// of the save at `path` gives, in bytes.
fn upgraded_by_library(path: &Path, mods: &Path) -> Vec<u8> {
    let chain = common::starlane::chain()
        .unwrap()
        .with_mods_dir(mods)
        .unwrap();
    let save = Save::load(path).unwrap();
    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    upgraded.save.to_vec().unwrap()
}

/// The history entries of a save that are a mod's.
fn mod_history(save: &Value) -> Vec<String> {
    match save.pointer("meta.history") {
        Some(Value::Array(entries)) => entries
            .iter()
            .filter(|e| e.get("mod").is_some())
            .map(Value::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------
// 1. Versions per namespace.

#[test]
fn each_namespace_reaches_its_latest_in_place_and_in_another_folder() {
    let dir = with_cartographer();
    let root = dir.path();
    let saves = root.join("saves");
    // The game and the mod to upgrade; only the mod; the mod from its data version 2; a
    // save that does not record the mod (it runs nothing there).
    copy_in(
        "examples/saves/cartographer.json",
        &saves.join("cartographer.json"),
    );
    copy_in(
        "examples/saves/cartographer-removed.json",
        &saves.join("removed.json"),
    );
    copy_in(
        "mods/cartographer/fixtures/v2/charted.json",
        &saves.join("deep/charted-v2.json"),
    );
    copy_in("fixtures/v1/small.json", &saves.join("plain.json"));
    let originals = files(&saves);
    let mods = root.join("mods");
    let mods_before = files(&mods);

    // Into another folder: the sources stay as they were.
    let out = run_ok(root, &["--out-dir", "out", "--mods", "mods", "saves"], 0);
    assert!(
        out.stderr
            .contains("upgraded 4, already current 0, failed 0"),
        "{out}"
    );
    assert_unchanged(&saves, &originals, "--out-dir");
    assert_unchanged(&mods, &mods_before, "--out-dir");
    let written = files(&root.join("out"));
    assert_eq!(
        written.keys().collect::<Vec<_>>(),
        [
            "cartographer.json",
            "deep/charted-v2.json",
            "plain.json",
            "removed.json"
        ]
    );
    for (name, bytes) in &written {
        assert!(
            *bytes == upgraded_by_library(&saves.join(name), &mods),
            "{name} is not what the library makes of it"
        );
    }
    // The mod author's expected form of the fixture, byte for byte.
    assert!(
        written["deep/charted-v2.json"]
            == fs::read(Path::new(ROOT).join("mods/cartographer/expected/v2/charted.json"))
                .unwrap()
    );
    let check_versions = |saves: &BTreeMap<String, Vec<u8>>| {
        for (name, from) in [
            ("cartographer.json", 1),
            ("removed.json", 1),
            ("deep/charted-v2.json", 2),
        ] {
            let save = parse(&saves[name]);
            assert_eq!(text_at(&save, "meta.version"), "9", "{name}");
            assert_eq!(
                text_at(&save, "meta.mods.cartographer"),
                r#"{"version":3,"writer":"2.0.0"}"#,
                "{name}"
            );
            assert_eq!(
                mod_history(&save).last().unwrap(),
                &format!(r#"{{"from":{from},"mod":"cartographer","to":3,"writer":"2.0.0"}}"#),
                "{name}"
            );
        }
        let save = parse(&saves["cartographer.json"]);
        assert_eq!(
            text_at(&save, "data.mods.cartographer"),
            r#"{"notes":{"sol":{"pinned":false,"text":"home port"},"vega":{"pinned":false,"text":"pirates near the gate?"}},"waypoints":[{"name":"Sol","system":"sol"},{"name":"Vega","system":"vega"}]}"#
        );
        // The game's own data at its latest: systems keyed by id.
        assert_eq!(text_at(&save, "data.systems.vega.name"), r#""Vega""#);
        // A save without the mod: the game upgraded, nothing of the mod added.
        let plain = parse(&saves["plain.json"]);
        assert_eq!(text_at(&plain, "meta.version"), "9");
        assert!(plain.pointer("meta.mods").is_none(), "{plain}");
        assert!(plain.pointer("data.mods").is_none(), "{plain}");
        assert!(mod_history(&plain).is_empty());
    };
    check_versions(&written);

    // In place, with backups: the same bytes, and each original kept as it was, named by
    // the game's version it had.
    let out = run_ok(root, &["--mods", "mods", "saves"], 0);
    assert!(
        out.stderr
            .contains("upgraded 4, already current 0, failed 0"),
        "{out}"
    );
    let in_place = files(&saves);
    assert_eq!(
        in_place.keys().collect::<Vec<_>>(),
        [
            "cartographer.json",
            "cartographer.json.v1.bak",
            "deep/charted-v2.json",
            "deep/charted-v2.json.v9.bak",
            "plain.json",
            "plain.json.v1.bak",
            "removed.json",
            "removed.json.v9.bak"
        ]
    );
    for (name, bytes) in &written {
        assert!(in_place[name] == *bytes, "{name} differs from --out-dir's");
    }
    for (name, backup) in [
        ("cartographer.json", "cartographer.json.v1.bak"),
        ("deep/charted-v2.json", "deep/charted-v2.json.v9.bak"),
        ("plain.json", "plain.json.v1.bak"),
        ("removed.json", "removed.json.v9.bak"),
    ] {
        assert!(in_place[backup] == originals[name], "{backup}");
    }
    check_versions(&in_place);

    // Again: every namespace is current, nothing is written.
    let out = run_ok(root, &["--mods", "mods", "saves"], 0);
    assert!(
        out.stderr
            .contains("upgraded 0, already current 4, failed 0"),
        "{out}"
    );
    assert_unchanged(&saves, &in_place, "a second run");
}

// ---------------------------------------------------------------------------------------
// 2. A mod that is not installed.

/// A save of the own game, written by hand (not canonical), with `tinker` at version 1 and
/// `radio`, whose data and entry hold values that are easy to garble.
const RADIO_SAVE: &str = r#"{"meta": {"version": 1, "writer": "1.0.0",
  "mods": {"tinker": {"version": 1, "writer": "1.0.0"},
           "radio": {"writer": "0.1.0", "version": 1, "note": ["kept", {"as": "is", "n": 18446744073709551615}]}}},
 "data": {"ship": {"name": "Dawn"},
          "mods": {"tinker": {"charge": 4},
                   "radio": {"station": "KSTL", "gain": ["d", "0x1.8p+0"], "tuned": [["d", "-0x1p-2"], 3, 0],
                             "literal": ["a", ["d", "0x1p+0"]], "empty": {}, "who": "Zoë \u00e9", "log": [1, 2, 3, 4, 5]}}}}"#;

#[test]
fn an_absent_mod_is_kept_byte_for_byte_and_upgraded_once_installed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_game(root);
    write_tinker(&root.join("mods"));
    write(root.join("saves/slot.json"), RADIO_SAVE);
    let saves = root.join("saves");

    let out = run_ok(
        root,
        &own(&["--mods", "mods", "--report", "report.json", "saves"]),
        0,
    );
    assert!(
        out.stderr
            .contains("upgraded 1, already current 0, failed 0"),
        "{out}"
    );
    let first = files(&saves);
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        ["slot.json", "slot.json.v1.bak"]
    );
    assert_eq!(first["slot.json.v1.bak"], RADIO_SAVE.as_bytes());
    let written = &first["slot.json"];
    let save = parse(written);
    assert_eq!(text_at(&save, "meta.version"), "2");
    assert_eq!(
        text_at(&save, "meta.mods.tinker"),
        r#"{"version":3,"writer":"1.2.0"}"#
    );
    assert_eq!(
        text_at(&save, "data.mods.tinker"),
        r#"{"charge":40,"gadgets":[]}"#
    );
    assert_subtree_kept(RADIO_SAVE.as_bytes(), written, "data.mods.radio");
    assert_subtree_kept(RADIO_SAVE.as_bytes(), written, "meta.mods.radio");
    assert_eq!(
        mod_history(&save),
        [r#"{"from":1,"mod":"tinker","to":3,"writer":"1.2.0"}"#]
    );
    let report = read(root.join("report.json"));
    assert_eq!(
        text_at(&report, "[0].mods"),
        r#"[{"error":null,"from":1,"name":"tinker","status":"upgraded","to":3},{"error":null,"from":1,"name":"radio","status":"not-installed","to":1}]"#
    );

    // The mod installed again: upgraded from the version the save kept for it, the other
    // members of its entry kept.
    write_mod(
        &root.join("mods/radio"),
        r#"{"name": "radio", "release": "0.2.0"}"#,
        &[(
            "0001-stations.lua",
            "-- One station becomes a list of them.\nreturn function(data)\n  local radio = data.mods.radio\n  radio.stations = {radio.station}\n  radio.station = nil\nend\n",
        )],
    );
    let out = run_ok(root, &own(&["--mods", "mods", "saves"]), 0);
    assert!(
        out.stderr
            .contains("upgraded 1, already current 0, failed 0"),
        "{out}"
    );
    let second = files(&saves);
    assert_eq!(
        second.keys().collect::<Vec<_>>(),
        ["slot.json", "slot.json.v1.bak", "slot.json.v2.bak"]
    );
    assert!(second["slot.json.v2.bak"] == *written);
    assert!(second["slot.json.v1.bak"] == first["slot.json.v1.bak"]);
    let again = parse(&second["slot.json"]);
    assert_eq!(text_at(&again, "meta.version"), "2");
    assert_eq!(
        text_at(&again, "meta.mods.radio"),
        r#"{"note":["kept",{"as":"is","n":18446744073709551615}],"version":2,"writer":"0.2.0"}"#
    );
    assert_eq!(text_at(&again, "data.mods.radio.stations"), r#"["KSTL"]"#);
    assert!(again.pointer("data.mods.radio.station").is_none());
    assert_eq!(
        text_at(&again, "data.mods.radio.gain"),
        text_at(&save, "data.mods.radio.gain")
    );
    // tinker was current: untouched.
    assert_subtree_kept(written, &second["slot.json"], "data.mods.tinker");
    assert_subtree_kept(written, &second["slot.json"], "meta.mods.tinker");
    assert_eq!(
        mod_history(&again),
        [
            r#"{"from":1,"mod":"tinker","to":3,"writer":"1.2.0"}"#,
            r#"{"from":1,"mod":"radio","to":2,"writer":"0.2.0"}"#
        ]
    );
}

#[test]
fn the_example_save_whose_mod_was_removed_is_current_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let saves = dir.path().join("saves");
    copy_in(
        "examples/saves/cartographer-removed.json",
        &saves.join("removed.json"),
    );
    let before = files(&saves);
    let out = run_ok(dir.path(), &["--check", "saves"], 0);
    assert_eq!(out.stdout, "");
    let out = run_ok(dir.path(), &["saves"], 0);
    assert!(
        out.stderr
            .contains("upgraded 0, already current 1, failed 0"),
        "{out}"
    );
    assert_unchanged(&saves, &before, "the mod not installed");
    let out = run_ok(dir.path(), &["--dry-run", "saves"], 0);
    assert!(
        out.stdout.is_empty(),
        "nothing would run, so no plan: {out}"
    );
    let out = run_ok(dir.path(), &["inspect", "saves/removed.json"], 0);
    assert!(
        out.stdout
            .contains("  mod cartographer: version 1, not-installed (kept as it is)\n"),
        "{out}"
    );
}

// ---------------------------------------------------------------------------------------
// 3. A failing mod step.

/// The example mod's second step, fixed: a system the save does not have keeps its id as
/// its name. Released as 2.0.1.
fn fix_cartographer(mods: &Path) {
    let step = mods.join("cartographer/0002-route-as-waypoints.lua");
    let source = fs::read_to_string(&step).unwrap();
    let broken = "    if system == nil then\n      error(";
    assert!(source.contains(broken), "{source}");
    let fixed = source.replace(
        broken,
        "    if system == nil then\n      system = { name = id }\n    end\n    if false then\n      error(",
    );
    fs::write(&step, fixed).unwrap();
    let manifest = mods.join("cartographer/mod.json");
    let text = fs::read_to_string(&manifest)
        .unwrap()
        .replace("\"2.0.0\"", "\"2.0.1\"");
    fs::write(manifest, text).unwrap();
}

const BROKEN_ERROR: &str = "mod cartographer: step 0002-route-as-waypoints.lua, version 2 to 3, failed on line 12: waypoint 2 of the route is \"tau-ceti\", a star system this save does not have";

/// Runs `--keep-going` on `saves/broken.json` (the example save whose mod step fails) and
/// checks what it did: the game upgraded, the mod's data as it was, its entry marked.
fn hold_broken(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let saves = root.join("saves");
    let original = fs::read(saves.join("broken.json")).unwrap();
    let out = run_ok(root, &["--keep-going", "--mods", "mods", "saves"], 1);
    assert!(
        out.stderr.contains(&format!(
            "saves/broken.json: held back at its old version: {BROKEN_ERROR}"
        )),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("upgraded 1 (1 with a mod held back), already current 0, failed 0"),
        "{out}"
    );
    let held = files(&saves);
    assert_eq!(
        held.keys().collect::<Vec<_>>(),
        ["broken.json", "broken.json.v1.bak"]
    );
    assert!(held["broken.json.v1.bak"] == original);
    let save = parse(&held["broken.json"]);
    // The game's chain ran: version 9, systems keyed by id.
    assert_eq!(text_at(&save, "meta.version"), "9");
    assert_eq!(text_at(&save, "data.systems.sol.name"), r#""Sol""#);
    // The mod's data exactly as it was (its first step's work undone), its entry marked.
    assert_subtree_kept(&original, &held["broken.json"], "data.mods.cartographer");
    let entry = at(&save, "meta.mods.cartographer");
    assert_eq!(
        entry.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["held", "version", "writer"]
    );
    assert_eq!(text_at(entry, "version"), "1");
    assert_eq!(text_at(entry, "writer"), r#""1.0.0""#);
    assert_eq!(text_at(entry, "held.writer"), r#""2.0.0""#);
    let error = at(entry, "held.error").as_str().unwrap();
    assert!(error.starts_with(BROKEN_ERROR), "{error}");
    assert!(mod_history(&save).is_empty(), "{save}");
    held
}

#[test]
fn a_failing_mod_fails_the_save_or_is_held_back_with_keep_going() {
    let dir = with_cartographer();
    let root = dir.path();
    let saves = root.join("saves");
    copy_in(
        "examples/saves/cartographer-broken.json",
        &saves.join("broken.json"),
    );
    let original = files(&saves);
    let mods = files(&root.join("mods"));

    // Without --keep-going: the save fails naming the mod and its step; nothing written,
    // in place or elsewhere.
    let out = run_ok(root, &["--mods", "mods", "saves"], 2);
    assert!(
        out.stderr
            .contains(&format!("error: saves/broken.json: {BROKEN_ERROR}")),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("upgraded 0, already current 0, failed 1"),
        "{out}"
    );
    assert_unchanged(&saves, &original, "a failing mod");
    let out = run_ok(root, &["--out-dir", "out", "--mods", "mods", "saves"], 2);
    assert!(out.stderr.contains(BROKEN_ERROR), "{out}");
    assert!(files(&root.join("out")).is_empty());
    assert_unchanged(&saves, &original, "a failing mod, --out-dir");

    // With it: the rest upgraded, the mod held back and marked, the original kept.
    let held = hold_broken(root);

    // A fixed release: its steps run from the version the save kept, and the mark goes.
    fix_cartographer(&root.join("mods"));
    let out = run_ok(root, &["--mods", "mods", "saves"], 0);
    assert!(
        out.stderr
            .contains("upgraded 1, already current 0, failed 0"),
        "{out}"
    );
    assert!(!out.stderr.contains("held back"), "{out}");
    let fixed = files(&saves);
    assert_eq!(
        fixed.keys().collect::<Vec<_>>(),
        ["broken.json", "broken.json.v1.bak", "broken.json.v9.bak"]
    );
    assert!(fixed["broken.json.v9.bak"] == held["broken.json"]);
    assert!(fixed["broken.json.v1.bak"] == original["broken.json"]);
    let save = parse(&fixed["broken.json"]);
    assert_eq!(text_at(&save, "meta.version"), "9");
    assert_eq!(
        text_at(&save, "meta.mods.cartographer"),
        r#"{"version":3,"writer":"2.0.1"}"#
    );
    assert_eq!(
        text_at(&save, "data.mods.cartographer.waypoints"),
        r#"[{"name":"Sol","system":"sol"},{"name":"tau-ceti","system":"tau-ceti"}]"#
    );
    assert_eq!(
        mod_history(&save),
        [r#"{"from":1,"mod":"cartographer","to":3,"writer":"2.0.1"}"#]
    );
    // The mods folder was only read (the fix aside).
    assert_eq!(
        names(&root.join("mods")),
        mods.keys().cloned().collect::<Vec<_>>()
    );
}

/// A save held back by a mod that fails the same way again has nothing new to record: a
/// second `--keep-going` run must leave it (and its backups) as they are.
#[test]
fn a_held_mod_that_fails_again_leaves_the_save_as_it_is() {
    let dir = with_cartographer();
    let root = dir.path();
    copy_in(
        "examples/saves/cartographer-broken.json",
        &root.join("saves/broken.json"),
    );
    let held = hold_broken(root);
    let out = run_ok(root, &["--keep-going", "--mods", "mods", "saves"], 1);
    assert!(
        out.stderr.contains(&format!(
            "saves/broken.json: held back at its old version: {BROKEN_ERROR}"
        )),
        "{out}"
    );
    assert_unchanged(&root.join("saves"), &held, "a second --keep-going run");
}

// ---------------------------------------------------------------------------------------
// 4. A mod's data newer than the installed mod.

/// The example save `name` with the mod's data at version 5, by its release 3.0.0.
fn with_newer_mod_data(name: &str, to: &Path) {
    let mut save = read(Path::new(ROOT).join("examples/saves").join(name));
    *save.pointer_mut("meta.mods.cartographer.version").unwrap() = Value::Int(5);
    *save.pointer_mut("meta.mods.cartographer.writer").unwrap() = Value::from("3.0.0");
    fs::create_dir_all(to.parent().unwrap()).unwrap();
    fs::write(to, savechain::text::to_vec(&save).unwrap()).unwrap();
}

const NEWER: &str = "mod cartographer: its data is version 5, written by its release 3.0.0, newer than the installed release 2.0.0 knows (latest version 3)";

#[test]
fn a_mods_data_newer_than_its_steps_is_refused_or_held() {
    let dir = with_cartographer();
    let root = dir.path();
    // The game current, only the mod's (refused) work left; and the game to upgrade too.
    with_newer_mod_data("cartographer-removed.json", &root.join("only/current.json"));
    with_newer_mod_data("cartographer.json", &root.join("both/old.json"));
    let before = files(root);

    let out = run_ok(root, &["--mods", "mods", "only", "both"], 2);
    for path in ["only/current.json", "both/old.json"] {
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("error: {path}: ")))
            .unwrap_or_else(|| panic!("no error for {path}: {out}"));
        assert!(line.contains("meta.mods.cartographer.version"), "{line}");
        assert!(line.contains(NEWER), "{line}");
    }
    assert!(
        out.stderr
            .contains("upgraded 0, already current 0, failed 2"),
        "{out}"
    );
    assert_unchanged(root, &before, "a refused mod");

    // Held back: nothing else to do, so only the mark is written (once: a second run
    // leaves the file as it is).
    let out = run_ok(root, &["--keep-going", "--mods", "mods", "only"], 1);
    let held = out
        .stderr
        .lines()
        .find(|l| l.starts_with("only/current.json: held back at its old version: "))
        .unwrap_or_else(|| panic!("no held line: {out}"));
    assert!(
        held.contains(NEWER) && held.contains("meta.mods.cartographer.version"),
        "{held}"
    );
    assert!(
        out.stderr
            .contains("upgraded 0, already current 0, held back 1, failed 0"),
        "{out}"
    );
    let marked = parse(&fs::read(root.join("only/current.json")).unwrap());
    assert!(text_at(&marked, "meta.mods.cartographer.held.error").contains(NEWER));
    assert_eq!(text_at(&marked, "meta.mods.cartographer.version"), "5");
    let before = files(root);
    run_ok(root, &["--keep-going", "--mods", "mods", "only"], 1);
    assert_unchanged(
        root,
        &before,
        "a held mod marked already, with nothing else to do",
    );

    // The game's work done, the mod's data and entry as they were, unmarked.
    let original = before["both/old.json"].clone();
    let out = run_ok(root, &["--keep-going", "--mods", "mods", "both"], 1);
    assert!(
        out.stderr
            .contains("upgraded 1 (1 with a mod held back), already current 0, failed 0"),
        "{out}"
    );
    assert_eq!(names(&root.join("both")), ["old.json", "old.json.v1.bak"]);
    assert!(fs::read(root.join("both/old.json.v1.bak")).unwrap() == original);
    let written = fs::read(root.join("both/old.json")).unwrap();
    let save = parse(&written);
    assert_eq!(text_at(&save, "meta.version"), "9");
    // Marked held, its version and writer as they were.
    assert_eq!(text_at(&save, "meta.mods.cartographer.version"), "5");
    assert_eq!(
        text_at(&save, "meta.mods.cartographer.writer"),
        r#""3.0.0""#
    );
    assert!(text_at(&save, "meta.mods.cartographer.held")
        .contains("newer than the installed release 2.0.0"));
    assert_subtree_kept(&original, &written, "data.mods.cartographer");
    assert!(mod_history(&save).is_empty());
}

// ---------------------------------------------------------------------------------------
// 5. Caches.

#[test]
fn a_changed_mod_refuses_the_caches_made_before() {
    let dir = with_cartographer();
    let root = dir.path();
    copy_in(
        "examples/saves/cartographer.json",
        &root.join("saves/cartographer.json"),
    );
    let pristine = files(&root.join("mods"));
    let restore = || {
        fs::remove_dir_all(root.join("mods")).unwrap();
        copy_dir(
            &Path::new(ROOT).join("mods/cartographer"),
            &root.join("mods/cartographer"),
        );
        assert_unchanged(&root.join("mods"), &pristine, "restored");
    };
    let changed = "the cache was made by another upgrade chain";
    // What changes, in which file of the mod, and how: one character of a step, a helper
    // module, the release, the mods it comes after (even one not installed).
    let changes = [
        (
            "a step's source",
            "0001-notes-become-records.lua",
            "not a text",
            "not a text!",
        ),
        (
            "a helper module",
            "lib/notes.lua",
            "return notes",
            "return notes -- changed",
        ),
        ("the release", "mod.json", "\"2.0.0\"", "\"2.0.1\""),
        (
            "the order",
            "mod.json",
            "\"after\": []",
            "\"after\": [\"other\"]",
        ),
    ];
    for (what, file, from, to) in changes {
        restore();
        let out = run_ok(root, &["cache", "build", "--mods", "mods", "saves"], 0);
        assert_eq!(out.stdout, "saves/cartographer.json: built\n", "{what}");
        let built = files(&root.join("saves"));
        assert_eq!(
            built.keys().collect::<Vec<_>>(),
            ["cartographer.json", "cartographer.json.cache"]
        );
        let out = run_ok(root, &["cache", "verify", "--mods", "mods", "saves"], 0);
        assert_eq!(out.stdout, "saves/cartographer.json: ok\n", "{what}");
        let out = run_ok(
            root,
            &["inspect", "--mods", "mods", "saves/cartographer.json"],
            0,
        );
        assert!(
            out.stdout.contains("  loads from its cache\n"),
            "{what}: {out}"
        );
        // The game's chain alone is another chain.
        let out = run_ok(root, &["cache", "verify", "saves"], 1);
        assert!(out.stdout.contains(changed), "{what}: {out}");

        let file = root.join("mods/cartographer").join(file);
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.contains(from), "{what}: {text}");
        fs::write(&file, text.replacen(from, to, 1)).unwrap();
        let out = run_ok(root, &["cache", "verify", "--mods", "mods", "saves"], 1);
        assert!(
            out.stdout
                .starts_with(&format!("saves/cartographer.json: {changed}")),
            "{what}: {out}"
        );
        let out = run_ok(
            root,
            &["inspect", "--mods", "mods", "saves/cartographer.json"],
            0,
        );
        assert!(
            out.stdout
                .contains(&format!("  loads from the JSON: {changed}")),
            "{what}: {out}"
        );
        let out = run_ok(
            root,
            &[
                "inspect",
                "--json",
                "--mods",
                "mods",
                "saves/cartographer.json",
            ],
            0,
        );
        let facts = parse(out.stdout.as_bytes());
        assert_eq!(text_at(&facts, "source"), r#""json""#, "{what}");
        assert!(
            at(&facts, "source_reason")
                .as_str()
                .unwrap()
                .starts_with(changed),
            "{what}: {facts}"
        );
        // verify and inspect only looked.
        assert_unchanged(&root.join("saves"), &built, what);
    }
}

// ---------------------------------------------------------------------------------------
// 6. `save-upgrade test` on a mod's fixtures.

#[test]
fn the_example_mods_fixtures_pass() {
    let out = run_ok(
        Path::new(ROOT),
        &["test", "--mods", "mods/", "mods/cartographer/fixtures/"],
        0,
    );
    assert!(
        out.stderr
            .contains("fixtures: 3 match, 0 differ, 0 without an expected form, 0 failed"),
        "{out}"
    );
    assert_eq!(out.stdout, "");
}

#[test]
fn a_changed_mod_step_fails_its_fixtures_until_blessed() {
    let dir = with_cartographer();
    let root = dir.path();
    let step = root.join("mods/cartographer/0002-route-as-waypoints.lua");
    let source = fs::read_to_string(&step).unwrap();
    let changed = source.replace("name = system.name }", "name = system.name:upper() }");
    assert_ne!(source, changed);
    fs::write(&step, changed).unwrap();
    let before = files(root);
    let test = ["test", "--mods", "mods", "mods/cartographer/fixtures"];

    let out = run_ok(root, &test, 1);
    assert!(
        out.stdout.contains(
            "mods/cartographer/fixtures/v1/charted.json: its upgrade differs from \
             mods/cartographer/expected/v1/charted.json:\n  \
             ~ data.mods.cartographer.waypoints[0].name: \"Sol\" -> \"SOL\"\n  \
             ~ data.mods.cartographer.waypoints[1].name: \"Vega\" -> \"VEGA\"\n"
        ),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("mods/cartographer/fixtures/v2/charted.json: its upgrade differs"),
        "{out}"
    );
    assert!(!out.stdout.contains("fixtures/v3"), "{out}");
    assert!(
        out.stderr
            .contains("fixtures: 1 match, 2 differ, 0 without an expected form, 0 failed"),
        "{out}"
    );
    assert_unchanged(root, &before, "test");

    let out = run_ok(
        root,
        &[
            "test",
            "--bless",
            "--mods",
            "mods",
            "mods/cartographer/fixtures",
        ],
        0,
    );
    assert!(
        out.stderr
            .contains("wrote mods/cartographer/expected/v1/charted.json"),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("wrote mods/cartographer/expected/v2/charted.json"),
        "{out}"
    );
    let blessed = files(root);
    let mut now_changed: Vec<&String> = blessed
        .keys()
        .filter(|name| blessed[*name] != before[*name])
        .collect();
    now_changed.sort();
    assert_eq!(
        now_changed,
        [
            "mods/cartographer/expected/v1/charted.json",
            "mods/cartographer/expected/v2/charted.json"
        ]
    );
    assert_eq!(blessed.len(), before.len());
    // What was blessed is what an upgrade of the fixture writes.
    run_ok(
        root,
        &[
            "--out-dir",
            "up",
            "--mods",
            "mods",
            "mods/cartographer/fixtures",
        ],
        0,
    );
    for v in ["v1", "v2", "v3"] {
        let expected = &blessed[&format!("mods/cartographer/expected/{v}/charted.json")];
        let mut written = fs::read(root.join(format!("up/{v}/charted.json"))).unwrap();
        if v == "v3" {
            // Already current, it is written as the fixture has it, in the order of format
            // revision 2 (`data` first): what was blessed is its canonical text.
            written = Save::from_slice(&written).unwrap().to_vec().unwrap();
        }
        assert!(written == *expected, "{v}");
    }
    let v1 = parse(&blessed["mods/cartographer/expected/v1/charted.json"]);
    assert_eq!(
        text_at(&v1, "data.mods.cartographer.waypoints[1].name"),
        r#""VEGA""#
    );

    let out = run_ok(root, &test, 0);
    assert!(
        out.stderr
            .contains("fixtures: 3 match, 0 differ, 0 without an expected form, 0 failed"),
        "{out}"
    );
}

// ---------------------------------------------------------------------------------------
// 7. What the commands say about mods.

const NOTES: &str =
    "Each note on a star system becomes a record: its text, and whether it is pinned.";
const ROUTE: &str =
    "The planned route, a list of system ids, becomes waypoints that carry each system's name.";

#[test]
fn check_dry_run_diff_report_chain_and_inspect_show_each_mod() {
    let dir = with_cartographer();
    let root = dir.path();
    let saves = root.join("saves");
    copy_in(
        "examples/saves/cartographer-removed.json",
        &saves.join("removed.json"),
    );
    copy_in(
        "examples/saves/cartographer.json",
        &saves.join("cartographer.json"),
    );
    let before = files(&saves);

    // --check: the mod's work is work.
    let out = run_ok(
        root,
        &["--check", "--mods", "mods", "saves/removed.json"],
        1,
    );
    assert_eq!(out.stdout, "saves/removed.json\n");
    let out = run_ok(root, &["--check", "saves/removed.json"], 0);
    assert_eq!(out.stdout, "");

    // --dry-run: the mod's steps under its name, after the game's.
    let out = run_ok(root, &["--dry-run", "--mods", "mods", "saves"], 0);
    let mod_block = format!(
        "  mod cartographer: version 1 to 3\n    1 -> 2  lua   {NOTES}\n    2 -> 3  lua   {ROUTE}\n"
    );
    assert!(
        out.stdout.contains(&format!(
            "saves/removed.json: version 9, current\n{mod_block}"
        )),
        "{out}"
    );
    assert!(
        out.stdout.contains(&format!(
            "  8 -> 9  rust  cargo records: good, count and mass\n{mod_block}"
        )),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("would upgrade 2, already current 0, failed 0"),
        "{out}"
    );
    assert_unchanged(&saves, &before, "--check and --dry-run");

    // --diff: each of the mod's steps named after the mod, with what it changed.
    let out = run_ok(
        root,
        &[
            "--diff",
            "--out-dir",
            "out",
            "--mods",
            "mods",
            "saves/removed.json",
        ],
        0,
    );
    assert_eq!(
        out.stdout,
        format!(
            "saves/removed.json:\n\
             \x20 1 -> 2 cartographer/0001-notes-become-records.lua ({NOTES})\n\
             \x20   ~ data.mods.cartographer.notes.vega: \"sell water here\" -> {{\"pinned\":false,\"text\":\"sell water here\"}}\n\
             \x20 2 -> 3 cartographer/0002-route-as-waypoints.lua ({ROUTE})\n\
             \x20   - data.mods.cartographer.route: [\"vega\"]\n\
             \x20   + data.mods.cartographer.waypoints: [{{\"name\":\"Vega\",\"system\":\"vega\"}}]\n"
        )
    );
    assert_unchanged(&saves, &before, "--diff --out-dir");

    // --report: each save's mods.
    let out = run_ok(
        root,
        &["--check", "--report", "-", "--mods", "mods", "saves"],
        1,
    );
    let report = parse(out.stdout.as_bytes());
    let entries = report.as_array().unwrap();
    assert_eq!(entries.len(), 2);
    for entry in entries {
        assert_eq!(text_at(entry, "status"), r#""outdated""#, "{entry}");
        assert_eq!(
            text_at(entry, "mods"),
            r#"[{"error":null,"from":1,"name":"cartographer","status":"outdated","to":3}]"#,
            "{entry}"
        );
    }
    // Without the mod: not installed.
    let out = run_ok(root, &["--check", "--report", "-", "saves/removed.json"], 0);
    assert_eq!(
        text_at(&parse(out.stdout.as_bytes()), "[0].mods"),
        r#"[{"error":null,"from":1,"name":"cartographer","status":"not-installed","to":1}]"#
    );
    assert_unchanged(&saves, &before, "--report");

    // chain --json: the mods after the game's steps.
    let out = run_ok(root, &["chain", "--json", "--mods", "mods"], 0);
    let chain = parse(out.stdout.as_bytes());
    assert_eq!(at(&chain, "mods").as_array().unwrap().len(), 1);
    assert_eq!(text_at(&chain, "mods[0].name"), r#""cartographer""#);
    assert_eq!(text_at(&chain, "mods[0].release"), r#""2.0.0""#);
    assert_eq!(text_at(&chain, "mods[0].after"), "[]");
    assert_eq!(text_at(&chain, "mods[0].oldest"), "1");
    assert_eq!(text_at(&chain, "mods[0].latest"), "3");
    assert_eq!(
        text_at(&chain, "mods[0].steps[1]"),
        format!(
            r#"{{"description":"{ROUTE}","from":2,"kind":"lua","name":"0002-route-as-waypoints.lua","to":3}}"#
        )
    );
    assert_eq!(text_at(&chain, "latest"), "9");
    let out = run_ok(root, &["chain", "--json"], 0);
    assert_eq!(text_at(&parse(out.stdout.as_bytes()), "mods"), "[]");
    let out = run_ok(root, &["chain", "--mods", "mods"], 0);
    assert!(
        out.stdout.contains(&format!(
            "mod cartographer: versions 1 to 3, 2 steps, release 2.0.0\n  1 -> 2  lua   {NOTES}  (0001-notes-become-records.lua)\n"
        )),
        "{out}"
    );

    // inspect --json: each mod with its status and the steps that would run.
    let out = run_ok(
        root,
        &["inspect", "--json", "--mods", "mods", "saves/removed.json"],
        0,
    );
    let facts = parse(out.stdout.as_bytes());
    assert_eq!(text_at(&facts, "version"), "9");
    assert_eq!(text_at(&facts, "steps"), "[]");
    assert_eq!(at(&facts, "mods").as_array().unwrap().len(), 1);
    for (member, value) in [
        ("name", r#""cartographer""#),
        ("version", "1"),
        ("latest", "3"),
        ("status", r#""outdated""#),
        ("refused", "null"),
        ("steps[0].name", r#""0001-notes-become-records.lua""#),
        ("steps[1].from", "2"),
        ("steps[1].to", "3"),
    ] {
        assert_eq!(
            text_at(&facts, &format!("mods[0].{member}")),
            value,
            "{member}"
        );
    }
    assert_eq!(at(&facts, "mods[0].steps").as_array().unwrap().len(), 2);
    let out = run_ok(root, &["inspect", "--json", "saves/removed.json"], 0);
    assert_eq!(
        text_at(&parse(out.stdout.as_bytes()), "mods"),
        r#"[{"held":null,"latest":null,"name":"cartographer","refused":null,"status":"not-installed","steps":[],"version":1}]"#
    );
    let out = run_ok(
        root,
        &["inspect", "--mods", "mods", "saves/removed.json"],
        0,
    );
    assert!(
        out.stdout.contains(&format!(
            "  the game's data is up to date\n  mod cartographer: version 1 (latest 3)\n    would run 1 -> 2 lua  {NOTES}\n    would run 2 -> 3 lua  {ROUTE}\n"
        )),
        "{out}"
    );
    assert_unchanged(&saves, &before, "chain and inspect");
}

// ---------------------------------------------------------------------------------------
// 8. Hostile mod steps.

#[test]
fn mod_steps_keep_nothing_across_saves_and_never_meet_another_mod() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // The game's step leaves a global too.
    write(
        root.join("game/0001-shield.lua"),
        "-- Ships get a shield.\nreturn function(data) GAME_SECRET = 'game'; data.ship.shield = 100 end\n",
    );
    // Each mod counts in a global, in its file's local and in a helper module of the same
    // name as the other mod's, and looks for everything the others may have left.
    let step = |me: &str, other: &str| {
        format!(
            "-- Counts what it has seen.\n\
             local util = require('lib.util')\n\
             local calls = 0\n\
             return function(data)\n\
             \x20 calls = calls + 1\n\
             \x20 COUNT = (rawget(_G, 'COUNT') or 0) + 1\n\
             \x20 util.count = util.count + 1\n\
             \x20 local mine = data.mods['{me}']\n\
             \x20 mine.calls, mine.count, mine.helper, mine.owner = calls, COUNT, util.count, util.owner\n\
             \x20 mine.saw_other = tostring(rawget(_G, 'SECRET_{other}'))\n\
             \x20 mine.saw_game = tostring(rawget(_G, 'GAME_SECRET'))\n\
             \x20 SECRET_{me} = '{me} was here'\n\
             end\n"
        )
    };
    for (me, other) in [("alpha", "beta"), ("beta", "alpha")] {
        write_mod(
            &root.join("mods").join(me),
            &format!(r#"{{"name": "{me}", "release": "1.0.0"}}"#),
            &[
                ("0001-count.lua", &step(me, other)),
                (
                    "lib/util.lua",
                    &format!("return {{ owner = '{me}', count = 0 }}\n"),
                ),
            ],
        );
    }
    let save = r#"{"meta": {"version": 1, "mods": {"alpha": {"version": 1}, "beta": {"version": 1}}},
                   "data": {"ship": {}, "mods": {"alpha": {}, "beta": {}}}}"#;
    for name in ["one", "two", "three"] {
        write(root.join(format!("saves/{name}.json")), save);
    }
    let before = files(&root.join("saves"));
    let out = run_ok(
        root,
        &own(&["--jobs", "1", "--out-dir", "out", "--mods", "mods", "saves"]),
        0,
    );
    assert!(
        out.stderr
            .contains("upgraded 3, already current 0, failed 0"),
        "{out}"
    );
    assert_unchanged(&root.join("saves"), &before, "--out-dir");
    let written = files(&root.join("out"));
    assert_eq!(written.len(), 3);
    let first = &written["one.json"];
    for (name, bytes) in &written {
        assert!(
            bytes == first,
            "{name} differs from one.json:\n{}\n{}",
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(first)
        );
    }
    let upgraded = parse(first);
    for (me, other) in [("alpha", "beta"), ("beta", "alpha")] {
        assert_eq!(
            text_at(&upgraded, &format!("data.mods.{me}")),
            format!(
                r#"{{"calls":1,"count":1,"helper":1,"owner":"{me}","saw_game":"nil","saw_other":"nil"}}"#
            ),
            "{other}'s state reached {me}"
        );
        assert_eq!(
            text_at(&upgraded, &format!("meta.mods.{me}")),
            r#"{"version":2,"writer":"1.0.0"}"#
        );
    }
}

#[test]
fn an_endless_mod_step_fails_its_save_on_the_budget_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_game(root);
    write_tinker(&root.join("mods"));
    write_mod(
        &root.join("mods/spin"),
        r#"{"name": "spin", "release": "1.0.0"}"#,
        &[(
            "0001-spin.lua",
            "-- Never returns.\nreturn function(data)\n  while true do end\nend\n",
        )],
    );
    let spin =
        r#"{"meta": {"version": 1, "mods": {"spin": {"version": 1}}}, "data": {"ship": {}}}"#;
    let fine = r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1}}}, "data": {"ship": {}, "mods": {"tinker": {"charge": 2}}}}"#;
    write(root.join("saves/a-fine.json"), fine);
    write(root.join("saves/b-spin.json"), spin);
    write(root.join("saves/c-fine.json"), fine);
    let before = files(&root.join("saves"));

    let started = Instant::now();
    let out = run_ok(
        root,
        &own(&["--jobs", "2", "--mods", "mods", "--no-backup", "saves"]),
        2,
    );
    let took = started.elapsed();
    // 300 million instructions take a second or two; the time limit (30 s) is not what
    // stopped it.
    assert!(took < Duration::from_secs(25), "took {took:?}");
    assert!(
        out.stderr.contains(
            "error: saves/b-spin.json: mod spin: step 0001-spin.lua, version 1 to 2, failed: \
             the script ran more than 300000000 Lua instructions and was stopped"
        ),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("upgraded 2, already current 0, failed 1"),
        "{out}"
    );
    let after = files(&root.join("saves"));
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        ["a-fine.json", "b-spin.json", "c-fine.json"]
    );
    assert!(after["b-spin.json"] == before["b-spin.json"]);
    for name in ["a-fine.json", "c-fine.json"] {
        let save = parse(&after[name]);
        assert_eq!(text_at(&save, "meta.version"), "2");
        assert_eq!(
            text_at(&save, "meta.mods.tinker"),
            r#"{"version":3,"writer":"1.2.0"}"#
        );
        assert_eq!(text_at(&save, "data.mods.tinker.charge"), "20");
    }
}

// ---------------------------------------------------------------------------------------
// 9. Manifest errors.

#[test]
fn manifest_errors_name_the_file_and_write_nothing() {
    let dir = with_cartographer();
    let root = dir.path();
    copy_in(
        "examples/saves/cartographer.json",
        &root.join("saves/cartographer.json"),
    );
    let manifest = root.join("mods/cartographer/mod.json");
    let pristine = fs::read(&manifest).unwrap();
    let commands: [&[&str]; 5] = [
        &["--mods", "mods", "saves"],
        &["--out-dir", "out", "--mods", "mods", "saves"],
        &["chain", "--mods", "mods"],
        &["inspect", "--mods", "mods", "saves/cartographer.json"],
        &["cache", "build", "--mods", "mods", "saves"],
    ];
    let check = |what: &str, expected: &[&str]| {
        let before = files(root);
        for args in commands {
            let out = run_ok(root, args, 2);
            for text in expected {
                assert!(out.stderr.contains(text), "{what}: {args:?}: {out}");
            }
            assert_unchanged(root, &before, what);
        }
    };

    // A misspelt member: the file, its line and column.
    fs::write(
        &manifest,
        "{\n  \"name\": \"cartographer\",\n  \"relase\": \"2.0.0\"\n}\n",
    )
    .unwrap();
    check(
        "a misspelt member",
        &[
            "error: mods/cartographer/mod.json:3:3: at relase: expected only \"name\", \"release\" and \"after\" in a mod's manifest",
            "3 |   \"relase\": \"2.0.0\"",
        ],
    );

    // No manifest.
    fs::remove_file(&manifest).unwrap();
    check(
        "a missing mod.json",
        &["error: cannot read mods/cartographer/mod.json, the manifest every mod folder has"],
    );

    // Two mods that each come after the other.
    fs::write(
        &manifest,
        String::from_utf8(pristine)
            .unwrap()
            .replace("\"after\": []", "\"after\": [\"tinker\"]"),
    )
    .unwrap();
    write_tinker(&root.join("mods"));
    fs::write(
        root.join("mods/tinker/mod.json"),
        r#"{"name": "tinker", "release": "1.2.0", "after": ["cartographer"]}"#,
    )
    .unwrap();
    check(
        "a cycle in after",
        &["error: the mods cartographer (mods/cartographer/mod.json), tinker (mods/tinker/mod.json) each come after another of them"],
    );
}

/// Folders need not carry their mod's name: an error about mods that clash must say which
/// manifests to open.
#[test]
fn a_cycle_or_a_clash_of_names_names_the_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_game(root);
    write(
        root.join("saves/a.json"),
        r#"{"meta": {"version": 1}, "data": {}}"#,
    );
    write_mod(
        &root.join("cycle/first-folder"),
        r#"{"name": "x", "release": "1.0.0", "after": ["y"]}"#,
        &[],
    );
    write_mod(
        &root.join("cycle/second-folder"),
        r#"{"name": "y", "release": "1.0.0", "after": ["x"]}"#,
        &[],
    );
    write_mod(
        &root.join("clash/first-folder"),
        r#"{"name": "x", "release": "1.0.0"}"#,
        &[],
    );
    write_mod(
        &root.join("clash/second-folder"),
        r#"{"name": "x", "release": "2.0.0"}"#,
        &[],
    );
    let before = files(root);
    for mods in ["cycle", "clash"] {
        let out = run_ok(root, &own(&["--mods", mods, "saves"]), 2);
        assert_unchanged(root, &before, mods);
        for folder in ["first-folder", "second-folder"] {
            assert!(
                out.stderr.contains(&format!("{mods}/{folder}/mod.json")),
                "{mods}: the error does not say which manifests: {out}"
            );
        }
    }
}

/// A manifest's `release` that is not a semantic version: the error is about the mod's
/// release in its manifest, not about a game's writer.
#[test]
fn a_release_that_is_no_version_is_called_the_mods_release() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_game(root);
    write(
        root.join("saves/a.json"),
        r#"{"meta": {"version": 1}, "data": {}}"#,
    );
    write_mod(
        &root.join("mods/x"),
        "{\n  \"name\": \"x\",\n  \"release\": \"1.0\"\n}\n",
        &[],
    );
    let before = files(root);
    let out = run_ok(root, &own(&["--mods", "mods", "saves"]), 2);
    assert_unchanged(root, &before, "a bad release");
    assert!(out.stderr.contains("mods/x/mod.json"), "{out}");
    assert!(out.stderr.contains("mod.json:3:14: at release: "), "{out}");
    assert!(
        out.stderr.contains("release") && !out.stderr.contains("the game's version"),
        "the message speaks of the game's writer, not of the mod's release: {out}"
    );
}

/// The README's section "Mods" quotes the summary that `--keep-going` prints for its own
/// command over the example saves: the quote must be what the tool prints.
#[test]
fn the_readme_quotes_the_keep_going_summary_the_tool_prints() {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["examples/saves", "mods"] {
        copy_dir(&Path::new(ROOT).join(folder), &dir.path().join(folder));
    }
    let readme = fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    // The README's Mods commands, run in order, each with the exit status its comment says
    // (0 when it says none): a run writes what the next one finds.
    let keep_going = "--out-dir target/modded-kept --mods mods/ --keep-going examples/saves/";
    let block = readme
        .split("```sh\n")
        .find(|b| b.contains(keep_going))
        .expect("the README's Mods commands");
    let block = &block[..block.find("```").unwrap()];
    let mut last = None;
    for line in block.lines().filter_map(|l| l.strip_prefix("$B ")) {
        let (command, comment) = line.split_once('#').unwrap_or((line, ""));
        let code = comment
            .trim()
            .strip_prefix("exit ")
            .map_or(0, |c| c[..1].parse().unwrap());
        let args: Vec<&str> = command.split_whitespace().collect();
        let out = run_ok(dir.path(), &args, code);
        if command.trim() == keep_going {
            last = Some(out);
        }
    }
    let out = last.expect("the README runs the keep-going command");
    let summary = out.stderr.lines().last().unwrap();
    assert!(summary.starts_with("upgraded "), "{out}");
    // As the README wraps it.
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains(&format!("`{summary}`")),
        "the README should quote `{summary}`"
    );
}

/// A mod's status is one word, spelt the same in the report and in the dry run's summary
/// as in the C ABI and the Lua module (`ModStatus::word`): `not-in-the-save`.
#[test]
fn a_mod_status_is_spelt_alike_in_the_report_and_the_summary() {
    let out = run_ok(
        Path::new(ROOT),
        &[
            "--dry-run",
            "--mods",
            "mods",
            "--report",
            "-",
            "fixtures/v1/small.json",
        ],
        0,
    );
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let status = &report[0]["mods"][0]["status"];
    assert_eq!(status, "not-in-the-save", "{out}");
    assert_eq!(
        savechain::upgrade::ModStatus::NotInSave.word(),
        status.as_str().unwrap()
    );
    assert!(
        out.stderr
            .contains("  mod cartographer: version none, not-in-the-save\n"),
        "{out}"
    );
}

/// A save that fails because of a mod, without `--keep-going`: the summary is followed by
/// one line saying what `--keep-going` would do, and the report's entry of that mod has
/// the version the save has it at, and the one it was being upgraded to.
#[test]
fn a_save_failed_by_a_mod_hints_at_keep_going_and_reports_the_mod_s_versions() {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["examples/saves", "mods"] {
        copy_dir(&Path::new(ROOT).join(folder), &dir.path().join(folder));
    }
    let args = [
        "--out-dir",
        "o",
        "--mods",
        "mods/",
        "--report",
        "r.json",
        "examples/saves/",
    ];
    let out = run_ok(dir.path(), &args, 2);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "upgraded 2, already current 0, failed 1",
            "1 save failed because of a mod: --keep-going upgrades the rest of such saves and \
             holds the mod back (exit 1)",
        ],
        "{out}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    let broken = report
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "examples/saves/cartographer-broken.json")
        .unwrap();
    let cartographer = &broken["mods"][0];
    assert_eq!(cartographer["status"], "failed", "{report}");
    assert_eq!(cartographer["from"], 1, "{report}");
    assert_eq!(cartographer["to"], 3, "{report}");
    // With --keep-going there is nothing to hint at.
    let args = [
        "--out-dir",
        "k",
        "--mods",
        "mods/",
        "--keep-going",
        "examples/saves/",
    ];
    let out = run_ok(dir.path(), &args, 1);
    assert!(!out.stderr.contains("--keep-going upgrades"), "{out}");
}
