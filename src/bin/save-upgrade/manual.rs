//! The man page, save-upgrade(1): the clap definitions `--help` prints, rendered into one
//! roff page that holds every command (a user types `man save-upgrade`, and
//! clap_mangen alone would make a page per command).

use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;

/// The page of `command` (the whole command line), in roff.
pub fn page(mut command: clap::Command) -> String {
    command.build();
    let name = command.get_name().to_string();
    let version = command.get_version().unwrap_or_default().to_string();
    let man = Man::new(command.clone())
        .title(name.to_uppercase())
        .source(format!("{name} {}", env!("CARGO_PKG_VERSION")));
    let notes = command
        .get_after_long_help()
        .or(command.get_after_help())
        .map(|text| blocks(&text.to_string()))
        .unwrap_or_default();

    let mut page = Roff::new().render();
    page += &written(|w| man.render_title(w));
    // Commands and paths are most of the page: neither hyphenated nor spaced out.
    page += ".nh\n.ad l\n";
    page += &written(|w| man.render_name_section(w));

    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    synopsis(&mut roff, &command);
    roff.control("SH", ["DESCRIPTION"]);
    about(&mut roff, &command);
    for block in notes.iter().filter(|b| b.kind == Kind::Notes) {
        render(&mut roff, block, true);
    }
    page += &written(|w| roff.to_writer(w));

    page += &written(|w| man.render_options_section(w));

    let mut roff = Roff::new();
    roff.control("SH", ["COMMANDS"]);
    roff.text([roman(format!(
        "Each command takes the options listed under it ({name} COMMAND --help prints them)."
    ))]);
    for sub in commands(&command) {
        roff.control("SS", [sub.get_bin_name().unwrap_or(sub.get_name())]);
        synopsis(&mut roff, sub);
        about(&mut roff, sub);
        page += &written(|w| roff.to_writer(w));
        roff = Roff::new();
        // A command's own options, under its heading: clap_mangen's list without its
        // heading, and without -h, which every command has.
        let mut own = sub.clone();
        if own.get_arguments().any(|arg| arg.get_id() == "help") {
            own = own.mut_arg("help", |arg| arg.hide(true));
        }
        let options = Man::new(own);
        let listed = written(|w| options.render_options_section(w));
        page += listed.strip_prefix(".SH OPTIONS\n").unwrap_or(&listed);
        if let Some(text) = sub.get_after_long_help().or(sub.get_after_help()) {
            for block in blocks(&text.to_string()) {
                render(&mut roff, &block, true);
            }
        }
    }
    for (kind, heading) in [
        (Kind::Examples, "EXAMPLES"),
        (Kind::ExitStatus, "EXIT STATUS"),
    ] {
        roff.control("SH", [heading]);
        for block in notes.iter().filter(|b| b.kind == kind) {
            render(&mut roff, block, false);
        }
    }
    roff.control("SH", ["VERSION"]);
    roff.text([roman(format!("{name} {version}"))]);
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(format!(
        "{name} --help, {name} COMMAND --help; the README of savechain and its \
         docs/FORMAT.md, the specification of the save format."
    ))]);
    // The repository, once the package names one.
    let repository = env!("CARGO_PKG_REPOSITORY");
    if !repository.is_empty() {
        roff.control("PP", []);
        roff.text([roman(repository)]);
    }
    page += &written(|w| roff.to_writer(w));
    page
}

/// What a section writes, less the preamble each begins with (the roff crate's definition
/// of an upright apostrophe), which the page holds once, at its top.
fn written(section: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) -> String {
    let mut bytes = Vec::new();
    section(&mut bytes).expect("writing to memory");
    let text = String::from_utf8(bytes).expect("clap's text is UTF-8");
    let preamble = Roff::new().render();
    text.strip_prefix(&preamble).unwrap_or(&text).to_string()
}

/// Every command under `command`, depth first, each followed by its own; not clap's
/// `help`, which only prints what this page says.
fn commands(command: &clap::Command) -> Vec<&clap::Command> {
    let mut all = Vec::new();
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" || sub.is_hide_set() {
            continue;
        }
        all.push(sub);
        all.extend(commands(sub));
    }
    all
}

/// The usage lines of `--help`, the command's name in bold, and a line for each option that
/// stands alone.
fn synopsis(roff: &mut Roff, command: &clap::Command) {
    let usage = command.clone().render_usage().to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage);
    roff.control("PP", []);
    for (i, line) in usage.lines().enumerate() {
        let line = line.trim();
        let name = command.get_bin_name().unwrap_or(command.get_name());
        let (name, rest) = match line.strip_prefix(name) {
            Some(rest) => (name, rest),
            None => ("", line),
        };
        if i > 0 {
            roff.control("br", []);
        }
        roff.text([bold(name), roman(rest)]);
    }
    // An option that stands alone (--generate) is in no usage line of clap's.
    let name = command.get_bin_name().unwrap_or(command.get_name());
    for arg in command.get_arguments().filter(|a| a.is_exclusive_set()) {
        let (Some(long), Some(values)) = (arg.get_long(), arg.get_value_names()) else {
            continue;
        };
        roff.control("br", []);
        roff.text([
            bold(name),
            roman(format!(" --{long} <{}>", values.join(" "))),
        ]);
    }
}

