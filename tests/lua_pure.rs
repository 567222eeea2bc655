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

#[test]
fn whole_saves_of_the_modules_pass_in_lua51_lua54_and_luajit() {
    // savechain.save and savechain.load (issue 28), with the pure codec in each Lua.
    let runner = repo().join("lua/tests/run.lua");
    let tests = repo().join("lua/tests/saves.lua");
    for interpreter in ["lua5.1", "lua5.4", "luajit"] {
        let output = run_pure(interpreter, &runner, &[tests.as_os_str()]);
        assert!(output.status.success(), "{interpreter}: {}", printed(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(" passed, 0 failed"), "{interpreter}: {stdout}");
    }
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

#[test]
fn the_lua_game_example_saves_and_loads_across_interpreters() {
    // examples/lua_game/main.lua, run as its comment says, in a folder of its own: each
    // interpreter (LuaJIT, then Lua 5.1 to 5.4) loads the save the one before wrote.
    let dir = tempfile::tempdir().unwrap();
    let run = |interpreter: &str| {
        let output = std::process::Command::new(common::stock_lua::interpreter(interpreter))
            .arg(repo().join("examples/lua_game/main.lua"))
            .current_dir(dir.path())
            .env("LUA_PATH", format!("{}/lua/?.lua;;", repo().display()))
            .env("LUA_CPATH", "")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{interpreter}: {}",
            printed(&output)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(run("luajit"), "new game\nsaved turn 1 with 125 credits\n");
    for (turn, interpreter) in [(1, "lua5.1"), (2, "lua5.2"), (3, "lua5.3"), (4, "lua5.4")] {
        assert_eq!(
            run(interpreter),
            format!(
                "loaded turn {turn}, flagship Kestrel (hull 96.5)\nsaved turn {} with {} credits\n",
                turn + 1,
                125 + 25 * turn
            )
        );
    }
    // The save is the Rust library's too.
    let text = std::fs::read(dir.path().join("save.json")).unwrap();
    let value = savechain::text::from_slice(&text).unwrap();
    assert_eq!(savechain::text::to_vec(&value).unwrap(), text);
    // A save of the economy module's first release is upgraded before the game loads it.
    let old = text_replace(
        &String::from_utf8(text).unwrap(),
        "\"economy\": {\n    \"turn\": 5,\n    \"wallet\": {\n      \"credits\": 225\n    }\n  },",
        "\"economy\": {\n    \"credits\": 40,\n    \"turn\": 7\n  },",
    );
    let old = text_replace(
        &old,
        ",\n  \"savechain.versions\": {\n    \"economy\": 2\n  }",
        "",
    );
    std::fs::write(dir.path().join("save.json"), old).unwrap();
    assert_eq!(
        run("lua5.4"),
        "loaded turn 7, flagship Kestrel (hull 96.5)\nsaved turn 8 with 65 credits\n"
    );
}

fn text_replace(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{text}");
    text.replace(from, to)
}
