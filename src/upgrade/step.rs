//! One upgrade step, from version N to N + 1, in Rust or Lua, and what a Rust step is told.

use std::fmt;
use std::sync::Arc;

use mlua::Function;

use super::lua_dir::{self, Modules};
use crate::error::Result;
use crate::lua::{Chunk, Sandbox, SandboxError};
use crate::save::Meta;
use crate::value::Value;

/// A step written in Rust: changes the document's data in place, or says why it cannot.
pub type RustStep = fn(&mut Value, &mut StepContext) -> std::result::Result<(), String>;

/// What a step is told, and what it declares.
pub struct StepContext {
    /// The version the data has now.
    pub from: u64,
    /// The version the step makes.
    pub to: u64,
    /// The save's `meta` section, read only.
    pub meta: Meta,
    pub(super) dropped: Vec<String>,
}

impl StepContext {
    pub(super) fn new(step: &Step, meta: &Meta) -> StepContext {
        StepContext {
            from: step.from,
            to: step.to(),
            meta: meta.clone(),
            dropped: Vec::new(),
        }
    }

    /// Declares that the step removes `path` (`"player.legacy_flag"`, relative to the data)
    /// on purpose, and removes it; strict upgrades accept only declared removals. Returns
    /// whether there was something to remove.
    pub fn drop_path(&mut self, data: &mut Value, path: &str) -> bool {
        self.dropped.push(path.to_string());
        let (parent, key) = match path.rsplit_once('.') {
            Some((parent, key)) => (lookup_mut(data, parent), key),
            None => (Some(data), path),
        };
        parent
            .and_then(Value::as_object_mut)
            .and_then(|map| map.remove(key))
            .is_some()
    }

    /// Declares that the step removes `path` on purpose, for removals it makes itself (a
    /// rename or a move removes its source).
    pub fn declare_removed(&mut self, path: &str) {
        self.dropped.push(path.to_string());
    }
}

fn lookup_mut<'v>(data: &'v mut Value, dotted: &str) -> Option<&'v mut Value> {
    dotted.split('.').try_fold(data, |v, key| v.get_mut(key))
}

/// How a step is written, with everything that decides what it does.
#[derive(Clone)]
pub(super) enum StepKind {
    /// Rust code, and the game's word for which version of it this is.
    Rust { run: RustStep, revision: String },
    /// A Lua chunk that returns `function(data, ctx)` (its chunk name the file it came
    /// from, for error messages), and the helper modules it may `require` (those of the
    /// folder it came from), read once with it.
    Lua {
        chunk: Arc<Chunk>,
        modules: Option<Arc<Modules>>,
    },
}

/// One step: from version `from` to `from + 1`.
#[derive(Clone)]
pub struct Step {
    pub(super) from: u64,
    pub(super) name: String,
    pub(super) description: String,
    pub(super) kind: StepKind,
}

impl Step {
    /// A step in Rust, from version `from` to `from + 1`.
    ///
    /// `revision` is part of the chain's identity, which decides whether a cache made by
    /// an earlier build can still be used: **change it whenever the step's behaviour
    /// changes** (its code, or anything it calls or reads). Savechain cannot see inside
    /// compiled code, so a step changed without a new revision leaves caches made by the
    /// old code trusted until the game's version (the chain's writer) changes. Any text
    /// will do: a counter (`"1"`, `"2"`), a date, or a hash of the code made by a build
    /// script. It may not be empty.
    pub fn rust(from: u64, description: &str, revision: &str, run: RustStep) -> Step {
        Step {
            from,
            name: format!("{from:04} (rust)"),
            description: description.to_string(),
            kind: StepKind::Rust {
                run,
                revision: revision.to_string(),
            },
        }
    }

    /// A Lua step from its file name (`NNNN-short-description.lua`, where NNNN is the
    /// version it upgrades from) and source. Its description is the first line's `--`
    /// comment, or the words of the file name. The source is the step's identity: a
    /// changed step refuses caches made by the old one.
    ///
    /// A step made this way may `require` only the savechain library and Lua's standard
    /// libraries; steps that use helper modules come from a folder, with [`Step::lua_dir`].
    /// Lua source is bytes (a `&str` or `&[u8]`): string literals may hold any, as in a
    /// file saved as Latin-1.
    pub fn lua(file_name: &str, source: impl AsRef<[u8]>) -> Result<Step> {
        let from = lua_dir::parse_name(file_name).ok_or_else(|| lua_dir::misnamed(file_name))?;
        let source = source.as_ref();
        Ok(Step {
            from,
            name: file_name.to_string(),
            description: lua_dir::description(file_name, source),
            kind: StepKind::Lua {
                chunk: Arc::new(Chunk::of_file(file_name, source.to_vec())),
                modules: None,
            },
        })
    }

