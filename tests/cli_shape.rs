//! Shapes from the command line: `shape infer`, `shape record`, `schema`, `validate`, and
//! the example game's recorded shapes (made with those commands, and of its Rust type at
//! version 9).

mod common;

#[allow(dead_code)]
#[path = "common/starlane_state.rs"]
mod starlane_state;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{save_upgrade, stderr};

use savechain::shape::{self, Shapes};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The example game's steps folder copied into `dir/steps`, without its shapes.
fn steps_folder(dir: &Path) -> PathBuf {
    let steps = dir.join("steps");
    fs::create_dir(&steps).unwrap();
    for entry in fs::read_dir(root().join("upgrades")).unwrap() {
        let entry = entry.unwrap();
        if entry.path().is_file() {
            fs::copy(entry.path(), steps.join(entry.file_name())).unwrap();
        }
    }
    steps
}

fn run(args: &[&str]) -> Output {
    save_upgrade(args, root())
}

#[test]
fn the_recorded_shapes_are_made_by_the_commands_and_the_game_type() {
    // Versions 1 to 8 as `shape infer` gives them from the fixtures, systems a map from
    // version 5 on.
    for version in 1..=8 {
        let fixtures = format!("fixtures/v{version}");
        let mut args = vec!["shape", "infer", fixtures.as_str()];
        if version >= 5 {
            args.extend(["--map", "systems"]);
        }
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let file = root().join(format!("upgrades/shapes/{version:04}.json"));
        assert_eq!(
            stdout(&out),
            fs::read_to_string(file).unwrap(),
            "version {version}"
        );
    }
    // Version 9, the game's own type.
    let typed = Shapes::file_text(9, &shape::of::<starlane_state::State>().unwrap());
    assert_eq!(
        fs::read_to_string(root().join("upgrades/shapes/0009.json")).unwrap(),
        typed
    );
    // The mod's, from its fixtures, notes keyed by system.
    for version in 1..=3 {
        let fixtures = format!("mods/cartographer/fixtures/v{version}");
        let out = run(&[
            "shape",
            "infer",
            "--mod",
            "cartographer",
            "--map",
            "notes",
            &fixtures,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let file = root().join(format!("mods/cartographer/shapes/{version:04}.json"));
        assert_eq!(
            stdout(&out),
            fs::read_to_string(file).unwrap(),
            "version {version}"
        );
    }
}

#[test]
fn every_fixture_and_expected_save_validates() {
    let out = run(&["validate", "fixtures/", "expected/"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("validated: 38 match, 0 do not, 0 failed"),
        "{}",
        stderr(&out)
    );
    let out = run(&[
        "validate",
        "--mods",
        "mods",
        "fixtures/",
        "expected/",
        "mods/cartographer/fixtures/",
        "mods/cartographer/expected/",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let out = run(&[
        "validate",
        "--upgrades",
        "upgrades",
        "--writer",
        "0.1.0",
        "fixtures/",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn validate_prints_each_mismatch_by_file_and_path_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let mut save =
        savechain::Save::from_slice(&fs::read(root().join("fixtures/v9/small.json")).unwrap())
            .unwrap();
    savechain::edit::set_allowing(
        &mut save,
        "data.player.rank.level",
        savechain::Value::Double(3.5),
        savechain::edit::Allow::default().with_kind_change(),
    )
    .unwrap();
    savechain::edit::set(&mut save, "data.player.nick", savechain::Value::from("Ace")).unwrap();
    save.data["ship"].as_object_mut().unwrap().remove("name");
    fs::write(dir.path().join("bad.json"), save.to_vec().unwrap()).unwrap();
    fs::copy(
        root().join("fixtures/v9/small.json"),
        dir.path().join("good.json"),
    )
    .unwrap();
    let out = save_upgrade(&["validate", "."], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "./bad.json: data.player.nick: the game reads no member \"nick\" here (it would be dropped when the game saves)\n\
         ./bad.json: data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double\n\
         ./bad.json: data.ship.name: the game reads text here; the member is missing\n"
    );
    assert!(
        stderr(&out).contains("validated: 1 matches, 1 does not, 0 failed"),
        "{}",
        stderr(&out)
    );

    // A version with no recorded shape cannot be checked: trouble, saying how to record.
    let steps = steps_folder(dir.path());
    let out = save_upgrade(
        &[
            "validate",
            "--upgrades",
            steps.to_str().unwrap(),
            "--writer",
            "0.1.0",
            "good.json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("good.json: version 9 has no recorded shape (none is recorded)"),
        "{}",
        stderr(&out)
    );
    // A save of another game is not the built-in chain's.
    let mut other =
        savechain::Save::from_slice(&fs::read(dir.path().join("good.json")).unwrap()).unwrap();
    other
        .meta
        .extra
        .insert("game", savechain::Value::from("Dust Rangers"));
    fs::write(dir.path().join("good.json"), other.to_vec().unwrap()).unwrap();
    let out = save_upgrade(&["validate", "good.json"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the save names the game \"Dust Rangers\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn infer_refuses_saves_of_several_versions_listing_them() {
    let out = run(&["shape", "infer", "fixtures/v4", "fixtures/v5/small.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.contains("the saves are at several versions, and a shape is of one"),
        "{err}"
    );
    assert!(
        err.contains("  version 4: fixtures/v4/edge.json, fixtures/v4/small.json"),
        "{err}"
    );
    assert!(err.contains("  version 5: fixtures/v5/small.json"), "{err}");
    let out = run(&["shape", "infer", "--mod", "cartographer", "fixtures/v9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the save records no version of mod cartographer"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn record_writes_once_and_refuses_to_change_a_recorded_shape() {
    let dir = tempfile::tempdir().unwrap();
    let steps = steps_folder(dir.path());
    let steps = steps.to_str().unwrap();
    let fixtures = root().join("fixtures/v8");
    let fixtures = fixtures.to_str().unwrap();
    let record = |extra: &[&str]| {
        let mut args = vec!["shape", "record", "--upgrades", steps, "--writer", "0.1.0"];
        args.extend_from_slice(extra);
        save_upgrade(&args, dir.path())
    };
    let out = record(&["--map", "systems", fixtures]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("recorded the shape of version 8 in"),
        "{}",
        stderr(&out)
    );
    let file = Path::new(steps).join("shapes/0008.json");
    let text = fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        fs::read_to_string(root().join("upgrades/shapes/0008.json")).unwrap()
    );
    let out = record(&["--map", "systems", fixtures]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already recorded"),
        "{}",
        stderr(&out)
    );
    // Saves that match the recorded shape agree with it, though the shape inferred from
    // them is wider (systems not a map here): nothing to record.
    let out = record(&[fixtures]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already recorded in")
            && stderr(&out).contains("these saves match it; nothing written"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), text);
    // So do they when the recorded shape was narrowed by hand (an i64 made a u64).
    let narrowed = text.replace(r#""i64_max": "i64""#, r#""i64_max": "u64""#);
    assert_ne!(narrowed, text);
    fs::write(&file, &narrowed).unwrap();
    let out = record(&["--map", "systems", fixtures]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("these saves match it; nothing written"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), narrowed);
    fs::write(&file, &text).unwrap();
    // A save that does not match is refused, each place shown by file and path, and the
    // version to make is the chain's latest (9) + 1, not 8 + 1.
    let odd = dir.path().join("odd");
    fs::create_dir(&odd).unwrap();
    let small = fs::read_to_string(root().join("fixtures/v8/small.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&small).unwrap();
    json["data"]["nickname"] = "Zed".into();
    fs::write(odd.join("small.json"), json.to_string()).unwrap();
    let out = record(&["--map", "systems", odd.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("small.json: data.nickname: the game reads no member \"nickname\" here"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(
            "a recorded shape never changes (saves of version 8 exist with it): if the game now \
             reads something else, make version 10: a step 9 -> 10, the game's version 10, and \
             record the shape of 10; nothing was written"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("make version 9"), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&file).unwrap(), text);
    // A shape file, as `shape infer` prints it (here the game's type at version 9).
    let typed = dir.path().join("typed.json");
    fs::write(
        &typed,
        Shapes::file_text(9, &shape::of::<starlane_state::State>().unwrap()),
    )
    .unwrap();
    let out = record(&["--from-shape", typed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(Path::new(steps).join("shapes/0009.json")).unwrap(),
        fs::read_to_string(root().join("upgrades/shapes/0009.json")).unwrap()
    );
    // The v9 fixtures match the shape recorded from the type, though inferred they say
    // i64 where it says u32.
    let v9 = root().join("fixtures/v9");
    let out = record(&["--map", "systems", v9.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("these saves match it"),
        "{}",
        stderr(&out)
    );
    // Another shape file of version 9 is refused, each difference shown.
    let other = dir.path().join("other.json");
    fs::write(
        &other,
        Shapes::file_text(9, &r#"{"object": {"hp": "u32"}}"#.parse().unwrap()),
    )
    .unwrap();
    let out = record(&["--from-shape", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stdout(&out).contains("data.hp"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("the shape given differs from it (each difference above)"),
        "{}",
        stderr(&out)
    );
    // The chain reads them back.
    let out = save_upgrade(
        &[
            "validate",
            "--upgrades",
            steps,
            "--writer",
            "0.1.0",
            fixtures,
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The built-in chain's shapes are compiled in: where they live is said.
    let out = save_upgrade(&["shape", "record", fixtures], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("compiled into save-upgrade"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("upgrades/shapes/"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn record_writes_a_mods_shape_into_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("mods/cartographer");
    fs::create_dir_all(folder.join("lib")).unwrap();
    for name in [
        "mod.json",
        "0001-notes-become-records.lua",
        "0002-route-as-waypoints.lua",
        "lib/notes.lua",
    ] {
        fs::copy(
            root().join("mods/cartographer").join(name),
            folder.join(name),
        )
        .unwrap();
    }
    let fixtures = root().join("mods/cartographer/fixtures/v2");
    let out = save_upgrade(
        &[
            "shape",
            "record",
            "--mods",
            "mods",
            "--mod",
            "cartographer",
            "--map",
            "notes",
            fixtures.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(folder.join("shapes/0002.json")).unwrap(),
        fs::read_to_string(root().join("mods/cartographer/shapes/0002.json")).unwrap()
    );
    let out = save_upgrade(
        &[
            "shape",
            "record",
            "--mod",
            "cartographer",
            fixtures.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--mods DIR"), "{}", stderr(&out));
}

#[test]
fn schema_is_of_the_latest_recorded_version_unless_asked() {
    let out = run(&["schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["title"], "Starlane Traders save, version 9");
    assert_eq!(
        schema["properties"]["meta"]["properties"]["version"]["const"],
        9
    );
    let out = run(&[
        "schema",
        "--version",
        "4",
        "--mods",
        "mods",
        "--mod",
        "cartographer=2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["title"], "Starlane Traders save, version 4");
    assert!(out.stdout.ends_with(b"}\n"));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("cartographer"), "{text}");
    let out = run(&["schema", "--version", "12"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("version 12 has no recorded shape"),
        "{}",
        stderr(&out)
    );
}

/// A copy of `fixtures/v9/small.json` changed by `change`, written as `name` in `dir`.
fn changed_v9(dir: &Path, name: &str, change: impl FnOnce(&mut savechain::Save)) {
    let mut save =
        savechain::Save::from_slice(&fs::read(root().join("fixtures/v9/small.json")).unwrap())
            .unwrap();
    change(&mut save);
    fs::write(dir.join(name), save.to_vec().unwrap()).unwrap();
}

#[test]
fn shape_check_is_the_drift_guard_on_saves_the_game_writes_now() {
    let out = run(&["shape", "check", "fixtures/v9/"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("no drift"), "{}", stderr(&out));

    // A member renamed and one added without a new version: each named by file and path,
    // with what to do.
    let dir = tempfile::tempdir().unwrap();
    changed_v9(dir.path(), "a.json", |save| {
        let player = save.data["player"].as_object_mut().unwrap();
        let standing = player.remove("standing").unwrap();
        player.insert("reputation_score", standing);
        savechain::edit::set(save, "data.ship.extra", savechain::Value::Int(1)).unwrap();
    });
    fs::copy(
        root().join("fixtures/v9/edge.json"),
        dir.path().join("b.json"),
    )
    .unwrap();
    let out = save_upgrade(&["shape", "check", "."], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "./a.json: data.player.standing is missing and \"reputation_score\" beside it is new: \
         likely renamed to \"reputation_score\"\n\
         ./a.json: data.ship.extra: the game reads no member \"extra\" here (it would be \
         dropped when the game saves)\n"
    );
    assert!(
        stderr(&out).contains(
            "what to do: a recorded shape never changes, so make version 10: a step 9 -> 10 \
             (declare the renames: {\"rename\":\"player.standing\",\"to\":\"reputation_score\"})"
        ),
        "{}",
        stderr(&out)
    );

    // Saves of an older version are not what the game writes now.
    let out = run(&["shape", "check", "fixtures/v8/small.json"]);
    assert_eq!(out.status.code(), Some(2));
    // The file is named first, as in every other error.
    assert!(
        stderr(&out).starts_with(
            "error: fixtures/v8/small.json: the save is version 8, older than the chain's \
             latest version 9"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("save 1"), "{}", stderr(&out));

    // A chain whose latest version has no recorded shape drifts until it is recorded.
    let steps = steps_folder(dir.path());
    fs::create_dir(steps.join("shapes")).unwrap();
    fs::copy(
        root().join("upgrades/shapes/0008.json"),
        steps.join("shapes/0008.json"),
    )
    .unwrap();
    let out = save_upgrade(
        &[
            "shape",
            "check",
            "--upgrades",
            "steps",
            "--writer",
            "0.1.0",
            "b.json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("version 9 has steps but no recorded shape (the latest recorded is 8)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn test_names_the_step_that_forgot_a_member_even_with_its_expected_forms_blessed() {
    let dir = tempfile::tempdir().unwrap();
    let steps = steps_folder(dir.path());
    fs::create_dir(steps.join("shapes")).unwrap();
    for entry in fs::read_dir(root().join("upgrades/shapes")).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), steps.join("shapes").join(entry.file_name())).unwrap();
    }
    // The mission log step forgets to drop the list it replaced.
    let step = steps.join("0007-mission-log.lua");
    let source = fs::read_to_string(&step).unwrap();
    let forgetful = source.replace("  up.drop(data, \"lua.missions.done\")\n", "");
    assert_ne!(source, forgetful);
    fs::write(&step, forgetful).unwrap();
    let fixtures = dir.path().join("fixtures");
    fs::create_dir(&fixtures).unwrap();
    fs::copy(
        root().join("fixtures/v6/small.json"),
        fixtures.join("small.json"),
    )
    .unwrap();
    let test = |extra: &[&str]| {
        let mut args = vec!["test", "--upgrades", "steps", "--writer", "0.1.0"];
        args.extend_from_slice(extra);
        args.push("fixtures");
        save_upgrade(&args, dir.path())
    };
    let out = test(&["--bless"]);
    assert!(stderr(&out).contains("wrote "), "{}", stderr(&out));
    let out = test(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "fixtures/small.json: after step 0007-mission-log.lua (7 -> 8, The missions module \
         keeps one log of missions with their state, instead of two lists.): \
         data.lua.missions.done: the game reads no member \"done\" here (it would be dropped \
         when the game saves)\n"
    );
    assert!(
        stderr(&out).contains(
            "fixtures: 1 match, 0 differ, 0 without an expected form, 0 failed; checked step \
             by step against the recorded shapes: 1 mismatch"
        ),
        "{}",
        stderr(&out)
    );
    // The example game's own fixtures pass, the mod's too.
    let out = run(&["test", "-q", "fixtures/"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let out = run(&[
        "test",
        "-q",
        "--mods",
        "mods/",
        "mods/cartographer/fixtures/",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn validate_says_the_steps_are_missing_for_a_save_beyond_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    changed_v9(dir.path(), "ahead.json", |save| save.meta.version = 10);
    let out = save_upgrade(&["validate", "ahead.json"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "ahead.json: version 10, beyond the chain's latest version 9: the steps up to \
             version 10 are missing (the chain is older than the save)"
        ),
        "{}",
        stderr(&out)
    );
    // Recording a shape there is refused, so it is not what to do.
    assert!(!stderr(&out).contains("shape record"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("validated: 0 match, 0 do not, 1 failed"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn test_names_the_versions_without_a_recorded_shape_it_did_not_check() {
    let dir = tempfile::tempdir().unwrap();
    let steps = steps_folder(dir.path());
    fs::create_dir(steps.join("shapes")).unwrap();
    for version in (1..=9).filter(|v| ![5, 6].contains(v)) {
        let name = format!("shapes/{version:04}.json");
        fs::copy(root().join("upgrades").join(&name), steps.join(&name)).unwrap();
    }
    let out = run(&[
        "test",
        "--upgrades",
        steps.to_str().unwrap(),
        "--writer",
        "0.1.0",
        "fixtures/",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "checked step by step against the recorded shapes: 0 mismatches; versions 5, 6 \
             have no recorded shape: not checked, nor were the declared steps from there \
             (0006-shields-and-tutorial.json) checked against shapes"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_upgrades_option_names_declared_steps_and_recorded_shapes() {
    for command in ["validate", "shape record", "upgrade"] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--help");
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let help = stdout(&out)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            help.contains("declared steps (NNNN-short-description.json files"),
            "{command}: {help}"
        );
        assert!(help.contains("DIR/shapes/"), "{command}: {help}");
    }
}
