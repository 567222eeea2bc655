//! Running a chain on saves in memory: each step in order, consecutive Lua steps sharing
//! one conversion to Lua and back.

use mlua::{ChunkMode, Function};

use super::chain::Chain;
use super::diff::{covered_by, diff, Changes};
use super::step::{Step, StepContext, StepKind};
use crate::error::{Error, ErrorKind, Result};
use crate::lua::{from_lua, to_lua, Limits, Sandbox};
use crate::options::Options;
use crate::save::{Meta, Save};
use crate::value::{Map, Value};

/// What one step did.
#[derive(Clone, Debug)]
pub struct StepReport {
    /// The version the step upgraded from.
    pub from: u64,
    /// The version it made.
    pub to: u64,
    /// The step's name ([`Step::name`]).
    pub name: String,
    /// `"rust"` or `"lua"`.
    pub kind: &'static str,
    /// What the step does ([`Step::description`]).
    pub description: String,
    /// Paths the step declared dropped.
    pub dropped: Vec<String>,
    /// With [`Options::diff`] or [`Options::strict`]: what the step changed.
    pub changes: Option<Changes>,
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
        }
    }
}

/// An upgraded save and how it got there.
#[derive(Debug)]
pub struct Upgraded {
    /// The save at its new version, with `meta.writer` and `meta.history` updated.
    pub save: Save,
    /// The version it had.
    pub from: u64,
    /// The version it has now (`from` when no step ran).
    pub to: u64,
    /// What each step did, in order.
    pub steps: Vec<StepReport>,
}

/// Runs a chain on saves, one after another, keeping its Lua sandbox and compiled Lua
/// steps between them.
pub struct Upgrader<'c> {
    chain: &'c Chain,
    lua: Option<LuaSteps>,
}

struct LuaSteps {
    sandbox: Sandbox,
    limits: Limits,
    /// The function each Lua step's file returned, by position in the chain.
    functions: Vec<Option<Function>>,
    take_dropped: Function,
}

/// Where the data is between steps: a tree for Rust steps, Lua values while Lua steps
/// follow one another (converted once for the whole run).
enum Data {
    Tree(Value),
    Lua(mlua::Value),
}

impl<'c> Upgrader<'c> {
    pub(super) fn new(chain: &'c Chain) -> Upgrader<'c> {
        Upgrader { chain, lua: None }
    }

    /// The chain it runs.
    pub fn chain(&self) -> &'c Chain {
        self.chain
    }

    /// Upgrades `save` to the target version. On an error the save is gone with it: callers
    /// keep their original (the file on disk, or a clone).
    pub fn upgrade(&mut self, mut save: Save, options: &Options) -> Result<Upgraded> {
        let from = save.meta.version;
        let plan = self
            .chain
            .plan(from, save.meta.writer.as_ref(), options.target)?;
        let Some(last) = plan.last() else {
            return Ok(Upgraded {
                save,
                from,
                to: from,
                steps: Vec::new(),
            });
        };
        let mut data = Data::Tree(std::mem::take(&mut save.data));
        let mut reports = Vec::with_capacity(plan.len());
        for step in plan {
            let report;
            (data, report) = self.step(step, data, &save.meta, options)?;
            reports.push(report);
        }
        save.data = self.tree_of(data)?;
        record(&mut save.meta, from, last.to(), self.chain.writer())?;
        Ok(Upgraded {
            save,
            from,
            to: last.to(),
            steps: reports,
        })
    }

    /// Runs one step, checking it in strict mode and recording what it did.
    fn step(
        &mut self,
        step: &Step,
        data: Data,
        meta: &Meta,
        options: &Options,
    ) -> Result<(Data, StepReport)> {
        let per_step = options.strict || options.diff;
        let mut ctx = StepContext::new(step, meta);
        let mut before = None;
        let data = match &step.kind {
            StepKind::Rust { run, .. } => {
                let mut tree = self.tree_of(data)?;
                before = per_step.then(|| tree.clone());
                run(&mut tree, &mut ctx).map_err(|message| step_error(step, message))?;
                Data::Tree(tree)
            }
            StepKind::Lua { .. } => {
                let value = match data {
                    Data::Lua(value) => value,
                    Data::Tree(tree) => {
                        let value = self.lua_of(&tree, step, options)?;
                        if per_step {
                            before = Some(tree);
                        }
                        value
                    }
                };
                let (value, dropped) = self.run_lua(step, value, &ctx, options)?;
                ctx.dropped = dropped;
                let value = Data::Lua(value);
                // Diffs and strict checks compare trees after every step.
                if per_step {
                    let tree = self
                        .tree_of(value)
                        .map_err(|e| step_error(step, e.to_string()))?;
                    Data::Tree(tree)
                } else {
                    value
                }
            }
        };
        let changes = match (&before, &data) {
            (Some(before), Data::Tree(after)) => Some(diff(before, after)),
            _ => None,
        };
        if options.strict {
            check_strict(step, changes.as_ref(), &ctx.dropped)?;
        }
        let report = StepReport {
            dropped: ctx.dropped,
            changes,
            ..StepReport::pending(step)
        };
        Ok((data, report))
    }

