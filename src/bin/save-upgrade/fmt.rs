//! `save-upgrade fmt`: rewrite saves in canonical form.

use std::io::{Read, Write};
use std::path::PathBuf;

use rayon::prelude::*;
use savechain::Save;

use super::report::print_error;
use super::{files, EXIT_FAILED, EXIT_OK};

/// Rewrite saves canonically in place (sorted keys, two-space indentation).
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade fmt world.json
  save-upgrade fmt --check saves/
  save-upgrade fmt - < hand-edited.json > canonical.json

A file that fails to load is left untouched and reported; the others are still done.")]
pub struct Args {
    /// Write nothing; exit 1 if any save is not canonical or does not load.
    #[arg(long)]
    check: bool,
    /// Save files, or folders to search for *.json saves; `-` reads standard input and
    /// writes standard output.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

enum Outcome {
    Unchanged,
    Changed,
    Failed,
}

pub fn run(args: Args) -> i32 {
    if args.paths.iter().any(|p| p.as_os_str() == "-") {
        if args.paths.len() > 1 {
            eprintln!("error: `-` (standard input) cannot be combined with other paths");
            return super::EXIT_USAGE;
        }
        return stdin(args.check);
    }
    let (paths, walk_errors) = files::expand(&args.paths);
    for (path, error) in &walk_errors {
        eprintln!("error: {}: {error}", path.display());
    }
    let outcomes: Vec<Outcome> = paths
        .par_iter()
        .map(|path| format_file(path, args.check))
        .collect();
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let changed = count(|o| matches!(o, Outcome::Changed));
    let unchanged = count(|o| matches!(o, Outcome::Unchanged));
    let failed = count(|o| matches!(o, Outcome::Failed)) + walk_errors.len();
    let verb = if args.check {
        "would reformat"
    } else {
        "reformatted"
    };
    eprintln!("{verb} {changed}, already canonical {unchanged}, failed {failed}");
    if failed > 0 || (args.check && changed > 0) {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

fn format_file(path: &PathBuf, check: bool) -> Outcome {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {}: cannot read the file: {e}", path.display());
            return Outcome::Failed;
        }
    };
    let canonical = match Save::from_slice(&bytes).and_then(|s| s.to_vec()) {
        Ok(c) => c,
        Err(e) => {
            print_error(&e.with_file(path), Some(&bytes));
            return Outcome::Failed;
        }
    };
    if canonical == bytes {
        return Outcome::Unchanged;
    }
    if check {
        eprintln!("not canonical: {}", path.display());
        return Outcome::Changed;
    }
    match savechain::write_atomic(path, &canonical) {
        Ok(()) => Outcome::Changed,
        Err(e) => {
            eprintln!("error: {}: cannot write the file: {e}", path.display());
            Outcome::Failed
        }
    }
}

fn stdin(check: bool) -> i32 {
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
        eprintln!("error: cannot read standard input: {e}");
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
        eprintln!("not canonical: <stdin>");
        return EXIT_FAILED;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(&canonical).and_then(|()| out.flush()) {
        eprintln!("error: cannot write standard output: {e}");
        return EXIT_FAILED;
    }
    EXIT_OK
}
