//! Running a chain on saves in memory: each step in order, consecutive Lua steps sharing
//! one conversion to Lua and back, and each save's Lua steps in a sandbox of their own.

use mlua::Function;

use super::chain::{Chain, Mod};
use super::diff::{covered_by, diff_data, in_data, Changes};
use super::plan::{hold_followers, mark, meta_path, ModReport, ModStatus, Plan};
use super::step::{load_lua, Failure, Step, StepContext, StepKind};
use crate::error::{Error, ErrorKind, LuaFailure, Result};
use crate::lua::{lend, take_back, to_lua, Limits, Sandbox};
use crate::options::Options;
use crate::path::Segment;
use crate::save::{Meta, Save};
use crate::value::{Map, Value};

/// What one step did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StepReport {
    /// The version the step upgraded from.
    pub from: u64,
    /// The version it made.
    pub to: u64,
    /// The step's name ([`Step::name`]).
    pub name: String,
    /// `"rust"`, `"lua"` or `"declared"`.
    pub kind: &'static str,
    /// What the step does ([`Step::description`]).
    pub description: String,
    /// Paths the step declared dropped, from the document's root (`data.player.legacy`).
    pub dropped: Vec<String>,
    /// With [`Options::diff`] or [`Options::strict`]: what the step changed.
    pub changes: Option<Changes>,
    /// The lines a Lua step printed, in order (its file's top level included); at most
    /// [`PRINT_LIMIT`](crate::lua::PRINT_LIMIT) bytes,
    /// then a line saying the rest was dropped. Savechain writes them nowhere: the caller
    /// shows them, with the save and [`StepReport::name`]. Empty for a Rust step.
    pub printed: Vec<String>,
    /// The mod the step is of ([`Mod::name`]); `None` for a step of the game's chain.
    pub in_mod: Option<String>,
}

impl StepReport {
    /// The report of a step that has not run: what it is, nothing it did.
    pub(super) fn pending(step: &Step) -> StepReport {
        StepReport {
            from: step.from(),
            to: step.to(),
            name: step.name().to_string(),
            kind: step.kind_name(),
            description: step.description().to_string(),
            dropped: Vec::new(),
            changes: None,
            printed: Vec::new(),
            in_mod: None,
        }
    }
}

/// An upgraded save and how it got there.
#[derive(Debug)]
#[non_exhaustive]
pub struct Upgraded {
    /// The save at its new version, with `meta.writer` and `meta.history` updated.
    pub save: Save,
    /// The game's data version it had.
    pub from: u64,
    /// The game's data version it has now (`from` when no step of the game ran).
    pub to: u64,
    /// What each step did, in order: the game's, then each mod's. The steps of a mod held
    /// back ([`ModStatus::Held`]) are not among them.
    pub steps: Vec<StepReport>,
    /// Where each mod's data stands: those of the chain in the order they ran, then those
    /// the save has and the chain does not.
    pub mods: Vec<ModReport>,
}

/// Runs a chain on saves, one after another.
///
/// Each save's Lua steps run in a sandbox that is new to them: the upgrader makes one at
/// the first Lua step and, before each later save's Lua steps, resets it
/// ([`Sandbox::reset`]): globals, the file's locals, module state, metatables, anything a
/// step keeps, are gone before the next save, so a save's upgrade depends only on the save
/// and the chain, never on which saves ran before it or how many jobs there are. What is
/// kept between saves is the Lua state itself and the steps' compiled chunks.
pub struct Upgrader<'c> {
    chain: &'c Chain,
    /// The sandbox, made at the first Lua step.
    lua: Option<LuaSteps>,
    /// Saves upgraded so far, this one included: which save used the sandbox last.
    saves: u64,
    /// What the Lua step running now has printed, kept here so that a step that fails
    /// still has it reported.
    printed: Vec<String>,
    /// The steps that ran in the last upgrade, when it failed.
    failed: Vec<StepReport>,
    /// Whether the data in flight has shared tables, when known: lending it to Lua needs
    /// to know, and finding out walks the whole save, so it is worked out once a save and
    /// kept up to date (a run of Lua steps says; a Rust step may change it).
    shared: Option<bool>,
    /// One upgrader for each of the chain's mods, made when its steps first run: each mod
    /// has a sandbox of its own, so one mod's globals and helper modules never meet
    /// another's.
    mods: Vec<Option<Upgrader<'c>>>,
}

