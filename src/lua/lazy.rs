//! A document lent to Lua a table at a time: upgrade steps get tables that turn into the
//! document's contents the first time anything touches them, and what no step touched goes
//! back to the document without ever having been converted.
//!
//! A lent table is an empty table with the metatable `Metatables::lazy`, keeping its place
//! in the loan under a key no script can name (`slots::lent_slot_key`). Reading, writing,
//! `#`, `pairs`, `ipairs` and the `table` library reach it through metamethods, which fill
//! it with its members (its larger tables lent in turn, small ones converted with it) and
//! take the metatable away, leaving the very table a full conversion would have made. The
//! functions that go around metamethods (`next`, `rawget`, `rawset`, `rawlen`,
//! `getmetatable`, `setmetatable`) are wrapped in the sandbox to fill it first; Rust's own
//! conversions know lent tables. So a step sees exactly what it would see
//! on a fully converted table, and only pays for what it touches.
//!
//! Documents with shared tables are lent whole (converted at once): their references tie
//! places together that a table at a time cannot keep apart.

use mlua::Lua;

use super::chunk::Chunk;
use super::metatables::Metatables;
use super::to_lua;
use crate::error::Result;
use crate::value::{Table, Value};

/// Gives `value` to Lua: a lent table for a non-empty array or object (whose members are
/// converted when first touched), the converted value for anything else, or for a
/// document with shared tables. `shared` says whether it has any, when the caller knows
/// (finding out walks the whole document).
pub(crate) fn lend(
    lua: &Lua,
    tables: &Metatables,
    value: Value,
    shared: Option<bool>,
) -> Result<mlua::Value> {
    let lendable = match &value {
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
        _ => false,
    };
    if !lendable || shared.unwrap_or_else(|| has_shared_tables(&value)) {
        return to_lua::convert(lua, tables, &value);
    }
    to_lua::lend(lua, tables, value)
}

/// Whether a shared table or a reference to one is anywhere in `value`.
fn has_shared_tables(value: &Value) -> bool {
    // Scalars, most members, are passed over without a call.
    let holds = |v: &Value| {
        matches!(v, Value::Array(_) | Value::Object(_) | Value::Table(_)) && has_shared_tables(v)
    };
    match value {
        Value::Array(items) => items.iter().any(holds),
        Value::Object(map) => map.iter().any(|(_, v)| holds(v)),
        Value::Table(table) => match &**table {
            Table::Shared { .. } | Table::Ref(_) => true,
            Table::Keyed(entries) => entries
                .iter()
                .any(|(k, v)| has_shared_tables(k) || has_shared_tables(v)),
            Table::Class { value, .. } => has_shared_tables(value),
        },
        _ => false,
    }
}

/// Fills the lent table `table` with its members, lending its own tables in turn, and
/// takes the lazy metatable away. Called through the metamethods and the wrapped raw
/// functions; does nothing to a table that is not lent.
pub(crate) fn materialize(lua: &Lua, tables: &Metatables, table: &mlua::Table) -> mlua::Result<()> {
    match to_lua::fill_if_lent(lua, tables, table).map_err(mlua::Error::external)? {
        to_lua::Lent::Filled | to_lua::Lent::No => Ok(()),
        to_lua::Lent::Over => Err(mlua::Error::runtime(
            "this table belongs to a save whose upgrade is over (a step kept it past its run)",
        )),
    }
}

/// The sandbox's wrappers of the functions that go around metamethods, and the lazy
/// metatable's metamethods: each fills a lent table before doing what Lua does.
const WRAPPERS: &str = r#"
local materialize, lazy = ...
local getmt, setmt, raw_next, raw_get, raw_set, raw_len = getmetatable, setmetatable, next, rawget, rawset, rawlen
local type, pairs = type, pairs
local function real(t)
  if type(t) == "table" and getmt(t) == lazy then materialize(t) end
  return t
