//! `save-upgrade` and `save-upgrade fmt` on zstd and gzip saves: in place (the codec kept,
//! the backup the original's bytes), into another folder (named for the codec asked),
//! converting with `--compress`, and damaged, wrongly named and bomb inputs, every file's
//! bytes checked after.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{save_upgrade, stderr};
use savechain::compress::{self, Codec, Compression};
use savechain::{Options, Save};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
const CODECS: [Codec; 2] = [Codec::Zstd, Codec::Gzip];

fn fixture(name: &str) -> Vec<u8> {
    fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

/// What a plain upgrade of `fixture` writes: the library's canonical text.
fn upgraded_text(fixture: &str) -> Vec<u8> {
    let save = Save::load(format!("{FIXTURES}/{fixture}")).unwrap();
    let chain = common::starlane::chain().unwrap();
    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    upgraded.save.to_vec().unwrap()
}

/// The canonical text of `fixture`, as the library writes it.
fn canonical_text(fixture: &str) -> Vec<u8> {
    Save::load(format!("{FIXTURES}/{fixture}"))
        .unwrap()
        .to_vec()
        .unwrap()
}

fn packed(text: &[u8], codec: Codec) -> Vec<u8> {
    compress::compress(text, Compression::new(codec))
}

fn unpacked(bytes: &[u8]) -> Vec<u8> {
    compress::decompress(bytes, compress::DEFAULT_LIMIT)
        .unwrap()
        .into_owned()
}

/// Every file below `dir` (hidden ones too), by path, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, into);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_path_buf();
                into.insert(relative, fs::read(&path).unwrap());
            }
        }
    }
    let mut found = BTreeMap::new();
    if dir.exists() {
        walk(dir, dir, &mut found);
    }
    found
}

fn names(dir: &Path) -> Vec<String> {
    files(dir).keys().map(|p| p.display().to_string()).collect()
}

fn run(args: &[&str], cwd: &Path) -> std::process::Output {
    save_upgrade(args, cwd)
}

