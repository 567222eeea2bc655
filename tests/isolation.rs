//! A save's upgrade depends on that save and the chain, nothing else; a step, however
//! written, cannot hang the run, escape its limits or read outside its folder. Through the
//! library and through `save-upgrade`, with hostile and careless steps.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use savechain::lua::{Limits, Sandbox, SandboxError};
use savechain::upgrade::{Chain, Step};
use savechain::{Options, Save};

/// A folder of steps (`name`, source) and helper modules (paths with a `/`).
fn steps(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, source) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, source).unwrap();
    }
    dir
}

fn save(n: i64) -> Save {
    Save::from_str(&format!(
        r#"{{"meta": {{"version": 1}}, "data": {{"n": {n}, "tags": []}}}}"#
    ))
    .unwrap()
}

/// The upgraded data of each save, upgraded one after another by one upgrader.
fn in_one_upgrader(chain: &Chain, saves: &[i64], options: &Options) -> Vec<String> {
    let mut upgrader = chain.upgrader();
    saves
        .iter()
        .map(|&n| match upgrader.upgrade(save(n), options) {
            Ok(upgraded) => upgraded.save.data.to_string(),
            Err(e) => format!("error: {e}"),
        })
        .collect()
}

/// Runs `f` on a thread of its own; panics if it has not returned within `limit`: a step
/// that hangs the run must fail this test rather than hang the suite.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still running after {limit:?}"))
}

/// Steps that keep something from one save for the next, each in its own way: whatever a
/// save's upgrade gives must be what it gives alone.
const CARELESS: &[(&str, &str)] = &[
    // A global counter, and a name cached in a global.
    (
        "0001-global.lua",
        "return function(data) COUNT = (COUNT or 0) + 1 data.count = COUNT \
         data.first = FIRST or data.n FIRST = FIRST or data.n end",
    ),
    // The file's own locals.
    (
        "0002-upvalue.lua",
        "local seen = 0 return function(data) seen = seen + 1 data.seen = seen end",
    ),
    // The string metatable and the string library.
    (
        "0003-strings.lua",
        "return function(data) data.shout = ('x').shout and ('x'):shout() or 'none' \
         data.lib = string.kept or 'none' \
         getmetatable('').__index.shout = function() return 'from an earlier save' end \
         string.kept = 'from an earlier save' end",
    ),
    // The savechain library, its helpers and its registries.
    (
        "0004-library.lua",
        "local up = require('savechain.upgrade') local sc = require('savechain') \
         return function(data) data.lib2 = sc.kept or 'none' sc.kept = data.n \
         data.rename = tostring(up.patched or false) up.patched = true \
         data.classes = sc.class_count or 0 sc.class_count = (sc.class_count or 0) + 1 \
         sc.register_class('c' .. data.n, {}) \
         data.helpers = tostring(up.default == nil) up.default = nil end",
    ),
    // The random generator, a helper module's state, the collector and _G's metatable.
    (
        "0005-state.lua",
        "local util = require('lib.util') \
         return function(data) data.random = math.random(1, 1000000) \
         data.util = util.next() data.mt = tostring(getmetatable(_G) ~= nil) \
         setmetatable(_G, { __index = function() return 'leak' end }) \
         data.running = collectgarbage('isrunning') collectgarbage('stop') end",
    ),
    (
        "lib/util.lua",
        "local n = 0 return { next = function() n = n + 1 return n end }",
    ),
    // The file's _ENV, which it shares with the function it returns; library tables
    // replaced and given metatables; the sandbox's own tables; the collector's mode and
    // the random generator's seed.
    (
        "0006-environment.lua",
        "return function(data) data.env = tostring(rawget(_ENV, 'marker')) \
         data.insert = tostring(table.insert == nil) data.upper = ('x'):upper() \
         data.os = tostring(rawget(os, 'kept')) data.io = tostring(rawget(io, 'kept')) \
         data.string_mt = tostring(getmetatable(string) ~= nil) \
         data.io_mt = tostring(getmetatable(io)) data.os_mt = tostring(pcall(setmetatable, os, {})) \
         data.gc = collectgarbage('incremental') collectgarbage('generational') \
         math.randomseed(data.n) table.insert = nil rawset(os, 'kept', 1) rawset(io, 'kept', 1) \
         setmetatable(string, { __index = function() return 'leak' end }) \
         getmetatable('').__index = { upper = function() return 'from an earlier save' end } \
         _ENV = setmetatable({ marker = 'from an earlier save' }, { __index = _ENV }) end",
    ),
];

