//! Hollow Keep's upgrade chain: a Rust step with its revision, the Lua steps of its steps
//! folder, the steps its state type declares, and the shapes recorded for its versions in
//! that folder's `shapes/`.

use std::path::{Path, PathBuf};

use savechain::shape::Shapes;
use savechain::upgrade::{declared_steps, Chain, Step, StepContext};
use savechain::Value;

use crate::state::State;

/// The game's version: in a game's own crate, `env!("CARGO_PKG_VERSION")`.
pub const GAME_VERSION: &str = "1.4.0";

/// The game's name, which each of its saves carries as `meta.game`.
pub const GAME: &str = "Hollow Keep";

/// The folder the game ships its Lua steps in, with the recorded shapes in `shapes/`.
pub fn steps_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/game/upgrades"
    ))
}

/// Release 1.1 measured health as a fraction instead of hit points out of 30.
fn health_as_fraction(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
    let hero = data
        .get_mut("hero")
        .and_then(Value::as_object_mut)
        .ok_or("the save has no hero")?;
    let hp = hero
        .remove("hp")
        .and_then(|hp| hp.as_i64())
        .ok_or("hero.hp is not an integer")?;
    hero.insert("health", Value::Double(hp as f64 / 30.0));
    Ok(())
}

/// The chain of every release so far: the Lua steps of the folder the game ships them and
/// its recorded shapes in, the Rust step, and the steps `State` declares.
pub fn hollow_keep_chain(steps_dir: &Path, rust_revision: &str) -> savechain::Result<Chain> {
    let mut steps = Step::lua_dir(steps_dir)?;
    // The revision changes whenever health_as_fraction's behaviour does.
    steps.push(Step::rust(
        1,
        "health as a fraction",
        rust_revision,
        health_as_fraction,
    ));
    // The step from version 3 (gold into the purse), from the attributes of `State`.
    steps.extend(declared_steps::<State>());
    Chain::new(GAME_VERSION, steps)?
        .for_game(GAME)?
        .with_shapes(Shapes::in_steps_dir(steps_dir)?)
}
