//! A game save through Lua and back, against loading the same save from text.
//!
//! ```text
//! cargo bench --bench lua                      # ~50 MiB game save, about two minutes
//! SAVECHAIN_BENCH_GAME_MB=10 cargo bench --bench lua
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench lua   # only the table
//! ```
//!
//! In one process, on the same generated save: `Save::from_slice` of its canonical text
//! (what a game does to load it), `lua::to_lua` of its data (document to Lua tables) and
//! `lua::from_lua` back (Lua tables to document). Throughput is in MiB/s of the save's
//! text. The goal: to Lua and back costs no more than one text load. The table comes from
//! alternating single runs, best of each; a full Lua garbage collection runs between runs,
//! outside the timing, so each run starts from the same heap.

#[path = "support/game.rs"]
mod game;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use mlua::Lua;
use savechain::lua::{from_lua, install, to_lua};
use savechain::Save;

const GAME_SEED: u64 = 0x5a7e_c4a1_2024;
const GAME_MIB: usize = 50;
const MIB: f64 = 1024.0 * 1024.0;

struct Fixture {
    text: Vec<u8>,
    save: Save,
    lua: Lua,
    in_lua: mlua::Value,
}

fn fixture() -> Fixture {
    let mib = std::env::var("SAVECHAIN_BENCH_GAME_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(GAME_MIB);
    let save = game::game_save(mib << 20, GAME_SEED);
    let text = save.to_vec().unwrap();
    let lua = Lua::new();
    install(&lua).unwrap();
    let in_lua = to_lua(&lua, &save.data).unwrap();
    assert_eq!(
        from_lua(&lua, &in_lua).unwrap(),
        save.data,
        "the round trip is exact"
    );
    Fixture {
        text,
        save,
        lua,
        in_lua,
    }
}

fn load(f: &Fixture) {
    drop(black_box(Save::from_slice(black_box(&f.text)).unwrap()));
}

fn into_lua(f: &Fixture) {
    drop(black_box(to_lua(&f.lua, black_box(&f.save.data)).unwrap()));
}

fn out_of_lua(f: &Fixture) {
    drop(black_box(from_lua(&f.lua, black_box(&f.in_lua)).unwrap()));
}

fn best_of(f: &Fixture, runs: usize) -> [Duration; 3] {
    let ops: [fn(&Fixture); 3] = [load, into_lua, out_of_lua];
    let mut best = [Duration::MAX; 3];
    for _ in 0..runs {
        for (op, best) in ops.iter().zip(best.iter_mut()) {
            f.lua.gc_collect().unwrap();
            let t = Instant::now();
            op(f);
            *best = (*best).min(t.elapsed());
        }
    }
    best
}

fn print_table(f: &Fixture, [load, to, from]: [Duration; 3]) {
    let len = f.text.len();
    let rate = |t: Duration| len as f64 / MIB / t.as_secs_f64();
    let ms = |t: Duration| t.as_secs_f64() * 1e3;
    println!();
    println!(
        "Game save, {:.1} MiB of text (best of runs):",
        len as f64 / MIB
    );
    println!("{:<28} {:>10} {:>10}", "operation", "ms", "MiB/s");
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "text load (Save::from_slice)",
        ms(load),
        rate(load)
    );
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "to Lua (lua::to_lua)",
        ms(to),
        rate(to)
    );
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "from Lua (lua::from_lua)",
        ms(from),
        rate(from)
    );
    let round = to + from;
    println!(
        "{:<28} {:>10.1} {:>10.1}",
        "round trip through Lua",
        ms(round),
        rate(round)
    );
    println!(
        "round trip / text load = {:.2} (goal: at most 1.00)",
        round.as_secs_f64() / load.as_secs_f64()
    );
}

fn main() {
    let f = fixture();
    print_table(&f, best_of(&f, 5));
    if std::env::var_os("SAVECHAIN_BENCH_TABLE_ONLY").is_some() {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("game_lua");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .throughput(Throughput::Bytes(f.text.len() as u64));
    group.bench_function("text_load", |b| b.iter(|| load(&f)));
    group.bench_function("to_lua", |b| b.iter(|| into_lua(&f)));
    group.bench_function("from_lua", |b| b.iter(|| out_of_lua(&f)));
    group.finish();
    c.final_summary();
}
