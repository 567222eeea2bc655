//! `#[derive(Declare)]`: a game's state whose history is declared on its fields becomes
//! declared steps, alone or beside written ones, and old saves load typed.

use std::collections::BTreeMap;

use savechain::upgrade::declared::Change;
use savechain::upgrade::{declared_steps, Chain, Declared, Step, StepContext};
use savechain::{Declare, Options, Save, Value};
use serde::{Deserialize, Serialize};

/// The game's state at version 5. Version 1 had `player` (with `hp`, `mana`, a `purse`
/// holding `gold`, a `title`), integer cargo quantities and towns with `pop`; version 2's
/// step (written in Rust) shouts the title; version 3 renames and moves; version 4 renames
/// `player` to `hero` and wraps the title into a list.
#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
struct State {
    #[savechain(renamed(from = "player", at = 4), nested)]
    hero: Hero,
    #[savechain(each)]
    cargo: Vec<Crate>,
    #[savechain(each_value)]
    towns: BTreeMap<String, Town>,
}

#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
// Clippy takes two `dropped(.., at = N, ..)` of one struct for a repeated attribute.
#[allow(clippy::duplicated_attributes)]
#[savechain(
    dropped(name = "mana", at = 1, reason = "magic left the game"),
    dropped(name = "purse", at = 3, reason = "its gold moved to the hero")
)]
struct Hero {
    #[savechain(renamed(from = "hp", at = 1))]
    health: u32,
    #[savechain(moved(from = "purse.gold", at = 3), to_double(at = 3))]
    gold: f64,
    #[savechain(added(at = 3, default = 100.0))]
    shield: f64,
    #[savechain(renamed(from = "title", at = 3))]
    #[savechain(wrapped(at = 4))]
    titles: Vec<String>,
}

#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
struct Crate {
    #[savechain(to_double(at = 3))]
    qty: f64,
}

#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
struct Town {
    #[serde(rename = "population count")]
    #[savechain(renamed(from = "pop", at = 3))]
    population: u32,
}

/// 2 -> 3, written: the title in capitals.
fn shout(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
    let title = data
        .pointer_mut("player.title")
        .ok_or("the save has no player.title")?;
    let shouted = title
        .as_str()
        .ok_or("player.title is not text")?
        .to_uppercase();
    *title = Value::from(shouted.as_str());
    Ok(())
}

const V1: &str = r#"{"meta": {"version": 1}, "data": {
    "player": {"hp": 10, "mana": 5, "purse": {"gold": 3}, "title": "knight"},
    "cargo": [{"qty": 1}, {"qty": 2}],
    "towns": {"old ford": {"pop": 40}}
}}"#;

#[test]
fn each_version_has_the_changes_its_fields_declare() {
    assert_eq!(State::versions(), [1, 3, 4]);
    assert_eq!(
        State::changes(1),
        [
            Change::rename("player.hp", "health"),
            Change::drop("player.mana", "magic left the game"),
        ]
    );
    // Before version 4's rename, the hero is still `player`; the town's key is serde's.
    assert_eq!(
        State::changes(3),
        [
            Change::moved("player.purse.gold", "player.gold"),
            Change::rename("player.title", "titles"),
            Change::to_double("player.gold"),
            Change::add("player.shield", Value::Double(100.0)),
            Change::drop("player.purse", "its gold moved to the hero"),
            Change::to_double("cargo[].qty"),
            Change::rename("towns[*].pop", "population count"),
        ]
    );
    assert_eq!(
        State::changes(4),
        [
            Change::rename("player", "hero"),
            Change::wrap("hero.titles")
        ]
    );
    assert!(State::changes(2).is_empty());
    assert!(State::changes(5).is_empty());
    let from: Vec<u64> = savechain::upgrade::declared_steps_in::<State>(2..=4)
        .iter()
        .map(Step::from)
        .collect();
    assert_eq!(from, [3, 4]);
}

#[test]
fn declared_steps_mixed_with_a_rust_step_upgrade_an_old_save_that_loads_typed() {
    let steps = declared_steps::<State>();
    let described: Vec<(u64, &str, &str)> = steps
        .iter()
        .map(|s| (s.from(), s.name(), s.description()))
        .collect();
    assert_eq!(
        described,
        [
            (
                1,
                "0001 (declared)",
                "rename player.hp to health; drop player.mana (magic left the game)"
            ),
            (
                3,
                "0003 (declared)",
                "move player.purse.gold to player.gold; rename player.title to titles; \
                 player.gold to a double; add player.shield (default [\"d\",\"0x1.9p+6\"]); \
                 drop player.purse (its gold moved to the hero); cargo[].qty to a double; \
                 rename towns[*].pop to population count"
            ),
            (
                4,
                "0004 (declared)",
                "rename player to hero; wrap hero.titles in an array"
            ),
        ]
    );
    let chain = Chain::new(
        "1.0.0",
        [
            vec![Step::rust(2, "the title in capitals", "1", shout)],
            steps,
        ]
        .concat(),
    )
    .unwrap();
    assert_eq!((chain.oldest(), chain.latest()), (1, 5));
    let mut options = Options::default();
    options.strict = true;
    let upgraded = chain
        .upgrader()
        .upgrade(Save::from_str(V1).unwrap(), &options)
        .unwrap();
    assert_eq!(upgraded.save.meta.version, 5);
    assert_eq!(
        upgraded.steps.iter().map(|s| s.kind).collect::<Vec<_>>(),
        ["declared", "rust", "declared", "declared"]
    );
    let state: State = savechain::from_value(upgraded.save.data).unwrap();
    assert_eq!(
        state,
        State {
            hero: Hero {
                health: 10,
                gold: 3.0,
                shield: 100.0,
                titles: vec!["KNIGHT".into()],
            },
            cargo: vec![Crate { qty: 1.0 }, Crate { qty: 2.0 }],
            towns: [("old ford".to_string(), Town { population: 40 })].into(),
        }
    );
}

