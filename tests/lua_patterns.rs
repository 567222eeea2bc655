//! The sandbox's own `string.find`, `string.match`, `string.gmatch` and `string.gsub` against
//! Lua's C originals, and their instruction budget.

use std::time::{Duration, Instant};

use mlua::{Function, Lua, Value};
use proptest::prelude::*;
use proptest::sample::select;
use savechain::lua::{Limits, Sandbox, SandboxError};

/// Calls one string function in the state it is loaded into and describes everything that
/// can be observed: the results or the error, the calls a replacement function or an
/// `__index` metamethod received, and whether gsub returned its subject itself (Lua 5.4 does
/// when nothing was replaced; `%p` shows it for strings longer than 40 bytes, which are not
/// interned). It uses only string functions that are not replaced.
const HARNESS: &str = r##"
local function ser(v)
  local t = type(v)
  if t == "string" then return string.format("%q", v)
  elseif t == "number" then return math.type(v) .. " " .. string.format("%q", v)
  elseif t == "table" then return "table " .. tostring(v.tag)
  else return t .. " " .. tostring(v) end
end
local function serall(t, from)
  local out = {}
  for i = from or 1, t.n do out[#out + 1] = ser(t[i]) end
  return "(" .. table.concat(out, ", ") .. ")"
end
local function pack(...) return { n = select("#", ...), ... } end

local function replacement(mode, log)
  local calls = 0
  local function note(...) log[#log + 1] = serall(pack(...)) end
  if mode == "function" or mode == "bad function" or mode == "failing function"
      or mode == "failing function 2" then
    return function(...)
      note(...)
      calls = calls + 1
      if mode == "bad function" and calls == 3 then return {} end
      if mode == "failing function" and calls == 2 then error({ tag = "boom" }) end
      if mode == "failing function 2" and calls == 2 then error("boom", 2) end
      local k = calls % 7
      if k == 0 then return nil
      elseif k == 1 then return false
      elseif k == 2 then return calls
      elseif k == 3 then return "<" .. tostring((...)) .. ">"
      elseif k == 4 then return (...)
      elseif k == 5 then return 1.5
      else return end
    end
  elseif mode == "table" then
    return { a = "A", ab = 1, b = false, x = 2.5, ["("] = "P", [""] = "E", [1] = "one",
             [2] = false, [3] = 3, [" "] = "_" }
  elseif mode == "bad table" then
    return { a = "A", b = {}, [1] = true }
  elseif mode == "metatable" then
    return setmetatable({ a = "A" }, { __index = function(_, k)
      note(k)
      calls = calls + 1
      if calls % 3 == 0 then return nil end
      return "[" .. tostring(k) .. "]"
    end })
  end
end

return function(op, mode, n, ...)
  local args, log = pack(...), {}
  args.n = n
  if mode ~= "string" and mode ~= "none" then args[3] = replacement(mode, log) end
  local ok, results = pcall(function()
    if op == "find" then return pack(string.find(table.unpack(args, 1, args.n)))
    elseif op == "match" then return pack(string.match(table.unpack(args, 1, args.n)))
    elseif op == "gsub" then return pack(string.gsub(table.unpack(args, 1, args.n)))
    elseif op == "method find" then
      local s = args[1]
      return pack(s:find(table.unpack(args, 2, args.n)))
    elseif op == "pcall find" then
      return pack(pcall(string.find, table.unpack(args, 1, args.n)))
    elseif op == "gmatch" then
      local iterate = string.gmatch(table.unpack(args, 1, args.n))
      local all = { n = 0 }
      for _ = 1, 100 do
        local r = pack(iterate())
        all.n = all.n + 1
        all[all.n] = serall(r)
        if r[1] == nil then break end
      end
      return all
    elseif op == "gmatch loop" then
      local all = { n = 0 }
      for a, b in string.gmatch(table.unpack(args, 1, args.n)) do
        all.n = all.n + 1
        all[all.n] = ser(a) .. " " .. ser(b)
      end
      return all
    end
    error("unknown op " .. op)
  end)
  local out
  if ok then
    local parts = {}
    for i = 1, results.n do
      local v = results[i]
      parts[i] = type(v) == "string" and op:sub(1, 6) == "gmatch" and v or ser(v)
    end
    out = "ok " .. table.concat(parts, ", ")
  else
    out = "error " .. ser(results)
  end
  if ok and op == "gsub" and type(args[1]) == "string" and type(results[1]) == "string" then
    out = out .. " | same " .. tostring(string.format("%p", args[1]) == string.format("%p", results[1]))
  end
  return out .. " | calls " .. table.concat(log, " ")
end
"##;

#[derive(Clone, Debug)]
enum Arg {
    Str(Vec<u8>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
}

impl Arg {
    fn to_lua(&self, lua: &Lua) -> Value {
        match self {
            Arg::Str(s) => Value::String(lua.create_string(s).unwrap()),
            Arg::Int(i) => Value::Integer(*i),
            Arg::Float(f) => Value::Number(*f),
            Arg::Bool(b) => Value::Boolean(*b),
            Arg::Nil => Value::Nil,
        }
    }
}

struct States {
    c: Lua,
    c_harness: Function,
    sandbox: Sandbox,
    harness: Function,
}

thread_local! {
    static STATES: States = {
        let c = Lua::new();
        let c_harness: Function = c.load(HARNESS).set_name("=harness").eval().unwrap();
        let sandbox = Sandbox::new(Limits::default()).unwrap();
        let harness: Function = sandbox
            .lua()
            .load(HARNESS)
            .set_name("=harness")
            .eval()
            .unwrap();
        States { c, c_harness, sandbox, harness }
    };
}

/// What the C string library and the sandbox's say for `op` on `args`.
fn both(op: &str, mode: &str, args: &[Arg]) -> (String, String) {
    STATES.with(|st| {
        let call = |lua: &Lua, harness: &Function| -> mlua::Result<String> {
            let mut values = vec![
                Value::String(lua.create_string(op)?),
                Value::String(lua.create_string(mode)?),
                Value::Integer(args.len() as i64),
            ];
            values.extend(args.iter().map(|a| a.to_lua(lua)));
            let out: mlua::String = harness.call(mlua::MultiValue::from_vec(values))?;
            Ok(out.as_bytes().escape_ascii().to_string())
        };
        let expected = call(&st.c, &st.c_harness).unwrap();
        let actual = match st.sandbox.guard(|lua| call(lua, &st.harness)) {
            Ok(s) => s,
            Err(e) => format!("sandbox failure: {e}"),
        };
        (expected, actual)
    })
}

fn agree(op: &str, mode: &str, args: &[Arg]) -> Result<(), TestCaseError> {
    let (expected, actual) = both(op, mode, args);
    prop_assert_eq!(&actual, &expected, "{} {} {:?}", op, mode, args);
    Ok(())
}

fn assert_agree(op: &str, mode: &str, args: &[Arg]) {
    let (expected, actual) = both(op, mode, args);
    assert_eq!(actual, expected, "{op} {mode} {args:?}");
}

fn s(text: &str) -> Arg {
    Arg::Str(text.as_bytes().to_vec())
}

fn subject() -> impl Strategy<Value = Vec<u8>> {
    let byte = || {
        prop_oneof![
            8 => select(b"ab()%[]-.x \0".to_vec()),
            1 => select(b"A1\x0b\xff".to_vec()),
        ]
    };
    prop_oneof![
        6 => prop::collection::vec(byte(), 0..12),
        // Longer than Lua's 40-byte short strings, so that a copy is told from the original.
        1 => prop::collection::vec(byte(), 41..64),
    ]
}

/// A single-character class.
fn class() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => select(b"ab()x .-]\0A\xff".to_vec()).prop_map(|c| vec![c]),
        1 => Just(b".".to_vec()),
        2 => select(b"acdglpsuwxzACDGLPSUWXZ%.()[]-\0".to_vec()).prop_map(|c| vec![b'%', c]),
        2 => set(),
    ]
}

fn set() -> impl Strategy<Value = Vec<u8>> {
    let element = prop_oneof![
        3 => select(b"ab()x]^-.%\0".to_vec()).prop_map(|c| vec![c]),
        1 => (select(b"a(-)\0".to_vec()), select(b"bx-)%".to_vec()))
            .prop_map(|(a, b)| vec![a, b'-', b]),
        1 => select(b"adswpzAWZ%]-".to_vec()).prop_map(|c| vec![b'%', c]),
    ];
    (any::<bool>(), prop::collection::vec(element, 0..4)).prop_map(|(complement, elements)| {
        let mut set = vec![b'['];
        if complement {
            set.push(b'^');
        }
        set.extend(elements.concat());
        set.push(b']');
        set
    })
}

/// A pattern item, or a capture of a few items.
fn item() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        8 => (class(), select(vec!["", "", "*", "+", "-", "?"])).prop_map(|(mut c, q)| {
            c.extend(q.as_bytes());
            c
        }),
        1 => Just(b"()".to_vec()),
        1 => (select(b"()ab".to_vec()), select(b"()ab".to_vec()))
            .prop_map(|(a, b)| vec![b'%', b'b', a, b]),
        1 => set().prop_map(|s| [b"%f".to_vec(), s].concat()),
        1 => select(b"0123".to_vec()).prop_map(|d| vec![b'%', d]),
        1 => select(vec!["$", "^", "(", ")", "%", "[", "%b", "%f", "%bx"])
            .prop_map(|t| t.as_bytes().to_vec()),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop::collection::vec(inner, 0..4)
            .prop_map(|items| [b"(".to_vec(), items.concat(), b")".to_vec()].concat())
    })
}

