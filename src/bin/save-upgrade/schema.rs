//! `save-upgrade schema`: the JSON Schema of a version's saves, for editors.

use savechain::shape::{json_schema, Shape};

use super::chain::ChainArg;
use super::output::{self, errln};
use super::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Print the JSON Schema (draft 2020-12) of a version's saves, for an editor.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade schema > starlane.schema.json
  save-upgrade schema --version 7
  save-upgrade schema --mods mods/ --mod cartographer=2
  save-upgrade schema --upgrades mygame/upgrades/ --writer 2.3.0

The schema is made from the shape the chain records for the version (the latest recorded
unless --version says), with the part of each mod given with --mods DIR checked by the
mod's shape (its latest recorded version, or the one --mod NAME=N gives). A save of that
version, in canonical text or in the decimal view, is valid; one the game could not load
is not (docs/FORMAT.md, section 11). In VS Code, map a file pattern to it with the
json.schemas setting (see the README).
Exit status: 0 printed, 2 the version has no recorded shape, or a usage error.")]
pub struct Args {
    /// The version whose saves the schema describes (default: the latest with a recorded
    /// shape).
    #[arg(long, value_name = "N")]
    version: Option<u64>,
    /// Describe mod NAME's part at version N of its data, rather than at its latest
    /// recorded version. May be repeated.
    #[arg(long = "mod", value_name = "NAME=N")]
    mod_versions: Vec<String>,
    #[command(flatten)]
    chain: ChainArg,
}

pub fn run(args: Args) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    let shapes = chain.shapes();
    let version = match args.version.or(shapes.latest().map(|(v, _)| v)) {
        Some(version) => version,
        None => {
            errln!(
                "error: the chain records no shape: record one from saves of its latest version \
                 (save-upgrade shape record --upgrades DIR --writer VERSION SAVES)"
            );
            return EXIT_FAILED;
        }
    };
    let Some(shape) = shapes.get(version) else {
        let recorded: Vec<String> = shapes.iter().map(|(v, _)| v.to_string()).collect();
        errln!(
            "error: version {version} has no recorded shape (recorded: {})",
            if recorded.is_empty() {
                "none".to_string()
            } else {
                recorded.join(", ")
            }
        );
        return EXIT_FAILED;
    };
    let mut wanted: Vec<(String, u64)> = Vec::new();
    for given in &args.mod_versions {
        let parsed = given
            .split_once('=')
            .and_then(|(name, n)| Some((name.to_string(), n.parse::<u64>().ok()?)));
        let Some((name, n)) = parsed else {
            errln!("error: --mod {given}: write the mod's name and a version, NAME=N");
            return EXIT_USAGE;
        };
        if !chain.mods().iter().any(|m| m.name() == name) {
            errln!("error: --mod {given}: no mod {name:?} among the mods given (--mods DIR)");
            return EXIT_USAGE;
        }
        wanted.push((name, n));
    }
    let mut mods: Vec<(&str, u64, &Shape)> = Vec::new();
    for m in chain.mods() {
        let asked = wanted
            .iter()
            .find(|(name, _)| name == m.name())
            .map(|w| w.1);
        let found = match asked {
            Some(n) => m.shapes().get(n).map(|shape| (n, shape)),
            None => m.shapes().latest(),
        };
        match (found, asked) {
            (Some((n, shape)), _) => mods.push((m.name(), n, shape)),
            (None, Some(n)) => {
                errln!(
                    "error: version {n} of mod {} has no recorded shape",
                    m.name()
                );
                return EXIT_FAILED;
            }
            (None, None) => errln!(
                "note: mod {} records no shape: its part of a save is not described",
                m.name()
            ),
        }
    }
    let schema = json_schema(chain.game(), shape, version, &mods);
    let mut text = serde_json::to_string_pretty(&schema).expect("JSON values always print");
    text.push('\n');
    output::out(&text);
    EXIT_OK
}
