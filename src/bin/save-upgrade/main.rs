//! `save-upgrade`: the command-line tool over the savechain library. It parses arguments,
//! calls the library and prints; each subcommand lives in its own module, and the example
//! game whose chain it runs by default in `starlane.rs`.

// The doc comments of the argument structs are the `--help` text, plain text for a
// terminal rather than Markdown: `<name>.v<N>.bak` is what a user should read.
#![allow(rustdoc::invalid_html_tags)]

mod cache;
mod chain;
mod files;
mod fmt;
mod inspect;
mod report;
mod starlane;
mod upgrade;

use clap::{Parser, Subcommand};

/// Exit status when every file succeeded.
pub const EXIT_OK: i32 = 0;
/// Exit status when any file failed, or `--check` found work to do.
pub const EXIT_FAILED: i32 = 1;
/// Exit status of a usage error (clap uses it too).
pub const EXIT_USAGE: i32 = 2;

#[derive(Parser)]
#[command(
    name = "save-upgrade",
    version,
    about = "Upgrade, check and format savechain saves",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "\
Examples:
  save-upgrade saves/                       upgrade every *.json save under saves/ in place,
                                            keeping each original as <name>.v<N>.bak
  save-upgrade --out-dir new/ saves/        write upgraded copies under new/; saves/ stays
  save-upgrade --check fixtures/            exit 1 if any save is not at the latest version
  save-upgrade --dry-run --to 5 world.json  print the steps that would run, write nothing
  save-upgrade --diff --strict saves/       print what each step changed; refuse undeclared removals
  find /srv/saves -name '*.json' | save-upgrade --files-from - --shard 3/8 --report r.json
  save-upgrade inspect world.json           version, history, pending steps, counts
  save-upgrade chain --json                 the upgrade steps as JSON
  save-upgrade cache verify saves/          whether each save's binary cache would be used
  save-upgrade fmt --check saves/           exit 1 if any save is not canonical

A save that fails (corrupt, too new, a failing step) is reported and never written; the
others are still done. Exit status: 0 success, 1 a save failed (or --check found work),
2 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    upgrade: upgrade::Args,
}

#[derive(Subcommand)]
enum Command {
    Fmt(fmt::Args),
    Chain(chain::Args),
    Inspect(inspect::Args),
    Cache(cache::Args),
}

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    match cli.command {
        Some(Command::Fmt(args)) => fmt::run(args),
        Some(Command::Chain(args)) => chain::run(args),
        Some(Command::Inspect(args)) => inspect::run(args),
        Some(Command::Cache(args)) => cache::run(args),
        None => upgrade::run(cli.upgrade),
    }
}
