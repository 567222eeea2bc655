//! A save's backups: found by the names savechain's writers give them, each with its time,
//! its version and what made it; one restored in place of the save; old ones pruned.
//!
//! The names (section 7.1 of docs/FORMAT.md), beside the save `<name>`:
//!
//! - `<name>.v<N>.bak`, `<name>.v<N>.<k>.bak`: the save as it was before an upgrade from
//!   version N, or before an upgrade run stored it, still at version N, in another codec;
//! - `<name>.bak`, `<name>.<k>.bak`: the save as it was before a change by hand (`edit`,
//!   `set`, `fmt` ([`format_file`](crate::format_file)) or a [`restore`]: the four are one
//!   kind of change, and the name does not tell them apart);
//! - `<name>.edit.bak`, `<name>.edit.<k>.bak`: the text of an edit that was not written
//!   (it did not load, it was refused, or the save changed meanwhile), kept by
//!   [`edit::keep_edit`](crate::edit::keep_edit); not a copy of the save.
//!
//! `<k>` (1, 2, ...) is taken when the name without it holds something else, so a backup is
//! never overwritten by a different one; which is newer is told by the file's time, not by
//! `<k>`.
//!
//! ```
//! use savechain::backup::{self, MadeBy};
//!
//! let dir = tempfile::tempdir()?;
//! let save = dir.path().join("slot1.json");
//! std::fs::write(&save, r#"{"meta": {"version": 2}, "data": {}}"#)?;
//! std::fs::write(dir.path().join("slot1.json.v1.bak"), r#"{"meta": {"version": 1}, "data": {}}"#)?;
//! let found = backup::list(&save)?;
//! assert_eq!(found[0].made_by, MadeBy::Upgrade { from: 1 });
//! assert_eq!(found[0].version, Some(1));
//!
//! // Restored: the save as the backup has it, the save it replaced kept as slot1.json.bak.
//! let restored = backup::restore(&save, &found[0].path)?;
//! assert_eq!(restored.kept, Some(dir.path().join("slot1.json.bak")));
//! assert_eq!(savechain::Save::load(&save)?.meta.version, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::{Meta, Save};

/// What made a backup, as its name tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MadeBy {
    /// An upgrade from this version: `<name>.v<N>.bak`.
    Upgrade {
        /// The version the save had before the upgrade.
        from: u64,
    },
    /// A change by hand (`edit`, `set`, `fmt` or a restore): `<name>.bak`.
    Edit,
    /// The text of an edit that was not written: `<name>.edit.bak`. Not a copy of the save:
    /// it is never restored nor pruned.
    KeptEdit,
}

impl MadeBy {
    /// A short name for scripts: `upgrade`, `edit`, `kept-edit`.
    pub fn name(self) -> &'static str {
        match self {
            MadeBy::Upgrade { .. } => "upgrade",
            MadeBy::Edit => "edit",
            MadeBy::KeptEdit => "kept-edit",
        }
    }
}

/// One backup of a save.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Backup {
    /// Where it is, beside the save.
    pub path: PathBuf,
    /// What made it.
    pub made_by: MadeBy,
    /// When it was written (its file's modification time).
    pub modified: SystemTime,
    /// Its size in bytes.
    pub len: u64,
    /// Its version, from its `meta`; `None` when that does not read (then `problem` says
    /// why).
    pub version: Option<u64>,
    /// Why its `meta` does not read, when it does not.
    pub problem: Option<String>,
}

/// What a backup's name says, given the save's name: `None` when it is not one of its
/// backups.
fn made_by(save_name: &OsStr, name: &OsStr) -> Option<MadeBy> {
    let save_name = save_name.to_str()?;
    let rest = name
        .to_str()?
        .strip_prefix(save_name)?
        .strip_prefix('.')?
        .strip_suffix("bak")?;
    // What is left: "", "<k>.", "v<N>.", "v<N>.<k>.", "edit.", "edit.<k>.".
    let mut parts: Vec<&str> = rest.split('.').collect();
    if parts.pop() != Some("") {
        return None;
    }
    let is_count = |part: &str| {
        !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) && !part.starts_with('0')
    };
    if parts.last().is_some_and(|p| is_count(p)) {
        parts.pop();
    }
    match parts.as_slice() {
        [] => Some(MadeBy::Edit),
        ["edit"] => Some(MadeBy::KeptEdit),
        [tag] => {
            let n = tag.strip_prefix('v')?;
            let plain = n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
            plain
                .then(|| n.parse().ok())
                .flatten()
                .map(|from| MadeBy::Upgrade { from })
        }
        _ => None,
    }
}

