//! `save-upgrade [OPTIONS] <PATH>...`: upgrade saves to the latest version through the
//! library's batches, printing each outcome in path order.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use savechain::batch::{Batch, Mode, Outcome, Plan, Status, Summary};
use savechain::upgrade::{FileReport, ModStatus, StepReport};
use savechain::{Options, Value};

use super::chain::ChainArg;
use super::compression;
use super::output::{self, errln};
use super::report::{self, print_error};
use super::signals;
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// Upgrade saves, and folders of saves, to the latest version.
#[derive(clap::Args)]
pub struct Args {
    /// Save files, or folders to search for *.json, *.json.zst and *.json.gz saves
    /// (recursively, following links).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Read more paths, one a line, from FILE (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    files_from: Option<PathBuf>,
    /// Write the upgraded saves under DIR and leave the sources alone. A save found in a
    /// folder keeps its place below that folder (saves/a/b.json -> DIR/a/b.json); a file
    /// named itself, on the command line or in --files-from, lands directly in DIR by its
    /// file name (x/y/c.json -> DIR/c.json), and two that would land on one output are
    /// refused. DIR may not be, contain or lie inside a source. An output already there
    /// that holds what the run writes is left alone (a rerun writes nothing); one that
    /// holds anything else (a save changed there since, another file) fails its save and
    /// is left as it is, unless --replace-outputs. With --check or --dry-run, says what
    /// the run into DIR would do. An output is stored as its source is (zstd, gzip or
    /// plain) unless --compress; with --compress, a name ending in .json, .json.zst or
    /// .json.gz ends as that compression's (a.json with --compress zstd -> DIR/a.json.zst).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// With --out-dir: replace an output that holds something else than the run writes,
    /// keeping it first beside it as <name>.v<N>.bak (a save at version N) or <name>.bak.
    #[arg(long, requires = "out_dir")]
    replace_outputs: bool,
    /// Do not keep the original as <name>.v<N>.bak when writing in place.
    #[arg(long)]
    no_backup: bool,
    /// Write nothing; print the path of each save not at the target version (or, with
    /// --compress, not in that compression), and exit 1 if there is any.
    #[arg(long, conflicts_with_all = ["dry_run"])]
    check: bool,
    /// Write nothing; print the steps each save would go through.
    #[arg(long)]
    dry_run: bool,
    /// Upgrade as usual, and print, per save and step, each path added, removed and changed,
    /// with its values (with --dry-run, only the steps that would run).
    #[arg(long)]
    diff: bool,
    /// Fail a step that removes a path it did not declare dropped.
    #[arg(long)]
    strict: bool,
    /// When a mod's step fails (or a mod's data is newer than the mod in --mods), upgrade
    /// the rest of the save and leave that mod's data as it was, at its old version, with
    /// the data of the mods that come after it: each is marked in the save
    /// (meta.mods.NAME.held) and the next run tries it again. Each held mod is told, and
    /// the run exits 1. Without it, the save fails and is left as it is.
    #[arg(long)]
    keep_going: bool,
    /// Upgrade only as far as version N.
    #[arg(long, value_name = "N")]
    to: Option<u64>,
    /// Saves upgraded at once (default, or 0: one per core; never more than there are
    /// saves).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Write a JSON report, one entry per save (`-` for standard output, and then
    /// everything else goes to standard error).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Take only every Nth save of the sorted list, starting with the Ith (1 <= I <= N), so
    /// that N jobs share a batch without talking to each other. Only the shard's saves are
    /// checked for outputs that collide.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    shard: Option<(usize, usize)>,
    /// Print only errors: no summary, no progress, no notes on skipped files, nor what
    /// steps print (the report still has it).
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    compression: compression::Args,
    /// Refuse a compressed save whose text is longer than BYTES (a decompression bomb);
    /// default 1 GiB.
    #[arg(long, value_name = "BYTES")]
    max_text: Option<u64>,
    #[command(flatten)]
    chain: ChainArg,
}

fn parse_shard(text: &str) -> Result<(usize, usize), String> {
    let shard = text.split_once('/').and_then(|(i, n)| {
        let (i, n) = (i.parse::<usize>().ok()?, n.parse::<usize>().ok()?);
        (1 <= i && i <= n).then_some((i, n))
    });
    shard.ok_or_else(|| format!("expected I/N with 1 <= I <= N, such as 2/8; got {text:?}"))
}

