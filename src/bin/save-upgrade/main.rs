//! `save-upgrade`: the command-line tool over the savechain library. It parses arguments,
//! calls the library and prints; each subcommand lives in its own module, and the example
//! game whose chain it runs by default in `starlane.rs`.

// The doc comments of the argument structs are the `--help` text, plain text for a
// terminal rather than Markdown: `<name>.v<N>.bak` is what a user should read.
#![allow(rustdoc::invalid_html_tags)]

mod backups;
mod cache;
mod chain;
mod compression;
mod diff;
mod edit;
mod fixtures;
mod fmt;
mod generate;
mod inspect;
mod list;
mod manual;
mod output;
mod report;
mod schema;
mod set;
mod shape;
mod signals;
mod starlane;
mod upgrade;
mod validate;
mod view;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use output::errln;

// Exit statuses as `diff` and `grep` have them, for scripts.
/// Everything succeeded, and a check found nothing to do.
pub const EXIT_OK: i32 = 0;
/// A check (`--check`, `fmt --check`, `cache verify`) found work, and nothing failed.
pub const EXIT_FOUND_WORK: i32 = 1;
/// A save failed.
pub const EXIT_FAILED: i32 = 2;
/// A usage error: bad arguments, a chain that does not load, an output folder that
/// overlaps a source (clap uses 2 too).
pub const EXIT_USAGE: i32 = 2;

#[derive(Parser)]
#[command(
    name = "save-upgrade",
    about = "Upgrade, check and format savechain saves",
    long_about = "\
Upgrade, check and format savechain saves.

Without a command, save-upgrade upgrades each save named, and each save in the folders
named, to the latest version of the chain: the built-in chain of the example game, or the
steps of --upgrades DIR, and the mods' of --mods DIR. Each command does one other thing,
with options of its own (save-upgrade COMMAND --help).",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "\
Examples:
  save-upgrade saves/                       upgrade every *.json save under saves/ in place,
                                            keeping each original as <name>.v<N>.bak
  save-upgrade --out-dir new/ saves/        write upgraded copies under new/; saves/ stays
  save-upgrade --check fixtures/            exit 1 if any save is not at the latest version
  save-upgrade --dry-run --to 5 world.json  print the steps that would run, write nothing
  save-upgrade --diff --strict saves/       upgrade in place, printing what each step
                                            changed; refuse undeclared removals
  find /srv/saves -name '*.json' | save-upgrade --files-from - --shard 3/8 --report r.json
                                            upgrade in place the 3rd of 8 shards of a list,
                                            with a JSON report of each save
  save-upgrade inspect world.json           version, history, pending steps, counts
  save-upgrade list saves/                  each save's game, version, writer, mods, time,
                                            compression and status, read from its head
  save-upgrade chain --json                 the upgrade steps as JSON
  save-upgrade cache verify saves/          whether each save's binary cache would be used
  save-upgrade fmt --check saves/           exit 1 if any save is not canonical, listing them
  save-upgrade show world.json              the save with doubles in decimal
  save-upgrade edit world.json              edit it in $EDITOR, then write it back
                                            checked, keeping the original as a backup
  save-upgrade set world.json data.player.wallet.credits 100000
                                            write one value, keeping a backup
  save-upgrade diff world.json.bak world.json
                                            what differs, path by path (exit 1 if any)
  save-upgrade backups list world.json      its backups: when, version, what made each
                                            (writes nothing); backups restore and backups
                                            prune --keep N write
  save-upgrade test fixtures/               check each fixture upgrades to its expected
                                            form in expected/ (exit 1 if one differs)
  save-upgrade validate saves/              check each save against the recorded shape of
                                            its version: what the game reads (exit 1 if
                                            one does not match)
  save-upgrade shape infer --map systems fixtures/v9/
                                            the shape of saves of one version, inferred;
                                            shape record writes it beside the steps
  save-upgrade schema > save.schema.json    the JSON Schema of the latest version's saves,
                                            for an editor
  save-upgrade --mods mods/ --keep-going saves/
                                            upgrade the game's data, then each mod's in
                                            mods/ (each folder a mod with its mod.json);
                                            a failing mod is held back, the rest written
  save-upgrade test --mods mods/ mods/cartographer/fixtures/
                                            check a mod's fixtures upgrade (the game's
                                            chain, then the mod's) to their expected forms
  save-upgrade --check --report - --quiet saves/ | jq -r '.[] | select(.status == \"outdated\") | .path'
                                            list the saves not at the latest version, with
                                            jq; writes nothing (without --check, it would
                                            upgrade them all in place)

