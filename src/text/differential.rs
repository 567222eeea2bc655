//! The reader against the one it replaced, on random texts: hand-typed looking documents
//! full of tags, escapes and look-alikes, and the same texts with a byte changed. Both must
//! give the same value, or the same error at the same place.

use proptest::prelude::*;

fn spaces() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(""), Just(""), Just(" "), Just("\n  "), Just("\t")]
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<u64>().prop_map(|u| u.to_string()),
        Just("18446744073709551616".to_string()),
        Just("-9223372036854775809".to_string()),
        any::<f64>().prop_map(|d| if d.is_finite() {
            format!("{d:e}")
        } else {
            "1e400".into()
        }),
        Just("-0".to_string()),
        Just("1.5".to_string()),
        Just("01".to_string()),
        Just("1.".to_string()),
        Just("1e400".to_string()),
        string(),
        Just("\"0x1.8p+1\"".to_string()),
        Just("\"0x1.80p+1\"".to_string()),
        Just("\"nan:0x1\"".to_string()),
        Just("\"-inf\"".to_string()),
        Just("\"1.5\"".to_string()),
        Just("\"\\u00ff\\u0000\"".to_string()),
        Just("\"é\"".to_string()),
        Just("\"Ā\"".to_string()),
    ]
}

fn string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("a"),
        Just("d"),
        Just("b"),
        Just("t"),
        Just("Zoë"),
        Just("\\n"),
        Just("\\\""),
        Just("\\u00e9"),
        Just("\\ud83d\\ude00"),
        Just("\\ud83d"),
        Just("\\x"),
        Just("\u{1}"),
        Just(" "),
    ];
    prop::collection::vec(piece, 0..4).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

fn letter() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"d\""),
        Just("\"b\""),
        Just("\"a\""),
        Just("\"t\""),
        Just("\"s\""),
        Just("\"r\""),
        Just("\"c\""),
        Just("\"x\""),
    ]
    .prop_map(String::from)
}

fn list(items: Vec<(String, &'static str)>, open: &str, close: &str) -> String {
    let inner: Vec<String> = items
        .into_iter()
        .map(|(v, s)| format!("{s}{v}{s}"))
        .collect();
    format!("{open}{}{close}", inner.join(","))
}

fn value() -> impl Strategy<Value = String> {
    scalar().prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            // Arrays, and arrays that start like tags.
            prop::collection::vec((inner.clone(), spaces()), 0..4)
                .prop_map(|items| list(items, "[", "]")),
            (letter(), spaces(), inner.clone(), spaces())
                .prop_map(|(l, s, v, t)| format!("[{s}{l},{t}{v}{s}]")),
            (letter(), inner.clone(), inner.clone())
                .prop_map(|(l, v, w)| format!("[{l}, {v}, {w}]")),
            // Escapes around arrays that look like tags.
            (letter(), inner.clone()).prop_map(|(l, v)| format!("[\"a\", [{l}, {v}]]")),
            // Objects, sometimes with a key twice.
            prop::collection::vec((string(), inner.clone(), spaces()), 0..4).prop_map(|members| {
                let inner: Vec<String> = members
                    .into_iter()
                    .map(|(k, v, s)| format!("{s}{k}{s}:{s}{v}"))
                    .collect();
                format!("{{{}}}", inner.join(","))
            }),
            (string(), inner.clone()).prop_map(|(k, v)| format!("{{{k}: {v}, {k}: 1}}")),
        ]
    })
}

/// Both readers give the same value, or both fail; with `same_error`, with the same
/// message at the same place. A text with several mistakes may be reported by its first
/// or by another: the old reader looked ahead past an escape's content, the new one does
/// not, so only texts whose mistakes do not depend on reading order compare messages.
fn compare_with(text: &[u8], same_error: bool) -> std::result::Result<(), TestCaseError> {
    let new = super::from_slice(text);
    let old = super::read_old::from_slice(text);
    match (new, old) {
        (Ok(new), Ok(old)) => prop_assert_eq!(new, old),
        (Err(new), Err(old)) if same_error => prop_assert_eq!(new.to_string(), old.to_string()),
        (Err(_), Err(_)) => {}
        (new, old) => prop_assert!(
            false,
            "{:?}: new {:?}, old {:?}",
            String::from_utf8_lossy(text),
            new,
            old
        ),
    }
    Ok(())
}

fn compare(text: &[u8]) -> std::result::Result<(), TestCaseError> {
    compare_with(text, true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(3000)
    ))]

    #[test]
    fn the_reader_agrees_with_the_old_one(text in value()) {
        compare(text.as_bytes())?;
    }

    #[test]
    fn the_reader_agrees_with_the_old_one_on_broken_text(
        text in value(),
        at in any::<prop::sample::Index>(),
        byte in prop_oneof![Just(b'['), Just(b']'), Just(b','), Just(b'"'), Just(b'\\'), any::<u8>()],
        how in 0..3u8,
    ) {
        let mut bytes = text.into_bytes();
        if !bytes.is_empty() {
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] = byte,
                1 => { bytes.remove(i); }
                _ => bytes.insert(i, byte),
            }
        }
        compare_with(&bytes, false)?;
    }
}

#[test]
fn deep_and_escaped_texts_agree() {
    for text in [
        "[".repeat(600) + &"]".repeat(600),
        "[\"a\", ".repeat(300) + "[1]" + &"]".repeat(300),
        "[\"a\", ".repeat(100) + "[\"d\", \"0x1p+0\"]" + &"]".repeat(100),
        "[\"a\", [\"d\", \"0x1p+0\"], 1]".to_string(),
        "[\"a\", [\"a\", [\"d\", 5]]]".to_string(),
        "[\"a\", [\"d\", 5] ]".to_string(),
        "[\"a\", [\"d\", 5 ] ]".to_string(),
        "[\"a\", [\"d\", \"x\"]]".to_string(),
        "[\"a\", [\"d\", \"x\"], 2]".to_string(),
        "[\"d\", [\"d\", \"0x1p+0\"]]".to_string(),
        "[\"x\", 1.5]".to_string(),
        "[\"t\", {}]".to_string(),
    ] {
        compare(text.as_bytes()).unwrap();
    }
}
