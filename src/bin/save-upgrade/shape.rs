//! `save-upgrade shape`: the shape of a version (what the game reads), inferred from saves
//! and recorded beside the chain's steps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use savechain::batch::Plan;
use savechain::guard::{self, Found};
use savechain::path::Segment;
use savechain::shape::{self, Compare, Hints, Recorded, Shape, Shapes, SHAPES_DIR};
use savechain::upgrade::{Chain, Mod};
use savechain::{edit, Save, Value};

use super::chain::ChainArg;
use super::output::{self, errln};
use super::report::{print_error, shell_words};
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// The shape of a version: what the game reads, inferred from saves, recorded, checked.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade shape infer fixtures/v9/
  save-upgrade shape infer --map systems fixtures/v9/ > shape.json
  save-upgrade shape record --upgrades upgrades/ --writer 2.3.0 --map systems fixtures/v9/
  save-upgrade shape record --mods mods/ --mod cartographer --map notes mods/cartographer/fixtures/v3/
  save-upgrade shape check --upgrades upgrades/ --writer 2.3.0 saves-written-by-this-build/

A shape says what the game reads at one version: each object's members (required or
optional), each value's kind, integers with their range. It is recorded once per version,
as shapes/NNNN.json beside the steps (docs/FORMAT.md, section 11), and never changes:
`validate`, `schema`, `set` and `edit` check saves against it, `shape check` (the drift
guard) what the game writes now, and `test` each fixture after each step.")]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    Infer(InferArgs),
    Record(RecordArgs),
    Check(CheckArgs),
}

/// The drift guard: check that saves the game writes now match the latest recorded shape.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade shape check --upgrades upgrades/ --writer 2.3.0 saves-written-by-this-build/
  save-upgrade shape check --mods mods/ new-save.json

For a game's CI: give saves the current build wrote (all at the chain's latest version).
Each must match the shape recorded for that version, and each mod's part its mod's shape;
a chain (the game's, or a mod's) whose latest version has no recorded shape fails too.
Each difference is printed on standard output, FILE: PATH: what the game reads there;
what is there (a member missing beside a new one holding what it held: a likely rename),
and what to do on standard error: a recorded shape never changes, so a change of what the
game writes is a new version, with its step (declare the renames) and its recorded shape.
Exit status: 0 no drift, 1 drift, 2 a save older than the latest version (check those
with validate), a chain without shapes, or a usage error.")]
pub struct CheckArgs {
    #[command(flatten)]
    chain: ChainArg,
    /// Save files, or folders to search for *.json saves, written by the game now.
    #[arg(required = true, value_name = "SAVES")]
    saves: Vec<PathBuf>,
}

