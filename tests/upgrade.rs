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
    Options {
        strict: true,
        diff: true,
        ..Options::default()
    }
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
        for (sign, paths) in [
            ("added", &changes.added),
            ("removed", &changes.removed),
            ("changed", &changes.changed),
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
fn the_example_chain_has_eight_steps_mostly_lua() {
    let chain = common::starlane::chain().unwrap();
    assert_eq!((chain.oldest(), chain.latest()), (1, 9));
    let lua = chain
        .steps()
        .iter()
        .filter(|s| s.kind_name() == "lua")
        .count();
    assert_eq!((chain.steps().len(), lua), (8, 5));
}

#[test]
fn the_binary_carries_every_step_file_of_upgrades() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/upgrades");
    // The folder alone has gaps where the Rust steps go, so compare file by file.
    let mut files: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lua"))
        .collect();
    files.sort();
    let chain = common::starlane::chain().unwrap();
    let built_in: Vec<String> = chain
        .steps()
        .iter()
        .filter(|s| s.kind_name() == "lua")
        .map(|s| s.name().to_string())
        .collect();
    assert_eq!(
        built_in, files,
        "list new files of upgrades/ in src/bin/save-upgrade/starlane.rs"
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
            let partial = Options {
                target: Some(n),
                ..Options::default()
            };
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
    let to_4 = Options {
        target: Some(4),
        ..Options::default()
    };
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
    let too_new =
        Save::from_str(r#"{"meta": {"version": 12, "writer": "2.3.0"}, "data": {}}"#).unwrap();
    let err = upgrade(&chain, too_new, &Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Upgrade);
    assert!(
        err.to_string().contains(
            "version 12, written by 2.3.0, newer than this program knows (latest version 9)"
        ),
        "{err}"
    );
    let too_old = Save::from_str(r#"{"meta": {"version": 0}, "data": {}}"#).unwrap();
    let err = upgrade(&chain, too_old, &Options::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("older than the oldest version this chain upgrades (1)"),
        "{err}"
    );
}

#[test]
fn a_failing_step_is_named() {
    let chain = common::starlane::chain().unwrap();
    let broken =
        Save::from_str(r#"{"meta": {"version": 8}, "data": {"ship": {"cargo": 5}}}"#).unwrap();
    let err = upgrade(&chain, broken, &Options::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "step 0008 (rust) (rust, version 8 to 9) failed: ship.cargo is not an array"
    );
    let broken = Save::from_str(r#"{"meta": {"version": 7}, "data": {"lua": {}}}"#).unwrap();
    let err = upgrade(&chain, broken, &Options::default()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("step 0007-mission-log.lua (lua, version 7 to 8) failed:"),
        "{err}"
    );
    assert!(err.to_string().contains("0007-mission-log.lua:7:"), "{err}");
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
            .contains("strict: it removed hp without declaring it dropped"),
        "{err}"
    );
    assert!(upgrade(&chain, save(), &Options::default()).is_ok());

    fn drops_hp(data: &mut Value, ctx: &mut StepContext) -> Result<(), String> {
        ctx.drop_path(data, "hp");
        Ok(())
    }
    let declared = Chain::new("1.0.0", vec![Step::rust(1, "drop hp", "1", drops_hp)]).unwrap();
    let upgraded = upgrade(&declared, save(), &strict()).unwrap();
    assert_eq!(upgraded.steps[0].dropped, ["hp"]);
}