    /// The Lua steps of a folder: every `NNNN-short-description.lua` file in it, each
    /// allowed to `require` the helper modules in the folder's subfolders
    /// (`require("lib.util")` loads `lib/util.lua`).
    ///
    /// Steps and helpers are read now, once: what runs is what the chain's identity was
    /// made from. A file directly in the folder that looks like a step but is misnamed (any
    /// other `.lua` file, `.LUA`, or a name that starts with a digit: `2-x.lua`,
    /// `0002_x.lua`, `0002-x.lua.bak`) is an error naming it, since skipping it would end
    /// the chain early or leave a gap. Other files (`README.md`), hidden files and folders
    /// other than those of helper modules are ignored.
    pub fn lua_dir(dir: impl AsRef<std::path::Path>) -> Result<Vec<Step>> {
        lua_dir::read(dir.as_ref())
    }

    /// The version the step upgrades from.
    pub fn from(&self) -> u64 {
        self.from
    }

    /// The version the step makes.
    pub fn to(&self) -> u64 {
        self.from + 1
    }

    /// The file a Lua step came from, or `NNNN (rust)` for a Rust step.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the step does, in a few words.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// `"rust"` or `"lua"`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            StepKind::Rust { .. } => "rust",
            StepKind::Lua { .. } => "lua",
        }
    }
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} -> {} {} {:?} ({})",
            self.from,
            self.to(),
            self.kind_name(),
            self.name,
            self.description
        )
    }
}

/// Runs a Lua step's file in `sandbox` and returns the function it returns, or why it did
/// not, in words that fit after the file's name: a syntax error with its line, an error of
/// the file's top level (a `require` that failed, say), or a value that is not a function.
pub(super) fn load_lua(sandbox: &Sandbox, step: &Step) -> std::result::Result<Function, String> {
    let StepKind::Lua { chunk, .. } = &step.kind else {
        unreachable!("only Lua steps are loaded")
    };
    let chunk = chunk.load(sandbox.lua()).map_err(|e| match e {
        mlua::Error::SyntaxError { message, .. } => syntax_error(&message, chunk.file()),
        other => first_message(&SandboxError::Script(other)),
    })?;
    let returned = sandbox
        .guard(|_| chunk.call::<mlua::Value>(()))
        .map_err(|e| {
            format!(
                "the file failed before returning its function: {}",
                first_message(&e)
            )
        })?;
    match returned {
        mlua::Value::Function(f) => Ok(f),
        other => Err(format!(
            "the file must return the step's function(data, ctx); it returned {}",
            // Lua's names for the types: mlua's say "integer".
            match other {
                mlua::Value::Nil => "nothing",
                mlua::Value::Boolean(_) => "a boolean",
                mlua::Value::Integer(_) | mlua::Value::Number(_) => "a number",
                mlua::Value::String(_) => "a string",
                mlua::Value::Table(_) => "a table",
                mlua::Value::Thread(_) => "a thread",
                _ => "a userdata",
            }
        )),
    }
}

/// `syntax error on line N: reason` from Lua's `chunk:N: reason`, where `chunk` is the file
/// name, or its end after `...` when it is long.
fn syntax_error(message: &str, chunk_name: &str) -> String {
    let rest = message
        .strip_prefix(chunk_name)
        .and_then(|rest| rest.strip_prefix(':'));
    let line_and_reason = |rest: &str| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let line: usize = rest[..digits].parse().ok()?;
        Some((line, rest[digits..].strip_prefix(": ")?.to_string()))
    };
    let found = match rest {
        Some(rest) => line_and_reason(rest),
        // The first `:N: ` then.
        None => message
            .match_indices(':')
            .find_map(|(at, _)| line_and_reason(&message[at + 1..])),
    };
    match found {
        Some((line, reason)) => format!("syntax error on line {line}: {reason}"),
        None => format!("syntax error: {message}"),
    }
}

/// What went wrong, without mlua's wrapping and Lua's stack traceback.
fn first_message(error: &SandboxError) -> String {
    fn lua(error: &mlua::Error) -> String {
        match error {
            mlua::Error::RuntimeError(message) | mlua::Error::SyntaxError { message, .. } => {
                message.clone()
            }
            mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
                lua(cause)
            }
            other => other.to_string(),
        }
    }
    let message = match error {
        SandboxError::Script(e) => lua(e),
        other => other.to_string(),
    };
    match message.split_once("\nstack traceback:") {
        Some((first, _)) => first.to_string(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_give_their_line() {
        assert_eq!(
            syntax_error(
                "steps/0001-a.lua:3: unexpected symbol near '='",
                "steps/0001-a.lua"
            ),
            "syntax error on line 3: unexpected symbol near '='"
        );
        // Lua shortens long chunk names from the start.
        assert_eq!(
            syntax_error(
                "...ong/steps/0001-a.lua:12: '=' expected near 'x'",
                "/a/very/long/steps/0001-a.lua"
            ),
            "syntax error on line 12: '=' expected near 'x'"
        );
        assert_eq!(
            syntax_error("something else", "0001-a.lua"),
            "syntax error: something else"
        );
    }
}
