//! Loading a large save through its binary cache, against loading its JSON and against a
//! plain read of the bytes.
//!
//! ```text
//! cargo bench --bench cache                          # table + criterion
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench cache
//! SAVECHAIN_BENCH_GAME_MB=10 cargo bench --bench cache
//! ```
//!
//! On the generated game save of `support/game.rs` (about 50 MiB of JSON, at the example
//! chain's latest version so nothing needs upgrading), written with its cache to a
//! temporary folder, files warm in the page cache, in one process, best of alternating runs:
//!
//! - to a usable document: `cache::load` (reads and hashes the JSON, maps the cache and
//!   hashes it, checks everything) and the same in trust mode (size and modification time
//!   of the JSON instead of its hash), against `Save::load` of the JSON, and against plain
//!   `std::fs::read` of the cache file and of the JSON file;
//! - to a tree: the cache's view to `Value`, against the text to `Value`;
//! - to typed state: a `#[derive(Deserialize)]` struct through the serde `Deserializer`
//!   over the view, against the same struct from the text (`Save::load` and `data_as`).
//!
//! Peak heap of each (the shared counting allocator of `support/alloc.rs`, over the
//! system allocator or mimalloc; the mapped cache is not heap and not counted).
//!
//! Then issue 32's goal 6 where it is stated: a content-checked `cache::load` against a
//! plain `fs::read` of the cache file, and of the JSON file, the three alternating, 21
//! rounds: the ratio of the best times, and the median of each round's ratio.

#[path = "support/alloc.rs"]
mod alloc;
#[path = "support/game.rs"]
mod game;
#[path = "../src/bin/save-upgrade/starlane.rs"]
mod starlane;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use savechain::cache::{self, Source};
use savechain::Options;
use savechain::Save;
use serde::Deserialize;

const MIB: f64 = 1024.0 * 1024.0;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

#[derive(Deserialize)]
#[allow(dead_code)] // Read to be deserialized, not used.
struct Data<'a> {
    #[serde(borrow)]
    systems: Vec<StarSystem<'a>>,
    tick: i64,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct StarSystem<'a> {
    id: i64,
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    position: [f64; 3],
    visited: bool,
    #[serde(borrow)]
    planets: Vec<Planet<'a>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Planet<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    radius: f64,
    mass: f64,
}

struct Fixture {
    _dir: tempfile::TempDir,
    json: std::path::PathBuf,
    chain: savechain::upgrade::Chain,
}

fn fixture(mib: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("game.json");
    let chain = starlane::chain().unwrap();
    let mut save = game::game_save(mib << 20, game::SEED);
    save.meta.version = chain.latest();
    cache::store(&save, &json, &chain).unwrap();
    let loaded = cache::load(&json, &chain, &Options::default()).unwrap();
    assert_eq!(loaded.source, Source::Cache);
    assert_eq!(loaded.to_save().unwrap(), save);
    Fixture {
        _dir: dir,
        json,
        chain,
    }
}

fn trust() -> Options {
    let mut options = Options::default();
    options.trust_mtime = true;
    options
}

fn through_cache(f: &Fixture, options: &Options) {
    let loaded = cache::load(&f.json, &f.chain, options).unwrap();
    assert_eq!(loaded.source, Source::Cache);
    black_box(loaded.view().data().unwrap().get("tick"));
}

fn json_load(f: &Fixture) {
    drop(black_box(Save::load(&f.json).unwrap()));
}

fn read(path: &Path) {
    drop(black_box(std::fs::read(path).unwrap()));
}

fn cache_to_value(f: &Fixture) {
    let loaded = cache::load(&f.json, &f.chain, &trust()).unwrap();
    drop(black_box(loaded.view().root().to_value().unwrap()));
}

fn serde_view(f: &Fixture) {
    let loaded = cache::load(&f.json, &f.chain, &trust()).unwrap();
    let data: Data = cache::from_view(loaded.view().data().unwrap()).unwrap();
    drop(black_box(data));
}

fn serde_text(f: &Fixture) {
    let save = Save::load(&f.json).unwrap();
    let data: Data = savechain::from_value_ref(&save.data).unwrap();
    drop(black_box(data));
}