fn pattern() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => (any::<bool>(), prop::collection::vec(item(), 0..5), any::<bool>()).prop_map(
            |(anchor, items, end)| {
                let mut p = if anchor { b"^".to_vec() } else { Vec::new() };
                p.extend(items.concat());
                if end {
                    p.push(b'$');
                }
                p
            }
        ),
        2 => prop::collection::vec(select(b"ab()%[]-.x^$*+?\0".to_vec()), 0..8),
        1 => prop::collection::vec(select(b"ab x".to_vec()), 0..4),
    ]
}

/// An optional argument: left out, nil, or given.
fn optional<T: std::fmt::Debug + Clone>(
    value: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<Option<T>>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(None)),
        4 => value.prop_map(|v| Some(Some(v))),
    ]
}

/// An integer argument (a start position, a count) as a script might pass it: mostly a
/// small integer, sometimes an extreme one, a float or a string that may or may not convert.
fn integer_arg(small: std::ops::Range<i64>) -> impl Strategy<Value = Arg> {
    prop_oneof![
        16 => small.prop_map(Arg::Int),
        2 => select(vec![i64::MIN, i64::MIN + 1, -1 << 40, 1 << 40, i64::MAX - 1, i64::MAX])
            .prop_map(Arg::Int),
        2 => select(vec![0.0, -0.0, 1.0, 2.0, -1.0, 1.5, 1e300, -1e300, f64::INFINITY, f64::NAN, 9.3e18])
            .prop_map(Arg::Float),
        2 => select(vec!["1", " 2 ", "0x2", "2.0", "-1", "1e1", "x", "", "3.5"]).prop_map(s),
        1 => any::<bool>().prop_map(Arg::Bool),
    ]
}

