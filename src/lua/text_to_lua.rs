//! Save text straight to Lua values, with no document tree in between: the text reader
//! writes a flat tape of what it reads (strings pointing into the text), and one pass over
//! the tape makes the Lua tables, each created at its final size.
//!
//! The tape keeps Lua's error handling safe: Lua raises errors (out of memory) by longjmp,
//! which must cross no Rust frame that owns anything, and the pass over the tape owns
//! nothing, while the reader, which owns strings it unescapes, calls Lua only through
//! mlua's protected API (to look a class up).
//!
//! What the Lua tables of the tags must also be (no key twice in a keyed table, no shared
//! table defined twice, no reference to one never defined, no class that is not
//! registered) is checked on the tape, as each tag is read, and refused once the whole text
//! is, at the tag's content: the place the one-file library names.

use std::borrow::Cow;
use std::ffi::c_int;
use std::ptr;
use std::vec::Drain;

use mlua::{ffi, Lua};
use rustc_hash::FxHashSet;

use super::metatables::Metatables;
use super::to_lua::{self, Builder};
use crate::error::{Error, ErrorKind, Result};
use crate::path::Segment;
use crate::text::build::Build;
use crate::text::reader::{utf8, Failure, Reader};
use crate::value::{Key, Map, Table, Value};

/// One step of making the Lua values, in text order; containers come before their contents.
#[derive(Clone, Copy, Debug)]
enum Op {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    /// A string standing in the text, unescaped as it is: its offset and length.
    Text(u32, u32),
    /// A string with escapes, kept in `Tape::strings`.
    Owned(u32),
    /// A byte string, kept in `Tape::bytes`.
    Bytes(u32),
    /// An array of so many elements, which follow.
    Array(u32),
    /// An object of so many members, which follow as key and value.
    Object(u32),
    /// The escape `["a", content]`: the letter follows, then the content, an array.
    Escape,
    /// A Lua table spelled by a tag (`t`, `s`, `r`, `c`), kept as a document value in
    /// `Tape::values`: rare, and checked as the tree checks it.
    Value(u32),
}

/// What the reader found, as a tape of [`Op`]s.
struct Tape<'a> {
    text: &'a str,
    ops: Vec<Op>,
    strings: Vec<String>,
    bytes: Vec<Vec<u8>>,
    values: Vec<Value>,
    /// Where the header of each open array or object stands, innermost last.
    open: Vec<usize>,
    /// Where the keys of the objects being read stand, innermost last.
    keys: Vec<usize>,
    /// Where the keys of each open object start in `keys`.
    key_bases: Vec<usize>,
    /// The registered classes.
    classes: &'a mlua::Table,
    /// The ids of the shared tables defined so far.
    defined: FxHashSet<u64>,
    /// The ids of the shared tables defined or referred to so far.
    met: FxHashSet<u64>,
    /// Each reference met before its table was, and where its content starts.
    pending: Vec<(u64, usize)>,
    /// The first tag refused by what its Lua table must be, and why: refused once the
    /// whole text is read, so that an error of the text itself comes first.
    later: Option<(usize, String)>,
}

impl<'a> Tape<'a> {
    fn new(text: &'a str, classes: &'a mlua::Table) -> Tape<'a> {
        Tape {
            classes,
            defined: FxHashSet::default(),
            met: FxHashSet::default(),
            pending: Vec::new(),
            later: None,
            text,
            ops: Vec::with_capacity(text.len() / 8),
            strings: Vec::new(),
            bytes: Vec::new(),
            values: Vec::new(),
            open: Vec::new(),
            keys: Vec::new(),
            key_bases: Vec::new(),
        }
    }

    fn string_op(&mut self, s: Cow<'a, str>) -> Op {
        match s {
            Cow::Borrowed(s) => {
                let offset = s.as_ptr() as usize - self.text.as_ptr() as usize;
                Op::Text(offset as u32, s.len() as u32)
            }
            Cow::Owned(s) => {
                self.strings.push(s);
                Op::Owned(self.strings.len() as u32 - 1)
            }
        }
    }

    fn string_at(&self, op: Op) -> &str {
        match op {
            Op::Text(offset, len) => &self.text[offset as usize..(offset + len) as usize],
            Op::Owned(i) => &self.strings[i as usize],
            _ => unreachable!("a key is a string"),
        }
    }

    /// The part of the tape from `at` as a document value, and where it ends.
    fn value_at(&self, at: usize) -> (Value, usize) {
        let next = at + 1;
        match self.ops[at] {
            Op::Null => (Value::Null, next),
            Op::Bool(b) => (Value::Bool(b), next),
            Op::Int(i) => (Value::Int(i), next),
            Op::UInt(u) => (Value::UInt(u), next),
            Op::Double(d) => (Value::Double(d), next),
            op @ (Op::Text(..) | Op::Owned(_)) => (Value::String(self.string_at(op).into()), next),
            Op::Bytes(i) => (Value::Bytes(self.bytes[i as usize].clone()), next),
            Op::Value(i) => (self.values[i as usize].clone(), next),
            Op::Array(n) => {
                let mut at = next;
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let (item, after) = self.value_at(at);
                    items.push(item);
                    at = after;
                }
                (Value::Array(items), at)
            }
            Op::Object(n) => {
                let mut at = next;
                let mut entries = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let key = Key::from(self.string_at(self.ops[at]));
                    let (item, after) = self.value_at(at + 1);
                    entries.push((key, item));
                    at = after;
                }
                let map = Map::from_entries(entries).expect("keys checked when read");
                (Value::Object(map), at)
            }
            // The letter, then the content.
            Op::Escape => self.value_at(next + 1),
        }
    }
}