#[test]
fn nothing_a_step_keeps_reaches_the_next_save() {
    let dir = steps(CARELESS);
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    let options = Options::default();
    let alone: Vec<String> = [3, 5, 8]
        .iter()
        .flat_map(|&n| in_one_upgrader(&chain, &[n], &options))
        .collect();
    let together = in_one_upgrader(&chain, &[3, 5, 8], &options);
    assert_eq!(together, alone);
    // What each save got is what a first save gets.
    let first = &alone[1];
    for expected in [
        r#""count":1"#,
        r#""first":5"#,
        r#""seen":1"#,
        r#""shout":"none""#,
        r#""lib":"none""#,
        r#""lib2":"none""#,
        r#""rename":"false""#,
        r#""classes":0"#,
        r#""helpers":"false""#,
        r#""util":1"#,
        r#""mt":"false""#,
        r#""running":true"#,
        r#""env":"nil""#,
        r#""insert":"false""#,
        r#""upper":"X""#,
        r#""os":"nil""#,
        r#""io":"nil""#,
        r#""string_mt":"false""#,
        // The stand-ins' metatables are kept for every save, so no script may change them.
        r#""io_mt":"false""#,
        r#""os_mt":"false""#,
        r#""gc":"incremental""#,
    ] {
        assert!(first.contains(expected), "{expected} in {first}");
    }
    // The random generator starts alike for every save: an upgrade is reproducible.
    let random = |text: &str| text.split(r#""random":"#).nth(1).unwrap()[..3].to_string();
    assert_eq!(random(&alone[0]), random(&alone[2]));
    // Strict mode and diffs run the same way.
    let mut strict = Options::default();
    strict.diff = true;
    assert_eq!(in_one_upgrader(&chain, &[3, 5, 8], &strict), alone);
}

#[test]
fn save_upgrade_gives_each_save_what_it_gives_alone_whatever_the_jobs() {
    let dir = steps(CARELESS);
    let work = tempfile::tempdir().unwrap();
    let saves = work.path().join("saves");
    std::fs::create_dir(&saves).unwrap();
    for n in 0..6 {
        std::fs::write(
            saves.join(format!("s{n}.json")),
            save(n).to_string().unwrap(),
        )
        .unwrap();
    }
    let upgrades = dir.path().to_str().unwrap();
    let run = |out: &str, jobs: &str, files: &[&str]| {
        let mut args = vec![
            "--upgrades",
            upgrades,
            "--writer",
            "1.0.0",
            "--quiet",
            "--jobs",
            jobs,
            "--out-dir",
            out,
        ];
        args.extend_from_slice(files);
        let output = common::save_upgrade(&args, work.path());
        assert!(output.status.success(), "{}", common::stderr(&output));
    };
    run("one-job", "1", &["saves"]);
    run("two-jobs", "2", &["saves"]);
    for n in 0..6 {
        let name = format!("s{n}.json");
        run(&format!("alone-{n}"), "1", &[&format!("saves/{name}")]);
        let alone = std::fs::read(work.path().join(format!("alone-{n}")).join(&name)).unwrap();
        for out in ["one-job", "two-jobs"] {
            let together = std::fs::read(work.path().join(out).join(&name)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&together),
                String::from_utf8_lossy(&alone),
                "{out}/{name}"
            );
        }
    }
}

