//! Lua 5.4 (through mlua; compiled in with the `vendored` feature, or the host program's
//! in the native Lua module, `lua-module/`): Lua values in saves, the `savechain` Lua
//! library, and the sandbox that scripts run on behalf of a save run in.
//!
//! [`from_lua`](from_lua()) turns a Lua value into a document [`Value`] (a script saving
//! its state) and [`to_lua`](to_lua()) a document back into Lua values (a script loading
//! it); [`install`] puts the `savechain` Lua library in a state, and [`Sandbox`] runs
//! scripts under [`Limits`]. Lua states and values are mlua's: use the mlua savechain is
//! built with, re-exported as [`savechain::lua::mlua`](mlua), so that the types match.
//!
//! ```
//! use savechain::lua::{from_lua, install, mlua, to_lua};
//! use savechain::Value;
//!
//! let lua = mlua::Lua::new();
//! install(&lua)?;
//! let state: mlua::Value = lua
//!     .load("local home = {name = 'Sol'} return {home = home, here = home, ids = {3, 1.5}}")
//!     .eval()?;
//! let value = from_lua(&lua, &state)?;
//! assert_eq!(
//!     value.to_string(),
//!     r#"{"here":["s",[1,{"name":"Sol"}]],"home":["r",[1]],"ids":[3,["d","0x1.8p+0"]]}"#
//! );
//! let back = to_lua(&lua, &value)?;
//! let same: bool = lua.load("return function(a, b) return require('savechain').equal(a, b) end")
//!     .eval::<mlua::Function>()?
//!     .call((state, back))?;
//! assert!(same);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Inside, data flows one way: `from_lua.rs` and `to_lua.rs` convert with the tables of
//! `metatables.rs`, `text_to_lua.rs` and `lua_to_text.rs` go between Lua and save text with
//! no tree (falling back on the tree where the graph needs it); all of them run on Lua's raw
//! stack through `raw.rs`, with the tables in the slots `slots.rs` declares; `lazy.rs` lends
//! documents a table at a time, filling them through `to_lua.rs`, and `loan.rs` keeps what is
//! lent until `from_lua.rs` puts it back; `library.rs` (the `savechain` library) calls the
//! conversions; `sandbox/` installs the library and the budgeted string functions of
//! `patterns/`; `chunk.rs` compiles the Lua they all load once, for every state.

mod chunk;
mod from_lua;
pub(crate) mod lazy;
pub(crate) mod library;
mod loan;
mod lua_to_text;
mod metatables;
mod order;
mod patterns;
mod raw;
mod sandbox;
mod slots;
mod text_to_lua;
mod to_lua;

pub(crate) use chunk::{with_globals, Chunk};
pub use library::install;
pub(crate) use library::library_sources;
/// The mlua savechain is built with (Lua 5.4). A game that passes Lua states and
/// values to savechain uses this one, `savechain::lua::mlua`, so that the types match
/// whatever mlua version it would otherwise depend on.
pub use mlua;
pub(crate) use sandbox::Interrupt;
pub use sandbox::{Limits, Sandbox, SandboxError, MIN_JOB_MEMORY, PRINT_LIMIT};

use mlua::Lua;

use crate::error::{Error, ErrorKind, LuaFailure, Result};
use crate::value::Value;

/// Module `name` of the `savechain` library (`"savechain"`, `"savechain.upgrade"`) in
/// `lua`, installing the library first if it is not: what `require(name)` gives a script
/// of a state set up with [`install`], for a host that loads the modules itself (the native
/// Lua module's `luaopen_savechain_upgrade`, called when a script requires
/// `savechain.upgrade` before `savechain`). Another name is an error.
///
/// ```
/// use savechain::lua::{install, library_module, mlua};
///
/// let lua = mlua::Lua::new();
/// let up = library_module(&lua, "savechain.upgrade")?;
/// let rename: mlua::Function = up.as_table().unwrap().get("rename")?;
/// assert!(library_module(&lua, "savechain.nothing").is_err());
/// assert_eq!(library_module(&lua, "savechain")?, mlua::Value::Table(install(&lua)?));
/// # Ok::<(), mlua::Error>(())
/// ```
pub fn library_module(lua: &Lua, name: &str) -> mlua::Result<mlua::Value> {
    library::require(lua, name)
}

/// Converts a Lua value to a document value, following the mapping of `docs/FORMAT.md`.
///
/// Tables reached from more than one place become one shared table and references to it,
/// numbered in the order they appear in the written text, so the same state always gives
/// the same save. Functions, threads, userdata and tables with a metatable that is not a
/// registered class are refused with the Lua path to them (`missions[3].on_complete`).
///
/// Installs the `savechain` library in `lua` first if it is not installed (its metatables
/// and class registry say what a table is).
pub fn from_lua(lua: &Lua, value: &mlua::Value) -> Result<Value> {
    let tables = library::installed(lua)?;
    from_lua::convert(lua, &tables, value)
}

/// Converts a document value to a Lua value, following the mapping of `docs/FORMAT.md`.
///
/// `null` becomes `savechain.null`, an empty array a table marked with `savechain.array`
/// (so both come back out unchanged), an integer above `math.maxinteger` a `savechain.u64`
/// box, a byte string that is valid UTF-8 a `savechain.bytes` box (other byte strings are
/// plain Lua strings), a shared table one Lua table wherever it is referred to, and a class
/// instance a table with the registered metatable.
///
/// Installs the `savechain` library in `lua` first if it is not installed.
pub fn to_lua(lua: &Lua, value: &Value) -> Result<mlua::Value> {
    let tables = library::installed(lua)?;
    to_lua::convert(lua, &tables, value)
}

