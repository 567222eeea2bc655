//! Stock Lua interpreters (Debian's `lua5.4`, ...) running scripts with savechain's native
//! module (`lua-module/`), built once per test binary.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The repository's root, where scripts run.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The folder that holds the native module, `libsavechain_lua.so`, built for the tests
/// (`cargo build -p savechain-lua` into `target/lua-module/`, a target folder of its own so
/// that the build never waits for the lock of the build running the tests); once per test
/// binary, whichever test asks first. Lua finds it with [`native_cpath`].
pub fn native_module_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let target = repo().join("target/lua-module");
            let output = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "-p", "savechain-lua", "--target-dir"])
                .arg(&target)
                .current_dir(repo())
                .output()
                .expect("cargo runs");
            assert!(
                output.status.success(),
                "cargo build -p savechain-lua failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let dir = target.join("debug");
            assert!(
                dir.join("libsavechain_lua.so").is_file(),
                "no module in {dir:?}"
            );
            dir
        })
        .clone()
}

/// A `LUA_CPATH` that finds the native module (`require("savechain")` and, through Lua's
/// all-in-one loader, `require("savechain.upgrade")`) and then Lua's default places.
pub fn native_cpath() -> String {
    format!("{}/lib?_lua.so;;", native_module_dir().display())
}

/// The interpreter `name` (`lua5.4`, `luajit`, ...) as found on the `PATH`; a test that
/// needs one fails, rather than passing without it, when it is not installed.
pub fn interpreter(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "{name} is not installed, and the tests of the native Lua module run in it: \
             apt-get install {name} (.ci/run installs it)"
        )
    })
}

/// A Lua script: a file, or source text (given to the interpreter on its standard input).
pub enum Script<'a> {
    File(&'a Path),
    Source(&'a str),
}

/// Runs `script` with `args` (its `arg[1]`, ...) in the interpreter `interpreter`, in the
/// repository's root, with `LUA_PATH` and `LUA_CPATH` as given (and no `LUA_INIT`), and
/// returns what it did.
pub fn run_lua(
    interpreter: &str,
    lua_path: &str,
    lua_cpath: &str,
    script: Script<'_>,
    args: &[&OsStr],
) -> Output {
    let mut command = Command::new(self::interpreter(interpreter));
    command
        .current_dir(repo())
        .env("LUA_PATH", lua_path)
        .env("LUA_CPATH", lua_cpath)
        .env_remove("LUA_INIT")
        .env_remove("LUA_INIT_5_4")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let source = match script {
        Script::File(path) => {
            command.arg(path).stdin(Stdio::null());
            None
        }
        Script::Source(source) => {
            command.arg("-").stdin(Stdio::piped());
            Some(source)
        }
    };
    command.args(args);
    let mut child = command.spawn().expect("the interpreter starts");
    if let Some(source) = source {
        let mut stdin = child.stdin.take().expect("a piped standard input");
        stdin
            .write_all(source.as_bytes())
            .expect("the script is written");
    }
    child.wait_with_output().expect("the interpreter runs")
}

/// [`run_lua`] in `lua5.4` with the native module and only `lua/tests/` on the `LUA_PATH`
/// (never `lua/?.lua`: the native module is what loads as `savechain`).
pub fn run_native(script: Script<'_>, args: &[&OsStr]) -> Output {
    let lua_path = format!("{}/lua/tests/?.lua", repo().display());
    run_lua("lua5.4", &lua_path, &native_cpath(), script, args)
}

/// What a script printed, both streams, for failure messages.
pub fn printed(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
