//! The sandbox's globals against Lua 5.4's own: `load` gives a chunk the global environment
//! unless told otherwise, and `print` collects its lines for the game to take.

use mlua::Lua;
use savechain::lua::{Limits, Sandbox};

fn sandbox() -> Sandbox {
    Sandbox::new(Limits::new(5_000_000, 64 << 20)).unwrap()
}

/// What `source` returns, or its error, as text.
fn outcome<F: FnOnce(&str) -> mlua::Result<String>>(run: F, source: &str) -> String {
    match run(source) {
        Ok(s) => format!("ok {s}"),
        Err(e) => format!("error {e}"),
    }
}

#[test]
fn load_gives_a_chunk_the_environment_lua_gives_it() {
    for source in [
        // No env: the globals, as a chunk of the file itself sees them.
        "answer = 42 return tostring(load('return answer')())",
        "answer = 42 return tostring(load('return answer', 'chunk')())",
        "answer = 42 return tostring(load('return answer', 'chunk', 't')())",
        "answer = 42 return tostring(load('return answer', nil, nil)())",
        "return tostring(load('return string.upper(\"x\")')())",
        "local parts = {'return ', 'answer'} answer = 7 local i = 0
         return tostring(load(function() i = i + 1 return parts[i] end)())",
        // An env, even nil, is the chunk's _ENV.
        "return tostring(load('return answer', 'chunk', 't', { answer = 'mine' })())",
        "local ok, e = pcall(load('return answer', '=chunk', 't', nil)) return tostring(e)",
        "local ok, e = pcall(load('x = 1', '=chunk', 'bt', nil)) return tostring(e)",
        // A chunk's own _ENV does not leak into load.
        "answer = 'global' local _ENV = { load = load, tostring = tostring }
         return tostring(load('return answer')())",
        // Globals a loaded chunk sets are the script's.
        "load('made_here = 5')() return tostring(made_here)",
    ] {
        let c = Lua::new();
        let expected = outcome(
            |s| c.load(s).set_name("@script.lua").eval::<String>(),
            source,
        );
        let sandbox = sandbox();
        let actual = outcome(
            |s| {
                sandbox
                    .run::<String>(s, "script.lua")
                    .map_err(|e| mlua::Error::runtime(e.to_string()))
            },
            source,
        );
        assert_eq!(actual, expected, "{source}");
    }
}

#[test]
fn load_refuses_binary_chunks_even_when_asked_for_them() {
    let sandbox = sandbox();
    for source in [
        "return select(2, load('\\27Lua'))",
        "return select(2, load('\\27Lua', 'x', 'b'))",
        "return select(2, load('\\27Lua', 'x', 'bt', {}))",
        "return select(2, load('\\27Lua', 'x', 'b', nil))",
    ] {
        let message: String = sandbox.run(source, "b.lua").unwrap();
        assert!(
            message.contains("attempt to load a binary chunk"),
            "{source}: {message}"
        );
    }
}

#[test]
fn print_collects_lines_as_lua_would_write_them() {
    let sandbox = sandbox();
    sandbox
        .run::<()>(
            r#"
            print("hello", 1, 2.5, 1.0, nil, true, -0.0, 2^63, math.mininteger)
            print()
            print("two\nlines")
            local named = setmetatable({}, { __name = "Ship" })
            print(tostring(named) == (function() local s = tostring(named) return s end)())
            print(setmetatable({}, { __tostring = function() return "a ship" end }), "x")
            print(select(2, pcall(print, setmetatable({}, { __tostring = function() return 1 end }))))
            local tostring = function() return "shadowed" end
            print(12)
            "#,
            "p.lua",
        )
        .unwrap();
    let c = Lua::new();
    let expected: String = c
        .load("return (2^63) .. '\t' .. math.mininteger")
        .eval()
        .unwrap();
    assert_eq!(
        sandbox.take_printed(),
        [
            format!("hello\t1\t2.5\t1.0\tnil\ttrue\t-0.0\t{expected}"),
            String::new(),
            "two".into(),
            "lines".into(),
            "true".into(),
            "a ship\tx".into(),
            "1".into(),
            String::new(),
            "12".into(),
        ]
    );
    // Taken once.
    assert!(sandbox.take_printed().is_empty());
}