struct LuaSteps {
    sandbox: Sandbox,
    limits: Limits,
    /// The save ([`Upgrader::saves`]) that ran Lua in it since it was made or reset.
    used_by: Option<u64>,
    /// Each Lua step's file, loaded into the state (run afresh for each save), by position
    /// in the chain.
    mains: Vec<Option<Function>>,
    /// The function each Lua step's file returned for this save, by position in the chain.
    functions: Vec<Option<Function>>,
    take_dropped: Function,
}

/// Where the data is between steps: a tree for Rust steps, Lua values while Lua steps
/// follow one another (converted once for the whole run).
enum Data {
    Tree(Value),
    Lua(mlua::Value),
}

impl Plan<'_> {
    /// The steps that will run, in order, as reports of steps that have not run yet.
    pub fn steps(&self) -> Vec<StepReport> {
        let mut steps = Vec::new();
        for run in &self.runs {
            for step in run.steps {
                let mut report = StepReport::pending(step);
                report.in_mod = run.in_mod.map(|(_, m)| m.name().to_string());
                steps.push(report);
            }
        }
        steps
    }
}

impl Chain {
    /// Something that runs this chain on saves, one after another: it keeps one Lua sandbox,
    /// reset before each save, and the steps' compiled files.
    pub fn upgrader(&self) -> Upgrader<'_> {
        Upgrader::new(self)
    }
}

impl<'c> Upgrader<'c> {
    fn new(chain: &'c Chain) -> Upgrader<'c> {
        Upgrader {
            chain,
            lua: None,
            saves: 0,
            printed: Vec::new(),
            failed: Vec::new(),
            shared: None,
            mods: Vec::new(),
        }
    }

    /// The chain it runs.
    pub fn chain(&self) -> &'c Chain {
        self.chain
    }

    /// After [`Upgrader::upgrade`] failed, the reports of the steps of that upgrade that ran,
    /// in order; if a step failed, it is the last, with what it printed (its `changes` and
    /// `dropped` left empty). Empty after an upgrade that succeeded or ran no step. A step's
    /// `print` is most wanted when it fails, and the error alone does not carry it.
    pub fn failed_steps(&self) -> &[StepReport] {
        &self.failed
    }

    /// Upgrades `save` to the target version. On an error the save is gone with it: callers
    /// keep their original (the file on disk, or a clone); [`Upgrader::failed_steps`] says
    /// what the steps that ran printed.
    pub fn upgrade(&mut self, save: Save, options: &Options) -> Result<Upgraded> {
        self.failed.clear();
        let plan = self.chain.plan_upgrade(&save, options)?;
        self.upgrade_by(save, &plan, options)
    }

    /// [`Upgrader::upgrade`] by `plan`, the chain's plan for `save` with `options`, for a
    /// caller that made it already.
    pub(super) fn upgrade_by(
        &mut self,
        save: Save,
        plan: &Plan<'c>,
        options: &Options,
    ) -> Result<Upgraded> {
        self.failed.clear();
        // With `keep_going`, a mod that fails is held back by upgrading the save again from
        // the start without it (and without the mods after it): an upgrade depends only on
        // the save and the chain, so the mods before it come out the same, and only a
        // failure costs more than one copy of the save.
        let mods_run = plan.runs.iter().any(|run| run.in_mod.is_some());
        let original = (options.keep_going && mods_run).then(|| save.clone());
        let mut held = Vec::new();
        let mut save = Some(save);
        loop {
            let mut reports = Vec::new();
            self.saves += 1;
            let attempt = save.take().or_else(|| original.clone());
            let attempt = attempt.expect("a save to upgrade: the original, or its copy");
            let result = self.upgrade_reporting(attempt, plan, options, &mut reports, &held);
            // After a failure too (the sandbox of a mod that failed was ended already).
            self.end_save();
            match result {
                Ok(Ok(upgraded)) => return Ok(upgraded),
                Ok(Err(failed)) => held.push(failed),
                Err(e) => {
                    self.failed = reports;
                    return Err(e);
                }
            }
        }
    }

