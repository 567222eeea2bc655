//! `save-upgrade show` and `get`: a save, or one value of it, in the decimal view.

use std::io::Read;
use std::path::{Path, PathBuf};

use savechain::text::{self, Style};
use savechain::{edit, Save};

use super::output::{self, errln};
use super::report::{print_error, shell_words};
use super::{EXIT_FAILED, EXIT_OK};

/// Print a save, or the value at a path in it, with doubles in decimal (the decimal view).
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade show slot1.json
  save-upgrade show slot1.json data.ship.cargo[0].mass
  save-upgrade show slot1.json | less

Every double is written as the shortest decimal that reads back to the same bits
([\"d\", 0.965]); infinities and NaNs keep their spelling ([\"d\", \"inf\"]). The view loads
as the same save, so it may be saved and edited as it is (see `save-upgrade edit`).
Exit status: 0 printed, 2 the save did not load or nothing is at the path.")]
pub struct ShowArgs {
    /// The save (`-` reads standard input).
    file: PathBuf,
    /// A path in the save, as errors write them: `data.ship.cargo[0].mass`, `meta.version`.
    path: Option<String>,
}

/// Print the value at a path in a save (doubles in decimal), for scripts and guides.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade get slot1.json data.player.wallet.credits
  save-upgrade get slot1.json meta.version

The value is printed as save text on standard output: 100000, \"Wren\", [\"d\", 0.965].
Exit status: 0 printed, 2 the save did not load or nothing is at the path.")]
pub struct GetArgs {
    /// The save (`-` reads standard input).
    file: PathBuf,
    /// A path in the save, as errors write them: `data.ship.cargo[0].mass`, `meta.version`.
    path: String,
}

pub fn show(args: ShowArgs) -> i32 {
    print(&args.file, args.path.as_deref())
}

pub fn get(args: GetArgs) -> i32 {
    print(&args.file, Some(&args.path))
}

fn print(file: &Path, path: Option<&str>) -> i32 {
    let Some(save) = load(file) else {
        return EXIT_FAILED;
    };
    let mut out = Vec::new();
    let written = match path {
        None => save.write(&mut out, Style::Decimal),
        Some(path) => match edit::get_existing(&save, path) {
            Ok(value) => text::write_value(&mut out, &value, Style::Decimal),
            Err(e) => {
                errln!("error: {}: {}", file.display(), e.message());
                if let Some(meant) = edit::meant_path(path) {
                    errln!(
                        "(in a shell, quote the whole path: {})",
                        shell_words(&[&meant])
                    );
                }
                return EXIT_FAILED;
            }
        },
    };
    if let Err(e) = written {
        print_error(&e.with_file(file), None);
        return EXIT_FAILED;
    }
    output::out(&String::from_utf8_lossy(&out));
    EXIT_OK
}

/// The save in `file` (`-`: standard input), its errors printed.
pub fn load(file: &Path) -> Option<Save> {
    if file.as_os_str() == "-" {
        let mut bytes = Vec::new();
        if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
            errln!("error: cannot read standard input: {e}");
            return None;
        }
        return Save::from_slice(&bytes)
            .map_err(|e| print_error(&e.with_file("<stdin>"), Some(&bytes)))
            .ok();
    }
    edit::read(file)
        .map(|(_, save)| save)
        .map_err(|e| print_error(&e, None))
        .ok()
}
