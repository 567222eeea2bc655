//! What `require` may load in a sandbox: the standard libraries the sandbox has, the
//! savechain library, modules the game added in memory, and `.lua` files inside folders it
//! allowed; nothing else. A module name comes in, the module's value goes out, and each
//! module runs once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use mlua::{ffi, Lua, Table};

use crate::lua::chunk::{with_globals, Chunk};
use crate::lua::library;

/// The standard libraries, which `require` returns as Lua's does (`package.loaded` holds
/// them); in a sandbox, `io`, `debug` and `package` are the tables that refuse with a reason,
/// and `os` has only the clock.
const STANDARD: &[&str] = &[
    "_G",
    "coroutine",
    "debug",
    "io",
    "math",
    "os",
    "package",
    "string",
    "table",
    "utf8",
];

/// Where a sandbox's own modules come from, and those loaded so far.
pub(super) struct Modules {
    /// Folders modules are read from, in the order they were allowed.
    dirs: RefCell<Vec<PathBuf>>,
    /// Modules given as source, by name; looked at before the folders.
    added: RefCell<HashMap<String, Added>>,
    /// Modules loaded so far, by name (the library keeps its own), the standard libraries
    /// from the start. Made anew when the sandbox is reset.
    loaded: RefCell<Table>,
    /// The global `require`, made once.
    require: RefCell<Option<mlua::Function>>,
}

/// A module given as source, and its chunk loaded into this state once it ran.
struct Added {
    chunk: Arc<Chunk>,
    main: Option<mlua::Function>,
}

impl Modules {
    pub(super) fn new(lua: &Lua) -> mlua::Result<Modules> {
        Ok(Modules {
            dirs: RefCell::default(),
            added: RefCell::default(),
            loaded: RefCell::new(lua.create_table()?),
            require: RefCell::default(),
        })
    }

    /// Defines the global `require` of a sandbox (which has no `package` library), loading
    /// the standard libraries as the globals hold them now, the library's modules and the
    /// sandbox's own, none of them loaded yet.
    pub(super) fn define_require(self: &Rc<Self>, lua: &Lua) -> mlua::Result<()> {
        let globals = lua.globals();
        // SAFETY: raw gets from the globals at slot 1 and raw sets into a new table; only
        // running out of memory raises, unwinding frames that own nothing.
        let loaded = unsafe {
            lua.exec_raw::<Table>(&globals, |l| {
                ffi::luaL_checkstack(l, 4, std::ptr::null());
                ffi::lua_createtable(l, 0, STANDARD.len() as i32);
                for name in STANDARD {
                    ffi::lua_pushlstring(l, name.as_ptr().cast(), name.len());
                    if *name == "_G" {
                        ffi::lua_pushvalue(l, 1);
                    } else {
                        ffi::lua_pushvalue(l, -1);
                        ffi::lua_rawget(l, 1);
                    }
                    ffi::lua_rawset(l, -3);
                }
            })?
        };
        *self.loaded.borrow_mut() = loaded;
        let mut require = self.require.borrow_mut();
        let require = match &*require {
            Some(require) => require.clone(),
            None => require.insert(loader(lua, self)?).clone(),
        };
        globals.raw_set("require", require)
    }

    /// Lets `require` read modules from `dir`, after the folders allowed before it.
    pub(super) fn allow_from(&self, dir: &Path) {
        self.dirs.borrow_mut().push(dir.to_path_buf());
    }

    /// Makes `require(name)` run `chunk`. A module already loaded stays as it was loaded.
    /// The error is the reason a name is refused.
    pub(super) fn add(&self, name: &str, chunk: Arc<Chunk>) -> Result<(), String> {
        check_name(name)?;
        if library::is_library_module(name) || STANDARD.contains(&name) {
            return Err(format!(
                "module {name:?} is part of the savechain library or of Lua's and cannot be replaced"
            ));
        }
        let added = Added { chunk, main: None };
        self.added.borrow_mut().insert(name.to_string(), added);
        Ok(())
    }

    /// The main function of module `name`, not yet run: added in memory (loaded into the
    /// state once, then kept), else from the first allowed folder that has it.
    fn find(&self, lua: &Lua, name: &str) -> mlua::Result<mlua::Function> {
        check_name(name).map_err(mlua::Error::runtime)?;
        if let Some(added) = self.added.borrow_mut().get_mut(name) {
            if let Some(main) = &added.main {
                with_globals(lua, main)?;
                return Ok(main.clone());
            }
            let main = added.chunk.load(lua)?;
            added.main = Some(main.clone());
            return Ok(main);
        }
        let relative = format!("{}.lua", name.replace('.', "/"));
        let dirs = self.dirs.borrow();
        for dir in dirs.iter() {
            if let Some(found) = read_inside(dir, &relative)? {
                return found.load(lua);
            }
        }
        Err(not_found(name, &relative, &dirs))
    }
}

/// The module at `relative` in `dir`, if there is one; a module that is a link to a file
/// outside `dir` (or inside a linked folder outside it) is refused, so that a script can
/// read nothing but what its folder holds.
fn read_inside(dir: &Path, relative: &str) -> mlua::Result<Option<Arc<Chunk>>> {
    let path = dir.join(relative);
    let Ok(real) = path.canonicalize() else {
        return Ok(None);
    };
    let refuse = |why: String| {
        Err(mlua::Error::runtime(format!(
            "module file {}: {why}",
            path.display()
        )))
    };
    if !dir.canonicalize().is_ok_and(|dir| real.starts_with(dir)) {
        return refuse(format!(
            "a link to {}, outside {}: scripts may read only their own folder",
            real.display(),
            dir.display()
        ));
    }
    // Reading a FIFO or a device could wait forever.
    if !real.is_file() {
        return refuse("not a regular file".to_string());
    }
    let source = std::fs::read(&real)
        .map_err(|e| mlua::Error::runtime(format!("cannot read {}: {e}", path.display())))?;
    Ok(Some(Arc::new(Chunk::of_file(
        &path.display().to_string(),
        source,
    ))))
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
    let loaded = modules.loaded.borrow().clone();
    let value: mlua::Value = loaded.raw_get(name)?;
    if !value.is_nil() {
        return Ok(value);
    }
    let main = modules.find(lua, name)?;
    // Like the library's modules, a module gets its name and a loader as arguments.
    let require = modules.require.borrow().clone();
    let require = match require {
        Some(require) => require,
        None => loader(lua, modules)?,
    };
    let value: mlua::Value = main.call((name, require))?;
    let value = if value.is_nil() {
        mlua::Value::Boolean(true)
    } else {
        value
    };
    loaded.raw_set(name, &value)?;
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
        Sandbox::new(Limits::new(5_000_000, 16 << 20)).unwrap()
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