    /// One attempt at [`Upgrader::upgrade`] of `save` by `plan`, with the report of each
    /// step put in `reports` as it ends (or fails), and the mods of `held` held back as they
    /// failed in an earlier attempt; `Ok(Err(..))` when, keeping going, a mod's step failed
    /// (to be held back in the next attempt).
    fn upgrade_reporting(
        &mut self,
        mut save: Save,
        plan: &Plan<'c>,
        options: &Options,
        reports: &mut Vec<StepReport>,
        held: &[ModReport],
    ) -> Result<std::result::Result<Upgraded, ModReport>> {
        let chain = self.chain;
        let (from, to) = (plan.from, plan.to);
        let mut mods = plan.mods.clone();
        for failed in held {
            if let Some(report) = mods.iter_mut().find(|r| r.name == failed.name) {
                *report = failed.clone();
            }
        }
        // A mod that failed in an earlier attempt holds back those after it, as one the
        // plan held does.
        hold_followers(&mut mods, &chain.mods);
        // In memory, for a game that stores the save again (`Chain::resave` keeps a marked
        // entry as it is), and in the file when it is written.
        mark(&mut save.meta, &mods, &chain.mods);
        if plan.runs.is_empty() {
            return Ok(Ok(Upgraded {
                save,
                from,
                to,
                steps: Vec::new(),
                mods,
            }));
        }
        let mut data = std::mem::take(&mut save.data);
        let mut shared = None;
        for run in &plan.runs {
            let Some((index, m)) = run.in_mod else {
                (data, shared) = self.run_steps(
                    run.steps,
                    (data, shared),
                    &save.meta,
                    None,
                    options,
                    reports,
                )?;
                self.end_save();
                // Mods' steps see the save as the game's chain left it, meta included.
                record(&mut save.meta, from, to, chain.writer(), None)?;
                continue;
            };
            let report = mods
                .iter_mut()
                .find(|r| r.name == m.name())
                .expect("every mod of the chain has a report");
            if matches!(report.status, ModStatus::Held(_)) {
                // It failed in an earlier attempt, or comes after one that did: marked
                // already.
                continue;
            }
            let reported = reports.len();
            let mod_from = run.steps[0].from();
            let upgrader = self.mod_upgrader(index);
            let ran = upgrader.run_steps(
                run.steps,
                (data, shared),
                &save.meta,
                Some(m),
                options,
                reports,
            );
            upgrader.end_save();
            match ran {
                Ok(upgraded) => {
                    (data, shared) = upgraded;
                    record(
                        &mut save.meta,
                        mod_from,
                        report.to.unwrap_or(mod_from),
                        m.release(),
                        Some(m),
                    )?;
                }
                Err(e) if options.keep_going => {
                    let e = e.in_mod(m.name());
                    // Its steps will take no effect, but what they printed tells why.
                    let mut failed = report.clone();
                    for step in reports.drain(reported..) {
                        let lines = step
                            .printed
                            .into_iter()
                            .map(|line| (step.name.clone(), line));
                        failed.printed.extend(lines);
                    }
                    failed.to = failed.from;
                    failed.status = ModStatus::Held(e.to_string());
                    return Ok(Err(failed));
                }
                Err(e) => return Err(e.in_mod(m.name())),
            }
        }
        save.data = data;
        Ok(Ok(Upgraded {
            save,
            from,
            to,
            steps: std::mem::take(reports),
            mods,
        }))
    }

