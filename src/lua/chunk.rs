//! Lua source in, a function of a given Lua state out: compiled once, then loaded into every
//! later state as bytecode.
//!
//! The same chunks (the sandbox's own Lua, the `savechain` library, a chain's steps and
//! helper modules) are loaded into many states: every sandbox, and each chain's check. Parsing them each time would cost more than
//! upgrading a small save; loading the bytecode they compiled to costs a fifth of that.
//! Only bytecode compiled here, from the chunk's own source by the Lua built into the
//! crate, is ever loaded: scripts themselves cannot load bytecode.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::OnceLock;

use mlua::{ffi, ChunkMode, Function, Lua};

/// A chunk of Lua source and, once it has been compiled, its bytecode.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// The chunk name Lua shows in messages and tracebacks: `@file` or `=name`.
    name: Cow<'static, str>,
    source: Cow<'static, [u8]>,
    /// Without debug information: functions that must look like C functions to
    /// `error(message, 2)` (they add no position of their own).
    strip: bool,
    bytecode: OnceLock<Vec<u8>>,
}

impl Chunk {
    /// A chunk of the crate's own Lua, named `name` as Lua names chunks (`@file`, `=name`).
    pub(crate) const fn of_crate(name: &'static str, source: &'static str, strip: bool) -> Chunk {
        Chunk {
            name: Cow::Borrowed(name),
            source: Cow::Borrowed(source.as_bytes()),
            strip,
            bytecode: OnceLock::new(),
        }
    }

    /// A chunk of the crate's own Lua whose source was prepared at run time.
    pub(crate) fn of_crate_source(name: &'static str, source: Vec<u8>) -> Chunk {
        Chunk {
            name: Cow::Borrowed(name),
            source: Cow::Owned(source),
            strip: false,
            bytecode: OnceLock::new(),
        }
    }

    /// A chunk read from `file` (a step, a helper module): its messages name the file. Lua
    /// source is bytes: string literals may hold any, as Lua allows.
    pub(crate) fn of_file(file: &str, source: Vec<u8>) -> Chunk {
        Chunk {
            name: Cow::Owned(format!("@{file}")),
            source: Cow::Owned(source),
            strip: false,
            bytecode: OnceLock::new(),
        }
    }

    /// The source, as read.
    pub(crate) fn source(&self) -> &[u8] {
        &self.source
    }

    /// The file of a chunk of [`Chunk::of_file`] (the chunk name without its `@`).
    pub(crate) fn file(&self) -> &str {
        self.name.strip_prefix('@').unwrap_or(&self.name)
    }

    /// The chunk as a function of `lua`, not yet called. The first call compiles the source
    /// (an error here is a syntax error); later ones, in any state, load the bytecode.
    pub(crate) fn load(&self, lua: &Lua) -> mlua::Result<Function> {
        if let Some(bytecode) = self.bytecode.get() {
            return self.load_bytecode(lua, bytecode);
        }
        let function = lua
            .load(&*self.source)
            .set_name(self.name.as_ref())
            .set_mode(ChunkMode::Text)
            .into_function()?;
        // Two threads may compile at once; both compile the same source to the same bytes.
        let bytecode = self.bytecode.get_or_init(|| function.dump(self.strip));
        if self.strip {
            // The stripped function is what every later state gets: this one too.
            return self.load_bytecode(lua, bytecode);
        }
        Ok(function)
    }

    /// [`Chunk::load`] of a chunk of the crate, in a state that keeps what it loaded (a
    /// sandbox's, which [`keep_loaded_chunks`] set up): loaded once, then the same function,
    /// whose every call runs the chunk afresh.
    pub(crate) fn load_kept(&'static self, lua: &Lua) -> mlua::Result<Function> {
        let Some(kept) = lua.app_data_ref::<Kept>() else {
            return self.load(lua);
        };
        let mut chunks = kept.chunks.borrow_mut();
        if let Some((_, function)) = chunks.iter().find(|(c, _)| std::ptr::eq(*c, self)) {
            return Ok(function.clone());
        }
        let function = self.load(lua)?;
        chunks.push((self, function.clone()));
        Ok(function)
    }

