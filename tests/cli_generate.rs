//! `save-upgrade --generate KIND` and `--version`: the bash, zsh and fish completions load in
//! their shells and complete commands and their options, the man page renders without
//! warnings and holds every command with its options and the help's examples, a closed
//! pipe ends the output normally, an unknown kind is a usage error.
//!
//! The shells and groff must be installed (`.ci/test` installs zsh, fish and groff): a test
//! whose program is missing fails, saying which package to install, rather than passing
//! without having checked anything.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{save_upgrade, stderr};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `save-upgrade ARGS` prints, checked to have succeeded quietly.
fn printed(args: &[&str]) -> String {
    let out = save_upgrade(args, Path::new("."));
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    assert_eq!(stderr(&out), "", "{args:?}");
    stdout(&out)
}

/// The generated text of `kind` in a file of `dir`.
fn generated(kind: &str, dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, printed(&["--generate", kind])).unwrap();
    path
}

/// `program` run with `args` in `dir`, as home, with no user configuration; fails the test
/// when the program is not installed.
fn run(program: &str, package: &str, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .unwrap_or_else(|e| {
            panic!("{program} could not run ({e}): install it (apt-get install {package})")
        })
}

/// The commands `--help` lists, with the commands each of them lists, as typed:
/// `fmt`, `backups list`, ... (not `help`).
fn commands() -> Vec<String> {
    fn listed(words: &[String], all: &mut Vec<String>) {
        let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
        args.push("--help");
        let help = printed(&args);
        let Some(section) = help.split("\nCommands:\n").nth(1) else {
            return;
        };
        for line in section.lines().take_while(|l| l.starts_with("  ")) {
            let name = line.split_whitespace().next().unwrap();
            if name == "help" {
                continue;
            }
            let mut command = words.to_vec();
            command.push(name.to_string());
            all.push(command.join(" "));
            listed(&command, all);
        }
    }
    let mut all = Vec::new();
    listed(&[], &mut all);
    all
}

/// The long options `save-upgrade COMMAND --help` lists (`--json`, ...), not `--help`.
fn options(command: &str) -> BTreeSet<String> {
    let mut args: Vec<&str> = command.split_whitespace().collect();
    args.push("--help");
    let help = printed(&args);
    let section = help
        .split("\nOptions:\n")
        .nth(1)
        .expect("an Options section");
    section
        .lines()
        .take_while(|line| line.is_empty() || line.starts_with(' '))
        // An option's first line, not the lines of its help below it.
        .filter(|line| line.len() - line.trim_start().len() <= 6)
        .filter_map(|line| {
            let word = line.split_whitespace().find(|w| w.starts_with("--"))?;
            let word = word.trim_end_matches(',');
            (word != "--help").then(|| word.to_string())
        })
        .collect()
}

/// The words bash completes for `words`, the last being the one under the cursor, with the
/// completion function the script registers for save-upgrade.
fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'\n\
         function=$(complete -p save-upgrade | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')\n\
         [ -n \"$function\" ] || {{ echo 'no completion for save-upgrade' >&2; exit 1; }}\n\
         COMP_WORDS=({})\n\
         COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         \"$function\" save-upgrade \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" ")
    );
    let dir = script.parent().unwrap();
    let out = run(
        "bash",
        "bash",
        &["--norc", "--noprofile", "-c", &program],
        dir,
    );
    assert_eq!(out.status.code(), Some(0), "{words:?}: {}", stderr(&out));
    assert_eq!(stderr(&out), "", "{words:?}");
    stdout(&out).lines().map(str::to_string).collect()
}

#[test]
fn the_bash_completion_completes_commands_and_their_options() {
    let dir = tempfile::tempdir().unwrap();
    let script = generated("complete-bash", dir.path(), "save-upgrade");
    assert_eq!(bash_completes(&script, &["save-upgrade", "li"]), ["list"]);
    assert_eq!(
        bash_completes(&script, &["save-upgrade", "sh"]),
        ["show", "shape"]
    );
    // A command's options (these failed with clap_complete's own script: clap-rs/clap#6421).
    assert_eq!(
        bash_completes(&script, &["save-upgrade", "list", "--js"]),
        ["--json"]
    );
    assert_eq!(
        bash_completes(&script, &["save-upgrade", "backups", "prune", "--ke"]),
        ["--keep"]
    );
    assert_eq!(
        bash_completes(&script, &["save-upgrade", "--out"]),
        ["--out-dir"]
    );
    assert_eq!(
        bash_completes(&script, &["save-upgrade", "--generate", ""]),
        ["complete-bash", "complete-zsh", "complete-fish", "man"]
    );
}