fn init() -> impl Strategy<Value = Option<Option<Arg>>> {
    optional(integer_arg(-14..14))
}

fn opt_arg<T>(value: Option<Option<T>>, f: impl Fn(T) -> Arg) -> Option<Arg> {
    match value {
        None => None,
        Some(None) => Some(Arg::Nil),
        Some(Some(v)) => Some(f(v)),
    }
}

/// Subject, pattern and the rest up to the last one given; a left-out argument before a
/// given one becomes nil.
fn arg_list(subject: Vec<u8>, pattern: Vec<u8>, rest: Vec<Option<Arg>>) -> Vec<Arg> {
    let mut list = vec![Arg::Str(subject), Arg::Str(pattern)];
    let given = rest.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
    list.extend(rest.into_iter().take(given).map(|a| a.unwrap_or(Arg::Nil)));
    list
}

/// Cases per property: `PROPTEST_CASES` when set, for longer runs by hand, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(4000)))]

    #[test]
    fn find_agrees(
        subject in subject(),
        pattern in pattern(),
        init in init(),
        plain in optional(any::<bool>()),
    ) {
        let args = arg_list(subject, pattern, vec![
            opt_arg(init, |a| a),
            opt_arg(plain, Arg::Bool),
        ]);
        agree("find", "none", &args)?;
    }

    #[test]
    fn match_agrees(subject in subject(), pattern in pattern(), init in init()) {
        let args = arg_list(subject, pattern, vec![opt_arg(init, |a| a)]);
        agree("match", "none", &args)?;
    }

    #[test]
    fn gmatch_agrees(subject in subject(), pattern in pattern(), init in init()) {
        let args = arg_list(subject, pattern, vec![opt_arg(init, |a| a)]);
        agree("gmatch", "none", &args)?;
    }

    #[test]
    fn gsub_with_a_string_agrees(
        subject in subject(),
        pattern in pattern(),
        repl in prop_oneof![
            8 => prop::collection::vec(select(b"ab%%%0123459xz\0".to_vec()), 0..6).prop_map(Arg::Str),
            1 => select(vec![0, 7, -3]).prop_map(Arg::Int),
            1 => select(vec![0.5, -0.0, 1e100]).prop_map(Arg::Float),
        ],
        n in optional(integer_arg(-1..4)),
    ) {
        let args = arg_list(subject, pattern, vec![Some(repl), opt_arg(n, |a| a)]);
        agree("gsub", "string", &args)?;
    }

    #[test]
    fn gsub_with_a_table_or_function_agrees(
        subject in subject(),
        pattern in pattern(),
        mode in select(vec![
            "function", "bad function", "failing function", "failing function 2",
            "table", "bad table", "metatable",
        ]),
        n in optional(integer_arg(-1..4)),
    ) {
        // The harness puts the replacement in place of the third argument.
        let args = arg_list(subject, pattern, vec![Some(Arg::Nil), opt_arg(n, |a| a)]);
        agree("gsub", mode, &args)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(1000)))]

    #[test]
    fn methods_pcall_and_for_loops_agree(
        subject in subject(),
        pattern in pattern(),
        init in init(),
    ) {
        let args = arg_list(subject, pattern, vec![opt_arg(init, |a| a)]);
        agree("method find", "none", &args)?;
        agree("pcall find", "none", &args)?;
        agree("gmatch loop", "none", &args)?;
    }

    #[test]
    fn longer_subjects_agree(
        subject in prop::collection::vec(select(b"ab (x)".to_vec()), 0..200),
        pattern in select(vec![
            "%w+", "a-b", "(a)(b)", "%((.-)%)", "%b()", "%f[%w]%w+", "(a*)", "()x()",
            "[^ ]+", "(%w)%1", ".-$", "^a", "x*", "",
        ]),
        repl in select(vec!["%0%0", "<%1>", "", "%%"]),
    ) {
        let (subject, pattern) = (Arg::Str(subject), s(pattern));
        agree("find", "none", &[subject.clone(), pattern.clone()])?;
        agree("gmatch", "none", &[subject.clone(), pattern.clone()])?;
        agree("gsub", "string", &[subject.clone(), pattern.clone(), s(repl)])?;
        agree("gsub", "function", &[subject, pattern, Arg::Nil])?;
    }
}

