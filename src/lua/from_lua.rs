//! Lua values to [`Value`]: the direction a game script takes when it saves its state.
//!
//! Works on the raw Lua stack (through `mlua::ffi`) rather than mlua's handles, which cost
//! a registry slot and often a protected call each: a save holds millions of values.

use std::ffi::{c_int, c_void};
use std::ptr;

use mlua::{ffi, Lua};
use rustc_hash::{FxHashMap, FxHashSet};

use super::loan::{self, SharedLoan};
use super::metatables::Metatables;
use super::order::{key_order, number_shared_tables};
use super::raw::{self, as_text, lua_bytes};
use super::slots::{self, ARRAY_MT, BYTES_MT, CLASS_NAMES, LAZY_MT, U64_MT, VALUE};
use crate::error::{Error, ErrorKind, LuaFailure, Result};
use crate::path::{Path, Segment};
use crate::text::write::to_string_ordering;
use crate::text::MAX_DEPTH;
use crate::value::{Key, Map, Table, Value};

/// Converts a Lua value to a document value, following the mapping of `docs/FORMAT.md`,
/// with the state's `tables` telling arrays, boxes and classes apart.
pub(crate) fn convert(lua: &Lua, tables: &Metatables, value: &mlua::Value) -> Result<Value> {
    convert_lent(lua, tables, value, false, false).map(|(value, _)| value)
}

/// [`convert`], for a value that may hold tables lent by `lazy.rs` and never touched: their
/// document values are put back as they are, taken out of the loan when `end_loan` (the
/// loan ends with this conversion) or copied, where the walk meets them (no second walk of
/// the document to find them).
/// Also says whether the value has shared tables: whatever comes back from a loan
/// untouched had none (documents with shared tables are never lent), so the tables met
/// in Lua decide. With `document_paths`, paths in errors name an array's element by its
/// place in the save, from 0 (a step's data, whose paths `get` takes); otherwise by its Lua
/// key, as Lua code wrote it.
pub(crate) fn convert_lent(
    lua: &Lua,
    tables: &Metatables,
    value: &mlua::Value,
    end_loan: bool,
    document_paths: bool,
) -> Result<(Value, bool)> {
    let mut walker = Walker {
        loan: tables.loan.clone(),
        take: end_loan,
        copy_limit: tables.copy_limit,
        document_paths,
        ..Walker::default()
    };
    let mut value = walker.run(lua, value, tables)?;
    if !walker.shared.is_empty() {
        // A step's data stands under `data` in its save, not at the top level, where the
        // text would have a `meta` member first.
        number_shared_tables(&mut value, !document_paths);
    }
    if end_loan {
        tables.loan.borrow_mut().end();
    }
    Ok((value, !walker.shared.is_empty()))
}

/// [`convert`], for a value said to have been `before` (which only changes how the result is
/// made, never what it is).
#[cfg(test)]
fn convert_over(
    lua: &Lua,
    tables: &Metatables,
    value: &mlua::Value,
    before: Value,
) -> Result<Value> {
    let mut walker = Walker {
        loan: tables.loan.clone(),
        copy_limit: tables.copy_limit,
        root_before: before,
        ..Walker::default()
    };
    let mut value = walker.run(lua, value, tables)?;
    if !walker.shared.is_empty() {
        number_shared_tables(&mut value, true);
    }
    Ok(value)
}

/// A key as met while walking a table: integers and strings are kept raw until the table's
/// shape is known, since most tables turn out to be plain arrays or objects.
enum RawKey {
    Int(i64),
    /// A Lua string owned by the table being walked, which stays alive and unchanged while
    /// the walk lasts.
    Str(*const u8, usize),
    Other(Value),
}

#[derive(Default)]
struct Walker {
    /// Every table met so far (first pass) and those met more than once.
    visited: FxHashSet<*const c_void>,
    revisited: FxHashSet<*const c_void>,
    /// Second pass only: the shared tables met so far, with their provisional ids.
    shared: FxHashMap<*const c_void, u64>,
    second_pass: bool,
    /// Entries of the tables being walked, on one stack for all of them.
    scratch: Vec<(RawKey, Value)>,
    /// The keys of the objects sorted lately, as Lua's strings in walk order, and the order
    /// sorting gave them: objects of one shape (the same keys, set in the same order) walk
    /// their keys in the same order, and need no sort (nor UTF-8 check) of their own.
    /// Several, since objects of different shapes alternate (a planet, then its orbit).
    shapes: Vec<KnownShape>,
    /// Where the next shape learnt goes once `shapes` is full.
    next_shape: usize,
    /// The entries of the tables being walked that are kept in what the tables were filled
    /// from, on one stack for all of them.
    kept: Vec<Kept>,
    /// The places of the keys of objects walked lately among the entries they were filled
    /// from, as `shapes` for sorting.
    learnt_places: Vec<KnownPlaces>,
    /// Where the next places learnt go once `learnt_places` is full.
    next_places: usize,
    /// What the value walked was before, when the caller knows (tests give any value, to
    /// check that the result never depends on it).
    root_before: Value,
    error: Option<(Path, String)>,
    /// The loan of the Lua state, whose values replace the lent tables never touched.
    loan: SharedLoan,
    /// Lent values are taken out of the loan (it ends with the walk), not copied.
    take: bool,
    /// First pass only: the lent values it took, by where their members are kept (which
    /// moving the value does not change), so that they go back to the loan when a second
    /// pass must walk again.
    taken: FxHashMap<usize, i64>,
    /// While converting a key of a keyed table: a lent table there is copied out of its loan
    /// at once, since keys are ordered by their contents.
    in_key: bool,
    /// Bytes of strings copied out of Lua so far, and the most allowed.
    copied: usize,
    copy_limit: usize,
    /// The walk stopped at the copy limit.
    too_big: bool,
    /// Paths in errors count an array's elements from 0, as the save's paths do.
    document_paths: bool,
}

/// The error travels in the walker; frames only say that one happened.
type Step<T> = std::result::Result<T, ()>;

impl Walker {
    fn run(&mut self, lua: &Lua, value: &mlua::Value, tables: &Metatables) -> Result<Value> {
        let mut result = self.pass(lua, value, tables)?;
        if !self.revisited.is_empty() {
            // Some table is reached twice: walk again, now writing it once and referring
            // to it elsewhere, with the lent values the first walk took given back.
            self.give_back(result)?;
            self.second_pass = true;
            result = self.pass(lua, value, tables)?;
        }
        Ok(result)
    }

