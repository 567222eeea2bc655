//! What `save-upgrade` says about what it did: report entries of failed saves, the `fmt`
//! summary, `inspect`'s counts.

mod common;

use std::fs;

use common::{save_upgrade, stderr};
use savechain::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

/// The report entry of the save whose path ends with `name`.
fn entry<'r>(report: &'r Value, name: &str) -> &'r Value {
    report
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e.get("path")
                .and_then(Value::as_str)
                .unwrap()
                .ends_with(name)
        })
        .unwrap_or_else(|| panic!("no entry for {name}"))
}

fn versions(entry: &Value) -> (Option<u64>, Option<u64>) {
    let version = |key| entry.get(key).and_then(Value::as_u64);
    (version("from"), version("to"))
}

#[test]
fn report_entries_of_failed_saves_have_the_versions_that_were_read() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| fs::write(dir.path().join(name), text).unwrap();
    // A step fails on it: from 8, on its way to 9.
    write(
        "failing-step.json",
        r#"{"meta": {"game": "Starlane Traders", "version": 8}, "data": {"ship": {"cargo": 5}}}"#,
    );
    // Too new for the chain: from 40, going nowhere.
    write(
        "future.json",
        r#"{"meta": {"game": "Starlane Traders", "version": 40}, "data": {}}"#,
    );
    // No version can be read.
    write("corrupt.json", r#"{"meta": {"version": 1}, "data": {"#);
    for name in ["good.json", "read-only.json"] {
        fs::copy(format!("{FIXTURES}/v5/small.json"), dir.path().join(name)).unwrap();
    }
    // Upgradable, but it may not be written.
    let read_only = dir.path().join("read-only.json");
    let mut permissions = fs::metadata(&read_only).unwrap().permissions();
    permissions.set_readonly(true);
    fs::set_permissions(&read_only, permissions).unwrap();
    let out = save_upgrade(&["--report", "report.json", "."], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let report =
        savechain::text::from_slice(&fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    let failing = entry(&report, "failing-step.json");
    assert_eq!(
        failing.get("status").and_then(Value::as_str),
        Some("failed")
    );
    assert_eq!(versions(failing), (Some(8), Some(9)));
    let read_only = entry(&report, "read-only.json");
    assert_eq!(
        read_only.get("status").and_then(Value::as_str),
        Some("failed")
    );
    assert_eq!(versions(read_only), (Some(5), Some(9)));
    // The chain has no way from 40: "to" stays unknown.
    assert_eq!(versions(entry(&report, "future.json")), (Some(40), None));
    assert_eq!(versions(entry(&report, "corrupt.json")), (None, None));
    assert_eq!(versions(entry(&report, "good.json")), (Some(5), Some(9)));
}

/// Writes the canonical text of the fixture `relative` to `to` (the fixtures keep the order
/// of format revision 2, `data` first).
fn canonical_copy(relative: &str, to: &std::path::Path) {
    let text = fs::read(format!("{FIXTURES}/{relative}")).unwrap();
    let save = savechain::Save::from_slice(&text).unwrap();
    fs::write(to, save.to_vec().unwrap()).unwrap();
}

#[test]
fn fmt_counts_files_that_are_not_saves() {
    let dir = tempfile::tempdir().unwrap();
    canonical_copy("v1/small.json", &dir.path().join("a.json"));
    fs::write(dir.path().join("settings.json"), r#"{"volume": 3}"#).unwrap();
    for args in [&["fmt", "--check", "."][..], &["fmt", "."]] {
        let out = save_upgrade(args, dir.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.contains("skipped ./settings.json: not a save"), "{err}");
        assert!(
            err.ends_with("already canonical 1, failed 0, not saves 1\n"),
            "{args:?}: {err}"
        );
    }
    // As for upgrades, a folder whose JSON files are none of them saves is an error.
    fs::remove_file(dir.path().join("a.json")).unwrap();
    let out = save_upgrade(&["fmt", "--check", "."], dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: no saves found: every file was JSON that is not a save"),
        "{err}"
    );
    assert!(
        err.ends_with("would reformat 0, already canonical 0, failed 1, not saves 1\n"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("settings.json")).unwrap(),
        r#"{"volume": 3}"#
    );
}

#[test]
fn inspect_counts_in_the_singular_and_the_plural() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("one.json"),
        r#"{"meta": {"game": "Starlane Traders", "version": 9}, "data": {"a": [1, ["d", 2.5], "s", ["b", "x"], null]}}"#,
    )
    .unwrap();
    let out = save_upgrade(&["inspect", "one.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "  7 values: 1 object, 1 array, 0 tables, 1 integer, 1 double, 1 string, 1 byte string, 1 other\n"
        ),
        "{text}"
    );
}

#[test]
fn paths_that_cannot_be_read_are_failed_entries_of_one_shard_s_report() {
    let dir = tempfile::tempdir().unwrap();
    let saves = dir.path().join("saves");
    fs::create_dir(&saves).unwrap();
    for name in ["a.json", "b.json", "c.json"] {
        fs::copy(format!("{FIXTURES}/v5/small.json"), saves.join(name)).unwrap();
    }
    // In a list: a save removed since the list was made. (Named on the command line, a
    // missing path is a usage error before anything is touched.)
    fs::write(dir.path().join("list.txt"), "saves\nmissing.json\n").unwrap();
    let mut failed_entries = 0;
    let mut saves_reported = 0;
    for shard in ["1/2", "2/2"] {
        let report = format!("report-{}.json", &shard[..1]);
        let args = [
            "--check",
            "--shard",
            shard,
            "--report",
            &report,
            "--files-from",
            "list.txt",
        ];
        let out = save_upgrade(&args, dir.path());
        let report = fs::read(dir.path().join(&report)).unwrap();
        let report = savechain::text::from_slice(&report).unwrap();
        let entries = report.as_array().unwrap();
        let missing = entries
            .iter()
            .filter(|e| e.get("path").and_then(Value::as_str) == Some("missing.json"));
        for entry in missing {
            assert_eq!(entry.get("status").and_then(Value::as_str), Some("failed"));
            assert!(entry
                .get("error")
                .and_then(Value::as_str)
                .unwrap()
                .contains("cannot read it"));
            assert_eq!(versions(entry), (None, None));
            failed_entries += 1;
            assert_eq!(shard, "1/2", "the first shard reports it");
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        }
        if shard == "2/2" {
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(!stderr(&out).contains("missing.json"), "{}", stderr(&out));
        }
        saves_reported += entries.len();
    }
    assert_eq!(failed_entries, 1);
    assert_eq!(saves_reported, 4);
}

#[test]
fn a_subcommand_after_options_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("x.json");
    fs::copy(format!("{FIXTURES}/v5/small.json"), &save).unwrap();
    let before = fs::read(&save).unwrap();
    let out = save_upgrade(&["--to", "7", "inspect", "x.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`inspect` is a subcommand"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&save).unwrap(), before);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    // A file of that name is a path like any other.
    fs::copy(&save, dir.path().join("inspect")).unwrap();
    let out = save_upgrade(&["--check", "inspect"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

/// A hand edit that broke a save: the error names file, line and column, shows the line,
/// and its caret points at the column under the line's own tabs.
#[test]
fn a_broken_hand_edit_is_shown_with_a_caret_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\n\t\"meta\": {\"game\": \"Starlane Traders\", \"version\": 5},\n\t\"data\": {\"name\": \"Bob,\n\t\t\"hp\": 3}\n}\n";
    fs::write(dir.path().join("edited.json"), text).unwrap();
    let out = save_upgrade(&["--check", "edited.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let expected = "error: edited.json:3:24: at data.name: this string runs to the end of its \
                    line: is its closing '\"' missing? (a line break inside a string is written \
                    \\n)\n3 | \t\"data\": {\"name\": \"Bob,\n  | \t                      ^\n";
    assert!(err.starts_with(expected), "{err}");
}

/// Finding 7 of issue 28: JSON files that are not saves (their `meta` holds no integer
/// `version`: a sprite sheet's, a playlist; no `meta` at all, with arrays shaped like tags
/// or a key twice) are skipped by every command that searches a folder, each named with
/// why, and never written; named on the command line, each is an error.
#[test]
fn files_that_are_not_saves_are_skipped_by_every_search() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir(root.join("saves")).unwrap();
    canonical_copy("v1/small.json", &root.join("saves/a.json"));
    let others = [
        (
            "sprites.json",
            r#"{"frames": {}, "meta": {"app": "aseprite", "version": "1.3"}}"#,
        ),
        (
            "playlist.json",
            r#"{"meta": {"author": "me"}, "tracks": []}"#,
        ),
        (
            "settings.json",
            r#"{"colors": ["d", "red"], "keys": ["k", [1]]}"#,
        ),
        ("twice.json", r#"{"volume": 1, "volume": 2}"#),
        // A meta with an integer version is not enough: a save holds meta and data alone.
        (
            "prefs.json",
            r#"{"meta": {"version": 2, "theme": "dark"}, "volume": 3}"#,
        ),
        ("meta-only.json", r#"{"meta": {"version": 1}}"#),
    ];
    for (name, text) in others {
        fs::write(root.join("saves").join(name), text).unwrap();
    }
    let skipped = |err: &str, args: &[&str]| {
        for (name, _) in others {
            let note = format!("skipped saves/{name}: not a save");
            assert!(err.contains(&note), "{args:?}: {name}: {err}");
        }
    };
    for (args, code) in [
        (&["--check", "saves"][..], 1),
        (&["--dry-run", "saves"], 0),
        (&["--out-dir", "new", "saves"], 0),
        (&["fmt", "--check", "saves"], 0),
        (&["cache", "verify", "saves"], 1),
        (&["cache", "build", "saves"], 0),
        (&["cache", "clear", "saves"], 0),
        (&["fmt", "saves"], 0),
        (&["saves"], 0),
    ] {
        let out = save_upgrade(args, root);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        skipped(&err, args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        for (name, _) in others {
            assert!(!stdout.contains(name), "{args:?}: {stdout}");
        }
        for (name, text) in others {
            let now = fs::read_to_string(root.join("saves").join(name)).unwrap();
            assert_eq!(now, text, "{args:?}");
        }
    }
    // Only the save was written: upgraded in place with its backup, copied to new/.
    let mut names: Vec<String> = fs::read_dir(root.join("saves"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "a.json",
            "a.json.v1.bak",
            "meta-only.json",
            "playlist.json",
            "prefs.json",
            "settings.json",
            "sprites.json",
            "twice.json"
        ]
    );
    assert_eq!(
        fs::read_dir(root.join("new")).unwrap().count(),
        1,
        "only a.json"
    );
    // Named itself, a file that is not a save is an error for that file.
    for args in [
        &["--check", "saves/a.json", "saves/playlist.json"][..],
        &["fmt", "--check", "saves/a.json", "saves/sprites.json"],
        &["cache", "verify", "saves/a.json", "saves/settings.json"],
        &["--check", "saves/a.json", "saves/prefs.json"],
        &["saves/a.json", "saves/meta-only.json"],
    ] {
        let out = save_upgrade(args, root);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error: saves/"), "{args:?}: {err}");
        assert!(err.contains(": not a save"), "{args:?}: {err}");
    }
    let out = save_upgrade(&["--check", "saves/prefs.json"], root);
    assert!(
        stderr(&out).contains(
            r#"error: saves/prefs.json:1:53: at volume: not a save: it has a top-level member "volume"; a save is an object {"meta": {"version": N, ...}, "data": ...} and nothing else"#
        ),
        "{}",
        stderr(&out)
    );
}

/// Finding 16 of issue 28, in part: `fmt --check` of one file that is not a save fails
/// that file, and the summary counts it once.
#[test]
fn fmt_of_one_file_that_is_not_a_save_counts_it_once() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("settings.json"), r#"{"volume": 3}"#).unwrap();
    let out = save_upgrade(&["fmt", "--check", "settings.json"], dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: settings.json:1:1: not a save: no \"meta\" member"),
        "{err}"
    );
    assert!(
        err.ends_with("\nwould reformat 0, already canonical 0, failed 1\n"),
        "{err}"
    );
}

/// A list read with --files-from (`find`'s output) is a search: its files that are not
/// saves are skipped, as in a folder; the same file named on the command line fails.
#[test]
fn a_list_is_a_search_and_a_name_is_not() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        format!("{FIXTURES}/v9/small.json"),
        dir.path().join("a.json"),
    )
    .unwrap();
    fs::write(dir.path().join("settings.json"), r#"{"volume": 3}"#).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["--check", "--files-from", "-"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"a.json\nsettings.json\n").unwrap();
    drop(stdin);
    let listed = child.wait_with_output().unwrap();
    let err = stderr(&listed);
    assert_eq!(listed.status.code(), Some(0), "{err}");
    assert!(err.contains("skipped settings.json: not a save"), "{err}");
    let named = save_upgrade(&["--check", "a.json", "settings.json"], dir.path());
    let err = stderr(&named);
    assert_eq!(named.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: settings.json:1:1: not a save"),
        "{err}"
    );
}

/// An output folder is the tool's: an output that is a symbolic link, or lies in a folder
/// inside the output folder that is one, is never written through nor read as the output,
/// with or without `--replace-outputs`.
#[cfg(unix)]
#[test]
fn outputs_that_are_symbolic_links_are_refused_and_never_written_through() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("saves/v1")).unwrap();
    fs::create_dir_all(root.join("elsewhere")).unwrap();
    fs::copy(
        format!("{FIXTURES}/v1/small.json"),
        root.join("saves/v1/small.json"),
    )
    .unwrap();
    let precious = root.join("elsewhere/precious.txt");
    fs::write(&precious, "precious\n").unwrap();
    // The output itself a link.
    fs::create_dir_all(root.join("o4/v1")).unwrap();
    symlink(&precious, root.join("o4/v1/small.json")).unwrap();
    // A folder inside the output folder a link.
    fs::create_dir_all(root.join("o5")).unwrap();
    symlink(root.join("elsewhere"), root.join("o5/v1")).unwrap();
    for out_dir in ["o4", "o5"] {
        for replace in [true, false] {
            let mut args = vec!["--out-dir", out_dir, "saves"];
            if replace {
                args.insert(0, "--replace-outputs");
            }
            let out = save_upgrade(&args, root);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            let link = if out_dir == "o4" {
                format!("{out_dir}/v1/small.json")
            } else {
                format!("{out_dir}/v1")
            };
            let points = if out_dir == "o4" {
                precious.display().to_string()
            } else {
                root.join("elsewhere").display().to_string()
            };
            assert!(
                err.contains(&format!("{link} is a symbolic link to {points}")),
                "{args:?}: {err}"
            );
            assert_eq!(fs::read_to_string(&precious).unwrap(), "precious\n");
            let mut names: Vec<_> = fs::read_dir(root.join("elsewhere"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            assert_eq!(names, ["precious.txt"], "{args:?}");
            assert!(!root.join("o4/v1/small.json.bak").exists());
        }
    }
    // The same output with the same bytes as the upgrade writes is still not taken for the
    // output: the link is refused, not "already written".
    let upgraded = root.join("upgraded");
    let out = save_upgrade(&["--out-dir", "upgraded", "saves"], root);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    fs::create_dir_all(root.join("o6/v1")).unwrap();
    symlink(
        upgraded.join("v1/small.json"),
        root.join("o6/v1/small.json"),
    )
    .unwrap();
    let out = save_upgrade(&["--out-dir", "o6", "saves"], root);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is a symbolic link"),
        "{}",
        stderr(&out)
    );
}
