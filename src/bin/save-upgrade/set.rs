//! `save-upgrade set`: change one value of a save, with a backup.

use std::path::PathBuf;

use std::path::Path;

use savechain::compress::{Codec, Compression};
use savechain::upgrade::Chain;
use savechain::{edit, text, ErrorKind, Save, Value};

use super::chain::ChainArg;
use super::compression;
use super::output::errln;
use super::report::{print_error, print_how_to_allow, print_written, shell_words};
use super::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Change one value of a save in place, keeping the original as <name>.bak.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade set slot1.json data.player.wallet.credits 100000
  save-upgrade set slot1.json data.ship.hull 96.5
  save-upgrade set slot1.json data.player.name '\"Wren\"'
  save-upgrade set slot1.json data.ship.position '[1, 2, 3]'
  save-upgrade set --add slot1.json data.player.title '\"Captain\"'
  save-upgrade set --change-kind slot1.json data.player.rank.level 3.5
  save-upgrade set --change-kind slot1.json data.player.rank.level 3    (back to an integer)
  save-upgrade set --upgrades upgrades/ --writer 2.3.0 slot1.json data.player.rank.level 4
                                                    (checked against that chain's shapes)
  save-upgrade set slot1.json 'data.systems[\"tau ceti\"].visited' true   (keys in brackets
                                                    in double quotes, the path quoted)

VALUE is save text: a number (100, 96.5, -1.5, 1e3), true, false, null, a string in
double quotes (quote it again for the shell), an array or an object. A double stays a
double when given an integer (100 over 96.5 is the double 100.0), and so do the doubles
inside an array or object given in place of one. Everything on the path must be there;
with --add its last key may be a new member. A value of another kind than the one it
replaces (3.5 over an integer, a string over a double, null), there or inside it, is
refused, naming each path and both kinds: a game that reads the old kind fails on the new
one. With --change-kind it is set, taken as given (3 is then the integer 3, even over a
double), so the same command with the old value changes it back. meta.version (or a mod's
meta.mods.<name>.version) changes only with --change-version: it says which upgrade steps
the data has had, so raising it skips steps and lowering it runs steps again (to bring a
save up to date, run save-upgrade FILE); even then it cannot go below the version
meta.history records an upgrade to (the next upgrade would refuse the save). A refusal
ends with the command that makes the change anyway. The save is written canonically and atomically, the original kept as <name>.bak (<name>.1.bak and on when that holds
something else); a save that another program wrote meanwhile is left as it is.
When the chain (--upgrades, --mods, or the built-in example game's) records the shape of
the save's version (save-upgrade shape record), a value the game does not read there (3.5
or 5000000000 where it reads a u32, a member an object does not have) is refused, naming
the path and what the game reads; one that was already there before does not stop the
change. With --ignore-shape it is written anyway, and a note says the save no longer
matches (save-upgrade validate lists where). Where the shape says what the game reads, it
also decides the kind: a value of another kind that the game reads there is a fix, set
without --change-kind (true over 1 where it reads a bool), and an integer over a double
stays an integer where it reads an integer (3 over 3.5 where it reads a u32). A save of
another game than the chain's, or of a version with no recorded shape, is not checked (a
note says so).
A compressed save (zstd or gzip, known by its first bytes whatever its name) is changed in
its text and written back in the same compression, at that codec's default level, the
original's bytes kept as the backup; --compress zstd|gzip|none (and --level) stores it so
instead. A save whose compressed data is damaged is refused, nothing written.
Exit status: 0 set (or already that value), 2 a failure or a usage error.")]
pub struct Args {
    /// The path's last key may be a new member of its object (without it, a key that is not
    /// there is an error naming the nearest one: a mistyped key is not added).
    #[arg(long)]
    add: bool,
    /// The value may be of another kind than the one it replaces, and is taken as given
    /// (without it, such a change is refused).
    #[arg(long)]
    change_kind: bool,
    /// meta.version, or a mod's meta.mods.<name>.version, may change (without it, any
    /// change of a version is refused: it says which upgrade steps the data has had).
    #[arg(long)]
    change_version: bool,
    /// The value may be one the game does not read at the save's version, by the chain's
    /// recorded shapes (without it, such a change is refused).
    #[arg(long)]
    ignore_shape: bool,
    #[command(flatten)]
    chain: ChainArg,
    #[command(flatten)]
    compression: compression::Args,
    /// The save to change.
    file: PathBuf,
    /// Where, as errors write paths: `data.player.wallet.credits`, `meta.game`.
    path: String,
    /// The new value, as save text (`-1.5` needs no `--`).
    #[arg(allow_hyphen_values = true)]
    value: String,
}

