//! The Lua tables that give saved values their Lua shape: the array, u64 and bytes
//! metatables and the class registry. Both conversions read them, and the `savechain` Lua
//! library hands the same tables to scripts, so they are made once per Lua state.

use mlua::{Lua, Table};

use super::loan::SharedLoan;

/// The tables the conversions and the Lua library share, one set per Lua state.
#[derive(Clone)]
pub(crate) struct Metatables {
    /// Marks a table as an array, so that it is saved as `[]` even when empty.
    pub array: Table,
    /// Boxes integers above `math.maxinteger`.
    pub u64: Table,
    /// Boxes byte strings that happen to be valid UTF-8, so they stay byte strings.
    pub bytes: Table,
    /// Registered classes: name to metatable.
    pub classes: Table,
    /// Registered classes: metatable to name.
    pub class_names: Table,
    /// The metatable of tables lent to Lua and not yet touched (`lazy.rs`).
    pub lazy: Table,
    /// Lent tables to their place in the loan (weak keys).
    pub lazy_slots: Table,
    /// What is lent, by place.
    pub loan: SharedLoan,
    /// In a sandbox: no table gets a metatable with `__gc` (see `Builder`).
    pub refuse_finalizers: bool,
}

impl Metatables {
    /// Makes a fresh set in `lua`; the `__name`s are what error messages call the boxes.
    pub(crate) fn new(lua: &Lua, refuse_finalizers: bool) -> mlua::Result<Metatables> {
        Ok(Metatables {
            array: lua.create_table_from([("__name", "savechain.array")])?,
            u64: lua.create_table_from([("__name", "savechain.u64")])?,
            bytes: lua.create_table_from([("__name", "savechain.bytes")])?,
            classes: lua.create_table()?,
            class_names: lua.create_table()?,
            lazy: lua.create_table()?,
            lazy_slots: {
                let slots = lua.create_table()?;
                slots.set_metatable(Some(lua.create_table_from([("__mode", "k")])?))?;
                slots
            },
            loan: SharedLoan::default(),
            refuse_finalizers,
        })
    }
}
