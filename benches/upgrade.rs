//! Upgrade chains on a large save, and batches of small saves on one core against two.
//!
//! ```text
//! cargo bench --bench upgrade                                   # all tables + criterion
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench upgrade      # only the tables
//! SAVECHAIN_BENCH_ONLY=chain,memory cargo bench --bench upgrade # some parts: chain,
//!                                                               #   mods, memory, batch
//! SAVECHAIN_BENCH_CHAIN_ONLY=1 cargo bench --bench upgrade      # = SAVECHAIN_BENCH_ONLY=
//!                                                               #   chain,mods,memory
//! SAVECHAIN_BENCH_GAME_MB=2 SAVECHAIN_BENCH_BATCH_SAVES=40 SAVECHAIN_BENCH_RUNS=1 \
//!     SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench upgrade  # a quick check
//! ```
//!
//! Other settings: `SAVECHAIN_BENCH_BATCH_KB` (size of each save of the batch, default
//! 100), `SAVECHAIN_BENCH_JOBS` (the jobs set against `--jobs 1`, default 2),
//! `SAVECHAIN_BENCH_BATCH_DIR` (where the batch's folders are made, default `target/tmp`,
//! which must be on a disk, not tmpfs, for the durable writes to cost what they cost),
//! `SAVECHAIN_BENCH_BATCH_KEEP` (a folder to which the batch's saves are also copied and
//! left, to time `save-upgrade` on copies of them from outside),
//! `SAVECHAIN_BENCH_CHAIN_PROFILE=half` (one run of one chain, `plain`, `example`, `small`
//! or `half`, and nothing else: for callgrind, with `--toggle-collect=upgrade::load_*`;
//! `SAVECHAIN_BENCH_RUNS` runs of it for perf; `half/plain`: best thread CPU times of
//! alternating runs of both, and their ratio).
//!
//! The saves are version 1 saves of the example game (`src/bin/save-upgrade/starlane.rs`),
//! made by the generator of `support/game.rs` with the fields the example chain expects.
//!
//! 1. `chain`: a save of about 50 MiB of text (`SAVECHAIN_BENCH_GAME_MB`), in one process,
//!    best of alternating runs (4 unless `SAVECHAIN_BENCH_RUNS`): a plain load and save
//!    (`Save::from_slice` + `Save::to_vec`), against the same load, a chain and the save
//!    (`chain.upgrader().upgrade(save, &Options::default())`, `Save::to_vec`), for three
//!    chains:
//!    - *example*: the example chain, eight steps, five in Lua. Goal: at most 2x.
//!    - *small*: four Lua steps that each touch a small part of the save (a player field,
//!      a setting of the ui module, the tick counter, the ship's name). Goal: at most 1.3x.
//!    - *half*: two Lua steps that go over every star system and rewrite a field of each of
//!      its planets and of the planet's orbit (the share of the save's text in the planets'
//!      arrays is printed: about 40 %, and the steps also convert each system's own
//!      members). Goal: at most 2x.
//!
//!    Before timing, each chain runs once and the fields its steps change are checked.
//! 2. `mods`: the same save with 20 mods' data added (`meta.mods.modNN` at data version 1,
//!    a small object at `data.mods.modNN`), in the same way (best of alternating runs,
//!    `SAVECHAIN_BENCH_RUNS`): a plain load and save of it, against the same load, a chain
//!    with no game steps (the save is current) and 20 mods (`Chain::with_mods`), each with
//!    one Lua step, version 1 to 2, that touches only its own `data.mods.modNN` (a counter
//!    moved on by one, a field added), and the save. Goal: at most 1.3x. Beside it, for
//!    information: the same with `keep_going` (a copy of the save, upgraded again only
//!    if a mod fails), and with one upgrader kept across saves, as a batch does (the
//!    mods' sandboxes made once and
//!    reset for each save, where the other rows make them for each save); and the cost of
//!    each mod, (run - plain) / 20. Before timing, the upgrades are checked: every mod's
//!    counter moved on and its field added, `meta.mods` at version 2 for each, the rest of
//!    the data unchanged.
//! 3. `memory`: peak heap of a load, the example chain and the save, from the counting
//!    allocator of `support/alloc.rs` (Rust's heap and the Lua heap of the steps' sandbox,
//!    which mlua allocates through Rust's global allocator), as a multiple of the save's
//!    text, without and with the input text (which is allocated before); the other chains
//!    and the plain load and save beside it, and the half chain without the save (the
//!    chain's own peak, while Lua holds the data). Goal: at most 4x the save. Then two
//!    rows that write a file, whose text is streamed into it: the half chain and
//!    `Save::store`, and `upgrade_file` in place with the half chain (reading the file
//!    itself: there is no input text to add). Issue 32's goal: a heavy chain at most 3x.
//! 4. `batch`: 400 saves (`SAVECHAIN_BENCH_BATCH_SAVES`) of about 100 KB, each from its own
//!    seed, in a folder on disk. `save-upgrade --jobs 1` against `--jobs 2`, in place (with
//!    backups, the default) and with `--out-dir`; each run on a fresh copy of the folder,
//!    made and flushed to disk (`sync`) before the timing starts. Best of alternating runs
//!    (3 unless `SAVECHAIN_BENCH_RUNS`). Then the same load, upgrade and write of the texts
//!    in memory, no files, on rayon pools of 1 and 2 threads. Goal: `--jobs 2` at least
//!    1.8x `--jobs 1`. On Linux each file row also gives the cores the whole machine kept
//!    busy during the `--jobs 1` run (`/proc/stat`: the kernel's writing and flushing
//!    threads count, and so does anything else running, so run it on a quiet machine),
//!    and the speed-up that leaves at most: the cores `--jobs 2` can use over those.

