//! The upgrade chain: the example game's history on every fixture, and the chain's rules.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use savechain::upgrade::{Chain, Step, StepContext, Upgraded};
use savechain::Options;
use savechain::{ErrorKind, Save, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

fn fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(FIXTURES)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn strict() -> Options {
    let mut options = Options::default();
    options.strict = true;
    options.diff = true;
    options
}

fn up_to(target: u64) -> Options {
    let mut options = Options::default();
    options.target = Some(target);
    options
}

fn upgrade(chain: &Chain, save: Save, options: &Options) -> savechain::Result<Upgraded> {
    chain.upgrader().upgrade(save, options)
}

/// The strict report of each step, then the upgraded save.
fn report(upgraded: &Upgraded) -> String {
    let mut out = format!("version {} to {}\n", upgraded.from, upgraded.to);
    for step in &upgraded.steps {
        out.push_str(&format!(
            "{} -> {} {} {}: {}\n",
            step.from, step.to, step.kind, step.name, step.description
        ));
        let changes = step.changes.as_ref().unwrap();
        let paths = |list: &[savechain::upgrade::Change]| -> Vec<String> {
            list.iter().map(|c| c.path.clone()).collect()
        };
        for (sign, paths) in [
            ("added", &paths(&changes.added)),
            ("removed", &paths(&changes.removed)),
            ("changed", &paths(&changes.changed)),
            ("dropped", &step.dropped),
        ] {
            if !paths.is_empty() {
                out.push_str(&format!("  {sign}: {}\n", paths.join(", ")));
            }
        }
    }
    out.push('\n');
    out.push_str(&upgraded.save.to_string().unwrap());
    out
}

#[test]
fn the_example_chain_has_eight_steps_of_each_kind() {
    let chain = common::starlane::chain().unwrap();
    assert_eq!((chain.oldest(), chain.latest()), (1, 9));
    let count = |kind: &str| {
        chain
            .steps()
            .iter()
            .filter(|s| s.kind_name() == kind)
            .count()
    };
    assert_eq!(chain.steps().len(), 8);
    assert_eq!((count("lua"), count("declared"), count("rust")), (3, 2, 3));
}

#[test]
fn the_binary_carries_every_step_file_of_upgrades() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/upgrades");
    let chain = common::starlane::chain().unwrap();
    // Every file is a Lua or declared step of the built-in chain, or the Lua twin of one
    // of its Rust steps (the same versions), for programs that run no Rust steps.
    let rust: Vec<u64> = chain
        .steps()
        .iter()
        .filter(|s| s.kind_name() == "rust")
        .map(|s| s.from())
        .collect();
    let mut files: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lua") || n.ends_with(".json"))
        .filter(|n| !rust.contains(&n[..4].parse::<u64>().unwrap()))
        .collect();
    files.sort();
    let built_in: Vec<String> = chain
        .steps()
        .iter()
        .filter(|s| s.kind_name() != "rust")
        .map(|s| s.name().to_string())
        .collect();
    assert_eq!(
        built_in, files,
        "list new files of upgrades/ in src/bin/save-upgrade/starlane.rs"
    );
    assert_eq!(
        rust,
        [2, 5, 8],
        "each Rust step has its Lua twin in upgrades/"
    );
}

#[test]
fn the_binary_carries_every_recorded_shape_of_upgrades() {
    // The built-in chain's shapes are those of its Lua twin's folder, every one of them.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/upgrades");
    let built_in = common::starlane::chain().unwrap();
    let twin = savechain::upgrade::Chain::from_lua_dir("0.1.0", dir).unwrap();
    assert_eq!(
        built_in.shapes().iter().collect::<Vec<_>>(),
        twin.shapes().iter().collect::<Vec<_>>(),
        "list new files of upgrades/shapes/ in src/bin/save-upgrade/starlane.rs"
    );
    let versions: Vec<u64> = built_in.shapes().iter().map(|(v, _)| v).collect();
    assert_eq!(
        versions,
        (1..=built_in.latest()).collect::<Vec<_>>(),
        "every version of the example game has a recorded shape"
    );
}

#[test]
fn every_fixture_upgrades_strictly_to_the_latest() {
    let chain = common::starlane::chain().unwrap();
    let files = fixtures();
    let versions: std::collections::BTreeSet<u64> = files
        .iter()
        .map(|f| Save::load(f).unwrap().meta.version)
        .collect();
    assert_eq!(
        versions.into_iter().collect::<Vec<_>>(),
        (1..=9).collect::<Vec<_>>()
    );
    for file in files {
        let name = file
            .strip_prefix(FIXTURES)
            .unwrap()
            .display()
            .to_string()
            .replace(['/', '.'], "_");
        let upgraded = upgrade(&chain, Save::load(&file).unwrap(), &strict())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(upgraded.save.meta.version, 9);
        insta::assert_snapshot!(name, report(&upgraded));
    }
}

