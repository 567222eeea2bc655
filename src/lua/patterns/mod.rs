//! `string.find`, `string.match`, `string.gmatch` and `string.gsub` for the sandbox, with Lua
//! patterns that charge every step to the instruction budget. This file is their Lua-facing
//! side: installing them, checking arguments, the gmatch and gsub drivers, and settling each
//! call's steps with the sandbox's budget; `matcher.rs` matches, `meter.rs` counts.
//!
//! Lua's own matcher runs inside one C call, where the instruction hook never fires, so
//! `string.find(string.rep('a', 3000), '.-.-.-.-b')` would run for minutes. This matcher
//! follows §6.4.1 of the Lua 5.4 manual and backtracks in the same order as Lua's, so it finds
//! the same matches; it also reads the pattern lazily like Lua's, so a malformed item is
//! reported only when matching reaches it, with Lua's message.
//!
//! The functions are small Lua wrappers around Rust primitives: an error raised from a Rust
//! callback reaches Lua as userdata, whereas these functions must raise strings (with the
//! caller's position) and let a replacement function's error pass through unchanged. The
//! wrappers are loaded without debug information so that, like C functions, they add no
//! position of their own to an `error(message, 2)` raised by a replacement function; and
//! gsub marks its coroutine as unable to yield while a replacement runs, as it is in C.

mod matcher;
mod meter;

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value, Variadic};

use super::chunk::{kept, Chunk};
use matcher::{Cap, Matcher};
use meter::{raise, Fail, Meter};

/// Bytes that make `string.find` treat its pattern as a pattern rather than plain text.
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// The sandbox's limits and the counter it shares with the instruction hook.
#[derive(Clone)]
pub(super) struct Budget {
    /// Instructions used so far in this call into the sandbox.
    pub(super) used: Rc<Cell<u64>>,
    /// Set when the budget ran out, so that `pcall` cannot swallow the stop.
    pub(super) stopped: Rc<Cell<bool>>,
    /// [`super::Limits::instructions`].
    pub(super) instructions: u64,
    /// [`super::Limits::memory`].
    pub(super) memory: usize,
}

/// The first result of a primitive whose second result is an error message to raise.
fn error_tag() -> Value {
    static TAG: u8 = 0;
    Value::LightUserData(LightUserData(&TAG as *const u8 as *mut c_void))
}

impl Budget {
    /// Runs a primitive, charges its steps, and turns its failure into what the wrapper expects.
    fn run(
        &self,
        lua: &Lua,
        f: impl FnOnce(&mut Meter) -> Result<MultiValue, Fail>,
    ) -> mlua::Result<MultiValue> {
        let mut meter = Meter {
            steps: 0,
            allowance: self.instructions.saturating_sub(self.used.get()),
        };
        let result = f(&mut meter);
        let total = self.used.get().saturating_add(meter.steps);
        self.used.set(total);
        if total > self.instructions || matches!(result, Err(Fail::Budget)) {
            // The same stop as the instruction hook's, so `Sandbox::guard` reports it alike.
            self.stopped.set(true);
            return Err(mlua::Error::runtime("instruction budget exceeded"));
        }
        match result {
            Ok(values) => Ok(values),
            Err(Fail::Raise(message)) => Ok(MultiValue::from_vec(vec![
                error_tag(),
                Value::String(lua.create_string(message)?),
            ])),
            Err(Fail::Lua(e)) => Err(e),
            Err(Fail::Budget) => unreachable!("handled above"),
        }
    }

    /// Refuses to grow a result held outside Lua's allocator past Lua's memory limit.
    fn check_memory(&self, lua: &Lua, extra: usize) -> Result<(), Fail> {
        if lua.used_memory().saturating_add(extra) > self.memory {
            Err(Fail::Lua(mlua::Error::MemoryError(
                "not enough memory".to_string(),
            )))
        } else {
            Ok(())
        }
    }
}

