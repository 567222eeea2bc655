//! The cache beside each save: used only when it matches, rebuilt from the JSON otherwise,
//! and read in place exactly as the JSON reads.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::any_value;
use proptest::prelude::*;
use savechain::cache::{self, cache_path, Refusal, Source};
use savechain::upgrade::Chain;
use savechain::Options;
use savechain::{Save, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

fn chain() -> Chain {
    common::starlane::chain().unwrap()
}

/// A folder with one version 1 save, and what loading it should give.
fn world() -> (tempfile::TempDir, PathBuf, Save) {
    world_of("v1/small.json")
}

/// A folder with a save already at the latest version: no upgrade to run, so the tests
/// that load thousands of times stay fast.
fn current_world() -> (tempfile::TempDir, PathBuf, Save) {
    world_of("v9/small.json")
}

fn world_of(fixture: &str) -> (tempfile::TempDir, PathBuf, Save) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    fs::copy(format!("{FIXTURES}/{fixture}"), &path).unwrap();
    let expected = chain()
        .upgrader()
        .upgrade(Save::load(&path).unwrap(), &Options::default())
        .unwrap()
        .save;
    (dir, path, expected)
}

fn load(path: &Path) -> (Source, Save) {
    let loaded = cache::load(path, &chain(), &Options::default()).unwrap();
    (loaded.source.clone(), loaded.to_save().unwrap())
}

fn reason(source: &Source) -> &Refusal {
    match source {
        Source::Json(refusal) => refusal,
        Source::Cache => panic!("the cache was trusted"),
    }
}

#[test]
fn a_cache_is_made_on_first_load_and_used_after() {
    let (_dir, path, expected) = world();
    let (source, save) = load(&path);
    assert_eq!(reason(&source), &Refusal::Missing);
    assert_eq!(save, expected);
    assert!(cache_path(&path).exists());
    let (source, save) = load(&path);
    assert_eq!(source, Source::Cache);
    assert_eq!(save, expected);
    // The JSON is untouched: it stays at its version; the cache holds the upgrade.
    assert_eq!(Save::load(&path).unwrap().meta.version, 1);
    assert_eq!(save.meta.version, 9);
}

/// Loads after damaging the cache, checks the document came from the JSON, and that the
/// cache was rewritten to what it was.
fn assert_rebuilt(path: &Path, expected: &Save, good_cache: &[u8], what: &str) {
    let (source, save) = load(path);
    assert!(
        matches!(source, Source::Json { .. }),
        "{what}: the damaged cache was used"
    );
    assert_eq!(&save, expected, "{what}");
    assert_eq!(
        fs::read(cache_path(path)).unwrap(),
        good_cache,
        "{what}: not rewritten"
    );
}

#[test]
fn every_header_byte_flipped_is_caught() {
    let (_dir, path, expected) = current_world();
    load(&path);
    let good = fs::read(cache_path(&path)).unwrap();
    for i in 0..128 {
        let mut bad = good.clone();
        bad[i] ^= 0xff;
        fs::write(cache_path(&path), &bad).unwrap();
        assert_rebuilt(&path, &expected, &good, &format!("header byte {i}"));
    }
}

#[test]
fn flipped_body_bytes_are_caught() {
    let (_dir, path, expected) = current_world();
    load(&path);
    let good = fs::read(cache_path(&path)).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let i = 128 + (seed >> 33) as usize % (good.len() - 128);
        let bit = 1u8 << ((seed >> 29) & 7);
        let mut bad = good.clone();
        bad[i] ^= bit;
        fs::write(cache_path(&path), &bad).unwrap();
        assert_rebuilt(&path, &expected, &good, &format!("body byte {i} bit {bit}"));
    }
}

#[test]
fn truncation_at_every_length_is_caught() {
    let (_dir, path, expected) = current_world();
    load(&path);
    let good = fs::read(cache_path(&path)).unwrap();
    for len in 0..good.len() {
        fs::write(cache_path(&path), &good[..len]).unwrap();
        assert_rebuilt(&path, &expected, &good, &format!("truncated to {len}"));
    }
    let mut longer = good.clone();
    longer.push(0);
    fs::write(cache_path(&path), &longer).unwrap();
    assert_rebuilt(&path, &expected, &good, "one byte longer");
}

