//! Compressed saves through the library's file work: `upgrade_file` in place and into
//! another path, batches (recompressing current saves, named outputs), `format_file_with`,
//! the limit on decompressed text, and backups of compressed saves.

mod common;

use std::fs;
use std::ops::ControlFlow;
use std::path::Path;

use common::names;
use proptest::prelude::*;
use savechain::backup::{MadeBy, Prune};
use savechain::batch::{Batch, Mode, Status};
use savechain::compress::{self, Codec, Compression};
use savechain::upgrade::{upgrade_file, Chain, Step, Target};
use savechain::{format_file_with, ErrorKind, Formatted, Options, Save, Value};

const CODECS: [Codec; 2] = [Codec::Zstd, Codec::Gzip];

fn chain() -> Chain {
    let step = Step::lua("0001-x.lua", "return function(d) d.x = 1 end").unwrap();
    Chain::new("1.0.0", vec![step]).unwrap()
}

fn save_text(version: u64) -> Vec<u8> {
    let data = Value::Object(savechain::Map::from_iter([("hp", Value::Int(3))]));
    Save::new(version, data).to_vec().unwrap()
}

fn packed(text: &[u8], codec: Codec) -> Vec<u8> {
    compress::compress(text, Compression::new(codec))
}

/// What the chain writes for a v1 save, plain.
fn upgraded(text: &[u8]) -> Vec<u8> {
    let save = Save::from_slice(text).unwrap();
    let upgraded = chain().upgrader().upgrade(save, &Options::default());
    upgraded.unwrap().save.to_vec().unwrap()
}

#[test]
fn upgrade_file_keeps_the_codec_unless_asked() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json.zst");
        let original = packed(&save_text(1), codec);
        fs::write(&path, &original).unwrap();
        let in_place = Target::InPlace { backup: true };
        let report = upgrade_file(
            &mut chain().upgrader(),
            &path,
            in_place,
            &Options::default(),
        )
        .unwrap();
        assert!(!report.recompressed);
        assert_eq!(
            fs::read(&path).unwrap(),
            packed(&upgraded(&save_text(1)), codec)
        );
        let backup = report.backup.unwrap();
        assert_eq!(backup, dir.path().join("w.json.zst.v1.bak"));
        assert_eq!(fs::read(&backup).unwrap(), original);

        // Asked in another compression, into another path.
        let out = dir.path().join("out/w.json");
        let mut options = Options::default();
        options.compression = Some(Compression::NONE);
        let report =
            upgrade_file(&mut chain().upgrader(), &backup, Target::To(&out), &options).unwrap();
        assert_eq!(report.written.as_deref(), Some(out.as_path()));
        assert_eq!(fs::read(&out).unwrap(), upgraded(&save_text(1)));
    }
}

