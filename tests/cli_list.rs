//! `save-upgrade list`: the table and the JSON lines of a folder of plain, zstd and gzip
//! saves, each save's status against the chain, damaged saves listed, exit statuses, a
//! closed pipe, and the chain options.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{save_upgrade, stderr};
use savechain::compress::{self, Codec, Compression};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `text` stored as `codec` in `dir/name` (the name plays no part in reading it).
fn put(dir: &Path, name: &str, text: &[u8], codec: Codec) {
    fs::write(
        dir.join(name),
        compress::compress(text, Compression::new(codec)),
    )
    .unwrap();
}

fn fixture(path: &str) -> Vec<u8> {
    fs::read(format!("{ROOT}/{path}")).unwrap()
}

/// A folder of saves of every kind `list` tells apart.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    put(
        d,
        "a current.json",
        &fixture("expected/v9/small.json"),
        Codec::Zstd,
    );
    put(
        d,
        "b-old.json",
        &fixture("fixtures/v1/small.json"),
        Codec::Gzip,
    );
    put(
        d,
        "c-new.json",
        br#"{"meta": {"version": 99, "game": "Starlane Traders"}, "data": {}}"#,
        Codec::Plain,
    );
    put(
        d,
        "d-other.json",
        br#"{"meta": {"version": 3, "game": "Dust Rangers"}, "data": {}}"#,
        Codec::Plain,
    );
    put(
        d,
        "e-torn.json",
        b"{\"meta\": {\"version\": 3, \"game\"",
        Codec::Zstd,
    );
    fs::write(d.join("settings.json"), r#"{"volume": 3}"#).unwrap();
    dir
}

#[test]
fn the_table_lists_every_save_with_its_status() {
    let dir = folder();
    let out = save_upgrade(&["list", "."], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "PATH",
            "GAME",
            "VERSION",
            "WRITER",
            "MODS",
            "MODIFIED",
            "COMPRESSION",
            "STATUS"
        ]
    );
    // The path quoted to paste into a shell, the columns aligned.
    assert!(lines[1].starts_with("'./a current.json'"), "{}", lines[1]);
    let status_at = lines[0].find("STATUS").unwrap();
    assert_eq!(&lines[1][status_at..], "current");
    assert!(lines[1].contains(" zstd "), "{}", lines[1]);
    assert!(lines[1].contains("Starlane Traders"));
    assert_eq!(&lines[2][status_at..], "needs upgrade to 9");
    assert!(lines[2].contains(" gzip "), "{}", lines[2]);
    assert!(
        lines[3][status_at..].starts_with("too new: the save is version 99"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4][status_at..].starts_with("cannot upgrade: at meta.game:"),
        "{}",
        lines[4]
    );
    assert!(
        lines[5][status_at..].starts_with("damaged: 1:31: at meta: expected"),
        "{}",
        lines[5]
    );
    assert!(lines[5].starts_with("./e-torn.json  "), "{}", lines[5]);
    // The time, RFC 3339.
    let modified = lines[1][lines[0].find("MODIFIED").unwrap()..]
        .split_whitespace()
        .next()
        .unwrap();
    assert!(humantime::parse_rfc3339(modified).is_ok(), "{modified}");
    assert!(
        !text.contains("settings"),
        "a file that is not a save is left out"
    );
    assert_eq!(
        stderr(&out).trim().lines().last().unwrap(),
        "listed 5 saves: 1 current, 1 to upgrade, 1 too new, 1 refused, 1 damaged"
    );
}