    fn pass(&mut self, lua: &Lua, value: &mlua::Value, tables: &Metatables) -> Result<Value> {
        let args = slots::args(tables, value.clone());
        self.copied = 0;
        // SAFETY: the walk only reads from the Lua state with functions that do not raise
        // errors (type queries, `lua_next` over a table nobody modifies, raw gets,
        // `lua_checkstack`), so no Lua error can unwind through Rust frames.
        let ((), walked) = unsafe {
            raw::on_stack(lua, args, |state| {
                let before = std::mem::take(&mut self.root_before);
                let walked = match ffi::lua_type(state, VALUE) {
                    ffi::LUA_TTABLE => self.table(state, VALUE, 0, before),
                    _ => self.value(state, VALUE, 0),
                };
                ffi::lua_settop(state, 0);
                walked
            })?
        };
        match (walked, self.error.take()) {
            (_, Some((path, message))) => {
                let why = if self.too_big {
                    LuaFailure::MemoryLimit
                } else {
                    LuaFailure::Unsaveable
                };
                Err(Error::new(ErrorKind::Lua, message)
                    .in_path(path)
                    .because(why))
            }
            (Ok(out), None) => Ok(out),
            // A failed walk leaves its error; this is only for completeness.
            (Err(()), None) => Err(Error::new(ErrorKind::Lua, "the conversion failed")),
        }
    }

    /// Counts `n` bytes copied out of Lua; past [`Metatables::copy_limit`], the walk fails.
    fn copy(&mut self, n: usize) -> Step<()> {
        self.copied = self.copied.saturating_add(n);
        if self.copied > self.copy_limit {
            let limit = self.copy_limit >> 20;
            self.error = Some((
                Path::new(),
                format!(
                    "the data holds more than {limit} MiB of strings, once each place that \
                     holds one has its copy: more than its script's memory limit"
                ),
            ));
            self.too_big = true;
            return Err(());
        }
        Ok(())
    }

    fn fail<T>(&mut self, message: impl Into<String>) -> Step<T> {
        self.error = Some((Path::new(), message.into()));
        Err(())
    }

    /// Adds the step to `segment` in front of the path of an error raised below it.
    fn within<T>(&mut self, step: Step<T>, segment: impl FnOnce() -> Segment) -> Step<T> {
        if step.is_err() {
            if let Some((path, _)) = &mut self.error {
                path.push_front(segment());
            }
        }
        step
    }

