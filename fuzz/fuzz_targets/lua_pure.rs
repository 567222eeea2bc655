//! Any bytes, as save text read by the pure-Lua codec of `lua/savechain.lua` (loaded as a
//! stock Lua host loads the file) and by the Rust core (`lua::from_text`): both refuse, or
//! both make Lua values, which each writes back as the same text, pretty and compact.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use savechain::lua::{from_text, install, mlua, to_text};
use savechain::text::Style;

/// A Lua state with the Rust core, and one with the pure-Lua codec's `decode` and `encode`.
struct States {
    rust: mlua::Lua,
    pure: mlua::Lua,
    decode: mlua::Function,
    encode: mlua::Function,
}

thread_local! {
    static STATES: RefCell<Option<States>> = const { RefCell::new(None) };
}

fn states() -> States {
    let rust = mlua::Lua::new();
    let register: mlua::Function = install(&rust).unwrap().get("register_class").unwrap();
    register.call::<()>(("Ship", rust.create_table().unwrap())).unwrap();
    let pure = mlua::Lua::new();
    // Called with a file name, as `require` calls a file it finds: the pure-Lua codec.
    let module: mlua::Table = pure
        .load(include_str!("../../lua/savechain.lua"))
        .set_name("@lua/savechain.lua")
        .call(("savechain", "lua/savechain.lua"))
        .unwrap();
    let register: mlua::Function = module.get("register_class").unwrap();
    register.call::<()>(("Ship", pure.create_table().unwrap())).unwrap();
    States {
        decode: module.get("decode").unwrap(),
        encode: module.get("encode").unwrap(),
        rust,
        pure,
    }
}

fuzz_target!(|data: &[u8]| {
    STATES.with(|cell| {
        let mut cell = cell.borrow_mut();
        let s = cell.get_or_insert_with(states);
        let text = s.pure.create_string(data).unwrap();
        let pure: mlua::Result<mlua::Value> = s.decode.call(text);
        let rust = from_text(&s.rust, data);
        match (&pure, &rust) {
            (Ok(pure), Ok(rust)) => {
                // Tables as keys of a save with shared tables are ordered by a hash in Rust
                // and by their text here (docs/FORMAT.md, section 8): only their order may
                // differ, which this target does not try to tell apart.
                let unordered = contains(data, b"\"s\"") && contains(data, b"\"t\"");
                for (style, compact) in [(Style::Pretty, false), (Style::Compact, true)] {
                    let options = s.pure.create_table().unwrap();
                    options.set("compact", compact).unwrap();
                    let a: mlua::Result<mlua::String> = s.encode.call((pure, options));
                    let b = to_text(&s.rust, rust, style);
                    match (a, b) {
                        (Ok(a), Ok(b)) => {
                            assert!(unordered || a.as_bytes()[..] == b[..], "different text")
                        }
                        (Err(_), Err(_)) => {}
                        (a, b) => panic!(
                            "one side refused to write: pure {:?}, rust {:?}",
                            a.err(),
                            b.err()
                        ),
                    }
                }
            }
            (Err(_), Err(_)) => {}
            _ => panic!(
                "one side refused, the other did not: pure {:?}, rust {:?}",
                pure.as_ref().err(),
                rust.as_ref().err()
            ),
        }
        // Lua values of one input must not outlive it.
        s.pure.gc_collect().unwrap();
    });
});

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
