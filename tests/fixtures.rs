//! The shipped fixtures load, are canonical, and hold exactly the values they claim.

use savechain::{Save, Value};

fn fixture(name: &str) -> (Vec<u8>, Save) {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap();
    let save = Save::load(&path).unwrap();
    (bytes, save)
}

/// The canonical text of a save as format revision 2 wrote it: `data` first, then `meta`.
fn revision_2(canonical: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(canonical).unwrap();
    let meta_and_data = text
        .strip_prefix("{\n  ")
        .and_then(|t| t.strip_suffix("\n}\n"))
        .unwrap();
    // Only the top level's members start a line indented by two spaces.
    let (meta, data) = meta_and_data.split_once(",\n  \"data\": ").unwrap();
    format!("{{\n  \"data\": {data},\n  {meta}\n}}\n").into_bytes()
}

/// The fixtures are saves as they were written before format revision 3: canonical then,
/// `data` before `meta`, and otherwise canonical now.
#[test]
fn every_fixture_is_canonical_as_revision_2_wrote_it() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
    let mut seen = 0;
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "json") {
            let bytes = std::fs::read(entry.path()).unwrap();
            let save = Save::from_slice(&bytes).unwrap();
            let canonical = save.to_vec().unwrap();
            assert!(canonical.starts_with(b"{\n  \"meta\": {\n"));
            assert_eq!(revision_2(&canonical), bytes, "{}", entry.path().display());
            seen += 1;
        }
    }
    assert!(seen >= 2);
}

#[test]
fn edge_values_are_exact() {
    let (_, save) = fixture("v1/edge.json");
    let notes = save.data.get("notes").unwrap();
    let bits = |section: &str, key: &str| {
        notes
            .get(section)
            .and_then(|s| s.get(key))
            .and_then(Value::as_f64)
            .unwrap()
            .to_bits()
    };
    assert_eq!(bits("doubles", "negative_zero"), (-0.0f64).to_bits());
    assert_eq!(bits("doubles", "one_tenth"), 0.1f64.to_bits());
    assert_eq!(bits("doubles", "smallest_subnormal"), 1);
    assert_eq!(bits("doubles", "largest"), f64::MAX.to_bits());
    assert_eq!(bits("doubles", "nan_with_payload"), 0xfff4_0000_0000_0001);
    assert_eq!(bits("doubles", "typed_by_hand"), 2.5e-3f64.to_bits());
    let ints = notes.get("integers").unwrap();
    assert_eq!(ints.get("u64_max").and_then(Value::as_u64), Some(u64::MAX));
    assert_eq!(ints.get("i64_min").and_then(Value::as_i64), Some(i64::MIN));
    let bytes = notes.get("bytes").unwrap();
    assert_eq!(
        bytes.get("nul_and_high"),
        Some(&Value::Bytes(b"a\0b\xff".to_vec()))
    );
    let literals = notes
        .get("tag_like_literals")
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(literals[0], Value::Array(vec!["d".into(), "0x1p+0".into()]));
    assert_eq!(literals[3], Value::Array(vec!["x".into(), "y".into()]));
    assert_eq!(
        notes
            .get("text")
            .and_then(|t| t.get("non_ascii"))
            .and_then(Value::as_str),
        Some("Zoë — 星間 🚀")
    );
}

/// The example game's chain, tested as a mod author tests theirs: every fixture upgrades to
/// its expected form in `expected/` (`save-upgrade test --bless fixtures/` writes them).
#[test]
fn every_fixture_upgrades_to_its_expected_form() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["test", "fixtures/"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("fixtures: 19 match, 0 differ"), "{stderr}");
}

/// `upgrades/` holds the example game's whole chain in Lua (the Lua twins of its three Rust
/// steps beside its Lua steps), as a program that runs Lua steps only (the C ABI, stock
/// Lua) builds it: it upgrades every fixture to its expected form byte for byte, as the
/// built-in chain does.
#[test]
fn the_lua_chain_of_upgrades_makes_the_built_in_chains_saves() {
    let root = env!("CARGO_MANIFEST_DIR");
    let chain = savechain::upgrade::Chain::from_lua_dir("0.1.0", format!("{root}/upgrades"))
        .unwrap()
        .for_game("Starlane Traders")
        .unwrap();
    assert_eq!((chain.oldest(), chain.latest()), (1, 9));
    let mut compared = 0;
    for entry in walkdir::WalkDir::new(format!("{root}/fixtures")) {
        let entry = entry.unwrap();
        if entry.path().extension().is_none_or(|e| e != "json") {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(format!("{root}/fixtures"))
            .unwrap();
        let text = std::fs::read(entry.path()).unwrap();
        let upgraded = chain
            .upgrader()
            .upgrade_text(&text, &savechain::Options::default())
            .unwrap();
        let expected = std::fs::read(format!("{root}/expected/{}", relative.display())).unwrap();
        // A save at the latest version comes back as it was: its canonical text is the
        // expected form (the fixtures have the order of format revision 2).
        let canonical = || Save::from_slice(&text).unwrap().to_vec().unwrap();
        assert!(
            upgraded.text.unwrap_or_else(canonical) == expected,
            "{}",
            relative.display()
        );
        compared += 1;
    }
    assert_eq!(compared, 19);
}

/// The example game's mod, `mods/cartographer`, with its fixtures at each of its data
/// versions: each upgrades, after the game's chain, to its expected form.
#[test]
fn the_example_mods_fixtures_upgrade_to_their_expected_forms() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["test", "--mods", "mods/", "mods/cartographer/fixtures/"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("fixtures: 3 match, 0 differ"), "{stderr}");
    // Without the mod, its data is kept as it is: the expected forms differ exactly there.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["test", "mods/cartographer/fixtures/"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let changed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter(|l| !l.contains("mods.cartographer") && !l.contains("meta.history"))
        .collect();
    assert!(changed.is_empty(), "{stdout}");
}

