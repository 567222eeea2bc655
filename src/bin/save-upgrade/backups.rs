//! `save-upgrade backups`: list a save's backups, restore one, prune old ones.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use savechain::backup::{self, Backup, MadeBy};
use savechain::batch::Plan;
use savechain::{Map, Value};

use super::output::{self, errln, outln};
use super::report::print_error;
use super::{EXIT_FAILED, EXIT_OK};

/// List, restore and prune the backups savechain keeps beside each save.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade backups list slot1.json
  save-upgrade backups list --json saves/
  save-upgrade backups restore slot1.json slot1.json.v8.bak
  save-upgrade backups prune --keep 3 --dry-run saves/
  save-upgrade backups prune --keep 3 saves/
  save-upgrade backups prune --older-than 2026-11-01 --keep 1 slot1.json

A save's backups are beside it, named by what made them:
  <name>.v<N>.bak     the save before an upgrade from version N, or before an upgrade
                      stored it, at version N already, in another codec (--compress)
                      (<name>.v<N>.<k>.bak when that name holds something else)
  <name>.bak          the save before a change by hand: edit, set, fmt or backups
                      restore (<name>.<k>.bak likewise)
  <name>.edit.bak     the text of an edit that was not written (it did not load, it was
                      refused, or the save changed meanwhile); not a copy of the save
Which is newer is told by the file's time, not by <k>.")]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    List(ListArgs),
    Restore(RestoreArgs),
    Prune(PruneArgs),
}