#[path = "support/alloc.rs"]
mod alloc;
#[path = "support/env.rs"]
mod env;
#[path = "support/game.rs"]
mod game;
#[path = "../src/bin/save-upgrade/starlane.rs"]
mod starlane;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use savechain::upgrade::{upgrade_file, Chain, Mod, ModStatus, Step, Target};
use savechain::Options;
use savechain::{Save, Value};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

const CHAIN_RUNS: usize = 4;
const BATCH_RUNS: usize = 3;
const BATCH_SAVES: usize = 400;
const BATCH_KB: usize = 100;
const MIB: f64 = 1024.0 * 1024.0;
const PARTS: &[&str] = &["chain", "mods", "memory", "batch"];

fn part(name: &str) -> bool {
    if env::flag("SAVECHAIN_BENCH_CHAIN_ONLY") {
        return name != "batch";
    }
    env::part(name, PARTS)
}

fn ms(t: Duration) -> f64 {
    t.as_secs_f64() * 1e3
}

/// A generated save of about `bytes` bytes of text before the fields the example chain's
/// version 1 has are added (which add about 1 %, less for big saves).
fn starlane_v1(bytes: usize, seed: u64) -> Save {
    let mut save = game::game_save(bytes, seed);
    // The example chain upgrades only saves of its game.
    save.meta.extra.insert("game", Value::from(starlane::GAME));
    let data = save.data.as_object_mut().unwrap();
    let player = data.get_mut("player").unwrap().as_object_mut().unwrap();
    player.insert("reputation", Value::Double(0.25));
    player.insert("rank", Value::from("captain"));
    player.insert("tutorial_done", Value::Bool(true));
    let ship = data.get_mut("ship").unwrap().as_object_mut().unwrap();
    ship.insert(
        "position",
        Value::Array(vec![
            Value::Double(1.5),
            Value::Double(-2.0),
            Value::Double(0.125),
        ]),
    );
    ship.insert("dock_system", Value::from("sys0"));
    ship.insert("dock_bay", Value::Int(3));
    for system in data.get_mut("systems").unwrap().as_array_mut().unwrap() {
        let system = system.as_object_mut().unwrap();
        let id = system.get("id").and_then(Value::as_i64).unwrap();
        system.insert("id", Value::String(format!("sys{id}")));
    }
    let lua = data.get_mut("lua").unwrap().as_object_mut().unwrap();
    let ids = |prefix: &str, n: usize| {
        Value::Array(
            (0..n)
                .map(|i| Value::String(format!("{prefix}{i}")))
                .collect(),
        )
    };
    // 200 active missions and 2000 done in a large save; fewer in a small one, where
    // they would otherwise be a third of the text.
    let done = (bytes / 500).min(2000);
    let missions: savechain::Map = [("active", ids("m", done / 10)), ("done", ids("d", done))]
        .into_iter()
        .collect();
    lua.insert("missions", Value::Object(missions));
    save
}

// ---------------------------------------------------------------------------------------
// Part `chain`: chains on a large save against a plain load and save.

/// Four Lua steps that each touch a small part of the save.
const SMALL_STEPS: &[(&str, &str)] = &[
    (
        "0001-player-callsign.lua",
        "-- The player gets a callsign, their name to begin with.
return function(data)
  data.player.callsign = data.player.name
end
",
    ),
    (
        "0002-ui-scale.lua",
        "-- A setting of the ui module: the interface scale, 1 unless set; the module's version.
return function(data)
  local ui = data.lua.modules.ui
  if ui.scale == nil then ui.scale = 1.0 end
  ui.version = ui.version + 1
end
",
    ),
    (
        "0003-tick.lua",
        "-- The tick counter moves on by one.
return function(data)
  data.tick = data.tick + 1
end
",
    ),
    (
        "0004-ship-name.lua",
        "-- The ship's name gets its refit.
return function(data)
  data.ship.name = data.ship.name .. ' (refit)'
end
",
    ),
];

/// Two Lua steps that rewrite a field of every planet and of its orbit.
const HALF_STEPS: &[(&str, &str)] = &[
    (
        "0001-planet-radius-km.lua",
        "-- Planet radii from metres to kilometres.
return function(data)
  local systems = data.systems
  for i = 1, #systems do
    local planets = systems[i].planets
    for j = 1, #planets do
      local planet = planets[j]
      planet.radius = planet.radius / 1000.0
    end
  end
end
",
    ),
    (
        "0002-orbit-phase-degrees.lua",
        "-- Orbit phases from radians to degrees.
local up = require('savechain.upgrade')

return function(data)
  up.map(data, 'systems', function(system)
    up.map(system, 'planets', function(planet)
      planet.orbit.phase = math.deg(planet.orbit.phase)
    end)
  end)
end
",
    ),
];

