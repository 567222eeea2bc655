//! `save-upgrade inspect`: what a save is and what upgrading it would do.

use std::path::PathBuf;

use savechain::cache::{self, Source};
use savechain::compress::{self, Codec};
use savechain::upgrade::{Chain, ModReport, ModStatus, Step, StepReport};
use savechain::value::Table;
use savechain::{Map, Options, Save, Value};

use super::chain::ChainArg;
use super::output::{self, errln, outln};
use super::report::print_error;
use super::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Show a save's game, version, writer and history, the versions of a Lua game's modules,
/// the steps an upgrade would run, and counts of what the document holds.
#[derive(clap::Args)]
#[command(after_help = "Examples:
  save-upgrade inspect world.json
  save-upgrade inspect --json world.json")]
pub struct Args {
    /// The save.
    #[arg(value_name = "PATH")]
    path: PathBuf,
    /// Print the facts as JSON.
    #[arg(long)]
    json: bool,
    /// Do not look at the binary cache.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    chain: ChainArg,
}

pub fn run(args: Args) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    let Some(facts) = gather(&args, &chain) else {
        return EXIT_FAILED;
    };
    if args.json {
        output::out(&savechain::text::to_string(&facts.to_value(&args, &chain)).expect("shallow"));
    } else {
        facts.print(&args, &chain);
    }
    EXIT_OK
}

/// What inspect finds out about a save.
struct Facts {
    bytes: u64,
    /// How the file is stored, and the length of its text.
    codec: Codec,
    text_bytes: u64,
    save: Save,
    /// The steps an upgrade would run, or why it cannot be upgraded.
    plan: Result<Vec<Step>, String>,
    /// Where each mod's data stands (those that cannot be upgraded held, with why), and
    /// the mods' steps an upgrade would run.
    mods: Vec<ModReport>,
    mod_steps: Vec<StepReport>,
    /// Why a load would not use the cache; `None` when it would.
    not_from_cache: Option<String>,
    stats: Stats,
}

/// Reads the save and finds out what it is, writing nothing; errors are printed.
fn gather(args: &Args, chain: &Chain) -> Option<Facts> {
    // Reading a FIFO or a device would wait forever.
    if std::fs::metadata(&args.path).is_ok_and(|m| !m.is_file()) {
        errln!(
            "error: {}: not a regular file (a FIFO, a device or a folder is never read as a save)",
            args.path.display()
        );
        return None;
    }
    let bytes = match std::fs::read(&args.path) {
        Ok(b) => b,
        Err(e) => {
            errln!("error: {}: cannot read the file: {e}", args.path.display());
            return None;
        }
    };
    let text = compress::decompress(&bytes, compress::DEFAULT_LIMIT);
    let save = match text.and_then(|text| Ok((text.len() as u64, Save::from_slice(&text)?))) {
        Ok(save) => save,
        Err(e) => {
            print_error(&e.with_file(&args.path), Some(&bytes));
            return None;
        }
    };
    let (text_bytes, save) = save;
    let plan = chain
        .plan(&save.meta, None)
        .map(<[Step]>::to_vec)
        .map_err(|e| e.to_string());
    // Where a game would get the document from: the cache, or the JSON (and why).
    let not_from_cache = if args.no_cache {
        Some("not looked at (--no-cache)".to_string())
    } else {
        match cache::verify(&args.path, chain, &Options::default()) {
            Ok(Source::Cache) => None,
            Ok(Source::Json(why)) => Some(why.to_string()),
            Err(e) => Some(e.to_string()),
        }
    };
    let mut stats = Stats::default();
    stats.count(&save.data);
    // Every mod told, those that would fail the save among them.
    let mut every_mod = Options::default();
    every_mod.keep_going = true;
    let (mods, mod_steps, plan) = match chain.plan_upgrade(&save, &every_mod) {
        Ok(whole) => {
            let steps = whole.steps().into_iter().filter(|s| s.in_mod.is_some());
            let steps = steps.collect();
            (whole.mods, steps, plan)
        }
        // What no mod's steps can get past (`meta.mods` that is no object).
        Err(e) => (Vec::new(), Vec::new(), plan.and(Err(e.to_string()))),
    };
    Some(Facts {
        bytes: bytes.len() as u64,
        codec: Codec::of(&bytes),
        text_bytes,
        save,
        plan,
        mods,
        mod_steps,
        not_from_cache,
        stats,
    })
}

impl Facts {
    /// The game the save names (`meta.game`), as it is: a string, or whatever a hand edit
    /// left there.
    fn game(&self) -> Option<&Value> {
        self.save.meta.extra.get("game")
    }

    /// The versions of a Lua game's script modules (`meta.modules`, written by the Lua
    /// library's `savechain.save`), as they are.
    fn modules(&self) -> Option<&Value> {
        self.save.meta.extra.get("modules")
    }