pub fn run(args: Args) -> i32 {
    let value: Value = match text::from_str(&args.value) {
        Ok(value) => value,
        Err(e) => {
            errln!(
                "error: the value {:?} is not save text ({}): write a number, true, false, \
                 null, or a string in double quotes, such as '\"Wren\"' in the shell",
                args.value,
                e.message()
            );
            return EXIT_USAGE;
        }
    };
    let compression = match args.compression.compression() {
        Ok(compression) => compression,
        Err(e) => {
            errln!("error: {}", e.message());
            return EXIT_USAGE;
        }
    };
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    let (read, save) = match edit::read(&args.file) {
        Ok(read) => read,
        Err(e) => {
            print_error(&e, None);
            return EXIT_FAILED;
        }
    };
    if !args.ignore_shape {
        note_not_checked(&chain, &save, &args.chain);
    }
    let mut changed: Save = save.clone();
    let mut allow = edit::Allow::default();
    if args.add {
        allow = allow.with_new_member();
    }
    if args.change_kind {
        allow = allow.with_kind_change();
    }
    if args.change_version {
        allow = allow.with_version_change();
    }
    if args.ignore_shape {
        allow = allow.with_shape_mismatch();
    }
    let given_integer = matches!(value, Value::Int(_) | Value::UInt(_));
    let refused = match edit::set_shaped(&chain, &mut changed, &args.path, value.clone(), allow) {
        Err(e) => {
            // What asking would make, checked against the shape too: one refusal says
            // everything the change needs.
            let mut needs = e.refused_unless();
            let mut shape_error = None;
            if let Some(asked) = needs {
                let mut trial = save.clone();
                if edit::set_shaped(&chain, &mut trial, &args.path, value, allow.and(asked)).is_ok()
                {
                    if let Err(shape) = edit::check_shape(&chain, &save, &trial, allow) {
                        needs = shape.refused_unless().map(|more| asked.and(more));
                        shape_error = Some(shape);
                    }
                }
            }
            Some((e, needs, shape_error))
        }
        Ok(_) => edit::check_shape(&chain, &save, &changed, allow)
            .err()
            .map(|e| {
                let needs = e.refused_unless();
                (e, needs, None)
            }),
    };
    if let Some((e, needs, shape_error)) = refused {
        errln!("error: {}: {}", args.file.display(), e.message());
        if let Some(shape) = &shape_error {
            errln!("error: {}: also, {}", args.file.display(), shape.message());
        }
        if e.kind() == ErrorKind::Shape || shape_error.is_some() {
            note_schema(&chain, &save, &args.chain);
        }
        if let Some(needs) = needs {
            print_how_to_allow(needs, &args.file, |flags| rerun(&args, flags));
        }
        if let Some(meant) = edit::meant_path(&args.path) {
            errln!(
                "(in a shell, quote the whole path: {})",
                shell_words(&[&meant])
            );
        }
        return EXIT_USAGE;
    }
    for change in edit::kind_changes(&save, &changed) {
        errln!(
            "note: {} was {} and is now {}",
            change.path,
            change.before,
            change.after
        );
    }
    // An integer typed over a double stays a double: say so, and how to store the integer
    // (the trap of issue 28: a level once set to 3.5 did not become 3 again).
    if given_integer && !args.change_kind {
        if let Ok(Some(Value::Double(_))) = edit::get(&changed, &args.path) {
            errln!(
                "note: {} is a double, so {} is kept a double; to store the integer: {}",
                args.path,
                args.value,
                shell_words(&[
                    "save-upgrade",
                    "set",
                    "--change-kind",
                    &args.file.to_string_lossy(),
                    &args.path,
                    &args.value
                ])
            );
        }
    }
    let changes = edit::diff(&save, &changed);
    if changes.is_empty() {
        errln!(
            "{}: {} is already that value; nothing written",
            args.file.display(),
            args.path
        );
        note_not_recompressed(&args.file, compression);
        return EXIT_OK;
    }
    match store_edited(&args.file, &read, &changed, compression) {
        Ok(backup) => {
            print_written(&args.file, &changes, &backup);
            note_unread(&chain, &save, &changed, allow, &args.file, &args.chain);
            EXIT_OK
        }
        Err(e) => {
            print_error(&e, None);
            EXIT_FAILED
        }
    }
}

