//! Every value survives text bit for bit, and the text is canonical.

mod common;

use common::{any_double, any_value, object_key};
use proptest::prelude::*;
use savechain::text::{self, Style};
use savechain::{Map, Save, Value};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn values_round_trip_pretty_and_compact(value in any_value()) {
        let pretty = text::to_vec(&value).unwrap();
        prop_assert_eq!(&text::from_slice(&pretty).unwrap(), &value);
        let compact = text::to_vec_compact(&value).unwrap();
        prop_assert_eq!(&text::from_slice(&compact).unwrap(), &value);
    }

    #[test]
    fn canonical_text_is_a_fixed_point(value in any_value()) {
        let once = text::to_vec(&value).unwrap();
        let twice = text::to_vec(&text::from_slice(&once).unwrap()).unwrap();
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn saves_round_trip(data in any_value(), version in any::<u64>(), extra in any_value()) {
        let mut save = Save::new(version, data).with_writer(semver::Version::new(1, 2, 3));
        save.meta.extra.insert("extra", extra);
        let loaded = Save::from_slice(&save.to_vec().unwrap()).unwrap();
        prop_assert_eq!(&loaded, &save);
        let loaded = Save::from_slice(&save.to_vec_compact().unwrap()).unwrap();
        prop_assert_eq!(loaded, save);
    }

    #[test]
    fn the_top_level_writes_meta_first_and_deeper_objects_all_in_key_order(
        entries in prop::collection::vec((object_key(), any_value()), 0..6),
    ) {
        let document: Map = entries.into_iter().collect();
        // Each member as it stands inside a document: alone in an object, it is first.
        let member = |key: &str, value: &Value| {
            let alone: Map = [(key, value.clone())].into_iter().collect();
            let text = text::to_string_compact(&Value::Object(alone)).unwrap();
            text[1..text.len() - 1].to_string()
        };
        let mut members: Vec<String> = Vec::new();
        if let Some(meta) = document.get("meta") {
            members.push(member("meta", meta));
        }
        members.extend(document.iter().filter(|(k, _)| *k != "meta").map(|(k, v)| member(k, v)));
        let compact = text::to_string_compact(&Value::Object(document.clone())).unwrap();
        prop_assert_eq!(&compact, &format!("{{{}}}", members.join(",")));
        prop_assert_eq!(text::from_str(&compact).unwrap(), Value::Object(document));
    }

    #[test]
    fn a_saves_text_is_its_documents_and_starts_with_meta(data in any_value(), version in any::<u64>()) {
        let save = Save::new(version, data);
        let document: Map = [("data", save.data.clone()), ("meta", save.meta.to_value())]
            .into_iter()
            .collect();
        let document = Value::Object(document);
        let pretty = save.to_vec().unwrap();
        prop_assert_eq!(&pretty, &text::to_vec(&document).unwrap());
        prop_assert!(pretty.starts_with(b"{\n  \"meta\": {\n    \"version\": "), "pretty");
        let compact = save.to_vec_compact().unwrap();
        prop_assert_eq!(&compact, &text::to_vec_compact(&document).unwrap());
        prop_assert!(compact.starts_with(b"{\"meta\":{\"version\":"), "compact");
        // The other way of writing a document's text gives the same.
        prop_assert_eq!(text::reformat(&compact, Style::Pretty).unwrap(), pretty);
    }

    #[test]
    fn values_pass_through_savechains_own_serde_unchanged(value in any_value()) {
        // Lua tables included: savechain's serializer and deserializers know them.
        prop_assert_eq!(&savechain::to_value(&value).unwrap(), &value);
        prop_assert_eq!(&savechain::from_value::<Value>(value.clone()).unwrap(), &value);
        prop_assert_eq!(&savechain::from_value_ref::<Value>(&value).unwrap(), &value);
    }

    #[test]
    fn the_decimal_view_reads_back_to_the_same_canonical_text(
        data in any_value(),
        version in any::<u64>(),
    ) {
        let save = Save::new(version, data);
        let canonical = save.to_vec().unwrap();
        let mut view = Vec::new();
        save.write(&mut view, Style::Decimal).unwrap();
        let back = Save::from_slice(&view).unwrap();
        prop_assert_eq!(back.to_vec().unwrap(), canonical);
    }

    #[test]
    fn every_double_keeps_its_bits_through_the_decimal_view(d in any_double()) {
        let mut view = Vec::new();
        text::write_value(&mut view, &Value::Double(d), Style::Decimal).unwrap();
        let back = text::from_slice(&view).unwrap();
        prop_assert_eq!(back.as_f64().unwrap().to_bits(), d.to_bits());
        // Finite doubles are numbers a person can read; the others keep their hexfloat.
        let view = String::from_utf8(view).unwrap();
        prop_assert_eq!(view.contains("\"d\", \""), !d.is_finite(), "{}", view);
    }

    #[test]
    fn doubles_keep_every_bit(d in any_double()) {
        let text = text::to_string(&Value::Double(d)).unwrap();
        let back = text::from_str(&text).unwrap();
        prop_assert_eq!(back.as_f64().unwrap().to_bits(), d.to_bits());
    }

    #[test]
    fn any_finite_double_typed_as_a_decimal_in_a_double_tag_reads_back_exactly(
        d in any_double().prop_filter("finite", |d| d.is_finite()),
    ) {
        // Rust prints the shortest decimal that reads back as the same double, in three
        // styles ("100", "1e2", "100.0"), all of them JSON numbers.
        for typed in [format!("{d}"), format!("{d:e}"), format!("{d:?}")] {
            let spelling = format!("[\"d\", {typed}]");
            let back = text::from_str(&spelling);
            prop_assert!(
                matches!(back, Ok(Value::Double(b)) if b.to_bits() == d.to_bits()),
                "{} read as {:?}", spelling, back
            );
        }
    }

    #[test]
    fn long_decimals_in_a_double_tag_read_as_the_correctly_rounded_double(
        typed in "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,40})?([eE][+-]?[0-9]{1,3})?",
    ) {
        let spelling = format!("[\"d\", {typed}]");
        let expected: f64 = typed.parse().unwrap();
        let back = text::from_str(&spelling);
        if expected.is_finite() {
            prop_assert!(
                matches!(back, Ok(Value::Double(b)) if b.to_bits() == expected.to_bits()),
                "{} read as {:?}, expected {:?}", spelling, back, expected
            );
        } else {
            // Too large for a double: refused, never infinity.
            prop_assert!(back.is_err(), "{} read as {:?}", spelling, back);
        }
    }

    #[test]
    fn integers_in_a_double_tag_read_as_the_nearest_double(i in any::<i64>(), u in any::<u64>()) {
        // `as` rounds to nearest with ties to even, as reading must.
        prop_assert_eq!(text::from_str(&format!("[\"d\", {i}]")).unwrap(), Value::Double(i as f64));
        prop_assert_eq!(text::from_str(&format!("[\"d\", {u}]")).unwrap(), Value::Double(u as f64));
    }

    #[test]
    fn key_order_of_the_input_does_not_matter(
        entries in prop::collection::btree_map(any::<String>(), any::<i64>(), 0..20),
        seed in any::<u64>(),
    ) {
        let mut members: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("{}: {v}", serde_json::to_string(k).unwrap()))
            .collect();
        // A cheap deterministic shuffle.
        let n = members.len();
        for i in (1..n).rev() {
            members.swap(i, (seed.wrapping_mul(i as u64 + 7) % (i as u64 + 1)) as usize);
        }
        let shuffled = format!("{{{}}}", members.join(", "));
        let expected: Map = entries.into_iter().map(|(k, v)| (k, Value::Int(v))).collect();
        let value = text::from_str(&shuffled).unwrap();
        prop_assert_eq!(&value, &Value::Object(expected.clone()));
        prop_assert_eq!(text::to_vec(&value).unwrap(), text::to_vec(&Value::Object(expected)).unwrap());
    }
}