    fn writer(&self) -> Option<String> {
        self.save.meta.writer.as_ref().map(|w| w.to_string())
    }

    fn history(&self) -> Value {
        self.save
            .meta
            .extra
            .get("history")
            .cloned()
            .unwrap_or(Value::Array(Vec::new()))
    }

    fn to_value(&self, args: &Args, chain: &Chain) -> Value {
        let string = |s: Option<String>| s.map_or(Value::Null, Value::String);
        let steps = self.plan.as_deref().unwrap_or_default();
        let facts: Map = [
            ("path", Value::String(args.path.display().to_string())),
            ("bytes", Value::from(self.bytes)),
            ("compression", Value::from(self.codec.name())),
            ("text_bytes", Value::from(self.text_bytes)),
            ("game", self.game().cloned().unwrap_or(Value::Null)),
            ("version", Value::from(self.save.meta.version)),
            ("writer", string(self.writer())),
            ("history", self.history()),
            ("modules", self.modules().cloned().unwrap_or(Value::Null)),
            ("latest", Value::from(chain.latest())),
            ("steps", super::chain::describe_steps(steps)),
            ("refused", string(self.plan.clone().err())),
            ("mods", self.mods_value(chain)),
            ("stats", self.stats.value()),
            (
                "source",
                Value::from(if self.not_from_cache.is_some() {
                    "json"
                } else {
                    "cache"
                }),
            ),
            ("source_reason", string(self.not_from_cache.clone())),
        ]
        .into_iter()
        .collect();
        Value::Object(facts)
    }

    /// The mark an upgrade that held the mod `name` back left in the save
    /// (`meta.mods.<name>.held`).
    fn held_mark(&self, name: &str) -> Option<&Value> {
        let entries = self.save.meta.extra.get("mods")?;
        entries
            .get(name)?
            .get("held")
            .filter(|mark| mark.as_object().is_some())
    }

    /// The steps of the mod `name` an upgrade would run.
    fn steps_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a StepReport> {
        self.mod_steps
            .iter()
            .filter(move |s| s.in_mod.as_deref() == Some(name))
    }

    /// `[{"name", "version", "latest", "status", "steps", "refused"}]`; `latest` is null for
    /// a mod not installed.
    fn mods_value(&self, chain: &Chain) -> Value {
        let mods = self.mods.iter().map(|m| {
            let latest = chain.mods().iter().find(|c| c.name() == m.name);
            let steps = self.steps_of(&m.name).map(|s| {
                let step: Map = [
                    ("from", Value::from(s.from)),
                    ("to", Value::from(s.to)),
                    ("kind", Value::from(s.kind)),
                    ("name", Value::from(s.name.as_str())),
                    ("description", Value::from(s.description.as_str())),
                ]
                .into_iter()
                .collect();
                Value::Object(step)
            });
            let refused = match &m.status {
                ModStatus::Held(why) => Value::from(why.as_str()),
                _ => Value::Null,
            };
            let status = match &m.status {
                ModStatus::Upgraded => "outdated".to_string(),
                status => status.word().to_string(),
            };
            let entry: Map = [
                ("name", Value::from(m.name.as_str())),
                ("version", m.from.map_or(Value::Null, Value::from)),
                (
                    "latest",
                    latest.map_or(Value::Null, |c| Value::from(c.latest())),
                ),
                ("status", Value::String(status)),
                ("steps", Value::Array(steps.collect())),
                ("refused", refused),
                (
                    "held",
                    self.held_mark(&m.name).cloned().unwrap_or(Value::Null),
                ),
            ]
            .into_iter()
            .collect();
            Value::Object(entry)
        });
        Value::Array(mods.collect())
    }

    fn print_mods(&self, chain: &Chain) {
        for m in &self.mods {
            let version = m.from.map_or("none".to_string(), |v| v.to_string());
            let installed = chain.mods().iter().find(|c| c.name() == m.name);
            match (&m.status, installed) {
                (ModStatus::Held(why), _) => {
                    // `why` names the mod.
                    let why = why.replacen(&format!("mod {}: ", m.name), "", 1);
                    outln!("  mod {}: cannot upgrade: {why}", m.name)
                }
                (ModStatus::NotInstalled, _) => outln!(
                    "  mod {}: version {version}, {} (kept as it is)",
                    m.name,
                    ModStatus::NotInstalled.word()
                ),
                (ModStatus::NotInSave, _) => outln!(
                    "  mod {}: {} (nothing to upgrade)",
                    m.name,
                    ModStatus::NotInSave.word()
                ),
                (status, Some(installed)) => {
                    let status = match status {
                        ModStatus::Current => "up to date",
                        ModStatus::Waiting => "waits for the game's latest version",
                        _ => "",
                    };
                    let status = if status.is_empty() {
                        String::new()
                    } else {
                        format!(", {status}")
                    };
                    outln!(
                        "  mod {}: version {version} (latest {}){status}",
                        m.name,
                        installed.latest()
                    );
                }
                (_, None) => outln!("  mod {}: version {version}", m.name),
            }
            if let Some(failed) = self.held_mark(&m.name) {
                let error = failed.get("error").and_then(Value::as_str).unwrap_or("?");
                outln!("    an earlier upgrade held it back: {error}");
            }
            for s in self.steps_of(&m.name) {
                outln!(
                    "    would run {} -> {} {:<4} {}",
                    s.from,
                    s.to,
                    s.kind,
                    s.description
                );
            }
        }
    }

