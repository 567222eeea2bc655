//! Differential tests of the Lua codecs (issue 20): the pure-Lua codec of `lua/savechain.lua`
//! in stock interpreters, and the native module (`lua-module/`) in `lua5.4`, against the
//! Rust library in an embedded Lua.
//!
//! On Lua 5.4 the pure codec must map values as the Rust side does and write byte-identical
//! text, pretty and compact; on Lua 5.1 and LuaJIT, where every number is a double, it maps
//! by the documented rules (`as_lua51`) and refuses what it cannot keep. The native module
//! runs the Rust core, so it must match on everything, error messages included.
//!
//! Cases go to each interpreter in batches, one process a batch
//! (`lua/tests/drivers/codec_batch.lua`), so that the whole file stays fast. An interpreter
//! that is missing fails the tests with the Debian package to install.
//!
//! A known difference, accepted: when a table has several keys that are tables and the
//! value has shared tables, the pure codec may order those entries differently from Rust
//! (which orders them by a hash). Such values are left out of the byte-for-byte comparisons
//! with the pure codec (`ambiguous_order`), and only checked to come back equal.

mod common;

use std::ffi::OsStr;
use std::path::Path;

use common::any_value;
use common::stock_lua::{self, Script};
use proptest::prelude::*;
use savechain::lua::mlua::{self, Lua};
use savechain::lua::{from_lua, from_text, from_text_with_max_depth, install, to_text};
use savechain::text::{self, Style, MAX_DEPTH};
use savechain::value::Table;
use savechain::Value;

// Interpreters and batches ------------------------------------------------------------

/// The implementations of the `savechain` Lua library run by stock interpreters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Imp {
    /// The pure-Lua codec in `lua5.4`.
    Pure54,
    /// The pure-Lua codec in `lua5.1`.
    Pure51,
    /// The pure-Lua codec in `luajit`.
    PureJit,
    /// The native module in `lua5.4`.
    Native,
}

impl Imp {
    fn interpreter(self) -> &'static str {
        match self {
            Imp::Pure54 | Imp::Native => "lua5.4",
            Imp::Pure51 => "lua5.1",
            Imp::PureJit => "luajit",
        }
    }
}

/// Fails, naming the Debian packages, when `name` is not an interpreter on the `PATH`.
fn need(name: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()));
    assert!(
        found,
        "{name} is not installed, and the Lua codec tests run in it: \
         apt-get install lua5.1 luajit lua5.4"
    );
}

/// Runs `script` (a file of the repository) with `args` under `imp`.
fn run(imp: Imp, script: &Path, args: &[&OsStr]) -> std::process::Output {
    need(imp.interpreter());
    let repo = stock_lua::repo();
    match imp {
        Imp::Native => stock_lua::run_native(Script::File(script), args),
        _ => stock_lua::run_lua(
            imp.interpreter(),
            &format!("{}/lua/?.lua", repo.display()),
            "",
            Script::File(script),
            args,
        ),
    }
}

/// What one case did in an interpreter: refused at once (decoding or building), or went
/// through: the pretty and compact texts (or the errors of encoding), and whether the
/// compact text decoded to an equal value ("equal").
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Refused(String),
    Done {
        pretty: Result<Vec<u8>, String>,
        compact: Result<Vec<u8>, String>,
        equal: Result<String, String>,
    },
}

/// Runs a batch in `imp`: `mode` is `texts` (`input` holds texts) or `values` (`input` is
/// Lua source returning builders); gives one outcome a case.
fn batch(imp: Imp, mode: &str, input: &[u8], count: usize) -> Vec<Outcome> {
    batch_with(imp, mode, input, count, false, MAX_DEPTH)
}

/// [`batch`], with LuaJIT's compiler off or on (`luajit_compiler_...`), decoding with the
/// nesting limit `max_depth` (`savechain.decode_max_depth`).
fn batch_with(
    imp: Imp,
    mode: &str,
    input: &[u8],
    count: usize,
    jit_off: bool,
    max_depth: usize,
) -> Vec<Outcome> {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    let out = dir.path().join("out");
    std::fs::write(&cases, input).unwrap();
    if let Some(keep) = std::env::var_os("LUA_CODECS_KEEP") {
        // For a failure to be run again by hand: the last batch of each implementation.
        std::fs::write(Path::new(&keep).join(format!("{imp:?}.{mode}")), input).unwrap();
    }
    let driver = stock_lua::repo().join("lua/tests/drivers/codec_batch.lua");
    let max_depth = max_depth.to_string();
    let output = run(
        imp,
        &driver,
        &[
            OsStr::new(mode),
            cases.as_os_str(),
            out.as_os_str(),
            OsStr::new(if jit_off { "jit-off" } else { "jit-on" }),
            OsStr::new(&max_depth),
        ],
    );
    assert!(
        output.status.success(),
        "the driver failed in {imp:?}:\n{}",
        stock_lua::printed(&output)
    );
    let data = std::fs::read(&out).unwrap();
    let mut records = Records { data: &data, at: 0 };
    let mut outcomes = Vec::with_capacity(count);
    while records.at < data.len() {
        let first = records.next();
        outcomes.push(match first {
            Err(e) => Outcome::Refused(e),
            Ok(_) => Outcome::Done {
                pretty: records.next(),
                compact: records.next(),
                equal: records
                    .next()
                    .map(|t| String::from_utf8_lossy(&t).into_owned()),
            },
        });
    }
    assert_eq!(
        outcomes.len(),
        count,
        "{imp:?} gave another number of outcomes"
    );
    outcomes
}

struct Records<'a> {
    data: &'a [u8],
    at: usize,
}

impl Records<'_> {
    fn next(&mut self) -> Result<Vec<u8>, String> {
        let rest = &self.data[self.at..];
        let nl = rest
            .iter()
            .position(|&b| b == b'\n')
            .expect("a record header");
        let header = std::str::from_utf8(&rest[..nl]).unwrap();
        let (kind, len) = header.split_once(' ').expect("kind and length");
        let len: usize = len.parse().unwrap();
        let body = rest[nl + 1..nl + 1 + len].to_vec();
        self.at += nl + 1 + len + 1;
        match kind {
            "O" => Ok(body),
            _ => Err(String::from_utf8_lossy(&body).into_owned()),
        }
    }
}

/// Texts as the driver's `texts` mode reads them.
fn texts_input(texts: &[Vec<u8>]) -> Vec<u8> {
    let mut input = Vec::new();
    for t in texts {
        input.extend_from_slice(format!("{}\n", t.len()).as_bytes());
        input.extend_from_slice(t);
        input.push(b'\n');
    }
    input
}

// The Rust side ---------------------------------------------------------------------------

/// An embedded Lua with the library and the classes the driver registers.
struct Rust {
    lua: Lua,
    ship: mlua::Table,
    v: mlua::Table,
    savechain: mlua::Table,
}

impl Rust {
    fn new() -> Rust {
        let lua = Lua::new();
        let savechain = install(&lua).unwrap();
        let register: mlua::Function = savechain.get("register_class").unwrap();
        let ship = lua.create_table().unwrap();
        let v = lua.create_table().unwrap();
        register.call::<()>(("Ship", ship.clone())).unwrap();
        register.call::<()>(("v", v.clone())).unwrap();
        Rust {
            lua,
            ship,
            v,
            savechain,
        }
    }

