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
        printed.contains("    - data.player.tutorial_done")
            && printed.contains("    + data.ship.shield"),
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

/// Held by the tests that time or interrupt whole batches, so that they do not run at
/// once and slow each other: a kill test measures how long a batch takes, then kills the
/// next ones within that time.
fn one_batch_test_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static BATCH_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    BATCH_TESTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A batch killed at random moments: every save is its original or its upgrade, and every
/// backup is the original.
#[test]
fn a_killed_batch_leaves_each_save_whole() {
    let _alone = one_batch_test_at_a_time();
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
        let mut child = spawn(dir.path(), &["--jobs", "2", "."], Stdio::null());
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
        // What the killed run left is removed by the next run over the folder at once (the
        // killed run's locks died with it), and the rerun finishes the batch.
        let temporaries = |dir: &Path| -> Vec<PathBuf> {
            fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.to_string_lossy().contains(".savechain-"))
                .collect()
        };
        let left = temporaries(dir.path()).len();
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
        if left > 0 {
            let removed = format!("removed {left} temporary files left by killed runs");
            assert!(
                stderr(&out).contains(&removed),
                "round {round}: {}",
                stderr(&out)
            );
        }
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
    let _alone = one_batch_test_at_a_time();
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
    // How long a whole batch takes here, so that kills land inside one: the faster of two
    // runs (the first pays for cold caches), adjusted below when kills come too late.
    let mut whole = u64::MAX;
    for _ in 0..2 {
        let timing = tempfile::tempdir().unwrap();
        fill(timing.path());
        let start = std::time::Instant::now();
        let out = save_upgrade(&args(false), timing.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        whole = whole.min(start.elapsed().as_millis() as u64);
    }

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
    // Six folders at least (a third with --out-dir), more while too few kills landed
    // mid-batch (a machine busier during the timing than after it), at most 24.
    let mut folders = 0;
    while folders < 6 || (mid_batch < 3 && folders < 24) {
        let out_dir = folders % 3 == 2;
        folders += 1;
        let dir = tempfile::tempdir().unwrap();
        fill(dir.path());
        // Each run resumes where the killed one stopped, until one finishes or six kills.
        let mut done = 0;
        for attempt in 0..6 {
            // A moment within the run, which shortens as the saves get done.
            let left = whole * (saves - done) as u64 / saves as u64;
            let delay = Duration::from_millis(xorshift(&mut seed) % (left + 10));
            let mut child = spawn(dir.path(), &args(out_dir), Stdio::null());
            std::thread::sleep(delay);
            let finished = child.try_wait().unwrap().is_some();
            let _ = child.kill(); // SIGKILL: no chance to clean up
            let _ = child.wait();
            if finished && attempt == 0 {
                // The whole batch ran before the kill: aim earlier from now on.
                whole = whole * 2 / 3;
            }
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
        // What the killed runs left is removed by the next run at once, and that run
        // finishes the batch.
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

/// Waits for `child` to exit, for `limit` at most (then kills it and fails the test), and
/// gives its exit status and standard error.
fn finish_within(mut child: std::process::Child, limit: Duration) -> (Option<i32>, String) {
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (out.status.code(), stderr(&out));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("still running after {limit:?}: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls `condition` every millisecond for `limit` at most; whether it came true.
fn poll(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// The temporary files of atomic writes anywhere under `dir`.
fn temporaries_under(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.to_string_lossy().contains(".savechain-"))
        .collect()
}

/// A folder `steps/` with one Lua step, `0001-<name>.lua`, and the chain it makes with
/// writer 1.0.0 (as `--upgrades steps --writer 1.0.0` does).
fn lua_chain(dir: &Path, name: &str, source: &str) -> savechain::upgrade::Chain {
    fs::create_dir_all(dir.join("steps")).unwrap();
    fs::write(dir.join(format!("steps/0001-{name}.lua")), source).unwrap();
    let steps = savechain::upgrade::Step::lua_dir(dir.join("steps")).unwrap();
    savechain::upgrade::Chain::new("1.0.0", steps).unwrap()
}

const WITH_STEPS: [&str; 4] = ["--upgrades", "steps", "--writer", "1.0.0"];

#[test]
fn files_named_one_by_one_land_flat_and_only_the_shard_is_checked_for_collisions() {
    let dir = tempfile::tempdir().unwrap();
    // In path order a/p, b/x, c/q, d/x: shard 1/2 is a/p and c/q, which land apart; b/x
    // and d/x, of shard 2/2, would both land on out/x.json.
    let files = ["a/p.json", "b/x.json", "c/q.json", "d/x.json"];
    for file in files {
        fs::create_dir_all(dir.path().join(file).parent().unwrap()).unwrap();
        fs::copy(format!("{FIXTURES}/v1/small.json"), dir.path().join(file)).unwrap();
    }
    fs::write(dir.path().join("list.txt"), files.join("\n")).unwrap();
    let run = |shard: &str| {
        save_upgrade(
            &[
                "--files-from",
                "list.txt",
                "--shard",
                shard,
                "--out-dir",
                "out",
            ],
            dir.path(),
        )
    };
    let out = run("1/2");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut written: Vec<String> = fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, ["p.json", "q.json"], "flat, by file name");
    let out = run("2/2");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("b/x.json and d/x.json would both be written to out/x.json"),
        "{}",
        stderr(&out)
    );
    // The help says where files named one by one land.
    let help = save_upgrade(&["--help"], dir.path());
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(
        help.contains("lands directly in DIR by its") && help.contains("file name"),
        "{help}"
    );
}

/// Ctrl-C (SIGINT) and SIGTERM stop a batch cleanly: no save started after the signal, the
/// saves under way finished, the summary printed, no temporary file left, exit 130 or 143;
/// every save is its original or its whole upgrade, and every backup its original.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_and_sigterm_stop_a_batch_cleanly() {
    let _alone = one_batch_test_at_a_time();
    for (signal, status) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let dir = tempfile::tempdir().unwrap();
        // A step that counts for a while, so that the batch is under way for seconds.
        let chain = lua_chain(
            dir.path(),
            "slow",
            "return function(data) local n = 0 for i = 1, 4000000 do n = n + 1 end \
             data.counted = n end",
        );
        fs::create_dir(dir.path().join("saves")).unwrap();
        let count = 60;
        let mut saves = Vec::new();
        for i in 0..count {
            let name = format!("s{i:02}.json");
            let original = format!(r#"{{"meta": {{"version": 1}}, "data": {{"i": {i}}}}}"#);
            fs::write(dir.path().join("saves").join(&name), &original).unwrap();
            let save = Save::from_str(&original).unwrap();
            let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
            saves.push((name, original.into_bytes(), upgraded.save.to_vec().unwrap()));
        }
        let mut args = WITH_STEPS.to_vec();
        args.extend(["--jobs", "2", "saves"]);
        let child = spawn(dir.path(), &args, Stdio::piped());
        // Once the first save is upgraded (its temporaries are written), the run is under
        // way and its handler installed.
        let saves_dir = dir.path().join("saves");
        let under_way = poll(Duration::from_secs(120), || {
            !temporaries_under(&saves_dir).is_empty()
        });
        assert!(under_way, "the batch never got going");
        // SAFETY: sends a signal to the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let (code, err) = finish_within(child, Duration::from_secs(120));
        assert_eq!(code, Some(status), "{err}");
        let name = if signal == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        assert!(err.contains(&format!("stopped by {name}")), "{err}");

        let mut upgraded = 0;
        for (save, original, new) in &saves {
            let now = fs::read(saves_dir.join(save)).unwrap();
            assert!(now == *original || now == *new, "{name}: {save} is neither");
            let backup = fs::read(saves_dir.join(format!("{save}.v1.bak")));
            match backup {
                Ok(backup) => assert_eq!(&backup, original, "{name}: backup of {save}"),
                Err(_) => assert!(now == *original, "{name}: {save} has no backup"),
            }
            upgraded += usize::from(now == *new);
        }
        assert_eq!(
            temporaries_under(dir.path()),
            Vec::<PathBuf>::new(),
            "{name}"
        );
        // The summary says what was done: what is on disk.
        let not_started = count - upgraded;
        let summary =
            format!("upgraded {upgraded}, already current 0, failed 0, not started {not_started}");
        assert!(err.contains(&summary), "{name}: {summary:?} in {err}");
        assert!(
            not_started > 0,
            "{name}: the signal did not stop the batch: {err}"
        );
    }
}

/// `count` saves in `dir/saves` at version 1, `{"i": N}` each, and a step in `dir/steps`
/// that keeps the processor busy `seconds` (by `os.clock`) for each save but those whose
/// `i` is below `fast`; their names and bytes.
fn slow_batch(dir: &Path, count: usize, fast: usize, seconds: f64) -> Vec<(String, Vec<u8>)> {
    lua_chain(
        dir,
        "slow",
        &format!(
            "return function(data) if data.i >= {fast} then local t = os.clock() \
             while os.clock() - t < {seconds} do end end data.slow = true end"
        ),
    );
    fs::create_dir(dir.join("saves")).unwrap();
    (0..count)
        .map(|i| {
            let name = format!("s{i:02}.json");
            let original = format!(r#"{{"meta": {{"version": 1}}, "data": {{"i": {i}}}}}"#);
            fs::write(dir.join("saves").join(&name), &original).unwrap();
            (name, original.into_bytes())
        })
        .collect()
}

/// After a stopped run over [`slow_batch`]: each save is its original, or its upgrade with
/// its original as backup; no temporary file is left; the report lists the saves upgraded
/// as such and every other save as `not-started` or `abandoned`, as the summary counts
/// them. How many were upgraded.
fn check_stopped_run(dir: &Path, saves: &[(String, Vec<u8>)], err: &str, what: &str) -> usize {
    let mut upgraded = Vec::new();
    for (name, original) in saves {
        let now = fs::read(dir.join("saves").join(name)).unwrap();
        let backup = fs::read(dir.join("saves").join(format!("{name}.v1.bak")));
        if now == *original {
            continue;
        }
        let save = Save::from_slice(&now).unwrap();
        assert_eq!(save.meta.version, 2, "{what}: {name}");
        assert_eq!(backup.unwrap(), *original, "{what}: backup of {name}");
        upgraded.push(format!("saves/{name}"));
    }
    assert_eq!(
        temporaries_under(dir),
        Vec::<PathBuf>::new(),
        "{what}: {err}"
    );
    let report =
        fs::read(dir.join("r.json")).unwrap_or_else(|e| panic!("{what}: no report ({e}): {err}"));
    let report = savechain::text::from_slice(&report).unwrap();
    let entries = report.as_array().unwrap();
    // Every save of the run has its entry, those the stop left with a status that says so.
    assert_eq!(entries.len(), saves.len(), "{what}: {report}");
    let with = |status: &str| {
        let mut paths: Vec<String> = entries
            .iter()
            .filter(|e| e.get("status").and_then(|s| s.as_str()) == Some(status))
            .map(|e| e.get("path").and_then(|p| p.as_str()).unwrap().to_string())
            .collect();
        paths.sort();
        paths
    };
    assert_eq!(
        with("upgraded"),
        upgraded,
        "{what}: the report lists the saves upgraded"
    );
    let (not_started, abandoned) = (with("not-started").len(), with("abandoned").len());
    assert_eq!(
        upgraded.len() + not_started + abandoned,
        saves.len(),
        "{what}: {report}"
    );
    for (count, word) in [(not_started, "not started"), (abandoned, "abandoned")] {
        if count > 0 {
            let said = format!("{word} {count}");
            assert!(err.contains(&said), "{what}: {said:?} in {err}");
        }
    }
    let stopped = entries
        .iter()
        .filter(|e| e.get("status").and_then(|s| s.as_str()) != Some("upgraded"));
    for entry in stopped {
        let error = entry.get("error").and_then(|e| e.as_str()).unwrap();
        assert!(
            error.starts_with("the run was stopped by SIG"),
            "{what}: {error}"
        );
    }
    let summary = format!("upgraded {}, already current 0, failed 0", upgraded.len());
    assert!(err.contains(&summary), "{what}: {summary:?} in {err}");
    upgraded.len()
}

/// One request to stop, delivered twice, is one: coreutils `timeout` (as systemd, Slurm and
/// Kubernetes do) sends SIGTERM to the process and then to its process group, and the run
/// used to take the second as "stop at once" and die with no summary, no report and its
/// temporaries left. Each run here, under `timeout` or sent SIGTERM to itself and then to its
/// group, ends cleanly: summary, report, no temporary, exit 143.
#[cfg(target_os = "linux")]
#[test]
fn a_stop_delivered_twice_by_timeout_or_to_the_group_is_one_request() {
    let _alone = one_batch_test_at_a_time();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut stopped_mid_run = 0;
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let saves = slow_batch(dir.path(), 60, 0, 0.3);
        let mut args = WITH_STEPS.to_vec();
        args.extend(["--jobs", "2", "--report", "r.json", "saves"]);
        let by_timeout = round % 2 == 0;
        let what = if by_timeout {
            format!("round {round}, under timeout")
        } else {
            format!("round {round}, SIGTERM to the process and its group")
        };
        let child = if by_timeout {
            Command::new("timeout")
                .args(["--preserve-status", "-s", "TERM", "1.5"])
                .arg(env!("CARGO_BIN_EXE_save-upgrade"))
                .args(&args)
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        } else {
            let child = spawn_in_own_group(dir.path(), &args);
            let saves_dir = dir.path().join("saves");
            let under_way = poll(Duration::from_secs(120), || {
                !temporaries_under(&saves_dir).is_empty()
            });
            assert!(under_way, "{what}: the batch never got going");
            let pid = child.id() as i32;
            // SAFETY: signals to the child this test started, and to its own group.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
            std::thread::sleep(Duration::from_micros(xorshift(&mut seed) % 3000));
            assert_eq!(unsafe { libc::kill(-pid, libc::SIGTERM) }, 0);
            child
        };
        let (code, err) = finish_within(child, Duration::from_secs(120));
        assert_eq!(code, Some(143), "{what}: {err}");
        assert!(
            err.contains("stopped by SIGTERM: the saves under way were finished"),
            "{what}: {err}"
        );
        let upgraded = check_stopped_run(dir.path(), &saves, &err, &what);
        let not_started = format!("not started {}", saves.len() - upgraded);
        assert!(
            err.contains(&not_started),
            "{what}: {not_started:?} in {err}"
        );
        stopped_mid_run += usize::from(upgraded < saves.len());
    }
    // Each run takes seconds (60 saves, each 0.3 s of processor), so every signal lands
    // mid-run: a run that had ended would have exited 0.
    assert_eq!(stopped_mid_run, 10, "the signals did not land mid-run");
    // Plain `timeout` reports its own 124, whatever the run exits with: the README and
    // docs/SCALING.md say so, next to the 143 of `--preserve-status`.
    let dir = tempfile::tempdir().unwrap();
    let saves = slow_batch(dir.path(), 60, 0, 0.3);
    let mut args = WITH_STEPS.to_vec();
    args.extend(["--jobs", "2", "--report", "r.json", "saves"]);
    let child = Command::new("timeout")
        .args(["-s", "TERM", "1.5"])
        .arg(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(&args)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, err) = finish_within(child, Duration::from_secs(120));
    assert_eq!(code, Some(124), "{err}");
    check_stopped_run(dir.path(), &saves, &err, "plain timeout");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in ["README.md", "docs/SCALING.md"] {
        let text = fs::read_to_string(root.join(doc)).unwrap();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("124") && text.contains("--preserve-status"),
            "{doc} should say that plain `timeout` exits 124"
        );
    }
}

/// A second request to stop (Ctrl-C again, more than a second after the first; SIGINT
/// after SIGTERM) stops at once: the steps under way are interrupted and their saves
/// abandoned, left as they were with no temporary file, and the run still prints its
/// summary and writes its report of what it did, then exits 130.
#[cfg(target_os = "linux")]
#[test]
fn a_second_request_stops_at_once_with_a_summary_a_report_and_no_temporary() {
    let _alone = one_batch_test_at_a_time();
    for (first, gap) in [(libc::SIGINT, 1300), (libc::SIGTERM, 50)] {
        let what = if first == libc::SIGINT {
            "SIGINT, then SIGINT"
        } else {
            "SIGTERM, then SIGINT"
        };
        let dir = tempfile::tempdir().unwrap();
        // s00 is fast and waits in its group; each other save takes 20 s of processor.
        let saves = slow_batch(dir.path(), 6, 1, 20.0);
        let mut args = WITH_STEPS.to_vec();
        args.extend(["--jobs", "2", "--report", "r.json", "saves"]);
        let child = spawn(dir.path(), &args, Stdio::piped());
        let saves_dir = dir.path().join("saves");
        let under_way = poll(Duration::from_secs(120), || {
            !temporaries_under(&saves_dir).is_empty()
        });
        assert!(under_way, "{what}: the batch never got going");
        // Time for both workers to start their slow saves (microseconds, on a calm day).
        std::thread::sleep(Duration::from_millis(500));
        let pid = child.id() as i32;
        // SAFETY: signals to the child this test started.
        assert_eq!(unsafe { libc::kill(pid, first) }, 0);
        std::thread::sleep(Duration::from_millis(gap));
        let second = std::time::Instant::now();
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        let (code, err) = finish_within(child, Duration::from_secs(120));
        // The slow steps would run for 10 s more at least: they were interrupted.
        assert!(
            second.elapsed() < Duration::from_secs(6),
            "{what}: took {:?} after the second request: {err}",
            second.elapsed()
        );
        assert_eq!(code, Some(130), "{what}: {err}");
        assert_eq!(
            check_stopped_run(dir.path(), &saves, &err, what),
            0,
            "{what}: {err}"
        );
        assert!(
            err.contains("failed 0, abandoned 3, not started 3"),
            "{what}: {err}"
        );
        assert!(
            err.contains("stopped at once by SIGINT (a second request to stop): 3 saves under way were abandoned"),
            "{what}: {err}"
        );
        for (name, _) in &saves {
            let backup = saves_dir.join(format!("{name}.v1.bak"));
            assert!(!backup.exists(), "{what}: {}", backup.display());
        }
    }
}

/// `cache build` cannot abandon a cache under way, so there a second request (Ctrl-C
/// again, a second apart) ends the run at once, as the default would; a group's repeated
/// SIGTERM is still one request.
#[cfg(target_os = "linux")]
#[test]
fn a_second_request_ends_a_cache_build_at_once() {
    let _alone = one_batch_test_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    // s00 is fast; s01 and s02 take 20 s of processor each.
    slow_batch(dir.path(), 3, 1, 20.0);
    let mut args = vec!["cache", "build"];
    args.extend(WITH_STEPS);
    args.push("saves");
    let child = spawn_in_own_group(dir.path(), &args);
    let first_cache = dir.path().join("saves/s00.json.cache");
    assert!(
        poll(Duration::from_secs(120), || first_cache.exists()),
        "the build never got going"
    );
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id() as i32;
    // SAFETY: signals to the child this test started, and to its own group.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert_eq!(unsafe { libc::kill(-pid, libc::SIGTERM) }, 0);
    std::thread::sleep(Duration::from_millis(1300));
    let second = std::time::Instant::now();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let (code, err) = finish_within(child, Duration::from_secs(120));
    assert!(
        second.elapsed() < Duration::from_secs(6),
        "took {:?} after the second request: {err}",
        second.elapsed()
    );
    // Ended by the signal, as the default ends a process: no exit status.
    assert_eq!(code, None, "{err}");
    assert!(!dir.path().join("saves/s02.json.cache").exists());
}

/// A save replaced (by rename, as editors and games do) while `save-upgrade` upgrades it in
/// place, at several moments: the new save survives byte for byte, the run says that save
/// failed because it changed (exit 2), and nothing else is lost. A game that stores the
/// save through the library meanwhile waits for the upgrade instead, and its save wins.
#[test]
fn a_save_replaced_while_the_cli_upgrades_it_is_never_lost() {
    use std::os::unix::fs::MetadataExt;
    let _alone = one_batch_test_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    lua_chain(dir.path(), "x", "return function(data) data.x = 1 end");
    // A few MB: upgrading it holds its lock long enough to write over it meanwhile.
    let rows: Vec<String> = (0..150_000)
        .map(|i| format!(r#"{{"id": {i}, "name": "row {i}"}}"#))
        .collect();
    let big = format!(
        r#"{{"meta": {{"version": 1}}, "data": {{"rows": [{}]}}}}"#,
        rows.join(", ")
    );
    let small = r#"{"meta": {"version": 1}, "data": {}}"#;
    let newer = |round: usize| {
        let save = format!(r#"{{"meta": {{"version": 2}}, "data": {{"newer": {round}}}}}"#);
        Save::from_str(&save).unwrap().to_vec().unwrap()
    };
    let saves = dir.path().join("saves");
    let big_path = saves.join("big.json");
    let mut failures_seen = 0;
    // Moments after the upgrade took the save's lock; the last rounds store through the
    // library instead.
    let rounds = [
        (0, false),
        (20, false),
        (80, false),
        (200, false),
        (0, true),
        (50, true),
    ];
    for (round, (delay, through_library)) in rounds.into_iter().enumerate() {
        let _ = fs::remove_dir_all(&saves);
        fs::create_dir(&saves).unwrap();
        fs::write(&big_path, &big).unwrap();
        fs::write(saves.join("small.json"), small).unwrap();
        let original = fs::metadata(&big_path).unwrap().ino();
        let mut args = WITH_STEPS.to_vec();
        args.push("saves");
        let mut child = spawn(dir.path(), &args, Stdio::piped());
        // The upgrade holds the lock of the original file: between its reading and its
        // replacing.
        let held = poll(Duration::from_secs(120), || {
            let Ok(file) = fs::File::open(&big_path) else {
                return false;
            };
            let theirs = file.metadata().unwrap().ino() == original;
            theirs && matches!(file.try_lock(), Err(fs::TryLockError::WouldBlock))
        });
        if !held {
            // Finished before it was seen (a very fast machine): nothing to test this round.
            let _ = child.kill();
            let _ = child.wait();
            continue;
        }
        std::thread::sleep(Duration::from_millis(delay));
        let newest = newer(round);
        if through_library {
            Save::from_slice(&newest).unwrap().store(&big_path).unwrap();
        } else {
            let incoming = dir.path().join("incoming.json");
            fs::write(&incoming, &newest).unwrap();
            fs::rename(&incoming, &big_path).unwrap();
        }
        let (code, err) = finish_within(child, Duration::from_secs(120));
        let when = format!("round {round}, after {delay} ms");
        let now = fs::read(&big_path).unwrap();
        assert!(now == newest, "{when}: the new save is lost: {err}");
        if through_library {
            // The store waited for the upgrade's rename, and then replaced its result.
            assert_eq!(code, Some(0), "{when}: {err}");
            let backup = fs::read(saves.join("big.json.v1.bak")).unwrap();
            assert!(
                backup == big.as_bytes(),
                "{when}: the backup is not the original"
            );
        } else if code == Some(2) {
            failures_seen += 1;
            assert!(
                err.contains(
                    "big.json: the save changed while it was being upgraded (another program \
                     replaced it)"
                ) && err.contains("run again"),
                "{when}: {err}"
            );
            assert!(
                err.contains("upgraded 1, already current 0, failed 1"),
                "{when}: {err}"
            );
            if let Ok(backup) = fs::read(saves.join("big.json.v1.bak")) {
                assert!(
                    backup == big.as_bytes(),
                    "{when}: the backup is not the original"
                );
            }
        } else {
            // The replace came after the upgrade's own rename: it wins, as it should.
            assert_eq!(code, Some(0), "{when}: {err}");
        }
        let small_now = Save::load(saves.join("small.json")).unwrap();
        assert_eq!(small_now.data.to_string(), r#"{"x":1}"#, "{when}");
        let small_backup = fs::read_to_string(saves.join("small.json.v1.bak")).unwrap();
        assert_eq!(small_backup, small, "{when}");
        assert_eq!(
            temporaries_under(dir.path()),
            Vec::<PathBuf>::new(),
            "{when}"
        );
    }
    assert!(
        failures_seen > 0,
        "no replace landed while the save was upgraded"
    );
}

/// `save-upgrade` started with `args` in `dir` as the leader of a process group of its own,
/// as a scheduler starts a job, so that a test can signal the group; standard error piped.
#[cfg(target_os = "linux")]
fn spawn_in_own_group(dir: &Path, args: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Starts `save-upgrade` in `dir` with `args`, its standard output thrown away.
fn spawn<S: AsRef<std::ffi::OsStr>>(
    dir: &std::path::Path,
    args: &[S],
    stderr: Stdio,
) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Every file under `dir`, by its path below it, with its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let name = e.path().strip_prefix(dir).unwrap();
            (name.display().to_string(), fs::read(e.path()).unwrap())
        })
        .collect()
}

/// `src/` with a save to upgrade (`a.json`, v1) and a current one (`c.json`, v9).
fn sources() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("src")).unwrap();
    fs::copy(
        format!("{FIXTURES}/v1/small.json"),
        dir.path().join("src/a.json"),
    )
    .unwrap();
    fs::copy(
        format!("{FIXTURES}/v9/small.json"),
        dir.path().join("src/c.json"),
    )
    .unwrap();
    dir
}

/// Finding 2 of issue 28: a player upgrades `src/` into `new/`, plays in `new/` (a value
/// changes there), and runs the same command again: the newer save is kept, the run
/// refuses it by name and says how to go on; asked to replace it, it keeps it as a backup.
#[test]
fn an_output_changed_since_it_was_written_is_never_replaced_silently() {
    let dir = sources();
    let root = dir.path();
    let first = save_upgrade(&["--out-dir", "new", "src"], root);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let upgraded = upgraded_text("v1/small.json");
    assert_eq!(read(root, "new/a.json"), upgraded);
    // Played in new/: the game stored a newer a.json.
    let mut played = Save::load(root.join("new/a.json")).unwrap();
    played.data["player"]["name"] = savechain::Value::from("Played On");
    let played = played.to_vec().unwrap();
    assert_ne!(played, upgraded);
    fs::write(root.join("new/a.json"), &played).unwrap();
    let before = tree(root);

    let again = save_upgrade(&["--out-dir", "new", "src"], root);
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(
        err.contains("new/a.json") && err.contains("--replace-outputs"),
        "{err}"
    );
    // Said plainly: at the version the run writes, with other content; in the CLI's words,
    // naming its flag and the command to rerun, not the library's Rust items.
    assert!(
        err.contains(
            "error: src/a.json: the output new/a.json is already there and holds a save at \
             version 9, the version this upgrade writes, with other content: it has changed \
             since it was written, or the source changed; it is left as it is and nothing \
             was written"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "1 output already there holds something else: to replace it, keeping it as a \
             backup beside it (new/a.json.v9.bak), run again with --replace-outputs: \
             save-upgrade --replace-outputs --out-dir new src"
        ),
        "{err}"
    );
    assert!(!err.contains("Options::"), "{err}");
    assert!(tree(root) == before, "every file as it was: {err}");

    let replaced = save_upgrade(&["--out-dir", "new", "--replace-outputs", "src"], root);
    let err = stderr(&replaced);
    assert_eq!(replaced.status.code(), Some(0), "{err}");
    let mut expected = before.clone();
    expected.insert("new/a.json".into(), upgraded);
    // The newer save, at version 9, kept as an in-place upgrade's original would be.
    expected.insert("new/a.json.v9.bak".into(), played);
    assert!(tree(root) == expected, "{err}");
    assert!(err.contains("new/a.json.v9.bak"), "{err}");
}

/// A file at an output path that is not a save at all (a player's notes) is refused the
/// same way, and kept as `<name>.bak` when replacing is asked for.
#[test]
fn a_file_that_is_not_a_save_at_an_output_path_is_never_replaced_silently() {
    let dir = sources();
    let root = dir.path();
    fs::create_dir(root.join("new")).unwrap();
    fs::write(root.join("new/a.json"), "precious data").unwrap();
    let before = tree(root);
    for args in [
        &["--check", "--out-dir", "new", "src"][..],
        &["--dry-run", "--out-dir", "new", "src"],
        &["--out-dir", "new", "src"],
    ] {
        let out = save_upgrade(args, root);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(
                "src/a.json: the output new/a.json is already there and holds a file \
                          that is not a save"
            ),
            "{args:?}: {err}"
        );
        assert!(!err.contains("Options::"), "{args:?}: {err}");
        assert!(
            err.contains("run again with --replace-outputs: save-upgrade --replace-outputs "),
            "{args:?}: {err}"
        );
        let mut expected = before.clone();
        if args.len() == 3 {
            // The run writes the outputs it may: c.json, copied.
            expected.insert("new/c.json".into(), read(root, "src/c.json"));
        }
        assert!(tree(root) == expected, "{args:?}: {err}");
    }
    let out = save_upgrade(&["--out-dir", "new", "--replace-outputs", "src"], root);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut expected = before.clone();
    expected.insert("new/a.json".into(), upgraded_text("v1/small.json"));
    expected.insert("new/a.json.bak".into(), b"precious data".to_vec());
    expected.insert("new/c.json".into(), read(root, "src/c.json"));
    assert!(tree(root) == expected);
}