/// A current save asked in another codec is rewritten in it, its text as it is, after its
/// bytes are kept as an upgrade keeps its original (`<name>.v<N>.bak`, N its version), with
/// the same rules for the name; `backup` lists, restores and prunes those as any
/// upgrade's.
#[test]
fn a_current_save_in_another_codec_is_recompressed_after_its_backup() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json");
    let text = save_text(2);
    fs::write(&path, &text).unwrap();
    let mut gzip = Options::default();
    gzip.compression = Some(Compression::new(Codec::Gzip));
    let mut plain = Options::default();
    plain.compression = Some(Compression::NONE);
    let left = || names(dir.path());
    let kept = |name: &str| fs::read(dir.path().join(name)).unwrap();

    let report = upgrade_file(&mut chain().upgrader(), &path, Target::Nowhere, &gzip).unwrap();
    assert!(report.recompressed && report.was_current());
    assert_eq!(report.backup, None);
    assert_eq!(left(), ["w.json"], "a check writes nothing");

    let in_place = Target::InPlace { backup: true };
    let report = upgrade_file(&mut chain().upgrader(), &path, in_place, &gzip).unwrap();
    assert!(report.recompressed);
    assert_eq!(report.backup, Some(dir.path().join("w.json.v2.bak")));
    assert_eq!(fs::read(&path).unwrap(), packed(&text, Codec::Gzip));
    assert_eq!(kept("w.json.v2.bak"), text);

    // A rerun finds nothing to do, and keeps no second backup.
    let report = upgrade_file(&mut chain().upgrader(), &path, in_place, &gzip).unwrap();
    assert!(!report.recompressed && report.written.is_none() && report.backup.is_none());
    assert_eq!(left(), ["w.json", "w.json.v2.bak"]);

    // Back to plain: the name holds other bytes, so `.1` is taken; and to gzip again: the
    // plain bytes are those of `w.json.v2.bak`, which is the backup, written again.
    let report = upgrade_file(&mut chain().upgrader(), &path, in_place, &plain).unwrap();
    assert_eq!(report.backup, Some(dir.path().join("w.json.v2.1.bak")));
    assert_eq!(kept("w.json.v2.1.bak"), packed(&text, Codec::Gzip));
    assert_eq!(fs::read(&path).unwrap(), text);
    let report = upgrade_file(&mut chain().upgrader(), &path, in_place, &gzip).unwrap();
    assert_eq!(report.backup, Some(dir.path().join("w.json.v2.bak")));
    assert_eq!(kept("w.json.v2.bak"), text);
    assert_eq!(left(), ["w.json", "w.json.v2.1.bak", "w.json.v2.bak"]);

    // Without a backup asked, none is kept.
    let no_backup = Target::InPlace { backup: false };
    let report = upgrade_file(&mut chain().upgrader(), &path, no_backup, &plain).unwrap();
    assert!(report.recompressed && report.backup.is_none());
    assert_eq!(fs::read(&path).unwrap(), text);
    assert_eq!(left(), ["w.json", "w.json.v2.1.bak", "w.json.v2.bak"]);

    // Listed as an upgrade's backups, at the save's version; restored byte for byte.
    let backups = savechain::backup::list(&path).unwrap();
    assert_eq!(backups.len(), 2);
    for backup in &backups {
        assert_eq!(backup.made_by, MadeBy::Upgrade { from: 2 }, "{backup:?}");
        assert_eq!(backup.version, Some(2), "{backup:?}");
    }
    let gzipped = dir.path().join("w.json.v2.1.bak");
    let restored = savechain::backup::restore(&path, &gzipped).unwrap();
    assert!(restored.written);
    assert_eq!(fs::read(&path).unwrap(), packed(&text, Codec::Gzip));
    assert_eq!(fs::read(restored.kept.unwrap()).unwrap(), text);
    // Pruned as any backup: the one with the save's bytes goes, whatever its age.
    let pruned = savechain::backup::prune(&path, Prune::default()).unwrap();
    let removed: Vec<_> = pruned.removed.iter().map(|(b, _)| b.path.clone()).collect();
    assert!(removed.contains(&gzipped), "{removed:?}");
    assert!(!gzipped.exists());
}

#[test]
fn a_bomb_and_a_damaged_save_fail_naming_the_file_with_nothing_written() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let mut big = save_text(1);
        big.resize(big.len() + 100_000, b'\n');
        let bomb = dir.path().join("bomb.json");
        fs::write(&bomb, packed(&big, codec)).unwrap();
        let good = packed(&save_text(1), codec);
        let cut = dir.path().join("cut.json");
        fs::write(&cut, &good[..good.len() - 1]).unwrap();
        let mut options = Options::default();
        options.max_text = 50_000;
        let in_place = Target::InPlace { backup: true };
        for path in [&bomb, &cut] {
            let before = fs::read(path).unwrap();
            let err = upgrade_file(&mut chain().upgrader(), path, in_place, &options).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Compressed, "{err}");
            assert_eq!(err.file(), Some(path.as_path()));
            assert_eq!(fs::read(path).unwrap(), before);
            let err = format_file_with(path, false, &options).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Compressed, "{err}");
            assert_eq!(fs::read(path).unwrap(), before);
        }
        assert!(upgrade_file(
            &mut chain().upgrader(),
            &bomb,
            in_place,
            &Options::default()
        )
        .is_ok());
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            3,
            "no temporary left"
        );
    }
}

