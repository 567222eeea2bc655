//! Error messages are part of the interface: pinned by snapshots, so a change to one is seen
//! and reviewed.

use savechain::{ErrorKind, Meta, Save};

/// Loads each case as a save and lists the errors, one block per case.
fn report(cases: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (name, text) in cases {
        let err = Save::from_str(text).expect_err(name).with_file("save.json");
        // Reading `meta` alone finds the same error, but for the checks of a loaded
        // document's values (a duplicate key, a malformed table inside `data`).
        match Meta::from_slice(text.as_bytes()) {
            Err(meta_err) => {
                assert_eq!(
                    meta_err.with_file("save.json").to_string(),
                    err.to_string(),
                    "{name}"
                )
            }
            Ok(_) => assert_eq!(
                err.kind(),
                ErrorKind::Value,
                "{name}: read by Meta::from_slice"
            ),
        }
        out.push_str(&format!(
            "# {name}\n{text}\n=> [{:?}] {err}\n\n",
            err.kind()
        ));
    }
    out
}

#[test]
fn syntax_errors() {
    insta::assert_snapshot!(report(&[
        ("empty input", ""),
        (
            "trailing comma in an object",
            "{\"meta\": {\"version\": 1}, \"data\": {\"a\": 1,}}"
        ),
        (
            "trailing comma in an array",
            "{\"meta\": {\"version\": 1}, \"data\": [1, 2,]}"
        ),
        (
            "missing comma",
            "{\"meta\": {\"version\": 1}, \"data\": [1 2]}"
        ),
        (
            "missing colon",
            "{\"meta\": {\"version\": 1}, \"data\": {\"a\" 1}}"
        ),
        (
            "comment",
            "{\"meta\": {\"version\": 1}, // why\n \"data\": {}}"
        ),
        (
            "single quotes",
            "{\"meta\": {\"version\": 1}, \"data\": 'x'}"
        ),
        (
            "NaN literal",
            "{\"meta\": {\"version\": 1}, \"data\": {\"hp\": NaN}}"
        ),
        (
            "leading zero",
            "{\"meta\": {\"version\": 1}, \"data\": 007}"
        ),
        (
            "bare decimal point",
            "{\"meta\": {\"version\": 1}, \"data\": 1.}"
        ),
        (
            "closing quote forgotten in a hand edit",
            "{\"meta\": {\"version\": 1}, \"data\": {\"name\": \"Bob,\n  \"hp\": 3}}"
        ),
        (
            "unclosed string",
            "{\"meta\": {\"version\": 1}, \"data\": \"abc"
        ),
        (
            "raw newline in a string",
            "{\"meta\": {\"version\": 1}, \"data\": \"a\nb\"}"
        ),
        (
            "bad escape",
            "{\"meta\": {\"version\": 1}, \"data\": \"\\x41\"}"
        ),
        (
            "lone surrogate",
            "{\"meta\": {\"version\": 1}, \"data\": \"\\udc00\"}"
        ),
        (
            "text after the document",
            "{\"meta\": {\"version\": 1}, \"data\": 1} {}"
        ),
        (
            "truncated",
            "{\"meta\": {\"version\": 1}, \"data\": {\"a\": [1, 2"
        ),
    ]));
}

#[test]
fn value_errors() {
    insta::assert_snapshot!(report(&[
        ("malformed hexfloat", "{\"meta\": {\"version\": 1},\n \"data\": {\"player\": {\"ship\": {\"hull\": [\"d\", \"0x1.g\"]}}}}"),
        ("hexfloat overflow", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", \"0x1p+1024\"]}"),
        ("decimal overflow", "{\"meta\": {\"version\": 1}, \"data\": 1e400}"),
        ("integer too large", "{\"meta\": {\"version\": 1}, \"data\": [18446744073709551616]}"),
        ("integer too small", "{\"meta\": {\"version\": 1}, \"data\": [-9223372036854775809]}"),
        ("duplicate key", "{\"meta\": {\"version\": 1},\n \"data\": {\"credits\": 5,\n \"credits\": 7}}"),
        ("byte string out of range", "{\"meta\": {\"version\": 1}, \"data\": [\"b\", \"\u{100}\"]}"),
        ("double tag with an array", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", [1]]}"),
        ("unknown tag", "{\"meta\": {\"version\": 1}, \"data\": {\"xs\": [3, [\"q\", [1]]]}}"),
        ("escape of a non-array", "{\"meta\": {\"version\": 1}, \"data\": [\"a\", {}]}"),
        ("odd key in the path", "{\"meta\": {\"version\": 1}, \"data\": {\"my ship\": [\"d\", \"1.5\"]}}"),
    ]));
}

