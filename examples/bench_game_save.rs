//! Writes the generated game save of the benchmarks (`benches/support/game.rs`, about 50 MiB
//! of canonical text) to files, for benchmarks that run outside Rust: the Lua script
//! `benches/lua/native_vs_cjson.lua` (docs/PERFORMANCE.md, "Issue 20").
//!
//! ```text
//! cargo run --release --example bench_game_save -- target/bench
//! ```
//!
//! writes `target/bench/game.json`, the save's canonical pretty text (what `Save::store`
//! writes), and `target/bench/game.plain.json`, the same document as plain JSON for JSON
//! libraries (doubles as decimal numbers, byte strings as arrays of integers, written by
//! `serde_json::to_vec_pretty`, as `benches/lua.rs` gives lua-cjson). The size follows
//! `SAVECHAIN_BENCH_GAME_MB` (MiB of canonical text, default 50), the seed is the benches'.
//!
//! It also writes `game.53bit.json` and `game.53bit.plain.json`: the same save with every
//! integer beyond 2^53 (the seeds and random states, a few dozen) cut to its low 53 bits,
//! for `benches/lua/pure_vs_dkjson.lua` in LuaJIT, whose numbers are all doubles (the
//! pure-Lua codec refuses such integers there rather than round them).

#[path = "../benches/support/env.rs"]
mod env;
#[path = "../benches/support/game.rs"]
mod game;
#[path = "../benches/support/json.rs"]
mod json;

use std::path::PathBuf;

use savechain::Value;

/// `value` with every integer beyond 2^53 cut to its low 53 bits (the sign kept).
fn within_53_bits(value: &mut Value) {
    const LOW: u64 = (1 << 53) - 1;
    match value {
        Value::UInt(u) if *u > LOW => *value = Value::Int((*u & LOW) as i64),
        Value::Int(i) if i.unsigned_abs() > LOW => {
            *value = Value::Int(i.signum() * (i.unsigned_abs() & LOW) as i64)
        }
        Value::Array(items) => items.iter_mut().for_each(within_53_bits),
        Value::Object(map) => map.values_mut().for_each(within_53_bits),
        _ => {}
    }
}

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "target/bench".into()),
    );
    std::fs::create_dir_all(&dir).expect("the output folder can be made");
    let save = game::game_save(env::game_mib(game::MIB) << 20, game::SEED);
    let text = save.to_vec().expect("the save writes");
    let plain = serde_json::to_vec_pretty(&json::save_to_json(&save)).expect("plain JSON");
    let mut small = save.clone();
    within_53_bits(&mut small.data);
    let small_text = small.to_vec().expect("the save writes");
    let small_plain = serde_json::to_vec_pretty(&json::save_to_json(&small)).expect("plain JSON");
    for (name, bytes) in [
        ("game.json", &text),
        ("game.plain.json", &plain),
        ("game.53bit.json", &small_text),
        ("game.53bit.plain.json", &small_plain),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("the file is written");
        println!(
            "{}: {:.1} MiB",
            path.display(),
            bytes.len() as f64 / (1 << 20) as f64
        );
    }
}
