//! A modder's commands: `show`, `get`, `set`, `diff` and `edit`, checking every file's
//! bytes afterwards. `edit` runs with scripted editors, and once with vi in a real terminal
//! (tmux).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{save_upgrade, stderr};

const FIXTURE: &str = "fixtures/v9/small.json";

/// A folder holding `slot1.json`, a copy of the v9 fixture.
/// The canonical text of the fixture at `relative` (the fixtures keep the order of format
/// revision 2, `data` first).
fn canonical_fixture(relative: &str) -> Vec<u8> {
    let text = fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)).unwrap();
    savechain::Save::from_slice(&text)
        .unwrap()
        .to_vec()
        .unwrap()
}

fn folder() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let original = canonical_fixture(FIXTURE);
    let path = dir.path().join("slot1.json");
    fs::write(&path, &original).unwrap();
    (dir, path, original)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// `save-upgrade edit slot1.json` in `dir` with `editor` as $EDITOR (a shell command; the
/// file to edit is its last argument), no terminal.
fn edit_with(dir: &Path, editor: &str) -> Output {
    edit_with_args(dir, editor, &[])
}

/// [`edit_with`], with `args` before the save's name.
fn edit_with_args(dir: &Path, editor: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .arg("edit")
        .args(args)
        .arg("slot1.json")
        .current_dir(dir)
        .env_remove("VISUAL")
        .env("EDITOR", editor)
        .env("TMPDIR", dir.join("tmp"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The edited text kept after a failed edit in `dir`, as the message names it: beside the
/// save, where a temporary folder in memory cannot lose it.
fn kept_draft(dir: &Path, out: &Output) -> PathBuf {
    let err = stderr(out);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("your edit is kept in "))
        .unwrap_or_else(|| panic!("no kept edit in: {err}"));
    assert_eq!(line, "slot1.json.edit.bak", "{err}");
    dir.join(line)
}

/// The canonical text of `original` with the ship's hull set to `hull`.
fn with_hull(original: &[u8], hull: f64) -> Vec<u8> {
    let mut save = savechain::Save::from_slice(original).unwrap();
    savechain::edit::set(&mut save, "data.ship.hull", savechain::Value::Double(hull)).unwrap();
    save.to_vec().unwrap()
}

/// Checks that the edit of `slot1.json` in `dir` wrote `expected`, keeping `original` as
/// `slot1.json.bak`.
fn assert_written(dir: &Path, original: &[u8], expected: &[u8]) {
    assert_eq!(fs::read(dir.join("slot1.json.bak")).unwrap(), original);
    assert_eq!(fs::read(dir.join("slot1.json")).unwrap(), expected);
}

#[test]
fn show_and_get_print_doubles_in_decimal() {
    let (dir, _, original) = folder();
    let out = save_upgrade(&["show", "slot1.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let view = stdout(&out);
    assert!(view.contains(r#""hull": ["d", 0.965],"#), "{view}");
    assert!(
        view.contains(r#""position": [["d", 12250.0], ["d", -3500.0], ["d", 125.0]],"#),
        "{view}"
    );
    // The view is the same save.
    let back = savechain::Save::from_str(&view).unwrap();
    assert_eq!(back.to_vec().unwrap(), original);

    for (path, printed) in [
        ("data.ship.hull", "[\"d\", 0.965]\n"),
        ("data.ship.cargo[1].good", "\"water\"\n"),
        ("meta.version", "9\n"),
    ] {
        let out = save_upgrade(&["get", "slot1.json", path], dir.path());
        assert_eq!(
            (out.status.code(), stdout(&out).as_str()),
            (Some(0), printed),
            "{path}: {}",
            stderr(&out)
        );
        let out = save_upgrade(&["show", "slot1.json", path], dir.path());
        assert_eq!(stdout(&out), printed);
    }
    let out = save_upgrade(&["get", "slot1.json", "data.ship.crew"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nothing at data.ship.crew"),
        "{}",
        stderr(&out)
    );
    let out = save_upgrade(&["get", "slot1.json", "ship.hull"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("starts with data or meta"));
    assert_eq!(fs::read(dir.path().join("slot1.json")).unwrap(), original);
    assert_eq!(names(dir.path()), ["slot1.json"]);
}

#[test]
fn set_changes_one_value_with_a_backup() {
    let (dir, path, original) = folder();
    let out = save_upgrade(
        &["set", "slot1.json", "data.player.wallet.credits", "100000"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(r#"~ data.player.wallet.credits: ["d",1250.0] -> ["d",100000.0]"#),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        fs::read(dir.path().join("slot1.json.bak")).unwrap(),
        original
    );
    let written = fs::read_to_string(&path).unwrap();
    // Canonical, and the double stayed a double.
    assert!(
        written.contains(r#""credits": ["d", "0x1.86ap+16"]"#),
        "{written}"
    );
    let save = savechain::Save::from_str(&written).unwrap();
    assert_eq!(save.to_vec().unwrap(), written.as_bytes());

    // A new member, a string, added when asked for; a value not in save text; nothing on
    // the way; the same value; a mistyped key, not added, the nearest key named.
    let out = save_upgrade(
        &["set", "slot1.json", "data.player.title", "\"Wren\""],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("set --add"), "{}", stderr(&out));
    // The game does not read it (its shape at version 9 has no such member), so the
    // override of the shape check is needed too.
    let out = save_upgrade(
        &[
            "set",
            "--add",
            "--ignore-shape",
            "slot1.json",
            "data.player.title",
            "\"Wren\"",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read(dir.path().join("slot1.json.1.bak")).unwrap(),
        written.as_bytes()
    );
    let now = fs::read(&path).unwrap();
    for (args, says) in [
        (
            ["set", "slot1.json", "data.player.title", "Wren"],
            "is not save text",
        ),
        (
            ["set", "slot1.json", "data.station.name", "1"],
            "nothing at data.station.name",
        ),
        (["set", "slot1.json", "meta.version", "\"ten\""], "version"),
        (
            ["set", "slot1.json", "data.player.wallet.credit", "1"],
            "did you mean data.player.wallet.credits?",
        ),
    ] {
        let out = save_upgrade(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    let out = save_upgrade(
        &["set", "slot1.json", "data.player.title", "\"Wren\""],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("already that value"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&path).unwrap(), now);
    assert_eq!(
        names(dir.path()),
        ["slot1.json", "slot1.json.1.bak", "slot1.json.bak"]
    );
}

#[test]
fn diff_lists_paths_and_exits_as_diff_does() {
    let (dir, path, original) = folder();
    // Another spelling and key order of the same save is the same.
    let respelled = savechain::Save::from_slice(&original).unwrap();
    let mut view = Vec::new();
    respelled
        .write(&mut view, savechain::text::Style::Decimal)
        .unwrap();
    fs::write(dir.path().join("view.json"), &view).unwrap();
    let out = save_upgrade(&["diff", "slot1.json", "view.json"], dir.path());
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), ""));
    assert_eq!(stderr(&out), "no differences\n");

    let out = save_upgrade(&["set", "slot1.json", "data.ship.hull", "0.5"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(&["diff", "slot1.json.bak", "slot1.json"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout(&out),
        "~ data.ship.hull: [\"d\",0.965] -> [\"d\",0.5]\n"
    );
    fs::write(dir.path().join("broken.json"), "{").unwrap();
    let out = save_upgrade(&["diff", "slot1.json", "broken.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("broken.json:1:2"), "{}", stderr(&out));
    assert!(path.exists());
}

#[test]
fn edit_without_a_change_writes_nothing() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let out = edit_with(dir.path(), "true");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("no change; nothing written"));
    assert_eq!(fs::read(&path).unwrap(), original);
    assert_eq!(names(dir.path()), ["slot1.json", "tmp"]);
    assert!(names(&dir.path().join("tmp")).is_empty());
}

#[test]
fn edit_writes_a_fix_back_with_a_backup() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    // Retyped as a plain number, even without its tag, the hull stays a double; the other
    // doubles keep their bits.
    let out = edit_with(
        dir.path(),
        r#"sed -i -e 's/\["d", 0.965\]/1/' -e 's/"dock": "sol:4"/"dock": "vega:1"/'"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(r#"~ data.ship.dock: "sol:4" -> "vega:1""#),
        "{err}"
    );
    assert!(
        err.contains(r#"~ data.ship.hull: ["d",0.965] -> ["d",1.0]"#),
        "{err}"
    );
    assert!(
        err.contains("the original is kept as slot1.json.bak"),
        "{err}"
    );
    assert_eq!(
        fs::read(dir.path().join("slot1.json.bak")).unwrap(),
        original
    );
    let mut expected = savechain::Save::from_slice(&original).unwrap();
    savechain::edit::set(
        &mut expected,
        "data.ship.hull",
        savechain::Value::Double(1.0),
    )
    .unwrap();
    savechain::edit::set(
        &mut expected,
        "data.ship.dock",
        savechain::Value::from("vega:1"),
    )
    .unwrap();
    assert_eq!(fs::read(&path).unwrap(), expected.to_vec().unwrap());
    assert!(names(&dir.path().join("tmp")).is_empty());
}

#[test]
fn an_invalid_edit_is_kept_and_nothing_is_written_without_a_terminal() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let out = edit_with(dir.path(), r#"sed -i 's/"hull"/hull/'"#);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(":54:7: at data.ship: expected a key in double quotes"),
        "{err}"
    );
    assert!(err.contains("slot1.json: nothing written"), "{err}");
    assert!(
        err.contains("(the error above is at slot1.json.edit.bak:54:7)"),
        "{err}"
    );
    let draft = kept_draft(dir.path(), &out);
    let kept = fs::read_to_string(&draft).unwrap();
    assert!(kept.contains("      hull: [\"d\", 0.965],"), "{kept}");
    assert_eq!(fs::read(&path).unwrap(), original);
    assert_eq!(
        names(dir.path()),
        ["slot1.json", "slot1.json.edit.bak", "tmp"]
    );
    assert!(names(&dir.path().join("tmp")).is_empty());
}

#[test]
fn an_edit_of_a_save_that_changed_meanwhile_is_kept_and_not_written() {
    let (dir, path, _) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    // The game saves while the editor is open.
    let game = r#"{"meta": {"version": 9}, "data": {"saved": "by the game"}}"#;
    fs::write(dir.path().join("game.json"), game).unwrap();
    let out = edit_with(
        dir.path(),
        "cp game.json slot1.json && sed -i 's/0.965/0.5/'",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("changed on disk while you edited it"), "{err}");
    assert_eq!(fs::read_to_string(&path).unwrap(), game);
    let kept = fs::read_to_string(kept_draft(dir.path(), &out)).unwrap();
    assert!(kept.contains("[\"d\", 0.5]"), "{kept}");
    assert!(!dir.path().join("slot1.json.bak").exists());
}

#[test]
fn an_editor_that_fails_writes_nothing_and_keeps_the_text() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    // As vim exits 1 after an error, the text written.
    let out = edit_with(dir.path(), "sed -i 's/0.965/0.5/' \"$1\"; exit 1; :");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("failed (exit status: 1); nothing was written"),
        "{}",
        stderr(&out)
    );
    let kept = fs::read_to_string(kept_draft(dir.path(), &out)).unwrap();
    assert!(kept.contains("\"hull\": [\"d\", 0.5]"), "{kept}");
    assert_eq!(fs::read(&path).unwrap(), original);
    assert!(names(&dir.path().join("tmp")).is_empty());
}

/// A terminal for `command`, run by tmux on a server of its own.
struct Terminal {
    socket: String,
}

impl Terminal {
    fn start(dir: &Path, command: &str) -> Terminal {
        let status = Command::new("tmux").arg("-V").output();
        assert!(
            status.is_ok(),
            "these tests drive a real terminal with tmux: install it (apt-get install tmux)"
        );
        let socket = format!(
            "savechain-{}-{}",
            std::process::id(),
            dir.display().to_string().len()
        );
        let socket = format!("{socket}-{}", dir.file_name().unwrap().to_string_lossy());
        let out = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "70",
            ])
            .arg(command)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux: {}", stderr(&out));
        Terminal { socket }
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `text`.
    fn wait_for(&self, text: &str) {
        let start = Instant::now();
        while !self.screen().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{text:?} never showed; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux send-keys: {}", stderr(&out));
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The command a terminal runs: `save-upgrade edit slot1.json` with `editor`, then its exit
/// status written to `status`, then a wait so that the screen stays to be read.
fn edit_in_terminal(editor: &str) -> String {
    format!(
        "env -u VISUAL EDITOR='{editor}' TMPDIR=tmp '{}' edit slot1.json; echo $? > status; \
         echo done; sleep 60",
        env!("CARGO_BIN_EXE_save-upgrade")
    )
}

fn wait_for_status(dir: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Ok(text) = fs::read_to_string(dir.join("status")) {
            if text.ends_with('\n') {
                return text.trim().parse().unwrap();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "edit never ended"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn on_a_terminal_a_typo_can_be_edited_again_and_fixed() {
    let (dir, _, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    // The first time the editor makes a typo; the second time it fixes it and changes a
    // value.
    fs::write(
        dir.path().join("editor.sh"),
        "if [ -e first-done ]; then sed -i -e 's/^      hull:/      \"hull\":/' -e 's/0.965/0.875/' \"$1\"; \
         else sed -i 's/\"hull\"/hull/' \"$1\"; touch first-done; fi\n",
    )
    .unwrap();
    let terminal = Terminal::start(dir.path(), &edit_in_terminal("sh editor.sh"));
    terminal.wait_for("edit again? [Y/n]");
    assert!(terminal
        .screen()
        .contains("expected a key in double quotes"));
    terminal.keys(&["y", "Enter"]);
    assert_eq!(wait_for_status(dir.path()), 0, "{}", terminal.screen());
    assert_written(dir.path(), &original, &with_hull(&original, 0.875));
    assert!(names(&dir.path().join("tmp")).is_empty());
}

#[test]
fn on_a_terminal_declining_to_edit_again_keeps_the_edit() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let terminal = Terminal::start(
        dir.path(),
        &edit_in_terminal(r#"sed -i "s/\"hull\"/hull/""#),
    );
    terminal.wait_for("edit again? [Y/n]");
    terminal.keys(&["n", "Enter"]);
    assert_eq!(wait_for_status(dir.path()), 2, "{}", terminal.screen());
    terminal.wait_for("your edit is kept in slot1.json.edit.bak");
    assert_eq!(fs::read(&path).unwrap(), original);
    assert!(names(&dir.path().join("tmp")).is_empty());
    assert!(fs::read_to_string(dir.path().join("slot1.json.edit.bak"))
        .unwrap()
        .contains("      hull: [\"d\", 0.965],"));
}

#[test]
fn a_real_editor_in_a_real_terminal() {
    let (dir, _, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    assert!(
        Command::new("vi").arg("--version").output().is_ok() || Path::new("/usr/bin/vi").exists(),
        "this test edits with vi: install it (apt-get install vim-tiny)"
    );
    let terminal = Terminal::start(dir.path(), &edit_in_terminal("vi"));
    terminal.wait_for("\"hull\": [\"d\", 0.965],");
    // As a person would: find the hull, change its value, save and quit.
    terminal.keys(&[":%s/0\\.965/0.5/", "Enter"]);
    terminal.keys(&[":wq", "Enter"]);
    assert_eq!(wait_for_status(dir.path()), 0, "{}", terminal.screen());
    terminal.wait_for("written; the original is kept as slot1.json.bak");
    assert_written(dir.path(), &original, &with_hull(&original, 0.5));
}

#[test]
fn set_takes_negative_numbers_keeps_doubles_inside_arrays_and_notes_a_new_kind_asked_for() {
    let (dir, path, _) = folder();
    let out = save_upgrade(&["set", "slot1.json", "data.ship.fuel", "-1.5"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(
        &["set", "slot1.json", "data.ship.position", "[1, -2, 3]"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(
        &[
            "set",
            "--change-kind",
            "--ignore-shape",
            "slot1.json",
            "data.ship.dock",
            "5",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: data.ship.dock was a string and is now an integer"),
        "{}",
        stderr(&out)
    );
    let save = savechain::Save::load(&path).unwrap();
    assert_eq!(save.data["ship"]["fuel"], savechain::Value::Double(-1.5));
    let position: Vec<_> = save.data["ship"]["position"].as_array().unwrap().to_vec();
    assert_eq!(
        position,
        [1.0, -2.0, 3.0].map(savechain::Value::Double).to_vec()
    );
    assert_eq!(save.data["ship"]["dock"], savechain::Value::Int(5));
}

#[test]
fn edit_needs_an_editor_and_a_save_that_loads() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    // No editor named and no terminal: vi would not run.
    let out = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["edit", "slot1.json"])
        .current_dir(dir.path())
        .env_remove("VISUAL")
        .env_remove("EDITOR")
        .env("TMPDIR", dir.path().join("tmp"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no editor: set $VISUAL or $EDITOR"),
        "{}",
        stderr(&out)
    );
    // An editor that fails without changing anything leaves nothing behind.
    let out = edit_with(dir.path(), "false");
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("kept"), "{}", stderr(&out));
    assert!(names(&dir.path().join("tmp")).is_empty());
    // A save that does not load is not opened.
    fs::write(&path, &original[..original.len() / 2]).unwrap();
    let out = edit_with(dir.path(), "true");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("fix it in a plain text editor"),
        "{}",
        stderr(&out)
    );
}

/// The value at `path` in the save at `file`.
fn value_at(file: &Path, path: &str) -> Option<savechain::Value> {
    let save = savechain::Save::load(file).unwrap();
    savechain::edit::get(&save, path).unwrap()
}

#[test]
fn set_refuses_a_change_of_kind_unless_asked_and_the_same_command_undoes_it() {
    let (dir, path, original) = folder();
    // 3.5 over an integer, a string over a double, null over an integer, a string inside an
    // array of doubles: each refused, the path and both kinds named, nothing written.
    for (at, value, says) in [
        (
            "data.player.rank.level",
            "3.5",
            "data.player.rank.level from an integer to a double",
        ),
        (
            "data.ship.hull",
            "\"full\"",
            "data.ship.hull from a double to a string",
        ),
        (
            "data.player.rank.level",
            "null",
            "data.player.rank.level from an integer to null",
        ),
        (
            "data.ship.position",
            "[1, \"x\", 3]",
            "data.ship.position[1] from a double to a string",
        ),
    ] {
        let out = save_upgrade(&["set", "slot1.json", at, value], dir.path());
        assert_eq!(out.status.code(), Some(2), "{at} {value}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says), "{err}");
        assert!(err.contains("--change-kind"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), original);
        assert_eq!(names(dir.path()), ["slot1.json"]);
    }
    // Asked for, it is made, and the same command with the old value undoes it: 3 is the
    // integer 3 again, not the double 3.0 the double would have kept.
    let level = "data.player.rank.level";
    // (The game reads a u32 there: the shape check is overridden too.)
    let out = save_upgrade(
        &[
            "set",
            "--change-kind",
            "--ignore-shape",
            "slot1.json",
            level,
            "3.5",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: data.player.rank.level was an integer and is now a double"),
        "{}",
        stderr(&out)
    );
    assert_eq!(value_at(&path, level), Some(savechain::Value::Double(3.5)));
    // Where the chain records what the game reads (a u32, by the built-in chain's shape of
    // version 9), 3 over the double is the integer 3 the game reads: the shape decides.
    let out = save_upgrade(&["set", "slot1.json", level, "3"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(value_at(&path, level), Some(savechain::Value::Int(3)));
    assert!(!stderr(&out).contains("kept a double"), "{}", stderr(&out));
    assert_eq!(fs::read(&path).unwrap(), original);
    // Where no shape says (a save of another game than the built-in chain's), a double
    // stays a double: 3 over it is the double 3.0, and a note says how to store the integer.
    let game = "meta.game";
    let out = save_upgrade(&["set", "slot1.json", game, "\"Mossy\""], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(
        &["set", "--change-kind", "slot1.json", level, "3.5"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(&["set", "slot1.json", level, "3"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(value_at(&path, level), Some(savechain::Value::Double(3.0)));
    assert!(
        stderr(&out).contains(
            "note: data.player.rank.level is a double, so 3 is kept a double; to store the \
             integer: save-upgrade set --change-kind slot1.json data.player.rank.level 3"
        ),
        "{}",
        stderr(&out)
    );
    let out = save_upgrade(
        &["set", "--change-kind", "slot1.json", level, "3"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(
        &["set", "slot1.json", game, "\"Starlane Traders\""],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(value_at(&path, level), Some(savechain::Value::Int(3)));
    assert_eq!(fs::read(&path).unwrap(), original);
}

#[test]
fn edit_refuses_a_change_of_kind_unless_asked_and_the_same_command_undoes_it() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    for (editor, says) in [
        (
            r#"sed -i 's/"level": 3$/"level": 3.5/'"#,
            "data.player.rank.level from an integer to a double",
        ),
        (
            r#"sed -i 's/\["d", 0.965\]/"full"/'"#,
            "data.ship.hull from a double to a string",
        ),
    ] {
        let out = edit_with(dir.path(), editor);
        assert_eq!(out.status.code(), Some(2), "{editor}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says), "{err}");
        assert!(err.contains("--change-kind"), "{err}");
        assert!(err.contains("slot1.json: nothing written"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), original);
        kept_draft(dir.path(), &out);
        fs::remove_file(dir.path().join("slot1.json.edit.bak")).unwrap();
    }
    let level = "data.player.rank.level";
    let out = edit_with_args(
        dir.path(),
        r#"sed -i 's/"level": 3$/"level": 3.5/'"#,
        &["--change-kind", "--ignore-shape"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: data.player.rank.level was an integer and is now a double"),
        "{}",
        stderr(&out)
    );
    assert_eq!(value_at(&path, level), Some(savechain::Value::Double(3.5)));
    let out = edit_with_args(
        dir.path(),
        r#"sed -i 's/"level": \["d", 3.5\]$/"level": 3/'"#,
        &["--change-kind"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(value_at(&path, level), Some(savechain::Value::Int(3)));
    assert_eq!(fs::read(&path).unwrap(), original);
}

#[test]
fn set_and_edit_refuse_a_version_below_the_history() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let out = save_upgrade(&["set", "slot1.json", "meta.version", "3"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("meta.version would be 3, below version 9"),
        "{err}"
    );
    assert!(err.contains("meta.history"), "{err}");
    let out = edit_with(dir.path(), r#"sed -i 's/"version": 9/"version": 3/'"#);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("meta.version would be 3, below version 9"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&path).unwrap(), original);
    // Asked for, a version the history allows is written; so is one whose history goes
    // with it.
    let out = save_upgrade(
        &[
            "set",
            "--change-version",
            "slot1.json",
            "meta.version",
            "10",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = edit_with_args(
        dir.path(),
        r#"sed -i -e 's/"version": 10/"version": 3/' -e 's/"to": 9/"to": 3/'"#,
        &["--change-version"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(savechain::Save::load(&path).unwrap().meta.version, 3);
}

/// Sets the time of the file at `path` to `seconds` after 2026-01-01.
fn dated(path: &Path, seconds: u64) {
    let at = std::time::UNIX_EPOCH + Duration::from_secs(1_767_225_600 + seconds);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

/// The JSON `backups list --json` printed, read as a save's text reads.
fn listed(dir: &Path, what: &str) -> savechain::Value {
    let out = save_upgrade(&["backups", "list", "--json", what], dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    savechain::text::from_str(&stdout(&out)).unwrap()
}

#[test]
fn backups_are_listed_restored_and_pruned_without_losing_a_version() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let v1 = fs::read(repo.join("fixtures/v1/small.json")).unwrap();
    let path = dir.path().join("slot1.json");
    fs::write(&path, &v1).unwrap();
    // An upgrade from 1, then three changes by hand and an edit that was not written.
    let out = save_upgrade(&["slot1.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let upgraded = fs::read(&path).unwrap();
    dated(&dir.path().join("slot1.json.v1.bak"), 10);
    for (i, hull) in ["0.5", "0.25", "0.125"].iter().enumerate() {
        let out = save_upgrade(&["set", "slot1.json", "data.ship.hull", hull], dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let name = match i {
            0 => "slot1.json.bak".to_string(),
            i => format!("slot1.json.{i}.bak"),
        };
        dated(&dir.path().join(name), 20 + i as u64);
    }
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let out = edit_with(dir.path(), r#"sed -i 's/"hull"/hull/'"#);
    assert_eq!(out.status.code(), Some(2));
    dated(&dir.path().join("slot1.json.edit.bak"), 30);
    fs::write(dir.path().join("other.json.bak"), "not ours").unwrap();

    // Listed oldest first, each with its version and what made it; a folder stands for
    // its saves.
    let list = listed(dir.path(), "slot1.json");
    assert_eq!(list[0]["save"], savechain::Value::from("slot1.json"));
    assert_eq!(list[0]["version"], savechain::Value::from(9u64));
    let backups = list[0]["backups"].as_array().unwrap();
    let rows: Vec<String> = backups
        .iter()
        .map(|b| {
            format!(
                "{} {} {} {} {}",
                b["path"].as_str().unwrap(),
                b["made_by"].as_str().unwrap(),
                b["from"],
                b["version"],
                b["modified"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "slot1.json.v1.bak upgrade 1 1 2026-01-01T00:00:10Z",
            "slot1.json.bak edit null 9 2026-01-01T00:00:20Z",
            "slot1.json.1.bak edit null 9 2026-01-01T00:00:21Z",
            "slot1.json.2.bak edit null 9 2026-01-01T00:00:22Z",
            "slot1.json.edit.bak kept-edit null null 2026-01-01T00:00:30Z",
        ]
    );
    // In the folder, other.json.bak stands for other.json, gone.
    let list = listed(dir.path(), ".");
    let saves: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["save"].as_str().unwrap())
        .collect();
    assert_eq!(saves, ["./other.json", "./slot1.json"]);
    assert_eq!(list[1]["backups"].as_array().unwrap().len(), 5);
    let out = save_upgrade(&["backups", "list", "slot1.json"], dir.path());
    let text = stdout(&out);
    assert!(
        text.contains(
            "2026-01-01T00:00:10Z  version 1    upgrade from 1             slot1.json.v1.bak"
        ),
        "{text}"
    );

    // Restored: the backup's bytes exactly, the replaced save kept, the backup still there.
    let before = fs::read(&path).unwrap();
    let out = save_upgrade(
        &["backups", "restore", "slot1.json", "slot1.json.v1.bak"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the save it replaced is kept as slot1.json.3.bak"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&path).unwrap(), v1);
    assert_eq!(
        fs::read(dir.path().join("slot1.json.3.bak")).unwrap(),
        before
    );
    assert_eq!(fs::read(dir.path().join("slot1.json.v1.bak")).unwrap(), v1);
    dated(&dir.path().join("slot1.json.3.bak"), 40);
    // A kept edit, a file that is not its backup, a backup of the same bytes.
    for (backup, says, code) in [
        ("slot1.json.edit.bak", "not written, not a copy", 2),
        ("other.json.bak", "not a backup of this save", 2),
        ("slot1.json.v1.bak", "nothing written", 0),
    ] {
        let out = save_upgrade(&["backups", "restore", "slot1.json", backup], dir.path());
        assert_eq!(out.status.code(), Some(code), "{backup}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{backup}: {}", stderr(&out));
        assert_eq!(fs::read(&path).unwrap(), v1);
    }

    // Pruned to the newest: a dry run removes nothing; then slot1.json.3.bak, the newest,
    // stays, the older copies of version 9 go, so does the version-1 backup (the very bytes
    // of the save), and the kept edit stays.
    let names_before = names(dir.path());
    // Everything was written since 2026-01-01: nothing is older.
    let out = save_upgrade(
        &[
            "backups",
            "prune",
            "--older-than",
            "2026-01-01",
            "slot1.json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing to prune"),
        "{}",
        stderr(&out)
    );
    let out = save_upgrade(
        &["backups", "prune", "--keep", "1", "--dry-run", "slot1.json"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("would remove slot1.json.bak"),
        "{}",
        stderr(&out)
    );
    assert_eq!(names(dir.path()), names_before);
    let out = save_upgrade(
        &["backups", "prune", "--keep", "1", "--json", "slot1.json"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pruned: savechain::Value = savechain::text::from_str(&stdout(&out)).unwrap();
    let removed: Vec<&str> = pruned[0]["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        removed,
        [
            "slot1.json.v1.bak",
            "slot1.json.bak",
            "slot1.json.1.bak",
            "slot1.json.2.bak"
        ]
    );
    assert_eq!(
        names(dir.path()),
        [
            "other.json.bak",
            "slot1.json",
            "slot1.json.3.bak",
            "slot1.json.edit.bak",
            "tmp"
        ]
    );
    assert_eq!(
        fs::read(dir.path().join("slot1.json.3.bak")).unwrap(),
        before
    );
    assert_ne!(before, upgraded);

    // With the save at version 9 again, the version-1 backup is the only way back to 1.
    let out = save_upgrade(
        &["backups", "restore", "slot1.json", "slot1.json.3.bak"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    dated(&dir.path().join("slot1.json.bak"), 50);
    let out = save_upgrade(&["backups", "prune", "--keep", "0", "."], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // slot1.json.bak is the version-1 save the restore replaced: kept, the only copy of 1;
    // slot1.json.3.bak has the save's bytes: removed.
    assert_eq!(
        names(dir.path()),
        [
            "other.json.bak",
            "slot1.json",
            "slot1.json.bak",
            "slot1.json.edit.bak",
            "tmp"
        ]
    );
    assert_eq!(fs::read(dir.path().join("slot1.json.bak")).unwrap(), v1);

    // A path that is neither a save nor one with backups is an error.
    let out = save_upgrade(&["backups", "list", "slot2.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("slot2.json: no such file"),
        "{}",
        stderr(&out)
    );

    // A save that is gone: its folder still lists it, by its backups.
    fs::remove_file(&path).unwrap();
    let list = listed(dir.path(), ".");
    assert_eq!(list[1]["save"], savechain::Value::from("./slot1.json"));
    assert_eq!(list[1]["version"], savechain::Value::Null);
    assert_eq!(list[1]["backups"].as_array().unwrap().len(), 2);
}

#[test]
fn on_a_terminal_a_change_of_kind_can_be_meant() {
    let (dir, path, _) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let terminal = Terminal::start(
        dir.path(),
        // The level becomes a double; the hull, a double, is retyped as a plain 1.
        &edit_in_terminal(
            r#"sed -i -e "s/\"level\": 3$/\"level\": 3.5/" -e "s/\[\"d\", 0.965\]/1/""#,
        ),
    );
    terminal.wait_for("[E/c/s]");
    assert!(terminal
        .screen()
        .contains("data.player.rank.level from an integer to a double"));
    // The game reads a u32 there (the built-in chain's shape of version 9): one answer
    // writes both.
    assert!(terminal
        .screen()
        .contains("write it with the kinds changed and what the game does not read (c)"));
    terminal.keys(&["c", "Enter"]);
    assert_eq!(wait_for_status(dir.path()), 0, "{}", terminal.screen());
    assert_eq!(
        value_at(&path, "data.player.rank.level"),
        Some(savechain::Value::Double(3.5))
    );
    // Only the change of kind shown was meant: the hull stays a double.
    assert_eq!(
        value_at(&path, "data.ship.hull"),
        Some(savechain::Value::Double(1.0))
    );
    assert!(names(&dir.path().join("tmp")).is_empty());
}

/// A folder holding `slot1.json`, a copy of the v1 fixture (no history).
fn folder_v1() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let (dir, path, _) = folder();
    let v1 = canonical_fixture("fixtures/v1/small.json");
    fs::write(&path, &v1).unwrap();
    (dir, path, v1)
}

#[test]
fn set_and_edit_refuse_a_change_of_version_unless_asked() {
    let (dir, path, original) = folder_v1();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    // Raised by hand, the next upgrade would skip steps 1 to 5 on data that never had them.
    for version in ["5", "8", "99"] {
        let out = save_upgrade(&["set", "slot1.json", "meta.version", version], dir.path());
        assert_eq!(out.status.code(), Some(2), "{version}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "meta.version would go from 1 to {version}, skipping"
            )),
            "{err}"
        );
        assert!(
            err.contains("which upgrade steps the data has had"),
            "{err}"
        );
        assert!(
            err.contains("upgrade it instead: save-upgrade slot1.json"),
            "{err}"
        );
        assert!(
            err.contains(&format!(
                "if you mean it: save-upgrade set --change-version slot1.json meta.version \
                 {version}"
            )),
            "{err}"
        );
        assert_eq!(fs::read(&path).unwrap(), original);
        assert_eq!(names(dir.path()), ["slot1.json", "tmp"]);
    }
    let out = save_upgrade(&["set", "slot1.json", "meta.version", "5"], dir.path());
    assert!(
        stderr(&out).contains("the steps 1->2, 2->3, 3->4, 4->5:"),
        "{}",
        stderr(&out)
    );
    let out = edit_with(dir.path(), r#"sed -i 's/"version": 1,/"version": 8,/'"#);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "meta.version would go from 1 to 8, skipping the steps 1->2, 2->3, ..., 7->8 (7 steps)"
        ),
        "{err}"
    );
    assert!(
        err.contains("if you mean it: save-upgrade edit --change-version slot1.json"),
        "{err}"
    );
    kept_draft(dir.path(), &out);
    fs::remove_file(dir.path().join("slot1.json.edit.bak")).unwrap();
    assert_eq!(fs::read(&path).unwrap(), original);

    // Asked for, it is made.
    let out = edit_with_args(
        dir.path(),
        r#"sed -i 's/"version": 1,/"version": 8,/'"#,
        &["--change-version"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(savechain::Save::load(&path).unwrap().meta.version, 8);
    let out = save_upgrade(
        &["set", "--change-version", "slot1.json", "meta.version", "1"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read(&path).unwrap(), original);

    // Below the history, it stays refused even when asked for.
    let (dir, path, original) = folder();
    let out = save_upgrade(
        &["set", "--change-version", "slot1.json", "meta.version", "3"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("meta.version would be 3, below version 9"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&path).unwrap(), original);
}

#[test]
fn refusals_name_the_flag_and_the_command_to_run_again_not_rust_items() {
    let (dir, _, _) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    for (args, command) in [
        (
            vec!["set", "slot1.json", "data.player.rank.level", "3.5"],
            // The game reads a u32 there, by the built-in chain's shape: one command asks
            // for everything the change needs.
            "if you mean it: save-upgrade set --change-kind --ignore-shape slot1.json data.player.rank.level 3.5",
        ),
        (
            vec!["set", "slot1.json", "data.player.title", "\"Wren\""],
            r#"if you mean it: save-upgrade set --add --ignore-shape slot1.json data.player.title '"Wren"'"#,
        ),
        (
            vec!["set", "slot1.json", "data.ship.hull", "\"full\""],
            r#"if you mean it: save-upgrade set --change-kind --ignore-shape slot1.json data.ship.hull '"full"'"#,
        ),
    ] {
        let out = save_upgrade(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(command), "{err}");
        assert!(!err.contains("edit::") && !err.contains("Allow"), "{err}");
    }
    let out = edit_with(dir.path(), r#"sed -i 's/"level": 3$/"level": 3.5/'"#);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    // The game reads a u32 there, by the built-in chain's shape: one command asks for
    // everything the edit needs.
    assert!(
        err.contains("also, data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double"),
        "{err}"
    );
    assert!(
        err.contains("if you mean it: save-upgrade edit --change-kind --ignore-shape slot1.json"),
        "{err}"
    );
    assert!(!err.contains("edit::") && !err.contains("Allow"), "{err}");
}

#[test]
fn edit_refuses_a_read_only_save_before_opening_the_editor() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let mut permissions = fs::metadata(&path).unwrap().permissions();
    permissions.set_readonly(true);
    fs::set_permissions(&path, permissions).unwrap();
    let out = edit_with(dir.path(), "touch opened; sed -i 's/0.965/0.5/'");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("slot1.json: the save is read-only (no write permission)"),
        "{err}"
    );
    assert!(!dir.path().join("opened").exists(), "the editor was opened");
    assert_eq!(fs::read(&path).unwrap(), original);
    assert_eq!(names(dir.path()), ["slot1.json", "tmp"]);
    assert!(names(&dir.path().join("tmp")).is_empty());
}

#[test]
fn get_and_set_say_why_nothing_is_at_a_path() {
    let (dir, _, _) = folder();
    for (command, at, says) in [
        ("get", "data.ship.hul", "did you mean data.ship.hull?"),
        (
            "show",
            "data.shp.hull",
            "data.shp is not there; did you mean data.ship.hull?",
        ),
        (
            "get",
            "data.ship[1]",
            r#"data.ship is an object, not an array (its keys: "cargo", "dock""#,
        ),
        (
            "get",
            "data.ship.cargo.mass",
            "data.ship.cargo is an array of 2 elements, not an object",
        ),
        (
            "get",
            "data.ship.cargo[5]",
            "data.ship.cargo has 2 elements (indexes 0 to 1)",
        ),
        (
            "set",
            "data.ship[1].x",
            r#"data.ship is an object, not an array (its keys: "cargo", "dock""#,
        ),
    ] {
        let mut args = vec![command, "slot1.json", at];
        if command == "set" {
            args.push("1");
        }
        let out = save_upgrade(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(&format!("nothing at {at}: ")), "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_key_in_brackets_without_its_quotes_is_shown_quoted_for_the_shell() {
    let (dir, _, _) = folder();
    // As a shell leaves data.systems["tau ceti"].visited typed unquoted.
    for command in ["get", "set"] {
        let mut args = vec![command, "slot1.json", "data.systems[tau ceti].visited"];
        if command == "set" {
            args.push("true");
        }
        let out = save_upgrade(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("a key in brackets is written in double quotes"),
            "{err}"
        );
        assert!(
            err.contains(r#"quote the whole path: 'data.systems["tau ceti"].visited'"#),
            "{err}"
        );
    }
}

#[test]
fn on_a_terminal_a_change_of_version_can_be_meant() {
    let (dir, path, _) = folder_v1();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let terminal = Terminal::start(
        dir.path(),
        &edit_in_terminal(r#"sed -i "s/\"version\": 1,/\"version\": 2,/""#),
    );
    terminal.wait_for("[E/v/s]");
    assert!(terminal
        .screen()
        .contains("write it with the version changed (v)"));
    terminal.keys(&["v", "Enter"]);
    assert_eq!(wait_for_status(dir.path()), 0, "{}", terminal.screen());
    assert_eq!(savechain::Save::load(&path).unwrap().meta.version, 2);
}

/// What the game reads at the save's version, by the built-in chain's recorded shape of
/// version 9: `data.player.rank.level` is a `u32`, objects are closed.
#[test]
fn set_refuses_what_the_game_does_not_read_with_nothing_written() {
    let (dir, path, original) = folder();
    let level = "data.player.rank.level";
    for (args, says) in [
        // Another kind, even with the change of kind asked for.
        (
            vec!["set", "--change-kind", "slot1.json", level, "3.5"],
            "data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double",
        ),
        // The same kind, out of the range.
        (
            vec!["set", "slot1.json", level, "5000000000"],
            "data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 5000000000 is out of that range",
        ),
        // A member of a closed object.
        (
            vec!["set", "--add", "slot1.json", "data.player.nick", "\"Ada\""],
            "data.player.nick: the game reads no member \"nick\" here (it would be dropped when the game saves)",
        ),
    ] {
        let out = save_upgrade(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says), "{err}");
        assert!(err.contains("The game at version 9 reads"), "{err}");
        assert!(err.contains("--ignore-shape"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), original);
        assert_eq!(names(dir.path()), ["slot1.json"]);
    }
    // The command the refusal gives makes the change.
    let out = save_upgrade(&["set", "slot1.json", level, "5000000000"], dir.path());
    assert!(
        stderr(&out).contains(
            "if you mean it: save-upgrade set --ignore-shape slot1.json data.player.rank.level 5000000000"
        ),
        "{}",
        stderr(&out)
    );
    let out = save_upgrade(
        &["set", "--ignore-shape", "slot1.json", level, "5000000000"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        value_at(&path, level),
        Some(savechain::Value::Int(5_000_000_000))
    );
    // Written, with a reminder that the save no longer matches, and how to see where.
    assert!(
        stderr(&out).contains(
            "note: slot1.json now holds what the game does not read at version 9 (its \
             recorded shape); save-upgrade validate slot1.json lists each place"
        ),
        "{}",
        stderr(&out)
    );
    // A save that no longer matches stays editable elsewhere, and there: only what a
    // change brings is refused.
    let out = save_upgrade(&["set", "slot1.json", "data.ship.fuel", "0.5"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(&["set", "slot1.json", level, "4"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(value_at(&path, level), Some(savechain::Value::Int(4)));
}

#[test]
fn set_checks_against_the_chain_given_and_only_the_saves_of_its_game() {
    let (dir, path, original) = folder();
    // A chain with no shapes (the steps alone): nothing to check against.
    let steps = dir.path().join("steps");
    fs::create_dir(&steps).unwrap();
    for entry in fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("upgrades")).unwrap() {
        let entry = entry.unwrap();
        if entry.path().is_file() {
            fs::copy(entry.path(), steps.join(entry.file_name())).unwrap();
        }
    }
    let level = "data.player.rank.level";
    let chain = ["--upgrades", "steps", "--writer", "0.1.0"];
    let set = |extra: &[&str], value: &str| {
        let mut args = vec!["set"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["slot1.json", level, value]);
        save_upgrade(&args, dir.path())
    };
    let out = set(&chain, "5000000000");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: not checked against shapes: version 9 has no recorded shape"),
        "{}",
        stderr(&out)
    );
    fs::write(&path, &original).unwrap();
    // The same chain with the shapes of upgrades/: refused, and the command to run again
    // keeps the chain's options.
    fs::create_dir(steps.join("shapes")).unwrap();
    for entry in
        fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("upgrades/shapes")).unwrap()
    {
        let entry = entry.unwrap();
        fs::copy(entry.path(), steps.join("shapes").join(entry.file_name())).unwrap();
    }
    let out = set(&chain, "5000000000");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "if you mean it: save-upgrade set --ignore-shape --upgrades steps --writer 0.1.0 \
             slot1.json data.player.rank.level 5000000000"
        ),
        "{}",
        stderr(&out)
    );
    // What the game reads is printed by a command that pastes as it is: with the chain.
    let shown = "(what the game reads there: save-upgrade schema --version 9 --upgrades steps \
                 --writer 0.1.0)";
    assert!(stderr(&out).contains(shown), "{}", stderr(&out));
    assert!(!stderr(&out).contains("not checked"), "{}", stderr(&out));
    let out = save_upgrade(
        &[
            "schema",
            "--version",
            "9",
            "--upgrades",
            "steps",
            "--writer",
            "0.1.0",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read(&path).unwrap(), original);
    // A save of another game is not the chain's to check.
    let mut other = savechain::Save::from_slice(&original).unwrap();
    other
        .meta
        .extra
        .insert("game", savechain::Value::from("Dust Rangers"));
    fs::write(&path, other.to_vec().unwrap()).unwrap();
    let out = set(&[], "5000000000");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "note: not checked against shapes: the save is of game \"Dust Rangers\", the \
             chain's is \"Starlane Traders\"; give its chain with --upgrades DIR --writer V"
        ),
        "{}",
        stderr(&out)
    );
}

/// The built-in chain's shape of version 9 reads a bool at each system's `visited`: a save
/// holding `1` there is fixed by `true` without asking for a change of kind, by set and by
/// edit; another kind it does not read stays a change of kind.
#[test]
fn a_value_fixed_toward_the_shape_is_no_change_of_kind() {
    let (dir, path, _) = folder();
    let mut save = savechain::Save::load(&path).unwrap();
    let mut tau = save.data["systems"]["sol"].clone();
    savechain::edit::set_allowing(
        &mut save,
        "data.systems.sol.visited",
        savechain::Value::Int(1),
        savechain::edit::Allow::default().with_kind_change(),
    )
    .unwrap();
    if let savechain::Value::Object(members) = &mut tau {
        members.insert("visited", savechain::Value::Int(1));
    }
    save.data["systems"]
        .as_object_mut()
        .unwrap()
        .insert("tau ceti", tau);
    let broken = save.to_vec().unwrap();
    fs::write(&path, &broken).unwrap();
    let visited = r#"data.systems["tau ceti"].visited"#;
    let out = save_upgrade(&["set", "slot1.json", visited, "true"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(value_at(&path, visited), Some(savechain::Value::Bool(true)));
    let out = save_upgrade(
        &["set", "--change-kind", "slot1.json", visited, "\"yes\""],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // By edit: the same fix typed in the editor.
    fs::create_dir(dir.path().join("tmp")).unwrap();
    let out = edit_with(dir.path(), r#"sed -i 's/"visited": 1/"visited": true/'"#);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        value_at(&path, "data.systems.sol.visited"),
        Some(savechain::Value::Bool(true))
    );
}

#[test]
fn edit_refuses_what_the_game_does_not_read_unless_asked() {
    let (dir, path, original) = folder();
    fs::create_dir(dir.path().join("tmp")).unwrap();
    for (editor, says) in [
        (
            r#"sed -i 's/"level": 3$/"level": 5000000000/'"#,
            "data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 5000000000 is out of that range",
        ),
        (
            r#"sed -i 's/"given": "Ada"/"given": "Ada", "nick": "Ace"/'"#,
            "data.player.name.nick: the game reads no member \"nick\" here",
        ),
    ] {
        let out = edit_with(dir.path(), editor);
        assert_eq!(out.status.code(), Some(2), "{editor}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(says), "{err}");
        assert!(
            err.contains("if you mean it: save-upgrade edit --ignore-shape slot1.json"),
            "{err}"
        );
        assert!(
            err.contains("(what the game reads there: save-upgrade schema --version 9)"),
            "{err}"
        );
        assert!(err.contains("slot1.json: nothing written"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), original);
        kept_draft(dir.path(), &out);
        fs::remove_file(dir.path().join("slot1.json.edit.bak")).unwrap();
    }
    // Another kind, even with the change of kind asked for.
    let out = edit_with_args(
        dir.path(),
        r#"sed -i 's/"level": 3$/"level": 3.5/'"#,
        &["--change-kind"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("3.5 is a double"), "{}", stderr(&out));
    assert_eq!(fs::read(&path).unwrap(), original);
    fs::remove_file(dir.path().join("slot1.json.edit.bak")).unwrap();
    let out = edit_with_args(
        dir.path(),
        r#"sed -i 's/"level": 3$/"level": 5000000000/'"#,
        &["--ignore-shape"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        value_at(&path, "data.player.rank.level"),
        Some(savechain::Value::Int(5_000_000_000))
    );
    assert!(
        stderr(&out).contains(
            "note: slot1.json now holds what the game does not read at version 9 (its \
             recorded shape); save-upgrade validate slot1.json lists each place"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn set_checks_a_mods_part_against_the_mods_shape_of_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let original = fs::read(root.join("mods/cartographer/fixtures/v3/charted.json")).unwrap();
    let path = dir.path().join("slot1.json");
    fs::write(&path, &original).unwrap();
    let mods = root.join("mods");
    let mods = mods.to_str().unwrap();
    let pinned = "data.mods.cartographer.notes.sol.pinned";
    let out = save_upgrade(
        &[
            "set",
            "--change-kind",
            "--mods",
            mods,
            "slot1.json",
            pinned,
            "\"yes\"",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "data.mods.cartographer.notes.sol.pinned: the game reads true or false here; \"yes\" is text"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(&path).unwrap(), original);
    // A new note, of the shape the mod reads, is fine; without the mods, nothing checks it.
    let out = save_upgrade(
        &[
            "set",
            "--add",
            "--mods",
            mods,
            "slot1.json",
            "data.mods.cartographer.notes.vega",
            r#"{"pinned": false, "text": "pirates"}"#,
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = save_upgrade(
        &["set", "--change-kind", "slot1.json", pinned, "\"yes\""],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
