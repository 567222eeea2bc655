//! `savechain::head`: a save's meta read from the head of its file, plain, zstd and gzip;
//! what it costs on a big save; the old order read whole; damaged heads; and listings.

mod common;

use std::path::Path;

use proptest::prelude::*;
use savechain::compress::{self, Codec, Compression};
use savechain::head::{self, Status};
use savechain::upgrade::{Chain, Mod, Step};
use savechain::{ErrorKind, Map, Options, Save, Value};

/// The text of `save` with `meta` first (format revision 3's order), built from the
/// library's own value writer whatever order `Save::to_vec` has.
fn meta_first(save: &Save) -> Vec<u8> {
    envelope(&[("meta", &save.meta.to_value()), ("data", &save.data)])
}

/// The text of `save` with `data` first: a save written before revision 3.
fn data_first(save: &Save) -> Vec<u8> {
    envelope(&[("data", &save.data), ("meta", &save.meta.to_value())])
}

fn envelope(members: &[(&str, &Value)]) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b",");
        }
        out.extend_from_slice(format!("\n  \"{key}\": ").as_bytes());
        out.extend_from_slice(&savechain::text::to_vec_compact(value).unwrap());
    }
    out.extend_from_slice(b"\n}\n");
    out
}

/// A save of about `size` bytes of text, whose data is varied enough not to compress to
/// nothing.
fn big_save(size: usize) -> Save {
    let items = (0..size / 24)
        .map(|i| Value::from(format!("item {i} {}", i * 7919 % 1000)))
        .collect();
    let mut save = Save::new(4, Value::Array(items)).with_writer("1.2.3".parse().unwrap());
    save.meta
        .extra
        .insert("game", Value::from("Starlane Traders"));
    save
}

const CODECS: [Codec; 3] = [Codec::Plain, Codec::Zstd, Codec::Gzip];

fn write(dir: &Path, name: &str, text: &[u8], codec: Codec) -> std::path::PathBuf {
    write_as(
        dir,
        &format!("{name}.json{}", codec.extension()),
        text,
        codec,
    )
}

/// A file named `file_name` holding `text` stored as `codec`: the name plays no part in
/// reading (and folder searches find `*.json` whatever it holds).
fn write_as(dir: &Path, file_name: &str, text: &[u8], codec: Codec) -> std::path::PathBuf {
    let path = dir.join(file_name);
    std::fs::write(&path, compress::compress(text, Compression::new(codec))).unwrap();
    path
}

#[test]
fn the_head_of_a_big_save_is_all_that_is_read_in_every_codec() {
    let dir = tempfile::tempdir().unwrap();
    let save = big_save(5 << 20);
    let text = meta_first(&save);
    for codec in CODECS {
        let path = write(dir.path(), "big", &text, codec);
        let head = head::read(&path).unwrap();
        assert_eq!(head.meta, save.meta, "{codec}");
        assert_eq!(head.codec, codec);
        assert!(!head.whole);
        assert_eq!(head.size, std::fs::metadata(&path).unwrap().len());
        assert!(head.modified.is_some());
        assert_eq!(head.game(), Some("Starlane Traders"));
        assert!(
            head.text_read <= head::FIRST_READ as u64,
            "{codec}: {} bytes of text",
            head.text_read
        );
        // savechain's writers end a block after the first 4 KiB of text.
        assert!(
            head.bytes_read <= 2 * head::FIRST_READ as u64,
            "{codec}: read {} of {} bytes",
            head.bytes_read,
            head.size
        );
    }
}

#[test]
fn a_save_in_the_old_order_is_read_whole_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let save = big_save(200_000);
    let text = data_first(&save);
    for codec in CODECS {
        let path = write(dir.path(), "old", &text, codec);
        let head = head::read(&path).unwrap();
        assert_eq!(head.meta, save.meta, "{codec}");
        assert!(head.whole);
        assert_eq!(head.text_read, text.len() as u64);
        assert_eq!(head.meta, Save::load(&path).unwrap().meta);
    }
}

#[test]
fn what_the_library_writes_is_read_as_a_whole_load_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let save = big_save(10_000);
    for codec in CODECS {
        let path = dir.path().join(format!("stored.json{}", codec.extension()));
        save.store_with(&path, Compression::new(codec)).unwrap();
        let head = head::read(&path).unwrap();
        assert_eq!(head.meta, save.meta);
        assert_eq!(head.codec, codec);
    }
}

