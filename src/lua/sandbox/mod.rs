//! A Lua 5.4 state for scripts run on behalf of a save: no files, no processes, no bytecode,
//! and bounded instructions and memory. The game puts values and modules in; the scripts'
//! results, or why they failed, come out.
//!
//! `string.find`, `string.match`, `string.gmatch` and `string.gsub` are reimplemented (see
//! `patterns/`) because Lua's C pattern matcher runs inside a single call where the
//! instruction hook never fires, so a backtracking pattern could run for minutes; ours charges
//! its steps to the same instruction budget. `require` is the sandbox's own (`require.rs`), and
//! so is `print` (`print.rs`), which collects lines instead of writing them.

mod jobs;
mod print;
mod require;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::path::Path;
use std::rc::Rc;

use mlua::{ChunkMode, HookTriggers, Lua, LuaOptions, StdLib, Table, VmState};

use super::library;
use super::patterns::{self, Budget};
pub use jobs::MIN_JOB_MEMORY;
use print::Printed;
pub use print::PRINT_LIMIT;
use require::Modules;

/// How much a script may do before it is stopped; the default suits upgrade steps over
/// large saves, and [`Limits::for_jobs`] sandboxes that run side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lua VM instructions per call into the sandbox.
    pub instructions: u64,
    /// Bytes the whole Lua state may hold.
    pub memory: usize,
}

/// 300 million instructions and 1 GiB: an upgrade step over a 50 MiB save runs a few
/// million instructions and holds a few hundred MiB, so real work fits with room to spare,
/// while an endless loop is stopped within a few seconds.
impl Default for Limits {
    fn default() -> Limits {
        Limits {
            instructions: 300_000_000,
            memory: 1 << 30,
        }
    }
}

