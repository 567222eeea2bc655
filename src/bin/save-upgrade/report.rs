//! What a run reports: errors for people (the message, then the offending line with a
//! caret), and each save's entry in the JSON report of `--report`.

use savechain::batch::{Outcome, Status};
use savechain::compress;
use savechain::upgrade::{Chain, ModReport, ModStatus, Step};
use savechain::{Error, Map, Save, Value};

use super::output::errln;

/// Prints `error` to standard error, with the line it points at when known: from `source`,
/// or else read again from the file the error names (either decompressed when compressed).
pub fn print_error(error: &Error, source: Option<&[u8]>) {
    errln!("error: {error}");
    let Some(location) = error.location() else {
        return;
    };
    let read;
    let source = match (source, error.file()) {
        (Some(source), _) => source,
        (None, Some(file)) => match std::fs::read(file) {
            Ok(bytes) => {
                read = bytes;
                &read
            }
            Err(_) => return,
        },
        (None, None) => return,
    };
    // A compressed save's lines and columns are those of its text.
    let Ok(source) = compress::decompress(source, compress::DEFAULT_LIMIT) else {
        return;
    };
    let text = String::from_utf8_lossy(&source);
    let Some(line) = text.lines().nth(location.line - 1) else {
        return;
    };
    // Long lines (a minified save) are cut around the column so the caret stays visible.
    let chars: Vec<char> = line.chars().collect();
    let start = if chars.len() <= 120 {
        0
    } else {
        location.column.saturating_sub(60)
    };
    let shown: String = chars.iter().skip(start).take(120).collect();
    let number = location.line.to_string();
    // The caret's padding copies the tabs of the line, so it lines up however wide a
    // terminal shows a tab.
    let pad: String = chars
        .iter()
        .take(location.column.saturating_sub(1))
        .skip(start)
        .map(|&c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    errln!("{number} | {shown}");
    errln!("{} | {pad}^", " ".repeat(number.len()));
}

/// One save's entry in the JSON report: its path, versions, status, error and what its
/// steps printed. `chain` and `target` (`--to`) are the run's.
pub fn entry(outcome: &Outcome<'_>, chain: &Chain, target: Option<u64>) -> Value {
    let (from, to, mods_read) = match (&outcome.report, outcome.status) {
        (Some(report), _) => (Some(report.from), Some(report.to), Vec::new()),
        (None, Status::Failed) => versions_read_again(outcome, chain, target),
        (None, _) => (None, None, Vec::new()),
    };
    let version = |v: Option<u64>| v.map_or(Value::Null, Value::from);
    let printed: Vec<Value> = printed(outcome)
        .into_iter()
        .map(|(in_mod, step, line)| {
            let mut entry: Map = [("step", Value::from(step)), ("text", Value::from(line))]
                .into_iter()
                .collect();
            if let Some(name) = in_mod {
                entry.insert("mod", Value::from(name));
            }
            Value::Object(entry)
        })
        .collect();
    let entry: Map = [
        (
            "path",
            Value::String(outcome.found.path.display().to_string()),
        ),
        ("from", version(from)),
        ("to", version(to)),
        ("status", Value::from(save_status(outcome))),
        ("held", held_entry(outcome)),
        (
            "error",
            outcome
                .error
                .as_ref()
                .map_or(Value::Null, |e| Value::String(e.to_string())),
        ),
        ("printed", Value::Array(printed)),
        ("mods", mods_entry(outcome, &mods_read)),
    ]
    .into_iter()
    .collect();
    Value::Object(entry)
}

/// Where each mod's data of a save stands: `[{"name", "from", "to", "status", "error"}]`,
/// `status` one of "upgraded" ("outdated" with --check and --dry-run: it would be),
/// "current", "not-in-the-save", "not-installed", "held", "waiting", and for a save that
/// failed because of a mod, that mod as "failed", with the versions `read_again` (the
/// plan of the save read again) gives it.
fn mods_entry(outcome: &Outcome<'_>, read_again: &[ModReport]) -> Value {
    let version = |v: Option<u64>| v.map_or(Value::Null, Value::from);
    let entry = |name: &str, from, to, status: &str, error: Value| {
        let entry: Map = [
            ("name", Value::from(name)),
            ("from", version(from)),
            ("to", version(to)),
            ("status", Value::from(status)),
            ("error", error),
        ]
        .into_iter()
        .collect();
        Value::Object(entry)
    };
    let Some(report) = &outcome.report else {
        let failed = outcome
            .error
            .as_ref()
            .and_then(|e| Some((e.failed_mod()?, e)));
        let mods = failed.map(|(name, e)| {
            let planned = read_again.iter().find(|m| m.name == name);
            let (from, to) = planned.map_or((None, None), |m| (m.from, m.to));
            entry(name, from, to, "failed", Value::String(e.to_string()))
        });
        return Value::Array(mods.into_iter().collect());
    };
    let mods = report.mods.iter().map(|m| {
        let (status, error) = match &m.status {
            ModStatus::Held(why) => ("held", Value::from(why.as_str())),
            ModStatus::Upgraded if outcome.status == Status::Outdated => ("outdated", Value::Null),
            status => (status.word(), Value::Null),
        };
        entry(&m.name, m.from, m.to, status, error)
    });
    Value::Array(mods.collect())
}

/// What steps printed, in the order they ran: `(mod, step, line)`, the game's steps first,
/// then each mod's, a mod held back with what its failing steps printed.
pub fn printed<'a>(outcome: &'a Outcome<'_>) -> Vec<(Option<&'a str>, &'a str, &'a str)> {
    let lines_of = |step: &'a savechain::upgrade::StepReport| {
        let in_mod = step.in_mod.as_deref();
        step.printed
            .iter()
            .map(move |line| (in_mod, step.name.as_str(), line.as_str()))
    };
    let Some(report) = &outcome.report else {
        return outcome.steps().iter().flat_map(lines_of).collect();
    };
    let mut lines: Vec<_> = report
        .steps
        .iter()
        .filter(|s| s.in_mod.is_none())
        .flat_map(lines_of)
        .collect();
    for m in &report.mods {
        let name = m.name.as_str();
        let steps = report
            .steps
            .iter()
            .filter(|s| s.in_mod.as_deref() == Some(name));
        lines.extend(steps.flat_map(lines_of));
        let held = m.printed.iter();
        lines.extend(held.map(|(step, line)| (Some(name), step.as_str(), line.as_str())));
    }
    lines
}

