//! Mods: each namespace its own data version and chain, run after the game's; absent mods
//! kept exactly; a failing mod failing the save, or held back with `keep_going`.

use savechain::upgrade::{Chain, Mod, ModStatus, Step};
use savechain::{Options, Save, Value};

fn lua(name: &str, body: &str) -> Step {
    Step::lua(name, body).unwrap()
}

/// The game at version 2 (one step adding `data.ship.shield`), and two mods.
fn chain() -> Chain {
    let game = Chain::new(
        "2.0.0",
        vec![lua(
            "0001-shield.lua",
            "return function(data) data.ship.shield = 100 end",
        )],
    )
    .unwrap();
    let tinker = Mod::new(
        "tinker",
        "1.2.0",
        vec![
            lua(
                "0001-charge.lua",
                // Sees the save as the game's chain left it.
                "return function(data) data.mods.tinker.charge = data.mods.tinker.charge * 10 + data.ship.shield end",
            ),
            lua(
                "0002-gadgets.lua",
                "return function(data) data.mods.tinker.gadgets = {} end",
            ),
        ],
    )
    .unwrap();
    let radio = Mod::new(
        "radio",
        "0.3.0",
        vec![lua(
            "0001-stations.lua",
            // Runs after tinker, though its name sorts first.
            "return function(data) data.mods.radio.saw = #data.mods.tinker.gadgets end",
        )],
    )
    .unwrap()
    .after(&["tinker"]);
    game.with_mods(vec![radio, tinker]).unwrap()
}

const SAVE: &str = r#"{
  "meta": {"version": 1, "writer": "1.0.0", "mods": {
    "tinker": {"version": 1, "writer": "1.0.0"},
    "radio": {"version": 1, "writer": "0.1.0"},
    "gone": {"version": 7, "writer": "3.1.4", "note": ["kept", {"as": "is"}]}
  }},
  "data": {"ship": {}, "mods": {"tinker": {"charge": 2}, "radio": {}, "gone": {"x": ["d", "0x1.8p+0"], "y": [1, 2]}}}
}"#;

fn upgrade(save: &str, options: &Options) -> savechain::Result<savechain::upgrade::Upgraded> {
    chain()
        .upgrader()
        .upgrade(Save::from_str(save).unwrap(), options)
}

#[test]
fn each_namespace_reaches_its_own_latest_version_in_order() {
    let upgraded = upgrade(SAVE, &Options::default()).unwrap();
    let save = &upgraded.save;
    assert_eq!(save.meta.version, 2);
    assert_eq!(
        save.data.pointer("mods.tinker.charge"),
        Some(&Value::from(120))
    );
    assert_eq!(save.data.pointer("mods.radio.saw"), Some(&Value::from(0)));
    let mods = save.meta.extra.get("mods").unwrap();
    assert_eq!(
        mods.get("tinker").unwrap().to_string(),
        r#"{"version":3,"writer":"1.2.0"}"#
    );
    assert_eq!(
        mods.get("radio").unwrap().to_string(),
        r#"{"version":2,"writer":"0.3.0"}"#
    );
    let history = save.meta.extra.get("history").unwrap().to_string();
    assert_eq!(
        history,
        r#"[{"from":1,"to":2,"writer":"2.0.0"},{"from":1,"mod":"tinker","to":3,"writer":"1.2.0"},{"from":1,"mod":"radio","to":2,"writer":"0.3.0"}]"#
    );
    let names: Vec<_> = upgraded
        .steps
        .iter()
        .map(|s| (s.in_mod.as_deref(), s.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            (None, "0001-shield.lua"),
            (Some("tinker"), "0001-charge.lua"),
            (Some("tinker"), "0002-gadgets.lua"),
            (Some("radio"), "0001-stations.lua"),
        ]
    );
    let statuses: Vec<_> = upgraded
        .mods
        .iter()
        .map(|m| (m.name.as_str(), m.from, m.to, m.status.clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("tinker", Some(1), Some(3), ModStatus::Upgraded),
            ("radio", Some(1), Some(2), ModStatus::Upgraded),
            ("gone", Some(7), Some(7), ModStatus::NotInstalled),
        ]
    );
}

