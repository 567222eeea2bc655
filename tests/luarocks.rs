//! The LuaRocks packages (issue 31): the rockspecs of `rockspecs/` install with Debian's
//! `luarocks` from the checkout (`luarocks make`, no network) into temporary trees, and
//! what they install loads from those trees alone (the checkout's `lua/` is on no path):
//! the one-file pure-Lua library (rock `savechain`) in `lua5.1`, `lua5.4` and LuaJIT, the
//! native module (rock `savechain-native`, built by cargo) in `lua5.4`. Each writes a value
//! as the Rust library writes it, byte for byte, reads it back bit for bit, and names the
//! crates' version.
//!
//! Needs `luarocks` and, because Debian's luarocks 3.8 looks for Lua's headers before it
//! installs any rock for a Lua version, even one with no C code, `liblua5.4-dev` (the
//! Lua 5.1 headers come with the luarocks package).

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::stock_lua::{interpreter, printed, repo};
use savechain::text;
use savechain::value::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `rockspecs/<rock>-<version>-1.rockspec`.
fn rockspec(rock: &str) -> PathBuf {
    repo()
        .join("rockspecs")
        .join(format!("{rock}-{VERSION}-1.rockspec"))
}

/// The environment variables through which a Lua interpreter (luarocks runs in one too)
/// would find modules elsewhere than it is told.
const LUA_VARIABLES: [&str; 12] = [
    "LUA_PATH",
    "LUA_CPATH",
    "LUA_INIT",
    "LUA_PATH_5_2",
    "LUA_CPATH_5_2",
    "LUA_INIT_5_2",
    "LUA_PATH_5_3",
    "LUA_CPATH_5_3",
    "LUA_INIT_5_3",
    "LUA_PATH_5_4",
    "LUA_CPATH_5_4",
    "LUA_INIT_5_4",
];

/// `luarocks --lua-version <lua> --tree <tree> make <rockspec>`, run in the checkout, with
/// `envs` added; fails the test, saying what to install, unless it succeeds.
fn luarocks_make(lua: &str, tree: &Path, rockspec: &Path, envs: &[(&str, &OsStr)]) -> Output {
    let luarocks = interpreter("luarocks");
    let mut command = Command::new(luarocks);
    command
        .args(["--lua-version", lua, "--tree"])
        .arg(tree)
        .arg("make")
        .arg(rockspec)
        .current_dir(repo())
        .stdin(Stdio::null());
    for name in LUA_VARIABLES {
        command.env_remove(name);
    }
    for (name, value) in envs {
        command.env(name, value);
    }
    let output = command.output().expect("luarocks runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("Failed finding Lua header files"),
        "luarocks wants Lua {lua}'s headers, even for a rock with no C code: \
         apt-get install liblua{lua}-dev\n{}",
        printed(&output)
    );
    assert!(
        output.status.success(),
        "luarocks make {} for Lua {lua}:\n{}",
        rockspec.display(),
        printed(&output)
    );
    output
}

