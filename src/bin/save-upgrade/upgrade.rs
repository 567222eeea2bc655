//! `save-upgrade [OPTIONS] <PATH>...`: upgrade saves to the latest version, in parallel,
//! each one written atomically or not at all.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use savechain::upgrade::{upgrade_file, FileReport, Target, Upgrader};
use savechain::{Map, Options, Value};

use super::chain::ChainArg;
use super::files::{self, Found};
use super::report::print_error;
use super::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Upgrade saves, and folders of saves, to the latest version.
#[derive(clap::Args)]
pub struct Args {
    /// Save files, or folders to search for *.json saves (recursively).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Read more paths, one a line, from FILE (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    files_from: Option<PathBuf>,
    /// Write the upgraded saves under DIR, mirroring the tree, and leave the sources alone.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Do not keep the original as <name>.v<N>.bak when writing in place.
    #[arg(long)]
    no_backup: bool,
    /// Write nothing; exit 1 if any save is not at the target version (or fails to load).
    #[arg(long, conflicts_with_all = ["dry_run"])]
    check: bool,
    /// Write nothing; print the steps each save would go through.
    #[arg(long)]
    dry_run: bool,
    /// Print, per save and step, the paths added, removed and changed.
    #[arg(long)]
    diff: bool,
    /// Fail a step that removes a path it did not declare dropped.
    #[arg(long)]
    strict: bool,
    /// Upgrade only as far as version N.
    #[arg(long, value_name = "N")]
    to: Option<u64>,
    /// Saves upgraded at once (default: all cores).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Write a JSON report, one entry per save (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Take only every Nth save of the sorted list, starting with the Ith (1 <= I <= N), so
    /// that N jobs share a batch without talking to each other.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    shard: Option<(usize, usize)>,
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

/// What happened to one save.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Upgraded,
    /// Already at the target version: left alone.
    Current,
    /// `--check` or `--dry-run`: it would be upgraded.
    Outdated,
    Failed,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Upgraded => "upgraded",
            Status::Current => "current",
            Status::Outdated => "outdated",
            Status::Failed => "failed",
        }
    }
}

struct Outcome {
    path: PathBuf,
    from: Option<u64>,
    to: Option<u64>,
    status: Status,
    error: Option<String>,
}

pub fn run(args: Args) -> i32 {
    let Some(roots) = roots(&args) else {
        return EXIT_USAGE;
    };
    let Some(chain) = args.chain.load() else {
        return EXIT_FAILED;
    };
    let (mut found, walk_errors) = files::expand_with_roots(&roots);
    for (path, error) in &walk_errors {
        eprintln!("error: {}: {error}", path.display());
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some((i, n)) = args.shard {
        found = found
            .into_iter()
            .enumerate()
            .filter(|(index, _)| index % n == i - 1)
            .map(|(_, f)| f)
            .collect();
    }
    let options = Options {
        target: args.to,
        strict: args.strict,
        diff: args.diff,
        ..Options::default()
    };
    let Some(outcomes) = upgrade_all(&args, &chain, &options, &found) else {
        return EXIT_FAILED;
    };
    summarize(&args, &outcomes, walk_errors.len())
}

/// The paths named on the command line and in `--files-from`; `None` after a usage error.
fn roots(args: &Args) -> Option<Vec<PathBuf>> {
    let mut roots = args.paths.clone();
    if let Some(list) = &args.files_from {
        match files::read_list(list) {
            Ok(more) => roots.extend(more),
            Err(e) => {
                eprintln!("error: cannot read the list {}: {e}", list.display());
                return None;
            }
        }
    }
    if roots.is_empty() {
        eprintln!("error: no saves given: name files or folders, or use --files-from (see --help)");
        return None;
    }
    Some(roots)
}

/// Upgrades every save on `--jobs` threads; `None` when the threads cannot start.
fn upgrade_all(
    args: &Args,
    chain: &savechain::upgrade::Chain,
    options: &Options,
    found: &[Found],
) -> Option<Vec<Outcome>> {
    let progress = progress_bar(found.len() as u64);
    // Text for standard output (dry runs, diffs), printed a save at a time.
    let stdout = Mutex::new(std::io::stdout());
    let work = |upgrader: &mut Upgrader<'_>, found: &Found| {
        let outcome = upgrade_one(args, upgrader, options, found, &stdout);
        progress.inc(1);
        outcome
    };
    let jobs = args.jobs.unwrap_or(0);
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
        Ok(pool) => pool,
        Err(e) => {
            eprintln!("error: cannot start {jobs} threads: {e}");
            return None;
        }
    };
    let outcomes = pool.install(|| {
        found
            .par_iter()
            .map_init(|| chain.upgrader(), work)
            .collect()
    });
    progress.finish_and_clear();
    Some(outcomes)
}

