//! What `require` may load in a sandbox: the savechain library, modules the game added in
//! memory, and `.lua` files under folders it allowed; nothing else. A module name comes in,
//! the module's value goes out, and each module runs once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use mlua::{ChunkMode, Lua, Table};

use crate::lua::library;

/// Where a sandbox's own modules come from, and those loaded so far.
pub(super) struct Modules {
    /// Folders modules are read from, in the order they were allowed.
    dirs: RefCell<Vec<PathBuf>>,
    /// Modules given as source, by name; looked at before the folders.
    added: RefCell<HashMap<String, Source>>,
    /// Modules loaded so far, by name (the library keeps its own).
    loaded: Table,
}

/// A module's source and the chunk name its errors show.
#[derive(Clone)]
struct Source {
    chunk_name: String,
    text: String,
}

impl Modules {
    /// Defines the global `require` of a sandbox (which has no `package` library), loading
    /// the library's modules and the sandbox's own.
    pub(super) fn define_require(lua: &Lua) -> mlua::Result<Rc<Modules>> {
        let modules = Rc::new(Modules {
            dirs: RefCell::default(),
            added: RefCell::default(),
            loaded: lua.create_table()?,
        });
        lua.globals().raw_set("require", loader(lua, &modules)?)?;
        Ok(modules)
    }

    /// Lets `require` read modules from `dir`, after the folders allowed before it.
    pub(super) fn allow_from(&self, dir: &Path) {
        self.dirs.borrow_mut().push(dir.to_path_buf());
    }

    /// Makes `require(name)` run `text`, with errors naming `chunk_name`. A module already
    /// loaded stays as it was loaded. The error is the reason a name is refused.
    pub(super) fn add(&self, name: &str, chunk_name: &str, text: &str) -> Result<(), String> {
        check_name(name)?;
        if library::is_library_module(name) {
            return Err(format!(
                "module {name:?} is part of the savechain library and cannot be replaced"
            ));
        }
        let source = Source {
            chunk_name: chunk_name.to_string(),
            text: text.to_string(),
        };
        self.added.borrow_mut().insert(name.to_string(), source);
        Ok(())
    }

    /// The source of module `name`: added in memory, else from the first allowed folder
    /// that has it.
    fn find(&self, name: &str) -> mlua::Result<Source> {
        check_name(name).map_err(mlua::Error::runtime)?;
        if let Some(source) = self.added.borrow().get(name) {
            return Ok(source.clone());
        }
        let relative = format!("{}.lua", name.replace('.', "/"));
        let dirs = self.dirs.borrow();
        for dir in dirs.iter() {
            let path = dir.join(&relative);
            if let Ok(text) = std::fs::read_to_string(&path) {
                return Ok(Source {
                    chunk_name: path.display().to_string(),
                    text,
                });
            }
        }
        Err(not_found(name, &relative, &dirs))
    }
}

/// A Lua function that requires through `modules`.
fn loader(lua: &Lua, modules: &Rc<Modules>) -> mlua::Result<mlua::Function> {
    let modules = modules.clone();
    lua.create_function(move |lua, name: String| require(lua, &modules, &name))
}

/// Module `name`: the library's own, or the sandbox's, run on first use.
fn require(lua: &Lua, modules: &Rc<Modules>, name: &str) -> mlua::Result<mlua::Value> {
    if library::is_library_module(name) {
        return library::require(lua, name);
    }
    let loaded: mlua::Value = modules.loaded.raw_get(name)?;
    if !loaded.is_nil() {
        return Ok(loaded);
    }
    let source = modules.find(name)?;
    // Like the library's modules, a module gets its name and a loader as arguments.
    let value: mlua::Value = lua
        .load(source.text)
        .set_name(format!("@{}", source.chunk_name))
        .set_mode(ChunkMode::Text)
        .call((name, loader(lua, modules)?))?;
    let value = if value.is_nil() {
        mlua::Value::Boolean(true)
    } else {
        value
    };
    modules.loaded.raw_set(name, &value)?;
    Ok(value)
}

/// Refuses names that are not `name` or `name.sub` (letters, digits and `_` in each part),
/// so that a name never reaches outside an allowed folder.
fn check_name(name: &str) -> Result<(), String> {
    let well_formed = !name.is_empty()
        && name.split('.').all(|part| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "module name {name:?} is not of the form name or name.sub (letters, digits, _)"
        ))
    }
}

fn not_found(name: &str, relative: &str, dirs: &[PathBuf]) -> mlua::Error {
    let searched = if dirs.is_empty() {
        String::new()
    } else {
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        format!(" ({})", dirs.join(", "))
    };
    mlua::Error::runtime(format!(
        "module {name:?} not found: scripts may require the savechain library and {relative} in their own folder{searched}"
    ))
}

#[cfg(test)]
mod tests {
    use crate::lua::{Limits, Sandbox, SandboxError};

