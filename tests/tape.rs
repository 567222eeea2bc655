//! The borrowed document (`text::Document`) against the tree: the same value, the same
//! canonical text in every style, the same errors, and `fmt` the same outcome and bytes.

mod common;

use common::any_value;
use proptest::prelude::*;
use savechain::text::{self, Document, Kind, Node, Style};
use savechain::{Formatted, Map, Save, Value};

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

/// The value read through the `Node` API alone, each array's elements both by `items` and
/// by `index`, each object's members both by `members` and by `get`.
fn through_nodes(node: Node<'_, '_>) -> Value {
    match node.kind() {
        Kind::Null => Value::Null,
        Kind::Bool => Value::Bool(node.as_bool().unwrap()),
        Kind::Int => match node.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::UInt(node.as_u64().unwrap()),
        },
        Kind::Double => Value::Double(node.as_f64().unwrap()),
        Kind::String => Value::String(node.as_str().unwrap().to_string()),
        Kind::Bytes => Value::Bytes(node.as_bytes().unwrap().to_vec()),
        Kind::Array => {
            let items: Vec<Value> = node.items().map(through_nodes).collect();
            assert_eq!(items.len(), node.len());
            for (i, item) in items.iter().enumerate() {
                assert_eq!(&node.index(i).unwrap().to_value(), item);
            }
            assert!(node.index(items.len()).is_none());
            Value::Array(items)
        }
        Kind::Object => {
            let mut map = Map::new();
            for (key, value) in node.members() {
                let value = through_nodes(value);
                assert_eq!(node.get(key).map(|v| v.to_value()).as_ref(), Some(&value));
                map.insert(key, value);
            }
            assert_eq!(map.len(), node.len());
            Value::Object(map)
        }
        _ => node.to_value(),
    }
}

/// The tape and the tree agree on `bytes`, read whole and node by node.
fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
    match (text::from_slice(bytes), Document::parse(bytes)) {
        (Ok(value), Ok(doc)) => {
            prop_assert_eq!(&doc.to_value(), &value);
            prop_assert_eq!(&doc.root().to_value(), &value);
            prop_assert_eq!(&through_nodes(doc.root()), &value);
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

/// `value` with every array element and object member wrapped in a run of one-element
/// arrays, as many levels as `levels` gives in turn.
fn wrapped(value: &Value, levels: &[usize], next: &mut usize) -> Value {
    let wrap = |value: &Value, next: &mut usize| {
        let mut value = wrapped(value, levels, next);
        for _ in 0..levels[*next % levels.len()] {
            value = Value::Array(vec![value]);
        }
        *next += 1;
        value
    };
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|item| wrap(item, next)).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map.iter() {
                out.insert(key, wrap(item, next));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

// Runs of one-element arrays are one node in the document: they read, write and walk as
// the tree's levels.
#[test]
fn runs_of_one_element_arrays_read_and_write_as_the_tree_does() {
    let deep =
        |depth: usize, inner: &str| format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth));
    let long = format!("[{}]", vec!["[[7]]"; 18].join(", "));
    for text in [
        "[[1]]".to_string(),
        "[[[]]]".to_string(),
        "[[{}]]".to_string(),
        "[[[1], 2]]".to_string(),
        "[[[1]], [[2]], 3]".to_string(),
        "[[[[1, 2]]], [[[3]]]]".to_string(),
        r#"[[{"b": [[1]], "a": [[["d", "0x1p+0"]]]}]]"#.to_string(),
        r#"{"meta": [[1]], "data": [[[2]]]}"#.to_string(),
        r#"[[["a", [[1]]]]]"#.to_string(),
        r#"["a", [[["x", 1]]]]"#.to_string(),
        r#"[["a", [["a", [[1]]]]]]"#.to_string(),
        r#"["t", [[[1]]]]"#.to_string(),
        r#"[[["t", [[[[2]]]]]]]"#.to_string(),
        r#"[[["s", [[[{"a": [[1]]}]]]]]]"#.to_string(),
        r#"[[["b", ""]]]"#.to_string(),
        r#"[[["x", 1]]]"#.to_string(),
        r#"[[[1, "a"]]]"#.to_string(),
        format!("[[{long}]]"),
        deep(500, "1.5"),
        deep(500, r#"["d", "0x1.8p+0"]"#),
        deep(510, "[1, 2, [[3]]]"),
        deep(512, ""),
        deep(513, "1"),
        deep(300, &deep(200, r#""x", [[4]]"#)),
        // Refused inside or after a run, as the tree refuses them.
        deep(10, "1,"),
        format!("{}1]]", "[".repeat(4)),
        format!("[[[1]]] {}", deep(3, "2")),
        r#"[[{"a": 1, "a": [[2]]}]]"#.to_string(),
    ] {
        agree(text.as_bytes()).unwrap();
    }
}

#[test]
fn nodes_step_into_runs_level_by_level() {
    let text = format!("{{\"a\": {}\"x\"{}}}", "[".repeat(5), "]".repeat(5));
    let doc = Document::parse(text.as_bytes()).unwrap();
    let mut node = doc.root().get("a").unwrap();
    for level in 0..5 {
        assert_eq!(node.kind(), Kind::Array, "level {level}");
        assert_eq!(node.len(), 1);
        assert_eq!(node.items().count(), 1);
        assert!(node.index(1).is_none());
        assert_eq!(
            node.to_value(),
            text::from_slice(
                format!("{}\"x\"{}", "[".repeat(5 - level), "]".repeat(5 - level)).as_bytes()
            )
            .unwrap()
        );
        node = node.index(0).unwrap();
    }
    assert_eq!(node.as_str(), Some("x"));
    assert_eq!(node.to_value(), Value::from("x"));
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
    fn texts_with_runs_of_arrays_read_and_write_as_the_tree(
        value in any_value(),
        levels in proptest::collection::vec(0usize..5, 1..8),
        outer in 0usize..300,
    ) {
        let mut value = wrapped(&value, &levels, &mut 0);
        for _ in 0..outer {
            value = Value::Array(vec![value]);
        }
        for style in [Style::Pretty, Style::Compact, Style::Decimal] {
            let mut bytes = Vec::new();
            text::write_value(&mut bytes, &value, style).unwrap();
            agree(&bytes)?;
        }
        let mut messy_text = String::new();
        messy(&value, &mut messy_text);
        agree(messy_text.as_bytes())?;
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

/// An object of `members` (keys from a small set, so that any order and repeats come up),
/// each value null or another such object.
fn keyed(members: &[(u8, Option<Vec<u8>>)]) -> String {
    let key = |k: u8| ["a", "b", "ab", "ba", "b\\u0061", "", "aa"][k as usize % 7];
    let mut out = String::from("{");
    for (i, (k, inner)) in members.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("\"{}\": ", key(*k)));
        match inner {
            None => out.push_str("null"),
            Some(keys) => {
                let members: Vec<_> = keys.iter().map(|&k| (k, None)).collect();
                out.push_str(&keyed(&members));
            }
        }
    }
    out.push('}');
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Keys in order, out of order or repeated, anywhere after objects nested between them,
    /// are found as the tree finds them.
    #[test]
    fn keys_in_any_order_are_checked_as_the_tree_checks_them(
        members in proptest::collection::vec(
            (0u8..7, proptest::option::of(proptest::collection::vec(0u8..7, 0..4))),
            0..6,
        ),
    ) {
        agree(keyed(&members).as_bytes())?;
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