/// Why a script failed, or a module could not be added.
#[derive(Debug)]
pub enum SandboxError {
    /// The script ran more instructions than [`Limits::instructions`] allows.
    InstructionBudget {
        /// The limit it ran into.
        limit: u64,
    },
    /// The script needed more memory than [`Limits::memory`] allows.
    MemoryLimit {
        /// The limit it ran into, in bytes.
        limit: usize,
    },
    /// The script itself failed: a syntax error, a runtime error, a refused operation.
    Script(mlua::Error),
    /// [`Sandbox::add_module`] refused the module: its name is malformed or belongs to the
    /// savechain library.
    Module(String),
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxError::InstructionBudget { limit } => write!(
                f,
                "the script ran more than {limit} Lua instructions and was stopped (an endless loop?)"
            ),
            SandboxError::MemoryLimit { limit } => write!(
                f,
                "the script needed more than {} MiB of memory and was stopped",
                limit >> 20
            ),
            SandboxError::Script(e) => write!(f, "{e}"),
            SandboxError::Module(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for SandboxError {}

/// How often the instruction hook runs; the budget is checked at this granularity.
const HOOK_EVERY: u32 = 10_000;

/// Globals a sandboxed script does not get, each with the reason it is told.
const REFUSED: &[(&str, &str)] = &[
    ("io", "scripts run on behalf of a save cannot touch files"),
    ("debug", "the debug library can break out of the sandbox"),
    ("package", "modules are loaded only from allowed folders"),
    (
        "dofile",
        "scripts run on behalf of a save cannot read files",
    ),
    (
        "loadfile",
        "scripts run on behalf of a save cannot read files",
    ),
];

/// The Lua that makes the sandbox: refusals that say why, text-only `load` (whose chunks get
/// the globals unless given an environment, as in Lua), an `os` with only `clock` and `time`,
/// and `pcall`/`xpcall`/`coroutine.resume` that cannot swallow the stop of a script that ran
/// out of budget.
///
/// It returns `blocked`, by coroutine the number of gsub replacements it is inside (see
/// `WRAPPERS` of `patterns/`). Lua's C gsub calls a replacement where the coroutine cannot
/// yield; the sandbox's gsub calls it from Lua, so `coroutine.yield` and
/// `coroutine.isyieldable` ask `blocked` instead. An error out of a replacement skips the
/// count's decrement, so whatever catches an error in the same coroutine (`pcall`, `xpcall`,
/// `load` reading through a function) puts back the count it had before.
const PRELUDE: &str = r#"
local refused, aborted = ...
local error, setmetatable, select = error, setmetatable, select
for name, why in pairs(refused) do
  _G[name] = setmetatable({}, {
    __index = function(_, key) error(name .. "." .. tostring(key) .. " is not available: " .. why, 2) end,
    __call = function() error(name .. " is not available: " .. why, 2) end,
  })
end
local clock, time = os.clock, os.time
os = setmetatable({ clock = clock, time = time }, {
  __index = function(_, key)
    error("os." .. tostring(key) .. " is not available: scripts run on behalf of a save may only read the clock", 2)
  end,
})
string.dump = nil

local running, raw_yield, raw_isyieldable = coroutine.running, coroutine.yield, coroutine.isyieldable
local blocked = setmetatable({}, { __mode = "k" })
local function restore(co, depth, ...)
  blocked[co] = depth
  return ...
end
coroutine.yield = function(...)
  if blocked[running()] and raw_isyieldable() then
    error("attempt to yield across a C-call boundary", 0)
  end
  return raw_yield(...)
end
coroutine.isyieldable = function(...)
  local co = ...
  if select('#', ...) == 0 then co = running() end
  return raw_isyieldable(...) and blocked[co] == nil
end

local raw_load = load
load = function(chunk, name, _mode, ...)
  local co = running()
  -- Lua gives the chunk the environment passed, even nil, and the globals only when none
  -- was: passing a missing one on as nil would leave the chunk without globals.
  if select('#', ...) == 0 then return restore(co, blocked[co], raw_load(chunk, name, "t")) end
  return restore(co, blocked[co], raw_load(chunk, name, "t", (...)))
end
local function rethrow_stop(ok, ...)
  if not ok and aborted() then error((...), 0) end
  return ok, ...
end
local raw_pcall, raw_xpcall, raw_resume = pcall, xpcall, coroutine.resume
pcall = function(...)
  local co = running()
  return restore(co, blocked[co], rethrow_stop(raw_pcall(...)))
end
xpcall = function(f, handler, ...)
  local co = running()
  return restore(co, blocked[co], rethrow_stop(raw_xpcall(f, handler, ...)))
end
coroutine.resume = function(...) return rethrow_stop(raw_resume(...)) end
return blocked
"#;

/// A sandboxed Lua state.
pub struct Sandbox {
    lua: Lua,
    limits: Limits,
    used: Rc<Cell<u64>>,
    stopped: Rc<Cell<bool>>,
    modules: Rc<Modules>,
    printed: Rc<RefCell<Printed>>,
}

impl Sandbox {
    /// A fresh sandbox whose scripts may do what `limits` allow, with the savechain library
    /// installed and `require` limited to it until modules are added or allowed.
    pub fn new(limits: Limits) -> Result<Sandbox, SandboxError> {
        let used = Rc::new(Cell::new(0u64));
        let stopped = Rc::new(Cell::new(false));
        let printed = Rc::new(RefCell::new(Printed::default()));
        let (lua, modules) =
            sandboxed_state(limits, &used, &stopped, &printed).map_err(SandboxError::Script)?;
        Ok(Sandbox {
            lua,
            limits,
            used,
            stopped,
            modules,
            printed,
        })
    }

    /// Lets scripts `require` modules from `dir` (`require("util.math")` loads
    /// `dir/util/math.lua`), besides the savechain library itself.
    pub fn allow_modules_from(&self, dir: impl AsRef<Path>) {
        self.modules.allow_from(dir.as_ref());
    }

    /// Lets scripts `require(name)` the module whose source is `source`, before looking in
    /// the allowed folders; its errors name the file `chunk_name`. Like a file, it runs on
    /// the first `require` and its value is kept: adding it again after that changes nothing.
    ///
    /// `name` is `name` or `name.sub` (letters, digits and `_` in each part), and may not be
    /// one of the savechain library's own modules (`savechain`, `savechain.upgrade`,
    /// `savechain.core`); otherwise this is a [`SandboxError::Module`].
    pub fn add_module(
        &self,
        name: &str,
        chunk_name: &str,
        source: &str,
    ) -> Result<(), SandboxError> {
        self.modules
            .add(name, chunk_name, source)
            .map_err(SandboxError::Module)
    }

    /// The lines scripts printed since the last take, oldest first, and a fresh allowance.
    ///
    /// `print` in the sandbox writes nothing: it joins `tostring` of its arguments with tabs,
    /// as Lua's does, and keeps the line here (a printed newline starts a new line) for the
    /// game to show where it likes. Up to [`PRINT_LIMIT`] bytes are kept between two takes;
    /// past that, printing still costs the script its instructions but is dropped, and the
    /// last line says so. Lines are text: bytes that are not UTF-8 become U+FFFD.
    pub fn take_printed(&self) -> Vec<String> {
        self.printed.borrow_mut().take()
    }

    /// The Lua state, for building values and calling functions through [`Sandbox::guard`].
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Runs `f`, which calls into Lua, with a fresh instruction budget, and classifies its
    /// failure.
    pub fn guard<T>(&self, f: impl FnOnce(&Lua) -> mlua::Result<T>) -> Result<T, SandboxError> {
        self.used.set(0);
        self.stopped.set(false);
        let result = f(&self.lua);
        let stopped = self.stopped.replace(false);
        result.map_err(|e| {
            if stopped {
                SandboxError::InstructionBudget {
                    limit: self.limits.instructions,
                }
            } else if is_memory_error(&e) {
                SandboxError::MemoryLimit {
                    limit: self.limits.memory,
                }
            } else {
                SandboxError::Script(e)
            }
        })
    }

    /// Runs a chunk of Lua source (never bytecode) and returns what it returns.
    pub fn run<R: mlua::FromLuaMulti>(&self, source: &str, name: &str) -> Result<R, SandboxError> {
        self.guard(|lua| {
            lua.load(source)
                .set_name(format!("@{name}"))
                .set_mode(ChunkMode::Text)
                .call(())
        })
    }
}

/// A Lua state with the sandbox's libraries, limits and refusals, the budgeted pattern
/// functions, the sandbox's `require` and the savechain library.
fn sandboxed_state(
    limits: Limits,
    used: &Rc<Cell<u64>>,
    stopped: &Rc<Cell<bool>>,
    printed: &Rc<RefCell<Printed>>,
) -> mlua::Result<(Lua, Rc<Modules>)> {
    // `os` is cut down to the clock by the prelude.
    let libs = StdLib::TABLE
        | StdLib::STRING
        | StdLib::MATH
        | StdLib::UTF8
        | StdLib::COROUTINE
        | StdLib::OS;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    lua.set_memory_limit(limits.memory)?;
    count_instructions(&lua, limits.instructions, used.clone(), stopped.clone())?;
    let blocked = run_prelude(&lua, stopped.clone())?;
    print::install(&lua, printed.clone())?;
    patterns::install(
        &lua,
        Budget {
            used: used.clone(),
            stopped: stopped.clone(),
            instructions: limits.instructions,
            memory: limits.memory,
        },
        blocked,
    )?;
    let modules = Modules::define_require(&lua)?;
    library::install(&lua)?;
    Ok((lua, modules))
}

/// Counts instructions in `used` and stops the script, flagging `stopped`, past `budget`.
fn count_instructions(
    lua: &Lua,
    budget: u64,
    used: Rc<Cell<u64>>,
    stopped: Rc<Cell<bool>>,
) -> mlua::Result<()> {
    // A global hook also counts inside coroutines.
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, _| {
            let total = used.get() + u64::from(HOOK_EVERY);
            used.set(total);
            if total > budget {
                stopped.set(true);
                return Err(mlua::Error::runtime("instruction budget exceeded"));
            }
            Ok(VmState::Continue)
        },
    )
}

/// Runs [`PRELUDE`], whose `pcall`s ask `stopped` whether an error is the budget's stop;
/// returns its `blocked`.
fn run_prelude(lua: &Lua, stopped: Rc<Cell<bool>>) -> mlua::Result<Table> {
    let refused = lua.create_table_from(REFUSED.iter().copied())?;
    let aborted = lua.create_function(move |_, ()| Ok(stopped.get()))?;
    lua.load(PRELUDE)
        .set_name("=savechain sandbox")
        .set_mode(ChunkMode::Text)
        .call((refused, aborted))
}

fn is_memory_error(error: &mlua::Error) -> bool {
    match error {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } => is_memory_error(cause),
        mlua::Error::WithContext { cause, .. } => is_memory_error(cause),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Sandbox {
        Sandbox::new(Limits {
            instructions: 5_000_000,
            memory: 16 << 20,
        })
        .unwrap()
    }

    fn failure(source: &str) -> SandboxError {
        small()
            .run::<mlua::Value>(source, "hostile.lua")
            .expect_err(source)
    }

    #[test]
    fn ordinary_scripts_run() {
        let sandbox = small();
        let n: i64 = sandbox
            .run("local t = {} for i = 1, 100 do t[i] = i * 2 end return #t + math.floor(os.clock() * 0)", "ok.lua")
            .unwrap();
        assert_eq!(n, 100);
        let ok: bool = sandbox
            .run(
                "return pcall(error, 'caught') == false and type(os.time()) == 'number'",
                "ok.lua",
            )
            .unwrap();
        assert!(ok);
        let s: String = sandbox
            .run("return load('return 1 + 1')() .. ''", "ok.lua")
            .unwrap();
        assert_eq!(s, "2");
    }

    #[test]
    fn files_processes_and_debug_are_refused_with_a_reason() {
        for (source, expected) in [
            (
                "os.execute('touch /tmp/pwned')",
                "os.execute is not available",
            ),
            ("os.remove('x')", "os.remove is not available"),
            ("io.open('/etc/passwd')", "io.open is not available"),
            ("debug.getinfo(1)", "debug.getinfo is not available"),
            ("dofile('x.lua')", "dofile is not available"),
            ("require('os')", "module \"os\" not found"),
            ("require('../secrets')", "is not of the form"),
            ("return string.dump(print)", "attempt to call a nil value"),
        ] {
            let message = failure(source).to_string();
            assert!(message.contains(expected), "{source}: {message}");
        }
    }

    #[test]
    fn binary_chunks_are_refused() {
        // `load` returns nil and a message rather than raising.
        let sandbox = small();
        let refused: String = sandbox
            .run(
                "local f, err = load('\\27LuaT') return tostring(err)",
                "b.lua",
            )
            .unwrap();
        assert!(refused.contains("binary"), "{refused}");
    }

    #[test]
    fn endless_loops_stop_even_under_pcall_and_in_coroutines() {
        for source in [
            "while true do end",
            "while true do pcall(function() while true do end end) end",
            "local co = coroutine.create(function() while true do end end) while true do coroutine.resume(co) end",
            "while true do xpcall(function() while true do end end, function(e) return e end) end",
        ] {
            let err = failure(source);
            assert!(
                matches!(err, SandboxError::InstructionBudget { limit: 5_000_000 }),
                "{source}: {err}"
            );
        }
    }

    #[test]
    fn memory_hogs_stop() {
        for source in [
            "return string.rep('x', 2^30)",
            "local t = {} while true do t[#t + 1] = string.rep('x', 4096) .. #t end",
        ] {
            let err = failure(source);
            assert!(
                matches!(err, SandboxError::MemoryLimit { .. }),
                "{source}: {err}"
            );
        }
        // Lua refuses this one itself, before allocating.
        let err = failure("return string.rep('x', 2^40)");
        assert!(err.to_string().contains("too large"), "{err}");
    }

    #[test]
    fn a_stopped_script_leaves_the_sandbox_usable() {
        let sandbox = small();
        assert!(sandbox.run::<()>("while true do end", "loop.lua").is_err());
        let n: i64 = sandbox.run("return 41 + 1", "after.lua").unwrap();
        assert_eq!(n, 42);
    }
}
