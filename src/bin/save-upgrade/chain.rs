//! `save-upgrade chain`: describe and check the upgrade chain.

use std::path::PathBuf;

use savechain::upgrade::{Chain, Step};
use savechain::{Map, Value};

use super::output::{self, errln, outln};
use super::report::print_error;
use super::{EXIT_OK, EXIT_USAGE};

/// List and check the upgrade steps: the versions they cover and what each does.
#[derive(clap::Args)]
#[command(after_help = "Examples:
  save-upgrade chain
  save-upgrade chain --json
  save-upgrade chain --upgrades mygame/upgrades/ --writer 2.3.0
  save-upgrade chain --mods mods/")]
pub struct Args {
    /// Print {"game": "name" or null, "latest": N, "oldest": M, "writer": "x.y.z", "steps":
    /// [...], "mods": [{"name", "release", "after", "latest", "oldest", "steps"}, ...]} as
    /// JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    chain: ChainArg,
}

/// Which chain to use.
#[derive(clap::Args, Clone)]
pub struct ChainArg {
    /// Use the steps of DIR instead of the built-in chain of the example game, which
    /// upgrades only saves whose meta.game is "Starlane Traders": Lua steps
    /// (NNNN-short-description.lua files, helper modules in subfolders) and declared steps
    /// (NNNN-short-description.json files: renames, moves, additions), and the shapes
    /// recorded in DIR/shapes/ (NNNN.json, what the game reads at each version). A chain
    /// given this way upgrades saves of any game.
    #[arg(long, value_name = "DIR", requires = "writer")]
    pub upgrades: Option<PathBuf>,
    /// The version of the game whose steps --upgrades gives, such as 2.3.0: recorded in
    /// each upgraded save as meta.writer, and part of the chain's identity that caches are
    /// checked against.
    #[arg(long, value_name = "VERSION", requires = "upgrades")]
    pub writer: Option<String>,
    /// Run the chains of the mods in DIR after the game's: each folder in DIR is a mod,
    /// holding a manifest, mod.json ({"name": "tinker", "release": "1.2.0", "after":
    /// ["other"]}), and its own NNNN-short-description.lua (or declared .json) steps of
    /// its data version (meta.mods.NAME.version), helper modules, and shapes/. Mods run in the order of their "after",
    /// then by name. A save's data of a mod not in DIR is kept as it is.
    #[arg(long, value_name = "DIR")]
    pub mods: Option<PathBuf>,
}

impl ChainArg {
    /// The options as they were given, for a command to run again.
    pub fn words(&self) -> Vec<String> {
        let mut words = Vec::new();
        if let (Some(dir), Some(writer)) = (&self.upgrades, &self.writer) {
            words.push("--upgrades".to_string());
            words.push(dir.to_string_lossy().into_owned());
            words.push("--writer".to_string());
            words.push(writer.clone());
        }
        if let Some(dir) = &self.mods {
            words.push("--mods".to_string());
            words.push(dir.to_string_lossy().into_owned());
        }
        words
    }

    /// The chain, checked; errors are printed.
    pub fn load(&self) -> Option<Chain> {
        let chain = match (&self.upgrades, &self.writer) {
            (Some(dir), Some(writer)) => {
                let chain = Chain::from_lua_dir(writer, dir);
                if chain.as_ref().is_ok_and(|c| c.steps().is_empty()) {
                    // Right for a game at its first version; more often a wrong folder.
                    errln!(
                        "note: {} holds no steps (NNNN-short-description.lua or .json files), so \
                         saves are taken to be at version 1 and nothing is upgraded",
                        dir.display()
                    );
                }
                chain
            }
            _ => crate::starlane::chain(),
        };
        let chain = match &self.mods {
            Some(dir) => chain.and_then(|chain| chain.with_mods_dir(dir)),
            None => chain,
        };
        let chain = chain.map_err(|e| print_error(&e, None)).ok()?;
        // Not an error (a mod may come after one a player does not have), but a misspelt
        // name would silently change the order.
        for m in chain.mods() {
            for after in m.comes_after() {
                if !chain.mods().iter().any(|other| other.name() == after) {
                    errln!(
                        "note: mod {} comes after {after}, which is not among the mods given",
                        m.name()
                    );
                }
            }
        }
        Some(chain)
    }
}

pub fn run(args: Args) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    if args.json {
        output::out(&savechain::text::to_string(&describe(&chain)).expect("a shallow document"));
    } else {
        let game = chain
            .game()
            .map_or(String::new(), |game| format!("{game}: "));
        outln!(
            "{game}versions {} to {}, {} step{}, writer {}",
            chain.oldest(),
            chain.latest(),
            chain.steps().len(),
            if chain.steps().len() == 1 { "" } else { "s" },
            chain.writer()
        );
        print_steps(chain.steps());
        for m in chain.mods() {
            let after = match m.comes_after() {
                [] => String::new(),
                names => format!(", after {}", names.join(", ")),
            };
            let steps = m.steps().len();
            outln!(
                "mod {}: versions {} to {}, {steps} step{}, release {}{after}",
                m.name(),
                m.oldest(),
                m.latest(),
                if steps == 1 { "" } else { "s" },
                m.release()
            );
            print_steps(m.steps());
        }
    }
    EXIT_OK
}

fn print_steps(steps: &[Step]) {
    for step in steps {
        outln!(
            "  {} -> {}  {:<4}  {}  ({})",
            step.from(),
            step.to(),
            step.kind_name(),
            step.description(),
            step.name()
        );
    }
}

/// Steps as JSON: `[{"from", "to", "kind", "name", "description"}, ...]`.
pub fn describe_steps(steps: &[Step]) -> Value {
    let steps = steps
        .iter()
        .map(|step| {
            let entry: Map = [
                ("from", Value::from(step.from())),
                ("to", Value::from(step.to())),
                ("kind", Value::from(step.kind_name())),
                ("name", Value::from(step.name())),
                ("description", Value::from(step.description())),
            ]
            .into_iter()
            .collect();
            Value::Object(entry)
        })
        .collect();
    Value::Array(steps)
}

/// The chain as JSON.
pub fn describe(chain: &Chain) -> Value {
    let steps = describe_steps(chain.steps());
    let mods = chain
        .mods()
        .iter()
        .map(|m| {
            let after = m.comes_after().iter().map(|a| Value::from(a.as_str()));
            let entry: Map = [
                ("name", Value::from(m.name())),
                ("release", Value::String(m.release().to_string())),
                ("after", Value::Array(after.collect())),
                ("latest", Value::from(m.latest())),
                ("oldest", Value::from(m.oldest())),
                ("steps", describe_steps(m.steps())),
            ]
            .into_iter()
            .collect();
            Value::Object(entry)
        })
        .collect();
    let top: Map = [
        ("game", chain.game().map_or(Value::Null, Value::from)),
        ("mods", Value::Array(mods)),
        ("latest", Value::from(chain.latest())),
        ("oldest", Value::from(chain.oldest())),
        ("steps", steps),
        ("writer", Value::String(chain.writer().to_string())),
    ]
    .into_iter()
    .collect();
    Value::Object(top)
}
