//! Upgrading save files on disk: read, upgrade in memory, then write back in place after
//! keeping the original as a backup, or write to another path and leave the source alone.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::plan::{ModReport, ModStatus, Plan};
use super::run::{StepReport, Upgraded, Upgrader};
use crate::compress::{self, Codec, Compression};
use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::options::Options;
use crate::save::{Meta, Save};
use crate::text::Style;

/// Where [`upgrade_file`] writes the upgraded save.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Target<'a> {
    /// Replace the save. With `backup`, the original is first kept beside it as
    /// `<name>.v<N>.bak` (N its version; `<name>.v<N>.<k>.bak` when a different file holds
    /// that name already, so an older backup is never overwritten), also when the save only
    /// changes codec ([`FileReport::recompressed`]).
    InPlace {
        /// Keep the original as a backup before replacing it.
        backup: bool,
    },
    /// Write the upgraded save to this path (making its folder), leaving the source as it
    /// is. A save already at the target version is copied byte for byte, so a folder of
    /// outputs is complete. A path that is the save itself (through a link, say) is an
    /// error: that would replace the original without its backup.
    ///
    /// A file already at the path is an original like any other, never replaced silently:
    /// when it holds exactly the bytes the upgrade writes (an earlier run's output), it is
    /// left alone, and the report says so ([`FileReport::already_written`]); when it holds
    /// anything else (a save a player changed there, a file that is not a save), the
    /// upgrade is refused ([`ErrorKind::Usage`], naming it), unless
    /// [`Options::replace_outputs`] asks to replace it, and then it is first kept beside it
    /// as a backup ([`FileReport::backup`]). From its reading until it is replaced it is
    /// locked, as a save upgraded in place is, and one that another program wrote
    /// meanwhile (or a file that appeared there) is left as it is ([`ErrorKind::Changed`]).
    /// A path that is a symbolic link is refused ([`ErrorKind::Usage`]), replacing or not:
    /// it is neither written through nor read as the output.
    To(&'a Path),
    /// Write nothing: say which steps an upgrade in place would run, and fail as that
    /// upgrade would before writing anything (a save with work to do that is read-only).
    Nowhere,
    /// Write nothing: say what [`Target::To`] this path would do, and fail as it would
    /// before writing anything (an output that holds something else, unless
    /// [`Options::replace_outputs`]). When a file is at the path, the upgrade runs in memory
    /// to tell whether it already holds the result ([`FileReport::already_written`]).
    CheckTo(&'a Path),
}

/// What [`upgrade_file`] did to one save.
#[derive(Debug)]
#[non_exhaustive]
pub struct FileReport {
    /// The save's version (the game's data version) before.
    pub from: u64,
    /// Its version after (or, with [`Target::Nowhere`], the version it would have).
    pub to: u64,
    /// The steps that ran, the game's then each mod's, or with [`Target::Nowhere`] the
    /// steps that would run (their `changes` and `dropped` empty, since nothing ran).
    pub steps: Vec<StepReport>,
    /// Where each mod's data stands after (with [`Target::Nowhere`]: would stand).
    pub mods: Vec<ModReport>,
    /// The file written, if any.
    pub written: Option<PathBuf>,
    /// The backup of the original (in place, upgraded or [recompressed](Self::recompressed))
    /// or of the file that was at the output ([`Options::replace_outputs`]), when one was
    /// written.
    pub backup: Option<PathBuf>,
    /// With [`Target::To`] (or [`Target::CheckTo`]): the output already held exactly what
    /// the upgrade writes (an earlier run's), so nothing was (or would be) written.
    pub already_written: bool,
    /// The save needed no upgrade, but was (or, with [`Target::Nowhere`] and
    /// [`Target::CheckTo`], would be) written in another codec than it has, as
    /// [`Options::compression`] asks: its text as it is, stored in that codec. In place,
    /// the bytes it had are kept first as an upgrade's original is ([`FileReport::backup`],
    /// `<name>.v<N>.bak` with N the save's version), unless no backup is asked.
    pub recompressed: bool,
}

impl FileReport {
    /// Whether no step ran (or, with [`Target::Nowhere`], would run): the save's data,
    /// the game's and every installed mod's, was already at its target version, or held
    /// back ([`FileReport::held`]).
    pub fn was_current(&self) -> bool {
        self.steps.is_empty()
    }

    /// The mods whose data was held back at its old version, with why
    /// ([`ModStatus::Held`], with [`Options::keep_going`]).
    pub fn held(&self) -> impl Iterator<Item = (&str, &str)> {
        self.mods.iter().filter_map(|m| match &m.status {
            ModStatus::Held(why) => Some((m.name.as_str(), why.as_str())),
            _ => None,
        })
    }
}

/// Upgrades the save at `path` and writes it to `target`, each write atomic (temporary file,
/// flush, rename): a crash leaves every file either as it was or whole.
///
/// A save that does not load, is outside the chain's versions, or fails a step is an error
/// naming the file, and nothing is written. A save already at the target version is not
/// rewritten in place.
///
/// A compressed save ([`crate::compress`], known by its first bytes) is read within
/// [`Options::max_text`] (a damaged one, or one past the limit, is an error of kind
/// [`ErrorKind::Compressed`]) and written in its own codec, at that codec's default level,
/// unless [`Options::compression`] asks for another: the backup of an in-place upgrade is
/// the original's bytes, compressed as they were. A save already at the target version but
/// stored in another codec than asked is rewritten in that codec, its text as it is
/// ([`FileReport::recompressed`]), in place after keeping the bytes it had as an upgrade
/// keeps its original (`<name>.v<N>.bak`, N its version; [`FileReport::backup`]); one in
/// the codec asked is left alone, whatever level it was written at (the level is not
/// recorded in the file).
///
/// ```
/// use savechain::upgrade::{upgrade_file, Chain, Step, Target};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("world.json");
/// std::fs::write(&path, r#"{"meta": {"version": 1}, "data": {"hp": 3}}"#)?;
/// let chain = Chain::new("1.1.0", vec![Step::lua(
///     "0001-health.lua",
///     "return function(data) data.health = data.hp * 10; data.hp = nil end",
/// )?])?;
///
/// let report = upgrade_file(&mut chain.upgrader(), &path, Target::InPlace { backup: true },
///                           &savechain::Options::default())?;
/// assert_eq!((report.from, report.to), (1, 2));
/// assert_eq!(report.backup, Some(dir.path().join("world.json.v1.bak")));
/// assert_eq!(savechain::Save::load(&path)?.data.to_string(), r#"{"health":30}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn upgrade_file(
    upgrader: &mut Upgrader<'_>,
    path: impl AsRef<Path>,
    target: Target<'_>,
    options: &Options,
) -> Result<FileReport> {
    let path = path.as_ref();
    upgrade_file_at(upgrader, path, target, options).map_err(|e| e.with_file(path))
}

fn upgrade_file_at(
    upgrader: &mut Upgrader<'_>,
    path: &Path,
    target: Target<'_>,
    options: &Options,
) -> Result<FileReport> {
    let mut todo = upgrade_in_memory(upgrader, path, target, options)?;
    let Some(out) = todo.report.written.clone() else {
        return Ok(todo.report);
    };
    // Both files to their temporaries first, the backup's before the save's: a save that
    // cannot be written (a value nested too deeply, a full disk) leaves no backup.
    let backup = todo.backup_temporary()?;
    make_folder(&out)?;
    // A new output (in another folder) is as private as its source, and has its owner.
    let save = todo.write_save_temporary(&out, path)?;
    // One file at a time: the backup durable, its folder flushed, then the save replaced.
    if let Some(backup) = backup {
        backup
            .sync()
            .map_err(|e| todo.backup_error(e, " to disk"))?;
        let dir = backup.dir().to_path_buf();
        backup.rename().map_err(|e| todo.backup_error(e, ""))?;
        // The save is replaced only once its backup would survive a power cut, as in a
        // batch's group: a backup whose folder cannot be flushed fails the save, left as
        // it was (the backup stays).
        fsio::sync_dir(&dir).map_err(|e| todo.backup_error(e, " to disk"))?;
    }
    save.sync().map_err(|e| todo.write_error(e, " to disk"))?;
    let dir = save.dir().to_path_buf();
    // As late as can be: a save that another program wrote meanwhile is not replaced.
    todo.check_unchanged()?;
    save.rename().map_err(|e| todo.write_error(e, ""))?;
    // Replaced by now: a failed folder flush only weakens durability across a power cut.
    let _ = fsio::sync_dir(&dir);
    Ok(todo.report)
}