    /// What the Rust library does with save text: decode, then encode both ways.
    fn texts(&self, text: &[u8]) -> Expected {
        match from_text(&self.lua, text) {
            Err(e) => Expected::Refused(e.to_string()),
            Ok(value) => self.encode(&value),
        }
    }

    fn encode(&self, value: &mlua::Value) -> Expected {
        let pretty = to_text(&self.lua, value, Style::Pretty).map_err(|e| e.to_string());
        let compact = to_text(&self.lua, value, Style::Compact).map_err(|e| e.to_string());
        let ambiguous = from_lua(&self.lua, value).is_ok_and(|v| ambiguous_order(&v));
        Expected::Done {
            pretty,
            compact,
            ambiguous,
        }
    }
}

#[derive(Clone, Debug)]
enum Expected {
    Refused(String),
    Done {
        pretty: Result<Vec<u8>, String>,
        compact: Result<Vec<u8>, String>,
        /// Whether the pure codec may order entries otherwise (see the file's doc).
        ambiguous: bool,
    },
}

/// Whether `value` has shared tables and a keyed table with several keys that are tables.
fn ambiguous_order(value: &Value) -> bool {
    fn walk(v: &Value, shared: &mut bool, keys: &mut bool) {
        match v {
            Value::Array(items) => items.iter().for_each(|x| walk(x, shared, keys)),
            Value::Object(map) => map.iter().for_each(|(_, x)| walk(x, shared, keys)),
            Value::Table(t) => match &**t {
                Table::Keyed(entries) => {
                    let table_keys = entries
                        .iter()
                        .filter(|(k, _)| {
                            matches!(k, Value::Array(_) | Value::Object(_) | Value::Table(_))
                        })
                        .count();
                    *keys |= table_keys >= 2;
                    for (k, x) in entries {
                        walk(k, shared, keys);
                        walk(x, shared, keys);
                    }
                }
                Table::Shared { value, .. } => {
                    *shared = true;
                    walk(value, shared, keys);
                }
                Table::Class { value, .. } => walk(value, shared, keys),
                Table::Ref(_) => *shared = true,
            },
            _ => {}
        }
    }
    let (mut shared, mut keys) = (false, false);
    walk(value, &mut shared, &mut keys);
    shared && keys
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show_result(r: &Result<Vec<u8>, String>) -> String {
    match r {
        Ok(t) => format!("text:\n{}", show(t)),
        Err(e) => format!("error: {e}"),
    }
}

/// Compares what an implementation did with what Rust did; `exact` asks for the same
/// messages of decoding errors (the native module) and the same text even where the order
/// is ambiguous.
fn compare(expected: &Expected, got: &Outcome, exact: bool) -> Result<(), String> {
    match (expected, got) {
        (Expected::Refused(e), Outcome::Refused(g)) => {
            if exact && e != g {
                return Err(format!(
                    "refused with another message:\nrust: {e}\ngot:  {g}"
                ));
            }
            // Worded otherwise, but at the same place when both name one (issue 28).
            if let (Some(pe), Some(pg)) = (position(e), position(g)) {
                if pe != pg {
                    return Err(format!("refused at another place:\nrust: {e}\ngot:  {g}"));
                }
            }
            Ok(())
        }
        (Expected::Refused(e), Outcome::Done { compact, .. }) => Err(format!(
            "rust refuses ({e}) but it went through, compact {}",
            show_result(compact)
        )),
        (Expected::Done { compact, .. }, Outcome::Refused(g)) => Err(format!(
            "refused ({g}) but rust takes it, compact {}",
            show_result(compact)
        )),
        (
            Expected::Done {
                pretty: ep,
                compact: ec,
                ambiguous,
            },
            Outcome::Done {
                pretty: gp,
                compact: gc,
                equal,
            },
        ) => {
            for (what, e, g) in [("pretty", ep, gp), ("compact", ec, gc)] {
                match (e, g) {
                    (Ok(e), Ok(g)) => {
                        if e != g && (exact || !ambiguous) {
                            return Err(format!(
                                "{what} text differs\n--- rust\n{}\n--- got\n{}",
                                show(e),
                                show(g)
                            ));
                        }
                    }
                    // A value with several things that cannot be saved names the one met
                    // first, which depends on the order the Lua state walks its tables in.
                    (Err(_), Err(_)) => {}
                    (e, g) => {
                        return Err(format!(
                            "{what}: rust {}\n--- got {}",
                            show_result(e),
                            show_result(g)
                        ))
                    }
                }
            }
            if ec.is_ok() && equal.as_deref() != Ok("equal") {
                return Err(format!(
                    "decoding its own compact text gave no equal value: {equal:?}\n{}",
                    show_result(gc)
                ));
            }
            Ok(())
        }
    }
}

// Part 1: random documents ------------------------------------------------------------

/// A document with mostly what Lua 5.1 can keep (integers within 2^53, often integral
/// doubles) and, when `consistent`, shared tables and classes a Lua state accepts; the rest
/// stays as drawn, to be refused.
fn tame(value: Value, consistent: bool) -> Value {
    fn numbers(v: Value, consistent: bool) -> Value {
        match v {
            Value::Int(i) if i.rem_euclid(8) != 0 => Value::Int(i >> 10),
            Value::UInt(u) if u % 8 != 0 => Value::Int((u >> 12) as i64 - (1 << 51)),
            Value::Double(d) => {
                let bits = d.to_bits();
                match bits % 8 {
                    0 => Value::Double(((bits as i64) >> 11) as f64),
                    4 => Value::Double(((bits as i64) >> 8) as f64),
                    2 => Value::Double(((bits as i64) >> 40) as f64),
                    _ => Value::Double(d),
                }
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|x| numbers(x, consistent)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, x)| (k, numbers(x, consistent)))
                    .collect(),
            ),
            Value::Table(t) => Value::from(match *t {
                Table::Keyed(entries) => Table::Keyed(
                    entries
                        .into_iter()
                        .map(|(k, x)| (numbers(k, consistent), numbers(x, consistent)))
                        .collect(),
                ),
                Table::Shared { id, value } => Table::Shared {
                    id,
                    value: numbers(value, consistent),
                },
                Table::Class { name, value } => Table::Class {
                    name: if !consistent {
                        name
                    } else if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                        "Ship".into()
                    } else if name.len() == 1 {
                        "v".into()
                    } else {
                        name
                    },
                    value: numbers(value, consistent),
                },
                other => other,
            }),
            other => other,
        }
    }
    /// Drops second definitions of an id and points references at defined ids.
    fn sharing(v: Value, defined: &[u64], seen: &mut Vec<u64>) -> Value {
        match v {
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|x| sharing(x, defined, seen))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, x)| (k, sharing(x, defined, seen)))
                    .collect(),
            ),
            Value::Table(t) => match *t {
                Table::Keyed(entries) => Value::from(Table::Keyed(
                    entries
                        .into_iter()
                        .map(|(k, x)| (sharing(k, defined, seen), sharing(x, defined, seen)))
                        .collect(),
                )),
                Table::Shared { id, value } => {
                    if seen.contains(&id) {
                        sharing(value, defined, seen)
                    } else {
                        seen.push(id);
                        let value = sharing(value, defined, seen);
                        Value::from(Table::Shared { id, value })
                    }
                }
                Table::Ref(id) if defined.contains(&id) => Value::from(Table::Ref(id)),
                Table::Ref(_) if defined.is_empty() => Value::Array(vec![]),
                Table::Ref(id) => Value::from(Table::Ref(defined[id as usize % defined.len()])),
                Table::Class { name, value } => {
                    let value = sharing(value, defined, seen);
                    Value::from(Table::Class { name, value })
                }
            },
            other => other,
        }
    }
    fn ids(v: &Value, out: &mut Vec<u64>) {
        match v {
            Value::Array(items) => items.iter().for_each(|x| ids(x, out)),
            Value::Object(map) => map.iter().for_each(|(_, x)| ids(x, out)),
            Value::Table(t) => match &**t {
                Table::Keyed(entries) => entries.iter().for_each(|(k, x)| {
                    ids(k, out);
                    ids(x, out)
                }),
                Table::Shared { id, value } => {
                    out.push(*id);
                    ids(value, out)
                }
                Table::Class { value, .. } => ids(value, out),
                Table::Ref(_) => {}
            },
            _ => {}
        }
    }
    let value = numbers(value, consistent);
    if !consistent {
        return value;
    }
    let mut defined = Vec::new();
    ids(&value, &mut defined);
    sharing(value, &defined, &mut Vec::new())
}

