//! [`Value`] to Lua values: the direction a game script takes when it loads its state.
//!
//! Builds tables directly on the raw Lua stack (through `mlua::ffi`), one C call per value.

use std::ffi::c_int;
use std::ptr;

use mlua::{ffi, Lua};
use rustc_hash::FxHashSet;

use super::loan::Loan;
use super::metatables::Metatables;
use super::raw;
use super::slots::{
    self, lent_slot_key, ARRAY_MT, BYTES_MT, CLASSES, LAZY_MT, REFS, TARGET, U64_MT,
};
use crate::error::{Error, ErrorKind, Result};
use crate::path::{Path, Segment};
use crate::text::MAX_DEPTH;
use crate::value::{Map, Table, Value};

/// Converts a document value to a Lua value, following the mapping of `docs/FORMAT.md`,
/// marking arrays, boxes and class instances with the state's `tables`.
pub(crate) fn convert(lua: &Lua, tables: &Metatables, value: &Value) -> Result<mlua::Value> {
    make_value(lua, tables, |l, builder| unsafe {
        builder.push(l, value, 0)
    })
}

/// The Lua value `push` pushes with a [`Builder`], on the raw stack with the shared tables
/// at their slots (and an empty table of shared tables).
///
/// The collector keeps running: everything built is reachable from the stack. (Stopping it
/// here was tried: restarting it wipes its accounting, so it either never caught up with
/// what was built, and a game converting saves in a loop grew without end, or, when paid
/// back, started a collection cycle at every conversion.)
///
/// `push` must own nothing with a destructor in its frames: a Lua error (running out of
/// memory while building tables) unwinds through them by longjmp. Its state lives outside,
/// in the builder and what the closure borrows.
pub(crate) fn make_value(
    lua: &Lua,
    tables: &Metatables,
    push: impl FnOnce(*mut ffi::lua_State, &mut Builder) -> Step,
) -> Result<mlua::Value> {
    let mut builder = Builder::for_tables(tables);
    let args = slots::args(tables, mlua::Nil);
    // SAFETY: the closure's frames and those of `push` hold only references and integers
    // (see above).
    let (result, _) = unsafe {
        raw::on_stack::<mlua::Value, _>(lua, args, |state| {
            ffi::lua_createtable(state, 0, 0);
            ffi::lua_replace(state, REFS);
            if push(state, &mut builder).is_ok() {
                ffi::lua_replace(state, 1);
                ffi::lua_settop(state, 1);
            } else {
                ffi::lua_settop(state, 0);
            }
        })?
    };
    builder.finish()?;
    Ok(result)
}

/// What [`fill_if_lent`] found.
pub(crate) enum Lent {
    /// The table was lent, and is filled now.
    Filled,
    /// The table is not a lent table: nothing done.
    No,
    /// A lent table whose value is gone: kept from a loan that is over.
    Over,
}

/// Fills `target`, if it is a lent table, with the members of its value (an array or an
/// object, taken out of the loan), lending the tables among them in turn, and takes the
/// lazy metatable away (or marks an empty array). All on the raw stack: it runs each time
/// a step first touches a table.
pub(crate) fn fill_if_lent(lua: &Lua, tables: &Metatables, target: &mlua::Table) -> Result<Lent> {
    let mut builder = Builder::for_tables(tables);
    let args = slots::args(tables, target.clone());
    // The members wait outside the frames Lua may unwind (see below), each taken in turn.
    let mut members = None;
    let mut found = Lent::No;
    let mut address = 0;
    let mut complete = false;
    let mut loan = tables.loan.borrow_mut();
    // SAFETY: a Lua error (out of memory while growing a table) unwinds by longjmp through
    // the frames of the closure. They hold only references and integers: the members, the
    // loan and the builder's state live outside (the value taken out of the loan is moved
    // there before any Lua function that can raise is called).
    let filled = unsafe {
        raw::on_stack::<(), _>(lua, args, |state| {
            // REFS, in its slot: no lent document has shared tables.
            ffi::lua_createtable(state, 0, 0);
            ffi::lua_insert(state, REFS);
            if let Some(key) = lent_key(state, TARGET) {
                members = key.and_then(|key| loan.get(key, true)).map(Members::of);
                if members.is_some() {
                    // Setting a key that is there to nil allocates nothing.
                    ffi::lua_pushnil(state);
                    ffi::lua_rawsetp(state, TARGET, lent_slot_key());
                    address = ffi::lua_topointer(state, TARGET) as usize;
                    found = Lent::Filled;
                } else {
                    found = Lent::Over;
                }
            }
            if let Some(Ok(members)) = &mut members {
                complete = builder.fill_lent(state, members, &mut loan).is_ok();
            }
            ffi::lua_settop(state, 0);
        })
    };
    filled?;
    match members {
        Some(Err(kind)) => {
            return Err(Error::new(
                ErrorKind::Value,
                format!("a lent table holds {kind}"),
            ))
        }
        // What the table was filled from stays, for the conversion back to compare with
        // (its lent tables, moved into the loan, are nulls in it now).
        Some(Ok(members)) if complete => loan.keep_filled(address, members.into_value()),
        _ => {}
    }
    drop(loan);
    builder.finish()?;
    Ok(found)
}