fn lua_chain(steps: &[(&str, &str)]) -> Chain {
    let steps = steps
        .iter()
        .map(|(name, source)| Step::lua(name, source).unwrap())
        .collect();
    Chain::new("1.0.0", steps).unwrap()
}

struct Chains {
    example: Chain,
    small: Chain,
    half: Chain,
}

fn chains() -> Chains {
    Chains {
        example: starlane::chain().unwrap(),
        small: lua_chain(SMALL_STEPS),
        half: lua_chain(HALF_STEPS),
    }
}

fn load_save(text: &[u8]) -> Vec<u8> {
    let save = Save::from_slice(black_box(text)).unwrap();
    save.to_vec().unwrap()
}

fn load_upgrade_save(chain: &Chain, text: &[u8]) -> Vec<u8> {
    let save = Save::from_slice(black_box(text)).unwrap();
    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    upgraded.save.to_vec().unwrap()
}

/// [`load_upgrade_save`] without the save: the upgraded save is dropped.
fn load_upgrade(chain: &Chain, text: &[u8]) -> Vec<u8> {
    let save = Save::from_slice(black_box(text)).unwrap();
    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    drop(black_box(upgraded));
    Vec::new()
}

fn get<'v>(value: &'v Value, path: &str) -> &'v Value {
    path.split('.')
        .fold(value, |v, key| match key.parse::<usize>() {
            Ok(i) => &v.as_array().unwrap()[i],
            Err(_) => v
                .get(key)
                .unwrap_or_else(|| panic!("the save has no {path}")),
        })
}

/// Runs each chain once on `text` and checks what its steps change.
fn check_chains(chains: &Chains, text: &[u8]) {
    let before = Save::from_slice(text).unwrap();
    let up = |chain: &Chain| Save::from_slice(&load_upgrade_save(chain, text)).unwrap();

    let after = up(&chains.example);
    assert_eq!(after.meta.version, chains.example.latest());
    assert!(
        get(&after.data, "systems").as_object().is_some(),
        "the example chain keys systems by id"
    );
    assert!(get(&after.data, "player").get("standing").is_some());

    let after = up(&chains.small);
    assert_eq!(after.meta.version, 5);
    let (b, a) = (&before.data, &after.data);
    assert_eq!(get(a, "player.callsign"), get(b, "player.name"));
    assert_eq!(get(a, "lua.modules.ui.scale"), &Value::Double(1.0));
    let int = |v: &Value, path: &str| get(v, path).as_i64().unwrap();
    assert_eq!(
        int(a, "lua.modules.ui.version"),
        int(b, "lua.modules.ui.version") + 1
    );
    assert_eq!(int(a, "tick"), int(b, "tick") + 1);
    assert_eq!(
        get(a, "ship.name").as_str().unwrap(),
        format!("{} (refit)", get(b, "ship.name").as_str().unwrap())
    );

    let after = up(&chains.half);
    assert_eq!(after.meta.version, 3);
    let (b, a) = (&before.data, &after.data);
    let double = |v: &Value, path: &str| match get(v, path) {
        Value::Double(d) => *d,
        other => panic!("{path} is {other:?}"),
    };
    let systems = get(b, "systems").as_array().unwrap();
    let mut planets = 0;
    for (i, system) in systems.iter().enumerate() {
        for j in 0..get(system, "planets").as_array().unwrap().len() {
            let p = format!("systems.{i}.planets.{j}");
            assert_eq!(
                double(a, &format!("{p}.radius")),
                double(b, &format!("{p}.radius")) / 1000.0
            );
            // Lua's 180 / pi may be another rounding than Rust's.
            let (phase, radians) = (
                double(a, &format!("{p}.orbit.phase")),
                double(b, &format!("{p}.orbit.phase")),
            );
            assert!((phase - radians.to_degrees()).abs() <= 1e-12 * phase.abs().max(1.0));
            planets += 1;
        }
    }
    assert!(planets > 0);

    // The share of the save's text in the arrays the half chain goes through (compact).
    let len = |v: &Value| savechain::text::to_vec_compact(v).unwrap().len();
    let planets_text: usize = systems.iter().map(|s| len(get(s, "planets"))).sum();
    println!(
        "Checked: each chain changes what its steps say. The half chain rewrote {planets} \
         planets of {} systems; their arrays hold {:.0} % of the text of the save's data \
         (compact), and the steps also convert each system's own members",
        systems.len(),
        100.0 * planets_text as f64 / len(&before.data) as f64
    );
}