/// Steps that try to run code where no limit reaches it.
const HOSTILE: &[(&str, &str)] = &[
    (
        "finalizer",
        "setmetatable({}, { __gc = function() while true do end end })",
    ),
    (
        "finalizer in a class",
        "require('savechain').register_class('Spin', { __gc = function() while true do end end }) \
         local _ = #data.later",
    ),
    (
        "finalizer given to the array metatable",
        "getmetatable(require('savechain').array()).__gc = function() while true do end end \
         local _ = #data.later",
    ),
    (
        "a close that spins after the budget ran out",
        "local guard <close> = setmetatable({}, { __close = function() while true do end end }) \
         while true do end",
    ),
    (
        "an error whose __tostring spins",
        "error(setmetatable({}, { __tostring = function() while true do end end }))",
    ),
    (
        "an empty string repeated forever",
        "string.rep('', math.maxinteger)",
    ),
    (
        "a move of nothing, 2^62 times",
        "table.move({}, 1, 1 << 62, 2)",
    ),
    (
        "a shift by a length that lies",
        "table.insert(setmetatable({}, { __len = function() return 1 << 62 end }), 1, 0)",
    ),
    (
        "a removal by a length that lies",
        "table.remove(setmetatable({}, { __len = function() return 1 << 62 end }), 1)",
    ),
    (
        "collections over a large heap",
        "local keep = {} for i = 1, 200000 do keep[i] = {i} end \
         while true do collectgarbage() end",
    ),
    (
        "concatenations of a large string",
        "local s = string.rep('x', 1 << 20) while true do local t = s .. 'x' end",
    ),
    (
        "concatenations of a larger string",
        "local s = string.rep('x', 48 << 20) while true do local t = s .. 'x' end",
    ),
    (
        "upper of a large string, a few times",
        "local s = string.rep('x', 48 << 20) for i = 1, 1000 do local u = s:upper() end",
    ),
    (
        "a load whose reader spins, again and again",
        "while true do load(function() while true do end end) end",
    ),
    (
        "a tree of coroutines, each under the hook's interval",
        "local create, resume = coroutine.create, coroutine.resume \
         local function leaf() for i = 1, 9000 do end end \
         local function node(d) for i = 1, 300 do \
           resume(create(d > 0 and function() node(d - 1) end or leaf)) end end \
         node(3)",
    ),
    (
        "a stop caught by coroutine.close, then a normal return",
        "local co = coroutine.create(function() \
           local x <close> = setmetatable({}, { __close = function() while true do end end }) \
           coroutine.yield() end) \
         coroutine.resume(co) coroutine.close(co)",
    ),
    (
        "sorts of a large table",
        "local t = {} for i = 1, 1000000 do t[i] = i end while true do table.sort(t) end",
    ),
    (
        "switches of the collector's mode over a large heap",
        "local keep = {} for i = 1, 200000 do keep[i] = {i} end \
         while true do collectgarbage('generational') collectgarbage('incremental') end",
    ),
    (
        "one string kept in many places, copied for each",
        "local s = string.rep('x', 1 << 20) for i = 1, 1000 do data['k' .. i] = s end",
    ),
];

/// Small limits, so that a stopped step is stopped quickly.
fn small_limits() -> Limits {
    let mut limits = Limits::new(20_000_000, 256 << 20);
    limits.time = Duration::from_secs(2);
    limits
}

#[test]
fn a_step_cannot_run_code_where_no_limit_reaches_it() {
    for (what, body) in HOSTILE {
        let source = format!("return function(data) {body} end");
        let outcome = within(Duration::from_secs(60), move || {
            let chain = Chain::new(
                "1.0.0",
                vec![Step::lua("0001-hostile.lua", &source).unwrap()],
            )
            .unwrap();
            let mut options = Options::default();
            options.limits = small_limits();
            let text = r#"{"meta": {"version": 1}, "data": {"later": {"a": [], "b": 1, "c": 2, "d": 3, "e": 4, "f": 5, "g": 6, "h": 7, "i": 8, "j": 9, "k": 10, "l": 11, "m": 12, "n": 13, "o": 14, "p": 15, "q": 16, "spin": ["c", ["Spin", {"x": 1}]]}}}"#;
            let started = Instant::now();
            let result = chain
                .upgrader()
                .upgrade(Save::from_str(text).unwrap(), &options)
                .map(|_| ());
            (result.map_err(|e| e.to_string()), started.elapsed())
        });
        let (result, took) = outcome;
        let message = result.expect_err(what);
        assert!(message.contains("0001-hostile.lua"), "{what}: {message}");
        // The time limit is 2 s: each stop comes within a few seconds of it.
        assert!(took < Duration::from_secs(10), "{what} took {took:?}");
    }
}

#[test]
fn finalizers_are_refused_with_a_reason() {
    let sandbox = Sandbox::new(small_limits()).unwrap();
    let err = sandbox
        .run::<()>("setmetatable({}, { __gc = print })", "gc.lua")
        .unwrap_err();
    assert!(err.to_string().contains("__gc"), "{err}");
    // What has no __gc is as in Lua.
    let ok: bool = sandbox
        .run(
            "local mt = { __index = { x = 1 } } local t = setmetatable({}, mt) \
             return getmetatable(t) == mt and t.x == 1",
            "ok.lua",
        )
        .unwrap();
    assert!(ok);
}