#[test]
fn fixtures_of_every_version_agree_with_the_chain() {
    // vN/small.json and vN/edge.json are v1's upgraded with --to N; upgrading them the rest
    // of the way gives what upgrading v1 does in one go.
    let chain = common::starlane::chain().unwrap();
    for name in ["small.json", "edge.json"] {
        let v1 = Save::load(format!("{FIXTURES}/v1/{name}")).unwrap();
        let whole = upgrade(&chain, v1.clone(), &Options::default())
            .unwrap()
            .save;
        for n in 2..=9 {
            let fixture = Save::load(format!("{FIXTURES}/v{n}/{name}")).unwrap();
            let partial = up_to(n);
            let to_n = upgrade(&chain, v1.clone(), &partial).unwrap().save;
            assert_eq!(to_n.data, fixture.data, "v{n}/{name}");
            let rest = upgrade(&chain, fixture, &Options::default()).unwrap().save;
            assert_eq!(rest.data, whole.data, "v{n}/{name} to 9");
        }
    }
}

#[test]
fn edge_values_survive_the_whole_chain() {
    let chain = common::starlane::chain().unwrap();
    let v1 = Save::load(format!("{FIXTURES}/v1/edge.json")).unwrap();
    let notes = v1.data.get("notes").unwrap().clone();
    let upgraded = upgrade(&chain, v1, &Options::default()).unwrap().save;
    // Five Lua steps and three Rust steps later, untouched data is bit for bit the same.
    assert_eq!(upgraded.data.get("notes"), Some(&notes));
    let position = upgraded
        .data
        .get("ship")
        .and_then(|s| s.get("position"))
        .and_then(Value::as_array)
        .unwrap()
        .clone();
    assert_eq!(position[0].as_f64().unwrap().to_bits(), (-0.0f64).to_bits());
    assert!(position[2].as_f64().unwrap().is_nan());
}

