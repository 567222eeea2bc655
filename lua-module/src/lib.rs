//! savechain as a native module for a stock Lua 5.4 interpreter (Debian's `lua5.4`, a game
//! linking Lua 5.4 and exporting its C API): `require("savechain")` gives the `savechain`
//! Lua library (`encode`, `decode`, `null`, `array`, `bytes`, `u64`, `register_class`,
//! `register`, `collect`, `restore`, `equal`, ...; `docs/FORMAT.md`, section 8) and, beside
//! it, what only Rust can do for a host:
//!
//! ```lua
//! local savechain = require("savechain")
//! savechain.format(text)                    -- canonical text (pretty; {compact = true})
//! savechain.decimal(text)                   -- the decimal view (docs/FORMAT.md, 5.1)
//! local chain = savechain.chain{ steps = "upgrades/", writer = "2.3.0",
//!                                game = "Starlane Traders", mods = "mods/" }
//! local text, report = chain:upgrade(text, { to = 5, keep_going = true })
//! savechain.encode(value, { compress = "zstd" })  -- save text stored compressed
//! ```
//!
//! Every function that takes save text (`decode`, `load`, `format`, `decimal`,
//! `chain:upgrade`) takes it compressed too (zstd or gzip, known by its first bytes: a
//! file's bytes as read; Lua strings are bytes), and those that write it (`encode`,
//! `save`, `chain:upgrade`) take `compress = "zstd" | "gzip" | "none"` and `level = N`.
//!
//! Built with `cargo build --release -p savechain-lua` (never with the library's default
//! features: they compile a Lua in, and a module uses its host's). The library does the
//! work; this crate only reads the arguments, calls it and reports, and its errors are the
//! library's messages as plain strings, as `encode` and `decode` raise them. A chain's
//! steps run in sandboxes of their own, new Lua states of the host's Lua, never in the
//! host's state.

use std::borrow::Cow;
use std::time::Duration;

use mlua::{AnyUserData, Lua, Table, UserData, Value};
use savechain::compress::{self, Codec, Compression};
use savechain::lua::{install, library_module, Limits};
use savechain::text::{reformat, Style};
use savechain::upgrade::{Chain, ModStatus, UpgradedText};
use savechain::Options;

/// `require("savechain")`: the library, with the native functions of `native.lua`.
#[mlua::lua_module(name = "savechain")]
fn open_savechain(lua: &Lua) -> mlua::Result<Table> {
    set_up(lua)
}

/// `require("savechain.upgrade")`, which Lua's all-in-one loader finds in this file when a
/// script requires it before `savechain` (after, `package.preload` has it).
#[mlua::lua_module(name = "savechain_upgrade")]
fn open_savechain_upgrade(lua: &Lua) -> mlua::Result<Value> {
    // Sets up `savechain` too: its `package.preload` entry, which a later
    // `require("savechain")` finds before this file, gives the module with the native
    // functions.
    set_up(lua)?;
    library_module(lua, "savechain.upgrade")
}

/// Marks a state whose `savechain` module has the native functions.
struct NativeAdded;

/// Installs the library in the host's state and adds the native functions to its module,
/// once; returns the module.
fn set_up(lua: &Lua) -> mlua::Result<Table> {
    let module = install(lua)?;
    if lua.app_data_ref::<NativeAdded>().is_some() {
        return Ok(module);
    }
    let native = lua.create_table()?;
    native.raw_set("reformat", lua.create_function(native_reformat)?)?;
    native.raw_set("chain", lua.create_function(native_chain)?)?;
    native.raw_set("upgrade", lua.create_function(native_upgrade)?)?;
    native.raw_set("decompress", lua.create_function(native_decompress)?)?;
    native.raw_set("compress", lua.create_function(native_compress)?)?;
    lua.load(include_str!("native.lua"))
        .set_name("=savechain (native)")
        .call::<()>((&module, native))?;
    // This crate's version, the rock's: one version for everything (lua/savechain.lua
    // writes the same).
    module.raw_set("_VERSION", env!("CARGO_PKG_VERSION"))?;
    lua.set_app_data(NativeAdded);
    Ok(module)
}

/// What a native function gives `native.lua`: its result and nil, or nil and the message
/// to raise.
type Reply = (Value, Value);

fn fail(lua: &Lua, message: impl AsRef<str>) -> mlua::Result<Reply> {
    Ok((
        Value::Nil,
        Value::String(lua.create_string(message.as_ref())?),
    ))
}

