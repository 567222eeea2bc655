//! The shape of a game's Rust types (`savechain::shape::of`): what a realistic game state
//! reads, each kind of type, and what cannot be described, refused with its place.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use savechain::shape::{self, Shape};
use savechain::ErrorKind;

fn shape(text: &str) -> Shape {
    text.parse().unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The shape of `T`, checked against `expected` with both printed when they differ.
fn assert_shape<T: serde::de::DeserializeOwned>(expected: &str) {
    let found = shape::of::<T>().unwrap_or_else(|e| panic!("{e}"));
    let expected = shape(expected);
    assert_eq!(found, expected, "found:\n{found}\nexpected:\n{expected}");
}

/// The message of the refusal of `T`, checked to be a shape error.
fn refusal<T: serde::de::DeserializeOwned>() -> String {
    let err = shape::of::<T>().expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::Shape, "{err}");
    err.to_string()
}

// A realistic game state: "Starlane Traders" as a game would write its types.

#[derive(Deserialize)]
#[allow(dead_code)]
struct Game {
    hero: Hero,
    ship: Ship,
    systems: BTreeMap<String, System>,
    turn: u64,
    /// State a Lua mod keeps; the game never reads into it.
    script_state: savechain::Value,
    #[serde(default)]
    settings: Settings,
    seed: Option<u64>,
    portrait: serde_bytes::ByteBuf,
    #[serde(with = "serde_bytes")]
    thumbnail: Vec<u8>,
    checksum: Vec<u8>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Hero {
    name: String,
    #[serde(rename = "hp")]
    health: u32,
    morale: i16,
    class: Class,
    rank: Rank,
    inventory: Vec<Item>,
    title: Option<String>,
    #[serde(default)]
    kills: u32,
    #[serde(alias = "credits_old")]
    credits: Credits,
}

/// A newtype: its inner shape.
#[derive(Deserialize)]
struct Credits(#[allow(dead_code)] u64);

#[derive(Deserialize)]
#[allow(dead_code)]
enum Class {
    Pilot,
    Trader,
    Smuggler,
}

/// A struct variant and a unit variant.
#[derive(Deserialize)]
#[allow(dead_code)]
enum Rank {
    Cadet,
    Officer { level: u8, since_turn: u64 },
}

/// Newtype, tuple and struct variants.
#[derive(Deserialize)]
#[allow(dead_code)]
enum Item {
    Fuel(f64),
    Crate(String, u16),
    Weapon { damage: f32, mods: Vec<Class> },
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Ship {
    hull: f64,
    position: (f64, f64),
    crew: [u8; 3],
    cargo: HashMap<String, u32>,
    flag: char,
    docked: bool,
    escort: Escort,
}

/// A unit struct.
#[derive(Deserialize)]
struct Escort;

#[derive(Deserialize)]
#[allow(dead_code)]
struct System {
    position: Position,
    owner: Option<Owner>,
    stations: Vec<String>,
}

/// A tuple struct.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Position(i32, i32, i32);

#[derive(Deserialize)]
#[allow(dead_code)]
enum Owner {
    Player(u32),
    Faction { name: String },
}

#[derive(Deserialize, Default)]
#[allow(dead_code)]
struct Settings {
    music: f32,
    notes: serde_json::Value,
}

#[test]
fn a_realistic_game_state_has_the_shape_savechain_writes() {
    assert_shape::<Game>(
        r#"{"object": {
        "checksum": {"array": "u8"},
        "hero": {"object": {
            "class": {"enum": ["Pilot", "Trader", "Smuggler"]},
            "credits": "u64",
            "hp": "u32",
            "inventory": {"array": {"one_of": [
                {"object": {"Fuel": "double"}},
                {"object": {"Crate": {"tuple": ["string", "u16"]}}},
                {"object": {"Weapon": {"object": {
                    "damage": "double",
                    "mods": {"array": {"enum": ["Pilot", "Trader", "Smuggler"]}}
                }}}}
            ]}},
            "kills": {"optional": "u32"},
            "morale": "i16",
            "name": "string",
            "rank": {"one_of": [
                {"enum": ["Cadet"]},
                {"object": {"Officer": {"object": {"level": "u8", "since_turn": "u64"}}}}
            ]},
            "title": {"optional": {"nullable": "string"}}
        }},
        "portrait": "bytes",
        "script_state": "any",
        "seed": {"optional": {"nullable": "u64"}},
        "settings": {"optional": {"object": {"music": "double", "notes": "any"}}},
        "ship": {"object": {
            "cargo": {"map": "u32"},
            "crew": {"tuple": ["u8", "u8", "u8"]},
            "docked": "bool",
            "escort": "null",
            "flag": "string",
            "hull": "double",
            "position": {"tuple": ["double", "double"]}
        }},
        "systems": {"map": {"object": {
            "owner": {"optional": {"nullable": {"one_of": [
                {"object": {"Player": "u32"}},
                {"object": {"Faction": {"object": {"name": "string"}}}}
            ]}}},
            "position": {"tuple": ["i32", "i32", "i32"]},
            "stations": {"array": "string"}
        }}},
        "thumbnail": "bytes",
        "turn": "u64"
    }}"#,
    );
}

// Each kind of type on its own.

#[test]
fn integers_have_their_types_range_and_128_bits_the_range_savechain_reads() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Numbers {
        a: u8,
        b: i8,
        c: u16,
        d: i32,
        e: usize,
        f: isize,
        wide: i128,
        uwide: u128,
        id: std::num::NonZeroU32,
    }
    assert_shape::<Numbers>(
        r#"{"object": {
        "a": "u8", "b": "i8", "c": "u16", "d": "i32", "e": "u64", "f": "i64",
        "wide": {"int": [-9223372036854775808, 18446744073709551615]},
        "uwide": "u64",
        "id": "u32"
    }}"#,
    );
}

