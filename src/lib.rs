//! # savechain
//!
//! A save format for games: a JSON document people can read and fix by hand, that keeps
//! every value bit for bit, carries its schema version, and is written canonically.
//!
//! ## The format in one example
//!
//! ```json
//! {
//!   "meta": {
//!     "version": 7,
//!     "writer": "2.3.0"
//!   },
//!   "data": {
//!     "player": {
//!       "credits": 18446744073709551615,
//!       "name": "Zoë",
//!       "position": [["d", "0x1.8p+1"], ["d", "-0x1p-2"], 0]
//!     }
//!   }
//! }
//! ```
//!
//! - `meta.version` is the save's schema version; `meta.writer` the version of the game
//!   that wrote it (the game's, never savechain's). Other `meta` members are kept as they
//!   are. `meta` comes first, so the version is in a save's first bytes; every other
//!   object has its keys in bytewise order.
//! - Integers are exact across the whole `i64` and `u64` ranges.
//! - A double is `["d", "<hex>"]`, spelled as C's `printf("%a")` does (`1.5` is
//!   `0x1.8p+0`), with `inf`, `-inf`, `nan` and `nan:0x<payload>` for the rest, so every
//!   one of the 2^64 bit patterns survives. A plain decimal such as `1.5`, typed by hand,
//!   loads as the nearest double.
//! - A byte string is `["b", "..."]`, one character U+0000 to U+00FF per byte.
//! - An array that would look like a tag is escaped as `["a", [...]]`.
//!
//! `docs/FORMAT.md` in the repository is the full specification.
//!
//! ## Loading, editing and writing a save
//!
//! ```
//! use savechain::{Save, Value};
//!
//! let text = r#"{"meta": {"version": 3}, "data": {"hull": ["d", "0x1.8p+6"], "crew": 4}}"#;
//! let mut save = Save::from_str(text)?;
//! assert_eq!(save.meta.version, 3);
//! assert_eq!(save.data.get("hull"), Some(&Value::Double(96.0)));
//!
//! save.data.as_object_mut().unwrap().insert("crew", Value::Int(5));
//! assert_eq!(
//!     save.to_string()?,
//!     "{\n  \"meta\": {\n    \"version\": 3\n  },\n  \"data\": {\n    \"crew\": 5,\n    \"hull\": [\"d\", \"0x1.8p+6\"]\n  }\n}\n"
//! );
//! # Ok::<(), savechain::Error>(())
//! ```
//!
//! [`Save::load`] and [`Save::store`] work on files; `store` writes atomically, so a crash
//! leaves the old save or the new one, never a mix.
//!
//! ## Errors say where
//!
//! ```
//! let text = "{\"meta\": {\"version\": 1},\n \"data\": {\"ship\": {\"hull\": [\"d\", \"0x1.g\"]}}}";
//! let err = savechain::Save::from_str(text).unwrap_err();
//! assert_eq!((err.line(), err.column()), (Some(2), Some(34)));
//! assert_eq!(err.path().to_string(), "data.ship.hull");
//! ```
//!
//! ## Your own types, through serde
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use savechain::Save;
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Ship { name: String, hull: f64, credits: u64 }
//!
//! let ship = Ship { name: "Kestrel".into(), hull: 0.1, credits: u64::MAX };
//! let save = Save::new(1, savechain::to_value(&ship)?);
//! let text = save.to_string()?;
//! assert!(text.contains(r#""hull": ["d", "0x1.999999999999ap-4"]"#));
//!
//! let back: Ship = Save::from_str(&text)?.data_as()?;
//! assert_eq!(back, ship);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

//!
//! ## In a game
//!
//! A game depends on the library with `default-features = false, features = ["vendored"]`
//! (the default `cli` feature only builds the `save-upgrade` tool; `vendored` compiles Lua
//! 5.4 in). It makes one [`upgrade::Chain`] from its
//! own version and its steps, and loads and stores saves through [`cache`]:
//!
//! ```
//! use savechain::upgrade::{Chain, Step, StepContext};
//! use savechain::{cache, Options, Value};
//!
//! fn add_gold(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
//!     data.as_object_mut().ok_or("not an object")?.insert("gold", Value::Int(0));
//!     Ok(())
//! }
//!
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("slot1.json");
//! # std::fs::write(&path, r#"{"meta": {"version": 1, "writer": "1.0.0"}, "data": {}}"#)?;
//! // The game's version (env!("CARGO_PKG_VERSION") in its crate) and its steps, each Rust
//! // step with a revision to change whenever its code changes.
//! let chain = Chain::new("1.2.0", vec![Step::rust(1, "gold", "1", add_gold)])?;
//! let loaded = cache::load(&path, &chain, &Options::default())?;   // cache, or JSON upgraded
//! #[derive(serde::Deserialize, serde::Serialize)]
//! struct State { gold: i64 }
//! let mut state: State = loaded.data_as()?;       // typed state, straight from the cache
//! assert_eq!(state.gold, 0);
//! state.gold += 10;
//! // Stored again by this release, keeping the save's history and other meta members.
//! let save = chain.resave(loaded.meta()?, savechain::to_value(&state)?);
//! assert_eq!(save.meta.writer.as_ref().unwrap().to_string(), "1.2.0");
//! cache::store(&save, &path, &chain)?;
//! # Ok::<(), savechain::Error>(())
//! ```
//!
//! The [`upgrade`] module says what a game must pass and what happens if it does not;
//! `examples/game/` in the repository is a whole small game.

#![deny(missing_docs)]

mod allow;
pub mod backup;
pub mod batch;
pub mod cache;
pub mod compress;
pub mod edit;
mod error;
pub mod fixtures;
mod fsio;
pub mod guard;
pub mod head;
pub mod hexfloat;
pub mod lua;
mod options;
pub mod path;
mod save;
pub mod serde;
pub mod shape;
#[cfg(test)]
mod test_support;
pub mod text;
pub mod upgrade;
pub mod value;

pub use crate::serde::{from_value, from_value_ref, to_value};
pub use error::{Error, ErrorKind, Location, LuaFailure, Result};
pub use fsio::write_atomic;
pub use options::Options;
pub use save::{
    format_file, format_file_kept, format_file_with, FormatReport, Formatted, Meta, Save,
};
/// `#[derive(Declare)]`: a type's history declared on its fields, as declared steps
/// ([`upgrade::Declared`], [`upgrade::declared_steps`]); see the `savechain-derive` crate.
#[cfg(feature = "derive")]
pub use savechain_derive::Declare;
pub use semver;
pub use text::FORMAT_REVISION;

/// This library's version, `MAJOR.MINOR.PATCH`, the one every part of a savechain release
/// carries (docs/VERSIONING.md): for a program's `--version` or a bug report.
///
/// ```
/// assert_eq!(savechain::VERSION.split('.').count(), 3);
/// ```
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub use value::{Map, Value};