/// The Lua side: raises the primitives' errors and calls gsub's replacement functions and
/// tables, so that their errors and metamethods behave as with the C functions.
const WRAPPERS: &str = r#"
local string, ERR, find, match, gmatch, gsub, blocked = ...
local error, select, running = error, select, coroutine.running

-- Tail-called, so level 2 is the caller of the string function.
local function check(...)
  if ... == ERR then error((select(2, ...)), 2) end
  return ...
end

string.find = function(...) return check(find(...)) end
string.match = function(...) return check(match(...)) end
string.gmatch = function(...)
  local iterate, message = gmatch(...)
  if iterate == ERR then error(message, 2) end
  return function() return check(iterate()) end
end
string.gsub = function(...)
  local step, a, b = gsub(...)
  if step == ERR then error(a, 2) end
  if not step then return a, b end
  -- `step(value)` takes the replacement of the pending match and finds the next one. If
  -- there is one it returns true, the first capture and the number of captures (all of them
  -- come from `captures()`); else false, the result and the count, or ERR and a message.
  local captures, repl, more = a, (select(3, ...)), nil
  -- No yield inside the replacement, as with Lua's C gsub (see the sandbox's PRELUDE).
  local co = running()
  local depth = blocked[co]
  blocked[co] = (depth or 0) + 1
  if b then
    more, a, b = step()
    while more == true do more, a, b = step(repl[a]) end
  else
    more, a, b = step()
    while more == true do
      if b == 1 then
        more, a, b = step(repl(a))
      else
        more, a, b = step(repl(captures()))
      end
    end
  end
  blocked[co] = depth
  if more == ERR then error(a, 2) end
  return a, b
end
"#;

/// Replaces `string.find`, `string.match`, `string.gmatch` and `string.gsub` with versions
/// that charge their steps to `budget`; gsub counts in `blocked` the replacements each
/// coroutine is inside, where it may not yield.
pub(super) fn install(lua: &Lua, budget: Budget, blocked: Table) -> mlua::Result<()> {
    // Kept in a table no script sees: the wrappers get them as arguments.
    let kept_primitives = kept(lua, "patterns primitives", || primitives(lua, budget))?;
    let primitive = |name: &str| kept_primitives.raw_get::<mlua::Function>(name);
    let (find, match_, gmatch, gsub) = (
        primitive("find")?,
        primitive("match")?,
        primitive("gmatch")?,
        primitive("gsub")?,
    );
    // Stripped of line information, the wrappers look like C functions to `error(m, 2)`.
    static CHUNK: Chunk = Chunk::of_crate("=savechain patterns", WRAPPERS, true);
    CHUNK.load_kept(lua)?.call::<()>((
        lua.globals().get::<Table>("string")?,
        error_tag(),
        find,
        match_,
        gmatch,
        gsub,
        blocked,
    ))
}

/// The four Rust primitives of the wrappers, charging `budget`, by name.
fn primitives(lua: &Lua, budget: Budget) -> mlua::Result<Table> {
    let b = budget.clone();
    let find = lua.create_function(move |lua, args: Variadic<Value>| {
        b.run(lua, |meter| {
            str_find(lua, meter, &Args::new(lua, "find", &args), true)
        })
    })?;
    let b = budget.clone();
    let match_ = lua.create_function(move |lua, args: Variadic<Value>| {
        b.run(lua, |meter| {
            str_find(lua, meter, &Args::new(lua, "match", &args), false)
        })
    })?;
    let b = budget.clone();
    let gmatch = lua.create_function(move |lua, args: Variadic<Value>| {
        b.run(lua, |_| gmatch(lua, &b, &Args::new(lua, "gmatch", &args)))
    })?;
    let b = budget;
    let gsub = lua.create_function(move |lua, args: Variadic<Value>| {
        b.run(lua, |meter| {
            gsub(lua, meter, &b, &Args::new(lua, "gsub", &args))
        })
    })?;
    lua.create_table_from([
        ("find", find),
        ("match", match_),
        ("gmatch", gmatch),
        ("gsub", gsub),
    ])
}

/// A primitive's arguments, checked the way the C string library checks them.
struct Args<'a> {
    lua: &'a Lua,
    name: &'static str,
    values: &'a [Value],
}

