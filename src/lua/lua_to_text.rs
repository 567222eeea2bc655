//! Lua values straight to save text, with no document tree in between: what
//! `savechain.encode` and [`to_text`](super::to_text) write.
//!
//! The walk writes the shapes that make up nearly every saved state (scalars, the u64 and
//! bytes boxes, arrays, objects, keyed tables with scalar keys, class instances) through
//! the text writer's layout (`text/write.rs`). Anything else gives up: shared tables (they
//! need the whole graph numbered first), tables as keys, tables lent to a Lua step and not
//! yet filled, values that cannot be saved, nesting too deep. The caller then converts
//! through a tree (`from_lua.rs`, then the writer), which gives the same text, or the error
//! with its path; the property tests hold the two ways to the same bytes.

use std::ffi::{c_int, c_void};
use std::ptr;

use mlua::{ffi, Lua};
use rustc_hash::FxHashSet;

use super::from_lua;
use super::metatables::Metatables;
use super::order::key_order;
use super::raw::{self, as_text, lua_bytes};
use super::slots::{self, ARRAY_MT, BYTES_MT, CLASS_NAMES, LAZY_MT, U64_MT, VALUE};
use crate::error::Result;
use crate::text::tags::{is_tag, Shape};
use crate::text::write::{write_value, TooDeep, Writer, INLINE_NUMBERS};
use crate::text::Style;
use crate::value::Value;

/// The canonical text of a Lua value, as `from_lua` then the text writer would write it.
pub(crate) fn write(
    lua: &Lua,
    tables: &Metatables,
    value: &mlua::Value,
    style: Style,
) -> Result<Vec<u8>> {
    if let Some(text) = direct(lua, tables, value, style)? {
        return Ok(text);
    }
    let value = from_lua::convert(lua, tables, value)?;
    let mut text = Vec::new();
    write_value(&mut text, &value, style)?;
    Ok(text)
}

/// The text written straight from Lua, or `None` where the walk gave up.
fn direct(
    lua: &Lua,
    tables: &Metatables,
    value: &mlua::Value,
    style: Style,
) -> Result<Option<Vec<u8>>> {
    let mut text = Vec::new();
    let mut walk = Walk {
        copy_limit: tables.copy_limit,
        ..Walk::default()
    };
    let args = slots::args(tables, value.clone());
    // SAFETY: the walk only calls Lua functions that raise no errors (type queries,
    // `lua_next` over tables nobody modifies, raw gets, `lua_checkstack`, pushes of values
    // already in the state), so no Lua error unwinds through Rust frames.
    let ((), done) = unsafe {
        raw::on_stack(lua, args, |state| {
            let mut w = Writer::new(&mut text, style);
            let written = walk.value(&mut w, state, VALUE, 0);
            if written.is_ok() {
                w.finish();
            }
            ffi::lua_settop(state, 0);
            written.is_ok()
        })?
    };
    Ok(done.then_some(text))
}

/// The walk met something it leaves to the tree (see the module's documentation).
struct GiveUp;

impl From<TooDeep> for GiveUp {
    fn from(_: TooDeep) -> GiveUp {
        GiveUp
    }
}

type Step = std::result::Result<(), GiveUp>;

#[derive(Default)]
struct Walk<'w> {
    /// Every table written so far: one met again is shared, which the tree numbers.
    visited: FxHashSet<*const c_void>,
    /// The keys of the objects being written, each object's above its parent's, in walk
    /// order: Lua's strings, alive while the walk lasts (as `raw::lua_bytes` says), read
    /// once each rather than at each comparison of the sort and each use.
    key_stack: Vec<&'w [u8]>,
    /// The keys of the last object sorted, as Lua's strings in walk order, and the order
    /// sorting gave them (as in `from_lua.rs`: objects of one shape sort once).
    last_keys: Vec<*const u8>,
    last_order: Vec<u32>,
    /// [`Metatables::copy_limit`], for the text written.
    copy_limit: usize,
}