    /// The value at `idx`, made anew (a member with a value before it goes through
    /// [`Walker::update`]; a table through [`Walker::table`], which finds what it was
    /// filled from).
    unsafe fn value(&mut self, l: *mut ffi::lua_State, idx: c_int, depth: usize) -> Step<Value> {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TNIL => Ok(Value::Null),
            ffi::LUA_TBOOLEAN => Ok(Value::Bool(ffi::lua_toboolean(l, idx) != 0)),
            ffi::LUA_TNUMBER => Ok(if ffi::lua_isinteger(l, idx) != 0 {
                Value::Int(ffi::lua_tointegerx(l, idx, ptr::null_mut()))
            } else {
                Value::Double(ffi::lua_tonumberx(l, idx, ptr::null_mut()))
            }),
            ffi::LUA_TSTRING => {
                let bytes = lua_bytes(l, idx);
                self.copy(bytes.len())?;
                Ok(text_or_bytes(bytes))
            }
            ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, idx).is_null() => Ok(Value::Null),
            ffi::LUA_TTABLE => self.table(l, idx, depth, Value::Null),
            ffi::LUA_TFUNCTION => self.fail("cannot save a function"),
            ffi::LUA_TTHREAD => self.fail("cannot save a thread (coroutine)"),
            ffi::LUA_TLIGHTUSERDATA => {
                self.fail("cannot save a light userdata (only savechain.null, which is null)")
            }
            _ => self.fail("cannot save a userdata"),
        }
    }

    unsafe fn table(
        &mut self,
        l: *mut ffi::lua_State,
        idx: c_int,
        depth: usize,
        before: Value,
    ) -> Step<Value> {
        if depth >= MAX_DEPTH {
            return self.fail(format!(
                "tables nested more than {MAX_DEPTH} deep cannot be saved"
            ));
        }
        if ffi::lua_checkstack(l, 8) == 0 {
            return self.fail("the Lua stack is full");
        }
        let mut class = None;
        let mut array = false;
        let mut lent = None;
        if ffi::lua_getmetatable(l, idx) != 0 {
            if ffi::lua_rawequal(l, -1, LAZY_MT) != 0 {
                ffi::lua_pop(l, 1);
                lent = Some(self.lent_key(l, idx)?);
            } else {
                if ffi::lua_rawequal(l, -1, U64_MT) != 0 {
                    ffi::lua_pop(l, 1);
                    return self.u64(l, idx);
                }
                if ffi::lua_rawequal(l, -1, BYTES_MT) != 0 {
                    ffi::lua_pop(l, 1);
                    return self.bytes(l, idx);
                }
                array = ffi::lua_rawequal(l, -1, ARRAY_MT) != 0;
                if !array {
                    ffi::lua_rawget(l, CLASS_NAMES);
                    if ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
                        ffi::lua_pop(l, 1);
                        return self.fail(
                            "cannot save a table with a metatable that is not a registered class \
                             (register it with savechain.register_class(name, metatable))",
                        );
                    }
                    class = Some(String::from_utf8_lossy(lua_bytes(l, -1)).into_owned());
                }
                ffi::lua_pop(l, 1);
            }
        }
        let table = ffi::lua_topointer(l, idx);
        let shared_id = if self.second_pass {
            if self.revisited.contains(&table) {
                if let Some(&id) = self.shared.get(&table) {
                    return Ok(Value::from(Table::Ref(id)));
                }
                let id = self.shared.len() as u64 + 1;
                self.shared.insert(table, id);
                Some(id)
            } else {
                None
            }
        } else {
            if !self.visited.insert(table) {
                // Met before (or it contains itself): the second pass will write it once.
                self.revisited.insert(table);
                return Ok(Value::Null);
            }
            None
        };
        let mut value = match lent {
            Some(key) => self.lent_value(key)?,
            None => {
                let before = match before {
                    Value::Array(_) | Value::Object(_) => before,
                    _ => self.filled_from(table),
                };
                self.contents(l, idx, array, depth, Before::of(before))?
            }
        };
        if let Some(name) = class {
            value = Value::from(Table::Class { name, value });
        }
        if let Some(id) = shared_id {
            value = Value::from(Table::Shared { id, value });
        }
        Ok(value)
    }

    /// What the table at `table` was filled from, when it is a lent table filled during the
    /// loan that ends with this walk (taken out of the loan), else null. Never in a key of
    /// a keyed table, which is copied rather than taken.
    fn filled_from(&mut self, table: *const c_void) -> Value {
        if !self.take || self.in_key {
            return Value::Null;
        }
        self.loan
            .borrow_mut()
            .take_filled(table as usize)
            .unwrap_or_default()
    }

    /// The place in the loan of the lent table at `idx`.
    unsafe fn lent_key(&mut self, l: *mut ffi::lua_State, idx: c_int) -> Step<i64> {
        match slots::lent_place(l, idx) {
            Some(key) => Ok(key),
            None => self.fail("a table of a save whose upgrade is over was kept past its run"),
        }
    }

    /// A lent table never touched: its value, taken out of the loan or copied (always
    /// copied as a key, where it is ordered by its contents).
    fn lent_value(&mut self, key: i64) -> Step<Value> {
        let take = self.take && !self.in_key;
        let Some(value) = self.loan.borrow_mut().get(key, take) else {
            return self.fail("a table of a save whose upgrade is over was kept past its run");
        };
        if take && !self.second_pass {
            self.taken.insert(members_address(&value), key);
        }
        Ok(value)
    }

    /// Puts back in the loan the lent values the first pass took, found in its result
    /// `walked` by where their members are kept.
    fn give_back(&mut self, walked: Value) -> Result<()> {
        if self.taken.is_empty() {
            return Ok(());
        }
        let mut loan = self.loan.borrow_mut();
        return_to_loan(walked, &mut self.taken, &mut loan);
        if !self.taken.is_empty() {
            // Never: each value taken is in the first pass's result, moved but not changed.
            return Err(Error::new(
                ErrorKind::Lua,
                "a lent table's value was lost between the two walks of the data",
            ));
        }
        Ok(())
    }

    /// A `savechain.u64` box: an integer above `math.maxinteger`, kept as its bits.
    unsafe fn u64(&mut self, l: *mut ffi::lua_State, idx: c_int) -> Step<Value> {
        ffi::lua_rawgeti(l, idx, 1);
        let bits =
            (ffi::lua_isinteger(l, -1) != 0).then(|| ffi::lua_tointegerx(l, -1, ptr::null_mut()));
        ffi::lua_pop(l, 1);
        match bits {
            Some(bits) => Ok(Value::from(bits as u64)),
            None => self.fail("a savechain.u64 value whose [1] is not an integer"),
        }
    }

    /// A `savechain.bytes` box: a byte string, whatever its bytes.
    unsafe fn bytes(&mut self, l: *mut ffi::lua_State, idx: c_int) -> Step<Value> {
        let is_string = ffi::lua_rawgeti(l, idx, 1) == ffi::LUA_TSTRING;
        let bytes = is_string.then(|| lua_bytes(l, -1).to_vec());
        ffi::lua_pop(l, 1);
        match bytes {
            Some(bytes) => Ok(Value::Bytes(bytes)),
            None => self.fail("a savechain.bytes value whose [1] is not a string"),
        }
    }

    /// What the table holds, as an array, an object or a keyed table; made in `before`,
    /// what the table was filled from, where it holds the same.
    unsafe fn contents(
        &mut self,
        l: *mut ffi::lua_State,
        idx: c_int,
        array: bool,
        depth: usize,
        mut before: Before,
    ) -> Step<Value> {
        let base = self.scratch.len();
        let kept = self.kept.len();
        let shape = self.collect_entries(l, idx, depth, &mut before)?;
        let value = self.assemble(base, kept, array, shape, before);
        self.kept.truncate(kept);
        Ok(value)
    }

    /// The table of the entries walked: those kept in `before` (from `kept` on that stack)
    /// and the others, on `scratch` from `base`.
    unsafe fn assemble(
        &mut self,
        base: usize,
        kept: usize,
        array: bool,
        shape: Shape,
        before: Before,
    ) -> Value {
        if shape.count == 0 {
            return if array {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            };
        }
        let mut before = match before {
            // Keys 1, 2, ... in order: those up to the length before (and a place's
            // largest) were kept in place, the rest come after them.
            Before::Items(mut items) if shape.in_order => {
                items.truncate(shape.count.min(u32::MAX as usize));
                items.extend(self.scratch.drain(base..).map(|(_, value)| value));
                return Value::Array(items);
            }
            Before::Entries(entries) if shape.all_strings => {
                match self.merge_object(base, kept, entries) {
                    Ok(object) => return object,
                    Err(entries) => Before::Entries(entries),
                }
            }
            before => before,
        };
        self.unkeep(kept, &mut before);
        if shape.in_order || self.sort_if_sequence(base) {
            return self.take_array(base);
        }
        if shape.all_strings {
            if let Some(object) = self.take_object(base) {
                return object;
            }
        }
        self.take_keyed_table(base)
    }

    /// The object of the entries kept in `entries` (from `kept`) and those on `scratch`
    /// (from `base`), whose keys are strings: `entries` with the keys the table no longer
    /// has taken out and those it has gained put in order. `entries` back if a key gained is
    /// not UTF-8 (the table is a keyed table).
    ///
    /// SAFETY: as for `raw_str`; the table is still being walked.
    unsafe fn merge_object(
        &mut self,
        base: usize,
        kept: usize,
        entries: Vec<(Key, Value)>,
    ) -> std::result::Result<Value, Vec<(Key, Value)>> {
        let kept = &self.kept[kept..];
        if self.scratch.len() == base && kept.len() == entries.len() {
            // Each key walked is one of `entries`, and they are distinct: all are there.
            return Ok(Value::Object(Map::from_sorted(entries)));
        }
        let gained = &self.scratch[base..];
        if !gained
            .iter()
            .all(|(key, _)| as_text(raw_str(key)).is_some())
        {
            return Err(entries);
        }
        let mut has = vec![false; entries.len()];
        for k in kept {
            has[k.place as usize] = true;
        }
        let mut gained: Vec<(Key, Value)> = self
            .scratch
            .drain(base..)
            // Checked to be UTF-8 above.
            .map(|(key, value)| {
                (
                    Key::from(std::str::from_utf8_unchecked(raw_str(&key))),
                    value,
                )
            })
            .collect();
        gained.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut merged = Vec::with_capacity(kept.len() + gained.len());
        let mut gained = gained.into_iter().peekable();
        for ((key, value), has) in entries.into_iter().zip(has) {
            if !has {
                continue;
            }
            while let Some(next) = gained.next_if(|(k, _)| k.as_bytes() < key.as_bytes()) {
                merged.push(next);
            }
            merged.push((key, value));
        }
        merged.extend(gained);
        Ok(Value::Object(Map::from_sorted(merged)))
    }

    /// Moves the entries kept in `before` (from `kept`) onto `scratch`, with their keys, for
    /// a table that turns out to be another kind than the one it was filled from.
    fn unkeep(&mut self, kept: usize, before: &mut Before) {
        for k in self.kept.drain(kept..) {
            let (key, value) = match before {
                Before::Items(items) => (
                    RawKey::Int(i64::from(k.place) + 1),
                    &mut items[k.place as usize],
                ),
                Before::Entries(entries) => {
                    (RawKey::Str(k.key, k.len), &mut entries[k.place as usize].1)
                }
                Before::None => continue,
            };
            self.scratch.push((key, std::mem::take(value)));
        }
    }

    /// Walks the table at `idx`, pushing its entries on `scratch` (values converted, keys
    /// kept raw where they can be) and learning its shape on the way; an entry whose key
    /// `before` has is kept there instead, its value changed only where it differs, and
    /// noted on `kept`.
    unsafe fn collect_entries(
        &mut self,
        l: *mut ffi::lua_State,
        idx: c_int,
        depth: usize,
        before: &mut Before,
    ) -> Step<Shape> {
        let base = self.scratch.len();
        let kept = self.kept.len();
        let mut shape = Shape {
            in_order: true,
            all_strings: true,
            count: 0,
        };
        let mut guide = Guide::default();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, idx) != 0 {
            let nth = shape.count;
            let key = self.raw_key(l, nth as i64, depth, &mut shape)?;
            shape.count += 1;
            let value_idx = ffi::lua_absindex(l, -1);
            let in_array = shape.in_order && self.document_paths;
            let slot = match before {
                Before::None => None,
                Before::Items(items) => match key {
                    // Places are kept as u32: an element past them is walked as a new one.
                    RawKey::Int(i)
                        if i >= 1 && i as u64 <= (items.len() as u64).min(u32::MAX.into()) =>
                    {
                        Some((i as u32 - 1, &mut items[i as usize - 1]))
                    }
                    _ => None,
                },
                Before::Entries(entries) => match self.place(&key, nth, entries, &mut guide) {
                    NOT_FOUND => None,
                    place => Some((place, &mut entries[place as usize].1)),
                },
            };
            match slot {
                Some((place, slot)) => {
                    let updated = self.update(l, value_idx, depth + 1, slot);
                    self.within(updated, || key_segment(&key, in_array))?;
                    let (key, len) = match key {
                        RawKey::Str(p, len) => (p, len),
                        _ => (ptr::null(), 0),
                    };
                    self.kept.push(Kept { place, key, len });
                }
                None => {
                    let value = self.value(l, value_idx, depth + 1);
                    let value = self.within(value, || key_segment(&key, in_array))?;
                    self.scratch.push((key, value));
                }
            }
            ffi::lua_pop(l, 1);
        }
        if let (Before::Entries(entries), Guide::Lost) = (before, guide) {
            if self.scratch.len() == base {
                self.learn_places(kept, entries.len());
            }
        }
        Ok(shape)
    }

    /// Changes `slot` to the value at `idx` where it differs (a table's value made in
    /// what it was): what [`Walker::value`] gives, without writing what is the same.
    unsafe fn update(
        &mut self,
        l: *mut ffi::lua_State,
        idx: c_int,
        depth: usize,
        slot: &mut Value,
    ) -> Step<()> {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TNUMBER => {
                if ffi::lua_isinteger(l, idx) != 0 {
                    let i = ffi::lua_tointegerx(l, idx, ptr::null_mut());
                    if !matches!(*slot, Value::Int(was) if was == i) {
                        *slot = Value::Int(i);
                    }
                } else {
                    let d = ffi::lua_tonumberx(l, idx, ptr::null_mut());
                    if !matches!(*slot, Value::Double(was) if was.to_bits() == d.to_bits()) {
                        *slot = Value::Double(d);
                    }
                }
            }
            ffi::LUA_TBOOLEAN => {
                let b = ffi::lua_toboolean(l, idx) != 0;
                if !matches!(*slot, Value::Bool(was) if was == b) {
                    *slot = Value::Bool(b);
                }
            }
            ffi::LUA_TSTRING => {
                let bytes = lua_bytes(l, idx);
                self.copy(bytes.len())?;
                // Bytes equal to a `String`'s are text.
                if !matches!(slot, Value::String(s) if s.as_bytes() == bytes) {
                    *slot = text_or_bytes(bytes);
                }
            }
            ffi::LUA_TTABLE => {
                let before = std::mem::take(slot);
                *slot = self.table(l, idx, depth, before)?;
            }
            _ => *slot = self.value(l, idx, depth)?,
        }
        Ok(())
    }

    /// The place of `key`, the `nth` key walked, among `entries` (sorted), or `NOT_FOUND`.
    /// Tables filled from objects of one shape walk their keys in the same order: the
    /// places learnt from one of them are tried first (their keys compared by address,
    /// interned strings, then by bytes, `entries` being another object), else a binary
    /// search.
    unsafe fn place(
        &mut self,
        key: &RawKey,
        nth: usize,
        entries: &[(Key, Value)],
        guide: &mut Guide,
    ) -> u32 {
        let RawKey::Str(p, len) = *key else {
            *guide = Guide::Lost;
            return NOT_FOUND;
        };
        if entries.is_empty() {
            return NOT_FOUND;
        }
        let bytes = std::slice::from_raw_parts(p, len);
        if nth == 0 {
            *guide = match self
                .learnt_places
                .iter()
                .position(|known| known.keys.len() == entries.len() && known.keys[0] == p)
            {
                Some(at) => Guide::Following(at),
                None => Guide::Lost,
            };
        }
        if let Guide::Following(at) = *guide {
            let known = &self.learnt_places[at];
            if known.keys.get(nth) == Some(&p) {
                // Learnt places may have been replaced by a table walked inside this one.
                let place = known.places[nth];
                if entries
                    .get(place as usize)
                    .is_some_and(|(k, _)| k.as_bytes() == bytes)
                {
                    return place;
                }
            }
            *guide = Guide::Lost;
        }
        match entries.binary_search_by(|(k, _)| k.as_bytes().cmp(bytes)) {
            Ok(place) => u32::try_from(place).unwrap_or(NOT_FOUND),
            Err(_) => NOT_FOUND,
        }
    }

    /// Learns the places of the `n` entries kept (from `from` on `kept`), if all were,
    /// for the next table of the same keys in the same walk order.
    fn learn_places(&mut self, from: usize, n: usize) {
        let kept = &self.kept[from..];
        if kept.len() != n || n > LEARN_PLACES_UP_TO {
            return;
        }
        let learnt = KnownPlaces {
            keys: kept.iter().map(|k| k.key).collect(),
            places: kept.iter().map(|k| k.place).collect(),
        };
        if self.learnt_places.len() < KNOWN_SHAPES {
            self.learnt_places.push(learnt);
        } else {
            let at = self.next_places;
            self.next_places = (at + 1) % KNOWN_SHAPES;
            self.learnt_places[at] = learnt;
        }
    }

    /// The key of the entry being walked (at -2), after `count` others; notes in `shape`
    /// what it says about the table.
    unsafe fn raw_key(
        &mut self,
        l: *mut ffi::lua_State,
        count: i64,
        depth: usize,
        shape: &mut Shape,
    ) -> Step<RawKey> {
        Ok(match ffi::lua_type(l, -2) {
            ffi::LUA_TNUMBER if ffi::lua_isinteger(l, -2) != 0 => {
                let i = ffi::lua_tointegerx(l, -2, ptr::null_mut());
                shape.in_order &= i == count + 1;
                shape.all_strings = false;
                RawKey::Int(i)
            }
            ffi::LUA_TSTRING => {
                let bytes = lua_bytes(l, -2);
                self.copy(bytes.len())?;
                shape.in_order = false;
                RawKey::Str(bytes.as_ptr(), bytes.len())
            }
            _ => {
                (shape.in_order, shape.all_strings) = (false, false);
                let key_idx = ffi::lua_absindex(l, -2);
                let in_key = std::mem::replace(&mut self.in_key, true);
                if ffi::lua_type(l, key_idx) == ffi::LUA_TLIGHTUSERDATA
                    && ffi::lua_touserdata(l, key_idx).is_null()
                {
                    // A keyed table's key is never null when read (docs/FORMAT.md 3.5).
                    self.in_key = in_key;
                    return self.fail(
                        "savechain.null cannot be a table key: the save could not be read back",
                    );
                }
                let key = self.value(l, key_idx, depth + 1);
                self.in_key = in_key;
                RawKey::Other(self.within(key, || Segment::LuaKey(describe_key(l, key_idx)))?)
            }
        })
    }

    /// Whether the keys of the entries from `base` are exactly 1..=n, walked out of order;
    /// if so, sorts the entries by key.
    fn sort_if_sequence(&mut self, base: usize) -> bool {
        let entries = &mut self.scratch[base..];
        let n = entries.len() as i64;
        let is_sequence = entries
            .iter()
            .all(|(k, _)| matches!(k, RawKey::Int(i) if (1..=n).contains(i)));
        if is_sequence {
            // Keys are distinct, so n keys in 1..=n are exactly 1..=n.
            entries.sort_unstable_by_key(|(k, _)| match k {
                RawKey::Int(i) => *i,
                _ => 0,
            });
        }
        is_sequence
    }

    /// The values of the entries from `base`, in their order, as an array.
    fn take_array(&mut self, base: usize) -> Value {
        Value::Array(self.scratch.drain(base..).map(|(_, value)| value).collect())
    }

    /// The entries from `base`, whose keys are all strings, as an object if the keys are
    /// all UTF-8 (else `None`, the entries left as they are).
    ///
    /// SAFETY: as for `raw_str`; the table is still being walked.
    unsafe fn take_object(&mut self, base: usize) -> Option<Value> {
        // Lua walks keys in hash order, to be sorted: in the order learnt from an earlier
        // object when it has the same keys in the same walk order (interned strings, one
        // pointer each, checked to be UTF-8 then), else by sorting their raw bytes (cheaper
        // than the map's keys).
        let entries = &self.scratch[base..];
        let known = self.shapes.iter().position(|known| {
            known.keys.len() == entries.len()
                && entries
                    .iter()
                    .zip(&known.keys)
                    .all(|((key, _), &k)| key_pointer(key) == k)
        });
        let known = match known {
            Some(known) => known,
            None => {
                if !entries
                    .iter()
                    .all(|(key, _)| as_text(raw_str(key)).is_some())
                {
                    return None;
                }
                let mut order: Vec<u32> = (0..entries.len() as u32).collect();
                order.sort_unstable_by(|&a, &b| {
                    raw_str(&entries[a as usize].0).cmp(raw_str(&entries[b as usize].0))
                });
                let learnt = KnownShape {
                    keys: entries.iter().map(|(key, _)| key_pointer(key)).collect(),
                    order,
                };
                if self.shapes.len() < KNOWN_SHAPES {
                    self.shapes.push(learnt);
                    self.shapes.len() - 1
                } else {
                    let at = self.next_shape;
                    self.next_shape = (at + 1) % KNOWN_SHAPES;
                    self.shapes[at] = learnt;
                    at
                }
            }
        };
        let mut pairs: Vec<(Key, Value)> = Vec::with_capacity(entries.len());
        for &i in &self.shapes[known].order {
            let (key, value) = &mut self.scratch[base + i as usize];
            // Checked to be UTF-8 when its shape was learnt.
            let text = std::str::from_utf8_unchecked(raw_str(key));
            pairs.push((Key::from(text), std::mem::take(value)));
        }
        self.scratch.truncate(base);
        Some(Value::Object(Map::from_sorted(pairs)))
    }

    /// The entries from `base` as a keyed table, in the order of [`key_order`].
    ///
    /// SAFETY: as for `raw_str`; the table is still being walked.
    unsafe fn take_keyed_table(&mut self, base: usize) -> Value {
        let mut pairs: Vec<(Value, Value)> = self
            .scratch
            .drain(base..)
            .map(|(key, value)| (key_value(key), value))
            .collect();
        // Keys that are tables can have the same text, and so can boxes (two u64 or bytes
        // boxes of the same contents are two keys): their values then decide, so that the
        // order never depends on the order Lua walks the table in.
        pairs.sort_by(|a, b| {
            key_order(&a.0, &b.0)
                .then_with(|| to_string_ordering(&a.1).cmp(&to_string_ordering(&b.1)))
        });
        Value::from(Table::Keyed(pairs))
    }
}