    /// The data as a tree: as it is, or converted back from Lua. The Lua copy is freed at
    /// once, so the next conversion into Lua starts from a small heap (it pauses the
    /// collector, which would otherwise be left with the whole old copy as garbage).
    fn tree_of(&mut self, data: Data) -> Result<Value> {
        let value = match data {
            Data::Tree(tree) => return Ok(tree),
            Data::Lua(value) => value,
        };
        let lua = self
            .lua
            .as_ref()
            .expect("a Lua value exists only with the sandbox");
        let tree = from_lua(lua.sandbox.lua(), &value);
        drop(value);
        let _ = lua.sandbox.lua().gc_collect();
        tree
    }

    /// The data as Lua values, in the sandbox, for a run of Lua steps starting at `step`.
    fn lua_of(&mut self, tree: &Value, step: &Step, options: &Options) -> Result<mlua::Value> {
        let lua = self.lua(options)?;
        to_lua(lua.sandbox.lua(), tree).map_err(|e| step_error(step, e.to_string()))
    }

    /// The sandbox, made on first use (and again when the limits change), with the
    /// chain's helper modules.
    fn lua(&mut self, options: &Options) -> Result<&mut LuaSteps> {
        if self
            .lua
            .as_ref()
            .is_some_and(|l| l.limits != options.limits)
        {
            self.lua = None;
        }
        if self.lua.is_none() {
            let sandbox = Sandbox::new(options.limits)?;
            for (name, module) in &self.chain.modules().by_name {
                sandbox.add_module(name, &module.file.display().to_string(), &module.source)?;
            }
            let take_dropped = sandbox.run::<Function>(
                "return require('savechain.upgrade').take_dropped",
                "savechain",
            )?;
            self.lua = Some(LuaSteps {
                sandbox,
                limits: options.limits,
                functions: vec![None; self.chain.steps().len()],
                take_dropped,
            });
        }
        Ok(self.lua.as_mut().expect("just made"))
    }

    /// Runs one Lua step on `value`; returns the new data and the paths it dropped.
    fn run_lua(
        &mut self,
        step: &Step,
        value: mlua::Value,
        ctx: &StepContext,
        options: &Options,
    ) -> Result<(mlua::Value, Vec<String>)> {
        let index = (step.from() - self.chain.oldest()) as usize;
        let lua = self.lua(options)?;
        let function = match &lua.functions[index] {
            Some(f) => f.clone(),
            None => {
                let f = compile(&lua.sandbox, step)?;
                lua.functions[index] = Some(f.clone());
                f
            }
        };
        let sandbox = &lua.sandbox;
        let context = step_context(sandbox, ctx).map_err(|e| step_error(step, e.to_string()))?;
        let _ = lua.take_dropped.call::<mlua::Value>(());
        let result = sandbox
            .guard(|_| function.call::<mlua::Value>((value.clone(), context)))
            .map_err(|e| step_error(step, e.to_string()))?;
        let dropped: Vec<String> = lua
            .take_dropped
            .call(())
            .map_err(|e| step_error(step, e.to_string()))?;
        let value = if result.is_nil() { value } else { result };
        Ok((value, dropped))
    }
}

/// Compiles a Lua step's file and returns the function it returns.
fn compile(sandbox: &Sandbox, step: &Step) -> Result<Function> {
    let StepKind::Lua {
        source, chunk_name, ..
    } = &step.kind
    else {
        unreachable!("only Lua steps are compiled")
    };
    let value = sandbox
        .guard(|lua| {
            lua.load(source.as_str())
                .set_name(format!("@{chunk_name}"))
                .set_mode(ChunkMode::Text)
                .call::<mlua::Value>(())
        })
        .map_err(|e| step_error(step, e.to_string()))?;
    match value {
        mlua::Value::Function(f) => Ok(f),
        other => Err(step_error(
            step,
            format!(
                "the file must return a function(data, ctx); it returned a {}",
                other.type_name()
            ),
        )),
    }
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
fn check_strict(step: &Step, changes: Option<&Changes>, dropped: &[String]) -> Result<()> {
    let changes = changes.expect("computed in strict mode");
    match changes
        .removed
        .iter()
        .find(|p| !dropped.iter().any(|d| covered_by(p, d)))
    {
        Some(path) => Err(step_error(
            step,
            format!(
                "strict: it removed {path} without declaring it dropped \
                 (up.drop(data, \"{path}\") in Lua, ctx.drop_path in Rust)"
            ),
        )),
        None => Ok(()),
    }
}

/// Sets the new version and writer, and appends to `meta.history`.
fn record(meta: &mut Meta, from: u64, to: u64, writer: &semver::Version) -> Result<()> {
    meta.version = to;
    meta.writer = Some(writer.clone());
    let entry: Map = [
        ("from", Value::from(from)),
        ("to", Value::from(to)),
        ("writer", Value::String(writer.to_string())),
    ]
    .into_iter()
    .collect();
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

fn step_error(step: &Step, message: String) -> Error {
    Error::new(
        ErrorKind::Upgrade,
        format!(
            "step {} ({}, version {} to {}) failed: {message}",
            step.name(),
            step.kind_name(),
            step.from(),
            step.to()
        ),
    )
}