/// If the table at `idx` is a lent table, its place in the loan (`None` if it has none).
unsafe fn lent_key(l: *mut ffi::lua_State, idx: c_int) -> Option<Option<i64>> {
    if ffi::lua_getmetatable(l, idx) == 0 {
        return None;
    }
    let lent = ffi::lua_rawequal(l, -1, LAZY_MT) != 0;
    ffi::lua_pop(l, 1);
    if !lent {
        return None;
    }
    Some(slots::lent_place(l, idx))
}

/// The members of a table being filled from its loan.
enum Members {
    Items(Vec<Value>),
    Entries(Vec<(crate::value::Key, Value)>),
}

impl Members {
    /// The members of a lent value; what else it is (never: only arrays and objects are
    /// lent), if not an array or an object.
    fn of(value: Value) -> std::result::Result<Members, &'static str> {
        match value {
            Value::Array(items) => Ok(Members::Items(items)),
            Value::Object(map) => Ok(Members::Entries(map.into_entries())),
            other => Err(other.kind()),
        }
    }

    /// The value the members were taken from.
    fn into_value(self) -> Value {
        match self {
            Members::Items(items) => Value::Array(items),
            Members::Entries(entries) => Value::Object(Map::from_sorted(entries)),
        }
    }
}

/// Pushes document values on the raw Lua stack, keeping the shared tables met so far.
pub(crate) struct Builder {
    defined: FxHashSet<u64>,
    referenced: FxHashSet<u64>,
    error: Option<(Path, String)>,
    /// [`Metatables::refuse_finalizers`].
    refuse_finalizers: bool,
}

/// The error travels in the builder; frames only say that one happened.
pub(crate) type Step = std::result::Result<(), ()>;

impl Builder {
    pub(crate) fn for_tables(tables: &Metatables) -> Builder {
        Builder {
            defined: FxHashSet::default(),
            referenced: FxHashSet::default(),
            error: None,
            refuse_finalizers: tables.refuse_finalizers,
        }
    }

    /// Pushes the library's metatable at `slot`, to be set on a table: in a sandbox, not
    /// one that a script gave a `__gc`, since every table made with it would get a
    /// finalizer, which runs where no limit can stop it. Checked each time, since scripts
    /// run between two tables made.
    unsafe fn library_metatable(&mut self, l: *mut ffi::lua_State, slot: c_int) -> Step {
        if self.refuse_finalizers && has_finalizer(l, slot) {
            let name = match slot {
                ARRAY_MT => "array",
                U64_MT => "u64",
                _ => "bytes",
            };
            return self.fail(format!(
                "the savechain.{name} metatable was given a __gc: scripts run on behalf of \
                 a save cannot have finalizers"
            ));
        }
        ffi::lua_pushvalue(l, slot);
        Ok(())
    }

    /// Pushes an unsigned integer: a Lua integer, or above `math.maxinteger` a
    /// `savechain.u64` box.
    pub(crate) unsafe fn push_u64(&mut self, l: *mut ffi::lua_State, u: u64) -> Step {
        match i64::try_from(u) {
            Ok(i) => ffi::lua_pushinteger(l, i),
            Err(_) => {
                ffi::lua_createtable(l, 1, 0);
                ffi::lua_pushinteger(l, u as i64);
                ffi::lua_rawseti(l, -2, 1);
                self.library_metatable(l, U64_MT)?;
                ffi::lua_setmetatable(l, -2);
            }
        }
        Ok(())
    }

