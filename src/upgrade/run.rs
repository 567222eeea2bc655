//! Running a chain on saves: each step in order, in memory, consecutive Lua steps sharing
//! one conversion to Lua and back.

use mlua::{ChunkMode, Function};

use super::diff::{covered_by, diff, Changes};
use super::{Chain, Step, StepContext, StepKind};
use crate::error::{Error, ErrorKind, Result};
use crate::lua::{from_lua, to_lua, Limits, Sandbox, SandboxError};
use crate::save::{Meta, Save};
use crate::value::{Map, Value};

/// How to upgrade.
#[derive(Clone, Debug)]
pub struct Options {
    /// Stop at this version instead of the latest.
    pub target: Option<u64>,
    /// Fail a step that removes a path it did not declare dropped.
    pub strict: bool,
    /// Report, for each step, the paths it added, removed and changed (costs a copy of the
    /// data per step).
    pub diff: bool,
    /// Recorded as the save's `meta.writer`.
    pub writer: semver::Version,
    /// What each Lua step may use.
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            target: None,
            strict: false,
            diff: false,
            writer: semver::Version::parse(env!("CARGO_PKG_VERSION")).expect("a semver version"),
            // Lua steps hold the whole save, so memory is generous; 300 million
            // instructions is far more than a step over a 50 MiB save runs (a few million)
            // and stops an endless loop in a few seconds.
            limits: Limits {
                instructions: 300_000_000,
                memory: 4 << 30,
            },
        }
    }
}

/// What one step did.
#[derive(Clone, Debug)]
pub struct StepReport {
    pub from: u64,
    pub to: u64,
    pub name: String,
    pub kind: &'static str,
    pub description: String,
    /// Paths the step declared dropped.
    pub dropped: Vec<String>,
    /// With [`Options::diff`] or [`Options::strict`]: what the step changed.
    pub changes: Option<Changes>,
}

