//! `lua/savechain.lua` as a stock Lua host loads it, a plain file on `LUA_PATH` with no
//! native module anywhere (an empty `LUA_CPATH`): its own pure-Lua codec reads and writes
//! every save of the repository as the Rust library does on Lua 5.4 and refuses, on Lua 5.1
//! and LuaJIT, only what those cannot keep exactly (integers past 2^53, NaN payloads); the library's Lua tests pass with it;
//! and its benchmark against dkjson runs. (tests/lua_codecs.rs holds the property tests.)

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::stock_lua::{printed, repo, run_lua, Script};

/// `lua/` and `lua/tests/` on the path, nothing on the C path.
fn pure_path() -> String {
    let root = repo().display();
    format!("{root}/lua/?.lua;{root}/lua/tests/?.lua")
}

fn run_pure(interpreter: &str, script: &Path, args: &[&OsStr]) -> std::process::Output {
    run_lua(interpreter, &pure_path(), "", Script::File(script), args)
}

/// Every save of the repository: fixtures, expected forms, example saves, the mod's.
fn saves() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![
        repo().join("fixtures"),
        repo().join("expected"),
        repo().join("examples/saves"),
        repo().join("mods"),
    ];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "json")
                && path.file_name().is_some_and(|n| n != "mod.json")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    assert!(found.len() > 30, "{found:?}");
    found
}

/// The line the round-trip script printed for each save, by interpreter.
fn round_trips(interpreter: &str) -> Vec<String> {
    let saves = saves();
    let args: Vec<&OsStr> = saves.iter().map(|p| p.as_os_str()).collect();
    let script = repo().join("lua/tests/stock/round_trip_files.lua");
    let output = run_pure(interpreter, &script, &args);
    assert!(output.status.success(), "{}", printed(&output));
    let lines: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), saves.len(), "{lines:?}");
    lines
}

#[test]
fn every_save_of_the_repository_comes_back_byte_for_byte_in_lua54_and_lua53() {
    // Read and written by the pure codec: the same bytes exactly when the file is
    // canonical, as the Rust writer writes it (a few fixtures are kept as a hand left them).
    for line in round_trips("lua5.4")
        .into_iter()
        .chain(round_trips("lua5.3"))
    {
        let (outcome, path) = line.split_once(' ').unwrap();
        let bytes = std::fs::read(path).unwrap();
        let canonical = savechain::text::from_slice(&bytes)
            .and_then(|v| savechain::text::to_vec(&v))
            .unwrap();
        let expected = if bytes == canonical {
            "same"
        } else {
            "differs"
        };
        assert_eq!(outcome, expected, "{line}");
    }
}

#[test]
fn lua51_lua52_and_luajit_read_every_save_or_refuse_only_what_they_cannot_keep() {
    for interpreter in ["lua5.1", "lua5.2", "luajit"] {
        for line in round_trips(interpreter) {
            if let Some(why) = line.strip_prefix("refused ") {
                assert!(
                    why.contains("is beyond 2^53")
                        || why.contains("a NaN with a payload cannot be kept"),
                    "{interpreter}: {line}"
                );
            }
        }
    }
}