impl<'a> Args<'a> {
    fn new(lua: &'a Lua, name: &'static str, values: &'a [Value]) -> Args<'a> {
        Args { lua, name, values }
    }

    /// Argument `n` (from 1), or `None` if it was not passed.
    fn get(&self, n: usize) -> Option<&Value> {
        self.values.get(n - 1)
    }

    fn truthy(&self, n: usize) -> bool {
        !matches!(
            self.get(n),
            None | Some(Value::Nil) | Some(Value::Boolean(false))
        )
    }

    fn string(&self, n: usize) -> Result<mlua::String, Fail> {
        match self.get(n) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v @ (Value::Integer(_) | Value::Number(_))) => {
                match self.lua.coerce_string(v.clone())? {
                    Some(s) => Ok(s),
                    None => Err(self.type_error(n, "string")),
                }
            }
            _ => Err(self.type_error(n, "string")),
        }
    }

    fn opt_integer(&self, n: usize, default: i64) -> Result<i64, Fail> {
        match self.get(n) {
            None | Some(Value::Nil) => Ok(default),
            Some(Value::Integer(i)) => Ok(*i),
            Some(v) => {
                if let Some(i) = self.lua.coerce_integer(v.clone())? {
                    Ok(i)
                } else if self.lua.coerce_number(v.clone())?.is_some() {
                    Err(self.arg_error(n, "number has no integer representation"))
                } else {
                    Err(self.type_error(n, "number"))
                }
            }
        }
    }

    fn type_error(&self, n: usize, expected: &str) -> Fail {
        let got = match self.get(n) {
            None => "no value".to_string(),
            Some(v) => type_name_for_error(v),
        };
        self.arg_error(n, &format!("{expected} expected, got {got}"))
    }

    /// Lua's "bad argument" message, naming the function as its caller called it.
    fn arg_error(&self, mut n: usize, message: &str) -> Fail {
        // Level 0 is this primitive, level 1 the Lua wrapper the script called.
        let names = self.lua.inspect_stack(1, |debug| {
            let names = debug.names();
            (names.name.map(|s| s.into_owned()), names.name_what)
        });
        let Some((name, what)) = names else {
            return raise(format!("bad argument #{n} ({message})"));
        };
        if what == Some("method") {
            n -= 1;
            if n == 0 {
                let name = name.unwrap_or_else(|| "?".to_string());
                return raise(format!("calling '{name}' on bad self ({message})"));
            }
        }
        let name = name.unwrap_or_else(|| format!("string.{}", self.name));
        raise(format!("bad argument #{n} to '{name}' ({message})"))
    }
}

/// The type Lua names in "X expected, got Y": a `__name` from the metatable if there is one.
fn type_name_for_error(value: &Value) -> String {
    let meta_name = match value {
        Value::Table(t) => t
            .metatable()
            .and_then(|m| m.raw_get::<Option<mlua::String>>("__name").ok().flatten()),
        Value::UserData(u) => u
            .metatable()
            .ok()
            .and_then(|m| m.get::<Option<mlua::String>>("__name").ok().flatten()),
        _ => None,
    };
    if let Some(name) = meta_name {
        return name.to_string_lossy();
    }
    match value {
        Value::LightUserData(_) => "light userdata".to_string(),
        v => lua_type_name(v).to_string(),
    }
}

/// `type(v)`.
fn lua_type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// Where a search starting at Lua position `pos` starts (from 0), or `None` if that is past
/// the end of a subject of `len` bytes.
fn start_index(pos: i64, len: usize) -> Option<usize> {
    let len_i = len as i64;
    let from_one = if pos > 0 {
        pos
    } else if pos == 0 || pos < -len_i {
        1
    } else {
        len_i + pos + 1
    };
    let index = (from_one - 1) as u64;
    (index <= len as u64).then_some(index as usize)
}