fn chain_table(chains: &Chains, text: &[u8], runs: usize) {
    let mut best = [Duration::MAX; 4];
    for _ in 0..runs {
        let ops: [&dyn Fn() -> Vec<u8>; 4] = [
            &|| load_save(text),
            &|| load_upgrade_save(&chains.example, text),
            &|| load_upgrade_save(&chains.small, text),
            &|| load_upgrade_save(&chains.half, text),
        ];
        for (op, best) in ops.iter().zip(best.iter_mut()) {
            let t = Instant::now();
            drop(black_box(op()));
            *best = (*best).min(t.elapsed());
        }
    }
    let rate = |t: Duration| text.len() as f64 / MIB / t.as_secs_f64();
    println!();
    println!(
        "Version 1 save of the example game, {:.1} MiB of text (best of {runs}):",
        text.len() as f64 / MIB
    );
    println!(
        "{:<44} {:>9} {:>8} {:>16}",
        "run", "ms", "MiB/s", "/ (load + save)"
    );
    let rows = [
        ("load + save", ""),
        (
            "load + example chain (8 steps, 5 Lua) + save",
            "goal: at most 2.00",
        ),
        (
            "load + 4 Lua steps touching little + save",
            "goal: at most 1.30",
        ),
        (
            "load + 2 Lua steps rewriting half + save",
            "goal: at most 2.00",
        ),
    ];
    for ((name, goal), t) in rows.iter().zip(best) {
        println!(
            "{name:<44} {:>9.1} {:>8.1} {:>16.2}  {goal}",
            ms(t),
            rate(t),
            t.as_secs_f64() / best[0].as_secs_f64()
        );
    }
}

/// For a profiler or a busy machine (`SAVECHAIN_BENCH_CHAIN_PROFILE`): `which` is `plain`,
/// `example`, `small` or `half`, one run of it (or `SAVECHAIN_BENCH_RUNS`, for a sampling
/// profiler) and nothing else (under callgrind, with `--toggle-collect=upgrade::load_*`, the
/// instructions of that run alone); or `X/plain`,
/// alternating runs of chain X and of the plain load and save (`SAVECHAIN_BENCH_RUNS`,
/// default 5), the best CPU time of the thread for each and their ratio, which other
/// processes sharing the cores disturb less than wall time.
fn profile_chain(chains: &Chains, text: &[u8], which: &str) {
    let op = |name: &str| -> Box<dyn Fn() -> Vec<u8> + '_> {
        match name {
            "plain" => Box::new(|| load_save(text)),
            "example" => Box::new(|| load_upgrade_save(&chains.example, text)),
            "small" => Box::new(|| load_upgrade_save(&chains.small, text)),
            "half" => Box::new(|| load_upgrade_save(&chains.half, text)),
            other => panic!(
                "SAVECHAIN_BENCH_CHAIN_PROFILE names plain, example, small or half, not {other:?}"
            ),
        }
    };
    let Some((chain, plain)) = which.split_once('/') else {
        // More than one run (`SAVECHAIN_BENCH_RUNS`) for a sampling profiler.
        let run = op(which);
        for _ in 1..env::runs(1) {
            drop(black_box(run()));
        }
        println!("{which}: {} bytes written", run().len());
        return;
    };
    let (chain, plain) = (op(chain), op(plain));
    let mut best = [Duration::MAX; 2];
    for _ in 0..env::runs(5) {
        for (run, best) in [&chain, &plain].iter().zip(best.iter_mut()) {
            let t = thread_cpu_time();
            drop(black_box(run()));
            *best = (*best).min(thread_cpu_time() - t);
        }
    }
    println!(
        "{which}: CPU {:.1} ms / {:.1} ms = {:.2}",
        ms(best[0]),
        ms(best[1]),
        best[0].as_secs_f64() / best[1].as_secs_f64()
    );
}

/// The CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(ok, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

// ---------------------------------------------------------------------------------------
// Part `mods`: 20 mods, each with one Lua step touching its own small part of the save.

/// The mods of the part `mods`.
const MODS: usize = 20;
/// Their release, recorded as the writer of their data after the upgrade.
const MOD_RELEASE: &str = "1.1.0";

/// The name of the `i`-th mod (from 0): `mod01`, `mod02`, ...
fn mod_name(i: usize) -> String {
    format!("mod{:02}", i + 1)
}

/// The game's chain with no steps (a version 1 save is current, the closest to a plain
/// load and save), and after it [`MODS`] mods, each with one Lua step, version 1 to 2,
/// that moves its own counter on by one and adds a field to its own data.
fn mods_chain() -> Chain {
    let mods = (0..MODS)
        .map(|i| {
            let name = mod_name(i);
            let source = format!(
                "-- The mod's counter moves on by one; its data records the upgrade.
return function(data)
  local own = data.mods.{name}
  own.counter = own.counter + 1
  own.upgraded = true
end
"
            );
            let step = Step::lua("0001-counter.lua", source).unwrap();
            Mod::new(&name, MOD_RELEASE, vec![step]).unwrap()
        })
        .collect();
    Chain::new("1.0.0", Vec::new())
        .unwrap()
        .with_mods(mods)
        .unwrap()
}

