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
mod pristine;
mod require;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::ffi::{c_int, c_void, CStr};

use mlua::{ffi, ChunkMode, Lua, LuaOptions, StdLib, Table};

use super::chunk::{keep_loaded_chunks, kept, Chunk};
use super::library;
use super::patterns::{self, Budget};
use crate::error::LuaFailure;
pub use jobs::MIN_JOB_MEMORY;
use print::Printed;
pub use print::PRINT_LIMIT;
use pristine::Pristine;
use require::Modules;

/// How much a script may do before it is stopped; the default suits upgrade steps over
/// large saves, and [`Limits::for_jobs`] sandboxes that run side by side.
///
/// ```
/// use savechain::lua::Limits;
///
/// let mut limits = Limits::new(5_000_000, 64 << 20);
/// limits.time = std::time::Duration::from_secs(2);
/// assert_eq!(limits.instructions, 5_000_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Lua VM instructions per call into the sandbox. C functions whose own loops run no
    /// instruction (`string.rep`, `table.move`, `table.sort`, `table.concat`, shifting by
    /// `table.insert`, a collection) are charged for their work, and making a coroutine
    /// for the instructions it may run before the count first sees it.
    pub instructions: u64,
    /// Bytes the whole Lua state may hold.
    pub memory: usize,
    /// Processor time per call into the sandbox (the thread's, where the system tells it, so
    /// that a busy machine does not stop scripts early): a backstop for work that costs
    /// little in instructions and much in time, such as concatenating strings of hundreds of
    /// MiB in a loop. It is checked with the instruction count: every 10,000 instructions
    /// while they are cheap, down to every 10 while each takes long, so one single
    /// operation between two checks runs to its end.
    pub time: Duration,
    /// A flag that interrupts the script once it is set: a batch stopped at once
    /// ([`Batch::abandon_when`](crate::batch::Batch::abandon_when)) does not wait for the
    /// steps under way. Checked with the instruction count, as the time limit is.
    pub(crate) interrupt: Interrupt,
}

/// The flag of [`Limits::interrupt`]; limits are equal when they watch the same flag.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Interrupt(pub(crate) Option<&'static std::sync::atomic::AtomicBool>);