/// Reads save text (a whole JSON text, such as what `savechain.encode` writes) straight into
/// Lua values, as [`to_lua`] of [`text::from_slice`](crate::text::from_slice) would make
/// them but without a document tree in between. Errors say where, as the text reader's do.
pub fn from_text(lua: &Lua, text: &[u8]) -> Result<mlua::Value> {
    let tables = library::installed(lua)?;
    text_to_lua::read(lua, &tables, text, crate::text::MAX_DEPTH)
}

/// [`from_text`], refusing arrays and objects nested more than `max_depth` deep (tags
/// count as arrays) where [`from_text`] refuses those nested more than
/// [`MAX_DEPTH`](crate::text::MAX_DEPTH), with the same kind of error: the line, the column
/// and the path where the text goes too deep. `max_depth` is from 1 to `MAX_DEPTH` (the
/// format never nests deeper); the Lua library's `savechain.decode_max_depth(n)` sets it
/// for the `decode`s of a state.
///
/// ```
/// use savechain::lua::{from_text_with_max_depth, mlua};
///
/// let lua = mlua::Lua::new();
/// assert!(from_text_with_max_depth(&lua, br#"{"a": [1]}"#, 2).is_ok());
/// let err = from_text_with_max_depth(&lua, br#"{"a": [[1]]}"#, 2).unwrap_err();
/// assert_eq!(err.to_string(), "line 1, column 8: at a[0]: nested more than 2 arrays and objects deep");
/// assert!(from_text_with_max_depth(&lua, b"[]", 513).is_err());
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn from_text_with_max_depth(lua: &Lua, text: &[u8], max_depth: usize) -> Result<mlua::Value> {
    crate::text::check_max_depth(max_depth)?;
    let tables = library::installed(lua)?;
    text_to_lua::read(lua, &tables, text, max_depth)
}

/// Writes a Lua value as save text, as [`text::write_value`](crate::text::write_value) of
/// [`from_lua`] would write it but, for the shapes nearly every saved state has, straight
/// from the Lua tables with no document tree in between. What [`from_lua`] refuses is
/// refused with the same error.
///
/// ```
/// use savechain::lua::{from_text, mlua, to_text};
/// use savechain::text::Style;
///
/// let lua = mlua::Lua::new();
/// let state: mlua::Value = lua.load("return {name = 'Sol', pos = {1, 2.5}}").eval()?;
/// let text = to_text(&lua, &state, Style::Compact)?;
/// assert_eq!(text, br#"{"name":"Sol","pos":[1,["d","0x1.4p+1"]]}"#);
/// let back = from_text(&lua, &text)?;
/// assert_eq!(to_text(&lua, &back, Style::Compact)?, text);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_text(lua: &Lua, value: &mlua::Value, style: crate::text::Style) -> Result<Vec<u8>> {
    let tables = library::installed(lua)?;
    lua_to_text::write(lua, &tables, value, style)
}

/// Lends a document to the Lua state of a sandbox set up with [`install_lending`]: its
/// tables are converted a table at a time, as scripts touch them (see `lazy.rs`).
/// `shared` says whether the document has shared tables, when the caller knows: finding
/// out walks it whole.
pub(crate) fn lend(lua: &Lua, value: Value, shared: Option<bool>) -> Result<mlua::Value> {
    let tables = library::installed(lua)?;
    lazy::lend(lua, &tables, value, shared)
}

/// Takes a lent document back from Lua, what no script touched as it was lent, and ends
/// the loan; says whether the document has shared tables. Paths in its errors count an
/// array's elements from 0, as the save's paths do.
pub(crate) fn take_back(lua: &Lua, value: &mlua::Value) -> Result<(Value, bool)> {
    let tables = library::installed(lua)?;
    from_lua::convert_lent(lua, &tables, value, true, true)
}

/// Sets up lending in a sandbox's Lua state.
pub(crate) fn install_lending(lua: &Lua) -> Result<()> {
    let tables = library::installed(lua)?;
    // Made once, and finds the tables of the library installed now when it runs: a sandbox
    // installs both anew for every save.
    let materialize = chunk::kept(lua, "lending materialize", || {
        lua.create_function(|lua, table: mlua::Table| {
            library::with_tables(lua, |tables| lazy::materialize(lua, tables, &table))
        })
    })?;
    Ok(lazy::install(lua, &tables, materialize)?)
}

/// A Lua error becomes an error of kind [`ErrorKind::Lua`] with the same message, and
/// [`LuaFailure::Syntax`] or [`LuaFailure::Runtime`].
impl From<mlua::Error> for Error {
    fn from(e: mlua::Error) -> Error {
        let why = match e {
            mlua::Error::SyntaxError { .. } => LuaFailure::Syntax,
            mlua::Error::MemoryError(_) => LuaFailure::MemoryLimit,
            _ => LuaFailure::Runtime,
        };
        Error::new(ErrorKind::Lua, e.to_string()).because(why)
    }
}

/// A failed or stopped sandboxed script becomes an error of kind [`ErrorKind::Lua`] with the
/// same message, and the [`LuaFailure`] that says why.
impl From<SandboxError> for Error {
    fn from(e: SandboxError) -> Error {
        let why = e.failure();
        Error::new(ErrorKind::Lua, e.to_string()).because(why)
    }
}
