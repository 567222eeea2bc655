//! The Lua tables that give saved values their Lua shape: the array, u64 and bytes
//! metatables and the class registry. Both conversions read them, and the `savechain` Lua
//! library hands the same tables to scripts, so they are made once per Lua state.

use mlua::{ffi, Lua, Table};

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
    /// What is lent, by place.
    pub loan: SharedLoan,
    /// In a sandbox: no table gets a metatable with `__gc` (see `Builder`).
    pub refuse_finalizers: bool,
    /// In a sandbox, its memory limit: the most bytes of strings a conversion out of Lua
    /// copies (one Lua string kept in many places is copied for each), so that what a
    /// script leaves cannot take more memory outside Lua than it was allowed inside.
    pub copy_limit: usize,
}

impl Metatables {
    /// Makes a fresh set in `lua`; the `__name`s are what error messages call the boxes.
    pub(crate) fn new(lua: &Lua, sandbox_memory: Option<usize>) -> mlua::Result<Metatables> {
        // Made on the raw stack at once: a sandbox makes them again for every save.
        // SAFETY: pushes tables and strings, room checked; only running out of memory
        // raises, unwinding frames that own nothing.
        let (array, u64, bytes, classes, class_names, lazy) = unsafe {
            lua.exec_raw::<(Table, Table, Table, Table, Table, Table)>((), |l| {
                ffi::luaL_checkstack(l, 10, std::ptr::null());
                for name in [c"savechain.array", c"savechain.u64", c"savechain.bytes"] {
                    ffi::lua_createtable(l, 0, 1);
                    ffi::lua_pushstring(l, name.as_ptr());
                    ffi::lua_setfield(l, -2, c"__name".as_ptr());
                }
                for _ in 0..3 {
                    ffi::lua_createtable(l, 0, 0);
                }
            })?
        };
        Ok(Metatables {
            array,
            u64,
            bytes,
            classes,
            class_names,
            lazy,
            loan: SharedLoan::default(),
            refuse_finalizers: sandbox_memory.is_some(),
            copy_limit: sandbox_memory.unwrap_or(usize::MAX),
        })
    }
}