impl<'a> Build<'a> for Tape<'a> {
    type Value = ();
    type Key = ();

    fn null(&mut self) {
        self.ops.push(Op::Null);
    }

    fn bool(&mut self, b: bool) {
        self.ops.push(Op::Bool(b));
    }

    fn int(&mut self, i: i64) {
        self.ops.push(Op::Int(i));
    }

    fn uint(&mut self, u: u64) {
        self.ops.push(Op::UInt(u));
    }

    fn double(&mut self, d: f64) {
        self.ops.push(Op::Double(d));
    }

    fn string(&mut self, s: Cow<'a, str>) {
        let op = self.string_op(s);
        self.ops.push(op);
    }

    fn bytes(&mut self, b: Vec<u8>) {
        self.bytes.push(b);
        self.ops.push(Op::Bytes(self.bytes.len() as u32 - 1));
    }

    fn key(&mut self, k: Cow<'a, str>) {
        self.keys.push(self.ops.len());
        let op = self.string_op(k);
        self.ops.push(op);
    }

    fn begin_array(&mut self) {
        self.open.push(self.ops.len());
        self.ops.push(Op::Array(0));
    }

    fn begin_object(&mut self) {
        self.open.push(self.ops.len());
        self.key_bases.push(self.keys.len());
        self.ops.push(Op::Object(0));
    }

    fn array(&mut self, items: Drain<'_, ()>) {
        let start = self.open.pop().expect("an array was begun");
        self.ops[start] = Op::Array(items.len() as u32);
    }

    fn object(&mut self, members: Drain<'_, ((), ())>) -> std::result::Result<(), (usize, usize)> {
        let start = self.open.pop().expect("an object was begun");
        let base = self.key_bases.pop().expect("an object was begun");
        self.ops[start] = Op::Object(members.len() as u32);
        let keys: Vec<&str> = self.keys[base..]
            .iter()
            .map(|&at| self.string_at(self.ops[at]))
            .collect();
        let repeated = if keys.windows(2).all(|w| w[0] < w[1]) {
            None
        } else {
            // As `Map::from_entries` finds it: the first pair with the same key.
            let mut order: Vec<usize> = (0..keys.len()).collect();
            order.sort_by(|&a, &b| keys[a].cmp(keys[b]).then(a.cmp(&b)));
            order
                .windows(2)
                .find(|w| keys[w[0]] == keys[w[1]])
                .map(|w| (w[0], w[1]))
        };
        self.keys.truncate(base);
        match repeated {
            Some(pair) => Err(pair),
            None => Ok(()),
        }
    }

    fn table(&mut self, tag: u8, _content: (), at: usize) -> std::result::Result<(), String> {
        let start = self.open.pop().expect("the tag's array was begun");
        // The tag's array: its header, the letter, then the content array.
        let Value::Array(items) = self.value_at(start + 2).0 else {
            unreachable!("the reader gives tables arrays")
        };
        let table = Table::from_tag(tag, items)?;
        self.check(&table, at)?;
        self.ops.truncate(start);
        self.values.push(Value::from(table));
        self.ops.push(Op::Value(self.values.len() as u32 - 1));
        Ok(())
    }

    fn drop_array(&mut self) {
        let start = self.open.pop().expect("an array was begun");
        self.ops.truncate(start);
    }

    fn unescape(&mut self, _content: ()) {
        let start = self.open.pop().expect("the escape's array was begun");
        self.ops[start] = Op::Escape;
    }
}