#[test]
fn fixed_cases_agree() {
    let cases: &[(&str, &str, Vec<Arg>)] = &[
        ("find", "none", vec![s("hello world"), s("o w")]),
        ("find", "none", vec![s("hello"), s("l+")]),
        (
            "find",
            "none",
            vec![s("a.b"), s("."), Arg::Int(1), Arg::Bool(true)],
        ),
        (
            "find",
            "none",
            vec![s("a+b"), s("+"), Arg::Int(1), Arg::Int(0)],
        ),
        ("find", "none", vec![s("abc"), s(""), Arg::Int(10)]),
        ("find", "none", vec![s("abc"), s(""), Arg::Int(4)]),
        ("find", "none", vec![s("abc"), s("x)")]),
        (
            "find",
            "none",
            vec![s("THE (quick) fox"), s("%f[%a]%a+"), Arg::Int(5)],
        ),
        ("find", "none", vec![s("a\0b"), s("%z")]),
        ("find", "none", vec![s("aXb"), s("%Z+")]),
        ("find", "none", vec![s("x"), s("[]")]),
        ("find", "none", vec![s("x"), s("[^]")]),
        ("find", "none", vec![s("]"), s("[]]")]),
        ("find", "none", vec![s("a"), s("[%")]),
        ("find", "none", vec![s("a"), s("%")]),
        ("find", "none", vec![s("a"), s("a%")]),
        ("find", "none", vec![s("b"), s("a%")]),
        ("find", "none", vec![s("a"), s("%f")]),
        ("find", "none", vec![s("a"), s("%fx")]),
        ("find", "none", vec![s("a"), s("%b")]),
        ("find", "none", vec![s("a"), s("%ba")]),
        ("find", "none", vec![s("a"), s("(a")]),
        ("find", "none", vec![s("a"), s("a)")]),
        ("find", "none", vec![s("a"), s("%1")]),
        ("find", "none", vec![s("aa"), s("(a)%1")]),
        ("find", "none", vec![s("aa"), s("(a%1)")]),
        ("find", "none", vec![s("aa"), s("()%1")]),
        ("find", "none", vec![s("a"), s(&"(".repeat(33))]),
        ("find", "none", vec![s("a"), s(&"(".repeat(31))]),
        ("find", "none", vec![s("a"), s(&"a?".repeat(300))]),
        (
            "find",
            "none",
            vec![s(&"a".repeat(300)), s(&"a?".repeat(300))],
        ),
        ("find", "none", vec![s("aaa"), s(&"(a?)".repeat(150))]),
        ("find", "none", vec![s("x"), s("x"), Arg::Float(1.0)]),
        ("find", "none", vec![s("x"), s("x"), Arg::Float(1.5)]),
        ("find", "none", vec![s("x"), s("x"), s("1")]),
        ("find", "none", vec![s("x"), s("x"), s("0x1")]),
        ("find", "none", vec![s("x"), s("x"), s("1.5")]),
        ("find", "none", vec![s("x"), s("x"), s("y")]),
        ("find", "none", vec![s("x"), s("x"), Arg::Bool(true)]),
        ("find", "none", vec![Arg::Int(123), Arg::Int(2)]),
        ("find", "none", vec![Arg::Float(1.5), s("%.")]),
        ("find", "none", vec![Arg::Nil, s("x")]),
        ("find", "none", vec![s("x")]),
        ("find", "none", vec![]),
        ("find", "none", vec![s("x"), Arg::Bool(false)]),
        ("method find", "none", vec![s("x"), Arg::Nil]),
        ("method find", "none", vec![s("x"), s("(")]),
        ("pcall find", "none", vec![]),
        ("pcall find", "none", vec![s("x"), s("(")]),
        (
            "match",
            "none",
            vec![s("key = value"), s("(%w+)%s*=%s*(%w+)")],
        ),
        ("match", "none", vec![s("  trim  "), s("^%s*(.-)%s*$")]),
        ("match", "none", vec![s("hello"), s("()ll()")]),
        ("match", "none", vec![s("hello"), s(".-"), Arg::Int(-2)]),
        ("match", "none", vec![s("f(a(b)c)d"), s("%b()")]),
        ("match", "none", vec![s("a"), s("(a")]),
        ("gmatch", "none", vec![s("one two  three"), s("%a+")]),
        ("gmatch", "none", vec![s("abc"), s("")]),
        ("gmatch", "none", vec![s("abc"), s(""), Arg::Int(2)]),
        ("gmatch", "none", vec![s("abc"), s(""), Arg::Int(10)]),
        ("gmatch", "none", vec![s("abc"), s("^a")]),
        ("gmatch", "none", vec![s("a=1, b=2"), s("(%w+)=(%w+)")]),
        ("gmatch", "none", vec![s("abc"), s("%")]),
        ("gmatch", "none", vec![s("abc"), Arg::Nil]),
        ("gmatch loop", "none", vec![s("a=1, b=2"), s("(%w+)=(%w+)")]),
        ("gmatch loop", "none", vec![s("abc"), s("[")]),
        (
            "gsub",
            "string",
            vec![s("hello world"), s("(%w+)"), s("<%1>")],
        ),
        (
            "gsub",
            "string",
            vec![s("hello world"), s("%w+"), s("%0 %0"), Arg::Int(1)],
        ),
        ("gsub", "string", vec![s("abc"), s(""), s("-")]),
        ("gsub", "string", vec![s("abc"), s("b*"), s("-")]),
        ("gsub", "string", vec![s("abc"), s("^"), s("-")]),
        ("gsub", "string", vec![s("abc"), s("$"), s("-")]),
        ("gsub", "string", vec![s("abc"), s("^b"), s("-")]),
        ("gsub", "string", vec![s("abc"), s("x"), s("%z")]),
        ("gsub", "string", vec![s("abc"), s("b"), s("%z")]),
        ("gsub", "string", vec![s("abc"), s("b"), s("%")]),
        ("gsub", "string", vec![s("abc"), s("b"), s("%2")]),
        ("gsub", "string", vec![s("abc"), s("(b)"), s("%2")]),
        ("gsub", "string", vec![s("abc"), s("()b"), s("%1")]),
        ("gsub", "string", vec![s("abc"), s("(b"), s("%1")]),
        ("gsub", "string", vec![s("abc"), s("b"), Arg::Int(7)]),
        ("gsub", "string", vec![s("abc"), s("b"), Arg::Float(0.5)]),
        ("gsub", "string", vec![Arg::Int(123), s("2"), s("x")]),
        (
            "gsub",
            "string",
            vec![s("abc"), s("b"), s("x"), Arg::Int(-1)],
        ),
        (
            "gsub",
            "string",
            vec![s("abc"), s("b"), s("x"), Arg::Float(1.5)],
        ),
        ("gsub", "string", vec![s("abc"), s("b"), s("x"), s("1")]),
        ("gsub", "string", vec![s("abc"), s("b"), Arg::Bool(true)]),
        (
            "gsub",
            "string",
            vec![s("abc"), s("b"), Arg::Bool(true), s("x")],
        ),
        ("gsub", "string", vec![s("abc"), s("b")]),
        (
            "gsub",
            "function",
            vec![s("hello world"), s("%w+"), Arg::Nil],
        ),
        (
            "gsub",
            "function",
            vec![s("hello world"), s("(o)()"), Arg::Nil],
        ),
        ("gsub", "function", vec![s("abc"), s("(b"), Arg::Nil]),
        ("gsub", "table", vec![s("abc"), s("(b"), Arg::Nil]),
        ("gsub", "table", vec![s("a b ab"), s("%w+"), Arg::Nil]),
        ("gsub", "table", vec![s("abc"), s("()"), Arg::Nil]),
        ("gsub", "bad table", vec![s("a b"), s("%w"), Arg::Nil]),
        ("gsub", "bad function", vec![s("abcdef"), s("%w"), Arg::Nil]),
        (
            "gsub",
            "failing function",
            vec![s("abcdef"), s("%w"), Arg::Nil],
        ),
        (
            "gsub",
            "failing function 2",
            vec![s("abcdef"), s("%w"), Arg::Nil],
        ),
        ("gsub", "metatable", vec![s("a b c d"), s("%w"), Arg::Nil]),
        // Long subjects (not interned) that gsub leaves alone, or changes.
        ("gsub", "string", vec![s(LONG), s("%d"), s("y")]),
        ("gsub", "string", vec![s(LONG), s("o"), s("0"), Arg::Int(0)]),
        ("gsub", "string", vec![s(LONG), s("^o"), s("0")]),
        ("gsub", "string", vec![s(LONG), s("o"), s("0")]),
        ("gsub", "string", vec![s(LONG), s("o"), s("%0")]),
        ("gsub", "table", vec![s(LONG), s("%w+"), Arg::Nil]),
        ("gsub", "metatable", vec![s(LONG), s("%s"), Arg::Nil]),
        ("gsub", "function", vec![s(LONG), s("(q)(u)"), Arg::Nil]),
        ("gsub", "function", vec![s(LONG), s("%w+"), Arg::Nil]),
    ];
    for (op, mode, args) in cases {
        assert_agree(op, mode, args);
    }
    // Nesting right at Lua's limit of 200 calls.
    let long = s(&"a".repeat(300));
    for n in 195..=202 {
        for item in ["a?", "a*", "a-", "(a)?"] {
            assert_agree("find", "none", &[long.clone(), s(&item.repeat(n))]);
        }
    }
}