#[test]
fn the_zsh_completion_passes_zsh_n_and_registers_itself() {
    let dir = tempfile::tempdir().unwrap();
    let script = generated("complete-zsh", dir.path(), "_save-upgrade");
    let script = script.to_str().unwrap();
    let out = run("zsh", "zsh", &["-n", script], dir.path());
    assert_eq!(out.status.code(), Some(0), "zsh -n: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    // Loaded after compinit, as a user's ~/.zshrc would, it is save-upgrade's completion.
    let program = format!(
        "autoload -U compinit && compinit -u -D && source '{script}' && print -r -- \
         $_comps[save-upgrade]"
    );
    let out = run("zsh", "zsh", &["-f", "-c", &program], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "_save-upgrade\n", "{}", stderr(&out));
}

#[test]
fn the_fish_completion_passes_no_execute_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let script = generated("complete-fish", dir.path(), "save-upgrade.fish");
    let script = script.to_str().unwrap();
    let out = run("fish", "fish", &["--no-execute", script], dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "fish --no-execute: {}",
        stderr(&out)
    );
    assert_eq!(stderr(&out), "");
    let completes = |line: &str| -> Vec<String> {
        let program = format!("source '{script}'; complete -C '{line}'");
        let out = run("fish", "fish", &["--no-config", "-c", &program], dir.path());
        assert_eq!(out.status.code(), Some(0), "{line}: {}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(completes("save-upgrade li"), ["list"]);
    assert_eq!(completes("save-upgrade list --js"), ["--json"]);
    assert_eq!(completes("save-upgrade backups prune --ke"), ["--keep"]);
}

/// The man page as groff sets it for a terminal, in plain text; groff's warnings fail it.
fn man_page_text(dir: &Path) -> String {
    let page = generated("man", dir, "save-upgrade.1");
    let out = run(
        "groff",
        "groff-base",
        &[
            "-man",
            "-Tutf8",
            "-ww",
            "-P-cbou",
            "-rLL=100n",
            page.to_str().unwrap(),
        ],
        dir,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "groff warns");
    stdout(&out)
}

/// The lines after the line `heading` of the page, up to the next line indented less than
/// `body` columns (groff indents sections' text 7 columns, subsection headings 3).
fn part<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no {heading:?} in the page:\n{text}"))
        + heading.len()
        + 2;
    // A section (at column 0) ends at the next; a command's subsection (at column 3) at the
    // next subsection or section.
    let outer = heading.len() - heading.trim_start().len();
    let rest = &text[start..];
    let mut end = 0;
    for line in rest.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        if !line.trim().is_empty() && indent <= outer {
            break;
        }
        end += line.len();
    }
    &rest[..end]
}

fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_man_page_renders_without_warnings_and_holds_every_command_with_its_options() {
    let dir = tempfile::tempdir().unwrap();
    let text = man_page_text(dir.path());
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "EXAMPLES",
        "EXIT STATUS",
        "VERSION",
    ] {
        assert!(
            text.contains(&format!("\n{section}\n")),
            "{section}:\n{text}"
        );
    }
    assert!(
        text.starts_with("SAVE-UPGRADE(1)"),
        "{}",
        &text[..text.len().min(200)]
    );
    let synopsis = part(&text, "SYNOPSIS");
    for usage in [
        "save-upgrade [OPTIONS] [PATH]...",
        "save-upgrade <COMMAND>",
        "save-upgrade --generate <KIND>",
    ] {
        assert!(synopsis.contains(usage), "{usage}:\n{synopsis}");
    }
    let upgrade = part(&text, "OPTIONS");
    for option in options("").iter().chain(["--generate".to_string()].iter()) {
        assert!(upgrade.contains(option), "{option} in OPTIONS:\n{upgrade}");
    }
    let commands = commands();
    assert!(commands.len() >= 20, "{commands:?}");
    for command in ["backups prune", "cache verify", "shape record", "validate"] {
        assert!(commands.iter().any(|c| c == command), "{commands:?}");
    }
    for command in &commands {
        let section = part(&text, &format!("   save-upgrade {command}"));
        assert!(
            section.contains(&format!("save-upgrade {command}")),
            "the synopsis of {command}:\n{section}"
        );
        for option in options(command) {
            assert!(
                section.contains(&option),
                "{option} of {command}:\n{section}"
            );
        }
    }
    let version = part(&text, "VERSION");
    assert!(
        words(version).contains(printed(&["--version"]).trim()),
        "{version}"
    );
}