#[test]
fn work_that_costs_no_instructions_is_stopped_by_the_time_limit() {
    let mut limits = Limits::new(u64::MAX, 256 << 20);
    limits.time = Duration::from_millis(500);
    let err = within(Duration::from_secs(60), move || {
        let sandbox = Sandbox::new(limits).unwrap();
        sandbox
            .run::<()>(
                "local s = string.rep('x', 1 << 20) while true do local t = s .. 'x' end",
                "slow.lua",
            )
            .unwrap_err()
            .to_string()
    });
    assert!(err.contains("ran longer than 0.5 s"), "{err}");
}

#[test]
fn c_functions_whose_loops_run_no_instruction_are_charged() {
    for source in [
        "string.rep('', math.maxinteger)",
        "string.rep('', 1 << 40, '')",
        "table.move({}, 1, 1 << 62, 2)",
        "table.move({}, math.mininteger, -1, 1)",
        "table.insert(setmetatable({}, { __len = function() return 1 << 62 end }), 1, 0)",
    ] {
        let (budget, err) = within(Duration::from_secs(60), move || {
            let sandbox = Sandbox::new(Limits::new(5_000_000, 64 << 20)).unwrap();
            let err = sandbox.run::<()>(source, "c.lua").unwrap_err();
            (
                matches!(err, SandboxError::InstructionBudget { .. }),
                err.to_string(),
            )
        });
        assert!(budget, "{source}: {err}");
    }
    // Ordinary uses cost little.
    let sandbox = Sandbox::new(Limits::new(5_000_000, 64 << 20)).unwrap();
    let s: String = sandbox
        .run(
            "local t = {} for i = 1, 1000 do table.insert(t, 1, i) end \
             table.move(t, 1, 10, 2) table.remove(t, 1) \
             return string.rep('ab', 3, '-') .. #t .. string.rep('', 5)",
            "ok.lua",
        )
        .unwrap();
    assert_eq!(s, "ab-ab-ab999");
}

#[cfg(unix)]
#[test]
fn helper_modules_and_steps_are_read_only_from_inside_their_folder() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.lua");
    std::fs::write(&secret, "return 'the player''s secret'").unwrap();
    std::fs::create_dir(outside.path().join("lib")).unwrap();
    std::fs::write(outside.path().join("lib/x.lua"), "return 1").unwrap();
    let link = |dir: &Path, name: &str, to: &Path| {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(to, path).unwrap();
    };
    let step = "local s = require('lib.secret') return function(data) data.s = s end";
    for (what, make) in [
        (
            "a helper that links out",
            Box::new(|dir: &Path| link(dir, "lib/secret.lua", &secret)) as Box<dyn Fn(&Path)>,
        ),
        (
            "a folder of helpers that links out",
            Box::new(|dir: &Path| link(dir, "lib", &outside.path().join("lib"))),
        ),
        (
            "a step that links out",
            Box::new(|dir: &Path| link(dir, "0002-other.lua", &secret)),
        ),
    ] {
        let dir = steps(&[("0001-read.lua", step)]);
        make(dir.path());
        let err = Chain::from_lua_dir("1.0.0", dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("outside the upgrades folder"),
            "{what}: {err}"
        );
        // And through the command line, before any save is touched.
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("a.json"), save(1).to_string().unwrap()).unwrap();
        let out = common::save_upgrade(
            &[
                "--upgrades",
                dir.path().to_str().unwrap(),
                "--writer",
                "1.0.0",
                "a.json",
            ],
            work.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{what}");
        assert!(
            common::stderr(&out).contains("outside the upgrades folder"),
            "{what}: {}",
            common::stderr(&out)
        );
        assert_eq!(
            std::fs::read_to_string(work.path().join("a.json")).unwrap(),
            save(1).to_string().unwrap()
        );
    }
    // A link that stays inside the folder is followed.
    let dir = steps(&[
        ("0001-read.lua", step),
        ("shared/secret.lua", "return 'ours'"),
    ]);
    link(
        dir.path(),
        "lib/secret.lua",
        &dir.path().join("shared/secret.lua"),
    );
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    let upgraded = chain
        .upgrader()
        .upgrade(save(1), &Options::default())
        .unwrap();
    assert_eq!(upgraded.save.data.get("s").unwrap().as_str(), Some("ours"));
    // A sandbox's own module folder is kept to, too.
    let modules = tempfile::tempdir().unwrap();
    link(modules.path(), "secret.lua", &secret);
    let sandbox = Sandbox::new(small_limits()).unwrap();
    sandbox.allow_modules_from(modules.path());
    let err = sandbox
        .run::<String>("return require('secret')", "main.lua")
        .unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
}

