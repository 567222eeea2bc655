//! A save's backups through the library: found by their names, restored, pruned.

use std::fs;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use savechain::backup::{self, MadeBy};
use savechain::ErrorKind;

fn save_text(version: u64, note: &str) -> String {
    format!(r#"{{"meta": {{"version": {version}}}, "data": {{"note": "{note}"}}}}"#)
}

fn write_dated(path: &Path, text: &str, seconds: u64) {
    fs::write(path, text).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(UNIX_EPOCH + Duration::from_secs(1_000_000 + seconds))
        .unwrap();
}

#[test]
fn a_gone_save_is_restored_from_its_backup_and_a_broken_backup_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("a.json");
    write_dated(&dir.path().join("a.json.v2.bak"), &save_text(2, "old"), 1);
    write_dated(&dir.path().join("a.json.1.bak"), "{\"meta\": ", 2);
    write_dated(
        &dir.path().join("a.json.edit.bak"),
        &save_text(3, "typed"),
        3,
    );
    // Not its backups: another save's, a name with a leading zero, a folder.
    write_dated(&dir.path().join("ab.json.bak"), &save_text(1, "x"), 4);
    write_dated(&dir.path().join("a.json.v02.bak"), &save_text(1, "x"), 5);
    fs::create_dir(dir.path().join("a.json.bak")).unwrap();

    let found = backup::list(&save).unwrap();
    let seen: Vec<_> = found
        .iter()
        .map(|b| (b.path.file_name().unwrap().to_owned(), b.made_by, b.version))
        .collect();
    assert_eq!(
        seen,
        [
            ("a.json.v2.bak".into(), MadeBy::Upgrade { from: 2 }, Some(2)),
            ("a.json.1.bak".into(), MadeBy::Edit, None),
            ("a.json.edit.bak".into(), MadeBy::KeptEdit, Some(3)),
        ]
    );
    assert!(found[1].problem.is_some());

    assert_eq!(
        backup::gone_saves(dir.path()).unwrap(),
        [dir.path().join("a.json"), dir.path().join("ab.json")]
    );
    let err = backup::restore(&save, dir.path().join("a.json.1.bak")).unwrap_err();
    assert!(err.to_string().contains("a.json.1.bak"), "{err}");
    assert!(!save.exists());
    let err = backup::restore(&save, dir.path().join("ab.json.bak")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage);
    let restored = backup::restore(&save, dir.path().join("a.json.v2.bak")).unwrap();
    assert_eq!(restored.kept, None);
    assert_eq!(fs::read_to_string(&save).unwrap(), save_text(2, "old"));

    // Pruning keeps the unreadable backup and the kept edit whatever --keep says, and the
    // version-2 backup (the save's bytes) goes.
    let pruned = backup::prune(&save, backup::Prune::default()).unwrap();
    assert_eq!(pruned.removed.len(), 1);
    assert_eq!(pruned.removed[0].0.made_by, MadeBy::Upgrade { from: 2 });
    assert_eq!(backup::list(&save).unwrap().len(), 2);
}

#[test]
fn prune_keeps_the_newest_and_the_last_way_back_to_each_version() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("a.json");
    fs::write(&save, save_text(9, "now")).unwrap();
    write_dated(&dir.path().join("a.json.v1.bak"), &save_text(1, "one"), 1);
    write_dated(&dir.path().join("a.json.v8.bak"), &save_text(8, "eight"), 2);
    write_dated(
        &dir.path().join("a.json.v8.1.bak"),
        &save_text(8, "eight b"),
        3,
    );
    for k in 0..5 {
        let name = match k {
            0 => "a.json.bak".to_string(),
            k => format!("a.json.{k}.bak"),
        };
        write_dated(
            &dir.path().join(name),
            &save_text(9, &k.to_string()),
            10 + k,
        );
    }
    let dry = backup::prune(&save, backup::Prune::default().keep(2).dry_run(true)).unwrap();
    assert_eq!(backup::list(&save).unwrap().len(), 8);
    let pruned = backup::prune(&save, backup::Prune::default().keep(2)).unwrap();
    assert_eq!(
        dry.removed.iter().map(|(b, _)| &b.path).collect::<Vec<_>>(),
        pruned
            .removed
            .iter()
            .map(|(b, _)| &b.path)
            .collect::<Vec<_>>()
    );
    let mut left: Vec<String> = backup::list(&save)
        .unwrap()
        .iter()
        .map(|b| b.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    left.sort();
    // The two newest; the newest of version 8 (the older one goes); the only version 1.
    assert_eq!(
        left,
        [
            "a.json.3.bak",
            "a.json.4.bak",
            "a.json.v1.bak",
            "a.json.v8.1.bak"
        ]
    );
}

/// Pruning by age alone keeps the newest backup, though it is old and its version is the
/// save's: removing every backup takes `keep(0)`, said on purpose (from a review: a played-on
/// save kept when an output was replaced went with `--older-than` alone).
#[test]
fn pruning_by_age_alone_keeps_the_newest_backup() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("a.json");
    fs::write(&save, save_text(9, "now")).unwrap();
    write_dated(&dir.path().join("a.json.bak"), &save_text(9, "older"), 1);
    write_dated(&dir.path().join("a.json.1.bak"), &save_text(9, "newest"), 2);
    let far = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    let rule = backup::Prune::default().older_than(far);
    let pruned = backup::prune(&save, rule).unwrap();
    let kept: Vec<_> = pruned.kept.iter().map(|b| b.path.clone()).collect();
    assert_eq!(kept, [dir.path().join("a.json.1.bak")]);
    let rule = backup::Prune::default().older_than(far).keep(0);
    let pruned = backup::prune(&save, rule).unwrap();
    assert!(pruned.kept.is_empty(), "{:?}", pruned.kept);
    assert!(backup::list(&save).unwrap().is_empty());
}
