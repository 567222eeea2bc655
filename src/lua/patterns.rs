//! `string.find`, `string.match`, `string.gmatch` and `string.gsub` for the sandbox, with Lua
//! patterns that charge every step to the instruction budget.
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
//! position of their own to an `error(message, 2)` raised by a replacement function.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;

use mlua::{ChunkMode, LightUserData, Lua, MultiValue, Table, Value, Variadic};

/// Lua's LUA_MAXCAPTURES.
const MAX_CAPTURES: usize = 32;
/// Lua's MAXCCALLS: how deeply a match may nest before "pattern too complex".
const MAX_DEPTH: u32 = 200;
/// Bytes that make `string.find` treat its pattern as a pattern rather than plain text.
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// The sandbox's limits and the counter it shares with the instruction hook.
#[derive(Clone)]
pub(super) struct Budget {
    pub(super) used: Rc<Cell<u64>>,
    pub(super) stopped: Rc<Cell<bool>>,
    pub(super) instructions: u64,
    pub(super) memory: usize,
}

/// Steps taken by one call of a primitive, and how many it may take.
struct Meter {
    steps: u64,
    allowance: u64,
}

impl Meter {
    #[inline]
    fn charge(&mut self, steps: u64) -> Result<(), Fail> {
        self.steps += steps;
        if self.steps > self.allowance {
            Err(Fail::Budget)
        } else {
            Ok(())
        }
    }
}

/// Why a primitive did not return its results.
enum Fail {
    /// An error Lua raises at the caller (a bad argument, a malformed pattern); the wrapper
    /// raises the message.
    Raise(String),
    /// The instruction budget ran out.
    Budget,
    /// Lua itself failed (out of memory, usually).
    Lua(mlua::Error),
}

impl From<mlua::Error> for Fail {
    fn from(e: mlua::Error) -> Fail {
        Fail::Lua(e)
    }
}