/// An upgrade done in memory, and what it leaves to write.
struct ToWrite {
    /// The report; its `written` and `backup` are the files to write.
    report: FileReport,
    /// The bytes of the file replaced (the save in place, or what was at the output),
    /// when a backup of them goes to `report.backup`, and that file: the backup gets its
    /// permissions.
    original: Option<(Vec<u8>, PathBuf)>,
    /// The temporary file of `report.backup`, when it was written before the steps ran
    /// (in place, [`upgrade_in_memory`]); otherwise the backup is written from `original`.
    backup_file: Option<fsio::Pending>,
    /// What goes to `report.written`.
    content: Content,
    in_place: bool,
    /// What the file to be replaced must still be right before the rename.
    replacing: Replacing,
}

/// What an upgrade writes to its file.
enum Content {
    /// These bytes: a save as it was read, its text in another codec, or an upgraded
    /// save's compressed text.
    Bytes(Vec<u8>),
    /// An upgraded save, whose canonical text is streamed to its file as it is made: never
    /// whole in memory beside the save.
    Text(Save),
}

impl Content {
    /// The upgraded `save`, stored as `how` says. Compressed text is made whole: a zstd
    /// frame records the text's length before it, and the same text must give the same
    /// bytes ([`compress::compress`]).
    fn of(save: Save, how: Compression) -> Result<Content> {
        match how.codec() {
            Codec::Plain => Ok(Content::Text(save)),
            _ => save.to_vec_with(how).map(Content::Bytes),
        }
    }

    /// Whether `bytes` are what is written, compared piece by piece for a streamed text.
    fn matches(&self, bytes: &[u8]) -> Result<bool> {
        match self {
            Content::Bytes(written) => Ok(written == bytes),
            Content::Text(save) => save.is_text(bytes),
        }
    }

    /// The bytes written, made whole (for an error's message).
    fn to_bytes(&self) -> Result<Cow<'_, [u8]>> {
        match self {
            Content::Bytes(written) => Ok(Cow::Borrowed(written)),
            Content::Text(save) => save.to_vec().map(Cow::Owned),
        }
    }
}

/// The file an upgrade is about to replace, as it was found: what it must still be when
/// the new one is renamed over it.
enum Replacing {
    /// Nothing to check: nothing is written, or the file cannot be held.
    Unchecked,
    /// The file, locked from its reading until it is replaced, with what was read of it.
    Held(fsio::Held, fsio::Fingerprint, fsio::Work),
    /// A new output: no file may be at this path when it is renamed there.
    Absent(PathBuf),
}

impl ToWrite {
    /// The backup to write, what goes in it, and the file whose permissions it takes.
    fn backup(&self) -> Option<(&Path, &[u8], &Path)> {
        let (original, like) = self.original.as_ref()?;
        Some((self.report.backup.as_deref()?, original, like))
    }

    /// `how` follows the usual message: `" to disk"`, say.
    fn backup_error(&self, e: std::io::Error, how: &str) -> Error {
        let backup = self.report.backup.as_deref().unwrap_or(Path::new(""));
        backup_error(backup, e, how)
    }

    /// Fails when the file to replace changed since it was read (a program that does not
    /// take the lock wrote it), or a new output's path was taken meanwhile: it is then left
    /// as it is.
    fn check_unchanged(&self) -> Result<()> {
        match &self.replacing {
            Replacing::Held(held, read, work) => held.check_unchanged(read, *work),
            Replacing::Absent(out) => match std::fs::symlink_metadata(out) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(Error::new(
                    ErrorKind::Changed,
                    format!(
                        "the output {} appeared while the save was being upgraded into it \
                         (another program wrote it), so it is left as that program made it; \
                         run again to decide what to do with it",
                        out.display()
                    ),
                )),
            },
            Replacing::Unchecked => Ok(()),
        }
    }

    /// The save needs no upgrade: left as it is in place, copied as it is to another path
    /// (as [`ToWrite::examine_output`] decides). When it is asked in another codec than it
    /// has, its text is stored in that codec, in place (the save at `path`, locked by
    /// `held`) after keeping the bytes it had as its backup when `backup` is asked, as an
    /// upgrade keeps its original: `<name>.v<N>.bak`, N the save's version (unchanged).
    fn left_as_it_is(
        mut self,
        target: Target<'_>,
        path: &Path,
        held: Option<fsio::Held>,
        unchanged: Unchanged,
        options: &Options,
    ) -> Result<ToWrite> {
        self.report.recompressed = unchanged.recompressed;
        match target {
            Target::To(out) => {
                self.content = Content::Bytes(unchanged.bytes);
                self.examine_output(out, options)?;
            }
            Target::InPlace { backup } if unchanged.recompressed => {
                fsio::refuse_read_only(path)?;
                if let Some(held) = held {
                    let read = unchanged
                        .read
                        .expect("recompressed: the bytes read are kept");
                    self.replacing = Replacing::Held(held, read, fsio::Work::Upgrade);
                }
                if backup {
                    // The text inside stays the same, but the file a user has is replaced:
                    // kept as an upgrade keeps it, so that `backups` lists, restores and
                    // prunes it as any upgrade's backup.
                    let tag = format!("v{}", self.report.from);
                    let file = fsio::backup_path(path, Some(&tag), &unchanged.original);
                    self.report.backup = Some(file);
                    self.original = Some((unchanged.original, path.to_path_buf()));
                }
                self.content = Content::Bytes(unchanged.bytes);
                self.report.written = Some(path.to_path_buf());
            }
            _ => {}
        }
        Ok(self)
    }

    /// Writing `self.content` to `out`: a new file, an output already there with those bytes
    /// (left alone), or one with other bytes (refused, or with
    /// [`Options::replace_outputs`] replaced after its backup), locked until it is replaced.
    fn examine_output(&mut self, out: &Path, options: &Options) -> Result<()> {
        let held =
            fsio::hold(out, fsio::Wait::UpTo(fsio::LOCK_WAIT)).map_err(|e| output_error(e, out))?;
        let Some(held) = held else {
            self.report.written = Some(out.to_path_buf());
            self.replacing = Replacing::Absent(out.to_path_buf());
            return Ok(());
        };
        let there = held.read().map_err(|e| output_error(e, out))?;
        if self.content.matches(&there)? {
            self.report.already_written = true;
            self.content = Content::Bytes(Vec::new());
            return Ok(());
        }
        let backup = output_backup(out, &there);
        if !options.replace_outputs {
            return Err(refused_output(
                out,
                &there,
                &self.content.to_bytes()?,
                &backup,
                self.report.to,
            ));
        }
        self.report.written = Some(out.to_path_buf());
        self.report.backup = Some(backup);
        let read = fsio::Fingerprint::of(&there);
        self.original = Some((there, out.to_path_buf()));
        self.replacing = Replacing::Held(held, read, fsio::Work::Output);
        Ok(())
    }

    /// The backup's temporary file, when there is a backup: written before the steps ran,
    /// or now from the bytes read, which are then let go, so that they are not held while
    /// the save's text is made and written.
    fn backup_temporary(&mut self) -> Result<Option<fsio::Pending>> {
        let backup = match (self.backup_file.take(), self.backup()) {
            (Some(written), _) => Some(written),
            (None, Some((backup, original, like))) => Some(
                fsio::write_temporary(backup, original, Some(like))
                    .map_err(|e| self.backup_error(e, ""))?,
            ),
            (None, None) => None,
        };
        self.original = None;
        Ok(backup)
    }

    /// Writes what goes to `out` to a temporary file beside it, which takes the permissions
    /// and owner of `like` when it is new; a streamed text that fails midway leaves none.
    fn write_save_temporary(&self, out: &Path, like: &Path) -> Result<fsio::Pending> {
        let write_error = |e| self.write_error(e, "");
        match &self.content {
            Content::Bytes(bytes) => {
                fsio::write_temporary(out, bytes, Some(like)).map_err(write_error)
            }
            Content::Text(save) => {
                fsio::write_temporary_streamed(out, Some(like), write_error, |sink| {
                    save.stream(Style::Pretty, sink)
                })
            }
        }
    }

    fn write_error(&self, e: std::io::Error, how: &str) -> Error {
        match &self.report.written {
            Some(out) if !self.in_place => {
                Error::io(e, format!("cannot write {}{how}", out.display()))
            }
            _ => Error::io(e, format!("cannot write the upgraded save{how}")),
        }
    }
}

