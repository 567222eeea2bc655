//! `save-upgrade list`: each save's head (game, version, writer, mods, time, compression)
//! and where it stands against the chain, a table or JSON lines on standard output.

use std::ops::ControlFlow;
use std::path::PathBuf;

use savechain::head::{self, Listed, Status};
use savechain::{Map, Options, Value};

use super::chain::ChainArg;
use super::output::{self, errln, outln};
use super::{shell_quoted, EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// List saves from their heads: path, game, version, writer, mods, time, compression, and
/// whether each needs an upgrade. Only the head of each file is read.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade list saves/                   a table of every save under saves/
  save-upgrade list --json saves/ | jq -r 'select(.status != \"current\") | .path'
                                             the saves that need work, one path a line
  save-upgrade list --upgrades mygame/upgrades/ --writer 2.3.0 --mods mods/ saves/

The table has the columns PATH (quoted for a shell where it must be, to paste into other
commands), GAME (meta.game), VERSION, WRITER, MODS (name@version, comma-separated),
MODIFIED (the file's time, RFC 3339, UTC), COMPRESSION (none, zstd or gzip) and STATUS:
current; needs upgrade to N (and the mods whose steps would run: mod NAME to N); too new:
why (a newer program is needed); cannot upgrade: why (another game's save, older than the
chain, a mod's data the chain cannot upgrade); damaged: where and why (its head does not
read). A missing value is -.

--json prints one JSON object a line (JSON Lines), as each save is read: path, game
(string or null), version, writer (string or null), mods ({name: version or null}),
modified (RFC 3339 or null), compression, size (bytes as stored), bytes_read (bytes read
from the file), whole (true when the save has data before meta, written before format
revision 3, and was read whole), status (current, outdated, too-new, refused, damaged),
to (the version an upgrade reaches, when outdated), mods_to ({name: version} of the mods
an upgrade would run, when outdated) and error (why, for too-new, refused and damaged;
the other fields but path are then null).

Folders are searched for saves as by every command (files that are not saves are left
out). A save written with meta first (format revision 3) costs a read of its head: 4 KiB
of text unless meta is longer, decompressed only that far; an older save is read whole.
Exit status: 0 every save is current; 1 a save needs an upgrade, is too new, cannot be
upgraded or is damaged; 2 a path could not be searched, or a usage error.")]
pub struct Args {
    /// Print one JSON object per save and line (JSON Lines) instead of a table.
    #[arg(long)]
    json: bool,
    /// Print no summary and no notes on files skipped as not saves (standard error).
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    chain: ChainArg,
    /// Save files, or folders to search for saves.
    #[arg(required = true, value_name = "SAVES")]
    paths: Vec<PathBuf>,
}

const HEADER: [&str; 8] = [
    "PATH",
    "GAME",
    "VERSION",
    "WRITER",
    "MODS",
    "MODIFIED",
    "COMPRESSION",
    "STATUS",
];

/// Rows gathered before the table's column widths are set: the whole table for most
/// folders; a longer one streams on with those widths.
const MEASURED: usize = 1000;

pub fn run(args: Args) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    let Some(plan) = super::find_named(&args.paths) else {
        return EXIT_USAGE;
    };
    // Files that are not saves are left out with a note, as every folder search leaves them.
    let note_skipped = |path: &std::path::Path, why: &str| {
        if !args.quiet {
            errln!("skipped {}: {why}", path.display());
        }
    };
    for (path, why) in &plan.skipped {
        note_skipped(path, why);
    }
    let mut counts = Counts::default();
    let mut table = Table::default();
    head::list_each(&plan.saves, Some(&chain), &Options::default(), |listed| {
        if let Status::NotASave(e) = &listed.status {
            note_skipped(&listed.path, e.message());
            return ControlFlow::Continue(());
        }
        counts.add(&listed.status);
        match args.json {
            true => outln!("{}", json_line(&listed)),
            false => table.push(row(&listed)),
        }
        match output::closed() {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    });
    table.finish();
    if output::closed() {
        // A reader that stopped (`| head`) ends the listing; that is no failure.
        return EXIT_OK;
    }
    if !args.quiet {
        errln!("{}", counts.summary());
    }
    if !plan.errors.is_empty() {
        EXIT_FAILED
    } else if counts.attention > 0 {
        EXIT_FOUND_WORK
    } else {
        EXIT_OK
    }
}

#[derive(Default)]
struct Counts {
    saves: usize,
    current: usize,
    outdated: usize,
    too_new: usize,
    refused: usize,
    damaged: usize,
    attention: usize,
}

impl Counts {
    fn add(&mut self, status: &Status) {
        self.saves += 1;
        match status {
            Status::Current => self.current += 1,
            Status::Outdated { .. } => self.outdated += 1,
            Status::TooNew(_) => self.too_new += 1,
            Status::Refused(_) => self.refused += 1,
            Status::Damaged(_) => self.damaged += 1,
            _ => {}
        }
        if status.needs_attention() {
            self.attention += 1;
        }
    }

    fn summary(&self) -> String {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        format!(
            "listed {} save{}: {} current, {} to upgrade, {} too new, {} refused, {} damaged",
            self.saves,
            s(self.saves),
            self.current,
            self.outdated,
            self.too_new,
            self.refused,
            self.damaged
        )
    }
}

/// A save's cells, in [`HEADER`]'s order.
fn row(listed: &Listed) -> [String; 8] {
    let path = shell_quoted(&listed.path.to_string_lossy());
    let status = listed.status.to_string().replace('\n', " ");
    let Some(head) = &listed.head else {
        let dash = || "-".to_string();
        return [path, dash(), dash(), dash(), dash(), dash(), dash(), status];
    };
    let mods: Vec<String> = head
        .mods()
        .iter()
        .map(|(name, version)| match version {
            Some(v) => format!("{name}@{v}"),
            None => format!("{name}@-"),
        })
        .collect();
    let or_dash = |s: Option<String>| s.unwrap_or_else(|| "-".to_string());
    [
        path,
        or_dash(head.game().map(str::to_string)),
        head.meta.version.to_string(),
        or_dash(head.meta.writer.as_ref().map(ToString::to_string)),
        or_dash((!mods.is_empty()).then(|| mods.join(","))),
        or_dash(head.modified.map(time)),
        head.codec.name().to_string(),
        status,
    ]
}

fn time(at: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

/// A table printed as its rows come: the first [`MEASURED`] rows set the column widths.
#[derive(Default)]
struct Table {
    pending: Vec<[String; 8]>,
    widths: Option<[usize; 8]>,
}

impl Table {
    fn push(&mut self, row: [String; 8]) {
        match self.widths {
            Some(widths) => print_row(&row, &widths),
            None => {
                self.pending.push(row);
                if self.pending.len() == MEASURED {
                    self.flush();
                }
            }
        }
    }

    fn finish(&mut self) {
        if self.widths.is_none() && !self.pending.is_empty() {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let mut widths = HEADER.map(|h| h.chars().count());
        for row in &self.pending {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        print_row(&HEADER.map(str::to_string), &widths);
        for row in self.pending.drain(..) {
            print_row(&row, &widths);
        }
        self.widths = Some(widths);
    }
}

fn print_row(row: &[String; 8], widths: &[usize; 8]) {
    let mut line = String::new();
    for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
        if i + 1 == row.len() {
            line.push_str(cell);
        } else {
            line.push_str(cell);
            let pad = width.saturating_sub(cell.chars().count()) + 2;
            line.extend(std::iter::repeat_n(' ', pad));
        }
    }
    outln!("{}", line.trim_end());
}

/// A save as one line of JSON.
fn json_line(listed: &Listed) -> String {
    let mut line = Map::new();
    line.insert("path", Value::from(listed.path.to_string_lossy().as_ref()));
    line.insert("status", Value::from(listed.status.word()));
    let text = |s: Option<String>| s.map_or(Value::Null, Value::String);
    let head = listed.head.as_ref();
    line.insert(
        "game",
        text(head.and_then(|h| h.game().map(str::to_string))),
    );
    line.insert(
        "version",
        head.map_or(Value::Null, |h| Value::from(h.meta.version)),
    );
    line.insert(
        "writer",
        text(head.and_then(|h| h.meta.writer.as_ref().map(ToString::to_string))),
    );
    let mods = head.map_or(Value::Null, |h| {
        let mods: Map = h
            .mods()
            .into_iter()
            .map(|(name, v)| (name, v.map_or(Value::Null, Value::from)))
            .collect();
        Value::Object(mods)
    });
    line.insert("mods", mods);
    line.insert("modified", text(head.and_then(|h| h.modified.map(time))));
    line.insert(
        "compression",
        text(head.map(|h| h.codec.name().to_string())),
    );
    let number = |n: Option<u64>| n.map_or(Value::Null, Value::from);
    line.insert("size", number(head.map(|h| h.size)));
    line.insert("bytes_read", number(head.map(|h| h.bytes_read)));
    line.insert("whole", head.map_or(Value::Null, |h| Value::Bool(h.whole)));
    if let Status::Outdated { to, mods } = &listed.status {
        line.insert("to", Value::from(*to));
        let mods_to: Map = mods
            .iter()
            .map(|(name, v)| (name.as_str(), Value::from(*v)))
            .collect();
        line.insert("mods_to", Value::Object(mods_to));
    }
    if let Some(error) = listed.status.error() {
        line.insert("error", Value::from(error.to_string()));
    }
    savechain::text::to_string_compact(&Value::Object(line)).expect("no doubles, shallow")
}
