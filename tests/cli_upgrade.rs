//! `save-upgrade` upgrading batches as scripts use it: in place with backups, into another
//! folder, checks, reports, shards, failures left untouched, and kills at any moment.

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{save_upgrade, stderr};
use std::time::Duration;

use savechain::Options;
use savechain::Save;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

/// A folder with v1 and v5 saves, a save from the future and a corrupt one.
fn batch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("old")).unwrap();
    fs::copy(
        format!("{FIXTURES}/v1/small.json"),
        dir.path().join("old/small.json"),
    )
    .unwrap();
    fs::copy(
        format!("{FIXTURES}/v5/frontier.json"),
        dir.path().join("frontier.json"),
    )
    .unwrap();
    fs::copy(
        format!("{FIXTURES}/v9/small.json"),
        dir.path().join("current.json"),
    )
    .unwrap();
    fs::write(
        dir.path().join("future.json"),
        r#"{"meta": {"game": "Starlane Traders", "version": 40, "writer": "9.0.0"}, "data": {}}"#,
    )
    .unwrap();
    fs::write(
        dir.path().join("corrupt.json"),
        r#"{"meta": {"version": 1}, "data": {"#,
    )
    .unwrap();
    dir
}

fn upgraded_text(fixture: &str) -> Vec<u8> {
    let save = Save::load(format!("{FIXTURES}/{fixture}")).unwrap();
    let chain = common::starlane::chain().unwrap();
    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    upgraded.save.to_vec().unwrap()
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    fs::read(dir.join(name)).unwrap()
}