end
next = function(t, ...) return raw_next(real(t), ...) end
rawget = function(t, ...) return raw_get(real(t), ...) end
rawset = function(t, ...) return raw_set(real(t), ...) end
rawlen = function(t) return raw_len(real(t)) end
getmetatable = function(t) return getmt(real(t)) end
setmetatable = function(t, ...) return setmt(real(t), ...) end
lazy.__index = function(t, k) materialize(t) return t[k] end
lazy.__newindex = function(t, k, v) materialize(t) t[k] = v end
lazy.__len = function(t) materialize(t) return #t end
lazy.__pairs = function(t) materialize(t) return pairs(t) end
"#;

/// Sets up lending in `lua`, whose globals are a sandbox's: the metamethods of lent tables
/// and the wrapped raw functions. `materialize` fills a lent table when called with it.
pub(crate) fn install(
    lua: &Lua,
    tables: &Metatables,
    materialize: mlua::Function,
) -> mlua::Result<()> {
    static CHUNK: Chunk = Chunk::of_crate("=savechain lending", WRAPPERS, true);
    CHUNK
        .load_kept(lua)?
        .call::<()>((materialize, tables.lazy.clone()))
}

#[cfg(test)]
mod tests {
    //! Every way a step can look at or change its data gives the same as on a fully
    //! converted table: each snippet runs once on lent data and once on converted data, and
    //! what it returns, what it prints and the document it leaves must be the same.

    use crate::lua::{from_lua, install_lending, lend, take_back, to_lua, Limits, Sandbox};
    use crate::value::Value;