/// `string.find` (`find`) and `string.match`.
fn str_find(lua: &Lua, meter: &mut Meter, args: &Args, find: bool) -> Result<MultiValue, Fail> {
    let s = args.string(1)?;
    let p = args.string(2)?;
    let init = args.opt_integer(3, 1)?;
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let Some(init) = start_index(init, src.len()) else {
        return Ok(MultiValue::from_vec(vec![Value::Nil]));
    };
    if find && (args.truthy(4) || !pat.iter().any(|c| SPECIALS.contains(c))) {
        if let Some(at) = plain_find(meter, &src[init..], &pat)? {
            let start = init + at;
            return Ok(MultiValue::from_vec(vec![
                Value::Integer(start as i64 + 1),
                Value::Integer((start + pat.len()) as i64),
            ]));
        }
        return Ok(MultiValue::from_vec(vec![Value::Nil]));
    }
    let (anchor, pat) = match pat.split_first() {
        Some((b'^', rest)) => (true, rest),
        _ => (false, &pat[..]),
    };
    let mut m = Matcher::new(&src, pat, meter);
    let mut start = init;
    loop {
        if let Some(end) = m.match_at(start)? {
            let mut out = Vec::new();
            if find {
                out.push(Value::Integer(start as i64 + 1));
                out.push(Value::Integer(end as i64));
                m.push_captures(lua, None, &mut out)?;
            } else {
                m.push_captures(lua, Some((start, end)), &mut out)?;
            }
            return Ok(MultiValue::from_vec(out));
        }
        if start < src.len() && !anchor {
            start += 1;
        } else {
            return Ok(MultiValue::from_vec(vec![Value::Nil]));
        }
    }
}

/// Where `needle` first occurs in `hay`.
fn plain_find(meter: &mut Meter, hay: &[u8], needle: &[u8]) -> Result<Option<usize>, Fail> {
    let Some((&first, rest)) = needle.split_first() else {
        return Ok(Some(0));
    };
    if needle.len() > hay.len() {
        return Ok(None);
    }
    let last = hay.len() - needle.len();
    // Comparing the rest of the needle costs about one step per 16 bytes.
    let compare = 1 + rest.len() as u64 / 16;
    let mut i = 0;
    while i <= last {
        let Some(skip) = hay[i..=last].iter().position(|&c| c == first) else {
            meter.charge((last + 1 - i) as u64)?;
            return Ok(None);
        };
        meter.charge(skip as u64 + compare)?;
        i += skip;
        if &hay[i + 1..i + needle.len()] == rest {
            return Ok(Some(i));
        }
        i += 1;
    }
    Ok(None)
}

/// State of one `string.gmatch` iteration.
struct GmatchState {
    src: mlua::String,
    pat: mlua::String,
    /// Where the next search starts.
    next: usize,
    /// Where the last match ended: an empty match there does not count (Lua 5.4).
    last: Option<usize>,
}

/// `string.gmatch`: an iterator over the matches, each call charged to the budget.
fn gmatch(lua: &Lua, budget: &Budget, args: &Args) -> Result<MultiValue, Fail> {
    let src = args.string(1)?;
    let pat = args.string(2)?;
    let init = args.opt_integer(3, 1)?;
    let len = src.as_bytes().len();
    let next = start_index(init, len).unwrap_or(len + 1);
    let state = RefCell::new(GmatchState {
        src,
        pat,
        next,
        last: None,
    });
    let budget = budget.clone();
    let iterate = lua
        .create_function(move |lua, ()| budget.run(lua, |meter| gmatch_next(lua, meter, &state)))?;
    Ok(MultiValue::from_vec(vec![Value::Function(iterate)]))
}

/// The captures of the next match of a `string.gmatch` iteration, or nothing at the end.
fn gmatch_next(
    lua: &Lua,
    meter: &mut Meter,
    state: &RefCell<GmatchState>,
) -> Result<MultiValue, Fail> {
    let (s, p, mut start, last) = {
        let st = state.borrow();
        (st.src.clone(), st.pat.clone(), st.next, st.last)
    };
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let mut m = Matcher::new(&src, &pat, meter);
    while start <= src.len() {
        if let Some(end) = m.match_at(start)? {
            if Some(end) != last {
                let mut st = state.borrow_mut();
                st.next = end;
                st.last = Some(end);
                let mut out = Vec::new();
                m.push_captures(lua, Some((start, end)), &mut out)?;
                return Ok(MultiValue::from_vec(out));
            }
        }
        start += 1;
    }
    Ok(MultiValue::new())
}