/// A backup that could not be written; `how` follows the usual message: `" to disk"`, say.
fn backup_error(backup: &Path, e: std::io::Error, how: &str) -> Error {
    Error::io(
        e,
        format!("cannot write the backup {}{how}", backup.display()),
    )
}

/// Where the file found at the output `out`, holding `there`, is kept when it is replaced:
/// `<name>.v<N>.bak` for a save at version N, `<name>.bak` for anything else.
fn output_backup(out: &Path, there: &[u8]) -> PathBuf {
    let tag = Meta::from_slice(there)
        .ok()
        .map(|m| format!("v{}", m.version));
    fsio::backup_path(out, tag.as_deref(), there)
}

/// The refusal of an output that holds something else than the upgrade writes, a save at
/// version `to`. A save at `to` there, with other bytes, was played on since it was written,
/// or the source changed since: the message says so, without guessing which.
fn refused_output(out: &Path, there: &[u8], writes: &[u8], backup: &Path, to: u64) -> Error {
    let (stored, writing) = (Codec::of(there), Codec::of(writes));
    let text = |bytes| compress::decompress(bytes, compress::DEFAULT_LIMIT).ok();
    let what = match Meta::from_slice(there) {
        // Only the compression differs: the source was converted since, or --compress asks
        // another than an earlier run.
        Ok(_) if stored != writing && text(there).is_some_and(|t| Some(t) == text(writes)) => {
            format!(
                "the same save stored as {stored}, where this run writes it as {writing} (the \
                 source's compression, or --compress's)"
            )
        }
        Ok(meta) if meta.version == to => format!(
            "a save at version {to}, the version this upgrade writes, with other content: it \
             has changed since it was written, or the source changed"
        ),
        Ok(meta) => format!(
            "a save at version {}, not the version {to} this upgrade writes",
            meta.version
        ),
        Err(_) => "a file that is not a save".to_string(),
    };
    Error::new(
        ErrorKind::Usage,
        format!(
            "the output {} is already there and holds {what}; it is left as it is and \
             nothing was written (replacing it would keep it as {})",
            out.display(),
            backup.display()
        ),
    )
    .output_taken(backup.to_path_buf())
}

/// A file at the output that cannot be read or held (a folder, a FIFO, a lock held too
/// long).
fn output_error(e: std::io::Error, out: &Path) -> Error {
    if e.kind() == std::io::ErrorKind::WouldBlock {
        return Error::new(
            ErrorKind::Changed,
            format!(
                "another program held the lock of the output {} for {} s (a game storing \
                 it), so it is left as it is; run again once it is done",
                out.display(),
                fsio::LOCK_WAIT.as_secs_f32()
            ),
        );
    }
    Error::io(
        e,
        format!(
            "cannot read the output {}, so it is left as it is",
            out.display()
        ),
    )
}

/// Loads and upgrades the save at `path` for `target`, and says what to write.
fn upgrade_in_memory(
    upgrader: &mut Upgrader<'_>,
    path: &Path,
    target: Target<'_>,
    options: &Options,
) -> Result<ToWrite> {
    if let Target::To(out) | Target::CheckTo(out) = target {
        if fsio::same_path(path, out) {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "the output {} is the save itself; upgrading in place keeps a backup",
                    out.display()
                ),
            ));
        }
        refuse_link(out)?;
    }
    // In place, the save is locked from its reading to its replacing: a game storing it
    // through savechain meanwhile waits, and its save then replaces the upgraded one.
    let held = match target {
        Target::InPlace { .. } => fsio::hold_save(path)?,
        _ => None,
    };
    let mut original = fsio::read_save(path, held.as_ref())?;
    let codec = Codec::of(&original);
    // The text when it was compressed; a plain save's text is `original`.
    let mut unpacked = match compress::decompress(&original, options.max_text)? {
        Cow::Owned(text) => Some(text),
        Cow::Borrowed(_) => None,
    };
    let save = Save::from_slice_within(unpacked.as_deref().unwrap_or(&original), options.max_text)?;
    // How what is written is stored: as asked, or as the save is.
    let how = options
        .compression
        .unwrap_or_else(|| Compression::new(codec));
    let recompress = how.codec() != codec;
    let from = save.meta.version;
    let plan = upgrader.chain().plan_upgrade(&save, options)?;
    let mut todo = ToWrite {
        report: FileReport {
            from,
            to: plan.to,
            steps: Vec::new(),
            mods: plan.mods.clone(),
            written: None,
            backup: None,
            already_written: false,
            recompressed: false,
        },
        original: None,
        backup_file: None,
        content: Content::Bytes(Vec::new()),
        in_place: matches!(target, Target::InPlace { .. }),
        replacing: Replacing::Unchecked,
    };
    let nothing = nothing_to_do(&plan, &save.meta);
    let refuse_read_only = || {
        fsio::refuse_read_only(path).map_err(|e| {
            let hint = "; or upgrade it into another folder, leaving it as it is";
            Error::new(e.kind(), format!("{}{hint}", e.message()))
        })
    };
    match target {
        Target::Nowhere => {
            if !nothing || recompress {
                refuse_read_only()?;
            }
            todo.report.recompressed = nothing && recompress;
            todo.report.steps = plan.steps();
            return Ok(todo);
        }
        Target::CheckTo(out) => {
            todo.report.steps = plan.steps();
            let unchanged = Unchanged::of(unpacked, original, how, recompress, target);
            return check_output(todo, upgrader, save, &plan, unchanged, out, options);
        }
        _ if nothing => {
            let unchanged = Unchanged::of(unpacked, original, how, recompress, target);
            return todo.left_as_it_is(target, path, held, unchanged, options);
        }
        Target::InPlace { .. } => refuse_read_only()?,
        _ => {}
    }
    // In place, in the save's own codec, the bytes read are needed only for the save's
    // fingerprint and its backup: both are made before the steps run, and the bytes are
    // dropped rather than held beside the data the steps work on. The backup waits in its
    // temporary file, removed when the upgrade fails or changes nothing.
    let mut early = None;
    if let (Target::InPlace { backup }, false) = (target, recompress) {
        let read = fsio::Fingerprint::of(&original);
        let backup = match backup {
            true => {
                let file = fsio::backup_path(path, Some(&format!("v{from}")), &original);
                let pending = fsio::write_temporary(&file, &original, Some(path))
                    .map_err(|e| backup_error(&file, e, ""))?;
                Some((file, pending))
            }
            false => None,
        };
        early = Some((read, backup));
        original = Vec::new();
        unpacked = None;
    }
    // Into another path, in the save's own codec, the bytes read are written again only
    // when the steps change nothing: they are dropped too, and then read again, which must
    // find them as they were (nothing holds the source meanwhile).
    let mut dropped = None;
    if let (Target::To(_), false) = (target, recompress) {
        dropped = Some(fsio::Fingerprint::of(&original));
        original = Vec::new();
        unpacked = None;
    }
    let meta_read = save.meta.clone();
    let upgraded = upgrader.upgrade_by(save, &plan, options)?;
    let same = came_out_the_same(&upgraded, &meta_read);
    todo.report.steps = upgraded.steps;
    todo.report.mods = upgraded.mods;
    if same {
        if let Some(read) = dropped {
            original = read_again(path, &read)?;
        }
        // Not rewritten with the same content and a new backup.
        let unchanged = Unchanged::of(unpacked, original, how, recompress, target);
        return todo.left_as_it_is(target, path, held, unchanged, options);
    }
    todo.content = Content::of(upgraded.save, how)?;
    match target {
        Target::InPlace { backup } => {
            let (read, written_backup) = match early {
                Some(early) => early,
                None => (fsio::Fingerprint::of(&original), None),
            };
            if let Some(held) = held {
                todo.replacing = Replacing::Held(held, read, fsio::Work::Upgrade);
            }
            match written_backup {
                Some((file, pending)) => {
                    todo.report.backup = Some(file);
                    todo.backup_file = Some(pending);
                }
                None if backup => {
                    let backup = fsio::backup_path(path, Some(&format!("v{from}")), &original);
                    todo.report.backup = Some(backup);
                    todo.original = Some((original, path.to_path_buf()));
                }
                None => {}
            }
            todo.report.written = Some(path.to_path_buf());
        }
        Target::To(out) => todo.examine_output(out, options)?,
        Target::Nowhere | Target::CheckTo(_) => unreachable!("returned above"),
    }
    Ok(todo)
}