#[test]
fn options_defaults_and_container_defaults_are_optional_members() {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    #[allow(dead_code)]
    struct Prefs {
        volume: f64,
        name: String,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct State {
        prefs: Prefs,
        nested: Option<Option<u8>>,
        #[serde(default = "five")]
        lives: u8,
        #[serde(skip_deserializing)]
        cache: Vec<u8>,
        #[serde(deserialize_with = "strict")]
        strict: Option<u8>,
    }
    fn five() -> u8 {
        5
    }
    fn strict<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
        Option::<u8>::deserialize(d)
    }
    assert_shape::<State>(
        r#"{"object": {
        "prefs": {"object": {"volume": {"optional": "double"}, "name": {"optional": "string"}}},
        "nested": {"optional": {"nullable": "u8"}},
        "lives": {"optional": "u8"},
        "strict": {"nullable": "u8"}
    }}"#,
    );
}

#[test]
fn renamed_fields_are_members_by_their_serde_names_and_aliases_are_not_members() {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Pilot {
        #[serde(alias = "aName", alias = "zName")]
        full_name: String,
        #[serde(alias = "age")]
        years_flown: u16,
    }
    assert_shape::<Pilot>(r#"{"object": {"fullName": "string", "yearsFlown": "u16"}}"#);
}

#[test]
fn enums_of_each_kind_are_what_savechain_writes() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum OnlyData {
        Moved { x: i64 },
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Event {
        Docked,
        Moved(Vec<u8>, bool),
        Paid(u32),
        #[serde(rename = "warp")]
        Warped {
            to: String,
            fuel: Option<f32>,
        },
        Idle,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Log {
        only_data: OnlyData,
        events: Vec<Event>,
    }
    assert_shape::<Log>(
        r#"{"object": {
        "only_data": {"object": {"Moved": {"object": {"x": "i64"}}}},
        "events": {"array": {"one_of": [
            {"enum": ["Docked", "Idle"]},
            {"object": {"Moved": {"tuple": [{"array": "u8"}, "bool"]}}},
            {"object": {"Paid": "u32"}},
            {"object": {"warp": {"object": {"to": "string", "fuel": {"optional": {"nullable": "double"}}}}}}
        ]}}
    }}"#,
    );
}

