//! A game's chain of steps: checked for gaps and clashes, the game's version it writes,
//! the plan for one save, and the identity that caches made by it are checked against.

use std::sync::{Arc, Mutex};

use super::lua_dir::Modules;
use super::run::Upgrader;
use super::step::{load_lua, Step, StepKind};
use crate::error::{Error, ErrorKind, Result};
use crate::lua::{Limits, Sandbox};
use crate::save::{Meta, Save};
use crate::value::Value;

/// A checked sequence of steps with no gaps and no two from the same version, and the
/// version of the game it belongs to.
#[derive(Clone, Debug)]
pub struct Chain {
    steps: Vec<Step>,
    writer: semver::Version,
    /// The helper modules of every Lua step, merged.
    modules: Arc<Modules>,
    identity: [u8; 16],
}

impl Chain {
    /// Checks and orders `steps`, the chain of the game at version `writer`.
    ///
    /// `writer` is the game's own version (`env!("CARGO_PKG_VERSION")` in the game's
    /// crate, say): every save the chain upgrades records it as `meta.writer` and in
    /// `meta.history`, and it is part of the chain's identity, so a new release of the game
    /// rebuilds caches once. A chain with no steps is the chain of a game at its first
    /// version, 1.
    ///
    /// Every Lua step is checked now, before any save is touched: its file is compiled and
    /// its top level run (not the function it returns), in a sandbox of its own with the
    /// default [`Limits`] and the chain's helper modules, as when it first runs on a save.
    /// Compiling alone cannot tell whether a file returns a function; a top level that only
    /// defines things, as a step's should, costs nothing to run, and one that fails would
    /// fail on every save. What the top level prints is dropped.
    ///
    /// Errors name the steps in conflict or around a gap, a Rust step with an empty
    /// revision, or a malformed `writer`. A Lua step that does not compile, fails before
    /// returning, or returns something other than a function is an error naming its file
    /// ([`Error::file`]: its path for a step of [`Step::lua_dir`], its name for
    /// [`Step::lua`]), such as `steps/0002-b.lua: syntax error on line 3: unexpected symbol
    /// near '='`.
    pub fn new(writer: &str, mut steps: Vec<Step>) -> Result<Chain> {
        let writer = semver::Version::parse(writer).map_err(|e| {
            chain_error(format!(
                "the writer must be a semantic version such as \"1.2.3\" (the game's version), found {writer:?}: {e}"
            ))
        })?;
        steps.sort_by_key(|s| s.from);
        check_order(&steps)?;
        for step in &steps {
            if let StepKind::Rust { revision, .. } = &step.kind {
                if revision.trim().is_empty() {
                    return Err(chain_error(format!(
                        "{}: a Rust step needs a revision that changes when its code does",
                        step.name
                    )));
                }
            }
        }
        let modules = modules_of(&steps)?;
        let identity = identity(&writer, &steps, &modules);
        check_lua_steps(&steps, &modules, identity)?;
        Ok(Chain {
            steps,
            writer,
            modules: Arc::new(modules),
            identity,
        })
    }

    /// The chain of the Lua steps in `dir` ([`Step::lua_dir`]), for the game at version
    /// `writer`.
    pub fn from_lua_dir(writer: &str, dir: impl AsRef<std::path::Path>) -> Result<Chain> {
        Chain::new(writer, Step::lua_dir(dir)?)
    }

    /// The chain with `steps` added (replacing none: a clash is an error).
    pub fn with(&self, steps: Vec<Step>) -> Result<Chain> {
        let all = self.steps.iter().cloned().chain(steps).collect();
        Chain::new(&self.writer.to_string(), all)
    }

    /// The steps, oldest first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The game's version, recorded in every save the chain upgrades.
    pub fn writer(&self) -> &semver::Version {
        &self.writer
    }

    /// The version every save is upgraded to.
    pub fn latest(&self) -> u64 {
        self.steps.last().map_or(1, Step::to)
    }

    /// The oldest version the chain can upgrade.
    pub fn oldest(&self) -> u64 {
        self.steps.first().map_or(1, |s| s.from)
    }

    /// A new save of `data` at the latest version, written by this game.
    pub fn new_save(&self, data: Value) -> Save {
        Save::new(self.latest(), data).with_writer(self.writer.clone())
    }

    /// A save of `data` at the latest version, written by this game, keeping the rest of
    /// `meta` (its history and any other members): for storing again a save that was
    /// loaded, with `meta` from [`Loaded::meta`](crate::cache::Loaded::meta) or
    /// [`Save::meta`].
    pub fn resave(&self, mut meta: Meta, data: Value) -> Save {
        meta.version = self.latest();
        meta.writer = Some(self.writer.clone());
        Save { meta, data }
    }

    /// The steps that take a save from `version` to `target` (the latest when `None`), or
    /// why it cannot be done. A save already past `target` (but within the chain) needs no
    /// steps.
    pub fn plan(
        &self,
        version: u64,
        writer: Option<&semver::Version>,
        target: Option<u64>,
    ) -> Result<&[Step]> {
        let target = target.unwrap_or(self.latest());
        let by = writer.map_or(String::new(), |w| format!(", written by {w}"));
        let refuse = |message: String| Err(Error::new(ErrorKind::Upgrade, message));
        if target > self.latest() || target < self.oldest() {
            return refuse(format!(
                "target version {target} is outside this chain's versions {} to {}",
                self.oldest(),
                self.latest()
            ));
        }
        if version > self.latest() {
            return refuse(format!(
                "the save is version {version}{by}, newer than this program knows (latest version {}); \
                 it needs a newer program and is left as it is",
                self.latest()
            ));
        }
        if version < self.oldest() {
            return refuse(format!(
                "the save is version {version}{by}, older than the oldest version this chain upgrades ({}); \
                 it is left as it is",
                self.oldest()
            ));
        }
        if version > target {
            // Already past it (`--to 5` over saves at 9): nothing to do, as for one at 5.
            return Ok(&[]);
        }
        let start = (version - self.oldest()) as usize;
        let end = (target - self.oldest()) as usize;
        Ok(&self.steps[start..end])
    }

