//! Getting around in a document: indexing, paths (`Value::pointer`), `take`, and the entry
//! API of `Map`.

use proptest::prelude::*;
use savechain::path::{Path, Segment};
use savechain::value::{Entry, Table};
use savechain::{Map, Value};

fn doc(text: &str) -> Value {
    savechain::text::from_str(text).unwrap()
}

#[test]
fn indexing_reads_members_and_elements_and_null_for_what_is_not_there() {
    let data = doc(r#"{"ship": {"hull": 96, "cargo": [{"mass": 12}, "ore"]}, "n": null}"#);
    assert_eq!(data["ship"]["hull"], Value::Int(96));
    assert_eq!(data["ship"]["cargo"][0]["mass"], Value::Int(12));
    assert_eq!(data["ship"]["cargo"][1], Value::from("ore"));
    let key = String::from("ship");
    assert_eq!(data[&key]["hull"], Value::Int(96));
    assert_eq!(data[key.clone()]["hull"], Value::Int(96));
    assert_eq!(data[key.as_str()]["hull"], Value::Int(96));

    // Missing keys, indexes past the end, and the wrong kind of value: null, no panic.
    assert!(data["ship"]["shields"].is_null());
    assert!(data["ship"]["cargo"][2].is_null());
    assert!(data["ship"]["hull"]["x"].is_null());
    assert!(data["ship"][0].is_null());
    assert!(data["ship"]["cargo"]["mass"].is_null());
    assert!(data["n"]["deeper"][3].is_null());
    // A Lua table has no members to indexing.
    let table = Value::from(Table::Class {
        name: "Ship".into(),
        value: doc(r#"{"hull": 1}"#),
    });
    assert!(table["hull"].is_null());
    assert!(table[0].is_null());
}

#[test]
fn index_mut_inserts_into_objects_and_makes_objects_of_null() {
    let mut data = doc(r#"{"ship": {"hull": 96}, "crew": ["Ada", "Grace"], "n": null}"#);
    data["ship"]["hull"] = Value::Int(80);
    data["ship"]["stats"]["speed"]["max"] = Value::Int(7);
    data["n"]["made"] = Value::Bool(true);
    data["crew"][1] = Value::from("Hedy");
    let key = String::from("fuel");
    data["ship"][&key] = Value::Int(100);
    assert_eq!(
        data,
        doc(
            r#"{"ship": {"hull": 80, "stats": {"speed": {"max": 7}}, "fuel": 100},
                "crew": ["Ada", "Hedy"], "n": {"made": true}}"#
        )
    );
    // Reading through `IndexMut` inserts the missing key as null, as serde_json does.
    let _ = &mut data["ship"]["cloak"];
    assert_eq!(data.pointer("ship.cloak"), Some(&Value::Null));
    // The map stays sorted: its text is canonical.
    assert_eq!(
        savechain::text::to_string_compact(&data["ship"]).unwrap(),
        r#"{"cloak":null,"fuel":100,"hull":80,"stats":{"speed":{"max":7}}}"#
    );
}

#[test]
#[should_panic(expected = "cannot index an integer with [\"x\"]")]
fn index_mut_with_a_key_panics_on_what_is_not_an_object() {
    let mut data = doc(r#"{"hull": 96}"#);
    data["hull"]["x"] = Value::Null;
}

#[test]
#[should_panic(expected = "cannot index an object with [0]")]
fn index_mut_with_an_index_panics_on_what_is_not_an_array() {
    let mut data = doc(r#"{"hull": 96}"#);
    data[0] = Value::Null;
}

#[test]
#[should_panic(expected = "cannot index an array of 2 elements with [2]")]
fn index_mut_past_the_end_panics() {
    let mut data = doc(r#"[1, 2]"#);
    data[2] = Value::Null;
}

#[test]
fn take_leaves_null() {
    let mut data = doc(r#"{"log": ["docked"], "n": 1}"#);
    let log = data["log"].take();
    assert_eq!(log, doc(r#"["docked"]"#));
    assert_eq!(data, doc(r#"{"log": null, "n": 1}"#));
    assert_eq!(data.take(), doc(r#"{"log": null, "n": 1}"#));
    assert_eq!(data, Value::Null);
}

#[test]
fn pointer_follows_paths_as_errors_write_them() {
    let data = doc(
        r#"{"ship": {"cargo": [{"mass": 12}]}, "a.b": {"[0]": {"": 1}},
            "say \"hi\"": 2, "odd key": [[3]], "Sol-Vega": 4, "é": 5}"#,
    );
    assert_eq!(data.pointer("ship.cargo[0].mass"), Some(&Value::Int(12)));
    assert_eq!(data.pointer(r#"["a.b"]["[0]"][""]"#), Some(&Value::Int(1)));
    assert_eq!(data.pointer(r#"["say \"hi\""]"#), Some(&Value::Int(2)));
    assert_eq!(data.pointer(r#"["odd key"][0][0]"#), Some(&Value::Int(3)));
    assert_eq!(data.pointer(r#"["Sol-Vega"]"#), Some(&Value::Int(4)));
    // A key with no dot or bracket may be written bare.
    assert_eq!(data.pointer("Sol-Vega"), Some(&Value::Int(4)));
    assert_eq!(data.pointer("é"), Some(&Value::Int(5)));
    assert_eq!(data.pointer("(root)"), Some(&data));
    assert_eq!(data.pointer(""), Some(&data));

    for missing in [
        "ship.hull",
        "ship.cargo[1]",
        "ship.cargo[0].mass.x",
        "ship[0]",
        "ship.cargo.mass",
        "a.b",
        "data.ship",
    ] {
        assert_eq!(data.pointer(missing), None, "{missing}");
    }
    for malformed in [
        "ship.cargo[0",
        "ship..cargo",
        ".ship",
        "ship.",
        "ship.cargo[-1]",
        r#"["ship"#,
    ] {
        assert_eq!(data.pointer(malformed), None, "{malformed}");
    }
}

#[test]
fn pointer_does_not_go_into_lua_tables() {
    let mut data = Map::new();
    data.insert(
        "unit",
        Value::from(Table::Class {
            name: "Unit".into(),
            value: doc(r#"{"hp": 3}"#),
        }),
    );
    let data = Value::Object(data);
    assert!(data.pointer("unit").is_some());
    assert_eq!(data.pointer("unit.hp"), None);
}

#[test]
fn pointer_mut_changes_in_place_and_makes_nothing() {
    let mut data = doc(r#"{"ship": {"cargo": [{"mass": 12}]}}"#);
    *data.pointer_mut("ship.cargo[0].mass").unwrap() = Value::Int(12_000);
    assert_eq!(data["ship"]["cargo"][0]["mass"], Value::Int(12_000));
    assert!(data.pointer_mut("ship.crew").is_none());
    assert!(data.pointer_mut("ship.cargo[3]").is_none());
    assert_eq!(data, doc(r#"{"ship": {"cargo": [{"mass": 12000}]}}"#));
    data.pointer_mut("(root)").unwrap().take();
    assert_eq!(data, Value::Null);
}

#[test]
fn a_conversion_error_path_finds_the_value_it_is_about() {
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Cargo {
        mass: u32,
    }
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Ship {
        cargo: Vec<Cargo>,
    }
    let data = doc(r#"{"cargo": [{"mass": 1}, {"mass": "heavy"}]}"#);
    let err = savechain::from_value_ref::<Ship>(&data).unwrap_err();
    assert_eq!(err.path().to_string(), "cargo[1].mass");
    assert_eq!(
        data.pointer(&err.path().to_string()),
        Some(&Value::from("heavy"))
    );
}

#[test]
fn entries_insert_in_key_order() {
    let mut map = Map::new();
    map.insert("b", Value::Int(2));
    assert_eq!(map.entry("c").key(), "c");
    *map.entry("c").or_insert(Value::Int(0)) = Value::Int(3);
    map.entry("a").or_insert_with(|| Value::Int(1));
    assert_eq!(map.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(
        map.values().cloned().collect::<Vec<_>>(),
        [1, 2, 3].map(Value::from)
    );

    // Occupied: the default is neither used nor made.
    assert_eq!(*map.entry("b").or_insert(Value::Int(9)), Value::Int(2));
    map.entry("b")
        .or_insert_with(|| panic!("b is there: no default is made"));
    // `and_modify` changes only what is there.
    map.entry("b").and_modify(|v| *v = Value::Int(20));
    map.entry("z").and_modify(|v| *v = Value::Int(99));
    assert_eq!(map.get("b"), Some(&Value::Int(20)));
    assert!(!map.contains_key("z"));
}

#[test]
fn occupied_and_vacant_entries() {
    let mut map: Map = [("hull", Value::Int(0)), ("name", Value::from("Wreck"))]
        .into_iter()
        .collect();
    match map.entry("hull") {
        Entry::Occupied(mut hull) => {
            assert_eq!(hull.key(), "hull");
            assert_eq!(hull.get(), &Value::Int(0));
            assert_eq!(hull.insert(Value::Int(5)), Value::Int(0));
            *hull.get_mut() = Value::Int(6);
            *hull.into_mut() = Value::Int(7);
        }
        Entry::Vacant(_) => panic!("hull is there"),
    }
    assert_eq!(map.get("hull"), Some(&Value::Int(7)));
    match map.entry("name") {
        Entry::Occupied(name) => assert_eq!(name.remove(), Value::from("Wreck")),
        Entry::Vacant(_) => panic!("name is there"),
    }
    match map.entry("crew") {
        Entry::Vacant(crew) => {
            assert_eq!(crew.key(), "crew");
            *crew.insert(Value::Int(1)) = Value::Int(2);
        }
        Entry::Occupied(_) => panic!("crew is not there"),
    }
    assert_eq!(map.keys().collect::<Vec<_>>(), ["crew", "hull"]);
    assert_eq!(map.get("crew"), Some(&Value::Int(2)));
}

/// Keys that paths must quote (dots, brackets, quotes, escapes, nothing at all) as well as
/// plain ones and any text.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,5}",
        "[0-9]{1,3}",
        r#"[a-z.\[\]"\\ ()\-]{0,6}"#,
        prop::sample::select(vec![
            "",
            "(root)",
            ".",
            "[",
            "]",
            "[0]",
            "a.b",
            "\"",
            "\\",
            "\n\t\r\0",
            "\u{301}",
            "\u{200b}",
            "é",
            "\u{10ffff}",
        ])
        .prop_map(String::from),
        any::<String>(),
    ]
}

fn document() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>().prop_map(Value::Double),
        ".{0,4}".prop_map(Value::String),
        Just(Value::from(Table::Ref(1))),
    ];
    leaf.prop_recursive(6, 80, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Every value in `value` (itself, and what its arrays and objects hold) with its path as
/// `Path` writes it.
fn nodes<'v>(value: &'v Value, at: &mut Vec<Segment>, out: &mut Vec<(String, &'v Value)>) {
    out.push((Path::from(at.clone()).to_string(), value));
    match value {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(Segment::Index(i));
                nodes(item, at, out);
                at.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter() {
                at.push(Segment::Key(key.to_string()));
                nodes(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn pointer_finds_every_path_that_errors_print(mut data in document()) {
        let mut found = Vec::new();
        nodes(&data, &mut Vec::new(), &mut found);
        let mut addresses = Vec::new();
        for (path, node) in &found {
            let at = data.pointer(path);
            prop_assert!(at.is_some_and(|at| std::ptr::eq(at, *node)), "{path} finds {at:?}");
            // Below a scalar there is nothing.
            if !matches!(node, Value::Array(_) | Value::Object(_)) {
                prop_assert_eq!(data.pointer(&format!("{path}[0]")), None);
                prop_assert_eq!(data.pointer(&format!("{path}[\"x\"]")), None);
            }
            addresses.push((path.clone(), *node as *const Value));
        }
        for (path, address) in addresses {
            let at = data.pointer_mut(&path).map(|at| at as *const Value);
            prop_assert_eq!(at, Some(address), "{}", path);
        }
    }
}

#[test]
fn an_entry_shows_its_member_not_the_whole_map() {
    let mut map: Map = [("a", Value::Int(1)), ("b", Value::Int(2))]
        .into_iter()
        .collect();
    assert_eq!(
        format!("{:?}", map.entry("a")),
        r#"Occupied(OccupiedEntry { key: "a", value: Int(1) })"#
    );
    assert_eq!(
        format!("{:?}", map.entry("c")),
        r#"Vacant(VacantEntry("c"))"#
    );
}