#[test]
fn meta_longer_than_the_first_read_is_read_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut save = big_save(300_000);
    // A history of 200 KiB, with a character of two bytes across every boundary.
    let history: Vec<Value> = (0..4000)
        .map(|i| Value::from(format!("é step {i} of a long and winding history é")))
        .collect();
    save.meta.extra.insert("history", Value::Array(history));
    let text = meta_first(&save);
    for codec in CODECS {
        let path = write(dir.path(), "long", &text, codec);
        let head = head::read(&path).unwrap();
        assert_eq!(head.meta, save.meta, "{codec}");
        assert!(!head.whole);
        assert!(head.text_read > head::FIRST_READ as u64);
        assert!(
            head.text_read < text.len() as u64,
            "{codec}: {}",
            head.text_read
        );
    }
}

/// Whatever falls at the end of the first read (here arrays that look like tags, whose
/// escape is told by the bracket after them, and characters of several bytes) reads as
/// it does in the whole text.
#[test]
fn any_cut_of_a_long_meta_reads_on() {
    let dir = tempfile::tempdir().unwrap();
    let looks_like_a_tag = |i: i64| {
        Value::Array(vec![
            Value::from("b"),
            Value::Array(vec![Value::from("d"), Value::Int(i), Value::from("ü€")]),
        ])
    };
    // Every cut within an entry, one of them between an escaped array and its escape's end.
    for shift in 0..40 {
        let mut save = Save::new(3, Value::Array(vec![Value::from("data"); 10_000]));
        save.meta
            .extra
            .insert("a-pad", Value::from("x".repeat(shift)));
        let history: Vec<Value> = (0..3000).map(looks_like_a_tag).collect();
        save.meta.extra.insert("history", Value::Array(history));
        let text = meta_first(&save);
        assert!(
            text.windows(6).any(|w| w == b"[\"a\",["),
            "the writer escapes them"
        );
        let path = write(dir.path(), "tags", &text, Codec::Plain);
        let head = head::read(&path).unwrap();
        assert_eq!(head.meta, save.meta, "shifted by {shift}");
        assert!(!head.whole && head.text_read > head::FIRST_READ as u64);
    }
}

#[test]
fn any_cut_of_long_strings_and_numbers_in_meta_reads_on() {
    let dir = tempfile::tempdir().unwrap();
    for shift in 0..24 {
        let mut save = Save::new(3, Value::Array(vec![Value::from("data"); 10_000]));
        save.meta
            .extra
            .insert("a-pad", Value::from("x".repeat(shift)));
        // Strings longer than every read, escapes among them, and numbers everywhere.
        let long = "é\\\"\u{1}".repeat(3000);
        let entries: Vec<Value> = (0..400)
            .map(|i| {
                Value::Array(vec![
                    Value::from(long.as_str()),
                    Value::Int(-1234567890123 - i),
                    Value::Double(0.1 * i as f64),
                ])
            })
            .collect();
        save.meta.extra.insert("log", Value::Array(entries));
        let text = meta_first(&save);
        let path = write(dir.path(), "strings", &text, Codec::Plain);
        let head = head::read(&path).unwrap();
        assert_eq!(head.meta, save.meta, "shifted by {shift}");
    }
}

#[test]
fn junk_is_refused_from_its_first_bytes_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut junk = b"x".to_vec();
    junk.resize(8 << 20, b' ');
    let mut damaged = b"{\"meta\": {\"version\": 3, \"slot\": tru}".to_vec();
    damaged.resize(8 << 20, b' ');
    for (name, text, place) in [("junk", &junk, (1, 1)), ("damaged", &damaged, (1, 33))] {
        for codec in CODECS {
            let path = write(dir.path(), name, text, codec);
            let err = head::read(&path).unwrap_err();
            assert_eq!(
                (err.line(), err.column()),
                (Some(place.0), Some(place.1)),
                "{name} {codec}: {err}"
            );
            let whole = savechain::Meta::from_slice(text).unwrap_err();
            assert_eq!(
                (err.line(), err.column()),
                (whole.line(), whole.column()),
                "{name} {codec}"
            );
        }
    }
}

#[test]
fn a_damaged_head_names_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    type Case = (&'static str, ErrorKind, Option<(usize, usize)>);
    let cases: [Case; 7] = [
        (
            "{\n  \"meta\": {\"version\": 3,}, \"data\": 1}",
            ErrorKind::Syntax,
            Some((2, 25)),
        ),
        (
            "{\"meta\": {\"version\": \"three\"}, \"data\": 1}",
            ErrorKind::NotASave,
            Some((1, 22)),
        ),
        (
            "{\"meta\": {\"version\": 3, \"writer\": \"new\"}, \"data\": 1}",
            ErrorKind::Envelope,
            Some((1, 35)),
        ),
        (
            "{\"meta\": {\"version\": 3",
            ErrorKind::Syntax,
            Some((1, 23)),
        ),
        ("\u{1}garbage", ErrorKind::Syntax, Some((1, 1))),
        ("{\"settings\": {\"volume\": 3}}", ErrorKind::NotASave, None),
        // What follows meta is looked at as far as a whole read would first.
        (
            "{\"meta\": {\"version\": 3} \"data\": 1}",
            ErrorKind::Syntax,
            Some((1, 25)),
        ),
    ];
    for (text, kind, at) in cases {
        for codec in CODECS {
            let path = write(dir.path(), "bad", text.as_bytes(), codec);
            let err = head::read(&path).unwrap_err();
            assert_eq!(err.kind(), kind, "{text} {codec}: {err}");
            assert_eq!(err.file(), Some(path.as_path()));
            if let Some((line, column)) = at {
                assert_eq!(
                    (err.line(), err.column()),
                    (Some(line), Some(column)),
                    "{err}"
                );
            }
        }
    }
}