#[test]
fn in_place_keeps_backups_and_leaves_failures_untouched() {
    let dir = batch();
    let future = read(dir.path(), "future.json");
    let corrupt = read(dir.path(), "corrupt.json");
    let current = read(dir.path(), "current.json");
    let elsewhere = tempfile::tempdir().unwrap();
    let report_path = elsewhere.path().join("report.json");
    let out = save_upgrade(
        &["--report", report_path.to_str().unwrap(), "."],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "future.json: the save is version 40, written by 9.0.0, newer than this program knows"
        ),
        "{err}"
    );
    assert!(err.contains("corrupt.json:1:"), "{err}");
    assert!(
        err.contains("upgraded 2, already current 1, failed 2"),
        "{err}"
    );

    assert_eq!(
        read(dir.path(), "old/small.json"),
        upgraded_text("v1/small.json")
    );
    assert_eq!(
        read(dir.path(), "old/small.json.v1.bak"),
        fs::read(format!("{FIXTURES}/v1/small.json")).unwrap()
    );
    assert_eq!(
        read(dir.path(), "frontier.json"),
        upgraded_text("v5/frontier.json")
    );
    assert!(dir.path().join("frontier.json.v5.bak").exists());
    assert_eq!(read(dir.path(), "future.json"), future);
    assert_eq!(read(dir.path(), "corrupt.json"), corrupt);
    assert_eq!(read(dir.path(), "current.json"), current);
    assert!(!dir.path().join("current.json.v9.bak").exists());

    let report = savechain::text::from_slice(&fs::read(&report_path).unwrap()).unwrap();
    let entries = report.as_array().unwrap();
    assert_eq!(entries.len(), 5);
    let status = |name: &str| {
        entries
            .iter()
            .find(|e| {
                e.get("path")
                    .and_then(|p| p.as_str())
                    .unwrap()
                    .ends_with(name)
            })
            .map(|e| e.get("status").unwrap().as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(status("small.json"), "upgraded");
    assert_eq!(status("current.json"), "current");
    assert_eq!(status("future.json"), "failed");

    // Run again: nothing left to do but the two failures.
    let again = save_upgrade(&["--no-backup", "."], dir.path());
    assert!(
        stderr(&again).contains("upgraded 0, already current 3, failed 2"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn out_dir_mirrors_the_tree_and_leaves_the_sources_alone() {
    let dir = batch();
    let before: Vec<Vec<u8>> = ["old/small.json", "frontier.json"]
        .iter()
        .map(|n| read(dir.path(), n))
        .collect();
    let out = save_upgrade(
        &["--out-dir", "new", "old", "frontier.json", "current.json"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(read(dir.path(), "old/small.json"), before[0]);
    assert_eq!(read(dir.path(), "frontier.json"), before[1]);
    assert_eq!(
        read(dir.path(), "new/small.json"),
        upgraded_text("v1/small.json")
    );
    assert_eq!(
        read(dir.path(), "new/frontier.json"),
        upgraded_text("v5/frontier.json")
    );
    assert_eq!(
        read(dir.path(), "new/current.json"),
        read(dir.path(), "current.json")
    );
    assert!(!dir.path().join("old/small.json.v1.bak").exists());
}

#[test]
fn check_dry_run_and_diff_write_nothing() {
    let dir = batch();
    let out = save_upgrade(&["--check", "old", "current.json"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "old/small.json\n",
        "{}",
        stderr(&out)
    );
    let out = save_upgrade(&["--check", "current.json"], dir.path());
    assert_eq!(out.status.code(), Some(0));

    let out = save_upgrade(&["--dry-run", "--to", "3", "old"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        printed.contains("version 1 to 3") && printed.contains("2 -> 3  rust"),
        "{printed}"
    );
    assert_eq!(
        read(dir.path(), "old/small.json"),
        fs::read(format!("{FIXTURES}/v1/small.json")).unwrap()
    );

    let out = save_upgrade(
        &["--diff", "--strict", "--out-dir", "new", "old"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        printed.contains("    - player.tutorial_done") && printed.contains("    + ship.shield"),
        "{printed}"
    );
}

#[test]
fn to_stops_at_a_version() {
    let dir = batch();
    let out = save_upgrade(&["--to", "4", "--no-backup", "old"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let save = Save::from_slice(&read(dir.path(), "old/small.json")).unwrap();
    assert_eq!(save.meta.version, 4);
    assert_eq!(
        save.data,
        Save::load(format!("{FIXTURES}/v4/small.json"))
            .unwrap()
            .data
    );
}

#[test]
fn shards_split_a_batch_and_lists_come_from_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..10).map(|i| format!("s{i}.json")).collect();
    for name in &names {
        fs::copy(format!("{FIXTURES}/v1/small.json"), dir.path().join(name)).unwrap();
    }
    let mut seen = Vec::new();
    for shard in ["1/3", "2/3", "3/3"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
            .args([
                "--files-from",
                "-",
                "--shard",
                shard,
                "--report",
                "-",
                "--check",
            ])
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(names.join("\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let report = savechain::text::from_slice(&out.stdout).unwrap();
        for entry in report.as_array().unwrap() {
            seen.push(entry.get("path").unwrap().as_str().unwrap().to_string());
        }
    }
    seen.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(seen, expected, "each save in exactly one shard");
    let out = save_upgrade(&["--shard", "4/3", "."], dir.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn other_games_bring_their_own_lua_steps() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("steps")).unwrap();
    fs::write(
        dir.path().join("steps/0001-add-gold.lua"),
        "return function(data) data.gold = 10 end",
    )
    .unwrap();
    fs::write(
        dir.path().join("a.json"),
        r#"{"meta": {"version": 1}, "data": {}}"#,
    )
    .unwrap();
    let out = save_upgrade(&["--upgrades", "steps", "a.json"], dir.path());
    assert_eq!(out.status.code(), Some(2), "--upgrades needs --writer");
    assert!(stderr(&out).contains("--writer"), "{}", stderr(&out));
    let out = save_upgrade(
        &[
            "chain",
            "--json",
            "--upgrades",
            "steps",
            "--writer",
            "2.3.0",
        ],
        dir.path(),
    );
    let chain = savechain::text::from_slice(&out.stdout).unwrap();
    assert_eq!(chain.get("latest").and_then(|v| v.as_u64()), Some(2));
    assert_eq!(chain.get("writer").and_then(|v| v.as_str()), Some("2.3.0"));
    let out = save_upgrade(
        &[
            "--upgrades",
            "steps",
            "--writer",
            "2.3.0",
            "--no-backup",
            "a.json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let save = Save::from_slice(&read(dir.path(), "a.json")).unwrap();
    assert_eq!(save.data.to_string(), r#"{"gold":10}"#);
    // The game's version is the writer; savechain's own never shows.
    assert_eq!(save.meta.writer.unwrap().to_string(), "2.3.0");
    assert_eq!(
        save.meta.extra.get("history").unwrap().to_string(),
        r#"[{"from":1,"to":2,"writer":"2.3.0"}]"#
    );
    let out = save_upgrade(
        &[
            "inspect",
            "--json",
            "--upgrades",
            "steps",
            "--writer",
            "2.3.0",
            "a.json",
        ],
        dir.path(),
    );
    let facts = savechain::text::from_slice(&out.stdout).unwrap();
    assert_eq!(facts.get("version").and_then(|v| v.as_u64()), Some(2));
    assert_eq!(facts.get("writer").and_then(|v| v.as_str()), Some("2.3.0"));
}

/// A batch killed at random moments: every save is its original or its upgrade, and every
/// backup is the original.
#[test]
fn a_killed_batch_leaves_each_save_whole() {
    let originals: Vec<(PathBuf, Vec<u8>, Vec<u8>)> =
        ["v1/small.json", "v1/edge.json", "v5/frontier.json"]
            .iter()
            .map(|f| {
                (
                    PathBuf::from(f),
                    fs::read(format!("{FIXTURES}/{f}")).unwrap(),
                    upgraded_text(f),
                )
            })
            .collect();
    let batch = |dir: &Path| {
        let mut files = Vec::new();
        for i in 0..300 {
            let (_, original, upgraded) = &originals[i % originals.len()];
            let name = format!("s{i:03}.json");
            fs::write(dir.join(&name), original).unwrap();
            files.push((name, original.clone(), upgraded.clone()));
        }
        files
    };
    // How long a whole batch takes here, so that kills land inside one.
    let timing = tempfile::tempdir().unwrap();
    batch(timing.path());
    let start = std::time::Instant::now();
    let out = save_upgrade(&["--jobs", "2", "."], timing.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let whole = start.elapsed().as_millis() as u64;

    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut partly_done = 0;
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let files = batch(dir.path());
        let delay = Duration::from_millis(xorshift(&mut seed) % whole.max(1));
        let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
            .args(["--jobs", "2", "."])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL: no chance to clean up
        let _ = child.wait();
        let mut done = 0;
        for (name, original, upgraded) in &files {
            let now = read(dir.path(), name);
            assert!(
                now == *original || now == *upgraded,
                "round {round}: {name} is neither"
            );
            done += usize::from(now == *upgraded);
            let backup_name = format!(
                "{name}.v{}.bak",
                Save::from_slice(original).unwrap().meta.version
            );
            if let Ok(backup) = fs::read(dir.path().join(&backup_name)) {
                assert_eq!(&backup, original, "round {round}: {backup_name}");
            } else {
                assert!(
                    now == *original,
                    "round {round}: {name} upgraded without a backup"
                );
            }
        }
        if done > 0 && done < files.len() {
            partly_done += 1;
        }
        // What the killed run left is removed by the next run over the folder once it is a
        // few seconds old (made so here), and the rerun finishes the batch.
        let temporaries = |dir: &Path| -> Vec<PathBuf> {
            fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.to_string_lossy().contains(".savechain-"))
                .collect()
        };
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        for temporary in temporaries(dir.path()) {
            let file = fs::File::options().write(true).open(&temporary).unwrap();
            file.set_modified(old).unwrap();
        }
        let out = save_upgrade(&["--jobs", "2", "."], dir.path());
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}",
            stderr(&out)
        );
        assert_eq!(
            temporaries(dir.path()),
            Vec::<PathBuf>::new(),
            "round {round}"
        );
        for (name, original, upgraded) in &files {
            assert_eq!(&read(dir.path(), name), upgraded, "round {round}: {name}");
            let version = Save::from_slice(original).unwrap().meta.version;
            let backup = read(dir.path(), &format!("{name}.v{version}.bak"));
            assert_eq!(&backup, original, "round {round}: backup of {name}");
        }
    }
    // The kills must land mid-batch some of the time, or the test proves nothing.
    assert!(partly_done > 0, "no kill landed in the middle of a batch");
}

/// Batches killed many times at random moments, resumed over the same folders: in place,
/// every save is its original or its upgrade, and every save replaced has a byte-identical
/// backup (a batch writes its saves in groups, each save replaced only after its backup);
/// with `--out-dir`, every output is absent or whole. After a last run, all are upgraded and
/// no temporary file is left.
#[test]
fn batches_killed_again_and_again_never_replace_a_save_before_its_backup() {
    let fixtures = [
        "v1/small.json",
        "v1/edge.json",
        "v5/frontier.json",
        "v3/small.json",
    ];
    let kinds: Vec<(Vec<u8>, Vec<u8>, u64)> = fixtures
        .iter()
        .map(|f| {
            let original = fs::read(format!("{FIXTURES}/{f}")).unwrap();
            let version = Save::from_slice(&original).unwrap().meta.version;
            (original, upgraded_text(f), version)
        })
        .collect();
    let saves = 240;
    let fill = |dir: &Path| {
        fs::create_dir_all(dir.join("saves")).unwrap();
        for i in 0..saves {
            let name = format!("saves/s{i:03}.json");
            fs::write(dir.join(name), &kinds[i % kinds.len()].0).unwrap();
        }
    };
    let args = |out_dir: bool| {
        let mut args = vec!["--jobs", "2", "saves"];
        if out_dir {
            args.extend(["--out-dir", "out"]);
        }
        args
    };
    // How long a whole batch takes here, so that kills land inside one.
    let timing = tempfile::tempdir().unwrap();
    fill(timing.path());
    let start = std::time::Instant::now();
    let out = save_upgrade(&args(false), timing.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let whole = start.elapsed().as_millis() as u64;

    // Whether each save is upgraded; panics on a save (or output) that is neither whole
    // original nor whole upgrade, or replaced without its backup.
    let check = |dir: &Path, out_dir: bool, when: &str| -> Vec<bool> {
        (0..saves)
            .map(|i| {
                let (original, upgraded, version) = &kinds[i % kinds.len()];
                let name = format!("s{i:03}.json");
                let source = fs::read(dir.join("saves").join(&name)).unwrap();
                if out_dir {
                    assert_eq!(&source, original, "{when}: source {name} touched");
                    return match fs::read(dir.join("out").join(&name)) {
                        Ok(output) => {
                            assert_eq!(&output, upgraded, "{when}: output {name} not whole");
                            true
                        }
                        Err(e) => {
                            assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{when}");
                            false
                        }
                    };
                }
                assert!(
                    source == *original || source == *upgraded,
                    "{when}: {name} is neither its original nor its upgrade"
                );
                let backup = dir.join("saves").join(format!("{name}.v{version}.bak"));
                match fs::read(&backup) {
                    Ok(backup) => assert_eq!(&backup, original, "{when}: backup of {name}"),
                    Err(_) => assert!(
                        source == *original,
                        "{when}: {name} replaced without its backup"
                    ),
                }
                source == *upgraded
            })
            .collect()
    };
    let temporaries = |dir: &Path| -> Vec<PathBuf> {
        walkdir::WalkDir::new(dir)
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .filter(|p| p.to_string_lossy().contains(".savechain-"))
            .collect()
    };

    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut mid_batch = 0;
    let mut kills = 0;
    for out_dir in [false, false, false, false, true, true] {
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path());
        // Each run resumes where the killed one stopped, until one finishes or six kills.
        let mut done = 0;
        for attempt in 0..6 {
            // A moment within the run, which shortens as the saves get done.
            let left = whole * (saves - done) as u64 / saves as u64;
            let delay = Duration::from_millis(xorshift(&mut seed) % (left + 10));
            let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
                .args(args(out_dir))
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(delay);
            let finished = child.try_wait().unwrap().is_some();
            let _ = child.kill(); // SIGKILL: no chance to clean up
            let _ = child.wait();
            let when = format!("out_dir {out_dir}, kill {attempt} after {delay:?}");
            let now = check(dir.path(), out_dir, &when)
                .iter()
                .filter(|u| **u)
                .count();
            if finished {
                break;
            }
            kills += 1;
            mid_batch += usize::from(done < now && now < saves);
            done = now;
        }
        // What the killed runs left is removed by the next run once it is a few seconds
        // old (made so here), and that run finishes the batch.
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        for temporary in temporaries(dir.path()) {
            let file = fs::File::options().write(true).open(&temporary).unwrap();
            file.set_modified(old).unwrap();
        }
        let out = save_upgrade(&args(out_dir), dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(check(dir.path(), out_dir, "rerun").iter().all(|u| *u));
        assert_eq!(temporaries(dir.path()), Vec::<PathBuf>::new());
    }
    // Kills must land while a batch is writing, or the test proves nothing.
    assert!(
        mid_batch >= 3,
        "only {mid_batch} of {kills} kills landed mid-batch"
    );
}

#[test]
fn cache_build_verify_clear_and_inspect_say_where_a_save_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        format!("{FIXTURES}/v1/small.json"),
        dir.path().join("a.json"),
    )
    .unwrap();
    let files = || {
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let facts = |args: &[&str]| {
        let out = save_upgrade(args, dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        savechain::text::from_slice(&out.stdout).unwrap()
    };
    // Looking writes nothing: neither verify nor inspect makes a cache.
    let out = save_upgrade(&["cache", "verify", "."], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a.json: there is no cache"));
    let inspect = facts(&["inspect", "--json", "a.json"]);
    assert_eq!(
        inspect.get("source_reason").and_then(|s| s.as_str()),
        Some("there is no cache")
    );
    assert_eq!(files(), ["a.json"]);

    let out = save_upgrade(&["cache", "build", "."], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(dir.path().join("a.json.cache").exists());
    let out = save_upgrade(&["cache", "verify", "."], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let inspect = facts(&["inspect", "--json", "a.json"]);
    assert_eq!(
        inspect.get("source").and_then(|s| s.as_str()),
        Some("cache")
    );
    let inspect = facts(&["inspect", "--json", "--no-cache", "a.json"]);
    assert_eq!(inspect.get("source").and_then(|s| s.as_str()), Some("json"));

    // A hand edit: the cache is not trusted, inspect says why and leaves it as it is.
    let text = fs::read_to_string(dir.path().join("a.json"))
        .unwrap()
        .replace("Kestrel", "Osprey");
    fs::write(dir.path().join("a.json"), text).unwrap();
    let cache_before = read(dir.path(), "a.json.cache");
    for _ in 0..2 {
        let inspect = facts(&["inspect", "--json", "a.json"]);
        assert_eq!(
            inspect.get("source_reason").and_then(|s| s.as_str()),
            Some("the save changed since the cache was made")
        );
    }
    assert_eq!(read(dir.path(), "a.json.cache"), cache_before);
    let out = save_upgrade(&["cache", "clear", "."], dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert!(!dir.path().join("a.json.cache").exists());
}

/// The next number of a xorshift generator: kill moments that vary but repeat run to run.
fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}
