//! `save-upgrade diff`: what differs between two saves.

use std::path::PathBuf;

use savechain::edit;

use super::output::{self, errln};
use super::report::changes_text;
use super::view::load;
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK};

/// Show what differs between two saves, path by path, doubles in decimal.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade diff slot1.json.bak slot1.json
  save-upgrade diff old/world.json new/world.json

Each line, in path order, is a path as errors write them, with its values: `+ path:
value` only in the second save, `- path: value` only in the first, `~ path: first ->
second` changed; \"no differences\" goes to standard error. Key order and spelling do not
matter (0.965 and its hexfloat are the same double); doubles are
compared bit for bit, so -0.0 differs from 0.0. Long values are cut to 60 characters.
Exit status, as diff: 0 the same, 1 different, 2 a save did not load.")]
pub struct Args {
    /// The first save (`-` reads standard input, for one of the two).
    first: PathBuf,
    /// The second save (or `-`).
    second: PathBuf,
}

pub fn run(args: Args) -> i32 {
    let (Some(first), Some(second)) = (load(&args.first), load(&args.second)) else {
        return EXIT_FAILED;
    };
    let changes = edit::diff(&first, &second);
    if changes.is_empty() {
        errln!("no differences");
        return EXIT_OK;
    }
    output::out(&changes_text(&changes, ""));
    EXIT_FOUND_WORK
}
