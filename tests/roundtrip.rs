//! Every value survives text bit for bit, and the text is canonical.

mod common;

use common::{any_double, any_value};
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
    fn values_pass_through_savechains_own_serde_unchanged(value in any_value()) {
        // Lua tables included: savechain's serializer and deserializers know them.
        prop_assert_eq!(&savechain::to_value(&value).unwrap(), &value);
        prop_assert_eq!(&savechain::from_value::<Value>(value.clone()).unwrap(), &value);
        prop_assert_eq!(&savechain::from_value_ref::<Value>(&value).unwrap(), &value);
    }

    #[test]
    fn doubles_keep_every_bit(d in any_double()) {
        let text = text::to_string(&Value::Double(d)).unwrap();
        let back = text::from_str(&text).unwrap();
        prop_assert_eq!(back.as_f64().unwrap().to_bits(), d.to_bits());
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
    let literal = Value::Array(vec![Value::from("d"), Value::from("0x1p+0")]);
    let text = text::to_string_compact(&literal).unwrap();
    assert_eq!(text, r#"["a",["d","0x1p+0"]]"#);
    assert_eq!(text::from_str(&text).unwrap(), literal);
    // Longer arrays and other first elements are never tags, so they are written as they are.
    for plain in [
        r#"["d","0x1p+0","x"]"#,
        r#"["dd","x"]"#,
        r#"["D","x"]"#,
        r#"[1,"d"]"#,
        r#"["a","b"]"#,
        r#"["x","y"]"#,
        r#"["d",5]"#,
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