#[test]
fn an_absent_mods_data_and_entry_are_kept_exactly() {
    let before = Save::from_str(SAVE).unwrap();
    let upgraded = upgrade(SAVE, &Options::default()).unwrap().save;
    for (before, after) in [
        (
            before.data.pointer("mods.gone"),
            upgraded.data.pointer("mods.gone"),
        ),
        (
            before.meta.extra.get("mods").unwrap().get("gone"),
            upgraded.meta.extra.get("mods").unwrap().get("gone"),
        ),
    ] {
        assert_eq!(before.unwrap().to_string(), after.unwrap().to_string());
    }
    // Back again: upgraded from where it was.
    let gone = Mod::new(
        "gone",
        "3.2.0",
        (1..=7)
            .map(|v| {
                lua(
                    &format!("{v:04}-step.lua"),
                    "return function(data) data.mods.gone.back = (data.mods.gone.back or 0) + 1 end",
                )
            })
            .collect(),
    )
    .unwrap();
    let with_gone = chain().with_mods(vec![gone]).unwrap();
    assert_eq!(with_gone.mods().len(), 3);
    let again = with_gone
        .upgrader()
        .upgrade(upgraded, &Options::default())
        .unwrap();
    assert_eq!(
        again.save.data.pointer("mods.gone.back"),
        Some(&Value::from(1))
    );
    assert_eq!(
        again
            .save
            .meta
            .extra
            .get("mods")
            .unwrap()
            .get("gone")
            .unwrap()
            .to_string(),
        r#"{"note":["kept",{"as":"is"}],"version":8,"writer":"3.2.0"}"#
    );
}

#[test]
fn a_mod_not_in_the_save_runs_nothing_and_is_recorded_by_the_next_store() {
    let save = r#"{"meta": {"version": 2}, "data": {"ship": {}}}"#;
    let upgraded = upgrade(save, &Options::default()).unwrap();
    assert!(upgraded.steps.is_empty());
    assert!(upgraded
        .mods
        .iter()
        .all(|m| m.status == ModStatus::NotInSave));
    assert_eq!(upgraded.save.meta.extra.get("mods"), None);
    let stored = chain().resave(upgraded.save.meta, upgraded.save.data);
    assert_eq!(
        stored.meta.extra.get("mods").unwrap().to_string(),
        r#"{"radio":{"version":2,"writer":"0.3.0"},"tinker":{"version":3,"writer":"1.2.0"}}"#
    );
}

fn failing_chain() -> Chain {
    let broken = Mod::new(
        "broken",
        "0.9.0",
        vec![lua(
            "0001-oops.lua",
            "return function(data)\n  data.mods.broken.half = true\n  error('no fuel')\nend",
        )],
    )
    .unwrap();
    chain().with_mods(vec![broken]).unwrap()
}

const BROKEN_SAVE: &str = r#"{
  "meta": {"version": 1, "mods": {"broken": {"version": 1, "writer": "0.8.0"}}},
  "data": {"ship": {}, "mods": {"broken": {"fuel": 0}}}
}"#;

#[test]
fn a_failing_mod_fails_the_save_naming_the_mod() {
    let chain = failing_chain();
    let mut upgrader = chain.upgrader();
    let err = upgrader
        .upgrade(Save::from_str(BROKEN_SAVE).unwrap(), &Options::default())
        .unwrap_err();
    assert_eq!(err.failed_mod(), Some("broken"));
    assert_eq!(
        err.to_string(),
        "mod broken: step 0001-oops.lua, version 1 to 2, failed on line 3: no fuel"
    );
    let failed: Vec<_> = upgrader
        .failed_steps()
        .iter()
        .map(|s| s.in_mod.clone())
        .collect();
    assert_eq!(failed, [None, Some("broken".to_string())]);
}

#[test]
fn keep_going_holds_a_failing_mod_at_its_old_version_marked() {
    let chain = failing_chain();
    let mut options = Options::default();
    options.keep_going = true;
    let upgraded = chain
        .upgrader()
        .upgrade(Save::from_str(BROKEN_SAVE).unwrap(), &options)
        .unwrap();
    let save = &upgraded.save;
    // The game upgraded, the mod's data exactly as it was: its step's change undone.
    assert_eq!(save.meta.version, 2);
    assert_eq!(
        save.data.to_string(),
        r#"{"mods":{"broken":{"fuel":0}},"ship":{"shield":100}}"#
    );
    assert_eq!(
        save.meta
            .extra
            .get("mods")
            .unwrap()
            .get("broken")
            .unwrap()
            .to_string(),
        r#"{"held":{"error":"mod broken: step 0001-oops.lua, version 1 to 2, failed on line 3: no fuel","writer":"0.9.0"},"version":1,"writer":"0.8.0"}"#
    );
    let broken = upgraded.mods.iter().find(|m| m.name == "broken").unwrap();
    assert!(matches!(&broken.status, ModStatus::Held(why) if why.contains("no fuel")));
    assert_eq!((broken.from, broken.to), (Some(1), Some(1)));
    assert!(upgraded
        .steps
        .iter()
        .all(|s| s.in_mod.as_deref() != Some("broken")));
    // Marked, so stores do not claim the mod's latest version for it.
    let stored = chain.resave(save.meta.clone(), save.data.clone());
    assert_eq!(
        stored.meta.extra.get("mods").unwrap().get("broken"),
        save.meta.extra.get("mods").unwrap().get("broken")
    );

    // A later release that works retries it, and drops the mark.
    let fixed = Mod::new(
        "broken",
        "1.0.0",
        vec![lua(
            "0001-oops.lua",
            "return function(data) data.mods.broken.fuel = 5 end",
        )],
    )
    .unwrap();
    let again = self::chain()
        .with_mods(vec![fixed])
        .unwrap()
        .upgrader()
        .upgrade(upgraded.save, &Options::default())
        .unwrap();
    assert_eq!(
        again
            .save
            .meta
            .extra
            .get("mods")
            .unwrap()
            .get("broken")
            .unwrap()
            .to_string(),
        r#"{"version":2,"writer":"1.0.0"}"#
    );
    assert_eq!(
        again.save.data.pointer("mods.broken.fuel"),
        Some(&Value::from(5))
    );
}

