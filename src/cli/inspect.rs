//! `save-upgrade inspect`: what a save is and what upgrading it would do.

use std::path::PathBuf;

use savechain::value::Table;
use savechain::{Map, Save, Value};

use super::chain::ChainArg;
use super::report::print_error;
use super::{EXIT_FAILED, EXIT_OK};

/// Show a save's version, writer and history, the steps an upgrade would run, and counts
/// of what the document holds.
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
    /// Load from the JSON only: neither read nor write the binary cache.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    chain: ChainArg,
}

pub fn run(args: Args) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_FAILED;
    };
    let bytes = match std::fs::read(&args.path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {}: cannot read the file: {e}", args.path.display());
            return EXIT_FAILED;
        }
    };
    let save = match Save::from_slice(&bytes) {
        Ok(save) => save,
        Err(e) => {
            print_error(&e.with_file(&args.path), Some(&bytes));
            return EXIT_FAILED;
        }
    };
    let (steps, plan_error) = match chain.plan(save.meta.version, save.meta.writer.as_ref(), None) {
        Ok(plan) => (plan.to_vec(), None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    // Where a game would get the document from: the cache, or the JSON (and why).
    let (source, reason) = if args.no_cache {
        ("json", Some("--no-cache".to_string()))
    } else {
        match savechain::cache::load(
            &args.path,
            &chain,
            &savechain::cache::CacheOptions::default(),
        ) {
            Ok(loaded) => match loaded.source {
                savechain::cache::Source::Cache => ("cache", None),
                savechain::cache::Source::Json { reason } => ("json", Some(reason)),
            },
            Err(e) => ("json", Some(format!("the save cannot be upgraded: {e}"))),
        }
    };
    let mut stats = Stats::default();
    stats.count(&save.data);

    let steps_value = super::chain::describe_steps(&steps);
    let facts: Map = [
        ("path", Value::String(args.path.display().to_string())),
        ("bytes", Value::from(bytes.len() as u64)),
        ("version", Value::from(save.meta.version)),
        (
            "writer",
            save.meta
                .writer
                .as_ref()
                .map_or(Value::Null, |w| Value::String(w.to_string())),
        ),
        (
            "history",
            save.meta
                .extra
                .get("history")
                .cloned()
                .unwrap_or(Value::Array(Vec::new())),
        ),
        ("latest", Value::from(chain.latest())),
        ("steps", steps_value),
        (
            "refused",
            plan_error.clone().map_or(Value::Null, Value::String),
        ),
        ("stats", stats.value()),
        ("source", Value::from(source)),
        (
            "source_reason",
            reason.clone().map_or(Value::Null, Value::String),
        ),
    ]
    .into_iter()
    .collect();
    if args.json {
        print!(
            "{}",
            savechain::text::to_string(&Value::Object(facts)).expect("shallow")
        );
        return EXIT_OK;
    }
    println!("{}", args.path.display());
    println!(
        "  version {} (latest {}), written by {}",
        save.meta.version,
        chain.latest(),
        save.meta
            .writer
            .as_ref()
            .map_or("an unknown program".to_string(), |w| w.to_string())
    );
    if let Some(Value::Array(history)) = save.meta.extra.get("history") {
        for entry in history {
            println!("  history: {entry}");
        }
    }
    match (&plan_error, steps.is_empty()) {
        (Some(e), _) => println!("  cannot upgrade: {e}"),
        (None, true) => println!("  up to date"),
        (None, false) => {
            for s in &steps {
                println!(
                    "  would run {} -> {} {:<4} {}",
                    s.from,
                    s.to(),
                    s.kind_name(),
                    s.description
                );
            }
        }
    }
    match &reason {
        Some(why) => println!("  loads from the JSON: {why}"),
        None => println!("  loads from its cache"),
    }
    println!(
        "  {} values: {} objects, {} arrays, {} tables, {} integers, {} doubles, {} strings, {} byte strings, {} other",
        stats.nodes, stats.objects, stats.arrays, stats.tables, stats.integers, stats.doubles, stats.strings, stats.bytes, stats.other
    );
    EXIT_OK
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
