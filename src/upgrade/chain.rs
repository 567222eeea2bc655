//! A game's chain of steps: checked for gaps and clashes, the game's version it writes,
//! the game it belongs to (when it names one), the mods whose chains follow it, the plan of
//! the game's steps for one save, and the identity that caches made by it are checked
//! against.

use std::sync::{Arc, Mutex};

use super::lua_dir::Modules;
use super::step::{load_lua, Step, StepKind};
use crate::error::{Error, ErrorKind, Result};
use crate::lua::{Limits, Sandbox};
use crate::path::{Path, Segment};
use crate::save::{Meta, Save};
use crate::shape::Shapes;
use crate::value::{Map, Value};

/// A checked sequence of steps with no gaps and no two from the same version, the version
/// of the game it belongs to, and the game's name when it gives one ([`Chain::for_game`]).
#[derive(Clone, Debug)]
pub struct Chain {
    steps: Vec<Step>,
    writer: semver::Version,
    /// The game whose saves alone it upgrades (`meta.game`); `None` for any save.
    game: Option<String>,
    /// The helper modules of every Lua step, merged.
    modules: Arc<Modules>,
    /// The mods whose chains run after this one, in the order they run
    /// ([`Chain::with_mods`]); none for a mod's own chain.
    pub(super) mods: Vec<Mod>,
    /// The identity of the steps, writer and game alone, without the mods.
    own_identity: [u8; 16],
    identity: [u8; 16],
    /// The shapes recorded for its versions ([`Chain::with_shapes`]); not part of the
    /// identity, since they change nothing a step writes.
    pub(super) shapes: Arc<Shapes>,
}

/// A mod: a namespace of a save's data with its own data version and its own chain of
/// steps, run after the game's chain ([`Chain::with_mods`]).
///
/// A mod's data version is recorded in the save as `meta.mods.<name>.version`, and its
/// release as `meta.mods.<name>.writer`; its steps move that version from N to N + 1, as a
/// game's steps move `meta.version`. They see the whole save as the game's chain left it
/// (a mod's data may sit beside the game's, on the game's own records), and by
/// convention keep what belongs to the mod alone under `data.mods.<name>`.
///
/// ```
/// use savechain::upgrade::{Chain, Mod, Step};
/// use savechain::{Options, Save};
///
/// let tinker = Mod::new("tinker", "1.1.0", vec![Step::lua("0001-charge.lua", r#"
///     return function(data) data.mods.tinker.charge = data.mods.tinker.charge * 10 end
/// "#)?])?;
/// let chain = Chain::new("2.0.0", vec![])?.with_mods(vec![tinker])?;
///
/// let save = Save::from_str(r#"{
///     "meta": {"version": 1, "mods": {"tinker": {"version": 1, "writer": "1.0.0"}}},
///     "data": {"mods": {"tinker": {"charge": 4}}}
/// }"#)?;
/// let upgraded = chain.upgrader().upgrade(save, &Options::default())?;
/// assert_eq!(upgraded.save.data.pointer("mods.tinker.charge"), Some(&40.into()));
/// let entry = upgraded.save.meta.extra.get("mods").unwrap().get("tinker").unwrap();
/// assert_eq!(entry.to_string(), r#"{"version":2,"writer":"1.1.0"}"#);
/// # Ok::<(), savechain::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Mod {
    pub(super) name: String,
    pub(super) after: Vec<String>,
    pub(super) chain: Chain,
    /// The manifest it was read from ([`Mod::from_dir`]), for errors about it.
    pub(super) manifest: Option<std::path::PathBuf>,
}

impl Mod {
    /// The mod `name` at its release `release` (a semantic version, recorded as the writer
    /// of its data), with its `steps`, checked as [`Chain::new`] checks a game's.
    ///
    /// A name is 1 to 64 letters, digits, `_`, `-` and `.`, not starting with `.`: it is
    /// a key of `meta.mods` and, by convention, of `data.mods`, and names a folder.
    pub fn new(name: &str, release: &str, steps: Vec<Step>) -> Result<Mod> {
        check_mod_name(name)?;
        check_release(release).map_err(|e| e.in_mod(name))?;
        let chain = Chain::new(release, steps).map_err(|e| e.in_mod(name))?;
        Ok(Mod {
            name: name.to_string(),
            after: Vec::new(),
            chain,
            manifest: None,
        })
    }