#[test]
fn a_batch_recompresses_current_saves_and_names_outputs_for_the_codec() {
    let dir = tempfile::tempdir().unwrap();
    let saves = dir.path().join("saves");
    fs::create_dir(&saves).unwrap();
    fs::write(saves.join("old.json"), save_text(1)).unwrap();
    fs::write(
        saves.join("current.json.gz"),
        packed(&save_text(2), Codec::Gzip),
    )
    .unwrap();
    fs::write(
        saves.join("zstd.json.zst"),
        packed(&save_text(2), Codec::Zstd),
    )
    .unwrap();
    let mut options = Options::default();
    options.compression = Some(Compression::new(Codec::Zstd));
    let statuses = |mode: Mode| {
        let chain = chain();
        let batch = Batch::new(&chain, mode).options(options.clone());
        let plan = batch.plan(&[&saves]).unwrap();
        let mut statuses = Vec::new();
        batch
            .run(&plan, |outcome| {
                let name = outcome.found.relative.display().to_string();
                statuses.push((name, outcome.status));
                ControlFlow::Continue(())
            })
            .unwrap();
        statuses
    };
    let out = dir.path().join("out");
    let expected = [
        ("current.json.gz".to_string(), Status::Recompressed),
        ("old.json".to_string(), Status::Upgraded),
        ("zstd.json.zst".to_string(), Status::Current),
    ];
    assert_eq!(statuses(Mode::OutDir(out.clone())), expected);
    assert_eq!(
        names(&out),
        ["current.json.zst", "old.json.zst", "zstd.json.zst"]
    );
    assert_eq!(
        fs::read(out.join("old.json.zst")).unwrap(),
        packed(&upgraded(&save_text(1)), Codec::Zstd)
    );
    assert_eq!(
        fs::read(out.join("current.json.zst")).unwrap(),
        packed(&save_text(2), Codec::Zstd)
    );
    let again = statuses(Mode::OutDir(out.clone()));
    assert!(
        again.iter().all(|(_, s)| *s == Status::AlreadyWritten),
        "{again:?}"
    );

    let sources: Vec<(String, Vec<u8>)> = ["current.json.gz", "old.json", "zstd.json.zst"]
        .iter()
        .map(|n| (n.to_string(), fs::read(saves.join(n)).unwrap()))
        .collect();
    let files = || names(&saves);
    assert_eq!(statuses(Mode::Check)[0].1, Status::Recompressed);
    assert_eq!(files().len(), 3, "a check writes nothing");
    assert_eq!(statuses(Mode::InPlace { backup: true }), expected);
    assert_eq!(
        fs::read(saves.join("current.json.gz")).unwrap(),
        packed(&save_text(2), Codec::Zstd),
        "in place, the name is kept"
    );
    // The recompressed save kept as the upgraded one: its bytes, as they were.
    assert_eq!(
        files(),
        [
            "current.json.gz",
            "current.json.gz.v2.bak",
            "old.json",
            "old.json.v1.bak",
            "zstd.json.zst"
        ]
    );
    for (name, bytes) in &sources[..2] {
        let version = if name == "old.json" { 1 } else { 2 };
        let backup = saves.join(format!("{name}.v{version}.bak"));
        assert_eq!(&fs::read(backup).unwrap(), bytes, "{name}");
    }
    assert!(statuses(Mode::InPlace { backup: true })
        .iter()
        .all(|(_, s)| *s == Status::Current));
    assert_eq!(files().len(), 5, "a rerun keeps no second backup");
}