/// The command line of `args` with `flags` added: the command that makes a refused change.
fn rerun(args: &Args, flags: &[&str]) -> Vec<String> {
    let mut words = vec!["save-upgrade".to_string(), "set".to_string()];
    for (given, flag) in [
        (args.add, "--add"),
        (args.change_kind, "--change-kind"),
        (args.change_version, "--change-version"),
        (args.ignore_shape, "--ignore-shape"),
    ] {
        if given || flags.contains(&flag) {
            words.push(flag.to_string());
        }
    }
    words.extend(args.chain.words());
    words.extend(compression_words(&args.compression));
    words.push(args.file.to_string_lossy().into_owned());
    words.push(args.path.clone());
    words.push(args.value.clone());
    words
}

/// Says on stderr why `save` is not checked against the chain's shapes, when it is not.
pub fn note_not_checked(chain: &Chain, save: &Save, given: &ChainArg) {
    let Some(why) = edit::not_checked(chain, save) else {
        return;
    };
    let how = match why {
        edit::NotChecked::OtherGame { .. } if given.upgrades.is_none() => {
            "; give its chain with --upgrades DIR --writer V"
        }
        _ => "",
    };
    errln!("note: not checked against shapes: {why}{how}");
}

/// After a refusal for what the game does not read: the command that prints what it reads
/// at the save's version, with the chain as given (and each mod's part at its version).
pub fn note_schema(chain: &Chain, save: &Save, given: &ChainArg) {
    let version = save.meta.version.to_string();
    let mut words = vec!["save-upgrade", "schema", "--version", &version];
    let chain_words = given.words();
    words.extend(chain_words.iter().map(String::as_str));
    let mods: Vec<String> = chain
        .mods()
        .iter()
        .filter(|m| !m.shapes().is_empty())
        .filter_map(|m| {
            let version = save
                .meta
                .extra
                .get("mods")?
                .get(m.name())?
                .get("version")?
                .as_u64()?;
            Some(format!("{}={version}", m.name()))
        })
        .collect();
    for m in &mods {
        words.push("--mod");
        words.push(m);
    }
    errln!("(what the game reads there: {})", shell_words(&words));
}

/// After a write that `--ignore-shape` (or the answer to write it) let through: says that
/// the save no longer matches the shape of its version, and how to list where.
pub fn note_unread(
    chain: &Chain,
    before: &Save,
    after: &Save,
    allow: edit::Allow,
    file: &Path,
    given: &ChainArg,
) {
    if !allow.shape_mismatch {
        return;
    }
    let mut strict = allow;
    strict.shape_mismatch = false;
    if edit::check_shape(chain, before, after, strict).is_ok() {
        return;
    }
    let mut words = vec!["save-upgrade".to_string(), "validate".to_string()];
    words.extend(given.words());
    words.push(file.to_string_lossy().into_owned());
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    errln!(
        "note: {} now holds what the game does not read at version {} (its recorded shape); \
         {} lists each place",
        file.display(),
        after.meta.version,
        shell_words(&words)
    );
}

/// Says that `--compress` changed nothing when nothing was edited, and what converts.
pub fn note_not_recompressed(file: &Path, compression: Option<Compression>) {
    if let Some(how) = compression {
        errln!(
            "note: --compress applies to what an edit writes; to store {} as {} without an edit: save-upgrade fmt --compress {} {}",
            file.display(),
            how,
            how.codec(),
            shlex::try_quote(&file.to_string_lossy()).unwrap_or_default()
        );
    }
}

/// Writes `save`, edited from the bytes `read`, in place of `file`: in the compression
/// asked for ([`edit::store_edited_with`]), else as the library keeps it
/// ([`edit::store_edited`]); says so when that changes the file's compression.
pub fn store_edited(
    file: &Path,
    read: &[u8],
    save: &Save,
    asked: Option<Compression>,
) -> savechain::Result<PathBuf> {
    let Some(how) = asked else {
        return edit::store_edited(file, read, save);
    };
    let backup = edit::store_edited_with(file, read, save, how)?;
    let was = Codec::of(read);
    if how.codec() != was {
        let name = |codec: Codec, what: String| match codec {
            Codec::Plain => "plain text".to_string(),
            _ => what,
        };
        errln!(
            "note: {} is now stored as {} (it was {})",
            file.display(),
            name(how.codec(), how.to_string()),
            name(was, was.to_string())
        );
    }
    Ok(backup)
}

/// `--compress` and `--level` as given, for a command to run again.
pub fn compression_words(given: &compression::Args) -> Vec<String> {
    let mut words = Vec::new();
    if let Some(codec) = &given.compress {
        words.extend(["--compress".to_string(), codec.clone()]);
    }
    if let Some(level) = given.level {
        words.extend(["--level".to_string(), level.to_string()]);
    }
    words
}