    /// The mod, run after the mods named in `names` when they are installed (its
    /// steps may read what theirs made). A name not installed is no error: the order is
    /// about who runs first, not a requirement.
    pub fn after<S: AsRef<str>>(mut self, names: &[S]) -> Mod {
        for name in names {
            let name = name.as_ref().to_string();
            if !self.after.contains(&name) {
                self.after.push(name);
            }
        }
        self
    }

    /// Its name: its key in `meta.mods`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its release, recorded as the writer of its data.
    pub fn release(&self) -> &semver::Version {
        self.chain.writer()
    }

    /// The mods it runs after, as declared.
    pub fn comes_after(&self) -> &[String] {
        &self.after
    }

    /// Its steps, oldest first: they move its data version, not the game's.
    pub fn steps(&self) -> &[Step] {
        self.chain.steps()
    }

    /// The oldest data version of the mod its steps upgrade.
    pub fn oldest(&self) -> u64 {
        self.chain.oldest()
    }

    /// The data version its steps bring the mod's data to.
    pub fn latest(&self) -> u64 {
        self.chain.latest()
    }

    /// The identity of its steps and release, which a chain with the mod folds into its own
    /// ([`Chain::fingerprint`]).
    pub fn fingerprint(&self) -> [u8; 16] {
        self.chain.fingerprint()
    }
}

/// A mod's release is recorded as the writer of its data: a semantic version.
pub(super) fn check_release(release: &str) -> Result<()> {
    semver::Version::parse(release).map(drop).map_err(|e| {
        chain_error(format!(
            "a mod's release must be a semantic version such as \"1.2.0\", found {release:?}: {e}"
        ))
    })
}