    /// Pushes a byte string. Lua has one string type: byte strings that read as text are
    /// boxed, or they would come back as text.
    pub(crate) unsafe fn push_byte_string(&mut self, l: *mut ffi::lua_State, bytes: &[u8]) -> Step {
        if std::str::from_utf8(bytes).is_err() {
            push_bytes(l, bytes);
            return Ok(());
        }
        ffi::lua_createtable(l, 1, 0);
        push_bytes(l, bytes);
        ffi::lua_rawseti(l, -2, 1);
        self.library_metatable(l, BYTES_MT)?;
        ffi::lua_setmetatable(l, -2);
        Ok(())
    }

    /// Marks the empty table on top of the stack as an array.
    pub(crate) unsafe fn mark_empty_array(&mut self, l: *mut ffi::lua_State) -> Step {
        self.library_metatable(l, ARRAY_MT)?;
        ffi::lua_setmetatable(l, -2);
        Ok(())
    }

    /// After the values are made: the error met, or a reference to a shared table that was
    /// never defined.
    pub(crate) fn finish(self) -> Result<()> {
        if let Some((path, message)) = self.error {
            return Err(Error::new(ErrorKind::Value, message).in_path(path));
        }
        if let Some(id) = self.referenced.difference(&self.defined).min() {
            return Err(Error::new(
                ErrorKind::Value,
                format!("reference [\"r\", [{id}]] to a shared table that is never defined (no [\"s\", [{id}, ...]])"),
            ));
        }
        Ok(())
    }

    fn fail(&mut self, message: String) -> Step {
        self.error = Some((Path::new(), message));
        Err(())
    }

    /// Adds `segment` in front of the path of an error raised below it.
    pub(crate) fn within(&mut self, step: Step, segment: impl FnOnce() -> Segment) -> Step {
        if step.is_err() {
            if let Some((path, _)) = &mut self.error {
                path.push_front(segment());
            }
        }
        step
    }