#[test]
fn history_records_each_run() {
    let chain = common::starlane::chain().unwrap();
    let v1 = Save::load(format!("{FIXTURES}/v1/small.json")).unwrap();
    let to_4 = up_to(4);
    let halfway = upgrade(&chain, v1, &to_4).unwrap().save;
    let done = upgrade(&chain, halfway, &Options::default()).unwrap().save;
    assert_eq!(
        done.meta.extra.get("history").unwrap().to_string(),
        r#"[{"from":1,"to":4,"writer":"0.1.0"},{"from":4,"to":9,"writer":"0.1.0"}]"#
    );
    assert_eq!(
        done.meta.writer.unwrap().to_string(),
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn saves_outside_the_chain_are_refused_naming_both_versions() {
    let chain = common::starlane::chain().unwrap();
    let too_new = Save::from_str(
        r#"{"meta": {"game": "Starlane Traders", "version": 12, "writer": "2.3.0"}, "data": {}}"#,
    )
    .unwrap();
    let err = upgrade(&chain, too_new, &Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade);
    assert!(
        err.to_string().contains(
            "version 12, written by 2.3.0, newer than this program knows (latest version 9)"
        ),
        "{err}"
    );
    let too_old =
        Save::from_str(r#"{"meta": {"game": "Starlane Traders", "version": 0}, "data": {}}"#)
            .unwrap();
    let err = upgrade(&chain, too_old, &Options::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("older than the oldest version this chain upgrades (1)"),
        "{err}"
    );
}

#[test]
fn the_example_chain_refuses_saves_of_another_game_or_none() {
    let chain = common::starlane::chain().unwrap();
    let other =
        Save::from_str(r#"{"meta": {"game": "Dust Rangers", "version": 9}, "data": {}}"#).unwrap();
    let err = upgrade(&chain, other, &Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade);
    assert_eq!(
        err.to_string(),
        "at meta.game: the save is of the game \"Dust Rangers\", and this chain upgrades only \
         saves of \"Starlane Traders\"; it is left as it is. Upgrade it with its own game's chain \
         (with save-upgrade: --upgrades DIR --writer VERSION)"
    );
    let none = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    let err = upgrade(&chain, none, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "at meta.game: the save names no game, and this chain upgrades only saves of \
         \"Starlane Traders\"; it is left as it is. Upgrade a save of another game with its own \
         game's chain (with save-upgrade: --upgrades DIR --writer VERSION); to a save of \
         \"Starlane Traders\", add \"game\": \"Starlane Traders\" to its meta"
    );
    // The game is checked before the version: a save of another game is not "too new".
    let other_and_new =
        Save::from_str(r#"{"meta": {"game": "Dust Rangers", "version": 40}, "data": {}}"#).unwrap();
    let err = upgrade(&chain, other_and_new, &Options::default()).unwrap_err();
    assert!(err.to_string().contains("Dust Rangers"), "{err}");
    // A name that is not a string is refused as what it is.
    let odd = Save::from_str(r#"{"meta": {"game": 7, "version": 9}, "data": {}}"#).unwrap();
    let err = upgrade(&chain, odd, &Options::default()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("at meta.game: expected a string naming the game, found an integer"),
        "{err}"
    );
}

#[test]
fn a_failing_step_is_named() {
    let chain = common::starlane::chain().unwrap();
    let broken = Save::from_str(
        r#"{"meta": {"game": "Starlane Traders", "version": 8}, "data": {"ship": {"cargo": 5}}}"#,
    )
    .unwrap();
    let err = upgrade(&chain, broken, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "step 0008 (rust), version 8 to 9, failed: ship.cargo is not an array"
    );
    let broken = Save::from_str(
        r#"{"meta": {"game": "Starlane Traders", "version": 7}, "data": {"lua": {}}}"#,
    )
    .unwrap();
    let err = upgrade(&chain, broken, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "step 0007-mission-log.lua, version 7 to 8, failed on line 7: \
         attempt to index a nil value (local 'missions')"
    );
    assert_eq!(err.lua_failure(), Some(savechain::LuaFailure::Runtime));
    // A save edited by hand to say an older version than its data has: its history says
    // so, and it is refused before any step runs.
    let mut edited: Save =
        Save::from_slice(&std::fs::read("fixtures/v9/small.json").unwrap()).unwrap();
    edited.meta.version = 5;
    let err = upgrade(&chain, edited.clone(), &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "at meta.version: the save says it is version 5 but its history records an upgrade to \
         version 9: was its version edited by hand? Upgrading would run the steps from 5 again \
         on data that has them already, so it is left as it is; if its data is version 9's, \
         set meta.version back to 9"
    );
    // Without a history to tell, the error says at which version its upgrade began.
    edited.meta.extra.remove("history");
    let err = upgrade(&chain, edited, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "step 0007-mission-log.lua, version 7 to 8, failed on line 7: \
         attempt to index a nil value (the save's upgrade began at version 5, its meta.version)"
    );
}

fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, source) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, source).unwrap();
    }
    dir
}

fn chain_error(dir: &Path) -> String {
    Chain::from_lua_dir("1.0.0", dir).unwrap_err().to_string()
}

#[test]
fn the_chain_is_checked_before_any_save_is_touched() {
    let step = "return function(data) end";
    let gap = folder(&[("0001-a.lua", step), ("0003-c.lua", step)]);
    assert!(chain_error(gap.path()).contains("gap in the chain: 0001-a.lua goes to version 2, but the next step, 0003-c.lua, starts from version 3"));
    let twice = folder(&[("0001-a.lua", step), ("0001-b.lua", step)]);
    assert!(
        chain_error(twice.path()).contains("two steps from version 1: 0001-a.lua and 0001-b.lua")
    );
    let misnamed = folder(&[("0001-a.lua", step), ("2-b.lua", step)]);
    let err = chain_error(misnamed.path());
    assert!(
        err.contains("2-b.lua") && err.contains("expected NNNN-short-description.lua"),
        "{err}"
    );
}

#[test]
fn lua_steps_from_a_folder_may_require_their_own_modules() {
    let dir = folder(&[
        ("0001-add-gold.lua", "-- Adds gold.\nlocal util = require('lib.util')\nreturn function(data, ctx) data.gold = util.start(ctx) end"),
        ("0002-double-gold.lua", "return function(data) return { gold = data.gold * 2, seen = data.gold } end"),
        ("lib/util.lua", "return { start = function(ctx) return ctx.from * 10 + ctx.meta.version end }"),
    ]);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    assert_eq!(chain.steps()[0].description(), "Adds gold.");
    assert_eq!(chain.steps()[1].description(), "double gold");
    let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    let upgraded = upgrade(&chain, save, &Options::default()).unwrap().save;
    assert_eq!(upgraded.data.to_string(), r#"{"gold":22,"seen":11}"#);
}

#[test]
fn strict_mode_refuses_undeclared_removals() {
    let dir = folder(&[(
        "0001-lose-hp.lua",
        "return function(data) data.hp = nil end",
    )]);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    let save = || Save::from_str(r#"{"meta": {"version": 1}, "data": {"hp": 3}}"#).unwrap();
    let err = upgrade(&chain, save(), &strict()).unwrap_err();
    assert!(
        err.to_string()
            .contains("strict: it removed data.hp without declaring it dropped"),
        "{err}"
    );
    assert!(upgrade(&chain, save(), &Options::default()).is_ok());

    fn drops_hp(data: &mut Value, ctx: &mut StepContext) -> Result<(), String> {
        ctx.drop_path(data, "hp");
        Ok(())
    }
    let declared = Chain::new("1.0.0", vec![Step::rust(1, "drop hp", "1", drops_hp)]).unwrap();
    let upgraded = upgrade(&declared, save(), &strict()).unwrap();
    assert_eq!(upgraded.steps[0].dropped, ["data.hp"]);
}

/// The error of making the chain of `files` in a steps folder, with the folder's path
/// replaced by `steps`.
fn folder_error(files: &[(&str, &str)]) -> String {
    let dir = folder(files);
    chain_error(dir.path()).replace(&dir.path().display().to_string(), "steps")
}

#[test]
fn making_a_chain_compiles_every_lua_step() {
    let ok = "return function(data) end";
    let err = folder_error(&[
        ("0001-a.lua", ok),
        (
            "0002-b.lua",
            "-- B.\nreturn function(data)\n  data.x = = 1\nend",
        ),
    ]);
    assert_eq!(
        err,
        "steps/0002-b.lua: syntax error on line 3: unexpected symbol near '='"
    );
    let err = folder_error(&[("0001-a.lua", "return function(data)\n  if data then\nend")]);
    assert_eq!(
        err,
        "steps/0001-a.lua: syntax error on line 3: 'end' expected (to close 'function' at line 1) near <eof>"
    );
    // In memory, the file is the step's name.
    let err = Chain::new(
        "1.0.0",
        vec![Step::lua("0001-a.lua", "return function(data) data.x = = 1 end").unwrap()],
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade);
    assert_eq!(err.file(), Some(Path::new("0001-a.lua")));
    assert_eq!(
        err.to_string(),
        "0001-a.lua: syntax error on line 1: unexpected symbol near '='"
    );
}

#[test]
fn a_step_file_must_return_a_function() {
    for (source, returned) in [
        ("local function up(data) end", "nothing"),
        ("return 42", "a number"),
        ("return { up = function() end }", "a table"),
        ("return", "nothing"),
        ("return nil, function() end", "nothing"),
    ] {
        let err = folder_error(&[("0001-a.lua", source)]);
        assert_eq!(
            err,
            format!(
                "steps/0001-a.lua: the file must return the step's function(data, ctx); it returned {returned}"
            ),
            "{source}"
        );
    }
}

#[test]
fn a_step_file_whose_top_level_fails_is_named() {
    let err = folder_error(&[(
        "0001-a.lua",
        "local up = require('savechain.upgrade')\nlocal x = nil + 1\nreturn function() end",
    )]);
    assert!(
        err.starts_with("steps/0001-a.lua: the file failed on line 2 before returning its function: attempt to perform arithmetic on a nil value"),
        "{err}"
    );
    assert!(!err.contains("stack traceback"), "{err}");
    let err = folder_error(&[(
        "0001-a.lua",
        "local util = require('lib.missing')\nreturn function() end",
    )]);
    assert!(
        err.starts_with(
            "steps/0001-a.lua: the file failed on line 1 before returning its function: "
        ) && err.contains("module \"lib.missing\" not found"),
        "{err}"
    );
    // A syntax error in a helper is found through the step that requires it.
    let err = folder_error(&[
        (
            "0001-a.lua",
            "local util = require('lib.util')\nreturn function() end",
        ),
        ("lib/util.lua", "return {"),
    ]);
    assert!(
        err.starts_with(
            "steps/0001-a.lua: the file failed on line 1 before returning its function: "
        ) && err.contains("steps/lib/util.lua:1:"),
        "{err}"
    );
    let err = folder_error(&[("0001-a.lua", "while true do end")]);
    assert!(
        err.starts_with("steps/0001-a.lua: the file failed before returning its function: the script ran more than"),
        "{err}"
    );
}

#[test]
fn checking_a_step_does_not_run_its_function() {
    let dir = folder(&[
        (
            "0001-a.lua",
            "local util = require('lib.util')\nreturn function(data) error('ran ' .. util.name) end",
        ),
        ("lib/util.lua", "return { name = 'util' }"),
    ]);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    let err = upgrade(&chain, save, &Options::default()).unwrap_err();
    assert!(err.to_string().contains("ran util"), "{err}");
}

#[test]
fn misnamed_files_in_a_steps_folder_are_errors_naming_them() {
    let step = "return function(data) end";
    for (name, hint) in [
        ("0002-b.LUA", "the extension is .lua, in lowercase"),
        ("0002-b.Lua", "the extension is .lua, in lowercase"),
        ("2-b.lua", "helper modules go in a subfolder"),
        ("0002_b.lua", "helper modules go in a subfolder"),
        ("0002-B.lua", "helper modules go in a subfolder"),
        ("0002-b c.lua", "helper modules go in a subfolder"),
        ("00002-b.lua", "helper modules go in a subfolder"),
        ("util.lua", "helper modules go in a subfolder"),
        ("0002-b.lua.bak", "a file whose name starts with a digit is taken for a step: keep others out of the steps folder"),
        ("0002-b.txt", "a file whose name starts with a digit is taken for a step: keep others out of the steps folder"),
        ("2.lua~", "a file whose name starts with a digit is taken for a step: keep others out of the steps folder"),
        ("2-b.json", "a .json file whose name starts with a digit is taken for a declared step"),
        ("0002-B.json", "a .json file whose name starts with a digit is taken for a declared step"),
        ("0002-b.JSON", "the extension is .json, in lowercase"),
    ] {
        let err = folder_error(&[("0001-a.lua", step), (name, step)]);
        assert_eq!(
            err,
            format!(
                "steps/{name}: not a step file name: expected NNNN-short-description.lua, or .json \
                 for a declared step (four digits, the version it upgrades from, then lowercase \
                 words joined by '-'); {hint}"
            ),
        );
    }
    // Other files, hidden ones and subfolders are not taken for steps.
    let dir = folder(&[
        ("0001-a.lua", step),
        ("README.md", "# Steps"),
        ("notes.txt", "x"),
        ("mod.json", "{}"),
        ("settings.json", "not even JSON"),
        (".0002-b.lua.swp", "x"),
        (".hidden.lua", "x"),
        ("2d/geometry.lua", "return {}"),
        ("0002-b.lua/x.lua", "return {}"),
    ]);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    assert_eq!(chain.latest(), 2);
}

#[test]
fn what_a_lua_step_prints_is_in_its_report() {
    let dir = folder(&[
        (
            "0001-a.lua",
            "print('loading a')\nreturn function(data, ctx) print('from', ctx.from, data.n) data.n = data.n + 1 end",
        ),
        ("0002-b.lua", "return function(data) end"),
        (
            "0003-c.lua",
            "return function(data) print('c sees', data.n) print(setmetatable({}, { __tostring = function() return 'ship' end })) end",
        ),
    ]);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    let mut upgrader = chain.upgrader();
    let save = || Save::from_str(r#"{"meta": {"version": 1}, "data": {"n": 1}}"#).unwrap();
    let upgraded = upgrader.upgrade(save(), &Options::default()).unwrap();
    let printed: Vec<(&str, Vec<String>)> = upgraded
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.printed.clone()))
        .collect();
    assert_eq!(
        printed,
        [
            (
                "0001-a.lua",
                vec!["loading a".to_string(), "from\t1\t1".to_string()]
            ),
            ("0002-b.lua", vec![]),
            (
                "0003-c.lua",
                vec!["c sees\t2".to_string(), "ship".to_string()]
            ),
        ]
    );
    assert!(upgrader.failed_steps().is_empty());
    // Every save gets a sandbox of its own, where the file's top level runs again.
    let again = upgrader.upgrade(save(), &Options::default()).unwrap();
    assert_eq!(again.steps[0].printed, ["loading a", "from\t1\t1"]);
    // Strict mode and diffs do not change it.
    let strict = upgrader.upgrade(save(), &strict()).unwrap();
    assert_eq!(strict.steps[2].printed, ["c sees\t2", "ship"]);
}

#[test]
fn what_a_failing_upgrade_printed_is_kept_until_the_next() {
    let dir = folder(&[
        ("0001-a.lua", "return function(data) print('a ran') end"),
        (
            "0002-b.lua",
            "return function(data) print('b about to fail') error('b failed') end",
        ),
    ]);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    let mut upgrader = chain.upgrader();
    let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    let err = upgrader.upgrade(save, &Options::default()).unwrap_err();
    assert!(err.to_string().contains("b failed"), "{err}");
    let failed: Vec<(&str, &[String])> = upgrader
        .failed_steps()
        .iter()
        .map(|s| (s.name.as_str(), &s.printed[..]))
        .collect();
    assert_eq!(
        failed,
        [
            ("0001-a.lua", &["a ran".to_string()][..]),
            ("0002-b.lua", &["b about to fail".to_string()][..]),
        ]
    );
    // A save the chain refuses runs no step.
    let too_new = Save::from_str(r#"{"meta": {"version": 7}, "data": {}}"#).unwrap();
    assert!(upgrader.upgrade(too_new, &Options::default()).is_err());
    assert!(upgrader.failed_steps().is_empty());
}

#[test]
fn rust_steps_print_nothing() {
    fn noop(_: &mut Value, _: &mut StepContext) -> Result<(), String> {
        Ok(())
    }
    let chain = Chain::new("1.0.0", vec![Step::rust(1, "noop", "1", noop)]).unwrap();
    let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    let upgraded = upgrade(&chain, save, &Options::default()).unwrap();
    assert!(upgraded.steps[0].printed.is_empty());
}

fn add_gold(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
    data.as_object_mut()
        .ok_or("data is not an object")?
        .insert("gold", Value::Int(10));
    Ok(())
}

/// A save at version 1, of `game` (or of none).
fn save_of(game: Option<&str>) -> Save {
    let game = game.map_or(String::new(), |g| format!(r#""game": "{g}", "#));
    Save::from_str(&format!(
        r#"{{"meta": {{{game}"version": 1}}, "data": {{}}}}"#
    ))
    .unwrap()
}

#[test]
fn a_chain_named_for_its_game_upgrades_only_that_games_saves() {
    let steps = || vec![Step::rust(1, "gold", "1", add_gold)];
    let chain = Chain::new("1.0.0", steps())
        .unwrap()
        .for_game("Hollow Keep")
        .unwrap();
    assert_eq!(chain.game(), Some("Hollow Keep"));
    let upgraded = upgrade(&chain, save_of(Some("Hollow Keep")), &Options::default()).unwrap();
    assert_eq!(upgraded.save.data.get("gold"), Some(&Value::Int(10)));
    assert_eq!(
        upgraded.save.meta.extra.get("game"),
        Some(&Value::from("Hollow Keep"))
    );

    let err = upgrade(&chain, save_of(Some("Dust Rangers")), &Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade);
    assert!(
        err.to_string().starts_with(
            "at meta.game: the save is of the game \"Dust Rangers\", and this chain upgrades only saves of \"Hollow Keep\"; it is left as it is."
        ),
        "{err}"
    );
    // Names are compared exactly.
    assert!(upgrade(&chain, save_of(Some("hollow keep")), &Options::default()).is_err());
    let err = upgrade(&chain, save_of(None), &Options::default()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("at meta.game: the save names no game"),
        "{err}"
    );
    // `with` keeps the name.
    assert_eq!(chain.with(vec![]).unwrap().game(), Some("Hollow Keep"));

    // A chain that names no game upgrades every save, as before.
    let any = Chain::new("1.0.0", steps()).unwrap();
    assert_eq!(any.game(), None);
    for game in [Some("Hollow Keep"), Some("Dust Rangers"), None] {
        let upgraded = upgrade(&any, save_of(game), &Options::default()).unwrap();
        assert_eq!(
            upgraded.save.meta.extra.get("game").and_then(Value::as_str),
            game
        );
    }
}

#[test]
fn a_game_name_cannot_be_empty() {
    for name in ["", "   "] {
        let err = Chain::new("1.0.0", vec![])
            .unwrap()
            .for_game(name)
            .unwrap_err();
        assert!(
            err.to_string().starts_with("a game's name cannot be empty"),
            "{err}"
        );
    }
}

#[test]
fn new_and_stored_again_saves_of_a_named_chain_name_the_game() {
    let chain = Chain::new("1.0.0", vec![])
        .unwrap()
        .for_game("Hollow Keep")
        .unwrap();
    let fresh = chain.new_save(Value::Int(1));
    assert_eq!(
        fresh.meta.extra.get("game"),
        Some(&Value::from("Hollow Keep"))
    );
    // A save loaded before the game named itself gets the name when stored again.
    let mut meta = save_of(None).meta;
    meta.extra.insert("note", Value::from("kept"));
    let again = chain.resave(meta, Value::Int(2));
    assert_eq!(
        again.meta.extra.get("game"),
        Some(&Value::from("Hollow Keep"))
    );
    assert_eq!(again.meta.extra.get("note"), Some(&Value::from("kept")));
    // One that names no game writes none, and keeps what the meta had.
    let any = Chain::new("1.0.0", vec![]).unwrap();
    assert_eq!(any.new_save(Value::Int(1)).meta.extra.get("game"), None);
    let kept = any.resave(save_of(Some("Dust Rangers")).meta, Value::Int(2));
    assert_eq!(
        kept.meta.extra.get("game"),
        Some(&Value::from("Dust Rangers"))
    );
}

#[test]
fn a_save_of_another_game_is_left_as_it_is_on_disk() {
    use savechain::upgrade::{upgrade_file, Target};
    let chain = common::starlane::chain().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.json");
    let text = r#"{"meta": {"game": "Dust Rangers", "version": 1}, "data": {"x": 1}}"#;
    fs::write(&path, text).unwrap();
    let out = dir.path().join("out.json");
    for target in [
        Target::InPlace { backup: true },
        Target::To(&out),
        Target::Nowhere,
    ] {
        let err =
            upgrade_file(&mut chain.upgrader(), &path, target, &Options::default()).unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "{}: at meta.game: the save is of the game \"Dust Rangers\"",
                path.display()
            )),
            "{err}"
        );
    }
    match savechain::cache::load(&path, &chain, &Options::default()) {
        Ok(_) => panic!("the cache loaded another game's save"),
        Err(err) => assert!(err.to_string().contains("Dust Rangers"), "{err}"),
    }
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["other.json"], "no backup, output nor cache");
}

#[test]
fn a_game_can_tell_why_a_lua_step_failed() {
    use savechain::lua::Limits;
    use savechain::LuaFailure;
    let mut options = Options::default();
    options.limits = Limits::new(2_000_000, 32 << 20);
    options.limits.time = std::time::Duration::from_millis(300);
    let save = || Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    for (body, why) in [
        ("while true do end", LuaFailure::InstructionBudget),
        (
            "local t = {} while true do t[#t + 1] = string.rep('x', 1 << 16) .. #t end",
            LuaFailure::MemoryLimit,
        ),
        ("error('no')", LuaFailure::Runtime),
        ("io.open('x')", LuaFailure::Runtime),
        ("data.f = print", LuaFailure::Unsaveable),
        (
            "data.t = setmetatable({}, { __index = {} })",
            LuaFailure::Unsaveable,
        ),
    ] {
        let source = format!("return function(data) {body} end");
        let chain = Chain::new("1.0.0", vec![Step::lua("0001-x.lua", &source).unwrap()]).unwrap();
        let err = chain.upgrader().upgrade(save(), &options).unwrap_err();
        assert_eq!(err.lua_failure(), Some(why), "{body}: {err}");
        assert_eq!(err.kind(), savechain::ErrorKind::Upgrade, "{body}");
    }
    let mut slow = options.clone();
    slow.limits.instructions = u64::MAX;
    let chain = Chain::new(
        "1.0.0",
        vec![Step::lua(
            "0001-x.lua",
            "return function() local s = string.rep('x', 1 << 20) while true do local t = s .. 'x' end end",
        )
        .unwrap()],
    )
    .unwrap();
    let err = chain.upgrader().upgrade(save(), &slow).unwrap_err();
    assert_eq!(err.lua_failure(), Some(LuaFailure::TimeLimit), "{err}");
    let err = Chain::new("1.0.0", vec![Step::lua("0001-x.lua", "return {").unwrap()]).unwrap_err();
    assert_eq!(err.lua_failure(), Some(LuaFailure::Syntax), "{err}");
    // A Rust step fails on its own terms, and none of these.
    fn refuse(_: &mut Value, _: &mut savechain::upgrade::StepContext) -> Result<(), String> {
        Err("no".into())
    }
    let chain = Chain::new("1.0.0", vec![Step::rust(1, "refuses", "1", refuse)]).unwrap();
    let err = chain.upgrader().upgrade(save(), &options).unwrap_err();
    assert_eq!(err.lua_failure(), None);
}

#[test]
fn a_rust_step_that_panics_fails_its_save_only() {
    fn panics(data: &mut Value, _: &mut savechain::upgrade::StepContext) -> Result<(), String> {
        if data.get("bad").is_some() {
            panic!("the data was not what the step expected");
        }
        Ok(())
    }
    let chain = Chain::new("1.0.0", vec![Step::rust(1, "panics", "1", panics)]).unwrap();
    let mut upgrader = chain.upgrader();
    let bad = Save::from_str(r#"{"meta": {"version": 1}, "data": {"bad": 1}}"#).unwrap();
    let err = upgrader.upgrade(bad, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "step 0001 (rust), version 1 to 2, failed: it panicked: the data was not what the step expected"
    );
    let good = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    assert_eq!(upgrader.upgrade(good, &Options::default()).unwrap().to, 2);
}

#[test]
fn the_helpers_read_paths_as_errors_write_them_and_declare_from_the_data() {
    let cargo = r#"{"meta": {"version": 1}, "data": {"ship": {"cargo": [
        {"item": "ore", "old": 1}, {"item": "gas", "old": 2}]},
        "routes": {"sol.vega": 3}, "player": {"coins": 5}}}"#;
    let run = |body: &str, options: &Options| {
        let source =
            format!("local up = require('savechain.upgrade')\nreturn function(data)\n{body}\nend");
        let chain = Chain::new("1.0.0", vec![Step::lua("0001-x.lua", &source).unwrap()]).unwrap();
        chain
            .upgrader()
            .upgrade(Save::from_str(cargo).unwrap(), options)
            .map(|u| u.save.data.to_string())
            .map_err(|e| e.to_string())
    };
    // Removals inside elements that map hands out count for --strict, as do list paths
    // and the bracket paths the strict error suggests.
    for body in [
        "up.map(data, 'ship.cargo', function(record) up.drop(record, 'old') end)",
        "up.drop(data, {'ship', 'cargo', 1, 'old'}) up.drop(data, {'ship', 'cargo', 2, 'old'})",
        "assert(up.drop(data, 'ship.cargo[0].old')) assert(up.drop(data, 'ship.cargo[1].old'))",
    ] {
        let data = run(body, &strict()).unwrap();
        assert!(!data.contains("old"), "{body}: {data}");
    }
    let err = run(
        "up.map(data, 'ship.cargo', function(record) record.old = nil end)",
        &strict(),
    )
    .unwrap_err();
    assert!(
        err.contains("it removed data.ship.cargo[0].old without declaring it"),
        "{err}"
    );
    // Quoted keys, as errors write a key with a dot.
    let data = run(
        "data.found = up.get(data, 'routes[\"sol.vega\"]') up.rename(data, 'player.coins', 'gold')",
        &Options::default(),
    )
    .unwrap();
    assert!(
        data.contains(r#""found":3"#) && data.contains(r#""gold":5"#),
        "{data}"
    );
    // A path where a key is expected, and a malformed path, are errors at the step's line.
    let err = run(
        "\nup.rename(data, 'player.coins', 'player.gold')",
        &Options::default(),
    )
    .unwrap_err();
    assert!(
        err.starts_with("step 0001-x.lua, version 1 to 2, failed on line 4: up.rename takes the new key, not a path")
            && err.contains(r#"use up.move(root, "player.coins", "player.gold")"#),
        "{err}"
    );
    let err = run("up.default(data, 'ship..shield', 1)", &Options::default()).unwrap_err();
    assert!(
        err.starts_with(
            "step 0001-x.lua, version 1 to 2, failed on line 3: malformed path ship..shield"
        ),
        "{err}"
    );
    let err = run(
        "up.move(data, 'player.coins', 'ship.cargo[0].item')",
        &Options::default(),
    )
    .unwrap_err();
    assert!(
        err.contains(
            "failed on line 3: cannot move data.player.coins to data.ship.cargo[0].item: something is there"
        ),
        "{err}"
    );
}

#[test]
fn declared_steps_sit_beside_lua_steps_in_a_folder() {
    let dir = folder(&[
        (
            "0001-hp.json",
            r#"{"description": "hp becomes health", "changes": [
                {"rename": "hero.hp", "to": "health"},
                {"drop": "hero.mana", "reason": "magic left the game"}]}"#,
        ),
        (
            "0002-double.lua",
            "return function(data) data.hero.health = data.hero.health * 2 end",
        ),
        (
            "0003-gold.json",
            r#"{"changes": [{"add": "hero.gold", "default": ["d", "0x1.8p+1"]}]}"#,
        ),
        ("mod.json", r#"{"name": "not a step"}"#),
    ]);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    let kinds: Vec<(&str, &str, &str)> = chain
        .steps()
        .iter()
        .map(|s| (s.kind_name(), s.name(), s.description()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("declared", "0001-hp.json", "hp becomes health"),
            ("lua", "0002-double.lua", "double"),
            ("declared", "0003-gold.json", "gold"),
        ]
    );
    let save =
        Save::from_str(r#"{"meta": {"version": 1}, "data": {"hero": {"hp": 4, "mana": 2}}}"#)
            .unwrap();
    // Strict: the drop and the rename's old name are declared removals.
    let upgraded = upgrade(&chain, save, &strict()).unwrap();
    assert_eq!(
        upgraded.save.data.to_string(),
        r#"{"hero":{"gold":["d","0x1.8p+1"],"health":8}}"#
    );
    let first = &upgraded.steps[0];
    assert_eq!(first.kind, "declared");
    assert_eq!(first.dropped, ["data.hero.hp", "data.hero.mana"]);
    let changes = first.changes.as_ref().unwrap();
    assert_eq!(changes.added[0].path, "data.hero.health");
    assert_eq!(changes.removed.len(), 2);
}

#[test]
fn a_declared_step_that_fails_names_the_concrete_path() {
    let chain = Chain::new(
        "1.0.0",
        vec![Step::declared(
            1,
            "counts become doubles",
            vec![savechain::upgrade::declared::Change::to_double(
                "ship.cargo[].qty",
            )],
        )],
    )
    .unwrap();
    assert_eq!(chain.steps()[0].name(), "0001 (declared)");
    let save = Save::from_str(
        r#"{"meta": {"version": 1}, "data": {"ship": {"cargo": [{"qty": 1}, {"qty": 2}, {"qty": "x"}]}}}"#,
    )
    .unwrap();
    let err = upgrade(&chain, save, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "step 0001 (declared), version 1 to 2, failed: change 0 (ship.cargo[].qty to a double): \
         data.ship.cargo[2].qty is a string, not a number"
    );
    assert_eq!(err.failed_step(), Some("0001 (declared)"));
}

#[test]
fn malformed_declarations_are_refused_when_the_chain_is_made() {
    use savechain::upgrade::declared::Change;
    let err = Chain::new(
        "1.0.0",
        vec![Step::declared(1, "x", vec![Change::drop("a", "")])],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "0001 (declared): change 0: drop \"a\": a drop says why the data can go (its reason): a \
         drop is never silent"
    );
    let err = folder_error(&[(
        "0001-a.json",
        r#"{"changes": [{"rename": "a", "to": "b"}, {"move": "a[].b", "to": "c"}]}"#,
    )]);
    assert_eq!(
        err,
        "steps/0001-a.json: at changes[1]: move \"a[].b\": a move inside each element stays in \
         the same element: the target \"c\" starts with a[] and has no [] or [*] after it"
    );
}

#[test]
fn a_changed_declaration_is_another_chain() {
    use savechain::upgrade::declared::Change;
    let chain = |changes: Vec<Change>| {
        Chain::new("1.0.0", vec![Step::declared(1, "x", changes)])
            .unwrap()
            .fingerprint()
    };
    let hp = chain(vec![Change::rename("hero.hp", "health")]);
    assert_eq!(hp, chain(vec![Change::rename("[\"hero\"].hp", "health")]));
    assert_ne!(hp, chain(vec![Change::rename("hero.hp", "life")]));
    assert_ne!(
        chain(vec![Change::add("a", Value::Int(1))]),
        chain(vec![Change::add("a", Value::Int(2))])
    );
    // The file's text is not the identity: what it declares is.
    let read = |text: &str| {
        Chain::new(
            "1.0.0",
            vec![Step::declared_file("0001-x.json", text).unwrap()],
        )
        .unwrap()
        .fingerprint()
    };
    assert_eq!(
        read(r#"{"changes": [{"rename": "hero.hp", "to": "health"}]}"#),
        read("{\"changes\":[{\"to\":\"health\",\"rename\":\"hero.hp\"}]}\n")
    );
}

#[test]
fn a_mods_folder_holds_declared_steps_too() {
    let dir = folder(&[
        (
            "tinker/mod.json",
            r#"{"name": "tinker", "release": "1.1.0"}"#,
        ),
        (
            "tinker/0001-charge.json",
            r#"{"description": "charge in kilojoules", "changes": [
                {"rename": "mods.tinker.charge", "to": "kilojoules"},
                {"to_double": "mods.tinker.kilojoules"}]}"#,
        ),
    ]);
    let chain = Chain::new("2.0.0", vec![])
        .unwrap()
        .with_mods_dir(dir.path())
        .unwrap();
    let tinker = &chain.mods()[0];
    assert_eq!(tinker.steps()[0].kind_name(), "declared");
    let save = Save::from_str(
        r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1, "writer": "1.0.0"}}},
            "data": {"mods": {"tinker": {"charge": 4}}}}"#,
    )
    .unwrap();
    let upgraded = upgrade(&chain, save, &strict()).unwrap();
    assert_eq!(
        upgraded.save.data.to_string(),
        r#"{"mods":{"tinker":{"kilojoules":["d","0x1p+2"]}}}"#
    );
    assert_eq!(upgraded.steps[0].in_mod.as_deref(), Some("tinker"));
    assert_eq!(upgraded.steps[0].dropped, ["data.mods.tinker.charge"]);
}
