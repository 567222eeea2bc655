//! The example game's state as a game would declare it: typed structs matching the data of
//! the saves [`game::game_save`](super::game) generates, member for member, for typed
//! loads (`Save::data_from_slice::<State>` against serde_json, sonic-rs and simd-json).
//!
//! Every struct denies unknown fields, so a typed load reads the whole document, not a part
//! of it. Two choices:
//!
//! - The Lua modules' state (`data.lua`) stays a `savechain::Value`: it is whatever the
//!   game's scripts left, with no schema. From savechain's text its byte strings are
//!   `Value::Bytes`; from plain JSON they arrive as arrays of integers, so the trees differ
//!   there ([`State::same_except_lua`]).
//! - Byte strings (`data.blobs`) are `serde_bytes::ByteBuf`: from savechain's `["b", ...]`
//!   tags and from the arrays of integers of plain JSON alike.
//!
//! Benchmarks include this file with `#[path = "support/state.rs"] mod state;`.

#![allow(dead_code)] // Fields are read to be deserialized, not used.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

/// The `data` of a generated game save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub blobs: Blobs,
    pub galaxy_seed: u64,
    pub lua: Lua,
    pub player: Player,
    pub rng_state: [u64; 4],
    pub ship: Ship,
    pub systems: Vec<StarSystem>,
    pub tick: i64,
}

impl State {
    /// Equal in everything but the Lua modules' state, whose byte strings have another type
    /// in plain JSON.
    pub fn same_except_lua(&self, other: &State) -> bool {
        self.blobs == other.blobs
            && self.galaxy_seed == other.galaxy_seed
            && self.lua.modules.len() == other.lua.modules.len()
            && self.player == other.player
            && self.rng_state == other.rng_state
            && self.ship == other.ship
            && self.systems == other.systems
            && self.tick == other.tick
    }
}

/// The whole document as serde_json, sonic-rs and simd-json read it: `data` and `meta`.
/// (savechain checks the envelope itself and hands over `data`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateJsonEnvelope {
    pub data: State,
    pub meta: Meta,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub version: u64,
    pub writer: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blobs {
    pub fog_of_war: ByteBuf,
    pub thumbnail: ByteBuf,
    pub thumbnail_size: [i64; 2],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lua {
    pub globals: savechain::Value,
    pub modules: BTreeMap<String, LuaModule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LuaModule {
    pub dirty: bool,
    pub entries: Vec<savechain::Value>,
    pub version: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Player {
    pub credits: u64,
    pub guild: Option<String>,
    pub hardcore: bool,
    pub lifetime_earnings: u64,
    pub log: Vec<LogEntry>,
    pub name: String,
    pub orientation: [f64; 4],
    pub position: [f64; 3],
    pub stats: Stats,
    pub velocity: [f64; 3],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogEntry {
    pub text: String,
    pub tick: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stats {
    pub deaths: i64,
    pub distance_travelled: f64,
    pub faction_standing: BTreeMap<String, f64>,
    pub jumps: i64,
    pub kills: i64,
    pub play_time: f64,
    pub reputation: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ship {
    pub cargo: Vec<Cargo>,
    pub class: String,
    pub fuel: f64,
    pub hull: f64,
    pub hull_max: f64,
    pub modules: Vec<Module>,
    pub name: String,
    pub position: [f64; 3],
    pub rotation: [f64; 4],
    pub shield: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cargo {
    pub item: String,
    pub mass: f64,
    pub qty: i64,
    pub stolen: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Module {
    pub health: f64,
    pub kind: String,
    pub power: f64,
    pub slot: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarSystem {
    pub discovered_by: Option<String>,
    pub id: i64,
    pub markets: Vec<Market>,
    pub name: String,
    pub planets: Vec<Planet>,
    pub position: [f64; 3],
    pub seed: u64,
    pub star: Star,
    pub stations: Vec<Station>,
    pub visited: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Star {
    pub class: String,
    pub luminosity: f64,
    pub mass: f64,
    pub temperature: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Planet {
    pub kind: String,
    pub mass: f64,
    pub name: String,
    pub orbit: Orbit,
    pub population: i64,
    pub radius: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Orbit {
    pub eccentricity: f64,
    pub inclination: f64,
    pub period: f64,
    pub phase: f64,
    pub semi_major_axis: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Market {
    pub buy: i64,
    pub commodity: String,
    pub demand: f64,
    pub sell: i64,
    pub supply: f64,
    pub trend: [f64; 4],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Station {
    pub docking_fee: i64,
    pub name: String,
    pub owner: String,
    pub position: [f64; 3],
    pub services: Vec<String>,
}
