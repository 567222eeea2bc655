//! Any save text that loads, through Lua and back: converting to Lua values must fail
//! cleanly or succeed, and what comes back must be a fixed point of another trip (the first
//! may normalise: a keyed table with keys 1..n becomes an array, shared ids renumber).
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use savechain::lua::{from_lua, install, mlua, to_lua};
use savechain::text;

thread_local! {
    static LUA: RefCell<Option<mlua::Lua>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = text::from_slice(data) else {
        return;
    };
    LUA.with(|cell| {
        let mut cell = cell.borrow_mut();
        let lua = cell.get_or_insert_with(|| {
            let lua = mlua::Lua::new();
            install(&lua).unwrap();
            let ship = lua.create_table().unwrap();
            let register: mlua::Function = install(&lua).unwrap().get("register_class").unwrap();
            register.call::<()>(("Ship", ship)).unwrap();
            lua
        });
        // References without definitions, unknown classes, duplicate keys: clean errors.
        let Ok(in_lua) = to_lua(lua, &value) else {
            return;
        };
        let once = from_lua(lua, &in_lua).expect("what came from a save can be saved");
        let again = to_lua(lua, &once).unwrap();
        let twice = from_lua(lua, &again).unwrap();
        assert_eq!(
            text::to_string(&once).unwrap(),
            text::to_string(&twice).unwrap(),
            "not a fixed point"
        );
        lua.gc_collect().unwrap();
    });
});