/// The save's status in the report: the batch's, or "held" for a save where nothing was
/// done but holding a mod back (the batch counts it as current).
fn save_status(outcome: &Outcome<'_>) -> &'static str {
    match &outcome.report {
        Some(report) if report.was_current() && report.held().next().is_some() => "held",
        _ => outcome.status.name(),
    }
}

/// The names of the mods held back in the save (`--keep-going`), whatever its status.
fn held_entry(outcome: &Outcome<'_>) -> Value {
    let held = outcome.report.iter().flat_map(|r| r.held());
    Value::Array(held.map(|(name, _)| Value::from(name)).collect())
}

/// The entry of a path the search could not read (missing, unreadable, not a regular file,
/// holding no saves): failed, like a save that could not be upgraded.
pub fn search_error_entry(error: &Error) -> Value {
    let path = error
        .file()
        .map_or(Value::Null, |f| Value::String(f.display().to_string()));
    entry_without_upgrade(path, "failed", error.to_string())
}

/// The entry of a save a stopped run left as it was: `status` is "not-started" or
/// "abandoned" (under way when the run was stopped at once), `why` the error. Listed, a
/// stopped run's report holds an entry for every save of the run, as a finished one does.
pub fn left_entry(path: &std::path::Path, status: &str, why: String) -> Value {
    entry_without_upgrade(Value::String(path.display().to_string()), status, why)
}

/// An entry with no versions, steps or mods: of a path that was never upgraded.
fn entry_without_upgrade(path: Value, status: &str, error: String) -> Value {
    let entry: Map = [
        ("path", path),
        ("from", Value::Null),
        ("to", Value::Null),
        ("status", Value::from(status)),
        ("error", Value::String(error)),
        ("printed", Value::Array(Vec::new())),
        ("held", Value::Array(Vec::new())),
        ("mods", Value::Array(Vec::new())),
    ]
    .into_iter()
    .collect();
    Value::Object(entry)
}

/// The version of a save that failed, and the version the run was taking it to (`None`
/// when the chain has no way there: too new, too old, another game). A failure carries no
/// report, so the file is read again; it was left as it was. Only failed saves pay for it.
fn versions_read_again(
    outcome: &Outcome<'_>,
    chain: &Chain,
    target: Option<u64>,
) -> (Option<u64>, Option<u64>, Vec<ModReport>) {
    let read = std::fs::read(&outcome.found.path).map_err(Error::from);
    let Ok(save) = read.and_then(|bytes| Save::from_slice(&bytes)) else {
        return (None, None, Vec::new());
    };
    let from = save.meta.version;
    let to = chain
        .plan(&save.meta, target)
        .ok()
        .map(|steps| steps.last().map_or(from, Step::to));
    let mut options = savechain::Options::default();
    options.target = target;
    let mods = chain
        .plan_upgrade(&save, &options)
        .map_or(Vec::new(), |plan| plan.mods);
    (Some(from), to, mods)
}

/// The lines of `changes`, each after `indent`, in path order: `+ path: value` for what
/// was added, `- path: value` removed, `~ path: before -> after` changed.
pub fn changes_text(changes: &savechain::upgrade::Changes, indent: &str) -> String {
    let none = "";
    let mut lines: Vec<(&str, String)> = Vec::new();
    for change in &changes.added {
        let after = change.after.as_deref().unwrap_or(none);
        lines.push((&change.path, format!("+ {}: {after}", change.path)));
    }
    for change in &changes.removed {
        let before = change.before.as_deref().unwrap_or(none);
        lines.push((&change.path, format!("- {}: {before}", change.path)));
    }
    for change in &changes.changed {
        let before = change.before.as_deref().unwrap_or(none);
        let after = change.after.as_deref().unwrap_or(none);
        lines.push((
            &change.path,
            format!("~ {}: {before} -> {after}", change.path),
        ));
    }
    lines.sort_by(|a, b| a.0.cmp(b.0));
    lines
        .into_iter()
        .map(|(_, line)| format!("{indent}{line}\n"))
        .collect()
}

/// Says that `file` was written with `changes`, its original kept as `backup`.
pub fn print_written(
    file: &std::path::Path,
    changes: &savechain::upgrade::Changes,
    backup: &std::path::Path,
) {
    crate::output::err(&changes_text(changes, ""));
    errln!(
        "{}: written; the original is kept as {}",
        file.display(),
        backup.display()
    );
}

/// After a change by hand refused only for want of asking (`Error::refused_unless`), says
/// how to ask for what `needs` allows: the command run again with its flags, `rerun`
/// giving its words from the flags to add; and for a version, that upgrading the save
/// brings it up to date.
pub fn print_how_to_allow(
    needs: savechain::edit::Allow,
    file: &std::path::Path,
    rerun: impl FnOnce(&[&str]) -> Vec<String>,
) {
    let mut flags = Vec::new();
    if needs.new_member {
        flags.push("--add");
    }
    if needs.kind_change {
        flags.push("--change-kind");
    }
    if needs.shape_mismatch {
        flags.push("--ignore-shape");
    }
    if needs.version_change {
        flags.push("--change-version");
        let file = file.to_string_lossy();
        errln!(
            "to bring the save up to date, upgrade it instead: {} (with --mods DIR for the \
             versions of its mods)",
            shell_words(&["save-upgrade", &file])
        );
    }
    let words = rerun(&flags);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    errln!("if you mean it: {}", shell_words(&words));
}

/// `words` as one command line to paste into a shell, each quoted when it needs it.
pub fn shell_words(words: &[&str]) -> String {
    shlex::try_join(words.iter().copied()).unwrap_or_else(|_| words.join(" "))
}