/// A Lua string's value: text if its bytes are UTF-8, else a byte string.
#[inline]
fn text_or_bytes(bytes: &[u8]) -> Value {
    match as_text(bytes) {
        Some(s) => Value::String(s.to_owned()),
        None => Value::Bytes(bytes.to_vec()),
    }
}

/// Where the members of `value`, a lent array or object (never empty), are kept: the same
/// however the value is moved, as long as it is not changed.
fn members_address(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.as_ptr() as usize,
        Value::Object(map) => map
            .iter()
            .next()
            .map_or(0, |(_, first)| first as *const Value as usize),
        _ => 0,
    }
}

/// Walks `value`, moving each value of `taken` (by [`members_address`]) back into its slot
/// of `loan` and removing it from `taken`; what is left of `value` is dropped.
fn return_to_loan(value: Value, taken: &mut FxHashMap<usize, i64>, loan: &mut loan::Loan) {
    if taken.is_empty() {
        return;
    }
    if matches!(value, Value::Array(_) | Value::Object(_)) {
        if let Some(key) = taken.remove(&members_address(&value)) {
            loan.put_back(key, value);
            return;
        }
    }
    match value {
        Value::Array(items) => items
            .into_iter()
            .for_each(|v| return_to_loan(v, taken, loan)),
        Value::Object(map) => map
            .into_iter()
            .for_each(|(_, v)| return_to_loan(v, taken, loan)),
        Value::Table(table) => match *table {
            Table::Keyed(entries) => entries.into_iter().for_each(|(k, v)| {
                return_to_loan(k, taken, loan);
                return_to_loan(v, taken, loan);
            }),
            Table::Class { value, .. } | Table::Shared { value, .. } => {
                return_to_loan(value, taken, loan)
            }
            Table::Ref(_) => {}
        },
        _ => {}
    }
}