#[test]
fn an_enum_variants_aliases_are_variants_the_game_reads() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Class {
        #[serde(alias = "Fighter")]
        Warrior,
        Mage(u8),
    }
    assert_shape::<Class>(
        r#"{"one_of": [{"enum": ["Fighter", "Warrior"]}, {"object": {"Mage": "u8"}}]}"#,
    );
}

#[test]
fn enums_and_optional_fields_inside_a_variant_are_explored_too() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Inner {
        X,
        Y(u8),
        Z { deep: Option<Deep> },
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Deep {
        P,
        Q,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Held {
        #[serde(default)]
        count: u8,
        inner: Inner,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Outer {
        A,
        B(Inner),
        C { held: Held },
    }
    assert_shape::<Outer>(
        r#"{"one_of": [
        {"enum": ["A"]},
        {"object": {"B": {"one_of": [
            {"enum": ["X"]},
            {"object": {"Y": "u8"}},
            {"object": {"Z": {"object": {"deep": {"optional": {"nullable": {"enum": ["P", "Q"]}}}}}}}
        ]}}},
        {"object": {"C": {"object": {"held": {"object": {
            "count": {"optional": "u8"},
            "inner": {"one_of": [
                {"enum": ["X"]},
                {"object": {"Y": "u8"}},
                {"object": {"Z": {"object": {"deep": {"optional": {"nullable": {"enum": ["P", "Q"]}}}}}}}
            ]}
        }}}}}}
    ]}"#,
    );
}

#[test]
fn maps_with_keys_savechain_writes_as_text_are_maps() {
    #[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    enum Good {
        Ore,
        Grain,
    }
    #[derive(Deserialize, PartialEq, Eq, Hash)]
    struct ShipId(u32);
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Market {
        by_id: BTreeMap<u32, String>,
        by_good: BTreeMap<Good, f64>,
        by_ship: HashMap<ShipId, bool>,
        by_flag: BTreeMap<bool, u8>,
        by_letter: BTreeMap<char, u8>,
    }
    assert_shape::<Market>(
        r#"{"object": {
        "by_id": {"map": "string"},
        "by_good": {"map": "double"},
        "by_ship": {"map": "bool"},
        "by_flag": {"map": "u8"},
        "by_letter": {"map": "u8"}
    }}"#,
    );
}

#[test]
fn units_newtypes_tuples_sets_and_std_structs() {
    #[derive(Deserialize)]
    struct Marker;
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Meters(f64);
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Pair<T>(T, T);
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Misc {
        marker: Marker,
        nothing: (),
        ghost: std::marker::PhantomData<u8>,
        length: Meters,
        small: Pair<u8>,
        names: Pair<String>,
        tags: std::collections::BTreeSet<String>,
        empty: [u32; 0],
        boxed: Box<str>,
        played: std::time::Duration,
        ignored: serde::de::IgnoredAny,
    }
    assert_shape::<Misc>(
        r#"{"object": {
        "marker": "null",
        "nothing": "null",
        "ghost": "null",
        "length": "double",
        "small": {"tuple": ["u8", "u8"]},
        "names": {"tuple": ["string", "string"]},
        "tags": {"array": "string"},
        "empty": {"tuple": []},
        "boxed": "string",
        "played": {"object": {"secs": "u64", "nanos": "u32"}},
        "ignored": "any"
    }}"#,
    );
}