#[test]
fn a_mods_data_newer_than_the_mod_is_refused_or_held() {
    let save = r#"{
      "meta": {"version": 2, "mods": {"tinker": {"version": 9, "writer": "4.0.0"}}},
      "data": {"ship": {}, "mods": {"tinker": {"charge": 2}}}
    }"#;
    let err = upgrade(save, &Options::default()).unwrap_err();
    assert_eq!(err.failed_mod(), Some("tinker"));
    assert_eq!(
        err.to_string(),
        "at meta.mods.tinker.version: mod tinker: its data is version 9, written by its release 4.0.0, \
         newer than the installed release 1.2.0 knows (latest version 3); it needs a newer release \
         of the mod, and is left as it is"
    );
    let mut options = Options::default();
    options.keep_going = true;
    let upgraded = upgrade(save, &options).unwrap();
    assert!(upgraded.steps.is_empty());
    let before = Save::from_str(save).unwrap();
    assert_eq!(upgraded.save.data, before.data);
    // Marked held (for a store not to claim the mod's latest version), nothing else.
    let entry = upgraded
        .save
        .meta
        .extra
        .get("mods")
        .unwrap()
        .get("tinker")
        .unwrap();
    assert_eq!(entry.get("version"), Some(&Value::from(9)));
    assert!(entry.pointer("held.error").is_some());
    assert!(matches!(upgraded.mods[0].status, ModStatus::Held(_)));
    let stored = chain().resave(upgraded.save.meta.clone(), upgraded.save.data.clone());
    let tinker = |save: &Save| save.meta.extra.get("mods").unwrap().get("tinker").cloned();
    assert_eq!(tinker(&stored), tinker(&upgraded.save));
}

#[test]
fn a_mods_history_past_its_version_is_refused() {
    let save = r#"{
      "meta": {"version": 2, "mods": {"tinker": {"version": 1}},
               "history": [{"from": 1, "to": 3, "mod": "tinker", "writer": "1.2.0"}]},
      "data": {"ship": {}, "mods": {"tinker": {"charge": 2}}}
    }"#;
    let err = upgrade(save, &Options::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("its history records an upgrade of it to version 3"),
        "{err}"
    );
    // The game's own check is not confused by a mod's entries.
    let fine = r#"{
      "meta": {"version": 1, "mods": {"tinker": {"version": 3}},
               "history": [{"from": 1, "to": 3, "mod": "tinker", "writer": "1.2.0"}]},
      "data": {"ship": {}, "mods": {"tinker": {"charge": 2}}}
    }"#;
    upgrade(fine, &Options::default()).unwrap();
}

#[test]
fn a_malformed_mods_entry_is_refused_with_its_path() {
    let save = r#"{"meta": {"version": 2, "mods": [1]}, "data": {}}"#;
    let err = upgrade(save, &Options::default()).unwrap_err();
    assert_eq!(err.path().to_string(), "meta.mods");
    let save = r#"{"meta": {"version": 2, "mods": {"tinker": {"writer": "1.0.0"}}}, "data": {}}"#;
    let err = upgrade(save, &Options::default()).unwrap_err();
    assert_eq!(err.path().to_string(), "meta.mods.tinker.version");
    assert_eq!(err.failed_mod(), Some("tinker"));
}

#[test]
fn a_target_version_leaves_mods_waiting() {
    let mut options = Options::default();
    options.target = Some(1);
    let upgraded = upgrade(SAVE, &options).unwrap();
    assert!(upgraded.steps.is_empty());
    assert_eq!(upgraded.mods[0].status, ModStatus::Waiting);
}

