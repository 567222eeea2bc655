//! The upgrade chain: small steps, each moving a save from version N to N + 1, in Rust, in
//! Lua or declared, applied in order to bring an old save to the latest version.
//!
//! ```
//! use savechain::upgrade::{Chain, Step, StepContext};
//! use savechain::{Options, Save, Value};
//!
//! fn add_shield(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
//!     let ship = data.get_mut("ship").and_then(Value::as_object_mut).ok_or("no ship")?;
//!     ship.insert("shield", Value::Double(100.0));
//!     Ok(())
//! }
//!
//! let chain = Chain::new("2.3.0", vec![
//!     //          from  description        revision  code
//!     Step::rust(1, "add ship.shield", "1", add_shield),
//!     Step::lua("0002-rename-hull.lua", r#"
//!         local up = require("savechain.upgrade")
//!         return function(data) up.rename(data, "ship.hull", "integrity") end
//!     "#)?,
//! ])?;
//! assert_eq!((chain.oldest(), chain.latest()), (1, 3));
//!
//! let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {"ship": {"hull": 7}}}"#)?;
//! let upgraded = chain.upgrader().upgrade(save, &Options::default())?;
//! assert_eq!(upgraded.save.meta.version, 3);
//! assert_eq!(upgraded.save.meta.writer.unwrap().to_string(), "2.3.0");
//! assert_eq!(
//!     upgraded.save.data.to_string(),
//!     r#"{"ship":{"integrity":7,"shield":["d","0x1.9p+6"]}}"#
//! );
//! # Ok::<(), savechain::Error>(())
//! ```
//!
//! # What a game passes, and why
//!
//! - **Its own version** ([`Chain::new`]'s `writer`): every upgraded save records it as
//!   `meta.writer` and in `meta.history`, so a save always says which release of the game
//!   last wrote it. Savechain's own version never appears in a game's saves.
//! - **A revision for each Rust step** ([`Step::rust`]): caches made by an older build are
//!   trusted only while the chain's identity ([`Chain::fingerprint`]) is the same, and
//!   savechain cannot look inside compiled code. Change the revision whenever the step's
//!   behaviour changes. If you forget, caches made by the old code keep being served until
//!   the game's version changes (which always rebuilds them); the JSON files themselves
//!   are never wrong, since upgrading never rewrites them behind your back.
//! - **Lua steps** are identified by their source and the source of every helper module
//!   they can `require` from their folder, read once when the chain is made: editing a
//!   step or a helper is seen without anything else to do.
//! - **Declared steps** ([`Step::declared`], `NNNN-short-description.json` files in a steps
//!   folder, [`declared_steps`] of a type that derives `Declare`) are identified by what
//!   they declare: changing a declaration is seen without anything else to do.
//! - **Its name**, if it wants ([`Chain::for_game`]): the chain then upgrades only saves
//!   whose `meta.game` is that name, refusing (and leaving as they are) saves of another
//!   game and saves that name none; new and re-saved saves record it.
//!
//! A game at its first version passes no steps: `Chain::new("1.0.0", vec![])` is a valid
//! chain whose only version is 1, and caches work with it as with any other.

mod chain;
pub mod declared;
mod declared_check;
pub(crate) mod diff;
mod file;
mod lua_dir;
mod mods;
mod plan;
mod run;
mod shapes;
mod step;

pub(crate) use chain::history_reached;
pub use chain::{Chain, Mod};
pub use declared::Declared;
pub use diff::{Change, Changes};
pub(crate) use file::{refuse_link, upgrade_file_in_group, WriteGroup};
pub use file::{upgrade_file, FileReport, Target, UpgradedText};
pub use plan::{ModReport, ModStatus, Plan};
pub use run::{StepReport, Upgraded, Upgrader};
pub use step::{declared_steps, declared_steps_in, RustStep, Step, StepContext};