/// `native.reformat(text, style)`: the text in `"pretty"`, `"compact"` or `"decimal"`.
fn native_reformat(lua: &Lua, (text, style): (mlua::String, String)) -> mlua::Result<Reply> {
    let style = match style.as_str() {
        "compact" => Style::Compact,
        "decimal" => Style::Decimal,
        _ => Style::Pretty,
    };
    let bytes = text.as_bytes();
    let plain = match compress::decompress(&bytes, compress::DEFAULT_LIMIT) {
        Ok(plain) => plain,
        Err(e) => return fail(lua, e.to_string()),
    };
    match reformat(&plain, style) {
        Ok(out) => Ok((Value::String(lua.create_string(out)?), Value::Nil)),
        Err(e) => fail(lua, e.to_string()),
    }
}

/// `native.decompress(bytes)`: the text that save bytes hold (themselves when plain), or
/// nil and why not (damaged compressed data, more than 1 GiB of text).
fn native_decompress(lua: &Lua, bytes: mlua::String) -> mlua::Result<Reply> {
    let given = bytes.as_bytes();
    match compress::decompress(&given, compress::DEFAULT_LIMIT) {
        Ok(Cow::Borrowed(_)) => Ok((Value::String(bytes.clone()), Value::Nil)),
        Ok(Cow::Owned(text)) => Ok((Value::String(lua.create_string(text)?), Value::Nil)),
        Err(e) => fail(lua, e.to_string()),
    }
}

/// `native.compress(text, codec, level)`: `text` stored as `codec` (`"zstd"`, `"gzip"` or
/// `"none"`) at `level` (nil: the codec's default), or nil and why not.
fn native_compress(
    lua: &Lua,
    (text, codec, level): (mlua::String, mlua::String, Option<i64>),
) -> mlua::Result<Reply> {
    let how = match compression(&codec.to_string_lossy(), level) {
        Ok(how) => how,
        Err(message) => return fail(lua, message),
    };
    let bytes = compress::compress(&text.as_bytes(), how);
    Ok((Value::String(lua.create_string(bytes)?), Value::Nil))
}

/// The compression named `codec` at `level`, by the library's rules.
fn compression(codec: &str, level: Option<i64>) -> Result<Compression, String> {
    let codec: Codec = codec.parse().map_err(|e: savechain::Error| e.to_string())?;
    match level {
        None => Ok(Compression::new(codec)),
        Some(level) => {
            let level =
                i32::try_from(level).map_err(|_| format!("{codec} has no level {level}"))?;
            Compression::with_level(codec, level).map_err(|e| e.to_string())
        }
    }
}

/// A chain made by `savechain.chain`, with the limits its steps run under.
struct NativeChain {
    chain: Chain,
    limits: Limits,
}

impl UserData for NativeChain {}

/// `native.chain(options)`: the chain and a table describing it, or nil and why not.
fn native_chain(lua: &Lua, options: Value) -> mlua::Result<Reply> {
    let made = match chain_of(&options) {
        Ok(made) => made,
        Err(message) => return fail(lua, message),
    };
    let about = lua.create_table()?;
    about.raw_set("writer", made.chain.writer().to_string())?;
    about.raw_set("game", made.chain.game())?;
    about.raw_set("oldest", made.chain.oldest())?;
    about.raw_set("latest", made.chain.latest())?;
    let mods = lua.create_table()?;
    for m in made.chain.mods() {
        let entry = lua.create_table()?;
        entry.raw_set("name", m.name())?;
        entry.raw_set("release", m.release().to_string())?;
        entry.raw_set("oldest", m.oldest())?;
        entry.raw_set("latest", m.latest())?;
        mods.raw_push(entry)?;
    }
    about.raw_set("mods", mods)?;
    Ok((
        Value::UserData(lua.create_userdata(made)?),
        Value::Table(about),
    ))
}

const CHAIN_USAGE: &str = "savechain.chain expects a table of options such as \
     {steps = \"upgrades/\", writer = \"2.3.0\", game = \"My Game\", mods = \"mods/\"}";

