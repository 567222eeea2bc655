//! The cache of a compressed save: made from the save decompressed and upgraded, its
//! identity the file's bytes as stored, so that anything that changes the file (a damaged
//! byte, another level, plain again) is noticed; damaged and bomb saves refused with
//! nothing written.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::any_value;
use proptest::prelude::*;
use savechain::cache::{self, cache_path, Refusal, Source};
use savechain::compress::{self, Codec, Compression};
use savechain::upgrade::Chain;
use savechain::{ErrorKind, Options, Save, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
const CODECS: [Codec; 2] = [Codec::Zstd, Codec::Gzip];

fn chain() -> Chain {
    common::starlane::chain().unwrap()
}

/// A folder with the version 1 fixture stored as `codec` (named `world.json.zst` or
/// `world.json.gz`), and what loading it should give.
fn world(codec: Codec) -> (tempfile::TempDir, PathBuf, Save) {
    let dir = tempfile::tempdir().unwrap();
    let text = fs::read(format!("{FIXTURES}/v1/small.json")).unwrap();
    let path = dir.path().join(format!("world.json{}", codec.extension()));
    fs::write(&path, compress::compress(&text, Compression::new(codec))).unwrap();
    let expected = chain()
        .upgrader()
        .upgrade(Save::from_slice(&text).unwrap(), &Options::default())
        .unwrap()
        .save;
    (dir, path, expected)
}

fn load(path: &Path, options: &Options) -> (Source, Save) {
    let loaded = cache::load(path, &chain(), options).unwrap();
    (loaded.source.clone(), loaded.to_save().unwrap())
}

fn verify(path: &Path) -> Source {
    cache::verify(path, &chain(), &Options::default()).unwrap()
}

/// The bytes of every file in `dir`, by name: to check that nothing was written.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_compressed_save_loads_through_its_cache_and_is_never_rewritten() {
    for codec in CODECS {
        let (dir, path, expected) = world(codec);
        let stored = fs::read(&path).unwrap();
        assert_eq!(
            cache_path(&path),
            dir.path()
                .join(format!("world.json{}.cache", codec.extension()))
        );
        assert_eq!(verify(&path), Source::Json(Refusal::Missing), "{codec}");

        let (source, save) = load(&path, &Options::default());
        assert_eq!(source, Source::Json(Refusal::Missing), "{codec}");
        assert_eq!(save, expected, "{codec}");
        assert!(cache_path(&path).exists(), "{codec}");

        let (source, save) = load(&path, &Options::default());
        assert_eq!(source, Source::Cache, "{codec}");
        assert_eq!(save, expected, "{codec}");
        assert_eq!(verify(&path), Source::Cache, "{codec}");
        let mut trusting = Options::default();
        trusting.trust_mtime = true;
        assert_eq!(load(&path, &trusting).0, Source::Cache, "{codec}");

        let rebuilt = cache::rebuild(&path, &chain(), &Options::default()).unwrap();
        assert_eq!(rebuilt.source, Source::Json(Refusal::Rebuild), "{codec}");
        assert_eq!(rebuilt.to_save().unwrap(), expected, "{codec}");
        assert_eq!(verify(&path), Source::Cache, "{codec}");

        // A load writes the cache alone: the save keeps its bytes, compression and version.
        assert_eq!(fs::read(&path).unwrap(), stored, "{codec}");
        assert_eq!(Save::load(&path).unwrap().meta.version, 1);
    }
}

#[test]
fn the_same_text_recompressed_is_another_file_and_its_cache_is_remade() {
    for codec in CODECS {
        let (_dir, path, expected) = world(codec);
        load(&path, &Options::default());
        let text = compress::decompress(&fs::read(&path).unwrap(), compress::DEFAULT_LIMIT)
            .unwrap()
            .into_owned();
        let other_level = Compression::with_level(codec, *codec.levels().end()).unwrap();
        let recompressed = compress::compress(&text, other_level);
        assert_ne!(recompressed, fs::read(&path).unwrap(), "{codec}");
        fs::write(&path, &recompressed).unwrap();

        assert_eq!(verify(&path), Source::Json(Refusal::SaveChanged), "{codec}");
        let (source, save) = load(&path, &Options::default());
        assert_eq!(source, Source::Json(Refusal::SaveChanged), "{codec}");
        assert_eq!(save, expected, "{codec}");
        assert_eq!(
            verify(&path),
            Source::Cache,
            "{codec}: remade for the new bytes"
        );

        // Plain again: the same text, other bytes.
        fs::write(&path, &text).unwrap();
        assert_eq!(verify(&path), Source::Json(Refusal::SaveChanged), "{codec}");
        assert_eq!(load(&path, &Options::default()).1, expected, "{codec}");
    }
}