/// How many object shapes a walk remembers the key order of.
const KNOWN_SHAPES: usize = 8;

/// A key's place among entries that do not have it.
const NOT_FOUND: u32 = u32::MAX;

/// Objects of at most this many keys have the places of their keys learnt (larger ones,
/// maps by id more often than records, are searched).
const LEARN_PLACES_UP_TO: usize = 64;

/// What a table being taken back was filled from: its items or its entries, in which the
/// conversion keeps each member under the same key, changed where it differs.
enum Before {
    None,
    Items(Vec<Value>),
    Entries(Vec<(Key, Value)>),
}

impl Before {
    fn of(value: Value) -> Before {
        match value {
            Value::Array(items) => Before::Items(items),
            Value::Object(map) => Before::Entries(map.into_entries()),
            _ => Before::None,
        }
    }
}

/// An entry of a table being walked kept in what the table was filled from: its place
/// there, and its key as Lua has it (null for an array's element).
#[derive(Clone, Copy)]
struct Kept {
    place: u32,
    key: *const u8,
    len: usize,
}

/// The keys of an object as Lua walked them (pointers to its interned strings), and their
/// places among the entries of the object it was filled from.
struct KnownPlaces {
    keys: Vec<*const u8>,
    places: Vec<u32>,
}

/// How a walk over a table with entries before goes: following places learnt earlier, or
/// not (none fit, or the table stopped fitting them: its places are learnt if all found).
#[derive(Clone, Copy, Default)]
enum Guide {
    #[default]
    Starting,
    Following(usize),
    Lost,
}

