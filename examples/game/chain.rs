//! Hollow Keep's upgrade chain: a Rust step with its revision, the Lua steps of its steps
//! folder, and the shapes recorded for its versions in that folder's `shapes/`.

use std::path::{Path, PathBuf};

use savechain::shape::Shapes;
use savechain::upgrade::{Chain, Step, StepContext};
use savechain::Value;

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

/// The chain of every release so far, read from the folder the game ships its Lua steps
/// and recorded shapes in.
pub fn hollow_keep_chain(steps_dir: &Path, rust_revision: &str) -> savechain::Result<Chain> {
    // 0003-purse.lua only moves `hero.gold` into a new `hero.purse`, a change a declared
    // step can say, but not `#[derive(Declare)]` on `State`: a field's `moved(from = ..)`
    // is relative to its own struct, and `Purse` cannot name its parent's `gold`.
    let mut steps = Step::lua_dir(steps_dir)?;
    // The revision changes whenever health_as_fraction's behaviour does.
    steps.push(Step::rust(
        1,
        "health as a fraction",
        rust_revision,
        health_as_fraction,
    ));
    Chain::new(GAME_VERSION, steps)?
        .for_game(GAME)?
        .with_shapes(Shapes::in_steps_dir(steps_dir)?)
}
