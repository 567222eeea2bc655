//! Where each table sits on Lua's raw stack while Rust walks Lua values (`from_lua.rs`,
//! `lua_to_text.rs`) or builds them (`to_lua.rs`, and through it `text_to_lua.rs` and the
//! fills of lent tables): one layout for all of them, declared here and pushed by [`args`].

use std::ffi::{c_int, c_void};

use mlua::{ffi, IntoLua, Table};

use super::metatables::Metatables;

/// [`Metatables::array`].
pub(super) const ARRAY_MT: c_int = 1;
/// [`Metatables::u64`].
pub(super) const U64_MT: c_int = 2;
/// [`Metatables::bytes`].
pub(super) const BYTES_MT: c_int = 3;
/// [`Metatables::classes`]: class name to metatable.
pub(super) const CLASSES: c_int = 4;
/// [`Metatables::class_names`]: metatable to class name.
pub(super) const CLASS_NAMES: c_int = 5;
/// [`Metatables::lazy`].
pub(super) const LAZY_MT: c_int = 6;
/// What the work is on, given after the tables: the value a walk starts from.
pub(super) const VALUE: c_int = 7;
/// A build's shared tables by id, made in the slot after the tables.
pub(super) const REFS: c_int = 7;
/// The lent table a fill fills, after the shared tables by id.
pub(super) const TARGET: c_int = 8;

/// The key under which a lent table keeps its place in the loan (`lazy.rs`), a light
/// userdata no script can make: the address of a static of this crate.
pub(super) fn lent_slot_key() -> *const c_void {
    static LENT: u8 = 0;
    std::ptr::addr_of!(LENT).cast()
}

/// The place in the loan that the table at `idx` keeps under [`lent_slot_key`], if it
/// keeps one.
///
/// # Safety
///
/// `idx` is a table on the stack of `l`, with a slot free above the top.
pub(super) unsafe fn lent_place(l: *mut ffi::lua_State, idx: c_int) -> Option<i64> {
    ffi::lua_rawgetp(l, idx, lent_slot_key());
    let place =
        (ffi::lua_isinteger(l, -1) != 0).then(|| ffi::lua_tointegerx(l, -1, std::ptr::null_mut()));
    ffi::lua_pop(l, 1);
    place
}

/// The arguments that put the tables of `tables` in their slots, followed by `more`.
#[allow(clippy::type_complexity)]
pub(super) fn args<M: IntoLua>(
    tables: &Metatables,
    more: M,
) -> (&Table, &Table, &Table, &Table, &Table, &Table, M) {
    (
        &tables.array,
        &tables.u64,
        &tables.bytes,
        &tables.classes,
        &tables.class_names,
        &tables.lazy,
        more,
    )
}