fn document() -> impl Strategy<Value = Value> {
    (any_value(), prop::bool::weighted(0.8)).prop_map(|(v, consistent)| tame(v, consistent))
}

/// Bits of the mantissa of a double.
const MANTISSA: u64 = (1 << 52) - 1;
const EXACT: u64 = 1 << 53;

/// A document as Lua 5.1 and LuaJIT keep it (every number a double): an integral number from
/// -2^53 to 2^53 (but -0.0) is an integer, a NaN is the default NaN; an integer beyond 2^53
/// (every u64 above i64::MAX among them) and a NaN with a payload are refused.
fn as_lua51(value: &Value) -> Result<Value, String> {
    Ok(match value {
        Value::Int(i) if i.unsigned_abs() > EXACT => {
            return Err(format!("the integer {i} is beyond 2^53"))
        }
        Value::UInt(u) => return Err(format!("the integer {u} is beyond 2^53")),
        Value::Double(d) if d.is_nan() => {
            if d.to_bits() & MANTISSA != 1 << 51 {
                return Err(format!("the NaN {:#x} has a payload", d.to_bits()));
            }
            Value::Double(f64::NAN)
        }
        Value::Double(d)
            if d.fract() == 0.0
                && d.abs() <= EXACT as f64
                && !(*d == 0.0 && d.is_sign_negative()) =>
        {
            Value::Int(*d as i64)
        }
        Value::Array(items) => Value::Array(items.iter().map(as_lua51).collect::<Result<_, _>>()?),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, x)| Ok((k.to_owned(), as_lua51(x)?)))
                .collect::<Result<_, String>>()?,
        ),
        Value::Table(t) => Value::from(match &**t {
            Table::Keyed(entries) => Table::Keyed(
                entries
                    .iter()
                    .map(|(k, x)| Ok((as_lua51(k)?, as_lua51(x)?)))
                    .collect::<Result<_, String>>()?,
            ),
            Table::Shared { id, value } => Table::Shared {
                id: *id,
                value: as_lua51(value)?,
            },
            Table::Class { name, value } => Table::Class {
                name: name.clone(),
                value: as_lua51(value)?,
            },
            Table::Ref(id) => Table::Ref(*id),
        }),
        other => other.clone(),
    })
}

/// Lua 5.4 turns a float key with an integer's value into that integer; Lua 5.1 has no
/// integers, and keeps a key beyond 2^53 a double. A value from a Lua 5.4 state of a
/// document `as_lua51` made has no other integers beyond 2^53: these were float keys.
fn float_keys_back(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(float_keys_back).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, x)| (k, float_keys_back(x)))
                .collect(),
        ),
        Value::Table(t) => Value::from(match *t {
            Table::Keyed(entries) => Table::Keyed(
                entries
                    .into_iter()
                    .map(|(k, x)| {
                        let k = match k {
                            Value::Int(i) if i.unsigned_abs() > EXACT => Value::Double(i as f64),
                            k => float_keys_back(k),
                        };
                        (k, float_keys_back(x))
                    })
                    .collect(),
            ),
            Table::Shared { id, value } => Table::Shared {
                id,
                value: float_keys_back(value),
            },
            Table::Class { name, value } => Table::Class {
                name,
                value: float_keys_back(value),
            },
            other => other,
        }),
        other => other,
    }
}

/// What Lua 5.1 and LuaJIT are to do with `text`: the Rust library's result for the
/// document mapped by `as_lua51`.
fn expected_lua51(rust: &Rust, text: &[u8]) -> Expected {
    let doc = match text::from_slice(text) {
        Ok(doc) => doc,
        Err(e) => return Expected::Refused(e.to_string()),
    };
    let mapped = match as_lua51(&doc) {
        Ok(m) => m,
        Err(e) => return Expected::Refused(e),
    };
    let value = match from_text(&rust.lua, &text::to_vec(&mapped).unwrap()) {
        Ok(v) => v,
        // The place of a refusal in the text rewritten here is none in `text`: the refusal
        // of `text` itself, or with no place when the mapping alone makes it.
        Err(e) => {
            return Expected::Refused(match from_text(&rust.lua, text) {
                Err(original) => original.to_string(),
                Ok(_) => e.message().to_string(),
            })
        }
    };
    match from_lua(&rust.lua, &value) {
        Err(e) => Expected::Done {
            pretty: Err(e.to_string()),
            compact: Err(e.to_string()),
            ambiguous: false,
        },
        Ok(v) => {
            let v = float_keys_back(v);
            Expected::Done {
                pretty: text::to_vec(&v).map_err(|e| e.to_string()),
                compact: text::to_vec_compact(&v).map_err(|e| e.to_string()),
                ambiguous: ambiguous_order(&v),
            }
        }
    }
}

/// Runs `texts` through `imps` and checks each against Rust (`expected`).
fn check_texts(
    imps: &[Imp],
    texts: &[Vec<u8>],
    expected: impl Fn(Imp, &Rust, &[u8]) -> Expected,
) -> Result<(), TestCaseError> {
    let rust = Rust::new();
    let input = texts_input(texts);
    for &imp in imps {
        let outcomes = batch(imp, "texts", &input, texts.len());
        for (text, got) in texts.iter().zip(&outcomes) {
            let want = expected(imp, &rust, text);
            if let Err(why) = compare(&want, got, imp == Imp::Native) {
                return Err(TestCaseError::fail(format!(
                    "{imp:?} ({}), input text:\n{}\n{why}",
                    imp.interpreter(),
                    show(text)
                )));
            }
        }
    }
    Ok(())
}

/// `cases` batches (or `LUA_CODECS_CASES`, to look harder by hand), shrinking briefly: each
/// case runs interpreters.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("LUA_CODECS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        max_shrink_iters: 64,
        ..ProptestConfig::default()
    }
}

/// Save texts, shown as text when a case fails.
#[derive(Clone)]
struct Texts(Vec<Vec<u8>>);

impl std::fmt::Debug for Texts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|t| String::from_utf8_lossy(t)))
            .finish()
    }
}

