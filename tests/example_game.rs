//! The example game, Hollow Keep (`examples/game/`), as its own `cargo test` would check
//! it: the step its state type declares, its state type against the shape recorded for its
//! latest version (the drift guard),
//! a member renamed in the type without a new version failing that guard, its fixtures
//! upgraded step by step through the recorded shapes, and each recorded shape being what
//! the saves (or the type) of its version hold.

#[path = "../examples/game/chain.rs"]
mod chain;
#[path = "../examples/game/state.rs"]
mod state;

use std::path::PathBuf;

use savechain::guard;
use savechain::shape::{self, compare_with, Compare, Hints, Member, Shape, Shapes};
use savechain::upgrade::declared::Change;
use savechain::upgrade::{Chain, Step};
use savechain::{ErrorKind, Options, Save};

fn chain() -> Chain {
    chain::hollow_keep_chain(&chain::steps_dir(), "1").unwrap()
}

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/game/fixtures"
    ))
}

/// The drift guard, as the game's own test runs it: what `State` reads is the shape
/// recorded for version 4.
#[test]
fn saves_match_the_recorded_shape() {
    savechain::guard::guard::<state::State>(&chain()).unwrap();
}

/// The game's next release as its developer first writes it: `hero.health` renamed
/// `hero.vigour` in the struct, and nothing else (no step, no new version).
mod renamed {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    #[derive(Deserialize)]
    pub struct State {
        pub hero: Hero,
        pub lua: savechain::Value,
    }

    #[derive(Deserialize)]
    pub struct Hero {
        pub name: String,
        pub vigour: f64,
        pub inventory: BTreeMap<String, u32>,
        pub purse: super::state::Purse,
    }
}

#[test]
fn a_member_renamed_without_a_step_fails_the_guard() {
    let err = guard::guard::<renamed::State>(&chain()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Shape);
    let message = err.to_string();
    assert!(
        message.contains(
            "data.hero.health: removed (it was a number (a double)); likely renamed to \
             data.hero.vigour"
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "make version 5: a step 4 -> 5 (declare the renames: \
             {\"rename\":\"hero.health\",\"to\":\"vigour\"})"
        ),
        "{message}"
    );
}

/// What the guard asks for: version 5, its step declaring the rename, and its shape
/// recorded from the renamed type. Then the guard passes, and a save of every older
/// version loads as the renamed type.
#[test]
fn the_rename_declared_with_version_5_passes_the_guard() {
    let chain = chain();
    let mut files: Vec<(String, String)> = chain
        .shapes()
        .iter()
        .map(|(v, shape)| (Shapes::file_name(v), Shapes::file_text(v, shape)))
        .collect();
    let shape_5 = shape::of::<renamed::State>().unwrap();
    files.push((Shapes::file_name(5), Shapes::file_text(5, &shape_5)));
    let step = Step::declared(
        4,
        "health is vigour",
        vec![Change::rename("hero.health", "vigour")],
    );
    let next = chain
        .with(vec![step])
        .unwrap()
        .with_shapes(Shapes::from_files(&files).unwrap())
        .unwrap();
    guard::guard::<renamed::State>(&next).unwrap();
    for version in 1..=4 {
        let save = fixture(version);
        let upgraded = next.upgrader().upgrade(save, &Options::default()).unwrap();
        let state: renamed::State = savechain::from_value(upgraded.save.data).unwrap();
        assert_eq!((state.hero.name.as_str(), state.hero.vigour), ("Wren", 0.8));
        assert_eq!(state.hero.purse.gold, 12);
        assert_eq!(state.hero.inventory.get("rope"), Some(&2));
        assert!(state.lua.get("quests").is_some());
    }
}

fn fixture(version: u64) -> Save {
    Save::load(fixtures().join(format!("v{version}/slot1.json"))).unwrap()
}

/// The fixtures of versions 2 to 4 are the version-1 save the example loads, upgraded to
/// each version by the chain: what a save of that version holds, written (as the fixtures
/// were, before format revision 3) with `data` first.
#[test]
fn the_fixtures_are_the_first_save_upgraded_to_each_version() {
    let chain = chain();
    for version in 2..=4 {
        let mut options = Options::default();
        options.target = Some(version);
        let upgraded = chain.upgrader().upgrade(fixture(1), &options).unwrap();
        let fixture = fixtures().join(format!("v{version}/slot1.json"));
        let fixture = std::fs::read_to_string(fixture).unwrap();
        assert_eq!(
            upgraded.save.to_string().unwrap(),
            Save::from_str(&fixture).unwrap().to_string().unwrap(),
            "fixtures/v{version}"
        );
        assert!(
            fixture.starts_with("{\n  \"data\": {\n"),
            "fixtures/v{version}"
        );
    }
}

/// The chain check: each fixture upgraded one step at a time matches the shape recorded
/// for each version it reaches.
#[test]
fn the_fixtures_upgrade_through_the_recorded_shapes() {
    let chain = chain();
    assert_eq!(
        chain.shapes().iter().map(|(v, _)| v).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    let found = guard::check_fixtures(&chain, &fixtures()).unwrap();
    assert!(found.is_empty(), "{found:?}");
}

/// The shape inferred from the fixture of `version`, with the Lua modules' state read as
/// anything (the game hands it to its scripts as it is) and the inventory as a map.
fn inferred_at(version: u64) -> Shape {
    let mut data = fixture(version).data;
    data.as_object_mut().unwrap().remove("lua");
    let hints = match version {
        1 | 2 => Hints::new(),
        _ => Hints::new().map("hero.inventory"),
    };
    let Shape::Object(mut inferred) = shape::infer([&data], &hints).unwrap() else {
        panic!("the data is an object")
    };
    inferred
        .members
        .insert("lua".into(), Member::required(Shape::Any));
    Shape::Object(inferred)
}

/// Each recorded shape is what its version's saves hold: versions 1 to 3 inferred from
/// their fixtures (the inventory a map of counts, the Lua modules' state anything the
/// scripts keep, as the game reads it), version 4 from the Rust type, which agrees with
/// what its fixture holds.
#[test]
fn each_recorded_shape_is_what_its_version_holds() {
    let chain = chain();
    for version in 1..=3 {
        assert_eq!(
            chain.shapes().get(version),
            Some(&inferred_at(version)),
            "version {version}"
        );
    }
    let of_type = shape::of::<state::State>().unwrap();
    assert_eq!(chain.shapes().get(4), Some(&of_type));
    assert!(compare_with(
        &of_type,
        &inferred_at(4),
        &Compare::default().one_side_inferred()
    )
    .is_empty());
}

/// The step from version 3 is the one `State` declares (`Hero`'s struct-level `moved`):
/// the hero's gold moved into the purse, which upgrades the fixture of version 3 to the
/// data of version 4.
#[test]
fn the_purse_step_is_declared_on_the_state() {
    let chain = chain();
    let step = chain.steps().iter().find(|s| s.from() == 3).unwrap();
    assert_eq!(step.kind_name(), "declared");
    assert_eq!(
        step.declared_changes(),
        Some(&[Change::moved("hero.gold", "hero.purse.gold")][..])
    );
    let mut options = Options::default();
    options.strict = true;
    let upgraded = chain.upgrader().upgrade(fixture(3), &options).unwrap();
    assert_eq!(upgraded.save.data, fixture(4).data);
}