#[test]
fn the_identity_covers_every_namespace() {
    let base = chain();
    let id = base.fingerprint();
    let game_only = Chain::new(
        "2.0.0",
        vec![lua(
            "0001-shield.lua",
            "return function(data) data.ship.shield = 100 end",
        )],
    )
    .unwrap();
    assert_ne!(id, game_only.fingerprint());
    // Made again: the same.
    assert_eq!(id, chain().fingerprint());
    // A mod's step changed, its release, its order: each a different identity.
    let changed_step = Mod::new(
        "tinker",
        "1.2.0",
        vec![lua("0001-charge.lua", "return function(data) end")],
    )
    .unwrap();
    let changed_release = Mod::new("tinker", "1.2.1", vec![]).unwrap();
    let mut seen = vec![id];
    for m in [changed_step, changed_release] {
        let other = game_only.clone().with_mods(vec![m]).unwrap();
        assert!(!seen.contains(&other.fingerprint()));
        seen.push(other.fingerprint());
    }
}

#[test]
fn mods_are_ordered_by_what_they_come_after_then_by_name() {
    let m = |name: &str, after: &[&str]| Mod::new(name, "1.0.0", vec![]).unwrap().after(after);
    let chain = Chain::new("1.0.0", vec![])
        .unwrap()
        .with_mods(vec![
            m("d", &[]),
            m("a", &["c"]),
            m("c", &["missing"]),
            m("b", &[]),
        ])
        .unwrap();
    let names: Vec<_> = chain.mods().iter().map(Mod::name).collect();
    assert_eq!(names, ["b", "c", "a", "d"]);
    let err = Chain::new("1.0.0", vec![])
        .unwrap()
        .with_mods(vec![m("x", &["y"]), m("y", &["x"]), m("z", &[])])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the mods x (made by the program), y (made by the program) each come after"),
        "{err}"
    );
    let err = Chain::new("1.0.0", vec![])
        .unwrap()
        .with_mods(vec![m("x", &[]), m("x", &[])])
        .unwrap_err();
    assert!(err.to_string().contains("two mods named x"), "{err}");
    assert!(Mod::new("../up", "1.0.0", vec![]).is_err());
    assert!(Mod::new("", "1.0.0", vec![]).is_err());
}

#[test]
fn one_mods_globals_never_reach_another_mod_or_save() {
    let spy = |name: &str| {
        Mod::new(
            name,
            "1.0.0",
            vec![lua(
                "0001-spy.lua",
                &format!(
                    "return function(data)\n  data.mods['{name}'].seen = tostring(rawget(_G, 'SECRET'))\n  SECRET = '{name}'\nend"
                ),
            )],
        )
        .unwrap()
    };
    let chain = Chain::new("1.0.0", vec![])
        .unwrap()
        .with_mods(vec![spy("a"), spy("b")])
        .unwrap();
    let save = r#"{"meta": {"version": 1, "mods": {"a": {"version": 1}, "b": {"version": 1}}},
                   "data": {"mods": {"a": {}, "b": {}}}}"#;
    let mut upgrader = chain.upgrader();
    for _ in 0..2 {
        let upgraded = upgrader
            .upgrade(Save::from_str(save).unwrap(), &Options::default())
            .unwrap();
        assert_eq!(
            upgraded.save.data.to_string(),
            r#"{"mods":{"a":{"seen":"nil"},"b":{"seen":"nil"}}}"#
        );
    }
}

#[test]
fn mods_are_read_from_their_folders() {
    let dir = tempfile::tempdir().unwrap();
    let tinker = dir.path().join("tinker");
    std::fs::create_dir_all(tinker.join("lib")).unwrap();
    std::fs::write(
        tinker.join("mod.json"),
        r#"{"name": "tinker", "release": "1.2.0", "after": ["radio"]}"#,
    )
    .unwrap();
    std::fs::write(tinker.join("lib/util.lua"), "return {ten = 10}").unwrap();
    std::fs::write(
        tinker.join("0001-charge.lua"),
        "-- Charge in tenths.\nlocal util = require('lib.util')\nreturn function(data) data.mods.tinker.charge = data.mods.tinker.charge * util.ten end",
    )
    .unwrap();
    let radio = dir.path().join("radio");
    std::fs::create_dir_all(radio.join("lib")).unwrap();
    std::fs::write(
        radio.join("mod.json"),
        r#"{"name": "radio", "release": "0.1.0"}"#,
    )
    .unwrap();
    // The same helper name as tinker's, another source: each mod has its own.
    std::fs::write(radio.join("lib/util.lua"), "return {ten = 'ten'}").unwrap();
    std::fs::create_dir(dir.path().join(".hidden")).unwrap();
    std::fs::write(dir.path().join("README.md"), "mods").unwrap();

    let chain = Chain::new("1.0.0", vec![])
        .unwrap()
        .with_mods_dir(dir.path())
        .unwrap();
    let names: Vec<_> = chain.mods().iter().map(Mod::name).collect();
    assert_eq!(names, ["radio", "tinker"]);
    assert_eq!(
        chain.mods()[1].steps()[0].description(),
        "Charge in tenths."
    );
    let save = r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1}}}, "data": {"mods": {"tinker": {"charge": 3}}}}"#;
    let upgraded = chain
        .upgrader()
        .upgrade(Save::from_str(save).unwrap(), &Options::default())
        .unwrap();
    assert_eq!(
        upgraded.save.data.pointer("mods.tinker.charge"),
        Some(&Value::from(30))
    );

    // Manifest errors name the file, line and member.
    std::fs::write(
        radio.join("mod.json"),
        "{\n  \"name\": \"radio\",\n  \"relase\": \"0.1.0\"\n}",
    )
    .unwrap();
    let err = Mod::all_in(dir.path()).unwrap_err();
    assert!(err.file().unwrap().ends_with("radio/mod.json"));
    assert_eq!((err.line(), err.column()), (Some(3), Some(3)));
    assert!(
        err.to_string()
            .contains("only \"name\", \"release\" and \"after\""),
        "{err}"
    );
    std::fs::remove_file(radio.join("mod.json")).unwrap();
    let err = Mod::all_in(dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("the manifest every mod folder has"),
        "{err}"
    );
}

