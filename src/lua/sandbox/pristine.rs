//! The tables of a Lua state that live as long as it and that scripts can reach (the globals,
//! each standard library and table among them, the strings' metatable) as the sandbox set
//! them up, copied where no script can reach the copies; and putting them back, in place,
//! for the next save.
//!
//! Their fields are functions and constants, and the tables among them have no metatable
//! or a protected one, whose own fields no script can change. Everything else a script
//! can reach is made anew by the sandbox's setup for each save (the savechain library,
//! `require` and its modules), so after [`Pristine::restore`] and that setup, nothing a
//! script did remains reachable.

use std::ffi::c_int;

use mlua::{ffi, Lua, Table};

/// The tables, each with a copy of what it held and its metatable.
pub(super) struct Pristine {
    tables: Vec<(Table, Table, Option<Table>)>,
}

impl Pristine {
    /// Copies the globals, the tables among them (the standard libraries, the refusing
    /// stand-ins) and the strings' metatable, as they are now: set up, before any script ran.
    pub(super) fn take(lua: &Lua) -> mlua::Result<Pristine> {
        let globals = lua.globals();
        let mut live = vec![globals.clone()];
        for pair in globals.pairs::<mlua::Value, mlua::Value>() {
            if let (_, mlua::Value::Table(table)) = pair? {
                if table != globals {
                    live.push(table);
                }
            }
        }
        if let Some(strings) = string_metatable(lua)? {
            live.push(strings);
        }
        let tables = live
            .into_iter()
            .map(|table| {
                let metatable = table.metatable();
                Ok((copy(lua, &table)?, table, metatable))
            })
            .collect::<mlua::Result<Vec<_>>>()?
            .into_iter()
            .map(|(copy, table, metatable)| (table, copy, metatable))
            .collect();
        Ok(Pristine { tables })
    }

    /// Puts every table back as it was taken, in place (the same tables, so that what holds
    /// them, the registry's globals, the strings' metatable's `__index`, holds them still),
    /// with the metatable it had.
    pub(super) fn restore(&self, lua: &Lua) -> mlua::Result<()> {
        // Each table, its copy and its metatable (or nil), on the stack.
        let args: mlua::Variadic<mlua::Value> = self
            .tables
            .iter()
            .flat_map(|(t, c, m)| {
                let metatable = m.clone().map_or(mlua::Nil, mlua::Value::Table);
                [
                    mlua::Value::Table(t.clone()),
                    mlua::Value::Table(c.clone()),
                    metatable,
                ]
            })
            .collect();
        let n = self.tables.len() as c_int;
        // SAFETY: raw gets and sets of tables on the stack, room checked; `lua_next` allows
        // clearing fields during a traversal. Nothing here raises but running out of
        // memory, which unwinds frames that own nothing.
        unsafe {
            lua.exec_raw::<()>(args, |l| {
                ffi::luaL_checkstack(l, 4, std::ptr::null());
                for i in 0..n {
                    let (table, copy, metatable) = (3 * i + 1, 3 * i + 2, 3 * i + 3);
                    clear(l, table);
                    ffi::lua_pushnil(l);
                    while ffi::lua_next(l, copy) != 0 {
                        ffi::lua_pushvalue(l, -2);
                        ffi::lua_insert(l, -2);
                        ffi::lua_rawset(l, table);
                    }
                    ffi::lua_pushvalue(l, metatable);
                    ffi::lua_setmetatable(l, table);
                }
            })
        }
    }
}

/// Removes every field of the table at `index`.
unsafe fn clear(l: *mut ffi::lua_State, index: c_int) {
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, index) != 0 {
        ffi::lua_pop(l, 1);
        ffi::lua_pushvalue(l, -1);
        ffi::lua_pushnil(l);
        ffi::lua_rawset(l, index);
    }
}

/// A table with the fields of `table`, raw.
fn copy(lua: &Lua, table: &Table) -> mlua::Result<Table> {
    let copy = lua.create_table()?;
    for pair in table.pairs::<mlua::Value, mlua::Value>() {
        let (key, value) = pair?;
        copy.raw_set(key, value)?;
    }
    Ok(copy)
}

/// The metatable strings share.
fn string_metatable(lua: &Lua) -> mlua::Result<Option<Table>> {
    // SAFETY: pushes a string and its metatable, which `exec_raw` returns.
    unsafe {
        lua.exec_raw::<Option<Table>>((), |l| {
            ffi::lua_pushliteral(l, c"");
            if ffi::lua_getmetatable(l, -1) == 0 {
                ffi::lua_pushnil(l);
            }
            ffi::lua_remove(l, -2);
        })
    }
}