    /// Ends this save's use of the sandbox, once its steps are done: the sandbox is reset
    /// at once (rather than before the next save's steps), so that what the steps kept in
    /// globals is not held while the next namespace's steps run, each sandbox with a whole
    /// job's memory limit; a large heap of garbage is freed at once too.
    fn end_save(&mut self) {
        let Some(lua) = &mut self.lua else { return };
        if lua.used_by != Some(self.saves) {
            return;
        }
        if lua.begin_save().is_err() {
            self.lua = None;
            return;
        }
        if lua.sandbox.lua().used_memory() > BIG_HEAP {
            let _ = lua.sandbox.lua().gc_collect();
        }
    }

    /// The upgrader of the chain's mod at `index`, made on first use.
    fn mod_upgrader(&mut self, index: usize) -> &mut Upgrader<'c> {
        let chain = self.chain;
        if self.mods.len() < chain.mods.len() {
            self.mods.resize_with(chain.mods.len(), || None);
        }
        let upgrader =
            self.mods[index].get_or_insert_with(|| Upgrader::new(&chain.mods[index].chain));
        // A save of its own for the sandbox's reset: the same count as the game's.
        upgrader.saves = self.saves;
        upgrader
    }

    /// Runs `steps` in order on `data` (the game's, or those of `in_mod`), with whether it
    /// has shared tables when known, putting each step's report in `reports`; returns the
    /// data as a tree, and whether it has shared tables when known.
    fn run_steps(
        &mut self,
        steps: &[Step],
        (data, shared): (Value, Option<bool>),
        meta: &Meta,
        in_mod: Option<&Mod>,
        options: &Options,
        reports: &mut Vec<StepReport>,
    ) -> Result<(Value, Option<bool>)> {
        self.shared = shared;
        let began = Began {
            version: steps.first().map_or(0, Step::from),
            in_mod: in_mod.is_some(),
        };
        let name = in_mod.map(|m| m.name().to_string());
        let mut data = Data::Tree(data);
        for step in steps {
            match self.step(step, data, meta, began, options) {
                Ok((next, mut report)) => {
                    data = next;
                    report.in_mod = name.clone();
                    reports.push(report);
                }
                Err(e) => {
                    reports.push(StepReport {
                        printed: std::mem::take(&mut self.printed),
                        in_mod: name,
                        ..StepReport::pending(step)
                    });
                    return Err(e);
                }
            }
        }
        let last = steps.last().expect("a run has steps");
        // Collected after the save (in `upgrade`) if worth it.
        let tree = self
            .tree_of(data, false)
            .map_err(|e| step_error(last, taken_back(e), began))?;
        Ok((tree, self.shared))
    }

    /// Runs one step, checking it in strict mode and recording what it did.
    fn step(
        &mut self,
        step: &Step,
        data: Data,
        meta: &Meta,
        began: Began,
        options: &Options,
    ) -> Result<(Data, StepReport)> {
        let per_step = options.strict || options.diff;
        self.printed.clear();
        let mut ctx = StepContext::new(step, meta);
        let mut before = None;
        let data = match &step.kind {
            StepKind::Rust { run, .. } => {
                let mut tree = self.tree_of(data, true)?;
                before = per_step.then(|| tree.clone());
                // A step that panics fails its save, not the run: its data is dropped with it.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run(&mut tree, &mut ctx)
                }))
                .unwrap_or_else(|panic| Err(format!("it panicked: {}", panic_message(&*panic))));
                // Whatever it did, it may have made tables shared, or unshared them.
                self.shared = None;
                ran.map_err(|message| step_error(step, Failure::said(message), began))?;
                Data::Tree(tree)
            }
            StepKind::Declared { declaration, .. } => {
                let declaration = declaration
                    .as_ref()
                    .expect("a malformed declaration is refused when the chain is made");
                let mut tree = self.tree_of(data, true)?;
                before = per_step.then(|| tree.clone());
                declaration
                    .apply(&mut tree, &mut ctx.dropped)
                    .map_err(|message| step_error(step, Failure::said(message), began))?;
                // Moving a shared table's references about may leave it shared once.
                self.shared = None;
                Data::Tree(tree)
            }
            StepKind::Lua { .. } => {
                let value = match data {
                    Data::Lua(value) => value,
                    Data::Tree(tree) => {
                        if per_step {
                            before = Some(tree.clone());
                        }
                        self.lua_of(tree, step, options)?
                    }
                };
                let (value, dropped) = self.run_lua(step, value, &ctx, began, options)?;
                ctx.dropped = dropped;
                let value = Data::Lua(value);
                // Diffs and strict checks compare trees after every step.
                if per_step {
                    let tree = self
                        .tree_of(value, true)
                        .map_err(|e| step_error(step, taken_back(e), began))?;
                    Data::Tree(tree)
                } else {
                    value
                }
            }
        };
        let changes = match (&before, &data) {
            (Some(before), Data::Tree(after)) => Some(diff_data(before, after)),
            _ => None,
        };
        if options.strict {
            check_strict(changes.as_ref(), &ctx.dropped)
                .map_err(|failure| step_error(step, failure, began))?;
        }
        let report = StepReport {
            dropped: ctx.dropped,
            changes,
            printed: std::mem::take(&mut self.printed),
            ..StepReport::pending(step)
        };
        Ok((data, report))
    }

    /// The data as a tree: as it is, or converted back from Lua. With `collect`, the Lua
    /// copy is freed at once, so that a later conversion into Lua starts from a small heap.
    fn tree_of(&mut self, data: Data, collect: bool) -> Result<Value> {
        let value = match data {
            Data::Tree(tree) => return Ok(tree),
            Data::Lua(value) => value,
        };
        let lua = self
            .lua
            .as_ref()
            .expect("a Lua value exists only with the sandbox");
        let taken = take_back(lua.sandbox.lua(), &value);
        drop(value);
        if collect && lua.sandbox.lua().used_memory() > BIG_HEAP {
            let _ = lua.sandbox.lua().gc_collect();
        }
        let (tree, shared) = taken?;
        self.shared = Some(shared);
        Ok(tree)
    }

    /// The data lent to the sandbox, for a run of Lua steps starting at `step`: converted a
    /// table at a time as the steps touch it, and what they do not touch never converted.
    fn lua_of(&mut self, tree: Value, step: &Step, options: &Options) -> Result<mlua::Value> {
        let shared = self.shared;
        let lua = self.lua(options)?;
        lend(lua.sandbox.lua(), tree, shared).map_err(|e| {
            step_error(
                step,
                Failure::said(in_document(e).to_string()),
                Began {
                    version: 0,
                    in_mod: false,
                },
            )
        })
    }

    /// The sandbox, as new for this save: made on first use (again when the limits
    /// change, or a reset failed), with the chain's helper modules, and reset when an
    /// earlier save ran Lua in it.
    fn lua(&mut self, options: &Options) -> Result<&mut LuaSteps> {
        if self
            .lua
            .as_ref()
            .is_some_and(|l| l.limits != options.limits)
        {
            self.lua = None;
        }
        let this_save = self.saves;
        if let Some(lua) = self.lua.as_mut() {
            let earlier = lua.used_by.is_some_and(|save| save != this_save);
            if earlier && lua.begin_save().is_err() {
                self.lua = None;
            }
        }
        if self.lua.is_none() {
            let sandbox = Sandbox::new(options.limits)?;
            for (name, module) in &self.chain.modules().by_name {
                sandbox.add_chunk(name, module.chunk.clone())?;
            }
            let steps = self.chain.steps().len();
            self.lua = Some(LuaSteps {
                take_dropped: lending(&sandbox)?,
                sandbox,
                limits: options.limits,
                used_by: None,
                mains: vec![None; steps],
                functions: vec![None; steps],
            });
        }
        let lua = self.lua.as_mut().expect("made above");
        lua.used_by = Some(this_save);
        Ok(lua)
    }

    /// Runs one Lua step on `value`; returns the new data and the paths it dropped, and
    /// leaves what it printed in `self.printed`.
    fn run_lua(
        &mut self,
        step: &Step,
        value: mlua::Value,
        ctx: &StepContext,
        began: Began,
        options: &Options,
    ) -> Result<(mlua::Value, Vec<String>)> {
        let chain = self.chain;
        let lua = self.lua(options)?;
        // Lines printed outside any step (none are, today) are not this step's.
        let _ = lua.sandbox.take_printed();
        let result = run_lua_in(lua, chain, step, value, ctx, began);
        self.printed = self
            .lua
            .as_ref()
            .expect("made above")
            .sandbox
            .take_printed();
        result
    }
}