    fn sandbox() -> Sandbox {
        Sandbox::new(Limits {
            instructions: 5_000_000,
            memory: 16 << 20,
        })
        .unwrap()
    }

    #[test]
    fn a_module_added_in_memory_is_required() {
        let sandbox = sandbox();
        sandbox
            .add_module(
                "util.math",
                "mods/util/math.lua",
                "local name, require = ... return { name = name, double = function(x) return 2 * x end }",
            )
            .unwrap();
        let (n, name): (i64, String) = sandbox
            .run(
                "local m = require('util.math') return m.double(21), m.name",
                "main.lua",
            )
            .unwrap();
        assert_eq!((n, name.as_str()), (42, "util.math"));
    }

    #[test]
    fn added_modules_require_each_other_and_the_library() {
        let sandbox = sandbox();
        sandbox
            .add_module(
                "a",
                "a.lua",
                "local _, require = ... return require('b') + 1",
            )
            .unwrap();
        sandbox
            .add_module(
                "b",
                "b.lua",
                "return require('savechain').null == require('savechain.core').null and 41",
            )
            .unwrap();
        let n: i64 = sandbox.run("return require('a')", "main.lua").unwrap();
        assert_eq!(n, 42);
    }

    #[test]
    fn errors_of_an_added_module_name_its_chunk() {
        let sandbox = sandbox();
        sandbox
            .add_module("broken", "mods/broken.lua", "local t = nil\nreturn t.x")
            .unwrap();
        sandbox
            .add_module("bad_syntax", "mods/bad_syntax.lua", "return {")
            .unwrap();
        let err = sandbox
            .run::<mlua::Value>("return require('broken')", "main.lua")
            .unwrap_err()
            .to_string();
        assert!(err.contains("mods/broken.lua:2:"), "{err}");
        let err = sandbox
            .run::<mlua::Value>("return require('bad_syntax')", "main.lua")
            .unwrap_err()
            .to_string();
        assert!(err.contains("mods/bad_syntax.lua:1:"), "{err}");
    }

    #[test]
    fn malformed_names_are_refused() {
        let sandbox = sandbox();
        for name in [
            "",
            ".",
            "a.",
            ".a",
            "a..b",
            "../secrets",
            "a/b",
            "a-b",
            "a b",
        ] {
            let err = sandbox.add_module(name, "x.lua", "return 1").unwrap_err();
            assert!(matches!(err, SandboxError::Module(_)), "{name:?}: {err}");
            assert!(err.to_string().contains("is not of the form"), "{err}");
        }
        sandbox
            .add_module("ok_9.sub_2", "x.lua", "return 1")
            .unwrap();
    }

    #[test]
    fn the_library_cannot_be_replaced() {
        let sandbox = sandbox();
        for name in ["savechain", "savechain.upgrade", "savechain.core"] {
            let err = sandbox.add_module(name, "x.lua", "return {}").unwrap_err();
            assert!(matches!(err, SandboxError::Module(_)), "{name}: {err}");
            assert!(
                err.to_string().contains("part of the savechain library"),
                "{err}"
            );
        }
        let ok: bool = sandbox
            .run(
                "return type(require('savechain').encode) == 'function'",
                "main.lua",
            )
            .unwrap();
        assert!(ok);
    }

    #[test]
    fn a_module_runs_once_and_is_cached() {
        let sandbox = sandbox();
        sandbox
            .add_module("counter", "counter.lua", "runs = (runs or 0) + 1 return {}")
            .unwrap();
        sandbox
            .add_module(
                "nothing",
                "nothing.lua",
                "runs_nothing = (runs_nothing or 0) + 1",
            )
            .unwrap();
        let (same, runs, nothing, runs_nothing): (bool, i64, bool, i64) = sandbox
            .run(
                "local a, b = require('counter'), require('counter') \
                 local n = require('nothing') require('nothing') \
                 return rawequal(a, b), runs, n, runs_nothing",
                "main.lua",
            )
            .unwrap();
        assert!(same);
        assert_eq!((runs, nothing, runs_nothing), (1, true, 1));
    }

    #[test]
    fn added_modules_come_before_the_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("util.lua"), "return 'folder'").unwrap();
        std::fs::write(dir.path().join("other.lua"), "return 'other folder'").unwrap();
        let sandbox = sandbox();
        sandbox.allow_modules_from(dir.path());
        sandbox
            .add_module("util", "util.lua", "return 'memory'")
            .unwrap();
        let (util, other): (String, String) = sandbox
            .run("return require('util'), require('other')", "main.lua")
            .unwrap();
        assert_eq!((util.as_str(), other.as_str()), ("memory", "other folder"));
        let err = sandbox
            .run::<mlua::Value>("return require('missing')", "main.lua")
            .unwrap_err()
            .to_string();
        assert!(err.contains("module \"missing\" not found"), "{err}");
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
    }
}