/// The worked example of docs/FORMAT.md, section 9.3.
#[test]
fn the_worked_example_of_the_format() {
    let format = std::fs::read_to_string("docs/FORMAT.md").unwrap();
    let section = &format[format.find("### 9.3 Mods").unwrap()..format.find("### 9.4").unwrap()];
    let blocks: Vec<&str> = section
        .split("```json\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .collect();
    assert_eq!(blocks.len(), 2);
    let game = Chain::new(
        "2.0.0",
        vec![lua(
            "0001-shield.lua",
            "return function(data) data.ship.shield = 100 end",
        )],
    )
    .unwrap();
    let tinker = Mod::new(
        "tinker",
        "1.2.0",
        vec![
            lua(
                "0001-charge-in-tenths.lua",
                "return function(data) data.mods.tinker.charge = data.mods.tinker.charge * 10 end",
            ),
            lua(
                "0002-gadgets.lua",
                "return function(data) data.mods.tinker.gadgets = require(\"savechain\").array() end",
            ),
        ],
    )
    .unwrap();
    let chain = game.with_mods(vec![tinker]).unwrap();
    let upgraded = chain
        .upgrader()
        .upgrade(Save::from_str(blocks[0]).unwrap(), &Options::default())
        .unwrap();
    assert_eq!(upgraded.save, Save::from_str(blocks[1]).unwrap());
}

#[test]
fn a_changed_mod_step_refuses_old_caches_and_a_held_mod_writes_none() {
    use savechain::cache::{self, Refusal, Source};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slot.json");
    std::fs::write(&path, SAVE).unwrap();
    let first = chain();
    let loaded = cache::load_with(&path, &mut first.upgrader(), &Options::default()).unwrap();
    assert!(matches!(loaded.source, Source::Json(Refusal::Missing)));
    let again = cache::load_with(&path, &mut first.upgrader(), &Options::default()).unwrap();
    assert_eq!(again.source, Source::Cache);

    // The same game, tinker's second step changed by one character.
    let tinker = first.mods().iter().find(|m| m.name() == "tinker").unwrap();
    let mut steps = tinker.steps().to_vec();
    steps[1] = lua(
        "0002-gadgets.lua",
        "return function(data) data.mods.tinker.gadgets = {1} end",
    );
    let changed = Mod::new("tinker", "1.2.0", steps).unwrap();
    let radio = first
        .mods()
        .iter()
        .find(|m| m.name() == "radio")
        .unwrap()
        .clone();
    let second = first
        .clone()
        .without_mods()
        .with_mods(vec![changed, radio])
        .unwrap();
    let clash = first
        .clone()
        .with_mods(vec![Mod::new("radio", "9.0.0", vec![]).unwrap()]);
    assert!(clash
        .unwrap_err()
        .to_string()
        .contains("two mods named radio"));
    let loaded = cache::load_with(&path, &mut second.upgrader(), &Options::default()).unwrap();
    assert!(
        matches!(loaded.source, Source::Json(Refusal::ChainChanged)),
        "{:?}",
        loaded.source
    );
    let view = loaded.view();
    assert_eq!(
        view.data()
            .unwrap()
            .get("mods")
            .unwrap()
            .get("tinker")
            .unwrap()
            .get("gadgets")
            .unwrap()
            .to_value()
            .unwrap()
            .to_string(),
        "[1]"
    );

    // A mod held back: the document is served, no cache kept.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, BROKEN_SAVE).unwrap();
    let mut options = Options::default();
    options.keep_going = true;
    let chain = failing_chain();
    let loaded = cache::load_with(&broken, &mut chain.upgrader(), &options).unwrap();
    assert!(matches!(
        loaded
            .mods()
            .iter()
            .find(|m| m.name == "broken")
            .unwrap()
            .status,
        ModStatus::Held(_)
    ));
    assert!(loaded.new_cache().is_none());
    assert!(!cache::cache_path(&broken).exists());
    let err = cache::load_with(&broken, &mut chain.upgrader(), &Options::default())
        .err()
        .unwrap();
    assert_eq!(err.failed_mod(), Some("broken"));
}

/// Tables shared by the game's step stay shared for the mods after it (whose sandboxes get
/// the data through a tree, lent a table at a time where nothing is shared).
#[test]
fn shared_tables_stay_shared_across_namespaces() {
    let game = Chain::new(
        "1.0.0",
        vec![lua(
            "0001-share.lua",
            "return function(data) data.right.alias = data.left.original end",
        )],
    )
    .unwrap();
    let m = Mod::new(
        "m",
        "1.0.0",
        vec![lua(
            "0001-touch.lua",
            "return function(data)\n  data.left.original.touched = true\n  data.mods.m.same = rawequal(data.right.alias, data.left.original)\nend",
        )],
    )
    .unwrap();
    let chain = game.with_mods(vec![m]).unwrap();
    // Objects of more than 16 members are lent a table at a time.
    let many: Vec<String> = (0..20).map(|i| format!("\"k{i:02}\": {i}")).collect();
    let many = many.join(", ");
    let save = format!(
        r#"{{"meta": {{"version": 1, "mods": {{"m": {{"version": 1}}}}}},
            "data": {{"mods": {{"m": {{}}}}, "left": {{{many}, "original": {{"a": [1, 2]}}}}, "right": {{{many}}}}}}}"#
    );
    let upgraded = chain
        .upgrader()
        .upgrade(Save::from_str(&save).unwrap(), &Options::default())
        .unwrap();
    assert_eq!(
        upgraded.save.data.pointer("mods.m.same"),
        Some(&Value::Bool(true))
    );
    let text = upgraded.save.to_string().unwrap();
    // Written once, referred to from the other place.
    assert_eq!(text.matches("touched").count(), 1, "{text}");
}

