//! Runs the Lua tests of `lua/tests/` in the sandbox: each file returns a table of test
//! functions, and every one of them must return without an error.

use std::path::Path;

use savechain::lua::{Limits, Sandbox};

fn run_lua_tests(file: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua/tests");
    let path = dir.join(file);
    let source = std::fs::read_to_string(&path).unwrap();
    let sandbox = Sandbox::new(Limits::default()).unwrap();
    sandbox.allow_modules_from(&dir);
    let tests: mlua::Table = sandbox.run(&source, &path.display().to_string()).unwrap();
    let mut names: Vec<String> = tests
        .pairs::<String, mlua::Function>()
        .map(|pair| pair.unwrap().0)
        .collect();
    names.sort();
    assert!(!names.is_empty(), "{file} has no tests");
    let mut failures = Vec::new();
    for name in &names {
        let test: mlua::Function = tests.get(name.as_str()).unwrap();
        if let Err(e) = sandbox.guard(|_| test.call::<()>(())) {
            failures.push(format!("{file}: {name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn mapping() {
    run_lua_tests("mapping.lua");
}

#[test]
fn modules() {
    run_lua_tests("modules.lua");
}

#[test]
fn upgrade_helpers() {
    run_lua_tests("upgrade.lua");
}

#[test]
fn saves() {
    run_lua_tests("saves.lua");
}

#[test]
fn codec() {
    run_lua_tests("codec.lua");
}
