//! `save-upgrade [OPTIONS] <PATH>...`: upgrade saves to the latest version, in parallel,
//! each one written atomically or not at all.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use savechain::upgrade::{Chain, Options, Upgraded, Upgrader};
use savechain::{fsio, Map, Save, Value};

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
    let mut roots = args.paths.clone();
    if let Some(list) = &args.files_from {
        match files::read_list(list) {
            Ok(more) => roots.extend(more),
            Err(e) => {
                eprintln!("error: cannot read the list {}: {e}", list.display());
                return EXIT_USAGE;
            }
        }
    }
    if roots.is_empty() {
        eprintln!("error: no saves given: name files or folders, or use --files-from (see --help)");
        return EXIT_USAGE;
    }
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
    let progress = progress_bar(found.len() as u64);
    // Text for standard output (dry runs, diffs), printed a save at a time.
    let stdout = Mutex::new(std::io::stdout());
    let work = |upgrader: &mut Upgrader<'_>, found: &Found| {
        let outcome = upgrade_one(&args, &chain, upgrader, &options, found, &stdout);
        progress.inc(1);
        outcome
    };
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
    {
        Ok(pool) => pool,
        Err(e) => {
            eprintln!(
                "error: cannot start {} threads: {e}",
                args.jobs.unwrap_or(0)
            );
            return EXIT_FAILED;
        }
    };
    let outcomes: Vec<Outcome> = pool.install(|| {
        found
            .par_iter()
            .map_init(|| chain.upgrader(), work)
            .collect()
    });
    progress.finish_and_clear();

    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    let failed = count(Status::Failed) + walk_errors.len();
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
        if let Err(e) = write_report(target, &outcomes) {
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

fn upgrade_one(
    args: &Args,
    chain: &Chain,
    upgrader: &mut Upgrader<'_>,
    options: &Options,
    found: &Found,
    stdout: &Mutex<std::io::Stdout>,
) -> Outcome {
    let path = &found.path;
    let mut outcome = Outcome {
        path: path.clone(),
        from: None,
        to: None,
        status: Status::Failed,
        error: None,
    };
    let fail = |mut outcome: Outcome, error: savechain::Error, source: Option<&[u8]>| {
        let error = error.with_file(path);
        print_error(&error, source);
        outcome.error = Some(error.to_string());
        outcome
    };
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("error: {}: cannot read the file: {e}", path.display());
            outcome.error = Some(format!("cannot read the file: {e}"));
            return outcome;
        }
    };
    let save = match Save::from_slice(&bytes) {
        Ok(save) => save,
        Err(e) => return fail(outcome, e, Some(&bytes)),
    };
    outcome.from = Some(save.meta.version);
    let plan = match chain.plan(save.meta.version, save.meta.writer.as_ref(), options.target) {
        Ok(plan) => plan,
        Err(e) => return fail(outcome, e, None),
    };
    outcome.to = Some(plan.last().map_or(save.meta.version, |s| s.to()));
    if plan.is_empty() {
        outcome.status = Status::Current;
        if let Some(out_dir) = &args.out_dir {
            // The output tree is complete: current saves are copied as they are.
            if let Err(e) = write_out(out_dir, found, &bytes) {
                return fail(outcome, e, None);
            }
        }
        return outcome;
    }
    if args.check || args.dry_run {
        outcome.status = Status::Outdated;
        if args.dry_run {
            let mut text = format!(
                "{}: version {} to {}\n",
                path.display(),
                save.meta.version,
                outcome.to.unwrap_or(0)
            );
            for step in plan {
                text.push_str(&format!(
                    "  {} -> {}  {:<4}  {}\n",
                    step.from,
                    step.to(),
                    step.kind_name(),
                    step.description
                ));
            }
            print_locked(stdout, &text);
        } else {
            eprintln!(
                "not at version {}: {}",
                outcome.to.unwrap_or(0),
                path.display()
            );
        }
        return outcome;
    }
    let upgraded = match upgrader.upgrade(save, options) {
        Ok(upgraded) => upgraded,
        Err(e) => return fail(outcome, e, None),
    };
    if args.diff {
        print_locked(stdout, &diff_text(path, &upgraded));
    }
    let text = match upgraded.save.to_vec() {
        Ok(text) => text,
        Err(e) => return fail(outcome, e, None),
    };
    let written = match &args.out_dir {
        Some(out_dir) => write_out(out_dir, found, &text),
        None => write_in_place(path, &bytes, &text, upgraded.from, !args.no_backup),
    };
    match written {
        Ok(()) => {
            outcome.status = Status::Upgraded;
            outcome
        }
        Err(e) => fail(outcome, e, None),
    }
}

fn print_locked(stdout: &Mutex<std::io::Stdout>, text: &str) {
    let out = stdout.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = out.lock();
    let _ = out.write_all(text.as_bytes());
}

fn diff_text(path: &Path, upgraded: &Upgraded) -> String {
    let mut text = format!("{}:\n", path.display());
    for step in &upgraded.steps {
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

/// Keeps the original as `<name>.v<N>.bak` (atomically), then replaces the save
/// (atomically): a crash at any moment leaves the old save or the new one.
fn write_in_place(
    path: &Path,
    original: &[u8],
    text: &[u8],
    from: u64,
    backup: bool,
) -> savechain::Result<()> {
    if backup {
        let backup = backup_path(path, from, original);
        fsio::write_atomic(&backup, original).map_err(|e| {
            savechain::Error::from_io(e, format!("cannot write the backup {}", backup.display()))
        })?;
    }
    fsio::write_atomic(path, text)
        .map_err(|e| savechain::Error::from_io(e, "cannot write the upgraded save"))
}

/// `<name>.v<N>.bak`, or `<name>.v<N>.<k>.bak` when that exists with other content, so an
/// older backup is never overwritten by a different one.
fn backup_path(path: &Path, from: u64, original: &[u8]) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let candidate = |k: u32| {
        let suffix = if k == 0 {
            format!("{name}.v{from}.bak")
        } else {
            format!("{name}.v{from}.{k}.bak")
        };
        path.with_file_name(suffix)
    };
    (0..)
        .map(candidate)
        .find(|p| std::fs::read(p).map_or(true, |existing| existing == original))
        .expect("an unbounded search")
}

fn write_out(out_dir: &Path, found: &Found, text: &[u8]) -> savechain::Result<()> {
    let target = out_dir.join(&found.relative);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            savechain::Error::from_io(e, format!("cannot make the folder {}", parent.display()))
        })?;
    }
    fsio::write_atomic(&target, text)
        .map_err(|e| savechain::Error::from_io(e, format!("cannot write {}", target.display())))
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
        fsio::write_atomic(target, &text)
    }
}