/// A subject longer than Lua's short strings.
const LONG: &str = "the quick brown fox jumps over the lazy dog";

#[test]
fn gsub_that_replaces_nothing_returns_its_subject() {
    let sandbox = Sandbox::new(Limits::default()).unwrap();
    for (call, same) in [
        ("s:gsub('%d', 'y')", true),
        ("s:gsub('o', 'y', 0)", true),
        ("s:gsub('^o', 'y')", true),
        ("s:gsub('%w+', function() end)", true),
        ("s:gsub('%w+', function() return false end)", true),
        ("s:gsub('%w+', {})", true),
        ("s:gsub('o', 'y')", false),
        ("s:gsub('o', '%0')", false),
        (
            "s:gsub('%w+', function(w) if w == 'dog' then return 'cat' end end)",
            false,
        ),
    ] {
        let source = format!(
            "local s = '{LONG}' local r = {call} return string.format('%p', s) == string.format('%p', r)"
        );
        let actual: bool = sandbox.run(&source, "same.lua").unwrap();
        assert_eq!(actual, same, "{call}");
        let c: bool = Lua::new().load(&source).eval().unwrap();
        assert_eq!(c, same, "C: {call}");
    }
}

#[test]
fn classes_and_ranges_agree_on_every_byte() {
    let source = r#"
        local out = {}
        for cl = 0, 255 do
          local class, set = "%" .. string.char(cl), "[x%" .. string.char(cl) .. "]"
          for c = 0, 255 do
            local ok, r = pcall(string.find, string.char(c), class)
            local ok2, r2 = pcall(string.find, string.char(c), set)
            out[#out + 1] = (ok and (r and "1" or "0") or "E") .. (ok2 and (r2 and "1" or "0") or "E")
          end
        end
        for a = 0, 255, 7 do
          for b = 0, 255, 11 do
            local range = "[" .. string.char(a) .. "-" .. string.char(b) .. "]"
            for c = 0, 255 do
              out[#out + 1] = string.find(string.char(c), range) and "1" or "0"
            end
          end
        end
        return table.concat(out)
    "#;
    let c = Lua::new();
    let expected: mlua::String = c.load(source).eval().unwrap();
    let sandbox = Sandbox::new(Limits::default()).unwrap();
    let actual: mlua::String = sandbox.run(source, "classes.lua").unwrap();
    let (expected, actual) = (expected.as_bytes(), actual.as_bytes());
    assert_eq!(expected.len(), actual.len());
    if let Some(i) = (0..expected.len()).find(|&i| expected[i] != actual[i]) {
        panic!(
            "first difference at {i}: {} against {}",
            expected[i], actual[i]
        );
    }
}

#[test]
fn scripts_agree() {
    for source in [
        "local ok, e = pcall(string.find, 'x', setmetatable({}, { __name = 'My' })) return e",
        "local t = { f = string.find } local ok, e = pcall(function() return (t:f()) end) return e",
        "local ok, e = pcall(function() local r = ('x'):gsub() return r end) return e",
        "local co = coroutine.wrap(function() local r = string.find(nil) return r end)
         local ok, e = pcall(co) return e",
        "local ok, e = pcall(function()
           local r = string.gsub('x', 'x', function() error('deep', 3) end) return r
         end) return e",
        "local ok, e = pcall(function()
           local r = string.gsub('x', 'x', function() error('here') end) return r
         end) return e",
        "local ok, e = pcall(function()
           for a in string.gmatch('xy', 'x()%') do end
         end) return e",
        "return (string.gsub('abc', '%w', function(c) return (string.gsub(c, '.', '%0%0')) end))",
        "local out = {} for k, v in ('a=1, b=2'):gmatch('(%w+)=(%w+)') do out[#out + 1] = k .. v end
         return table.concat(out, ';')",
        "local it = string.gmatch('a b', '%a') it() it() it() return tostring(select('#', it()))",
        "return select('#', string.gmatch('a', 'b')())",
        "return select('#', string.find('a', '()'))",
        "return string.format('%q', string.gsub('x', 'x', 2^53))",
        "return (string.gsub('a b', '%a', { a = 1.5, b = -0.0 }))",
        "return (string.gsub('a b', '%a', function(c) return c:upper(), 'extra' end))",
        "return (string.gsub('a b', '%a', function(c) if c == 'b' then return nil, 'x' end return false, 'y' end))",
        // Lua's gsub calls a replacement from C, where a coroutine cannot yield; a coroutine
        // made inside it can, and so can one whose replacement failed and was caught.
        "local co = coroutine.wrap(function()
           return (string.gsub('abc', '%w', function(c) coroutine.yield(c) return c end))
         end)
         return select(2, pcall(co))",
        "local t = setmetatable({}, { __index = function(_, k) coroutine.yield(k) return 'X' end })
         local co = coroutine.wrap(function() return (string.gsub('abc', '%w', t)) end)
         return select(2, pcall(co))",
        "local co = coroutine.wrap(function()
           local seen = {}
           string.gsub('ab', '%w', function(c)
             seen[#seen + 1] = tostring(coroutine.isyieldable())
             seen[#seen + 1] = select(2, pcall(coroutine.yield, c))
             string.gsub('x', 'x', function() seen[#seen + 1] = tostring(coroutine.isyieldable()) end)
           end)
           seen[#seen + 1] = tostring(coroutine.isyieldable())
           coroutine.yield(table.concat(seen, ' '))
         end)
         return co()",
        "local inner = coroutine.wrap(function() coroutine.yield('in ') return 'out' end)
         return (string.gsub('ab', '%w', function() return inner() end))",
        "local co = coroutine.wrap(function()
           pcall(string.gsub, 'a', 'a', function() error('x') end)
           coroutine.yield('after pcall ')
           xpcall(string.gsub, function(e) return e end, 'a', 'a', function() error('x') end)
           coroutine.yield('after xpcall ')
           load(function() string.gsub('a', 'a', function() error('x') end) end)
           coroutine.yield('after load ')
           pcall(string.gsub, 'a', 'a', function()
             pcall(string.gsub, 'b', 'b', function() error('y') end)
             return tostring(coroutine.isyieldable())
           end)
           return 'done'
         end)
         return co() .. co() .. co() .. co()",
        "local main = { coroutine.running() }
         return tostring(main[2]) .. ' ' .. tostring(coroutine.isyieldable())
           .. ' ' .. select(2, pcall(coroutine.yield))
           .. ' ' .. (string.gsub('a', 'a', function() return select(2, pcall(coroutine.yield)) end))",
    ] {
        let c = Lua::new();
        let expected: String = c.load(source).set_name("@script.lua").eval().unwrap();
        let actual: String = Sandbox::new(Limits::default())
            .unwrap()
            .run(source, "script.lua")
            .unwrap();
        assert_eq!(actual, expected, "{source}");
    }
}

fn small() -> Sandbox {
    Sandbox::new(Limits::new(5_000_000, 16 << 20)).unwrap()
}

#[test]
fn backtracking_patterns_stop_at_the_instruction_budget() {
    let sandbox = small();
    for source in [
        "return string.find(string.rep('a', 3000), '.-.-.-.-b')",
        "return (string.rep('a', 3000)):find('.-.-.-.-b')",
        "return string.match(string.rep('a', 3000), '(.-)(.-)(.-)(.-)b')",
        "return string.rep('a', 100000):gsub('a*b', '')",
        "return string.rep('a', 100000):gsub('a*b', function() end)",
        "return string.rep('a', 100000):gsub('a*b', {})",
        "for w in string.rep('a', 100000):gmatch('a*b') do end",
        "return string.find(string.rep('a', 100000), string.rep('a', 50000) .. 'b', 1, true)",
        "return string.find(string.rep('a', 100000), string.rep('a?', 150) .. 'b')",
        "return string.find(string.rep('a', 100000), '[' .. string.rep('x', 100000) .. 'a]*b')",
        "return string.find(string.rep('a', 100000), '%f[' .. string.rep('x', 100000) .. ']')",
        "return pcall(string.find, string.rep('a', 3000), '.-.-.-.-b')",
        "return select(2, coroutine.resume(coroutine.create(function() \
           return string.find(string.rep('a', 3000), '.-.-.-.-b') end)))",
    ] {
        let started = Instant::now();
        let err = sandbox
            .run::<mlua::Value>(source, "hostile.lua")
            .expect_err(source);
        assert!(
            matches!(err, SandboxError::InstructionBudget { limit: 5_000_000 }),
            "{source}: {err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{source} took {:?}",
            started.elapsed()
        );
    }
    // Still usable, with a fresh budget.
    let n: i64 = sandbox
        .run(
            "return (select(2, string.find(string.rep('a', 3000), 'a+')))",
            "ok.lua",
        )
        .unwrap();
    assert_eq!(n, 3000);
}

#[test]
fn pattern_steps_share_the_budget_with_the_hook() {
    // About 3 million instructions each (a find costs about 1.5 million steps): either alone
    // fits in the budget of 5 million, both together do not.
    let looping = "local n = 0 for i = 1, 1500000 do n = n + i end";
    let matching = "for _ = 1, 2 do string.find(string.rep('a', 1000), '.-b') end";
    let sandbox = small();
    sandbox.run::<()>(looping, "loop.lua").unwrap();
    sandbox.run::<()>(matching, "match.lua").unwrap();
    let err = sandbox
        .run::<()>(&format!("{looping} {matching}"), "both.lua")
        .unwrap_err();
    assert!(
        matches!(err, SandboxError::InstructionBudget { .. }),
        "{err}"
    );
    let err = sandbox
        .run::<()>(&format!("{matching} {looping}"), "both.lua")
        .unwrap_err();
    assert!(
        matches!(err, SandboxError::InstructionBudget { .. }),
        "{err}"
    );
}

#[test]
fn huge_results_stop_at_the_memory_limit() {
    let err = small()
        .run::<mlua::Value>(
            "return (string.rep('a', 100000):gsub('a', string.rep('b', 1000)))",
            "big.lua",
        )
        .unwrap_err();
    assert!(matches!(err, SandboxError::MemoryLimit { .. }), "{err}");
}

#[test]
fn errors_are_strings_and_replacement_errors_pass_through() {
    let sandbox = small();
    let (message, kind): (String, String) = sandbox
        .run(
            "local ok, e = pcall(string.find, 'x', '[') return e, type(e)",
            "e.lua",
        )
        .unwrap();
    assert_eq!(
        (message.as_str(), kind.as_str()),
        ("malformed pattern (missing ']')", "string")
    );
    let message: String = sandbox
        .run(
            "local ok, e = pcall(function() local r = ('x'):find('%') return r end) return e",
            "e.lua",
        )
        .unwrap();
    assert_eq!(message, "e.lua:1: malformed pattern (ends with '%')");
    let tag: String = sandbox
        .run(
            "local ok, e = pcall(string.gsub, 'x', 'x', function() error({ tag = 'mine' }) end)
             return e.tag",
            "e.lua",
        )
        .unwrap();
    assert_eq!(tag, "mine");
}

#[test]
fn ordinary_use_is_quick() {
    let sandbox = Sandbox::new(Limits::default()).unwrap();
    let source = "
        local words = {}
        for i = 1, 2000 do words[i] = 'word' .. i end
        local text = table.concat(words, ' ')
        local n = 0
        for _ = 1, 20 do
          for w in text:gmatch('%a+%d+') do n = n + 1 end
          local t, k = text:gsub('(%a+)(%d+)', '%2%1')
          n = n + k
          n = n + select(2, text:gsub('%d+', function(d) return #d end))
          n = n + (text:find('word1999', 1, true) or 0)
          n = n + #text:match('^(.-) ')
        end
        return n";
    let started = Instant::now();
    let n: i64 = sandbox.run(source, "ordinary.lua").unwrap();
    let ours = started.elapsed();
    let c = Lua::new();
    let started = Instant::now();
    let expected: i64 = c.load(source).eval().unwrap();
    let theirs = started.elapsed();
    assert_eq!(n, expected);
    // Generous: this is a smoke test for accidental quadratic behaviour, not a benchmark.
    assert!(
        ours < theirs * 30 + Duration::from_millis(500),
        "ours {ours:?}, C {theirs:?}"
    );
}