fn canonical_texts() -> impl Strategy<Value = Texts> {
    prop::collection::vec(
        (document(), any::<bool>()).prop_map(|(doc, compact)| {
            if compact {
                text::to_vec_compact(&doc).unwrap()
            } else {
                text::to_vec(&doc).unwrap()
            }
        }),
        48,
    )
    .prop_map(Texts)
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn documents_decode_and_encode_as_rust_does_in_lua54(texts in canonical_texts()) {
        check_texts(&[Imp::Pure54, Imp::Native], &texts.0, |_, rust, text| rust.texts(text))?;
    }

    #[test]
    fn documents_decode_and_encode_by_the_51_rules_in_lua51_and_luajit(texts in canonical_texts()) {
        check_texts(&[Imp::Pure51, Imp::PureJit], &texts.0, |_, rust, text| expected_lua51(rust, text))?;
    }
}

// Part 2: random Lua values ----------------------------------------------------------------

/// A Lua value to build: leaves, new tables, and references to tables built earlier (which
/// make sharing and cycles).
#[derive(Clone, Debug)]
enum Spec {
    Bool(bool),
    Int(i64),
    /// A float by its bits.
    Float(u64),
    Str(Vec<u8>),
    Null,
    Bytes(Vec<u8>),
    U64(u64),
    EmptyArray,
    /// What cannot be saved: a function, or a table with a metatable that is no class.
    Function,
    Unregistered,
    Table {
        entries: Vec<(Spec, Spec)>,
        kind: Kind,
    },
    Earlier(usize),
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Plain,
    Array,
    /// Instances of the classes `Ship` and `v` (one letter: its content is escaped).
    Ship,
    V,
}

fn any_spec() -> impl Strategy<Value = Spec> {
    let leaf = prop_oneof![
        4 => any::<bool>().prop_map(Spec::Bool),
        4 => any::<i64>().prop_map(Spec::Int),
        4 => prop::sample::select(vec![
            0i64, 1, 2, 3, -1, i64::MAX, i64::MIN, 1 << 53, -(1 << 53), (1 << 53) + 1,
        ])
        .prop_map(Spec::Int),
        6 => common::any_double().prop_map(|d| Spec::Float(d.to_bits())),
        3 => prop::sample::select(vec![
            0x8000_0000_0000_0000u64, // -0.0
            1,                        // the smallest subnormal
            0x000f_ffff_ffff_ffff,    // the largest subnormal
            0x7ff0_0000_0000_0000,    // inf
            0xfff0_0000_0000_0000,    // -inf
            0x7ff8_0000_0000_0000,    // the default NaN
            0xfff8_0000_0000_0000,    // and with its sign
            0x7ff0_0000_0000_0001,    // NaNs with payloads
            0x7ff4_0000_0000_0000,
            0xffff_ffff_ffff_ffff,
            0x4008_0000_0000_0000, // 3.0
            0x4340_0000_0000_0000, // 2^53
            0x43e0_0000_0000_0000, // 2^63
        ])
        .prop_map(Spec::Float),
        3 => prop::collection::vec(any::<u8>(), 0..8).prop_map(Spec::Str),
        3 => any::<String>().prop_map(|s| Spec::Str(s.into_bytes())),
        2 => "[\\x00-\\x1f\"\\\\\\x7fa]{0,4}".prop_map(|s| Spec::Str(s.into_bytes())),
        // The letters of tags, so that tables like {"d", 5} and {"x", {1}} are common.
        4 => "[abdtsrcvx]".prop_map(|s| Spec::Str(s.into_bytes())),
        2 => Just(Spec::Null),
        // Boxes of text (a box of other bytes comes back a plain string, which
        // savechain.equal tells from the box).
        2 => "[a-z]{0,3}|\\PC{0,3}".prop_map(|s| Spec::Bytes(s.into_bytes())),
        1 => any::<u64>().prop_map(Spec::U64),
        1 => Just(Spec::EmptyArray),
        1 => prop_oneof![Just(Spec::Function), Just(Spec::Unregistered)],
        5 => (0..8usize).prop_map(Spec::Earlier),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let kind = prop_oneof![
            4 => Just(Kind::Plain),
            1 => Just(Kind::Array),
            1 => Just(Kind::Ship),
            1 => Just(Kind::V),
        ];
        prop_oneof![
            // Sequences.
            (prop::collection::vec(inner.clone(), 0..6), kind.clone()).prop_map(|(items, kind)| {
                Spec::Table {
                    entries: items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| (Spec::Int(i as i64 + 1), v))
                        .collect(),
                    kind,
                }
            }),
            // Pairs that start with the letter of a tag: {"d", 5}, {"x", {1}}.
            ("[abdtsrcvx]", inner.clone(), kind.clone()).prop_map(|(tag, second, kind)| {
                Spec::Table {
                    entries: vec![
                        (Spec::Int(1), Spec::Str(tag.into_bytes())),
                        (Spec::Int(2), second),
                    ],
                    kind,
                }
            }),
            // Objects.
            (
                // `meta` goes first at the top level alone (docs/FORMAT.md, section 5).
                prop::collection::vec(("[a-z]{1,3}|\\PC{0,3}|meta", inner.clone()), 0..5),
                kind.clone()
            )
                .prop_map(|(entries, kind)| Spec::Table {
                    entries: entries
                        .into_iter()
                        .map(|(k, v)| (Spec::Str(k.into_bytes()), v))
                        .collect(),
                    kind,
                }),
            // Anything else: integer, float, boolean, string, byte string and table keys.
            (prop::collection::vec((inner.clone(), inner), 0..6), kind)
                .prop_map(|(entries, kind)| Spec::Table { entries, kind }),
        ]
    })
}

/// Lua 5.4 source that builds a spec's value: a function (s, Ship, V) -> value.
fn lua_builder(spec: &Spec) -> String {
    struct Render {
        code: String,
        tables: usize,
        /// Inside a key, or the value of a table key: references to earlier tables are left
        /// out there, so that no table is reachable from its own table keys or their values
        /// (which the pure codec cannot write yet: `table_reachable_from_a_table_key`);
        /// tables made there may be shared still.
        in_key: usize,
    }
    fn string(bytes: &[u8]) -> String {
        let mut s = String::from("\"");
        for &b in bytes {
            if b.is_ascii_alphanumeric() || b" _-.,:;!?/".contains(&b) {
                s.push(b as char);
            } else {
                s.push_str(&format!("\\{b:03}"));
            }
        }
        s.push('"');
        s
    }
    impl Render {
        fn expr(&mut self, spec: &Spec) -> String {
            match spec {
                Spec::Bool(b) => b.to_string(),
                Spec::Int(i64::MIN) => "math.mininteger".into(),
                Spec::Int(i) => format!("{i}"),
                Spec::Float(bits) => format!("F({}, {})", bits & 0xffff_ffff, bits >> 32),
                Spec::Str(bytes) => string(bytes),
                Spec::Null => "s.null".into(),
                Spec::Bytes(bytes) => format!("s.bytes({})", string(bytes)),
                Spec::U64(u) => format!("s.u64(\"{u}\")"),
                Spec::EmptyArray => "s.array()".into(),
                Spec::Function => "function() end".into(),
                Spec::Unregistered => "setmetatable({}, {})".into(),
                Spec::Earlier(_) if self.tables == 0 => "{}".into(),
                Spec::Earlier(i) => format!("T[{}]", i % self.tables + 1),
                Spec::Table { entries, kind } => {
                    self.tables += 1;
                    let t = format!("T[{}]", self.tables);
                    self.code.push_str(&format!("{t} = {{}}\n"));
                    for (k, v) in entries {
                        // A table key's entry: its value stays clear of earlier tables too.
                        let table_key = matches!(
                            k,
                            Spec::Table { .. }
                                | Spec::Earlier(_)
                                | Spec::EmptyArray
                                | Spec::Unregistered
                        );
                        self.in_key += 1;
                        let k = self.expr(k);
                        if !table_key {
                            self.in_key -= 1;
                        }
                        let v = self.expr(v);
                        if table_key {
                            self.in_key -= 1;
                        }
                        self.code.push_str(&format!("SET({t}, {k}, {v})\n"));
                    }
                    match kind {
                        Kind::Plain => {}
                        Kind::Array => self.code.push_str(&format!("s.array({t})\n")),
                        Kind::Ship => self.code.push_str(&format!("setmetatable({t}, Ship)\n")),
                        Kind::V => self.code.push_str(&format!("setmetatable({t}, V)\n")),
                    }
                    t
                }
            }
        }
    }
    let mut render = Render {
        code: String::new(),
        tables: 0,
        in_key: 0,
    };
    let root = render.expr(spec);
    format!(
        "function(s, Ship, V)\n\
         local T = {{}}\n\
         -- Lua refuses NaN keys; a null key stands for nothing.\n\
         local function SET(t, k, v) if k == k and not rawequal(k, s.null) then rawset(t, k, v) end end\n\
         local function F(lo, hi) return (string.unpack('<d', string.pack('<I4I4', lo, hi))) end\n\
         {}return {root}\nend",
        render.code
    )
}