    fn print(&self, args: &Args, chain: &Chain) {
        outln!("{}", args.path.display());
        match self.game() {
            Some(Value::String(game)) => outln!("  game {game}"),
            Some(other) => outln!("  game {other} (not a name)"),
            None => outln!("  game not named"),
        }
        outln!(
            "  version {} (latest {}), written by {}",
            self.save.meta.version,
            chain.latest(),
            self.writer()
                .unwrap_or_else(|| "an unknown program".to_string())
        );
        if let Value::Array(history) = self.history() {
            for entry in history {
                outln!("  history: {entry}");
            }
        }
        match self.modules() {
            Some(Value::Object(modules)) => {
                for (name, version) in modules.iter() {
                    outln!("  module {name}: version {version}");
                }
            }
            Some(other) => outln!("  modules {other} (not an object of versions)"),
            None => {}
        }
        match &self.plan {
            Err(e) => outln!("  cannot upgrade: {e}"),
            Ok(steps) if steps.is_empty() && self.mod_steps.is_empty() => outln!("  up to date"),
            Ok(steps) if steps.is_empty() => outln!("  the game's data is up to date"),
            Ok(steps) => {
                for s in steps {
                    outln!(
                        "  would run {} -> {} {:<4} {}",
                        s.from(),
                        s.to(),
                        s.kind_name(),
                        s.description()
                    );
                }
            }
        }
        self.print_mods(chain);
        match &self.not_from_cache {
            Some(why) => outln!("  loads from the JSON: {why}"),
            None => outln!("  loads from its cache"),
        }
        if self.codec != Codec::Plain {
            outln!(
                "  {}-compressed: {} bytes, {} of text",
                self.codec,
                self.bytes,
                self.text_bytes
            );
        }
        let st = &self.stats;
        outln!(
            "  {}: {}, {}, {}, {}, {}, {}, {}, {} other",
            counted(st.nodes, "value"),
            counted(st.objects, "object"),
            counted(st.arrays, "array"),
            counted(st.tables, "table"),
            counted(st.integers, "integer"),
            counted(st.doubles, "double"),
            counted(st.strings, "string"),
            counted(st.bytes, "byte string"),
            st.other
        );
    }
}

/// `1 array`, `2 arrays`, `0 arrays`.
fn counted(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// Counts of the values in a document.
#[derive(Default)]
struct Stats {
    nodes: u64,
    objects: u64,
    arrays: u64,
    tables: u64,
    integers: u64,
    doubles: u64,
    strings: u64,
    bytes: u64,
    other: u64,
}

impl Stats {
    fn count(&mut self, value: &Value) {
        self.nodes += 1;
        match value {
            Value::Int(_) | Value::UInt(_) => self.integers += 1,
            Value::Double(_) => self.doubles += 1,
            Value::String(_) => self.strings += 1,
            Value::Bytes(_) => self.bytes += 1,
            Value::Array(items) => {
                self.arrays += 1;
                items.iter().for_each(|v| self.count(v));
            }
            Value::Object(map) => {
                self.objects += 1;
                map.values().for_each(|v| self.count(v));
            }
            Value::Table(table) => {
                self.tables += 1;
                match &**table {
                    Table::Keyed(entries) => entries.iter().for_each(|(k, v)| {
                        self.count(k);
                        self.count(v);
                    }),
                    Table::Shared { value, .. } | Table::Class { value, .. } => self.count(value),
                    Table::Ref(_) => {}
                }
            }
            Value::Null | Value::Bool(_) => self.other += 1,
        }
    }

    fn value(&self) -> Value {
        let m: Map = [
            ("nodes", self.nodes),
            ("objects", self.objects),
            ("arrays", self.arrays),
            ("tables", self.tables),
            ("integers", self.integers),
            ("doubles", self.doubles),
            ("strings", self.strings),
            ("bytes", self.bytes),
            ("other", self.other),
        ]
        .into_iter()
        .map(|(k, v)| (k, Value::from(v)))
        .collect();
        Value::Object(m)
    }
}