#[test]
fn a_mods_data_without_its_version_is_refused_or_held() {
    let save = r#"{"meta": {"version": 2, "mods": {"radio": {"version": 2}}},
                   "data": {"ship": {}, "mods": {"tinker": {"charge": 2}, "radio": {}}}}"#;
    let err = upgrade(save, &Options::default()).unwrap_err();
    assert_eq!(err.failed_mod(), Some("tinker"));
    assert_eq!(err.path().to_string(), "meta.mods");
    assert!(
        err.message()
            .contains("data.mods.tinker but no version for it"),
        "{err}"
    );
    let mut options = Options::default();
    options.keep_going = true;
    let upgraded = upgrade(save, &options).unwrap();
    assert_eq!(upgraded.save.data, Save::from_str(save).unwrap().data);
    assert!(matches!(upgraded.mods[0].status, ModStatus::Held(_)));
    // An entry made for the mark, without a version: a store does not claim one either.
    let entry = upgraded
        .save
        .meta
        .extra
        .get("mods")
        .unwrap()
        .get("tinker")
        .unwrap();
    assert_eq!(entry.get("version"), None);
    let stored = chain().resave(upgraded.save.meta.clone(), upgraded.save.data.clone());
    assert_eq!(
        stored.meta.extra.get("mods").unwrap().get("tinker"),
        Some(entry)
    );
}

#[test]
fn a_mod_that_comes_after_itself_is_refused() {
    let m = Mod::new("loop", "1.0.0", vec![]).unwrap().after(&["loop"]);
    let err = Chain::new("1.0.0", vec![])
        .unwrap()
        .with_mods(vec![m])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the mod loop (made by the program) says it comes after itself"),
        "{err}"
    );
}

