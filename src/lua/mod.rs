//! Lua 5.4 (vendored, through mlua) for scripts run on behalf of a save.
//!
//! So far: the sandbox those scripts run in. The mapping between Lua values and saves, and
//! the `lua/` library for game scripts, are still to come (issue 3).

mod sandbox;

pub use sandbox::{Limits, Sandbox, SandboxError};