fn chain_of(options: &Value) -> Result<NativeChain, String> {
    let Value::Table(options) = options else {
        return Err(CHAIN_USAGE.to_string());
    };
    only_known(
        options,
        "savechain.chain",
        &["steps", "writer", "game", "mods", "limits"],
    )?;
    let what = "savechain.chain";
    let Some(writer) = string(options, what, "writer")? else {
        return Err(format!(
            "{what}: writer, the game's version (a semantic version such as \"2.3.0\"), is required"
        ));
    };
    let chain = match string(options, what, "steps")? {
        Some(dir) => Chain::from_lua_dir(&writer, dir),
        None => Chain::new(&writer, Vec::new()),
    };
    let mut chain = chain.map_err(|e| e.to_string())?;
    if let Some(game) = string(options, what, "game")? {
        chain = chain.for_game(&game).map_err(|e| e.to_string())?;
    }
    if let Some(dir) = string(options, what, "mods")? {
        chain = chain.with_mods_dir(dir).map_err(|e| e.to_string())?;
    }
    let limits = match options.raw_get::<Value>("limits").map_err(|e| e.to_string())? {
        Value::Nil => Limits::default(),
        Value::Table(limits) => limits_of(&limits)?,
        _ => {
            return Err(format!(
                "{what}: limits is a table such as {{instructions = 300000000, memory = 1073741824, time = 30}}"
            ))
        }
    };
    Ok(NativeChain { chain, limits })
}

fn limits_of(table: &Table) -> Result<Limits, String> {
    let what = "savechain.chain: limits";
    only_known(table, what, &["instructions", "memory", "time"])?;
    let mut limits = Limits::default();
    if let Some(n) = positive_integer(table, what, "instructions")? {
        limits.instructions = n;
    }
    if let Some(n) = positive_integer(table, what, "memory")? {
        limits.memory = usize::try_from(n).unwrap_or(usize::MAX);
    }
    match table.raw_get::<Value>("time").map_err(|e| e.to_string())? {
        Value::Nil => {}
        time @ (Value::Integer(_) | Value::Number(_)) => {
            // An integer is a number of seconds too (`time = 30`), which `as_f64` does not
            // convert.
            let seconds = match time {
                Value::Integer(i) => i as f64,
                other => other.as_f64().unwrap_or(0.0),
            };
            limits.time = Duration::try_from_secs_f64(seconds)
                .ok()
                .filter(|t| !t.is_zero())
                .ok_or_else(|| format!("{what}: time is a number of seconds above 0"))?;
        }
        _ => return Err(format!("{what}: time is a number of seconds above 0")),
    }
    Ok(limits)
}

/// `native.upgrade(chain, text, options)`: the upgraded text (`text` itself when the
/// upgrade changes nothing) and the report, or nil and the error.
fn native_upgrade(
    lua: &Lua,
    (chain, text, options): (AnyUserData, mlua::String, Value),
) -> mlua::Result<Reply> {
    let chain = chain.borrow::<NativeChain>()?;
    let mut run = Options::default();
    run.limits = chain.limits;
    let store = match upgrade_options(&options, &mut run) {
        Ok(store) => store,
        Err(message) => return fail(lua, message),
    };
    let given = text.as_bytes();
    let codec = Codec::of(&given);
    // The save's own compression unless asked otherwise, as a file upgraded keeps it.
    let how = match store {
        Some(how) => how,
        None => Compression::new(codec),
    };
    let upgraded = chain.chain.upgrader().upgrade_text(&given, &run);
    match upgraded {
        Ok(upgraded) => {
            let report = report(lua, &upgraded)?;
            let out = match (
                &upgraded.text,
                store.is_none() || how == Compression::NONE && codec == Codec::Plain,
            ) {
                (Some(out), _) => lua.create_string(compress::compress(out, how))?,
                // Nothing changed, and no other storing asked: the very bytes given.
                (None, true) => text.clone(),
                // Stored as asked (another codec, or a level the bytes do not record).
                (None, false) => {
                    // It read, so it decompresses.
                    let plain = compress::decompress(&given, compress::DEFAULT_LIMIT)
                        .map_err(mlua::Error::external)?;
                    lua.create_string(compress::compress(&plain, how))?
                }
            };
            Ok((Value::String(out), Value::Table(report)))
        }
        Err(e) => fail(lua, e.to_string()),
    }
}

/// The options of `chain:upgrade` into `run`; the compression asked for the text out.
fn upgrade_options(options: &Value, run: &mut Options) -> Result<Option<Compression>, String> {
    let what = "chain:upgrade";
    let options = match options {
        Value::Nil => return Ok(None),
        Value::Table(options) => options,
        _ => {
            return Err(format!(
                "{what} takes the save's text and a table of options such as {{to = 5, keep_going = true, strict = true, compress = \"zstd\"}}"
            ))
        }
    };
    only_known(
        options,
        what,
        &["to", "keep_going", "strict", "compress", "level"],
    )?;
    run.target = positive_integer(options, what, "to")?;
    run.keep_going = boolean(options, what, "keep_going")?.unwrap_or(false);
    run.strict = boolean(options, what, "strict")?.unwrap_or(false);
    let level = match options
        .raw_get::<Value>("level")
        .map_err(|e| e.to_string())?
    {
        Value::Nil => None,
        Value::Integer(n) => Some(n),
        _ => return Err(format!("{what}: level is an integer")),
    };
    match (string(options, what, "compress")?, level) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(format!(
            "{what}: level is the level of compress, which is not given"
        )),
        (Some(codec), level) => compression(&codec, level)
            .map(Some)
            .map_err(|e| format!("{what}: {e}")),
    }
}

