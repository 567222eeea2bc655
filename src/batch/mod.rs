//! Upgrading many save files at once (a player's folder, a server's millions): which files,
//! where each one goes, in parallel, with each outcome handed back in path order.
//!
//! The policies a tool over folders needs live here, so that a game's own launcher or tool
//! gets the same as `save-upgrade`: links followed and loops left out, each file once, a
//! file that is not a save skipped, an output folder that overlaps a source refused, a
//! read-only save left alone, the temporary files of killed runs removed.
//!
//! ```
//! use savechain::batch::{Batch, Mode, Status};
//! use savechain::upgrade::{Chain, Step};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("saves"))?;
//! std::fs::write(dir.path().join("saves/slot1.json"), r#"{"meta": {"version": 1}, "data": {}}"#)?;
//! std::fs::write(dir.path().join("saves/settings.json"), r#"{"volume": 7}"#)?;
//! let chain = Chain::new("1.1.0", vec![Step::lua("0001-gold.lua", "return function(d) d.gold = 0 end")?])?;
//!
//! let out = dir.path().join("upgraded");
//! let batch = Batch::new(&chain, Mode::OutDir(out.clone()));
//! let plan = batch.plan(&[dir.path().join("saves")])?;
//! let mut statuses = Vec::new();
//! let summary = batch.run(&plan, |outcome| {
//!     statuses.push((outcome.found.relative.clone(), outcome.status));
//!     std::ops::ControlFlow::Continue(())
//! })?;
//! assert_eq!(statuses, [("settings.json".into(), Status::NotASave), ("slot1.json".into(), Status::Upgraded)]);
//! assert_eq!((summary.upgraded, summary.not_saves, summary.failed), (1, 1, 0));
//! assert!(out.join("slot1.json").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod find;
pub(crate) mod out_dir;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};

use find::find_saves;
pub(crate) use find::save_ending;
pub use find::Found;

use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::lua::Limits;
use crate::options::Options;
use crate::upgrade::{upgrade_file_in_group, Chain, FileReport, StepReport, Target, WriteGroup};

/// What a batch does with each save.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Replace each save with its upgrade, keeping the original as `<name>.v<N>.bak` first
    /// when `backup` is set ([`Target::InPlace`]).
    InPlace {
        /// Keep each original as a backup.
        backup: bool,
    },
    /// Write each upgraded save under this folder at its place below the path it was found
    /// through, leaving the sources alone: a save found in a folder given keeps its place
    /// below that folder (`saves/` with `a/b.json` gives `<out>/a/b.json`), and a file given
    /// itself lands directly in the output folder, by its name (`x/a.json` gives
    /// `<out>/a.json`). A new output gets its source's permissions (and owner, when the
    /// user may give it); one that is there already keeps its own. A folder that is,
    /// contains or lies inside a source is refused by
    /// [`Batch::plan`], as are two saves that would land on one output.
    ///
    /// An output is stored in its source's codec ([`crate::compress`]) unless
    /// [`Options::compression`] asks for one; then an output whose name ends as a save's
    /// (`.json`, `.json.zst`, `.json.gz`) ends as one in that codec (`a.json` in zstd is
    /// `<out>/a.json.zst`), so the folder's names say what the files hold. In place, names
    /// never change: a game opens its saves by name, and reads any codec.
    ///
    /// An output already there is never replaced silently ([`Target::To`]): one holding
    /// exactly what the run writes is left alone ([`Status::AlreadyWritten`]), so a rerun
    /// over unchanged outputs writes nothing; one holding anything else fails its save,
    /// unless [`Options::replace_outputs`] asks to replace it after its backup.
    OutDir(PathBuf),
    /// Write nothing: say which saves are not at the target version, and which steps would
    /// run ([`FileReport::steps`]), for a run in place: a read-only save with work to do
    /// fails, as that run would fail it ([`Target::Nowhere`]).
    Check,
    /// Write nothing: say what a run of [`Mode::OutDir`] into this folder would do, as
    /// [`Mode::Check`] does, with its checks of the folder ([`Batch::plan`]) and of each
    /// output ([`Target::CheckTo`]): an output it would refuse fails its save; one that
    /// already holds what it would write is [`Status::AlreadyWritten`].
    CheckOutDir(PathBuf),
}

impl Mode {
    /// The output folder, for [`Mode::OutDir`] and [`Mode::CheckOutDir`].
    fn out_dir(&self) -> Option<&PathBuf> {
        match self {
            Mode::OutDir(out) | Mode::CheckOutDir(out) => Some(out),
            _ => None,
        }
    }

    /// Whether the run writes nothing.
    fn writes_nothing(&self) -> bool {
        matches!(self, Mode::Check | Mode::CheckOutDir(_))
    }
}

/// Many saves upgraded by one chain, on several threads.
pub struct Batch<'c> {
    chain: &'c Chain,
    mode: Mode,
    options: Options,
    jobs: usize,
    exclude: Vec<PathBuf>,
    shard: Option<(usize, usize)>,
    stop: Option<&'c AtomicBool>,
    abandon: Option<&'static AtomicBool>,
}

/// The saves a batch will work on, found and checked by [`Batch::plan`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Plan {
    /// The saves, in path order.
    pub saves: Vec<Found>,
    /// Paths left out on purpose, and why (a loop, a repeat, an excluded file).
    pub skipped: Vec<(PathBuf, String)>,
    /// Paths that could not be searched, and roots that hold no saves. The saves that were
    /// found can still be upgraded; a tool should report these as failures.
    pub errors: Vec<Error>,
    /// With [`Mode::OutDir`], each save's output path.
    targets: Vec<PathBuf>,
    folders: BTreeSet<PathBuf>,
}

impl Plan {
    /// The saves of `roots`, found as [`Batch::plan`] finds them (folders searched for
    /// `*.json`, `*.json.zst` and `*.json.gz`, links followed, each file once, what is not a regular file left out), for
    /// work on saves that is not an upgrade: formatting them, building their caches. No
    /// output folder, no shard. Each path given counts as named ([`Found::named`]): a file
    /// given that is not a save is an error, one found in a folder is skipped
    /// ([`Found::skips`]).
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("a.json"), r#"{"meta": {"version": 1}, "data": {}}"#)?;
    /// std::fs::write(dir.path().join("notes.txt"), "not a save")?;
    /// let plan = savechain::batch::Plan::find(&[dir.path()]);
    /// assert_eq!(plan.saves.len(), 1);
    /// assert!(plan.errors.is_empty());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn find(roots: &[impl AsRef<Path>]) -> Plan {
        let search = find_saves(roots, roots.len(), &[]);
        Plan {
            saves: search.saves,
            skipped: search.skipped,
            errors: search.errors,
            targets: Vec::new(),
            folders: search.folders,
        }
    }
}