/// Specs, shown with the Lua source that builds them when a case fails.
#[derive(Clone)]
struct Specs(Vec<Spec>);

impl std::fmt::Debug for Specs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|s| Source(lua_builder(s))))
            .finish()
    }
}

struct Source(String);

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Builds each value in the Rust library's Lua and in `imps`, and compares the texts.
fn check_values(imps: &[Imp], specs: &[Spec]) -> Result<(), TestCaseError> {
    let sources: Vec<String> = specs.iter().map(lua_builder).collect();
    let batch_source = format!("return {{\n{}\n}}\n", sources.join(",\n"));
    let rust = Rust::new();
    let builders: mlua::Table = rust.lua.load(&batch_source).eval().unwrap();
    let expected: Vec<Expected> = (1..=specs.len())
        .map(|i| {
            let build: mlua::Function = builders.get(i).unwrap();
            match build.call::<mlua::Value>((
                rust.savechain.clone(),
                rust.ship.clone(),
                rust.v.clone(),
            )) {
                Err(e) => Expected::Refused(e.to_string()),
                Ok(value) => rust.encode(&value),
            }
        })
        .collect();
    for &imp in imps {
        let outcomes = batch(imp, "values", batch_source.as_bytes(), specs.len());
        for ((source, want), got) in sources.iter().zip(&expected).zip(&outcomes) {
            if let Err(why) = compare(want, got, imp == Imp::Native) {
                return Err(TestCaseError::fail(format!(
                    "{imp:?} ({}), value built by:\n{source}\n{why}",
                    imp.interpreter()
                )));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn lua_values_encode_as_rust_does_in_lua54(specs in prop::collection::vec(any_spec(), 48).prop_map(Specs)) {
        check_values(&[Imp::Pure54, Imp::Native], &specs.0)?;
    }
}

// Codec bugs found by the tests above, one test each --------------------------------------

/// What `source` (a Lua chunk with the library as `s`, returning a string) gives: in the
/// Rust library's Lua, or, with `imp`, under a stock interpreter. An error is "error: ...".
fn run_chunk(imp: Option<Imp>, source: &str) -> String {
    let wrapped = format!(
        "local ok, r = pcall(function(s) {source} end, ...)\n\
         return ok and tostring(r) or ('error: ' .. tostring(r))"
    );
    match imp {
        None => {
            let rust = Rust::new();
            let chunk: mlua::Function = rust.lua.load(&wrapped).into_function().unwrap();
            chunk.call::<String>(rust.savechain.clone()).unwrap()
        }
        Some(imp) => {
            let script = format!(
                "local f = assert((loadstring or load)({wrapped:?}))\n\
                 io.write(f(require('savechain')))"
            );
            need(imp.interpreter());
            let repo = stock_lua::repo();
            let output = stock_lua::run_lua(
                imp.interpreter(),
                &format!("{}/lua/?.lua", repo.display()),
                "",
                Script::Source(&script),
                &[],
            );
            assert!(output.status.success(), "{}", stock_lua::printed(&output));
            String::from_utf8_lossy(&output.stdout).into_owned()
        }
    }
}

/// Checks that `imps` give what `expected` is, or what the Rust library gives when it is
/// None; errors match on being errors.
fn same_as_rust(imps: &[Imp], source: &str, expected: Option<&str>) {
    let want = expected.map_or_else(|| run_chunk(None, source), str::to_owned);
    let mut wrong = Vec::new();
    for &imp in imps {
        let got = run_chunk(Some(imp), source);
        let same = if want.starts_with("error: ") {
            got.starts_with("error: ")
        } else {
            got == want
        };
        if !same {
            wrong.push(format!("{} gives {got}", imp.interpreter()));
        }
    }
    assert!(
        wrong.is_empty(),
        "{source}\nexpected {want}\n{}",
        wrong.join("\n")
    );
}

const PURE: [Imp; 3] = [Imp::Pure54, Imp::Pure51, Imp::PureJit];

#[test]
fn negative_zero_integer_is_the_integer_0() {
    // docs/FORMAT.md 3.1: `-0` is the integer 0. Lua 5.1 and LuaJIT read it as -0.0.
    same_as_rust(
        &PURE,
        r#"return s.encode(s.decode("[-0, 0]"), {compact = true})"#,
        Some("[0,0]"),
    );
}

#[test]
fn a_escape_in_an_a_escape() {
    // The escaped array ["a", X] with X a tag: X is read as a tag, not as a literal array
    // (so ["a", ["a", ["a", [1]]]] is the array of "a" and [1], written ["a", ["a", [1]]]).
    for text in [
        r#"["a",["a",["b","x"]]]"#,
        r#"["a",["a",["d","inf"]]]"#,
        r#"["a",["a",["a",[1]]]]"#,
        r#"["t",[["a",["a",["b","x"]]]]]"#,
    ] {
        same_as_rust(
            &PURE,
            &format!("return s.encode(s.decode({text:?}), {{compact = true}})"),
            None,
        );
    }
    // A typed double inside: written back spelled, as the Rust library writes it; Lua 5.1
    // and LuaJIT write the integral double 5.0 as the integer 5, so the array is no tag.
    let source = r#"return s.encode(s.decode("[\"a\",[\"a\",[\"d\",5]]]"), {compact = true})"#;
    same_as_rust(
        &[Imp::Pure54],
        source,
        Some(r#"["a",["a",["d","0x1.4p+2"]]]"#),
    );
    same_as_rust(&[Imp::Pure51, Imp::PureJit], source, Some(r#"["a",5]"#));
}

#[test]
fn big_integer_in_an_escaped_d_array() {
    // An integer out of range is an error, also inside ["a", ["d", ...]].
    same_as_rust(
        &PURE,
        r#"return s.encode(s.decode('["a",["d",18446744073709551616]]'), {compact = true})"#,
        Some("error: the integer is out of range"),
    );
    same_as_rust(
        &[Imp::Pure51, Imp::PureJit],
        r#"return s.encode(s.decode('["a",["d",9007199254740993]]'), {compact = true})"#,
        Some("error: the integer is beyond 2^53"),
    );
}

#[test]
fn table_reachable_from_a_table_key() {
    for source in [
        "local t = {} t[t] = true return s.encode(t, {compact = true})",
        "local t = {} t[{}] = t return s.encode(t, {compact = true})",
        "local u = {} u[{1}] = {u} return s.encode(u, {compact = true})",
    ] {
        same_as_rust(&PURE, source, None);
    }
}

#[test]
fn table_keys_with_the_same_text() {
    same_as_rust(
        &PURE,
        "return s.encode({[{}] = 3, [{}] = 2.5, [false] = 1}, {compact = true})",
        None,
    );
}

#[test]
fn u64_keys_order_among_doubles() {
    same_as_rust(
        &[Imp::Pure54],
        r#"return s.encode({[s.u64("17835570568514555235")] = "x", [2.0^526] = 1, [1/0] = 2}, {compact = true})"#,
        None,
    );
}

#[test]
fn luajit_compiler_on_gives_the_same_text() {
    // With its compiler on, LuaJIT sometimes writes two-element sequences of this corpus
    // as keyed tables (["t", [[1, "q"], [2, "d"]]]); with it off, never. A few runs.
    let input =
        std::fs::read(stock_lua::repo().join("lua/tests/drivers/luajit_corpus.texts")).unwrap();
    let mut texts = Vec::new();
    let mut at = 0;
    while at < input.len() {
        let nl = at + input[at..].iter().position(|&b| b == b'\n').unwrap();
        let len: usize = std::str::from_utf8(&input[at..nl])
            .unwrap()
            .parse()
            .unwrap();
        texts.push(input[nl + 1..nl + 1 + len].to_vec());
        at = nl + 1 + len + 1;
    }
    let rust = Rust::new();
    for run in 0..8 {
        let outcomes = batch_with(Imp::PureJit, "texts", &input, texts.len(), false, MAX_DEPTH);
        for (text, got) in texts.iter().zip(&outcomes) {
            if let Err(why) = compare(&expected_lua51(&rust, text), got, false) {
                panic!("run {run}, input text:\n{}\n{why}", show(text));
            }
        }
    }
}

// Part 4: lua/tests/codec.lua in every stock interpreter ----------------------------------

#[test]
fn codec_lua_tests_pass_in_lua51_lua54_and_luajit() {
    let repo = stock_lua::repo();
    let runner = repo.join("lua/tests/run.lua");
    let file = repo.join("lua/tests/codec.lua");
    for imp in PURE {
        need(imp.interpreter());
        let output = stock_lua::run_lua(
            imp.interpreter(),
            &format!("{}/lua/?.lua", repo.display()),
            "",
            Script::File(&runner),
            &[file.as_os_str()],
        );
        assert!(
            output.status.success(),
            "lua/tests/codec.lua in {}:\n{}",
            imp.interpreter(),
            stock_lua::printed(&output)
        );
    }
}

#[test]
fn null_as_a_key_is_refused_when_written() {
    // It could not be read back (docs/FORMAT.md 3.5), so no implementation writes it.
    let source = "return s.encode({[s.null] = 1, x = 2}, {compact = true})";
    assert!(run_chunk(None, source).starts_with("error: "));
    same_as_rust(
        &[Imp::Pure54, Imp::Pure51, Imp::PureJit, Imp::Native],
        source,
        None,
    );
}

#[test]
fn negative_zero_typed_in_decimal_is_kept_in_every_lua() {
    // What the decimal view writes for -0.0; Lua 5.1 merges the constants 0 and -0.0 of a
    // function, which once turned it into 0.
    for text in [r#"["d", -0.0]"#, r#"["d", -0]"#, r#"["d", -1e-400]"#] {
        same_as_rust(
            &[Imp::Pure54, Imp::Pure51, Imp::PureJit, Imp::Native],
            &format!("return s.encode(s.decode({text:?}), {{compact = true}})"),
            Some(r#"["d","-0x0p+0"]"#),
        );
    }
}

// Found by a review of the pure codec ------------------------------------------------------

const ALL: [Imp; 4] = [Imp::Pure54, Imp::Pure51, Imp::PureJit, Imp::Native];

#[test]
fn a_class_whose_eq_matches_anything_is_no_null() {
    // The codec's tests of null are raw: a class's __eq (called by == on Lua 5.3+) must not
    // make an instance null, as a key or a value, written or read.
    let class = "local Set = s.register_class('Set', {__eq = function() return true end})";
    for body in [
        "return s.encode({x = setmetatable({}, Set)}, {compact = true})",
        "return s.encode({[setmetatable({}, Set)] = 1}, {compact = true})",
        r#"return s.encode(s.decode('["s", [1, ["c", ["Set", {}]]]]'), {compact = true})"#,
        r#"return s.encode(s.decode('["t", [[["c", ["Set", {}]], 1]]]'), {compact = true})"#,
    ] {
        same_as_rust(&ALL, &format!("{class} {body}"), None);
    }
}

#[test]
fn tags_hold_only_what_the_format_lets_them() {
    // docs/FORMAT.md 3.5: a class holds an array, an object or a keyed table; a shared table
    // no shared table or reference; a keyed table's entries are plain pairs.
    let class = "s.register_class('Boat', {})";
    for text in [
        r#"["c", ["Boat", ["s", [1, {}]]]]"#,
        r#"[["c", ["Boat", ["r", [1]]]], ["s", [1, {}]]]"#,
        r#"["s", [1, ["s", [2, {}]]]]"#,
        r#"["s", [1, ["r", [2]]]]"#,
        r#"["t", [["t", [[1, "k"], [2, "v"]]]]]"#,
        r#"["t", [["s", [1, ["k", "v"]]]]]"#,
        r#"[["r", [1]], ["s", [1, ["c", ["Boat", {"hp": 1}]]]]]"#,
        r#"["c", ["Boat", ["t", [[1, 2], [true, 3]]]]]"#,
    ] {
        same_as_rust(
            &ALL,
            &format!("{class} return s.encode(s.decode({text:?}), {{compact = true}})"),
            None,
        );
    }
}

#[test]
fn an_a_escape_is_decided_by_where_its_array_ends() {
    for text in [
        r#"["a", ["a", ["a", [1]]], 2]"#,
        r#"["a", ["a", ["b", "x"]], 1]"#,
        r#"["a", ["a", ["d", "0x1p+0"]], ["d", "0x1p+1"]]"#,
        r#"["a", ["x\"]", [1]]]"#,
        r#"["a", ["d", 18446744073709551616]]"#,
        r#"["a", ["d", 18446744073709551616], 1]"#,
    ] {
        same_as_rust(
            &[Imp::Pure54, Imp::Native],
            &format!("return s.encode(s.decode({text:?}), {{compact = true}})"),
            None,
        );
    }
}

#[test]
fn tables_as_keys_nested_deep_are_written_as_rust_writes_them() {
    // Each key's text is made once (it was made again at every level, which doubled the
    // work per level).
    for source in [
        "local t = true for i = 1, 24 do t = {[t] = true} end return s.encode(t, {compact = true})",
        "local u = {} for i = 1, 24 do u = {[{}] = u} end return s.encode(u, {compact = true})",
    ] {
        same_as_rust(&ALL, source, None);
    }
    // With shared tables and several tables as keys, the order of those entries is not
    // settled (docs/FORMAT.md 8 and 8.1: the Rust core orders them by a hash of their
    // contents, which ties past a few levels of references, so even the native module's
    // host Lua may order them otherwise): the text must read back equal.
    let source = "local w = 1 for i = 1, 12 do w = {[{w}] = 1, [{w, 2}] = 2} end";
    same_as_rust(
        &ALL,
        &format!("{source} return s.equal(w, s.decode(s.encode(w)))"),
        Some("true"),
    );
}

#[test]
fn class_names_are_text() {
    same_as_rust(&ALL, "return s.register_class('\\255', {})", None);
}

#[test]
fn boxes_of_the_same_contents_as_keys_are_ordered_by_their_values() {
    // Two byte-string or u64 boxes holding the same are two keys: the order of their
    // entries must not be the order Lua walks the table in.
    for source in [
        "return s.encode({[s.bytes('')] = s.null, [s.bytes('')] = s.bytes('<'), [1] = 2}, \
         {compact = true})",
        "return s.encode({[s.u64('18446744073709551615')] = 'b', \
         [s.u64('18446744073709551615')] = 'a'}, {compact = true})",
    ] {
        same_as_rust(&[Imp::Pure54, Imp::Native], source, None);
    }
    same_as_rust(
        &[Imp::Pure51, Imp::PureJit],
        "return s.encode({[s.bytes('')] = s.null, [s.bytes('')] = s.bytes('<'), [1] = 2}, \
         {compact = true})",
        None,
    );
}

// Part 3: where a text is wrong -------------------------------------------------------------

/// The line and column a decoding error's message names ("line 3, column 7: ..."), or
/// None when it names none (a value Lua 5.1 cannot keep, refused before reading).
fn position(message: &str) -> Option<(u64, u64)> {
    let at = message.find("line ")?;
    let rest = &message[at + "line ".len()..];
    let (line, rest) = rest.split_once(", column ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.parse().ok()?, column.parse().ok()?))
}

/// Whether a refusal of Lua 5.1 or LuaJIT is about a number they cannot keep, which they
/// meet while reading and the Rust reader does not refuse at all.
fn lua51_only(message: &str) -> bool {
    message.contains("2^53") || message.contains("NaN with a payload")
}

/// Decodes `texts` in `imps` and checks that each refuses exactly the texts the Rust reader
/// refuses, each at the line and column the Rust reader names (the byte that is wrong).
fn check_positions(imps: &[Imp], texts: &[Vec<u8>]) -> Result<(), String> {
    check_positions_within(imps, texts, MAX_DEPTH)
}

/// [`check_positions`], each reader decoding with the nesting limit `max_depth`.
fn check_positions_within(imps: &[Imp], texts: &[Vec<u8>], max_depth: usize) -> Result<(), String> {
    let rust = Rust::new();
    let input = texts_input(texts);
    let mut wrong = Vec::new();
    for &imp in imps {
        let outcomes = batch_with(imp, "texts", &input, texts.len(), false, max_depth);
        for (text, got) in texts.iter().zip(&outcomes) {
            let want = match from_text_with_max_depth(&rust.lua, text, max_depth) {
                Err(e) => Some(e.to_string()),
                Ok(_) => None,
            };
            let got = match got {
                Outcome::Refused(g) => Some(g.clone()),
                Outcome::Done { .. } => None,
            };
            let (interpreter, shown) = (imp.interpreter(), show(text));
            // A text nested too deep is refused as such in every reader.
            let too_deep = format!("nested more than {max_depth} arrays and objects deep");
            let deep = |m: &Option<String>| m.as_ref().is_some_and(|m| m.contains(&too_deep));
            match (&want, &got) {
                (None, None) => {}
                (None, Some(g)) if imp != Imp::Native && lua51_only(g) => {}
                (Some(w), Some(g))
                    if position(w) == position(g)
                        && position(w).is_some()
                        && deep(&want) == deep(&got) => {}
                (Some(_), Some(g)) if imp != Imp::Native && lua51_only(g) => {}
                _ => wrong.push(format!(
                    "{imp:?} ({interpreter}), text {shown:?}:\n  rust: {want:?}\n  got:  {got:?}"
                )),
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n"))
    }
}

/// Malformed texts, one for each error of the readers, some on a second line or after
/// characters of several bytes (columns count characters).
fn malformed_texts() -> Vec<Vec<u8>> {
    let mut texts: Vec<Vec<u8>> = [
        // Issue 28's three.
        r#"{"data": {"cargo": {"x": 1, "hold": ["q", [1]]}}}"#,
        "[1.]",
        r#""\q""#,
        // Numbers.
        "[1.e5]",
        "[1e]",
        "[1e+]",
        "[-]",
        "[-x]",
        "[01]",
        "[-01]",
        "[1.5.2]",
        "[99999999999999999999]",
        "{\"a\": -9223372036854775809}",
        "[1e999]",
        "[\"d\", 1e999]",
        "[\"d\", 99999999999999999999]",
        // Hexfloats typed without their quotes, and hexadecimal integers.
        "[\"d\", 0x1p+0]",
        "{\"hp\": -0x1.8p+3}",
        "[0X1F, 2]",
        "[0x]",
        // Strings.
        r#""\u12""#,
        r#""\u12x4""#,
        r#""a\ud800""#,
        r#""a\ud800\u0041""#,
        r#""a\udc00x""#,
        "\"abc",
        "[\"x\", \"a\\u0041bc, 1]",
        "\"a\nb\"",
        "\"a\u{1}b\"",
        "[\"Zoë\", \"\\x\"]",
        "\"\\",
        "\"\\u",
        // Structure.
        "",
        "  \n ",
        "[1,]",
        "[1 2]",
        "[,1]",
        "[1",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"a\":}",
        "{1:2}",
        "{\"a\":1 \"b\":2}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"a\":[1,]}",
        "{\"a\":1,\"a\" 2}",
        "{\"é\":1,\n \"é\":2}",
        "tru",
        "nul",
        "[true false]",
        "[1] x",
        "[1]\n\n  ]",
        "\u{feff}[1,]",
        "[1, 2]\u{feff}",
        // Tags.
        "[\"d\", \"0x1.g\"]",
        "[\"d\", \"1.5\"]",
        "[\"d\", true]",
        "[\"d\", \"nan:0x0\"]",
        "[\"b\", 5]",
        "[\"b\", \"\\u0100\"]",
        "[\"t\", 5]",
        "[\"t\", [[1]]]",
        "[\"t\", [[null, 1]]]",
        "[\"t\", [[1, 1], [1, 2]]]",
        "[\"s\", [1]]",
        "[[\"s\", [1, {}]], [\"s\", [1, {}]]]",
        "[\"r\", [2]]",
        "[\"r\", \"x\"]",
        "[\"c\", [\"Nope\", {}]]",
        "[\"c\", 5]",
        "[\"r\", [\"d\", \"0x1p+0\"]]",
        "[\"s\", 1.5]",
        "[\"c\", 1.5]",
        "[\"c\", [\"\", {}]]}",
        "[\"s\", [\"b\", \"\\u00ff\"]]",
        "[\"z\", {}]",
        // What the Lua tables of tags must also be, checked once the text is read, each
        // named at the tag's content.
        "[\"t\", [[1, \"a\"], [1.0, \"b\"]]]",
        "[\"t\", [[[\"b\", \"\\u00ff\"], 1], [[\"b\", \"\\u00ff\"], 2]]]",
        "[\"t\", [[[\"b\", \"x\"], 1], [[\"b\", \"x\"], 2], [{}, 3], [{}, 4]]]",
        "[[\"s\", [1, {}]], [\"t\", [[[\"r\", [1]], 1], [[\"r\", [1]], 2]]]]",
        "[\"t\", [[1, [\"c\", [\"Nope\", {}]]], [1, 2]]]",
        "{\"é\":\n [[\"r\", [3]], [\"r\", [2]], [\"r\", [3]]]}",
        "[\"Zoë\",\n [\"s\", [1, []]], [\"s\", [1, []]]]",
        "[[\"r\", [2]], [\"s\", [1, {}]], [\"s\", [1, {}]]]",
        "[[\"r\", [2]], 1,]",
        "[[\"c\", [\"Nope\", {}]], [\"t\", [[null, 1]]]]",
        "{\"a\": [\"q\",\n  [1]]}",
        "[\"a\", 5]",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    texts.push(b"[\"\xff\"]".to_vec());
    texts.push(b"[\"ab\xc3\"]".to_vec());
    texts.push(b"[\"a\xed\xa0\x80\"]".to_vec());
    texts.push(b"{\"\xe9\": 1}".to_vec());
    texts.push(format!("{}1{}", "[".repeat(600), "]".repeat(600)).into_bytes());
    texts.push(format!("{{\"a\": {}1{}}}", "[".repeat(513), "]".repeat(513)).into_bytes());
    texts
}

#[test]
fn what_lua_tables_of_tags_must_be_is_refused_at_the_tag_with_its_path() {
    // Issue 28: these four were named by their path alone, checked once the values were
    // made; now at the tag's content too, as the one-file library names them.
    let rust = Rust::new();
    for (text, message) in [
        (
            r#"{"fleet": [1, ["t", [[1, 2], [1.0, 3]]]]}"#,
            r#"line 1, column 21: at fleet[1]: the key ["d","0x1p+0"] appears twice in this keyed table"#,
        ),
        (
            "{\"a\": [\"s\", [1, {}]],\n \"b\": [\"s\", [1, []]]}",
            "line 2, column 13: at b: shared table 1 is defined twice",
        ),
        (
            r#"{"a": ["r", [2]], "b": ["r", [1]]}"#,
            r#"line 1, column 13: at a: reference ["r", [2]] to a shared table that is never defined (no ["s", [2, ...]])"#,
        ),
        (
            r#"[["c", ["Ship", {}]], ["c", ["Nope", []]]]"#,
            r#"line 1, column 29: at [1]: class "Nope" is not registered (register its metatable with savechain.register_class)"#,
        ),
    ] {
        let got = from_text(&rust.lua, text.as_bytes())
            .map(|_| ())
            .unwrap_err();
        assert_eq!(got.to_string(), message, "{text}");
    }
}

/// Texts nested around the nesting limits 1 to 4: arrays, objects, tags (which count as
/// arrays), escapes and Lua tables, on one line and on several.
fn nested_texts() -> Vec<Vec<u8>> {
    let mut texts: Vec<Vec<u8>> = [
        "1",
        "[]",
        "{}",
        "[1]",
        "[[]]",
        "[{}]",
        "{\"a\": []}",
        "{\"a\": {\"b\": 1}}",
        "[\"d\", \"0x1p+0\"]",
        "[[\"d\", \"0x1p+0\"]]",
        "{\"hp\": [\"d\", 3]}",
        "[\"b\", \"abc\"]",
        "[\"a\", [\"d\", 1]]",
        "[[\"a\", [\"x\", [1]]]]",
        "[\"t\", [[1, {}]]]",
        "[\"t\", [[[\"d\", \"0x1p+0\"], 2]]]",
        "[[\"s\", [1, {\"x\": []}]], [\"r\", [1]]]",
        "[[\"c\", [\"Ship\", {\"hull\": [1]}]]]",
        "{\"a\":\n  {\"b\":\n    [1, 2, [3]]}}",
        "[1, [2, [3, [4, [5]]]], 6]",
        "[[[[[]]]], {\"a\": 1,}]",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    for n in [1, 2, 3, 4, 5] {
        texts.push(format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes());
        texts.push(format!("{}1{}", "{\"k\": ".repeat(n), "}".repeat(n)).into_bytes());
    }
    texts
}

#[test]
fn a_nesting_limit_set_by_the_caller_is_kept_alike_in_every_reader() {
    // savechain.decode_max_depth(n) in each reader, savechain::lua::from_text_with_max_depth
    // in Rust: the same texts refused, at the same place, as nested too deep.
    let texts = nested_texts();
    for max_depth in 1..=4 {
        check_positions_within(&ALL, &texts, max_depth)
            .unwrap_or_else(|e| panic!("limit {max_depth}:\n{e}"));
    }
}

/// Canonical texts of random documents, and a nesting limit that some of them exceed.
fn texts_and_a_limit() -> impl Strategy<Value = (Texts, usize)> {
    (canonical_texts(), 1..=6usize)
}

proptest! {
    #![proptest_config(config(8))]

    #[test]
    fn random_documents_under_a_nesting_limit_are_read_alike_in_every_reader(
        (texts, max_depth) in texts_and_a_limit()
    ) {
        check_positions_within(&ALL, &texts.0, max_depth).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn decoding_errors_are_at_the_same_place_in_every_reader() {
    // Issue 28: the one-file library named other columns than the Rust reader for the same
    // text. The Rust reader's place is the reference: the byte that is wrong.
    check_positions(&ALL, &malformed_texts()).unwrap_or_else(|e| panic!("{e}"));
}

/// Bytes a damage puts in a text: JSON's punctuation, parts of numbers and escapes, a line
/// break, a control character, a byte that is no UTF-8.
const DAMAGE: &[u8] = b"\"\\[]{},:.eE-+0 x\nu\x01\xff";

/// Canonical texts of random documents, each damaged once or twice: a byte deleted,
/// replaced or inserted.
fn damaged_texts() -> impl Strategy<Value = Texts> {
    let damage = (
        0..3u8,
        any::<prop::sample::Index>(),
        prop::sample::select(DAMAGE),
    );
    prop::collection::vec(
        (
            document(),
            any::<bool>(),
            prop::collection::vec(damage, 1..3),
        )
            .prop_map(|(doc, compact, damages)| {
                let mut text = if compact {
                    text::to_vec_compact(&doc).unwrap()
                } else {
                    text::to_vec(&doc).unwrap()
                };
                for (kind, at, byte) in damages {
                    let at = at.index(text.len() + 1);
                    match kind {
                        0 if at < text.len() => {
                            text.remove(at);
                        }
                        1 if at < text.len() => text[at] = byte,
                        _ => text.insert(at, byte),
                    }
                }
                text
            }),
        48,
    )
    .prop_map(Texts)
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn damaged_texts_are_refused_at_the_same_place_in_every_reader(texts in damaged_texts()) {
        check_positions(&ALL, &texts.0).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn a_shared_table_defined_twice_is_refused_whatever_its_first_definition_holds() {
    // The error waits for the end of the text; the table read for the second definition
    // must not be merged into the first (a class whose metatable is protected refused that
    // with a bare Lua error).
    let source = r#"s.register_class('Locked', {__metatable = false})
        local ok, e = pcall(s.decode, '[["s",[1,["c",["Locked",{}]]]],["s",[1,{}]]]')
        return e"#;
    same_as_rust(
        &PURE,
        source,
        Some("line 1, column 37: the shared table 1 is defined twice"),
    );
}
