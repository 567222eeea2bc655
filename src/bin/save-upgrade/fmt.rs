//! `save-upgrade fmt`: rewrite saves in canonical form.

use std::io::Read;
use std::path::PathBuf;

use rayon::prelude::*;
use savechain::batch::{Found, Plan};
use savechain::Save;

use super::output::{self, errln};
use super::report::print_error;
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// Rewrite saves canonically in place (meta first, sorted keys, two-space indentation).
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade fmt world.json
  save-upgrade fmt --check saves/
  save-upgrade fmt - < hand-edited.json > canonical.json

A file that fails to load is left untouched and reported; the others are still done. A
file in a folder that is not a save (its \"meta\" holds no integer \"version\") is skipped
and counted, a file named that is not a save is an error, and a search that finds no saves
at all is an error.
Exit status: 0 all canonical (or rewritten), 1 --check found saves to rewrite, 2 a save
failed or a usage error.")]
pub struct Args {
    /// Write nothing; exit 1 if any save is not canonical.
    #[arg(long)]
    check: bool,
    /// Print only errors.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Save files, or folders to search for *.json saves; `-` reads standard input and
    /// writes standard output.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

enum Outcome {
    Canonical,
    Changed,
    NotASave,
    Failed,
}

pub fn run(args: Args) -> i32 {
    if args.paths.iter().any(|p| p.as_os_str() == "-") {
        if args.paths.len() > 1 {
            errln!("error: `-` (standard input) cannot be combined with other paths");
            return EXIT_USAGE;
        }
        return stdin(args.check);
    }
    if !super::named_paths_exist(&args.paths) {
        return EXIT_USAGE;
    }
    let search = Plan::find(&args.paths);
    for error in &search.errors {
        print_error(error, None);
    }
    let outcomes: Vec<Outcome> = search
        .saves
        .par_iter()
        .map(|found| format_file(found, &args))
        .collect();
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let changed = count(|o| matches!(o, Outcome::Changed));
    let canonical = count(|o| matches!(o, Outcome::Canonical));
    let not_saves = count(|o| matches!(o, Outcome::NotASave));
    // As for upgrades: JSON files none of which is a save mean a wrong path was given.
    let no_saves = not_saves > 0 && not_saves == outcomes.len();
    if no_saves {
        errln!("error: no saves found: every file was JSON that is not a save");
    }
    let failed =
        count(|o| matches!(o, Outcome::Failed)) + search.errors.len() + usize::from(no_saves);
    if !args.quiet {
        let verb = if args.check {
            "would reformat"
        } else {
            "reformatted"
        };
        let mut line = format!("{verb} {changed}, already canonical {canonical}, failed {failed}");
        if not_saves > 0 {
            line.push_str(&format!(", not saves {not_saves}"));
        }
        errln!("{line}");
    }
    if failed > 0 {
        EXIT_FAILED
    } else if args.check && changed > 0 {
        EXIT_FOUND_WORK
    } else {
        EXIT_OK
    }
}

fn format_file(found: &Found, args: &Args) -> Outcome {
    let path = &found.path;
    match savechain::format_file(path, args.check) {
        Ok(false) => Outcome::Canonical,
        Ok(true) => {
            if args.check && !args.quiet {
                errln!("not canonical: {}", path.display());
            }
            Outcome::Changed
        }
        Err(e) if found.skips(&e) => {
            if !args.quiet {
                errln!("skipped {}: {}", path.display(), e.message());
            }
            Outcome::NotASave
        }
        Err(e) => {
            print_error(&e, None);
            Outcome::Failed
        }
    }
}

fn stdin(check: bool) -> i32 {
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
        errln!("error: cannot read standard input: {e}");
        return EXIT_FAILED;
    }
    let canonical = match Save::from_slice(&bytes).and_then(|s| s.to_vec()) {
        Ok(c) => c,
        Err(e) => {
            print_error(&e.with_file("<stdin>"), Some(&bytes));
            return EXIT_FAILED;
        }
    };
    if check {
        if canonical == bytes {
            return EXIT_OK;
        }
        errln!("not canonical: <stdin>");
        return EXIT_FOUND_WORK;
    }
    output::out(&String::from_utf8_lossy(&canonical));
    EXIT_OK
}