/// The bytes of the save at `path` again, which must be those `read` before its steps ran.
fn read_again(path: &Path, read: &fsio::Fingerprint) -> Result<Vec<u8>> {
    let again = fsio::read_save(path, None)?;
    if fsio::Fingerprint::of(&again) != *read {
        return Err(Error::new(
            ErrorKind::Changed,
            // Worded as `Held::check_unchanged` words it; the caller adds the file.
            "the save changed while it was being upgraded (another program rewrote it), so \
             nothing is written for it; run again to upgrade its new content",
        ));
    }
    Ok(again)
}

/// What a save that needs no upgrade is written as: the bytes read, or, when it is asked in
/// another codec, its text stored in that codec.
struct Unchanged {
    bytes: Vec<u8>,
    /// How an upgraded save is stored: as asked, or in the codec of the save read.
    how: Compression,
    recompressed: bool,
    /// When recompressed: the fingerprint of the bytes read, which the save must still
    /// have when it is replaced.
    read: Option<fsio::Fingerprint>,
    /// When recompressed and asked for: the bytes read, for the backup of a save
    /// recompressed in place (otherwise empty, so that they are not held meanwhile).
    original: Vec<u8>,
}

impl Unchanged {
    /// `original`, the bytes read, whose text is `unpacked` when they are compressed; `how`
    /// the compression asked, `recompress` whether its codec is not `original`'s; `target`
    /// says whether `original` is kept for a backup.
    fn of(
        unpacked: Option<Vec<u8>>,
        original: Vec<u8>,
        how: Compression,
        recompress: bool,
        target: Target<'_>,
    ) -> Unchanged {
        match recompress {
            false => Unchanged {
                bytes: original,
                how,
                recompressed: false,
                read: None,
                original: Vec::new(),
            },
            true => Unchanged {
                bytes: compress::compress(unpacked.as_deref().unwrap_or(&original), how),
                how,
                recompressed: true,
                read: Some(fsio::Fingerprint::of(&original)),
                original: match target {
                    Target::InPlace { backup: true } => original,
                    _ => Vec::new(),
                },
            },
        }
    }
}

/// [`Target::CheckTo`]: what an upgrade into `out` would find there. Nothing there, nothing
/// to check; otherwise the upgrade runs in memory, to compare what it would write.
fn check_output<'c>(
    mut todo: ToWrite,
    upgrader: &mut Upgrader<'c>,
    save: Save,
    plan: &Plan<'c>,
    unchanged: Unchanged,
    out: &Path,
    options: &Options,
) -> Result<ToWrite> {
    let nothing = nothing_to_do(plan, &save.meta);
    todo.report.recompressed = nothing && unchanged.recompressed;
    let there = match fsio::read_regular(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(todo),
        Err(e) => return Err(output_error(e, out)),
        Ok(there) => there,
    };
    let content = if nothing {
        Content::Bytes(unchanged.bytes)
    } else {
        let meta_read = save.meta.clone();
        let upgraded = upgrader.upgrade_by(save, plan, options)?;
        match came_out_the_same(&upgraded, &meta_read) {
            true => {
                todo.report.recompressed = unchanged.recompressed;
                Content::Bytes(unchanged.bytes)
            }
            false => Content::of(upgraded.save, unchanged.how)?,
        }
    };
    if content.matches(&there)? {
        todo.report.already_written = true;
    } else if !options.replace_outputs {
        let backup = output_backup(out, &there);
        let writes = content.to_bytes()?;
        return Err(refused_output(
            out,
            &there,
            &writes,
            &backup,
            todo.report.to,
        ));
    }
    Ok(todo)
}

/// No step to run, and no mod's mark to make or drop: the save needs no change.
fn nothing_to_do(plan: &Plan<'_>, meta: &Meta) -> bool {
    plan.is_empty() && !plan.changes_marks(meta)
}

/// Whether an upgrade that had work to do made the save it read (whose metadata was
/// `meta_read`) again: every mod with steps to run was held back again, marked as before.
fn came_out_the_same(upgraded: &Upgraded, meta_read: &Meta) -> bool {
    upgraded.steps.is_empty() && upgraded.save.meta == *meta_read
}

/// Save text upgraded in memory ([`Upgrader::upgrade_text`]), and how it got there.
#[derive(Debug)]
#[non_exhaustive]
pub struct UpgradedText {
    /// The upgraded save's canonical text (pretty, [`Save::to_vec`]); `None` when the
    /// upgrade changes nothing (no step to run, no mod's mark to make or drop), where the
    /// text as given stays the save, byte for byte, as [`upgrade_file`] leaves such a file.
    pub text: Option<Vec<u8>>,
    /// The save's version (the game's data version) before.
    pub from: u64,
    /// Its version after.
    pub to: u64,
    /// The steps that ran, the game's then each mod's ([`Upgraded::steps`]).
    pub steps: Vec<StepReport>,
    /// Where each mod's data stands after ([`Upgraded::mods`]).
    pub mods: Vec<ModReport>,
}