/// `save` with the [`MODS`] mods at data version 1 in `meta.mods`, and each mod's small
/// object at `data.mods.<name>` (a counter, a label, three numbers).
fn add_mods_data(save: &mut Save) {
    let entries: savechain::Map = (0..MODS)
        .map(|i| {
            let entry: savechain::Map =
                [("version", Value::Int(1)), ("writer", Value::from("1.0.0"))]
                    .into_iter()
                    .collect();
            (mod_name(i), Value::Object(entry))
        })
        .collect();
    save.meta.extra.insert("mods", Value::Object(entries));
    let data: savechain::Map = (0..MODS)
        .map(|i| {
            let own: savechain::Map = [
                ("counter", Value::Int(100 * i as i64)),
                ("label", Value::String(format!("{} data", mod_name(i)))),
                (
                    "weights",
                    Value::Array(vec![
                        Value::Double(0.5),
                        Value::Int(i as i64),
                        Value::Double(-1.25),
                    ]),
                ),
            ]
            .into_iter()
            .collect();
            (mod_name(i), Value::Object(own))
        })
        .collect();
    let root = save.data.as_object_mut().unwrap();
    assert!(root.get("mods").is_none(), "the generated save has no mods");
    root.insert("mods", Value::Object(data));
}

fn load_mods_save(chain: &Chain, text: &[u8], options: &Options) -> Vec<u8> {
    let save = Save::from_slice(black_box(text)).unwrap();
    let upgraded = chain.upgrader().upgrade(save, options).unwrap();
    upgraded.save.to_vec().unwrap()
}

fn keep_going() -> Options {
    let mut options = Options::default();
    options.keep_going = true;
    options
}

/// Checks an upgrade of `before` by the mods' chain, written as `text`: each mod's
/// counter moved on and its field added, its `meta.mods` entry at version 2 by its
/// release, one history entry each, and nothing else changed.
fn check_mods_upgrade(before: &Save, text: &[u8]) {
    let after = Save::from_slice(text).unwrap();
    assert_eq!(after.meta.version, before.meta.version);
    assert_eq!(after.meta.writer, before.meta.writer);
    let (b, a) = (&before.data, &after.data);
    let (meta_b, meta_a) = (before.meta.to_value(), after.meta.to_value());
    for i in 0..MODS {
        let own = format!("mods.{}", mod_name(i));
        let int = |v: &Value, path: &str| get(v, path).as_i64().unwrap();
        assert_eq!(
            int(a, &format!("{own}.counter")),
            int(b, &format!("{own}.counter")) + 1
        );
        assert_eq!(get(a, &format!("{own}.upgraded")), &Value::Bool(true));
        assert_eq!(
            get(a, &format!("{own}.label")),
            get(b, &format!("{own}.label"))
        );
        assert_eq!(int(&meta_a, &format!("{own}.version")), 2);
        assert_eq!(
            get(&meta_a, &format!("{own}.writer")).as_str(),
            Some(MOD_RELEASE)
        );
    }
    let history = |meta: &Value| {
        meta.get("history")
            .map_or(0, |h| h.as_array().unwrap().len())
    };
    assert_eq!(history(&meta_a), history(&meta_b) + MODS);
    let without_mods = |data: &Value| {
        let mut data = data.as_object().unwrap().clone();
        data.remove("mods");
        data
    };
    assert!(
        without_mods(a) == without_mods(b),
        "the mods' steps changed only data.mods"
    );
}

/// Runs the mods' chain once as each timed run does (and once more in a kept upgrader)
/// and checks what the steps change.
fn check_mods(chain: &Chain, text: &[u8]) {
    let before = Save::from_slice(text).unwrap();
    for options in [Options::default(), keep_going()] {
        let upgraded = chain
            .upgrader()
            .upgrade(Save::from_slice(text).unwrap(), &options)
            .unwrap();
        assert_eq!(upgraded.steps.len(), MODS, "one step of each mod ran");
        assert_eq!(upgraded.mods.len(), MODS);
        assert!(upgraded
            .mods
            .iter()
            .all(|m| m.status == ModStatus::Upgraded && m.to == Some(2)));
        check_mods_upgrade(&before, &upgraded.save.to_vec().unwrap());
    }
    let mut upgrader = chain.upgrader();
    for _ in 0..2 {
        let save = Save::from_slice(text).unwrap();
        let upgraded = upgrader.upgrade(save, &Options::default()).unwrap();
        check_mods_upgrade(&before, &upgraded.save.to_vec().unwrap());
    }
    println!(
        "Checked: each of the {MODS} mods moved its counter on and added its field, \
         meta.mods records version 2 for each, and the rest of the data is unchanged \
         (without and with keep_going, and in an upgrader kept across saves)"
    );
}

