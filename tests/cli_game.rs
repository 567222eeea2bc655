//! `save-upgrade` and the game a save belongs to: the built-in chain upgrades only saves of
//! its own game (`meta.game` is "Starlane Traders"), and refuses the others, and saves that
//! name no game, with an error that says how to upgrade them, leaving them as they are.

mod common;

use std::fs;

use common::{names, save_upgrade, stderr};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

/// A save of another game, at a version the example chain covers.
const OTHER_GAME: &str = r#"{"meta": {"game": "Dust Rangers", "version": 3}, "data": {"x": 1}}"#;
/// A save that names no game, at the example chain's latest version: nothing to run, so
/// before games were checked it passed as "already current".
const NO_GAME: &str = r#"{"meta": {"version": 9}, "data": {}}"#;

/// A folder with a save of the example game, one of another game and one of no game.
fn mixed() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        format!("{FIXTURES}/v1/small.json"),
        dir.path().join("starlane.json"),
    )
    .unwrap();
    fs::write(dir.path().join("other.json"), OTHER_GAME).unwrap();
    fs::write(dir.path().join("nameless.json"), NO_GAME).unwrap();
    dir
}

fn assert_refused_with_the_hint(err: &str) {
    assert!(
        err.contains(
            "other.json: at meta.game: the save is of the game \"Dust Rangers\", and this chain \
             upgrades only saves of \"Starlane Traders\"; it is left as it is"
        ),
        "{err}"
    );
    assert!(
        err.contains("nameless.json: at meta.game: the save names no game, and this chain upgrades only saves of \"Starlane Traders\""),
        "{err}"
    );
    assert!(
        err.contains("add \"game\": \"Starlane Traders\" to its meta"),
        "{err}"
    );
    assert_eq!(
        err.matches("--upgrades DIR --writer VERSION").count(),
        2,
        "both errors say how to upgrade another game's saves: {err}"
    );
}

#[test]
fn the_built_in_chain_refuses_saves_of_another_game_or_none_in_place() {
    let dir = mixed();
    let out = save_upgrade(&["."], dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_refused_with_the_hint(&err);
    assert!(
        err.contains("upgraded 1, already current 0, failed 2"),
        "{err}"
    );
    // The refused saves are as they were, with no backup; the example game's is upgraded.
    assert_eq!(
        fs::read_to_string(dir.path().join("other.json")).unwrap(),
        OTHER_GAME
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("nameless.json")).unwrap(),
        NO_GAME
    );
    assert_eq!(
        names(dir.path()),
        [
            "nameless.json",
            "other.json",
            "starlane.json",
            "starlane.json.v1.bak"
        ]
    );
}

#[test]
fn the_built_in_chain_refuses_them_in_checks_and_into_another_folder() {
    let dir = mixed();
    let out = save_upgrade(&["--check", "."], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_refused_with_the_hint(&stderr(&out));

    let into = tempfile::tempdir().unwrap();
    let out_dir = into.path().join("new");
    let out = save_upgrade(&["--out-dir", out_dir.to_str().unwrap(), "."], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_refused_with_the_hint(&stderr(&out));
    assert_eq!(names(&out_dir), ["starlane.json"]);
    assert_eq!(
        names(dir.path()),
        ["nameless.json", "other.json", "starlane.json"]
    );
}

#[test]
fn another_games_steps_upgrade_its_saves() {
    // What the hint says to do: that game's steps and version, which name no game.
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("steps")).unwrap();
    for from in 1..=3 {
        fs::write(
            dir.path().join(format!("steps/000{from}-step.lua")),
            "return function(data) data.x = data.x + 1 end",
        )
        .unwrap();
    }
    fs::write(dir.path().join("other.json"), OTHER_GAME).unwrap();
    let out = save_upgrade(
        &["--upgrades", "steps", "--writer", "2.0.0", "other.json"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let save = savechain::Save::load(dir.path().join("other.json")).unwrap();
    assert_eq!(save.meta.version, 4);
    assert_eq!(save.data.get("x").and_then(|x| x.as_i64()), Some(2));
    assert_eq!(
        save.meta.extra.get("game").and_then(|g| g.as_str()),
        Some("Dust Rangers")
    );
    // A chain given with --upgrades names no game.
    let out = save_upgrade(
        &[
            "chain",
            "--json",
            "--upgrades",
            "steps",
            "--writer",
            "2.0.0",
        ],
        dir.path(),
    );
    let chain = savechain::text::from_slice(&out.stdout).unwrap();
    assert_eq!(chain.get("game"), Some(&savechain::Value::Null));
}

#[test]
fn inspect_and_chain_show_the_game() {
    let dir = mixed();
    let out = save_upgrade(&["inspect", "other.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  game Dust Rangers\n"), "{text}");
    assert!(
        text.contains("  cannot upgrade: at meta.game: the save is of the game \"Dust Rangers\""),
        "{text}"
    );
    let out = save_upgrade(&["inspect", "--json", "nameless.json"], dir.path());
    let facts = savechain::text::from_slice(&out.stdout).unwrap();
    assert_eq!(facts.get("game"), Some(&savechain::Value::Null));
    assert!(facts
        .get("refused")
        .and_then(|r| r.as_str())
        .unwrap()
        .contains("the save names no game"));

    let out = save_upgrade(&["chain", "--json"], dir.path());
    let chain = savechain::text::from_slice(&out.stdout).unwrap();
    assert_eq!(
        chain.get("game").and_then(|g| g.as_str()),
        Some("Starlane Traders")
    );
    let out = save_upgrade(&["chain"], dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("Starlane Traders: versions 1 to 9, 8 steps, writer "),
        "{text}"
    );
}

/// A modder's hand edit that gives a cargo record a count that is not a whole number: the
/// step that works out its mass (8 -> 9) fails that save, naming the record and the value,
/// in the built-in chain and in its Lua twin alike, and the save is left as it was (before,
/// both gave it a mass of 0.0 and said nothing).
#[test]
fn a_cargo_count_that_is_not_whole_fails_its_save_in_either_chain() {
    let text = fs::read_to_string(format!("{FIXTURES}/v2/small.json"))
        .unwrap()
        .replace("\"qty\": 40", "\"qty\": 40.5");
    let steps = concat!(env!("CARGO_MANIFEST_DIR"), "/upgrades");
    for chain in [&[][..], &["--upgrades", steps, "--writer", "1.0.0"][..]] {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("hq.json"), &text).unwrap();
        let mut args = chain.to_vec();
        args.push("hq.json");
        let out = save_upgrade(&args, dir.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{chain:?}: {err}");
        assert!(
            err.contains("ship.cargo[0].qty is not an integer: 40.5"),
            "{chain:?}: {err}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("hq.json")).unwrap(),
            text
        );
        assert_eq!(names(dir.path()), ["hq.json"], "{chain:?}: nothing kept");
    }
}
