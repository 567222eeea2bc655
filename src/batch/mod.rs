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
mod out_dir;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

pub use find::{find_saves, Found, Search};

use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::lua::Limits;
use crate::options::Options;
use crate::upgrade::{Chain, FileReport, StepReport, Target, Upgrader};

/// What a batch does with each save.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Replace each save with its upgrade, keeping the original as `<name>.v<N>.bak` first
    /// when `backup` is set ([`Target::InPlace`]).
    InPlace {
        /// Keep each original as a backup.
        backup: bool,
    },
    /// Write each upgraded save under this folder at its place below the path it was found
    /// through, leaving the sources alone. A folder that is, contains or lies inside a
    /// source is refused by [`Batch::plan`].
    OutDir(PathBuf),
    /// Write nothing: say which saves are not at the target version, and which steps would
    /// run ([`FileReport::steps`]).
    Check,
}

/// Many saves upgraded by one chain, on several threads.
pub struct Batch<'c> {
    chain: &'c Chain,
    mode: Mode,
    options: Options,
    jobs: usize,
    exclude: Vec<PathBuf>,
}

/// The saves a batch will work on, found and checked by [`Batch::plan`].
#[derive(Debug)]
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
    folders: std::collections::BTreeSet<PathBuf>,
}

impl Plan {
    /// Keeps every `count`th save, starting with the `index`th (from 1), so that `count`
    /// machines share one list of saves without talking to each other.
    pub fn shard(&mut self, index: usize, count: usize) {
        assert!(1 <= index && index <= count, "shard {index}/{count}");
        fn every<T>(items: Vec<T>, index: usize, count: usize) -> Vec<T> {
            let mine = |(i, _): &(usize, T)| i % count == index - 1;
            items
                .into_iter()
                .enumerate()
                .filter(mine)
                .map(|(_, t)| t)
                .collect()
        }
        self.saves = every(std::mem::take(&mut self.saves), index, count);
        self.targets = every(std::mem::take(&mut self.targets), index, count);
    }
}

/// What happened to one save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Upgraded and written.
    Upgraded,
    /// Already at the target version: left as it is (copied as it is to an output folder).
    Current,
    /// [`Mode::Check`]: not at the target version.
    Outdated,
    /// Valid JSON that is not a save (no `meta`): left alone, not a failure.
    NotASave,
    /// It could not be loaded, upgraded or written; nothing was written.
    Failed,
}

/// One save's outcome.
#[derive(Debug)]
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
pub struct Summary {
    /// Saves upgraded and written.
    pub upgraded: usize,
    /// Saves already at the target version.
    pub current: usize,
    /// With [`Mode::Check`], saves not at the target version.
    pub outdated: usize,
    /// Files that are not saves.
    pub not_saves: usize,
    /// Saves that failed.
    pub failed: usize,
    /// Saves not started because the caller asked to stop.
    pub not_started: usize,
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

    /// Finds the saves of `roots` ([`find_saves`]) and checks that the run can do what is
    /// asked without harm. Fails, touching nothing, when the output folder overlaps a source
    /// or two saves would be written to one output.
    pub fn plan(&self, roots: &[impl AsRef<Path>]) -> Result<Plan> {
        if let Mode::OutDir(out) = &self.mode {
            out_dir::check_apart(out, roots)?;
        }
        let mut exclude = self.exclude.clone();
        if let Mode::OutDir(out) = &self.mode {
            exclude.push(out.clone());
        }
        let search = find_saves(roots, &exclude);
        let targets = match &self.mode {
            Mode::OutDir(out) => {
                // A source may reach a folder through a link: the output may not lie there.
                let searched: Vec<&PathBuf> = search.searched.iter().collect();
                out_dir::check_apart(out, &searched)?;
                out_dir::targets(out, &search.saves)?
            }
            _ => Vec::new(),
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
    /// in path order, as soon as every save before it is done. When `each` breaks, saves
    /// not yet started are left alone (those under way finish) and the run ends.
    ///
    /// A writing run first removes the temporary files that killed runs left in the
    /// folders searched. Fails only when the threads cannot be started.
    pub fn run<'p>(
        &self,
        plan: &'p Plan,
        mut each: impl FnMut(&Outcome<'p>) -> ControlFlow<()>,
    ) -> Result<Summary> {
        let mut summary = Summary::default();
        if self.mode != Mode::Check {
            for folder in &plan.folders {
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
        let options = &options;
        let stop = AtomicBool::new(false);
        let flush = fsio::FolderFlush::default();
        let flush = &flush;
        let (sender, receiver) = std::sync::mpsc::channel();
        pool.in_place_scope(|scope| {
            let stop = &stop;
            scope.spawn(move |_| {
                plan.saves.par_iter().enumerate().for_each_init(
                    || (self.chain.upgrader(), sender.clone()),
                    |(upgrader, sender), (i, found)| {
                        let outcome = (!stop.load(Ordering::Relaxed))
                            .then(|| self.upgrade_one(upgrader, options, flush, plan, i, found));
                        // The receiver lives until every save is sent.
                        let _ = sender.send((i, outcome));
                    },
                );
            });
            in_order(receiver, |outcome| {
                let Some(outcome) = outcome else {
                    summary.not_started += 1;
                    return;
                };
                summary.count(&outcome);
                if each(&outcome).is_break() {
                    stop.store(true, Ordering::Relaxed);
                }
            });
        });
        // Every rename is made durable before the run says it is done: one flush a folder.
        summary.unflushed = flush
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

    fn upgrade_one<'p>(
        &self,
        upgrader: &mut Upgrader<'_>,
        options: &Options,
        flush: &fsio::FolderFlush,
        plan: &'p Plan,
        i: usize,
        found: &'p Found,
    ) -> Outcome<'p> {
        let target = match &self.mode {
            Mode::InPlace { backup } => Target::InPlace { backup: *backup },
            Mode::OutDir(_) => Target::To(&plan.targets[i]),
            Mode::Check => Target::Nowhere,
        };
        let upgraded =
            crate::upgrade::upgrade_file_in_batch(upgrader, &found.path, target, options, flush);
        match upgraded {
            Ok(report) => {
                let status = match self.mode {
                    _ if report.was_current() => Status::Current,
                    Mode::Check => Status::Outdated,
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
                status: if error.kind() == ErrorKind::NotASave {
                    Status::NotASave
                } else {
                    Status::Failed
                },
                report: None,
                error: Some(error),
                failed_steps: upgrader.failed_steps().to_vec(),
            },
        }
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
            Status::Outdated => &mut self.outdated,
            Status::NotASave => &mut self.not_saves,
            Status::Failed => &mut self.failed,
        };
        *counter += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::in_order;

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
