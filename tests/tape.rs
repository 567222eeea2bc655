//! The borrowed document (`text::Document`) against the tree: the same value, the same
//! canonical text in every style, the same errors, and `fmt` the same outcome and bytes.

mod common;

use common::any_value;
use proptest::prelude::*;
use savechain::text::{self, Document, Style};
use savechain::{Formatted, Save, Value};

/// `value` as text that is not canonical: members in reverse key order, strings escaped as
/// serde_json escapes them, doubles in decimal, every two-element array that starts with a
/// letter escaped (needed or not), whitespace of another kind.
fn messy(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            let escaped = matches!(items.as_slice(), [Value::String(s), _] if s.len() == 1);
            if escaped {
                out.push_str("[ \"a\" ,");
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" ,\t");
                }
                messy(item, out);
            }
            out.push(']');
            if escaped {
                out.push(']');
            }
        }
        Value::Object(map) => {
            out.push_str("{ ");
            let members: Vec<_> = map.iter().collect();
            for (i, (key, item)) in members.into_iter().rev().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&serde_json::to_string(key).unwrap());
                out.push_str(" :");
                messy(item, out);
            }
            out.push('}');
        }
        Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap()),
        other => {
            let mut text = Vec::new();
            text::write_value(&mut text, other, Style::Decimal).unwrap();
            out.push_str(std::str::from_utf8(&text).unwrap().trim_end());
        }
    }
}

/// The tape and the tree agree on `bytes`.
fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
    match (text::from_slice(bytes), Document::parse(bytes)) {
        (Ok(value), Ok(doc)) => {
            prop_assert_eq!(&doc.to_value(), &value);
            for style in [Style::Pretty, Style::Compact, Style::Decimal] {
                let mut expected = Vec::new();
                text::write_value(&mut expected, &value, style).unwrap();
                prop_assert_eq!(doc.to_vec(style).unwrap(), expected);
            }
            prop_assert_eq!(
                text::reformat(bytes, Style::Pretty).unwrap(),
                text::to_vec(&value).unwrap()
            );
        }
        (Err(tree), Err(tape)) => {
            prop_assert_eq!(tree.to_string(), tape.to_string());
            prop_assert_eq!(tree.kind(), tape.kind());
        }
        (tree, tape) => prop_assert!(false, "tree {:?}, tape {:?}", tree, tape),
    }
    Ok(())
}

/// What `fmt` makes of `bytes` in a file: the outcome and the file's bytes after, or the
/// error's text.
fn format(bytes: &[u8], check: bool) -> Result<(Formatted, Vec<u8>), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("save.json");
    std::fs::write(&path, bytes).unwrap();
    let formatted = savechain::format_file_with(&path, check, &savechain::Options::default())
        .map_err(|e| e.to_string().replace(&path.display().to_string(), "FILE"))?;
    Ok((formatted, std::fs::read(&path).unwrap()))
}