#[test]
fn damaged_compressed_data_in_the_head_is_an_error_of_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let text = meta_first(&big_save(100_000));
    for codec in [Codec::Zstd, Codec::Gzip] {
        let mut packed = compress::compress(&text, Compression::new(codec));
        for byte in &mut packed[20..60] {
            *byte ^= 0x5a;
        }
        let path = dir.path().join("bad.json.zst");
        std::fs::write(&path, &packed).unwrap();
        let err = head::read(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("the {codec} data is damaged")),
            "{err}"
        );
        assert_eq!(err.file(), Some(path.as_path()));

        let cut = &compress::compress(&text, Compression::new(codec))[..12];
        std::fs::write(&path, cut).unwrap();
        let err = head::read(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
    }
}

#[test]
fn a_bomb_stops_at_the_limit_and_plain_text_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"                                                                  ".repeat(40_000);
    let path = write(dir.path(), "bomb", &text, Codec::Zstd);
    let mut options = Options::default();
    options.max_text = 100_000;
    let err = head::read_with(&path, &options).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Compressed);
    assert!(err.to_string().contains("more than 100000 bytes"), "{err}");

    let path = write(
        dir.path(),
        "plain",
        &meta_first(&big_save(300_000)),
        Codec::Plain,
    );
    assert!(head::read_with(&path, &options).is_ok());
}

#[test]
fn a_fifo_is_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pipe.json");
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let err = head::read(&path).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

fn chain() -> Chain {
    let step = |from| Step::rust(from, "nothing", "1", |_, _| Ok(()));
    let tinker = Mod::new("tinker", "1.0.0", vec![step(1)]).unwrap();
    Chain::new("2.0.0", vec![step(1), step(2), step(3)])
        .unwrap()
        .with_mods(vec![tinker])
        .unwrap()
}

fn meta_save(version: u64, mods: Option<Value>) -> Save {
    let mut save = Save::new(version, Value::Object(Map::new()));
    if let Some(mods) = mods {
        save.meta.extra.insert("mods", mods);
    }
    save
}