/// List each save's backups, oldest first: when, which version, what made it.
#[derive(clap::Args)]
#[command(after_help = "\
A folder stands for the saves in it (*.json, *.json.zst, *.json.gz, searched as upgrades
search) and for those gone from it whose backups are still there; a save's path is taken
even when the save is gone. Times are the files' own, in UTC. --json prints an array with an object per save: {\"save\", \"version\" (null when
it does not read), \"backups\": [{\"path\", \"made_by\" (\"upgrade\", \"edit\" or
\"kept-edit\"), \"from\" (an upgrade's version before it), \"modified\", \"bytes\",
\"version\", \"problem\"}]}.
Exit status: 0 listed, 2 a path that cannot be read, or neither a save nor one with
backups.")]
struct ListArgs {
    /// Print JSON for scripts on standard output.
    #[arg(long)]
    json: bool,
    /// Saves, or folders of saves.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Put a backup's bytes back in place of the save, keeping the save it replaces.
#[derive(clap::Args)]
#[command(after_help = "\
The backup must be one of the save's (beside it, named as `backups list` shows) and load
as a save. The save it replaces is kept first as <name>.bak (<name>.<k>.bak), so a restore
is undone by another; the backup stays. Both writes are atomic, under the save's lock; a
save that another program wrote meanwhile is left as it is. A kept edit
(<name>.edit.bak) is not restored: it is not a copy of the save.
Exit status: 0 restored (or the save held it already), 2 a failure.")]
struct RestoreArgs {
    /// The save to put back.
    save: PathBuf,
    /// The backup to put back, as `backups list` prints it.
    backup: PathBuf,
}

/// Remove old backups, keeping the newest and every only way back to a version.
#[derive(clap::Args)]
#[command(after_help = "\
Kept: the N newest backups of each save (--keep N); every backup written at the
--older-than time or later (a date, 2026-11-01, midnight UTC, or a time in UTC,
2026-11-01T12:00:00Z); the newest backup of each version that neither the save nor a kept
backup has (the only way back to it); a backup that does not read as a save; every kept
edit (<name>.edit.bak: remove those by hand). Removed: the other backups, and a backup
with the very bytes of the save or of a kept backup, even among the N newest; an older
backup at a version still kept is removed even when its bytes are nowhere else. A folder
stands for the saves in it; the backups of a save that is gone are pruned only when its
path is given. Run with --dry-run first to see the list.
Exit status: 0 done, 2 a failure.")]
#[command(group = clap::ArgGroup::new("rule").required(true).multiple(true).args(["keep", "older_than"]))]
struct PruneArgs {
    /// How many of each save's newest backups to keep whatever they hold (1 when only
    /// --older-than is given: the newest backup stays unless --keep 0 says otherwise).
    #[arg(long, value_name = "N")]
    keep: Option<usize>,
    /// Keep every backup written at this time or later: 2026-11-01 (midnight UTC) or
    /// 2026-11-01T12:00:00Z.
    #[arg(long, value_name = "DATE", value_parser = parse_time)]
    older_than: Option<SystemTime>,
    /// Print what would be removed, and remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON for scripts on standard output: per save, what was (or would be)
    /// removed and why, and what is kept.
    #[arg(long)]
    json: bool,
    /// Saves, or folders of saves.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

pub fn run(args: Args) -> i32 {
    match args.command {
        Command::List(args) => list(args),
        Command::Restore(args) => restore(args),
        Command::Prune(args) => prune(args),
    }
}

/// The saves `paths` stand for: a folder's saves, or the path itself (a save that may be
/// gone); with `gone`, also each searched folder's saves that are gone but have backups.
/// `None` after printing the errors when a path cannot be read.
fn saves_of(paths: &[PathBuf], gone: bool) -> Option<Vec<PathBuf>> {
    let mut saves = Vec::new();
    let mut failed = false;
    for path in paths {
        if !path.is_dir() {
            saves.push(path.clone());
            continue;
        }
        let plan = Plan::find(&[path]);
        let mut folders: Vec<PathBuf> = vec![path.clone()];
        for found in &plan.saves {
            if let Some(folder) = found.path.parent() {
                if !folders.iter().any(|f| f == folder) {
                    folders.push(folder.to_path_buf());
                }
            }
        }
        let mut gone_ones = Vec::new();
        for folder in folders.iter().filter(|_| gone) {
            match backup::gone_saves(folder) {
                Ok(found) => gone_ones.extend(found),
                Err(e) => {
                    print_error(&e, None);
                    failed = true;
                }
            }
        }
        // A folder whose saves are all gone is no error when their backups are there.
        if plan.saves.is_empty() && !gone_ones.is_empty() {
            saves.extend(gone_ones);
            continue;
        }
        for error in &plan.errors {
            print_error(error, None);
            failed = true;
        }
        saves.extend(plan.saves.into_iter().map(|found| found.path));
        saves.extend(gone_ones);
    }
    saves.sort();
    saves.dedup();
    (!failed).then_some(saves)
}

/// A date (midnight UTC) or a time in RFC 3339.
fn parse_time(text: &str) -> Result<SystemTime, String> {
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_string()
    };
    humantime::parse_rfc3339_weak(&full).map_err(|e| {
        format!("{e}: write a date, 2026-11-01, or a time in UTC, 2026-11-01T12:00:00Z")
    })
}

fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

fn text(path: &Path) -> Value {
    Value::String(path.display().to_string())
}

fn optional(value: Option<u64>) -> Value {
    value.map_or(Value::Null, Value::from)
}

fn backup_value(backup: &Backup) -> Value {
    let mut object = Map::new();
    object.insert("path", text(&backup.path));
    object.insert("made_by", Value::from(backup.made_by.name()));
    let from = match backup.made_by {
        MadeBy::Upgrade { from } => Some(from),
        _ => None,
    };
    object.insert("from", optional(from));
    object.insert("modified", Value::from(time(backup.modified).as_str()));
    object.insert("bytes", Value::from(backup.len));
    object.insert("version", optional(backup.version));
    object.insert(
        "problem",
        backup.problem.as_deref().map_or(Value::Null, Value::from),
    );
    Value::Object(object)
}

/// What made a backup, for people.
fn made_by(backup: &Backup) -> String {
    match backup.made_by {
        MadeBy::Upgrade { from } => format!("upgrade from {from}"),
        MadeBy::Edit => "edit, set, fmt or restore".to_string(),
        MadeBy::KeptEdit => "edit not written".to_string(),
        _ => backup.made_by.name().to_string(),
    }
}

fn version_of(save: &Path) -> Option<u64> {
    std::fs::read(save)
        .ok()
        .and_then(|bytes| savechain::Meta::from_slice(&bytes).ok())
        .map(|meta| meta.version)
}

fn line(backup: &Backup) -> String {
    let version = match backup.version {
        Some(v) => format!("version {v}"),
        None => "unreadable".to_string(),
    };
    format!(
        "  {}  {:<11}  {:<25}  {}",
        time(backup.modified),
        version,
        made_by(backup),
        backup.path.display()
    )
}

fn list(args: ListArgs) -> i32 {
    let Some(saves) = saves_of(&args.paths, true) else {
        return EXIT_FAILED;
    };
    let mut status = EXIT_OK;
    let mut all = Vec::new();
    for save in &saves {
        let backups = match backup::list(save) {
            Ok(backups) => backups,
            Err(e) => {
                print_error(&e, None);
                status = EXIT_FAILED;
                continue;
            }
        };
        if backups.is_empty() && std::fs::symlink_metadata(save).is_err() {
            errln!(
                "error: {}: no such file, and no backups of it beside it",
                save.display()
            );
            status = EXIT_FAILED;
            continue;
        }
        let version = version_of(save);
        if args.json {
            let mut object = Map::new();
            object.insert("save", text(save));
            object.insert("version", optional(version));
            object.insert(
                "backups",
                Value::Array(backups.iter().map(backup_value).collect()),
            );
            all.push(Value::Object(object));
            continue;
        }
        let now = match (version, save.exists()) {
            (Some(v), _) => format!("version {v}"),
            (None, true) => "does not read".to_string(),
            (None, false) => "gone".to_string(),
        };
        let count = match backups.len() {
            0 => "no backups".to_string(),
            1 => "1 backup".to_string(),
            n => format!("{n} backups"),
        };
        outln!("{} ({now}): {count}", save.display());
        for backup in &backups {
            outln!("{}", line(backup));
            if let Some(problem) = &backup.problem {
                outln!("      ({problem})");
            }
        }
    }
    if args.json {
        output::out(&savechain::text::to_string(&Value::Array(all)).expect("a shallow document"));
    }
    status
}

fn restore(args: RestoreArgs) -> i32 {
    match backup::restore(&args.save, &args.backup) {
        Ok(restored) if !restored.written => {
            errln!(
                "{}: already holds {}; nothing written",
                args.save.display(),
                args.backup.display()
            );
            EXIT_OK
        }
        Ok(restored) => {
            match restored.kept {
                Some(kept) => errln!(
                    "{}: restored from {}; the save it replaced is kept as {}",
                    args.save.display(),
                    args.backup.display(),
                    kept.display()
                ),
                None => errln!(
                    "{}: restored from {} (there was no save)",
                    args.save.display(),
                    args.backup.display()
                ),
            }
            EXIT_OK
        }
        Err(e) => {
            print_error(&e, None);
            EXIT_FAILED
        }
    }
}

fn prune(args: PruneArgs) -> i32 {
    let Some(saves) = saves_of(&args.paths, false) else {
        return EXIT_FAILED;
    };
    let mut status = EXIT_OK;
    let mut all = Vec::new();
    let (removing, removed) = if args.dry_run {
        ("would remove", "would be removed")
    } else {
        ("removed", "removed")
    };
    let mut total = 0;
    for save in &saves {
        let mut rule = backup::Prune::default().dry_run(args.dry_run);
        if let Some(keep) = args.keep {
            rule = rule.keep(keep);
        }
        if let Some(time) = args.older_than {
            rule = rule.older_than(time);
        }
        let pruned = match backup::prune(save, rule) {
            Ok(pruned) => pruned,
            Err(e) => {
                print_error(&e, None);
                status = EXIT_FAILED;
                continue;
            }
        };
        total += pruned.removed.len();
        if args.json {
            let mut object = Map::new();
            object.insert("save", text(save));
            let gone = pruned
                .removed
                .iter()
                .map(|(backup, why)| {
                    let mut value = backup_value(backup);
                    if let Value::Object(members) = &mut value {
                        members.insert("why", Value::from(*why));
                    }
                    value
                })
                .collect();
            object.insert("removed", Value::Array(gone));
            object.insert(
                "kept",
                Value::Array(pruned.kept.iter().map(backup_value).collect()),
            );
            all.push(Value::Object(object));
            continue;
        }
        for (backup, why) in &pruned.removed {
            errln!("{removing} {} ({why})", backup.path.display());
        }
        if !pruned.removed.is_empty() {
            errln!(
                "{}: {} {removed}, {} kept",
                save.display(),
                pruned.removed.len(),
                pruned.kept.len()
            );
        }
    }
    if args.json {
        output::out(&savechain::text::to_string(&Value::Array(all)).expect("a shallow document"));
    } else if total == 0 && status == EXIT_OK {
        errln!("nothing to prune");
    }
    status
}