fn mods_table(chain: &Chain, text: &[u8], runs: usize) {
    // The upgrader a batch keeps across saves (the mods' sandboxes made once, reset for
    // each save): made and used once before the timing.
    let mut kept = chain.upgrader();
    let kept_run = |kept: &mut savechain::upgrade::Upgrader<'_>| {
        let save = Save::from_slice(black_box(text)).unwrap();
        let upgraded = kept.upgrade(save, &Options::default()).unwrap();
        upgraded.save.to_vec().unwrap()
    };
    drop(kept_run(&mut kept));
    let options = Options::default();
    let keep = keep_going();
    let mut best = [Duration::MAX; 4];
    for _ in 0..runs {
        for (i, best) in best.iter_mut().enumerate() {
            let t = Instant::now();
            drop(black_box(match i {
                0 => load_save(text),
                1 => load_mods_save(chain, text, &options),
                2 => load_mods_save(chain, text, &keep),
                _ => kept_run(&mut kept),
            }));
            *best = (*best).min(t.elapsed());
        }
    }
    let rate = |t: Duration| text.len() as f64 / MIB / t.as_secs_f64();
    println!();
    println!(
        "The same save with {MODS} mods at data version 1 (meta.mods, data.mods), \
         {:.1} MiB of text (best of {runs}); a chain with no game steps and {MODS} mods of \
         one Lua step each, touching its own data.mods.<name>:",
        text.len() as f64 / MIB
    );
    println!(
        "{:<44} {:>9} {:>8} {:>16} {:>10}",
        "run", "ms", "MiB/s", "/ (load + save)", "ms / mod"
    );
    let mods = format!("load + {MODS} mods, 1 Lua step each + save");
    let rows = [
        ("load + save", ""),
        (mods.as_str(), "goal: at most 1.30"),
        ("  the same, keep_going", "(information)"),
        (
            "  the same, upgrader kept across saves",
            "(information: a batch's)",
        ),
    ];
    for (i, ((name, goal), t)) in rows.iter().zip(best).enumerate() {
        let per_mod = if i == 0 {
            String::new()
        } else {
            format!("{:.2}", (ms(t) - ms(best[0])) / MODS as f64)
        };
        println!(
            "{name:<44} {:>9.1} {:>8.1} {:>16.2} {per_mod:>10}  {goal}",
            ms(t),
            rate(t),
            t.as_secs_f64() / best[0].as_secs_f64()
        );
    }
}

// ---------------------------------------------------------------------------------------
// Part `memory`: peak heap of an upgrade.

fn memory_table(chains: &Chains, text: &[u8]) {
    let len = text.len() as f64;
    println!();
    println!(
        "Peak heap of an upgrade of the {:.1} MiB save (Rust's and the steps' Lua heap; \
         multiples of the save's text, without / with the input text):",
        len / MIB
    );
    let runs: [(&str, &dyn Fn() -> Vec<u8>); 5] = [
        ("load + save", &|| load_save(text)),
        ("load + example chain + save", &|| {
            load_upgrade_save(&chains.example, text)
        }),
        ("load + 4 Lua steps touching little + save", &|| {
            load_upgrade_save(&chains.small, text)
        }),
        ("load + 2 Lua steps rewriting half + save", &|| {
            load_upgrade_save(&chains.half, text)
        }),
        // The chain's own peak, while Lua holds the data, apart from the written text's.
        ("load + 2 Lua steps rewriting half, no save", &|| {
            load_upgrade(&chains.half, text)
        }),
    ];
    for (i, (name, run)) in runs.iter().enumerate() {
        let ((), peak) = alloc::peak_of(|| drop(run()));
        println!(
            "{name:<44} {:>9.1} MiB {:>6.2}x / {:>5.2}x{}",
            peak as f64 / MIB,
            peak as f64 / len,
            (peak as f64 + len) / len,
            if i == 1 {
                "  goal: at most 4x the save"
            } else {
                ""
            }
        );
    }
    // Saves written to files, their text streamed into the file rather than made whole.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("save.json");
    let store = || {
        let save = Save::from_slice(black_box(text)).unwrap();
        let upgraded = chains
            .half
            .upgrader()
            .upgrade(save, &Options::default())
            .unwrap();
        upgraded.save.store(&path).unwrap();
    };
    let ((), peak) = alloc::peak_of(store);
    println!(
        "{:<44} {:>9.1} MiB {:>6.2}x / {:>5.2}x",
        "load + 2 Lua steps rewriting half + store",
        peak as f64 / MIB,
        peak as f64 / len,
        (peak as f64 + len) / len,
    );
    // upgrade_file reads the file itself: its peak holds the bytes read, no input to add.
    std::fs::write(&path, text).unwrap();
    let in_place = Target::InPlace { backup: true };
    let upgrade = || {
        let upgrader = &mut chains.half.upgrader();
        upgrade_file(upgrader, &path, in_place, &Options::default()).unwrap();
    };
    let ((), peak) = alloc::peak_of(upgrade);
    println!(
        "{:<44} {:>9.1} MiB {:>6.2}x (its file read inside)  goal: at most 3x",
        "upgrade_file in place, 2 Lua steps, half",
        peak as f64 / MIB,
        peak as f64 / len,
    );
}

// ---------------------------------------------------------------------------------------
// Part `batch`: save-upgrade on a folder of small saves, 1 job against 2.

/// A folder under `base` holding `saves` generated saves of about `bytes` bytes each, and
/// their texts.
fn batch_master(base: &Path, saves: usize, bytes: usize) -> (tempfile::TempDir, Vec<Vec<u8>>) {
    // The fields added for version 1 make a save larger than asked: aim lower by as much.
    let made = starlane_v1(bytes, game::SEED).to_vec().unwrap().len();
    let target = bytes.saturating_sub(made.saturating_sub(bytes));
    let dir = tempfile::Builder::new()
        .prefix("batch-master-")
        .tempdir_in(base)
        .unwrap();
    let texts: Vec<Vec<u8>> = (0..saves)
        .map(|i| {
            let text = starlane_v1(target, game::SEED + 1 + i as u64)
                .to_vec()
                .unwrap();
            std::fs::write(dir.path().join(format!("s{i:04}.json")), &text).unwrap();
            text
        })
        .collect();
    if let Some(keep) = std::env::var_os("SAVECHAIN_BENCH_BATCH_KEEP") {
        std::fs::create_dir_all(&keep).unwrap();
        for (i, text) in texts.iter().enumerate() {
            std::fs::write(Path::new(&keep).join(format!("s{i:04}.json")), text).unwrap();
        }
    }
    (dir, texts)
}