/// One part of a gsub replacement string.
#[derive(Clone, Copy)]
enum Piece {
    /// Bytes `start..end` of the replacement string.
    Text(usize, usize),
    /// `%0`.
    Whole,
    /// `%1` to `%9`, from 0.
    Capture(usize),
    /// A `%` followed by anything else: an error once there is a match.
    Invalid,
}

/// The pieces of a gsub replacement string, read once for all matches.
fn parse_replacement(repl: &[u8]) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while let Some(at) = repl[start..].iter().position(|&c| c == b'%') {
        let at = start + at;
        if at > start {
            pieces.push(Piece::Text(start, at));
        }
        match repl.get(at + 1) {
            Some(b'%') => pieces.push(Piece::Text(at + 1, at + 2)),
            Some(b'0') => pieces.push(Piece::Whole),
            Some(&d) if d.is_ascii_digit() => pieces.push(Piece::Capture(usize::from(d - b'1'))),
            _ => {
                // Nothing after the first invalid escape is ever used.
                pieces.push(Piece::Invalid);
                return pieces;
            }
        }
        start = at + 2;
    }
    if start < repl.len() {
        pieces.push(Piece::Text(start, repl.len()));
    }
    pieces
}

/// State of one `string.gsub` call, kept between the steps of a table or function
/// replacement.
struct GsubState {
    src: mlua::String,
    pat: mlua::String,
    /// Where matching starts in `pat`: past the anchor, if there is one.
    pat_start: usize,
    anchor: bool,
    /// Where the next search starts.
    pos: usize,
    /// Where the last match ended: an empty match there does not count (Lua 5.4).
    last: Option<usize>,
    /// Matches replaced so far, and the most that may be.
    count: i64,
    max: i64,
    done: bool,
    /// Whether a match was replaced by something (a nil or false replacement keeps it): if
    /// not, the result is the subject itself, as in Lua 5.4, not a copy.
    changed: bool,
    /// The result up to `copied`, the end of the last match replaced: the subject's bytes
    /// are copied only when a replacement follows them.
    out: Vec<u8>,
    copied: usize,
    /// When `out` is next checked against the memory limit.
    check_at: usize,
    /// The match whose replacement the wrapper is computing.
    pending: Option<(usize, usize)>,
    /// The captures of the pending match, for the wrapper to pass on.
    captures: Vec<Value>,
}

/// How gsub replaces a match.
enum Repl {
    Text(mlua::String),
    Table,
    Function,
}

/// `string.gsub`: with a replacement string, the result at once; with a table or function,
/// the functions the Lua wrapper drives (see `WRAPPERS`).
fn gsub(lua: &Lua, meter: &mut Meter, budget: &Budget, args: &Args) -> Result<MultiValue, Fail> {
    let src = args.string(1)?;
    let pat = args.string(2)?;
    let len = src.as_bytes().len();
    // Lua checks the count before the replacement's type.
    let max = args.opt_integer(4, len as i64 + 1)?;
    let repl = match args.get(3) {
        Some(Value::String(s)) => Repl::Text(s.clone()),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => {
            Repl::Text(args.lua.coerce_string(v.clone())?.expect("numbers convert"))
        }
        Some(Value::Table(_)) => Repl::Table,
        Some(Value::Function(_)) => Repl::Function,
        _ => return Err(args.type_error(3, "string/function/table")),
    };
    let anchor = pat.as_bytes().first() == Some(&b'^');
    let state = GsubState {
        src,
        pat,
        pat_start: usize::from(anchor),
        anchor,
        pos: 0,
        last: None,
        count: 0,
        max,
        done: false,
        changed: false,
        out: Vec::new(),
        copied: 0,
        check_at: 1 << 16,
        pending: None,
        captures: Vec::new(),
    };
    match repl {
        Repl::Text(repl) => gsub_with_text(lua, meter, budget, state, &repl),
        Repl::Table => gsub_stepper(lua, budget, state, true),
        Repl::Function => gsub_stepper(lua, budget, state, false),
    }
}

