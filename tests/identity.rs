//! A chain's identity covers everything that can change what it makes of a save: a cache
//! made before a Rust step's revision, a Lua step, a helper module or the game's version
//! changed is refused, through the library and `save-upgrade cache verify`, and the save is
//! upgraded again from its JSON.

mod common;

use std::fs;
use std::path::Path;

use common::{save_upgrade, stderr};
use savechain::cache::{self, Refusal, Source};
use savechain::upgrade::{Chain, Step, StepContext};
use savechain::{Options, Save, Value};

fn add_gold(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
    let map = data.as_object_mut().ok_or("data is not an object")?;
    map.insert("gold", Value::Int(10));
    Ok(())
}

/// A game's steps folder: a Lua step that uses a helper module.
fn steps_folder(dir: &Path, helper_bonus: i64) {
    fs::create_dir_all(dir.join("steps/lib")).unwrap();
    fs::write(
        dir.join("steps/0002-bonus.lua"),
        "local bonus = require('lib.bonus')\nreturn function(data) data.gold = data.gold + bonus.amount end",
    )
    .unwrap();
    fs::write(
        dir.join("steps/lib/bonus.lua"),
        format!("return {{ amount = {helper_bonus} }}"),
    )
    .unwrap();
}

fn chain(dir: &Path, writer: &str, revision: &str) -> Chain {
    let mut steps = Step::lua_dir(dir.join("steps")).unwrap();
    steps.push(Step::rust(1, "gold", revision, add_gold));
    Chain::new(writer, steps).unwrap()
}

/// A folder with a version 1 save and its steps.
fn world() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    steps_folder(dir.path(), 5);
    let path = dir.path().join("world.json");
    fs::write(&path, r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    (dir, path)
}

fn gold(loaded: &cache::Loaded) -> i64 {
    loaded
        .view()
        .data()
        .and_then(|d| d.get("gold"))
        .and_then(|g| g.as_i64())
        .unwrap()
}

/// Loads through `old` to make a cache, then checks that `new` refuses it, says the chain
/// changed, and upgrades again from the JSON (giving `gold`).
fn assert_refused_after(path: &Path, old: &Chain, new: &Chain, gold_after: i64) {
    let options = Options::default();
    cache::load(path, old, &options).unwrap();
    assert_eq!(
        cache::load(path, old, &options).unwrap().source,
        Source::Cache
    );
    assert_eq!(
        cache::verify(path, new, &options).unwrap(),
        Source::Json(Refusal::ChainChanged)
    );
    let loaded = cache::load(path, new, &options).unwrap();
    assert_eq!(loaded.source, Source::Json(Refusal::ChainChanged));
    assert_eq!(gold(&loaded), gold_after);
    // ... and the rebuilt cache is the new chain's.
    assert_eq!(
        cache::load(path, new, &options).unwrap().source,
        Source::Cache
    );
}

#[test]
fn a_new_rust_step_revision_refuses_old_caches() {
    let (dir, path) = world();
    let old = chain(dir.path(), "1.0.0", "1");
    let new = chain(dir.path(), "1.0.0", "2");
    assert_ne!(old.fingerprint(), new.fingerprint());
    assert_refused_after(&path, &old, &new, 15);
}

#[test]
fn a_changed_helper_module_refuses_old_caches() {
    let (dir, path) = world();
    let old = chain(dir.path(), "1.0.0", "1");
    steps_folder(dir.path(), 7);
    let new = chain(dir.path(), "1.0.0", "1");
    assert_refused_after(&path, &old, &new, 17);
}

#[test]
fn a_changed_lua_step_refuses_old_caches() {
    let (dir, path) = world();
    let old = chain(dir.path(), "1.0.0", "1");
    fs::write(
        dir.path().join("steps/0002-bonus.lua"),
        "local bonus = require('lib.bonus')\nreturn function(data) data.gold = data.gold + 2 * bonus.amount end",
    )
    .unwrap();
    let new = chain(dir.path(), "1.0.0", "1");
    assert_refused_after(&path, &old, &new, 20);
}

