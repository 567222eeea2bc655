//! The examples a C and a C++ engine would write, compiled with the system's `cc` and `c++`
//! against the libraries this crate builds, upgrade the example fixtures as the library
//! does, and a hostile folder save by save; the C program runs under Valgrind too.
//!
//! Needs `cc`, `c++`, Valgrind and nlohmann/json (Debian: build-essential valgrind
//! nlohmann-json3-dev; .ci/run installs them).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The newest file named `name` (a prefix and an extension, `libsavechain_c*.a`) where
/// cargo puts this crate's libraries: `deps/`, beside the test binary, for a `cargo test`
/// (hashed names for the static library, in some builds), and the folder above it for a
/// `cargo build`. The newest is the one this test run's build made.
fn library(prefix: &str, extension: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for dir in [deps, deps.parent().unwrap()] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap_or("");
            if name.starts_with(prefix) && name.ends_with(extension) {
                found.push((path.metadata().unwrap().modified().unwrap(), path));
            }
        }
    }
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no {prefix}*{extension} beside {}", exe.display()))
        .1
}

/// The example programs, compiled once: the C one against the static and the shared
/// library, the C++ one against the shared library.
struct Programs {
    _dir: tempfile::TempDir,
    c_static: PathBuf,
    c_shared: PathBuf,
    cpp: PathBuf,
}

fn compile(compiler: &str, args: &[OsString], out: &Path) {
    let output = Command::new(compiler)
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("{compiler} does not run ({e}): install a C and C++ compiler"));
    assert!(
        output.status.success(),
        "{compiler} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The arguments `parts`, as a command takes them.
fn os(parts: &[&dyn AsRef<OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_os_string()).collect()
}

fn programs() -> &'static Programs {
    static PROGRAMS: OnceLock<Programs> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let shared_library = library("libsavechain_c.", "so");
        let static_library = library("libsavechain_c", ".a");
        let dir = tempfile::tempdir().unwrap();
        // The shared library's soname is libsavechain.so.<ABI> (build.rs), the name the
        // programs then load: it is laid out under that name, as install.sh lays it out,
        // with the link the linker's -lsavechain finds. A copy, so that a later build
        // does not change it under the programs.
        let libs = dir.path().join("lib");
        std::fs::create_dir(&libs).unwrap();
        let soname = format!("libsavechain.so.{}", savechain_c::SAVECHAIN_ABI_VERSION);
        std::fs::copy(&shared_library, libs.join(&soname)).unwrap();
        std::os::unix::fs::symlink(&soname, libs.join("libsavechain.so")).unwrap();
        let include = format!("-I{}", repo().join("c-abi/include").display());
        let examples = repo().join("c-abi/examples");
        let link_shared = os(&[
            &format!("-L{}", libs.display()),
            &"-lsavechain",
            &format!("-Wl,-rpath,{}", libs.display()),
        ]);
        let warnings = os(&[&"-Wall", &"-Wextra", &"-Werror", &"-O1", &"-g", &include]);
        let c_source = examples.join("upgrade_saves.c");

        // The static library is whole (Lua inside it): the system's own libraries are all
        // it needs besides.
        let c_static = dir.path().join("upgrade_saves_static");
        let mut args = os(&[&"-std=c11"]);
        args.extend(warnings.clone());
        args.extend(os(&[&c_source, &static_library]));
        args.extend(os(&[&"-lpthread", &"-ldl", &"-lm"]));
        compile("cc", &args, &c_static);

        let c_shared = dir.path().join("upgrade_saves");
        let mut args = os(&[&"-std=c11"]);
        args.extend(warnings.clone());
        args.extend(os(&[&c_source]));
        args.extend(link_shared.clone());
        args.extend(os(&[&"-lpthread"]));
        compile("cc", &args, &c_shared);

        let cpp = dir.path().join("engine");
        let mut args = os(&[&"-std=c++17"]);
        args.extend(warnings);
        args.extend(os(&[&examples.join("engine.cpp")]));
        args.extend(link_shared);
        compile("c++", &args, &cpp);

        Programs {
            _dir: dir,
            c_static,
            c_shared,
            cpp,
        }
    })
}

