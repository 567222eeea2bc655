//! Lua 5.4 (vendored, through mlua): Lua values in saves, the `savechain` Lua library, and
//! the sandbox that scripts run on behalf of a save run in.
//!
//! ```
//! use savechain::lua::{from_lua, install, to_lua};
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

mod decode;
mod encode;
mod library;
mod patterns;
mod sandbox;

pub use decode::to_lua;
pub use encode::from_lua;
pub use library::install;
pub(crate) use library::library_sources;
pub use mlua;
pub use sandbox::{Limits, Sandbox, SandboxError};

impl From<mlua::Error> for crate::Error {
    fn from(e: mlua::Error) -> crate::Error {
        crate::Error::new(crate::ErrorKind::Lua, e.to_string())
    }
}

impl From<SandboxError> for crate::Error {
    fn from(e: SandboxError) -> crate::Error {
        crate::Error::new(crate::ErrorKind::Lua, e.to_string())
    }
}