#[test]
fn double_and_byte_tag_errors() {
    // A double typed as a number goes into "d" (see tests/roundtrip.rs); these are mistakes.
    insta::assert_snapshot!(report(&[
        ("number in a double tag too large", "{\"meta\": {\"version\": 1},\n \"data\": {\"ship\": {\"hull\": [\"d\", 1e400]}}}"),
        ("negative number in a double tag too large", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", -2e308]}"),
        ("integer too large for a double tag", &format!("{{\"meta\": {{\"version\": 1}}, \"data\": [\"d\", 1{}]}}", "0".repeat(312))),
        ("boolean in a double tag", "{\"meta\": {\"version\": 1},\n \"data\": {\"ship\": {\"docked\": [\"d\", true]}}}"),
        ("null in a double tag", "{\"meta\": {\"version\": 1}, \"data\": {\"hp\": [\"d\", null]}}"),
        ("object in a double tag", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", {\"value\": 1.5}]}"),
        ("long array in a double tag", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]]}"),
        ("double tag in a double tag", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", [\"d\", \"0x1p+0\"]]}"),
        ("array over lines in a double tag", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", [\n  1\n]]}"),
        ("syntax error in a number in a double tag", "{\"meta\": {\"version\": 1}, \"data\": [\"d\", 1.]}"),
        ("integer in a byte tag", "{\"meta\": {\"version\": 1}, \"data\": {\"key\": [\"b\", 5]}}"),
        ("decimal in a byte tag", "{\"meta\": {\"version\": 1}, \"data\": [\"b\", 2.5]}"),
        ("array in a byte tag", "{\"meta\": {\"version\": 1}, \"data\": {\"key\": [\"b\", [104, 105]]}}"),
        ("byte tag in a byte tag", "{\"meta\": {\"version\": 1}, \"data\": [\"b\", [\"b\", \"x\"]]}"),
        ("boolean in a byte tag", "{\"meta\": {\"version\": 1}, \"data\": [\"b\", false]}"),
    ]));
}

#[test]
fn table_tag_errors() {
    insta::assert_snapshot!(report(&[
        (
            "keyed table entry not a pair",
            "{\"meta\": {\"version\": 1}, \"data\": {\"grid\": [\"t\", [[1, \"a\"], [2]]]}}"
        ),
        (
            "keyed table with a null key",
            "{\"meta\": {\"version\": 1}, \"data\": [\"t\", [[null, 1]]]}"
        ),
        (
            "keyed table with a NaN key",
            "{\"meta\": {\"version\": 1}, \"data\": [\"t\", [[[\"d\", \"nan\"], 1]]]}"
        ),
        (
            "shared table with id 0",
            "{\"meta\": {\"version\": 1}, \"data\": [\"s\", [0, {}]]}"
        ),
        (
            "shared scalar",
            "{\"meta\": {\"version\": 1}, \"data\": [\"s\", [1, 5]]}"
        ),
        (
            "reference with a string id",
            "{\"meta\": {\"version\": 1}, \"data\": [\"r\", [\"1\"]]}"
        ),
        (
            "class without a name",
            "{\"meta\": {\"version\": 1}, \"data\": [\"c\", [{}]]}"
        ),
        (
            "class of a reference",
            "{\"meta\": {\"version\": 1}, \"data\": [\"c\", [\"Ship\", [\"r\", [1]]]]}"
        ),
    ]));
}