#[test]
fn the_librarys_lua_tests_pass_with_the_pure_codec_in_lua54() {
    // One file a process, as each file registers its own classes and modules.
    let runner = repo().join("lua/tests/run.lua");
    for file in ["mapping.lua", "modules.lua", "upgrade.lua"] {
        let tests = repo().join("lua/tests").join(file);
        let output = run_pure("lua5.4", &runner, &[tests.as_os_str()]);
        assert!(output.status.success(), "{file}: {}", printed(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(" passed, 0 failed"), "{file}: {stdout}");
    }
}

/// Runs the Lua test file `file` (under lua/tests/) with the pure codec in each of
/// `interpreters`, and asserts that every test in it passes.
fn lua_tests_pass_in(file: &str, interpreters: &[&str]) {
    let runner = repo().join("lua/tests/run.lua");
    let tests = repo().join("lua/tests").join(file);
    for interpreter in interpreters {
        let output = run_pure(interpreter, &runner, &[tests.as_os_str()]);
        assert!(
            output.status.success(),
            "{interpreter}: {}",
            printed(&output)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains(" passed, 0 failed"),
            "{interpreter}: {stdout}"
        );
    }
}

#[test]
fn the_upgrade_helpers_pass_in_lua51_and_luajit() {
    // savechain.upgrade is in the pure-Lua rock, which serves Lua 5.1 and LuaJIT too.
    lua_tests_pass_in("upgrade.lua", &["lua5.1", "luajit"]);
}

#[test]
fn whole_saves_of_the_modules_pass_in_lua51_lua54_and_luajit() {
    // savechain.save and savechain.load (issue 28), with the pure codec in each Lua.
    lua_tests_pass_in("saves.lua", &["lua5.1", "lua5.4", "luajit"]);
}

#[test]
fn the_benchmark_against_dkjson_runs_in_lua54_and_luajit() {
    // benches/lua/pure_vs_dkjson.lua on a small save, once (docs/PERFORMANCE.md times it
    // on the 50 MiB one): its checks pass and it prints its table.
    let dir = tempfile::tempdir().unwrap();
    let save = repo().join("expected/v9/small.json");
    let game = dir.path().join("game.json");
    std::fs::copy(&save, &game).unwrap();
    let script = repo().join("benches/lua/pure_vs_dkjson.lua");
    for interpreter in ["lua5.4", "luajit"] {
        let output = run_lua(
            interpreter,
            &format!("{};;", pure_path()),
            "",
            Script::File(&script),
            &[game.as_os_str(), game.as_os_str(), OsStr::new("1")],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("module 'dkjson' not found"),
            "lua-dkjson is not installed, and the benchmark compares with it: apt-get install lua-dkjson"
        );
        assert!(
            output.status.success(),
            "{interpreter}: {}",
            printed(&output)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("dkjson, plain JSON / savechain pure Lua: decode"),
            "{interpreter}: {stdout}"
        );
    }
}

/// Runs examples/lua_game/main.lua in `dir` under `interpreter`, as its comment says.
fn run_lua_game(dir: &Path, interpreter: &str) -> std::process::Output {
    std::process::Command::new(common::stock_lua::interpreter(interpreter))
        .arg(repo().join("examples/lua_game/main.lua"))
        .current_dir(dir)
        .env("LUA_PATH", format!("{}/lua/?.lua;;", repo().display()))
        .env("LUA_CPATH", "")
        .output()
        .unwrap()
}

/// [`run_lua_game`], which must succeed; what it printed.
fn play(dir: &Path, interpreter: &str) -> String {
    let output = run_lua_game(dir, interpreter);
    assert!(
        output.status.success(),
        "{interpreter}: {}",
        printed(&output)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_lua_game_example_saves_and_loads_across_interpreters() {
    // In a folder of its own: each interpreter (LuaJIT, then Lua 5.1 to 5.4) loads the save
    // the one before wrote.
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        play(dir.path(), "luajit"),
        "new game\nsaved turn 1 with 125 credits\n"
    );
    for (turn, interpreter) in [(1, "lua5.1"), (2, "lua5.2"), (3, "lua5.3"), (4, "lua5.4")] {
        assert_eq!(
            play(dir.path(), interpreter),
            format!(
                "loaded turn {turn}, flagship Kestrel (hull 96.5)\nsaved turn {} with {} credits\n",
                turn + 1,
                125 + 25 * turn
            )
        );
    }
    // It is a save, canonical, of the game's version, writer and name, with the fleet
    // module's version (issue 28: it used to have no meta).
    let text = std::fs::read(dir.path().join("save.json")).unwrap();
    let save = savechain::Save::from_slice(&text).unwrap();
    assert_eq!(save.to_vec().unwrap(), text);
    assert_eq!(save.meta.version, 2);
    assert_eq!(
        save.meta.writer,
        Some(savechain::semver::Version::new(1, 1, 0))
    );
    assert_eq!(
        save.meta.extra.get("game").and_then(|g| g.as_str()),
        Some("Lua Example")
    );
    let modules = save.meta.extra.get("modules").unwrap();
    assert_eq!(modules.get("fleet").and_then(|v| v.as_i64()), Some(2));
    // A state of the fleet module's first release is upgraded before the game loads it.
    let old = text_replace(
        &String::from_utf8(text).unwrap(),
        "      \"ships\": [\n        [\"r\", [1]]\n      ]",
        "      \"ships\": [\n        [\"c\", [\"Ship\", {\"cargo\": [], \"hull\": 50, \"name\": \"Osprey\"}]]\n      ]",
    );
    let old = text_replace(&old, "\"fleet\": 2", "\"fleet\": 1");
    let old = old.replacen("\"flagship\"", "\"retired\"", 1);
    std::fs::write(dir.path().join("save.json"), old).unwrap();
    assert_eq!(
        play(dir.path(), "lua5.4"),
        "loaded turn 5, flagship Osprey (hull 50)\nsaved turn 6 with 250 credits\n"
    );
}

/// save-upgrade, run in `dir`.
fn save_upgrade(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn the_cli_shows_checks_inspects_and_upgrades_a_save_the_one_file_library_wrote() {
    // Issue 28: a Lua game's saves were no saves (no meta), and every tool refused them.
    let dir = tempfile::tempdir().unwrap();
    let steps = repo().join("examples/lua_game/upgrades");
    let steps = steps.to_str().unwrap();
    // A save of the Lua game's release 1.0.0 (version 1: credits not in a wallet yet),
    // written by the one-file library in LuaJIT and in Lua 5.4.
    let write_old = r#"
        local savechain = require("savechain")
        local player = { name = "Ada", credits = 120, position = { 3.5, -0.25 } }
        savechain.register("player", { save = function() return player end, load = function() end })
        -- A module with a version and no state yet: its version is in meta all the same.
        savechain.register("fleet", { version = 2, save = function() return nil end,
          load = function() end })
        io.write(savechain.save({ version = 1, writer = "1.0.0", game = "Lua Example" }))
    "#;
    for interpreter in ["luajit", "lua5.4"] {
        let output = run_lua(
            interpreter,
            &pure_path(),
            "",
            Script::Source(write_old),
            &[],
        );
        assert!(
            output.status.success(),
            "{interpreter}: {}",
            printed(&output)
        );
        std::fs::write(dir.path().join("save.json"), &output.stdout).unwrap();

        let out = save_upgrade(dir.path(), &["show", "save.json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            shown.contains("\"credits\": 120") && shown.contains("3.5"),
            "{shown}"
        );

        let out = save_upgrade(dir.path(), &["fmt", "--check", "save.json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        // An edit in an editor (here sed, as $EDITOR: the file is its last argument).
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
            .args(["edit", "save.json"])
            .current_dir(dir.path())
            .env_remove("VISUAL")
            .env("EDITOR", "sed -i s/Ada/Eve/")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let edited = std::fs::read_to_string(dir.path().join("save.json")).unwrap();
        assert!(
            edited.contains("\"Eve\"") && edited.contains("\"modules\""),
            "{edited}"
        );

        let out = save_upgrade(
            dir.path(),
            &[
                "inspect",
                "--upgrades",
                steps,
                "--writer",
                "1.1.0",
                "save.json",
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let facts = String::from_utf8_lossy(&out.stdout);
        for line in [
            "  game Lua Example\n",
            "  version 1 (latest 2), written by 1.0.0\n",
            "  module fleet: version 2\n",
            "  would run 1 -> 2 lua  ",
        ] {
            assert!(facts.contains(line), "{interpreter}: {line:?} in\n{facts}");
        }
        let out = save_upgrade(dir.path(), &["inspect", "--json", "save.json"]);
        let facts = savechain::text::from_slice(&out.stdout).unwrap();
        assert_eq!(
            facts
                .get("modules")
                .and_then(|m| m.get("fleet"))
                .and_then(|v| v.as_i64()),
            Some(2)
        );

        let out = save_upgrade(
            dir.path(),
            &[
                "--upgrades",
                steps,
                "--writer",
                "1.1.0",
                "--no-backup",
                "save.json",
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let upgraded = std::fs::read(dir.path().join("save.json")).unwrap();
        let save = savechain::Save::from_slice(&upgraded).unwrap();
        assert_eq!(save.meta.version, 2);
        let wallet = save.data.get("player").and_then(|p| p.get("wallet"));
        assert_eq!(
            wallet
                .and_then(|w| w.get("credits"))
                .and_then(|c| c.as_i64()),
            Some(120)
        );
        let name = save.data.get("player").and_then(|p| p.get("name"));
        assert_eq!(name.and_then(|n| n.as_str()), Some("Eve"));
        assert!(save.meta.extra.get("modules").is_some());

        // The game of release 1.1.0 loads it, and keeps its history in its next save.
        assert_eq!(
            play(dir.path(), "lua5.4"),
            "loaded turn 0, flagship Kestrel (hull 96.5)\nsaved turn 1 with 145 credits\n"
        );
        let resaved = std::fs::read(dir.path().join("save.json")).unwrap();
        let save = savechain::Save::from_slice(&resaved).unwrap();
        let history = save.meta.extra.get("history").and_then(|h| h.as_array());
        assert_eq!(
            history.map(|h| h.len()),
            Some(1),
            "{}",
            String::from_utf8_lossy(&resaved)
        );
    }
}

#[test]
fn the_lua_game_refuses_a_save_its_steps_have_not_upgraded_and_loads_it_after() {
    // examples/lua_game/old-save.json is a save of release 1.0.0, which the README's
    // native-module example upgrades with the same steps.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo().join("examples/lua_game/old-save.json"),
        dir.path().join("save.json"),
    )
    .unwrap();
    let before = std::fs::read(dir.path().join("save.json")).unwrap();
    let output = run_lua_game(dir.path(), "luajit");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the save is version 1, and this game reads version 2: upgrade it"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(dir.path().join("save.json")).unwrap(), before);
    let steps = repo().join("examples/lua_game/upgrades");
    let out = save_upgrade(
        dir.path(),
        &[
            "--upgrades",
            steps.to_str().unwrap(),
            "--writer",
            "1.1.0",
            "save.json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        play(dir.path(), "luajit"),
        "loaded turn 0, flagship Kestrel (hull 96.5)\nsaved turn 1 with 145 credits\n"
    );
}

fn text_replace(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{text}");
    text.replace(from, to)
}