/// The backups of the save at `path` (which need not exist any more), oldest first.
///
/// Each regular file beside it whose name is the save's with one of the suffixes of the
/// [module](self) is one; its version is read from its `meta` alone. Errors: the folder
/// cannot be read.
pub fn list(path: impl AsRef<Path>) -> Result<Vec<Backup>> {
    let path = path.as_ref();
    let Some(save_name) = path.file_name() else {
        return Err(Error::new(ErrorKind::Usage, "not a file's path").with_file(path));
    };
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let entries = fs::read_dir(folder)
        .map_err(|e| Error::io(e, "cannot read the folder").with_file(folder))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(e, "cannot read the folder").with_file(folder))?;
        let name = entry.file_name();
        let Some(made_by) = made_by(save_name, &name) else {
            continue;
        };
        let backup = path.with_file_name(&name);
        // Links followed, as the writers follow them; what is not a regular file is no
        // backup.
        let Ok(metadata) = fs::metadata(&backup) else {
            continue;
        };
        if !metadata.is_file() {
            continue;
        }
        let (version, problem) = match read_version(&backup, made_by) {
            Ok(version) => (Some(version), None),
            Err(why) => (None, Some(why)),
        };
        found.push(Backup {
            path: backup,
            made_by,
            modified: metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            len: metadata.len(),
            version,
            problem,
        });
    }
    found.sort_by(|a, b| a.modified.cmp(&b.modified).then(a.path.cmp(&b.path)));
    Ok(found)
}

/// The saves of `folder` that are gone but have backups there: the `*.json`,
/// `*.json.zst` and `*.json.gz` names (any case) that a backup's name in `folder` is a backup of ([`list`]) and that no file has,
/// in name order. Not its subfolders.
pub fn gone_saves(folder: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let folder = folder.as_ref();
    let entries = fs::read_dir(folder)
        .map_err(|e| Error::io(e, "cannot read the folder").with_file(folder))?;
    let mut gone = std::collections::BTreeSet::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(e, "cannot read the folder").with_file(folder))?;
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        // The save's name is the backup's without `.bak`, a count, and a tag.
        let mut stem = text.strip_suffix(".bak").unwrap_or_default();
        let mut candidates = Vec::new();
        for _ in 0..3 {
            candidates.push(stem);
            match stem.rsplit_once('.') {
                Some((rest, _)) => stem = rest,
                None => break,
            }
        }
        let save = candidates.into_iter().find(|candidate| {
            crate::batch::save_ending(candidate).is_some()
                && !candidate.starts_with('.')
                && made_by(OsStr::new(candidate), &name).is_some()
        });
        if let Some(save) = save {
            let path = folder.join(save);
            if fs::symlink_metadata(&path).is_err() {
                gone.insert(path);
            }
        }
    }
    Ok(gone.into_iter().collect())
}