/// Print the shape of saves of one version, inferred from what they hold.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade shape infer fixtures/v9/
  save-upgrade shape infer --map systems fixtures/v9/*.json
  save-upgrade shape infer --mod cartographer --map notes mods/cartographer/fixtures/v3/

Prints the shape file of their version on standard output, as `shape record` writes it:
{\"data\": SHAPE, \"savechain_shape\": 1, \"version\": N}. Saves show what a game wrote, not
what it reads, so the shape says as much as they tell: every integer an i64 (a u64 when a
value needs it), members in every save required and the others optional, null beside a
kind nullable, an array always empty an array of any; keys are member names unless --map
says the keys at a place are data (ids). The game's data.mods is left out: each mod's part
is the mod's own shape (--mod NAME).
Exit status: 0 printed, 2 the saves are at several versions, do not load, or a usage
error.")]
pub struct InferArgs {
    #[command(flatten)]
    source: Source,
}

/// Record the shape of saves of one version (or a shape file) beside the chain's steps.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade shape record --upgrades upgrades/ --writer 2.3.0 --map systems fixtures/v9/
  save-upgrade shape record --upgrades upgrades/ --writer 2.3.0 --from-shape shape.json
  save-upgrade shape record --mods mods/ --mod cartographer --map notes mods/cartographer/fixtures/v3/

The shape (inferred as `shape infer` does, or read from --from-shape, a shape file as
`shape infer` prints it) is written to DIR/shapes/NNNN.json for --upgrades DIR, or to the
mod's folder's shapes/ with --mod NAME (the mod among --mods DIR). A recorded shape never
changes: when the version already has one, saves that all match it (as validate checks
them; the recorded one may say u32 where saves can only say i64) and the same shape are
\"already recorded\", nothing written; otherwise each place that does not match (or each
difference of the shape file) is printed on standard output, nothing is written and the
error says which version to make. The built-in example game's shapes are compiled into
save-upgrade: record them into its Lua twin, --upgrades upgrades/.
Exit status: 0 recorded (or already recorded), 2 a different shape is recorded (saves that
do not match it), the saves do not agree on a version, or a usage error.")]
pub struct RecordArgs {
    #[command(flatten)]
    source: Source,
    /// Record this shape file (`{"data": SHAPE, "savechain_shape": 1, "version": N}`,
    /// as `shape infer` prints it, maybe edited by hand) instead of inferring one from
    /// saves.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["saves", "map"])]
    from_shape: Option<PathBuf>,
    #[command(flatten)]
    chain: ChainArg,
}

/// The saves a shape is inferred from, and what inference cannot tell.
#[derive(clap::Args)]
struct Source {
    /// A place whose keys are the game's data (ids), not member names: a shape path
    /// relative to data (`systems`, `sectors[*].stations`, `ship.cargo[].tags`), `[]` for
    /// each element of an array, `[*]` for each value of a map. May be repeated.
    #[arg(long, value_name = "PATH")]
    map: Vec<String>,
    /// Infer the shape of mod NAME's part, data.mods.NAME, at its version
    /// (meta.mods.NAME.version), rather than the game's.
    #[arg(long, value_name = "NAME")]
    r#mod: Option<String>,
    /// Save files, or folders to search for *.json saves, all at one version.
    #[arg(value_name = "SAVES")]
    saves: Vec<PathBuf>,
}

pub fn run(args: Args) -> i32 {
    match args.command {
        Command::Infer(args) => infer(args),
        Command::Record(args) => record(args),
        Command::Check(args) => check(args),
    }
}

fn check(args: CheckArgs) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    if !super::named_paths_exist(&args.saves) {
        return EXIT_USAGE;
    }
    let (files, saves): (Vec<PathBuf>, Vec<Save>) = match load_all(&args.saves) {
        Ok(loaded) => loaded.into_iter().unzip(),
        Err(status) => return status,
    };
    let drift = match guard::drift_of_saves(&chain, &saves) {
        Ok(drift) => drift,
        Err(e) => {
            // The library counts the saves from 1, in the order given: name the file
            // instead, first, as every other error does.
            let message = e.to_string();
            let named = message.strip_prefix("save ").and_then(|rest| {
                let (number, rest) = rest.split_once(" is ")?;
                let file = files.get(number.parse::<usize>().ok()?.checked_sub(1)?)?;
                Some(format!("{}: the save is {rest}", file.display()))
            });
            match named {
                Some(line) => errln!("error: {line}"),
                None => print_error(&e, None),
            }
            return EXIT_FAILED;
        }
    };
    if drift.is_clean() {
        let count = match saves.len() {
            1 => "1 save".to_string(),
            n => format!("{n} saves"),
        };
        errln!("{drift} ({count})");
        return EXIT_OK;
    }
    let mut lines = String::new();
    for found in &drift.found {
        for line in found_lines(found, &files) {
            lines.push_str(&line);
            lines.push('\n');
        }
    }
    output::out(&lines);
    // The heading and what to do, as the library says them; the findings are above.
    for line in drift.to_string().lines() {
        if !line.starts_with("  ") && !line.is_empty() {
            errln!("{line}");
        }
    }
    EXIT_FOUND_WORK
}

/// The lines of a finding, one per save it is in, named by its file rather than by its
/// place among the saves.
fn found_lines(found: &Found, files: &[PathBuf]) -> Vec<String> {
    let text = found.to_string();
    let saves = match found {
        Found::Mismatch { saves, .. } | Found::LikelyRenamed { saves, .. } => saves.clone(),
        Found::BeyondLatest { save, .. } => vec![*save],
        _ => return vec![text],
    };
    // "save 2: ..." or "saves 1, 3: ...": what follows the saves' numbers.
    let rest = text
        .split_once(": ")
        .map_or(text.as_str(), |(_, rest)| rest);
    saves
        .iter()
        .map(|&n| match files.get(n) {
            Some(file) => format!("{}: {rest}", file.display()),
            None => text.clone(),
        })
        .collect()
}

fn infer(args: InferArgs) -> i32 {
    match inferred(&args.source) {
        Ok((version, shape)) => {
            output::out(&Shapes::file_text(version, &shape));
            EXIT_OK
        }
        Err(status) => status,
    }
}

fn record(args: RecordArgs) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    let (dir, latest, whose) = match &args.source.r#mod {
        None => {
            let Some(steps) = &args.chain.upgrades else {
                errln!(
                    "error: the built-in chain's shapes are compiled into save-upgrade, from the \
                     files of upgrades/shapes/ in savechain's repository (listed in \
                     src/bin/save-upgrade/starlane.rs); nothing was written. Record into a steps \
                     folder: save-upgrade shape record --upgrades DIR --writer VERSION SAVES \
                     (for the example game, its Lua twin: --upgrades upgrades/)"
                );
                return EXIT_USAGE;
            };
            (steps.join(SHAPES_DIR), chain.latest(), String::new())
        }
        Some(name) => {
            let Some(mods) = &args.chain.mods else {
                errln!(
                    "error: --mod {name} records into the mod's folder: give the folder of \
                     mods with --mods DIR; nothing was written"
                );
                return EXIT_USAGE;
            };
            let Some((folder, m)) = mod_folder(mods, name) else {
                errln!(
                    "error: no mod named {name:?} in {} (each folder there a mod with its \
                     mod.json); nothing was written",
                    mods.display()
                );
                return EXIT_USAGE;
            };
            (
                folder.join(SHAPES_DIR),
                m.latest(),
                format!(" of mod {name}"),
            )
        }
    };
    let (version, shape, parts) = match &args.from_shape {
        Some(file) => match shape_file(file) {
            Ok((version, shape)) => (version, shape, Vec::new()),
            Err(status) => return status,
        },
        None => match inferred_parts(&args.source) {
            Ok(inferred) => inferred,
            Err(status) => return status,
        },
    };
    if version > latest {
        errln!(
            "error: the saves are at version {version}, beyond the latest version{whose} of \
             the chain, {latest}: a version's shape is recorded once the step that makes the \
             version is there; nothing was written"
        );
        return EXIT_USAGE;
    }
    // A version already recorded: saves that match its shape agree with it, even when the
    // shape inferred from them is wider (saves cannot tell a u32 from an i64), so nothing
    // is to be recorded; anything else is shown, what differs first.
    let file = dir.join(Shapes::file_name(version));
    // Read as `Shapes::record` reads it, which reports a file it cannot read.
    let existing = std::fs::read_to_string(&file)
        .ok()
        .and_then(|text| Shapes::from_files(&[(file.to_string_lossy(), text)]).ok())
        .and_then(|shapes| shapes.get(version).cloned());
    if let Some(existing) = existing.filter(|existing| *existing != shape) {
        let mut segments = vec![Segment::Key("data".into())];
        if let Some(name) = &args.source.r#mod {
            segments.extend([Segment::Key("mods".into()), Segment::Key(name.clone())]);
        }
        let root_path = savechain::path::Path::from(segments);
        let root = root_path.to_string();
        if !parts.is_empty() {
            let mut lines = String::new();
            for (path, value) in &parts {
                for mismatch in existing.check_at(value, &root_path) {
                    lines.push_str(&format!("{}: {mismatch}\n", path.display()));
                }
            }
            if lines.is_empty() {
                errln!(
                    "the shape of version {version}{whose} is already recorded in {}; these \
                     saves match it; nothing written",
                    file.display()
                );
                return EXIT_OK;
            }
            output::out(&lines);
        } else {
            let how = Compare::new().root(root);
            for difference in shape::compare_with(&existing, &shape, &how) {
                output::out(&format!("{}: {difference}\n", file.display()));
            }
        }
        let next = latest + 1;
        let writes = match &args.source.r#mod {
            Some(_) => "the mod's",
            None => "the game's",
        };
        let what = if parts.is_empty() {
            "the shape given differs from it (each difference above)"
        } else {
            "the saves do not match it (each place above)"
        };
        errln!(
            "error: {}: version {version}{whose} already has a recorded shape, and {what}; a \
             recorded shape never changes (saves of version {version} exist with it): if the \
             game now reads something else, make version {next}{whose}: a step {latest} -> \
             {next}, {writes} version {next}, and record the shape of {next}; nothing was \
             written",
            file.display()
        );
        return EXIT_FAILED;
    }
    match Shapes::record(&dir, version, &shape) {
        Ok(Recorded::New(path)) => {
            errln!(
                "recorded the shape of version {version}{whose} in {}",
                path.display()
            );
            EXIT_OK
        }
        Ok(recorded) => {
            errln!(
                "the shape of version {version}{whose} is already recorded, the same, in {}; \
                 nothing written",
                recorded.path().display()
            );
            EXIT_OK
        }
        Err(e) => {
            print_error(&e, None);
            errln!("nothing was written");
            EXIT_FAILED
        }
    }
}

/// The folder under `mods` of the mod named `name`, and the mod.
fn mod_folder(mods: &Path, name: &str) -> Option<(PathBuf, Mod)> {
    let entries = std::fs::read_dir(mods).ok()?;
    let mut folders: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    folders.into_iter().find_map(|folder| {
        let m = Mod::from_dir(&folder).ok()?;
        (m.name() == name).then_some((folder, m))
    })
}

/// A shape file's version and shape; on failure, the error is printed and the exit
/// status returned.
fn shape_file(file: &Path) -> Result<(u64, Shape), i32> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        errln!("error: {}: cannot read the shape file: {e}", file.display());
        EXIT_USAGE
    })?;
    // Read as the chain reads it, under the name of the version it says it is of.
    let version = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|json| json.get("version").and_then(serde_json::Value::as_u64))
        .unwrap_or(0);
    let name = file.with_file_name(Shapes::file_name(version));
    let shapes = Shapes::from_files(&[(name.to_string_lossy(), &text)]).map_err(|e| {
        print_error(&e.with_file(file), None);
        EXIT_USAGE
    })?;
    let (version, shape) = shapes.latest().expect("one shape was read");
    Ok((version, shape.clone()))
}

/// The shape inferred from the saves of `source`, and their version; on failure, the
/// errors are printed and the exit status returned.
fn inferred(source: &Source) -> Result<(u64, Shape), i32> {
    inferred_parts(source).map(|(version, shape, _)| (version, shape))
}

/// Each save's part a shape was inferred from, by its file.
type Parts = Vec<(PathBuf, Value)>;

/// As [`inferred`], with each save's part the shape was inferred from, by its file.
fn inferred_parts(source: &Source) -> Result<(u64, Shape, Parts), i32> {
    if source.saves.is_empty() {
        errln!("error: give the saves to infer the shape from (files or folders), SAVES...");
        return Err(EXIT_USAGE);
    }
    if !super::named_paths_exist(&source.saves) {
        return Err(EXIT_USAGE);
    }
    let saves = load_all(&source.saves)?;
    let mut parts: Vec<(PathBuf, u64, Value)> = Vec::new();
    let mut trouble = false;
    for (path, save) in saves {
        match part_of(save, source.r#mod.as_deref()) {
            Ok((version, value)) => parts.push((path, version, value)),
            Err(why) => {
                errln!("error: {}: {why}", path.display());
                trouble = true;
            }
        }
    }
    if trouble {
        return Err(EXIT_FAILED);
    }
    let mut by_version: BTreeMap<u64, Vec<&Path>> = BTreeMap::new();
    for (path, version, _) in &parts {
        by_version.entry(*version).or_default().push(path);
    }
    let version = match by_version.len() {
        0 => {
            errln!("error: no saves found");
            return Err(EXIT_FAILED);
        }
        1 => *by_version.keys().next().expect("one"),
        _ => {
            let whose = match &source.r#mod {
                Some(name) => format!(" of mod {name}'s data"),
                None => String::new(),
            };
            errln!("error: the saves are at several versions{whose}, and a shape is of one:");
            for (version, paths) in &by_version {
                const SHOWN: usize = 3;
                let mut listed: Vec<String> = paths
                    .iter()
                    .take(SHOWN)
                    .map(|p| p.display().to_string())
                    .collect();
                if paths.len() > SHOWN {
                    listed.push(format!("and {} more", paths.len() - SHOWN));
                }
                errln!("  version {version}: {}", listed.join(", "));
            }
            errln!("give the saves of one version at a time");
            return Err(EXIT_FAILED);
        }
    };
    let hints = Hints {
        maps: source.map.clone(),
    };
    match shape::infer(parts.iter().map(|(_, _, value)| value), &hints) {
        Ok(shape) => Ok((
            version,
            shape,
            parts
                .into_iter()
                .map(|(path, _, value)| (path, value))
                .collect(),
        )),
        Err(e) => {
            print_error(&e, None);
            Err(EXIT_USAGE)
        }
    }
}

/// The part of `save` a shape is inferred from: its data (without `data.mods`, each mod's
/// own) at its version, or mod `in_mod`'s part at the mod's version.
fn part_of(save: Save, in_mod: Option<&str>) -> Result<(u64, Value), String> {
    let Some(name) = in_mod else {
        let mut data = save.data;
        if let Value::Object(members) = &mut data {
            members.remove("mods");
        }
        return Ok((save.meta.version, data));
    };
    let version = save
        .meta
        .extra
        .get("mods")
        .and_then(|mods| mods.get(name))
        .and_then(|entry| entry.get("version"))
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            format!("the save records no version of mod {name} (meta.mods.{name}.version)")
        })?;
    let part = save
        .data
        .get("mods")
        .and_then(|mods| mods.get(name))
        .cloned()
        .ok_or_else(|| format!("the save holds no data of mod {name} (data.mods.{name})"))?;
    Ok((version, part))
}

/// The saves of `paths` (files, and folders searched for `*.json` saves), each with its
/// path, in path order; files that are not saves found in folders are skipped. On a
/// failure, every error is printed and the exit status returned.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Save)>, i32> {
    let search = Plan::find(paths);
    let mut failed = !search.errors.is_empty();
    for error in &search.errors {
        print_error(error, None);
    }
    let mut saves = Vec::new();
    for found in &search.saves {
        match edit::read(&found.path) {
            Ok((_, save)) => saves.push((found.path.clone(), save)),
            Err(e) if found.skips(&e) => {}
            Err(e) => {
                print_error(&e, None);
                failed = true;
            }
        }
    }
    if failed {
        return Err(EXIT_FAILED);
    }
    if saves.is_empty() {
        errln!(
            "error: no saves found in {}",
            shell_words(
                &paths
                    .iter()
                    .map(|p| p.to_str().unwrap_or("?"))
                    .collect::<Vec<_>>()
            )
        );
        return Err(EXIT_FAILED);
    }
    Ok(saves)
}

/// Whether `save` is of the game `chain` is for (any save when it names none).
pub fn is_of_game(chain: &Chain, save: &Save) -> bool {
    chain
        .game()
        .is_none_or(|game| save.meta.extra.get("game").and_then(Value::as_str) == Some(game))
}