/// gsub with a replacement string, done at once: false, the result and the count.
fn gsub_with_text(
    lua: &Lua,
    meter: &mut Meter,
    budget: &Budget,
    mut state: GsubState,
    repl: &mlua::String,
) -> Result<MultiValue, Fail> {
    let (s, p) = (state.src.clone(), state.pat.clone());
    let (src, pat, repl) = (s.as_bytes(), p.as_bytes(), repl.as_bytes());
    let pieces = parse_replacement(&repl);
    let mut m = Matcher::new(&src, &pat[state.pat_start..], meter);
    while let Some((start, end)) = state.next_match(&mut m)? {
        state.replace(&src, start, end);
        for piece in &pieces {
            match *piece {
                Piece::Text(a, b) => state.out.extend_from_slice(&repl[a..b]),
                Piece::Whole => state.out.extend_from_slice(&src[start..end]),
                Piece::Capture(i) => match m.get_capture(i, start, end)? {
                    Cap::Text(a, b) => state.out.extend_from_slice(&src[a..b]),
                    Cap::Position(at) => state.out.extend_from_slice(at.to_string().as_bytes()),
                },
                Piece::Invalid => return Err(raise("invalid use of '%' in replacement string")),
            }
        }
        state.check_memory(lua, budget)?;
    }
    let mut results = state.finish(lua)?.into_vec();
    results.insert(0, Value::Boolean(false));
    Ok(MultiValue::from_vec(results))
}

/// gsub with a replacement table or function, which the Lua wrapper calls: the functions
/// `step` (see [`gsub_step`]) and `captures`, and whether it is a table.
fn gsub_stepper(
    lua: &Lua,
    budget: &Budget,
    state: GsubState,
    table: bool,
) -> Result<MultiValue, Fail> {
    let state = Rc::new(RefCell::new(state));
    let (b, st) = (budget.clone(), state.clone());
    // Called without a value the first time; a missing value is kept like nil anyway.
    let step = lua.create_function(move |lua, value: Value| {
        b.run(lua, |meter| gsub_step(lua, meter, &b, &st, &value, table))
    })?;
    let captures = lua.create_function(move |_, ()| {
        Ok(Variadic::from(std::mem::take(
            &mut state.borrow_mut().captures,
        )))
    })?;
    Ok(MultiValue::from_vec(vec![
        Value::Function(step),
        Value::Function(captures),
        Value::Boolean(table),
    ]))
}

/// Puts in the replacement `value` of the pending match (nil or false keep the match), then
/// finds the next match: true, its first capture and the number of captures; at the end,
/// false, the result and the count.
fn gsub_step(
    lua: &Lua,
    meter: &mut Meter,
    budget: &Budget,
    state: &RefCell<GsubState>,
    value: &Value,
    table: bool,
) -> Result<MultiValue, Fail> {
    let mut state = state.borrow_mut();
    let (s, p) = (state.src.clone(), state.pat.clone());
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    if let Some((start, end)) = state.pending.take() {
        match value {
            // The match stays as it is, to be copied with what follows it.
            Value::Nil | Value::Boolean(false) => {}
            Value::String(s) => {
                state.replace(&src, start, end);
                state.out.extend_from_slice(&s.as_bytes());
            }
            v @ (Value::Integer(_) | Value::Number(_)) => {
                let s = lua.coerce_string(v.clone())?.expect("numbers convert");
                state.replace(&src, start, end);
                state.out.extend_from_slice(&s.as_bytes());
            }
            v => {
                return Err(raise(format!(
                    "invalid replacement value (a {})",
                    lua_type_name(v)
                )))
            }
        }
        state.check_memory(lua, budget)?;
    }
    let mut m = Matcher::new(&src, &pat[state.pat_start..], meter);
    match state.next_match(&mut m)? {
        Some((start, end)) => {
            let mut captures = Vec::new();
            if table {
                // A table is indexed with the first capture only.
                captures.push(m.capture_value(lua, 0, start, end)?);
            } else {
                m.push_captures(lua, Some((start, end)), &mut captures)?;
            }
            let results = vec![
                Value::Boolean(true),
                captures[0].clone(),
                Value::Integer(captures.len() as i64),
            ];
            state.captures = captures;
            state.pending = Some((start, end));
            Ok(MultiValue::from_vec(results))
        }
        None => {
            let mut results = state.finish(lua)?.into_vec();
            results.insert(0, Value::Boolean(false));
            Ok(MultiValue::from_vec(results))
        }
    }
}