#[test]
fn format_file_with_keeps_or_converts_the_codec() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json.gz");
    let text = save_text(1);
    let compact = Save::from_slice(&text).unwrap().to_vec_compact().unwrap();
    fs::write(&path, packed(&compact, Codec::Gzip)).unwrap();
    let keep = Options::default();
    assert_eq!(
        format_file_with(&path, true, &keep).unwrap(),
        Formatted::Rewritten
    );
    assert_eq!(fs::read(&path).unwrap(), packed(&compact, Codec::Gzip));
    assert_eq!(
        format_file_with(&path, false, &keep).unwrap(),
        Formatted::Rewritten
    );
    assert_eq!(fs::read(&path).unwrap(), packed(&text, Codec::Gzip));
    assert_eq!(
        format_file_with(&path, false, &keep).unwrap(),
        Formatted::Canonical
    );
    assert!(!savechain::format_file(&path, true).unwrap());

    let mut plain = Options::default();
    plain.compression = Some(Compression::NONE);
    assert_eq!(
        format_file_with(&path, false, &plain).unwrap(),
        Formatted::Recompressed
    );
    assert_eq!(fs::read(&path).unwrap(), text);
    // Each file replaced was kept first, compressed as it was; the check and the canonical
    // save kept nothing.
    let kept = |name: &str| fs::read(dir.path().join(name)).unwrap();
    assert_eq!(kept("w.json.gz.bak"), packed(&compact, Codec::Gzip));
    assert_eq!(kept("w.json.gz.1.bak"), packed(&text, Codec::Gzip));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn backups_of_compressed_saves_are_listed_and_restored_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json.zst");
    let original = packed(&save_text(1), Codec::Zstd);
    fs::write(&path, &original).unwrap();
    let in_place = Target::InPlace { backup: true };
    upgrade_file(
        &mut chain().upgrader(),
        &path,
        in_place,
        &Options::default(),
    )
    .unwrap();
    let upgraded_bytes = fs::read(&path).unwrap();
    let backups = savechain::backup::list(&path).unwrap();
    assert_eq!(backups.len(), 1);
    assert_eq!(backups[0].version, Some(1));
    let restored = savechain::backup::restore(&path, &backups[0].path).unwrap();
    assert!(restored.written);
    assert_eq!(fs::read(&path).unwrap(), original);
    assert_eq!(fs::read(restored.kept.unwrap()).unwrap(), upgraded_bytes);

    fs::remove_file(&path).unwrap();
    assert_eq!(
        savechain::backup::gone_saves(dir.path()).unwrap(),
        [dir.path().join("w.json.zst")]
    );
    assert!(Path::new(&path).symlink_metadata().is_err());
}

#[test]
fn upgrade_text_reads_compressed_text_within_the_limit() {
    let text = save_text(1);
    let mut options = Options::default();
    for codec in CODECS {
        let upgraded_text = chain()
            .upgrader()
            .upgrade_text(&packed(&text, codec), &options)
            .unwrap();
        assert_eq!(
            upgraded_text.text,
            Some(upgraded(&text)),
            "{codec}: plain text out"
        );
    }
    options.max_text = 10;
    let err = chain()
        .upgrader()
        .upgrade_text(&packed(&text, Codec::Zstd), &options)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Compressed);
}

fn any_compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        (Codec::Zstd.levels()).prop_map(|l| Compression::with_level(Codec::Zstd, l).unwrap()),
        (Codec::Gzip.levels()).prop_map(|l| Compression::with_level(Codec::Gzip, l).unwrap()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Converting a save to any codec and level and back to plain text keeps its canonical
    /// text, byte for byte, and each conversion writes the bytes that codec gives that text.
    #[test]
    fn converting_there_and_back_keeps_the_text(data in common::any_value(), how in any_compression()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        let text = Save::new(4, data).to_vec().unwrap();
        fs::write(&path, &text).unwrap();
        let mut options = Options::default();
        options.compression = Some(how);
        prop_assert_eq!(format_file_with(&path, false, &options).unwrap(), Formatted::Recompressed);
        prop_assert_eq!(fs::read(&path).unwrap(), compress::compress(&text, how));
        prop_assert_eq!(format_file_with(&path, false, &options).unwrap(), Formatted::Canonical);
        options.compression = Some(Compression::NONE);
        prop_assert_eq!(format_file_with(&path, false, &options).unwrap(), Formatted::Recompressed);
        prop_assert_eq!(fs::read(&path).unwrap(), text);
    }
}

#[test]
fn a_stream_compressed_twice_is_held_to_the_limit_asked_for_inside_too() {
    // A bomb inside a small stream: the outer text is well within the limit, the inner one
    // far beyond it.
    let mut big = save_text(1);
    big.resize(big.len() + 2_000_000, b'\n');
    let inner = packed(&big, Codec::Zstd);
    let mut options = Options::default();
    options.max_text = 1_000_000;
    for codec in CODECS {
        let twice = packed(&inner, codec);
        assert!(twice.len() < 1_000 && inner.len() < 1_000_000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("twice.json");
        fs::write(&path, &twice).unwrap();
        let in_place = Target::InPlace { backup: true };
        let err = upgrade_file(&mut chain().upgrader(), &path, in_place, &options).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
        assert!(err.to_string().contains("more than 1000000 bytes"), "{err}");
        let err = format_file_with(&path, false, &options).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
        let err = chain()
            .upgrader()
            .upgrade_text(&twice, &options)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
        let err = savechain::cache::load(&path, &chain(), &options)
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
        assert_eq!(fs::read(&path).unwrap(), twice);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