/// What happened to one save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Upgraded and written.
    Upgraded,
    /// Already at the target version: left as it is (copied as it is to an output folder).
    Current,
    /// Already at the target version, but stored in another codec than
    /// [`Options::compression`] asks: its text, as it is, written in that codec (in place,
    /// its bytes kept first as an upgraded save's original is, or to the output folder);
    /// with [`Mode::Check`] and [`Mode::CheckOutDir`], it would be.
    Recompressed,
    /// [`Mode::Check`]: not at the target version.
    Outdated,
    /// [`Mode::OutDir`] (and [`Mode::CheckOutDir`]): its output already held exactly what
    /// the run writes (an earlier run's), so it was left alone, not written again.
    AlreadyWritten,
    /// JSON that is not a save ([`ErrorKind::NotASave`]), found in a folder or a list:
    /// left alone, not a failure. A file named itself ([`Found::named`]) fails instead.
    NotASave,
    /// It could not be loaded, upgraded or written; nothing was written.
    Failed,
}

impl Status {
    /// Its name in a report: `upgraded`, `current`, `recompressed`, `outdated`,
    /// `already-written`, `not-a-save`, `failed`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Upgraded => "upgraded",
            Status::Current => "current",
            Status::Recompressed => "recompressed",
            Status::Outdated => "outdated",
            Status::AlreadyWritten => "already-written",
            Status::NotASave => "not-a-save",
            Status::Failed => "failed",
        }
    }
}

/// One save's outcome.
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome<'p> {
    /// The save.
    pub found: &'p Found,
    /// What happened.
    pub status: Status,
    /// What was done or, with [`Mode::Check`], would be done.
    pub report: Option<FileReport>,
    /// Why it failed, or why it is not a save.
    pub error: Option<Error>,
    /// When a step failed: the steps that ran, the failing one last, with what they
    /// printed.
    pub failed_steps: Vec<StepReport>,
}

impl Outcome<'_> {
    /// The steps that ran or would run, or when one failed, those that ran up to it.
    pub fn steps(&self) -> &[StepReport] {
        match &self.report {
            Some(report) => &report.steps,
            None => &self.failed_steps,
        }
    }
}

/// The counts of a whole run.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Summary {
    /// Saves upgraded and written.
    pub upgraded: usize,
    /// Saves already at the target version.
    pub current: usize,
    /// Saves already at the target version, written (or, checking, to be written) in
    /// the codec asked ([`Status::Recompressed`]).
    pub recompressed: usize,
    /// With [`Mode::Check`], saves not at the target version.
    pub outdated: usize,
    /// Saves whose output already held what the run writes ([`Status::AlreadyWritten`]).
    pub already_written: usize,
    /// Files that are not saves.
    pub not_saves: usize,
    /// Saves that failed.
    pub failed: usize,
    /// Saves not started because the caller asked to stop.
    pub not_started: usize,
    /// Saves under way when the caller asked to stop at once ([`Batch::abandon_when`]):
    /// left as they were, nothing of theirs written.
    pub abandoned: usize,
    /// The paths of the saves not started ([`Summary::not_started`]), in the plan's
    /// order: a stopped run can say which saves it left for the next.
    pub not_started_saves: Vec<PathBuf>,
    /// The paths of the saves abandoned ([`Summary::abandoned`]), in the plan's order.
    pub abandoned_saves: Vec<PathBuf>,
    /// Temporary files of killed runs that were removed from the folders searched.
    pub stale_removed: Vec<PathBuf>,
    /// Folders whose flush failed at the end of the run: the saves renamed in them may be
    /// undone by a power cut (each one then as it was before). A tool should treat these
    /// as failures.
    pub unflushed: Vec<Error>,
}

impl<'c> Batch<'c> {
    /// A batch that upgrades with `chain` and does `mode` with each save, with default
    /// [`Options`] and as many threads as cores.
    pub fn new(chain: &'c Chain, mode: Mode) -> Batch<'c> {
        Batch {
            chain,
            mode,
            options: Options::default(),
            jobs: 0,
            exclude: Vec::new(),
            shard: None,
            stop: None,
            abandon: None,
        }
    }

    /// How to upgrade each save.
    pub fn options(mut self, options: Options) -> Batch<'c> {
        self.options = options;
        self
    }