fn raise(message: impl Into<String>) -> Fail {
    Fail::Raise(message.into())
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
local string, ERR, find, match, gmatch, gsub = ...
local error, select = error, select

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
  if more == ERR then error(a, 2) end
  return a, b
end
"#;

/// Replaces `string.find`, `string.match`, `string.gmatch` and `string.gsub` with versions
/// that charge their steps to `budget`.
pub(super) fn install(lua: &Lua, budget: Budget) -> mlua::Result<()> {
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
    // Stripped of line information, the wrappers look like C functions to `error(m, 2)`.
    let source = lua
        .load(WRAPPERS)
        .set_name("=savechain patterns")
        .set_mode(ChunkMode::Text)
        .into_function()?;
    let stripped = source.dump(true);
    lua.load(&stripped[..])
        .set_name("=?")
        .set_mode(ChunkMode::Binary)
        .call::<()>((
            lua.globals().get::<Table>("string")?,
            error_tag(),
            find,
            match_,
            gmatch,
            gsub,
        ))
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
    /// The result so far.
    out: Vec<u8>,
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
    let mut state = GsubState {
        src,
        pat,
        pat_start: usize::from(anchor),
        anchor,
        pos: 0,
        last: None,
        count: 0,
        max,
        done: false,
        out: Vec::new(),
        check_at: 1 << 16,
        pending: None,
        captures: Vec::new(),
    };
    let table = match repl {
        Repl::Text(repl) => {
            let (s, p) = (state.src.clone(), state.pat.clone());
            let (src, pat, repl) = (s.as_bytes(), p.as_bytes(), repl.as_bytes());
            let pieces = parse_replacement(&repl);
            let mut m = Matcher::new(&src, &pat[state.pat_start..], meter);
            while let Some((start, end)) = state.next_match(&mut m)? {
                for piece in &pieces {
                    match *piece {
                        Piece::Text(a, b) => state.out.extend_from_slice(&repl[a..b]),
                        Piece::Whole => state.out.extend_from_slice(&src[start..end]),
                        Piece::Capture(i) => match m.get_capture(i, start, end)? {
                            Cap::Text(a, b) => state.out.extend_from_slice(&src[a..b]),
                            Cap::Position(at) => {
                                state.out.extend_from_slice(at.to_string().as_bytes())
                            }
                        },
                        Piece::Invalid => {
                            return Err(raise("invalid use of '%' in replacement string"))
                        }
                    }
                }
                state.check_memory(lua, budget)?;
            }
            let mut results = state.finish(lua)?.into_vec();
            results.insert(0, Value::Boolean(false));
            return Ok(MultiValue::from_vec(results));
        }
        Repl::Table => true,
        Repl::Function => false,
    };
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
            Value::Nil | Value::Boolean(false) => state.out.extend_from_slice(&src[start..end]),
            Value::String(s) => state.out.extend_from_slice(&s.as_bytes()),
            v @ (Value::Integer(_) | Value::Number(_)) => {
                let s = lua.coerce_string(v.clone())?.expect("numbers convert");
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
    /// previous match ended, copying the bytes it skips.
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
                _ if start < m.src.len() => {
                    self.out.push(m.src[start]);
                    self.pos += 1;
                }
                _ => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
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
        let src = self.src.as_bytes();
        self.out.extend_from_slice(&src[self.pos..]);
        let result = lua.create_string(&self.out)?;
        Ok(MultiValue::from_vec(vec![
            Value::String(result),
            Value::Integer(self.count),
        ]))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CapLen {
    /// Opened but not yet closed.
    Open,
    /// A position capture, `()`.
    Position,
    Len(usize),
}

#[derive(Clone, Copy)]
struct Capture {
    start: usize,
    len: CapLen,
}

/// A capture's value.
enum Cap {
    /// Bytes `start..end` of the subject.
    Text(usize, usize),
    /// A position, from 1.
    Position(usize),
}

/// A backtracking matcher over bytes, in the order Lua's matcher tries alternatives.
struct Matcher<'a> {
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    captures: [Capture; MAX_CAPTURES],
    depth: u32,
    meter: &'a mut Meter,
}

impl<'a> Matcher<'a> {
    fn new(src: &'a [u8], pat: &'a [u8], meter: &'a mut Meter) -> Matcher<'a> {
        Matcher {
            src,
            pat,
            level: 0,
            captures: [Capture {
                start: 0,
                len: CapLen::Open,
            }; MAX_CAPTURES],
            depth: MAX_DEPTH,
            meter,
        }
    }

    /// Matches the whole pattern at `s`, afresh; returns where the match ends.
    fn match_at(&mut self, s: usize) -> Result<Option<usize>, Fail> {
        self.level = 0;
        self.depth = MAX_DEPTH;
        self.do_match(s, 0)
    }

    /// The pattern byte at `p`, or 0 past its end, where Lua reads the terminating NUL.
    #[inline]
    fn pat_at(&self, p: usize) -> u8 {
        self.pat.get(p).copied().unwrap_or(0)
    }

    #[inline]
    fn src_at(&self, s: usize) -> u8 {
        self.src.get(s).copied().unwrap_or(0)
    }

    fn do_match(&mut self, s: usize, p: usize) -> Result<Option<usize>, Fail> {
        if self.depth == 0 {
            return Err(raise("pattern too complex"));
        }
        self.depth -= 1;
        self.meter.charge(1)?;
        let result = self.match_items(s, p);
        self.depth += 1;
        result
    }

    /// Matches pattern items from `p` on; loops where a recursive call would be a tail call.
    fn match_items(&mut self, mut s: usize, mut p: usize) -> Result<Option<usize>, Fail> {
        loop {
            if p == self.pat.len() {
                return Ok(Some(s));
            }
            match self.pat[p] {
                b'(' => {
                    return if self.pat_at(p + 1) == b')' {
                        self.start_capture(s, p + 2, CapLen::Position)
                    } else {
                        self.start_capture(s, p + 1, CapLen::Open)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == self.pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                b'%' if self.pat_at(p + 1) == b'b' => match self.match_balance(s, p + 2)? {
                    Some(end) => {
                        s = end;
                        p += 4;
                        continue;
                    }
                    None => return Ok(None),
                },
                b'%' if self.pat_at(p + 1) == b'f' => {
                    p += 2;
                    if self.pat_at(p) != b'[' {
                        return Err(raise("missing '[' after '%f' in pattern"));
                    }
                    let ep = self.class_end(p)?;
                    let previous = if s == 0 { 0 } else { self.src[s - 1] };
                    // At the end of the subject Lua reads the terminating NUL.
                    let current = self.src_at(s);
                    self.meter.charge(1 + (ep - p) as u64 / 8)?;
                    if !self.in_set(previous, p, ep - 1) && self.in_set(current, p, ep - 1) {
                        p = ep;
                        continue;
                    }
                    return Ok(None);
                }
                b'%' if self.pat_at(p + 1).is_ascii_digit() => {
                    match self.match_capture(s, self.pat[p + 1])? {
                        Some(end) => {
                            s = end;
                            p += 2;
                            continue;
                        }
                        None => return Ok(None),
                    }
                }
                _ => {}
            }
            // A single-character class, possibly with a quantifier.
            let ep = self.class_end(p)?;
            let quantifier = self.pat_at(ep);
            if !self.single_match(s, p, ep)? {
                if matches!(quantifier, b'*' | b'?' | b'-') {
                    // Zero repetitions are fine.
                    p = ep + 1;
                    continue;
                }
                return Ok(None);
            }
            match quantifier {
                b'?' => {
                    if let Some(end) = self.do_match(s + 1, ep + 1)? {
                        return Ok(Some(end));
                    }
                    p = ep + 1;
                }
                b'+' => return self.max_expand(s + 1, p, ep),
                b'*' => return self.max_expand(s, p, ep),
                b'-' => return self.min_expand(s, p, ep),
                _ => {
                    s += 1;
                    p = ep;
                }
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, len: CapLen) -> Result<Option<usize>, Fail> {
        if self.level >= MAX_CAPTURES {
            return Err(raise("too many captures"));
        }
        self.captures[self.level] = Capture { start: s, len };
        self.level += 1;
        let result = self.do_match(s, p)?;
        if result.is_none() {
            self.level -= 1;
        }
        Ok(result)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Result<Option<usize>, Fail> {
        let Some(l) = (0..self.level)
            .rev()
            .find(|&l| self.captures[l].len == CapLen::Open)
        else {
            return Err(raise("invalid pattern capture"));
        };
        self.captures[l].len = CapLen::Len(s - self.captures[l].start);
        let result = self.do_match(s, p)?;
        if result.is_none() {
            self.captures[l].len = CapLen::Open;
        }
        Ok(result)
    }

    /// A back-reference `%1`..`%9` (and the invalid `%0`).
    fn match_capture(&mut self, s: usize, digit: u8) -> Result<Option<usize>, Fail> {
        let l = i32::from(digit) - i32::from(b'1');
        if l < 0 || l as usize >= self.level || self.captures[l as usize].len == CapLen::Open {
            return Err(raise(format!("invalid capture index %{}", l + 1)));
        }
        let capture = self.captures[l as usize];
        let CapLen::Len(len) = capture.len else {
            // A position capture never matches text.
            return Ok(None);
        };
        self.meter.charge(1 + len as u64 / 16)?;
        let matches = self.src.len() - s >= len
            && self.src[capture.start..capture.start + len] == self.src[s..s + len];
        Ok(matches.then_some(s + len))
    }

    /// `%bxy` with `p` at `x`.
    fn match_balance(&mut self, s: usize, p: usize) -> Result<Option<usize>, Fail> {
        if p + 1 >= self.pat.len() {
            return Err(raise("malformed pattern (missing arguments to '%b')"));
        }
        self.meter.charge(1)?;
        if self.src_at(s) != self.pat[p] {
            return Ok(None);
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        let mut depth = 1;
        for i in s + 1..self.src.len() {
            self.meter.charge(1)?;
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
        }
        Ok(None)
    }

    /// Where the single-character class at `p` ends.
    fn class_end(&mut self, p: usize) -> Result<usize, Fail> {
        let start = p;
        let mut p = p;
        let c = self.pat[p];
        p += 1;
        match c {
            b'%' => {
                if p >= self.pat.len() {
                    return Err(raise("malformed pattern (ends with '%')"));
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.pat_at(p) == b'^' {
                    p += 1;
                }
                // The first byte of a set is never its end, so `[]]` is the set of ']'.
                loop {
                    if p >= self.pat.len() {
                        return Err(raise("malformed pattern (missing ']')"));
                    }
                    let c = self.pat[p];
                    p += 1;
                    if c == b'%' && p < self.pat.len() {
                        p += 1;
                    }
                    if self.pat_at(p) == b']' {
                        // Scanning a long set is work too.
                        self.meter.charge((p - start) as u64 / 16)?;
                        return Ok(p + 1);
                    }
                }
            }
            _ => Ok(p),
        }
    }

    /// Whether the subject byte at `s` matches the class `p..ep`.
    #[inline]
    fn single_match(&mut self, s: usize, p: usize, ep: usize) -> Result<bool, Fail> {
        self.meter.charge(1)?;
        let Some(&c) = self.src.get(s) else {
            return Ok(false);
        };
        Ok(match self.pat[p] {
            b'.' => true,
            b'%' => class_matches(c, self.pat[p + 1]),
            b'[' => {
                self.meter.charge((ep - p) as u64 / 16)?;
                self.in_set(c, p, ep - 1)
            }
            pc => pc == c,
        })
    }

    /// Whether `c` is in the set `[...]` from `p` (at '[') to `end` (at ']').
    fn in_set(&self, c: u8, p: usize, end: usize) -> bool {
        let pat = self.pat;
        let mut p = p;
        let mut found = true;
        if pat[p + 1] == b'^' {
            found = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= end {
                return !found;
            }
            if pat[p] == b'%' {
                p += 1;
                if class_matches(c, pat[p]) {
                    return found;
                }
            } else if pat[p + 1] == b'-' && p + 2 < end {
                p += 2;
                if pat[p - 2] <= c && c <= pat[p] {
                    return found;
                }
            } else if pat[p] == c {
                return found;
            }
        }
    }

    /// The longest run of the class `p..ep` from `s`, then shorter ones, until the rest matches.
    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Result<Option<usize>, Fail> {
        let mut i = 0;
        while self.single_match(s + i, p, ep)? {
            i += 1;
        }
        loop {
            if let Some(end) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(end));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    /// The shortest run of the class `p..ep` from `s` after which the rest matches.
    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Result<Option<usize>, Fail> {
        loop {
            if let Some(end) = self.do_match(s, ep + 1)? {
                return Ok(Some(end));
            }
            if self.single_match(s, p, ep)? {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    /// Capture `i` of a match of `start..end`; without captures, `%1` is the whole match.
    fn get_capture(&self, i: usize, start: usize, end: usize) -> Result<Cap, Fail> {
        if i >= self.level {
            if i != 0 {
                return Err(raise(format!("invalid capture index %{}", i + 1)));
            }
            return Ok(Cap::Text(start, end));
        }
        let capture = self.captures[i];
        match capture.len {
            CapLen::Open => Err(raise("unfinished capture")),
            CapLen::Position => Ok(Cap::Position(capture.start + 1)),
            CapLen::Len(len) => Ok(Cap::Text(capture.start, capture.start + len)),
        }
    }

    fn capture_value(&self, lua: &Lua, i: usize, start: usize, end: usize) -> Result<Value, Fail> {
        Ok(match self.get_capture(i, start, end)? {
            Cap::Text(a, b) => Value::String(lua.create_string(&self.src[a..b])?),
            Cap::Position(at) => Value::Integer(at as i64),
        })
    }

    /// The captures of the last match, or the whole match `whole` if it has none (`find`
    /// passes `None`: it returns only captures).
    fn push_captures(
        &self,
        lua: &Lua,
        whole: Option<(usize, usize)>,
        out: &mut Vec<Value>,
    ) -> Result<(), Fail> {
        let n = if self.level == 0 && whole.is_some() {
            1
        } else {
            self.level
        };
        let (start, end) = whole.unwrap_or((0, 0));
        for i in 0..n {
            out.push(self.capture_value(lua, i, start, end)?);
        }
        Ok(())
    }
}

/// Whether `c` is in the class `%cl`, in the C locale.
fn class_matches(c: u8, cl: u8) -> bool {
    let result = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'g' => c.is_ascii_graphic(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        // C's isspace also counts the vertical tab, which Rust's is_ascii_whitespace does not.
        b's' => c == b' ' || (b'\t'..=b'\r').contains(&c),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return cl == c,
    };
    if cl.is_ascii_uppercase() {
        !result
    } else {
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps to search all of `src` for `pat` (no captures, no errors), or `None` if
    /// `allowance` ran out.
    fn search_steps(src: &[u8], pat: &[u8], allowance: u64) -> Option<u64> {
        let mut meter = Meter {
            steps: 0,
            allowance,
        };
        let mut m = Matcher::new(src, pat, &mut meter);
        for s in 0..=src.len() {
            match m.match_at(s) {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(Fail::Budget) => return None,
                Err(_) => panic!("unexpected error"),
            }
        }
        Some(meter.steps)
    }

    #[test]
    fn steps_grow_with_the_backtracking() {
        let text = "word ".repeat(200);
        let linear = search_steps(text.as_bytes(), b"%d", u64::MAX).unwrap();
        assert!(linear <= 3 * text.len() as u64, "{linear}");
        let a = "a".repeat(200);
        let quadratic = search_steps(a.as_bytes(), b".-b", u64::MAX).unwrap();
        assert!(quadratic >= 200 * 200 / 2, "{quadratic}");
        let cubic = search_steps(a.as_bytes(), b".-.-b", u64::MAX).unwrap();
        assert!(cubic >= 200 * 200 * 200 / 6, "{cubic}");
        assert_eq!(search_steps(a.as_bytes(), b".-.-b", cubic / 2), None);
    }

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