/// Goal 6 of issue 32, side by side: a content-checked load against plain reads of the
/// cache file and of the JSON file, alternating.
fn goal_against_reads(f: &Fixture, cache_file: &Path) {
    const ROUNDS: usize = 21;
    let ops: [&dyn Fn(); 3] = [
        &|| through_cache(f, &Options::default()),
        &|| read(cache_file),
        &|| read(&f.json),
    ];
    let mut times = [[0.0f64; 3]; ROUNDS];
    for round in times.iter_mut() {
        for (time, op) in round.iter_mut().zip(ops) {
            let t = Instant::now();
            op();
            *time = t.elapsed().as_secs_f64();
        }
    }
    let best = |i: usize| times.iter().map(|round| round[i]).fold(f64::MAX, f64::min);
    let median_ratio = |i: usize| {
        let mut ratios: Vec<f64> = times.iter().map(|round| round[0] / round[i]).collect();
        ratios.sort_by(f64::total_cmp);
        ratios[ROUNDS / 2]
    };
    println!();
    println!("Goal 6: a content-checked load against a plain read ({ROUNDS} alternating rounds)");
    println!(
        "{:<34} {:>8} {:>22} {:>22}",
        "operation", "best ms", "load / this, of bests", "median of round ratios"
    );
    let names = [
        "cache::load (content hash)",
        "fs::read of the cache file",
        "fs::read of the JSON file",
    ];
    for (i, name) in names.iter().enumerate() {
        println!(
            "{:<34} {:>8.2} {:>21.2}x {:>21.2}x",
            name,
            best(i) * 1e3,
            best(0) / best(i),
            median_ratio(i)
        );
    }
    println!(
        "content-checked load / fs::read of the cache file: {:.2}x (goal: at most 1.5x)",
        best(0) / best(1)
    );
}

fn main() {
    let mib = std::env::var("SAVECHAIN_BENCH_GAME_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(game::MIB);
    let f = fixture(mib);
    let cache_file = cache::cache_path(&f.json);
    let json_len = std::fs::metadata(&f.json).unwrap().len() as f64;
    let cache_len = std::fs::metadata(&cache_file).unwrap().len() as f64;

    type Op<'a> = (&'static str, Box<dyn Fn() + 'a>);
    let ops: Vec<Op> = vec![
        (
            "cache::load (content hash)",
            Box::new(|| through_cache(&f, &Options::default())),
        ),
        (
            "cache::load (trust mode)",
            Box::new(|| through_cache(&f, &trust())),
        ),
        ("Save::load of the JSON", Box::new(|| json_load(&f))),
        ("fs::read of the cache file", Box::new(|| read(&cache_file))),
        ("fs::read of the JSON file", Box::new(|| read(&f.json))),
        (
            "cache view to Value (trust)",
            Box::new(|| cache_to_value(&f)),
        ),
        ("serde over the view (trust)", Box::new(|| serde_view(&f))),
        ("serde over the text", Box::new(|| serde_text(&f))),
    ];
    let mut best = vec![Duration::MAX; ops.len()];
    for _ in 0..5 {
        for (i, (_, op)) in ops.iter().enumerate() {
            let t = Instant::now();
            op();
            best[i] = best[i].min(t.elapsed());
        }
    }
    let peaks: Vec<usize> = ops.iter().map(|(_, op)| alloc::peak_of(op).1).collect();
    println!();
    println!(
        "Game save: {:.1} MiB of JSON, {:.1} MiB of cache (best of 5; peak heap of one run; \
         {} allocator)",
        json_len / MIB,
        cache_len / MIB,
        alloc::UNDERNEATH
    );
    println!("{:<30} {:>10} {:>14}", "operation", "ms", "peak heap MiB");
    for (i, (name, _)) in ops.iter().enumerate() {
        println!(
            "{:<30} {:>10.2} {:>14.1}",
            name,
            best[i].as_secs_f64() * 1e3,
            peaks[i] as f64 / MIB
        );
    }
    let ratio = |a: usize, b: usize| best[a].as_secs_f64() / best[b].as_secs_f64();
    println!(
        "JSON load / cache load: {:.1}x (goal: at least 10x)",
        ratio(2, 0)
    );
    println!(
        "JSON load / cache load in trust mode: {:.1}x (goal: at least 50x)",
        ratio(2, 1)
    );
    println!(
        "cache load / plain read of the cache file: {:.2}x (goal: at most 1.5x)",
        ratio(0, 3)
    );
    println!(
        "cache load (trust) / plain read of the cache file: {:.2}x",
        ratio(1, 3)
    );
    println!("text to Value / cache to Value: {:.1}x", ratio(2, 5));
    println!("serde over text / serde over the view: {:.1}x", ratio(7, 6));
    goal_against_reads(&f, &cache_file);

    if std::env::var_os("SAVECHAIN_BENCH_TABLE_ONLY").is_some() {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("game_cache");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .throughput(Throughput::Bytes(json_len as u64));
    group.bench_function("cache_load", |b| {
        b.iter(|| through_cache(&f, &Options::default()))
    });
    group.bench_function("cache_load_trust", |b| {
        b.iter(|| through_cache(&f, &trust()))
    });
    group.bench_function("json_load", |b| b.iter(|| json_load(&f)));
    group.finish();
    c.final_summary();
}