#[test]
fn trusting_modification_times_a_recompressed_save_is_still_noticed() {
    let mut trusting = Options::default();
    trusting.trust_mtime = true;
    for codec in CODECS {
        let (_dir, path, expected) = world(codec);
        load(&path, &trusting);
        assert_eq!(load(&path, &trusting).0, Source::Cache, "{codec}");
        let text = compress::decompress(&fs::read(&path).unwrap(), compress::DEFAULT_LIMIT)
            .unwrap()
            .into_owned();
        let low = Compression::with_level(codec, *codec.levels().start()).unwrap();
        fs::write(&path, compress::compress(&text, low)).unwrap();
        // Past the clock's resolution, as a later save is.
        let file = fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        let (source, save) = load(&path, &trusting);
        assert!(
            matches!(
                source,
                Source::Json(Refusal::SaveTouched | Refusal::SaveChanged)
            ),
            "{codec}: {source:?}"
        );
        assert_eq!(save, expected, "{codec}");
    }
}

#[test]
fn a_damaged_compressed_save_fails_naming_the_file_and_nothing_is_written() {
    for codec in CODECS {
        let (dir, path, _) = world(codec);
        load(&path, &Options::default());
        let good = fs::read(&path).unwrap();
        let truncated = good[..good.len() / 2].to_vec();
        let mut flipped = good.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x55;
        for (what, bad) in [("truncated", truncated), ("a byte flipped", flipped)] {
            fs::write(&path, &bad).unwrap();
            let before = files(dir.path());
            assert_eq!(
                verify(&path),
                Source::Json(Refusal::SaveChanged),
                "{codec} {what}: the cache is not trusted for other bytes"
            );
            for result in [
                cache::load(&path, &chain(), &Options::default()).map(drop),
                cache::rebuild(&path, &chain(), &Options::default()).map(drop),
            ] {
                let err = result.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Compressed, "{codec} {what}: {err}");
                assert_eq!(err.file(), Some(path.as_path()), "{codec} {what}");
                assert!(
                    err.to_string()
                        .contains(&format!("the {codec} data is damaged")),
                    "{codec} {what}: {err}"
                );
            }
            assert_eq!(files(dir.path()), before, "{codec} {what}: nothing written");
        }
    }
}

/// A valid save of `chain`'s whose text is `len` bytes or so, compressed to almost
/// nothing.
fn bomb(chain: &Chain, codec: Codec, len: usize) -> Vec<u8> {
    let save = Save::new(chain.latest(), Value::from(" ".repeat(len)));
    save.to_vec_with(Compression::new(codec)).unwrap()
}

#[test]
fn a_save_past_the_limit_on_its_text_is_refused_with_nothing_written() {
    let chain = Chain::new("1.0.0", Vec::new()).unwrap();
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bomb.json");
        let bytes = bomb(&chain, codec, 4 << 20);
        assert!(bytes.len() < 10_000, "{codec}: {}", bytes.len());
        fs::write(&path, &bytes).unwrap();
        let mut small = Options::default();
        small.max_text = 1 << 20;
        let before = files(dir.path());
        for result in [
            cache::load(&path, &chain, &small).map(drop),
            cache::rebuild(&path, &chain, &small).map(drop),
        ] {
            let err = result.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
            assert_eq!(err.file(), Some(path.as_path()));
            assert!(err.to_string().contains("more than 1048576 bytes"), "{err}");
        }
        let loaded = cache::load_bytes(&bytes, None, &mut chain.upgrader(), &small);
        assert_eq!(loaded.err().unwrap().kind(), ErrorKind::Compressed);
        assert_eq!(files(dir.path()), before, "{codec}: nothing written");

        // Under the default limit it is just a large save.
        let loaded = cache::load(&path, &chain, &Options::default()).unwrap();
        assert_eq!(loaded.source, Source::Json(Refusal::Missing));
        let save = loaded.to_save().unwrap();
        assert_eq!(save.data.as_str().map(str::len), Some(4 << 20));
    }
}

