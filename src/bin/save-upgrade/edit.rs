//! `save-upgrade edit`: a save opened in the user's editor in the decimal view, checked,
//! and written back with a backup; an edit is never lost.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use savechain::compress::{Codec, Compression};
use savechain::text::Style;
use savechain::{edit, ErrorKind, Location, Save};

use super::chain::ChainArg;
use super::compression;
use super::output::errln;
use super::report::{print_error, print_how_to_allow, print_written};
use super::{EXIT_FAILED, EXIT_OK};

/// Edit a save in your editor, doubles in decimal; it is checked and written back.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade edit slot1.json
  EDITOR=nano save-upgrade edit slot1.json
  VISUAL='code --wait' save-upgrade edit slot1.json

The save opens in $VISUAL, else $EDITOR, else vi (on a terminal), in the decimal view:
doubles as decimals ([\"d\", 0.965]). Type numbers as you like; a double you did not touch keeps every
bit, and one you retype stays a double, even typed as a plain integer (100 over
[\"d\", 96.5] is the double 100.0). When the editor closes:
  - nothing changed: says so and writes nothing;
  - the editor failed (exited non-zero, as vim does after errors): nothing is written,
    and text it changed is kept beside the save as <name>.edit.bak;
  - the text is not a valid save: the error with its line, column and path, then, on a
    terminal, the choice to edit again; otherwise (or if you decline) nothing is written
    and your text is kept beside the save as <name>.edit.bak (see `backups list`);
  - a value of another kind than it was (3.5 where an integer was, a string where a double
    was, null): refused, each path and both kinds named, since a game that reads the old
    kind fails on the new one; on a terminal you may edit again or write it anyway; with
    --change-kind it is written, numbers taken as typed (3 is then an integer, even over
    a double), so the same command changes it back;
  - meta.version (or a mod's meta.mods.<name>.version) changed: refused, naming the steps
    it would skip or run again (a version says which steps the data has had; to bring a
    save up to date, run save-upgrade FILE); on a terminal you may edit again or write it
    anyway; with --change-version it is written. Below the version meta.history records
    an upgrade to, it is refused even so (the next upgrade would refuse the save);
  - a value the game does not read at the save's version, when the chain (--upgrades,
    --mods, or the built-in example game's) records its shape (3.5 or 5000000000 where it
    reads a u32, a member an object does not have, a member it needs removed): refused,
    naming each path and what the game reads there (what the save held already does not
    count); on a terminal you may edit again or write it anyway; with --ignore-shape it
    is written (a note says the save no longer matches). Where the shape says what the
    game reads, it decides the kind: a value retyped as another kind the game reads there
    is a fix, not a change of kind, and an integer typed over a double stays an integer
    where the game reads an integer;
  - valid: written back canonically (hexfloats) and atomically, the original kept as
    <name>.bak (<name>.1.bak and on when that holds something else), and each change
    listed;
  - the save changed on disk meanwhile (the game saved): nothing is written, and your text
    is kept.
A compressed save (zstd or gzip, known by its first bytes whatever its name) opens as its
text, in a file named without .zst or .gz, and is written back in the same compression at
that codec's default level, the original's bytes kept as the backup (an edit not written
is kept as plain text); --compress zstd|gzip|none (and --level) stores it so instead.
A save that does not load is not opened: fix it in a plain text editor first (a damaged
compressed save cannot be read at all); nor is a read-only save.
Exit status: 0 written or nothing to write, 2 nothing written (an invalid or refused edit,
a save that changed, an editor that failed).")]
pub struct Args {
    /// A value may take another kind than it had, numbers taken as typed (without it, such
    /// an edit is refused).
    #[arg(long)]
    change_kind: bool,
    /// meta.version, or a mod's meta.mods.<name>.version, may change (without it, such an
    /// edit is refused: a version says which upgrade steps the data has had).
    #[arg(long)]
    change_version: bool,
    /// The save may come to hold what the game does not read at its version, by the
    /// chain's recorded shapes (without it, such an edit is refused).
    #[arg(long)]
    ignore_shape: bool,
    #[command(flatten)]
    chain: ChainArg,
    #[command(flatten)]
    compression: compression::Args,
    /// The save to edit.
    file: PathBuf,
}

pub fn run(args: Args) -> i32 {
    let file = &args.file;
    let compression = match args.compression.compression() {
        Ok(compression) => compression,
        Err(e) => {
            errln!("error: {}", e.message());
            return EXIT_FAILED;
        }
    };
    let Some(chain) = args.chain.load() else {
        return EXIT_FAILED;
    };
    let (read, save) = match edit::read(file) {
        Ok(read) => read,
        Err(e) => {
            print_error(&e, None);
            if e.location().is_some() {
                errln!(
                    "a save that does not load cannot be opened in the decimal view: fix it \
                     in a plain text editor (the error above says where), then run edit again"
                );
            }
            return EXIT_FAILED;
        }
    };
    if !args.ignore_shape {
        super::set::note_not_checked(&chain, &save, &args.chain);
    }
    // Refused now, as the write would refuse it, rather than after the editing.
    if let Err(e) = edit::check_writable(file) {
        print_error(&e, None);
        errln!("nothing was opened or written");
        return EXIT_FAILED;
    }
    let Some(editor) = editor() else {
        errln!(
            "error: no editor: set $VISUAL or $EDITOR (vi is used only on a terminal); \
             nothing was written"
        );
        return EXIT_FAILED;
    };
    let mut view = Vec::new();
    if let Err(e) = save.write(&mut view, Style::Decimal) {
        print_error(&e.with_file(file), None);
        return EXIT_FAILED;
    }
    let draft = match Draft::new(file, &view) {
        Ok(draft) => draft,
        Err(e) => {
            errln!("error: cannot make a file to edit in: {e}");
            return EXIT_FAILED;
        }
    };
    loop {
        if let Err(why) = open_editor(&editor, &draft.path) {
            errln!("error: {why}; nothing was written");
            // What the editor left is kept, unless it is the view as it was.
            return match std::fs::read(&draft.path) {
                Ok(text) if text == view => {
                    draft.remove();
                    EXIT_FAILED
                }
                Ok(text) => draft.keep(file, &text),
                Err(_) => draft.keep_here(),
            };
        }
        let edited = match std::fs::read(&draft.path) {
            Ok(edited) => edited,
            Err(e) => {
                errln!(
                    "error: cannot read the edited text {}: {e}",
                    draft.path.display()
                );
                return EXIT_FAILED;
            }
        };
        if edited == view {
            errln!("{}: no change; nothing written", file.display());
            super::set::note_not_recompressed(file, compression);
            return draft.remove();
        }
        let mut edited_save = match Save::from_slice(&edited) {
            Ok(s) => s,
            Err(e) => {
                let location = e.location();
                print_error(&e.with_file(&draft.path), Some(&edited));
                if ask("edit again?") {
                    continue;
                }
                errln!("{}: nothing written", file.display());
                return draft.keep_noting(file, &edited, location);
            }
        };
        let mut allow = edit::Allow::default();
        if args.change_kind {
            allow = allow.with_kind_change();
        }
        if args.change_version {
            allow = allow.with_version_change();
        }
        if args.ignore_shape {
            allow = allow.with_shape_mismatch();
        }
        let check = |edited: &mut Save, allow: edit::Allow| {
            let kinds = edit::check_edit_shaped(&chain, &save, edited, allow)?;
            edit::check_shape(&chain, &save, edited, allow)?;
            Ok::<_, savechain::Error>(kinds)
        };
        let mut checked = check(&mut edited_save, allow);
        // Refused for want of asking: the person may mean it.
        while let Some(needs) = checked.as_ref().err().and_then(|e| e.refused_unless()) {
            let e = checked.as_ref().expect_err("matched");
            errln!("error: {}: {}", file.display(), e.message());
            // What asking would make, checked again, so that one answer (or one command)
            // asks for everything the edit needs: a change of kind the game does not read
            // either.
            let mut needs = needs;
            let mut shape = e.kind() == ErrorKind::Shape;
            let mut trial = edited_save.clone();
            if let Err(more) = check(&mut trial, allow.and(needs)) {
                if let Some(more_needs) = more.refused_unless() {
                    errln!("error: {}: also, {}", file.display(), more.message());
                    needs = needs.and(more_needs);
                    shape |= more.kind() == ErrorKind::Shape;
                }
            }
            if shape {
                super::set::note_schema(&chain, &edited_save, &args.chain);
            }
            let mut what = Vec::new();
            if needs.kind_change {
                what.push("the kinds changed");
            }
            if needs.version_change {
                what.push("the version changed");
            }
            if needs.shape_mismatch {
                what.push("what the game does not read");
            }
            let letter = match (needs.kind_change, needs.version_change) {
                (true, _) => 'c',
                (false, true) => 'v',
                (false, false) => 'w',
            };
            let question = format!(
                "edit again (e), write it with {} ({letter}), or stop (s)?",
                what.join(" and ")
            );
            match choose(&question, letter) {
                Choice::Again => break,
                // The changes shown are the ones meant: the doubles kept stay kept (the
                // text again as typed would change kinds the person never saw).
                Choice::Change => {
                    allow = allow.and(needs);
                    checked = check(&mut edited_save, allow);
                }
                Choice::Stop => {
                    print_how_to_allow(needs, file, |flags| {
                        let mut words = vec!["save-upgrade".to_string(), "edit".to_string()];
                        for (given, flag) in [
                            (args.change_kind, "--change-kind"),
                            (args.change_version, "--change-version"),
                            (args.ignore_shape, "--ignore-shape"),
                        ] {
                            if given || flags.contains(&flag) {
                                words.push(flag.to_string());
                            }
                        }
                        words.extend(args.chain.words());
                        words.extend(super::set::compression_words(&args.compression));
                        words.push(file.to_string_lossy().into_owned());
                        words
                    });
                    errln!("{}: nothing written", file.display());
                    return draft.keep(file, &edited);
                }
            }
        }
        if checked
            .as_ref()
            .is_err_and(|e| e.refused_unless().is_some())
        {
            continue;
        }
        match checked {
            Ok(kinds) => {
                for change in kinds {
                    errln!(
                        "note: {} was {} and is now {}",
                        change.path,
                        change.before,
                        change.after
                    );
                }
            }
            Err(e) => {
                errln!("error: {}: {}", file.display(), e.message());
                if ask("edit again?") {
                    continue;
                }
                errln!("{}: nothing written", file.display());
                return draft.keep(file, &edited);
            }
        }
        let written = Written {
            read: &read,
            save: &save,
            compression,
        };
        let status = write_back(file, &written, &edited_save, &edited, draft);
        if status == EXIT_OK {
            super::set::note_unread(&chain, &save, &edited_save, allow, file, &args.chain);
        }
        return status;
    }
}

/// The save as it was read, and how to store it edited.
struct Written<'a> {
    /// The file's bytes (compressed, for a compressed save).
    read: &'a [u8],
    save: &'a Save,
    /// `--compress`: `None` keeps the save's.
    compression: Option<Compression>,
}

fn write_back(file: &Path, was: &Written, edited: &Save, text: &[u8], draft: Draft) -> i32 {
    let changes = edit::diff(was.save, edited);
    if changes.is_empty() {
        errln!("{}: no value changed; nothing written", file.display());
        super::set::note_not_recompressed(file, was.compression);
        return draft.remove();
    }
    match super::set::store_edited(file, was.read, edited, was.compression) {
        Ok(backup) => {
            print_written(file, &changes, &backup);
            draft.remove()
        }
        Err(e) if e.kind() == ErrorKind::Changed => {
            errln!(
                "error: {} changed on disk while you edited it (the game or another program \
                 saved it); nothing was written",
                file.display()
            );
            draft.keep(file, text)
        }
        Err(e) => {
            print_error(&e, None);
            draft.keep(file, text)
        }
    }
}

/// The file the editor opens: the view, in a folder of its own under the system's
/// temporary folder, named as the save (editors choose their highlighting by name).
struct Draft {
    path: PathBuf,
}

impl Draft {
    fn new(save: &Path, view: &[u8]) -> std::io::Result<Draft> {
        // Private to the user, whatever the save's permissions: it may be kept.
        let dir = tempfile::Builder::new()
            .prefix("save-upgrade-edit-")
            .permissions(private(0o700))
            .tempdir()?
            .keep();
        let path = dir.join(draft_name(save));
        std::fs::write(&path, view)?;
        std::fs::set_permissions(&path, private(0o600))?;
        Ok(Draft { path })
    }

    /// Keeps the edited `text` beside the save (`<name>.edit.bak`), where a temporary
    /// folder in memory cannot lose it; says where, and gives the failure's status.
    fn keep(self, save: &Path, text: &[u8]) -> i32 {
        self.keep_noting(save, text, None)
    }

    /// [`Draft::keep`], saying where in the kept text the error at `error_at` of the
    /// draft is (the draft the error named is gone).
    fn keep_noting(self, save: &Path, text: &[u8], error_at: Option<Location>) -> i32 {
        match edit::keep_edit(save, text) {
            Ok(kept) => {
                self.remove();
                errln!("your edit is kept in {}", kept.display());
                if let Some(at) = error_at {
                    errln!(
                        "(the error above is at {}:{}:{})",
                        kept.display(),
                        at.line,
                        at.column
                    );
                }
                errln!(
                    "(check it with `save-upgrade show {}`; run `save-upgrade edit {}` again and \
                     paste what you need from it)",
                    kept.display(),
                    save.display()
                );
                EXIT_FAILED
            }
            Err(e) => {
                errln!("error: {e}");
                self.keep_here()
            }
        }
    }

    /// Leaves the edited text where it is, in the temporary folder, and says where.
    fn keep_here(self) -> i32 {
        errln!("your edit is kept in {}", self.path.display());
        errln!(
            "(a temporary folder, which may be in memory and emptied at the next start: copy \
             it somewhere that lasts; check it with `save-upgrade show {}`)",
            self.path.display()
        );
        EXIT_FAILED
    }

    fn remove(self) -> i32 {
        let _ = std::fs::remove_file(&self.path);
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        EXIT_OK
    }
}

/// The name of the file the editor opens for `save`: the save's, without `.zst` or `.gz`
/// (it holds the text, and an editor that sees `.gz` would try to decompress it).
fn draft_name(save: &Path) -> std::ffi::OsString {
    let name = save.file_name().unwrap_or("save.json".as_ref());
    let text = name.to_string_lossy();
    let lower = text.to_ascii_lowercase();
    for extension in [Codec::Zstd.extension(), Codec::Gzip.extension()] {
        if lower.ends_with(extension) && lower.len() > extension.len() {
            return text[..text.len() - extension.len()].into();
        }
    }
    name.to_owned()
}

#[cfg(unix)]
fn private(mode: u32) -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(mode)
}

#[cfg(not(unix))]
fn private(_mode: u32) -> std::fs::Permissions {
    std::fs::metadata(".")
        .map(|m| m.permissions())
        .expect("the current folder")
}

/// The user's editor: `$VISUAL`, else `$EDITOR`, else `vi` when standard input is a
/// terminal; `None` when there is none to run.
fn editor() -> Option<String> {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
        .or_else(|| std::io::stdin().is_terminal().then(|| "vi".to_string()))
}

/// Runs `editor` on `path` and waits for it, through the shell as git runs it, so that
/// `code --wait` works.
fn open_editor(editor: &str, path: &Path) -> Result<(), String> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(editor)
        .arg(path)
        .status()
        .map_err(|e| format!("cannot start the editor {editor:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the editor {editor:?} failed ({status})"))
    }
}

/// Asks a yes-or-no question on the terminal (yes unless answered no); no when standard
/// input is not a terminal.
fn ask(question: &str) -> bool {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return false;
    }
    let _ = write!(std::io::stderr(), "{question} [Y/n] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if stdin.lock().read_line(&mut answer).unwrap_or(0) == 0 {
        return false;
    }
    !matches!(answer.trim().to_ascii_lowercase().as_str(), "n" | "no")
}

/// What a person chose after an edit that changes kinds.
enum Choice {
    Again,
    Change,
    Stop,
}

/// Asks on the terminal whether to edit again (the default), write what was refused (the
/// answer `letter`) or stop; stop when standard input is not a terminal.
fn choose(question: &str, letter: char) -> Choice {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Choice::Stop;
    }
    let _ = write!(std::io::stderr(), "{question} [E/{letter}/s] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if stdin.lock().read_line(&mut answer).unwrap_or(0) == 0 {
        return Choice::Stop;
    }
    match answer.trim().to_ascii_lowercase().as_str() {
        "s" | "stop" | "n" | "no" | "q" => Choice::Stop,
        "change" | "write" => Choice::Change,
        a if a.len() == 1 && a.starts_with(letter) => Choice::Change,
        _ => Choice::Again,
    }
}