/// A mod's name is a key of `meta.mods` and a folder's name: kept to characters safe in both.
pub(super) fn check_mod_name(name: &str) -> Result<()> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if fine {
        Ok(())
    } else {
        Err(chain_error(format!(
            "a mod's name is 1 to 64 letters, digits, '_', '-' and '.', not starting with '.', found {name:?}"
        )))
    }
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
    /// revision, or a malformed `writer`; one about a step names it ([`Error::failed_step`]:
    /// the step after a gap, the second of two from one version, the first when versions
    /// start at 0) and, for a Lua step, its file ([`Error::file`]). A Lua step that does not
    /// compile, fails before returning, or returns something other than a function is an
    /// error naming its file
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
            match &step.kind {
                StepKind::Rust { revision, .. } if revision.trim().is_empty() => {
                    return Err(step_chain_error(
                        step,
                        "a Rust step needs a revision that changes when its code does".to_string(),
                    ));
                }
                StepKind::Declared {
                    declaration: Err(why),
                    ..
                } => return Err(step_chain_error(step, why.clone())),
                _ => {}
            }
        }
        let modules = modules_of(&steps)?;
        let identity = identity(&writer, None, &steps, &modules);
        check_lua_steps(&steps, &modules, identity)?;
        Ok(Chain {
            steps,
            writer,
            game: None,
            modules: Arc::new(modules),
            mods: Vec::new(),
            own_identity: identity,
            identity,
            shapes: Arc::default(),
        })
    }

    /// The chain for the game named `game` only: it upgrades a save only when the save's
    /// `meta.game` is exactly `game`, and refuses, leaving it as it is, a save that names
    /// another game or none (nothing says such a save is this game's, and another game's
    /// steps would garble it or fail half way). New and re-saved saves
    /// ([`Chain::new_save`], [`Chain::resave`]) record `game`. The name is part of the
    /// chain's identity, so caches made before a game named its chain are rebuilt once.
    ///
    /// A game whose players already have saves that name no game adds the name to each
    /// before loading it through this chain (load it with [`Save::load`], insert `"game"`
    /// into `meta.extra`, [`Save::store`] it), or keeps a chain that names no game.
    ///
    /// An empty name (or one of spaces only) is an error.
    ///
    /// ```
    /// use savechain::upgrade::Chain;
    /// use savechain::{Options, Save, Value};
    ///
    /// let chain = Chain::new("1.4.0", vec![])?.for_game("Hollow Keep")?;
    /// let save = chain.new_save(Value::from("hello"));
    /// assert_eq!(save.meta.extra.get("game"), Some(&Value::from("Hollow Keep")));
    /// assert!(chain.upgrader().upgrade(save, &Options::default()).is_ok());
    ///
    /// let other = Save::from_str(r#"{"meta": {"game": "Dust Rangers", "version": 1}, "data": 1}"#)?;
    /// let err = chain.upgrader().upgrade(other, &Options::default()).unwrap_err();
    /// assert!(err.to_string().starts_with(
    ///     "at meta.game: the save is of the game \"Dust Rangers\", and this chain upgrades only saves of \"Hollow Keep\""
    /// ));
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn for_game(mut self, game: &str) -> Result<Chain> {
        if game.trim().is_empty() {
            return Err(chain_error(format!(
                "a game's name cannot be empty, found {game:?}: give the name its saves carry as meta.game"
            )));
        }
        self.game = Some(game.to_string());
        // Nothing to check again: the steps are the same, only the identity changes.
        self.own_identity = identity(
            &self.writer,
            self.game.as_deref(),
            &self.steps,
            &self.modules,
        );
        self.identity = with_mods_identity(self.own_identity, &self.mods);
        Ok(self)
    }

    /// The chain of the Lua steps in `dir` ([`Step::lua_dir`]), for the game at version
    /// `writer`, with the shapes recorded in `dir/shapes` when there is such a folder
    /// ([`Shapes::in_steps_dir`], [`Chain::with_shapes`]).
    pub fn from_lua_dir(writer: &str, dir: impl AsRef<std::path::Path>) -> Result<Chain> {
        let dir = dir.as_ref();
        Chain::new(writer, Step::lua_dir(dir)?)?.with_shapes(Shapes::in_steps_dir(dir)?)
    }

    /// The chain with `steps` added (replacing none: a clash is an error), and the same
    /// game, mods and shapes.
    pub fn with(&self, steps: Vec<Step>) -> Result<Chain> {
        let all = self.steps.iter().cloned().chain(steps).collect();
        let mut chain = Chain::new(&self.writer.to_string(), all)?;
        if let Some(game) = &self.game {
            chain = chain.for_game(game)?;
        }
        chain.set_mods(self.mods.clone());
        chain.with_shapes(Shapes::clone(&self.shapes))
    }

    /// Puts `mods`, already checked and ordered, after the game's chain.
    pub(super) fn set_mods(&mut self, mods: Vec<Mod>) {
        self.identity = with_mods_identity(self.own_identity, &mods);
        self.mods = mods;
    }

    /// The mods whose chains run after the game's, in the order they run
    /// ([`Chain::with_mods`]).
    pub fn mods(&self) -> &[Mod] {
        &self.mods
    }

    /// The steps, oldest first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The game's version, recorded in every save the chain upgrades.
    pub fn writer(&self) -> &semver::Version {
        &self.writer
    }

    /// The game whose saves alone the chain upgrades ([`Chain::for_game`]); `None` when it
    /// upgrades any save.
    pub fn game(&self) -> Option<&str> {
        self.game.as_deref()
    }

    /// The version every save is upgraded to.
    pub fn latest(&self) -> u64 {
        self.steps.last().map_or(1, Step::to)
    }

    /// The oldest version the chain can upgrade.
    pub fn oldest(&self) -> u64 {
        self.steps.first().map_or(1, |s| s.from)
    }

    /// A new save of `data` at the latest version, written by this game (and naming it,
    /// for a chain [`for_game`](Chain::for_game)), recording each mod's latest version and
    /// release in `meta.mods`.
    pub fn new_save(&self, data: Value) -> Save {
        let mut save = Save::new(self.latest(), data).with_writer(self.writer.clone());
        self.stamp(&mut save.meta);
        save
    }

    /// A save of `data` at the latest version, written by this game (and naming it, for a
    /// chain [`for_game`](Chain::for_game)), keeping the rest of `meta` (its history and
    /// any other members): for storing again a save that was loaded, with `meta` from
    /// [`Loaded::meta`](crate::cache::Loaded::meta) or [`Save::meta`].
    ///
    /// Each mod of the chain new to the save is recorded in `meta.mods` at its latest
    /// version and release (the game made its data), and one at its latest version gets
    /// its release as writer; an entry at another version, or marked `held` (an upgrade
    /// held it back), is kept as it is, since nothing says its data changed. Entries of mods
    /// not in the chain are kept as they are.
    pub fn resave(&self, mut meta: Meta, data: Value) -> Save {
        meta.version = self.latest();
        meta.writer = Some(self.writer.clone());
        self.stamp(&mut meta);
        Save { meta, data }
    }

    /// Names the game (when the chain does), and records each mod's latest version.
    fn stamp(&self, meta: &mut Meta) {
        if let Some(game) = &self.game {
            meta.extra.insert("game", Value::from(game.as_str()));
        }
        if self.mods.is_empty() {
            return;
        }
        let entries = meta
            .extra
            .entry("mods")
            .or_insert_with(|| Value::Object(Map::new()));
        // Something else a game kept there is not ours to replace; upgrades refuse it.
        let Value::Object(entries) = entries else {
            return;
        };
        for m in &self.mods {
            let latest = m.chain.latest();
            let recorded = entries.get(m.name());
            // Only a mod new to the save, or one at its latest version already, is
            // recorded: never a version its data may not have (a mod held back, or left
            // waiting by an upgrade to an earlier target, keeps its entry as it is).
            let new_or_latest = match recorded {
                None => true,
                Some(entry) => {
                    !matches!(entry.get("held"), Some(Value::Object(_)))
                        && entry.get("version").and_then(Value::as_u64) == Some(latest)
                }
            };
            if !new_or_latest {
                continue;
            }
            let mut stamped = Map::new();
            // Other members a game put there stay.
            if let Some(Value::Object(old)) = recorded {
                stamped = old.clone();
            }
            stamped.insert("version", Value::from(latest));
            stamped.insert("writer", Value::String(m.release().to_string()));
            entries.insert(m.name(), Value::Object(stamped));
        }
    }

    /// The steps that take the save whose metadata is `meta` from its version to `target`
    /// (the latest when `None`), or why it cannot be done. A save already past `target`
    /// (but within the chain) needs no steps. A chain [`for_game`](Chain::for_game) refuses
    /// a save that names another game or none, before looking at its version.
    pub fn plan(&self, meta: &Meta, target: Option<u64>) -> Result<&[Step]> {
        let target = target.unwrap_or(self.latest());
        let version = meta.version;
        let by = meta
            .writer
            .as_ref()
            .map_or(String::new(), |w| format!(", written by {w}"));
        let refuse = |message: String| Err(Error::new(ErrorKind::Upgrade, message));
        if target > self.latest() || target < self.oldest() {
            return refuse(format!(
                "target version {target} is outside this chain's versions {} to {}",
                self.oldest(),
                self.latest()
            ));
        }
        self.check_game(meta)?;
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
        check_history(meta)?;
        let start = (version - self.oldest()) as usize;
        let end = (target - self.oldest()) as usize;
        Ok(&self.steps[start..end])
    }

    /// Whether the save whose metadata is `meta` is this chain's game's: always for a chain
    /// that names no game.
    fn check_game(&self, meta: &Meta) -> Result<()> {
        let Some(game) = &self.game else {
            return Ok(());
        };
        // The hint names save-upgrade's options: its built-in chain is the one a person is
        // most likely to run on another game's saves.
        let elsewhere = "with save-upgrade: --upgrades DIR --writer VERSION";
        let message = match meta.extra.get("game") {
            Some(Value::String(named)) if named == game => return Ok(()),
            Some(Value::String(named)) => format!(
                "the save is of the game {named:?}, and this chain upgrades only saves of \
                 {game:?}; it is left as it is. Upgrade it with its own game's chain ({elsewhere})"
            ),
            None => format!(
                "the save names no game, and this chain upgrades only saves of {game:?}; it is \
                 left as it is. Upgrade a save of another game with its own game's chain \
                 ({elsewhere}); to a save of {game:?}, add \"game\": {game:?} to its meta"
            ),
            Some(other) => format!(
                "expected a string naming the game, found {}; this chain upgrades only saves \
                 of {game:?}, and the save is left as it is",
                other.kind()
            ),
        };
        let at = Path::from(vec![
            Segment::Key("meta".into()),
            Segment::Key("game".into()),
        ]);
        Err(Error::new(ErrorKind::Upgrade, message).in_path(at))
    }

    /// The identity of the chain: a hash of everything that decides what it makes of a
    /// save. Caches record it and are refused when it differs. It covers the writer, the
    /// game's name, each step's version, name, description, and its Rust revision, Lua
    /// source or declared changes (their canonical text), every helper module a Lua step can `require`, the savechain Lua library, and
    /// savechain's own version (its Rust side converts values to and from Lua); and, for
    /// each mod in the order they run, its name, what it comes after and the identity of
    /// its own chain.
    pub fn fingerprint(&self) -> [u8; 16] {
        self.identity
    }

    /// The helper modules of every Lua step, merged.
    pub(super) fn modules(&self) -> &Modules {
        &self.modules
    }
}