/// Where the batch's folders go, and what file system that is.
fn batch_base() -> PathBuf {
    let base = std::env::var_os("SAVECHAIN_BENCH_BATCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&base).unwrap();
    base
}

#[cfg(target_os = "linux")]
fn file_system(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a zeroed statfs filled by the call, for a NUL-terminated path.
    let kind = unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut s) != 0 {
            return "unknown file system".to_string();
        }
        s.f_type
    };
    match kind {
        0x0102_1994 => "tmpfs (NOT a disk: the flushes cost nothing)".to_string(),
        0xef53 => "ext2/3/4".to_string(),
        0x5846_5342 => "xfs".to_string(),
        0x9123_683e => "btrfs".to_string(),
        other => format!("file system type {other:#x}"),
    }
}

#[cfg(not(target_os = "linux"))]
fn file_system(_: &Path) -> String {
    "file system not checked".to_string()
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    InPlace,
    OutDir,
}

/// The machine's busy CPU time so far, every process and the kernel's own threads (Linux's
/// `/proc/stat`: user, nice, system, irq, softirq and steal, in ticks of 10 ms).
#[cfg(target_os = "linux")]
fn machine_busy() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal
    let busy: u64 = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| ticks.get(i))
        .sum();
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok()?;
    Some(Duration::from_millis(busy * 1000 / hz.max(1)))
}

#[cfg(not(target_os = "linux"))]
fn machine_busy() -> Option<Duration> {
    None
}

/// A batch run's wall time and the machine's CPU time during it.
#[derive(Clone, Copy)]
struct BatchRun {
    wall: Duration,
    busy: Option<Duration>,
}

/// One `save-upgrade` run on a fresh copy of `master`; the copy (flushed to disk) is not
/// timed. Checks that every save was upgraded.
fn run_batch(base: &Path, master: &Path, saves: usize, mode: Mode, jobs: usize) -> BatchRun {
    let run = tempfile::Builder::new()
        .prefix("batch-run-")
        .tempdir_in(base)
        .unwrap();
    let source = run.path().join("saves");
    std::fs::create_dir(&source).unwrap();
    for entry in std::fs::read_dir(master).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), source.join(entry.file_name())).unwrap();
    }
    let out = run.path().join("out");
    // SAFETY: `sync` has no preconditions: the copies (and what earlier runs removed)
    // reach the disk before the timing starts.
    #[cfg(unix)]
    unsafe {
        libc::sync()
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_save-upgrade"));
    command.args(["--jobs", &jobs.to_string()]);
    if mode == Mode::OutDir {
        command.arg("--out-dir").arg(&out);
    }
    command.arg(&source).stderr(std::process::Stdio::null());
    let busy_before = machine_busy();
    let start = Instant::now();
    let status = command.status().unwrap();
    let elapsed = start.elapsed();
    let busy = machine_busy()
        .zip(busy_before)
        .map(|(after, before)| after - before);
    assert!(status.success(), "save-upgrade failed: {status}");

    let written = if mode == Mode::OutDir { &out } else { &source };
    let last = format!("s{:04}.json", saves - 1);
    let save = Save::load(written.join(&last)).unwrap();
    assert_eq!(save.meta.version, 9, "{last} was upgraded");
    let count = |dir: &Path, suffix: &str| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(suffix)
            })
            .count()
    };
    assert_eq!(count(written, ".json"), saves);
    if mode == Mode::InPlace {
        assert_eq!(count(&source, ".bak"), saves, "a backup of each save");
    }
    BatchRun {
        wall: elapsed,
        busy,
    }
}