/// What kind of table the walk is writing.
enum Kind<'a> {
    Plain,
    /// Marked with `savechain.array`: empty, it is `[]` rather than `{}`.
    Array,
    /// An instance of the registered class of this name.
    Class(&'a str),
}

impl<'w> Walk<'w> {
    unsafe fn value(
        &mut self,
        w: &mut Writer,
        l: *mut ffi::lua_State,
        idx: c_int,
        depth: usize,
    ) -> Step {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TNIL => w.null(),
            ffi::LUA_TBOOLEAN => w.bool(ffi::lua_toboolean(l, idx) != 0),
            ffi::LUA_TNUMBER if ffi::lua_isinteger(l, idx) != 0 => {
                w.int(ffi::lua_tointegerx(l, idx, ptr::null_mut()))
            }
            ffi::LUA_TNUMBER => w.double(ffi::lua_tonumberx(l, idx, ptr::null_mut()), depth)?,
            ffi::LUA_TSTRING => {
                let bytes = lua_bytes(l, idx);
                match as_text(bytes) {
                    Some(s) => w.string(s),
                    None => w.bytes(bytes, depth)?,
                }
                // One string kept in many places is written for each: past the limit the
                // tree says why it stops.
                if w.written() > self.copy_limit {
                    return Err(GiveUp);
                }
            }
            ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, idx).is_null() => w.null(),
            ffi::LUA_TTABLE => self.table(w, l, idx, depth)?,
            _ => return Err(GiveUp),
        }
        Ok(())
    }

    unsafe fn table(
        &mut self,
        w: &mut Writer,
        l: *mut ffi::lua_State,
        idx: c_int,
        depth: usize,
    ) -> Step {
        if ffi::lua_checkstack(l, 8) == 0 {
            return Err(GiveUp);
        }
        let mut kind = Kind::Plain;
        if ffi::lua_getmetatable(l, idx) != 0 {
            if ffi::lua_rawequal(l, -1, U64_MT) != 0 {
                ffi::lua_pop(l, 1);
                let bits = u64_bits(l, idx).ok_or(GiveUp)?;
                w.uint(bits);
                return Ok(());
            }
            if ffi::lua_rawequal(l, -1, BYTES_MT) != 0 {
                ffi::lua_pop(l, 1);
                let written = match ffi::lua_rawgeti(l, idx, 1) {
                    ffi::LUA_TSTRING => w.bytes(lua_bytes(l, -1), depth).map_err(GiveUp::from),
                    _ => Err(GiveUp),
                };
                ffi::lua_pop(l, 1);
                return written;
            }
            if ffi::lua_rawequal(l, -1, LAZY_MT) != 0 {
                ffi::lua_pop(l, 1);
                return Err(GiveUp);
            }
            if ffi::lua_rawequal(l, -1, ARRAY_MT) != 0 {
                kind = Kind::Array;
                ffi::lua_pop(l, 1);
            } else {
                ffi::lua_rawget(l, CLASS_NAMES);
                // The name stays alive in the class registry while the walk lasts.
                let name = (ffi::lua_type(l, -1) == ffi::LUA_TSTRING)
                    .then(|| std::str::from_utf8(lua_bytes(l, -1)).ok())
                    .flatten();
                ffi::lua_pop(l, 1);
                kind = Kind::Class(name.ok_or(GiveUp)?);
            }
        }
        if !self.visited.insert(ffi::lua_topointer(l, idx)) {
            return Err(GiveUp);
        }
        match kind {
            Kind::Class(name) => {
                // The class's value is an array, an object or a keyed table, all of which
                // make `[name, value]` a tag when the name is one letter.
                let tag_like = matches!(name.as_bytes(), [b'a'..=b'z']);
                w.class(name, tag_like, depth, |w, depth| {
                    self.contents(w, l, idx, false, depth)
                })
            }
            Kind::Array => self.contents(w, l, idx, true, depth),
            Kind::Plain => self.contents(w, l, idx, false, depth),
        }
    }

    /// Writes what the table at `idx` holds, as an array, an object or a keyed table, as
    /// `from_lua.rs` decides between them.
    unsafe fn contents(
        &mut self,
        w: &mut Writer,
        l: *mut ffi::lua_State,
        idx: c_int,
        array: bool,
        depth: usize,
    ) -> Step {
        let base = ffi::lua_gettop(l);
        let start = self.key_stack.len();
        let keys = self.keys(l, idx)?;
        let written = if keys.len == 0 && array {
            w.array(0, false, false, depth, |_, _, _| Ok(()))
        } else if keys.len == 0 {
            w.object(0, depth, |_, _, _| Ok(()))
        } else if keys.sequence() {
            self.array(w, l, idx, keys.len, depth)
        } else if keys.all_text {
            self.object(w, l, idx, base, start, depth)
        } else {
            ffi::lua_settop(l, base);
            self.keyed(w, l, idx, depth)
        };
        ffi::lua_settop(l, base);
        self.key_stack.truncate(start);
        written
    }

    /// Walks the keys of the table at `idx`, leaving every key that is not an integer on
    /// the stack, in walk order, and says what they are; while they are all text, they
    /// also go on the key stack.
    unsafe fn keys(&mut self, l: *mut ffi::lua_State, idx: c_int) -> Result<Keys, GiveUp> {
        let mut keys = Keys {
            len: 0,
            all_int: true,
            max: 0,
            min: i64::MAX,
            all_text: true,
        };
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, idx) != 0 {
            ffi::lua_pop(l, 1);
            keys.len += 1;
            if ffi::lua_type(l, -1) == ffi::LUA_TNUMBER && ffi::lua_isinteger(l, -1) != 0 {
                let i = ffi::lua_tointegerx(l, -1, ptr::null_mut());
                keys.max = keys.max.max(i);
                keys.min = keys.min.min(i);
                keys.all_text = false;
                continue;
            }
            keys.all_int = false;
            if keys.all_text {
                let key = (ffi::lua_type(l, -1) == ffi::LUA_TSTRING)
                    .then(|| lua_bytes(l, -1))
                    .filter(|bytes| as_text(bytes).is_some());
                match key {
                    Some(key) => self.key_stack.push(key),
                    None => keys.all_text = false,
                }
            }
            // Kept on the stack for the object to write, and the walk goes on from a copy.
            if ffi::lua_checkstack(l, 3) == 0 {
                return Err(GiveUp);
            }
            ffi::lua_pushvalue(l, -1);
        }
        Ok(keys)
    }

    /// Writes the table at `idx`, whose keys are 1..=len, as an array.
    unsafe fn array(
        &mut self,
        w: &mut Writer,
        l: *mut ffi::lua_State,
        idx: c_int,
        len: usize,
        depth: usize,
    ) -> Step {
        let mut numbers = len <= INLINE_NUMBERS;
        let mut tag_like = false;
        if numbers {
            for i in 1..=len {
                ffi::lua_rawgeti(l, idx, i as i64);
                numbers &= matches!(shape(l, -1), Shape::Int | Shape::Double);
                ffi::lua_pop(l, 1);
            }
        }
        if len == 2 {
            ffi::lua_rawgeti(l, idx, 1);
            ffi::lua_rawgeti(l, idx, 2);
            tag_like = tag_like_pair(l, -2, -1);
            ffi::lua_pop(l, 2);
        }
        w.array(len, numbers, tag_like, depth, |w, i, depth| {
            ffi::lua_rawgeti(l, idx, i as i64 + 1);
            let written = self.value(w, l, ffi::lua_gettop(l), depth);
            ffi::lua_pop(l, 1);
            written
        })
    }

    /// Writes the table at `idx`, whose keys are UTF-8 strings standing on the stack above
    /// `base` in walk order, and on the key stack from `start`, as an object in key order.
    unsafe fn object(
        &mut self,
        w: &mut Writer,
        l: *mut ffi::lua_State,
        idx: c_int,
        base: c_int,
        start: usize,
        depth: usize,
    ) -> Step {
        let keys = &self.key_stack[start..];
        let len = keys.len();
        let same_shape = len == self.last_keys.len()
            && keys
                .iter()
                .zip(&self.last_keys)
                .all(|(k, &p)| k.as_ptr() == p);
        if !same_shape {
            self.last_order.clear();
            self.last_order.extend(0..len as u32);
            self.last_order
                .sort_unstable_by(|&a, &b| keys[a as usize].cmp(keys[b as usize]));
        }
        // Taken out while the members are written, since objects among them sort too; put
        // back after, so that the next object of this shape (a sibling) finds it.
        let mut order = std::mem::take(&mut self.last_order);
        self.last_keys.clear();
        // At the top level `meta` goes first (text/write.rs, FIRST_MEMBER); the order is
        // put back sorted for the objects of this shape that come after.
        let first = w.first_member_at(depth, order.iter().map(|&i| keys[i as usize]));
        if let Some(first) = first {
            order[..=first].rotate_right(1);
        }
        let written = w.object(len, depth, |w, i, depth| {
            let at = order[i] as usize;
            // Checked to be UTF-8 when the keys were walked.
            w.key(std::str::from_utf8_unchecked(self.key_stack[start + at]));
            ffi::lua_pushvalue(l, base + 1 + at as c_int);
            ffi::lua_rawget(l, idx);
            let written = self.value(w, l, ffi::lua_gettop(l), depth);
            ffi::lua_pop(l, 1);
            written
        });
        if let Some(first) = first {
            order[..=first].rotate_left(1);
        }
        self.last_keys.clear();
        self.last_keys.extend(
            self.key_stack[start..start + len]
                .iter()
                .map(|k| k.as_ptr()),
        );
        self.last_order = order;
        written
    }

    /// Writes the table at `idx` as a keyed table, its entries in the order of
    /// [`key_order`]; gives up on tables as keys, which the tree orders by their text.
    unsafe fn keyed(
        &mut self,
        w: &mut Writer,
        l: *mut ffi::lua_State,
        idx: c_int,
        depth: usize,
    ) -> Step {
        let mut entries: Vec<(Value, c_int)> = Vec::new();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, idx) != 0 {
            ffi::lua_pop(l, 1);
            let key = match ffi::lua_type(l, -1) {
                ffi::LUA_TNUMBER if ffi::lua_isinteger(l, -1) != 0 => {
                    Value::Int(ffi::lua_tointegerx(l, -1, ptr::null_mut()))
                }
                ffi::LUA_TNUMBER => Value::Double(ffi::lua_tonumberx(l, -1, ptr::null_mut())),
                ffi::LUA_TBOOLEAN => Value::Bool(ffi::lua_toboolean(l, -1) != 0),
                ffi::LUA_TSTRING => {
                    let bytes = lua_bytes(l, -1);
                    match std::str::from_utf8(bytes) {
                        Ok(s) => Value::String(s.to_owned()),
                        Err(_) => Value::Bytes(bytes.to_vec()),
                    }
                }
                // savechain.null as a key: refused, with the path, by the tree.
                _ => return Err(GiveUp),
            };
            if ffi::lua_checkstack(l, 3) == 0 {
                return Err(GiveUp);
            }
            ffi::lua_pushvalue(l, -1);
            entries.push((key, ffi::lua_gettop(l) - 1));
        }
        // Scalar keys are distinct, so no two compare equal.
        entries.sort_by(|a, b| key_order(&a.0, &b.0));
        w.keyed(entries.len(), depth, |w, i, depth| {
            let (key, slot) = &entries[i];
            ffi::lua_pushvalue(l, *slot);
            ffi::lua_rawget(l, idx);
            let value = ffi::lua_gettop(l);
            let tag_like = match Shape::of(key) {
                Shape::Letter(letter) => is_tag(letter, shape(l, value)),
                _ => false,
            };
            let written = w.pair(
                tag_like,
                depth,
                |w, depth| w.value(key, depth).map_err(GiveUp::from),
                |w, depth| self.value(w, l, value, depth),
            );
            ffi::lua_pop(l, 1);
            written
        })
    }
}