    fn load_bytecode(&self, lua: &Lua, bytecode: &[u8]) -> mlua::Result<Function> {
        lua.load(bytecode)
            .set_name(self.name.as_ref())
            .set_mode(ChunkMode::Binary)
            .into_function()
    }
}

/// Gives `main`, a chunk loaded and kept to run again, the state's globals as its `_ENV`:
/// a function it made on an earlier run (a step's, for another save) may have assigned its
/// `_ENV`, which the chunk shares with every function it makes.
pub(crate) fn with_globals(lua: &Lua, main: &Function) -> mlua::Result<()> {
    // SAFETY: the function sits at slot 1; the globals are pushed and taken by
    // `lua_setupvalue`. A chunk's first upvalue is its `_ENV`.
    unsafe {
        lua.exec_raw::<()>(main, |l| {
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_GLOBALS);
            if ffi::lua_setupvalue(l, 1, 1).is_null() {
                ffi::lua_pop(l, 1);
            }
        })
    }
}

/// What a state set up again and again keeps between set-ups: the crate's chunks loaded,
/// for [`Chunk::load_kept`], and the values made once, for [`kept`].
#[derive(Default)]
struct Kept {
    chunks: RefCell<Vec<(*const Chunk, Function)>>,
    values: RefCell<Vec<(&'static str, mlua::Value)>>,
}

/// Makes `lua` keep the crate's chunks it loads and the values of [`kept`]: for a state set
/// up again and again (a sandbox, reset between saves).
pub(crate) fn keep_loaded_chunks(lua: &Lua) {
    lua.set_app_data(Kept::default());
}

/// The value `make` makes, named `name`: made once in a state that keeps values
/// ([`keep_loaded_chunks`]), at every call elsewhere. For what no script can change (Rust
/// functions, tables scripts never see), which setting the state up again would otherwise
/// make again.
pub(crate) fn kept<T: mlua::IntoLua + mlua::FromLua + Clone>(
    lua: &Lua,
    name: &'static str,
    make: impl FnOnce() -> mlua::Result<T>,
) -> mlua::Result<T> {
    let found = lua.app_data_ref::<Kept>().map(|kept| {
        let values = kept.values.borrow();
        values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    });
    match found {
        None => make(),
        Some(Some(value)) => T::from_lua(value, lua),
        Some(None) => {
            let value = make()?;
            if let Some(kept) = lua.app_data_ref::<Kept>() {
                kept.values
                    .borrow_mut()
                    .push((name, value.clone().into_lua(lua)?));
            }
            Ok(value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_loads_alike_from_source_and_from_bytecode() {
        let chunk = Chunk::of_file(
            "steps/0001-a.lua",
            b"local x = ...\nreturn x * 2, '\xe9'".to_vec(),
        );
        for _ in 0..2 {
            let lua = Lua::new();
            let (n, s): (i64, mlua::String) = chunk.load(&lua).unwrap().call(21).unwrap();
            assert_eq!((n, s.as_bytes().to_vec()), (42, b"\xe9".to_vec()));
            let err = chunk.load(&lua).unwrap().call::<i64>("x").unwrap_err();
            assert!(
                err.to_string().contains("steps/0001-a.lua:2:"),
                "line information is kept: {err}"
            );
        }
        assert!(chunk.bytecode.get().is_some());
    }

    #[test]
    fn a_stripped_chunk_has_no_line_information_even_the_first_time() {
        static CHUNK: Chunk = Chunk::of_crate("=test", "error('x', 1)", true);
        for _ in 0..2 {
            let lua = Lua::new();
            let err = CHUNK.load(&lua).unwrap().call::<()>(()).unwrap_err();
            assert!(err.to_string().starts_with("runtime error: x\n"), "{err}");
        }
    }

    #[test]
    fn a_syntax_error_is_reported_and_nothing_is_kept() {
        let chunk = Chunk::of_file("bad.lua", b"return {".to_vec());
        let lua = Lua::new();
        let err = chunk.load(&lua).unwrap_err();
        assert!(matches!(err, mlua::Error::SyntaxError { .. }), "{err}");
        assert!(chunk.bytecode.get().is_none());
    }
}