impl Tape<'_> {
    /// Checks what the Lua table of a tag whose content starts at `at` must also be, in the
    /// order the one-file library does: each tag as it closes.
    fn check(&mut self, table: &Table, at: usize) -> std::result::Result<(), String> {
        match table {
            Table::Keyed(entries) if entries.len() > 1 && self.later.is_none() => {
                let mut keys = FxHashSet::default();
                let repeated = entries
                    .iter()
                    .map(|(key, _)| key)
                    .find(|key| lua_key(key).is_some_and(|k| !keys.insert(k)));
                if let Some(key) = repeated {
                    self.later = Some((
                        at,
                        format!("the key {key} appears twice in this keyed table"),
                    ));
                }
            }
            Table::Shared { id, .. } => {
                self.met.insert(*id);
                if !self.defined.insert(*id) && self.later.is_none() {
                    self.later = Some((at, format!("shared table {id} is defined twice")));
                }
            }
            Table::Ref(id) if self.met.insert(*id) => self.pending.push((*id, at)),
            Table::Class { name, .. } if self.later.is_none() => {
                let registered: mlua::Value = self
                    .classes
                    .raw_get(name.as_str())
                    .map_err(|e| e.to_string())?;
                if !registered.is_table() {
                    self.later = Some((at, format!(
                        "class {name:?} is not registered (register its metatable with savechain.register_class)"
                    )));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The first tag refused once the whole text is read, and why: one checked as it
    /// closed, else the first reference to a shared table never defined.
    fn refused(&self) -> Option<(usize, String)> {
        if let Some(later) = &self.later {
            return Some(later.clone());
        }
        let (id, at) = self
            .pending
            .iter()
            .find(|(id, _)| !self.defined.contains(id))?;
        Some((
            *at,
            format!("reference [\"r\", [{id}]] to a shared table that is never defined (no [\"s\", [{id}, ...]])"),
        ))
    }
}

/// What a key of a keyed table is to Lua's raw equality, as far as it can be told without
/// making it: `None` for a table made anew (never equal to another key).
#[derive(PartialEq, Eq, Hash)]
enum LuaKey<'v> {
    Bool(bool),
    Int(i64),
    /// A double that is no integer, by its bits (NaN is refused when read).
    Float(u64),
    String(&'v [u8]),
    /// A shared table, by its id: its definition and its references are one table.
    Shared(u64),
}

fn lua_key(key: &Value) -> Option<LuaKey<'_>> {
    // Below 2^63 in magnitude: what Lua 5.4 makes an integer key of a float key.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    Some(match key {
        Value::Bool(b) => LuaKey::Bool(*b),
        Value::Int(i) => LuaKey::Int(*i),
        Value::Double(d) if d.fract() == 0.0 && (-LIMIT..LIMIT).contains(d) => {
            LuaKey::Int(*d as i64)
        }
        Value::Double(d) => LuaKey::Float(d.to_bits()),
        Value::String(s) => LuaKey::String(s.as_bytes()),
        // Byte strings that read as text are boxed, each a table of its own.
        Value::Bytes(b) if std::str::from_utf8(b).is_err() => LuaKey::String(b),
        Value::Table(table) => match &**table {
            Table::Shared { id, .. } | Table::Ref(id) => LuaKey::Shared(*id),
            _ => return None,
        },
        _ => return None,
    })
}

/// Builds nothing, and refuses the tag whose content starts at `at`: reading a text again
/// with it gives the refusal of [`Tape::refused`] its path.
struct Refuse {
    at: usize,
    message: String,
}

impl<'a> Build<'a> for Refuse {
    type Value = ();
    type Key = ();