#[test]
fn a_type_used_at_several_places_is_not_recursive() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Point {
        x: i32,
        label: Option<String>,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Line {
        from: Point,
        to: Point,
        via: Vec<Point>,
    }
    let point = r#"{"object": {"x": "i32", "label": {"optional": {"nullable": "string"}}}}"#;
    assert_shape::<Line>(&format!(
        r#"{{"object": {{"from": {point}, "to": {point}, "via": {{"array": {point}}}}}}}"#
    ));
    assert_shape::<Vec<Vec<u8>>>(r#"{"array": {"array": "u8"}}"#);
    assert_shape::<Option<Option<String>>>(r#"{"nullable": "string"}"#);
    assert_shape::<Option<savechain::Value>>(r#""any""#);
}

// What cannot be described: refused with the place in the type and why.

#[test]
fn recursive_types_are_refused_with_the_place_they_contain_themselves() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Node {
        name: String,
        children: Vec<Node>,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Tree {
        root: Node,
    }
    let message = refusal::<Tree>();
    assert!(
        message.contains("root.children[]: recursive type: cannot be described (struct Node"),
        "{message}"
    );

    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Expr {
        Lit(i64),
        Add(Box<Expr>, Box<Expr>),
    }
    let message = refusal::<Expr>();
    assert!(
        message.contains("Add[0]: recursive type: cannot be described (enum Expr"),
        "{message}"
    );

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Chain {
        next: Option<Box<Chain>>,
    }
    let message = refusal::<Chain>();
    assert!(message.contains("next: recursive type"), "{message}");
}

#[test]
fn enums_savechain_does_not_write_are_refused_with_their_place() {
    #[derive(Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Loose {
        Number(u32),
        Text(String),
    }
    #[derive(Deserialize)]
    #[serde(tag = "kind")]
    #[allow(dead_code)]
    enum Internal {
        A { x: u8 },
    }
    #[derive(Deserialize)]
    #[serde(tag = "t", content = "c")]
    #[allow(dead_code)]
    enum Adjacent {
        A(u8),
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Hero {
        inventory: BTreeMap<String, Vec<Loose>>,
        pet: Internal,
        mood: Adjacent,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Game {
        hero: Hero,
    }
    let message = refusal::<Game>();
    assert!(
        message.contains("hero.inventory[*][]: an untagged enum"),
        "{message}"
    );
    assert!(message.contains("cannot be traced"), "{message}");

    let message = refusal::<Internal>();
    assert!(
        message.contains("(root): an internally tagged enum"),
        "{message}"
    );
    let message = refusal::<Adjacent>();
    assert!(
        message.contains("(root): an adjacently tagged enum"),
        "{message}"
    );

    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Never {}
    let message = refusal::<Vec<Never>>();
    assert!(
        message.contains("[]: enum Never has no variants"),
        "{message}"
    );
}

#[test]
fn flatten_and_other_readers_of_any_value_are_refused() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Extra {
        id: u32,
        #[serde(flatten)]
        rest: BTreeMap<String, u8>,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        extra: Extra,
    }
    let message = refusal::<Outer>();
    assert!(
        message.contains("extra: struct Extra is read as a map of any members (#[serde(flatten)])"),
        "{message}"
    );

    /// A hand-written `Deserialize` that looks at the data first.
    struct Either;
    impl<'de> Deserialize<'de> for Either {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Either, D::Error> {
            struct Look;
            impl<'de> serde::de::Visitor<'de> for Look {
                type Value = Either;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a number or a name")
                }
            }
            d.deserialize_any(Look)
        }
    }
    let message = refusal::<BTreeMap<String, Either>>();
    assert!(
        message.contains("[*]: this type reads any kind of value and decides from the data"),
        "{message}"
    );
    assert!(message.contains("a number or a name"), "{message}");
}

#[test]
fn map_keys_savechain_cannot_write_as_text_are_refused() {
    #[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    #[allow(dead_code)]
    struct Coord {
        x: i32,
        y: i32,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Galaxy {
        sectors: BTreeMap<Coord, String>,
    }
    let message = refusal::<Galaxy>();
    assert!(
        message.contains(
            "sectors: a map whose keys are structs: savechain writes a map's keys as text"
        ),
        "{message}"
    );
    let message = refusal::<BTreeMap<(u8, u8), u8>>();
    assert!(
        message.contains("(root): a map whose keys are tuples"),
        "{message}"
    );
}

#[test]
fn a_type_that_refuses_every_made_up_value_is_refused_with_its_place() {
    #[derive(Deserialize)]
    #[serde(try_from = "String")]
    struct Version(#[allow(dead_code)] String);
    impl TryFrom<String> for Version {
        type Error = String;
        fn try_from(text: String) -> Result<Version, String> {
            match text.split('.').count() {
                3 => Ok(Version(text)),
                _ => Err(format!("{text:?} is not a version")),
            }
        }
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Mod {
        version: Version,
    }
    let message = refusal::<Vec<Mod>>();
    assert!(
        message.contains("[].version: the type refused the made-up value it was given"),
        "{message}"
    );
    assert!(message.contains("\"\" is not a version"), "{message}");
}

#[test]
fn the_error_names_the_type() {
    #[derive(Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Loose {
        A(u8),
    }
    let message = refusal::<Loose>();
    assert!(message.starts_with("the shape of "), "{message}");
    assert!(message.contains("Loose"), "{message}");
}

/// The choices above follow savechain's own serializer and deserializers: a plain `Vec<u8>`
/// is an array (it does not read a byte string), `serde_bytes` is a byte string, 128-bit
/// integers read from i64 or u64, integer keys are written as their text, a unit variant is
/// its name and another variant an object of one member.
#[test]
fn the_choices_follow_what_savechain_writes_and_reads() {
    use savechain::{from_value, to_value, Value};

    assert!(from_value::<Vec<u8>>(Value::Bytes(vec![1, 2])).is_err());
    assert_eq!(
        to_value(&vec![1u8, 2]).unwrap(),
        Value::Array(vec![Value::from(1u8), Value::from(2u8)])
    );
    assert_eq!(
        to_value(&serde_bytes::ByteBuf::from(vec![1u8])).unwrap(),
        Value::Bytes(vec![1])
    );
    assert_eq!(
        from_value::<i128>(Value::UInt(u64::MAX)).unwrap(),
        u64::MAX as i128
    );
    assert_eq!(
        from_value::<i128>(Value::Int(i64::MIN)).unwrap(),
        i64::MIN as i128
    );
    assert!(from_value::<u128>(Value::Int(-1)).is_err());

    let keyed = to_value(&BTreeMap::from([(7u32, true)])).unwrap();
    assert_eq!(keyed.pointer("7"), Some(&Value::Bool(true)));

    #[derive(serde::Serialize)]
    enum Rank {
        Cadet,
        Officer { level: u8 },
        Pair(u8, u8),
    }
    assert_eq!(
        to_value(&Rank::Cadet).unwrap(),
        Value::String("Cadet".into())
    );
    let officer = to_value(&Rank::Officer { level: 3 }).unwrap();
    assert_eq!(officer.pointer("Officer.level"), Some(&Value::from(3u8)));
    let pair = to_value(&Rank::Pair(1, 2)).unwrap();
    assert_eq!(pair.pointer("Pair[1]"), Some(&Value::from(2u8)));
    assert_eq!(to_value(&'x').unwrap(), Value::String("x".into()));
    assert_eq!(to_value(&()).unwrap(), Value::Null);
}

#[path = "common/starlane_state.rs"]
#[allow(dead_code)]
mod starlane_state;

/// The example game's state at version 9, as its code declares it
/// (`tests/common/starlane_state.rs`).
#[test]
fn the_example_games_state_at_version_9() {
    assert_shape::<starlane_state::State>(
        r#"{"object": {
        "lua": {"object": {"missions": {"object": {"log": {"array": {"object": {
            "id": "string", "state": "string"
        }}}}}}},
        "notes": {"optional": "any"},
        "player": {"object": {
            "name": {"object": {"family": "string", "given": "string"}},
            "rank": {"object": {"kind": "string", "level": "u32"}},
            "standing": "double",
            "wallet": {"object": {"credits": "double"}}
        }},
        "ship": {"object": {
            "cargo": {"array": {"object": {"count": "u32", "good": "string", "mass": "double"}}},
            "dock": "string",
            "fuel": "double",
            "hull": "double",
            "name": "string",
            "position": {"array": "double"},
            "shield": "double"
        }},
        "systems": {"map": {"object": {
            "id": "string", "name": "string", "position": {"array": "double"}, "visited": "bool"
        }}}
    }}"#,
    );
}
