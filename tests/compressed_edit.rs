//! `savechain::edit` on compressed saves: read through their text, written back in their
//! codec (or the one asked for), the backup the original bytes; a file rewritten meanwhile,
//! even with the same text, is not replaced.

mod common;

use std::fs;

use common::any_value;
use proptest::prelude::*;
use savechain::compress::{self, Codec, Compression};
use savechain::{edit, ErrorKind, Save, Value};

const CODECS: [Codec; 2] = [Codec::Zstd, Codec::Gzip];

fn text_of(bytes: &[u8]) -> Vec<u8> {
    compress::decompress(bytes, compress::DEFAULT_LIMIT)
        .unwrap()
        .into_owned()
}

fn save() -> Save {
    Save::from_str(r#"{"meta": {"version": 2}, "data": {"hull": ["d", 0.965], "crew": 3}}"#)
        .unwrap()
}

#[test]
fn an_edit_keeps_the_codec_and_the_backup_is_the_original_bytes() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slot1.sav");
        let how = Compression::with_level(codec, *codec.levels().end()).unwrap();
        save().store_with(&path, how).unwrap();
        let original = fs::read(&path).unwrap();

        let (read, mut edited) = edit::read(&path).unwrap();
        assert_eq!(read, original);
        assert_eq!(edited, save());
        edit::set(&mut edited, "data.crew", Value::Int(4)).unwrap();
        let backup = edit::store_edited(&path, &read, &edited).unwrap();
        assert_eq!(backup, dir.path().join("slot1.sav.bak"));
        assert_eq!(fs::read(&backup).unwrap(), original, "{codec}");
        let written = fs::read(&path).unwrap();
        // The codec kept, at its default level: the level is not recorded in the file.
        assert_eq!(
            written,
            compress::compress(&edited.to_vec().unwrap(), Compression::new(codec)),
            "{codec}"
        );

        // Asked for: another codec, or plain text.
        let (read, mut again) = edit::read(&path).unwrap();
        edit::set(&mut again, "data.crew", Value::Int(5)).unwrap();
        edit::store_edited_with(&path, &read, &again, Compression::NONE).unwrap();
        assert_eq!(fs::read(&path).unwrap(), again.to_vec().unwrap(), "{codec}");
        assert_eq!(
            fs::read(dir.path().join("slot1.sav.1.bak")).unwrap(),
            written
        );
    }
}

#[test]
fn a_save_recompressed_meanwhile_is_a_changed_save() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slot1.json");
        save().store_with(&path, Compression::new(codec)).unwrap();
        let (read, mut edited) = edit::read(&path).unwrap();
        edit::set(&mut edited, "data.crew", Value::Int(4)).unwrap();
        // Another program stores the same text at another level.
        let low = Compression::with_level(codec, *codec.levels().start()).unwrap();
        save().store_with(&path, low).unwrap();
        let meanwhile = fs::read(&path).unwrap();
        assert_ne!(meanwhile, read);

        let err = edit::store_edited(&path, &read, &edited).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Changed, "{codec}: {err}");
        assert_eq!(fs::read(&path).unwrap(), meanwhile, "{codec}");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "{codec}: no backup"
        );
    }
}

#[test]
fn a_damaged_save_is_not_read() {
    for codec in CODECS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slot1.json.zst");
        let bytes = save().to_vec_with(Compression::new(codec)).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        let err = edit::read(&path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Compressed, "{codec}: {err}");
        assert_eq!(err.file(), Some(path.as_path()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Any save stored in any codec and edited comes back in that codec, holding the
    /// edited save's canonical text, with the original bytes as its backup.
    #[test]
    fn any_edit_of_a_compressed_save_round_trips(
        data in any_value(),
        value in any_value(),
        zstd in any::<bool>(),
    ) {
        let codec = if zstd { Codec::Zstd } else { Codec::Gzip };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slot1.json");
        let mut data = match data {
            Value::Object(members) => members,
            _ => savechain::Map::new(),
        };
        data.insert("x", Value::Null);
        Save::new(1, Value::Object(data)).store_with(&path, Compression::new(codec)).unwrap();
        let original = fs::read(&path).unwrap();
        let (read, mut edited) = edit::read(&path).unwrap();
        let allow = edit::Allow::default().with_kind_change();
        edit::set_allowing(&mut edited, "data.x", value, allow).unwrap();
        let backup = edit::store_edited(&path, &read, &edited).unwrap();
        prop_assert_eq!(fs::read(backup).unwrap(), original);
        let written = fs::read(&path).unwrap();
        prop_assert_eq!(Codec::of(&written), codec);
        prop_assert_eq!(text_of(&written), edited.to_vec().unwrap());
        prop_assert_eq!(Save::load(&path).unwrap(), edited);
    }
}