/// Every example of `--help` is in EXAMPLES, with what it does; one of a command's help is
/// in that command's section.
#[test]
fn the_man_page_has_the_examples_of_the_help() {
    let dir = tempfile::tempdir().unwrap();
    let text = man_page_text(dir.path());
    let help = printed(&["--help"]);
    let examples = help
        .split("\nExamples:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("an Examples section in --help");
    let section = words(part(&text, "EXAMPLES"));
    let mut count = 0;
    for line in examples.lines() {
        if line.starts_with("  ") && !line.starts_with("   ") {
            let line = line.trim();
            let (command, description) = line.split_once("  ").unwrap_or((line, ""));
            assert!(section.contains(command), "{command:?} in:\n{section}");
            assert!(
                section.contains(&words(description)),
                "{description:?} in:\n{section}"
            );
            count += 1;
        }
    }
    assert!(count >= 20, "{examples}");
    let fmt = words(part(&text, "   save-upgrade fmt"));
    assert!(
        fmt.contains("Examples: save-upgrade fmt world.json save-upgrade fmt --check saves/"),
        "{fmt}"
    );
    let exit = words(part(&text, "EXIT STATUS"));
    assert!(
        exit.starts_with("Exit status, as diff and grep: 0 all good"),
        "{exit}"
    );
}

#[test]
fn version_names_savechain_and_the_format_revision() {
    let line = format!(
        "save-upgrade {v} (savechain {v}, format revision {})\n",
        savechain::FORMAT_REVISION,
        v = env!("CARGO_PKG_VERSION"),
    );
    assert_eq!(printed(&["--version"]), line);
    assert_eq!(printed(&["-V"]), line);
}

#[test]
fn generate_is_in_the_long_help_only_with_an_example() {
    let short = printed(&["-h"]);
    assert!(!short.contains("--generate"), "{short}");
    let long = printed(&["--help"]);
    assert!(long.contains("--generate <KIND>"), "{long}");
    assert!(
        long.contains("save-upgrade --generate complete-zsh > ~/.zfunc/_save-upgrade"),
        "{long}"
    );
    for kind in ["complete-bash", "complete-zsh", "complete-fish", "man"] {
        assert!(long.contains(&format!("- {kind}:")), "{kind}: {long}");
    }
}

#[test]
fn an_unknown_kind_or_anything_beside_generate_is_a_usage_error() {
    let out = save_upgrade(&["--generate", "complete-tcsh"], Path::new("."));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(err.contains("complete-tcsh"), "{err}");
    assert!(
        err.contains("[possible values: complete-bash, complete-zsh, complete-fish, man]"),
        "{err}"
    );
    // --generate stands alone: with a path it would be unclear whether to upgrade it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), "{}").unwrap();
    for args in [
        &["--generate", "man", "a.json"][..],
        &["--check", "--generate", "man"],
        &["list", "--generate", "man"],
    ] {
        let out = save_upgrade(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stdout(&out), "", "{args:?}");
        assert!(
            stderr(&out).contains("--generate"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.json")).unwrap(),
        "{}"
    );
}

/// A reader gone before the first byte (`save-upgrade --generate man | true`) ends the
/// output normally: exit 0, nothing said, for every kind.
#[test]
fn a_closed_pipe_ends_the_output_normally() {
    for kind in ["complete-bash", "complete-zsh", "complete-fish", "man"] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
            .args(["--generate", kind])
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{kind}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{kind}");
    }
}
