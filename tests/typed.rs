//! Typed state read straight from save text (`Save::data_from_slice`) is what the tree gives
//! (`Save::from_slice` then `data_as`): the same values, and the same errors at the same
//! paths, with line and column besides.

mod common;

use std::collections::BTreeMap;

use common::any_value;
use proptest::prelude::*;
use savechain::{Save, Value};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct State {
    name: String,
    hull: f64,
    credits: u64,
    debt: i64,
    position: [f64; 3],
    cargo: Vec<Cargo>,
    dock: Option<String>,
    mode: Mode,
    tags: BTreeMap<String, i32>,
    #[serde(with = "serde_bytes")]
    blob: Vec<u8>,
    pair: (u8, bool),
    scripts: Value,
    #[serde(default)]
    unit: (),
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Cargo {
    good: String,
    count: u32,
    mass: f32,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
enum Mode {
    Docked,
    Flying { speed: f64 },
    Towed(String),
    Pair(u8, u8),
}

fn state() -> impl Strategy<Value = State> {
    let cargo = (".{0,8}", any::<u32>(), any::<f32>()).prop_map(|(good, count, mass)| Cargo {
        good,
        count,
        mass,
    });
    let mode = prop_oneof![
        Just(Mode::Docked),
        any::<f64>().prop_map(|speed| Mode::Flying { speed }),
        ".{0,6}".prop_map(Mode::Towed),
        (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Mode::Pair(a, b)),
    ];
    (
        (".{0,12}", any::<f64>(), any::<u64>(), any::<i64>()),
        (
            any::<[f64; 3]>(),
            prop::collection::vec(cargo, 0..4),
            prop::option::of(".{0,5}"),
            mode,
        ),
        (
            prop::collection::btree_map(".{0,4}", any::<i32>(), 0..4),
            prop::collection::vec(any::<u8>(), 0..6),
            (any::<u8>(), any::<bool>()),
            any_value(),
        ),
    )
        .prop_map(
            |(
                (name, hull, credits, debt),
                (position, cargo, dock, mode),
                (tags, blob, pair, scripts),
            )| {
                State {
                    name,
                    hull,
                    credits,
                    debt,
                    position,
                    cargo,
                    dock,
                    mode,
                    tags,
                    blob,
                    pair,
                    scripts,
                    unit: (),
                }
            },
        )
}

/// Equal, with doubles compared by their bits (a NaN equals itself).
fn same(a: &State, b: &State) -> bool {
    savechain::to_value(a).unwrap() == savechain::to_value(b).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(500)
    ))]

    #[test]
    fn typed_state_reads_from_text_as_from_the_tree(state in state(), compact in any::<bool>()) {
        let save = Save::new(3, savechain::to_value(&state).unwrap());
        let text = if compact { save.to_vec_compact() } else { save.to_vec() }.unwrap();
        let from_text: State = Save::data_from_slice(&text).unwrap();
        let from_tree: State = Save::from_slice(&text).unwrap().data_as().unwrap();
        prop_assert!(same(&from_text, &state), "{from_text:?}\n{state:?}");
        prop_assert!(same(&from_tree, &state));
    }

    #[test]
    fn any_document_reads_as_a_value_from_text_as_from_the_tree(data in any_value()) {
        let text = Save::new(1, data.clone()).to_vec().unwrap();
        let from_text: Value = Save::data_from_slice(&text).unwrap();
        prop_assert_eq!(from_text, data);
    }

    #[test]
    fn wrong_types_fail_at_the_same_path_with_the_same_words(data in any_value()) {
        // Most documents are not a `State`: both ways refuse them alike.
        let text = Save::new(1, data).to_vec().unwrap();
        let from_text = Save::data_from_slice::<State>(&text);
        let from_tree = Save::from_slice(&text).unwrap().data_as::<State>();
        match (from_text, from_tree) {
            (Ok(a), Ok(b)) => prop_assert!(same(&a, &b)),
            (Err(a), Err(b)) => {
                prop_assert_eq!(a.path().to_string(), b.path().to_string());
                prop_assert_eq!(a.message(), b.message());
                prop_assert!(a.line().is_some(), "{a}");
            }
            (a, b) => prop_assert!(false, "text {a:?}, tree {b:?}"),
        }
    }
}

