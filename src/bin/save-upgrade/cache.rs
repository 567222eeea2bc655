//! `save-upgrade cache`: build, verify and clear the binary caches beside saves.

use std::path::PathBuf;

use savechain::cache::{self, Source};
use savechain::{ErrorKind, Meta, Options, Save};

use savechain::batch::Plan;

use super::chain::ChainArg;
use super::output::{errln, outln};
use super::report::print_error;
use super::signals;
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// Build, check or delete the binary cache beside each save (<name>.cache).
#[derive(clap::Args)]
#[command(after_help = "Examples:
  save-upgrade cache build saves/     (re)build every save's cache from its JSON
  save-upgrade cache verify saves/    exit 1 if any cache would not be used, saying why
  save-upgrade cache clear saves/     delete the caches; nothing is lost, the JSON is the truth

A cache is used only when it was made from the same JSON bytes by the same upgrade chain
and is intact; otherwise the save is loaded from its JSON and the cache rebuilt. Only
build and clear write; verify only looks. One line a save on standard output.
Exit status: 0 all good, 1 verify found caches that would not be used, 2 a save failed or
a usage error.")]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Build the caches of these saves from their JSON.
    Build(Paths),
    /// Say whether each cache would be used, and why not.
    Verify(Paths),
    /// Delete the caches of these saves.
    Clear(Paths),
}

#[derive(clap::Args)]
struct Paths {
    /// Save files, or folders to search for *.json saves.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    chain: ChainArg,
}

pub fn run(args: Args) -> i32 {
    let paths = match &args.action {
        Action::Build(p) | Action::Verify(p) | Action::Clear(p) => p,
    };
    if !super::named_paths_exist(&paths.paths) {
        return EXIT_USAGE;
    }
    let chain = match &args.action {
        Action::Clear(_) => None,
        _ => match paths.chain.load() {
            Some(chain) => Some(chain),
            None => return EXIT_USAGE,
        },
    };
    let search = Plan::find(&paths.paths);
    let mut failed = search.errors.len();
    let mut unusable = 0;
    for error in &search.errors {
        print_error(error, None);
    }
    let options = Options::default();
    // Ctrl-C ends the loop between two saves, each cache written whole or not at all; a
    // cache being built cannot be abandoned, so a second request ends the run at once.
    signals::install_second_ends();
    let mut done = 0;
    for found in &search.saves {
        let save = &found.path;
        if signals::stop_flag().load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        done += 1;
        // Ok(Ok(what was done)), Ok(Err(why the cache is not usable)), or Err(failure).
        let outcome = match (&args.action, &chain) {
            (Action::Build(_), Some(chain)) => {
                cache::rebuild(save, chain, &options).map(|loaded| match loaded.write_error() {
                    Some(e) => Err(e.to_string()),
                    None => Ok("built"),
                })
            }
            (Action::Verify(_), Some(chain)) => {
                cache::verify(save, chain, &options).and_then(|source| match source {
                    Source::Cache => Ok(Ok("ok")),
                    // Not used: is it worth building, or is the save itself broken?
                    Source::Json(why) => Save::load(save).map(|_| Err(why.to_string())),
                })
            }
            // Only a save's cache is savechain's: what is beside another JSON file is not.
            _ => is_a_save(save)
                .and_then(|()| cache::clear(save))
                .map(|had| Ok(if had { "deleted" } else { "no cache" })),
        };
        match outcome {
            Ok(Ok(done)) => outln!("{}: {done}", save.display()),
            Ok(Err(why)) => {
                if matches!(args.action, Action::Verify(_)) {
                    unusable += 1;
                } else {
                    failed += 1;
                }
                outln!("{}: {why}", save.display());
            }
            Err(e) if found.skips(&e) => {
                errln!("skipped {}: {}", save.display(), e.message());
            }
            Err(e) => {
                failed += 1;
                print_error(&e, None);
            }
        }
        if super::output::closed() {
            break;
        }
    }
    if let Some((signal, status, _)) = signals::received() {
        errln!(
            "stopped by {signal} after {done} of {} saves; run again to do the rest",
            search.saves.len()
        );
        return status;
    }
    if failed > 0 {
        EXIT_FAILED
    } else if unusable > 0 {
        EXIT_FOUND_WORK
    } else {
        EXIT_OK
    }
}

/// Fails with [`ErrorKind::NotASave`] when the file at `path` is JSON that is not a save;
/// a save, and a file that cannot be read as JSON (a damaged save, maybe), pass.
fn is_a_save(path: &std::path::Path) -> savechain::Result<()> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    match Meta::from_slice(&bytes) {
        Err(e) if e.kind() == ErrorKind::NotASave => Err(e.with_file(path)),
        _ => Ok(()),
    }
}