/// A small state whose whole history is declared.
#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
struct Settings {
    #[savechain(renamed(from = "vol", at = 1))]
    volume: u8,
    #[savechain(added(at = 2, default = "en".to_string()))]
    language: String,
    #[savechain(added(at = 2, default = Option::<u8>::None))]
    #[serde(default)]
    speed: Option<u8>,
}

#[test]
fn a_chain_of_declared_steps_alone() {
    let chain = Chain::new("0.3.0", declared_steps::<Settings>()).unwrap();
    assert_eq!(chain.latest(), 3);
    for (text, latest) in [
        (
            r#"{"meta": {"version": 1}, "data": {"vol": 7}}"#,
            r#"{"language":"en","speed":null,"volume":7}"#,
        ),
        (
            r#"{"meta": {"version": 2}, "data": {"volume": 7}}"#,
            r#"{"language":"en","speed":null,"volume":7}"#,
        ),
        (
            r#"{"meta": {"version": 2}, "data": {"volume": 7, "language": "fr"}}"#,
            r#"{"language":"fr","speed":null,"volume":7}"#,
        ),
    ] {
        let upgraded = chain
            .upgrader()
            .upgrade(Save::from_str(text).unwrap(), &Options::default())
            .unwrap();
        assert_eq!(upgraded.save.data.to_string(), latest);
        let _: Settings = savechain::from_value(upgraded.save.data).unwrap();
    }
    // What the attributes declare is the chain's identity: another default, another chain.
    #[derive(Declare)]
    #[allow(dead_code)]
    struct Other {
        #[savechain(renamed(from = "vol", at = 1))]
        volume: u8,
        #[savechain(added(at = 2, default = "de".to_string()))]
        language: String,
        #[savechain(added(at = 2, default = Option::<u8>::None))]
        speed: Option<u8>,
    }
    let other = Chain::new("0.3.0", declared_steps::<Other>()).unwrap();
    assert_ne!(chain.fingerprint(), other.fingerprint());
}

/// A party whose adventurers kept their gold beside their name at version 1; version 2
/// keeps it in a purse (the adventurer's old `pouch`, renamed), a struct of its own whose
/// history starts with a coin added: a move into a nested struct, declared on the struct
/// that holds both places.
#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
struct Party {
    #[savechain(renamed(from = "heroes", at = 1), each)]
    members: Vec<Adventurer>,
}

#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
#[savechain(moved(from = "gold", to = "purse.gold", at = 1))]
struct Adventurer {
    name: String,
    #[savechain(renamed(from = "pouch", at = 1), nested)]
    purse: Purse,
}

#[derive(Serialize, Deserialize, Declare, Debug, PartialEq)]
struct Purse {
    gold: u64,
    silver: u64,
    #[savechain(added(at = 1, default = 0))]
    copper: u64,
}

#[test]
fn a_structs_move_into_a_nested_struct_upgrades_a_save() {
    assert_eq!(Party::versions(), [1]);
    // The fields' renames, then the struct's move (into the purse as renamed), then the
    // nested purse's own changes, which find the purse the move filled.
    assert_eq!(
        Adventurer::changes(1),
        [
            Change::rename("pouch", "purse"),
            Change::moved("gold", "purse.gold"),
            Change::add("purse.copper", Value::Int(0)),
        ]
    );
    assert_eq!(
        Party::changes(1),
        [
            Change::rename("heroes", "members"),
            Change::rename("members[].pouch", "purse"),
            Change::moved("members[].gold", "members[].purse.gold"),
            Change::add("members[].purse.copper", Value::Int(0)),
        ]
    );
    let chain = Chain::new("2.0.0", declared_steps::<Party>()).unwrap();
    let v1 = r#"{"meta": {"version": 1}, "data": {"heroes": [
        {"name": "Wren", "gold": 12, "pouch": {"silver": 4}},
        {"name": "Ash", "gold": 0, "pouch": {"silver": 1, "copper": 9}}
    ]}}"#;
    let mut options = Options::default();
    options.strict = true;
    let upgraded = chain
        .upgrader()
        .upgrade(Save::from_str(v1).unwrap(), &options)
        .unwrap();
    assert_eq!(
        upgraded.save.data.to_string(),
        r#"{"members":[{"name":"Wren","purse":{"copper":0,"gold":12,"silver":4}},{"name":"Ash","purse":{"copper":9,"gold":0,"silver":1}}]}"#
    );
    let party: Party = savechain::from_value(upgraded.save.data).unwrap();
    assert_eq!(
        party.members[0],
        Adventurer {
            name: "Wren".into(),
            purse: Purse {
                gold: 12,
                silver: 4,
                copper: 0
            },
        }
    );
}