Folders are searched for *.json, *.json.zst and *.json.gz files in any case, following
links (a save compressed with zstd or gzip is read by what it holds, whatever its name, and
upgraded in its own compression unless --compress); a file that is not a save (its
\"meta\" holds no integer \"version\") is skipped (named itself, it fails), and so is
anything that is not a regular file (a FIFO). A save that fails (corrupt, too new, a
failing step, read-only) is reported and never written; the others are still done. An
output of --out-dir that holds something else than the run writes is never replaced
without --replace-outputs. Output comes in path order whatever --jobs; a step's print()
goes to standard error, named by save and step.

Each save is locked from its reading to its replacing (a game saving through savechain
waits), and one that another program wrote meanwhile is left as it is and fails, saying
to run again. Ctrl-C or SIGTERM stops the run cleanly: no save is started after it, those
under way are finished, and the summary and report are written (exit 130 or 143). The
same signal again within a second is the same request (timeout and job schedulers send
SIGTERM to the process, then to its group); a second request (Ctrl-C a second later,
SIGINT after SIGTERM) stops at once: the saves under way are abandoned as they were, with
no temporary file left, and the summary and report still come; a third ends the run as
the default would, and the next run removes what that left.

Exit status, as diff and grep: 0 all good; 1 --check, fmt --check, list or cache verify
found work, validate found a save the game does not read, or --keep-going held a mod back, and
nothing failed; 2 a save failed, or a usage error; 130 or 143 stopped by SIGINT or
SIGTERM."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    upgrade: upgrade::Args,
    /// Print a shell's completion script or the man page, then exit.
    #[arg(
        long,
        value_name = "KIND",
        exclusive = true,
        hide_short_help = true,
        long_help = "\
Print KIND on standard output, made from the definitions this help is printed from, then
exit: the completion script of bash, zsh or fish, or the man page, save-upgrade(1), every
command in one page. install.sh puts them in place; by hand, for zsh, with ~/.zfunc in
fpath before compinit in ~/.zshrc:
  save-upgrade --generate complete-zsh > ~/.zfunc/_save-upgrade"
    )]
    generate: Option<generate::Kind>,
}

/// The line of `--version` (set by [`command`]): the program's version, the library's, and
/// the revision of the format it reads and writes (`docs/FORMAT.md`). The program is built
/// from the library's crate, so the two versions are one today; both are named so that a
/// report says which library a build carries, whatever the packaging becomes.
fn version() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| {
        format!(
            "{} (savechain {}, format revision {})",
            env!("CARGO_PKG_VERSION"),
            savechain::VERSION,
            savechain::FORMAT_REVISION
        )
    })
}

/// The command line as `--help`, `--version`, the completions and the man page show it.
fn command() -> clap::Command {
    Cli::command().version(version())
}

#[derive(Subcommand)]
enum Command {
    Fmt(fmt::Args),
    Chain(chain::Args),
    Inspect(inspect::Args),
    List(list::Args),
    Cache(cache::Args),
    Show(view::ShowArgs),
    Get(view::GetArgs),
    Set(set::Args),
    Edit(edit::Args),
    Diff(diff::Args),
    Test(fixtures::Args),
    Backups(backups::Args),
    Shape(shape::Args),
    Schema(schema::Args),
    Validate(validate::Args),
}

// Loads build trees of many small allocations, and batches allocate on every core at once:
// mimalloc is faster at both than the system allocator (docs/PERFORMANCE.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3 alike), which the
/// `libmimalloc-sys` bindings do not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// By default mimalloc gives memory that was freed back to the system a second later (v3;
/// 10 ms in v2): an upgrade drops the loaded tree while it makes the new text, and the two then
/// counted together in the peak (3.4x a 73 MB save's size with a heavy chain, 2.8x given
/// back at once, in the same time; docs/PERFORMANCE.md). A `MIMALLOC_PURGE_DELAY` that the
/// user set is left to decide.
fn give_freed_memory_back_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options, which it allows at any time from any
        // thread.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

fn main() {
    give_freed_memory_back_at_once();
    let code = run();
    // Output cut short by a failing write (a full disk behind `> file`) is no success; a
    // reader that went away (`| head`) is.
    if output::failed() && matches!(code, EXIT_OK | EXIT_FOUND_WORK) {
        // Straight to standard error: `errln!` says nothing once an output has failed.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "error: cannot write all of the output: it is cut short"
        );
        std::process::exit(EXIT_FAILED);
    }
    std::process::exit(code);
}