fn batch_table(chain: &Chain, runs: usize) {
    let saves = env::number("SAVECHAIN_BENCH_BATCH_SAVES", BATCH_SAVES).max(1);
    let kb = env::number("SAVECHAIN_BENCH_BATCH_KB", BATCH_KB).max(1);
    let jobs = env::number("SAVECHAIN_BENCH_JOBS", 2).max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let base = batch_base();
    let (master, texts) = batch_master(&base, saves, kb * 1000);
    let total: usize = texts.iter().map(Vec::len).sum();

    // [in place 1, in place N, out-dir 1, out-dir N]
    let mut best: [Option<BatchRun>; 4] = [None; 4];
    for _ in 0..runs {
        let order = [
            (Mode::InPlace, 1),
            (Mode::InPlace, jobs),
            (Mode::OutDir, 1),
            (Mode::OutDir, jobs),
        ];
        for ((mode, j), best) in order.into_iter().zip(best.iter_mut()) {
            let run = run_batch(&base, master.path(), saves, mode, j);
            if best.is_none_or(|b| run.wall < b.wall) {
                *best = Some(run);
            }
        }
    }
    let best = best.map(|b| b.expect("at least one run"));
    println!();
    println!(
        "save-upgrade on {saves} saves of {:.1} kB on average ({:.1} MiB), in {} ({}), \
         {cores} cores (best of {runs}; each run on a fresh copy, copying not timed):",
        total as f64 / saves as f64 / 1000.0,
        total as f64 / MIB,
        base.display(),
        file_system(&base)
    );
    println!(
        "{:<28} {:>12} {:>12} {:>10} {:>15} {:>12}",
        "",
        "--jobs 1 ms",
        format!("--jobs {jobs} ms"),
        "speed-up",
        "busy at 1 job",
        "most there"
    );
    let row = |name: &str, one: Duration, many: Duration, busy: Option<Duration>, goal: &str| {
        // The machine's cores kept busy by the run at one job, the kernel's writing
        // included: `--jobs N` cannot take less than that CPU time spread over the cores
        // it can use, so N jobs gain at most those cores over these.
        let (busy, most) = match busy {
            Some(busy) => {
                let cores_busy = busy.as_secs_f64() / one.as_secs_f64();
                let usable = jobs.min(cores) as f64;
                (
                    format!("{cores_busy:.2} cores"),
                    format!("{:.2}", usable / cores_busy.max(1.0)),
                )
            }
            None => (String::new(), String::new()),
        };
        println!(
            "{name:<28} {:>12.1} {:>12.1} {:>10.2} {busy:>15} {most:>12}  {goal}",
            ms(one),
            ms(many),
            one.as_secs_f64() / many.as_secs_f64()
        )
    };
    let goal = format!("goal: at least {:.1}", 0.9 * jobs as f64);
    row(
        "in place (with backups)",
        best[0].wall,
        best[1].wall,
        best[0].busy,
        &goal,
    );
    row("--out-dir", best[2].wall, best[3].wall, best[2].busy, &goal);

    // The same work without the files: load, upgrade and write the texts in memory.
    let in_memory = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let start = Instant::now();
        pool.install(|| {
            use rayon::prelude::*;
            texts.par_iter().for_each_init(
                || chain.upgrader(),
                |upgrader, text| {
                    let save = Save::from_slice(text).unwrap();
                    let upgraded = upgrader.upgrade(save, &Options::default()).unwrap();
                    drop(black_box(upgraded.save.to_vec().unwrap()));
                },
            )
        });
        start.elapsed()
    };
    let (mut one, mut many) = (Duration::MAX, Duration::MAX);
    for _ in 0..runs {
        one = one.min(in_memory(1));
        many = many.min(in_memory(jobs));
    }
    row(
        "in memory, no files",
        one,
        many,
        None,
        "(rayon pools of 1 and N threads)",
    );
}

// ---------------------------------------------------------------------------------------

fn main() {
    let chains = chains();
    let criterion = !env::table_only();
    let mut save = (part("chain") || part("memory") || part("mods") || criterion)
        .then(|| starlane_v1(env::game_mib(game::MIB) << 20, game::SEED));
    let text = save
        .as_ref()
        .filter(|_| part("chain") || part("memory") || criterion)
        .map(|save| save.to_vec().unwrap());
    // The same save with the mods' data, for the part `mods`.
    let mods_chain = mods_chain();
    let mods_text = save
        .take()
        .filter(|_| part("mods") || criterion)
        .map(|mut save| {
            add_mods_data(&mut save);
            save.to_vec().unwrap()
        });
    if let (Some(text), Ok(only)) = (&text, std::env::var("SAVECHAIN_BENCH_CHAIN_PROFILE")) {
        profile_chain(&chains, text, &only);
        return;
    }
    if let Some(text) = &text {
        if part("chain") || part("memory") {
            check_chains(&chains, text);
        }
        if part("chain") {
            chain_table(&chains, text, env::runs(CHAIN_RUNS));
        }
    }
    if let Some(mods_text) = &mods_text {
        if part("mods") {
            check_mods(&mods_chain, mods_text);
            mods_table(&mods_chain, mods_text, env::runs(CHAIN_RUNS));
        }
    }
    if let Some(text) = &text {
        if part("memory") {
            memory_table(&chains, text);
        }
    }
    if part("batch") {
        batch_table(&chains.example, env::runs(BATCH_RUNS));
    }
    if env::table_only() {
        return;
    }

    let text = text.unwrap();
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("example_chain");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("load_save", |b| b.iter(|| load_save(&text)));
    group.bench_function("load_upgrade_save", |b| {
        b.iter(|| load_upgrade_save(&chains.example, &text))
    });
    group.bench_function("load_small_lua_steps_save", |b| {
        b.iter(|| load_upgrade_save(&chains.small, &text))
    });
    group.bench_function("load_half_lua_steps_save", |b| {
        b.iter(|| load_upgrade_save(&chains.half, &text))
    });
    let mods_text = mods_text.unwrap();
    group.bench_function("load_save_with_mods_data", |b| {
        b.iter(|| load_save(&mods_text))
    });
    group.bench_function("load_20_mods_save", |b| {
        b.iter(|| load_mods_save(&mods_chain, &mods_text, &Options::default()))
    });
    group.finish();
    c.final_summary();
}
