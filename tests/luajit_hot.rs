//! The one-file library's codec (`lua/savechain.lua` loaded as a plain file) with LuaJIT's
//! compiler on and the codec hot (issue 28, finding 1): Debian's LuaJIT 2.1.0-beta3
//! compiled the codec's walks over a table's keys wrongly once it had given up on one, and
//! tables were written with keys missing, or as `{}`, with no error. A few encodings of a
//! 60-node list were enough; a cold process with one encoding, as the property tests ran,
//! never showed it.
//!
//! `lua/tests/drivers/hot_codec.lua` runs long lists, deep chains, thousands of small
//! tables and random values through the codec, checks what it can alone, and writes every
//! text; here those texts must be the same with the compiler on and off, in Debian's
//! `luajit` and in a current LuaJIT 2.1 (the one PyPI's lupa ships, through
//! `lua/tests/drivers/lupa_luajit.py`), as `lua5.4` writes them, and as the Rust library
//! writes them.

mod common;

use std::ffi::OsStr;
use std::process::Output;
use std::sync::OnceLock;

use common::stock_lua::{interpreter, printed, repo, run_lua, Script};

fn lua_path() -> String {
    format!("{}/lua/?.lua", repo().display())
}

/// The records the driver wrote: ('T', text) or ('E', message).
fn records(data: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let kind = data[at];
        let nl = at + data[at..].iter().position(|&b| b == b'\n').unwrap();
        let len: usize = std::str::from_utf8(&data[at + 2..nl])
            .unwrap()
            .parse()
            .unwrap();
        found.push((kind, data[nl + 1..nl + 1 + len].to_vec()));
        at = nl + 1 + len + 1;
    }
    found
}

/// Runs the driver in `interpreter` (or, for `python3`, through lupa), the compiler on or
/// off; its records, after it passed its own checks.
fn hot(program: &str, jit_on: bool) -> Vec<(u8, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let driver = repo().join("lua/tests/drivers/hot_codec.lua");
    let mode = OsStr::new(if jit_on { "jit-on" } else { "jit-off" });
    let output: Output = if program == "python3" {
        let lupa = repo().join("lua/tests/drivers/lupa_luajit.py");
        run_lua(
            "python3",
            &lua_path(),
            "",
            Script::File(&lupa),
            &[driver.as_os_str(), out.as_os_str(), mode],
        )
    } else {
        run_lua(
            program,
            &lua_path(),
            "",
            Script::File(&driver),
            &[out.as_os_str(), mode],
        )
    };
    assert_ne!(
        output.status.code(),
        Some(3),
        "lupa is not installed, and this test runs the codec in the current LuaJIT 2.1 it \
         ships: python3 -m pip install lupa\n{}",
        printed(&output)
    );
    assert!(
        output.status.success(),
        "{program}, compiler {}: {}",
        if jit_on { "on" } else { "off" },
        printed(&output)
    );
    let data = std::fs::read(&out).unwrap();
    let found = records(&data);
    assert!(found.len() > 3000, "{program}: {} records", found.len());
    found
}

/// What `lua5.4` writes: byte for byte the Rust library's text (checked once).
fn reference() -> &'static [(u8, Vec<u8>)] {
    static DONE: OnceLock<Vec<(u8, Vec<u8>)>> = OnceLock::new();
    DONE.get_or_init(|| {
        let found = hot("lua5.4", true);
        for (kind, text) in &found {
            if *kind == b'T' {
                let value = savechain::text::from_slice(text).unwrap();
                let rust = savechain::text::to_vec_compact(&value).unwrap();
                assert!(
                    rust == *text,
                    "lua5.4 wrote\n{}\nthe Rust library writes\n{}",
                    String::from_utf8_lossy(text),
                    String::from_utf8_lossy(&rust)
                );
            }
        }
        found
    })
}

fn same_as_reference(what: &str, got: &[(u8, Vec<u8>)]) {
    let want = reference();
    assert_eq!(got.len(), want.len(), "{what}: records");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            let cut = |t: &[u8]| String::from_utf8_lossy(&t[..t.len().min(600)]).into_owned();
            panic!(
                "{what}, record {i}: wrote ({})\n{}\nwhere lua5.4 writes ({})\n{}",
                g.0 as char,
                cut(&g.1),
                w.0 as char,
                cut(&w.1)
            );
        }
    }
}

#[test]
fn debians_luajit_writes_hot_data_whole_with_its_compiler_on_and_off() {
    interpreter("luajit");
    same_as_reference("luajit, compiler on", &hot("luajit", true));
    same_as_reference("luajit, compiler off", &hot("luajit", false));
}

#[test]
fn lua51_writes_the_hot_data_as_lua54_does() {
    same_as_reference("lua5.1", &hot("lua5.1", true));
}

#[test]
fn a_current_luajit_21_writes_hot_data_whole_with_its_compiler_on_and_off() {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("python3").is_file()));
    assert!(
        found,
        "python3 is not installed, and this test runs the codec in the LuaJIT 2.1 of PyPI's \
         lupa: apt-get install python3 python3-pip, then python3 -m pip install lupa"
    );
    same_as_reference("lupa's LuaJIT 2.1, compiler on", &hot("python3", true));
    same_as_reference("lupa's LuaJIT 2.1, compiler off", &hot("python3", false));
}

#[test]
fn a_path_too_deep_to_read_shows_its_ends_and_how_many_levels_it_leaves_out() {
    // Issue 28, finding 16: whole, the path of a table nested 600 deep was 1,500 characters
    // (and LuaJIT, miscompiled, failed in table.concat instead).
    let source = r#"
        local s = require("savechain")
        local list = {}
        for _ = 1, 1000 do list = { next = list } end
        local deep = { print }
        for _ = 1, 29 do deep = { deep } end
        local short = { a = { ["b c"] = { print } } }
        for _, v in ipairs({ list, { x = deep }, short }) do
          for _ = 1, 20 do
            local ok, err = pcall(s.encode, v)
            assert(not ok)
            io.write(err, "\n")
          end
        end
    "#;
    let want = [
        "at next.next.next.next.next.next.next.next ... 496 levels ... \
         next.next.next.next.next.next.next.next: tables nested more than 512 deep cannot be saved",
        "at x[1][1][1][1][1][1][1] ... 15 levels ... [1][1][1][1][1][1][1][1]: \
         cannot save a function",
        "at a[\"b c\"][1]: cannot save a function",
    ];
    for program in ["lua5.1", "lua5.4", "luajit"] {
        let output = run_lua(program, &lua_path(), "", Script::Source(source), &[]);
        assert!(output.status.success(), "{program}: {}", printed(&output));
        let stdout = String::from_utf8(output.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 60, "{program}: {stdout}");
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(*line, want[i / 20], "{program}, line {i}");
        }
    }
}
