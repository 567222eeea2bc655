//! The `savechain` Lua library in a Lua state: its Rust core (`savechain.core`: the null
//! sentinel, the metatables, encode and decode) and the Lua modules of the repository's
//! `lua/` folder, compiled into the crate. Scripts reach it through `require`; it reaches
//! documents through the conversions (`from_lua.rs`, `to_lua.rs`).

use std::sync::LazyLock;

use mlua::{LightUserData, Lua, Table};

use super::chunk::{kept, Chunk};
use super::metatables::Metatables;
use crate::text;

/// The Lua modules of the `lua/` folder: the name scripts `require`, and the chunk.
static MODULES: LazyLock<[(&str, Chunk); 2]> = LazyLock::new(|| {
    [
        (
            "savechain",
            Chunk::of_crate_source(
                "@lua/savechain.lua",
                without_pure_codec(include_str!("../../lua/savechain.lua")),
            ),
        ),
        (
            "savechain.upgrade",
            Chunk::of_crate(
                "@lua/savechain/upgrade.lua",
                include_str!("../../lua/savechain/upgrade.lua"),
                false,
            ),
        ),
    ]
});

/// Where `lua/savechain.lua`'s own codec, for stock Lua hosts, begins and ends.
const PURE_CODEC: [&str; 2] = [
    "-- savechain: pure-Lua codec begins\n",
    "-- savechain: pure-Lua codec ends\n",
];

/// `lua/savechain.lua` without its pure-Lua codec, which the Rust core stands in for here:
/// its lines are left empty, so that the other lines keep their numbers in messages, and
/// no state compiles or loads what it never runs.
fn without_pure_codec(source: &'static str) -> Vec<u8> {
    let [begins, ends] = PURE_CODEC;
    let (Some(start), Some(end)) = (source.find(begins), source.find(ends)) else {
        panic!("lua/savechain.lua lost its pure-Lua codec markers");
    };
    let end = end + ends.len();
    let mut out = Vec::with_capacity(source.len());
    out.extend_from_slice(&source.as_bytes()[..start]);
    out.extend(source[start..end].bytes().filter(|&b| b == b'\n'));
    out.extend_from_slice(&source.as_bytes()[end..]);
    out
}

/// The module name of the Rust half of the library.
const CORE: &str = "savechain.core";

/// The library's Lua modules compiled into the crate, as (module name, source); the Rust
/// core is not among them.
pub(crate) fn library_sources() -> impl Iterator<Item = (&'static str, &'static [u8])> {
    MODULES.iter().map(|(name, chunk)| (*name, chunk.source()))
}

/// Whether `name` is one of the library's modules (its Rust core included), which no other
/// module may stand in for.
pub(crate) fn is_library_module(name: &str) -> bool {
    name == CORE || MODULES.iter().any(|(n, _)| *n == name)
}

/// The library's part of a Lua state, kept with it.
#[derive(Clone)]
struct Installed {
    /// The tables the conversions share with the library's Lua modules.
    tables: Metatables,
    /// The library's modules loaded so far, by name.
    loaded: Table,
}

/// Sets up the `savechain` library in `lua` (once; later calls return the same module)
/// and returns it.
///
/// Where the state has a `package` library, `require("savechain")` and
/// `require("savechain.upgrade")` then work through `package.preload`.
pub fn install(lua: &Lua) -> mlua::Result<Table> {
    installed(lua)?;
    module(lua)
}

/// [`install`] in a sandbox's state, where the conversions refuse to give a table a
/// metatable with `__gc`, as its `setmetatable` does: a finalizer runs where no limit can
/// stop it. (A game's own state may use finalizers in its classes.)
pub(crate) fn install_sandboxed(lua: &Lua, memory: usize) -> mlua::Result<Table> {
    if lua.app_data_ref::<Installed>().is_none() {
        make(lua, Some(memory))?;
    }
    module(lua)
}

fn module(lua: &Lua) -> mlua::Result<Table> {
    require(lua, "savechain")?
        .as_table()
        .cloned()
        .ok_or_else(|| mlua::Error::runtime("lua/savechain.lua did not return a table"))
}

/// The tables the conversions need in `lua`, installing the library first if it is not.
pub(crate) fn installed(lua: &Lua) -> mlua::Result<Metatables> {
    Ok(state(lua)?.tables)
}

/// Runs `f` with the tables of the library installed in `lua` (installed first if it is
/// not), borrowed rather than cloned: for what runs once a lent table, and for functions
/// kept in Lua, which must not hold the tables themselves (a Rust closure holding a table
/// that holds it is a cycle Lua's collector cannot see, and a reset would leak it).
pub(crate) fn with_tables<R>(
    lua: &Lua,
    f: impl FnOnce(&Metatables) -> mlua::Result<R>,
) -> mlua::Result<R> {
    if let Some(installed) = lua.app_data_ref::<Installed>() {
        return f(&installed.tables);
    }
    f(&make(lua, None)?.tables)
}

/// The library's part of `lua`, made on first use.
fn state(lua: &Lua) -> mlua::Result<Installed> {
    if let Some(installed) = lua.app_data_ref::<Installed>() {
        return Ok(installed.clone());
    }
    make(lua, None)
}

/// Forgets the library's part of `lua`, so that the next use installs it anew: a sandbox
/// reset, after which nothing of the old one (classes, registered modules) is reachable.
pub(crate) fn forget(lua: &Lua) {
    lua.remove_app_data::<Installed>();
}