#[test]
fn a_cache_from_another_chain_is_not_used() {
    let (dir, path, _) = world();
    let steps = dir.path().join("steps");
    fs::create_dir(&steps).unwrap();
    fs::write(steps.join("0001-nothing.lua"), "return function() end").unwrap();
    let other = Chain::from_lua_dir("1.0.0", &steps).unwrap();
    cache::load(&path, &other, &Options::default()).unwrap();
    let loaded = cache::load(&path, &chain(), &Options::default()).unwrap();
    assert_eq!(reason(&loaded.source), &Refusal::ChainChanged);
    assert_eq!(loaded.to_save().unwrap().meta.version, 9);
}

#[test]
fn a_hand_edit_of_the_json_is_always_seen() {
    let (_dir, path, _) = world();
    load(&path);
    // Same length: only the hash can tell.
    let text = fs::read_to_string(&path)
        .unwrap()
        .replace("\"credits\": 1250", "\"credits\": 9999");
    fs::write(&path, text).unwrap();
    let (source, save) = load(&path);
    assert_eq!(reason(&source), &Refusal::SaveChanged);
    let credits = save
        .data
        .get("player")
        .and_then(|p| p.get("wallet"))
        .and_then(|w| w.get("credits"));
    assert_eq!(credits, Some(&Value::Double(9999.0)));
    assert_eq!(load(&path).0, Source::Cache);
}

#[test]
fn trust_mode_checks_size_and_time_only() {
    let (_dir, path, _) = world();
    load(&path);
    let mut trust = Options::default();
    trust.trust_mtime = true;
    let loaded = cache::load(&path, &chain(), &trust).unwrap();
    assert_eq!(loaded.source, Source::Cache);
    // A new modification time is noticed.
    let file = fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(file);
    let loaded = cache::load(&path, &chain(), &trust).unwrap();
    assert_eq!(reason(&loaded.source), &Refusal::SaveTouched);
}

#[test]
fn deleting_caches_loses_nothing() {
    let (_dir, path, expected) = world();
    load(&path);
    assert!(cache::clear(&path).unwrap());
    assert!(!cache::clear(&path).unwrap());
    let (source, save) = load(&path);
    assert_eq!(reason(&source), &Refusal::Missing);
    assert_eq!(save, expected);
    assert_eq!(
        cache::verify(&path, &chain(), &Options::default()).unwrap(),
        Source::Cache
    );
}

#[test]
fn store_writes_the_json_and_its_cache() {
    let (dir, _, expected) = world();
    let path = dir.path().join("new.json");
    cache::store(&expected, &path, &chain()).unwrap();
    assert_eq!(Save::load(&path).unwrap(), expected);
    assert_eq!(load(&path), (Source::Cache, expected));
}

