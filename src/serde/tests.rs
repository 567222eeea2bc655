//! Round trips of game-like types and arbitrary values, the serializer's mapping, and error paths.

use std::collections::{BTreeMap, HashMap};

use ::serde::{Deserialize, Serialize};
use proptest::prelude::*;

use super::{from_value, from_value_ref, to_value, Error};
use crate::path::Segment;
use crate::value::{Map, Value};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Marker;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Order {
    Idle,
    Hold(u32),
    Move(f64, f64),
    Attack { target: String, priority: i8 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Ship {
    hull: f64,
    position: Vec<f64>,
    orders: Vec<Order>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Player {
    name: String,
    ship: Ship,
    title: Option<String>,
    rank: Option<u8>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct System {
    name: String,
    owner: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Game {
    version: u64,
    seed: i64,
    player: Player,
    systems: Vec<System>,
    factions: HashMap<String, i32>,
    prices: BTreeMap<u32, f32>,
    #[serde(with = "serde_bytes")]
    blob: Vec<u8>,
    anomaly: f64,
    drift: f64,
    grade: char,
    marker: Marker,
    pair: (i16, bool),
}

fn sample_game() -> Game {
    Game {
        version: u64::MAX,
        seed: i64::MIN,
        player: Player {
            name: "Ada".into(),
            ship: Ship {
                hull: 0.75,
                position: vec![1.5, -2.25, 1e300],
                orders: vec![
                    Order::Idle,
                    Order::Hold(3),
                    Order::Move(4.0, -5.5),
                    Order::Attack {
                        target: "pirate".into(),
                        priority: -2,
                    },
                ],
            },
            title: Some("Captain".into()),
            rank: None,
        },
        systems: ["Sol", "Vega", "Rigel"]
            .iter()
            .map(|name| System {
                name: name.to_string(),
                owner: None,
            })
            .collect(),
        factions: HashMap::from([("guild".to_string(), 10), ("pirates".to_string(), -40)]),
        prices: BTreeMap::from([(2, 1.5), (10, 0.25), (u32::MAX, 3.0)]),
        blob: vec![0, 159, 255, b'x'],
        anomaly: f64::from_bits(0x7ff0_0000_0000_0001),
        drift: -0.0,
        grade: 'é',
        marker: Marker,
        pair: (-7, true),
    }
}

#[test]
fn game_round_trips() {
    let game = sample_game();
    let value = to_value(&game).unwrap();
    let back: Game = from_value(value.clone()).unwrap();
    let borrowed: Game = from_value_ref(&value).unwrap();

    for copy in [&back, &borrowed] {
        // Derived `PartialEq` compares floats by value, which cannot see NaN payloads or -0.0.
        assert_eq!(copy.anomaly.to_bits(), 0x7ff0_0000_0000_0001);
        assert_eq!(copy.drift.to_bits(), (-0.0f64).to_bits());
        let (mut copy, mut expected) = (copy.clone(), game.clone());
        (copy.anomaly, expected.anomaly) = (0.0, 0.0);
        assert_eq!(copy, expected);
    }
}

#[test]
fn serializer_mapping() {
    let value = to_value(&sample_game()).unwrap();
    assert_eq!(value.get("version"), Some(&Value::UInt(u64::MAX)));
    assert_eq!(value.get("seed"), Some(&Value::Int(i64::MIN)));
    assert_eq!(
        value.get("blob"),
        Some(&Value::Bytes(vec![0, 159, 255, b'x']))
    );
    assert_eq!(value.get("grade"), Some(&Value::String("é".into())));
    assert_eq!(value.get("marker"), Some(&Value::Null));
    assert_eq!(
        value.get("anomaly"),
        Some(&Value::Double(f64::from_bits(0x7ff0_0000_0000_0001)))
    );
    let prices = value.get("prices").and_then(Value::as_object).unwrap();
    assert_eq!(prices.keys().collect::<Vec<_>>(), ["10", "2", "4294967295"]);

    let orders = member(&value, &["player", "ship", "orders"]);
    let object = |key: &str, v: Value| Value::Object(Map::from_iter([(key, v)]));
    assert_eq!(
        orders,
        &Value::Array(vec![
            Value::String("Idle".into()),
            object("Hold", Value::Int(3)),
            object(
                "Move",
                Value::Array(vec![Value::Double(4.0), Value::Double(-5.5)])
            ),
            object(
                "Attack",
                Value::Object(Map::from_iter([
                    ("priority", Value::Int(-2)),
                    ("target", Value::String("pirate".into())),
                ]))
            ),
        ])
    );
}

/// The value at a chain of object keys.
fn member<'a>(value: &'a Value, keys: &[&str]) -> &'a Value {
    keys.iter().fold(value, |v, key| {
        v.get(key).unwrap_or_else(|| panic!("no key {key:?}"))
    })
}

#[test]
fn wide_integers_and_map_keys() {
    assert_eq!(to_value(&5u128).unwrap(), Value::Int(5));
    assert_eq!(to_value(&-1i128).unwrap(), Value::Int(-1));
    assert_eq!(
        to_value(&u128::from(u64::MAX)).unwrap(),
        Value::UInt(u64::MAX)
    );
    let err = to_value(&(u128::from(u64::MAX) + 1)).unwrap_err();
    assert_eq!(
        err.message(),
        "integer 18446744073709551616 does not fit in 64 bits"
    );

    let keys = BTreeMap::from([(true, 1), (false, 0)]);
    let value = to_value(&keys).unwrap();
    assert_eq!(value.get("true"), Some(&Value::Int(1)));
    assert_eq!(from_value::<BTreeMap<bool, i32>>(value).unwrap(), keys);

    let bad = BTreeMap::from([((1, 2), "pair")]);
    let err = to_value(&BTreeMap::from([("outer", bad)])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "outer: map keys must be strings or integers"
    );

    let err = from_value::<BTreeMap<u8, i32>>(to_value(&BTreeMap::from([("300", 1)])).unwrap());
    assert_eq!(
        err.unwrap_err().to_string(),
        r#"["300"]: invalid type: string "300", expected u8"#
    );
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Resource {
    Ore,
    Gas,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct ShipId(u32);

#[test]
fn enum_and_newtype_keys() {
    let stock = BTreeMap::from([(Resource::Ore, 1), (Resource::Gas, 2)]);
    let value = to_value(&stock).unwrap();
    assert_eq!(value.get("Gas"), Some(&Value::Int(2)));
    assert_eq!(from_value::<BTreeMap<Resource, i32>>(value).unwrap(), stock);

    let crews = BTreeMap::from([(ShipId(7), "Nomad".to_string())]);
    let value = to_value(&crews).unwrap();
    assert!(value.get("7").is_some());
    assert_eq!(
        from_value::<BTreeMap<ShipId, String>>(value).unwrap(),
        crews
    );
}

#[test]
fn serialize_errors_name_the_path() {
    let err = to_value(&BTreeMap::from([("fleet", vec![(1u8, u128::MAX)])])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "fleet[0][1]: integer 340282366920938463463374607431768211455 does not fit in 64 bits"
    );
}

/// Serializes the same key twice, which no std map can.
struct RepeatedKey;

impl Serialize for RepeatedKey {
    fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map([("a", 1), ("b", 2), ("a", 3)])
    }
}

#[test]
fn repeated_key_keeps_the_later_value() {
    let value = to_value(&RepeatedKey).unwrap();
    assert_eq!(
        value,
        Value::Object(Map::from_iter([("a", Value::Int(3)), ("b", Value::Int(2))]))
    );
}

#[test]
fn lenient_reads() {
    assert_eq!(from_value::<f64>(Value::Int(5)).unwrap(), 5.0);
    assert_eq!(
        from_value::<f32>(Value::UInt(u64::MAX)).unwrap(),
        u64::MAX as f32
    );
    let bytes = |v: Value| from_value::<serde_bytes::ByteBuf>(v).unwrap().into_vec();
    assert_eq!(bytes(Value::String("hi".into())), b"hi");
    assert_eq!(
        bytes(Value::Array(vec![Value::Int(1), Value::Int(2)])),
        [1, 2]
    );
    assert_eq!(from_value::<()>(Value::Null), Ok(()));
    assert_eq!(
        from_value::<Order>(Value::Object(Map::from_iter([("Idle", Value::Null)]))),
        Ok(Order::Idle)
    );
}

#[test]
fn borrowing_reads_point_into_the_value() {
    #[derive(Deserialize)]
    struct View<'a> {
        name: &'a str,
        #[serde(with = "serde_bytes")]
        blob: &'a [u8],
    }
    let value = Value::Object(Map::from_iter([
        ("name", Value::String("Sol".into())),
        ("blob", Value::Bytes(vec![1, 2, 3])),
    ]));
    let view: View = from_value_ref(&value).unwrap();
    assert_eq!(view.name, "Sol");
    assert_eq!(view.blob, [1, 2, 3]);
    assert!(std::ptr::eq(
        view.name,
        value.get("name").and_then(Value::as_str).unwrap()
    ));
}

fn game_value_with(edit: impl FnOnce(&mut Value)) -> Result<Game, Error> {
    let mut value = to_value(&sample_game()).unwrap();
    edit(&mut value);
    from_value(value)
}

#[test]
fn errors_name_the_path() {
    let err = game_value_with(|v| {
        let ship = v.get_mut("player").and_then(|p| p.get_mut("ship")).unwrap();
        *ship.get_mut("hull").unwrap() = Value::String("x".into());
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"player.ship.hull: invalid type: string "x", expected f64"#
    );
    assert_eq!(
        err.path().segments(),
        ["player", "ship", "hull"].map(|k| Segment::Key(k.into()))
    );

    let err = game_value_with(|v| {
        let systems = v.get_mut("systems").and_then(Value::as_array_mut).unwrap();
        systems[2]
            .as_object_mut()
            .unwrap()
            .insert("name", Value::Int(5));
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "systems[2].name: invalid type: integer `5`, expected a string"
    );

    let err = game_value_with(|v| {
        v.get_mut("player")
            .and_then(Value::as_object_mut)
            .unwrap()
            .remove("ship");
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "player: missing field `ship`");
    assert_eq!(err.message(), "missing field `ship`");

    let err = game_value_with(|v| {
        let mut orders = member(v, &["player", "ship", "orders"])
            .as_array()
            .unwrap()
            .clone();
        orders[3] = Value::Object(Map::from_iter([(
            "Attack",
            Value::Object(Map::from_iter([("target", Value::Null)])),
        )]));
        let ship = v.get_mut("player").and_then(|p| p.get_mut("ship")).unwrap();
        ship.as_object_mut()
            .unwrap()
            .insert("orders", Value::Array(orders));
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "player.ship.orders[3].Attack.target: invalid type: unit value, expected a string"
    );

    let err = from_value::<u8>(Value::Int(300)).unwrap_err();
    assert!(err.path().is_root());
    assert_eq!(err.to_string(), "invalid value: integer `300`, expected u8");
}

#[test]
fn enums_need_a_name_or_one_entry() {
    let two = Value::Object(Map::from_iter([
        ("Idle", Value::Null),
        ("Hold", Value::Int(1)),
    ]));
    assert!(from_value::<Order>(two).is_err());
    assert!(from_value::<Order>(Value::Int(0)).is_err());
    assert!(from_value::<Order>(Value::String("Hold".into())).is_err());
}

#[test]
fn extra_tuple_elements_are_an_error() {
    let three = Value::Array(vec![Value::Int(1), Value::Int(2), Value::Int(3)]);
    assert!(from_value::<(i32, i32)>(three).is_err());
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (i64::MAX as u64 + 1..=u64::MAX).prop_map(Value::UInt),
        any::<u64>().prop_map(|bits| Value::Double(f64::from_bits(bits))),
        any::<String>().prop_map(Value::String),
        prop::collection::vec(any::<u8>(), 0..16).prop_map(Value::Bytes),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_value_round_trips(value in arb_value()) {
        prop_assert_eq!(&to_value(&value).unwrap(), &value);
        prop_assert_eq!(&from_value::<Value>(value.clone()).unwrap(), &value);
        prop_assert_eq!(&from_value_ref::<Value>(&value).unwrap(), &value);
    }
}