impl Interrupt {
    fn is_set(&self) -> bool {
        self.0
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl PartialEq for Interrupt {
    fn eq(&self, other: &Interrupt) -> bool {
        match (self.0, other.0) {
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl Eq for Interrupt {}

/// 300 million instructions, 1 GiB and 30 seconds: an upgrade step over a 50 MiB save runs a
/// few million instructions, holds a few hundred MiB and takes a fraction of a second, so
/// real work fits with room to spare, while an endless loop is stopped within a few seconds.
impl Default for Limits {
    fn default() -> Limits {
        Limits {
            instructions: 300_000_000,
            memory: 1 << 30,
            time: Duration::from_secs(30),
            interrupt: Interrupt::default(),
        }
    }
}

impl Limits {
    /// Limits of `instructions` and `memory` bytes, and the default time.
    pub fn new(instructions: u64, memory: usize) -> Limits {
        Limits {
            instructions,
            memory,
            ..Limits::default()
        }
    }
}

/// Why a script failed, or a module could not be added.
#[derive(Debug)]
#[non_exhaustive]
pub enum SandboxError {
    /// The script ran more instructions than [`Limits::instructions`] allows.
    InstructionBudget {
        /// The limit it ran into.
        limit: u64,
    },
    /// The script ran longer than [`Limits::time`] allows.
    TimeLimit {
        /// The limit it ran into.
        limit: Duration,
    },
    /// The run the script was part of was stopped at once, and the script with it.
    Interrupted,
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
            SandboxError::TimeLimit { limit } => write!(
                f,
                "the script ran longer than {} s and was stopped",
                limit.as_secs_f64()
            ),
            SandboxError::MemoryLimit { limit } => write!(
                f,
                "the script needed more than {} MiB of memory and was stopped",
                limit >> 20
            ),
            SandboxError::Interrupted => write!(
                f,
                "the run was stopped at once, so the script was interrupted"
            ),
            SandboxError::Script(e) => write!(f, "{e}"),
            SandboxError::Module(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for SandboxError {}

impl SandboxError {
    /// Why, in the kinds of [`LuaFailure`].
    pub(crate) fn failure(&self) -> LuaFailure {
        match self {
            SandboxError::InstructionBudget { .. } => LuaFailure::InstructionBudget,
            SandboxError::MemoryLimit { .. } => LuaFailure::MemoryLimit,
            SandboxError::TimeLimit { .. } => LuaFailure::TimeLimit,
            SandboxError::Script(mlua::Error::SyntaxError { .. }) => LuaFailure::Syntax,
            _ => LuaFailure::Runtime,
        }
    }
}

/// How often the instruction hook runs at most: instructions between two calls, while they
/// are cheap. Each call charges the instructions since the last and checks the time.
const HOOK_EVERY: u32 = 10_000;
/// How often it runs at least: when instructions are dear (each a concatenation of large
/// strings, say), the interval shrinks to this, so that the time limit is seen soon after
/// it passes.
const HOOK_EVERY_AT_LEAST: u32 = 10;
/// The interval a call into the sandbox starts with; it grows while instructions are cheap.
const HOOK_FIRST: u32 = 100;

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
/// Nothing a script does may run beyond the limits: `setmetatable` refuses a metatable with
/// `__gc` (Lua runs finalizers inside its collector with every hook off, and closing the
/// state runs those left, so a finalizer that never returned would hang the run), and the
/// C functions whose loops run no instruction, however long they take, are charged for
/// their work before they start: `string.rep` of an empty string a repetition, `table.move` an element,
/// `table.insert` and `table.remove` in the middle the length they shift, a collection a
/// sixteenth of the heap's bytes, `load` a byte of source. `math.random` starts from the same
/// seed in every sandbox, so that a script's results depend on nothing but what it is given.
///
/// It returns `blocked`, by coroutine the number of gsub replacements it is inside (see
/// `WRAPPERS` of `patterns/`). Lua's C gsub calls a replacement where the coroutine cannot
/// yield; the sandbox's gsub calls it from Lua, so `coroutine.yield` and
/// `coroutine.isyieldable` ask `blocked` instead. An error out of a replacement skips the
/// count's decrement, so whatever catches an error in the same coroutine (`pcall`, `xpcall`,
/// `load` reading through a function) puts back the count it had before.
const PRELUDE: &str = r#"
local refused, aborted, charge, memory, per_thread = ...
local error, setmetatable, select = error, setmetatable, select
local type, rawget, rawlen, getmetatable = type, rawget, rawlen, getmetatable
local tonumber, tointeger = tonumber, math.tointeger

_G.setmetatable = function(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("a metatable with __gc cannot be set: scripts run on behalf of a save cannot have finalizers, which run where no limit can stop them", 2)
  end
  return setmetatable(t, mt)
end

-- An integer argument as the C functions read it, or nil (they raise their own error).
local function count(n)
  if type(n) == "string" then n = tonumber(n) end
  return type(n) == "number" and tointeger(n) or nil
end
-- What `table.insert` and `table.remove` shift at most: the length, as they read it.
local function length(t)
  if type(t) ~= "table" then return 0 end
  local n = getmetatable(t) == nil and rawlen(t) or #t
  return math.type(n) == "integer" and n or 0
end
local rep, move, insert, remove, sort, concat = string.rep, table.move, table.insert, table.remove, table.sort, table.concat
string.rep = function(s, n, sep, ...)
  -- Anything else repeated makes a string as long as the count, which the memory bounds.
  if s == "" and (sep == nil or sep == "") then
    local times = count(n)
    if times and times > 0 then charge(times) end
  end
  return rep(s, n, sep, ...)
end
table.move = function(a1, f, e, ...)
  local first, last = count(f), count(e)
  if first and last and last >= first then charge((last + 0.0) - first + 1) end
  return move(a1, f, e, ...)
end
table.insert = function(t, ...)
  if select('#', ...) >= 2 then charge(length(t)) end
  return insert(t, ...)
end
table.remove = function(t, ...)
  if select('#', ...) >= 1 then charge(length(t)) end
  return remove(t, ...)
end
table.sort = function(t, ...)
  local n = length(t)
  if n > 1 then charge(n * math.log(n, 2)) end
  return sort(t, ...)
end
table.concat = function(t, sep, i, j, ...)
  local first, last = count(i) or 1, count(j) or length(t)
  if last >= first then charge((last + 0.0) - first + 1) end
  return concat(t, sep, i, j, ...)
end
local collect = collectgarbage
-- What runs a collection: the whole of one, or a switch of mode, which makes one.
local collects = { collect = true, step = true, generational = true, incremental = true }
collectgarbage = function(option, ...)
  if option == nil or collects[option] then charge(memory() / 16) end
  return collect(option, ...)
end
-- A new coroutine runs as many instructions as the hook's interval before the hook sees it.
local create, wrap = coroutine.create, coroutine.wrap
coroutine.create = function(...) charge(per_thread) return create(...) end
coroutine.wrap = function(...) charge(per_thread) return wrap(...) end
math.randomseed(0)

-- Their metatables are protected: they stay for every save, and a reset puts back only
-- the tables' own fields.
for name, why in pairs(refused) do
  _G[name] = setmetatable({}, {
    __index = function(_, key) error(name .. "." .. tostring(key) .. " is not available: " .. why, 2) end,
    __call = function() error(name .. " is not available: " .. why, 2) end,
    __metatable = false,
  })
end
local clock, time = os.clock, os.time
os = setmetatable({ clock = clock, time = time }, {
  __index = function(_, key)
    error("os." .. tostring(key) .. " is not available: scripts run on behalf of a save may only read the clock", 2)
  end,
  __metatable = false,
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

local function rethrow_stop(ok, ...)
  if not ok and aborted() then error((...), 0) end
  return ok, ...
end
-- `load` reads through a reader function in protected mode: a stop there comes back as
-- nil and a message, and is raised again.
local function rethrow_stop_of_load(f, ...)
  if f == nil and aborted() then error((...), 0) end
  return f, ...
end
local raw_load = load
load = function(chunk, name, _mode, ...)
  if type(chunk) == "string" then charge(#chunk) end
  local co = running()
  -- Lua gives the chunk the environment passed, even nil, and the globals only when none
  -- was: passing a missing one on as nil would leave the chunk without globals.
  if select('#', ...) == 0 then
    return restore(co, blocked[co], rethrow_stop_of_load(raw_load(chunk, name, "t")))
  end
  return restore(co, blocked[co], rethrow_stop_of_load(raw_load(chunk, name, "t", (...))))
end
local raw_pcall, raw_xpcall, raw_resume, raw_close = pcall, xpcall, coroutine.resume, coroutine.close
pcall = function(...)
  local co = running()
  return restore(co, blocked[co], rethrow_stop(raw_pcall(...)))
end
xpcall = function(f, handler, ...)
  local co = running()
  return restore(co, blocked[co], rethrow_stop(raw_xpcall(f, handler, ...)))
end
coroutine.resume = function(...) return rethrow_stop(raw_resume(...)) end
coroutine.close = function(...) return rethrow_stop(raw_close(...)) end
return blocked
"#;

/// A sandboxed Lua state: scripts run in it under [`Limits`], and [`Sandbox::reset`] makes it
/// as new for scripts run on behalf of another save.
///
/// ```
/// use savechain::lua::{Limits, Sandbox};
///
/// let sandbox = Sandbox::new(Limits::default())?;
/// sandbox.run::<()>("COUNT = (COUNT or 0) + 1; string.upper = nil", "first.lua")?;
/// sandbox.reset()?;
/// let (count, upper): (Option<i64>, String) =
///     sandbox.run("return COUNT, string.upper('kept')", "second.lua")?;
/// assert_eq!((count, upper.as_str()), (None, "KEPT"));
/// # Ok::<(), savechain::lua::SandboxError>(())
/// ```
pub struct Sandbox {
    lua: Lua,
    limits: Limits,
    meter: Meter,
    modules: Rc<Modules>,
    printed: Rc<RefCell<Printed>>,
    pristine: Pristine,
    /// The prelude's count of gsub replacements each coroutine is inside, emptied at a
    /// reset (an error out of a replacement that nothing caught leaves its count).
    blocked: Table,
    /// Lua's `math.randomseed`, to start `math.random` again at a reset.
    randomseed: mlua::Function,
    /// Set while a reset is under way, and left set when one failed: the state may hold
    /// Lua's own globals (files, processes), so no script runs in it again.
    poisoned: Cell<bool>,
}

/// What the current call into the sandbox has used, shared by the instruction hook, the
/// charged C functions and the budgeted pattern functions.
#[derive(Clone, Default)]
struct Meter {
    /// Instructions used so far in this call.
    used: Rc<Cell<u64>>,
    /// Set when a limit stopped the call, so that `pcall` cannot swallow the stop.
    stopped: Rc<Cell<bool>>,
    /// Set when it was the time limit.
    timed_out: Rc<Cell<bool>>,
    /// Set when it was [`Limits::interrupt`].
    interrupted: Rc<Cell<bool>>,
    /// When the call started; `None` between calls, when the hook charges nothing.
    started: Rc<Cell<Option<Started>>>,
    /// When the hook last ran, to tell cheap instructions from dear ones.
    last_hook: Rc<Cell<Option<Instant>>>,
}

/// When a call into the sandbox started.
#[derive(Clone, Copy)]
struct Started {
    wall: Instant,
    cpu: Option<Duration>,
}

impl Meter {
    fn start(&self) {
        self.used.set(0);
        self.stopped.set(false);
        self.timed_out.set(false);
        self.interrupted.set(false);
        let now = Instant::now();
        self.started.set(Some(Started {
            wall: now,
            cpu: thread_cpu_time(),
        }));
        self.last_hook.set(Some(now));
    }

    /// After a call: whether a limit stopped it, whether it was the time limit, and
    /// whether it was the interrupt. The hook charges nothing until the next call.
    fn end(&self) -> (bool, bool, bool) {
        self.started.set(None);
        self.last_hook.set(None);
        (
            self.stopped.replace(false),
            self.timed_out.replace(false),
            self.interrupted.replace(false),
        )
    }

    /// Charges `n` instructions; past a limit, why the call must stop.
    fn charge(&self, n: u64, limits: &Limits) -> Option<&'static CStr> {
        let total = self.used.get().saturating_add(n);
        self.used.set(total);
        if total > limits.instructions {
            self.stopped.set(true);
            return Some(c"instruction budget exceeded");
        }
        if self.over_time(limits.time) {
            self.timed_out.set(true);
            self.stopped.set(true);
            return Some(c"time limit exceeded");
        }
        if limits.interrupt.is_set() {
            self.interrupted.set(true);
            self.stopped.set(true);
            return Some(c"the run was stopped at once");
        }
        None
    }

    /// Whether the call has run longer than `limit`: by the clock first (cheap), then by
    /// the processor time of the thread where the system has it (a busy machine stretches
    /// the first, not the second).
    fn over_time(&self, limit: Duration) -> bool {
        let Some(started) = self.started.get() else {
            return false;
        };
        if started.wall.elapsed() <= limit {
            return false;
        }
        match (started.cpu, thread_cpu_time()) {
            (Some(then), Some(now)) => now.saturating_sub(then) > limit,
            _ => true,
        }
    }
}

/// The processor time this thread has used, where the system tells it.
fn thread_cpu_time() -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid timespec for the call to fill.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0 {
            return Some(Duration::new(now.tv_sec as u64, now.tv_nsec as u32));
        }
    }
    None
}

impl Sandbox {
    /// A fresh sandbox whose scripts may do what `limits` allow, with the savechain library
    /// installed and `require` limited to it until modules are added or allowed.
    pub fn new(limits: Limits) -> Result<Sandbox, SandboxError> {
        let meter = Meter::default();
        let printed = Rc::new(RefCell::new(Printed::default()));
        let made = || -> mlua::Result<Sandbox> {
            let meter = meter.clone();
            // `os` is cut down to the clock by the prelude.
            let libs = StdLib::TABLE
                | StdLib::STRING
                | StdLib::MATH
                | StdLib::UTF8
                | StdLib::COROUTINE
                | StdLib::OS;
            let lua = Lua::new_with(libs, LuaOptions::default())?;
            lua.set_memory_limit(limits.memory)?;
            keep_loaded_chunks(&lua);
            count_instructions(&lua, limits, meter.clone())?;
            let randomseed = lua.globals().get::<Table>("math")?.get("randomseed")?;
            let blocked = set_up_lua(&lua, limits, &meter, &printed)?;
            // Taken once the functions of the sandbox that hold nothing of a save are in
            // place, so that a reset puts them back rather than making them again.
            let pristine = Pristine::take(&lua)?;
            let modules = Rc::new(Modules::new(&lua)?);
            let sandbox = Sandbox {
                lua,
                limits,
                meter,
                modules,
                printed,
                pristine,
                blocked,
                randomseed,
                poisoned: Cell::new(false),
            };
            sandbox.set_up()?;
            Ok(sandbox)
        };
        made().map_err(SandboxError::Script)
    }

    /// Makes the sandbox as new for scripts run on behalf of another save: nothing a script
    /// did since it was made or last reset remains where a script can reach it.
    ///
    /// The globals, the standard libraries and the strings' metatable are put back in place
    /// as the sandbox first set them up: Lua's, with the sandbox's own functions in place
    /// of some (a global a script set, a library function it replaced, a metatable it gave
    /// them, all gone); `require` and its modules' state, and the savechain library (its
    /// classes, its registered modules) are made anew; the collector runs as Lua's
    /// default, and `math.random` starts again from its seed. Modules added with [`Sandbox::add_module`] and folders allowed stay allowed,
    /// and run again at their first `require`. Printed lines not taken are dropped. This
    /// costs a fraction of making a new sandbox, whose Lua state and compiled chunks it keeps.
    pub fn reset(&self) -> Result<(), SandboxError> {
        self.poisoned.set(true);
        let reset = || -> mlua::Result<()> {
            self.pristine.restore(&self.lua)?;
            clear(&self.blocked)?;
            self.randomseed.call::<()>(0)?;
            // SAFETY: `lua_gc` with these options raises nothing.
            unsafe {
                self.lua.exec_raw::<()>((), |l| {
                    // Lua 5.4's defaults: a pause of 200 %, a step multiplier of 100, steps
                    // of 2^13 bytes.
                    ffi::lua_gc(l, ffi::LUA_GCINC, 200, 100, 13);
                    // Restarting wipes the collector's accounting (it would start a cycle
                    // at once): only for a collector a script stopped.
                    if ffi::lua_gc(l, ffi::LUA_GCISRUNNING) == 0 {
                        ffi::lua_gc(l, ffi::LUA_GCRESTART);
                    }
                })?;
            }
            library::forget(&self.lua);
            self.set_up()
        };
        reset().map_err(SandboxError::Script)?;
        self.printed.borrow_mut().take();
        self.poisoned.set(false);
        Ok(())
    }

    /// What a sandbox makes anew for each save, over [`set_up_lua`]: `require` and the
    /// savechain library, which keep what scripts register and load.
    fn set_up(&self) -> mlua::Result<()> {
        self.modules.define_require(&self.lua)?;
        library::install_sandboxed(&self.lua, self.limits.memory)?;
        Ok(())
    }

    /// Lets scripts `require` modules from `dir` (`require("util.math")` loads
    /// `dir/util/math.lua`), besides the savechain library itself. Only files inside `dir`
    /// are read: a module that is a link to a file outside it is an error.
    pub fn allow_modules_from(&self, dir: impl AsRef<Path>) {
        self.modules.allow_from(dir.as_ref());
    }

    /// Lets scripts `require(name)` the module whose source is `source`, before looking in
    /// the allowed folders; its errors name the file `chunk_name`. Like a file, it runs on
    /// the first `require` and its value is kept: adding it again after that changes nothing.
    /// The source is bytes, as Lua's is: string literals may hold any.
    ///
    /// `name` is `name` or `name.sub` (letters, digits and `_` in each part), and may not be
    /// one of the savechain library's own modules (`savechain`, `savechain.upgrade`,
    /// `savechain.core`) nor of Lua's standard libraries (`string`, `utf8`, ...: `require`
    /// returns those as Lua does); otherwise this is a [`SandboxError::Module`].
    pub fn add_module(
        &self,
        name: &str,
        chunk_name: &str,
        source: impl AsRef<[u8]>,
    ) -> Result<(), SandboxError> {
        let chunk = Chunk::of_file(chunk_name, source.as_ref().to_vec());
        self.add_chunk(name, Arc::new(chunk))
    }

    /// [`Sandbox::add_module`] of a chunk that may have been compiled in another sandbox.
    pub(crate) fn add_chunk(&self, name: &str, chunk: Arc<Chunk>) -> Result<(), SandboxError> {
        self.modules.add(name, chunk).map_err(SandboxError::Module)
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
    ///
    /// A call that a limit stopped fails, even if the script caught the stop and went on
    /// to return. A sandbox whose [`Sandbox::reset`] failed runs nothing more.
    pub fn guard<T>(&self, f: impl FnOnce(&Lua) -> mlua::Result<T>) -> Result<T, SandboxError> {
        if self.poisoned.get() {
            return Err(SandboxError::Script(mlua::Error::runtime(
                "the sandbox could not be reset after an earlier script, so it runs nothing more; \
                 make a new one",
            )));
        }
        self.meter.start();
        // The interval of the main thread's hook, as a call starts.
        // SAFETY: sets the hook of the state's main thread; raises nothing.
        let armed = unsafe {
            self.lua.exec_raw::<()>((), |l| {
                ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKCOUNT, HOOK_FIRST as c_int);
            })
        };
        let result = armed.and_then(|()| f(&self.lua));
        let (stopped, timed_out, interrupted) = self.meter.end();
        let result = match result {
            Ok(_) if stopped => Err(mlua::Error::runtime("a limit stopped the script")),
            other => other,
        };
        result.map_err(|e| {
            if interrupted {
                SandboxError::Interrupted
            } else if timed_out {
                SandboxError::TimeLimit {
                    limit: self.limits.time,
                }
            } else if stopped {
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

/// What the instruction hook counts with, kept in the Lua state's app data so that it lives
/// as long as the state (a clone of the `Lua` handle may outlive the sandbox).
struct Hooked {
    meter: Meter,
    limits: Limits,
}

/// Where the registry keeps the address of the state's [`Hooked`].
static HOOKED: u8 = 0;

/// Counts instructions with `meter` and stops the script past the limits.
///
/// The hook is Lua's own (`lua_sethook`), raising its error with `lua_error` from a frame
/// that owns nothing, rather than mlua's: mlua's hook, when it fails, resets the top of the
/// stack in the frame of the function it interrupted (a hook has no frame of its own), which
/// runs that function's pending `__close` handlers inside the hook, where no hook can stop
/// them. Coroutines get the hook of the thread that creates them.
fn count_instructions(lua: &Lua, limits: Limits, meter: Meter) -> mlua::Result<()> {
    lua.set_app_data(Hooked { meter, limits });
    let hooked = lua
        .app_data_ref::<Hooked>()
        .map(|h| &*h as *const Hooked)
        .expect("set above");
    // SAFETY: the address is of the app data, which stays where it is for the state's life
    // (it is never replaced), and the hook reads it only while the state runs.
    unsafe {
        lua.exec_raw::<()>((), |l| {
            ffi::lua_pushlightuserdata(l, hooked as *mut c_void);
            ffi::lua_rawsetp(
                l,
                ffi::LUA_REGISTRYINDEX,
                &HOOKED as *const u8 as *const c_void,
            );
            ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKCOUNT, HOOK_FIRST as c_int);
        })
    }
}

unsafe extern "C-unwind" fn count_hook(l: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    ffi::lua_rawgetp(
        l,
        ffi::LUA_REGISTRYINDEX,
        &HOOKED as *const u8 as *const c_void,
    );
    let hooked = ffi::lua_touserdata(l, -1) as *const Hooked;
    ffi::lua_pop(l, 1);
    if hooked.is_null() {
        return;
    }
    let hooked = &*hooked;
    let meter = &hooked.meter;
    // Between calls (the sandbox setting itself up) nothing is charged.
    if meter.started.get().is_none() {
        return;
    }
    let count = ffi::lua_gethookcount(l).max(1);
    // Nothing with a destructor lives in this frame when `lua_error` unwinds it.
    if let Some(why) = meter.charge(count as u64, &hooked.limits) {
        // Stopped: from now on every instruction of this thread raises again, so that no
        // function that catches errors (`load` with a reader, `coroutine.close`) can let
        // the script go on.
        ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKCOUNT, 1);
        ffi::lua_pushstring(l, why.as_ptr());
        ffi::lua_error(l);
    }
    // Instructions that take long (each a copy of a large string, say) shrink the interval,
    // so that the time limit is noticed soon; cheap ones grow it back.
    let now = Instant::now();
    let since = meter.last_hook.get().map(|t| now - t);
    let next = match since {
        Some(since) if since > Duration::from_millis(2) => {
            (count / 10).max(HOOK_EVERY_AT_LEAST as c_int)
        }
        Some(since) if since < Duration::from_micros(500) => (count * 2).min(HOOK_EVERY as c_int),
        _ => count,
    };
    if next == count {
        meter.last_hook.set(Some(now));
        return;
    }
    ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKCOUNT, next);
    // Timed from after it: `lua_sethook` walks every frame of the stack, so in a deep
    // recursion its own time would pass for dear instructions, shrink the interval, and make
    // the hook (and so itself) run ever more often.
    meter.last_hook.set(Some(Instant::now()));
}

/// The sandbox's own globals, over those Lua made, which keep nothing of a save: the
/// prelude's refusals and wrappers, `print` (whose lines the sandbox takes) and the budgeted
/// pattern functions. Returns the prelude's `blocked`.
fn set_up_lua(
    lua: &Lua,
    limits: Limits,
    meter: &Meter,
    printed: &Rc<RefCell<Printed>>,
) -> mlua::Result<Table> {
    let blocked = run_prelude(lua, limits, meter.clone())?;
    print::install(lua, printed.clone())?;
    patterns::install(
        lua,
        Budget {
            used: meter.used.clone(),
            stopped: meter.stopped.clone(),
            instructions: limits.instructions,
            memory: limits.memory,
        },
        blocked.clone(),
    )?;
    Ok(blocked)
}

/// Removes every field of `table`.
fn clear(table: &Table) -> mlua::Result<()> {
    let keys = table
        .pairs::<mlua::Value, mlua::Value>()
        .map(|pair| pair.map(|(key, _)| key))
        .collect::<mlua::Result<Vec<_>>>()?;
    keys.into_iter()
        .try_for_each(|key| table.raw_set(key, mlua::Nil))
}

/// Runs [`PRELUDE`], whose `pcall`s ask the meter whether an error is a limit's stop and
/// whose C functions charge it; returns its `blocked`.
fn run_prelude(lua: &Lua, limits: Limits, meter: Meter) -> mlua::Result<Table> {
    // Neither the table nor the functions reach scripts, which get closures over them.
    let refused = kept(lua, "sandbox refused", || {
        lua.create_table_from(REFUSED.iter().copied())
    })?;
    let stopped = meter.stopped.clone();
    let aborted = kept(lua, "sandbox aborted", || {
        lua.create_function(move |_, ()| Ok(stopped.get()))
    })?;
    // Charges `n` instructions (a float: counts past 2^63 are charged whole).
    let charge = kept(lua, "sandbox charge", || {
        lua.create_function(move |_, n: f64| {
            match meter.charge(if n > 0.0 { n as u64 } else { 0 }, &limits) {
                Some(why) => Err(mlua::Error::runtime(why.to_string_lossy())),
                None => Ok(()),
            }
        })
    })?;
    let memory = kept(lua, "sandbox memory", || {
        lua.create_function(|lua, ()| Ok(lua.used_memory()))
    })?;
    static CHUNK: Chunk = Chunk::of_crate("=savechain sandbox", PRELUDE, true);
    CHUNK
        .load_kept(lua)?
        .call((refused, aborted, charge, memory, HOOK_EVERY))
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
        Sandbox::new(Limits::new(5_000_000, 16 << 20)).unwrap()
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
            ("require('os').execute('x')", "os.execute is not available"),
            ("require('io').open('x')", "io.open is not available"),
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
