//! One upgrade step, from version N to N + 1, in Rust, in Lua or declared, and what a Rust
//! step is told.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use mlua::Function;

use super::declared::{self, Change, Declaration, Declared};
use super::lua_dir::{self, Body, Modules};
use crate::error::LuaFailure;
use crate::error::Result;
use crate::lua::{with_globals, Chunk, Sandbox, SandboxError};
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
    /// on purpose, and removes it; strict upgrades accept only declared removals. Reports
    /// give the path from the document's root (`data.player.legacy_flag`). Returns whether
    /// there was something to remove.
    pub fn drop_path(&mut self, data: &mut Value, path: &str) -> bool {
        self.dropped.push(super::diff::from_data(path));
        let (parent, key) = match path.rsplit_once('.') {
            Some((parent, key)) => (lookup_mut(data, parent), key),
            None => (Some(data), path),
        };
        parent
            .and_then(Value::as_object_mut)
            .and_then(|map| map.remove(key))
            .is_some()
    }

    /// Declares that the step removes `path` (relative to the data) on purpose, for
    /// removals it makes itself (a rename or a move removes its source).
    pub fn declare_removed(&mut self, path: &str) {
        self.dropped.push(super::diff::from_data(path));
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
    /// Declared changes ([`Step::declared`]), read (or why they cannot be, which
    /// [`Chain::new`](super::Chain::new) reports), and the file they came from, if any.
    Declared {
        declaration: std::result::Result<Arc<Declaration>, String>,
        file: Option<std::path::PathBuf>,
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

    /// A declared step, from version `from` to `from + 1`: `changes` applied to the data in
    /// order (see [`Change`] for each). The changes are the step's identity: a changed
    /// declaration refuses caches made by the old one. Its name is `NNNN (declared)`.
    ///
    /// A malformed change (a path that is not one, a drop without a reason) is an error
    /// when the chain is made ([`Chain::new`](super::Chain::new)), naming the step and the
    /// change.
    pub fn declared(from: u64, description: &str, changes: Vec<Change>) -> Step {
        let declaration = Declaration::new(&changes)
            .map(Arc::new)
            .map_err(|invalid| format!("change {}: {}", invalid.index, invalid.message));
        Step {
            from,
            name: format!("{from:04} (declared)"),
            description: description.to_string(),
            kind: StepKind::Declared {
                declaration,
                file: None,
            },
        }
    }

    /// A declared step from its file name (`NNNN-short-description.json`, where NNNN is the
    /// version it upgrades from) and text, as [`Step::lua_dir`] reads one from a folder:
    /// for a game that compiles its step files in (`include_str!`). Its description is the
    /// file's `description`, or the words of the file name. Errors name the file and the
    /// change (`0006-shields.json: at changes[1]: a drop needs "reason": ...`).
    pub fn declared_file(file_name: &str, text: impl AsRef<[u8]>) -> Result<Step> {
        let from =
            lua_dir::parse_declared_name(file_name).ok_or_else(|| lua_dir::misnamed(file_name))?;
        let file = declared::read_file(std::path::Path::new(file_name), text.as_ref())?;
        Ok(Step {
            from,
            name: file_name.to_string(),
            description: file
                .description
                .unwrap_or_else(|| lua_dir::description(file_name, b"")),
            kind: StepKind::Declared {
                declaration: Ok(Arc::new(file.declaration)),
                file: None,
            },
        })
    }

    /// The steps of a folder: every `NNNN-short-description.lua` file in it, a Lua step
    /// allowed to `require` the helper modules in the folder's subfolders
    /// (`require("lib.util")` loads `lib/util.lua`), and every
    /// `NNNN-short-description.json` file, a declared step ([`Step::declared_file`]).
    ///
    /// Steps and helpers are read now, once: what runs is what the chain's identity was
    /// made from. A file directly in the folder that looks like a step but is misnamed (any
    /// other `.lua` file, `.LUA`, or a name that starts with a digit: `2-x.lua`,
    /// `0002_x.lua`, `0002-x.lua.bak`, `2-x.json`) is an error naming it, since skipping it
    /// would end the chain early or leave a gap. Other files (`README.md`, a mod's
    /// `mod.json`), hidden files and folders other than those of helper modules are
    /// ignored.
    pub fn lua_dir(dir: impl AsRef<std::path::Path>) -> Result<Vec<Step>> {
        let (files, modules) = lua_dir::read(dir.as_ref())?;
        let steps = files.into_iter().map(|file| Step {
            from: file.from,
            name: file.file_name,
            description: file.description,
            kind: match file.body {
                Body::Lua(chunk) => StepKind::Lua {
                    chunk,
                    modules: Some(modules.clone()),
                },
                Body::Declared { declaration, path } => StepKind::Declared {
                    declaration: Ok(declaration),
                    file: Some(path),
                },
            },
        });
        Ok(steps.collect())
    }

    /// The version the step upgrades from.
    pub fn from(&self) -> u64 {
        self.from
    }

    /// The version the step makes.
    pub fn to(&self) -> u64 {
        self.from + 1
    }

    /// The file a Lua or declared step came from, `NNNN (rust)` for a Rust step, or
    /// `NNNN (declared)` for a step of [`Step::declared`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the step does, in a few words.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// `"rust"`, `"lua"` or `"declared"`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            StepKind::Rust { .. } => "rust",
            StepKind::Lua { .. } => "lua",
            StepKind::Declared { .. } => "declared",
        }
    }

    /// A declared step's changes, in order; `None` for a Rust or Lua step, or a declared
    /// one whose changes are malformed (an error when a chain is made of it).
    pub fn declared_changes(&self) -> Option<&[Change]> {
        match &self.kind {
            StepKind::Declared {
                declaration: Ok(declaration),
                ..
            } => Some(declaration.changes()),
            _ => None,
        }
    }
}