#[test]
fn store_with_writes_the_save_compressed_and_its_cache_of_those_bytes() {
    let chain = chain();
    let (_dir, path, expected) = world(Codec::Plain);
    for codec in CODECS {
        let how = Compression::new(codec);
        cache::store_with(&expected, &path, &chain, how).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!(Codec::of(&bytes), codec);
        assert_eq!(bytes, expected.to_vec_with(how).unwrap(), "reproducible");
        assert_eq!(
            compress::decompress(&bytes, compress::DEFAULT_LIMIT)
                .unwrap()
                .as_ref(),
            &expected.to_vec().unwrap()[..]
        );
        let (source, save) = load(&path, &Options::default());
        assert_eq!(source, Source::Cache, "{codec}");
        assert_eq!(save, expected);
    }
    // `store` writes plain text, whatever the file held.
    cache::store(&expected, &path, &chain).unwrap();
    assert_eq!(fs::read(&path).unwrap(), expected.to_vec().unwrap());
    assert_eq!(load(&path, &Options::default()).0, Source::Cache);
}

#[test]
fn stored_bytes_compressed_load_through_their_cache() {
    let chain = chain();
    let (_dir, _path, expected) = world(Codec::Plain);
    for codec in CODECS {
        let stored = cache::store_bytes_with(&expected, &chain, Compression::new(codec)).unwrap();
        assert_eq!(Codec::of(&stored.json), codec);
        let mut upgrader = chain.upgrader();
        let options = Options::default();
        let loaded =
            cache::load_bytes(&stored.json, Some(&stored.cache), &mut upgrader, &options).unwrap();
        assert_eq!(loaded.source, Source::Cache, "{codec}");
        assert_eq!(loaded.to_save().unwrap(), expected);
        // The same text plain is other bytes: that cache is not its.
        let plain = compress::decompress(&stored.json, compress::DEFAULT_LIMIT).unwrap();
        let loaded =
            cache::load_bytes(&plain, Some(&stored.cache), &mut upgrader, &options).unwrap();
        assert_eq!(loaded.source, Source::Json(Refusal::SaveChanged), "{codec}");
        assert_eq!(loaded.to_save().unwrap(), expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the document and codec, stored bytes and their cache load back as the
    /// save, from the cache; the file's bytes decompress to the canonical text.
    #[test]
    fn any_save_stored_compressed_loads_back_from_its_cache(
        data in any_value(),
        zstd in any::<bool>(),
        level_from_top in 0..3i32,
    ) {
        let codec = if zstd { Codec::Zstd } else { Codec::Gzip };
        let how = Compression::with_level(codec, codec.levels().end() - level_from_top).unwrap();
        let chain = Chain::new("1.0.0", Vec::new()).unwrap();
        let save = Save::new(chain.latest(), data);
        let stored = cache::store_bytes_with(&save, &chain, how).unwrap();
        prop_assert_eq!(Codec::of(&stored.json), codec);
        let text = compress::decompress(&stored.json, compress::DEFAULT_LIMIT).unwrap();
        prop_assert_eq!(text.as_ref(), &save.to_vec().unwrap()[..]);
        let loaded = cache::load_bytes(
            &stored.json,
            Some(&stored.cache),
            &mut chain.upgrader(),
            &Options::default(),
        )
        .unwrap();
        prop_assert_eq!(&loaded.source, &Source::Cache);
        prop_assert_eq!(loaded.to_save().unwrap(), save);
    }
}

#[test]
fn a_large_compressed_save_is_checked_chunk_by_chunk_as_stored() {
    // Letters in no short pattern: they compress to several 1 MiB hash chunks.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let letters: String = (0..6 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect();
    let chain = chain();
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("world.json{}", codec.extension()));
        let save = Save::new(chain.latest(), Value::from(letters.clone()));
        cache::store_with(&save, &path, &chain, Compression::new(codec)).unwrap();
        let stored = fs::read(&path).unwrap();
        assert!(stored.len() > 2 << 20, "{codec:?}: {} bytes", stored.len());
        assert_eq!(verify(&path), Source::Cache, "{codec:?}");
        let loaded = cache::load(&path, &chain, &Options::default()).unwrap();
        assert_eq!(loaded.source, Source::Cache);
        assert_eq!(loaded.to_save().unwrap(), save);
        for at in [(1 << 20) - 1, 1 << 20, 2 << 20] {
            let mut changed = stored.clone();
            changed[at] ^= 0x10;
            fs::write(&path, &changed).unwrap();
            assert_eq!(
                verify(&path),
                Source::Json(Refusal::SaveChanged),
                "{codec:?} at {at}"
            );
        }
        fs::write(&path, &stored).unwrap();
        assert_eq!(verify(&path), Source::Cache, "{codec:?}");
    }
}