/// Prints the summary line and the report; returns the exit status.
fn summarize(args: &Args, outcomes: &[Outcome], walk_errors: usize) -> i32 {
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    let failed = count(Status::Failed) + walk_errors;
    let outdated = count(Status::Outdated);
    let would = if args.check || args.dry_run {
        "would upgrade"
    } else {
        "upgraded"
    };
    eprintln!(
        "{would} {}, already current {}, failed {failed}",
        count(Status::Upgraded) + outdated,
        count(Status::Current)
    );
    if let Some(target) = &args.report {
        if let Err(e) = write_report(target, outcomes) {
            eprintln!("error: cannot write the report {}: {e}", target.display());
            return EXIT_FAILED;
        }
    }
    if failed > 0 || (args.check && outdated > 0) {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

fn progress_bar(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
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

/// Upgrades one save through the library, and prints what the options ask for.
fn upgrade_one(
    args: &Args,
    upgrader: &mut Upgrader<'_>,
    options: &Options,
    found: &Found,
    stdout: &Mutex<std::io::Stdout>,
) -> Outcome {
    let path = &found.path;
    let out;
    let target = match &args.out_dir {
        _ if args.check || args.dry_run => Target::Nowhere,
        Some(out_dir) => {
            out = out_dir.join(&found.relative);
            Target::To(&out)
        }
        None => Target::InPlace {
            backup: !args.no_backup,
        },
    };
    let report = match upgrade_file(upgrader, path, target, options) {
        Ok(report) => report,
        Err(error) => {
            print_error(&error, None);
            return Outcome::failed(path, &error);
        }
    };
    let status = match target {
        _ if report.was_current() => Status::Current,
        Target::Nowhere => Status::Outdated,
        _ => Status::Upgraded,
    };
    if status == Status::Outdated && args.dry_run {
        print_locked(stdout, &plan_text(path, &report));
    } else if status == Status::Outdated {
        eprintln!("not at version {}: {}", report.to, path.display());
    } else if status == Status::Upgraded && args.diff {
        print_locked(stdout, &diff_text(path, &report));
    }
    Outcome {
        path: path.clone(),
        from: Some(report.from),
        to: Some(report.to),
        status,
        error: None,
    }
}

impl Outcome {
    fn failed(path: &Path, error: &savechain::Error) -> Outcome {
        Outcome {
            path: path.to_path_buf(),
            from: None,
            to: None,
            status: Status::Failed,
            error: Some(error.to_string()),
        }
    }
}

fn print_locked(stdout: &Mutex<std::io::Stdout>, text: &str) {
    let out = stdout.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = out.lock();
    let _ = out.write_all(text.as_bytes());
}

/// The steps a dry run would run on one save.
fn plan_text(path: &Path, report: &FileReport) -> String {
    let mut text = format!(
        "{}: version {} to {}\n",
        path.display(),
        report.from,
        report.to
    );
    for step in &report.steps {
        text.push_str(&format!(
            "  {} -> {}  {:<4}  {}\n",
            step.from, step.to, step.kind, step.description
        ));
    }
    text
}

/// What each step changed in one save.
fn diff_text(path: &Path, report: &FileReport) -> String {
    let mut text = format!("{}:\n", path.display());
    for step in &report.steps {
        text.push_str(&format!(
            "  {} -> {} {} ({})\n",
            step.from, step.to, step.name, step.description
        ));
        if let Some(changes) = &step.changes {
            for (sign, paths) in [
                ('+', &changes.added),
                ('-', &changes.removed),
                ('~', &changes.changed),
            ] {
                for p in paths {
                    text.push_str(&format!("    {sign} {p}\n"));
                }
            }
        }
    }
    text
}

fn write_report(target: &Path, outcomes: &[Outcome]) -> std::io::Result<()> {
    let entries = outcomes
        .iter()
        .map(|o| {
            let opt = |v: Option<u64>| v.map_or(Value::Null, Value::from);
            let entry: Map = [
                ("path", Value::String(o.path.display().to_string())),
                ("from", opt(o.from)),
                ("to", opt(o.to)),
                ("status", Value::from(o.status.name())),
                ("error", o.error.clone().map_or(Value::Null, Value::String)),
            ]
            .into_iter()
            .collect();
            Value::Object(entry)
        })
        .collect();
    let text = savechain::text::to_vec(&Value::Array(entries)).map_err(std::io::Error::other)?;
    if target.as_os_str() == "-" {
        std::io::stdout().lock().write_all(&text)
    } else {
        savechain::write_atomic(target, &text)
    }
}