/// The declared steps of `T`, the type of a save's `data`: one [`Step::declared`] for each
/// version that has changes, described by its changes. A game adds them to its Rust (or
/// Lua) steps, `Chain::new(VERSION, [rust_steps, declared_steps::<State>()].concat())`: a
/// version has either a declared step or a written one (two steps from one version are an
/// error when the chain is made).
pub fn declared_steps<T: Declared>() -> Vec<Step> {
    declared_steps_in::<T>(..)
}

/// [`declared_steps`] of the versions in `from` alone (`1..6`: the steps from versions 1 to
/// 5), for a game that declares some versions' changes elsewhere, or writes their steps.
pub fn declared_steps_in<T: Declared>(from: impl std::ops::RangeBounds<u64>) -> Vec<Step> {
    let mut versions = T::versions();
    versions.retain(|v| from.contains(v));
    versions.sort_unstable();
    versions.dedup();
    versions
        .into_iter()
        .filter_map(|from| {
            let changes = T::changes(from);
            if changes.is_empty() {
                return None;
            }
            let words: Vec<String> = changes.iter().map(Change::to_string).collect();
            Some(Step::declared(from, &words.join("; "), changes))
        })
        .collect()
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

/// How a step failed: what happened, the line of its file where that is known, and for a
/// Lua step why, in kinds a game can match.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) message: String,
    pub(super) line: Option<usize>,
    pub(super) lua: Option<LuaFailure>,
}

impl Failure {
    /// A failure told in words: a Rust step's, or one found around a step.
    pub(super) fn said(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            line: None,
            lua: None,
        }
    }

    /// A failure of a Lua step's file `file`: the message without mlua's wrapping, Lua's
    /// stack traceback or the file's position, which becomes the line (from the message, or
    /// else the innermost call in the file).
    pub(super) fn of_lua(error: &SandboxError, file: &str) -> Failure {
        let kind = error.failure();
        let SandboxError::Script(error) = error else {
            return Failure {
                lua: Some(kind),
                ..Failure::said(error.to_string())
            };
        };
        let (message, traceback) = lua_message(error);
        let (line, message) = match at_line(&message, file) {
            Some((line, rest)) => (Some(line), rest),
            None => (
                traceback
                    .lines()
                    .find_map(|f| at_line(f.trim(), file).map(|(l, _)| l)),
                &*message,
            ),
        };
        Failure {
            message: message.to_string(),
            line,
            lua: Some(kind),
        }
    }

    /// The failure after a file's name: `syntax error on line 3: reason`, or its message.
    pub(super) fn text(&self) -> String {
        match (self.lua, self.line) {
            (Some(LuaFailure::Syntax), Some(line)) => {
                format!("syntax error on line {line}: {}", self.message)
            }
            (Some(LuaFailure::Syntax), None) => format!("syntax error: {}", self.message),
            (_, Some(line)) => format!("on line {line}: {}", self.message),
            (_, None) => self.message.clone(),
        }
    }

    /// The failure after `failed`: ` on line 7: message`, or `: message`.
    pub(super) fn after_failed(&self) -> String {
        match (self.lua, self.line) {
            (Some(LuaFailure::Syntax), _) | (_, None) => format!(": {}", self.text()),
            (_, Some(_)) => format!(" {}", self.text()),
        }
    }
}

