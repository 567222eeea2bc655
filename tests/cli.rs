//! The `save-upgrade` binary as scripts use it: files, exit statuses, standard streams.

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{save_upgrade, stderr};

const CANONICAL: &str = "{\n  \"meta\": {\n    \"version\": 1\n  },\n  \"data\": {\n    \"hp\": [\"d\", \"0x1.8p+3\"]\n  }\n}\n";
/// [`CANONICAL`] as format revision 2 wrote it, `data` before `meta`.
const REVISION_2: &str = "{\n  \"data\": {\n    \"hp\": [\"d\", \"0x1.8p+3\"]\n  },\n  \"meta\": {\n    \"version\": 1\n  }\n}\n";
const MESSY: &str = r#"{"meta":{"version":1},"data":{"hp":12.0}}"#;
const BROKEN: &str = r#"{"meta":{"version":1},"data":{"hp":["d","0x1.gp3"]}}"#;

#[test]
fn fmt_rewrites_in_place_and_leaves_failures_untouched() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    fs::write(dir.path().join("a.json"), MESSY).unwrap();
    fs::write(dir.path().join("sub/b.json"), CANONICAL).unwrap();
    fs::write(dir.path().join("sub/broken.json"), BROKEN).unwrap();
    fs::write(dir.path().join("notes.txt"), "not a save").unwrap();

    let out = save_upgrade(&["fmt", "."], dir.path());
    assert_eq!(
        out.status.code(),
        Some(2),
        "a save failed: {}",
        stderr(&out)
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("a.json")).unwrap(),
        CANONICAL
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("sub/b.json")).unwrap(),
        CANONICAL
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("sub/broken.json")).unwrap(),
        BROKEN
    );
    let err = stderr(&out);
    assert!(
        err.contains("broken.json:1:41: at data.hp: bad double"),
        "{err}"
    );
    assert!(
        err.contains(
            "reformatted 1, already canonical 1, failed 1; each original is kept beside its \
             save as a backup: save-upgrade backups list ."
        ),
        "{err}"
    );
    // The saves, the backup of the one rewritten (none of the canonical one nor of the
    // broken one), and no temporary files left behind.
    let mut names: Vec<_> = walk(dir.path());
    names.sort();
    assert_eq!(
        names,
        [
            "a.json",
            "a.json.bak",
            "notes.txt",
            "sub/b.json",
            "sub/broken.json"
        ]
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("a.json.bak")).unwrap(),
        MESSY
    );
}

/// A save named is told where its original is kept; another hand edit's fmt keeps it
/// beside the first, never over it; a canonical save and `-q` say nothing.
#[test]
fn fmt_of_a_save_named_says_where_its_original_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("world.json"), MESSY).unwrap();
    let out = save_upgrade(&["fmt", "world.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "world.json: reformatted; the original is kept as world.json.bak\n\
         reformatted 1, already canonical 0, failed 0\n"
    );
    let typed_again = r#"{"data":{"hp":13.0},"meta":{"version":1}}"#;
    fs::write(dir.path().join("world.json"), typed_again).unwrap();
    let out = save_upgrade(&["fmt", "world.json"], dir.path());
    assert!(
        stderr(&out).contains("world.json: reformatted; the original is kept as world.json.1.bak"),
        "{}",
        stderr(&out)
    );
    let read = |name: &str| fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("world.json.bak"), MESSY);
    assert_eq!(read("world.json.1.bak"), typed_again);

    let out = save_upgrade(&["fmt", "world.json"], dir.path());
    assert_eq!(
        stderr(&out),
        "reformatted 0, already canonical 1, failed 0\n"
    );
    fs::write(dir.path().join("world.json"), MESSY).unwrap();
    let out = save_upgrade(&["fmt", "-q", "world.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    // The same bytes as the first backup: that one, written again, not a third.
    let mut names = walk(dir.path());
    names.sort();
    assert_eq!(names, ["world.json", "world.json.1.bak", "world.json.bak"]);
}

/// A backup that cannot be written (a folder has its name) fails that save, left as it
/// was; the others are still done.
#[test]
fn fmt_leaves_a_save_whose_backup_cannot_be_written_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.json"), MESSY).unwrap();
    fs::create_dir(dir.path().join("a.json.bak")).unwrap();
    fs::write(dir.path().join("b.json"), MESSY).unwrap();
    let out = save_upgrade(&["fmt", "."], dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("./a.json: cannot write the backup ./a.json.bak"),
        "{err}"
    );
    assert!(
        err.contains("reformatted 1, already canonical 0, failed 1"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("a.json")).unwrap(),
        MESSY
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("b.json")).unwrap(),
        CANONICAL
    );
    let mut names = walk(dir.path());
    names.sort();
    assert_eq!(names, ["a.json", "b.json", "b.json.bak"]);
}