fn read_version(backup: &Path, made_by: MadeBy) -> std::result::Result<u64, String> {
    let bytes = fsio::read_regular(backup).map_err(|e| format!("cannot read it: {e}"))?;
    match Meta::from_slice(&bytes) {
        Ok(meta) => Ok(meta.version),
        // A kept edit is in the decimal view, which only a full load reads.
        Err(_) if made_by == MadeBy::KeptEdit => Save::from_slice(&bytes)
            .map(|save| save.meta.version)
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// What [`restore`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Restored {
    /// Where the save it replaced is kept (`<name>.bak`, or `<name>.<k>.bak`); `None` when
    /// there was no save, or it held the backup's bytes already (nothing was written).
    pub kept: Option<PathBuf>,
    /// Whether the save was written: `false` when it held the backup's bytes already.
    pub written: bool,
}

/// Puts the bytes of `backup`, one of the backups of the save at `path` ([`list`]), in
/// place of the save, exactly as the backup has them; the backup stays.
///
/// The backup must load as a save; a kept edit ([`MadeBy::KeptEdit`]) is refused, since it
/// is not a copy of the save. The save it replaces is kept first, as a change by hand's
/// backup (`<name>.bak`, `<name>.<k>.bak`), so a restore is itself undone by a restore.
/// Both writes are atomic, and the save's lock is held from reading it to replacing it:
/// a save another program wrote meanwhile is left as it is, with an error of kind
/// [`ErrorKind::Changed`]. A save that no longer exists is written anew.
pub fn restore(path: impl AsRef<Path>, backup: impl AsRef<Path>) -> Result<Restored> {
    let (path, backup) = (path.as_ref(), backup.as_ref());
    restore_at(path, backup).map_err(|e| {
        if e.file().is_some() {
            e
        } else {
            e.with_file(path)
        }
    })
}

fn restore_at(path: &Path, backup: &Path) -> Result<Restored> {
    let made_by = backup
        .file_name()
        .zip(path.file_name())
        .and_then(|(name, save_name)| made_by(save_name, name))
        .filter(|_| fsio::same_path(folder_of(backup), folder_of(path)));
    match made_by {
        None => {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{} is not a backup of this save: its backups are beside it, named \
                     <name>.bak, <name>.<k>.bak or <name>.v<N>.bak (`save-upgrade backups \
                     list` lists them)",
                    backup.display()
                ),
            ))
        }
        Some(MadeBy::KeptEdit) => {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{} is the text of an edit that was not written, not a copy of the save, \
                     so it is not restored: run `save-upgrade edit` on the save and take what \
                     you need from it",
                    backup.display()
                ),
            ))
        }
        Some(_) => {}
    }
    let bytes = fsio::read_regular(backup)
        .map_err(|e| Error::io(e, "cannot read the backup").with_file(backup))?;
    Save::from_slice(&bytes).map_err(|e| e.with_file(backup))?;
    let held = fsio::hold_save(path)?;
    let Some(held) = held else {
        // No save: the backup's bytes are the new one, like it in permissions.
        fsio::write_atomic_like(path, &bytes, Some(backup))
            .map_err(|e| Error::io(e, "cannot write the file"))?;
        return Ok(Restored {
            kept: None,
            written: true,
        });
    };
    let current = fsio::read_save(path, Some(&held))?;
    if current == bytes {
        return Ok(Restored {
            kept: None,
            written: false,
        });
    }
    fsio::refuse_read_only(path)?;
    let kept = fsio::backup_path(path, None, &current);
    fsio::write_atomic_like(&kept, &current, Some(path))
        .map_err(|e| Error::io(e, format!("cannot write the backup {}", kept.display())))?;
    let read = fsio::Fingerprint::of(&current);
    fsio::replace_held(path, &bytes, Some(&held), &read, fsio::Work::Restore)?;
    Ok(Restored {
        kept: Some(kept),
        written: true,
    })
}

fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// What [`prune`] removed (or, in a dry run, would remove) and kept.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Pruned {
    /// The backups removed, oldest first, each with why it could go.
    pub removed: Vec<(Backup, &'static str)>,
    /// The backups kept, oldest first.
    pub kept: Vec<Backup>,
}

/// Which backups [`prune`] may remove: those past the newest [`keep`](Prune::keep) (1
/// unless told otherwise) and, when given, older than [`older_than`](Prune::older_than).
#[derive(Clone, Copy, Debug)]
pub struct Prune {
    keep: usize,
    older_than: Option<SystemTime>,
    dry_run: bool,
}

impl Default for Prune {
    /// Keeps the newest backup: removing every one takes `keep(0)`, said on purpose.
    fn default() -> Prune {
        Prune {
            keep: 1,
            older_than: None,
            dry_run: false,
        }
    }
}

impl Prune {
    /// Keeps the `n` newest backups (that read as saves) whatever they hold (1 by default).
    pub fn keep(mut self, n: usize) -> Prune {
        self.keep = n;
        self
    }

    /// Keeps every backup written at `time` or later.
    pub fn older_than(mut self, time: SystemTime) -> Prune {
        self.older_than = Some(time);
        self
    }

    /// Removes nothing, and says what it would remove.
    pub fn dry_run(mut self, dry_run: bool) -> Prune {
        self.dry_run = dry_run;
        self
    }
}