impl LuaSteps {
    /// Resets the sandbox for a new save: its steps' files run again, as new.
    fn begin_save(&mut self) -> Result<()> {
        self.sandbox.reset()?;
        self.take_dropped = lending(&self.sandbox)?;
        self.functions.iter_mut().for_each(|f| *f = None);
        self.used_by = None;
        Ok(())
    }
}

/// Sets up lending in `sandbox`, as new or just reset; the helpers' function that takes
/// the paths a step declared dropped.
fn lending(sandbox: &Sandbox) -> Result<Function> {
    crate::lua::install_lending(sandbox.lua())?;
    let helpers = crate::lua::library::require(sandbox.lua(), "savechain.upgrade")?;
    match helpers {
        mlua::Value::Table(helpers) => Ok(helpers.raw_get::<Function>("take_dropped")?),
        _ => unreachable!("lua/savechain/upgrade.lua returns a table"),
    }
}

/// Above this many bytes of Lua heap, garbage is collected at once rather than left to the
/// collector's pace: a large save's copy in Lua, after the run of steps that used it.
const BIG_HEAP: usize = 8 << 20;

/// [`Upgrader::run_lua`] in the sandbox of `lua`, loading the step's file on first use.
fn run_lua_in(
    lua: &mut LuaSteps,
    chain: &Chain,
    step: &Step,
    value: mlua::Value,
    ctx: &StepContext,
    began: Began,
) -> Result<(mlua::Value, Vec<String>)> {
    let index = (step.from() - chain.oldest()) as usize;
    let fail = |failure| step_error(step, failure, began);
    let function = match &lua.functions[index] {
        Some(f) => f.clone(),
        None => {
            let f = load_lua(&lua.sandbox, step, &mut lua.mains[index]).map_err(fail)?;
            lua.functions[index] = Some(f.clone());
            f
        }
    };
    let sandbox = &lua.sandbox;
    let context = step_context(sandbox, ctx).map_err(|e| fail(Failure::said(e.to_string())))?;
    // A new list of dropped paths, shown from the document's root for this data.
    let _ = lua.take_dropped.call::<mlua::Value>(value.clone());
    let result = sandbox
        .guard(|_| function.call::<mlua::Value>((value.clone(), context)))
        .map_err(|e| {
            let StepKind::Lua { chunk, .. } = &step.kind else {
                unreachable!("a Lua step")
            };
            fail(Failure::of_lua(&e, chunk.file()))
        })?;
    let dropped: Vec<String> = lua
        .take_dropped
        .call(())
        .map_err(|e| fail(Failure::said(e.to_string())))?;
    let value = if result.is_nil() { value } else { result };
    Ok((value, dropped))
}