#[test]
fn json_lines_carry_every_field() {
    let dir = folder();
    let out = save_upgrade(&["list", "--json", "--quiet", "."], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "");
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    let current = &lines[0];
    assert_eq!(current["path"], "./a current.json");
    assert_eq!(current["status"], "current");
    assert_eq!(current["game"], "Starlane Traders");
    assert_eq!(current["version"], 9);
    assert_eq!(current["compression"], "zstd");
    assert_eq!(current["mods"], serde_json::json!({}));
    assert!(current["writer"].is_string());
    assert!(current["modified"].is_string());
    assert!(current["size"].as_u64().unwrap() > 0);
    assert!(current["bytes_read"].as_u64().unwrap() > 0);
    assert!(current["whole"].is_boolean());
    let old = &lines[1];
    assert_eq!(
        (&old["status"], &old["to"], &old["version"]),
        (&"outdated".into(), &9.into(), &1.into())
    );
    assert_eq!(old["mods_to"], serde_json::json!({}));
    assert_eq!(lines[2]["status"], "too-new");
    assert_eq!(lines[3]["status"], "refused");
    let torn = &lines[4];
    assert_eq!(torn["status"], "damaged");
    assert!(torn["version"].is_null() && torn["compression"].is_null());
    assert!(
        torn["error"]
            .as_str()
            .unwrap()
            .contains("e-torn.json:1:31:"),
        "{torn}"
    );
}

#[test]
fn all_current_exits_0_and_a_named_compressed_file_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "slot.json.zst",
        &fixture("expected/v9/edge.json"),
        Codec::Zstd,
    );
    put(
        dir.path(),
        "slot.json.gz",
        &fixture("expected/v9/small.json"),
        Codec::Gzip,
    );
    let out = save_upgrade(&["list", "slot.json.zst", "slot.json.gz"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("slot.json.gz") && text.contains("slot.json.zst"),
        "{text}"
    );
}

#[test]
fn usage_errors_and_unsearchable_paths_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = save_upgrade(&["list", "missing/"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing/: no such file or folder"));
    assert_eq!(save_upgrade(&["list"], dir.path()).status.code(), Some(2));
    // A folder with no saves in it.
    fs::create_dir(dir.path().join("empty")).unwrap();
    let out = save_upgrade(&["list", "empty"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // A file named that is not a save is damaged, not left out.
    fs::write(dir.path().join("settings.json"), r#"{"volume": 3}"#).unwrap();
    let out = save_upgrade(&["list", "settings.json"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("damaged: 1:1: not a save: no \"meta\" member"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_closed_pipe_ends_the_listing_normally() {
    let dir = tempfile::tempdir().unwrap();
    let save = fixture("fixtures/v1/small.json");
    for i in 0..1500 {
        put(dir.path(), &format!("s{i:04}.json"), &save, Codec::Plain);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["list", "--json", "."])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("s0000.json"));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_chain_of_lua_steps_and_mods_decides_the_status() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "charted.json",
        &fixture("mods/cartographer/fixtures/v1/charted.json"),
        Codec::Zstd,
    );
    let upgrades = format!("{ROOT}/upgrades");
    let mods = format!("{ROOT}/mods");
    let out = save_upgrade(
        &[
            "list",
            "--upgrades",
            &upgrades,
            "--writer",
            "3.0.0",
            "--mods",
            &mods,
            "--json",
            ".",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(line["mods"], serde_json::json!({"cartographer": 1}));
    assert_eq!(line["status"], "outdated", "{line}");
    assert_eq!(line["mods_to"]["cartographer"], 3);
    let table = save_upgrade(&["list", "--mods", &mods, "."], dir.path());
    let text = stdout(&table);
    assert!(text.contains("cartographer@1"), "{text}");
    assert!(text.contains(", mod cartographer to 3"), "{text}");
}

#[test]
fn help_names_the_columns_and_the_json_fields() {
    let out = save_upgrade(&["list", "--help"], Path::new(ROOT));
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for word in [
        "MODIFIED",
        "COMPRESSION",
        "bytes_read",
        "mods_to",
        "JSON Lines",
        "Exit status",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
}

#[test]
fn files_that_are_not_saves_are_left_out_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "a.json",
        &fixture("fixtures/v9/small.json"),
        Codec::Zstd,
    );
    put(
        dir.path(),
        "settings.json",
        b"{\"volume\": 3}",
        Codec::Plain,
    );
    let out = save_upgrade(&["list", "."], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("settings"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("skipped ./settings.json: not a save"),
        "{}",
        stderr(&out)
    );
    let quiet = save_upgrade(&["list", "-q", "."], dir.path());
    assert_eq!(stderr(&quiet), "");
}
