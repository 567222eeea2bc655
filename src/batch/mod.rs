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

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub use find::{find_saves, Found, Search};

use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::lua::Limits;
use crate::options::Options;
use crate::upgrade::{upgrade_file_in_group, Chain, FileReport, StepReport, Target, WriteGroup};

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
    folders: BTreeSet<PathBuf>,
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
    /// Each thread writes its saves in groups of up to 16 (fewer when they are large), so
    /// that one flush serves many files: the group's temporary files, backups and saves,
    /// are flushed to disk at once, then the backups renamed and their folders flushed,
    /// then the saves renamed; the folders of the saves are flushed at the end of the run
    /// ([`Summary::unflushed`]). A save's outcome is handed on once its group is written.
    ///
    /// A writing run first removes the temporary files that killed runs left in the
    /// folders searched and in those of the output folder. Fails only when the threads
    /// cannot be started.
    pub fn run<'p>(
        &self,
        plan: &'p Plan,
        mut each: impl FnMut(&Outcome<'p>) -> ControlFlow<()>,
    ) -> Result<Summary> {
        let mut summary = Summary::default();
        if self.mode != Mode::Check {
            // The folders searched, and those of an output folder that exist: a killed run
            // leaves up to a group of temporaries a job in either.
            let outputs: BTreeSet<&Path> = plan.targets.iter().filter_map(|t| t.parent()).collect();
            let outputs = outputs.into_iter().filter(|f| f.is_dir());
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
        let work = Work {
            batch: self,
            plan,
            options,
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
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
            in_order(receiver, |outcome| {
                let Some(outcome) = outcome else {
                    summary.not_started += 1;
                    return;
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
}

type Sender<'p> = std::sync::mpsc::Sender<(usize, Option<Outcome<'p>>)>;

impl<'p> Work<'_, '_, 'p> {
    /// One worker: takes the next save until none is left, and sends each outcome (`None`
    /// for a save not started) once it is final. Saves to write wait in a group of the
    /// worker's, committed when full and at the end ([`WriteGroup`]).
    fn run(&self, sender: &Sender<'p>) {
        let mut upgrader = self.batch.chain.upgrader();
        let mut group = WriteGroup::new();
        // The receiver lives until every worker is done.
        let send = |i, outcome| drop(sender.send((i, outcome)));
        let commit = |group: &mut WriteGroup<usize>| {
            for (i, upgraded) in group.commit(&self.folders) {
                let outcome = self.batch.outcome(&self.plan.saves[i], upgraded, &[]);
                send(i, Some(outcome));
            }
        };
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(found) = self.plan.saves.get(i) else {
                break;
            };
            if self.stop.load(Ordering::Relaxed) {
                send(i, None);
                continue;
            }
            let target = self.batch.target(self.plan, i);
            let path = &found.path;
            let options = &self.options;
            if let Some(upgraded) =
                upgrade_file_in_group(&mut upgrader, path, target, options, &mut group, i)
            {
                let outcome = self.batch.outcome(found, upgraded, upgrader.failed_steps());
                send(i, Some(outcome));
            }
            if group.is_full() {
                commit(&mut group);
            }
        }
        commit(&mut group);
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
    use super::*;
    use crate::fsio::watch;
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

    /// The files left in `dir` by name, temporaries included.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
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
        let expected = [
            "flush files 6",
            "rename a.json.v1.bak",
            "rename b.json.v1.bak",
            "rename c.json.v1.bak",
            "flush folder",
            "rename a.json",
            "rename b.json",
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
        // A step fails on b; c's backup, and then its output, cannot be renamed into place
        // (a folder with a file has the name), which fails only when the group commits.
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