impl Upgrader<'_> {
    /// Upgrades the save whose text is `text` in memory, as [`upgrade_file`] upgrades a
    /// file: for a program that holds saves as text (a game's own storage, a script
    /// host), or that writes them itself.
    ///
    /// Text that is not a save, a save outside the chain's versions or of another game,
    /// and a step that fails are errors, said as for a file but naming none (the text's
    /// line and column, the path in the document, the step).
    ///
    /// Compressed text ([`crate::compress`]) is read too, within [`Options::max_text`]; the
    /// upgraded text is plain, whatever [`Options::compression`] says: a caller that keeps
    /// its saves compressed stores it with [`compress::compress`].
    ///
    /// ```
    /// use savechain::upgrade::{Chain, Step};
    /// use savechain::Options;
    ///
    /// let chain = Chain::new("1.1.0", vec![Step::lua(
    ///     "0001-health.lua",
    ///     "return function(data) print('hp', data.hp) data.health = data.hp * 10; data.hp = nil end",
    /// )?])?;
    /// let mut upgrader = chain.upgrader();
    /// let old = br#"{"meta": {"version": 1}, "data": {"hp": 3}}"#;
    /// let upgraded = upgrader.upgrade_text(old, &Options::default())?;
    /// assert_eq!((upgraded.from, upgraded.to), (1, 2));
    /// assert_eq!(upgraded.steps[0].printed, ["hp\t3"]);
    /// let text = upgraded.text.expect("a step ran");
    /// assert_eq!(savechain::Save::from_slice(&text)?.data.to_string(), r#"{"health":30}"#);
    ///
    /// // At the latest version already: nothing to change, the text stays as it is.
    /// assert!(upgrader.upgrade_text(&text, &Options::default())?.text.is_none());
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn upgrade_text(&mut self, text: &[u8], options: &Options) -> Result<UpgradedText> {
        let text = compress::decompress(text, options.max_text)?;
        let save = Save::from_slice_within(&text, options.max_text)?;
        let from = save.meta.version;
        let plan = self.chain().plan_upgrade(&save, options)?;
        if nothing_to_do(&plan, &save.meta) {
            return Ok(UpgradedText {
                text: None,
                from,
                to: plan.to,
                steps: Vec::new(),
                mods: plan.mods.clone(),
            });
        }
        let meta_read = save.meta.clone();
        let upgraded = self.upgrade_by(save, &plan, options)?;
        let text = match came_out_the_same(&upgraded, &meta_read) {
            true => None,
            false => Some(upgraded.save.to_vec()?),
        };
        Ok(UpgradedText {
            text,
            from,
            to: upgraded.to,
            steps: upgraded.steps,
            mods: upgraded.mods,
        })
    }
}

/// Makes the folder `out` goes in, unless it is there (a save's own folder, an output
/// folder's made for an earlier save): one look rather than a failed `mkdir` and a look.
fn make_folder(out: &Path) -> Result<()> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent.filter(|p| !p.is_dir()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io(e, format!("cannot make the folder {}", parent.display())))?;
    }
    Ok(())
}

/// Saves of a batch written together, so that one flush makes many files durable instead
/// of one flush a file (which the file system's journal serialises between jobs). Each save
/// joins with its files written to their temporaries ([`upgrade_file_in_group`]), and
/// [`WriteGroup::commit`] then, for all of them:
///
/// 1. flushes every temporary, backups and saves, to disk ([`fsio::make_durable`]);
/// 2. renames the backups, and flushes their folders: a save is replaced only once its
///    backup would survive a power cut;
/// 3. renames the saves, each right after checking that it is still the file read, with
///    the bytes read; their folders are flushed by the batch's [`fsio::FolderFlush`].
///
/// A kill at any moment leaves each save old or new (a rename is atomic), and never a
/// replaced save without its backup. A save that fails at any step fails alone (with the
/// others of a flush that failed), its temporaries removed.
///
/// Each save stays locked from its reading until its rename, so a game storing it through
/// savechain waits: at most its own upgrade, plus a second while the group gathers, plus
/// the upgrade of the save started within that second (a group that has gathered for a
/// second is committed before its worker starts another save), plus, in a batch, the end
/// of the writing of the group before it. A save that a program not taking the lock wrote
/// meanwhile fails the check and is left as that program made it; its backup, renamed in
/// step 2, is kept: it holds the save as it was read, which was the save's content until
/// then, and its name was free or held the same bytes already (an older backup is never
/// replaced), so keeping it loses nothing, where removing it could remove an identical
/// backup of an earlier run.
pub(crate) struct WriteGroup<K> {
    members: Vec<Member<K>>,
    bytes: usize,
    /// When the first member joined: its save's lock has been held since before.
    since: Option<Instant>,
}

struct Member<K> {
    key: K,
    source: PathBuf,
    todo: ToWrite,
    backup: Option<fsio::Pending>,
    save: fsio::Pending,
}

impl<K> WriteGroup<K> {
    /// Saves in a group at most when it is written as soon as it is full: a group's
    /// outcomes wait for its commit, and a kill loses its work.
    pub(crate) const MAX_SAVES: usize = 16;
    /// Saves in a group at most when it gathers on while the group before it is written
    /// ([`WriteGroup::is_full`]): the slower the flushes, the more saves each one serves.
    pub(crate) const MAX_SAVES_GATHERING: usize = 128;
    /// Bytes of a group's temporaries at most: large saves make small groups.
    const MAX_BYTES: usize = 4 << 20;
    /// How long a group gathers at most: a game storing a save of the group waits for its
    /// commit, so slow upgrades make small groups.
    const MAX_WAIT: Duration = Duration::from_secs(1);

    pub(crate) fn new() -> WriteGroup<K> {
        WriteGroup {
            members: Vec::new(),
            bytes: 0,
            since: None,
        }
    }

    /// Whether no save waits in the group.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether the group should be committed now, before another save is started: it has
    /// `most` saves ([`WriteGroup::MAX_SAVES`], or up to
    /// [`WriteGroup::MAX_SAVES_GATHERING`] while the group before it is being written, or
    /// fewer to stay within the open files a process may have), or its bytes, or its second.
    pub(crate) fn is_full(&self, most: usize) -> bool {
        self.members.len() >= most
            || self.bytes >= Self::MAX_BYTES
            || self.since.is_some_and(|t| t.elapsed() >= Self::MAX_WAIT)
    }

    /// Drops the group without writing: each member's temporaries are removed and its save
    /// (locked until now) is left as it was. The keys of the members, in order.
    pub(crate) fn abandon(&mut self) -> Vec<K> {
        self.bytes = 0;
        self.since = None;
        std::mem::take(&mut self.members)
            .into_iter()
            .map(|m| m.key)
            .collect()
    }

