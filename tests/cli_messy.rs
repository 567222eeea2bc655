//! `save-upgrade` on folders as players, modders and servers really have them: links,
//! files that are not saves, read-only saves, output folders in the wrong place, steps
//! with typos, killed runs, and scripts reading its output. Every file's bytes are checked
//! afterwards.
#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::{save_upgrade, stderr};
use savechain::Save;

const V1: &str = r#"{"meta": {"version": 1, "writer": "1.0.0"}, "data": {"gold": 5}}"#;
const V2: &str = r#"{"meta": {"version": 2, "writer": "1.1.0"}, "data": {"gold": 5, "silver": 0}}"#;

/// A game's steps: 1 -> 2 adds silver, 2 -> 3 prints and adds copper.
fn steps(dir: &Path) -> PathBuf {
    let steps = dir.join("steps");
    fs::create_dir_all(&steps).unwrap();
    fs::write(
        steps.join("0001-silver.lua"),
        "-- silver coins\nreturn function(data) data.silver = 0 end",
    )
    .unwrap();
    fs::write(
        steps.join("0002-copper.lua"),
        "-- copper coins\nreturn function(data, ctx)\n  print('gold is', data.gold)\n  data.copper = data.gold * 100\nend",
    )
    .unwrap();
    steps
}

const GAME: [&str; 4] = ["--upgrades", "steps", "--writer", "1.2.0"];

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = GAME.to_vec();
    all.extend_from_slice(args);
    save_upgrade(&all, dir)
}

/// Every file below `root` (links not followed) with its bytes, or where a link points.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let kind = fs::symlink_metadata(&path).unwrap().file_type();
            let key = path.strip_prefix(root).unwrap().to_path_buf();
            if kind.is_symlink() {
                files.insert(
                    key,
                    format!("-> {}", fs::read_link(&path).unwrap().display()),
                );
            } else if kind.is_dir() {
                stack.push(path);
            } else {
                files.insert(
                    key,
                    String::from_utf8_lossy(&fs::read(&path).unwrap()).into(),
                );
            }
        }
    }
    files
}

/// The messy folder: a player's saves beside a settings file, a link to a save elsewhere,
/// a link looping back, an upper-case name, a read-only save, and what killed runs left.
fn messy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    steps(root);
    let saves = root.join("saves");
    fs::create_dir_all(saves.join("slots")).unwrap();
    fs::create_dir_all(root.join("cloud")).unwrap();
    fs::write(saves.join("slots/a.json"), V1).unwrap();
    fs::write(saves.join("slots/UPPER.JSON"), V1).unwrap();
    fs::write(saves.join("b.json"), V2).unwrap();
    fs::write(
        saves.join("settings.json"),
        r#"{"volume": 7, "language": "en"}"#,
    )
    .unwrap();
    fs::write(saves.join("notes.txt"), "remember the lamp").unwrap();
    fs::write(root.join("cloud/synced.json"), V1).unwrap();
    symlink(root.join("cloud/synced.json"), saves.join("synced.json")).unwrap();
    symlink(&saves, saves.join("slots/loop")).unwrap();
    symlink(saves.join("slots/a.json"), saves.join("a-again.json")).unwrap();
    let locked = saves.join("locked.json");
    fs::write(&locked, V1).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o444)).unwrap();
    // Left by a killed run a while ago, and a file of another program's.
    let stale = saves.join(".b.json.savechain-k1l2m3.tmp");
    fs::write(&stale, "half a save").unwrap();
    let old = SystemTime::now() - Duration::from_secs(600);
    fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    fs::write(saves.join(".b.json.swp"), "an editor's").unwrap();
    dir
}

/// The messy folder with its read-only save made writable, and `more` extra version 1 saves.
fn writable_messy(more: usize) -> tempfile::TempDir {
    let dir = messy();
    let locked = dir.path().join("saves/locked.json");
    fs::set_permissions(locked, fs::Permissions::from_mode(0o644)).unwrap();
    for i in 0..more {
        fs::write(dir.path().join(format!("saves/slots/more{i:02}.json")), V1).unwrap();
    }
    dir
}