pub fn run(args: Args) -> i32 {
    let Some(listed) = listed(&args) else {
        return EXIT_USAGE;
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
    if let Some(to) = args.to {
        if to < chain.oldest() || to > chain.latest() {
            errln!(
                "error: --to {to} is outside the chain's versions {} to {}",
                chain.oldest(),
                chain.latest()
            );
            return EXIT_USAGE;
        }
    }
    let mode = match &args.out_dir {
        Some(out) if args.check || args.dry_run => Mode::CheckOutDir(out.clone()),
        _ if args.check || args.dry_run => Mode::Check,
        Some(out) => Mode::OutDir(out.clone()),
        None => Mode::InPlace {
            backup: !args.no_backup,
        },
    };
    let mut options = Options::default();
    options.target = args.to;
    options.strict = args.strict;
    options.diff = args.diff;
    options.keep_going = args.keep_going;
    options.replace_outputs = args.replace_outputs;
    options.compression = compression;
    if let Some(max_text) = args.max_text {
        options.max_text = max_text;
    }
    let writes = !(args.check || args.dry_run);
    let mut batch = Batch::new(&chain, mode)
        .options(options)
        .jobs(args.jobs.unwrap_or(0))
        .stop_when(signals::stop_flag())
        .abandon_when(signals::at_once_flag());
    if let Some((i, n)) = args.shard {
        batch = batch.shard(i, n);
    }
    if let Some(report) = args.report.as_ref().filter(|r| r.as_os_str() != "-") {
        if let Err(why) = check_report_path(report) {
            errln!("error: --report {}: {why}", report.display());
            return EXIT_USAGE;
        }
        batch = batch.exclude(report);
    }
    // A list (`find`'s output) is taken as a search: its files that are not saves are
    // skipped, where a file named on the command line that is not one fails.
    let plan = match batch.plan_with_list(&args.paths, &listed) {
        Ok(plan) => plan,
        Err(e) => {
            print_error(&e, None);
            return EXIT_USAGE;
        }
    };
    // From here on, Ctrl-C or SIGTERM stops the run cleanly (before, nothing is written
    // and the default, ending at once, is right).
    signals::install();
    let mut printer = Printer::new(&args, &plan);
    let mut entries = Vec::new();
    if args.report.is_some() {
        entries.extend(plan.errors.iter().map(report::search_error_entry));
    }
    let progress = progress_bar(&args, plan.saves.len() as u64);
    let summary = batch.run(&plan, |outcome| {
        progress.suspend(|| printer.print(outcome));
        progress.inc(1);
        if args.report.is_some() {
            entries.push(report::entry(outcome, &chain, args.to));
        }
        // A reader that went away (`--dry-run | head`) ends a run that only looks; a run
        // that writes goes on, quietly, so that no save is left half way through a batch.
        if output::closed() && !writes {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    printer.skipped_before(None);
    progress.finish_and_clear();
    let summary = match summary {
        Ok(summary) => summary,
        Err(e) => {
            print_error(&e, None);
            return EXIT_FAILED;
        }
    };
    let held = (printer.held_only, printer.held_with_upgrade);
    let hints = Hints {
        failed_by_mod: printer.failed_by_mod,
        outputs_taken: printer.outputs_taken.clone(),
    };
    finish(&args, &plan, &summary, entries, held, hints)
}

/// A report may replace an earlier report, never a save or another file, and its folder
/// must exist before any save is touched.
fn check_report_path(report: &Path) -> Result<(), String> {
    let folder = match report.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(format!("the folder {} does not exist", folder.display()));
    }
    // Never read (and so never waited on): a FIFO, a terminal, /dev/stdout.
    if std::fs::metadata(report).is_ok_and(|m| !m.is_file()) {
        return Err(
            "something that is not a regular file is there (for standard output, give -)"
                .to_string(),
        );
    }
    match std::fs::read(report) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot read what is there: {e}")),
        // A report is a JSON array; a save, or anything else, is not replaced.
        Ok(bytes) => match savechain::text::from_slice(&bytes) {
            Ok(Value::Array(_)) => Ok(()),
            _ => Err("a file that is not a report is there; choose another path".to_string()),
        },
    }
}

/// The paths of `--files-from`; `None` after a usage error (also when no path is given at
/// all).
fn listed(args: &Args) -> Option<Vec<PathBuf>> {
    let mut listed = Vec::new();
    if let Some(list) = &args.files_from {
        match read_list(list) {
            Ok(more) => listed = more,
            Err(e) => {
                errln!("error: cannot read the list {}: {e}", list.display());
                return None;
            }
        }
    }
    if args.paths.is_empty() && listed.is_empty() {
        errln!("error: no saves given: name files or folders, or use --files-from (see --help)");
        return None;
    }
    Some(listed)
}

/// Reads a list of paths, one a line, from a file or standard input (`-`).
fn read_list(source: &Path) -> std::io::Result<Vec<PathBuf>> {
    let text = if source.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(source)?
    };
    Ok(text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect())
}

/// Prints what each save's outcome says, where it belongs: dry-run plans, diffs and the
/// paths `--check` finds on standard output unless the report is there, everything else on
/// standard error; notes on skipped paths in path order among them.
struct Printer<'a> {
    args: &'a Args,
    report_on_stdout: bool,
    /// Notes on paths left out, in path order, printed as the outcomes pass them.
    skipped: std::collections::VecDeque<(PathBuf, String)>,
    /// Saves with a mod held back ([`FileReport::held`]) and nothing else done (counted
    /// by the batch as current), and those upgraded otherwise.
    held_only: usize,
    held_with_upgrade: usize,
    /// Saves that failed because of a mod ([`savechain::Error::failed_mod`]), which
    /// `--keep-going` would have upgraded, holding the mod back.
    failed_by_mod: usize,
    /// Saves refused because a file at their output holds something else
    /// ([`savechain::Error::output_backup`]), and where the first one would be kept.
    outputs_taken: (usize, Option<PathBuf>),
}