/// `ctx` of a Lua step: `from`, `to` and a copy of `meta`.
fn step_context(sandbox: &Sandbox, ctx: &StepContext) -> Result<mlua::Table> {
    let lua = sandbox.lua();
    let table = lua.create_table()?;
    table.set("from", ctx.from)?;
    table.set("to", ctx.to)?;
    table.set("meta", to_lua(lua, &ctx.meta.to_value())?)?;
    Ok(table)
}

/// In strict mode, fails a step that removed a path it did not declare dropped.
fn check_strict(changes: Option<&Changes>, dropped: &[String]) -> std::result::Result<(), Failure> {
    let changes = changes.expect("computed in strict mode");
    match changes
        .removed
        .iter()
        .map(|change| &change.path)
        .find(|p| !dropped.iter().any(|d| covered_by(p, d)))
    {
        Some(path) => {
            // The declaration takes the path from the data's root, as steps write it.
            let declared = in_data(path).unwrap_or(path);
            Err(Failure::said(format!(
                "strict: it removed {path} without declaring it dropped \
                 (up.drop(data, \"{declared}\") in Lua, ctx.drop_path(data, \"{declared}\") \
                 in Rust)"
            )))
        }
        None => Ok(()),
    }
}

/// Sets the new version and writer of the game's data, or of the data of `in_mod` (in
/// `meta.mods`, dropping a mark of an earlier failure), and appends to `meta.history`.
fn record(
    meta: &mut Meta,
    from: u64,
    to: u64,
    writer: &semver::Version,
    in_mod: Option<&Mod>,
) -> Result<()> {
    let mut entry = Map::new();
    if let Some(m) = in_mod {
        let recorded = mod_entry(meta, m)?;
        recorded.insert("version", Value::from(to));
        recorded.insert("writer", Value::String(writer.to_string()));
        recorded.remove("held");
        entry.insert("mod", Value::from(m.name()));
    } else {
        meta.version = to;
        meta.writer = Some(writer.clone());
    }
    entry.insert("from", Value::from(from));
    entry.insert("to", Value::from(to));
    entry.insert("writer", Value::String(writer.to_string()));
    match meta.extra.get_mut("history") {
        None => {
            meta.extra
                .insert("history", Value::Array(vec![Value::Object(entry)]));
        }
        Some(Value::Array(history)) => history.push(Value::Object(entry)),
        Some(other) => {
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!(
                    "meta.history is {}, not an array; the upgrade would lose it",
                    other.kind()
                ),
            ))
        }
    }
    Ok(())
}