#[test]
fn a_step_is_bytes_as_lua_source_is() {
    // A modder's editor saved the file as Latin-1: the literal holds the byte E9.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("0001-cafe.lua"),
        b"-- Caf\xe9 names\nreturn function(data) data.name = 'caf\xe9' data.len = #data.name end",
    )
    .unwrap();
    let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
    assert_eq!(chain.steps()[0].description(), "Caf\u{fffd} names");
    let upgraded = chain
        .upgrader()
        .upgrade(save(1), &Options::default())
        .unwrap();
    assert_eq!(
        upgraded.save.data.get("name"),
        Some(&savechain::Value::Bytes(b"caf\xe9".to_vec()))
    );
    assert_eq!(
        upgraded.save.data.get("len"),
        Some(&savechain::Value::Int(4))
    );
    let step = Step::lua("0001-x.lua", b"return function(data) data.x = '\xff' end").unwrap();
    Chain::new("1.0.0", vec![step]).unwrap();
}

#[test]
fn require_returns_the_standard_libraries_as_lua_does() {
    let sandbox = Sandbox::new(small_limits()).unwrap();
    let same: bool = sandbox
        .run(
            "return require('utf8') == utf8 and require('string') == string \
             and require('table') == table and require('math') == math \
             and require('coroutine') == coroutine and require('_G') == _G \
             and require('os') == os and require('utf8').char(233) == '\\u{e9}'",
            "std.lua",
        )
        .unwrap();
    assert!(same);
    let err = sandbox
        .add_module("utf8", "utf8.lua", "return {}")
        .unwrap_err();
    assert!(err.to_string().contains("cannot be replaced"), "{err}");
}

/// The CLI, a finalizer that spins: the run ends, that save fails, the others are done.
#[test]
fn save_upgrade_finishes_when_a_step_has_a_finalizer_that_spins() {
    let dir = steps(&[(
        "0001-spin.lua",
        "return function(data) if data.n == 2 then \
         setmetatable({}, { __gc = function() while true do end end }) end data.done = true end",
    )]);
    let work = tempfile::tempdir().unwrap();
    for n in 1..=3 {
        std::fs::write(
            work.path().join(format!("s{n}.json")),
            save(n).to_string().unwrap(),
        )
        .unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args([
            "--upgrades",
            dir.path().to_str().unwrap(),
            "--writer",
            "1.0.0",
        ])
        .args(["--jobs", "1", "."])
        .current_dir(work.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("save-upgrade still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("s2.json") && stderr.contains("__gc"),
        "{stderr}"
    );
    let data = |n: i64| -> PathBuf { work.path().join(format!("s{n}.json")) };
    assert_eq!(
        std::fs::read_to_string(data(2)).unwrap(),
        save(2).to_string().unwrap()
    );
    for n in [1, 3] {
        let upgraded = Save::load(data(n)).unwrap();
        assert_eq!(upgraded.meta.version, 2);
    }
}

#[test]
fn a_reset_after_a_stop_makes_the_sandbox_as_new() {
    let sandbox = Sandbox::new(small_limits()).unwrap();
    // A close handler that leaves the hook a few instructions from its next call.
    let err = sandbox
        .run::<()>(
            "local x <close> = setmetatable({}, { __close = function() for i = 1, 9990 do end end }) \
             while true do end",
            "stop.lua",
        )
        .unwrap_err();
    assert!(
        matches!(err, SandboxError::InstructionBudget { .. }),
        "{err}"
    );
    sandbox.reset().unwrap();
    let refused: bool = sandbox
        .run(
            "return not pcall(function() return os.execute end) and type(dofile) == 'table' \
             and string.dump == nil",
            "after.lua",
        )
        .unwrap();
    assert!(refused);
    // A stop the script caught is still a stop.
    let err = sandbox
        .run::<String>(
            "local ok = pcall(load, function() while true do end end) return 'went on'",
            "caught.lua",
        )
        .unwrap_err();
    assert!(
        matches!(err, SandboxError::InstructionBudget { .. }),
        "{err}"
    );
}