fn run(program: &Path, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        // Cargo's, which would find an older build of the library before the rpath's.
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn everything(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The fixtures' paths, relative to the repository, in order.
fn fixtures() -> Vec<String> {
    let mut all = Vec::new();
    for version in std::fs::read_dir(repo().join("fixtures")).unwrap() {
        let version = version.unwrap().path();
        for save in std::fs::read_dir(&version).unwrap() {
            let save = save.unwrap().path();
            let relative = save.strip_prefix(repo()).unwrap();
            all.push(relative.to_str().unwrap().to_string());
        }
    }
    all.sort();
    all
}

const GAME: &str = "Starlane Traders";

#[test]
fn the_c_program_upgrades_every_fixture_as_the_library_does() {
    let out = tempfile::tempdir().unwrap();
    let saves = fixtures();
    assert_eq!(saves.len(), 19);
    let out_dir = out.path().to_str().unwrap();
    let mut args = vec![
        "--steps", "upgrades", "--writer", "0.1.0", "--game", GAME, "--out", out_dir,
    ];
    args.extend(saves.iter().map(String::as_str));
    // The static library is whole: Lua is inside it.
    let output = run(&programs().c_static, &args, repo());
    assert_eq!(output.status.code(), Some(0), "{}", everything(&output));
    assert!(stdout(&output).ends_with("19 saves, 0 failed\n"));
    for save in &saves {
        let written = std::fs::read(out.path().join(save.replace('/', "_"))).unwrap();
        let expected = repo().join(save.replacen("fixtures/", "expected/", 1));
        let expected = std::fs::read(&expected).unwrap();
        // A save already current is copied as the game left it: the fixtures have the order
        // of format revision 2 (`data` first), and expected/ has its canonical text.
        let current = std::fs::read(repo().join(save)).unwrap() == written;
        let written = match current {
            true => savechain::text::reformat(&written, savechain::text::Style::Pretty).unwrap(),
            false => written,
        };
        assert!(
            written == expected,
            "{save}: the C program's output is not expected/'s"
        );
    }
    // The report says what each step did.
    let printed = stdout(&output);
    assert!(printed
        .contains("fixtures/v7/small.json\n  version 7, meta {\"game\":\"Starlane Traders\""));
    assert!(printed
        .contains("  v7 -> v9, changed, 2 steps\n  step 0007-mission-log.lua (lua, v7 -> v8)\n"));
}

#[test]
fn the_c_program_upgrades_a_file_in_place_keeping_its_backup() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(repo().join("fixtures/v3/small.json")).unwrap();
    std::fs::write(dir.path().join("slot1.json"), &original).unwrap();
    let steps = repo().join("upgrades");
    let args = [
        "--steps",
        steps.to_str().unwrap(),
        "--writer",
        "0.1.0",
        "slot1.json",
    ];
    let output = run(&programs().c_shared, &args, dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", everything(&output));
    assert!(
        stdout(&output).contains("  written slot1.json, backup slot1.json.v3.bak\n"),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        std::fs::read(dir.path().join("slot1.json.v3.bak")).unwrap(),
        original
    );
    assert!(
        std::fs::read(dir.path().join("slot1.json")).unwrap()
            == std::fs::read(repo().join("expected/v3/small.json")).unwrap()
    );
    // Current now: not written again, no second backup.
    let output = run(&programs().c_shared, &args, dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", everything(&output));
    assert!(stdout(&output).contains("  written (none), backup (none)\n"));
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["slot1.json", "slot1.json.v3.bak"]);
}

/// Saves stored compressed go through the same program unchanged: read from their bytes
/// and from their heads, upgraded in memory to the text the plain ones give, and through
/// the file into an output stored as the save was, or in place keeping it so, with the
/// original's bytes as the backup.
#[test]
fn the_c_program_upgrades_compressed_saves_keeping_their_compression() {
    use savechain::compress::{compress, Codec, Compression};
    let dir = tempfile::tempdir().unwrap();
    let saves = [
        ("fixtures/v3/small.json", "a.json.zst", Codec::Zstd),
        ("fixtures/v5/edge.json", "b.json.gz", Codec::Gzip),
        ("fixtures/v9/small.json", "c.json.zst", Codec::Zstd),
    ];
    for (fixture, name, codec) in saves {
        let plain = std::fs::read(repo().join(fixture)).unwrap();
        let bytes = compress(&plain, Compression::new(codec));
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let steps = repo().join("upgrades");
    let steps = steps.to_str().unwrap();
    let mut args = vec![
        "--steps", steps, "--writer", "0.1.0", "--game", GAME, "--out", "out",
    ];
    args.extend(saves.iter().map(|s| s.1));
    let output = run(&programs().c_shared, &args, dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", everything(&output));
    for (fixture, name, codec) in saves {
        let written = std::fs::read(dir.path().join("out").join(name)).unwrap();
        assert_eq!(Codec::of(&written), codec, "{name}");
        let text = savechain::compress::decompress(&written, 1 << 30).unwrap();
        let expected =
            std::fs::read(repo().join(fixture.replacen("fixtures/", "expected/", 1))).unwrap();
        let expected = savechain::Save::from_slice(&expected).unwrap();
        assert_eq!(
            savechain::Save::from_slice(&text).unwrap(),
            expected,
            "{name}"
        );
    }

    // In place: stored as it was, the backup the original's bytes.
    let original = std::fs::read(dir.path().join("a.json.zst")).unwrap();
    let args = [
        "--steps",
        steps,
        "--writer",
        "0.1.0",
        "--game",
        GAME,
        "a.json.zst",
    ];
    let output = run(&programs().c_shared, &args, dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", everything(&output));
    assert_eq!(
        std::fs::read(dir.path().join("a.json.zst.v3.bak")).unwrap(),
        original
    );
    let upgraded = std::fs::read(dir.path().join("a.json.zst")).unwrap();
    assert_eq!(Codec::of(&upgraded), Codec::Zstd);
    assert_eq!(
        savechain::Save::from_slice(&upgraded).unwrap().meta.version,
        9
    );
}

/// A step that keeps state in an upvalue and a global (and prints them: a failed save's
/// error shows what it printed), and does what a stranger's step might on some saves: loop forever, read a file outside its folder, require one, take
/// all the memory, raise an error.
const HOSTILE_STEP: &str = r#"
local calls = 0
return function(data)
  calls = calls + 1
  COUNTER = (COUNTER or 0) + 1
  data.calls, data.counter = calls, COUNTER
  print("calls", calls, "counter", COUNTER)
  if data.loop then while true do end end
  if data.snoop then data.passwd = io.open("/etc/passwd"):read("a") end
  if data.escape then data.escaped = require("../../../../etc/passwd") end
  if data.hog then data.big = string.rep("x", 1 << 30) end
  if data.fail then error("this save is broken: " .. data.fail) end
end
"#;

/// A folder of saves as a player's folder may hold them: good ones, ones the step fails
/// on, one too new, broken ones, one not a save.
fn hostile_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("steps")).unwrap();
    std::fs::write(dir.path().join("steps/0001-hostile.lua"), HOSTILE_STEP).unwrap();
    let save = |data: &str| format!("{{\"meta\": {{\"version\": 1}}, \"data\": {data}}}");
    let files: &[(&str, Vec<u8>)] = &[
        ("a.json", save(r#"{"name": "a"}"#).into_bytes()),
        ("b.json", save(r#"{"name": "b"}"#).into_bytes()),
        (
            "c.json",
            save(r#"{"name": "c", "hp": ["d", "0x1.8p+6"]}"#).into_bytes(),
        ),
        ("loop.json", save(r#"{"loop": true}"#).into_bytes()),
        ("snoop.json", save(r#"{"snoop": true}"#).into_bytes()),
        ("escape.json", save(r#"{"escape": true}"#).into_bytes()),
        ("hog.json", save(r#"{"hog": true}"#).into_bytes()),
        ("fail.json", save(r#"{"fail": "no hull"}"#).into_bytes()),
        (
            "too-new.json",
            br#"{"meta": {"version": 7}, "data": {}}"#.to_vec(),
        ),
        (
            "comma.json",
            b"{\"meta\": {\"version\": 1},\n \"data\": {\"hp\": 3,}}".to_vec(),
        ),
        (
            "latin1.json",
            b"{\"meta\": {\"version\": 1}, \"data\": \"caf\xe9\"}".to_vec(),
        ),
        ("settings.json", br#"{"volume": 3}"#.to_vec()),
        (
            "envelope.json",
            br#"{"meta": {"version": -1}, "data": {}}"#.to_vec(),
        ),
        ("empty.json", Vec::new()),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

const HOSTILE_SAVES: [&str; 14] = [
    "a.json",
    "b.json",
    "c.json",
    "loop.json",
    "snoop.json",
    "escape.json",
    "hog.json",
    "fail.json",
    "too-new.json",
    "comma.json",
    "latin1.json",
    "settings.json",
    "envelope.json",
    "empty.json",
];

/// Small limits, so that the endless loop ends soon (under Valgrind too).
const LIMITS: &str = "2000000,67108864,0";

#[test]
fn the_c_program_fails_each_hostile_save_alone() {
    let dir = hostile_folder();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let mut args = vec![
        "--steps", "steps", "--writer", "1.0.0", "--limits", LIMITS, "--out", "out",
    ];
    args.extend(HOSTILE_SAVES);
    let output = run(&programs().c_shared, &args, dir.path());
    assert_eq!(output.status.code(), Some(1), "{}", everything(&output));
    // Each good save was upgraded by a step that had seen no other save: its upvalue and
    // its global start afresh.
    for name in ["a.json", "b.json", "c.json"] {
        let text = std::fs::read_to_string(dir.path().join("out").join(name)).unwrap();
        let save = savechain::Save::from_str(&text).unwrap();
        assert_eq!(save.data["calls"].as_i64(), Some(1), "{name}: {text}");
        assert_eq!(save.data["counter"].as_i64(), Some(1), "{name}: {text}");
    }
    // Nothing was written for the saves that failed.
    let written = std::fs::read_dir(dir.path().join("out")).unwrap().count();
    assert_eq!(written, 3);
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn the_cpp_engine_loads_the_fixtures_reads_their_doubles_with_strtod_and_stores_them() {
    let stored = tempfile::tempdir().unwrap();
    let store_dir = stored.path().to_str().unwrap();
    let mut args = vec![
        "--steps", "upgrades", "--writer", "0.1.0", "--game", GAME, "--store", store_dir,
    ];
    let saves = fixtures();
    args.extend(saves.iter().map(String::as_str));
    let output = run(&programs().cpp, &args, repo());
    assert_eq!(output.status.code(), Some(0), "{}", everything(&output));
    // Data written by nlohmann/json and stored through savechain under the save's meta:
    // the upgraded save, byte for byte.
    for save in &saves {
        let written = stored.path().join(save.replace('/', "_"));
        let expected = repo().join(save.replacen("fixtures/", "expected/", 1));
        assert!(
            std::fs::read(&written).unwrap() == std::fs::read(&expected).unwrap(),
            "{save}: stored by the C++ engine, not expected/'s"
        );
    }
    let printed = stdout(&output);
    assert_eq!(
        printed
            .matches("doubles read with strtod, each the same as in the decimal view")
            .count(),
        19,
        "{printed}"
    );
    assert!(printed.contains("fixtures/v1/edge.json\n  version 1\n  upgraded v1 -> v9 (8 steps)\n"));
    assert!(printed.ends_with("19 saves, 0 failed\n"));
}

#[test]
fn the_cpp_engine_fails_each_hostile_save_alone() {
    let dir = hostile_folder();
    let mut args = vec!["--steps", "steps", "--writer", "1.0.0", "--limits", LIMITS];
    args.extend(HOSTILE_SAVES);
    let output = run(&programs().cpp, &args, dir.path());
    assert_eq!(output.status.code(), Some(1), "{}", everything(&output));
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn a_chain_that_does_not_load_is_refused_naming_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("steps")).unwrap();
    std::fs::write(
        dir.path().join("steps/0001-typo.lua"),
        "return function(data)\n  data.x = = 1\nend\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        r#"{"meta": {"version": 1}, "data": {}}"#,
    )
    .unwrap();
    let args = ["--steps", "steps", "--writer", "1.0.0", "s.json"];
    let c = run(&programs().c_shared, &args, dir.path());
    assert_eq!(c.status.code(), Some(2));
    let cpp = run(&programs().cpp, &args, dir.path());
    assert_eq!(cpp.status.code(), Some(2));
    insta::assert_snapshot!(format!(
        "C:   {}C++: {}",
        String::from_utf8_lossy(&c.stderr),
        String::from_utf8_lossy(&cpp.stderr)
    ));
}

/// Runs the C program under Valgrind: no invalid read or write, no leak (memory still
/// reachable at exit, the library's read-only caches, is not a leak), with the
/// suppressions a program linking savechain uses (`c-abi/valgrind.supp`: the main thread's
/// handle in Rust's standard library).
fn valgrind(args: &[&str], dir: &Path) -> Output {
    let suppressions = repo().join("c-abi/valgrind.supp");
    let output = Command::new("valgrind")
        .args([
            "--quiet",
            "--error-exitcode=99",
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect,possible",
        ])
        .arg(format!("--suppressions={}", suppressions.display()))
        .arg(&programs().c_shared)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(dir)
        .output()
        .expect("valgrind runs: install it (Debian: apt-get install valgrind; .ci/run does)");
    assert_ne!(
        output.status.code(),
        Some(99),
        "Valgrind found errors:\n{}",
        everything(&output)
    );
    output
}

#[test]
fn under_valgrind_the_c_program_reads_and_frees_cleanly() {
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    // On the main thread, as most engines call it, then on two threads of the program's.
    let mut args = vec![
        "--steps",
        "upgrades",
        "--writer",
        "0.1.0",
        "--game",
        GAME,
        "--out",
        out_dir,
        "--threads",
        "0",
    ];
    let saves = fixtures();
    args.extend(saves.iter().map(String::as_str));
    let output = valgrind(&args, repo());
    assert_eq!(output.status.code(), Some(0), "{}", everything(&output));

    let dir = hostile_folder();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let mut args = vec![
        "--steps", "steps", "--writer", "1.0.0", "--limits", LIMITS, "--out", "out",
    ];
    args.extend(HOSTILE_SAVES);
    let output = valgrind(&args, dir.path());
    assert_eq!(output.status.code(), Some(1), "{}", everything(&output));
}