#[test]
fn a_listing_tells_each_save_where_it_stands_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let mods = |v: u64| {
        Some(savechain::text::from_str(&format!(r#"{{"tinker": {{"version": {v}}}}}"#)).unwrap())
    };
    let d = dir.path();
    write_as(
        d,
        "a-current.json",
        &meta_first(&meta_save(4, mods(2))),
        Codec::Zstd,
    );
    write_as(
        d,
        "b-old.json",
        &meta_first(&meta_save(2, mods(2))),
        Codec::Gzip,
    );
    write_as(
        d,
        "c-mod-old.json",
        &meta_first(&meta_save(4, mods(1))),
        Codec::Plain,
    );
    write_as(
        d,
        "d-too-new.json",
        &meta_first(&meta_save(9, None)),
        Codec::Plain,
    );
    write_as(
        d,
        "e-damaged.json",
        b"{\"meta\": {\"version\": 4,,",
        Codec::Zstd,
    );
    write_as(
        d,
        "f-old-order.json",
        &data_first(&meta_save(3, None)),
        Codec::Plain,
    );
    std::fs::write(d.join("settings.json"), r#"{"volume": 3}"#).unwrap();
    std::fs::write(d.join("notes.txt"), "not looked at").unwrap();

    let listing = head::list(&[d], Some(&chain()), &Options::default());
    let seen: Vec<(String, String, String)> = listing
        .saves
        .iter()
        .map(|s| {
            let name = s.path.file_name().unwrap().to_string_lossy().into_owned();
            (name, s.status.word().to_string(), s.status.to_string())
        })
        .collect();
    let words: Vec<(&str, &str)> = seen
        .iter()
        .map(|(n, w, _)| (n.as_str(), w.as_str()))
        .collect();
    assert_eq!(
        words,
        [
            ("a-current.json", "current"),
            ("b-old.json", "outdated"),
            ("c-mod-old.json", "outdated"),
            ("d-too-new.json", "too-new"),
            ("e-damaged.json", "damaged"),
            ("f-old-order.json", "outdated"),
        ]
    );
    assert_eq!(seen[1].2, "needs upgrade to 4");
    assert_eq!(seen[2].2, "needs upgrade to 4, mod tinker to 2");
    assert!(
        seen[3].2.starts_with("too new: the save is version 9"),
        "{}",
        seen[3].2
    );
    assert!(
        seen[4]
            .2
            .starts_with("damaged: 1:24: at meta: expected a key"),
        "{}",
        seen[4].2
    );
    assert!(listing.saves[5].head.as_ref().unwrap().whole);
    assert_eq!(
        listing.saves[0].head.as_ref().unwrap().mods(),
        [("tinker", Some(2))]
    );
    let codecs: Vec<Codec> = listing.saves[..3]
        .iter()
        .map(|s| s.head.as_ref().unwrap().codec)
        .collect();
    assert_eq!(codecs, [Codec::Zstd, Codec::Gzip, Codec::Plain]);
    assert_eq!(listing.skipped.len(), 1, "{:?}", listing.skipped);
    assert!(listing.skipped[0].0.ends_with("settings.json"));
    assert!(listing.needs_attention());

    let named = write(d, "named", &meta_first(&meta_save(4, None)), Codec::Zstd);
    let unchecked = head::list(&[named], None, &Options::default());
    assert!(matches!(unchecked.saves[0].status, Status::Unchecked));
    assert!(!unchecked.needs_attention());
}

#[test]
fn a_listing_streams_and_stops_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..300 {
        let name = format!("s{i:03}.json");
        write_as(
            dir.path(),
            &name,
            &meta_first(&meta_save(4, None)),
            Codec::Zstd,
        );
    }
    let plan = savechain::batch::Plan::find(&[dir.path()]);
    let mut names = Vec::new();
    head::list_each(&plan.saves, None, &Options::default(), |listed| {
        names.push(
            listed
                .path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
        match names.len() {
            150 => std::ops::ControlFlow::Break(()),
            _ => std::ops::ControlFlow::Continue(()),
        }
    });
    assert_eq!(names.len(), 150);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The head of any save, in any codec, says what a whole read says; and a byte of its
    /// text damaged anywhere never makes the head say something else: when the whole text
    /// still reads, the head reads the same meta, and when the head fails, so does the
    /// whole (the head may read where the whole fails: damage past `meta` is not seen).
    #[test]
    fn the_head_says_what_the_whole_text_says(
        extra in prop::collection::vec(("[a-z\u{e9}]{1,6}", common::any_value()), 0..4),
        data in common::any_value(),
        version in 0u64..1000,
        codec in prop::sample::select(CODECS.to_vec()),
        damage in proptest::option::of((any::<prop::sample::Index>(), any::<u8>())),
    ) {
        let mut save = Save::new(version, data);
        for (key, value) in extra {
            if key != "version" && key != "writer" {
                save.meta.extra.insert(key.as_str(), value);
            }
        }
        let mut text = meta_first(&save);
        if let Some((at, byte)) = damage {
            let at = at.index(text.len());
            text[at] = byte;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "any", &text, codec);
        let whole = savechain::Meta::from_slice(&text);
        let head = head::read(&path);
        match (&whole, &head) {
            (Ok(whole), Ok(head)) => prop_assert_eq!(whole, &head.meta),
            (Ok(whole), Err(e)) => prop_assert!(false, "the whole reads {:?}, the head fails: {}", whole, e),
            (Err(_), Ok(_)) => prop_assert!(damage.is_some()),
            (Err(w), Err(h)) => {
                prop_assert_eq!(w.kind(), h.kind(), "whole: {}; head: {}", w, h);
                prop_assert_eq!(h.file(), Some(path.as_path()));
            }
        }
        if damage.is_none() {
            prop_assert_eq!(&head.unwrap().meta, &save.meta);
        }
    }
}

#[test]
fn a_byte_order_mark_is_passed_over_as_a_whole_read_passes_it() {
    let dir = tempfile::tempdir().unwrap();
    let save = meta_save(4, None);
    let mut text = b"\xEF\xBB\xBF".to_vec();
    text.extend_from_slice(&meta_first(&save));
    for codec in CODECS {
        let path = write(dir.path(), "bom", &text, codec);
        let head = head::read(&path).unwrap();
        assert_eq!(head.meta, save.meta);
        assert!(!head.whole);
    }
    let path = write(
        dir.path(),
        "bom-bad",
        b"\xEF\xBB\xBF{\"meta\": {\"version\": x}}",
        Codec::Plain,
    );
    let err = head::read(&path).unwrap_err();
    let whole = savechain::Meta::from_slice(&std::fs::read(&path).unwrap()).unwrap_err();
    assert_eq!(
        (err.line(), err.column()),
        (whole.line(), whole.column()),
        "{err}"
    );
    assert_eq!(err.line(), Some(1), "{err}");
}