fn walk(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let sub = path.file_name().unwrap().to_string_lossy().into_owned();
            names.extend(walk(&path).into_iter().map(|n| format!("{sub}/{n}")));
        } else {
            names.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    names
}

#[test]
fn fmt_check_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("ok.json"), CANONICAL).unwrap();
    let out = save_upgrade(&["fmt", "--check", "ok.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    fs::write(dir.path().join("messy.json"), MESSY).unwrap();
    let out = save_upgrade(&["fmt", "--check", "ok.json", "messy.json"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    // As `grep -l`: the saves to rewrite on standard output, one a line.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "messy.json\n");
    assert_eq!(
        fs::read_to_string(dir.path().join("messy.json")).unwrap(),
        MESSY
    );
    // Nothing written, nothing kept.
    let mut names = walk(dir.path());
    names.sort();
    assert_eq!(names, ["messy.json", "ok.json"]);
}

#[test]
fn fmt_check_lists_the_saves_to_rewrite_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = String::new();
    // Enough saves that two threads finish some of them out of order.
    for i in 0..200 {
        let name = format!("s{i:03}.json");
        // Every third save is canonical already.
        let text = if i % 3 == 0 { CANONICAL } else { MESSY };
        fs::write(dir.path().join(&name), text).unwrap();
        if i % 3 != 0 {
            expected.push_str(&format!("./{name}\n"));
        }
    }
    fs::write(dir.path().join("broken.json"), "{").unwrap();
    let out = save_upgrade(&["fmt", "--check", "."], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_save_in_the_order_of_revision_2_reads_the_same_and_fmt_writes_meta_first() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("old.json"), REVISION_2).unwrap();
    let out = save_upgrade(&["get", "old.json", "data.hp"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(&["fmt", "--check", "old.json"], dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "old.json\n",
        "{}",
        stderr(&out)
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("old.json")).unwrap(),
        REVISION_2
    );
    let out = save_upgrade(&["fmt", "old.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(dir.path().join("old.json")).unwrap(),
        CANONICAL
    );
    let out = save_upgrade(&["fmt", "--check", "old.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Runs `save-upgrade fmt -` with `input` on standard input.
fn fmt_stdin(input: &str) -> Output {
    save_upgrade_stdin(&["fmt", "-"], input.as_bytes())
}

/// Runs `save-upgrade` with `args` and `input` on standard input.
fn save_upgrade_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn fmt_dash_filters_standard_streams() {
    let out = fmt_stdin(MESSY);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), CANONICAL);

    let out = fmt_stdin(BROKEN);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("<stdin>:1:41:"));
}

/// A messy save of `n` members, many pieces of canonical text long.
fn large_messy(n: usize) -> String {
    let members: Vec<String> = (0..n)
        .map(|i| format!(r#""m{i:05}":{{"name":"crew {i}","hp":{i}.5,"at":[1,2,3]}}"#))
        .collect();
    format!(
        r#"{{"data":{{{}}},"meta":{{"version":1}}}}"#,
        members.join(",")
    )
}

/// A large save is streamed out piece by piece, the bytes of its canonical text; one whose
/// error comes at its very end (after many pieces of good text) prints nothing at all.
#[test]
fn fmt_dash_streams_a_large_save_and_prints_nothing_of_a_broken_one() {
    let messy = large_messy(20_000);
    let out = fmt_stdin(&messy);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.len() > 1 << 20);
    assert_eq!(
        out.stdout,
        savechain::Save::from_str(&messy).unwrap().to_vec().unwrap()
    );
    // From a file (`< save.json`), read into a buffer of its size: the same text.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("messy.json"), &messy).unwrap();
    let from_file = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["fmt", "-"])
        .stdin(fs::File::open(dir.path().join("messy.json")).unwrap())
        .output()
        .unwrap();
    assert_eq!(from_file.status.code(), Some(0), "{}", stderr(&from_file));
    assert_eq!(from_file.stdout, out.stdout);
    // A key twice, at the end of the data; text after the document.
    let errors = [
        messy.replacen(r#"}},"meta":"#, r#"},"m00000":1},"meta":"#, 1),
        format!("{messy} x"),
    ];
    for broken in errors {
        let out = fmt_stdin(&broken);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(out.stdout.is_empty(), "{} bytes printed", out.stdout.len());
        assert!(stderr(&out).contains("<stdin>:1:"), "{}", stderr(&out));
    }
}

/// `fmt --check -` compares standard input with its canonical text piece by piece: 0 when
/// it is canonical, 1 when not (even at its last byte), 2 when it is broken.
#[test]
fn fmt_check_dash_compares_a_large_save_with_its_canonical_text() {
    let messy = large_messy(20_000);
    let canonical = savechain::Save::from_str(&messy).unwrap().to_vec().unwrap();
    let check = |input: &[u8]| save_upgrade_stdin(&["fmt", "--check", "-"], input);
    let out = check(&canonical);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let last_changed = [&canonical[..canonical.len() - 1], b" "].concat();
    for not_canonical in [messy.as_bytes(), &last_changed] {
        let out = check(not_canonical);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("not canonical: <stdin>"),
            "{}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty());
    }
    let out = check(format!("{messy} x").as_bytes());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// Standard output closed by its reader while a large save streams out (`| head -c 0`): a
/// normal end.
/// Runs `save-upgrade` with `args`, a large messy save on standard input and standard
/// output going to `stdout`.
fn large_save_into(args: &[&str], stdout: impl Into<Stdio>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(large_messy(20_000).as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn fmt_dash_into_a_closed_pipe_is_a_normal_end() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = large_save_into(&["fmt", "-"], writer);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A save that reads within the depth limit but would be written deeper (a bare decimal,
/// written as a `["d", ...]` tag, at the limit) fails before anything is printed, however
/// much text comes before it; `fmt --check -` calls it a failure, not work to do.
#[test]
fn fmt_dash_prints_nothing_of_a_save_that_cannot_be_written() {
    let deep = format!("{}1.5{}", "[".repeat(510), "]".repeat(510));
    let text = format!(
        "{{\"meta\": {{\"version\": 1}}, \"data\": {{\"a\": \"{}\", \"z\": {deep}}}}}",
        "x".repeat(200_000)
    );
    for args in [&["fmt", "-"][..], &["fmt", "--check", "-"][..]] {
        let out = save_upgrade_stdin(args, text.as_bytes());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {} bytes out",
            out.stdout.len()
        );
        assert!(stderr(&out).contains("deep"), "{args:?}: {}", stderr(&out));
    }
}

/// A full disk behind a redirection cuts the output short: no success, whether the text
/// was streamed (`fmt -`) or printed whole (`show`).
#[cfg(target_os = "linux")]
#[test]
fn output_cut_short_by_a_full_disk_fails() {
    for args in [&["fmt", "-"][..], &["show", "-"][..]] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = large_save_into(args, full);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cut short"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn chain_json_describes_the_example_chain() {
    let out = save_upgrade(&["chain", "--json"], Path::new("."));
    assert_eq!(out.status.code(), Some(0));
    let chain = savechain::text::from_slice(&out.stdout).unwrap();
    assert_eq!(chain.get("latest").and_then(|v| v.as_u64()), Some(9));
    assert_eq!(chain.get("oldest").and_then(|v| v.as_u64()), Some(1));
    let steps = chain.get("steps").and_then(|v| v.as_array()).unwrap();
    assert_eq!(steps.len(), 8);
    assert_eq!(
        steps[0].get("kind").and_then(|v| v.as_str()),
        Some("declared")
    );
}

/// Declared steps are steps like the others: a dry run lists them, a diff shows what they
/// changed, strict mode accepts the removals they declare.
#[test]
fn dry_run_and_diff_show_declared_steps() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("v6.json");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/v6/small.json"),
        &save,
    )
    .unwrap();
    let before = std::fs::read(&save).unwrap();
    let out = save_upgrade(&["--dry-run", "v6.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        shown.contains(
            "  6 -> 7  declared  Ships get shields (100 by default); the tutorial flag is gone."
        ),
        "{shown}"
    );
    assert_eq!(
        std::fs::read(&save).unwrap(),
        before,
        "a dry run writes nothing"
    );
    let out = save_upgrade(&["--diff", "--strict", "v6.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        shown.contains(
            "  6 -> 7 0006-shields-and-tutorial.json (Ships get shields (100 by default); the tutorial flag is gone.)\n    - data.player.tutorial_done: true\n    + data.ship.shield: [\"d\",100.0]\n"
        ),
        "{shown}"
    );
    assert_ne!(std::fs::read(&save).unwrap(), before, "upgraded");
}

#[test]
fn usage_errors_exit_2_and_help_has_examples() {
    let out = save_upgrade(&["fmt"], Path::new("."));
    assert_eq!(out.status.code(), Some(2));
    let out = save_upgrade(&["--frobnicate"], Path::new("."));
    assert_eq!(out.status.code(), Some(2));
    let out = save_upgrade(&[], Path::new("."));
    assert_eq!(out.status.code(), Some(2));
    let out = save_upgrade(&["--help"], Path::new("."));
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Examples:"));
}

/// An example of `--help` that writes (upgrades in place, or into a folder) says so: one
/// that looks like a query (`--report - | jq`) must not upgrade every save unannounced.
#[test]
fn every_help_example_that_writes_says_so() {
    let out = save_upgrade(&["--help"], Path::new("."));
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let examples = help
        .split("Examples:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("an Examples section");
    // Each example: its command line, then its description (after a gap, and on the
    // lines below it).
    let mut parsed: Vec<(String, String)> = Vec::new();
    for line in examples.lines() {
        let text = line.trim();
        if line.starts_with("  ") && !line.starts_with("    ") {
            let (command, description) = text.split_once("   ").unwrap_or((text, ""));
            parsed.push((command.to_string(), description.trim().to_string()));
        } else if let Some((_, description)) = parsed.last_mut() {
            description.push(' ');
            description.push_str(text);
        }
    }
    assert!(parsed.len() >= 10, "{parsed:?}");
    let looks_only = [
        "--check",
        "--dry-run",
        " inspect ",
        " chain ",
        "cache verify",
        " show ",
        " diff ",
        " validate ",
        " schema ",
        " shape infer ",
    ];
    for (command, description) in &parsed {
        let writes = !looks_only.iter().any(|flag| command.contains(flag));
        if writes {
            assert!(
                description.contains("upgrade") || description.contains("write"),
                "{command:?} writes, but its description does not say so: {description:?}"
            );
        }
    }
    let query = parsed.iter().find(|(c, _)| c.contains("--report -"));
    let (command, description) = query.expect("an example with the report on standard output");
    assert!(command.contains("--check"), "{command}");
    assert!(description.contains("writes nothing"), "{description}");
}

/// A mistyped command (`shwo` for `show`) used to upgrade the files after it in place, and
/// a path named that does not exist failed only after the others were written: both are
/// usage errors now, before any save is read or written, for every command that takes
/// paths.
#[test]
fn a_mistyped_command_or_a_missing_path_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let old = fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/v1/small.json"
    ))
    .unwrap();
    fs::write(dir.path().join("slot1.json"), &old).unwrap();
    fs::write(dir.path().join("a.json"), MESSY).unwrap();
    let untouched = |what: &str| {
        assert_eq!(
            fs::read(dir.path().join("slot1.json")).unwrap(),
            old,
            "{what}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("a.json")).unwrap(),
            MESSY,
            "{what}"
        );
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            2,
            "{what}: nothing new"
        );
    };
    for (typo, nearest) in [("shwo", "show"), ("inpsect", "inspect"), ("fomt", "fmt")] {
        let out = save_upgrade(&[typo, "slot1.json"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{typo}: {}", stderr(&out));
        let said = format!(
            "error: `{typo}` is neither a command nor a file or folder here; nothing was read \
             or written. The nearest command is `{nearest}`"
        );
        assert!(stderr(&out).contains(&said), "{typo}: {}", stderr(&out));
        untouched(typo);
    }
    let commands: [&[&str]; 6] = [
        &["slot1.json", "missing.json"],
        &["--check", "slot1.json", "saves/missing.json"],
        &["fmt", "missing.json", "a.json"],
        &["fmt", "--check", "a.json", "missing.json"],
        &["cache", "build", "slot1.json", "missing.json"],
        &["cache", "clear", "missing.json", "slot1.json"],
    ];
    for args in commands {
        let out = save_upgrade(args, dir.path());
        let what = args.join(" ");
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("missing.json: no such file or folder")
                && stderr(&out).contains("nothing was read or written"),
            "{what}: {}",
            stderr(&out)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{what}");
        untouched(&what);
    }
}