impl<'a> Printer<'a> {
    fn new(args: &'a Args, plan: &Plan) -> Printer<'a> {
        for error in &plan.errors {
            print_error(error, None);
        }
        let mut skipped = if args.quiet {
            Vec::new()
        } else {
            plan.skipped.clone()
        };
        skipped.sort();
        Printer {
            args,
            report_on_stdout: args.report.as_ref().is_some_and(|r| r.as_os_str() == "-"),
            skipped: skipped.into(),
            held_only: 0,
            held_with_upgrade: 0,
            failed_by_mod: 0,
            outputs_taken: (0, None),
        }
    }

    /// Machine output (plans, diffs, paths found by `--check`): standard output, unless
    /// the report is there.
    fn machine(&self, text: &str) {
        if self.report_on_stdout {
            output::err(text);
        } else {
            output::out(text);
        }
    }

    /// The notes on skipped paths that come before `path` (all of them without one).
    fn skipped_before(&mut self, path: Option<&Path>) {
        while let Some((skipped, why)) = self.skipped.front() {
            if path.is_some_and(|p| skipped.as_path() > p) {
                break;
            }
            errln!("skipped {}: {why}", skipped.display());
            self.skipped.pop_front();
        }
    }

    fn print(&mut self, outcome: &Outcome<'_>) {
        let path = &outcome.found.path;
        self.skipped_before(Some(path));
        if !self.args.quiet {
            let mut text = String::new();
            for (in_mod, step, line) in report::printed(outcome) {
                let step = match in_mod {
                    Some(name) => format!("{name}/{step}"),
                    None => step.to_string(),
                };
                text.push_str(&format!("{}: {step}: {line}\n", path.display()));
            }
            output::err(&text);
        }
        if let Some(report) = &outcome.report {
            if report.held().next().is_some() {
                match report.was_current() {
                    true => self.held_only += 1,
                    false => self.held_with_upgrade += 1,
                }
            }
            for (_, why) in report.held() {
                let what = if self.args.check || self.args.dry_run {
                    "would be held back"
                } else {
                    "held back at its old version"
                };
                // `why` names the mod.
                errln!("{}: {what}: {why}", path.display());
            }
        }
        match (outcome.status, &outcome.report, &outcome.error) {
            (Status::Failed, _, Some(error)) => {
                if error.failed_mod().is_some() && !self.args.keep_going {
                    self.failed_by_mod += 1;
                }
                if let Some(backup) = error.output_backup() {
                    let (count, first) = &mut self.outputs_taken;
                    *count += 1;
                    first.get_or_insert_with(|| backup.to_path_buf());
                }
                print_error(error, None)
            }
            (Status::NotASave, _, Some(error)) if !self.args.quiet => {
                errln!("skipped {}: {}", path.display(), error.message());
            }
            (Status::Outdated, Some(report), _) if self.args.dry_run => {
                self.machine(&plan_text(path, report));
            }
            (Status::Outdated, Some(_), _) => {
                // As `grep -l`: the saves that need work, one a line.
                self.machine(&format!("{}\n", path.display()));
            }
            (Status::Recompressed, Some(_), _) if self.args.check || self.args.dry_run => {
                // Work too: the run would write it, in the compression asked.
                self.machine(&format!("{}\n", path.display()));
            }
            (Status::Upgraded, Some(report), _) => {
                if self.args.diff {
                    self.machine(&diff_text(path, report));
                }
                self.print_backup_note(path, report);
            }
            // A save recompressed in place keeps its backup as an upgraded one does.
            (Status::Current | Status::Recompressed, Some(report), _) => {
                self.print_backup_note(path, report)
            }
            _ => {}
        }
    }

    /// A backup that could not take its usual name, `<name>.v<N>.bak`, because a different
    /// file has it.
    fn print_backup_note(&self, path: &Path, report: &FileReport) {
        let Some(backup) = &report.backup else { return };
        if let (Some(_), Some(written)) = (&self.args.out_dir, &report.written) {
            // --replace-outputs: what was at the output is kept, and the user should know.
            if !self.args.quiet {
                errln!(
                    "note: {} held something else, so it is kept as {} and replaced",
                    written.display(),
                    backup.display()
                );
            }
            return;
        }
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".v{}.bak", report.from));
        let usual = path.with_file_name(name);
        if *backup != usual && !self.args.quiet {
            errln!(
                "note: {} is a different file, so the original of {} is kept as {}",
                usual.display(),
                path.display(),
                backup.display()
            );
        }
    }
}