/// What the walk learnt of a table's keys.
struct Keys {
    len: usize,
    all_int: bool,
    max: i64,
    min: i64,
    /// Every key is a UTF-8 string.
    all_text: bool,
}

impl Keys {
    /// The keys are exactly 1..=len, in whatever order Lua walked them (they are distinct).
    fn sequence(&self) -> bool {
        self.all_int && self.min == 1 && self.max == self.len as i64
    }
}

/// The bits of the u64 box at `idx`, if its `[1]` is an integer.
unsafe fn u64_bits(l: *mut ffi::lua_State, idx: c_int) -> Option<u64> {
    ffi::lua_rawgeti(l, idx, 1);
    let bits = (ffi::lua_isinteger(l, -1) != 0)
        .then(|| ffi::lua_tointegerx(l, -1, ptr::null_mut()) as u64);
    ffi::lua_pop(l, 1);
    bits
}

/// Whether the two values at `first` and `second` (relative indices are fine) would read
/// as a tag when written as a two-element array.
unsafe fn tag_like_pair(l: *mut ffi::lua_State, first: c_int, second: c_int) -> bool {
    let (first, second) = (ffi::lua_absindex(l, first), ffi::lua_absindex(l, second));
    if ffi::lua_type(l, first) != ffi::LUA_TSTRING {
        return false;
    }
    match lua_bytes(l, first) {
        [letter @ b'a'..=b'z'] => is_tag(*letter, shape(l, second)),
        _ => false,
    }
}

