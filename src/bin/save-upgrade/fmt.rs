//! `save-upgrade fmt`: rewrite saves in canonical form.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use rayon::prelude::*;
use savechain::batch::Found;
use savechain::compress;
use savechain::{Formatted, Options, Save};

use super::compression;
use super::output::{self, errln, outln};
use super::report::{print_error, shell_words};
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// Rewrite saves canonically in place (meta first, sorted keys, two-space indentation), or
/// convert them to and from compressed storage (--compress), keeping each original as
/// <name>.bak.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade fmt world.json
  save-upgrade fmt --check saves/
  save-upgrade fmt - < hand-edited.json > canonical.json
  save-upgrade fmt --compress zstd saves/        store every save of saves/ as zstd
  save-upgrade fmt --compress none saves/        and back to plain text
  save-upgrade fmt - < world.json.zst > world.json

Each save rewritten is kept first as it was, beside it, as edit and set keep theirs:
<name>.bak, or <name>.<k>.bak when that name holds something else (no backup is ever
overwritten; see `save-upgrade backups list`). A backup that cannot be written is an
error for that save, left as it is. A save already canonical, or --check, writes nothing.

A compressed save (zstd or gzip, known by its first bytes whatever its name) is canonical
when its text is, and is rewritten in its own compression, its backup compressed as it
was. With --compress, each save is stored in that compression, its canonical text inside,
and kept first as a backup too; the files keep their names (a game opens its saves by name
and reads either). A save already canonical in the compression asked is left as it is,
whatever --level says (the level a file was written at is not recorded in it). `-` reads
plain or compressed text and writes plain text, or --compress's; it keeps no backup, since
it replaces no file.

A file that fails to load is left untouched and reported; the others are still done. A
file in a folder that is not a save (its \"meta\" holds no integer \"version\") is skipped
and counted, a file named that is not a save is an error, and a search that finds no saves
at all is an error.
Exit status: 0 all canonical (or rewritten), 1 --check found saves to rewrite, 2 a save
failed or a usage error.")]
pub struct Args {
    /// Write nothing; exit 1 if any save is not canonical (or, with --compress, not stored
    /// in that compression), printing those saves on standard output, one a line, in path
    /// order.
    #[arg(long)]
    check: bool,
    /// Print only errors.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Save files, or folders to search for *.json, *.json.zst and *.json.gz saves; `-`
    /// reads standard input and writes standard output.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    compression: compression::Args,
    /// Refuse a compressed save whose text is longer than BYTES (a decompression bomb);
    /// default 1 GiB.
    #[arg(long, value_name = "BYTES")]
    max_text: Option<u64>,
}

enum Outcome {
    Canonical,
    Changed,
    Recompressed,
    NotASave,
    Failed,
}

/// What one save's formatting has to say, printed once every save before it has said its
/// own ([`format_in_order`]).
enum Said {
    /// Human text, on standard error.
    Note(String),
    /// A save that `--check` found work for, on standard output (as `grep -l` and the
    /// upgrade's `--check`: one path a line, for scripts).
    Work(String),
    Error(savechain::Error),
}

pub fn run(args: Args) -> i32 {
    let mut options = Options::default();
    match args.compression.compression() {
        Ok(compression) => options.compression = compression,
        Err(e) => {
            errln!("error: {}", e.message());
            return EXIT_USAGE;
        }
    }
    if let Some(max_text) = args.max_text {
        options.max_text = max_text;
    }
    if args.paths.iter().any(|p| p.as_os_str() == "-") {
        if args.paths.len() > 1 {
            errln!("error: `-` (standard input) cannot be combined with other paths");
            return EXIT_USAGE;
        }
        return stdin(args.check, &options);
    }
    let Some(search) = super::find_named(&args.paths) else {
        return EXIT_USAGE;
    };
    let outcomes = format_in_order(&search.saves, &args, &options);
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let changed = count(|o| matches!(o, Outcome::Changed));
    let recompressed = count(|o| matches!(o, Outcome::Recompressed));
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
        if recompressed > 0 {
            let verb = if args.check {
                "would recompress"
            } else {
                "recompressed"
            };
            line = format!("{verb} {recompressed}, {line}");
        }
        if not_saves > 0 {
            line.push_str(&format!(", not saves {not_saves}"));
        }
        // Every save written was kept first; one named was told where, one found in a
        // folder is told here (the count is the one before).
        let kept_unnamed = search.saves.iter().zip(&outcomes).any(|(found, outcome)| {
            !found.named && matches!(outcome, Outcome::Changed | Outcome::Recompressed)
        });
        if kept_unnamed && !args.check {
            let paths: Vec<_> = args.paths.iter().map(|p| p.to_string_lossy()).collect();
            let mut list = vec!["save-upgrade", "backups", "list"];
            list.extend(paths.iter().map(|p| p.as_ref()));
            line.push_str(&format!(
                "; each original is kept beside its save as a backup: {}",
                shell_words(&list)
            ));
        }
        errln!("{line}");
    }
    if failed > 0 {
        EXIT_FAILED
    } else if args.check && changed + recompressed > 0 {
        EXIT_FOUND_WORK
    } else {
        EXIT_OK
    }
}

