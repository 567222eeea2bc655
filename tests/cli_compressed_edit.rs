//! The commands that read or edit one save, on zstd and gzip saves: `show`, `get`, `diff`,
//! `inspect`, `validate`, `shape`, `test`, `cache`, `backups list` read them; `set` and
//! `edit` (with a scripted $EDITOR) write them back in their compression, the backup the
//! original bytes. Damaged and bomb saves are refused, every file as it was.

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{save_upgrade, stderr};
use savechain::compress::{self, Codec, Compression};
use savechain::{edit, Save, Value};

const FIXTURE: &str = "fixtures/v9/small.json";
const CODECS: [Codec; 2] = [Codec::Zstd, Codec::Gzip];

fn fixture_text() -> Vec<u8> {
    fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap()
}

/// A folder holding `slot1.json.zst` (or `.gz`): the v9 fixture stored as `codec`; its
/// name, bytes and text.
fn folder(codec: Codec) -> (tempfile::TempDir, String, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let text = fixture_text();
    let bytes = compress::compress(&text, Compression::new(codec));
    let name = format!("slot1.json{}", codec.extension());
    fs::write(dir.path().join(&name), &bytes).unwrap();
    (dir, name, bytes, text)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn text_of(bytes: &[u8]) -> Vec<u8> {
    compress::decompress(bytes, compress::DEFAULT_LIMIT)
        .unwrap()
        .into_owned()
}

/// Every file under `dir` (but the editor's temporary folder's own name) with its bytes:
/// to check that nothing was written.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let bytes = fs::read(&path).unwrap();
                files.push((path.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    files.sort();
    files
}

/// The canonical text of `text` with `path` set to `value`.
fn with(text: &[u8], path: &str, value: Value) -> Vec<u8> {
    let mut save = Save::from_slice(text).unwrap();
    edit::set(&mut save, path, value).unwrap();
    save.to_vec().unwrap()
}

/// `save-upgrade edit ARGS... FILE` in `dir`, `editor` a shell command run on the file to
/// edit, no terminal.
fn edit_with(dir: &Path, editor: &str, args: &[&str], file: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .arg("edit")
        .args(args)
        .arg(file)
        .current_dir(dir)
        .env_remove("VISUAL")
        .env("EDITOR", editor)
        .env("TMPDIR", dir.join("tmp"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn show_get_diff_and_inspect_read_compressed_saves() {
    let plain_dir = tempfile::tempdir().unwrap();
    fs::write(plain_dir.path().join("slot1.json"), fixture_text()).unwrap();
    let plain_view = stdout(&save_upgrade(&["show", "slot1.json"], plain_dir.path()));
    assert!(
        plain_view.contains(r#""hull": ["d", 0.965]"#),
        "{plain_view}"
    );
    for codec in CODECS {
        let (dir, name, bytes, text) = folder(codec);
        let before = snapshot(dir.path());
        let out = save_upgrade(&["show", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert_eq!(stdout(&out), plain_view, "{codec}");

        let out = save_upgrade(&["get", &name, "data.ship.hull"], dir.path());
        assert_eq!(
            (out.status.code(), stdout(&out).as_str()),
            (Some(0), "[\"d\", 0.965]\n"),
            "{codec}: {}",
            stderr(&out)
        );

        // Standard input, compressed.
        let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
            .args(["get", "-", "meta.version"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(stdout(&out), "9\n", "{codec}: {}", stderr(&out));

        // The same save plain and compressed: no difference; another value: one.
        fs::write(dir.path().join("plain.json"), &text).unwrap();
        let out = save_upgrade(&["diff", &name, "plain.json"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert!(stderr(&out).contains("no differences"));
        let other = with(&text, "data.ship.hull", Value::Double(0.5));
        fs::write(
            dir.path().join("other.json.gz"),
            compress::compress(&other, Compression::new(Codec::Gzip)),
        )
        .unwrap();
        let out = save_upgrade(&["diff", &name, "other.json.gz"], dir.path());
        assert_eq!(out.status.code(), Some(1), "{codec}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("~ data.ship.hull: [\"d\",0.965] -> [\"d\",0.5]"),
            "{codec}: {}",
            stdout(&out)
        );
        fs::remove_file(dir.path().join("plain.json")).unwrap();
        fs::remove_file(dir.path().join("other.json.gz")).unwrap();

        let out = save_upgrade(&["inspect", "--no-cache", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        let said = format!(
            "  {codec}-compressed: {} bytes, {} of text\n",
            bytes.len(),
            text.len()
        );
        assert!(stdout(&out).contains(&said), "{codec}: {}", stdout(&out));
        assert!(stdout(&out).contains("  version 9 (latest 9)"));
        let out = save_upgrade(&["inspect", "--json", &name], dir.path());
        let facts = savechain::text::from_slice(&out.stdout).unwrap();
        assert_eq!(facts["compression"], Value::from(codec.name()));
        assert_eq!(facts["bytes"], Value::from(bytes.len() as u64));
        assert_eq!(facts["text_bytes"], Value::from(text.len() as u64));
        assert_eq!(facts["version"], Value::from(9u64));

        assert_eq!(snapshot(dir.path()), before, "{codec}: nothing written");
    }
}

#[test]
fn a_plain_save_is_inspected_as_plain() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("slot1.json"), fixture_text()).unwrap();
    let out = save_upgrade(&["inspect", "--json", "slot1.json"], dir.path());
    let facts = savechain::text::from_slice(&out.stdout).unwrap();
    assert_eq!(facts["compression"], Value::from("none"));
    assert_eq!(facts["bytes"], facts["text_bytes"]);
    let out = save_upgrade(&["inspect", "--no-cache", "slot1.json"], dir.path());
    assert!(!stdout(&out).contains("compressed"), "{}", stdout(&out));
}

#[test]
fn set_writes_the_same_compression_back_and_keeps_the_original_bytes() {
    for codec in CODECS {
        let (dir, name, bytes, text) = folder(codec);
        let out = save_upgrade(&["set", &name, "data.ship.hull", "0.5"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("the original is kept as {name}.bak")),
            "{codec}: {}",
            stderr(&out)
        );
        let expected = with(&text, "data.ship.hull", Value::Double(0.5));
        let written = fs::read(dir.path().join(&name)).unwrap();
        assert_eq!(Codec::of(&written), codec);
        assert_eq!(text_of(&written), expected, "{codec}");
        // At the codec's default level, reproducibly.
        assert_eq!(
            written,
            compress::compress(&expected, Compression::new(codec))
        );
        assert_eq!(
            fs::read(dir.path().join(format!("{name}.bak"))).unwrap(),
            bytes
        );
        assert!(!stderr(&out).contains("now stored as"), "{}", stderr(&out));

        // The same value again: nothing written.
        let before = snapshot(dir.path());
        let out = save_upgrade(&["set", &name, "data.ship.hull", "0.5"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert_eq!(snapshot(dir.path()), before, "{codec}");

        // A refused change writes nothing either.
        let out = save_upgrade(&["set", &name, "data.ship.hull", "\"full\""], dir.path());
        assert_eq!(out.status.code(), Some(2), "{codec}: {}", stderr(&out));
        assert_eq!(snapshot(dir.path()), before, "{codec}");
    }
}

#[test]
fn set_with_compress_stores_the_save_as_asked() {
    let (dir, name, bytes, text) = folder(Codec::Zstd);
    let out = save_upgrade(
        &[
            "set",
            "--compress",
            "gzip",
            "--level",
            "9",
            &name,
            "data.ship.hull",
            "0.25",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "note: {name} is now stored as gzip level 9 (it was zstd)"
        )),
        "{}",
        stderr(&out)
    );
    let expected = with(&text, "data.ship.hull", Value::Double(0.25));
    let gzip9 = Compression::with_level(Codec::Gzip, 9).unwrap();
    assert_eq!(
        fs::read(dir.path().join(&name)).unwrap(),
        compress::compress(&expected, gzip9)
    );
    assert_eq!(
        fs::read(dir.path().join(format!("{name}.bak"))).unwrap(),
        bytes
    );

    let gzip_bytes = fs::read(dir.path().join(&name)).unwrap();
    let out = save_upgrade(
        &[
            "set",
            "--compress",
            "none",
            &name,
            "data.ship.hull",
            "0.125",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read(dir.path().join(&name)).unwrap(),
        with(&text, "data.ship.hull", Value::Double(0.125)),
        "plain text, whatever the name"
    );
    assert_eq!(
        fs::read(dir.path().join(format!("{name}.1.bak"))).unwrap(),
        gzip_bytes
    );

    // A level the codec does not have: a usage error, nothing written.
    let before = snapshot(dir.path());
    let out = save_upgrade(
        &[
            "set",
            "--compress",
            "zstd",
            "--level",
            "30",
            &name,
            "data.ship.hull",
            "1",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("zstd has no level 30"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn edit_opens_the_text_and_writes_it_back_compressed() {
    for codec in CODECS {
        let (dir, name, bytes, text) = folder(codec);
        // The editor notes the name and first bytes of what it opened, then edits.
        fs::write(
            dir.path().join("editor.sh"),
            "basename \"$1\" > opened-name; head -c 1 \"$1\" > opened-head; \
             sed -i 's/\\[\"d\", 0.965\\]/0.5/' \"$1\"\n",
        )
        .unwrap();
        let out = edit_with(dir.path(), "sh editor.sh", &[], &name);
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert_eq!(
            fs::read_to_string(dir.path().join("opened-name")).unwrap(),
            "slot1.json\n",
            "{codec}: named as its text, so no editor decompresses it"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("opened-head")).unwrap(),
            "{"
        );
        let expected = with(&text, "data.ship.hull", Value::Double(0.5));
        let written = fs::read(dir.path().join(&name)).unwrap();
        assert_eq!(
            written,
            compress::compress(&expected, Compression::new(codec)),
            "{codec}"
        );
        assert_eq!(
            fs::read(dir.path().join(format!("{name}.bak"))).unwrap(),
            bytes
        );
        assert_eq!(
            fs::read_dir(dir.path().join("tmp")).unwrap().count(),
            0,
            "{codec}: the draft is gone"
        );

        // --compress none: the same edit stored as plain text.
        let out = edit_with(
            dir.path(),
            "sed -i 's/\"hull\": \\[\"d\", 0.5\\]/\"hull\": 0.75/'",
            &["--compress", "none"],
            &name,
        );
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert_eq!(
            fs::read(dir.path().join(&name)).unwrap(),
            with(&text, "data.ship.hull", Value::Double(0.75))
        );
        assert_eq!(
            fs::read(dir.path().join(format!("{name}.1.bak"))).unwrap(),
            written
        );
    }
}

#[test]
fn an_edit_not_written_leaves_the_compressed_save_and_keeps_the_text() {
    for codec in CODECS {
        let (dir, name, bytes, _) = folder(codec);
        // Nothing changed: nothing written, nothing kept.
        let before = snapshot(dir.path());
        let out = edit_with(dir.path(), "true", &[], &name);
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert!(stderr(&out).contains("no change; nothing written"));
        assert_eq!(snapshot(dir.path()), before, "{codec}");

        // Not a save any more: the save as it was, the edit kept as text beside it.
        let out = edit_with(dir.path(), r#"sed -i 's/"hull"/hull/'"#, &[], &name);
        assert_eq!(out.status.code(), Some(2), "{codec}: {}", stderr(&out));
        assert_eq!(fs::read(dir.path().join(&name)).unwrap(), bytes);
        let kept = dir.path().join(format!("{name}.edit.bak"));
        let kept_text = fs::read_to_string(&kept).unwrap();
        assert!(kept_text.contains("hull: [\"d\", 0.965]"), "{kept_text}");
        assert!(!dir.path().join(format!("{name}.bak")).exists());
    }
}

/// The compressed save `bytes` damaged: cut short, and one byte inside changed.
fn damaged(bytes: &[u8]) -> [(&'static str, Vec<u8>); 2] {
    let mut flipped = bytes.to_vec();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    [
        ("truncated", bytes[..bytes.len() * 2 / 3].to_vec()),
        ("a byte flipped", flipped),
    ]
}

/// Each command that reads one save, on the save `name` in `dir`.
fn reading_commands(name: &str) -> Vec<Vec<String>> {
    let commands: [&[&str]; 10] = [
        &["show", name],
        &["get", name, "meta.version"],
        &["set", name, "data.ship.hull", "0.5"],
        &["diff", name, name],
        &["inspect", name],
        &["validate", name],
        &["shape", "check", name],
        &["cache", "build", name],
        &["cache", "verify", name],
        &["backups", "list", name],
    ];
    commands
        .iter()
        .map(|words| words.iter().map(|w| w.to_string()).collect())
        .collect()
}

/// Runs every command that reads or edits one save on the save `name` in `dir`, checking
/// each fails saying `says` about `name` and writes nothing.
fn assert_refused_everywhere(dir: &Path, name: &str, says: &str, what: &str) {
    let before = snapshot(dir);
    for command in reading_commands(name) {
        let words: Vec<&str> = command.iter().map(String::as_str).collect();
        let out = save_upgrade(&words, dir);
        let err = stderr(&out);
        if words[0] == "backups" {
            // A listing of backups names the save's version as unreadable, and goes on.
            assert_eq!(out.status.code(), Some(0), "{what}: {words:?}: {err}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{what}: {words:?}: {err}");
            assert!(
                err.contains(name) && err.contains(says),
                "{what}: {words:?}: {err}"
            );
        }
        assert_eq!(snapshot(dir), before, "{what}: {words:?} wrote");
    }
    let out = edit_with(dir, "sed -i s/0.965/0.5/", &[], name);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{what}: edit: {err}");
    assert!(
        err.contains(name) && err.contains(says),
        "{what}: edit: {err}"
    );
    assert_eq!(snapshot(dir), before, "{what}: edit wrote");
}

#[test]
fn damaged_compressed_saves_are_refused_by_every_command_with_nothing_written() {
    for codec in CODECS {
        let (dir, name, bytes, _) = folder(codec);
        // A backup to list, and a cache from before the damage.
        fs::write(dir.path().join(format!("{name}.bak")), &bytes).unwrap();
        let out = save_upgrade(&["cache", "build", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        for (what, bad) in damaged(&bytes) {
            fs::write(dir.path().join(&name), &bad).unwrap();
            let says = format!("the {codec} data is damaged");
            assert_refused_everywhere(dir.path(), &name, &says, &format!("{codec} {what}"));
        }
    }
}

/// A zstd or gzip save whose text is one byte past the 1 GiB limit, compressed to a
/// thousandth of that or less (made in pieces).
fn bomb(codec: Codec) -> Vec<u8> {
    fn fill(out: &mut impl Write) {
        let head = b"{\"meta\": {\"version\": 9}, \"data\": \"";
        out.write_all(head).unwrap();
        let spaces = vec![b' '; 1 << 20];
        let mut written = head.len() as u64;
        while written <= compress::DEFAULT_LIMIT {
            let n = spaces
                .len()
                .min((compress::DEFAULT_LIMIT + 1 - written) as usize);
            out.write_all(&spaces[..n]).unwrap();
            written += n as u64;
        }
    }
    match codec {
        Codec::Zstd => {
            let mut out = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
            fill(&mut out);
            out.finish().unwrap()
        }
        _ => {
            let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            fill(&mut out);
            out.finish().unwrap()
        }
    }
}

#[test]
fn bombs_stop_at_the_limit_with_nothing_written() {
    // One command that reads, one that writes, edit, and the cache: each stops at 1 GiB of
    // text (decompressing that much takes a second or so per command).
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("tmp")).unwrap();
        let name = format!("bomb.json{}", codec.extension());
        let bytes = bomb(codec);
        assert!(bytes.len() < 8 << 20, "{codec}: {}", bytes.len());
        fs::write(dir.path().join(&name), &bytes).unwrap();
        let before = snapshot(dir.path());
        let says = "more than 1073741824 bytes, the limit";
        let mut commands = vec![
            vec!["set", &name, "data", "1"],
            vec!["cache", "build", &name],
        ];
        if codec == Codec::Zstd {
            commands.push(vec!["show", &name]);
            commands.push(vec!["inspect", &name]);
        }
        for words in commands {
            let out = save_upgrade(&words, dir.path());
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{codec} {words:?}: {err}");
            assert!(
                err.contains(&name) && err.contains(says),
                "{codec} {words:?}: {err}"
            );
            assert_eq!(snapshot(dir.path()), before, "{codec} {words:?} wrote");
        }
        if codec == Codec::Zstd {
            let out = edit_with(dir.path(), "true", &[], &name);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "edit: {err}");
            assert!(err.contains(says), "edit: {err}");
            assert_eq!(snapshot(dir.path()), before, "edit wrote");
        }
    }
}

#[test]
fn a_compressed_save_named_json_and_a_plain_one_named_zst_are_read_by_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let text = fixture_text();
    fs::write(
        dir.path().join("packed.json"),
        compress::compress(&text, Compression::new(Codec::Gzip)),
    )
    .unwrap();
    fs::write(dir.path().join("plain.json.zst"), &text).unwrap();
    let out = save_upgrade(&["diff", "packed.json", "plain.json.zst"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Each written back as it was: gzip stays gzip, plain stays plain.
    for (name, codec) in [
        ("packed.json", Codec::Gzip),
        ("plain.json.zst", Codec::Plain),
    ] {
        let out = save_upgrade(&["set", name, "data.ship.hull", "0.5"], dir.path());
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let written = fs::read(dir.path().join(name)).unwrap();
        assert_eq!(Codec::of(&written), codec, "{name}");
        assert_eq!(
            text_of(&written),
            with(&text, "data.ship.hull", Value::Double(0.5))
        );
    }
}

#[test]
fn validate_shape_and_backups_read_compressed_saves() {
    for codec in CODECS {
        let (dir, name, _, _) = folder(codec);
        let out = save_upgrade(&["validate", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert!(stderr(&out).contains("1 matches"), "{}", stderr(&out));
        let out = save_upgrade(&["shape", "check", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));

        // The shape inferred from the compressed save is the plain one's.
        fs::write(dir.path().join("plain.json"), fixture_text()).unwrap();
        let packed = save_upgrade(&["shape", "infer", &name], dir.path());
        let plain = save_upgrade(&["shape", "infer", "plain.json"], dir.path());
        assert_eq!(packed.status.code(), Some(0), "{}", stderr(&packed));
        assert_eq!(stdout(&packed), stdout(&plain), "{codec}");

        // A value the game does not read, in the compressed save: found.
        let out = save_upgrade(
            &[
                "set",
                "--ignore-shape",
                "--change-kind",
                &name,
                "data.ship.hull",
                "\"full\"",
            ],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        let out = save_upgrade(&["validate", &name], dir.path());
        assert_eq!(out.status.code(), Some(1), "{codec}: {}", stderr(&out));
        assert!(
            stdout(&out).contains(&format!("{name}: data.ship.hull")),
            "{codec}: {}",
            stdout(&out)
        );

        // The backup that set made is listed, with its version.
        let out = save_upgrade(&["backups", "list", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        let listed = stdout(&out);
        assert!(
            listed.contains("version 9") && listed.contains("edit, set, fmt or restore"),
            "{codec}: {listed}"
        );

        // Restored: the backup's bytes, compressed as they were.
        let edited = fs::read(dir.path().join(&name)).unwrap();
        let backup = format!("{name}.bak");
        let out = save_upgrade(&["backups", "restore", &name, &backup], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert_eq!(
            fs::read(dir.path().join(&name)).unwrap(),
            fs::read(dir.path().join(&backup)).unwrap()
        );
        assert_eq!(
            fs::read(dir.path().join(format!("{name}.1.bak"))).unwrap(),
            edited
        );
    }
}

#[test]
fn the_cache_command_builds_and_verifies_compressed_saves_by_their_bytes() {
    for codec in CODECS {
        let (dir, name, bytes, text) = folder(codec);
        let out = save_upgrade(&["cache", "verify", &name], dir.path());
        assert_eq!(out.status.code(), Some(1), "{codec}: {}", stderr(&out));
        let out = save_upgrade(&["cache", "build", &name], dir.path());
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        assert_eq!(stdout(&out), format!("{name}: built\n"));
        assert!(dir.path().join(format!("{name}.cache")).exists());
        assert_eq!(fs::read(dir.path().join(&name)).unwrap(), bytes, "{codec}");
        let out = save_upgrade(&["cache", "verify", &name], dir.path());
        assert_eq!(stdout(&out), format!("{name}: ok\n"), "{}", stderr(&out));
        let out = save_upgrade(&["inspect", &name], dir.path());
        assert!(
            stdout(&out).contains("loads from its cache"),
            "{}",
            stdout(&out)
        );

        // The same text at another level is other bytes: the cache is not trusted.
        let other = Compression::with_level(codec, *codec.levels().start()).unwrap();
        let recompressed = compress::compress(&text, other);
        assert_ne!(recompressed, bytes);
        fs::write(dir.path().join(&name), &recompressed).unwrap();
        let out = save_upgrade(&["cache", "verify", &name], dir.path());
        assert_eq!(out.status.code(), Some(1), "{codec}: {}", stderr(&out));
        assert_eq!(
            stdout(&out),
            format!("{name}: the save changed since the cache was made\n")
        );

        // A folder search takes neither the cache nor the backup of a compressed save for
        // a save.
        fs::write(dir.path().join(format!("{name}.bak")), &bytes).unwrap();
        fs::write(dir.path().join("plain.json"), fixture_text()).unwrap();
        let out = save_upgrade(&["cache", "verify", "."], dir.path());
        let said = stdout(&out) + &stderr(&out);
        assert!(said.contains("plain.json: there is no cache"), "{said}");
        assert!(
            !said.contains(".cache:") && !said.contains(".bak:"),
            "{said}"
        );
    }
}

/// The fixtures of a chain, compressed (named `.json`, as any folder search finds them):
/// upgraded, compared by their text with expected forms plain or compressed, and blessed in
/// their own compression.
#[test]
fn test_compares_compressed_fixtures_by_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let v1 =
        fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/v1/small.json")).unwrap();
    fs::create_dir_all(root.join("plain/fixtures")).unwrap();
    fs::write(root.join("plain/fixtures/small.json"), &v1).unwrap();
    let out = save_upgrade(&["test", "--bless", "plain/fixtures"], root);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected_text = fs::read(root.join("plain/expected/small.json")).unwrap();

    for codec in CODECS {
        let at = root.join(codec.name());
        fs::create_dir_all(at.join("fixtures")).unwrap();
        fs::write(
            at.join("fixtures/small.json"),
            compress::compress(&v1, Compression::new(codec)),
        )
        .unwrap();
        let out = save_upgrade(&["test", "--bless", "fixtures"], &at);
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        let blessed = fs::read(at.join("expected/small.json")).unwrap();
        assert_eq!(Codec::of(&blessed), codec, "blessed as the fixture is");
        assert_eq!(text_of(&blessed), expected_text);

        let before = snapshot(&at);
        let out = save_upgrade(&["test", "fixtures"], &at);
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        // A plain expected form of the same text matches too.
        fs::write(at.join("expected/small.json"), &expected_text).unwrap();
        let out = save_upgrade(&["test", "fixtures"], &at);
        assert_eq!(out.status.code(), Some(0), "{codec}: {}", stderr(&out));
        fs::write(at.join("expected/small.json"), &blessed).unwrap();
        assert_eq!(snapshot(&at), before);

        // A damaged fixture fails, naming it.
        let bytes = fs::read(at.join("fixtures/small.json")).unwrap();
        fs::write(at.join("fixtures/small.json"), &bytes[..bytes.len() / 2]).unwrap();
        let before = snapshot(&at);
        let out = save_upgrade(&["test", "--bless", "fixtures"], &at);
        assert_eq!(out.status.code(), Some(2), "{codec}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("the {codec} data is damaged")),
            "{}",
            stderr(&out)
        );
        assert_eq!(snapshot(&at), before, "{codec}: nothing blessed");
    }
}

#[test]
fn compress_with_no_change_writes_nothing_and_says_how_to_convert() {
    let (dir, name, bytes, _) = folder(Codec::Zstd);
    let set = save_upgrade(
        &["set", "--compress", "gzip", &name, "meta.version", "9"],
        dir.path(),
    );
    let edited = edit_with(dir.path(), "true", &["--compress", "gzip"], &name);
    for out in [set, edited] {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let says = format!("save-upgrade fmt --compress gzip {name}");
        assert!(stderr(&out).contains(&says), "{}", stderr(&out));
        assert_eq!(fs::read(dir.path().join(&name)).unwrap(), bytes);
    }
}
