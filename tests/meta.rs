//! `Meta::from_slice` reads what loading the whole save reads of `meta`.

use savechain::{Meta, Save};

#[test]
fn every_fixture_and_expected_save_reads_the_same_meta() {
    let mut seen = 0;
    for dir in ["fixtures", "expected", "examples/lua_game"] {
        for entry in walkdir::WalkDir::new(dir) {
            let entry = entry.unwrap();
            if entry.path().extension().is_none_or(|e| e != "json") {
                continue;
            }
            let text = std::fs::read(entry.path()).unwrap();
            let Ok(save) = Save::from_slice(&text) else {
                continue;
            };
            assert_eq!(
                Meta::from_slice(&text).unwrap(),
                save.meta,
                "{}",
                entry.path().display()
            );
            seen += 1;
        }
    }
    assert!(seen >= 19, "only {seen} saves");
}

#[test]
fn data_is_checked_for_syntax_but_not_built() {
    // A duplicate key inside data is found by a load, not by a reading of meta.
    let text = br#"{"meta": {"version": 2}, "data": {"a": 1, "a": 2}}"#;
    assert!(Save::from_slice(text).is_err());
    assert_eq!(Meta::from_slice(text).unwrap().version, 2);
    // A duplicate in meta is.
    let text = br#"{"meta": {"version": 2, "version": 3}, "data": {}}"#;
    assert!(Meta::from_slice(text).is_err());
    // Tags inside data are still read as tags: a malformed double is a syntax of the format.
    let err =
        Meta::from_slice(br#"{"meta": {"version": 2}, "data": ["d", "0x1.zp+1"]}"#).unwrap_err();
    let whole =
        Save::from_slice(br#"{"meta": {"version": 2}, "data": ["d", "0x1.zp+1"]}"#).unwrap_err();
    assert_eq!(err.to_string(), whole.to_string());
    assert_eq!(err.path().to_string(), "data");
}
