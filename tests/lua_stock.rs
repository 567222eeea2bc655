//! The native Lua module (`lua-module/`) in Debian's stock `lua5.4`: `require("savechain")`
//! finds the module (never `lua/savechain.lua`: the `LUA_PATH` leaves `lua/` out), the
//! library's own Lua tests pass in it, and what it does with save text (formatting, the
//! decimal view, upgrades by a chain of Lua steps) is what the Rust library does, byte for
//! byte, errors included, while a chain's steps stay in their own sandboxes.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::stock_lua::{printed, repo, run_native, Script};
use savechain::text::{reformat, Style};
use savechain::upgrade::Chain;
use savechain::{Options, Save};

/// Runs `source` in lua5.4 with the native module and `args`; fails the test unless it
/// exits 0. Returns its standard output.
fn lua_ok(source: &str, args: &[&OsStr]) -> String {
    let output = run_native(Script::Source(source), args);
    assert!(output.status.success(), "{}", printed(&output));
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
fn require_gives_the_library_and_the_native_functions() {
    let out = lua_ok(
        r#"
        local savechain = require("savechain")
        assert(package.searchpath("savechain", package.path) == nil, "a Lua file would load")
        for _, name in ipairs({ "encode", "decode", "array", "bytes", "u64", "register_class",
                                "register", "collect", "restore", "equal", "format",
                                "decimal", "chain" }) do
          assert(type(savechain[name]) == "function", name)
        end
        assert(savechain.null ~= nil)
        assert(tostring(savechain._VERSION):match("^%d+%.%d+%.%d+$"), "no _VERSION")
        assert(savechain.decode_max_depth() == 512)
        assert(require("savechain") == savechain)
        local text = savechain.encode({ hull = 0.965, ids = savechain.array() }, { compact = true })
        print(text)
        assert(savechain.equal(savechain.decode(text), { hull = 0.965, ids = savechain.array() }))
        "#,
        &[],
    );
    assert_eq!(
        out,
        "{\"hull\":[\"d\",\"0x1.ee147ae147ae1p-1\"],\"ids\":[]}\n"
    );
}

#[test]
fn savechain_upgrade_loads_first_or_second() {
    for first in ["savechain", "savechain.upgrade"] {
        let source = format!(
            r#"
            local first = require("{first}")
            local savechain = require("savechain")
            local up = require("savechain.upgrade")
            assert(type(up) == "table" and type(up.rename) == "function")
            assert(type(savechain.chain) == "function", "the native functions are there")
            assert(package.loaded["savechain.upgrade"] == up)
            assert(first == savechain or first == up)
            local data = {{ player = {{ hp = 3 }} }}
            assert(up.rename(data, "player.hp", "health"))
            print(savechain.encode(data, {{ compact = true }}))
            "#
        );
        let out = lua_ok(&source, &[]);
        assert_eq!(out, "{\"player\":{\"health\":3}}\n", "{first} first");
    }
}

fn run_library_tests(file: &str) {
    let runner = repo().join("lua/tests/run.lua");
    let tests = repo().join("lua/tests").join(file);
    let output = run_native(Script::File(&runner), &[tests.as_os_str()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", printed(&output));
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn codec_tests_pass_in_stock_lua() {
    // The nesting limit a caller sets (savechain.decode_max_depth) and _VERSION among them.
    run_library_tests("codec.lua");
}

#[test]
fn mapping_tests_pass_in_stock_lua() {
    run_library_tests("mapping.lua");
}

#[test]
fn modules_tests_pass_in_stock_lua() {
    run_library_tests("modules.lua");
}

#[test]
fn whole_save_tests_pass_in_stock_lua() {
    run_library_tests("saves.lua");
}

#[test]
fn upgrade_helper_tests_pass_in_stock_lua() {
    run_library_tests("upgrade.lua");
}

#[test]
fn formatting_and_the_decimal_view_are_the_librarys() {
    let dir = tempfile::tempdir().unwrap();
    let typed = dir.path().join("typed.json");
    std::fs::write(
        &typed,
        "{\"z\": [\"d\", 96.5], \"a\": {\"b\": [1, 2.5, -0.0, 1e300]}, \"s\": \"\\u00e9\"}",
    )
    .unwrap();
    let inputs: Vec<PathBuf> = vec![
        repo().join("fixtures/v9/edge.json"),
        repo().join("fixtures/v1/small.json"),
        typed,
    ];
    let mut args: Vec<&OsStr> = vec![dir.path().as_os_str()];
    args.extend(inputs.iter().map(|p| p.as_os_str()));
    lua_ok(
        r#"
        local savechain = require("savechain")
        local out = arg[1]
        local function write(path, text)
          local f = assert(io.open(path, "wb")) f:write(text) f:close()
        end
        for i = 2, #arg do
          local text = assert(io.open(arg[i], "rb")):read("a")
          write(out .. "/" .. i .. ".pretty", savechain.format(text))
          write(out .. "/" .. i .. ".compact", savechain.format(text, { compact = true }))
          write(out .. "/" .. i .. ".decimal", savechain.decimal(text))
        end
        "#,
        &args,
    );
    for (i, input) in inputs.iter().enumerate() {
        let text = std::fs::read(input).unwrap();
        for (ext, style) in [
            ("pretty", Style::Pretty),
            ("compact", Style::Compact),
            ("decimal", Style::Decimal),
        ] {
            let got = std::fs::read(dir.path().join(format!("{}.{ext}", i + 2))).unwrap();
            let want = reformat(&text, style).unwrap();
            assert!(got == want, "{} as {ext}", input.display());
        }
    }
    // The decimal view of a hand edit spells doubles in decimal.
    let view = std::fs::read_to_string(dir.path().join("4.decimal")).unwrap();
    assert!(view.contains("[\"d\", 96.5]"), "{view}");
}

#[test]
fn the_modules_texts_have_meta_first_at_the_top_level_alone() {
    let out = lua_ok(
        r#"
        local savechain = require("savechain")
        local save = { data = { meta = 1, a = 2 }, meta = { version = 3 } }
        print(savechain.encode(save, { compact = true }))
        io.write(savechain.encode(save))
        -- As format revision 2 wrote it, data first.
        local old = '{"data": {"meta": 1, "a": 2}, "meta": {"version": 3}}'
        print(savechain.format(old, { compact = true }))
        io.write(savechain.format(old))
        "#,
        &[],
    );
    let compact = r#"{"meta":{"version":3},"data":{"a":2,"meta":1}}"#;
    let pretty = "{\n  \"meta\": {\n    \"version\": 3\n  },\n  \"data\": {\n    \"a\": 2,\n    \"meta\": 1\n  }\n}\n";
    assert_eq!(out, format!("{compact}\n{pretty}{compact}\n{pretty}"));
}

/// The example game's Lua and declared steps, `names`, copied into a steps folder of their own: a chain
/// over those versions alone, to compare with the library's built-in chain there.
fn steps_folder(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        std::fs::copy(repo().join("upgrades").join(name), dir.path().join(name)).unwrap();
    }
    dir
}

const GAME: &str = "Starlane Traders";

#[test]
fn chain_upgrades_of_the_fixtures_are_the_librarys_byte_for_byte() {
    let mods = repo().join("mods");
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["0001-reputation-and-wallet.json"],
            &["fixtures/v1", "mods/cartographer/fixtures/v1"],
        ),
        (
            &["0003-units.lua", "0004-systems-by-id.lua"],
            &["fixtures/v3", "fixtures/v4", "fixtures/v5"],
        ),
        (
            &["0006-shields-and-tutorial.json", "0007-mission-log.lua"],
            &["fixtures/v6", "fixtures/v7", "fixtures/v8"],
        ),
    ];
    let script = r#"
        local savechain = require("savechain")
        local steps, mods, out = arg[1], arg[2], arg[3]
        local chain = savechain.chain{ steps = steps, writer = "2.3.0",
                                       game = "Starlane Traders", mods = mods }
        for i = 4, #arg do
          local text = assert(io.open(arg[i], "rb")):read("a")
          local ok, upgraded, report = pcall(chain.upgrade, chain, text, { keep_going = true })
          local f = assert(io.open(out .. "/" .. i .. (ok and ".json" or ".error"), "wb"))
          f:write(upgraded)
          f:close()
          if ok then
            local names, mods = {}, {}
            for _, step in ipairs(report.steps) do names[#names + 1] = step.name end
            for _, m in ipairs(report.mods) do mods[#mods + 1] = m.name .. "=" .. m.status end
            print(i, report.from, report.to, report.changed, table.concat(names, ","),
                  table.concat(mods, ","))
          end
        end
    "#;
    let mut compared = 0;
    for (names, folders) in cases {
        let steps = steps_folder(names);
        let out = tempfile::tempdir().unwrap();
        let mut saves: Vec<PathBuf> = Vec::new();
        for folder in folders {
            let mut found: Vec<PathBuf> = std::fs::read_dir(repo().join(folder))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            found.sort();
            saves.extend(found);
        }
        let mut args: Vec<&OsStr> = vec![
            steps.path().as_os_str(),
            mods.as_os_str(),
            out.path().as_os_str(),
        ];
        args.extend(saves.iter().map(|p| p.as_os_str()));
        let reported = lua_ok(script, &args);
        let reported: Vec<&str> = reported.lines().collect();

        let chain = Chain::from_lua_dir("2.3.0", steps.path())
            .and_then(|c| c.for_game(GAME))
            .and_then(|c| c.with_mods_dir(&mods))
            .unwrap();
        let mut options = Options::default();
        options.keep_going = true;
        let mut line = 0;
        for (i, save) in saves.iter().enumerate() {
            let i = i + 4;
            let text = std::fs::read(save).unwrap();
            let loaded = Save::from_slice(&text).unwrap();
            let meta = loaded.meta.clone();
            match chain.upgrader().upgrade(loaded, &options) {
                Ok(upgraded) => {
                    let changed = !(upgraded.steps.is_empty() && upgraded.save.meta == meta);
                    let want = match changed {
                        true => upgraded.save.to_vec().unwrap(),
                        false => text.clone(),
                    };
                    let got = std::fs::read(out.path().join(format!("{i}.json"))).unwrap();
                    assert!(
                        got == want,
                        "{}: the module's upgrade differs",
                        save.display()
                    );
                    let names: Vec<&str> = upgraded.steps.iter().map(|s| s.name.as_str()).collect();
                    let mods: Vec<String> = upgraded
                        .mods
                        .iter()
                        .map(|m| format!("{}={}", m.name, m.status.word()))
                        .collect();
                    let expected = format!(
                        "{i}\t{}\t{}\t{changed}\t{}\t{}",
                        upgraded.from,
                        upgraded.to,
                        names.join(","),
                        mods.join(",")
                    );
                    assert_eq!(reported[line], expected, "{}", save.display());
                    line += 1;
                }
                Err(e) => {
                    let got = std::fs::read_to_string(out.path().join(format!("{i}.error")));
                    assert_eq!(got.unwrap(), e.to_string(), "{}", save.display());
                }
            }
            compared += 1;
        }
        assert_eq!(line, reported.len());
    }
    assert_eq!(compared, 16);
}

/// A steps folder holding `steps`, (file name, source).
fn chain_folder(steps: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, source) in steps {
        std::fs::write(dir.path().join(name), source).unwrap();
    }
    dir
}

#[test]
fn hostile_steps_fail_their_save_and_nothing_more() {
    let spin = chain_folder(&[(
        "0001-spin.lua",
        "return function(data) while true do end end",
    )]);
    let hog = chain_folder(&[(
        "0001-hog.lua",
        "return function(data) local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end end",
    )]);
    let leak = chain_folder(&[(
        "0001-leak.lua",
        r#"
        return function(data)
          leaked = (leaked or 0) + 1
          data.seen = leaked
          data.host_global = host_secret == nil and "unseen" or "seen"
          print("seen", leaked)
        end
        "#,
    )]);
    let out = lua_ok(
        r#"
        local savechain = require("savechain")
        host_secret = "kept"
        local save = '{"meta": {"version": 1}, "data": {}}'

        local spin = savechain.chain{ steps = arg[1], writer = "1.0.0",
                                      limits = { time = 0.5, instructions = 1e12 } }
        local started = os.time()
        local ok, e = pcall(spin.upgrade, spin, save)
        assert(not ok and type(e) == "string", tostring(e))
        assert(os.time() - started < 10, "stopped soon after the limit")
        print(e)

        local hog = savechain.chain{ steps = arg[2], writer = "1.0.0",
                                     limits = { memory = 64 * 1024 * 1024 } }
        ok, e = pcall(hog.upgrade, hog, save)
        assert(not ok and type(e) == "string", tostring(e))
        print(e)

        -- The host carries on, its globals its own, and each save gets a new sandbox.
        local leak = savechain.chain{ steps = arg[3], writer = "1.0.0" }
        for _ = 1, 3 do
          local text, report = leak:upgrade(save)
          local data = savechain.decode(text).data
          assert(data.seen == 1, "a global of the save before leaked into this one")
          assert(data.host_global == "unseen", "a step saw the host's globals")
          assert(report.steps[1].printed[1] == "seen\t1", tostring(report.steps[1].printed[1]))
        end
        assert(rawget(_G, "leaked") == nil, "a step's global reached the host")
        assert(host_secret == "kept")
        print("carried on")
        "#,
        &[
            spin.path().as_os_str(),
            hog.path().as_os_str(),
            leak.path().as_os_str(),
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "step 0001-spin.lua, version 1 to 2, failed: the script ran longer than 0.5 s and was stopped",
            lines[1],
            "carried on",
        ],
        "{out}"
    );
    assert!(
        lines[1].starts_with("step 0001-hog.lua, version 1 to 2, failed")
            && lines[1].contains("memory"),
        "{out}"
    );
}

#[test]
fn errors_are_the_librarys_messages_as_plain_strings() {
    let broken = chain_folder(&[(
        "0001-broken.lua",
        "return function(data)\n  data.x = = 1\nend\n",
    )]);
    let failing = chain_folder(&[(
        "0001-failing.lua",
        "return function(data)\n  error('no fuel in ' .. data.ship)\nend\n",
    )]);
    let missing = repo().join("target/no-such-steps-folder");
    let bad_text = b"{\"a\": 1,}";
    let save = "{\"meta\": {\"version\": 1}, \"data\": {\"ship\": \"Kestrel\"}}";
    let too_new = "{\"meta\": {\"version\": 7}, \"data\": {}}";
    let out = lua_ok(
        r#"
        local savechain = require("savechain")
        local function message(f, ...)
          local ok, e = pcall(f, ...)
          assert(not ok, "expected an error")
          assert(type(e) == "string", "a plain string, not a " .. type(e))
          assert(not e:find("traceback", 1, true) and not e:find("Error", 1, true), e)
          io.write(e, "\n--\n")
        end
        local bad = '{"a": 1,}'
        message(savechain.format, bad)
        message(savechain.decimal, bad)
        message(savechain.decode, bad)
        message(savechain.chain, { steps = arg[1], writer = "1.0.0" })
        message(savechain.chain, { steps = arg[2], writer = "1.0.0" })
        local failing = savechain.chain{ steps = arg[3], writer = "1.0.0" }
        message(failing.upgrade, failing, arg[4])
        message(failing.upgrade, failing, arg[5])
        message(failing.upgrade, failing, bad)
        message(savechain.format, 42)
        message(savechain.chain, { steps = arg[3] })
        message(failing.upgrade, failing, arg[4], { to = 3 })
        "#,
        &[
            broken.path().as_os_str(),
            missing.as_os_str(),
            failing.path().as_os_str(),
            OsStr::new(save),
            OsStr::new(too_new),
        ],
    );
    let got: Vec<&str> = out.split("\n--\n").filter(|m| !m.is_empty()).collect();

    let text_error = reformat(bad_text, Style::Pretty).unwrap_err().to_string();
    let chain = Chain::from_lua_dir("1.0.0", failing.path()).unwrap();
    let upgrade = |text: &str| {
        let e = chain
            .upgrader()
            .upgrade_text(text.as_bytes(), &Options::default());
        e.unwrap_err().to_string()
    };
    let mut to_3 = Options::default();
    to_3.target = Some(3);
    let want = [
        text_error.clone(),
        text_error.clone(),
        text_error.clone(),
        Chain::from_lua_dir("1.0.0", broken.path())
            .unwrap_err()
            .to_string(),
        Chain::from_lua_dir("1.0.0", &missing)
            .unwrap_err()
            .to_string(),
        upgrade(save),
        upgrade(too_new),
        upgrade("{\"a\": 1,}"),
        // Called by pcall: no Lua line to name, as the library's own argument errors.
        "savechain.format expects a string of save text".to_string(),
        "savechain.chain: writer, the game's version (a semantic version such as \"2.3.0\"), is required".to_string(),
        chain
            .upgrader()
            .upgrade_text(save.as_bytes(), &to_3)
            .unwrap_err()
            .to_string(),
    ];
    assert_eq!(got, want);
    // What the messages say: the file, line and column, the step, the path.
    assert_eq!(
        want[0],
        "line 1, column 9: expected another key after ',' (JSON allows no trailing comma), found '}'"
    );
    assert!(
        want[3].starts_with(&format!(
            "{}:",
            broken.path().join("0001-broken.lua").display()
        )) && want[3].contains("line 2"),
        "{}",
        want[3]
    );
    assert!(want[4].contains("no-such-steps-folder"), "{}", want[4]);
    assert!(
        want[5].contains("0001-failing.lua") && want[5].contains("no fuel in Kestrel"),
        "{}",
        want[5]
    );
    assert!(
        want[6].contains("newer than this program knows"),
        "{}",
        want[6]
    );
}

#[test]
fn the_module_is_not_a_lua_file() {
    // With lua/?.lua left off the path, the Lua library's own file cannot stand in.
    let lib = Path::new("lua/savechain.lua");
    assert!(repo().join(lib).is_file());
    let out = lua_ok(
        r#"
        local found = package.searchpath("savechain", package.cpath)
        print(found:match("lib[^/]*$"))
        "#,
        &[],
    );
    assert_eq!(out, "libsavechain_lua.so\n");
}

#[test]
fn the_benchmark_script_runs() {
    // benches/lua/native_vs_cjson.lua on a small save, once (docs/PERFORMANCE.md times it
    // on the 50 MiB one): its checks pass and it prints its table.
    let dir = tempfile::tempdir().unwrap();
    let text = reformat(
        &std::fs::read(repo().join("fixtures/v9/small.json")).unwrap(),
        Style::Pretty,
    )
    .unwrap();
    let game = dir.path().join("game.json");
    std::fs::write(&game, &text).unwrap();
    let script = repo().join("benches/lua/native_vs_cjson.lua");
    // Plain JSON for lua-cjson: the canonical text is JSON too.
    let output = run_native(
        Script::File(&script),
        &[game.as_os_str(), game.as_os_str(), OsStr::new("1")],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("module 'cjson' not found"),
        "lua-cjson is not installed, and the benchmark compares with it: apt-get install lua-cjson"
    );
    assert!(output.status.success(), "{}", printed(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("round trip byte for byte")
            && stdout.contains("lua-cjson, plain JSON / savechain native: decode"),
        "{stdout}"
    );
}

#[test]
fn chain_limits_take_whole_numbers_as_the_docs_show_them() {
    let out = lua_ok(
        r#"
        local savechain = require("savechain")
        local chain = savechain.chain{ steps = "examples/lua_game/upgrades", writer = "1.1.0",
          limits = { instructions = 300000000, memory = 1 << 30, time = 30 } }
        print(chain.latest)
        "#,
        &[],
    );
    assert_eq!(out, "2\n");
}

#[test]
fn a_save_upgraded_by_a_chain_loads_into_the_modules() {
    // The README's native example (issue 28): the Lua game's save of release 1.0.0 is
    // upgraded by its steps, then loaded by savechain.load, which refused it before.
    let out = lua_ok(
        r#"
        local savechain = require("savechain")
        local player
        savechain.register("player", { save = function() return player end,
          load = function(p) player = p end })
        local file = assert(io.open("examples/lua_game/old-save.json"))
        local old = file:read("a")
        file:close()
        local ok, err = pcall(savechain.load, old, { version = 2, game = "Lua Example" })
        print(ok, err)
        local chain = savechain.chain{ steps = "examples/lua_game/upgrades", writer = "1.1.0" }
        local upgraded = chain:upgrade(old)
        local meta = savechain.load(upgraded, { version = chain.latest, game = "Lua Example" })
        print(player.wallet.credits, meta.history[1].from, meta.writer)
        print((savechain.save({ version = 2, writer = "1.1.0", game = "Lua Example", compact = true })))
        "#,
        &[],
    );
    assert_eq!(
        out,
        "false\tsavechain.load: the save is version 1, and this game reads version 2: upgrade it \
         with the game's steps first (chain:upgrade of the native module, or save-upgrade \
         --upgrades DIR --writer VERSION); nothing was loaded\n\
         120\t1\t1.1.0\n\
         {\"meta\":{\"game\":\"Lua Example\",\"history\":[{\"from\":1,\"to\":2,\"writer\":\"1.1.0\"}],\
         \"version\":2,\"writer\":\"1.1.0\"},\"data\":{\"player\":{\"name\":\"Ada\",\"position\":\
         [[\"d\",\"0x1.8p+1\"],[\"d\",\"-0x1p-2\"]],\"wallet\":{\"coins\":0,\"credits\":120}}}}\n"
    );
}

/// The native module takes save text compressed wherever it takes save text (`decode`,
/// `load`, `format`, `decimal`, `chain:upgrade`), and writes it compressed when asked
/// (`encode`, `save`, `chain:upgrade`), as the library compresses: the same bytes.
#[test]
fn compressed_save_text_is_read_and_written() {
    use savechain::compress::{compress, decompress, Codec, Compression};
    let dir = tempfile::tempdir().unwrap();
    let fixture = repo().join("fixtures/v5/small.json");
    let text = std::fs::read(&fixture).unwrap();
    for (name, codec) in [("zst", Codec::Zstd), ("gz", Codec::Gzip)] {
        std::fs::write(
            dir.path().join(format!("save.{name}")),
            compress(&text, Compression::new(codec)),
        )
        .unwrap();
    }
    let steps = steps_folder(&["0005-dock-and-rank.lua"]);
    let out = lua_ok(
        r#"
        local savechain = require("savechain")
        local dir, plain_path, steps = arg[1], arg[2], arg[3]
        local function read(path) local f = assert(io.open(path, "rb")) local t = f:read("a") f:close() return t end
        local function write(path, text) local f = assert(io.open(path, "wb")) f:write(text) f:close() end
        local plain = read(plain_path)
        for _, name in ipairs({ "zst", "gz" }) do
          local packed = read(dir .. "/save." .. name)
          assert(savechain.equal(savechain.decode(packed), savechain.decode(plain)), name)
          assert(savechain.format(packed) == savechain.format(plain), name)
          assert(savechain.decimal(packed) == savechain.decimal(plain), name)
          local meta = savechain.load(packed, { version = 5 })
          assert(meta.version == 5, name)
          local chain = savechain.chain{ steps = steps, writer = "2.3.0" }
          local up, report = chain:upgrade(packed, { to = 6 })
          assert(report.changed and report.to == 6, name)
          write(dir .. "/up." .. name, up)
          write(dir .. "/up-plain." .. name, (chain:upgrade(packed, { to = 6, compress = "none" })))
          -- Nothing to do: the very bytes given, unless another compression is asked.
          assert(chain:upgrade(up, { to = 6 }) == up, name)
          write(dir .. "/again-gzip." .. name, (chain:upgrade(up, { to = 6, compress = "gzip", level = 9 })))
        end
        local value = { hull = 0.5, name = "Kestrel" }
        write(dir .. "/encoded.zst", savechain.encode(value, { compress = "zstd" }))
        write(dir .. "/encoded.gz", savechain.encode(value, { compress = "gzip", level = 1, compact = true }))
        write(dir .. "/encoded.json", savechain.encode(value, { compress = "none" }))
        assert(savechain.equal(savechain.decode(read(dir .. "/encoded.zst")), value))
        savechain.register("ship", { save = function() return value end, load = function() end })
        write(dir .. "/saved.zst", savechain.save({ version = 2, compress = "zstd", level = 19 }))
        for _, bad in ipairs({
          function() return savechain.encode(value, { compress = "lz4" }) end,
          function() return savechain.encode(value, { compress = "zstd", level = 23 }) end,
          function() return savechain.encode(value, { compress = "zstd", level = 1.5 }) end,
          function() return savechain.decode(read(dir .. "/encoded.zst"):sub(1, 20)) end,
          function() return savechain.format(read(dir .. "/encoded.gz"):sub(1, 20)) end,
          function() return savechain.chain{ writer = "1.0.0" }:upgrade(plain, { level = 3 }) end,
        }) do
          local ok, err = pcall(bad)
          assert(not ok)
          print(err)
        end
        "#,
        &[
            dir.path().as_os_str(),
            fixture.as_os_str(),
            steps.path().as_os_str(),
        ],
    );
    let errors: Vec<&str> = out.lines().collect();
    assert!(errors[0].contains("unknown compression \"lz4\""), "{out}");
    assert!(errors[1].contains("zstd has no level 23"), "{out}");
    assert!(errors[2].contains("level is an integer"), "{out}");
    assert!(errors[3].contains("the zstd data is damaged"), "{out}");
    assert!(errors[4].contains("the gzip data is damaged"), "{out}");
    assert!(
        errors[5].contains("level is the level of compress"),
        "{out}"
    );

    let chain = Chain::from_lua_dir("2.3.0", steps.path()).unwrap();
    let mut options = Options::default();
    options.target = Some(6);
    let upgraded = chain
        .upgrader()
        .upgrade_text(&text, &options)
        .unwrap()
        .text
        .unwrap();
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    for (name, codec) in [("zst", Codec::Zstd), ("gz", Codec::Gzip)] {
        assert_eq!(
            read(&format!("up.{name}")),
            compress(&upgraded, Compression::new(codec))
        );
        assert_eq!(read(&format!("up-plain.{name}")), upgraded);
        let gzip9 = Compression::with_level(Codec::Gzip, 9).unwrap();
        assert_eq!(
            read(&format!("again-gzip.{name}")),
            compress(&upgraded, gzip9)
        );
    }
    let value =
        savechain::text::from_str(r#"{"hull": ["d", "0x1p-1"], "name": "Kestrel"}"#).unwrap();
    let pretty = savechain::text::to_vec(&value).unwrap();
    let compact = savechain::text::to_vec_compact(&value).unwrap();
    assert_eq!(
        read("encoded.zst"),
        compress(&pretty, Compression::new(Codec::Zstd))
    );
    let gzip1 = Compression::with_level(Codec::Gzip, 1).unwrap();
    assert_eq!(read("encoded.gz"), compress(&compact, gzip1));
    assert_eq!(read("encoded.json"), pretty);
    let saved = read("saved.zst");
    assert_eq!(Codec::of(&saved), Codec::Zstd);
    let save = Save::from_slice(&decompress(&saved, 1 << 30).unwrap()).unwrap();
    assert_eq!(
        (save.meta.version, save.data["ship"]["name"].as_str()),
        (2, Some("Kestrel"))
    );
}