/// The latest version `meta.history` records an upgrade of the game's data to (`in_mod`
/// `None`), or of mod `in_mod`'s data (entries naming a mod are of that mod's version,
/// section 2 of docs/FORMAT.md). An upgrade refuses a save whose version is below it, and
/// an edit refuses to set a version below it, by this one rule.
pub(crate) fn history_reached(meta: &Meta, in_mod: Option<&str>) -> Option<u64> {
    let Some(Value::Array(history)) = meta.extra.get("history") else {
        return None;
    };
    history
        .iter()
        .filter(|entry| entry.get("mod").and_then(Value::as_str) == in_mod)
        .filter(|entry| in_mod.is_some() || entry.get("mod").is_none())
        .filter_map(|entry| entry.get("to").and_then(Value::as_u64))
        .max()
}

/// Refuses a save whose history records an upgrade past its version: its `meta.version` was
/// set back by hand, and upgrading would run steps again on data that has them already
/// (emptying a table indexed twice, scaling units twice), as often with no error as with
/// one.
fn check_history(meta: &Meta) -> Result<()> {
    match history_reached(meta, None) {
        Some(reached) if reached > meta.version => Err(Error::new(
            ErrorKind::Upgrade,
            format!(
                "the save says it is version {} but its history records an upgrade to version \
                 {reached}: was its version edited by hand? Upgrading would run the steps from \
                 {} again on data that has them already, so it is left as it is; if its data \
                 is version {reached}'s, set meta.version back to {reached}",
                meta.version, meta.version
            ),
        )
        .in_path(Path::from(vec![
            Segment::Key("meta".into()),
            Segment::Key("version".into()),
        ]))),
        _ => Ok(()),
    }
}