    /// Fills the lent table at `TARGET` with `members`, each taken out in turn.
    unsafe fn fill_lent(
        &mut self,
        l: *mut ffi::lua_State,
        members: &mut Members,
        loan: &mut Loan,
    ) -> Step {
        match members {
            Members::Items(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.push_lent(l, item, loan)?;
                    ffi::lua_rawseti(l, TARGET, i as i64 + 1);
                }
                if items.is_empty() {
                    self.library_metatable(l, ARRAY_MT)?;
                } else {
                    ffi::lua_pushnil(l);
                }
            }
            Members::Entries(entries) => {
                for (key, item) in entries.iter_mut() {
                    push_bytes(l, key.as_bytes());
                    self.push_lent(l, item, loan)?;
                    ffi::lua_rawset(l, TARGET);
                }
                ffi::lua_pushnil(l);
            }
        }
        ffi::lua_setmetatable(l, TARGET);
        Ok(())
    }

    /// Pushes `value`: a lent table if the loan finds it worth lending (the value moved
    /// into the loan first, so no frame Lua may unwind owns it), else converted.
    unsafe fn push_lent(
        &mut self,
        l: *mut ffi::lua_State,
        value: &mut Value,
        loan: &mut Loan,
    ) -> Step {
        if ffi::lua_checkstack(l, 8) == 0 {
            return self.fail("the Lua stack is full".into());
        }
        if !loan.worth_lending(value) {
            return self.push(l, value, 0);
        }
        // Made at the size it will have once filled (up to a bound): filling it then
        // never grows it a step at a time. What an untouched lent table holds in Lua stays
        // small, and below the size of the members it stands for.
        let (items, entries) = match value {
            Value::Array(items) => (items.len(), 0),
            Value::Object(map) => (0, map.len()),
            _ => (0, 0),
        };
        make_lent(
            l,
            presize(items),
            presize(entries),
            loan.lend(std::mem::take(value)),
        );
        Ok(())
    }

    /// Pushes the Lua value of `value`.
    pub(crate) unsafe fn push(
        &mut self,
        l: *mut ffi::lua_State,
        value: &Value,
        depth: usize,
    ) -> Step {
        match value {
            Value::Null => ffi::lua_pushlightuserdata(l, ptr::null_mut()),
            Value::Bool(b) => ffi::lua_pushboolean(l, c_int::from(*b)),
            Value::Int(i) => ffi::lua_pushinteger(l, *i),
            Value::UInt(u) => self.push_u64(l, *u)?,
            Value::Double(d) => ffi::lua_pushnumber(l, *d),
            Value::String(s) => push_bytes(l, s.as_bytes()),
            Value::Bytes(b) => self.push_byte_string(l, b)?,
            Value::Array(_) | Value::Object(_) => {
                self.enter(l, depth)?;
                new_table(l, value);
                self.fill(l, value, depth)?;
            }
            Value::Table(table) => {
                self.enter(l, depth)?;
                self.push_table(l, table, depth)?;
            }
        }
        Ok(())
    }

    /// Checks the depth of a table about to be made, and room on the stack for it.
    pub(crate) unsafe fn enter(&mut self, l: *mut ffi::lua_State, depth: usize) -> Step {
        if depth >= MAX_DEPTH {
            return self.fail(format!("nested more than {MAX_DEPTH} deep"));
        }
        if ffi::lua_checkstack(l, 8) == 0 {
            return self.fail("the Lua stack is full".into());
        }
        Ok(())
    }

    unsafe fn push_table(&mut self, l: *mut ffi::lua_State, table: &Table, depth: usize) -> Step {
        match table {
            Table::Keyed(entries) => {
                ffi::lua_createtable(l, 0, clamp(entries.len()));
                self.fill_table(l, table, depth)
            }
            Table::Class { .. } => {
                ffi::lua_createtable(l, 0, 0);
                self.fill_table(l, table, depth)
            }
            Table::Ref(id) => {
                let id = *id;
                self.shared_table(l, id)?;
                self.referenced.insert(id);
                Ok(())
            }
            Table::Shared { id, value } => {
                let id = *id;
                self.shared_table(l, id)?;
                if !self.defined.insert(id) {
                    return self.fail(format!("shared table {id} is defined twice"));
                }
                self.fill(l, value, depth)
            }
        }
    }

    /// Pushes the table of shared table `id`, making it on first mention.
    unsafe fn shared_table(&mut self, l: *mut ffi::lua_State, id: u64) -> Step {
        let Ok(key) = i64::try_from(id) else {
            return self.fail(format!("shared table id {id} is too large"));
        };
        if ffi::lua_rawgeti(l, REFS, key) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_pushvalue(l, -1);
            ffi::lua_rawseti(l, REFS, key);
        }
        Ok(())
    }

    /// Fills the table on top of the stack with the contents `body` spells (an array, an
    /// object, a keyed table or a class instance).
    unsafe fn fill(&mut self, l: *mut ffi::lua_State, body: &Value, depth: usize) -> Step {
        match body {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let pushed = self.push(l, item, depth + 1);
                    self.within(pushed, || Segment::Index(i))?;
                    ffi::lua_rawseti(l, -2, i as i64 + 1);
                }
                if items.is_empty() {
                    self.mark_empty_array(l)?;
                }
                Ok(())
            }
            Value::Object(map) => self.fill_object(l, map, depth),
            Value::Table(table) => self.fill_table(l, table, depth),
            other => self.fail(format!(
                "a shared table or class instance holds {}; expected an array, an object or a keyed table",
                other.kind()
            )),
        }
    }

    unsafe fn fill_object(&mut self, l: *mut ffi::lua_State, map: &Map, depth: usize) -> Step {
        for (key, item) in map.iter() {
            push_bytes(l, key.as_bytes());
            let pushed = self.push(l, item, depth + 1);
            self.within(pushed, || Segment::Key(key.to_string()))?;
            ffi::lua_rawset(l, -3);
        }
        Ok(())
    }

    unsafe fn fill_table(&mut self, l: *mut ffi::lua_State, table: &Table, depth: usize) -> Step {
        match table {
            Table::Keyed(entries) => {
                for (key, item) in entries {
                    let pushed = self.keyed_entry(l, key, item, depth);
                    self.within(pushed, || Segment::LuaKey(key.to_string()))?;
                }
                Ok(())
            }
            Table::Class { name, value } => {
                self.fill(l, value, depth)?;
                push_bytes(l, name.as_bytes());
                if ffi::lua_rawget(l, CLASSES) != ffi::LUA_TTABLE {
                    return self.fail(format!(
                        "class {name:?} is not registered (register its metatable with savechain.register_class)"
                    ));
                }
                if self.refuse_finalizers && has_finalizer(l, -1) {
                    return self.fail(format!(
                        "class {name:?} has a __gc: scripts run on behalf of a save cannot have \
                         finalizers, which run where no limit can stop them"
                    ));
                }
                ffi::lua_setmetatable(l, -2);
                Ok(())
            }
            Table::Shared { .. } | Table::Ref(_) => {
                self.fail("a class instance cannot hold a shared table directly".into())
            }
        }
    }

    unsafe fn keyed_entry(
        &mut self,
        l: *mut ffi::lua_State,
        key: &Value,
        item: &Value,
        depth: usize,
    ) -> Step {
        if key.is_null() || matches!(key, Value::Double(d) if d.is_nan()) {
            return self.fail(format!("a Lua table key cannot be {key}"));
        }
        self.push(l, key, depth + 1)?;
        ffi::lua_pushvalue(l, -1);
        if ffi::lua_rawget(l, -3) != ffi::LUA_TNIL {
            return self.fail(format!("the key {key} appears twice in this keyed table"));
        }
        ffi::lua_pop(l, 1);
        self.push(l, item, depth + 1)?;
        ffi::lua_rawset(l, -3);
        Ok(())
    }
}