/// A step's name, after its mod's when it is a mod's (`tinker/0002-gadgets.lua`).
pub fn step_name(step: &StepReport) -> String {
    match &step.in_mod {
        Some(name) => format!("{name}/{}", step.name),
        None => step.name.clone(),
    }
}

fn progress_bar(args: &Args, len: u64) -> ProgressBar {
    if args.quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} saves  {elapsed} (eta {eta})")
    {
        bar.set_style(style);
    }
    bar
}

/// Prints the summary and the report; returns the exit status.
fn finish(
    args: &Args,
    plan: &Plan,
    summary: &Summary,
    entries: Vec<Value>,
    (held_only, held_with_upgrade): (usize, usize),
    hints: Hints,
) -> i32 {
    let held = held_only + held_with_upgrade;
    for error in &summary.unflushed {
        print_error(error, None);
    }
    let saves = summary.upgraded
        + summary.current
        + summary.recompressed
        + summary.outdated
        + summary.already_written
        + summary.failed;
    let no_saves = saves == 0 && summary.not_saves > 0 && summary.not_started == 0;
    if no_saves {
        errln!("error: no saves found: every file was JSON that is not a save");
    }
    let failed =
        summary.failed + plan.errors.len() + summary.unflushed.len() + usize::from(no_saves);
    if !args.quiet {
        let would = if args.check || args.dry_run {
            "would upgrade"
        } else {
            "upgraded"
        };
        let partly = match held_with_upgrade {
            0 => String::new(),
            n => format!(" ({n} with a mod held back)"),
        };
        let held_back = match held_only {
            0 => String::new(),
            n => format!(", held back {n}"),
        };
        let recompressed = match summary.recompressed {
            0 => String::new(),
            n if args.check || args.dry_run => format!(", would recompress {n}"),
            n => format!(", recompressed {n}"),
        };
        let written = match summary.already_written {
            0 => String::new(),
            n => format!(", already written {n}"),
        };
        let mut line = format!(
            "{would} {}{partly}, already current {}{held_back}{recompressed}{written}, failed {failed}",
            summary.upgraded + summary.outdated,
            summary.current - held_only,
        );
        if summary.not_saves > 0 {
            line.push_str(&format!(", not saves {}", summary.not_saves));
        }
        if summary.abandoned > 0 {
            line.push_str(&format!(", abandoned {}", summary.abandoned));
        }
        if summary.not_started > 0 {
            line.push_str(&format!(", not started {}", summary.not_started));
        }
        if !summary.stale_removed.is_empty() {
            line.push_str(&format!(
                "; removed {} temporary files left by killed runs",
                summary.stale_removed.len()
            ));
        }
        errln!("{line}");
        hints.print();
    }
    if let Some(target) = &args.report {
        let mut entries = entries;
        let by = match signals::received() {
            Some((signal, ..)) => format!("the run was stopped by {signal}"),
            None => "the run was stopped (its reader went away)".to_string(),
        };
        let left = summary.abandoned_saves.iter().map(|path| {
            let why = format!("{by} while this save was under way; it is left as it was");
            report::left_entry(path, "abandoned", why)
        });
        entries.extend(left);
        let left = summary.not_started_saves.iter().map(|path| {
            let why = format!("{by} before this save was started; it is left as it was");
            report::left_entry(path, "not-started", why)
        });
        entries.extend(left);
        if let Err(e) = write_report(target, entries) {
            errln!("error: cannot write the report {}: {e}", target.display());
            return EXIT_FAILED;
        }
    }
    if let Some((signal, status, at_once)) = signals::received() {
        // Said even with --quiet: the run did not do all it was asked.
        let left = summary.not_started + summary.abandoned;
        if at_once {
            errln!(
                "stopped at once by {signal} (a second request to stop): {} saves under way \
                 were abandoned, {} not started; those {left} are left as they were, and no \
                 temporary file; run again to do them",
                summary.abandoned,
                summary.not_started
            );
        } else {
            errln!(
                "stopped by {signal}: the saves under way were finished, {left} not started \
                 are left as they were; run again to do them"
            );
        }
        return status;
    }
    if failed > 0 {
        EXIT_FAILED
    } else if (args.check && summary.outdated + summary.recompressed > 0) || held > 0 {
        EXIT_FOUND_WORK
    } else {
        EXIT_OK
    }
}

