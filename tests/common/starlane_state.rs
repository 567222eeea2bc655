//! The example game's state at save version 9, as the game's own code would declare it:
//! what it reads from `data`. Its shape, `shape::of::<State>()`, is the recorded shape of
//! version 9 (`upgrades/shapes/0009.json`), and the drift guard in `tests/shape_guard.rs`
//! holds the two together, as a Rust game's own `cargo test` would.
//!
//! Choices a game would make the same way: counts and levels are `u32` (a save with `3.5`
//! or `-1` there does not load), positions are `Vec<f64>` (the saves hold three, the code
//! does not insist), and the edge fixture's `notes` (the format's corner cases, kept as
//! they are) is state the game carries without reading it: an optional `Value`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `data` at version 9.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub lua: Lua,
    pub player: Player,
    pub ship: Ship,
    /// Star systems by id.
    pub systems: BTreeMap<String, StarSystem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<savechain::Value>,
}

/// The Lua modules' state the game's scripts keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lua {
    pub missions: Missions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Missions {
    pub log: Vec<Mission>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mission {
    pub id: String,
    /// `"active"` or `"done"`.
    pub state: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Player {
    pub name: Name,
    pub rank: Rank,
    pub standing: f64,
    pub wallet: Wallet,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Name {
    pub family: String,
    pub given: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rank {
    pub kind: String,
    pub level: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wallet {
    pub credits: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ship {
    pub cargo: Vec<Cargo>,
    /// `"<system id>:<bay>"`.
    pub dock: String,
    pub fuel: f64,
    pub hull: f64,
    pub name: String,
    pub position: Vec<f64>,
    pub shield: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cargo {
    pub count: u32,
    pub good: String,
    pub mass: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StarSystem {
    pub id: String,
    pub name: String,
    pub position: Vec<f64>,
    pub visited: bool,
}