    /// How many saves are upgraded at once (0: one per core). The Lua memory limit of each
    /// is lowered, if need be, so that all of them together fit in the memory available
    /// ([`Limits::for_jobs`]).
    pub fn jobs(mut self, jobs: usize) -> Batch<'c> {
        self.jobs = jobs;
        self
    }

    /// Leaves out `path` if a search meets it (a report written into a saves folder).
    pub fn exclude(mut self, path: impl AsRef<Path>) -> Batch<'c> {
        self.exclude.push(path.as_ref().to_path_buf());
        self
    }

    /// Takes only every `count`th save found, in path order, starting with the `index`th
    /// (from 1), so that `count` machines share one list of saves without talking to each
    /// other. Only the shard's saves are checked for outputs that collide. What the search
    /// could not read, and what it left out, is the first shard's to report.
    ///
    /// # Panics
    ///
    /// Unless `1 <= index <= count`.
    pub fn shard(mut self, index: usize, count: usize) -> Batch<'c> {
        assert!(1 <= index && index <= count, "shard {index}/{count}");
        self.shard = Some((index, count));
        self
    }

    /// Stops the run once `stop` is true (a tool sets it from its handler of Ctrl-C): no
    /// save is started after that, and each is counted in [`Summary::not_started`]; the
    /// saves under way finish their upgrade and are written with the others of their
    /// group, so that every outcome handed on is what is on disk and no temporary file is
    /// left. Setting it from a signal handler is safe: it is only stored to.
    pub fn stop_when(mut self, stop: &'c AtomicBool) -> Batch<'c> {
        self.stop = Some(stop);
        self
    }

    /// Stops the run at once when `abandon` is true (a tool's second request to stop): no
    /// save is started after that, and no save or backup is renamed into place; the saves
    /// under way are abandoned (their Lua steps interrupted at the next instruction count
    /// check, their temporary files removed, their saves left as they were, unlocked) and
    /// counted in [`Summary::abandoned`]. A group already writing its files finishes
    /// (a flush and renames), so every outcome handed on is what is on disk. Setting
    /// it from a signal handler is safe: it is only stored to. Implies
    /// [`Batch::stop_when`]'s stop.
    pub fn abandon_when(mut self, abandon: &'static AtomicBool) -> Batch<'c> {
        self.abandon = Some(abandon);
        self
    }

    /// Finds the saves of `roots` (as [`Plan::find`] does), keeps the shard's ([`Batch::shard`]:
    /// the paths that could not be searched, and those left out, are the first shard's),
    /// and checks that the run can do what is asked without harm. Fails, touching nothing,
    /// when the output folder overlaps a source or two saves would be written to one output.
    pub fn plan(&self, roots: &[impl AsRef<Path>]) -> Result<Plan> {
        self.plan_with_list(roots, &[] as &[PathBuf])
    }

    /// [`Batch::plan`] of the paths `named` (on a command line) and those `listed` (read
    /// from a list, such as `find`'s output): a file listed is taken as a folder's search
    /// would take it, so one that is not a save is skipped ([`Status::NotASave`]), where
    /// one named itself fails; like a file named, it lands directly in an output folder,
    /// by its file name.
    pub fn plan_with_list(
        &self,
        named: &[impl AsRef<Path>],
        listed: &[impl AsRef<Path>],
    ) -> Result<Plan> {
        let roots: Vec<&Path> = named
            .iter()
            .map(AsRef::as_ref)
            .chain(listed.iter().map(AsRef::as_ref))
            .collect();
        if let Some(out) = self.mode.out_dir() {
            out_dir::check_apart(out, &roots)?;
        }
        let mut exclude = self.exclude.clone();
        if let Some(out) = self.mode.out_dir() {
            exclude.push(out.clone());
        }
        let mut search = find_saves(&roots, named.len(), &exclude);
        if let Some((index, count)) = self.shard {
            let saves = std::mem::take(&mut search.saves).into_iter().enumerate();
            let mine = saves.filter(|(i, _)| i % count == index - 1);
            search.saves = mine.map(|(_, found)| found).collect();
            // Every shard searches the same paths: one reports what the search met, so
            // that the shards' reports add up to the batch's.
            if index != 1 {
                search.errors.clear();
                search.skipped.clear();
            }
        }
        let targets = match self.mode.out_dir() {
            Some(out) => {
                // A source may reach a folder through a link: the output may not lie there.
                let searched: Vec<&PathBuf> = search.searched.iter().collect();
                out_dir::check_apart(out, &searched)?;
                let codec = self.options.compression.map(|c| c.codec());
                out_dir::targets(out, &search.saves, codec)?
            }
            None => Vec::new(),
        };
        Ok(Plan {
            saves: search.saves,
            skipped: search.skipped,
            errors: search.errors,
            targets,
            folders: search.folders,
        })
    }

    /// Upgrades the saves of `plan` on the batch's threads and hands each outcome to `each`
    /// in path order, as soon as every save before it is done. When `each` breaks, or the
    /// flag of [`Batch::stop_when`] is set, saves not yet started are left alone (those
    /// under way finish) and the run ends.
    ///
    /// Each thread writes its saves in groups, so that one flush serves many files: the
    /// group's temporary files, backups and saves, are flushed to disk at once, then the
    /// backups renamed and their folders flushed, then the saves renamed; the folders of
    /// the saves are flushed at the end of the run ([`Summary::unflushed`]). A save's
    /// outcome is handed on once its group is written. A group is written by a thread of
    /// its own (one per job) while the job upgrades the next saves, so that upgrading never
    /// waits for the disk: a group of 16 saves (fewer when they are large) is handed over
    /// at once when the writer is free, and otherwise gathers on, up to 128, until it is.
    ///
    /// A group is committed sooner when a second has passed since its first save joined,
    /// so that no save stays locked long for the others' sake: a save's lock is held for
    /// its upgrade, then at most that second and the upgrade of the one save started
    /// within it, then the end of the writing of the group before it, and its own.
    ///
    /// In place, each save is locked from its reading until its rename, a lock that
    /// [`Save::store`](crate::Save::store) and [`cache::store`](crate::cache::store)
    /// respect: a game storing the save meanwhile waits, and then replaces the upgraded
    /// save. A save found locked by another writer is waited for a few seconds, then fails
    /// ([`ErrorKind::Changed`]). Right before each rename the save is checked to be the
    /// file read, with the bytes read; one that a program not taking the lock wrote
    /// meanwhile fails ([`ErrorKind::Changed`]) and is left as that program made it (a
    /// backup already renamed into place is kept: it holds the save as it was read).
    ///
    /// A writing run first removes the temporary files that killed runs left in the
    /// folders searched and in those of the output folder (those no writer holds locked).
    /// Fails only when the threads cannot be started.
    pub fn run<'p>(
        &self,
        plan: &'p Plan,
        mut each: impl FnMut(&Outcome<'p>) -> ControlFlow<()>,
    ) -> Result<Summary> {
        let mut summary = Summary::default();
        if !self.mode.writes_nothing() {
            // The folders searched, and those of an output folder that exist: a killed run
            // leaves up to a group of temporaries a job in either.
            let outputs: BTreeSet<&Path> = plan.targets.iter().filter_map(|t| t.parent()).collect();
            // Not through a link inside the output folder: that folder lies elsewhere.
            let inside = |folder: &Path| match (self.mode.out_dir(), folder) {
                (Some(out), folder) => folder
                    .strip_prefix(out)
                    .is_ok_and(|below| out_dir::refuse_links(out, below).is_ok()),
                (None, _) => true,
            };
            let outputs = outputs.into_iter().filter(|f| f.is_dir() && inside(f));
            for folder in plan.folders.iter().map(PathBuf::as_path).chain(outputs) {
                // Best effort: a folder that cannot be cleaned is still upgraded.
                if let Ok(removed) = fsio::remove_stale_temporaries(folder) {
                    summary.stale_removed.extend(removed);
                }
            }
        }
        let pool = self.pool(plan.saves.len())?;
        let mut options = self.options.clone();
        let share = Limits::for_jobs(pool.current_num_threads()).memory;
        options.limits.memory = options.limits.memory.min(share);
        options.limits.interrupt = crate::lua::Interrupt(self.abandon);
        let work = Work {
            batch: self,
            plan,
            options,
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            group_most: group_most(pool.current_num_threads()),
            folders: fsio::FolderFlush::default(),
        };
        let (sender, receiver) = std::sync::mpsc::channel();
        pool.in_place_scope(|scope| {
            for _ in 0..pool.current_num_threads() {
                let (work, sender) = (&work, sender.clone());
                scope.spawn(move |_| work.run(&sender));
            }
            // The receiver ends when every worker is done.
            drop(sender);
            in_order(receiver, |handed| {
                let outcome = match handed {
                    Handed::Done(outcome) => outcome,
                    Handed::NotStarted(found) => {
                        summary.not_started += 1;
                        return summary.not_started_saves.push(found.path.clone());
                    }
                    Handed::Abandoned(found) => {
                        summary.abandoned += 1;
                        return summary.abandoned_saves.push(found.path.clone());
                    }
                };
                summary.count(&outcome);
                if each(&outcome).is_break() {
                    work.stop.store(true, Ordering::Relaxed);
                }
            });
        });
        // Every rename is made durable before the run says it is done: one flush a folder.
        summary.unflushed = work
            .folders
            .flush()
            .into_iter()
            .map(|(dir, e)| Error::io(e, "cannot flush the folder to disk").with_file(dir))
            .collect();
        Ok(summary)
    }

    /// The threads of a run of `saves` saves: as many as asked (one per core by default),
    /// but no more than there are saves, since each costs a stack and a Lua state.
    fn pool(&self, saves: usize) -> Result<rayon::ThreadPool> {
        let threads = match self.jobs {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads.min(saves).max(1))
            .build()
            .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start threads: {e}")))
    }

    fn target<'p>(&self, plan: &'p Plan, i: usize) -> Target<'p> {
        match &self.mode {
            Mode::InPlace { backup } => Target::InPlace { backup: *backup },
            Mode::OutDir(_) => Target::To(&plan.targets[i]),
            Mode::Check => Target::Nowhere,
            Mode::CheckOutDir(_) => Target::CheckTo(&plan.targets[i]),
        }
    }

    fn outcome<'p>(
        &self,
        found: &'p Found,
        upgraded: Result<FileReport>,
        failed_steps: &[StepReport],
    ) -> Outcome<'p> {
        match upgraded {
            Ok(report) => {
                let status = match self.mode {
                    _ if report.already_written => Status::AlreadyWritten,
                    _ if report.recompressed => Status::Recompressed,
                    _ if report.was_current() => Status::Current,
                    Mode::Check | Mode::CheckOutDir(_) => Status::Outdated,
                    _ => Status::Upgraded,
                };
                Outcome {
                    found,
                    status,
                    report: Some(report),
                    error: None,
                    failed_steps: Vec::new(),
                }
            }
            Err(error) => Outcome {
                found,
                status: if found.skips(&error) {
                    Status::NotASave
                } else {
                    Status::Failed
                },
                report: None,
                error: Some(error),
                failed_steps: failed_steps.to_vec(),
            },
        }
    }
}