/// Runs the game's chain with `args`, standard output into a pipe whose reader is gone
/// (as `| head -0`), and standard error there too (`2>&1`) or nowhere.
fn into_closed_pipe(root: &Path, args: &[&str], stderr_too: bool) -> std::process::ExitStatus {
    let mut all: Vec<&str> = GAME.to_vec();
    all.extend_from_slice(args);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let stderr = if stderr_too {
        Stdio::from(writer.try_clone().unwrap())
    } else {
        Stdio::null()
    };
    Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(&all)
        .current_dir(root)
        .stdout(Stdio::from(writer))
        .stderr(stderr)
        .status()
        .unwrap()
}

fn version(path: &Path) -> u64 {
    Save::load(path).unwrap().meta.version
}

#[test]
fn a_messy_folder_is_upgraded_and_nothing_else_is_touched() {
    let dir = messy();
    let root = dir.path();
    let before = snapshot(root);
    let out = run(root, &["--report", "saves/report.json", "saves"]);
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "the read-only save failed: {err}"
    );

    let saves = root.join("saves");
    // Upgraded, with backups: the plain saves, the upper-case one, the save behind a link
    // (the file it names, the link kept), each once.
    for (save, backup) in [
        ("slots/a.json", Some("slots/a.json.v1.bak")),
        ("slots/UPPER.JSON", Some("slots/UPPER.JSON.v1.bak")),
        ("b.json", Some("b.json.v2.bak")),
    ] {
        assert_eq!(version(&saves.join(save)), 3, "{save}");
        let backup = backup.unwrap();
        assert_eq!(
            fs::read_to_string(saves.join(backup)).unwrap(),
            before[&PathBuf::from("saves").join(save)],
            "{backup}"
        );
    }
    assert_eq!(version(&root.join("cloud/synced.json")), 3);
    assert!(fs::symlink_metadata(saves.join("synced.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(
        err.contains("skipped saves/a-again.json: the same file as saves/slots/a.json"),
        "{err}"
    );
    assert!(
        err.contains("skipped saves/slots/loop: a link back to a folder above it"),
        "{err}"
    );
    // Not a save: skipped, not failed, untouched.
    assert!(
        err.contains("skipped saves/settings.json: not a save"),
        "{err}"
    );
    // Read-only: refused, untouched, no backup.
    assert!(
        err.contains("saves/locked.json: the save is read-only"),
        "{err}"
    );
    assert!(!saves.join("locked.json.v1.bak").exists());
    // The killed run's temporary is gone; the editor's file is not.
    assert!(!saves.join(".b.json.savechain-k1l2m3.tmp").exists());
    assert!(saves.join(".b.json.swp").exists());
    assert!(
        err.contains("removed 1 temporary files left by killed runs"),
        "{err}"
    );
    assert!(
        err.contains("upgraded 4, already current 0, failed 1, not saves 1"),
        "{err}"
    );
    // The step's print, named by save and step, in path order.
    let printed: Vec<&str> = err.lines().filter(|l| l.contains("gold is")).collect();
    assert_eq!(
        printed,
        [
            "saves/b.json: 0002-copper.lua: gold is\t5",
            "saves/slots/UPPER.JSON: 0002-copper.lua: gold is\t5",
            "saves/slots/a.json: 0002-copper.lua: gold is\t5",
            "saves/synced.json: 0002-copper.lua: gold is\t5",
        ]
    );

    // Everything else is byte for byte as it was.
    let after = snapshot(root);
    let changed: Vec<&PathBuf> = before
        .keys()
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    let expected: Vec<PathBuf> = [
        "cloud/synced.json",
        "saves/.b.json.savechain-k1l2m3.tmp",
        "saves/b.json",
        "saves/slots/UPPER.JSON",
        "saves/slots/a.json",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(changed, expected.iter().collect::<Vec<_>>());

    // The report, written into the folder, is no input to the next run; neither are the
    // backups. Everything is current now but the read-only save.
    let report =
        savechain::text::from_slice(&fs::read(saves.join("report.json")).unwrap()).unwrap();
    let entries = report.as_array().unwrap();
    let a = entries
        .iter()
        .find(|e| e.get("path").and_then(|p| p.as_str()) == Some("saves/slots/a.json"))
        .unwrap();
    assert_eq!(a.get("status").and_then(|s| s.as_str()), Some("upgraded"));
    assert_eq!(
        a.get("printed").unwrap().to_string(),
        r#"[{"step":"0002-copper.lua","text":"gold is\t5"}]"#
    );
    let out = run(root, &["--check", "saves"]);
    let err = stderr(&out);
    assert!(
        err.contains("skipped saves/report.json: not a save"),
        "{err}"
    );
    // The one save left to upgrade is read-only: the check says, as the run did, that it
    // cannot be upgraded in place (it is no save that merely needs work).
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert!(
        err.contains("error: saves/locked.json: the save is read-only"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
}

#[test]
fn a_report_never_replaces_a_save_and_its_folder_is_checked_first() {
    let dir = messy();
    let root = dir.path();
    let before = snapshot(root);
    for (report, why) in [
        ("saves/b.json", "a file that is not a report is there"),
        (
            "saves/settings.json",
            "a file that is not a report is there",
        ),
        ("saves/notes.txt", "a file that is not a report is there"),
        ("nowhere/report.json", "the folder nowhere does not exist"),
    ] {
        for mode in [&["--check"][..], &[]] {
            let mut args = mode.to_vec();
            args.extend(["--report", report, "saves"]);
            let out = run(root, &args);
            assert_eq!(out.status.code(), Some(2), "{report}");
            assert!(stderr(&out).contains(why), "{report}: {}", stderr(&out));
            assert_eq!(snapshot(root), before, "{report} {mode:?}");
        }
    }
    // An earlier report may be replaced (the check fails read-only locked.json, as the
    // run would).
    fs::write(root.join("report.json"), "[]").unwrap();
    let out = run(root, &["--check", "--report", "report.json", "saves"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_ne!(fs::read(root.join("report.json")).unwrap(), b"[]");
}

#[test]
fn a_closed_pipe_does_not_stop_a_run_that_writes() {
    let dir = writable_messy(40);
    let root = dir.path();
    let status = into_closed_pipe(root, &["--diff", "saves"], false);
    assert_eq!(status.code(), Some(0));
    let out = run(root, &["--check", "saves"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "every save was upgraded: {err}");
}

#[test]
fn an_output_folder_a_source_reaches_through_a_link_is_refused() {
    let dir = messy();
    let root = dir.path();
    let before = snapshot(root);
    // saves/synced.json leads to cloud/; saves/linked-cloud is a link to cloud/ itself.
    symlink(root.join("cloud"), root.join("saves/linked-cloud")).unwrap();
    let out = run(root, &["--out-dir", "cloud/upgraded", "saves"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("lies inside the source"),
        "{}",
        stderr(&out)
    );
    let mut now = snapshot(root);
    now.remove(&PathBuf::from("saves/linked-cloud"));
    assert_eq!(now, before);
}

#[test]
fn caches_and_folders_with_files_that_are_not_saves() {
    let dir = writable_messy(0);
    let root = dir.path();
    let cache = |action: &str| {
        save_upgrade(
            &[
                "cache",
                action,
                "saves",
                "--upgrades",
                "steps",
                "--writer",
                "1.2.0",
            ],
            root,
        )
    };
    let out = cache("build");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("skipped saves/settings.json: not a save"),
        "{}",
        stderr(&out)
    );
    let out = cache("verify");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A broken save is a failure, not a cache to build.
    fs::write(
        root.join("saves/broken.json"),
        r#"{"meta": {"version": 1}, "data": "#,
    )
    .unwrap();
    let out = cache("verify");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("saves/broken.json:1:"),
        "{}",
        stderr(&out)
    );
    // A folder whose only JSON is not a save holds no saves.
    fs::create_dir(root.join("config")).unwrap();
    fs::write(root.join("config/settings.json"), "{}").unwrap();
    let out = run(root, &["--check", "config"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no saves found"), "{}", stderr(&out));
}

#[test]
fn notes_come_in_path_order_and_saves_past_the_target_are_done() {
    let dir = messy();
    let root = dir.path();
    let out = run(root, &["--dry-run", "--to", "2", "saves"]);
    let err = stderr(&out);
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("skipped ")).collect();
    assert_eq!(
        notes,
        [
            "skipped saves/a-again.json: the same file as saves/slots/a.json",
            "skipped saves/settings.json: not a save: no \"meta\" member; a save is an object {\"meta\": {\"version\": N, ...}, \"data\": ...}",
            "skipped saves/slots/loop: a link back to a folder above it",
        ]
    );
    // b.json is at version 2 already: nothing to do, not a failure; read-only locked.json
    // would fail, as the run would fail it.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: saves/locked.json: the save is read-only"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("b.json"));
}

#[test]
fn looking_never_writes() {
    let dir = messy();
    let root = dir.path();
    let before = snapshot(root);
    for args in [
        &["--check", "saves"][..],
        &["--dry-run", "saves"],
        &["--diff", "--dry-run", "saves"],
        &["inspect", "saves/slots/a.json"],
        &["inspect", "--json", "saves/slots/a.json"],
        &["cache", "verify", "saves"],
        &["chain"],
    ] {
        let mut all = args.to_vec();
        let game = ["--upgrades", "steps", "--writer", "1.2.0"];
        if args[0] == "inspect" || args[0] == "cache" || args[0] == "chain" {
            all.extend_from_slice(&game);
        } else {
            all.splice(0..0, game);
        }
        let out = save_upgrade(&all, root);
        assert_ne!(
            out.status.code(),
            Some(101),
            "{args:?} panicked: {}",
            stderr(&out)
        );
        assert_eq!(snapshot(root), before, "{args:?} wrote something");
    }
}

#[test]
fn output_folders_that_overlap_a_source_are_refused() {
    let dir = messy();
    let root = dir.path();
    let before = snapshot(root);
    for (out_dir, why) in [
        ("saves", "is the source"),
        ("saves/./", "is the source"),
        ("saves/upgraded", "lies inside the source"),
        (".", "contains the source"),
    ] {
        let out = run(root, &["--out-dir", out_dir, "saves"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{out_dir}: {err}");
        assert!(err.contains(why), "{out_dir}: {err}");
        assert_eq!(snapshot(root), before, "{out_dir}");
    }
    // Two folders whose saves would land on the same output.
    fs::create_dir(root.join("other")).unwrap();
    fs::write(root.join("other/b.json"), V1).unwrap();
    let before = snapshot(root);
    let out = run(root, &["--out-dir", "new", "saves", "other"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("would both be written to new/b.json"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(root), before);
    // Apart, it works, and the sources stay as they were.
    let out = run(root, &["--out-dir", "new", "saves"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(version(&root.join("new/slots/a.json")), 3);
    assert_eq!(
        version(&root.join("new/locked.json")),
        3,
        "read-only sources may be copied"
    );
    let after = snapshot(root);
    for (path, bytes) in &before {
        if path.starts_with("saves") && !path.to_string_lossy().contains("savechain-") {
            assert_eq!(after.get(path), Some(bytes), "{}", path.display());
        }
    }
}

#[test]
fn paths_without_saves_and_repeats() {
    let dir = messy();
    let root = dir.path();
    fs::create_dir(root.join("empty")).unwrap();
    fs::write(root.join("empty/readme.txt"), "no saves").unwrap();
    let out = run(root, &["--check", "empty"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("empty: no saves here"),
        "{}",
        stderr(&out)
    );
    let out = run(root, &["--check", "mistyped"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("mistyped: no such file or folder"),
        "{}",
        stderr(&out)
    );
    // The same file named three ways is upgraded once: one backup, one history entry.
    let out = run(
        root,
        &[
            "saves/slots/a.json",
            "saves/./slots/a.json",
            "saves/a-again.json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let save = Save::load(root.join("saves/slots/a.json")).unwrap();
    assert_eq!(
        save.meta
            .extra
            .get("history")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn chain_checks_steps_for_real_before_any_save_is_touched() {
    let dir = messy();
    let root = dir.path();
    let before = snapshot(root);
    let broken = [
        (
            "0003-typo.lua",
            "return function(data) data.x = end",
            "0003-typo.lua: syntax error on line 1",
        ),
        (
            "0003-no-function.lua",
            "local x = 1",
            "must return the step's function",
        ),
        ("0003-upper.LUA", "return function() end", "0003-upper.LUA"),
        ("3-short.lua", "return function() end", "3-short.lua"),
        (
            "0003_underscore.lua",
            "return function() end",
            "0003_underscore.lua",
        ),
    ];
    for (name, source, expected) in broken {
        let step = root.join("steps").join(name);
        fs::write(&step, source).unwrap();
        let mut chain = vec!["chain"];
        chain.extend(GAME);
        let out = save_upgrade(&chain, root);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(expected), "{name}: {err}");
        let out = run(root, &["saves"]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(stderr(&out).contains(expected), "{name}: {}", stderr(&out));
        fs::remove_file(&step).unwrap();
        let mut now = snapshot(root);
        now.remove(&PathBuf::from("steps").join(name));
        assert_eq!(now, before, "{name}: a save was touched");
    }
}

#[test]
fn scripts_can_trust_the_output() {
    let dir = messy();
    let root = dir.path();
    // Path order, whatever the number of jobs.
    let one = run(root, &["--dry-run", "--jobs", "1", "saves"]);
    let two = run(root, &["--dry-run", "--jobs", "2", "saves"]);
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(stderr(&one), stderr(&two));
    let listed: Vec<String> = String::from_utf8_lossy(&one.stdout)
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(String::from)
        .collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted);
    // locked.json, read-only, is an error on standard error: it would fail.
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(stderr(&one).contains("error: saves/locked.json: the save is read-only"));

    // The report on standard output is the only thing there.
    for extra in [
        &["--dry-run"][..],
        &["--diff", "--out-dir", "new"],
        &["--check"],
    ] {
        let mut args = vec!["--report", "-"];
        args.extend_from_slice(extra);
        args.push("saves");
        let out = run(root, &args);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{extra:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(report.as_array().unwrap().len(), 6, "{extra:?}");
    }

    // --diff shows each path with its values.
    let out = run(root, &["--diff", "--out-dir", "new", "saves/slots/a.json"]);
    let diff = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        diff.contains("    + data.silver: 0\n") && diff.contains("    + data.copper: 500\n"),
        "{diff}"
    );

    // What a failing step printed comes out with its error.
    fs::write(
        root.join("bad.json"),
        r#"{"meta": {"version": 2}, "data": {"gold": "lots"}}"#,
    )
    .unwrap();
    let out = run(root, &["--out-dir", "new", "bad.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.json: 0002-copper.lua: gold is\tlots"),
        "{err}"
    );
    assert!(
        err.contains(
            "step 0002-copper.lua, version 2 to 3, failed on line 4: \
             attempt to mul a 'string' with a 'number'\n"
        ),
        "{err}"
    );

    // --to past the latest version is a usage error, before any save.
    let out = run(root, &["--to", "42", "saves"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--to 42 is outside the chain's versions 1 to 3"),
        "{}",
        stderr(&out)
    );

    // --quiet says nothing when all is well, not even what steps print (the report has it).
    let out = run(root, &["--quiet", "--out-dir", "new", "saves/b.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");

    // --check: 1 for work to do, 2 when a save is broken.
    fs::write(
        root.join("saves/broken.json"),
        r#"{"meta": {"version": 1}, "data": "#,
    )
    .unwrap();
    let out = run(root, &["--check", "saves/b.json"]);
    assert_eq!(out.status.code(), Some(1));
    let out = run(root, &["--check", "saves/b.json", "saves/broken.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let dir = writable_messy(40);
    let status = into_closed_pipe(dir.path(), &["--dry-run", "saves"], true);
    assert_eq!(status.code(), Some(0), "no panic, no error");
}

/// Makes a FIFO (a named pipe) at `path`.
fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string, for the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
}

/// Runs `save-upgrade` with `args`, failing the test if it has not ended within two minutes
/// (reading a FIFO would wait for a writer forever): exit status, standard output and error.
fn run_within(root: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || drop(done.send(child.wait_with_output())));
    match finished.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => {
            let out = out.unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            (out.status.code(), stdout, stderr(&out))
        }
        Err(_) => {
            // SAFETY: ends the child this test started, which hangs.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("save-upgrade {args:?} still runs after two minutes: it waits on a FIFO");
        }
    }
}

/// A FIFO named like a save, or where a save's cache would be, is never read nor waited on:
/// left out of a folder's search with a note, refused when named, never used (nor
/// replaced, nor deleted) as a cache.
#[test]
fn fifos_are_never_read_nor_waited_on() {
    let dir = writable_messy(0);
    let root = dir.path();
    mkfifo(&root.join("saves/pipe.json"));
    mkfifo(&root.join("saves/b.json.cache"));
    let with_game = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(GAME);
        run_within(root, &all)
    };
    let note = "skipped saves/pipe.json: a FIFO (named pipe), not a regular file";
    let (code, _, err) = with_game(&["--check", "saves"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(note), "{err}");
    let (code, _, err) = with_game(&["--dry-run", "saves/pipe.json", "saves/b.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("saves/pipe.json: it is a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    // Named and met in a folder given: told once, as the error.
    let (code, _, err) = with_game(&["--dry-run", "saves/pipe.json", "saves"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.matches("pipe.json").count(), 1, "{err}");

    // A report is never written to one (nor is it read, to see what it holds).
    let (code, _, err) = with_game(&["--check", "--report", "saves/pipe.json", "saves"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("that is not a regular file is there"), "{err}");

    // Where b's cache would be: not used, not replaced, not deleted.
    let fifo_cache = "the cache cannot be read: it is a FIFO (named pipe), not a regular file";
    let (code, out, err) = with_game(&["cache", "verify", "saves/b.json"]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(out, format!("saves/b.json: {fifo_cache}\n"));
    let (code, out, err) = with_game(&["inspect", "--json", "saves/b.json"]);
    assert_eq!(code, Some(0), "{err}");
    let facts = savechain::text::from_slice(out.as_bytes()).unwrap();
    let reason = facts.get("source_reason").and_then(|r| r.as_str());
    assert_eq!(reason, Some(fifo_cache));
    let (code, _, err) = with_game(&["inspect", "saves/pipe.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("saves/pipe.json: not a regular file"), "{err}");
    let (code, out, err) = with_game(&["cache", "build", "saves/b.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        out.contains("cannot write the cache") && out.contains("so it is left as it is"),
        "{out}"
    );
    let (code, _, err) = run_within(root, &["cache", "clear", "saves/b.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a cache, so it is left as it is"), "{err}");

    // Upgrading the folder upgrades the saves and leaves both FIFOs as they are.
    let (code, _, err) = with_game(&["saves"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(note), "{err}");
    for fifo in ["saves/pipe.json", "saves/b.json.cache"] {
        let kind = fs::symlink_metadata(root.join(fifo)).unwrap().file_type();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind), "{fifo}");
    }
}
