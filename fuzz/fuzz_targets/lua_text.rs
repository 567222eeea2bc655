//! Any bytes, as save text straight into Lua (`lua::from_text`) and through a document tree
//! (decompressed, `text::from_slice`, then `lua::to_lua`): both refuse, or make Lua values
//! that save as the same text, whether written through a tree or straight from Lua
//! (`lua::to_text`). A
//! refusal of the text itself is the same error both ways; one of what Lua tables of tags
//! must be (a key twice, a shared table defined twice, an undefined reference, an unknown
//! class) is of the same kind, and straight from text names its line and column (the tree
//! has only a path, and may meet another wrong tag first when several are).
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use savechain::lua::{from_lua, from_text, install, mlua, to_lua, to_text};
use savechain::{compress, text};

thread_local! {
    static LUA: RefCell<Option<mlua::Lua>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    LUA.with(|cell| {
        let mut cell = cell.borrow_mut();
        let lua = cell.get_or_insert_with(|| {
            let lua = mlua::Lua::new();
            let register: mlua::Function = install(&lua).unwrap().get("register_class").unwrap();
            register.call::<()>(("Ship", lua.create_table().unwrap())).unwrap();
            lua
        });
        let straight = from_text(lua, data);
        // `from_text` reads compressed text too; the tree's reader takes it decompressed.
        let tree_text = |data| {
            compress::decompress(data, compress::DEFAULT_LIMIT)
                .and_then(|plain| text::from_slice(&plain))
        };
        let through_tree = tree_text(data).and_then(|value| to_lua(lua, &value));
        match (&straight, &through_tree) {
            (Ok(straight), Ok(tree)) => {
                let a = text::to_vec(&from_lua(lua, straight).unwrap()).unwrap();
                let b = text::to_vec(&from_lua(lua, tree).unwrap()).unwrap();
                assert!(a == b, "different values");
                let straight_text = to_text(lua, straight, text::Style::Pretty).unwrap();
                assert!(straight_text == a, "different text written straight");
                let a = text::to_vec_compact(&from_lua(lua, straight).unwrap()).unwrap();
                let straight_text = to_text(lua, straight, text::Style::Compact).unwrap();
                assert!(straight_text == a, "different compact text written straight");
                // The decimal view, written straight from Lua and through the tree, alike.
                let mut view = Vec::new();
                let value = from_lua(lua, straight).unwrap();
                text::write_value(&mut view, &value, text::Style::Decimal).unwrap();
                let straight_text = to_text(lua, straight, text::Style::Decimal).unwrap();
                assert!(straight_text == view, "different decimal view written straight");
                assert!(text::from_slice(&view).unwrap() == value, "the view reads back otherwise");
            }
            (Err(a), Err(b)) if tree_text(data).is_err() => {
                assert_eq!(a.to_string(), b.to_string())
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.kind(), b.kind(), "straight {a}, tree {b}");
                assert!(a.location().is_some(), "straight names no place: {a}");
            }
            _ => panic!(
                "one way refused, the other did not: straight {:?}, tree {:?}",
                straight.as_ref().err(),
                through_tree.as_ref().err()
            ),
        }
    });
});