/// What the lines after the summary say how to go on from: failures the run's user can
/// answer with a flag.
struct Hints {
    /// Saves that failed because of a mod, without `--keep-going`.
    failed_by_mod: usize,
    /// Saves refused because their output holds something else, and where the first of
    /// those outputs would be kept.
    outputs_taken: (usize, Option<PathBuf>),
}

impl Hints {
    fn print(&self) {
        let n = self.failed_by_mod;
        if n > 0 {
            let saves = if n == 1 { "save" } else { "saves" };
            errln!(
                "{n} {saves} failed because of a mod: --keep-going upgrades the rest of such \
                 saves and holds the mod back (exit 1)"
            );
        }
        if let (n @ 1.., Some(backup)) = &self.outputs_taken {
            // The command as it was run, asking for replacing.
            let mut rerun = vec!["save-upgrade".to_string(), "--replace-outputs".to_string()];
            let args = std::env::args_os().skip(1);
            rerun.extend(args.map(|a| crate::shell_quoted(&a.to_string_lossy())));
            let rerun = rerun.join(" ");
            if *n == 1 {
                errln!(
                    "1 output already there holds something else: to replace it, keeping it \
                     as a backup beside it ({}), run again with --replace-outputs: {rerun}",
                    backup.display()
                );
            } else {
                errln!(
                    "{n} outputs already there hold something else: to replace them, each \
                     kept as a backup beside it (the first as {}), run again with \
                     --replace-outputs: {rerun}",
                    backup.display()
                );
            }
        }
    }
}

/// The steps a dry run would run on one save.
fn plan_text(path: &Path, report: &FileReport) -> String {
    let mut text = if report.from == report.to {
        format!("{}: version {}, current\n", path.display(), report.from)
    } else {
        format!(
            "{}: version {} to {}\n",
            path.display(),
            report.from,
            report.to
        )
    };
    for step in report.steps.iter().filter(|s| s.in_mod.is_none()) {
        text.push_str(&format!(
            "  {} -> {}  {:<4}  {}\n",
            step.from, step.to, step.kind, step.description
        ));
    }
    for m in &report.mods {
        let version = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
        match m.status {
            ModStatus::Upgraded => text.push_str(&format!(
                "  mod {}: version {} to {}\n",
                m.name,
                version(m.from),
                version(m.to)
            )),
            _ => text.push_str(&format!(
                "  mod {}: version {}, {}\n",
                m.name,
                version(m.from),
                m.status.word()
            )),
        }
        for step in report
            .steps
            .iter()
            .filter(|s| s.in_mod.as_deref() == Some(m.name.as_str()))
        {
            text.push_str(&format!(
                "    {} -> {}  {:<4}  {}\n",
                step.from, step.to, step.kind, step.description
            ));
        }
    }
    text
}

/// What each step changed in one save.
fn diff_text(path: &Path, report: &FileReport) -> String {
    let mut text = format!("{}:\n", path.display());
    for step in &report.steps {
        text.push_str(&format!(
            "  {} -> {} {} ({})\n",
            step.from,
            step.to,
            step_name(step),
            step.description
        ));
        if let Some(changes) = &step.changes {
            text.push_str(&super::report::changes_text(changes, "    "));
        }
    }
    text
}

fn write_report(target: &Path, entries: Vec<Value>) -> std::io::Result<()> {
    let text = savechain::text::to_vec(&Value::Array(entries)).map_err(std::io::Error::other)?;
    if target.as_os_str() == "-" {
        output::out(&String::from_utf8_lossy(&text));
        Ok(())
    } else {
        savechain::write_atomic(target, &text)
    }
}
