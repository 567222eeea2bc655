//! The shipped fixtures load, are canonical, and hold exactly the values they claim.

use savechain::{Save, Value};

fn fixture(name: &str) -> (Vec<u8>, Save) {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap();
    let save = Save::load(&path).unwrap();
    (bytes, save)
}

#[test]
fn every_fixture_is_canonical() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
    let mut seen = 0;
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "json") {
            let bytes = std::fs::read(entry.path()).unwrap();
            let save = Save::from_slice(&bytes).unwrap();
            assert_eq!(save.to_vec().unwrap(), bytes, "{}", entry.path().display());
            seen += 1;
        }
    }
    assert!(seen >= 2);
}

#[test]
fn edge_values_are_exact() {
    let (_, save) = fixture("v1/edge.json");
    let notes = save.data.get("notes").unwrap();
    let bits = |section: &str, key: &str| {
        notes
            .get(section)
            .and_then(|s| s.get(key))
            .and_then(Value::as_f64)
            .unwrap()
            .to_bits()
    };
    assert_eq!(bits("doubles", "negative_zero"), (-0.0f64).to_bits());
    assert_eq!(bits("doubles", "one_tenth"), 0.1f64.to_bits());
    assert_eq!(bits("doubles", "smallest_subnormal"), 1);
    assert_eq!(bits("doubles", "largest"), f64::MAX.to_bits());
    assert_eq!(bits("doubles", "nan_with_payload"), 0xfff4_0000_0000_0001);
    assert_eq!(bits("doubles", "typed_by_hand"), 2.5e-3f64.to_bits());
    let ints = notes.get("integers").unwrap();
    assert_eq!(ints.get("u64_max").and_then(Value::as_u64), Some(u64::MAX));
    assert_eq!(ints.get("i64_min").and_then(Value::as_i64), Some(i64::MIN));
    let bytes = notes.get("bytes").unwrap();
    assert_eq!(
        bytes.get("nul_and_high"),
        Some(&Value::Bytes(b"a\0b\xff".to_vec()))
    );
    let literals = notes
        .get("tag_like_literals")
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(literals[0], Value::Array(vec!["d".into(), "0x1p+0".into()]));
    assert_eq!(literals[3], Value::Array(vec!["x".into(), "y".into()]));
    assert_eq!(
        notes
            .get("text")
            .and_then(|t| t.get("non_ascii"))
            .and_then(Value::as_str),
        Some("Zoë — 星間 🚀")
    );
}