/// What `fmt` did before the tape: the tree's canonical text, compared with the input.
fn format_by_tree(bytes: &[u8], check: bool) -> Result<(Formatted, Vec<u8>), String> {
    let canonical = Save::from_slice(bytes)
        .and_then(|s| s.to_vec())
        .map_err(|e| e.with_file(std::path::Path::new("FILE")).to_string())?;
    Ok(match (canonical == bytes, check) {
        (true, _) => (Formatted::Canonical, bytes.to_vec()),
        (false, true) => (Formatted::Rewritten, bytes.to_vec()),
        (false, false) => (Formatted::Rewritten, canonical),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn canonical_and_decimal_texts_read_and_write_as_the_tree(value in any_value()) {
        agree(&text::to_vec(&value).unwrap())?;
        agree(&text::to_vec_compact(&value).unwrap())?;
        let mut view = Vec::new();
        text::write_value(&mut view, &value, Style::Decimal).unwrap();
        agree(&view)?;
    }

    #[test]
    fn messy_texts_read_and_write_as_the_tree(value in any_value()) {
        let mut text = String::new();
        messy(&value, &mut text);
        agree(text.as_bytes())?;
    }

    #[test]
    fn damaged_texts_are_refused_as_the_tree_refuses_them(
        value in any_value(),
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(b"[]{},:\"\\ adbtscr0-.eE{".to_vec()),
    ) {
        let mut text = String::new();
        messy(&value, &mut text);
        let bytes = text.into_bytes();
        agree(&bytes[..cut.index(bytes.len() + 1)])?;
        if !bytes.is_empty() {
            let mut changed = bytes.clone();
            changed[at.index(bytes.len())] = byte;
            agree(&changed)?;
            let mut doubled = bytes.clone();
            let i = at.index(bytes.len());
            doubled.splice(i..i, bytes[i..].iter().copied().take(12));
            agree(&doubled)?;
        }
    }
}

/// `Save::canonical_text` (`fmt -`), or its error as text.
fn canonical_text(bytes: &[u8]) -> Result<Vec<u8>, String> {
    Save::canonical_text(bytes).map_err(|e| e.to_string())
}

/// What `Save::canonical_text` must give: the tree's load and canonical text.
fn canonical_text_by_tree(bytes: &[u8]) -> Result<Vec<u8>, String> {
    Save::from_slice(bytes)
        .and_then(|save| save.to_vec())
        .map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn fmt_gives_what_the_tree_gives(
        data in any_value(),
        version in any::<u64>(),
        extra in any_value(),
        check in any::<bool>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut save = Save::new(version, data).with_writer(semver::Version::new(1, 2, 3));
        save.meta.extra.insert("extra", extra);
        let canonical = save.to_vec().unwrap();
        let mut document = savechain::Map::new();
        document.insert("meta", save.meta.to_value());
        document.insert("data", save.data.clone());
        let mut untidy = String::new();
        messy(&Value::Object(document), &mut untidy);
        let compact = save.to_vec_compact().unwrap();
        let cut = &canonical[..cut.index(canonical.len())];
        for bytes in [&canonical[..], untidy.as_bytes(), &compact, cut] {
            prop_assert_eq!(format(bytes, check), format_by_tree(bytes, check));
            prop_assert_eq!(canonical_text(bytes), canonical_text_by_tree(bytes));
        }
    }
}

#[test]
fn fmt_refuses_what_is_no_save_or_a_broken_one_as_the_tree_does() {
    for text in [
        r#"{"meta": {"version": 1}, "data": 1, "x": 2}"#,
        r#"{"meta": {"version": 1}}"#,
        r#"{"meta": {"version": -1}, "data": 1}"#,
        r#"{"meta": {"version": 1, "writer": "1.2"}, "data": 1}"#,
        r#"{"meta": {"version": 1, "writer": 7}, "data": 1}"#,
        r#"{"meta": {"version": 1}, "data": {"a": 1, "a": 2}}"#,
        r#"{"meta": {"version": 1}, "data": ["x", [1]]}"#,
        r#"{"meta": {"version": 1}, "data": [1,]}"#,
        r#"[1, 2]"#,
        "{\"meta\": {\"version\": 1}, \"data\": 1}\n",
        "\u{feff}{\n  \"meta\": {\n    \"version\": 1\n  },\n  \"data\": 1\n}\n",
        "{\n  \"meta\": {\n    \"version\": 1\n  },\n  \"data\": 1\n}\n",
        "{\n  \"meta\": {\n    \"version\": 1\n  },\n  \"data\": 1\n}\n\n",
        "{\n  \"meta\": {\n    \"version\": 1\n  },\n  \"data\": 1\n}",
    ] {
        for check in [true, false] {
            assert_eq!(
                format(text.as_bytes(), check),
                format_by_tree(text.as_bytes(), check),
                "{text}"
            );
        }
        assert_eq!(
            canonical_text(text.as_bytes()),
            canonical_text_by_tree(text.as_bytes()),
            "{text}"
        );
    }
}

#[test]
fn fmt_streams_a_long_save_in_pieces_and_gets_it_right() {
    // Far longer than one piece of the streamed writer, and out of order.
    let items: Vec<Value> = (0..40_000)
        .map(|i| {
            let mut ship = savechain::Map::new();
            ship.insert("z", Value::Double(i as f64 / 3.0));
            ship.insert("a", Value::from(format!("ship {i}")));
            Value::Object(ship)
        })
        .collect();
    let save = Save::new(3, Value::Array(items));
    let canonical = save.to_vec().unwrap();
    assert!(canonical.len() > 1 << 20);
    assert_eq!(
        format(&canonical, true),
        Ok((Formatted::Canonical, canonical.clone()))
    );
    let mut longer = canonical.clone();
    longer.insert(canonical.len() - 1, b' ');
    assert_eq!(
        format(&longer, false),
        Ok((Formatted::Rewritten, canonical.clone()))
    );
    // A difference near the end, after many pieces matched.
    let mut late = canonical.clone();
    let at = canonical.len() - 40;
    late[at..].iter_mut().take(3).for_each(|b| {
        if *b == b' ' {
            *b = b'\t'
        }
    });
    let mut untidy = String::new();
    messy(&text::from_slice(&canonical).unwrap(), &mut untidy);
    for bytes in [&late[..], untidy.as_bytes()] {
        assert_eq!(format(bytes, false), format_by_tree(bytes, false));
    }
}