/// The entry of `m` in `meta.mods`, an object (checked when the upgrade was planned).
fn mod_entry<'m>(meta: &'m mut Meta, m: &Mod) -> Result<&'m mut Map> {
    meta.extra
        .get_mut("mods")
        .and_then(Value::as_object_mut)
        .and_then(|entries| entries.get_mut(m.name()))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| {
            Error::new(ErrorKind::Upgrade, "expected an object")
                .in_path(meta_path(&["mods", m.name()]))
        })
}

/// Where an upgrade of a save's data (the game's or a mod's) began: the version, and whose.
#[derive(Clone, Copy)]
struct Began {
    version: u64,
    in_mod: bool,
}

/// `step 0007-log.lua, version 7 to 8, failed on line 12: why`, and, when the save's upgrade
/// began at an earlier version (`began`), which: a save edited by hand may say a version
/// its data does not have.
fn step_error(step: &Step, failure: Failure, began: Began) -> Error {
    let Began { version, in_mod } = began;
    let whose = match in_mod {
        false => "the save's upgrade began at version {}, its meta.version",
        true => "the upgrade of the mod's data began at version {}, its version in meta.mods",
    };
    let began = if version != 0 && version < step.from() {
        format!(" ({})", whose.replace("{}", &version.to_string()))
    } else {
        String::new()
    };
    let error = Error::new(
        ErrorKind::Upgrade,
        format!(
            "step {}, version {} to {}, failed{}{began}",
            step.name(),
            step.from(),
            step.to(),
            failure.after_failed()
        ),
    )
    .in_step(step.name(), failure.line);
    match failure.lua {
        Some(why) => error.because(why),
        None => error,
    }
}

/// Why data could not be taken back out of Lua: a value a save cannot hold, most often.
fn taken_back(error: Error) -> Failure {
    let unsaveable = matches!(error.kind(), ErrorKind::Value | ErrorKind::Lua);
    Failure {
        lua: unsaveable.then_some(LuaFailure::Unsaveable),
        ..Failure::said(in_document(error).to_string())
    }
}

/// `error`, about a place in a step's data, with its path from the document's root
/// (`data.ship.cargo[1].f`), as `get` takes it.
fn in_document(error: Error) -> Error {
    if error.path().is_root() {
        return error;
    }
    let mut path = error.path().clone();
    path.push_front(Segment::Key("data".to_string()));
    error.in_path(path)
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}