/// An upgraded save and how it got there.
#[derive(Debug)]
pub struct Upgraded {
    pub save: Save,
    pub from: u64,
    pub to: u64,
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

impl<'c> Upgrader<'c> {
    pub(super) fn new(chain: &'c Chain) -> Upgrader<'c> {
        Upgrader { chain, lua: None }
    }

    /// Upgrades `save` to the target version. On an error the save is gone with it: callers
    /// keep their original (the file on disk, or a clone).
    pub fn upgrade(&mut self, mut save: Save, options: &Options) -> Result<Upgraded> {
        let from = save.meta.version;
        let plan = self
            .chain
            .plan(from, save.meta.writer.as_ref(), options.target)?;
        if plan.is_empty() {
            return Ok(Upgraded {
                save,
                from,
                to: from,
                steps: Vec::new(),
            });
        }
        let per_step = options.strict || options.diff;
        let mut data = std::mem::take(&mut save.data);
        // The data as Lua values while Lua steps follow one another.
        let mut in_lua: Option<mlua::Value> = None;
        let mut reports = Vec::with_capacity(plan.len());
        for step in plan {
            let before = per_step.then(|| data.clone());
            let mut ctx = StepContext {
                from: step.from,
                to: step.to(),
                meta: save.meta.clone(),
                dropped: Vec::new(),
            };
            match &step.kind {
                StepKind::Rust(run) => {
                    if let Some(value) = in_lua.take() {
                        data = self.back_from_lua(value)?;
                    }
                    run(&mut data, &mut ctx).map_err(|message| step_error(step, message))?;
                }
                StepKind::Lua { .. } => {
                    let value = match in_lua.take() {
                        Some(value) => value,
                        None => {
                            let lua = self.lua(options)?;
                            to_lua(lua.sandbox.lua(), &data)
                                .map_err(|e| step_error(step, e.to_string()))?
                        }
                    };
                    let (value, dropped) = self.run_lua(step, value, &ctx, options)?;
                    ctx.dropped = dropped;
                    if per_step {
                        data = self
                            .back_from_lua(value)
                            .map_err(|e| step_error(step, e.to_string()))?;
                    } else {
                        in_lua = Some(value);
                    }
                }
            }
            let changes = before.map(|before| diff(&before, &data));
            if options.strict {
                let changes = changes.as_ref().expect("computed in strict mode");
                if let Some(path) = changes
                    .removed
                    .iter()
                    .find(|p| !ctx.dropped.iter().any(|d| covered_by(p, d)))
                {
                    return Err(step_error(
                        step,
                        format!(
                            "strict: it removed {path} without declaring it dropped \
                             (up.drop(data, \"{path}\") in Lua, ctx.drop_path in Rust)"
                        ),
                    ));
                }
            }
            reports.push(StepReport {
                from: step.from,
                to: step.to(),
                name: step.name.clone(),
                kind: step.kind_name(),
                description: step.description.clone(),
                dropped: ctx.dropped,
                changes,
            });
        }
        if let Some(value) = in_lua.take() {
            data = self.back_from_lua(value)?;
        }
        let to = plan.last().map_or(from, Step::to);
        save.data = data;
        record(&mut save.meta, from, to, &options.writer)?;
        Ok(Upgraded {
            save,
            from,
            to,
            steps: reports,
        })
    }

    /// Converts the data back from Lua, then frees the Lua copy at once: the next
    /// conversion into Lua then starts from a small heap (it pauses the collector, which
    /// would otherwise be left with the whole old copy as garbage).
    fn back_from_lua(&mut self, value: mlua::Value) -> Result<Value> {
        let lua = self
            .lua
            .as_ref()
            .expect("a Lua value exists only with the sandbox");
        let data = from_lua(lua.sandbox.lua(), &value);
        drop(value);
        let _ = lua.sandbox.lua().gc_collect();
        data
    }

    /// The sandbox, made on first use.
    fn lua(&mut self, options: &Options) -> Result<&mut LuaSteps> {
        if self
            .lua
            .as_ref()
            .is_some_and(|l| l.limits != options.limits)
        {
            self.lua = None;
        }
        if self.lua.is_none() {
            let sandbox = Sandbox::new(options.limits).map_err(sandbox_error)?;
            for step in self.chain.steps() {
                if let StepKind::Lua { dir: Some(dir), .. } = &step.kind {
                    sandbox.allow_modules_from(dir);
                }
            }
            let take_dropped = sandbox
                .run::<Function>(
                    "return require('savechain.upgrade').take_dropped",
                    "savechain",
                )
                .map_err(sandbox_error)?;
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
        let index = (step.from - self.chain.oldest()) as usize;
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

fn compile(sandbox: &Sandbox, step: &Step) -> Result<Function> {
    let StepKind::Lua { source, dir } = &step.kind else {
        unreachable!("only Lua steps are compiled")
    };
    let chunk_name = match dir {
        Some(dir) => dir.join(&step.name).display().to_string(),
        None => step.name.clone(),
    };
    sandbox
        .guard(|lua| {
            lua.load(source.as_str())
                .set_name(format!("@{chunk_name}"))
                .set_mode(ChunkMode::Text)
                .call::<mlua::Value>(())
        })
        .map_err(|e| step_error(step, e.to_string()))
        .and_then(|value| match value {
            mlua::Value::Function(f) => Ok(f),
            other => Err(step_error(
                step,
                format!(
                    "the file must return a function(data, ctx); it returned a {}",
                    other.type_name()
                ),
            )),
        })
}

/// `ctx` of a Lua step: `from`, `to` and a copy of `meta`.
fn step_context(sandbox: &Sandbox, ctx: &StepContext) -> Result<mlua::Table> {
    let lua = sandbox.lua();
    let table = lua.create_table().map_err(lua_error)?;
    table.set("from", ctx.from).map_err(lua_error)?;
    table.set("to", ctx.to).map_err(lua_error)?;
    table
        .set("meta", to_lua(lua, &ctx.meta.to_value())?)
        .map_err(lua_error)?;
    Ok(table)
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
            step.name,
            step.kind_name(),
            step.from,
            step.to()
        ),
    )
}

fn sandbox_error(e: SandboxError) -> Error {
    Error::new(ErrorKind::Lua, e.to_string())
}

fn lua_error(e: mlua::Error) -> Error {
    Error::new(ErrorKind::Lua, e.to_string())
}