/// The README's main command, rerun as CI and users do: over outputs it wrote itself, a
/// rerun writes nothing (same files, same bytes, same times), says so, and exits 0; so do
/// `--check` and `--dry-run` into the same folder.
#[test]
fn a_rerun_over_unchanged_outputs_writes_nothing_and_says_so() {
    use std::os::unix::fs::MetadataExt;
    let dir = sources();
    let root = dir.path();
    let first = save_upgrade(&["--out-dir", "new", "src"], root);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let stamps = || {
        let mut stamps = Vec::new();
        for (name, bytes) in tree(root) {
            let m = fs::metadata(root.join(&name)).unwrap();
            stamps.push((name, bytes, m.ino(), m.mtime(), m.mtime_nsec()));
        }
        stamps
    };
    let before = stamps();
    std::thread::sleep(Duration::from_millis(20));
    let again = save_upgrade(&["--out-dir", "new", "src"], root);
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(0), "{err}");
    assert!(
        err.ends_with("upgraded 0, already current 0, already written 2, failed 0\n"),
        "{err}"
    );
    assert_eq!(stamps(), before);
    for args in [&["--check"][..], &["--dry-run"]] {
        let args = [args, &["--out-dir", "new", "src"]].concat();
        let out = save_upgrade(&args, root);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains("already written 2, failed 0"),
            "{args:?}: {err}"
        );
        assert_eq!(stamps(), before);
    }
}