/// Whether the table at `slot` has a `__gc` field.
unsafe fn has_finalizer(l: *mut ffi::lua_State, slot: c_int) -> bool {
    let slot = ffi::lua_absindex(l, slot);
    push_bytes(l, b"__gc");
    let found = ffi::lua_rawget(l, slot) != ffi::LUA_TNIL;
    ffi::lua_pop(l, 1);
    found
}

/// Pushes a lent table for the loan's slot `key`, with room for `items` and `entries`: it
/// keeps the key itself (a table of its own, one for every lent table and weak, cost the
/// collector and a lookup in a large table each time), under a key no script can name, in
/// room of its own so that filling it never grows it.
unsafe fn make_lent(l: *mut ffi::lua_State, items: c_int, entries: c_int, key: i64) {
    ffi::lua_createtable(l, items, entries.saturating_add(1));
    ffi::lua_pushinteger(l, key);
    ffi::lua_rawsetp(l, -2, lent_slot_key());
    ffi::lua_pushvalue(l, LAZY_MT);
    ffi::lua_setmetatable(l, -2);
}

/// Lends `value`, a non-empty array or object: the lent table that stands for it, its
/// members converted when first touched.
pub(crate) fn lend(lua: &Lua, tables: &Metatables, value: Value) -> Result<mlua::Value> {
    let (items, entries) = match &value {
        Value::Array(items) => (items.len(), 0),
        Value::Object(map) => (0, map.len()),
        _ => (0, 0),
    };
    let key = tables.loan.borrow_mut().lend(value);
    // SAFETY: makes a table, sets two keys and a metatable (room checked): only running out
    // of memory raises, unwinding a frame that owns nothing.
    let (table, ()) = unsafe {
        raw::on_stack::<mlua::Value, _>(lua, slots::args(tables, mlua::Nil), |state| {
            ffi::luaL_checkstack(state, 4, ptr::null());
            make_lent(state, presize(items), presize(entries), key);
            ffi::lua_replace(state, 1);
            ffi::lua_settop(state, 1);
        })?
    };
    Ok(table)
}

/// Pushes a Lua string of `bytes`.
pub(crate) unsafe fn push_bytes(l: *mut ffi::lua_State, bytes: &[u8]) {
    ffi::lua_pushlstring(l, bytes.as_ptr().cast(), bytes.len());
}

/// The most members a lent table is made with room for before it is filled: filling small
/// tables from empty is dear (they grow from 0 to 1, 2, 4, 8... members, rehashed each
/// time), large ones pay for growing much less a member; and room made for members is
/// memory the sandbox counts, even if no step touches the table.
const PRESIZE_UP_TO: usize = 64;

fn presize(members: usize) -> c_int {
    clamp(members.min(PRESIZE_UP_TO))
}

pub(crate) fn clamp(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Pushes an empty table sized for the array or object `body`.
unsafe fn new_table(l: *mut ffi::lua_State, body: &Value) {
    match body {
        Value::Array(items) => ffi::lua_createtable(l, clamp(items.len()), 0),
        Value::Object(map) => ffi::lua_createtable(l, 0, clamp(map.len())),
        _ => ffi::lua_createtable(l, 0, 0),
    }
}