/// Review findings: what a held mod's neighbours, stores and caches do.
#[test]
fn a_mod_after_a_held_one_is_held_with_it_and_what_the_failing_step_printed_is_kept() {
    let first = Mod::new(
        "first",
        "1.0.0",
        vec![lua(
            "0001-rename.lua",
            "return function(data)\n  print('looking at', #data.mods.first.list)\n  data.mods.first.items = data.mods.first.list\n  error('not today')\nend",
        )],
    )
    .unwrap();
    let second = Mod::new(
        "second",
        "1.0.0",
        vec![lua(
            "0001-count.lua",
            "return function(data) data.mods.second.count = #(data.mods.first.items or {}) end",
        )],
    )
    .unwrap()
    .after(&["first"]);
    let third = Mod::new(
        "third",
        "1.0.0",
        vec![lua(
            "0001-mark.lua",
            "return function(data) data.mods.third.ok = true end",
        )],
    )
    .unwrap();
    let chain = Chain::new("1.0.0", vec![])
        .unwrap()
        .with_mods(vec![first, second, third])
        .unwrap();
    let save = r#"{"meta": {"version": 1, "mods": {"first": {"version": 1}, "second": {"version": 1}, "third": {"version": 1}}},
                   "data": {"mods": {"first": {"list": [1, 2]}, "second": {}, "third": {}}}}"#;
    let mut options = Options::default();
    options.keep_going = true;
    let upgraded = chain
        .upgrader()
        .upgrade(Save::from_str(save).unwrap(), &options)
        .unwrap();
    let status = |name: &str| {
        let report = upgraded.mods.iter().find(|m| m.name == name).unwrap();
        report.status.clone()
    };
    assert!(matches!(status("first"), ModStatus::Held(_)));
    assert!(
        matches!(status("second"), ModStatus::Held(why) if why.contains("comes after the mod first")),
        "{:?}",
        status("second")
    );
    assert_eq!(status("third"), ModStatus::Upgraded);
    assert_eq!(
        upgraded.save.data.to_string(),
        r#"{"mods":{"first":{"list":[1,2]},"second":{},"third":{"ok":true}}}"#
    );
    let first = upgraded.mods.iter().find(|m| m.name == "first").unwrap();
    assert_eq!(
        first.printed,
        [("0001-rename.lua".to_string(), "looking at\t2".to_string())]
    );
    // Both marked: a store keeps their versions.
    let stored = chain.resave(upgraded.save.meta.clone(), upgraded.save.data.clone());
    for name in ["first", "second"] {
        let entry = stored.meta.extra.get("mods").unwrap().get(name).unwrap();
        assert_eq!(entry.get("version"), Some(&Value::from(1)), "{name}");
        assert!(entry.get("held").is_some(), "{name}");
    }

    // Stored with its marks, the save gets no cache: a load without keeping going must
    // fail on it rather than be served the held document.
    use savechain::cache::{self, Source};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slot.json");
    std::fs::write(cache::cache_path(&path), b"an old cache").unwrap();
    cache::store(&stored, &path, &chain).unwrap();
    assert!(!cache::cache_path(&path).exists());
    assert!(cache::store_bytes(&stored, &chain)
        .unwrap()
        .cache
        .is_empty());
    assert!(cache::load_with(&path, &mut chain.upgrader(), &Options::default()).is_err());
    let loaded = cache::load_with(&path, &mut chain.upgrader(), &options).unwrap();
    assert!(matches!(loaded.source, Source::Json(_)));
}

#[test]
fn a_chain_without_mods_keeps_any_meta_mods_and_mods_run_when_the_game_is_at_its_latest() {
    let plain = Chain::new("1.0.0", vec![]).unwrap();
    let save =
        Save::from_str(r#"{"meta": {"version": 1, "mods": ["a", "b"]}, "data": {}}"#).unwrap();
    let upgraded = plain
        .upgrader()
        .upgrade(save.clone(), &Options::default())
        .unwrap();
    assert_eq!(upgraded.save, save);
    // `--to 1` on a save at the game's latest version already: the mods still run.
    let mut options = Options::default();
    options.target = Some(1);
    let at_latest = r#"{"meta": {"version": 2, "mods": {"tinker": {"version": 3}}}, "data": {"ship": {}, "mods": {"tinker": {}}}}"#;
    let upgraded = upgrade(at_latest, &options).unwrap();
    assert_eq!(upgraded.mods[0].status, ModStatus::Current);
}

/// Keeping going upgrades the save again without the mod that failed: what the mods before
/// it did is in the result once, and so is the game's history.
#[test]
fn keeping_going_past_a_late_failure_applies_every_other_step_once() {
    let count = |name: &str| {
        Mod::new(
            name,
            "1.0.0",
            vec![lua(
                "0001-count.lua",
                &format!("return function(data) data.count = (data.count or 0) + 1; data.mods['{name}'].ran = true end"),
            )],
        )
        .unwrap()
    };
    let late = Mod::new(
        "zzz",
        "1.0.0",
        vec![lua(
            "0001-late.lua",
            "return function(data) data.count = data.count + 100; error('late') end",
        )],
    )
    .unwrap();
    let game = Chain::new(
        "2.0.0",
        vec![lua(
            "0001-game.lua",
            "return function(data) data.count = 10 end",
        )],
    )
    .unwrap();
    let chain = game
        .with_mods(vec![count("aaa"), count("mmm"), late])
        .unwrap();
    let save = r#"{"meta": {"version": 1, "mods": {"aaa": {"version": 1}, "mmm": {"version": 1}, "zzz": {"version": 1}}},
                   "data": {"mods": {"aaa": {}, "mmm": {}, "zzz": {}}}}"#;
    let mut options = Options::default();
    options.keep_going = true;
    let mut upgrader = chain.upgrader();
    for _ in 0..2 {
        let upgraded = upgrader
            .upgrade(Save::from_str(save).unwrap(), &options)
            .unwrap();
        assert_eq!(upgraded.save.data.get("count"), Some(&Value::from(12)));
        let history = upgraded.save.meta.extra.get("history").unwrap().to_string();
        assert_eq!(
            history,
            r#"[{"from":1,"to":2,"writer":"2.0.0"},{"from":1,"mod":"aaa","to":2,"writer":"1.0.0"},{"from":1,"mod":"mmm","to":2,"writer":"1.0.0"}]"#
        );
        let names: Vec<_> = upgraded.steps.iter().map(|s| s.in_mod.clone()).collect();
        assert_eq!(names, [None, Some("aaa".into()), Some("mmm".into())]);
        assert!(matches!(upgraded.mods[2].status, ModStatus::Held(_)));
    }
}