    const DOCUMENT: &str = r#"{
        "player": {"name": "Wren", "hp": 24, "tags": ["brave", "tall", "quick"], "nothing": null},
        "list": [3, 1, 2, ["d", "0x1.8p+1"]],
        "empty": [],
        "blank": {},
        "big": 18446744073709551615,
        "blob": ["b", "h\u00e9llo"],
        "text_blob": ["b", "hello"],
        "nested": {"a": {"b": {"c": [1, {"d": 2}]}}},
        "keyed": ["t", [[true, "yes"], [1, "one"]]],
        "systems": [{"id": "sol", "planets": 8}, {"id": "vega", "planets": 3}]
    }"#;

    /// A sandbox that lends tables of more than `lend_above` values (0: every table).
    fn sandbox_lending_above(lend_above: usize) -> Sandbox {
        let sandbox = Sandbox::new(Limits::default()).unwrap();
        install_lending(sandbox.lua()).unwrap();
        let tables = crate::lua::library::installed(sandbox.lua()).unwrap();
        tables.loan.borrow_mut().lend_above = lend_above;
        sandbox
    }

    /// Every table lent, so that the tests reach lent tables everywhere in the small
    /// document.
    fn sandbox() -> Sandbox {
        sandbox_lending_above(0)
    }

    /// Runs `step` (a chunk returning `function(data) ... end`) on the document, lent or
    /// converted; returns its result, what it printed and the document after.
    fn run(sandbox: &Sandbox, step: &str, lent: bool) -> (Value, Vec<String>, Value) {
        let document = crate::text::from_str(DOCUMENT).unwrap();
        let lua = sandbox.lua();
        let data = if lent {
            lend(lua, document, None).unwrap()
        } else {
            to_lua(lua, &document).unwrap()
        };
        let function: mlua::Function = sandbox.run(step, "step").unwrap();
        let result: mlua::Value = sandbox
            .guard(|_| function.call(data.clone()))
            .unwrap_or_else(|e| panic!("{step}: {e}"));
        let printed = sandbox.take_printed();
        let result = from_lua(lua, &result).unwrap();
        let after = if lent {
            take_back(lua, &data).unwrap().0
        } else {
            from_lua(lua, &data).unwrap()
        };
        (result, printed, after)
    }

    fn same_either_way(step: &str) {
        let sandbox = sandbox();
        let converted = run(&sandbox, step, false);
        let lent = run(&sandbox, step, true);
        assert_eq!(lent, converted, "{step}");
        // As lent in upgrades: small tables converted with the table they are in.
        let sandbox = sandbox_lending_above(crate::lua::loan::LEND_ABOVE);
        assert_eq!(run(&sandbox, step, true), converted, "{step}");
    }

    #[test]
    fn reading_behaves_as_on_converted_tables() {
        for body in [
            // pairs, next, ipairs, #, rawlen, rawget, rawequal, type
            "local keys = {} for k in pairs(data) do keys[#keys + 1] = k end table.sort(keys) return keys",
            "local k, v = next(data.player) return k ~= nil and type(v) ~= 'nil'",
            "local n = 0 for k, v in next, data.nested.a do n = n + 1 end return n",
            "local s = 0 for i, v in ipairs(data.list) do if type(v) == 'number' then s = s + v end end return s",
            "return {#data.list, rawlen(data.player.tags), #data.empty, #data.blank}",
            "return {rawget(data, 'player') ~= nil, rawget(data.player, 'hp'), rawget(data.player, 'none') == nil}",
            "return {rawequal(data.player, data.player), type(data.nested), data.nested == data.nested}",
            "return data.nested.a.b.c[2].d",
            // getmetatable and the library's views of it
            "local sc = require('savechain') return {sc.is_array(data.empty), sc.is_array(data.blank), getmetatable(data.player) == nil, sc.is_bytes(data.text_blob)}",
            "return {tostring(data.big), type(data.blob)}",
            // table library
            "return table.concat(data.player.tags, ',')",
            "return {table.unpack(data.player.tags)}",
            "local t = {} for i = 1, #data.systems do t[i] = data.systems[i].id end return t",
            // encoding a part while it is lent
            "return require('savechain').encode(data.nested)",
            "print(data.player.name, #data.list) print(data.nested.a.b.c[1]) return true",
            // inside a coroutine
            "return coroutine.wrap(function() local n = 0 for _ in pairs(data.player) do n = n + 1 coroutine.yield() end return n end)()",
            "local co = coroutine.wrap(function() for k in pairs(data.blank) do coroutine.yield(k) end return 'done' end) return co()",
            "return require('savechain').equal(data.nested, data.nested)",
        ] {
            same_either_way(&format!("return function(data) {body} end"));
        }
    }

    #[test]
    fn writing_behaves_as_on_converted_tables() {
        for body in [
            "data.player.hp = data.player.hp + 1",
            "rawset(data.player, 'level', 3)",
            "data.player.nothing = nil data.blank.x = 1",
            "table.insert(data.list, 9) table.insert(data.player.tags, 1, 'first')",
            "table.remove(data.list, 1) table.remove(data.player.tags)",
            "table.sort(data.player.tags)",
            "table.move(data.list, 1, 2, 3, data.player.tags)",
            "setmetatable(data.empty, nil) data.empty[1] = 1",
            "require('savechain').array(data.blank)",
            "setmetatable(data.list, nil) setmetatable(data.systems, nil)",
            "setmetatable(data.nested.a, {__index = function() return 1 end}) data.nested.a = nil",
            "for k, v in pairs(data.systems[1]) do data.systems[1][k] = nil end",
            // sharing: the same table in two places, and a lent table as a key
            "data.alias = data.player",
            "data.by_table = setmetatable({}, nil) local t = {} t[data.nested.a] = 'a' data.keyed_by = t",
            "data.player.self = data.player",
            // the upgrade helpers
            "local up = require('savechain.upgrade') up.rename(data, 'player.hp', 'health')",
            "local up = require('savechain.upgrade') up.move(data, 'nested.a.b', 'moved')",
            "local up = require('savechain.upgrade') up.default(data, 'player.level', 1) up.default(data, 'player.hp', 99)",
            "local up = require('savechain.upgrade') up.map(data, 'systems', function(s) s.planets = s.planets * 2 end)",
            "local up = require('savechain.upgrade') up.index_by(data, 'systems', 'id')",
            "local up = require('savechain.upgrade') up.drop(data, 'nested.a') up.take_dropped()",
            // a new document from lent parts
            "data = {player = data.player, count = #data.systems}",
        ] {
            same_either_way(&format!("return function(data) {body} return data end"));
        }
    }

    /// A lent table is made with room for its members, so that filling it does not grow it
    /// a step at a time, but only up to a bound: a large member nobody touches costs Lua
    /// little memory, however many members it has.
    #[test]
    fn an_untouched_large_member_costs_lua_little_memory() {
        let sandbox = sandbox_lending_above(crate::lua::loan::LEND_ABOVE);
        let lua = sandbox.lua();
        let items: Vec<Value> = (0..200_000).map(Value::Int).collect();
        let mut document = crate::value::Map::new();
        document.insert("big", Value::Array(items));
        document.insert("small", Value::Int(1));
        let document = Value::Object(document);
        let touch: mlua::Function = sandbox
            .run("return function(data) return data.small end", "step")
            .unwrap();
        lua.gc_collect().unwrap();
        let before = lua.used_memory();
        let data = lend(lua, document.clone(), None).unwrap();
        let _: i64 = touch.call(data.clone()).unwrap();
        let grown = lua.used_memory() - before;
        // 200,000 members would be 3.2 MB of room in Lua.
        assert!(grown < 16 << 10, "{grown} bytes");
        assert_eq!(take_back(lua, &data).unwrap().0, document);
    }

    #[test]
    fn untouched_parts_come_back_without_being_converted() {
        let sandbox = sandbox();
        let lua = sandbox.lua();
        let document = crate::text::from_str(DOCUMENT).unwrap();
        let data = lend(lua, document.clone(), None).unwrap();
        let touch: mlua::Function = sandbox
            .run("return function(data) return data.player.name end", "step")
            .unwrap();
        let _: String = touch.call(data.clone()).unwrap();
        // Only the root and `player` were filled: the rest is still lent.
        let tables = crate::lua::library::installed(lua).unwrap();
        let lent = tables.loan.borrow().still_lent();
        // Still lent: list, nested, systems and player.tags (empty tables, Lua tables and
        // scalars are converted with their parent).
        assert_eq!(lent, 4);
        assert_eq!(take_back(lua, &data).unwrap().0, document);
    }

    #[test]
    fn a_table_kept_past_its_run_is_an_error_not_another_saves_data() {
        let sandbox = sandbox();
        let lua = sandbox.lua();
        let keep: mlua::Function = sandbox
            .run("return function(data) stash = data.nested end", "step")
            .unwrap();
        let data = lend(lua, crate::text::from_str(DOCUMENT).unwrap(), None).unwrap();
        keep.call::<()>(data.clone()).unwrap();
        take_back(lua, &data).unwrap();
        // The next save: a step touches what an earlier one kept.
        let other = lend(
            lua,
            crate::text::from_str(r#"{"nested": {"x": 1}}"#).unwrap(),
            None,
        )
        .unwrap();
        let touch: mlua::Function = sandbox
            .run("return function(data) return stash.a end", "step")
            .unwrap();
        let err = touch.call::<mlua::Value>(other.clone()).unwrap_err();
        assert!(
            err.to_string().contains("a save whose upgrade is over"),
            "{err}"
        );
        assert_eq!(
            take_back(lua, &other).unwrap().0,
            crate::text::from_str(r#"{"nested": {"x": 1}}"#).unwrap()
        );
    }

    /// A sandbox reset and set up for lending again and again holds no more memory for it:
    /// nothing of an earlier save's lending stays reachable (a function kept in Lua that
    /// held the tables it was made for kept every earlier set of tables alive).
    #[test]
    fn lending_again_after_resets_leaves_nothing_behind() {
        let sandbox = Sandbox::new(Limits::default()).unwrap();
        let lua = sandbox.lua();
        let mut used = Vec::new();
        for _ in 0..12 {
            sandbox.reset().unwrap();
            install_lending(lua).unwrap();
            let step: mlua::Function = sandbox
                .run(
                    "return function(data) data.nested.a.b.x = #data.list end",
                    "step",
                )
                .unwrap();
            let data = lend(lua, crate::text::from_str(DOCUMENT).unwrap(), None).unwrap();
            step.call::<()>(data.clone()).unwrap();
            take_back(lua, &data).unwrap();
            drop((step, data));
            lua.gc_collect().unwrap();
            lua.gc_collect().unwrap();
            used.push(lua.used_memory());
        }
        assert_eq!(used[4], used[11], "{used:?}");
    }
}
