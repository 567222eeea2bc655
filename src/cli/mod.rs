//! Argument parsing and dispatch; each subcommand lives in its own module.

mod chain;
mod files;
mod fmt;
mod report;

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
    about = "Format, check and upgrade savechain saves",
    after_help = "\
Examples:
  save-upgrade fmt saves/                 rewrite every *.json save under saves/ canonically
  save-upgrade fmt --check fixtures/      exit 1 if any save is not canonical; writes nothing
  save-upgrade fmt - < in.json > out.json format standard input to standard output
  save-upgrade chain --json               print the upgrade chain as JSON

Exit status: 0 success, 1 a file failed (or --check found work), 2 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Fmt(fmt::Args),
    Chain(chain::Args),
}

pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    match cli.command {
        Command::Fmt(args) => fmt::run(args),
        Command::Chain(args) => chain::run(args),
    }
}