#[test]
fn a_new_game_version_refuses_old_caches_and_is_recorded() {
    let (dir, path) = world();
    let old = chain(dir.path(), "1.0.0", "1");
    let new = chain(dir.path(), "1.1.0", "1");
    assert_refused_after(&path, &old, &new, 15);
    let save = cache::load(&path, &new, &Options::default())
        .unwrap()
        .to_save()
        .unwrap();
    assert_eq!(save.meta.writer.unwrap().to_string(), "1.1.0");
    assert_eq!(
        save.meta.extra.get("history").unwrap().to_string(),
        r#"[{"from":1,"to":3,"writer":"1.1.0"}]"#
    );
}

#[test]
fn helpers_are_read_when_the_chain_is_made() {
    // What runs is what the identity was made from: a helper edited afterwards is not
    // picked up by a chain made before (it would be by the next one).
    let (dir, path) = world();
    let chain = chain(dir.path(), "1.0.0", "1");
    steps_folder(dir.path(), 1000);
    let save = Save::load(&path).unwrap();
    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    assert_eq!(upgraded.save.data.get("gold"), Some(&Value::Int(15)));
}

#[test]
fn a_cache_at_another_version_than_asked_for_is_refused() {
    let (dir, path) = world();
    let chain = chain(dir.path(), "1.0.0", "1");
    cache::load(&path, &chain, &Options::default()).unwrap();
    let mut to_2 = Options::default();
    to_2.target = Some(2);
    let loaded = cache::load(&path, &chain, &to_2).unwrap();
    assert_eq!(
        loaded.source,
        Source::Json(Refusal::OtherVersion {
            cached: 3,
            wanted: 2
        })
    );
    assert_eq!(gold(&loaded), 10);
}

#[test]
fn rust_steps_need_a_revision_and_helpers_one_meaning() {
    let err = Chain::new("1.0.0", vec![Step::rust(1, "gold", "", add_gold)]).unwrap_err();
    assert!(err.to_string().contains("needs a revision"), "{err}");
    let err = Chain::new("1.0.0", vec![Step::rust(1, "gold", "  ", add_gold)]).unwrap_err();
    assert!(err.to_string().contains("needs a revision"), "{err}");
    let err = Chain::new("one", vec![]).unwrap_err();
    assert!(err.to_string().contains("semantic version"), "{err}");

    // Two step folders in one chain whose helpers share a name but not a source.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    steps_folder(a.path(), 1);
    steps_folder(b.path(), 2);
    fs::rename(
        b.path().join("steps/0002-bonus.lua"),
        b.path().join("steps/0003-bonus.lua"),
    )
    .unwrap();
    let mut steps = Step::lua_dir(a.path().join("steps")).unwrap();
    steps.extend(Step::lua_dir(b.path().join("steps")).unwrap());
    steps.push(Step::rust(1, "gold", "1", add_gold));
    let err = Chain::new("1.0.0", steps).unwrap_err();
    assert!(
        err.to_string()
            .contains("two different helper modules named lib.bonus"),
        "{err}"
    );
}