impl GsubState {
    /// Lua 5.4's gsub loop: finds the next match that is not an empty one right where the
    /// previous match ended.
    fn next_match(&mut self, m: &mut Matcher) -> Result<Option<(usize, usize)>, Fail> {
        loop {
            if self.done || self.count >= self.max {
                return Ok(None);
            }
            // An anchored pattern gets one try.
            self.done = self.anchor;
            let start = self.pos;
            match m.match_at(start)? {
                Some(end) if Some(end) != self.last => {
                    self.count += 1;
                    self.pos = end;
                    self.last = Some(end);
                    return Ok(Some((start, end)));
                }
                _ if start < m.src.len() => self.pos += 1,
                _ => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
    }

    /// Starts replacing the match `start..end`: the subject up to it goes into the result,
    /// and the replacement is to follow.
    fn replace(&mut self, src: &[u8], start: usize, end: usize) {
        self.out.extend_from_slice(&src[self.copied..start]);
        self.copied = end;
        self.changed = true;
    }

    fn check_memory(&mut self, lua: &Lua, budget: &Budget) -> Result<(), Fail> {
        if self.out.len() >= self.check_at {
            budget.check_memory(lua, self.out.capacity())?;
            self.check_at = self.out.len() + (1 << 16);
        }
        Ok(())
    }

    /// The result string and the number of matches.
    fn finish(&mut self, lua: &Lua) -> Result<MultiValue, Fail> {
        let result = if self.changed {
            let src = self.src.as_bytes();
            self.out.extend_from_slice(&src[self.copied..]);
            lua.create_string(&self.out)?
        } else {
            self.src.clone()
        };
        Ok(MultiValue::from_vec(vec![
            Value::String(result),
            Value::Integer(self.count),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_positions_follow_lua() {
        assert_eq!(start_index(1, 3), Some(0));
        assert_eq!(start_index(0, 3), Some(0));
        assert_eq!(start_index(-1, 3), Some(2));
        assert_eq!(start_index(-3, 3), Some(0));
        assert_eq!(start_index(-4, 3), Some(0));
        assert_eq!(start_index(i64::MIN, 3), Some(0));
        assert_eq!(start_index(4, 3), Some(3));
        assert_eq!(start_index(5, 3), None);
        assert_eq!(start_index(i64::MAX, 3), None);
    }

    #[test]
    fn plain_search_charges_for_what_it_scans() {
        let mut meter = Meter {
            steps: 0,
            allowance: u64::MAX,
        };
        assert_eq!(
            plain_find(&mut meter, b"abcabd", b"abd").ok(),
            Some(Some(3))
        );
        assert_eq!(plain_find(&mut meter, b"abc", b"").ok(), Some(Some(0)));
        assert_eq!(plain_find(&mut meter, b"ab", b"abc").ok(), Some(None));
        assert!(meter.steps > 0);
        let hay = "a".repeat(10_000);
        let mut meter = Meter {
            steps: 0,
            allowance: 1000,
        };
        assert!(matches!(
            plain_find(&mut meter, hay.as_bytes(), b"aab"),
            Err(Fail::Budget)
        ));
    }
}