/// The keys of an object as Lua walked them (pointers to its interned strings), and the
/// order that sorts them.
struct KnownShape {
    keys: Vec<*const u8>,
    order: Vec<u32>,
}

/// What walking a table learnt about its keys.
struct Shape {
    /// The keys were integers 1, 2, 3... in that order: the common case for arrays, whose
    /// part Lua walks first and in order.
    in_order: bool,
    /// Every key is a string.
    all_strings: bool,
    /// How many entries the table has.
    count: usize,
}

/// The document value of a raw key.
///
/// SAFETY: as for `raw_str`; the table is still being walked.
unsafe fn key_value(key: RawKey) -> Value {
    match key {
        RawKey::Int(i) => Value::Int(i),
        RawKey::Str(p, len) => {
            let bytes = std::slice::from_raw_parts(p, len);
            match std::str::from_utf8(bytes) {
                Ok(s) => Value::String(s.to_owned()),
                Err(_) => Value::Bytes(bytes.to_vec()),
            }
        }
        RawKey::Other(v) => v,
    }
}

/// Where a string key's bytes are (null for other keys): the same pointer for the same
/// interned string.
fn key_pointer(key: &RawKey) -> *const u8 {
    match *key {
        RawKey::Str(p, _) => p,
        _ => ptr::null(),
    }
}

/// The bytes of a string key (empty for other keys).
///
/// SAFETY: as for `lua_bytes`; call only while the table is being walked.
unsafe fn raw_str(key: &RawKey) -> &[u8] {
    match *key {
        RawKey::Str(p, len) => std::slice::from_raw_parts(p, len),
        _ => &[],
    }
}

/// The segment of a path for `key`. In a table whose keys are 1, 2, ... in order so far
/// (`in_array`), which becomes an array, an integer key is the element's place in the save,
/// counting from 0 as the save's paths do (`ship.cargo[0]` for Lua's `ship.cargo[1]`), so
/// that a path in an error finds the value with `get`.
fn key_segment(key: &RawKey, in_array: bool) -> Segment {
    match key {
        RawKey::Int(i) if in_array && *i >= 1 => Segment::Index((*i - 1) as usize),
        RawKey::Int(i) => Segment::LuaKey(i.to_string()),
        RawKey::Str(p, len) => {
            // SAFETY: as for `lua_bytes`; the table is still being walked.
            let bytes = unsafe { std::slice::from_raw_parts(*p, *len) };
            match std::str::from_utf8(bytes) {
                Ok(s) => Segment::Key(s.to_owned()),
                Err(_) => Segment::LuaKey(format!("{:?}", String::from_utf8_lossy(bytes))),
            }
        }
        RawKey::Other(v) => Segment::LuaKey(v.to_string()),
    }
}

/// How Lua would write a key that is not an integer or a string.
unsafe fn describe_key(l: *mut ffi::lua_State, idx: c_int) -> String {
    match ffi::lua_type(l, idx) {
        ffi::LUA_TBOOLEAN => (ffi::lua_toboolean(l, idx) != 0).to_string(),
        ffi::LUA_TNUMBER => format!("{:?}", ffi::lua_tonumberx(l, idx, ptr::null_mut())),
        ffi::LUA_TTABLE => "<table>".into(),
        ffi::LUA_TFUNCTION => "<function>".into(),
        ffi::LUA_TTHREAD => "<thread>".into(),
        _ => "<userdata>".into(),
    }
}

#[cfg(test)]
mod tests {
    //! Taking lent data back: the lent values the walk meets are taken where it meets them,
    //! and given back to the loan when a table reached twice makes it walk again.

    use proptest::prelude::*;

    use crate::lua::{install_lending, lend, take_back, Limits, Sandbox};
    use crate::value::{Map, Value};