/// What the workers of one run share: the saves, the next one to take, and the folders to
/// flush at the end.
struct Work<'b, 'c, 'p> {
    batch: &'b Batch<'c>,
    plan: &'p Plan,
    options: Options,
    next: AtomicUsize,
    stop: AtomicBool,
    folders: fsio::FolderFlush,
    /// Saves a job's group holds at most, written at once and while the group before it
    /// is being written ([`group_most`]).
    group_most: (usize, usize),
}

/// The saves a group of each of `jobs` jobs holds at most, written at once and while the
/// group before it is being written: [`WriteGroup`]'s, or fewer, so that the open files
/// of every job's two groups (three a save: the locked save, its backup's temporary file
/// and its own) are at most half those the process may have.
fn group_most(jobs: usize) -> (usize, usize) {
    group_most_within(jobs, open_files_limit())
}

/// [`group_most`] for a process that may have `open_files` files open.
fn group_most_within(jobs: usize, open_files: usize) -> (usize, usize) {
    let budget = (open_files / 2 / (jobs.max(1) * 2 * 3)).max(1);
    let most = WriteGroup::<usize>::MAX_SAVES.min(budget);
    (
        most,
        WriteGroup::<usize>::MAX_SAVES_GATHERING
            .min(budget)
            .max(most),
    )
}