    fn null(&mut self) {}
    fn bool(&mut self, _: bool) {}
    fn int(&mut self, _: i64) {}
    fn uint(&mut self, _: u64) {}
    fn double(&mut self, _: f64) {}
    fn string(&mut self, _: Cow<'a, str>) {}
    fn bytes(&mut self, _: Vec<u8>) {}
    fn key(&mut self, _: Cow<'a, str>) {}
    fn array(&mut self, _: Drain<'_, ()>) {}

    fn object(&mut self, _: Drain<'_, ((), ())>) -> std::result::Result<(), (usize, usize)> {
        Ok(())
    }

    fn table(&mut self, _: u8, _: (), at: usize) -> std::result::Result<(), String> {
        match at == self.at {
            true => Err(std::mem::take(&mut self.message)),
            false => Ok(()),
        }
    }
}

/// The error of the tag whose content starts at `at` in `text`, with its path.
fn refusal(text: &str, at: usize, message: String) -> Error {
    let mut reader = Reader::new(text, Refuse { at, message });
    let failure = match reader.value() {
        Err(failure) => failure,
        // The tag is met again (the text is the same): should it not be, the error keeps
        // its place without its path.
        Ok(()) => {
            let message = std::mem::take(&mut reader.builder.message);
            Failure::at(ErrorKind::Value, at, message)
        }
    };
    reader.error(failure)
}

/// Reads a whole JSON text, plain or compressed, straight into Lua values, refusing
/// arrays and objects nested more than `max_depth` deep (from 1 to `text::MAX_DEPTH`).
pub(crate) fn read(
    lua: &Lua,
    tables: &Metatables,
    bytes: &[u8],
    max_depth: usize,
) -> Result<mlua::Value> {
    let plain = crate::compress::decompress(bytes, crate::compress::DEFAULT_LIMIT)?;
    let bytes = plain.as_ref();
    let text = utf8(bytes)?;
    if u32::try_from(text.len()).is_err() {
        // Offsets on the tape are 32 bits: a text of 4 GiB goes through a tree.
        let value = crate::text::from_slice_with_max_depth(bytes, max_depth)?;
        return to_lua::convert(lua, tables, &value);
    }
    let mut reader = Reader::new(text, Tape::new(text, &tables.classes)).with_max_depth(max_depth);
    reader.value().map_err(|e| reader.error(e))?;
    reader.end().map_err(|e| reader.error(e))?;
    if let Some((at, message)) = reader.builder.refused() {
        return Err(refusal(text, at, message));
    }
    make(lua, tables, &reader.builder)
}

/// Makes the Lua values of a tape.
fn make(lua: &Lua, tables: &Metatables, tape: &Tape<'_>) -> Result<mlua::Value> {
    // SAFETY: `make_at` owns nothing: the tape is borrowed, the builder lives outside.
    to_lua::make_value(lua, tables, |l, builder| unsafe {
        make_at(l, tape, builder, 0, 0).map(|_| ())
    })
}

/// Pushes the value the tape spells from `at`; returns where it ends.
unsafe fn make_at(
    l: *mut ffi::lua_State,
    tape: &Tape<'_>,
    builder: &mut Builder,
    at: usize,
    depth: usize,
) -> std::result::Result<usize, ()> {
    let next = at + 1;
    match tape.ops[at] {
        Op::Null => ffi::lua_pushlightuserdata(l, ptr::null_mut()),
        Op::Bool(b) => ffi::lua_pushboolean(l, c_int::from(b)),
        Op::Int(i) => ffi::lua_pushinteger(l, i),
        Op::UInt(u) => builder.push_u64(l, u)?,
        Op::Double(d) => ffi::lua_pushnumber(l, d),
        op @ (Op::Text(..) | Op::Owned(_)) => to_lua::push_bytes(l, tape.string_at(op).as_bytes()),
        Op::Bytes(i) => builder.push_byte_string(l, &tape.bytes[i as usize])?,
        Op::Value(i) => builder.push(l, &tape.values[i as usize], depth)?,
        Op::Escape => return make_at(l, tape, builder, next + 1, depth),
        Op::Array(n) => {
            builder.enter(l, depth)?;
            ffi::lua_createtable(l, to_lua::clamp(n as usize), 0);
            let mut at = next;
            for i in 0..n as usize {
                let made = make_at(l, tape, builder, at, depth + 1);
                builder.within(made.map(|end| at = end), || Segment::Index(i))?;
                ffi::lua_rawseti(l, -2, i as i64 + 1);
            }
            if n == 0 {
                builder.mark_empty_array(l)?;
            }
            return Ok(at);
        }
        Op::Object(n) => {
            builder.enter(l, depth)?;
            ffi::lua_createtable(l, 0, to_lua::clamp(n as usize));
            let mut at = next;
            for _ in 0..n {
                let key = tape.string_at(tape.ops[at]);
                to_lua::push_bytes(l, key.as_bytes());
                let made = make_at(l, tape, builder, at + 1, depth + 1);
                builder.within(made.map(|end| at = end), || Segment::Key(key.to_string()))?;
                ffi::lua_rawset(l, -3);
            }
            return Ok(at);
        }
    }
    Ok(next)
}
