//! Hollow Keep's state at save version 4, as its code sees it: what `data` of a save holds
//! once loaded, what the drift guard compares with the shape recorded for version 4, and
//! the changes of its history simple enough to declare (the step from version 3).

use std::collections::BTreeMap;

use savechain::{Declare, Value};
use serde::{Deserialize, Serialize};

/// The game's state.
#[derive(Debug, Serialize, Deserialize, Declare)]
pub struct State {
    #[savechain(nested)]
    pub hero: Hero,
    /// The state of the game's Lua modules, kept by the savechain Lua library.
    pub lua: Value,
}

/// The hero. Since version 4 their gold is in a purse, which can hold other coins later:
/// the step from version 3 moves it there, declared here.
#[derive(Debug, Serialize, Deserialize, Declare)]
#[savechain(moved(from = "gold", to = "purse.gold", at = 3))]
pub struct Hero {
    pub name: String,
    /// From 0 to 1.
    pub health: f64,
    pub inventory: BTreeMap<String, u32>,
    pub purse: Purse,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Purse {
    pub gold: u64,
}