#[test]
fn envelope_errors() {
    insta::assert_snapshot!(report(&[
        ("not an object", "[1, 2]"),
        ("no meta", "{\"data\": {}}"),
        ("no data", "{\"meta\": {\"version\": 1}}"),
        (
            "unknown top-level member",
            "{\"meta\": {\"version\": 1}, \"data\": {}, \"dta\": 1}"
        ),
        ("meta not an object", "{\"meta\": 1, \"data\": {}}"),
        (
            "no version",
            "{\"meta\": {\"writer\": \"1.0.0\"}, \"data\": {}}"
        ),
        (
            "version a string",
            "{\"meta\": {\"version\": \"3\"}, \"data\": {}}"
        ),
        (
            "version negative",
            "{\"meta\": {\"version\": -1}, \"data\": {}}"
        ),
        (
            "version a double",
            "{\"meta\": {\"version\": 1.0}, \"data\": {}}"
        ),
        (
            "writer not semver",
            "{\"meta\": {\"version\": 1, \"writer\": \"v2\"}, \"data\": {}}"
        ),
        (
            "writer not a string",
            "{\"meta\": {\"version\": 1, \"writer\": 2}, \"data\": {}}"
        ),
    ]));
}

#[test]
fn invalid_utf8_is_located() {
    let err =
        Save::from_slice(b"{\"meta\": {\"version\": 1},\n\"data\": \"caf\xe9\"}").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Syntax);
    assert_eq!((err.line(), err.column()), (Some(2), Some(13)));
    insta::assert_snapshot!(err.to_string(), @"line 2, column 13: invalid UTF-8 (byte 0xe9); a save must be UTF-8 text");
}

#[test]
fn files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.json");
    std::fs::write(&path, "{\"meta\": {\"version\": 1}, \"data\": [1,]}").unwrap();
    let err = Save::load(&path).unwrap_err();
    assert_eq!(err.file(), Some(path.as_path()));
    assert!(
        err.to_string()
            .starts_with(&format!("{}:1:37: ", path.display())),
        "{err}"
    );
    let missing = Save::load(dir.path().join("nope.json")).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::Io);
}

/// A hexfloat typed by hand without its quotes (`["d", 0x1p+0]`) used to say only
/// `found 'x'`; every reader of text (whole saves, typed data, Lua's) says what to write,
/// where the number starts.
#[test]
fn unquoted_hexfloats() {
    let cases = [
        (
            "hexfloat unquoted in a double tag",
            "{\"meta\": {\"version\": 1}, \"data\": {\"hp\": [\"d\", 0x1p+0]}}",
        ),
        (
            "negative hexfloat unquoted and untagged",
            "{\"meta\": {\"version\": 1},\n \"data\": {\"hp\": -0x1.8p+3}}",
        ),
        (
            "hexadecimal integer",
            "{\"meta\": {\"version\": 1}, \"data\": [0X1F, 2]}",
        ),
    ];
    insta::assert_snapshot!(report(&cases));
    let lua = savechain::lua::mlua::Lua::new();
    for (name, text) in cases {
        let whole = Save::from_str(text).unwrap_err().to_string();
        let typed = Save::data_from_slice::<savechain::Value>(text.as_bytes())
            .unwrap_err()
            .to_string();
        assert_eq!(typed, whole, "{name}: the typed reader");
        let in_lua = savechain::lua::from_text(&lua, text.as_bytes())
            .unwrap_err()
            .to_string();
        assert_eq!(in_lua, whole, "{name}: the Lua reader");
    }
}

#[test]
fn a_string_never_closed_is_named_at_its_quote_with_or_without_escapes() {
    // Issue 28: after an escape, the error named the byte after it, where the one-file Lua
    // library (and the string without escapes) named the quote.
    for text in [
        r#"{"meta": {"version": 1}, "data": "abc"#,
        r#"{"meta": {"version": 1}, "data": "a\u0041bc"#,
        r#"{"meta": {"version": 1}, "data": "a\n\"bc"#,
    ] {
        let err = Save::from_str(text).expect_err(text);
        assert!(
            err.to_string()
                .starts_with("line 1, column 34: at data: this string is never closed"),
            "{text}: {err}"
        );
    }
}
