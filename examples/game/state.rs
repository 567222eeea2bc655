//! Hollow Keep's state at save version 4, as its code sees it: what `data` of a save holds
//! once loaded, and what the drift guard compares with the shape recorded for version 4.

use std::collections::BTreeMap;

use savechain::Value;
use serde::{Deserialize, Serialize};

/// The game's state.
#[derive(Debug, Serialize, Deserialize)]
pub struct State {
    pub hero: Hero,
    /// The state of the game's Lua modules, kept by the savechain Lua library.
    pub lua: Value,
}

#[derive(Debug, Serialize, Deserialize)]
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