/// The message of a Lua error, without mlua's wrapping, and Lua's stack traceback.
fn lua_message(error: &mlua::Error) -> (Cow<'_, str>, &str) {
    match error {
        mlua::Error::RuntimeError(message) | mlua::Error::SyntaxError { message, .. } => {
            let (message, traceback) = message
                .split_once("\nstack traceback:")
                .unwrap_or((message, ""));
            (Cow::Borrowed(message), traceback)
        }
        mlua::Error::CallbackError { cause, traceback } => {
            let (message, _) = lua_message(cause);
            (message, traceback)
        }
        mlua::Error::WithContext { cause, .. } => lua_message(cause),
        mlua::Error::MemoryError(message) => (Cow::Borrowed(message), ""),
        // A savechain error from Rust code the script called (a conversion), and the rest.
        mlua::Error::ExternalError(e) => (Cow::Owned(e.to_string()), ""),
        other => (Cow::Owned(other.to_string()), ""),
    }
}

/// The line and the rest of `text` when it starts with a position in `file`, `file:N: ` as
/// Lua writes it (a long name shortened to `...` and its end).
fn at_line<'t>(text: &'t str, file: &str) -> Option<(usize, &'t str)> {
    let (name, rest) = text.split_once(':')?;
    let same = name == file
        || name
            .strip_prefix("...")
            .is_some_and(|end| file.ends_with(end));
    if !same {
        return None;
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let line = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    Some((
        line,
        rest.strip_prefix(": ")
            .or(rest.strip_prefix(":"))
            .unwrap_or(rest),
    ))
}

/// Runs a Lua step's file in `sandbox` and returns the function it returns, or why it did
/// not, in words that fit after the file's name: a syntax error with its line, an error of
/// the file's top level (a `require` that failed, say), or a value that is not a function.
/// `main` keeps the file loaded into the sandbox's state, for the next run.
pub(super) fn load_lua(
    sandbox: &Sandbox,
    step: &Step,
    main: &mut Option<Function>,
) -> std::result::Result<Function, Failure> {
    let StepKind::Lua { chunk, .. } = &step.kind else {
        unreachable!("only Lua steps are loaded")
    };
    let file = chunk.file();
    let main = match main {
        Some(main) => {
            with_globals(sandbox.lua(), main)
                .map_err(|e| Failure::of_lua(&SandboxError::Script(e), file))?;
            main.clone()
        }
        None => {
            let loaded = chunk
                .load(sandbox.lua())
                .map_err(|e| Failure::of_lua(&SandboxError::Script(e), file))?;
            main.insert(loaded).clone()
        }
    };
    let returned = sandbox
        .guard(|_| main.call::<mlua::Value>(()))
        .map_err(|e| {
            let failure = Failure::of_lua(&e, file);
            let on_line = failure
                .line
                .map_or(String::new(), |l| format!(" on line {l}"));
            Failure {
                message: format!(
                    "the file failed{on_line} before returning its function: {}",
                    failure.message
                ),
                line: None,
                ..failure
            }
        })?;
    match returned {
        mlua::Value::Function(f) => Ok(f),
        other => Err(Failure {
            lua: Some(LuaFailure::Runtime),
            ..Failure::said(format!(
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
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(message: &str) -> SandboxError {
        SandboxError::Script(mlua::Error::RuntimeError(message.to_string()))
    }

    #[test]
    fn a_failure_gives_its_line_in_the_file_without_the_traceback() {
        let failure = Failure::of_lua(
            &script("steps/0001-a.lua:3: unexpected symbol\nstack traceback:\n\t[C]: in ?"),
            "steps/0001-a.lua",
        );
        assert_eq!(failure.text(), "on line 3: unexpected symbol");
        // Raised where the file has no position: the innermost call in the file says.
        let failure = Failure::of_lua(
            &script(
                "attempt to index a nil value\nstack traceback:\n\t[C]: in ?\n\t\
                 [C]: in for iterator 'for iterator'\n\t0007-log.lua:7: in function <0007-log.lua:4>",
            ),
            "0007-log.lua",
        );
        assert_eq!(failure.text(), "on line 7: attempt to index a nil value");
        assert_eq!(failure.lua, Some(LuaFailure::Runtime));
        // Lua shortens long chunk names from the start.
        let failure = Failure::of_lua(
            &SandboxError::Script(mlua::Error::SyntaxError {
                message: "...ong/steps/0001-a.lua:12: '=' expected near 'x'".to_string(),
                incomplete_input: false,
            }),
            "/a/very/long/steps/0001-a.lua",
        );
        assert_eq!(
            failure.text(),
            "syntax error on line 12: '=' expected near 'x'"
        );
        // Another file's position stays in the message.
        let failure = Failure::of_lua(
            &script("lib/util.lua:2: bad\nstack traceback:\n\t0001-a.lua:5: in function"),
            "0001-a.lua",
        );
        assert_eq!(failure.text(), "on line 5: lib/util.lua:2: bad");
        assert_eq!(
            Failure::of_lua(&script("no position"), "a.lua").text(),
            "no position"
        );
    }
}
