//! `save-upgrade`: the command-line tool over the savechain library.

mod cli;

fn main() {
    std::process::exit(cli::run());
}