/// Formats `saves` on rayon's threads and prints what each has to say as soon as every
/// save before it has said its own: path order, whatever order the threads finish in, and
/// a long run shows its progress as it goes. The outcomes, in the order of `saves`.
fn format_in_order(saves: &[Found], args: &Args, options: &Options) -> Vec<Outcome> {
    let mut outcomes = Vec::with_capacity(saves.len());
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            saves
                .par_iter()
                .enumerate()
                .for_each_with(sender, |sender, (i, found)| {
                    // The receiver lives until every save is sent.
                    drop(sender.send((i, format_file(found, args, options))));
                });
        });
        let mut waiting = BTreeMap::new();
        for (i, done) in receiver {
            waiting.insert(i, done);
            while let Some((outcome, said)) = waiting.remove(&outcomes.len()) {
                for said in said {
                    match said {
                        Said::Note(line) => errln!("{line}"),
                        Said::Work(path) => outln!("{path}"),
                        Said::Error(e) => print_error(&e, None),
                    }
                }
                outcomes.push(outcome);
            }
        }
    });
    outcomes
}

fn format_file(found: &Found, args: &Args, options: &Options) -> (Outcome, Vec<Said>) {
    let path = &found.path;
    let mut said = Vec::new();
    let report = savechain::format_file_kept(path, args.check, options);
    if let (Ok(report), true) = (&report, found.named && !args.quiet) {
        // As `edit` and `set` say it: a file named is told where its original is.
        if let Some(backup) = &report.backup {
            let done = match report.formatted {
                Formatted::Recompressed => "recompressed",
                _ => "reformatted",
            };
            said.push(Said::Note(format!(
                "{}: {done}; the original is kept as {}",
                path.display(),
                backup.display()
            )));
        }
    }
    let outcome = match report.map(|r| r.formatted) {
        Ok(Formatted::Canonical) => Outcome::Canonical,
        Ok(Formatted::Recompressed) => Outcome::Recompressed,
        Ok(_) => Outcome::Changed,
        Err(e) if found.skips(&e) => {
            if !args.quiet {
                said.push(Said::Note(format!(
                    "skipped {}: {}",
                    path.display(),
                    e.message()
                )));
            }
            Outcome::NotASave
        }
        Err(e) => {
            said.push(Said::Error(e));
            Outcome::Failed
        }
    };
    if args.check && matches!(outcome, Outcome::Changed | Outcome::Recompressed) {
        said.push(Said::Work(path.display().to_string()));
    }
    (outcome, said)
}

/// Standard input, plain or compressed, to standard output: plain text unless a
/// compression is asked. `--check` looks at the text alone (and, with `--compress`, at the
/// compression of the input too).
fn stdin(check: bool, options: &Options) -> i32 {
    let bytes = match read_stdin() {
        Ok(bytes) => bytes,
        Err(e) => {
            errln!("error: cannot read standard input: {e}");
            return EXIT_FAILED;
        }
    };
    let text = match compress::decompress(&bytes, options.max_text) {
        Ok(text) => text,
        Err(e) => {
            print_error(&e.with_file("<stdin>"), None);
            return EXIT_FAILED;
        }
    };
    let how = options.compression.unwrap_or(compress::Compression::NONE);
    if !check && how.codec() == compress::Codec::Plain {
        // Streamed out as it is made, once the whole save is read and checked: an error
        // in it prints nothing.
        return match Save::write_canonical_text(&text, output::Stdout) {
            Ok(()) => EXIT_OK,
            // A reader that went away is a normal end, as for every command.
            Err(_) if output::closed() => EXIT_OK,
            Err(e) => {
                print_error(&e.with_file("<stdin>"), Some(&text));
                EXIT_FAILED
            }
        };
    }
    if check {
        // Compared piece by piece: the canonical text is never made whole.
        let canonical = match Save::is_canonical_text(&text) {
            Ok(canonical) => canonical,
            Err(e) => {
                print_error(&e.with_file("<stdin>"), Some(&text));
                return EXIT_FAILED;
            }
        };
        let codec = compress::Codec::of(&bytes);
        let asked = options.compression.is_none_or(|c| c.codec() == codec);
        if canonical && asked {
            return EXIT_OK;
        }
        match canonical {
            true => errln!("not stored as {}: <stdin>", how.codec().name()),
            false => errln!("not canonical: <stdin>"),
        }
        return EXIT_FOUND_WORK;
    }
    let canonical = match Save::canonical_text(&text) {
        Ok(c) => c,
        Err(e) => {
            print_error(&e.with_file("<stdin>"), Some(&text));
            return EXIT_FAILED;
        }
    };
    output::out_bytes(&compress::compress(&canonical, how));
    EXIT_OK
}

/// Everything standard input gives, in a buffer of its size. A pipe's text is read in pieces
/// and then joined: a buffer grown by doubling copies a large save from buffer to buffer,
/// and an allocator may keep the outgrown copies.
fn read_stdin() -> std::io::Result<Vec<u8>> {
    let mut stdin = std::io::stdin().lock();
    let size = stdin_file_size();
    if size > 0 {
        let mut bytes = Vec::with_capacity(size);
        stdin.read_to_end(&mut bytes)?;
        return Ok(bytes);
    }
    const PIECE: u64 = 1 << 20;
    let mut pieces = Vec::new();
    loop {
        let mut piece = Vec::with_capacity(PIECE as usize);
        if (&mut stdin).take(PIECE).read_to_end(&mut piece)? == 0 {
            break;
        }
        pieces.push(piece);
    }
    Ok(pieces.concat())
}

/// The size of the file on standard input (`< save.json`), 0 for a pipe: read into a buffer
/// of its size, a large save is not copied from buffer to buffer as one grows, whose
/// outgrown copies an allocator may keep.
fn stdin_file_size() -> usize {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let file = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map(std::fs::File::from);
        match file.and_then(|f| f.metadata()) {
            Ok(m) if m.is_file() => return m.len() as usize,
            _ => {}
        }
    }
    0
}
