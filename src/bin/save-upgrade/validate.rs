//! `save-upgrade validate`: each save checked against the shape of its own version.

use std::path::PathBuf;

use rayon::prelude::*;
use savechain::{edit, Save};

use super::chain::ChainArg;
use super::output::{self, errln};
use super::report::print_error;
use super::shape::is_of_game;
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// Check each save against the recorded shape of its version: what the game reads.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade validate fixtures/ expected/
  save-upgrade validate --mods mods/ slot1.json
  save-upgrade validate --upgrades mygame/upgrades/ --writer 2.3.0 saves/

Each save's data is checked against the shape the chain records for its meta.version
(save-upgrade shape record), and each mod's part, data.mods.NAME, against the mod's shape
of meta.mods.NAME.version (mods given with --mods DIR; a mod not given, or with no
recorded shapes, is not checked). Each place that does not match is printed on standard
output as FILE: PATH: what the game reads there; what is there, the path as `save-upgrade
get FILE PATH` takes it. A save whose version (or a mod's) has no recorded shape cannot be
checked, and fails, as does a save of another game than the chain's.
Exit status: 0 every save matches, 1 a save does not match, 2 a save could not be checked
(it does not load, its version has no recorded shape) or a usage error.")]
pub struct Args {
    /// Print only mismatches and errors.
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    chain: ChainArg,
    /// Save files, or folders to search for *.json saves.
    #[arg(required = true, value_name = "SAVES")]
    paths: Vec<PathBuf>,
}

enum Outcome {
    Matches,
    Differs(String),
    NotASave,
    /// Printed in path order with the rest, whatever thread checked it.
    Failed(Failure),
}

enum Failure {
    Error(savechain::Error),
    Text(String),
}

pub fn run(args: Args) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    let Some(search) = super::find_named(&args.paths) else {
        return EXIT_USAGE;
    };
    let outcomes: Vec<Outcome> = search
        .saves
        .par_iter()
        .map(|found| {
            let path = &found.path;
            let save: Save = match edit::read(path) {
                Ok((_, save)) => save,
                Err(e) if found.skips(&e) => return Outcome::NotASave,
                Err(e) => return Outcome::Failed(Failure::Error(e)),
            };
            if !is_of_game(&chain, &save) {
                let named = save
                    .meta
                    .extra
                    .get("game")
                    .and_then(|g| g.as_str())
                    .map_or("no game".to_string(), |g| format!("the game {g:?}"));
                return Outcome::Failed(Failure::Text(format!(
                    "error: {}: the save names {named}, and the chain's shapes are of {:?}'s \
                     saves (give its chain with --upgrades DIR --writer VERSION)",
                    path.display(),
                    chain.game().unwrap_or_default()
                )));
            }
            match chain.check_save(&save) {
                Ok(found) if found.is_empty() => Outcome::Matches,
                Ok(found) => Outcome::Differs(
                    found
                        .iter()
                        .map(|m| format!("{}: {m}\n", path.display()))
                        .collect(),
                ),
                Err(e) => Outcome::Failed(Failure::Error(e.with_file(path))),
            }
        })
        .collect();
    let (mut matching, mut differing, mut failed) = (0, 0, search.errors.len());
    for outcome in &outcomes {
        match outcome {
            Outcome::Matches => matching += 1,
            Outcome::Differs(lines) => {
                differing += 1;
                output::out(lines);
            }
            Outcome::NotASave => {}
            Outcome::Failed(failure) => {
                failed += 1;
                match failure {
                    Failure::Error(e) => print_error(e, None),
                    Failure::Text(text) => errln!("{text}"),
                }
            }
        }
    }
    if matching + differing + failed == 0 {
        errln!("error: no saves found");
        return EXIT_FAILED;
    }
    if !args.quiet {
        let match_word = if matching == 1 { "matches" } else { "match" };
        let not_word = if differing == 1 { "does not" } else { "do not" };
        errln!("validated: {matching} {match_word}, {differing} {not_word}, {failed} failed");
    }
    if failed > 0 {
        EXIT_FAILED
    } else if differing > 0 {
        EXIT_FOUND_WORK
    } else {
        EXIT_OK
    }
}