fn run_with_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn in_place_keeps_the_codec_and_the_backup_is_the_original() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("small.json{}", codec.extension());
        let original = packed(&fixture("v1/small.json"), codec);
        fs::write(dir.path().join(&name), &original).unwrap();

        let out = run(&["."], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        let written = fs::read(dir.path().join(&name)).unwrap();
        assert_eq!(Codec::of(&written), codec);
        let expected = upgraded_text("v1/small.json");
        assert_eq!(unpacked(&written), expected, "{codec}");
        // At the codec's default level, reproducibly.
        assert_eq!(written, packed(&expected, codec), "{codec}");
        let backup = fs::read(dir.path().join(format!("{name}.v1.bak"))).unwrap();
        assert_eq!(
            backup, original,
            "{codec}: the backup is the original's bytes"
        );
        assert_eq!(names(dir.path()), [name.clone(), format!("{name}.v1.bak")]);

        // A rerun finds the save current and touches nothing.
        let before = files(dir.path());
        let out = run(&["."], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("already current 1"),
            "{}",
            stderr(&out)
        );
        assert_eq!(files(dir.path()), before, "{codec}");

        // A folder's backups are listed for the compressed save, its version read.
        let out = run(&["backups", "list", "--json", "."], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let listed = savechain::text::from_slice(&out.stdout).unwrap();
        let listed = listed.as_array().unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(listed[0]["save"].as_str(), Some(&*format!("./{name}")));
        assert_eq!(listed[0]["backups"][0]["version"].as_u64(), Some(1));

        // The backup restores the original's bytes exactly.
        let backup = format!("{name}.v1.bak");
        let out = run(&["backups", "restore", &name, &backup], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(fs::read(dir.path().join(&name)).unwrap(), original);
        assert_eq!(
            fs::read(dir.path().join(format!("{name}.bak"))).unwrap(),
            written
        );
    }
}

#[test]
fn an_out_dir_takes_the_source_codec_and_a_rerun_writes_nothing() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let saves = dir.path().join("saves");
        fs::create_dir_all(saves.join("sub")).unwrap();
        let ext = codec.extension();
        fs::write(
            saves.join(format!("sub/old.json{ext}")),
            packed(&fixture("v1/edge.json"), codec),
        )
        .unwrap();
        let current = packed(&fixture("v9/small.json"), codec);
        fs::write(saves.join(format!("current.json{ext}")), &current).unwrap();
        let sources = files(&saves);

        let out = run(&["--out-dir", "out", "saves"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        let outputs = dir.path().join("out");
        assert_eq!(
            names(&outputs),
            [format!("current.json{ext}"), format!("sub/old.json{ext}")]
        );
        let old = fs::read(outputs.join(format!("sub/old.json{ext}"))).unwrap();
        assert_eq!(
            old,
            packed(&upgraded_text("v1/edge.json"), codec),
            "{codec}"
        );
        // A current save is copied byte for byte.
        assert_eq!(
            fs::read(outputs.join(format!("current.json{ext}"))).unwrap(),
            current
        );
        assert_eq!(files(&saves), sources, "the sources are left alone");

        let written = files(&outputs);
        let out = run(&["--out-dir", "out", "saves"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("already written 2"),
            "{}",
            stderr(&out)
        );
        assert_eq!(files(&outputs), written);
        assert_eq!(files(&saves), sources);

        // Checks into the folder: all written; asked plain, both would be (new names).
        let out = run(&["--check", "--out-dir", "out", "saves"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let args = ["--check", "--out-dir", "out", "--compress", "none", "saves"];
        let out = run(&args, dir.path());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("would upgrade 1, already current 0, would recompress 1"),
            "{}",
            stderr(&out)
        );
        assert_eq!(files(&outputs), written);
        assert_eq!(files(&saves), sources);
    }
}

#[test]
fn compress_converts_outputs_and_names_them_for_their_codec() {
    let dir = tempfile::tempdir().unwrap();
    let saves = dir.path().join("saves");
    fs::create_dir(&saves).unwrap();
    fs::copy(format!("{FIXTURES}/v1/small.json"), saves.join("a.json")).unwrap();
    fs::write(
        saves.join("b.json.gz"),
        packed(&fixture("v1/edge.json"), Codec::Gzip),
    )
    .unwrap();
    let out = run(
        &[
            "--out-dir",
            "zst",
            "--compress",
            "zstd",
            "--level",
            "19",
            "saves",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let zst = dir.path().join("zst");
    assert_eq!(names(&zst), ["a.json.zst", "b.json.zst"]);
    let level_19 = Compression::with_level(Codec::Zstd, 19).unwrap();
    assert_eq!(
        fs::read(zst.join("a.json.zst")).unwrap(),
        compress::compress(&upgraded_text("v1/small.json"), level_19)
    );
    assert_eq!(
        unpacked(&fs::read(zst.join("b.json.zst")).unwrap()),
        upgraded_text("v1/edge.json")
    );

    // And back to plain text: the same text, named .json.
    let out = run(
        &["--out-dir", "plain", "--compress", "none", "zst"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plain = dir.path().join("plain");
    assert_eq!(names(&plain), ["a.json", "b.json"]);
    assert!(stderr(&out).contains("recompressed 2"), "{}", stderr(&out));
    assert_eq!(
        fs::read(plain.join("a.json")).unwrap(),
        upgraded_text("v1/small.json")
    );
}

#[test]
fn a_current_save_is_recompressed_in_place_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let original = fixture("v9/small.json");
    fs::write(dir.path().join("a.json"), &original).unwrap();

    let out = run(&["--check", "--compress", "zstd", "."], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "./a.json\n");
    assert_eq!(names(dir.path()), ["a.json"], "--check writes nothing");
    assert_eq!(fs::read(dir.path().join("a.json")).unwrap(), original);

    let out = run(&["--compress", "zstd", "."], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("recompressed 1"), "{}", stderr(&out));
    // Its usual backup name: no note.
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
    let written = fs::read(dir.path().join("a.json")).unwrap();
    assert_eq!(Codec::of(&written), Codec::Zstd);
    // The text as it was (not even reformatted), and the bytes replaced kept as an
    // upgrade keeps them.
    assert_eq!(unpacked(&written), original);
    assert_eq!(names(dir.path()), ["a.json", "a.json.v9.bak"]);
    assert_eq!(
        fs::read(dir.path().join("a.json.v9.bak")).unwrap(),
        original
    );

    // Already in the codec asked (at whatever level): left alone, no second backup.
    let recompressed = files(dir.path());
    for args in [
        &["--compress", "zstd", "."][..],
        &["--compress", "zstd", "--level", "12", "."],
        &["."],
    ] {
        let out = run(args, dir.path());
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("already current 1, failed 0"),
            "{}",
            stderr(&out)
        );
        assert_eq!(files(dir.path()), recompressed, "{args:?}");
    }
    let out = run(&["--check", "--compress", "zstd", "."], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Listed as an upgrade's backup, and restored exactly.
    let out = run(&["backups", "list", "--json", "a.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = savechain::text::from_slice(&out.stdout).unwrap();
    let backup = &listed.as_array().unwrap()[0]["backups"][0];
    assert_eq!(backup["made_by"].as_str(), Some("upgrade"), "{listed:?}");
    assert_eq!(backup["version"].as_u64(), Some(9), "{listed:?}");
    let out = run(
        &["backups", "restore", "a.json", "a.json.v9.bak"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read(dir.path().join("a.json")).unwrap(), original);
    assert_eq!(fs::read(dir.path().join("a.json.bak")).unwrap(), written);
}

/// A recompression whose usual backup name holds other bytes keeps the save under the
/// next name and says so, as an upgrade does; one whose backup cannot be written (a
/// folder there) fails with exit 2 and leaves the save as it was.
#[test]
fn a_recompression_keeps_its_backup_or_leaves_the_save_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let original = fixture("v9/small.json");
    fs::write(dir.path().join("a.json"), &original).unwrap();
    fs::write(dir.path().join("a.json.v9.bak"), "older").unwrap();
    let out = run(&["--compress", "gzip", "a.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "note: a.json.v9.bak is a different file, so the original of a.json is kept as \
             a.json.v9.1.bak"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        fs::read(dir.path().join("a.json.v9.1.bak")).unwrap(),
        original
    );
    assert_eq!(
        fs::read(dir.path().join("a.json.v9.bak")).unwrap(),
        b"older"
    );

    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.json"), &original).unwrap();
    fs::create_dir(dir.path().join("a.json.v9.bak")).unwrap();
    fs::write(dir.path().join("a.json.v9.bak/x"), "").unwrap();
    let before = files(dir.path());
    let out = run(&["--compress", "zstd", "."], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("./a.json: cannot write the backup ./a.json.v9.bak"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("failed 1"), "{}", stderr(&out));
    assert_eq!(
        files(dir.path()),
        before,
        "the save as it was, no temporary"
    );
}

/// A folder of saves converted by an upgrade run: each replaced save, upgraded or only
/// recompressed, keeps its bytes beside it; a save already in the codec asked, none.
#[test]
fn a_folder_recompressed_by_an_upgrade_keeps_each_save_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let saves = dir.path().join("saves");
    fs::create_dir_all(saves.join("sub")).unwrap();
    fs::write(saves.join("old.json"), fixture("v1/small.json")).unwrap();
    fs::write(saves.join("current.json"), fixture("v9/small.json")).unwrap();
    let gzipped = packed(&fixture("v9/edge.json"), Codec::Gzip);
    fs::write(saves.join("sub/edge.json.gz"), &gzipped).unwrap();
    let zstd = packed(&fixture("v9/edge.json"), Codec::Zstd);
    fs::write(saves.join("sub/zstd.json.zst"), &zstd).unwrap();
    let before = files(&saves);

    let out = run(&["--check", "--compress", "zstd", "saves"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(files(&saves), before, "--check writes nothing");

    let out = run(&["--compress", "zstd", "saves"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("upgraded 1, already current 1, recompressed 2, failed 0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        names(&saves),
        [
            "current.json",
            "current.json.v9.bak",
            "old.json",
            "old.json.v1.bak",
            "sub/edge.json.gz",
            "sub/edge.json.gz.v9.bak",
            "sub/zstd.json.zst"
        ]
    );
    for (save, backup) in [
        ("current.json", "current.json.v9.bak"),
        ("old.json", "old.json.v1.bak"),
        ("sub/edge.json.gz", "sub/edge.json.gz.v9.bak"),
    ] {
        assert_eq!(
            fs::read(saves.join(backup)).unwrap(),
            before[Path::new(save)],
            "{backup}"
        );
        assert_eq!(Codec::of(&fs::read(saves.join(save)).unwrap()), Codec::Zstd);
    }
    assert_eq!(fs::read(saves.join("sub/zstd.json.zst")).unwrap(), zstd);

    // A rerun finds nothing to do and writes nothing.
    let after = files(&saves);
    let out = run(&["--compress", "zstd", "saves"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("upgraded 0, already current 4, failed 0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files(&saves), after);
}

/// Into an output folder, a recompressed save's output is an original like an upgraded
/// one's: one holding something else is refused, or with --replace-outputs kept first
/// and replaced, saying where.
#[test]
fn a_recompressed_output_replaces_what_is_there_only_after_its_backup() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("in")).unwrap();
    fs::create_dir_all(dir.path().join("out")).unwrap();
    fs::write(dir.path().join("in/a.json"), fixture("v9/small.json")).unwrap();
    let there = packed(&fixture("v9/edge.json"), Codec::Zstd);
    fs::write(dir.path().join("out/a.json.zst"), &there).unwrap();
    let before = files(dir.path());
    let args = ["--compress", "zstd", "--out-dir", "out", "in"];
    let out = run(&args, dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is already there"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files(dir.path()), before);

    let out = run(&[&["--replace-outputs"][..], &args].concat(), dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "note: out/a.json.zst held something else, so it is kept as out/a.json.zst.v9.bak \
             and replaced"
        ),
        "{}",
        stderr(&out)
    );
    let out_dir = dir.path().join("out");
    assert_eq!(names(&out_dir), ["a.json.zst", "a.json.zst.v9.bak"]);
    assert_eq!(fs::read(out_dir.join("a.json.zst.v9.bak")).unwrap(), there);
    assert_eq!(
        fs::read(out_dir.join("a.json.zst")).unwrap(),
        packed(&fixture("v9/small.json"), Codec::Zstd)
    );
}

#[test]
fn fmt_converts_a_folder_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let saves = dir.path().join("saves");
    fs::create_dir(&saves).unwrap();
    for version in ["v1", "v9"] {
        fs::copy(
            format!("{FIXTURES}/{version}/edge.json"),
            saves.join(format!("{version}.json")),
        )
        .unwrap();
    }
    let canonical = |version: &str| canonical_text(&format!("{version}/edge.json"));

    // Each conversion keeps what it replaced: `.bak`, then `.1.bak`, `.2.bak`.
    let backups = ["bak", "1.bak", "2.bak"];
    let saves_in = |dir: &Path| -> Vec<String> {
        let names = names(dir).into_iter();
        names.filter(|n| !n.ends_with(".bak")).collect()
    };
    let kept_as = |k: usize| -> Vec<String> {
        let mut names = names(&saves);
        names.retain(|n| n.ends_with(&format!(".json.{}", backups[k])));
        names
    };
    for (k, codec) in CODECS.into_iter().enumerate() {
        let name = codec.name();
        let out = run(&["fmt", "--check", "--compress", name, "saves"], dir.path());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(names(&saves).len(), 2 + 2 * k, "--check keeps nothing");

        let before = files(&saves);
        let out = run(&["fmt", "--compress", name, "saves"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // The names are kept: a game opens its saves by name.
        assert_eq!(saves_in(&saves), ["v1.json", "v9.json"]);
        assert_eq!(
            kept_as(k),
            [
                format!("v1.json.{}", backups[k]),
                format!("v9.json.{}", backups[k])
            ]
        );
        for version in ["v1", "v9"] {
            let save = format!("{version}.json");
            let bytes = fs::read(saves.join(&save)).unwrap();
            assert_eq!(
                bytes,
                packed(&canonical(version), codec),
                "{codec} {version}"
            );
            let backup = fs::read(saves.join(format!("{save}.{}", backups[k]))).unwrap();
            assert_eq!(backup, before[Path::new(&save)], "{codec} {version}");
        }
        let converted = files(&saves);
        for args in [
            &["fmt", "--compress", name, "saves"][..],
            &["fmt", "saves"],
            &["fmt", "--check", "saves"],
        ] {
            let out = run(args, dir.path());
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
            assert_eq!(files(&saves), converted, "{args:?}");
        }
    }

    let before = files(&saves);
    let out = run(&["fmt", "--compress", "none", "saves"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("recompressed 2"), "{}", stderr(&out));
    for version in ["v1", "v9"] {
        let save = format!("{version}.json");
        let bytes = fs::read(saves.join(&save)).unwrap();
        assert_eq!(bytes, canonical(version));
        let backup = fs::read(saves.join(format!("{save}.2.bak"))).unwrap();
        assert_eq!(backup, before[Path::new(&save)], "{version}");
    }
    assert_eq!(names(&saves).len(), 2 + 3 * 2);
}

#[test]
fn fmt_rewrites_a_compressed_save_in_its_own_codec() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("w.json{}", codec.extension());
        // Not canonical text inside: the same save, compact.
        let compact = Save::load(format!("{FIXTURES}/v1/edge.json"))
            .unwrap()
            .to_vec_compact()
            .unwrap();
        let messy = packed(&compact, codec);
        assert!(unpacked(&messy) != canonical_text("v1/edge.json"));
        fs::write(dir.path().join(&name), &messy).unwrap();
        let out = run(&["fmt", "--check", &name], dir.path());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{name}\n"));
        assert_eq!(fs::read(dir.path().join(&name)).unwrap(), messy);
        let out = run(&["fmt", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            fs::read(dir.path().join(&name)).unwrap(),
            packed(&canonical_text("v1/edge.json"), codec)
        );
        // Kept as it was: compressed.
        assert!(
            stderr(&out).contains(&format!(
                "{name}: reformatted; the original is kept as {name}.bak"
            )),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            fs::read(dir.path().join(format!("{name}.bak"))).unwrap(),
            messy
        );
    }
}

#[test]
fn fmt_of_standard_input_takes_compressed_text() {
    let canonical = canonical_text("v1/edge.json");
    for codec in CODECS {
        let input = packed(&fixture("v1/edge.json"), codec);
        let out = run_with_stdin(&["fmt", "-"], &input);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(out.stdout, canonical, "{codec}: plain text out");
        let out = run_with_stdin(&["fmt", "--compress", codec.name(), "-"], &canonical);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(out.stdout, packed(&canonical, codec));
        let out = run_with_stdin(&["fmt", "--check", "-"], &packed(&canonical, codec));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let broken = &input[..input.len() - 5];
        let out = run_with_stdin(&["fmt", "-"], broken);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("<stdin>: the {codec} data is damaged")),
            "{}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty());
    }
}

/// Damaged compressed saves (cut short, a byte changed) and a bomb: each refused by every
/// command that writes, naming the file, with every file of the folder as it was and
/// nothing in an output folder.
#[test]
fn damaged_saves_and_bombs_are_refused_with_nothing_written() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let saves = dir.path().join("saves");
        fs::create_dir(&saves).unwrap();
        let ext = codec.extension();
        let good = packed(&fixture("v1/small.json"), codec);
        fs::write(
            saves.join(format!("cut.json{ext}")),
            &good[..good.len() * 2 / 3],
        )
        .unwrap();
        let mut flipped = good.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x55;
        fs::write(saves.join(format!("flipped.json{ext}")), &flipped).unwrap();
        // A valid save followed by 4 MB of spaces: fine under the default limit.
        let mut big = fixture("v1/small.json");
        big.resize(big.len() + (4 << 20), b' ');
        fs::write(saves.join(format!("bomb.json{ext}")), packed(&big, codec)).unwrap();
        let before = files(dir.path());

        for args in [
            &["--max-text", "1000000", "saves"][..],
            &["--max-text", "1000000", "--out-dir", "out", "saves"],
            &["--max-text", "1000000", "--compress", "none", "saves"],
            &["--max-text", "1000000", "--check", "saves"],
            &["fmt", "--max-text", "1000000", "saves"],
            &[
                "fmt",
                "--max-text",
                "1000000",
                "--compress",
                "none",
                "saves",
            ],
        ] {
            let out = run(args, dir.path());
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{codec} {args:?}: {err}");
            assert!(
                err.contains(&format!("cut.json{ext}: the {codec} data is damaged"))
                    && err.contains("ends early"),
                "{codec} {args:?}: {err}"
            );
            assert!(
                err.contains(&format!("flipped.json{ext}: the {codec} data is damaged")),
                "{codec} {args:?}: {err}"
            );
            assert!(
                err.contains(&format!(
                    "bomb.json{ext}: the {codec} data decompresses to more than 1000000 bytes"
                )),
                "{codec} {args:?}: {err}"
            );
            assert_eq!(files(dir.path()), before, "{codec} {args:?}");
        }
        // Under the default limit, the large save is upgraded.
        let out = run(&["saves"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let bomb = fs::read(saves.join(format!("bomb.json{ext}"))).unwrap();
        assert_eq!(unpacked(&bomb), upgraded_text("v1/small.json"));
    }
}

/// A name says nothing: `.json.zst` holding plain text and `.json` holding zstd are read by
/// what they hold, and upgraded in place in what they hold.
#[test]
fn wrongly_named_saves_are_read_and_kept_by_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let plain = fixture("v1/small.json");
    let zstd = packed(&fixture("v1/edge.json"), Codec::Zstd);
    let gzip = packed(&fixture("v1/small.json"), Codec::Gzip);
    fs::write(dir.path().join("plain.json.zst"), &plain).unwrap();
    fs::write(dir.path().join("zstd.json"), &zstd).unwrap();
    fs::write(dir.path().join("gzip.json.zst"), &gzip).unwrap();
    let out = run(&["."], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let read = |name: &str| fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("plain.json.zst"), upgraded_text("v1/small.json"));
    assert_eq!(
        read("zstd.json"),
        packed(&upgraded_text("v1/edge.json"), Codec::Zstd)
    );
    assert_eq!(
        read("gzip.json.zst"),
        packed(&upgraded_text("v1/small.json"), Codec::Gzip)
    );
    assert_eq!(read("plain.json.zst.v1.bak"), plain);
    assert_eq!(read("zstd.json.v1.bak"), zstd);
    assert_eq!(read("gzip.json.zst.v1.bak"), gzip);
}

/// The same input gives the same bytes, run after run, in any folder.
#[test]
fn outputs_are_reproducible() {
    let mut results = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        fs::copy(
            format!("{FIXTURES}/v1/edge.json"),
            dir.path().join("a.json"),
        )
        .unwrap();
        fs::write(
            dir.path().join("b.json.gz"),
            packed(&fixture("v1/small.json"), Codec::Gzip),
        )
        .unwrap();
        let out = run(&["--compress", "zstd", "."], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let out = run(
            &["fmt", "--compress", "gzip", "--level", "9", "."],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        results.push(files(dir.path()));
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(
        results[0].keys().cloned().collect::<Vec<_>>(),
        [
            "a.json",
            "a.json.bak",
            "a.json.v1.bak",
            "b.json.gz",
            "b.json.gz.bak",
            "b.json.gz.v1.bak"
        ]
        .map(PathBuf::from)
    );
}

#[test]
fn compression_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        format!("{FIXTURES}/v1/small.json"),
        dir.path().join("a.json"),
    )
    .unwrap();
    let before = files(dir.path());
    for args in [
        &["--compress", "lz4", "."][..],
        &["--compress", "gzip", "--level", "10", "."],
        &["--level", "3", "."],
        &["fmt", "--compress", "zstd", "--level", "0", "."],
        &["fmt", "--level", "3", "."],
    ] {
        let out = run(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(files(dir.path()), before, "{args:?}");
    }
    let out = run(&["--compress", "gzip", "--level", "10", "."], dir.path());
    assert!(
        stderr(&out).contains("gzip has no level 10: its levels are 1 to 9"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_output_that_differs_only_in_its_compression_is_said_to() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("in")).unwrap();
    fs::write(dir.path().join("in/p1.json"), fixture("v3/small.json")).unwrap();
    assert_eq!(
        run(&["-q", "--out-dir", "out", "in"], dir.path())
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        run(&["fmt", "-q", "--compress", "gzip", "in"], dir.path())
            .status
            .code(),
        Some(0)
    );
    let before = files(dir.path());
    let out = run(&["--out-dir", "out", "in"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("holds the same save stored as none, where this run writes it as gzip"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files(dir.path()), before);
}