fn run() -> i32 {
    let parsed = command()
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to standard output (which may be a closed pipe: `| head`),
            // usage errors to standard error.
            let text = e.render().to_string();
            if e.use_stderr() {
                output::err(&text);
                return EXIT_USAGE;
            }
            output::out(&text);
            return EXIT_OK;
        }
    };
    if let Some(kind) = cli.generate {
        return generate::run(kind, command());
    }
    match cli.command {
        Some(Command::Fmt(args)) => fmt::run(args),
        Some(Command::Chain(args)) => chain::run(args),
        Some(Command::Inspect(args)) => inspect::run(args),
        Some(Command::List(args)) => list::run(args),
        Some(Command::Cache(args)) => cache::run(args),
        Some(Command::Show(args)) => view::show(args),
        Some(Command::Get(args)) => view::get(args),
        Some(Command::Set(args)) => set::run(args),
        Some(Command::Edit(args)) => edit::run(args),
        Some(Command::Diff(args)) => diff::run(args),
        Some(Command::Test(args)) => fixtures::run(args),
        Some(Command::Backups(args)) => backups::run(args),
        Some(Command::Shape(args)) => shape::run(args),
        Some(Command::Schema(args)) => schema::run(args),
        Some(Command::Validate(args)) => validate::run(args),
        None => match misplaced_subcommand(&cli.upgrade.paths) {
            Some(name) => {
                errln!(
                    "error: `{name}` is a subcommand, but options came before it and made it a \
                     path to upgrade; nothing was written. Put the options after it: \
                     save-upgrade {name} [OPTIONS] ..."
                );
                EXIT_USAGE
            }
            None if mistyped_command(&cli.upgrade.paths)
                || !named_paths_exist(&cli.upgrade.paths) =>
            {
                EXIT_USAGE
            }
            None => upgrade::run(cli.upgrade),
        },
    }
}

/// A first word that is neither a command nor a file or folder (`save-upgrade shwo a.json`):
/// a mistyped command, which must not upgrade the files after it. Says so, naming the
/// nearest command; whether it was one.
fn mistyped_command(paths: &[std::path::PathBuf]) -> bool {
    let Some(word) = paths.first().and_then(|p| p.to_str()) else {
        return false;
    };
    // Only the first argument, and only a bare word: `saves/a.json` missing is a path.
    let first_argument = std::env::args_os().nth(1).is_some_and(|a| a == word);
    let bare = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !first_argument || !bare || std::fs::symlink_metadata(word).is_ok() {
        return false;
    }
    if ["upgrade", "up", "run"].contains(&word) {
        let rest: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|a| shell_quoted(&a.to_string_lossy()))
            .collect();
        errln!(
            "error: `{word}` is not a command; nothing was read or written. Upgrading is \
             what save-upgrade does without a command: give the paths alone: save-upgrade {}",
            rest.join(" ")
        );
        return true;
    }
    let cli = Cli::command();
    let nearest = cli
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|name| *name != "help")
        .max_by(|a, b| {
            let score = |name: &str| strsim::jaro_winkler(word, name);
            score(a).total_cmp(&score(b))
        })
        .unwrap_or("show");
    errln!(
        "error: `{word}` is neither a command nor a file or folder here; nothing was read or \
         written. The nearest command is `{nearest}`: save-upgrade {nearest} ... (the \
         commands: save-upgrade --help)"
    );
    true
}

/// `arg` as it can be pasted into a shell: as it is when it holds only characters no shell
/// reads specially, in single quotes otherwise.
pub(crate) fn shell_quoted(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The saves `paths` names: files, and folders searched for saves, each error of the
/// search printed (the plan keeps them, for the count). None, a usage error, when a named
/// path does not exist ([`named_paths_exist`] says which).
pub(crate) fn find_named(paths: &[std::path::PathBuf]) -> Option<savechain::batch::Plan> {
    if !named_paths_exist(paths) {
        return None;
    }
    let plan = savechain::batch::Plan::find(paths);
    for error in &plan.errors {
        report::print_error(error, None);
    }
    Some(plan)
}

/// Whether every path named on the command line exists, saying which do not: a typo must
/// not leave a batch half done. Checked before any save is touched, by every command that
/// takes paths (`-`, standard input, is not a path). The paths of a `--files-from` list
/// are not: a save removed since the list was made is a failed entry of the report.
pub(crate) fn named_paths_exist(paths: &[std::path::PathBuf]) -> bool {
    let mut all = true;
    for path in paths.iter().filter(|p| p.as_os_str() != "-") {
        let why = match std::fs::metadata(path) {
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if std::fs::symlink_metadata(path).is_ok() {
                    "a link to nothing".to_string()
                } else {
                    "no such file or folder".to_string()
                }
            }
            Err(e) => {
                // There, but not reachable (a folder without permission): the run says why.
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    continue;
                }
                e.to_string()
            }
        };
        errln!("error: {}: {why}", path.display());
        all = false;
    }
    if !all {
        errln!("nothing was read or written: every path named must exist");
    }
    all
}

/// A path that names a subcommand and no file: `save-upgrade --upgrades s inspect a.json`
/// would otherwise upgrade `a.json` in place when its user asked to look at it.
fn misplaced_subcommand(paths: &[std::path::PathBuf]) -> Option<String> {
    let cli = Cli::command();
    let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
    paths
        .iter()
        .filter_map(|p| p.to_str())
        .find(|p| names.contains(p) && std::fs::symlink_metadata(p).is_err())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_given_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads one of mimalloc's options.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        // The default: 1000 ms in mimalloc v3, 10 ms in v2 (none of the options beside it
        // has either).
        assert!(matches!(get(), 10 | 1000), "{}", get());
        give_freed_memory_back_at_once();
        assert_eq!(get(), 0);
    }
}