    /// Makes the group's files durable and renames them, in the order of [`WriteGroup`];
    /// the outcome of each save, by its key. The group is empty after.
    pub(crate) fn commit(&mut self, folders: &fsio::FolderFlush) -> Vec<(K, Result<FileReport>)> {
        self.bytes = 0;
        self.since = None;
        let members = std::mem::take(&mut self.members);
        let mut done = Vec::with_capacity(members.len());
        // Dropping a member's temporaries removes them.
        let failed = |m: Member<K>, e: Error| (m.key, Err(e.with_file(m.source)));

        // 1. One flush for every temporary.
        let files: Vec<&fsio::Pending> = members
            .iter()
            .flat_map(|m| m.backup.iter().chain([&m.save]))
            .collect();
        let mut flushed = fsio::make_durable(&files).into_iter();
        let mut ready = Vec::with_capacity(members.len());
        for m in members {
            let backup = m
                .backup
                .as_ref()
                .map(|_| flushed.next().expect("one a file"));
            let save = flushed.next().expect("one a file");
            match (backup.transpose(), save) {
                (Err(e), _) => {
                    let e = m.todo.backup_error(e, " to disk");
                    done.push(failed(m, e));
                }
                (_, Err(e)) => {
                    let e = m.todo.write_error(e, " to disk");
                    done.push(failed(m, e));
                }
                (Ok(_), Ok(())) => ready.push(m),
            }
        }

        // 2. The backups renamed, then their folders flushed, before any save is replaced.
        let mut backed_up = Vec::with_capacity(ready.len());
        let mut backup_folders = Vec::new();
        for mut m in ready {
            let Some(backup) = m.backup.take() else {
                backed_up.push((m, None));
                continue;
            };
            let dir = backup.dir().to_path_buf();
            match backup.rename() {
                Ok(_) => {
                    if !backup_folders.contains(&dir) {
                        backup_folders.push(dir.clone());
                    }
                    backed_up.push((m, Some(dir)));
                }
                Err(e) => {
                    let e = m.todo.backup_error(e, "");
                    done.push(failed(m, e));
                }
            }
        }
        let unflushed: Vec<(PathBuf, std::io::Error)> = backup_folders
            .into_iter()
            .filter_map(|dir| fsio::sync_dir(&dir).err().map(|e| (dir, e)))
            .collect();

        // 3. The saves renamed; their folders are flushed once, at the end of the batch.
        for (m, backup_dir) in backed_up {
            let failed_flush = unflushed
                .iter()
                .find(|(d, _)| Some(d) == backup_dir.as_ref());
            if let Some((_, e)) = failed_flush {
                let e = m
                    .todo
                    .backup_error(fsio::copy_error(e), ": cannot flush its folder");
                done.push(failed(m, e));
                continue;
            }
            let Member {
                key,
                source,
                todo,
                save,
                ..
            } = m;
            // As late as can be: a save that another program wrote meanwhile is not
            // replaced (its temporary is dropped, so removed).
            if let Err(e) = todo.check_unchanged() {
                done.push((key, Err(e.with_file(source))));
                continue;
            }
            let dir = save.dir().to_path_buf();
            match save.rename() {
                Ok(_) => {
                    folders.defer(&dir);
                    done.push((key, Ok(todo.report)));
                }
                Err(e) => done.push((key, Err(todo.write_error(e, "").with_file(source)))),
            }
        }
        done
    }
}

/// [`upgrade_file`] in a batch: the save's files are written to their temporaries and wait
/// in `group` for [`WriteGroup::commit`]. Returns the outcome now when there is nothing to
/// write or it failed; `None` when it waits in the group.
pub(crate) fn upgrade_file_in_group<K>(
    upgrader: &mut Upgrader<'_>,
    path: &Path,
    target: Target<'_>,
    options: &Options,
    group: &mut WriteGroup<K>,
    key: K,
) -> Option<Result<FileReport>> {
    let joined = upgrade_in_memory(upgrader, path, target, options).and_then(|mut todo| {
        let Some(out) = &todo.report.written else {
            return Ok(Some(todo.report));
        };
        let out = out.clone();
        let backup = todo.backup_temporary()?;
        // In place, the save's folder is there: the save was read from it.
        if !todo.in_place {
            make_folder(&out)?;
        }
        let save = todo.write_save_temporary(&out, path)?;
        // The bytes are in the temporaries now.
        todo.content = Content::Bytes(Vec::new());
        group.bytes += save.len() + backup.as_ref().map_or(0, fsio::Pending::len);
        group.since.get_or_insert_with(Instant::now);
        group.members.push(Member {
            key,
            source: path.to_path_buf(),
            todo,
            backup,
            save,
        });
        Ok(None)
    });
    joined.map_err(|e| e.with_file(path)).transpose()
}