/// The shape of the value at `idx` as far as deciding tags needs it (`text/tags.rs`).
/// Values the walk gives up on may get any shape: nothing is kept of what it wrote.
unsafe fn shape(l: *mut ffi::lua_State, idx: c_int) -> Shape {
    match ffi::lua_type(l, idx) {
        ffi::LUA_TBOOLEAN => Shape::Bool,
        ffi::LUA_TNUMBER if ffi::lua_isinteger(l, idx) != 0 => Shape::Int,
        ffi::LUA_TNUMBER => Shape::Double,
        ffi::LUA_TSTRING => match lua_bytes(l, idx) {
            [letter @ b'a'..=b'z'] => Shape::Letter(*letter),
            bytes if as_text(bytes).is_some() => Shape::String,
            _ => Shape::Bytes,
        },
        ffi::LUA_TTABLE => {
            if ffi::lua_getmetatable(l, idx) == 0 {
                return Shape::Table;
            }
            let shape = if ffi::lua_rawequal(l, -1, U64_MT) != 0 {
                Shape::Int
            } else if ffi::lua_rawequal(l, -1, BYTES_MT) != 0 {
                Shape::Bytes
            } else {
                Shape::Table
            };
            ffi::lua_pop(l, 1);
            shape
        }
        _ => Shape::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lua::library;

    /// Whether `source`'s value is written straight, with no tree.
    fn straight(source: &str) -> bool {
        let lua = Lua::new();
        let tables = library::installed(&lua).unwrap();
        lua.load("V = {} require('savechain').register_class('v', V)")
            .exec()
            .unwrap();
        let value: mlua::Value = lua.load(format!("return {source}")).eval().unwrap();
        direct(&lua, &tables, &value, Style::Pretty)
            .unwrap()
            .is_some()
    }

    #[test]
    fn common_shapes_are_written_straight() {
        for source in [
            "{1, 2.5, 'x', true, require('savechain').null}",
            "{hull = 96, crew = {{name = 'Ada'}, {name = 'Bo'}}, tags = {'d', 5}}",
            "{[1] = 'x', [3] = 'y', [0.5] = true, [false] = 1}",
            "setmetatable({hp = 3}, V)",
            "{require('savechain').u64('18446744073709551614'), require('savechain').array()}",
            "'\\xff'",
        ] {
            assert!(straight(source), "{source}");
        }
    }

    #[test]
    fn meta_goes_first_at_the_top_level_as_through_a_tree() {
        let lua = Lua::new();
        let tables = library::installed(&lua).unwrap();
        for (source, compact) in [
            (
                "{data = {meta = 1, a = 2}, meta = {version = 3}, b = {}}",
                r#"{"meta":{"version":3},"b":{},"data":{"a":2,"meta":1}}"#,
            ),
            // Objects of the top level's shape within it keep their keys in order.
            (
                "{meta = {a = 1, meta = 2}, a = {a = 3, meta = 4}}",
                r#"{"meta":{"a":1,"meta":2},"a":{"a":3,"meta":4}}"#,
            ),
            ("{{meta = 1, a = 2}}", r#"[{"a":2,"meta":1}]"#),
            ("{a = 1}", r#"{"a":1}"#),
        ] {
            let value: mlua::Value = lua.load(format!("return {source}")).eval().unwrap();
            for style in [Style::Compact, Style::Pretty] {
                let direct = direct(&lua, &tables, &value, style).unwrap().unwrap();
                let tree = from_lua::convert(&lua, &tables, &value).unwrap();
                let mut through_tree = Vec::new();
                write_value(&mut through_tree, &tree, style).unwrap();
                assert_eq!(direct, through_tree, "{source}");
            }
            let text = direct(&lua, &tables, &value, Style::Compact)
                .unwrap()
                .unwrap();
            assert_eq!(String::from_utf8(text).unwrap(), compact);
        }
    }

    /// Objects nested in objects of the same and of other shapes, keys long and short,
    /// ASCII or not, UTF-8 or not, and strings of each kind: written straight, as through
    /// a tree.
    #[test]
    fn objects_and_strings_of_every_kind_write_as_through_a_tree() {
        let lua = Lua::new();
        let tables = library::installed(&lua).unwrap();
        for source in [
            "{ {alpha = 1, beta = {alpha = 2, beta = 3}}, {alpha = 4, beta = {beta = 5, alpha = 6}} }",
            "{z = {y = {x = 1, w = 2}, v = 3}, u = {t = 4}, s = {y = {x = 5, w = 6}, v = 7}}",
            r#"{['a key much longer than sixteen bytes'] = 1, ['\u{e9}t\u{e9}'] = 2, short = 3}"#,
            r#"{['\xff'] = 1, a = 2, ['a\xff a key longer than sixteen'] = 3}"#,
            "{[1] = 'one', a = 'x', [2] = 'two'}",
            r#"{a = '\xff', b = '\u{fc}n\u{ef}c\u{f6}d\u{e9} and more than sixteen', c = 'x"y\\z\n'}"#,
            r#"{['\u{20ac}'] = '\u{20ac}', ['\xe2\x82'] = '\xe2\x82', ['\xc0\x80'] = 1}"#,
        ] {
            let value: mlua::Value = lua.load(format!("return {source}")).eval().unwrap();
            for style in [Style::Compact, Style::Pretty] {
                let direct = direct(&lua, &tables, &value, style).unwrap();
                let direct = direct.unwrap_or_else(|| panic!("{source} is written straight"));
                let tree = from_lua::convert(&lua, &tables, &value).unwrap();
                let mut through_tree = Vec::new();
                write_value(&mut through_tree, &tree, style).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&direct),
                    String::from_utf8_lossy(&through_tree),
                    "{source}"
                );
            }
        }
    }

    #[test]
    fn what_needs_the_whole_graph_or_fails_goes_through_a_tree() {
        for source in [
            "(function() local t = {1} return {a = t, b = t} end)()",
            "{[{1}] = 'table key'}",
            "{x = print}",
            "setmetatable({}, {})",
            "(function() local t = 1 for _ = 1, 600 do t = {t} end return t end)()",
        ] {
            assert!(!straight(source), "{source}");
        }
    }
}