/// The report of an upgrade, as a Lua table: `from`, `to`, `changed`, `steps` (each with
/// `name`, `from`, `to`, `kind`, `description`, `mod`, `printed`, `dropped`) and `mods`
/// (each with `name`, `from`, `to`, `status`, `error`, `printed`).
fn report(lua: &Lua, upgraded: &UpgradedText) -> mlua::Result<Table> {
    let report = lua.create_table()?;
    report.raw_set("from", upgraded.from)?;
    report.raw_set("to", upgraded.to)?;
    report.raw_set("changed", upgraded.text.is_some())?;
    let steps = lua.create_table()?;
    for step in &upgraded.steps {
        let entry = lua.create_table()?;
        entry.raw_set("name", step.name.as_str())?;
        entry.raw_set("from", step.from)?;
        entry.raw_set("to", step.to)?;
        entry.raw_set("kind", step.kind)?;
        entry.raw_set("description", step.description.as_str())?;
        entry.raw_set("mod", step.in_mod.as_deref())?;
        entry.raw_set(
            "printed",
            lua.create_sequence_from(step.printed.iter().map(String::as_str))?,
        )?;
        entry.raw_set(
            "dropped",
            lua.create_sequence_from(step.dropped.iter().map(String::as_str))?,
        )?;
        steps.raw_push(entry)?;
    }
    report.raw_set("steps", steps)?;
    let mods = lua.create_table()?;
    for m in &upgraded.mods {
        let entry = lua.create_table()?;
        entry.raw_set("name", m.name.as_str())?;
        entry.raw_set("from", m.from)?;
        entry.raw_set("to", m.to)?;
        entry.raw_set("status", m.status.word())?;
        if let ModStatus::Held(why) = &m.status {
            entry.raw_set("error", why.as_str())?;
        }
        let printed = lua.create_table()?;
        for (step, line) in &m.printed {
            let line_of = lua.create_table()?;
            line_of.raw_set("step", step.as_str())?;
            line_of.raw_set("line", line.as_str())?;
            printed.raw_push(line_of)?;
        }
        entry.raw_set("printed", printed)?;
        mods.raw_push(entry)?;
    }
    report.raw_set("mods", mods)?;
    Ok(report)
}

/// Refuses a key of `table` not among `known`, so that a misspelt option is not ignored.
fn only_known(table: &Table, what: &str, known: &[&str]) -> Result<(), String> {
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair.map_err(|e| e.to_string())?;
        let name = match &key {
            Value::String(s) => s.to_string_lossy(),
            other => format!("{other:?}"),
        };
        if !known.contains(&name.as_str()) {
            return Err(format!(
                "{what}: unknown option {name:?}; the options are {}",
                known.join(", ")
            ));
        }
    }
    Ok(())
}

fn string(table: &Table, what: &str, key: &str) -> Result<Option<String>, String> {
    match table.raw_get::<Value>(key).map_err(|e| e.to_string())? {
        Value::Nil => Ok(None),
        Value::String(s) => Ok(Some(s.to_string_lossy())),
        _ => Err(format!("{what}: {key} is a string")),
    }
}

fn boolean(table: &Table, what: &str, key: &str) -> Result<Option<bool>, String> {
    match table.raw_get::<Value>(key).map_err(|e| e.to_string())? {
        Value::Nil => Ok(None),
        Value::Boolean(b) => Ok(Some(b)),
        _ => Err(format!("{what}: {key} is true or false")),
    }
}

fn positive_integer(table: &Table, what: &str, key: &str) -> Result<Option<u64>, String> {
    match table.raw_get::<Value>(key).map_err(|e| e.to_string())? {
        Value::Nil => Ok(None),
        Value::Integer(n) if n > 0 => Ok(Some(n as u64)),
        Value::Number(n) if n >= 1.0 && n.fract() == 0.0 && n < 9.2e18 => Ok(Some(n as u64)),
        _ => Err(format!("{what}: {key} is an integer from 1")),
    }
}
