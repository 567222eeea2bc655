//! One upgrade step, from version N to N + 1, in Rust or Lua, and what a Rust step is told.

use std::fmt;
use std::sync::Arc;

use super::lua_dir::{self, Modules};
use crate::error::Result;
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
    /// A Lua chunk that returns `function(data, ctx)`, and the helper modules it may
    /// `require` (those of the folder it came from), read once with it.
    Lua {
        source: String,
        modules: Option<Arc<Modules>>,
        /// The file it came from, for error messages.
        chunk_name: String,
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
    /// A step made this way may `require` only the savechain library; steps that use
    /// helper modules come from a folder, with [`Step::lua_dir`].
    pub fn lua(file_name: &str, source: &str) -> Result<Step> {
        let from = lua_dir::parse_name(file_name).ok_or_else(|| lua_dir::misnamed(file_name))?;
        Ok(Step {
            from,
            name: file_name.to_string(),
            description: lua_dir::description(file_name, source),
            kind: StepKind::Lua {
                source: source.to_string(),
                modules: None,
                chunk_name: file_name.to_string(),
            },
        })
    }

    /// The Lua steps of a folder: every `NNNN-short-description.lua` file in it, each
    /// allowed to `require` the helper modules in the folder's subfolders
    /// (`require("lib.util")` loads `lib/util.lua`).
    ///
    /// Steps and helpers are read now, once: what runs is what the chain's identity was
    /// made from. Another `.lua` file directly in the folder is an error naming it (a
    /// misnamed step would otherwise be skipped).
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