#[test]
fn the_view_reads_every_fixture_as_the_json_does() {
    let chain = chain();
    for entry in walkdir::WalkDir::new(FIXTURES) {
        let entry = entry.unwrap();
        if entry.path().extension().is_none_or(|e| e != "json") {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("save.json");
        fs::copy(entry.path(), &path).unwrap();
        cache::load(&path, &chain, &Options::default()).unwrap();
        let loaded = cache::load(&path, &chain, &Options::default()).unwrap();
        assert_eq!(loaded.source, Source::Cache);
        let expected = chain
            .upgrader()
            .upgrade(Save::load(&path).unwrap(), &Options::default())
            .unwrap()
            .save;
        assert_eq!(
            loaded.to_save().unwrap(),
            expected,
            "{}",
            entry.path().display()
        );

        let view = loaded.view();
        let data = view.data().unwrap();
        let ship = data.get("ship").unwrap();
        assert_eq!(
            ship.get("name").and_then(|n| n.as_str()),
            expected
                .data
                .get("ship")
                .and_then(|s| s.get("name"))
                .and_then(Value::as_str)
        );
        assert_eq!(ship.get("position").unwrap().len(), 3);
        assert!(data.get("no such key").is_none());
        let keys: Vec<&str> = data.entries().map(|(k, _)| k).collect();
        let expected_keys: Vec<&str> = expected.data.as_object().unwrap().keys().collect();
        assert_eq!(keys, expected_keys);
    }
}

#[test]
fn serde_reads_typed_state_straight_from_the_view() {
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Ship<'a> {
        name: &'a str,
        hull: f64,
        position: [f64; 3],
        cargo: Vec<Cargo>,
        dock: Option<String>,
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Cargo {
        good: String,
        count: u32,
        mass: f64,
    }
    let (_dir, path, expected) = world();
    load(&path);
    let loaded = cache::load(&path, &chain(), &Options::default()).unwrap();
    let view = loaded.view();
    let ship: Ship = cache::from_view(view.data().unwrap().get("ship").unwrap()).unwrap();
    let from_tree: Value = expected.data.get("ship").unwrap().clone();
    assert_eq!(ship.name, "Kestrel");
    assert_eq!(
        ship.cargo.len(),
        from_tree
            .get("cargo")
            .and_then(Value::as_array)
            .unwrap()
            .len()
    );
    assert_eq!(ship.dock.as_deref(), Some("sol:4"));
    let err = cache::from_view::<Vec<u8>>(view.data().unwrap().get("ship").unwrap()).unwrap_err();
    assert!(err.to_string().contains("expected a sequence"), "{err}");
}

proptest! {
    #[test]
    fn any_document_reads_back_from_a_cache(data in any_value()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("any.json");
        let save = Save::new(9, data);
        cache::store(&save, &path, &chain()).unwrap();
        let loaded = cache::load(&path, &chain(), &Options::default()).unwrap();
        prop_assert_eq!(&loaded.source, &Source::Cache);
        prop_assert_eq!(loaded.to_save().unwrap(), save.clone());
        // A `Value` read through serde from the view is the same, Lua tables included.
        let data: Value = loaded.data_as().unwrap();
        prop_assert_eq!(data, save.data);
    }
}

#[test]
fn typed_errors_from_a_cache_name_the_file_and_the_path_from_data() {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct State {
        ship: Ship,
    }
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Ship {
        name: u64,
    }
    let (_dir, path, _) = world();
    let loaded = cache::load(&path, &chain(), &Options::default()).unwrap();
    let err = loaded.data_as::<State>().unwrap_err();
    assert_eq!(err.path().to_string(), "data.ship.name");
    assert_eq!(err.file(), Some(path.as_path()));
    assert!(
        err.to_string().starts_with(&format!(
            "{}: at data.ship.name: invalid type",
            path.display()
        )),
        "{err}"
    );
    // A typed load of the JSON names the file too, with the line and column besides.
    let current = Save::load(&path).unwrap().meta.version == chain().latest();
    assert!(
        !current,
        "the fixture is old: its JSON has no ship.name to mistype"
    );
    fs::copy(format!("{FIXTURES}/v9/small.json"), &path).unwrap();
    let err = Save::load_as::<State>(&path).unwrap_err();
    assert_eq!(err.file(), Some(path.as_path()));
    assert_eq!(err.path().to_string(), "data.ship.name");
    assert!(err.line().is_some(), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("{}:{}:", path.display(), err.line().unwrap())),
        "{err}"
    );
}

/// A chain of one Lua step that prints what it sees, and fails on a save with `bad` set.
fn printing_chain() -> Chain {
    let step = savechain::upgrade::Step::lua(
        "0001-gold.lua",
        "return function(data) print('gold was', data.gold) \
         if data.bad then error('cannot read this save') end data.gold = 10 end",
    )
    .unwrap();
    Chain::new("1.1.0", vec![step]).unwrap()
}