    const DOCUMENT: &str = r#"{
        "player": {"name": "Wren", "tags": ["brave", "tall"], "stats": {"hp": 24, "mp": 3}},
        "systems": [{"id": "sol", "planets": [1, 2, 3]}, {"id": "vega", "planets": [4]}],
        "log": ["a", "b", "c"]
    }"#;

    /// A sandbox lending every table, and the step `body` (given `data`, returning it) run
    /// on the lent document; returns what comes back, and what the same step gives on a
    /// converted copy.
    fn taken_and_converted(body: &str) -> (Value, Value) {
        let sandbox = Sandbox::new(Limits::default()).unwrap();
        let lua = sandbox.lua();
        install_lending(lua).unwrap();
        let tables = crate::lua::library::installed(lua).unwrap();
        tables.loan.borrow_mut().lend_above = 0;
        let step: mlua::Function = sandbox
            .run(
                &format!("return function(data) {body} return data end"),
                "step",
            )
            .unwrap();
        let document = crate::text::from_str(DOCUMENT).unwrap();
        let lent = lend(lua, document.clone(), Some(false)).unwrap();
        let lent: mlua::Value = step.call(lent).unwrap();
        let taken = take_back(lua, &lent).unwrap();
        let converted = crate::lua::to_lua(lua, &document).unwrap();
        let converted: mlua::Value = step.call(converted).unwrap();
        let converted = crate::lua::from_lua(lua, &converted).unwrap();
        assert_eq!(taken.1, converted.to_string().contains("[\"s\""));
        (taken.0, converted)
    }

    #[test]
    fn untouched_lent_tables_come_back_in_place() {
        let (taken, converted) = taken_and_converted("data.player.name = 'Ash'");
        assert_eq!(taken, converted);
        assert_eq!(
            taken.get("systems").unwrap().to_string(),
            r#"[{"id":"sol","planets":[1,2,3]},{"id":"vega","planets":[4]}]"#
        );
    }

    #[test]
    fn lent_tables_reached_twice_are_given_back_for_the_second_walk() {
        for body in [
            // An untouched lent table in two places: shared, with its contents.
            "data.alias = data.log",
            // Several, one inside another's parent, and a touched one shared too.
            "data.a = data.systems data.b = data.player.stats data.c = data.player data.player.x = 1",
            // A lent table as a key of a keyed table, and as a value elsewhere.
            "local t = {} t[data.log] = true data.keyed = t data.again = data.log",
            // Reached twice inside one table, and the root itself.
            "data.systems[3] = data.systems[1] data.self = data",
        ] {
            let (taken, converted) = taken_and_converted(body);
            assert_eq!(taken, converted, "{body}");
            assert!(taken.to_string().contains("[\"r\""), "{body}: {taken}");
        }
    }

    /// Objects of more shapes than the walk remembers, nested in one another and
    /// alternating (as a planet and its orbit do), and string keys that are not UTF-8 in
    /// tables whose other keys make shapes seen before: each comes back with its own keys
    /// sorted, and a table with a key that is not text as a keyed table, every time.
    #[test]
    fn objects_of_many_shapes_come_back_sorted() {
        let lua = mlua::Lua::new();
        let value: mlua::Value = lua
            .load(
                r#"
                local out = {}
                for i = 1, 40 do
                  local shape = i % 11
                  local inner = {z = i, a = {y = shape, b = true}}
                  for k = 1, shape do inner["k" .. k] = k end
                  out[i] = {planet = inner, orbit = {phase = i, e = 0.5}}
                  if i % 7 == 0 then out[i].orbit["\xff"] = 1 end
                end
                return out
                "#,
            )
            .eval()
            .unwrap();
        let converted = crate::lua::from_lua(&lua, &value).unwrap();
        let items = converted.as_array().unwrap();
        assert_eq!(items.len(), 40);
        for (n, item) in items.iter().enumerate() {
            let i = n + 1;
            let shape = i % 11;
            let mut keys: Vec<String> = vec!["a".into(), "z".into()];
            keys.extend((1..=shape).map(|k| format!("k{k}")));
            keys.sort();
            let planet = item.get("planet").unwrap();
            let got: Vec<&str> = planet.as_object().unwrap().keys().collect();
            assert_eq!(got, keys, "{i}");
            let inner: Vec<&str> = planet
                .get("a")
                .unwrap()
                .as_object()
                .unwrap()
                .keys()
                .collect();
            assert_eq!(inner, ["b", "y"]);
            let orbit = item.get("orbit").unwrap();
            if i % 7 == 0 {
                assert!(orbit.as_object().is_none(), "{i}: {orbit}");
                assert!(orbit.to_string().starts_with("[\"t\""), "{i}: {orbit}");
            } else {
                let got: Vec<&str> = orbit.as_object().unwrap().keys().collect();
                assert_eq!(got, ["e", "phase"], "{i}");
            }
        }
    }

    /// Scalars of every kind, with the edge cases of each (integers at the ends of their
    /// ranges, -0.0, NaNs with payloads, infinities, text and bytes alike or not, strings
    /// long enough that Lua does not intern them).
    fn any_scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            prop_oneof![any::<i64>(), -3i64..3, Just(i64::MIN), Just(i64::MAX)]
                .prop_map(Value::Int),
            (i64::MAX as u64 + 1..=u64::MAX).prop_map(Value::UInt),
            prop_oneof![
                any::<f64>(),
                any::<u64>().prop_map(f64::from_bits),
                Just(-0.0),
                Just(0.0),
                Just(1.0),
                Just(f64::INFINITY),
                Just(f64::from_bits(0x7ff8_0000_0000_0001)),
            ]
            .prop_map(Value::Double),
            prop_oneof!["[ab]{0,2}", "[a-z\u{e9}]{0,8}", "[ab]{41,44}"].prop_map(Value::String),
            prop_oneof![
                Just(b"a".to_vec()),
                Just(vec![0xff]),
                prop::collection::vec(any::<u8>(), 0..4)
            ]
            .prop_map(Value::Bytes),
        ]
    }

    /// Documents of arrays and objects in an object, as a step's data is, a few keys used
    /// again and again (so that objects share shapes) and some long ones.
    fn any_document() -> impl Strategy<Value = Value> {
        let key = || {
            prop_oneof![
                "[a-d]",
                "[a-d]{2}",
                "k[a-z]{40}",
                Just("\u{e9}".to_string())
            ]
        };
        let value = any_scalar().prop_recursive(4, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<Map>())),
            ]
        });
        prop::collection::vec((key(), value), 0..6)
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map>()))
    }

    /// Edits a step makes: each goes down the data following choices (a key picked among
    /// the table's keys, sorted), then changes the table it reached.
    fn any_edits() -> impl Strategy<Value = Vec<(Vec<u8>, u8, u16)>> {
        prop::collection::vec(
            (
                prop::collection::vec(any::<u8>(), 0..4),
                0u8..26,
                any::<u16>(),
            ),
            0..8,
        )
    }

    /// The Lua step that makes `edits` on its data and returns it.
    fn step_of(edits: &[(Vec<u8>, u8, u16)]) -> String {
        let mut body = String::new();
        for (path, op, arg) in edits {
            let path: Vec<String> = path.iter().map(u8::to_string).collect();
            body.push_str(&format!(
                "do local t, k = reach(data, {{{}}}, {arg}) edit(data, t, k, {op}, {arg}) end\n",
                path.join(", ")
            ));
        }
        format!(
            r#"
local sc = require('savechain')
local function order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta < tb end
  if ta == 'number' or ta == 'string' then return a < b end
  return tostring(a) < tostring(b)
end
local function keys(t)
  local ks = {{}}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, order)
  return ks
end
-- The length of the sequence 1, 2, ... in `t`: `#t` is any border of a table with holes,
-- which depends on how the table was made (a lent table is made at its size).
local function seqlen(t)
  local n = 0
  while t[n + 1] ~= nil do n = n + 1 end
  return n
end
local function plain(v)
  return type(v) == 'table' and (getmetatable(v) == nil or sc.is_array(v))
end
local function reach(data, path, arg)
  local t = data
  for _, c in ipairs(path) do
    local ks = keys(t)
    if #ks == 0 then break end
    local v = t[ks[c % #ks + 1]]
    if not plain(v) then break end
    t = v
  end
  local ks = keys(t)
  return t, ks[arg % math.max(#ks, 1) + 1]
end
local function edit(data, t, k, op, arg)
  if op == 0 then if k ~= nil then t[k] = nil end
  elseif op == 1 then t[k or 'n'] = arg
  elseif op == 2 then t[k or 'n'] = arg + 0.5
  elseif op == 3 then t[k or 'n'] = -0.0
  elseif op == 4 then t[k or 'n'] = 0 / 0
  elseif op == 5 then t[k or 'n'] = 'a' .. (arg % 3)
  elseif op == 6 then t['new' .. (arg % 3)] = arg
  elseif op == 7 then t[seqlen(t) + 1] = arg
  elseif op == 8 then if k ~= nil then t[k] = t[k] end
  elseif op == 9 then if type(t[k]) == 'string' then t[k] = t[k] .. '' end
  elseif op == 10 then if math.type(t[k]) == 'integer' then t[k] = t[k] + 0.0 end
  elseif op == 11 then t[k or 'n'] = {{}}
  elseif op == 12 then t[k or 'n'] = sc.array()
  elseif op == 13 then data.alias = t
  elseif op == 14 then
    local moved = t[k]
    if k ~= nil then t[k] = nil end
    data['moved' .. (arg % 2)] = moved
    if plain(moved) then moved.after = arg end
  elseif op == 15 then
    local n = seqlen(t)
    if n > 0 then
      for i = n, 1, -1 do t[i + 1] = t[i] end
      t[1] = arg
    end
  elseif op == 16 then
    local n = seqlen(t)
    if n > 0 then
      for i = 1, n - 1 do t[i] = t[i + 1] end
      t[n] = nil
    end
  elseif op == 17 then t[1.5] = 'x'
  elseif op == 18 then t['\xff'] = arg
  elseif op == 19 then t[k or 'n'] = string.rep('a', 41 + arg % 3)
  elseif op == 20 then if k ~= nil then local v = t[k] t[k] = nil t[k] = v end
  elseif op == 21 then for key in pairs(t) do t[key] = nil end
  elseif op == 22 then if type(t[k]) == 'string' then t[k] = t[k]:upper() end
  elseif op == 23 then for key, v in pairs(t) do if type(v) == 'number' then t[key] = -v end end
  elseif op == 24 then for key, v in pairs(t) do if type(v) == 'number' then t[key] = v * 1.0 end end
  else t[k or 'n'] = sc.bytes('a') end
end
return function(data)
{body}  return data
end
"#
        )
    }

    /// A sandbox; with `lend_above`, set up for lending tables of more than so many values.
    fn sandbox(lend_above: Option<usize>) -> Sandbox {
        let sandbox = Sandbox::new(Limits::default()).unwrap();
        if let Some(above) = lend_above {
            install_lending(sandbox.lua()).unwrap();
            let tables = crate::lua::library::installed(sandbox.lua()).unwrap();
            tables.loan.borrow_mut().lend_above = above;
        }
        sandbox
    }

    /// `document` as the conversions give it back: what goes into Lua and comes out.
    fn canonical(document: Value) -> Value {
        let lua = mlua::Lua::new();
        let value = crate::lua::to_lua(&lua, &document).unwrap();
        crate::lua::from_lua(&lua, &value).unwrap()
    }

    /// The step run on `document` lent (tables of more than `lend_above` values lent) and
    /// taken back, or with `None` converted whole and converted back the old way, each
    /// value made anew: the result, as a value and as text, or the error.
    fn stepped(
        document: &Value,
        step: &str,
        lend_above: Option<usize>,
    ) -> Result<(Value, Vec<u8>), String> {
        let sandbox = sandbox(lend_above);
        let lua = sandbox.lua();
        let function: mlua::Function = sandbox.run(step, "step").unwrap();
        let data = match lend_above {
            Some(_) => lend(lua, document.clone(), None).unwrap(),
            None => crate::lua::to_lua(lua, document).unwrap(),
        };
        // The first line: a traceback names the sandbox's own `next` where lending wraps it.
        let result: mlua::Value = sandbox
            .guard(|_| function.call(data))
            .map_err(|e| e.to_string().lines().next().unwrap_or("").to_owned())?;
        let value = match lend_above {
            Some(_) => take_back(lua, &result).map(|(value, _)| value),
            None => {
                let tables = crate::lua::library::installed(lua).unwrap();
                super::convert_lent(lua, &tables, &result, false, true).map(|(value, _)| value)
            }
        }
        .map_err(|e| e.to_string())?;
        let text = crate::text::to_vec_compact(&value).unwrap();
        Ok((value, text))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A lent document that steps edit comes back as a full conversion gives it, the
        /// tables filled rebuilt in what they were filled from: every type, every double's
        /// bits, keys added and removed, tables emptied, moved and changed after, shared,
        /// arrays turned into keyed tables.
        #[test]
        fn lent_documents_come_back_as_converted_whatever_steps_do(
            document in any_document(),
            edits in any_edits(),
        ) {
            let document = canonical(document);
            let step = step_of(&edits);
            let converted = stepped(&document, &step, None);
            for lend_above in [0, crate::lua::loan::LEND_ABOVE] {
                let lent = stepped(&document, &step, Some(lend_above));
                prop_assert_eq!(&lent, &converted, "{}", step);
            }
        }

        /// Whatever a table is said to have been before, the conversion gives the same:
        /// what it was before only decides what the result is made of.
        #[test]
        fn what_a_table_was_before_never_changes_its_conversion(
            document in any_document(),
            other in any_document(),
            edits in any_edits(),
        ) {
            let document = canonical(document);
            let step = step_of(&edits);
            let edited = match stepped(&document, &step, None) {
                Ok((value, _)) => value,
                Err(_) => canonical(other.clone()),
            };
            let lua = mlua::Lua::new();
            let tables = crate::lua::library::installed(&lua).unwrap();
            for (value, before) in [
                (&document, edited.clone()),
                (&edited, document.clone()),
                (&document, document.clone()),
                (&document, other.clone()),
            ] {
                let in_lua = crate::lua::to_lua(&lua, value).unwrap();
                let plain = crate::lua::from_lua(&lua, &in_lua).unwrap();
                let over = super::convert_over(&lua, &tables, &in_lua, before).unwrap();
                prop_assert_eq!(
                    crate::text::to_vec_compact(&over).unwrap(),
                    crate::text::to_vec_compact(&plain).unwrap()
                );
                prop_assert_eq!(over, plain);
            }
        }
    }
}