#[test]
fn print_honours_name_and_tostring_like_c_lua() {
    // The values, made the same way in both states; a line is compared with the addresses
    // taken out, since those differ.
    let values = r#"
        local named = setmetatable({}, { __name = "Ship" })
        local not_a_name = setmetatable({}, { __name = 42 })
        local shown = setmetatable({}, { __tostring = function() return "shown" end, __name = "N" })
        local as_number = setmetatable({}, { __tostring = function() return 7 end })
        return named, not_a_name, shown, as_number, print, coroutine.create(print)
    "#;
    let strip = |line: &str| {
        let mut out = String::new();
        let mut rest = line;
        while let Some(at) = rest.find("0x") {
            out.push_str(&rest[..at]);
            out.push_str("ADDR");
            rest = rest[at + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        }
        out + rest
    };
    let c = Lua::new();
    let c_line: String = c
        .load(format!(
            "local function f() {values} end
             local t = table.pack(f())
             for i = 1, t.n do t[i] = tostring(t[i]) end
             return table.concat(t, '\t')"
        ))
        .eval()
        .unwrap();
    let sandbox = sandbox();
    sandbox
        .run::<()>(
            &format!("local function f() {values} end print(f())"),
            "n.lua",
        )
        .unwrap();
    let printed = sandbox.take_printed();
    assert_eq!(printed.len(), 1);
    assert_eq!(strip(&printed[0]), strip(&c_line));
    assert!(printed[0].starts_with("Ship: 0x"), "{}", printed[0]);
}

#[test]
fn print_errors_as_lua_does() {
    // Called straight from `pcall` both name no position. (Called from a line of a script,
    // Lua 5.4 prefixes the script's position to the first message and the sandbox does not:
    // its `print` is a Lua function without line information.)
    for source in [
        "local ok, e = pcall(print, setmetatable({}, { __tostring = function() return {} end }))
         return e",
        "local ok, e = pcall(print, setmetatable({}, { __tostring = function() error('mine', 0) end }))
         return e",
        "local ok, e = pcall(print, setmetatable({}, { __tostring = function() error('here') end }))
         return e",
    ] {
        let c = Lua::new();
        let expected: String = c.load(source).set_name("@e.lua").eval().unwrap();
        let sandbox = sandbox();
        let actual: String = sandbox.run(source, "e.lua").unwrap();
        assert_eq!(actual, expected, "{source}");
        // Nothing half-printed.
        assert!(sandbox.take_printed().is_empty());
    }
}

#[test]
fn print_output_is_bounded_and_the_cut_is_noted() {
    let sandbox = sandbox();
    sandbox
        .run::<()>(
            "for i = 1, 100000 do print(string.rep('x', 100), i) end print(string.rep('y', 1 << 20))",
            "loud.lua",
        )
        .unwrap();
    let printed = sandbox.take_printed();
    let bytes: usize = printed.iter().map(|l| l.len() + 1).sum();
    assert!(bytes <= 65 << 10, "{bytes}");
    assert!(printed[0].starts_with("xxx"), "{}", printed[0]);
    assert!(
        printed.last().unwrap().contains("more print output"),
        "{:?}",
        printed.last()
    );
    assert_eq!(
        printed
            .iter()
            .filter(|l| l.contains("more print output"))
            .count(),
        1
    );
    // The next take starts afresh.
    sandbox.run::<()>("print('again')", "loud.lua").unwrap();
    assert_eq!(sandbox.take_printed(), ["again"]);
}

#[test]
fn print_costs_instructions_and_memory_like_any_code() {
    let sandbox = sandbox();
    let err = sandbox
        .run::<()>("while true do print('x') end", "loop.lua")
        .unwrap_err();
    assert!(
        matches!(err, savechain::lua::SandboxError::InstructionBudget { .. }),
        "{err}"
    );
    let _ = sandbox.take_printed();
    // A huge line costs the script its memory, but the collected part stays bounded.
    sandbox
        .run::<()>("print(string.rep('z', 8 << 20))", "big.lua")
        .unwrap();
    let printed = sandbox.take_printed();
    assert_eq!(printed.len(), 2);
    assert_eq!(printed[0].len(), (64 << 10) - 1);
    assert!(printed[1].contains("more print output"), "{}", printed[1]);
}

/// A recursion with no end fails on Lua's stack overflow, as in Lua: the instruction hook
/// must not turn a deep stack into a crawl (re-arming the hook walks every frame, and once
/// its own cost counted as dear instructions, making it run ever more often until the time
/// limit, 30 s later, stopped the step).
#[test]
fn a_recursion_with_no_end_fails_on_the_stack_overflow() {
    use savechain::upgrade::{Chain, Step};
    use savechain::{Options, Save};
    let step = Step::lua(
        "0001-deep.lua",
        "return function(data) local function f() return 1 + f() end data.x = f() end",
    )
    .unwrap();
    let chain = Chain::new("1.0.0", vec![step]).unwrap();
    let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
    let err = chain
        .upgrader()
        .upgrade(save, &Options::default())
        .unwrap_err();
    assert!(err.to_string().contains("stack overflow"), "{err}");
}
