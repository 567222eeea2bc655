//! The example game's whole upgrade chain on a large save, and batches of small saves on
//! one core against all of them.
//!
//! ```text
//! cargo bench --bench upgrade                      # table + criterion, a few minutes
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench upgrade
//! SAVECHAIN_BENCH_GAME_MB=10 cargo bench --bench upgrade
//! SAVECHAIN_BENCH_CHAIN_ONLY=1 cargo bench --bench upgrade   # only the chain's table
//! ```
//!
//! 1. A version 1 save of the example game (`src/bin/save-upgrade/starlane.rs`), about 50 MiB of text,
//!    made by the generator of `support/game.rs` with the fields the chain expects. Timed
//!    in one process: a plain load and save of it (`Save::from_slice` + `Save::to_vec`),
//!    against the same load, all eight steps (five in Lua, sharing conversions), and the
//!    save. Goal: the full chain costs at most 2x the plain load and save.
//! 2. `save-upgrade --out-dir` on 1,000 copies of the fixtures, with `--jobs 1` and with
//!    all cores. Goal: near-linear scaling.
//!
//! Best of alternating runs, as in the other benches.

#[path = "support/game.rs"]
mod game;
#[path = "../src/bin/save-upgrade/starlane.rs"]
mod starlane;

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use savechain::upgrade::Chain;
use savechain::Options;
use savechain::{Save, Value};

const GAME_SEED: u64 = 0x5a7e_c4a1_2024;
const GAME_MIB: usize = 50;
const MIB: f64 = 1024.0 * 1024.0;

/// The generated save, given what the example chain's version 1 has.
fn starlane_v1(mib: usize) -> Save {
    let mut save = game::game_save(mib << 20, GAME_SEED);
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
    let missions: savechain::Map = [("active", ids("m", 200)), ("done", ids("d", 2000))]
        .into_iter()
        .collect();
    lua.insert("missions", Value::Object(missions));
    save
}

fn load_save(text: &[u8]) {
    let save = Save::from_slice(black_box(text)).unwrap();
    drop(black_box(save.to_vec().unwrap()));
}

fn load_upgrade_save(chain: &Chain, text: &[u8]) {
    let save = Save::from_slice(black_box(text)).unwrap();
    let upgraded = chain.upgrader().upgrade(save, &Options::default()).unwrap();
    drop(black_box(upgraded.save.to_vec().unwrap()));
}

fn best<F: FnMut()>(best: &mut Duration, mut f: F) {
    let t = Instant::now();
    f();
    *best = (*best).min(t.elapsed());
}

fn batch_dir(copies: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
    let sources: Vec<Vec<u8>> = ["v1/small.json", "v1/edge.json", "v5/frontier.json"]
        .iter()
        .map(|f| std::fs::read(Path::new(fixtures).join(f)).unwrap())
        .collect();
    for i in 0..copies {
        std::fs::write(
            dir.path().join(format!("s{i:04}.json")),
            &sources[i % sources.len()],
        )
        .unwrap();
    }
    dir
}

fn run_batch(dir: &Path, jobs: &str) -> Duration {
    let out = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(["--jobs", jobs, "--out-dir"])
        .arg(out.path())
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    let elapsed = start.elapsed();
    assert!(status.success());
    elapsed
}

fn main() {
    let mib = std::env::var("SAVECHAIN_BENCH_GAME_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(GAME_MIB);
    let chain = starlane::chain().unwrap();
    let text = starlane_v1(mib).to_vec().unwrap();

    let (mut plain, mut full) = (Duration::MAX, Duration::MAX);
    for _ in 0..4 {
        best(&mut plain, || load_save(&text));
        best(&mut full, || load_upgrade_save(&chain, &text));
    }
    let ms = |t: Duration| t.as_secs_f64() * 1e3;
    let rate = |t: Duration| text.len() as f64 / MIB / t.as_secs_f64();
    println!();
    println!(
        "Version 1 save of the example game, {:.1} MiB of text (best of 4):",
        text.len() as f64 / MIB
    );
    println!(
        "{:<34} {:>9.1} ms {:>8.1} MiB/s",
        "load + save",
        ms(plain),
        rate(plain)
    );
    println!(
        "{:<34} {:>9.1} ms {:>8.1} MiB/s",
        "load + 8 steps (5 Lua) + save",
        ms(full),
        rate(full)
    );
    println!(
        "full chain / (load + save) = {:.2} (goal: at most 2.00)",
        full.as_secs_f64() / plain.as_secs_f64()
    );

    if std::env::var_os("SAVECHAIN_BENCH_CHAIN_ONLY").is_some() {
        return;
    }
    let copies = 1000;
    let dir = batch_dir(copies);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mut one, mut all) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        one = one.min(run_batch(dir.path(), "1"));
        all = all.min(run_batch(dir.path(), &cores.to_string()));
    }
    println!();
    println!("save-upgrade --out-dir on {copies} fixture-sized saves (best of 3):");
    println!(
        "{:<34} {:>9.1} ms {:>8.0} saves/s",
        "--jobs 1",
        ms(one),
        copies as f64 / one.as_secs_f64()
    );
    println!(
        "{:<34} {:>9.1} ms {:>8.0} saves/s",
        format!("--jobs {cores} (all cores)"),
        ms(all),
        copies as f64 / all.as_secs_f64()
    );
    println!(
        "speed-up {:.2} on {cores} cores (near-linear: close to {cores})",
        one.as_secs_f64() / all.as_secs_f64()
    );

    // The same work without the files: load, upgrade and write 1,000 texts in memory.
    let texts: Vec<Vec<u8>> = (0..copies)
        .map(|i| std::fs::read(dir.path().join(format!("s{i:04}.json"))).unwrap())
        .collect();
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
    let (mut one_mem, mut all_mem) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        one_mem = one_mem.min(in_memory(1));
        all_mem = all_mem.min(in_memory(cores));
    }
    println!("the same in memory, no files (load, upgrade, write text; best of 3):");
    println!(
        "{:<34} {:>9.1} ms {:>8.0} saves/s",
        "1 thread",
        ms(one_mem),
        copies as f64 / one_mem.as_secs_f64()
    );
    println!(
        "{:<34} {:>9.1} ms {:>8.0} saves/s",
        format!("{cores} threads"),
        ms(all_mem),
        copies as f64 / all_mem.as_secs_f64()
    );
    println!(
        "speed-up {:.2} on {cores} cores",
        one_mem.as_secs_f64() / all_mem.as_secs_f64()
    );

    if std::env::var_os("SAVECHAIN_BENCH_TABLE_ONLY").is_some() {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("example_chain");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("load_save", |b| b.iter(|| load_save(&text)));
    group.bench_function("load_upgrade_save", |b| {
        b.iter(|| load_upgrade_save(&chain, &text))
    });
    group.finish();
    c.final_summary();
}
