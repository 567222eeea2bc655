//! The `savechain` Lua library in a Lua state: its Rust core (encode, decode, the null
//! sentinel, the array and u64 metatables, the class registry) and the Lua modules of the
//! repository's `lua/` folder, compiled into the crate.

use std::path::{Path, PathBuf};

use mlua::{ChunkMode, LightUserData, Lua, Table};

use super::metatables::Metatables;
use super::{from_lua, to_lua};
use crate::text;

/// The Lua modules of the `lua/` folder, by the name scripts `require`.
const MODULES: &[(&str, &str, &str)] = &[
    (
        "savechain",
        "lua/savechain.lua",
        include_str!("../../lua/savechain.lua"),
    ),
    (
        "savechain.upgrade",
        "lua/savechain/upgrade.lua",
        include_str!("../../lua/savechain/upgrade.lua"),
    ),
];

/// The library's part of a Lua state, kept with it.
#[derive(Clone)]
struct Installed {
    /// The tables the conversions share with the library's Lua modules.
    tables: Metatables,
    /// Modules loaded by `require`, by name.
    loaded: Table,
}

/// Folders a sandboxed script may `require` its own modules from.
#[derive(Clone, Default)]
struct ModuleDirs(Vec<PathBuf>);

/// Sets up the `savechain` library in `lua` (once; later calls return the same module)
/// and returns it.
///
/// Where the state has a `package` library, `require("savechain")` and
/// `require("savechain.upgrade")` then work through `package.preload`.
pub fn install(lua: &Lua) -> mlua::Result<Table> {
    installed(lua)?;
    require(lua, "savechain")?
        .as_table()
        .cloned()
        .ok_or_else(|| mlua::Error::runtime("lua/savechain.lua did not return a table"))
}

/// The tables the conversions need in `lua`, installing the library first if it is not.
pub(crate) fn installed(lua: &Lua) -> mlua::Result<Metatables> {
    if let Some(installed) = lua.app_data_ref::<Installed>() {
        return Ok(installed.tables.clone());
    }
    let installed = Installed {
        tables: Metatables::new(lua)?,
        loaded: lua.create_table()?,
    };
    lua.set_app_data(installed.clone());
    let core = core(lua, &installed.tables)?;
    installed.loaded.raw_set("savechain.core", core)?;
    if let Ok(Some(package)) = lua.globals().raw_get::<Option<Table>>("package") {
        if let Ok(Some(preload)) = package.raw_get::<Option<Table>>("preload") {
            for (name, _, _) in MODULES {
                let loader = lua.create_function(move |lua, ()| require(lua, name))?;
                preload.raw_set(*name, loader)?;
            }
        }
    }
    // Running the library sets the metamethods of the u64 box.
    require(lua, "savechain")?;
    Ok(installed.tables)
}

/// The Rust half of the library, as `require("savechain.core")`.
fn core(lua: &Lua, tables: &Metatables) -> mlua::Result<Table> {
    let core = lua.create_table()?;
    core.raw_set("null", LightUserData(std::ptr::null_mut()))?;
    core.raw_set("array_mt", tables.array.clone())?;
    core.raw_set("u64_mt", tables.u64.clone())?;
    core.raw_set("bytes_mt", tables.bytes.clone())?;
    core.raw_set("classes", tables.classes.clone())?;
    core.raw_set("class_names", tables.class_names.clone())?;
    let encode_tables = tables.clone();
    core.raw_set(
        "encode",
        lua.create_function(move |lua, (value, compact): (mlua::Value, Option<bool>)| {
            let value = from_lua::convert(lua, &encode_tables, &value)
                .map_err(|e| mlua::Error::runtime(e.to_string()))?;
            let text = if compact == Some(true) {
                text::to_vec_compact(&value)
            } else {
                text::to_vec(&value)
            };
            lua.create_string(text.map_err(|e| mlua::Error::runtime(e.to_string()))?)
        })?,
    )?;
    let decode_tables = tables.clone();
    core.raw_set(
        "decode",
        lua.create_function(move |lua, source: mlua::String| {
            let value = text::from_slice(&source.as_bytes())
                .map_err(|e| mlua::Error::runtime(e.to_string()))?;
            to_lua::convert(lua, &decode_tables, &value)
                .map_err(|e| mlua::Error::runtime(e.to_string()))
        })?,
    )?;
    Ok(core)
}

/// Lets sandboxed scripts `require` modules from `dir` (after the library's own).
pub(crate) fn allow_modules_from(lua: &Lua, dir: &Path) {
    let mut dirs = lua
        .app_data_ref::<ModuleDirs>()
        .map(|d| d.clone())
        .unwrap_or_default();
    dirs.0.push(dir.to_path_buf());
    lua.set_app_data(dirs);
}

/// Defines a global `require` that loads only the library's modules and modules from the
/// allowed folders, for states without a `package` library.
pub(crate) fn define_require(lua: &Lua) -> mlua::Result<()> {
    let require = lua.create_function(|lua, name: String| require(lua, &name))?;
    lua.globals().raw_set("require", require)
}

fn require(lua: &Lua, name: &str) -> mlua::Result<mlua::Value> {
    let installed = installed_tables(lua)?;
    let loaded: mlua::Value = installed.loaded.raw_get(name)?;
    if !loaded.is_nil() {
        return Ok(loaded);
    }
    let (chunk_name, source) = find_module(lua, name)?;
    // Modules get this `require` as their second argument, so the library's own modules
    // load each other whatever `require` the state has.
    let loader = lua.create_function(|lua, name: String| require(lua, &name))?;
    let value: mlua::Value = lua
        .load(source)
        .set_name(format!("@{chunk_name}"))
        .set_mode(ChunkMode::Text)
        .call((name, loader))?;
    let value = if value.is_nil() {
        mlua::Value::Boolean(true)
    } else {
        value
    };
    installed.loaded.raw_set(name, &value)?;
    Ok(value)
}

/// The installed tables, without installing (which itself requires the library).
fn installed_tables(lua: &Lua) -> mlua::Result<Installed> {
    lua.app_data_ref::<Installed>()
        .map(|i| i.clone())
        .ok_or_else(|| mlua::Error::runtime("the savechain library is not installed"))
}

/// The chunk name and source of module `name`.
fn find_module(lua: &Lua, name: &str) -> mlua::Result<(String, String)> {
    if let Some((_, file, source)) = MODULES.iter().find(|(n, _, _)| *n == name) {
        return Ok((file.to_string(), source.to_string()));
    }
    let well_formed = !name.is_empty()
        && name.split('.').all(|part| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
    if !well_formed {
        return Err(mlua::Error::runtime(format!(
            "module name {name:?} is not of the form name or name.sub (letters, digits, _)"
        )));
    }
    let relative = format!("{}.lua", name.replace('.', "/"));
    let dirs = lua
        .app_data_ref::<ModuleDirs>()
        .map(|d| d.0.clone())
        .unwrap_or_default();
    for dir in &dirs {
        let path = dir.join(&relative);
        if let Ok(source) = std::fs::read_to_string(&path) {
            return Ok((path.display().to_string(), source));
        }
    }
    Err(mlua::Error::runtime(format!(
        "module {name:?} not found: scripts may require the savechain library and {relative} in their own folder{}",
        if dirs.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    )))
}