/// Finding 6 of issue 28: `--check` and `--dry-run` say that a read-only save cannot be
/// upgraded in place, as the run would; into another folder it is fine.
#[cfg(unix)]
#[test]
fn check_and_dry_run_tell_a_read_only_save_as_the_run_would() {
    use std::os::unix::fs::PermissionsExt;
    let dir = sources();
    let root = dir.path();
    let a = root.join("src/a.json");
    fs::set_permissions(&a, fs::Permissions::from_mode(0o444)).unwrap();
    // Current, read-only: in place, nothing would be written to it.
    fs::set_permissions(root.join("src/c.json"), fs::Permissions::from_mode(0o444)).unwrap();
    let before = tree(root);
    for args in [&["--check", "src"][..], &["--dry-run", "src"], &["src"]] {
        let out = save_upgrade(args, root);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("src/a.json: the save is read-only") && !err.contains("c.json"),
            "{args:?}: {err}"
        );
        assert!(tree(root) == before, "{args:?}");
    }
    let out = save_upgrade(&["--check", "--out-dir", "new", "src"], root);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "src/a.json\n");
    assert!(tree(root) == before);
}

/// A path printed by `--diff`, by a helper's error and by a `--strict` refusal is the path
/// `get` takes, from the document's root (`data.mods.bounty.ledger`): pasted into `get`,
/// it finds the value it named.
#[test]
fn printed_paths_can_be_pasted_into_get() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("steps")).unwrap();
    fs::create_dir_all(root.join("saves")).unwrap();
    fs::write(
        root.join("steps/0001-ledger.lua"),
        "return function(data) data.mods.bounty.ledger = data.mods.bounty.ledger + 1 end",
    )
    .unwrap();
    fs::write(
        root.join("steps/0002-index.lua"),
        "local up = require('savechain.upgrade')\n\
         return function(data) up.index_by(data, 'ship.cargo', 'id') end",
    )
    .unwrap();
    let save = |cargo: &str| {
        format!(
            r#"{{"meta": {{"version": 1}}, "data": {{"mods": {{"bounty": {{"ledger": 1}}}}, "ship": {{"cargo": {cargo}}}}}}}"#
        )
    };
    let chain = ["--upgrades", "steps", "--writer", "1.0.0"];
    let get = |file: &str, path: &str| {
        let out = save_upgrade(&["get", file, path], root);
        assert_eq!(out.status.code(), Some(0), "get {path}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let path_in = |text: &str, before: &str, after: &str| {
        let start = text
            .find(before)
            .unwrap_or_else(|| panic!("{before}: {text}"))
            + before.len();
        let end = start + text[start..].find(after).unwrap();
        text[start..end].to_string()
    };

    // --diff: `~ PATH: before -> after`, the path as get takes it.
    fs::write(root.join("saves/a.json"), save(r#"[{"id": "x"}]"#)).unwrap();
    let out = save_upgrade(
        &[&["--diff", "--strict"][..], &chain, &["saves/a.json"]].concat(),
        root,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = String::from_utf8(out.stdout).unwrap();
    let path = path_in(&diff, "~ ", ": 1 -> 2");
    assert_eq!(path, "data.mods.bounty.ledger");
    assert_eq!(get("saves/a.json", &path), "2");

    // A helper's error names the element without an id; the save is left as it was.
    fs::write(
        root.join("saves/b.json"),
        save(r#"[{"id": "x"}, {"name": "y"}]"#),
    )
    .unwrap();
    let out = save_upgrade(&[&chain[..], &["saves/b.json"]].concat(), root);
    assert_eq!(out.status.code(), Some(2));
    let error = stderr(&out);
    let path = path_in(&error, "failed on line 2: ", " has no id");
    assert_eq!(path, "data.ship.cargo[1]");
    assert!(get("saves/b.json", &path).contains(r#""name": "y""#));

    // A --strict refusal names the path removed.
    fs::write(
        root.join("steps/0002-index.lua"),
        "return function(data) data.ship.cargo[1].id = nil end",
    )
    .unwrap();
    let out = save_upgrade(
        &[&["--strict"][..], &chain, &["saves/b.json"]].concat(),
        root,
    );
    assert_eq!(out.status.code(), Some(2));
    let error = stderr(&out);
    let path = path_in(
        &error,
        "strict: it removed ",
        " without declaring it dropped",
    );
    assert_eq!(path, "data.ship.cargo[0].id");
    assert_eq!(get("saves/b.json", &path), r#""x""#);

    // A value a save cannot hold is named where the step left it, inside a value get finds.
    fs::write(
        root.join("steps/0002-index.lua"),
        "return function(data) data.ship.cargo[1].f = function() end end",
    )
    .unwrap();
    let out = save_upgrade(&[&chain[..], &["saves/b.json"]].concat(), root);
    assert_eq!(out.status.code(), Some(2));
    let error = stderr(&out);
    let path = path_in(&error, "failed: at ", ": cannot save a function");
    assert_eq!(path, "data.ship.cargo[0].f");
    assert!(get("saves/b.json", "data.ship.cargo[0]").contains(r#""id": "x""#));
}

/// `save-upgrade upgrade mt/` (or `up`, `run`): upgrading is what the tool does without a
/// command, so it says to give the paths alone, and suggests no other command.
#[test]
fn upgrade_as_a_command_is_answered_with_the_paths_alone() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("mt")).unwrap();
    let save = dir.path().join("mt/small.json");
    fs::copy(format!("{FIXTURES}/v1/small.json"), &save).unwrap();
    let before = fs::read(&save).unwrap();
    for word in ["upgrade", "up", "run"] {
        let out = save_upgrade(&[word, "mt/", "my saves"], dir.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{word}: {err}");
        assert!(
            err.contains(
                "Upgrading is what save-upgrade does without a command: give the paths \
                 alone: save-upgrade mt/ 'my saves'"
            ),
            "{word}: {err}"
        );
        assert!(!err.contains("nearest"), "{word}: {err}");
        assert_eq!(fs::read(&save).unwrap(), before, "{word}");
        assert_eq!(fs::read_dir(dir.path().join("mt")).unwrap().count(), 1);
    }
}