/// The command's description, paragraph by paragraph.
fn about(roff: &mut Roff, command: &clap::Command) {
    let Some(about) = command.get_long_about().or(command.get_about()) else {
        return;
    };
    for paragraph in about.to_string().split("\n\n") {
        roff.control("PP", []);
        roff.text([roman(
            paragraph.split_whitespace().collect::<Vec<_>>().join(" "),
        )]);
    }
}

/// What a block of help text after the options is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// `Examples:` and the examples under it.
    Examples,
    /// A paragraph beginning `Exit status`.
    ExitStatus,
    /// Anything else.
    Notes,
}

/// One part of a block.
#[derive(Debug)]
enum Part {
    /// Prose, its lines joined: the page fills it.
    Paragraph(String),
    /// An indented line `  TAG   text`, text going on on the more indented lines below:
    /// an example and what it does, a name and what it means.
    Entry(String, String),
    /// An indented line `  - text`, going on on the more indented lines below.
    Bullet(String),
}

/// A run of the help text after the options, told apart as the help writes it.
#[derive(Debug)]
struct Block {
    kind: Kind,
    parts: Vec<Part>,
}

/// The text that `--help` prints after the options, cut into blocks: a blank line ends one,
/// and so does an `Exit status` line, which starts its own.
fn blocks(text: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let line = line.trim();
        if line.is_empty() {
            open = false;
            continue;
        }
        if indent == 0 && (line == "Examples:" || line.starts_with("Exit status")) {
            let kind = if line == "Examples:" {
                Kind::Examples
            } else {
                Kind::ExitStatus
            };
            blocks.push(Block {
                kind,
                parts: Vec::new(),
            });
            open = true;
            if kind == Kind::Examples {
                continue;
            }
        } else if !open {
            blocks.push(Block {
                kind: Kind::Notes,
                parts: Vec::new(),
            });
            open = true;
        }
        let parts = &mut blocks.last_mut().expect("a block was opened").parts;
        let last = parts.last_mut();
        match (indent, last) {
            (0, Some(Part::Paragraph(text))) => {
                text.push(' ');
                text.push_str(line);
            }
            (0, _) => parts.push(Part::Paragraph(line.to_string())),
            (2, _) if line.starts_with("- ") => parts.push(Part::Bullet(line[2..].to_string())),
            (2, _) => {
                // The text begins after a gap of two spaces or more (the help aligns it in
                // a column, which a long tag reaches with two).
                let (tag, text) = line.split_once("  ").unwrap_or((line, ""));
                parts.push(Part::Entry(tag.to_string(), text.trim().to_string()));
            }
            (_, Some(Part::Entry(_, text) | Part::Bullet(text) | Part::Paragraph(text))) => {
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(line);
            }
            (_, None) => parts.push(Part::Paragraph(line.to_string())),
        }
    }
    blocks
}

/// A block in roff: paragraphs filled, entries as tagged paragraphs (a run of entries
/// without text, such as examples alone, as lines kept as they are), bullets as a list;
/// examples under the label `Examples:` when `labelled`.
fn render(roff: &mut Roff, block: &Block, labelled: bool) {
    if labelled && block.kind == Kind::Examples {
        roff.control("PP", []);
        roff.text([bold("Examples:")]);
    }
    let mut lines_open = false;
    for part in &block.parts {
        let alone = matches!(part, Part::Entry(_, text) if text.is_empty());
        if lines_open && !alone {
            roff.control("fi", []);
            roff.control("RE", []);
            lines_open = false;
        }
        match part {
            Part::Paragraph(text) => {
                roff.control("PP", []);
                roff.text([roman(text)]);
            }
            Part::Entry(tag, _) if alone => {
                if !lines_open {
                    roff.control("PP", []);
                    roff.control("RS", ["4"]);
                    roff.control("nf", []);
                    lines_open = true;
                }
                roff.text([bold(tag)]);
            }
            Part::Entry(tag, text) => {
                roff.control("TP", []);
                roff.text([bold(tag)]);
                roff.text([roman(text)]);
            }
            Part::Bullet(text) => {
                roff.control("IP", ["\\(bu", "2"]);
                roff.text([roman(text)]);
            }
        }
    }
    if lines_open {
        roff.control("fi", []);
        roff.control("RE", []);
    }
}