#[test]
fn a_load_that_upgrades_says_what_its_steps_printed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    fs::write(&path, r#"{"meta": {"version": 1}, "data": {"gold": 3}}"#).unwrap();
    let chain = printing_chain();
    let loaded = cache::load(&path, &chain, &Options::default()).unwrap();
    assert_eq!(loaded.source, Source::Json(Refusal::Missing));
    let steps = loaded.steps();
    assert_eq!(steps.len(), 1);
    assert_eq!(
        (steps[0].name.as_str(), steps[0].from),
        ("0001-gold.lua", 1)
    );
    assert_eq!(steps[0].printed, ["gold was\t3"]);
    // From the cache, nothing ran.
    let again = cache::load(&path, &chain, &Options::default()).unwrap();
    assert_eq!(again.source, Source::Cache);
    assert!(again.steps().is_empty());

    // A failing step: the load fails, and the upgrader keeps what the step printed.
    fs::write(
        &path,
        r#"{"meta": {"version": 1}, "data": {"gold": 4, "bad": true}}"#,
    )
    .unwrap();
    let mut upgrader = chain.upgrader();
    let err = cache::load_with(&path, &mut upgrader, &Options::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("cannot read this save"), "{err}");
    assert_eq!(err.file(), Some(path.as_path()));
    let failed = upgrader.failed_steps();
    assert_eq!(failed.last().unwrap().printed, ["gold was\t4"]);
}

#[test]
fn saves_kept_as_bytes_load_through_their_cache_bytes() {
    let chain = chain();
    let options = Options::default();
    let mut upgrader = chain.upgrader();
    let json = fs::read(format!("{FIXTURES}/v1/small.json")).unwrap();
    let expected = chain
        .upgrader()
        .upgrade(Save::from_slice(&json).unwrap(), &options)
        .unwrap();

    let first = cache::load_bytes(&json, None, &mut upgrader, &options).unwrap();
    assert_eq!(first.source, Source::Json(Refusal::Missing));
    assert_eq!(first.to_save().unwrap(), expected.save);
    assert_eq!(first.steps().len(), expected.steps.len());
    let made = first.new_cache().expect("a new cache to keep").to_vec();

    // Given anywhere in memory (not aligned), the cache is used.
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&made);
    let again = cache::load_bytes(&json, Some(&shifted[1..]), &mut upgrader, &options).unwrap();
    assert_eq!(again.source, Source::Cache);
    assert!(again.new_cache().is_none() && again.steps().is_empty());
    assert_eq!(again.to_save().unwrap(), expected.save);

    // Refused as a file's cache would be: damaged, or made from other JSON bytes.
    let mut damaged = made.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    let refused = cache::load_bytes(&json, Some(&damaged), &mut upgrader, &options).unwrap();
    assert_eq!(refused.source, Source::Json(Refusal::Damaged));
    assert_eq!(refused.new_cache(), Some(made.as_slice()));
    let edited = String::from_utf8(json.clone())
        .unwrap()
        .replace("Kestrel", "Osprey");
    let stale = cache::load_bytes(edited.as_bytes(), Some(&made), &mut upgrader, &options);
    assert_eq!(stale.unwrap().source, Source::Json(Refusal::SaveChanged));

    // Stored through bytes, and loaded back through the cache; a file's cache, made by
    // `cache::store`, serves bytes as well, and the other way round.
    let stored = cache::store_bytes(&expected.save, &chain).unwrap();
    assert_eq!(stored.json, expected.save.to_vec().unwrap());
    let back = cache::load_bytes(&stored.json, Some(&stored.cache), &mut upgrader, &options);
    assert_eq!(back.unwrap().source, Source::Cache);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    cache::store(&expected.save, &path, &chain).unwrap();
    let file_cache = fs::read(cache_path(&path)).unwrap();
    let from_file = cache::load_bytes(&stored.json, Some(&file_cache), &mut upgrader, &options);
    assert_eq!(from_file.unwrap().source, Source::Cache);
    fs::write(cache_path(&path), &stored.cache).unwrap();
    assert_eq!(load(&path).0, Source::Cache);
}