    /// The identity of the chain: a hash of everything that decides what it makes of a
    /// save. Caches record it and are refused when it differs. It covers the writer, each
    /// step's version, name, description, and its Rust revision or Lua source, every helper
    /// module a Lua step can `require`, the savechain Lua library, and savechain's own
    /// version (its Rust side converts values to and from Lua).
    pub fn fingerprint(&self) -> [u8; 16] {
        self.identity
    }

    /// Something that runs this chain on saves, keeping a Lua sandbox between them.
    pub fn upgrader(&self) -> Upgrader<'_> {
        Upgrader::new(self)
    }

    /// The helper modules of every Lua step, merged.
    pub(super) fn modules(&self) -> &Modules {
        &self.modules
    }
}

/// Consecutive versions, none twice, starting at 1 or later.
fn check_order(steps: &[Step]) -> Result<()> {
    for pair in steps.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.from == b.from {
            return Err(chain_error(format!(
                "two steps from version {}: {} and {}",
                a.from, a.name, b.name
            )));
        }
        if b.from != a.to() {
            return Err(chain_error(format!(
                "gap in the chain: {} goes to version {}, but the next step, {}, starts from version {}",
                a.name,
                a.to(),
                b.name,
                b.from
            )));
        }
    }
    match steps.first() {
        Some(first) if first.from == 0 => {
            Err(chain_error(format!("{}: versions start at 1", first.name)))
        }
        _ => Ok(()),
    }
}

/// The helper modules of all Lua steps: one Lua state runs them all, so a name must mean
/// the same source wherever it comes from.
fn modules_of(steps: &[Step]) -> Result<Modules> {
    let mut merged = Modules::default();
    let mut seen: Vec<&Arc<Modules>> = Vec::new();
    for step in steps {
        let StepKind::Lua {
            modules: Some(modules),
            ..
        } = &step.kind
        else {
            continue;
        };
        if seen.iter().any(|s| Arc::ptr_eq(s, modules)) {
            continue;
        }
        seen.push(modules);
        for (name, module) in &modules.by_name {
            match merged.by_name.get(name) {
                Some(existing) if existing.source != module.source => {
                    return Err(chain_error(format!(
                        "two different helper modules named {name}: {} and {}",
                        existing.file.display(),
                        module.file.display()
                    )))
                }
                Some(_) => {}
                None => {
                    merged.by_name.insert(
                        name.clone(),
                        super::lua_dir::Module {
                            file: module.file.clone(),
                            source: module.source.clone(),
                        },
                    );
                }
            }
        }
    }
    Ok(merged)
}

/// The identities of chains whose Lua steps passed [`check_lua_steps`] in this process, the
/// latest last. What the check runs is covered by the identity, so a program that makes the
/// same chain again (for each load, say) does not pay a few milliseconds each time.
static CHECKED: Mutex<Vec<[u8; 16]>> = Mutex::new(Vec::new());
/// How many identities [`CHECKED`] keeps.
const CHECKED_KEPT: usize = 64;

/// Loads each Lua step in a fresh sandbox, so that a step that works only after another
/// step's file ran is found too; a chain with `identity` already checked is not again.
fn check_lua_steps(steps: &[Step], modules: &Modules, identity: [u8; 16]) -> Result<()> {
    let checked = || CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if checked().contains(&identity) {
        return Ok(());
    }
    for step in steps {
        let StepKind::Lua { chunk_name, .. } = &step.kind else {
            continue;
        };
        let sandbox = Sandbox::new(Limits::default())?;
        for (name, module) in &modules.by_name {
            sandbox.add_module(name, &module.file.display().to_string(), &module.source)?;
        }
        load_lua(&sandbox, step).map_err(|message| {
            Error::new(ErrorKind::Upgrade, message).with_file(chunk_name.as_str())
        })?;
    }
    let mut checked = checked();
    if checked.len() == CHECKED_KEPT {
        checked.remove(0);
    }
    checked.push(identity);
    Ok(())
}

/// Bumped when what the identity covers changes, so old caches are refused.
const IDENTITY_SCHEME: &[u8] = b"savechain chain identity 3\0";

fn identity(writer: &semver::Version, steps: &[Step], modules: &Modules) -> [u8; 16] {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut part = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(IDENTITY_SCHEME);
    part(env!("CARGO_PKG_VERSION").as_bytes());
    part(&crate::text::FORMAT_REVISION.to_le_bytes());
    for (name, source) in crate::lua::library_sources() {
        part(name.as_bytes());
        part(source.as_bytes());
    }
    part(writer.to_string().as_bytes());
    for step in steps {
        part(&step.from.to_le_bytes());
        part(step.kind_name().as_bytes());
        part(step.name.as_bytes());
        part(step.description.as_bytes());
        match &step.kind {
            StepKind::Rust { revision, .. } => part(revision.as_bytes()),
            StepKind::Lua { source, .. } => part(source.as_bytes()),
        }
    }
    for (name, module) in &modules.by_name {
        part(name.as_bytes());
        part(module.source.as_bytes());
    }
    h.digest128().to_le_bytes()
}

fn chain_error(message: String) -> Error {
    Error::new(ErrorKind::Upgrade, message)
}