#[test]
fn errors_say_where_in_the_text() {
    let text = "{\"meta\": {\"version\": 1},\n \"data\": {\"cargo\": [{\"good\": \"ore\", \"count\": -1, \"mass\": 1}]}}";
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Hold {
        cargo: Vec<Cargo>,
    }
    let err = Save::data_from_slice::<Hold>(text.as_bytes()).unwrap_err();
    assert_eq!(err.path().to_string(), "data.cargo[0].count");
    assert_eq!((err.line(), err.column()), (Some(2), Some(46)));
    assert!(
        err.message().contains("invalid value: integer `-1`"),
        "{err}"
    );

    // Syntax errors and envelope errors are the reader's own.
    let err = Save::data_from_slice::<Vec<u32>>(b"{\"meta\": {\"version\": 1}, \"data\": [1,]}")
        .unwrap_err();
    assert!(
        err.to_string().contains("JSON allows no trailing comma"),
        "{err}"
    );
    let err =
        Save::data_from_slice::<Hold>(b"{\"meta\": {}, \"data\": {\"cargo\": []}}").unwrap_err();
    assert_eq!(
        err.to_string(),
        Save::from_str("{\"meta\": {}, \"data\": {\"cargo\": []}}")
            .unwrap_err()
            .to_string()
    );
    // A key twice: refused as the reader refuses it (a struct's derive says so first).
    let text = b"{\"data\": {\"cargo\": [], \"cargo\": []}, \"meta\": {\"version\": 1}}";
    let err = Save::data_from_slice::<BTreeMap<String, Vec<u32>>>(text).unwrap_err();
    assert!(
        err.to_string()
            .contains("duplicate key \"cargo\" (first at line 1, column 11)"),
        "{err}"
    );
    let err = Save::data_from_slice::<Hold>(text).unwrap_err();
    assert!(err.to_string().contains("duplicate field `cargo`"), "{err}");
}

#[test]
fn what_a_struct_refuses_is_placed_at_its_object_or_key() {
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Ship {
        name: String,
        hull: i64,
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Data {
        ship: Ship,
    }
    let place = |text: &str| {
        let err = Save::data_from_slice::<Data>(text.as_bytes()).unwrap_err();
        (
            err.line(),
            err.column(),
            err.path().to_string(),
            err.message().to_string(),
        )
    };
    // A hand edit that dropped a field: at the object that lacks it, not the end of the text.
    let text = "{\n  \"data\": {\n    \"ship\": {\n      \"hull\": 3\n    }\n  },\n  \"meta\": {\"version\": 1}\n}\n";
    let (line, column, path, message) = place(text);
    assert_eq!((line, column), (Some(3), Some(13)), "{message}");
    assert_eq!(path, "data.ship");
    assert!(message.contains("missing field `name`"), "{message}");
    // A field typed twice: serde's derive says so first, at the same object.
    let text = "{\n  \"data\": {\n    \"ship\": {\n      \"hull\": 3,\n      \"hull\": 4,\n      \"name\": \"K\"\n    }\n  },\n  \"meta\": {\"version\": 1}\n}\n";
    let (line, column, path, message) = place(text);
    assert_eq!(
        (line, column, path.as_str()),
        (Some(3), Some(13), "data.ship")
    );
    assert!(message.contains("duplicate field `hull`"), "{message}");
    // A field the type does not know: at its key, named in the path as the tree names it.
    let text = "{\n  \"data\": {\n    \"ship\": {\n      \"hull\": 3,\n      \"hul\": 4,\n      \"name\": \"K\"\n    }\n  },\n  \"meta\": {\"version\": 1}\n}\n";
    let (line, column, path, message) = place(text);
    assert_eq!(
        (line, column, path.as_str()),
        (Some(5), Some(7), "data.ship.hul")
    );
    assert!(message.contains("unknown field `hul`"), "{message}");
    let tree = Save::from_str(text).unwrap().data_as::<Data>().unwrap_err();
    assert_eq!(tree.path().to_string(), path);
}

#[test]
fn strings_are_borrowed_from_the_text() {
    #[derive(Deserialize)]
    struct Names<'a> {
        #[serde(borrow)]
        plain: &'a str,
    }
    let text = br#"{"data": {"plain": "Kestrel"}, "meta": {"version": 1}}"#;
    let names: Names<'_> = Save::data_from_slice(text).unwrap();
    assert_eq!(names.plain, "Kestrel");
}