#[test]
fn other_formats_get_lua_tables_as_their_tag_arrays() {
    let text = r#"{"alias": ["r", [1]], "keyed": ["t", [[1, "a"], [true, "b"]]], "shared": ["s", [1, {"x": 1}]]}"#;
    let value = text::from_str(text).unwrap();
    assert_eq!(
        serde_json::to_string(&value).unwrap(),
        r#"{"alias":["r",[1]],"keyed":["t",[[1,"a"],[true,"b"]]],"shared":["s",[1,{"x":1}]]}"#
    );
    let back: Value = serde_json::from_str(r#"["r",[1]]"#).unwrap();
    assert_eq!(
        back,
        Value::Array(vec![Value::from("r"), Value::Array(vec![Value::Int(1)])])
    );
}

#[test]
fn tag_like_literal_arrays_are_escaped_and_come_back() {
    let pair = |tag: &str, second: Value| Value::Array(vec![Value::from(tag), second]);
    let object: Map = [("k", Value::Int(1))].into_iter().collect();
    // Any two-element array starting with "d" or "b" reads as a tag, so the writer escapes
    // every literal one, whatever its second element.
    for (literal, spelling) in [
        (pair("d", Value::from("0x1p+0")), r#"["a",["d","0x1p+0"]]"#),
        (pair("d", Value::Int(5)), r#"["a",["d",5]]"#),
        (
            pair("d", Value::UInt(u64::MAX)),
            r#"["a",["d",18446744073709551615]]"#,
        ),
        (
            pair("d", Value::Double(1.5)),
            r#"["a",["d",["d","0x1.8p+0"]]]"#,
        ),
        (pair("d", Value::Null), r#"["a",["d",null]]"#),
        (pair("d", Value::Array(vec![])), r#"["a",["d",[]]]"#),
        (pair("b", Value::Bool(true)), r#"["a",["b",true]]"#),
        (pair("b", Value::Int(-7)), r#"["a",["b",-7]]"#),
        (pair("b", Value::Object(object)), r#"["a",["b",{"k":1}]]"#),
        (
            pair("b", Value::Bytes(vec![1])),
            r#"["a",["b",["b","\u0001"]]]"#,
        ),
    ] {
        let text = text::to_string_compact(&literal).unwrap();
        assert_eq!(text, spelling);
        assert_eq!(text::from_str(&text).unwrap(), literal, "{spelling}");
        let pretty = text::to_string(&literal).unwrap();
        assert_eq!(text::from_str(&pretty).unwrap(), literal, "{pretty}");
    }
    // Longer arrays and other first elements are never tags, so they are written as they are.
    for plain in [
        r#"["d","0x1p+0","x"]"#,
        r#"["d",5,6]"#,
        r#"["b",5,"x"]"#,
        r#"["dd","x"]"#,
        r#"["dd",5]"#,
        r#"["D","x"]"#,
        r#"["D",5]"#,
        r#"[1,"d"]"#,
        r#"["a","b"]"#,
        r#"["x","y"]"#,
        r#"["x",5]"#,
        r#"["a",["a",["x",[1]]],2]"#,
    ] {
        let value = text::from_str(plain).unwrap();
        assert_eq!(text::to_string_compact(&value).unwrap(), plain);
    }
}

#[test]
fn documented_spellings() {
    let cases: &[(Value, &str)] = &[
        (Value::Double(1.0), r#"["d","0x1p+0"]"#),
        (Value::Double(0.1), r#"["d","0x1.999999999999ap-4"]"#),
        (Value::Double(-0.0), r#"["d","-0x0p+0"]"#),
        (
            Value::Double(f64::from_bits(1)),
            r#"["d","0x0.0000000000001p-1022"]"#,
        ),
        (Value::Double(f64::INFINITY), r#"["d","inf"]"#),
        (Value::Double(f64::NEG_INFINITY), r#"["d","-inf"]"#),
        (Value::Double(f64::NAN), r#"["d","nan"]"#),
        (
            Value::Double(f64::from_bits(0x7ff0_0000_0000_0001)),
            r#"["d","nan:0x1"]"#,
        ),
        (
            Value::Bytes(b"a\0\xff\"".to_vec()),
            r#"["b","a\u0000\u00ff\""]"#,
        ),
        (Value::UInt(u64::MAX), "18446744073709551615"),
        (Value::Int(i64::MIN), "-9223372036854775808"),
        (Value::from("Zoë\n"), r#""Zoë\n""#),
    ];
    for (value, spelling) in cases {
        assert_eq!(&text::to_string_compact(value).unwrap(), spelling);
        assert_eq!(&text::from_str(spelling).unwrap(), value, "{spelling}");
    }
}

#[test]
fn decimals_load_as_correctly_rounded_doubles() {
    let value = text::from_str("[1.5, -2.5e-3, 0.1, 1e-400, 17, -0]").unwrap();
    assert_eq!(
        value,
        Value::Array(vec![
            Value::Double(1.5),
            Value::Double(-2.5e-3),
            Value::Double(0.1),
            Value::Double(0.0),
            Value::Int(17),
            Value::Int(0),
        ])
    );
}

#[test]
fn numbers_in_a_double_tag_read_as_that_double() {
    let cases: &[(&str, f64)] = &[
        (r#"["d", 100]"#, 100.0),
        (r#"["d", 96.5]"#, 96.5),
        (r#"["d", -2.5e-3]"#, -2.5e-3),
        (r#"["d", 0.1]"#, 0.1),
        (r#"["d", 0]"#, 0.0),
        (r#"["d", -0]"#, -0.0),
        (r#"["d", -0.0]"#, -0.0),
        (r#"["d", 1e-400]"#, 0.0),
        (r#"["d", -1e-400]"#, -0.0),
        (r#"["d", 1.7976931348623157e308]"#, f64::MAX),
        (r#"["d", 5e-324]"#, f64::from_bits(1)),
        // Integers beyond 64 bits are fine in a double.
        (r#"["d", 18446744073709551616]"#, 18446744073709551616.0),
        (r#"["d", -9223372036854775809]"#, -9223372036854775808.0),
        // Correctly rounded, to nearest with ties to even: 2^53 + 1 lies halfway between
        // 2^53 and 2^53 + 2, and rounds to the even one; 2^53 + 3 rounds up to 2^53 + 4.
        (r#"["d", 9007199254740993]"#, 9007199254740992.0),
        (r#"["d", 9007199254740995]"#, 9007199254740996.0),
        // 1 + 2^-53 exactly is halfway between 1 and the next double: even is 1. A hair
        // above, it is the next double.
        (
            r#"["d", 1.00000000000000011102230246251565404236316680908203125]"#,
            1.0,
        ),
        (
            r#"["d", 1.00000000000000011102230246251565404236316680908203125000001]"#,
            f64::from_bits(0x3ff0_0000_0000_0001),
        ),
        // Whitespace anywhere JSON allows it, and the compact spelling.
        ("[ \"d\" ,\n    100\n  ]", 100.0),
        (r#"["d",100]"#, 100.0),
    ];
    for &(spelling, expected) in cases {
        let value = text::from_str(spelling).unwrap_or_else(|e| panic!("{spelling}: {e}"));
        let Value::Double(d) = value else {
            panic!("{spelling} read as {value:?}");
        };
        assert_eq!(d.to_bits(), expected.to_bits(), "{spelling} read as {d:?}");
    }
    // Inside other values and escapes, as elements, keys and class contents are read.
    assert_eq!(
        text::from_str(r#"{"hull": ["d", 100], "pos": [["d", 1], 2, ["d", -0.5]]}"#).unwrap(),
        text::from_str(r#"{"hull": 100.0, "pos": [1.0, 2, -0.5]}"#).unwrap(),
    );
    assert_eq!(
        text::from_str(r#"["a", ["d", 100]]"#).unwrap(),
        Value::Array(vec!["d".into(), Value::Int(100)])
    );
    assert_eq!(
        text::from_str(r#"["a", [["d", 100], ["d", 5, 6]]]"#).unwrap(),
        Value::Array(vec![
            Value::Double(100.0),
            Value::Array(vec!["d".into(), Value::Int(5), Value::Int(6)]),
        ])
    );
}

#[test]
fn a_typed_double_is_stored_back_canonically() {
    // The hand edit of docs/FORMAT.md, section 7.
    let edited = r#"{
  "data": {
    "ship": {
      "hull": ["d", 100],
      "position": [["d", "0x1.88p+3"], ["d", "-0x1.cp+1"], ["d", "0x1p-3"]]
    },
    "player": {
      "credits": 999999
    }
  },
  "meta": {
    "version": 1,
    "writer": "0.1.0"
  }
}"#;
    let save = Save::from_str(edited).unwrap();
    let hull = save.data.get("ship").and_then(|s| s.get("hull"));
    assert_eq!(hull, Some(&Value::Double(100.0)));
    let stored = String::from_utf8(save.to_vec().unwrap()).unwrap();
    assert_eq!(
        stored,
        r#"{
  "meta": {
    "version": 1,
    "writer": "0.1.0"
  },
  "data": {
    "player": {
      "credits": 999999
    },
    "ship": {
      "hull": ["d", "0x1.9p+6"],
      "position": [["d", "0x1.88p+3"], ["d", "-0x1.cp+1"], ["d", "0x1p-3"]]
    }
  }
}
"#
    );
    // That text is canonical: loading and storing it again changes nothing.
    let again = Save::from_str(&stored).unwrap().to_vec().unwrap();
    assert_eq!(String::from_utf8(again).unwrap(), stored);
    // The mistakes it shows are located where the section says.
    for (typed, line_column) in [("[\"d\", 100.0.0]", (4, 26)), ("[\"d\", true]", (4, 21))] {
        let err = Save::from_str(&edited.replace("[\"d\", 100]", typed)).unwrap_err();
        assert_eq!(
            (err.line(), err.column()),
            (Some(line_column.0), Some(line_column.1))
        );
        assert_eq!(err.path().to_string(), "data.ship.hull", "{err}");
    }
    // Section 3.2's example.
    assert_eq!(
        text::to_string(&text::from_str(r#"["d", 96.5]"#).unwrap()).unwrap(),
        "[\"d\", \"0x1.82p+6\"]\n"
    );
}

#[test]
fn byte_strings_accept_raw_latin1_characters() {
    assert_eq!(
        text::from_str(r#"["b", "ÿ"]"#).unwrap(),
        Value::Bytes(vec![0xff])
    );
}

#[test]
fn pretty_layout_is_pinned() {
    let value = text::from_str(
        r#"{"pos": [1.5, 2, -0.25], "quat": [0, 0, 0, 1], "five": [1, 2, 3, 4, 5],
            "names": ["a", "b"], "reserved": ["a", ["x", [1]]], "empty": [], "none": {}, "bytes": ["b", "\u0001x"],
            "lit": ["a", ["z", {"k": 1}]]}"#,
    )
    .unwrap();
    insta::assert_snapshot!(text::to_string(&value).unwrap());
}

#[test]
fn lua_table_layout_is_pinned() {
    let value = text::from_str(
        r#"{"home": ["s", [1, {"name": "Sol", "moons": ["t", [[1, "Luna"], [3, {"k": 1}], [true, [1, 2]]]]}]],
            "here": ["r", [1]], "ship": ["c", ["Ship", {"hull": 3}]], "x": ["c", ["a", ["x", []]]],
            "pairs": ["t", [["a", ["x", [1]]], [["d", "0x1p-1"], null]]], "none": ["t", []]}"#,
    )
    .unwrap();
    insta::assert_snapshot!(text::to_string(&value).unwrap());
    insta::assert_snapshot!(text::to_string_compact(&value).unwrap());
}

#[test]
fn writing_is_canonical_whatever_the_build_order() {
    let mut a = Map::new();
    a.insert("zeta", Value::Int(1));
    a.insert("alpha", Value::Int(2));
    let b: Map = [("alpha", Value::Int(2)), ("zeta", Value::Int(1))]
        .into_iter()
        .collect();
    let mut out_a = Vec::new();
    let mut out_b = Vec::new();
    text::write_value(&mut out_a, &Value::Object(a), Style::Pretty).unwrap();
    text::write_value(&mut out_b, &Value::Object(b), Style::Pretty).unwrap();
    assert_eq!(out_a, out_b);
}

#[test]
fn arrays_that_start_like_an_escape_but_are_longer_read_normally() {
    let value = text::from_str(r#"["a", ["d", "0x1p+0"], 5]"#).unwrap();
    assert_eq!(
        value,
        Value::Array(vec!["a".into(), Value::Double(1.0), Value::Int(5)])
    );
    let value = text::from_str(r#"["a", ["a", ["d", "0x1p+0"]], ["b", "x"]]"#).unwrap();
    assert_eq!(
        value,
        Value::Array(vec![
            "a".into(),
            Value::Array(vec!["d".into(), "0x1p+0".into()]),
            Value::Bytes(b"x".to_vec()),
        ])
    );
    // An unknown tag inside is reported where it stands.
    let err = text::from_str("[\"a\",\n [\"q\", [1]], 2]").unwrap_err();
    assert_eq!((err.line(), err.column()), (Some(2), Some(8)));
    assert_eq!(err.path().to_string(), "[1]");
}

/// The decimal view of doubles at the edges: every exponent, the subnormals, the largest
/// and smallest of each binade, both zeros, and a sweep of mantissas.
#[test]
fn the_decimal_view_keeps_the_bits_of_every_kind_of_double() {
    let mut patterns: Vec<u64> = Vec::new();
    for exponent in 0..2048u64 {
        for mantissa in [
            0,
            1,
            2,
            0x8_0000_0000_0000,
            0xf_ffff_ffff_fffe,
            0xf_ffff_ffff_ffff,
        ] {
            for sign in [0, 1u64 << 63] {
                patterns.push(sign | exponent << 52 | mantissa);
            }
        }
    }
    // A multiplicative sweep through every magnitude.
    let mut bits = 1u64;
    while bits < u64::MAX / 3 {
        patterns.push(bits);
        bits = bits * 3 + 1;
    }
    for bits in patterns {
        let d = f64::from_bits(bits);
        let mut view = Vec::new();
        text::write_value(&mut view, &Value::Double(d), Style::Decimal).unwrap();
        let back = text::from_slice(&view).unwrap();
        assert_eq!(
            back.as_f64().unwrap().to_bits(),
            bits,
            "{}",
            String::from_utf8_lossy(&view)
        );
    }
}

#[test]
fn the_decimal_view_is_pinned() {
    let save = Save::from_str(
        r#"{"meta": {"version": 3}, "data": {"ship": {"hull": ["d", "0x1.ee147ae147ae1p-1"],
        "position": [["d", "0x1.7edp+13"], ["d", "-0x0p+0"], ["d", "0x1p-1074"], ["d", "0x1p+1000"]],
        "lost": ["d", "inf"], "odd": ["d", "nan:0x1"], "crew": 3, "name": "Wren"}}}"#,
    )
    .unwrap();
    let mut view = Vec::new();
    save.write(&mut view, Style::Decimal).unwrap();
    insta::assert_snapshot!(String::from_utf8(view).unwrap());
}