/// Installs the library's part of `lua`.
fn make(lua: &Lua, sandbox_memory: Option<usize>) -> mlua::Result<Installed> {
    let installed = Installed {
        tables: Metatables::new(lua, sandbox_memory)?,
        loaded: lua.create_table()?,
    };
    // Stored before the modules run, so that their `require`s find it.
    lua.set_app_data(installed.clone());
    installed
        .loaded
        .raw_set(CORE, core(lua, &installed.tables)?)?;
    preload(lua)?;
    // Running the library sets the metamethods of the u64 box.
    require(lua, "savechain")?;
    Ok(installed)
}

/// Makes `require` of a state with a `package` library find the library's modules.
fn preload(lua: &Lua) -> mlua::Result<()> {
    if let Ok(Some(package)) = lua.globals().raw_get::<Option<Table>>("package") {
        if let Ok(Some(preload)) = package.raw_get::<Option<Table>>("preload") {
            for (name, _) in library_sources() {
                let loader = lua.create_function(move |lua, ()| require(lua, name))?;
                preload.raw_set(name, loader)?;
            }
        }
    }
    Ok(())
}

/// The Rust half of the library, as `require("savechain.core")`: the state's tables, and
/// the functions that write and read save text with them.
fn core(lua: &Lua, tables: &Metatables) -> mlua::Result<Table> {
    let core = lua.create_table_from([
        ("array_mt", tables.array.clone()),
        ("u64_mt", tables.u64.clone()),
        ("bytes_mt", tables.bytes.clone()),
        ("classes", tables.classes.clone()),
        ("class_names", tables.class_names.clone()),
    ])?;
    core.raw_set("null", LightUserData(std::ptr::null_mut()))?;
    // Made once in a sandbox and kept through its resets: they find the state's tables when
    // called.
    let encode = kept(lua, "library encode", || {
        lua.create_function(|lua, (value, compact): (mlua::Value, Option<bool>)| {
            let style = if compact == Some(true) {
                text::Style::Compact
            } else {
                text::Style::Pretty
            };
            // Nil and the message for a value that cannot be saved, which the library raises
            // as a plain message.
            let tables = installed(lua)?;
            match super::lua_to_text::write(lua, &tables, &value, style) {
                Ok(text) => Ok((Some(lua.create_string(text)?), None)),
                Err(e) => Ok((None, Some(plain_or_out_of_memory(e)?))),
            }
        })
    })?;
    let decode = kept(lua, "library decode", || {
        lua.create_function(|lua, (source, max_depth): (mlua::String, Option<usize>)| {
            // True and the value, or false and the message, which the library raises. The
            // library checks `max_depth` (savechain.decode_max_depth) before it gets here.
            let tables = installed(lua)?;
            let max_depth = max_depth
                .unwrap_or(text::MAX_DEPTH)
                .clamp(1, text::MAX_DEPTH);
            match super::text_to_lua::read(lua, &tables, &source.as_bytes(), max_depth) {
                Ok(value) => Ok((true, value)),
                Err(e) => Ok((
                    false,
                    mlua::Value::String(lua.create_string(plain_or_out_of_memory(e)?)?),
                )),
            }
        })
    })?;
    core.raw_set("encode", encode)?;
    core.raw_set("decode", decode)?;
    Ok(core)
}

/// The message of an error of encode or decode, which the library raises as it is; running
/// out of memory stays Lua's memory error, so that a sandbox knows its limit stopped it.
fn plain_or_out_of_memory(e: crate::Error) -> mlua::Result<String> {
    if e.lua_failure() == Some(crate::LuaFailure::MemoryLimit) {
        return Err(mlua::Error::MemoryError(e.to_string()));
    }
    Ok(e.to_string())
}

/// Library module `name`, loaded on first use.
///
/// Each module gets a loader of the library's modules as its second argument, so the
/// library's modules load each other whatever `require` the state has (none, the sandbox's,
/// or `package`'s).
pub(crate) fn require(lua: &Lua, name: &str) -> mlua::Result<mlua::Value> {
    let installed = state(lua)?;
    let loaded: mlua::Value = installed.loaded.raw_get(name)?;
    if !loaded.is_nil() {
        return Ok(loaded);
    }
    let Some((_, chunk)) = MODULES.iter().find(|(n, _)| *n == name) else {
        return Err(mlua::Error::runtime(format!(
            "module {name:?} is not part of the savechain library"
        )));
    };
    let loader = kept(lua, "library loader", || {
        lua.create_function(|lua, name: String| require(lua, &name))
    })?;
    let value: mlua::Value = chunk.load_kept(lua)?.call((name, loader))?;
    let value = if value.is_nil() {
        mlua::Value::Boolean(true)
    } else {
        value
    };
    installed.loaded.raw_set(name, &value)?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_library_has_no_pure_codec_and_keeps_its_line_numbers() {
        let full = include_str!("../../lua/savechain.lua");
        let (_, chunk) = &MODULES[0];
        let embedded = std::str::from_utf8(chunk.source()).unwrap();
        assert_eq!(embedded.lines().count(), full.lines().count());
        assert!(!embedded.contains("local function read_array"));
        assert!(full.contains("local function read_array"));
        // Every line outside the codec is as it is in the file.
        let kept = full
            .lines()
            .zip(embedded.lines())
            .filter(|(a, b)| a == b)
            .count();
        assert!(kept > 300, "{kept}");
    }
}