/// Runs `source` in `lua` with the paths of `tree` for Lua `version` alone (no `;;`: none of
/// the interpreter's default places, and no `lua/` of the checkout), in a folder of its own
/// (`./?.lua` finds nothing); gives its standard output, failing the test unless it exits 0.
fn run_from_tree(lua: &str, version: &str, tree: &Path, source: &str) -> String {
    let tree = tree.display();
    let lua_path =
        format!("{tree}/share/lua/{version}/?.lua;{tree}/share/lua/{version}/?/init.lua");
    let lua_cpath = format!("{tree}/lib/lua/{version}/?.so");
    let cwd = tempfile::tempdir().unwrap();
    let mut command = Command::new(interpreter(lua));
    for name in LUA_VARIABLES {
        command.env_remove(name);
    }
    let output = command
        .env("LUA_PATH", &lua_path)
        .env("LUA_CPATH", &lua_cpath)
        .args(["-e", source])
        .current_dir(cwd.path())
        .stdin(Stdio::null())
        .output()
        .expect("the interpreter runs");
    assert!(output.status.success(), "{lua}:\n{}", printed(&output));
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// Lua 5.1 syntax: encodes a value with a double, an integer and nested tables, prints the
/// text, the file `savechain` was loaded from and its `_VERSION`, and checks the value
/// read back is the same, bit for bit (the integer an integer where Lua tells them apart).
const ROUND_TRIP: &str = r#"
local savechain = require("savechain")
local value = { hull = 0.1, count = 7, cargo = { 1, 2.5, { mass = -0.0, name = "Zoë" } } }
local text = savechain.encode(value, { compact = true })
local back = savechain.decode(text)
assert(savechain.equal(back, value), "read back differs")
assert(back.hull == 0.1 and back.count == 7 and back.cargo[2] == 2.5, "values differ")
assert(1 / back.cargo[3].mass < 0, "-0.0 lost its sign")
if math.type then assert(math.type(back.count) == "integer", "7 is no integer") end
assert(savechain.encode(back, { compact = true }) == text, "written again differently")
print(text)
print(debug.getinfo(savechain.decode, "S").source)
print(savechain._VERSION)
"#;

/// What [`ROUND_TRIP`] writes, as the Rust library writes its value.
fn expected_text() -> String {
    let value = text::from_str(
        r#"{"hull": ["d", "0x1.999999999999ap-4"], "count": 7,
            "cargo": [1, ["d", "0x1.4p+1"], {"mass": ["d", "-0x0p+0"], "name": "Zoë"}]}"#,
    )
    .unwrap();
    let Value::Object(map) = &value else {
        unreachable!()
    };
    assert_eq!(map.get("hull"), Some(&Value::Double(0.1)));
    text::to_string_compact(&value).unwrap()
}

/// Checks what [`ROUND_TRIP`] printed: the Rust library's text, where `decode` was
/// loaded from (`source`), the version.
fn check_round_trip(lua: &str, printed: &str, source: &str) {
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 3, "{lua}: {printed}");
    assert_eq!(lines[0], expected_text(), "{lua}");
    assert_eq!(lines[1], source, "{lua}: where savechain.decode comes from");
    assert_eq!(lines[2], VERSION, "{lua}: savechain._VERSION");
}