/// Removes the old backups of the save at `path` as `rule` says, keeping for each version
/// the only way back to it; with [`Prune::dry_run`], removes nothing and says what it would
/// remove. A backup past the newest kept, at a version the save or a kept backup has, is
/// removed even when its bytes are nowhere else (an older hand edit): that is pruning.
///
/// Never removed: the [`keep`](Prune::keep) newest backups; those written at the
/// [`older_than`](Prune::older_than) time or later; a backup whose version neither the save
/// nor a backup kept has (the newest backup of each version stays: the only way back to
/// it); a backup whose `meta` does not read (what it holds cannot be told); a kept edit
/// (the only copy of someone's work; remove it by hand). Every other backup is removed,
/// and so is one with the very bytes of the save or of a backup kept, even among the
/// newest (but not one written since [`older_than`](Prune::older_than)). The save's lock
/// is held meanwhile, so a restore does not meet it.
pub fn prune(path: impl AsRef<Path>, rule: Prune) -> Result<Pruned> {
    let path = path.as_ref();
    let _held = fsio::hold_save(path).map_err(|e| e.with_file(path))?;
    let backups = list(path)?;
    let save = fsio::read_regular(path).ok();
    let mut versions = HashSet::new();
    let mut contents: Vec<fsio::Fingerprint> = Vec::new();
    if let Some(save) = &save {
        contents.push(fsio::Fingerprint::of(save));
        if let Ok(meta) = Meta::from_slice(save) {
            versions.insert(meta.version);
        }
    }
    let mut kept = Vec::new();
    let mut removed = Vec::new();
    let mut copies = 0;
    // Newest first: what is kept decides what older ones may go.
    for backup in backups.into_iter().rev() {
        let print = fsio::read_regular(&backup.path)
            .ok()
            .map(|b| fsio::Fingerprint::of(&b));
        let why = match (backup.made_by, backup.version) {
            (MadeBy::KeptEdit, _) => None,
            _ if rule.older_than.is_some_and(|time| backup.modified >= time) => None,
            _ if print.is_some_and(|p| contents.contains(&p)) => {
                Some("the same bytes as the save or a backup kept")
            }
            (_, None) => None,
            _ if copies < rule.keep => None,
            (_, Some(version)) if versions.contains(&version) => {
                Some("past those kept, and the save or a kept backup has its version")
            }
            _ => None,
        };
        match why {
            Some(why) => removed.push((backup, why)),
            None => {
                if backup.made_by != MadeBy::KeptEdit && backup.version.is_some() {
                    copies += 1;
                    versions.extend(backup.version);
                    contents.extend(print);
                }
                kept.push(backup);
            }
        }
    }
    if !rule.dry_run {
        for (backup, _) in &removed {
            fs::remove_file(&backup.path)
                .map_err(|e| Error::io(e, "cannot remove the backup").with_file(&backup.path))?;
        }
        if !removed.is_empty() {
            let _ = fsio::sync_dir(folder_of(path));
        }
    }
    removed.reverse();
    kept.reverse();
    Ok(Pruned { removed, kept })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_tell_what_made_a_backup() {
        let save = OsStr::new("slot1.json");
        for (name, made) in [
            ("slot1.json.bak", Some(MadeBy::Edit)),
            ("slot1.json.3.bak", Some(MadeBy::Edit)),
            ("slot1.json.v9.bak", Some(MadeBy::Upgrade { from: 9 })),
            ("slot1.json.v9.1.bak", Some(MadeBy::Upgrade { from: 9 })),
            ("slot1.json.edit.bak", Some(MadeBy::KeptEdit)),
            ("slot1.json.edit.2.bak", Some(MadeBy::KeptEdit)),
            ("slot1.json", None),
            ("slot1.jsonbak", None),
            ("slot1.json.old.bak", None),
            ("slot1.json.v.bak", None),
            ("slot1.json.v09.bak", None),
            ("slot1.json.01.bak", None),
            ("slot1.json.1.2.bak", None),
            ("slot2.json.bak", None),
            ("xslot1.json.bak", None),
        ] {
            assert_eq!(made_by(save, OsStr::new(name)), made, "{name}");
        }
    }
}