/// Refuses an output path that is a symbolic link, naming where it points.
pub(crate) fn refuse_link(path: &Path) -> Result<()> {
    let Ok(to) = std::fs::read_link(path) else {
        return Ok(());
    };
    Err(Error::new(
        ErrorKind::Usage,
        format!(
            "{} is a symbolic link to {}: an output folder is written by savechain alone, \
             never through a link, so nothing was written there nor read from it; remove \
             the link, or choose another output folder",
            path.display(),
            to.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::names;
    use crate::upgrade::{Chain, Step};
    use crate::value::Value;

    #[cfg(unix)]
    #[test]
    fn a_read_only_save_is_refused_in_place_and_may_go_elsewhere() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        let original = r#"{"meta": {"version": 1}, "data": {}}"#;
        std::fs::write(&path, original).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let step = Step::lua("0001-x.lua", "return function(d) d.x = 1 end").unwrap();
        let chain = Chain::new("1.0.0", vec![step]).unwrap();
        let options = Options::default();
        let in_place = Target::InPlace { backup: true };
        let err = upgrade_file(&mut chain.upgrader(), &path, in_place, &options).unwrap_err();
        assert!(err.to_string().contains("the save is read-only"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no backup"
        );
        let out = dir.path().join("out.json");
        upgrade_file(&mut chain.upgrader(), &path, Target::To(&out), &options).unwrap();
        assert_eq!(Save::load(&out).unwrap().meta.version, 2);
    }

    fn x_chain() -> Chain {
        let step = Step::lua("0001-x.lua", "return function(d) d.x = 1 end").unwrap();
        Chain::new("1.0.0", vec![step]).unwrap()
    }

    /// A program that does not take the lock rewrites the save right before its replace:
    /// the upgrade fails saying so, and the new save is left as it was written.
    #[test]
    fn a_save_rewritten_during_its_upgrade_is_not_replaced() {
        use crate::fsio::watch;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        let original = r#"{"meta": {"version": 1}, "data": {}}"#;
        let newer = r#"{"meta": {"version": 1}, "data": {"newer": true}}"#;
        std::fs::write(&path, original).unwrap();
        let at = path.clone();
        watch::act(dir.path(), "check", move |_| {
            std::fs::write(&at, newer).unwrap()
        });
        let in_place = Target::InPlace { backup: true };
        let options = Options::default();
        let err = upgrade_file(&mut x_chain().upgrader(), &path, in_place, &options).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Changed);
        assert!(
            err.to_string()
                .contains("world.json: the save changed while it was being upgraded"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
        // The backup, written before, holds the save as it was read; no temporary is left.
        let backup = dir.path().join("world.json.v1.bak");
        assert_eq!(std::fs::read_to_string(backup).unwrap(), original);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// A backup whose folder cannot be flushed would not survive a power cut: the save is
    /// not replaced (as in a batch's group), and the error says which backup.
    #[test]
    fn a_save_is_not_replaced_when_its_backups_folder_cannot_be_flushed() {
        use crate::fsio::watch;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        let original = r#"{"meta": {"version": 1}, "data": {}}"#;
        std::fs::write(&path, original).unwrap();
        watch::watch(dir.path(), Some("flush folder"));
        let in_place = Target::InPlace { backup: true };
        let options = Options::default();
        let err = upgrade_file(&mut x_chain().upgrader(), &path, in_place, &options).unwrap_err();
        assert!(
            err.to_string().contains("cannot write the backup")
                && err.to_string().contains("to disk"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(
            names.iter().all(|n| !fsio::is_temporary(n.as_ref())),
            "{names:?}"
        );
    }

    /// A current save recompressed in place is held and checked as an upgraded one is: one
    /// rewritten meanwhile by a program that does not take the lock is left as written.
    #[test]
    fn a_save_rewritten_during_its_recompression_is_not_replaced() {
        use crate::fsio::watch;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        let original = r#"{"meta": {"version": 2}, "data": {}}"#;
        let newer = r#"{"meta": {"version": 2}, "data": {"newer": true}}"#;
        std::fs::write(&path, original).unwrap();
        let at = path.clone();
        watch::act(dir.path(), "check", move |_| {
            std::fs::write(&at, newer).unwrap()
        });
        let err = recompress(dir.path(), "world.json", false).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Changed, "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
        // The backup, renamed before the check, holds the save as it was read; no temporary.
        let backup = dir.path().join("world.json.v2.bak");
        assert_eq!(std::fs::read_to_string(backup).unwrap(), original);
        assert_eq!(names(dir.path()), ["world.json", "world.json.v2.bak"]);
    }

    fn zstd() -> Options {
        Options {
            compression: Some(Compression::new(Codec::Zstd)),
            ..Options::default()
        }
    }

    /// Recompresses the current save `name` in `dir` to zstd in place with a backup, by
    /// itself or in a batch's group: its report, or its error.
    fn recompress(dir: &Path, name: &str, grouped: bool) -> Result<FileReport> {
        let path = dir.join(name);
        let in_place = Target::InPlace { backup: true };
        let chain = x_chain();
        let mut upgrader = chain.upgrader();
        if !grouped {
            return upgrade_file(&mut upgrader, &path, in_place, &zstd());
        }
        let mut group = WriteGroup::new();
        let joined = upgrade_file_in_group(&mut upgrader, &path, in_place, &zstd(), &mut group, 0);
        if let Some(done) = joined {
            return done;
        }
        group.commit(&fsio::FolderFlush::default()).remove(0).1
    }

    /// A current save recompressed in place keeps the bytes it had as an upgrade keeps its
    /// original, `<name>.v<N>.bak`: renamed, its folder flushed, before the save is
    /// replaced, alone and in a batch's group.
    #[test]
    fn a_recompressed_save_is_replaced_only_once_its_backup_is_durable() {
        use crate::fsio::watch;
        let original = r#"{"meta": {"version": 2}, "data": {}}"#;
        for grouped in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("world.json"), original).unwrap();
            watch::watch(dir.path(), None);
            let report = recompress(dir.path(), "world.json", grouped).unwrap();
            assert!(report.recompressed && report.was_current());
            let backup = dir.path().join("world.json.v2.bak");
            assert_eq!(report.backup.as_deref(), Some(backup.as_path()));
            assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
            let written = std::fs::read(dir.path().join("world.json")).unwrap();
            assert_eq!(Codec::of(&written), Codec::Zstd);
            assert_eq!(names(dir.path()), ["world.json", "world.json.v2.bak"]);
            let log = watch::log(dir.path());
            let at = |what: &str| log.iter().position(|l| l == what);
            let backup_renamed = at("rename world.json.v2.bak").expect("renamed");
            let save_renamed = at("rename world.json").expect("renamed");
            let flushed = log[backup_renamed..save_renamed]
                .iter()
                .any(|l| l == "flush folder");
            assert!(flushed, "grouped {grouped}: {log:?}");
        }
    }

    /// A recompression whose backup cannot be written (a folder where it goes) or made
    /// durable (its folder's flush fails) leaves the save as it was, and no temporary,
    /// alone and in a batch's group; the error names the backup.
    #[test]
    fn a_recompression_whose_backup_cannot_be_kept_leaves_the_save_as_it_was() {
        use crate::fsio::watch;
        let original = r#"{"meta": {"version": 2}, "data": {}}"#;
        for (grouped, flush_fails) in [(false, false), (true, false), (false, true), (true, true)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("world.json");
            std::fs::write(&path, original).unwrap();
            let backup = dir.path().join("world.json.v2.bak");
            if flush_fails {
                // The backup, renamed before its folder's flush failed, stays: it holds the
                // save as it was.
                watch::watch(dir.path(), Some("flush folder"));
            } else {
                std::fs::create_dir(&backup).unwrap();
                std::fs::write(backup.join("x"), "").unwrap();
            }
            let err = recompress(dir.path(), "world.json", grouped).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(&format!("cannot write the backup {}", backup.display())),
                "grouped {grouped}, flush {flush_fails}: {message}"
            );
            assert_eq!(err.file(), Some(path.as_path()), "{message}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
            let left = ["world.json", "world.json.v2.bak"];
            assert_eq!(names(dir.path()), left, "no temporary");
        }
    }

    /// Replacing an output that holds something else (asked for): a program that does
    /// not take the lock rewrites the output right before the upgraded save would replace
    /// it. The upgrade fails saying so, the output is left as that program wrote it, and
    /// its backup holds what was there when it was read.
    #[test]
    fn an_output_rewritten_while_it_is_replaced_is_left_as_written() {
        use crate::fsio::watch;
        let sources = tempfile::tempdir().unwrap();
        let outputs = tempfile::tempdir().unwrap();
        let path = sources.path().join("world.json");
        std::fs::write(&path, r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
        let out = outputs.path().join("world.json");
        let older = r#"{"meta": {"version": 2}, "data": {"played": 1}}"#;
        let newer = r#"{"meta": {"version": 2}, "data": {"played": 2}}"#;
        std::fs::write(&out, older).unwrap();
        let at = out.clone();
        watch::act(outputs.path(), "check", move |_| {
            std::fs::write(&at, newer).unwrap()
        });
        let options = Options {
            replace_outputs: true,
            ..Options::default()
        };
        let target = Target::To(&out);
        let err = upgrade_file(&mut x_chain().upgrader(), &path, target, &options).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Changed);
        assert!(
            err.to_string()
                .contains("changed while the save was being upgraded into it"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), newer);
        let backup = outputs.path().join("world.json.v2.bak");
        assert_eq!(std::fs::read_to_string(backup).unwrap(), older);
        assert_eq!(std::fs::read_dir(outputs.path()).unwrap().count(), 2);
    }

    /// A writer holding the save's lock (a game storing it) is waited for, and the save it
    /// renamed into place is the one upgraded.
    #[test]
    fn an_upgrade_waits_for_a_writer_and_upgrades_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        std::fs::write(&path, r#"{"meta": {"version": 1}, "data": {}}"#).unwrap();
        let game = fsio::hold(&path, fsio::Wait::Forever).unwrap().unwrap();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                let newer = r#"{"meta": {"version": 1}, "data": {"newer": true}}"#;
                let renamed = fsio::write_atomic_like(&path, newer.as_bytes(), None).unwrap();
                drop(game);
                drop(renamed);
            })
        };
        let in_place = Target::InPlace { backup: false };
        let options = Options::default();
        upgrade_file(&mut x_chain().upgrader(), &path, in_place, &options).unwrap();
        writer.join().unwrap();
        let save = Save::load(&path).unwrap();
        assert_eq!(save.data.to_string(), r#"{"newer":true,"x":1}"#);
    }

    #[test]
    fn writing_over_the_save_itself_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        let original = r#"{"meta": {"version": 1}, "data": {}}"#;
        std::fs::write(&path, original).unwrap();
        let step = Step::lua("0001-x.lua", "return function(d) d.x = 1 end").unwrap();
        let chain = Chain::new("1.0.0", vec![step]).unwrap();
        let mut outs = vec![path.clone(), dir.path().join(".").join("world.json")];
        #[cfg(unix)]
        {
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            outs.push(link);
        }
        for out in outs {
            let err = upgrade_file(
                &mut chain.upgrader(),
                &path,
                Target::To(&out),
                &Options::default(),
            )
            .unwrap_err();
            assert!(err.to_string().contains("is the save itself"), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        }
    }

    /// A version 1 save of `n` members, each an object, several pieces of text long once
    /// upgraded.
    fn large_save(n: usize) -> String {
        let members: Vec<String> = (0..n)
            .map(|i| format!(r#""m{i:05}": {{"hp": {i}, "name": "crew {i}", "at": [1, 2, 3]}}"#))
            .collect();
        format!(
            r#"{{"meta": {{"version": 1}}, "data": {{{}}}}}"#,
            members.join(", ")
        )
    }

    /// Nests the data deeper than any reader reads: its text cannot be written.
    fn too_deep(
        data: &mut Value,
        _: &mut crate::upgrade::StepContext,
    ) -> std::result::Result<(), String> {
        let mut deep = Value::Null;
        for _ in 0..crate::text::MAX_DEPTH + 1 {
            deep = Value::Array(vec![deep]);
        }
        if let Value::Object(map) = data {
            map.insert("zz", deep);
        }
        Ok(())
    }

    /// The upgraded text is streamed to the file: the bytes are those of the text made
    /// whole ([`Upgrader::upgrade_text`]), over many pieces, alone and in a batch's group.
    #[test]
    fn a_streamed_upgrade_writes_the_bytes_of_the_text_made_whole() {
        let dir = tempfile::tempdir().unwrap();
        let original = large_save(4000);
        let chain = x_chain();
        let options = Options::default();
        let whole = chain
            .upgrader()
            .upgrade_text(original.as_bytes(), &options)
            .unwrap()
            .text
            .unwrap();
        assert!(whole.len() > 4 * crate::text::write::PIECE);
        let path = dir.path().join("alone.json");
        std::fs::write(&path, &original).unwrap();
        let in_place = Target::InPlace { backup: true };
        upgrade_file(&mut chain.upgrader(), &path, in_place, &options).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        let backup = dir.path().join("alone.json.v1.bak");
        assert_eq!(std::fs::read_to_string(backup).unwrap(), original);

        let path = dir.path().join("grouped.json");
        std::fs::write(&path, &original).unwrap();
        let mut group = WriteGroup::new();
        let waits = upgrade_file_in_group(
            &mut chain.upgrader(),
            &path,
            in_place,
            &options,
            &mut group,
            0,
        );
        assert!(waits.is_none());
        let folders = fsio::FolderFlush::default();
        let done = group.commit(&folders);
        assert!(done[0].1.is_ok(), "{:?}", done[0].1);
        assert_eq!(std::fs::read(&path).unwrap(), whole);
    }

    /// An output already holding the upgraded text is found so by comparing it piece by
    /// piece as the text is made; one that differs in its last byte, or holds a prefix of
    /// it, is not.
    #[test]
    fn an_output_is_compared_with_the_streamed_text_to_its_last_byte() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("world.json");
        std::fs::write(&source, large_save(4000)).unwrap();
        let out = dir.path().join("out").join("world.json");
        let chain = x_chain();
        let options = Options::default();
        upgrade_file(&mut chain.upgrader(), &source, Target::To(&out), &options).unwrap();
        let written = std::fs::read(&out).unwrap();
        let report =
            upgrade_file(&mut chain.upgrader(), &source, Target::To(&out), &options).unwrap();
        assert!(report.already_written);
        let mut last_changed = written.clone();
        *last_changed.last_mut().unwrap() = b' ';
        for other in [last_changed, written[..written.len() - 1].to_vec()] {
            std::fs::write(&out, &other).unwrap();
            for target in [Target::To(&out), Target::CheckTo(&out)] {
                let err =
                    upgrade_file(&mut chain.upgrader(), &source, target, &options).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Usage, "{err}");
                assert!(err.to_string().contains("is already there"), "{err}");
            }
            assert_eq!(std::fs::read(&out).unwrap(), other);
        }
    }

    /// A save whose upgraded text cannot be written, for a value nested too deeply or a disk
    /// that fills midway, is left as it was, alone or in a group: no backup, no temporary.
    #[test]
    fn a_streamed_upgrade_that_fails_midway_leaves_the_save_as_it_was() {
        let deep = Chain::new(
            "1.0.0",
            vec![Step::rust(1, "nests too deep", "1", too_deep)],
        )
        .unwrap();
        for (chain, full) in [(&deep, false), (&x_chain(), true)] {
            let dir = tempfile::tempdir().unwrap();
            if full {
                fsio::full_disk::fill(dir.path());
            }
            let original = large_save(4000);
            let (err, group_err) = fail_alone_and_in_a_group(chain, dir.path(), &original);
            for err in [&err, &group_err] {
                match full {
                    false => {
                        assert_eq!(err.kind(), ErrorKind::Value, "{err}");
                        assert!(err.to_string().contains("nested more than"), "{err}");
                    }
                    true => assert!(
                        err.to_string().contains(
                            "cannot write the upgraded save: no space left on the device"
                        ),
                        "{err}"
                    ),
                }
            }
            assert_eq!(names(dir.path()), ["alone.json", "grouped.json"]);
            for name in ["alone.json", "grouped.json"] {
                let now = std::fs::read_to_string(dir.path().join(name)).unwrap();
                assert_eq!(now, original);
            }
        }
    }

    /// In place, the backup is written to its temporary before the steps run: a step that
    /// fails leaves neither it nor a backup, alone or in a group.
    #[test]
    fn a_failing_step_leaves_no_backup_written_before_it_ran() {
        let step = Step::lua("0001-x.lua", "return function(d) error('no') end").unwrap();
        let chain = Chain::new("1.0.0", vec![step]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (err, group_err) = fail_alone_and_in_a_group(&chain, dir.path(), &large_save(100));
        for err in [err, group_err] {
            assert!(err.to_string().contains("0001-x.lua"), "{err}");
        }
        assert_eq!(names(dir.path()), ["alone.json", "grouped.json"]);
    }

    /// Upgrades `original` in place with a backup in `dir`, as `alone.json` by itself and
    /// as `grouped.json` in a batch's group, both expected to fail: their errors.
    fn fail_alone_and_in_a_group(chain: &Chain, dir: &Path, original: &str) -> (Error, Error) {
        let in_place = Target::InPlace { backup: true };
        let options = Options::default();
        let (alone, grouped) = (dir.join("alone.json"), dir.join("grouped.json"));
        std::fs::write(&alone, original).unwrap();
        std::fs::write(&grouped, original).unwrap();
        let err = upgrade_file(&mut chain.upgrader(), &alone, in_place, &options).unwrap_err();
        let mut group = WriteGroup::new();
        let joined = upgrade_file_in_group(
            &mut chain.upgrader(),
            &grouped,
            in_place,
            &options,
            &mut group,
            0,
        );
        (err, joined.expect("failed before joining").unwrap_err())
    }

    /// Two saves whose names are not UTF-8 and differ only there: each keeps its own
    /// backup, also when both are upgraded at once.
    #[cfg(unix)]
    #[test]
    fn saves_whose_names_are_not_utf8_keep_backups_of_their_own() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let step = Step::lua("0001-x.lua", "return function(d) d.x = 1 end").unwrap();
        let chain = Chain::new("1.0.0", vec![step]).unwrap();
        let names: Vec<PathBuf> = [&b"caf\xe9.json"[..], &b"caf\xe8.json"[..]]
            .iter()
            .map(|n| dir.path().join(std::ffi::OsStr::from_bytes(n)))
            .collect();
        for (i, path) in names.iter().enumerate() {
            std::fs::write(
                path,
                format!(r#"{{"meta": {{"version": 1}}, "data": {{"i": {i}}}}}"#),
            )
            .unwrap();
        }
        std::thread::scope(|scope| {
            for path in &names {
                let chain = &chain;
                scope.spawn(move || {
                    let report = upgrade_file(
                        &mut chain.upgrader(),
                        path,
                        Target::InPlace { backup: true },
                        &Options::default(),
                    )
                    .unwrap();
                    let mut expected = path.as_os_str().to_os_string();
                    expected.push(".v1.bak");
                    assert_eq!(report.backup, Some(PathBuf::from(expected)));
                });
            }
        });
        for (i, path) in names.iter().enumerate() {
            let mut backup = path.as_os_str().to_os_string();
            backup.push(".v1.bak");
            let kept = std::fs::read_to_string(PathBuf::from(backup)).unwrap();
            assert_eq!(
                kept,
                format!(r#"{{"meta": {{"version": 1}}, "data": {{"i": {i}}}}}"#)
            );
        }
    }
}