#[test]
fn the_pure_rock_installs_and_loads_in_lua51_lua54_and_luajit() {
    let tree = tempfile::tempdir().unwrap();
    let tree = tree.path();
    let spec = rockspec("savechain");
    // LuaJIT reads Lua 5.1's modules: the 5.1 tree serves it, as luarocks has no LuaJIT
    // of its own in Debian.
    for lua in ["5.1", "5.4"] {
        luarocks_make(lua, tree, &spec, &[]);
        let installed = tree.join("share/lua").join(lua);
        assert!(installed.join("savechain.lua").is_file());
        assert!(installed.join("savechain/upgrade.lua").is_file());
        // Only the library's two modules: not the tests that sit beside them in lua/.
        let mut files: Vec<String> = walk(&installed)
            .iter()
            .map(|p| p.strip_prefix(&installed).unwrap().display().to_string())
            .collect();
        files.sort();
        assert_eq!(
            files,
            ["savechain.lua", "savechain/upgrade.lua"],
            "Lua {lua}"
        );
        assert!(!tree.join("lib/lua").join(lua).exists(), "no C module");
    }
    let source = format!(
        "{ROUND_TRIP}\n\
         local up = require('savechain.upgrade')\n\
         local data = {{ player = {{ hp = 3 }} }}\n\
         assert(up.rename(data, 'player.hp', 'health') and data.player.health == 3)"
    );
    for (lua, version) in [("lua5.1", "5.1"), ("luajit", "5.1"), ("lua5.4", "5.4")] {
        let out = run_from_tree(lua, version, tree, &source);
        let file = tree.join(format!("share/lua/{version}/savechain.lua"));
        check_round_trip(lua, &out, &format!("@{}", file.display()));
    }
    // The rock's metadata, as `luarocks show` gives it.
    let show = Command::new(interpreter("luarocks"))
        .args(["--lua-version", "5.4", "--tree"])
        .arg(tree)
        .args(["show", "savechain"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success(), "{}", printed(&show));
    for want in [
        &format!("savechain {VERSION}-1 - "),
        "MIT OR Apache-2.0",
        "https://github.com/savechain/savechain",
    ] {
        assert!(
            shown.contains(want),
            "luarocks show lacks {want:?}:\n{shown}"
        );
    }
}

/// The files under `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn the_native_rock_builds_with_cargo_and_loads_in_lua54() {
    let tree = tempfile::tempdir().unwrap();
    let tree = tree.path();
    // The rock's build command is cargo's: the cargo running this test (its folder first on
    // the PATH), into the target folder the stock-Lua tests build the module in (never the
    // one `cargo test` holds locked while its tests run), release as the rock builds it.
    let cargo = Path::new(env!("CARGO"));
    let mut path = vec![cargo.parent().unwrap().to_path_buf()];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(path).unwrap();
    let target = repo().join("target/lua-module");
    luarocks_make(
        "5.4",
        tree,
        &rockspec("savechain-native"),
        &[("PATH", &path), ("CARGO_TARGET_DIR", target.as_os_str())],
    );
    let module = tree.join("lib/lua/5.4/savechain.so");
    assert!(module.is_file(), "no {}", module.display());
    // Stripped, without the release profile's debug information (36 MB with it).
    let size = std::fs::metadata(&module).unwrap().len();
    assert!(
        size < 8 << 20,
        "savechain.so is {size} bytes: not stripped?"
    );
    assert!(!tree.join("share/lua/5.4/savechain.lua").exists());

    let source = format!(
        "{ROUND_TRIP}\n\
         assert(type(savechain.chain) == 'function' and type(savechain.format) == 'function',\n\
           'the native functions are missing')\n\
         print(package.searchpath('savechain', package.cpath))"
    );
    let out = run_from_tree("lua5.4", "5.4", tree, &source);
    let (round_trip, found) = out.trim_end().rsplit_once('\n').unwrap();
    // decode is the native module's (native.lua, compiled into savechain.so).
    check_round_trip("lua5.4", round_trip, "=savechain (native)");
    assert_eq!(Path::new(found), module);

    // savechain.upgrade, first or second: Lua's all-in-one loader finds its luaopen_ in
    // savechain.so.
    for first in ["savechain.upgrade", "savechain"] {
        let out = run_from_tree(
            "lua5.4",
            "5.4",
            tree,
            &format!(
                "local first = require('{first}')\n\
                 local up, savechain = require('savechain.upgrade'), require('savechain')\n\
                 local data = {{ player = {{ hp = 3 }} }}\n\
                 assert(up.rename(data, 'player.hp', 'health'))\n\
                 assert(type(savechain.chain) == 'function')\n\
                 print(savechain.encode(data, {{ compact = true }}), savechain._VERSION)"
            ),
        );
        assert_eq!(
            out,
            format!("{{\"player\":{{\"health\":3}}}}\t{VERSION}\n"),
            "{first} first"
        );
    }
}

#[test]
fn the_native_rock_refuses_lua_5_1_before_building() {
    let tree = tempfile::tempdir().unwrap();
    let output = Command::new(interpreter("luarocks"))
        .args(["--lua-version", "5.1", "--tree"])
        .arg(tree.path())
        .arg("make")
        .arg(rockspec("savechain-native"))
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", printed(&output));
    assert!(stderr.contains("lua >= 5.4, < 5.5"), "{}", printed(&output));
    assert!(!tree.path().join("lib/lua/5.1/savechain.so").exists());
}
