//! `save-upgrade cache`: build, verify and clear the binary caches beside saves.

use std::path::PathBuf;

use savechain::cache::{self, CacheOptions, Source};

use super::chain::ChainArg;
use super::files;
use super::report::print_error;
use super::{EXIT_FAILED, EXIT_OK};

/// Build, check or delete the binary cache beside each save (<name>.cache).
#[derive(clap::Args)]
#[command(after_help = "Examples:
  save-upgrade cache build saves/     (re)build every save's cache from its JSON
  save-upgrade cache verify saves/    exit 1 if any cache would not be used, saying why
  save-upgrade cache clear saves/     delete the caches; nothing is lost, the JSON is the truth

A cache is used only when it was made from the same JSON bytes by the same upgrade chain
and is intact; otherwise the save is loaded from its JSON and the cache rebuilt.")]
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
    let (action, paths) = match &args.action {
        Action::Build(p) => ("build", p),
        Action::Verify(p) => ("verify", p),
        Action::Clear(p) => ("clear", p),
    };
    let chain = if action == "clear" {
        None
    } else {
        match paths.chain.load() {
            Some(chain) => Some(chain),
            None => return EXIT_FAILED,
        }
    };
    let (saves, walk_errors) = files::expand(&paths.paths);
    let mut failed = walk_errors.len();
    for (path, error) in &walk_errors {
        eprintln!("error: {}: {error}", path.display());
    }
    for save in &saves {
        let outcome = match (action, &chain) {
            ("build", Some(chain)) => {
                let options = CacheOptions {
                    ignore_cache: true,
                    ..CacheOptions::default()
                };
                cache::load(save, chain, &options).map(|loaded| match loaded.source {
                    Source::Json { reason } if reason.contains("could not be written") => {
                        Err(reason)
                    }
                    _ => Ok("built".to_string()),
                })
            }
            ("verify", Some(chain)) => {
                cache::verify(save, chain).map(|r| r.map(|()| "ok".to_string()))
            }
            _ => cache::clear(save)
                .map(|had| Ok(if had { "deleted" } else { "no cache" }.to_string())),
        };
        match outcome {
            Ok(Ok(done)) => println!("{}: {done}", save.display()),
            Ok(Err(why)) => {
                failed += 1;
                println!("{}: {why}", save.display());
            }
            Err(e) => {
                failed += 1;
                print_error(&e, None);
            }
        }
    }
    if failed > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}