/// A mark outlives no cause: once the mod's data is current (a release that knows it), or
/// its steps run, the mark goes; and data whose entry has only a mark keeps the message
/// about its missing version.
#[test]
fn a_held_mark_goes_with_its_cause() {
    let save = r#"{"meta": {"version": 2, "mods": {"tinker": {"version": 3, "writer": "9.0.0",
                     "held": {"error": "mod tinker: its data is version 3, newer than ...", "writer": "1.0.0"}}}},
                   "data": {"ship": {}, "mods": {"tinker": {}}}}"#;
    let upgraded = upgrade(save, &Options::default()).unwrap();
    assert_eq!(upgraded.mods[0].status, ModStatus::Current);
    assert_eq!(
        upgraded
            .save
            .meta
            .extra
            .get("mods")
            .unwrap()
            .get("tinker")
            .unwrap()
            .to_string(),
        r#"{"version":3,"writer":"9.0.0"}"#
    );
    let unversioned = r#"{"meta": {"version": 2, "mods": {"tinker": {"held": {"error": "...", "writer": "1.2.0"}}}},
                          "data": {"ship": {}, "mods": {"tinker": {"charge": 1}}}}"#;
    let err = upgrade(unversioned, &Options::default()).unwrap_err();
    assert!(
        err.message().contains("no version for it in meta.mods"),
        "{err}"
    );
}

/// The source a held mod's step rewrites, as another program might while the save is
/// upgraded into another folder; nothing when `None`.
static REWRITTEN_MEANWHILE: std::sync::Mutex<Option<std::path::PathBuf>> =
    std::sync::Mutex::new(None);

fn rewrite_and_fail(_: &mut Value, _: &mut savechain::upgrade::StepContext) -> Result<(), String> {
    if let Some(path) = REWRITTEN_MEANWHILE.lock().unwrap().as_ref() {
        std::fs::write(path, "{\"meta\": {\"version\": 1}, \"data\": {}}\n").unwrap();
    }
    Err("no fuel".into())
}

#[test]
fn a_save_upgraded_into_another_folder_as_it_was_is_copied_as_read_or_not_at_all() {
    use savechain::upgrade::{upgrade_file, Target};
    let broken = Mod::new(
        "broken",
        "0.9.0",
        vec![Step::rust(1, "fails", "1", rewrite_and_fail)],
    )
    .unwrap();
    let chain = chain().with_mods(vec![broken]).unwrap();
    let mut options = Options::default();
    options.keep_going = true;
    // A save whose mod is held already: held again, it comes out as it went in.
    let held = chain
        .upgrader()
        .upgrade(Save::from_str(BROKEN_SAVE).unwrap(), &options)
        .unwrap()
        .save;
    let mut text = held.to_vec().unwrap();
    text.extend_from_slice(b"  \n");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a.json");
    std::fs::write(&source, &text).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let output = out.join("a.json");

    let report = upgrade_file(
        &mut chain.upgrader(),
        &source,
        Target::To(&output),
        &options,
    )
    .unwrap();
    assert!(report.steps.is_empty(), "{report:?}");
    assert_eq!(std::fs::read(&output).unwrap(), text, "the bytes read");

    // The source rewritten while the steps ran: the bytes read are gone, nothing is written.
    std::fs::remove_file(&output).unwrap();
    *REWRITTEN_MEANWHILE.lock().unwrap() = Some(source.clone());
    let err = upgrade_file(
        &mut chain.upgrader(),
        &source,
        Target::To(&output),
        &options,
    )
    .unwrap_err();
    *REWRITTEN_MEANWHILE.lock().unwrap() = None;
    assert_eq!(err.kind(), savechain::ErrorKind::Changed, "{err}");
    assert!(
        err.to_string()
            .contains("changed while it was being upgraded"),
        "{err}"
    );
    // The file named once, in front.
    assert!(
        err.to_string().starts_with(&format!(
            "{}: the save changed while it was being upgraded",
            source.display()
        )),
        "{err}"
    );
    assert!(!output.exists());
    assert_ne!(std::fs::read(&source).unwrap(), text);
}