#[test]
fn a_game_at_its_first_version_has_an_empty_chain_and_caches() {
    let chain = Chain::new("1.0.0", vec![]).unwrap();
    assert_eq!((chain.oldest(), chain.latest()), (1, 1));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    let save = chain.new_save(Value::from("hello"));
    assert_eq!(save.meta.version, 1);
    assert_eq!(save.meta.writer.as_ref().unwrap().to_string(), "1.0.0");
    cache::store(&save, &path, &chain).unwrap();
    let loaded = cache::load(&path, &chain, &Options::default()).unwrap();
    assert_eq!(loaded.source, Source::Cache);
    assert_eq!(loaded.to_save().unwrap(), save);

    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    assert!(upgraded.steps.is_empty());
    let newer = Save::new(2, Value::Null);
    let err = chain
        .upgrader()
        .upgrade(newer, &Options::default())
        .unwrap_err();
    assert!(err.to_string().contains("newer than this program knows"));

    // The command line takes an empty steps folder too.
    fs::create_dir(dir.path().join("steps")).unwrap();
    let out = save_upgrade(
        &["--upgrades", "steps", "--writer", "1.0.0", "world.json"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already current 1"),
        "{}",
        stderr(&out)
    );
}

/// `save-upgrade cache verify` on a game's Lua steps: a changed step, helper or writer
/// each make it refuse the cache, saying the chain changed.
#[test]
fn cache_verify_sees_a_changed_step_helper_or_writer() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("steps/lib")).unwrap();
    let write = |name: &str, text: &str| fs::write(dir.path().join(name), text).unwrap();
    write(
        "steps/0001-gold.lua",
        "local h = require('lib.h') return function(data) data.gold = h.gold end",
    );
    write("steps/lib/h.lua", "return { gold = 1 }");
    write("a.json", r#"{"meta": {"version": 1}, "data": {}}"#);
    let run = |args: &[&str]| {
        let mut all = vec!["cache"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--upgrades", "steps", "a.json"]);
        save_upgrade(&all, dir.path())
    };
    let verify = |writer: &str| {
        let out = run(&["verify", "--writer", writer]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let changed = "a.json: the cache was made by another upgrade chain";

    let out = run(&["build", "--writer", "1.0.0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(verify("1.0.0"), (Some(0), "a.json: ok\n".to_string()));
    let (code, text) = verify("1.0.1");
    assert_eq!(code, Some(1));
    assert!(text.starts_with(changed), "{text}");

    write("steps/lib/h.lua", "return { gold = 2 }");
    let (code, text) = verify("1.0.0");
    assert_eq!(code, Some(1));
    assert!(text.starts_with(changed), "{text}");
    run(&["build", "--writer", "1.0.0"]);
    assert_eq!(verify("1.0.0").0, Some(0));

    write(
        "steps/0001-gold.lua",
        "local h = require('lib.h') return function(data) data.gold = h.gold + 1 end",
    );
    let (code, text) = verify("1.0.0");
    assert_eq!(code, Some(1));
    assert!(text.starts_with(changed), "{text}");
}

#[test]
fn a_cache_that_cannot_be_written_is_reported_apart_from_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    let chain = Chain::new("1.0.0", vec![]).unwrap();
    chain.new_save(Value::Int(1)).store(&path).unwrap();
    // A folder where the cache would go: it can be neither read nor replaced.
    fs::create_dir(cache::cache_path(&path)).unwrap();
    let loaded = cache::load(&path, &chain, &Options::default()).unwrap();
    assert!(
        matches!(loaded.source, Source::Json(Refusal::Unreadable(_))),
        "{:?}",
        loaded.source
    );
    let error = loaded
        .write_error()
        .expect("the cache could not be written");
    assert!(
        error.to_string().contains("cannot write the cache"),
        "{error}"
    );
    assert_eq!(loaded.to_save().unwrap().data, Value::Int(1));
}

#[test]
fn the_games_name_is_part_of_the_identity() {
    let any = || Chain::new("1.0.0", vec![]).unwrap();
    let named = |game: &str| any().for_game(game).unwrap();
    assert_ne!(any().fingerprint(), named("Hollow Keep").fingerprint());
    assert_ne!(
        named("Hollow Keep").fingerprint(),
        named("Dust Rangers").fingerprint()
    );
    assert_eq!(
        named("Hollow Keep").fingerprint(),
        named("Hollow Keep").fingerprint()
    );

    // A cache made while the game's chain named no game is not used once it does: the
    // save is checked again, and a save of another game refused rather than served.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    let options = Options::default();
    for (game, upgrades) in [("Hollow Keep", true), ("Dust Rangers", false)] {
        fs::write(
            &path,
            format!(r#"{{"meta": {{"game": "{game}", "version": 1}}, "data": {{}}}}"#),
        )
        .unwrap();
        cache::load(&path, &any(), &options).unwrap();
        assert_eq!(
            cache::verify(&path, &named("Hollow Keep"), &options).unwrap(),
            Source::Json(Refusal::ChainChanged)
        );
        let loaded = cache::load(&path, &named("Hollow Keep"), &options);
        assert_eq!(loaded.is_ok(), upgrades, "{game}");
    }
}
