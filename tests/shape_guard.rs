//! The drift guard as a Rust game uses it in its own `cargo test`, on the example game: its
//! state type at version 9 (`tests/common/starlane_state.rs`) against the shapes its chain
//! has recorded, a member renamed without a new version, the same rename declared, and a
//! hand-written step that forgets a member.

mod common;

#[path = "common/starlane_state.rs"]
mod starlane_state;

use std::collections::BTreeMap;

use common::starlane;
use savechain::guard;
use savechain::path::{Path, Segment};
use savechain::shape::{self, compare_with, Change as Difference, Compare, Hints, Shapes};
use savechain::upgrade::declared::Change;
use savechain::upgrade::{Chain, Step, StepContext};
use savechain::{Save, Value};
use serde::{Deserialize, Serialize};
use starlane_state::{Cargo, Lua, Player, StarSystem, State};

/// The example game's next release as its developer first writes it: `ship.hull` renamed
/// `ship.integrity` in the struct, and nothing else.
#[derive(Debug, Serialize, Deserialize)]
struct StateRenamed {
    lua: Lua,
    player: Player,
    ship: ShipRenamed,
    systems: BTreeMap<String, StarSystem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    notes: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ShipRenamed {
    cargo: Vec<Cargo>,
    dock: String,
    fuel: f64,
    integrity: f64,
    name: String,
    position: Vec<f64>,
    shield: f64,
}

fn fixtures_at(version: u64) -> Vec<Save> {
    let dir = format!("{}/fixtures/v{version}", env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    paths.iter().map(|path| Save::load(path).unwrap()).collect()
}

fn all_fixtures() -> Vec<Save> {
    (1..=9).flat_map(fixtures_at).collect()
}

/// The example chain with one more version: `extra` as its step 9 -> 10, and the shape of
/// version 10 recorded from `T`.
fn chain_with_version_10<T: serde::de::DeserializeOwned>(extra: Step) -> Chain {
    try_chain_with_version_10::<T>(extra).unwrap()
}

fn try_chain_with_version_10<T: serde::de::DeserializeOwned>(
    extra: Step,
) -> savechain::Result<Chain> {
    let chain = starlane::chain().unwrap();
    let mut files: Vec<(String, String)> = chain
        .shapes()
        .iter()
        .map(|(version, shape)| {
            (
                Shapes::file_name(version),
                Shapes::file_text(version, shape),
            )
        })
        .collect();
    files.push((
        Shapes::file_name(10),
        Shapes::file_text(10, &shape::of::<T>().unwrap()),
    ));
    let mut steps = chain.steps().to_vec();
    steps.push(extra);
    Chain::new("0.2.0", steps)?
        .for_game(starlane::GAME)?
        .with_shapes(Shapes::from_files(&files)?)
}

#[test]
fn the_games_type_matches_the_shape_recorded_for_its_latest_version() {
    let chain = starlane::chain().unwrap();
    assert_eq!(
        chain.shapes().latest().map(|(v, _)| v),
        Some(chain.latest())
    );
    guard::guard::<State>(&chain).unwrap();
    // The recorded file is the type's shape, as `record_type` writes it.
    let recorded = chain.shapes().get(9).unwrap();
    assert_eq!(recorded, &shape::of::<State>().unwrap());
}

#[test]
fn the_types_shape_and_the_shape_inferred_from_the_latest_fixtures_agree() {
    let saves = fixtures_at(9);
    for save in &saves {
        let mismatches = shape::of::<State>()
            .unwrap()
            .check_at(&save.data, &Path::from(vec![Segment::Key("data".into())]));
        assert!(mismatches.is_empty(), "{}", mismatches[0]);
        let _: State = save.data_as().unwrap();
    }
    let inferred =
        shape::infer(saves.iter().map(|s| &s.data), &Hints::new().map("systems")).unwrap();
    let typed = shape::of::<State>().unwrap();
    // Saves cannot tell an integer's range; and `notes` is state the game keeps without
    // reading it (a `Value`: any), where the saves show what the edge fixture holds.
    let differences = compare_with(&typed, &inferred, &Compare::new().one_side_inferred());
    let described: Vec<String> = differences.iter().map(|d| d.to_string()).collect();
    assert_eq!(differences.len(), 1, "{described:#?}");
    assert_eq!(differences[0].path, "data.notes", "{described:#?}");
    assert!(
        matches!(
            differences[0].change,
            Difference::KindChanged {
                from: shape::Shape::Any,
                ..
            }
        ),
        "{described:#?}"
    );
}

#[test]
fn a_member_renamed_without_a_new_version_fails_the_guard_naming_the_likely_rename() {
    let chain = starlane::chain().unwrap();
    let err = guard::guard::<StateRenamed>(&chain).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("data.ship.hull"), "{message}");
    assert!(message.contains("data.ship.integrity"), "{message}");
    assert!(message.contains("likely renamed"), "{message}");
    assert!(message.contains("make version 10"), "{message}");
    // And no old save loads as the renamed type: that is what the guard saves players from.
    let save = &fixtures_at(9)[0];
    assert!(save.data_as::<StateRenamed>().is_err());
}

#[test]
fn with_the_rename_declared_the_guard_passes_and_every_old_fixture_loads_typed() {
    let rename = Step::declared(
        9,
        "the hull is the ship's integrity",
        vec![Change::rename("ship.hull", "integrity")],
    );
    let chain = chain_with_version_10::<StateRenamed>(rename);
    guard::guard::<StateRenamed>(&chain).unwrap();
    let fixtures = format!("{}/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mismatches = guard::check_fixtures(&chain, fixtures.as_ref()).unwrap();
    assert!(mismatches.is_empty(), "{}", mismatches[0]);
    let mut upgrader = chain.upgrader();
    for save in all_fixtures() {
        let hull = save.data.pointer("ship.hull").cloned();
        let upgraded = upgrader
            .upgrade(save, &savechain::Options::default())
            .unwrap();
        let state: StateRenamed = upgraded.save.data_as().unwrap();
        assert_eq!(upgraded.save.meta.version, 10);
        if let Some(Value::Double(hull)) = hull {
            // A fixture already at version 9 keeps its hull bit for bit.
            if upgraded.from == 9 {
                assert_eq!(state.ship.integrity.to_bits(), hull.to_bits());
            }
        }
    }
}

/// 9 -> 10 written by hand: renames the hull but forgets the fuel the new shape reads as
/// `reserve`.
fn forgets_the_reserve(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
    let ship = data["ship"].as_object_mut().ok_or("no ship")?;
    let hull = ship.remove("hull").ok_or("no hull")?;
    ship.insert("integrity", hull);
    Ok(())
}

#[derive(Debug, Serialize, Deserialize)]
struct StateWithReserve {
    lua: Lua,
    player: Player,
    ship: ShipWithReserve,
    systems: BTreeMap<String, StarSystem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    notes: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ShipWithReserve {
    cargo: Vec<Cargo>,
    dock: String,
    fuel: f64,
    integrity: f64,
    name: String,
    position: Vec<f64>,
    reserve: f64,
    shield: f64,
}

#[test]
fn a_hand_written_step_that_forgets_a_member_fails_the_chain_check_naming_it_and_the_step() {
    let step = Step::rust(9, "integrity and reserve", "1", forgets_the_reserve);
    let chain = chain_with_version_10::<StateWithReserve>(step);
    let fixtures = format!("{}/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mismatches = guard::check_fixtures(&chain, fixtures.as_ref()).unwrap();
    assert!(!mismatches.is_empty());
    for mismatch in &mismatches {
        let line = mismatch.to_string();
        assert!(line.contains("data.ship.reserve"), "{line}");
        assert!(line.contains("0009 (rust)"), "{line}");
        assert!(line.contains("missing"), "{line}");
    }
    // Every fixture is named, each once.
    assert_eq!(mismatches.len(), all_fixtures().len());
}

#[test]
fn the_drift_guard_on_saves_the_game_writes_names_the_rename_too() {
    let chain = starlane::chain().unwrap();
    let mut saves = fixtures_at(9);
    for save in &mut saves {
        let ship = save.data["ship"].as_object_mut().unwrap();
        let hull = ship.remove("hull").unwrap();
        ship.insert("integrity", hull);
    }
    let drift = guard::drift_of_saves(&chain, &saves).unwrap();
    assert!(!drift.is_clean());
    let message = drift.to_string();
    assert!(message.contains("data.ship.hull"), "{message}");
    assert!(message.contains("integrity"), "{message}");
    assert!(message.contains("rename"), "{message}");
}

#[test]
fn a_declaration_that_contradicts_the_recorded_shapes_is_an_error_when_the_chain_is_made() {
    // Version 9 has no ship.armour to rename.
    let step = Step::declared(
        9,
        "armour plating",
        vec![Change::rename("ship.armour", "plating")],
    );
    let err = try_chain_with_version_10::<StateRenamed>(step).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("0009 (declared)"), "{message}");
    assert!(message.contains("armour"), "{message}");
    // Renaming the hull to a name version 10 does not read: contradicts version 10's shape.
    let step = Step::declared(9, "hull", vec![Change::rename("ship.hull", "plating")]);
    let message = try_chain_with_version_10::<StateRenamed>(step)
        .unwrap_err()
        .to_string();
    assert!(message.contains("plating"), "{message}");
}