/// `save-upgrade test` on a chain of its own: a difference is shown path by path (exit 1),
/// a missing expected form is named (exit 1), `--bless` writes them (exit 0), and the
/// fixtures are never written.
#[test]
fn test_shows_differences_and_bless_writes_the_expected_forms() {
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::write(
        steps.join("0001-double-hp.lua"),
        "return function(d) d.hp = d.hp * 2 end",
    )
    .unwrap();
    let fixtures = dir.path().join("fixtures");
    std::fs::create_dir_all(fixtures.join("old")).unwrap();
    let a = r#"{"meta": {"version": 1}, "data": {"hp": ["d", 1.5]}}"#;
    std::fs::write(fixtures.join("old/a.json"), a).unwrap();
    std::fs::write(fixtures.join("notes.json"), r#"{"not": "a save"}"#).unwrap();
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
            .arg("test")
            .args(extra)
            .args(["--upgrades", "steps", "--writer", "1.0.0", "fixtures"])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains("no expected form expected/old/a.json"),
        "{stdout}"
    );

    let out = run(&["--bless"]);
    assert_eq!(out.status.code(), Some(0));
    let expected = dir.path().join("expected/old/a.json");
    let written = std::fs::read_to_string(&expected).unwrap();
    assert!(written.contains(r#""hp": ["d", "0x1.8p+1"]"#), "{written}");
    assert_eq!(run(&[]).status.code(), Some(0));

    // The step changes: the difference, expected -> upgraded, by path.
    std::fs::write(
        steps.join("0001-double-hp.lua"),
        "return function(d) d.hp = d.hp * 3 end",
    )
    .unwrap();
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains("fixtures/old/a.json: its upgrade differs from expected/old/a.json:\n  ~ data.hp: [\"d\",3.0] -> [\"d\",4.5]"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(fixtures.join("old/a.json")).unwrap(),
        a
    );
    // Expected forms inside the fixtures' folder would be tested as fixtures; a folder of
    // expected forms holding the fixtures could have them blessed over.
    for (cwd, expected, relation) in [
        (&fixtures, None, "lies inside"),
        (&fixtures, Some(".."), "contains"),
    ] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"));
        command.args(["test", "--upgrades", "../steps", "--writer", "1.0.0"]);
        if let Some(expected) = expected {
            command.args(["--expected", expected]);
        }
        let out = command.arg(".").current_dir(cwd).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("may not lie inside the fixtures' folder")
                && stderr.contains(&format!("the folder of expected forms {relation} it")),
            "{stderr}"
        );
    }
    // A fixture that fails to upgrade fails the run.
    std::fs::write(
        fixtures.join("bad.json"),
        r#"{"meta": {"version": 1}, "data": {}}"#,
    )
    .unwrap();
    assert_eq!(run(&[]).status.code(), Some(2));
}

/// What a step prints is how an author sees what it sees: `save-upgrade test` shows it, as
/// an upgrade does (`FIXTURE: STEP: line`, on standard error), for a fixture that failed or
/// differs, and, with `--print`, for every fixture; not for one that matches.
#[test]
fn test_shows_what_steps_printed_for_fixtures_that_fail_or_differ() {
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    std::fs::write(
        steps.join("0001-hp.lua"),
        "return function(d) print('hp is ' .. tostring(d.hp)) d.hp = d.hp + 1 end",
    )
    .unwrap();
    let fixtures = dir.path().join("fixtures");
    std::fs::create_dir(&fixtures).unwrap();
    for (name, hp) in [("differs", "1"), ("fails", "\"x\""), ("matches", "2")] {
        let text = format!(r#"{{"meta": {{"version": 1}}, "data": {{"hp": {hp}}}}}"#);
        std::fs::write(fixtures.join(format!("{name}.json")), text).unwrap();
    }
    let expected = dir.path().join("expected");
    std::fs::create_dir(&expected).unwrap();
    let expected_of = |hp: u32| {
        let save = format!(
            r#"{{"meta": {{"version": 2, "writer": "1.0.0", "history": [{{"from": 1, "to": 2, "writer": "1.0.0"}}]}}, "data": {{"hp": {hp}}}}}"#
        );
        savechain::Save::from_str(&save).unwrap().to_vec().unwrap()
    };
    std::fs::write(expected.join("differs.json"), expected_of(7)).unwrap();
    std::fs::write(expected.join("matches.json"), expected_of(3)).unwrap();
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
            .arg("test")
            .args(extra)
            .args(["--upgrades", "steps", "--writer", "1.0.0", "fixtures"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("fixtures/differs.json: 0001-hp.lua: hp is 1\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fixtures/fails.json: 0001-hp.lua: hp is x\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("hp is 2"), "{stderr}");
    let (code, stderr) = run(&["--print"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("fixtures/matches.json: 0001-hp.lua: hp is 2\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hp is 1") && stderr.contains("hp is x"),
        "{stderr}"
    );
}