/// Consecutive versions, none twice, starting at 1 or later. Each error is about the step
/// that breaks the order (the later of two, the first when it starts at 0), and names it.
fn check_order(steps: &[Step]) -> Result<()> {
    for pair in steps.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.from == b.from {
            return Err(step_chain_error(
                b,
                format!(
                    "two steps from version {}: {} and {}",
                    a.from, a.name, b.name
                ),
            ));
        }
        if b.from != a.to() {
            return Err(step_chain_error(
                b,
                format!(
                    "gap in the chain: {} goes to version {}, but the next step, {}, starts from \
                     version {}",
                    a.name,
                    a.to(),
                    b.name,
                    b.from
                ),
            ));
        }
    }
    match steps.first() {
        Some(first) if first.from == 0 => Err(step_chain_error(
            first,
            "versions start at 1: a step file is named after the version it upgrades from, \
             0001 for the first"
                .to_string(),
        )),
        _ => Ok(()),
    }
}

/// An error of a malformed chain about `step`: it names the step ([`Error::failed_step`])
/// and, for a Lua step, its file ([`Error::file`]), so that every caller (the CLI, the C
/// ABI) shows where to look.
fn step_chain_error(step: &Step, message: String) -> Error {
    match &step.kind {
        StepKind::Lua { chunk, .. } => chain_error(message).with_file(chunk.file()),
        StepKind::Declared {
            file: Some(file), ..
        } => chain_error(message).with_file(file),
        // No file to name: the message does.
        StepKind::Rust { .. } | StepKind::Declared { .. } => {
            chain_error(format!("{}: {message}", step.name()))
        }
    }
    .in_step(step.name(), None)
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
                Some(existing) if existing.source() != module.source() => {
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
                            chunk: module.chunk.clone(),
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
    let mut sandbox = None;
    for step in steps {
        let StepKind::Lua { chunk, .. } = &step.kind else {
            continue;
        };
        // One sandbox, reset before each step: as new for it, as for a save.
        let sandbox = match &sandbox {
            Some(sandbox) => {
                Sandbox::reset(sandbox)?;
                sandbox
            }
            None => {
                let made = Sandbox::new(Limits::default())?;
                for (name, module) in &modules.by_name {
                    made.add_chunk(name, module.chunk.clone())?;
                }
                sandbox.insert(made)
            }
        };
        load_lua(sandbox, step, &mut None).map_err(|failure| {
            let error = Error::new(ErrorKind::Upgrade, failure.text())
                .with_file(chunk.file())
                .in_step(step.name(), failure.line);
            match failure.lua {
                Some(why) => error.because(why),
                None => error,
            }
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
const IDENTITY_SCHEME: &[u8] = b"savechain chain identity 4\0";

/// The identity of a game's chain (`own`) followed by `mods`, in their order.
fn with_mods_identity(own: [u8; 16], mods: &[Mod]) -> [u8; 16] {
    if mods.is_empty() {
        return own;
    }
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut part = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(&own);
    for m in mods {
        part(m.name.as_bytes());
        part(&(m.after.len() as u64).to_le_bytes());
        for after in &m.after {
            part(after.as_bytes());
        }
        part(&m.chain.identity);
    }
    h.digest128().to_le_bytes()
}

fn identity(
    writer: &semver::Version,
    game: Option<&str>,
    steps: &[Step],
    modules: &Modules,
) -> [u8; 16] {
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
        part(source);
    }
    part(writer.to_string().as_bytes());
    // Empty for none: a game's name is never empty.
    part(game.unwrap_or_default().as_bytes());
    for step in steps {
        part(&step.from.to_le_bytes());
        part(step.kind_name().as_bytes());
        part(step.name.as_bytes());
        part(step.description.as_bytes());
        match &step.kind {
            StepKind::Rust { revision, .. } => part(revision.as_bytes()),
            StepKind::Lua { chunk, .. } => part(chunk.source()),
            // What the changes do, whatever spelling of their paths made them.
            StepKind::Declared { declaration, .. } => match declaration {
                Ok(declaration) => part(declaration.canonical().as_bytes()),
                Err(why) => part(why.as_bytes()),
            },
        }
    }
    for (name, module) in &modules.by_name {
        part(name.as_bytes());
        part(module.source());
    }
    h.digest128().to_le_bytes()
}

fn chain_error(message: String) -> Error {
    Error::new(ErrorKind::Upgrade, message)
}