/// A FIFO where the cache would be is never waited on nor trusted, nor replaced.
#[cfg(unix)]
#[test]
fn a_fifo_where_the_cache_would_be_is_never_waited_on() {
    let (_dir, path, expected) = world();
    let fifo = cache_path(&path);
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string, for the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    let (done, loaded) = std::sync::mpsc::channel();
    let at = path.clone();
    std::thread::spawn(move || {
        let loaded = cache::load(&at, &chain(), &Options::default());
        let verified = cache::verify(&at, &chain(), &Options::default());
        drop(done.send((loaded, verified)));
    });
    let Ok((loaded, verified)) = loaded.recv_timeout(std::time::Duration::from_secs(120)) else {
        // Let the waiting open go, so that the test ends.
        let _ = fs::OpenOptions::new().write(true).open(&fifo);
        panic!("the load waits on the FIFO");
    };
    let loaded = loaded.unwrap();
    let why = "it is a FIFO (named pipe), not a regular file";
    assert_eq!(loaded.source, Source::Json(Refusal::Unreadable(why.into())));
    assert_eq!(loaded.to_save().unwrap(), expected);
    let write_error = loaded.write_error().unwrap().to_string();
    assert!(
        write_error.contains("so it is left as it is"),
        "{write_error}"
    );
    assert_eq!(
        verified.unwrap(),
        Source::Json(Refusal::Unreadable(why.into()))
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn storing_again_keeps_the_history_and_other_meta() {
    let (_dir, path, expected) = world();
    let loaded = cache::load(&path, &chain(), &Options::default()).unwrap();
    let meta = loaded.meta().unwrap();
    assert_eq!(
        meta, expected.meta,
        "meta read from the cache is the upgraded save's"
    );
    assert!(
        meta.extra.get("history").is_some(),
        "the upgrade is recorded"
    );
    let data: Value = loaded.data_as().unwrap();
    let save = chain().resave(meta.clone(), data);
    assert_eq!(save.meta.extra, meta.extra);
    assert_eq!(save.meta.version, chain().latest());
    assert_eq!(save.meta.writer.as_ref(), Some(chain().writer()));
    cache::store(&save, &path, &chain()).unwrap();
    assert_eq!(Save::load(&path).unwrap().meta, expected.meta);
}

/// A save of several 1 MiB hash chunks, stored with its cache: most of its text is one
/// string of letters, so a letter changed anywhere in it keeps the JSON valid and its
/// length the same.
fn big_world() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    let letters: String = (0..(3 << 20) + 12345)
        .map(|i: usize| char::from(b'a' + (i * 7 % 26) as u8))
        .collect();
    // The fixture's meta (the game's name, its version), the letters as its data.
    let mut save = Save::load(format!("{FIXTURES}/v9/small.json")).unwrap();
    save.data = Value::from(letters);
    cache::store(&save, &path, &chain()).unwrap();
    (dir, path)
}

fn verify(path: &Path) -> Source {
    cache::verify(path, &chain(), &Options::default()).unwrap()
}

#[test]
fn a_letter_changed_at_any_chunk_boundary_of_a_large_save_is_seen() {
    let (_dir, path) = big_world();
    assert_eq!(verify(&path), Source::Cache);
    let text = fs::read(&path).unwrap();
    let chunk = 1 << 20;
    for at in [
        chunk - 1,
        chunk,
        chunk + 1,
        2 * chunk,
        3 * chunk - 1,
        3 * chunk,
    ] {
        assert!(text[at].is_ascii_lowercase(), "{at} is in the string");
        let mut changed = text.clone();
        changed[at] = if text[at] == b'z' { b'a' } else { text[at] + 1 };
        fs::write(&path, &changed).unwrap();
        assert_eq!(verify(&path), Source::Json(Refusal::SaveChanged), "at {at}");
    }
    fs::write(&path, &text).unwrap();
    assert_eq!(verify(&path), Source::Cache);
}

#[test]
fn a_large_save_one_byte_shorter_or_longer_is_seen_and_reloaded() {
    let (_dir, path) = big_world();
    let text = fs::read(&path).unwrap();
    assert_eq!(text.last(), Some(&b'\n'));
    fs::write(&path, &text[..text.len() - 1]).unwrap();
    assert_eq!(verify(&path), Source::Json(Refusal::SaveChanged));
    let mut longer = text.clone();
    longer.push(b'\n');
    fs::write(&path, &longer).unwrap();
    let (source, save) = load(&path);
    assert_eq!(source, Source::Json(Refusal::SaveChanged));
    assert_eq!(save, Save::from_slice(&text).unwrap());
    // The cache now made is of the longer file.
    assert_eq!(load(&path).0, Source::Cache);
    fs::write(&path, &text).unwrap();
    assert_eq!(verify(&path), Source::Json(Refusal::SaveChanged));
}