/// How many files the process may have open (its soft limit).
#[cfg(target_os = "linux")]
fn open_files_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` fills the struct it is given, which lives for the call.
    match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX),
        _ => 1024,
    }
}

/// How many files the process may have open, without asking: macOS's usual soft limit
/// elsewhere (Windows has no small limit on handles).
#[cfg(not(target_os = "linux"))]
fn open_files_limit() -> usize {
    256
}

/// What a worker hands on for one save.
enum Handed<'p> {
    Done(Outcome<'p>),
    NotStarted(&'p Found),
    Abandoned(&'p Found),
}

type Sender<'p> = std::sync::mpsc::Sender<(usize, Handed<'p>)>;

impl<'p> Work<'_, '_, 'p> {
    /// One worker: takes the next save until none is left, and sends each outcome once it
    /// is final. Saves to write wait in a group of the worker's ([`WriteGroup`]); a full
    /// group goes to the worker's writer, a thread that writes it while the worker
    /// upgrades the next saves, so that the worker does not wait for the disk's flushes
    /// (on a journaled file system two jobs' flushes wait for each other). One group at
    /// most is being written: the next is handed over once it is. When the run is stopped
    /// at once, the group being written finishes and the one gathering is abandoned.
    fn run(&self, sender: &Sender<'p>) {
        std::thread::scope(|scope| {
            // A rendezvous: a group is handed over when the writer is done with the last.
            let (to_writer, groups) = std::sync::mpsc::sync_channel::<WriteGroup<usize>>(0);
            let writer = std::thread::Builder::new()
                .name("savechain-writer".into())
                .spawn_scoped(scope, move || {
                    for mut group in groups {
                        self.write(&mut group, sender);
                    }
                });
            // Without a thread of its own (none to be had), the worker writes its groups.
            let to_writer = writer.is_ok().then_some(to_writer);
            self.upgrade(sender, to_writer.as_ref());
            drop(to_writer);
            if let Ok(writer) = writer {
                if let Err(panic) = writer.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
    }

    /// Writes `group` and sends the outcome of each of its saves; abandons it instead when
    /// the run was stopped at once while it waited for the writer.
    fn write(&self, group: &mut WriteGroup<usize>, sender: &Sender<'p>) {
        if self.abandoned() {
            self.abandon(group, sender);
            return;
        }
        for (i, upgraded) in group.commit(&self.folders) {
            let outcome = self.batch.outcome(&self.plan.saves[i], upgraded, &[]);
            drop(sender.send((i, Handed::Done(outcome))));
        }
    }

    /// Whether the run was stopped at once ([`Batch::abandon_when`]).
    fn abandoned(&self) -> bool {
        self.batch.abandon.is_some_and(|a| a.load(Ordering::SeqCst))
    }

    /// Drops `group` without writing it and hands each of its saves on as abandoned.
    fn abandon(&self, group: &mut WriteGroup<usize>, sender: &Sender<'p>) {
        for i in group.abandon() {
            drop(sender.send((i, Handed::Abandoned(&self.plan.saves[i]))));
        }
    }

    /// The worker's part of [`Work::run`]: the saves upgraded one after the other, each
    /// full group handed to `writer` (or written here without one).
    fn upgrade(&self, sender: &Sender<'p>, writer: Option<&SyncSender<WriteGroup<usize>>>) {
        let mut upgrader = self.batch.chain.upgrader();
        let mut group = WriteGroup::new();
        // The receiver lives until every worker is done.
        let send = |i, handed| drop(sender.send((i, handed)));
        // Hands the group to the writer, or writes it here without one; unless `wait`, only
        // when the writer is free: false when it was busy and the group gathers on.
        let commit = |group: &mut WriteGroup<usize>, wait: bool| {
            if self.abandoned() {
                self.abandon(group, sender);
                return true;
            }
            if group.is_empty() {
                return true;
            }
            let mut full = std::mem::replace(group, WriteGroup::new());
            // The writer ends only when this worker drops its sender, or when it panicked:
            // the worker then starts no other save, and the panic is raised when it joins.
            let sent = match writer {
                Some(writer) if wait => writer.send(full).map_err(|e| e.0),
                Some(writer) => match writer.try_send(full) {
                    Ok(()) => Ok(()),
                    Err(TrySendError::Full(full)) => {
                        *group = full;
                        return false;
                    }
                    Err(TrySendError::Disconnected(full)) => Err(full),
                },
                None => {
                    self.write(&mut full, sender);
                    Ok(())
                }
            };
            if let Err(mut unsent) = sent {
                self.stop.store(true, Ordering::SeqCst);
                self.abandon(&mut unsent, sender);
            }
            true
        };
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(found) = self.plan.saves.get(i) else {
                break;
            };
            let stopped = self.batch.stop.is_some_and(|s| s.load(Ordering::Relaxed));
            if stopped || self.abandoned() || self.stop.load(Ordering::Relaxed) {
                send(i, Handed::NotStarted(found));
                continue;
            }
            if let Some(out_dir) = self.batch.mode.out_dir() {
                if let Err(e) = out_dir::refuse_links(out_dir, &found.relative) {
                    let outcome = self
                        .batch
                        .outcome(found, Err(e.with_file(&found.path)), &[]);
                    send(i, Handed::Done(outcome));
                    continue;
                }
            }
            let target = self.batch.target(self.plan, i);
            let path = &found.path;
            let options = &self.options;
            let upgraded =
                upgrade_file_in_group(&mut upgrader, path, target, options, &mut group, i);
            if self.abandoned() {
                // Whatever it came to (a step interrupted fails), it was under way.
                if upgraded.is_some() {
                    send(i, Handed::Abandoned(found));
                }
                commit(&mut group, true);
                continue;
            }
            if let Some(upgraded) = upgraded {
                let outcome = self.batch.outcome(found, upgraded, upgrader.failed_steps());
                send(i, Handed::Done(outcome));
            }
            // Written as soon as it is full, or when the writer is still busy with the group
            // before, gathering on up to a larger group.
            let (most, gathering_most) = self.group_most;
            if group.is_full(most)
                && !commit(&mut group, writer.is_none())
                && group.is_full(gathering_most)
            {
                commit(&mut group, true);
            }
        }
        commit(&mut group, true);
    }
}

/// Hands on what arrives numbered in any order, in the order of the numbers: each as soon
/// as every one before it has arrived.
fn in_order<T>(arriving: impl IntoIterator<Item = (usize, T)>, mut each: impl FnMut(T)) {
    let mut waiting = BTreeMap::new();
    let mut next = 0;
    for (i, item) in arriving {
        waiting.insert(i, item);
        while let Some(item) = waiting.remove(&next) {
            next += 1;
            each(item);
        }
    }
}

impl Summary {
    fn count(&mut self, outcome: &Outcome<'_>) {
        let counter = match outcome.status {
            Status::Upgraded => &mut self.upgraded,
            Status::Current => &mut self.current,
            Status::Recompressed => &mut self.recompressed,
            Status::Outdated => &mut self.outdated,
            Status::AlreadyWritten => &mut self.already_written,
            Status::NotASave => &mut self.not_saves,
            Status::Failed => &mut self.failed,
        };
        *counter += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::watch;
    use crate::test_support::names;
    use crate::upgrade::Step;
    use std::fs;

    /// A step that fails on a save whose data has `bad`.
    fn chain() -> Chain {
        let source = "return function(d) if d.bad then error('bad save') end d.x = 1 end";
        Chain::new("1.0.0", vec![Step::lua("0001-x.lua", source).unwrap()]).unwrap()
    }

    fn old_save(data: &str) -> String {
        format!(r#"{{"meta": {{"version": 1}}, "data": {data}}}"#)
    }

    /// Runs a batch over `dir`; each save's status, by name.
    fn run(chain: &Chain, mode: Mode, jobs: usize, dir: &Path) -> Vec<(String, Status)> {
        let batch = Batch::new(chain, mode).jobs(jobs);
        let plan = batch.plan(&[dir]).unwrap();
        let mut statuses = Vec::new();
        let summary = batch
            .run(&plan, |outcome| {
                let name = outcome.found.relative.to_string_lossy().into_owned();
                statuses.push((name, outcome.status));
                ControlFlow::Continue(())
            })
            .unwrap();
        assert!(summary.unflushed.is_empty(), "{:?}", summary.unflushed);
        statuses
    }

    /// The folders of an output folder that are links lead elsewhere: a run neither
    /// writes there nor removes what looks like a killed run's temporary there.
    #[cfg(unix)]
    #[test]
    fn a_link_in_the_output_folder_is_neither_written_through_nor_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let saves = dir.path().join("saves");
        fs::create_dir_all(saves.join("v1")).unwrap();
        fs::write(saves.join("v1/a.json"), old_save("{}")).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join(".a.json.savechain-x.tmp"), "someone's").unwrap();
        let out = dir.path().join("out");
        fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&elsewhere, out.join("v1")).unwrap();
        let statuses = run(&chain(), Mode::OutDir(out), 1, &saves);
        assert_eq!(statuses, [("v1/a.json".to_string(), Status::Failed)]);
        assert_eq!(names(&elsewhere), [".a.json.savechain-x.tmp"]);
    }

    #[test]
    fn a_group_replaces_its_saves_only_once_their_backups_are_durable() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b", "c"] {
            fs::write(dir.path().join(format!("{name}.json")), old_save("{}")).unwrap();
        }
        watch::watch(dir.path(), None);
        let statuses = run(&chain(), Mode::InPlace { backup: true }, 1, dir.path());
        assert!(statuses.iter().all(|(_, s)| *s == Status::Upgraded));
        // One flush for the six temporaries; the backups renamed and their folder flushed
        // before any save is replaced; the saves' renames flushed at the end.
        // Each save is read under its lock, and checked again right before its rename.
        let expected = [
            "read a.json",
            "read b.json",
            "read c.json",
            "flush files 6",
            "rename a.json.v1.bak",
            "rename b.json.v1.bak",
            "rename c.json.v1.bak",
            "flush folder",
            "check a.json",
            "rename a.json",
            "check b.json",
            "rename b.json",
            "check c.json",
            "rename c.json",
            "flush folder",
        ];
        assert_eq!(watch::log(dir.path()), expected);
    }

    #[test]
    fn one_failing_save_leaves_the_rest_of_its_group_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let saves = dir.path().join("saves");
        fs::create_dir(&saves).unwrap();
        for name in ["a", "c", "d", "e"] {
            fs::write(saves.join(format!("{name}.json")), old_save("{}")).unwrap();
        }
        // A step fails on b; c's backup cannot be renamed into place (a folder with a file
        // has the name), which fails only when the group commits; into out/, a folder at
        // c's output is refused before c joins its group.
        let bad = old_save(r#"{"bad": true}"#);
        fs::write(saves.join("b.json"), &bad).unwrap();
        let c_backup = saves.join("c.json.v1.bak");
        fs::create_dir(&c_backup).unwrap();
        fs::write(c_backup.join("x"), "").unwrap();
        let expected = [
            ("a.json", Status::Upgraded),
            ("b.json", Status::Failed),
            ("c.json", Status::Failed),
            ("d.json", Status::Upgraded),
            ("e.json", Status::Upgraded),
        ]
        .map(|(n, s)| (n.to_string(), s));
        let chain = chain();
        let out = dir.path().join("out");
        fs::create_dir_all(out.join("c.json")).unwrap();
        fs::write(out.join("c.json").join("x"), "").unwrap();
        assert_eq!(run(&chain, Mode::OutDir(out.clone()), 1, &saves), expected);
        assert_eq!(
            names(&out),
            ["a.json", "c.json", "d.json", "e.json"],
            "b failed, c is the folder, no temporaries"
        );
        assert!(fs::read_to_string(out.join("a.json"))
            .unwrap()
            .contains(r#""x": 1"#));

        assert_eq!(
            run(&chain, Mode::InPlace { backup: true }, 1, &saves),
            expected
        );
        let upgraded = |name: &str| fs::read_to_string(saves.join(name)).unwrap();
        for name in ["a.json", "d.json", "e.json"] {
            assert!(upgraded(name).contains(r#""x": 1"#), "{name}");
            let backup = saves.join(format!("{name}.v1.bak"));
            assert_eq!(fs::read_to_string(backup).unwrap(), old_save("{}"));
        }
        assert_eq!(upgraded("b.json"), bad);
        assert_eq!(upgraded("c.json"), old_save("{}"));
        let backups = [
            "a.json.v1.bak",
            "c.json.v1.bak",
            "d.json.v1.bak",
            "e.json.v1.bak",
        ];
        let mut left = ["a.json", "b.json", "c.json", "d.json", "e.json"].to_vec();
        left.extend(backups);
        left.sort();
        assert_eq!(names(&saves), left, "no temporaries, no backup of b");
    }

    /// A slow upgrade does not keep the saves before it locked: a group that has gathered
    /// for a second is written before another save is started.
    #[test]
    fn slow_upgrades_make_small_groups() {
        use std::sync::atomic::AtomicUsize;
        static UPGRADED: AtomicUsize = AtomicUsize::new(0);
        fn slow(_: &mut crate::Value, _: &mut crate::upgrade::StepContext) -> Result<(), String> {
            std::thread::sleep(std::time::Duration::from_millis(1100));
            UPGRADED.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        let chain = Chain::new("1.0.0", vec![Step::rust(1, "slow", "1", slow)]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b", "c"] {
            fs::write(dir.path().join(format!("{name}.json")), old_save("{}")).unwrap();
        }
        let batch = Batch::new(&chain, Mode::InPlace { backup: false }).jobs(1);
        let plan = batch.plan(&[dir.path()]).unwrap();
        let mut upgraded_when_written = Vec::new();
        batch
            .run(&plan, |outcome| {
                assert_eq!(outcome.status, Status::Upgraded);
                upgraded_when_written.push(UPGRADED.load(Ordering::SeqCst));
                ControlFlow::Continue(())
            })
            .unwrap();
        // a joins its group; b's upgrade takes a second, so a and b are written before c
        // is started.
        assert_eq!(upgraded_when_written, [2, 2, 3]);
    }

    /// A private save stays private in an output folder, whether the batch or
    /// `upgrade_file` writes it; an output that is there already keeps its own mode.
    #[cfg(unix)]
    #[test]
    fn outputs_have_the_permissions_of_their_sources() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let saves = dir.path().join("saves");
        fs::create_dir(&saves).unwrap();
        for (name, bits) in [("private", 0o600), ("shared", 0o644)] {
            let path = saves.join(format!("{name}.json"));
            fs::write(&path, old_save("{}")).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(bits)).unwrap();
        }
        let chain = chain();
        let out = dir.path().join("out");
        fs::create_dir(&out).unwrap();
        fs::write(out.join("shared.json"), "an older output").unwrap();
        fs::set_permissions(out.join("shared.json"), fs::Permissions::from_mode(0o640)).unwrap();
        let options = Options {
            replace_outputs: true,
            ..Options::default()
        };
        let batch = Batch::new(&chain, Mode::OutDir(out.clone())).options(options);
        let plan = batch.plan(&[&saves]).unwrap();
        let summary = batch.run(&plan, |_| ControlFlow::Continue(())).unwrap();
        assert_eq!((summary.upgraded, summary.failed), (2, 0));
        assert_eq!(mode(&out.join("private.json")), 0o600);
        assert_eq!(mode(&out.join("shared.json")), 0o640);
        // What was there is kept, as private as it was.
        let kept = out.join("shared.json.bak");
        assert_eq!(fs::read_to_string(&kept).unwrap(), "an older output");
        assert_eq!(mode(&kept), 0o640);

        let single = dir.path().join("single.json");
        let target = crate::upgrade::Target::To(&single);
        let options = Options::default();
        let private = saves.join("private.json");
        crate::upgrade::upgrade_file(&mut chain.upgrader(), &private, target, &options).unwrap();
        assert_eq!(mode(&single), 0o600);
    }

    #[test]
    fn a_failed_flush_fails_the_saves_it_covers_and_leaves_them_as_they_were() {
        let chain = chain();
        for (fails, mode) in [
            ("flush files", Mode::InPlace { backup: true }),
            ("flush folder", Mode::InPlace { backup: true }),
            ("flush files", Mode::InPlace { backup: false }),
        ] {
            let dir = tempfile::tempdir().unwrap();
            for name in ["a", "b"] {
                fs::write(dir.path().join(format!("{name}.json")), old_save("{}")).unwrap();
            }
            watch::watch(dir.path(), Some(fails));
            let batch = Batch::new(&chain, mode.clone()).jobs(1);
            let plan = batch.plan(&[dir.path()]).unwrap();
            let mut errors = Vec::new();
            batch
                .run(&plan, |outcome| {
                    assert_eq!(outcome.status, Status::Failed, "{fails}, {mode:?}");
                    errors.push(outcome.error.as_ref().unwrap().to_string());
                    ControlFlow::Continue(())
                })
                .unwrap();
            assert_eq!(errors.len(), 2);
            for error in &errors {
                assert!(error.contains("failed (made to by a test)"), "{error}");
            }
            for name in ["a.json", "b.json"] {
                let now = fs::read_to_string(dir.path().join(name)).unwrap();
                assert_eq!(now, old_save("{}"), "{fails}, {mode:?}: {name}");
            }
            // The temporaries are gone; a backup whose folder flush failed may stay.
            let left = names(dir.path());
            assert!(
                left.iter().all(|n| !fsio::is_temporary(n.as_ref())),
                "{left:?}"
            );
        }
    }

    /// Another program (one that does not take the lock) writes b.json at several moments
    /// between its reading and its rename, by a rename or in place: the batch never
    /// replaces it, fails it saying why, and upgrades the others of its group.
    #[test]
    fn a_save_written_while_its_group_is_upgraded_is_left_as_written() {
        use std::sync::Arc;
        let chain = chain();
        let newer = old_save(r#"{"newer": true}"#);
        // When to write b: at an operation, on the file (or count) it is done to.
        type Moment = (&'static str, fn(&Path) -> bool);
        let moments: [Moment; 5] = [
            // After b is read, as c is.
            ("read", |what| what.ends_with("c.json")),
            ("flush files", |_| true),
            // The first backup's rename, before any save is replaced.
            ("rename", |_| true),
            ("flush folder", |_| true),
            // Right before b's own check and rename.
            ("check", |what| what.ends_with("b.json")),
        ];
        for (moment, when) in moments {
            for by_rename in [true, false] {
                let dir = tempfile::tempdir().unwrap();
                let elsewhere = tempfile::tempdir().unwrap();
                for name in ["a", "b", "c"] {
                    fs::write(dir.path().join(format!("{name}.json")), old_save("{}")).unwrap();
                }
                let b = dir.path().join("b.json");
                let written = Arc::new(AtomicBool::new(false));
                let (flag, newer_b, incoming) = (
                    written.clone(),
                    newer.clone(),
                    elsewhere.path().join("b.json"),
                );
                watch::act(dir.path(), moment, move |what| {
                    if !when(what) || flag.swap(true, Ordering::Relaxed) {
                        return;
                    }
                    if by_rename {
                        fs::write(&incoming, &newer_b).unwrap();
                        fs::rename(&incoming, &b).unwrap();
                    } else {
                        fs::write(&b, &newer_b).unwrap();
                    }
                });
                let batch = Batch::new(&chain, Mode::InPlace { backup: true }).jobs(1);
                let plan = batch.plan(&[dir.path()]).unwrap();
                let mut outcomes = Vec::new();
                batch
                    .run(&plan, |o| {
                        let error = o.error.as_ref().map(|e| (e.kind(), e.to_string()));
                        outcomes.push((o.found.relative.clone(), o.status, error));
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                let when = format!("{moment}, by rename {by_rename}");
                assert!(written.load(Ordering::Relaxed), "{when}: never written");
                let (_, status, error) = &outcomes[1];
                assert_eq!(*status, Status::Failed, "{when}");
                let (kind, message) = error.as_ref().unwrap();
                assert_eq!(*kind, ErrorKind::Changed, "{when}");
                assert!(
                    message.contains("b.json: the save changed while it was being upgraded")
                        && message.contains("run again"),
                    "{when}: {message}"
                );
                assert_eq!(
                    fs::read_to_string(dir.path().join("b.json")).unwrap(),
                    newer
                );
                for name in ["a.json", "c.json"] {
                    let upgraded = fs::read_to_string(dir.path().join(name)).unwrap();
                    assert!(upgraded.contains(r#""x": 1"#), "{when}: {name}");
                }
                // Every backup holds its original; b's, when its rename came before the
                // write, is kept (it holds b as it was read).
                for backup in ["a.json.v1.bak", "b.json.v1.bak", "c.json.v1.bak"] {
                    match fs::read_to_string(dir.path().join(backup)) {
                        Ok(text) => assert_eq!(text, old_save("{}"), "{when}: {backup}"),
                        Err(_) => assert!(backup.starts_with('b'), "{when}: {backup}"),
                    }
                }
                let left = names(dir.path());
                assert!(
                    left.iter().all(|n| !fsio::is_temporary(n.as_ref())),
                    "{when}: {left:?}"
                );
            }
        }
    }

    /// A game storing a save through the library while a batch upgrades it waits for the
    /// upgrade, and then its save replaces the upgraded one: the newest save wins.
    #[test]
    fn a_game_storing_a_save_during_its_upgrade_waits_and_its_save_wins() {
        use std::sync::{mpsc, Arc, Mutex};
        let chain = chain();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        fs::write(&path, old_save("{}")).unwrap();
        let game = crate::Save::new(2, crate::Value::from("the game's newest"));
        let storing = Arc::new(Mutex::new(None));
        let (handle, to_store, store_at) = (storing.clone(), game.clone(), path.clone());
        watch::act(dir.path(), "check", move |_| {
            let (sender, stored) = mpsc::channel();
            let (save, at) = (to_store.clone(), store_at.clone());
            let thread = std::thread::spawn(move || {
                save.store(&at).unwrap();
                let _ = sender.send(());
            });
            // The upgrade holds the lock: the store cannot be done before its rename.
            std::thread::sleep(std::time::Duration::from_millis(200));
            assert!(stored.try_recv().is_err(), "the store did not wait");
            *handle.lock().unwrap() = Some(thread);
        });
        let statuses = run(&chain, Mode::InPlace { backup: true }, 1, dir.path());
        assert_eq!(statuses, [("a.json".to_string(), Status::Upgraded)]);
        let thread = storing.lock().unwrap().take().expect("the action ran");
        thread.join().unwrap();
        assert_eq!(fs::read(&path).unwrap(), game.to_vec().unwrap());
        let backup = fs::read_to_string(dir.path().join("a.json.v1.bak")).unwrap();
        assert_eq!(backup, old_save("{}"));
    }

    #[test]
    fn only_the_shard_s_outputs_are_checked_for_collisions() {
        let dir = tempfile::tempdir().unwrap();
        // In path order: a/p, b/x, c/q, d/x; shard 1/2 is a/p and c/q.
        let files = ["a/p.json", "b/x.json", "c/q.json", "d/x.json"];
        for file in files {
            let path = dir.path().join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, old_save("{}")).unwrap();
        }
        let roots: Vec<PathBuf> = files.iter().map(|f| dir.path().join(f)).collect();
        let chain = chain();
        let mode = Mode::OutDir(dir.path().join("out"));
        let plan = Batch::new(&chain, mode.clone())
            .shard(1, 2)
            .plan(&roots)
            .unwrap();
        let shard: Vec<_> = plan.saves.iter().map(|f| f.relative.clone()).collect();
        assert_eq!(shard, [PathBuf::from("p.json"), PathBuf::from("q.json")]);
        let err = Batch::new(&chain, mode)
            .shard(2, 2)
            .plan(&roots)
            .unwrap_err();
        assert!(
            err.to_string().contains("would both be written to"),
            "{err}"
        );
    }

    /// A job's full group is written by its writer while the job upgrades the next saves:
    /// the first group's flush waits here until the next group's 18th save is read (none
    /// would be if the job wrote the group itself), so the group that gathers meanwhile
    /// takes more than 16 saves. Every save ends upgraded, with its backup.
    #[test]
    fn a_group_is_written_while_the_next_saves_are_upgraded() {
        use std::sync::{Arc, Mutex};
        let chain = chain();
        let dir = tempfile::tempdir().unwrap();
        let saves = 40;
        for i in 0..saves {
            fs::write(dir.path().join(format!("{i:02}.json")), old_save("{}")).unwrap();
        }
        // The count of each flush of files, and whether the first one saw 33.json read.
        let flushes = Arc::new(Mutex::new(Vec::new()));
        let (seen, watched) = (flushes.clone(), dir.path().to_path_buf());
        watch::act(dir.path(), "flush files", move |count| {
            let count: usize = count.to_string_lossy().parse().unwrap();
            let first = seen.lock().unwrap().is_empty();
            let mut overlapped = false;
            if first {
                // Held until the job reads the next group's 18th save, or long enough to be
                // sure it does not (a deadline, not a measure of speed).
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while !overlapped && std::time::Instant::now() < deadline {
                    overlapped = watch::log(&watched).iter().any(|op| op == "read 33.json");
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
            seen.lock().unwrap().push((count, overlapped));
        });
        let statuses = run(&chain, Mode::InPlace { backup: true }, 1, dir.path());
        assert_eq!(statuses.len(), saves);
        assert!(statuses.iter().all(|(_, s)| *s == Status::Upgraded));
        let flushes = flushes.lock().unwrap().clone();
        // Two files a save: its backup and itself.
        assert_eq!(flushes[0], (32, true), "{flushes:?}");
        assert!(
            flushes[1].0 > 32,
            "the second group gathered on: {flushes:?}"
        );
        let files: usize = flushes.iter().map(|(count, _)| count).sum();
        assert_eq!(files, 2 * saves);
        for i in 0..saves {
            let text = fs::read_to_string(dir.path().join(format!("{i:02}.json"))).unwrap();
            assert!(text.contains(r#""x": 1"#), "{i:02}.json");
            let backup = fs::read_to_string(dir.path().join(format!("{i:02}.json.v1.bak")));
            assert_eq!(backup.unwrap(), old_save("{}"));
        }
    }

    #[test]
    fn a_stop_flag_leaves_the_saves_not_started_alone() {
        // What a signal handler sets.
        static STOP: AtomicBool = AtomicBool::new(false);
        let chain = chain();
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            fs::write(dir.path().join(format!("{i}.json")), old_save("{}")).unwrap();
        }
        // Set while the second save is read: it finishes, no other is started.
        watch::act(dir.path(), "read", |what| {
            if what.ends_with("1.json") {
                STOP.store(true, Ordering::Relaxed);
            }
        });
        let batch = Batch::new(&chain, Mode::InPlace { backup: true })
            .jobs(1)
            .stop_when(&STOP);
        let plan = batch.plan(&[dir.path()]).unwrap();
        let mut handed = Vec::new();
        let summary = batch
            .run(&plan, |outcome| {
                handed.push((outcome.found.relative.clone(), outcome.status));
                ControlFlow::Continue(())
            })
            .unwrap();
        let upgraded = [("0.json", Status::Upgraded), ("1.json", Status::Upgraded)];
        assert_eq!(handed, upgraded.map(|(n, s)| (PathBuf::from(n), s)));
        assert_eq!((summary.upgraded, summary.not_started), (2, 3));
        for i in 0..5 {
            let text = fs::read_to_string(dir.path().join(format!("{i}.json"))).unwrap();
            assert_eq!(text.contains(r#""x": 1"#), i < 2, "{i}.json");
        }
        let left = names(dir.path());
        assert!(left.iter().all(|n| !fsio::is_temporary(n.as_ref())));
    }

    /// A run stopped at once while its job waits to hand a group to its busy writer: the
    /// group being written finishes, the one handed over after the stop is abandoned.
    #[test]
    fn a_group_handed_to_the_writer_after_an_abandon_is_not_written() {
        use std::sync::atomic::AtomicUsize;
        static ABANDON: AtomicBool = AtomicBool::new(false);
        static FLUSHES: AtomicUsize = AtomicUsize::new(0);
        let chain = chain();
        let dir = tempfile::tempdir().unwrap();
        let saves = 20;
        for i in 0..saves {
            fs::write(dir.path().join(format!("{i:02}.json")), old_save("{}")).unwrap();
        }
        let watched = dir.path().to_path_buf();
        watch::act(dir.path(), "flush files", move |_| {
            if FLUSHES.fetch_add(1, Ordering::SeqCst) > 0 {
                return;
            }
            // The first group's flush: held until the job has read the last save and gone
            // on to hand the rest over (a deadline, not a measure of speed), then stopped.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::time::Instant::now() < deadline
                && !watch::log(&watched).iter().any(|op| op == "read 19.json")
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            ABANDON.store(true, Ordering::SeqCst);
        });
        let batch = Batch::new(&chain, Mode::InPlace { backup: true })
            .jobs(1)
            .abandon_when(&ABANDON);
        let plan = batch.plan(&[dir.path()]).unwrap();
        let summary = batch.run(&plan, |_| ControlFlow::Continue(())).unwrap();
        assert_eq!(
            (summary.upgraded, summary.abandoned),
            (16, 4),
            "{summary:?}"
        );
        for i in 0..saves {
            let text = fs::read_to_string(dir.path().join(format!("{i:02}.json"))).unwrap();
            assert_eq!(text.contains(r#""x": 1"#), i < 16, "{i:02}.json");
        }
        let left = names(dir.path());
        assert_eq!(left.len(), saves + 16, "16 backups, no temporary: {left:?}");
    }

    #[test]
    fn groups_stay_within_the_open_files_a_process_may_have() {
        // Linux's usual soft limit: two jobs' two groups of three files a save.
        assert_eq!(group_most_within(2, 1024), (16, 42));
        assert_eq!(group_most_within(1, 1 << 20), (16, 128));
        assert_eq!(group_most_within(64, 1024), (1, 1));
        assert_eq!(group_most_within(8, 1024), (10, 10));
    }

    #[test]
    fn an_abandon_flag_interrupts_the_steps_under_way_and_writes_nothing_more() {
        static STOP: AtomicBool = AtomicBool::new(false);
        static ABANDON: AtomicBool = AtomicBool::new(false);
        // The first save is quick and waits in its group; the others never end by themselves.
        let source = "return function(d) if not d.quick then while true do end end d.x = 1 end";
        let step = Step::lua("0001-x.lua", source).unwrap();
        let chain = Chain::new("1.0.0", vec![step]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("0.json"), old_save(r#"{"quick": true}"#)).unwrap();
        for i in 1..4 {
            fs::write(dir.path().join(format!("{i}.json")), old_save("{}")).unwrap();
        }
        let mut options = Options::default();
        options.limits.time = std::time::Duration::from_secs(60);
        options.limits.instructions = u64::MAX;
        let batch = Batch::new(&chain, Mode::InPlace { backup: true })
            .options(options)
            .jobs(1)
            .stop_when(&STOP)
            .abandon_when(&ABANDON);
        let plan = batch.plan(&[dir.path()]).unwrap();
        let setter = std::thread::spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            ABANDON.store(true, Ordering::SeqCst);
        });
        let started = std::time::Instant::now();
        let mut handed = 0;
        let summary = batch
            .run(&plan, |_| {
                handed += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
        setter.join().unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(handed, 0);
        assert_eq!((summary.abandoned, summary.not_started), (2, 2));
        assert_eq!((summary.upgraded, summary.failed), (0, 0));
        for i in 0..4 {
            let text = fs::read_to_string(dir.path().join(format!("{i}.json"))).unwrap();
            assert!(!text.contains(r#""x": 1"#), "{i}.json");
        }
        let left = names(dir.path());
        assert_eq!(left.len(), 4, "no backup, no temporary: {left:?}");
    }

    #[test]
    fn what_arrives_out_of_order_is_handed_on_in_order() {
        let mut seen = Vec::new();
        in_order(
            [(2, 'c'), (0, 'a'), (3, 'd'), (1, 'b'), (5, 'f'), (4, 'e')],
            |c| seen.push(c),
        );
        assert_eq!(seen, ['a', 'b', 'c', 'd', 'e', 'f']);
    }
}
