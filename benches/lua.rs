//! A game save through Lua and back: savechain's Lua bridge against a text load, and save
//! text to Lua tables and back to text, savechain against lua-cjson.
//!
//! ```text
//! cargo bench --bench lua                                   # all tables + criterion
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench lua      # only the tables
//! SAVECHAIN_BENCH_ONLY=text,memory cargo bench --bench lua  # some parts: bridge, text, memory
//! SAVECHAIN_BENCH_GAME_MB=2 SAVECHAIN_BENCH_RUNS=2 SAVECHAIN_BENCH_TABLE_ONLY=1 \
//!     cargo bench --bench lua                               # quick check on a 2 MiB save
//!
//! # With lua-cjson (the `text` and `memory` parts; without it they leave its column out):
//! apt-get install lua-cjson
//! RUSTFLAGS="-C link-arg=-rdynamic" cargo bench --bench lua
//! ```
//!
//! `-rdynamic` makes the bench binary export the symbols of the Lua it links statically, so
//! that lua-cjson's `cjson.so` can call them; changing `RUSTFLAGS` rebuilds everything
//! (`CARGO_TARGET_DIR=target/rdynamic` keeps that build apart). `SAVECHAIN_BENCH_CJSON_DIR`
//! is the folder holding `cjson.so` (default `/usr/lib/x86_64-linux-gnu/lua/5.4`);
//! `SAVECHAIN_BENCH_NO_CJSON=1` leaves lua-cjson out. If `require("cjson")` fails the bench
//! prints why and goes on without lua-cjson.
//!
//! All on the generated game save of `support/game.rs` (about 50 MiB of canonical text
//! unless `SAVECHAIN_BENCH_GAME_MB` says otherwise), in one process. Parts:
//!
//! - `bridge`: `Save::from_slice` of the save's text (a game loading it), `lua::to_lua` of
//!   its data (document to Lua tables) and `lua::from_lua` back (Lua tables to document).
//!   The goal: to Lua and back costs no more than one text load.
//! - `text`: the whole save document from text to Lua tables and back to text, three ways,
//!   each direction timed on its own: *savechain straight*, `lua::from_text`, then
//!   `lua::to_text`; *savechain through a tree* (the old way),
//!   `text::from_slice` + `lua::to_lua`, then the same way back; *lua-cjson*, in a Lua
//!   state of its own, `cjson.decode(s)` of the same document as plain JSON (decimal
//!   doubles, byte strings as arrays of integers, written by `serde_json::to_vec_pretty`
//!   as in `support/json.rs`; a Lua string made before timing) and `cjson.encode(t)`,
//!   each a call from Rust timed around it. savechain's output must be its input, byte for
//!   byte; lua-cjson's is compared with its input and the numbers it changed are counted.
//!   Goal: savechain straight's round trip faster than lua-cjson's.
//! - `memory`: peak heap of each way and direction, and of the round trip, from the
//!   counting allocator of `support/alloc.rs` (Rust's heap and Lua's, which mlua allocates
//!   through Rust's global allocator; lua-cjson's own `malloc` buffers too, rerouted by
//!   `support/cjson.rs`), each in a fresh Lua state, the input text excluded (made before),
//!   as multiples of each way's own input text.
//!
//! Timed tables come from alternating single runs, best of each (5 unless
//! `SAVECHAIN_BENCH_RUNS` says otherwise); a full Lua garbage collection runs before each
//! timed operation, outside the timing. Dropping a Rust tree or text is inside the timing;
//! Lua values are freed by the collections outside it.

#[path = "support/alloc.rs"]
mod alloc;
#[path = "support/cjson.rs"]
mod cjson;
#[path = "support/env.rs"]
mod env;
#[path = "support/game.rs"]
mod game;
#[path = "support/json.rs"]
mod json;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use mlua::Lua;
use savechain::lua::{from_lua, from_text, install, to_lua, to_text};
use savechain::{text, Save};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

const RUNS: usize = 5;
const MIB: f64 = 1024.0 * 1024.0;
const PARTS: &[&str] = &["bridge", "text", "memory"];

fn ms(t: Duration) -> f64 {
    t.as_secs_f64() * 1e3
}

fn new_lua() -> Lua {
    let lua = Lua::new();
    install(&lua).unwrap();
    lua
}

// ---------------------------------------------------------------------------------------
// Part `bridge`: the save's data to Lua and back, against a text load.

struct Bridge<'s> {
    text: &'s [u8],
    save: &'s Save,
    lua: Lua,
    in_lua: mlua::Value,
}

fn bridge<'s>(save: &'s Save, text: &'s [u8]) -> Bridge<'s> {
    let lua = new_lua();
    let in_lua = to_lua(&lua, &save.data).unwrap();
    assert_eq!(
        from_lua(&lua, &in_lua).unwrap(),
        save.data,
        "the round trip is exact"
    );
    Bridge {
        text,
        save,
        lua,
        in_lua,
    }
}

fn load(b: &Bridge) {
    drop(black_box(Save::from_slice(black_box(b.text)).unwrap()));
}

fn into_lua(b: &Bridge) {
    drop(black_box(to_lua(&b.lua, black_box(&b.save.data)).unwrap()));
}

fn out_of_lua(b: &Bridge) {
    drop(black_box(from_lua(&b.lua, black_box(&b.in_lua)).unwrap()));
}

fn bridge_best_of(b: &Bridge, runs: usize) -> [Duration; 3] {
    let ops: [fn(&Bridge); 3] = [load, into_lua, out_of_lua];
    let mut best = [Duration::MAX; 3];
    for _ in 0..runs {
        for (op, best) in ops.iter().zip(best.iter_mut()) {
            b.lua.gc_collect().unwrap();
            let t = Instant::now();
            op(b);
            *best = (*best).min(t.elapsed());
        }
    }
    best
}

fn print_bridge(b: &Bridge, runs: usize, [load, to, from]: [Duration; 3]) {
    let len = b.text.len();
    let rate = |t: Duration| len as f64 / MIB / t.as_secs_f64();
    println!();
    println!(
        "Game save to Lua and back, {:.1} MiB of text (best of {runs}):",
        len as f64 / MIB
    );
    println!("{:<28} {:>10} {:>10}", "operation", "ms", "MiB/s");
    let row = |name: &str, t: Duration| println!("{name:<28} {:>10.1} {:>10.1}", ms(t), rate(t));
    row("text load (Save::from_slice)", load);
    row("to Lua (lua::to_lua)", to);
    row("from Lua (lua::from_lua)", from);
    row("round trip through Lua", to + from);
    println!(
        "round trip / text load = {:.2} (goal: at most 1.00)",
        (to + from).as_secs_f64() / load.as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------
// Parts `text` and `memory`: text -> Lua -> text, three ways.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Way {
    /// `lua::from_text`, then `lua::to_text`.
    Straight,
    /// `text::from_slice` + `lua::to_lua`, then `lua::from_lua` + `text::to_vec`.
    Tree,
    /// `cjson.decode`, then `cjson.encode`.
    Cjson,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Straight => "savechain straight",
            Way::Tree => "savechain through a tree",
            Way::Cjson => "lua-cjson",
        }
    }
}

/// lua-cjson with the plain JSON text as a Lua string of its state.
struct CjsonSide {
    cj: cjson::Cjson,
    input: mlua::String,
}

impl CjsonSide {
    fn new(json: &[u8]) -> Result<CjsonSide, String> {
        let cj = cjson::load()?;
        let input = cj.lua.create_string(json).map_err(|e| e.to_string())?;
        Ok(CjsonSide { cj, input })
    }
}

/// The texts and the Lua states of the three ways.
struct Texts {
    /// The save's canonical pretty text (what savechain reads and must write back).
    text: Vec<u8>,
    /// The same document as plain JSON (what lua-cjson reads).
    json: Vec<u8>,
    /// savechain's Lua state.
    lua: Lua,
    cjson: Option<CjsonSide>,
}

/// What a way wrote: a Rust buffer, or a Lua string.
enum Written {
    Rust(Vec<u8>),
    Lua(mlua::String),
}

impl Written {
    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Written::Rust(v) => v.clone(),
            Written::Lua(s) => s.as_bytes().to_vec(),
        }
    }
}

fn straight_in(lua: &Lua, text: &[u8]) -> mlua::Value {
    from_text(lua, black_box(text)).unwrap()
}

fn tree_in(lua: &Lua, text: &[u8]) -> mlua::Value {
    let tree = text::from_slice(black_box(text)).unwrap();
    let value = to_lua(lua, &tree).unwrap();
    drop(black_box(tree));
    value
}

fn straight_out(lua: &Lua, value: &mlua::Value) -> Vec<u8> {
    to_text(lua, black_box(value), text::Style::Pretty).unwrap()
}

fn tree_out(lua: &Lua, value: &mlua::Value) -> Vec<u8> {
    let tree = from_lua(lua, black_box(value)).unwrap();
    let text = text::to_vec(&tree).unwrap();
    drop(black_box(tree));
    text
}

fn cjson_in(side: &CjsonSide) -> mlua::Value {
    side.cj.decode.call(&side.input).unwrap()
}

fn cjson_out(side: &CjsonSide, value: &mlua::Value) -> mlua::String {
    side.cj.encode.call(value).unwrap()
}

impl Texts {
    fn lua(&self, way: Way) -> &Lua {
        match way {
            Way::Straight | Way::Tree => &self.lua,
            Way::Cjson => &self.cjson.as_ref().unwrap().cj.lua,
        }
    }

    fn ways(&self) -> Vec<Way> {
        let mut ways = vec![Way::Straight, Way::Tree];
        if self.cjson.is_some() {
            ways.push(Way::Cjson);
        }
        ways
    }

    fn input_len(&self, way: Way) -> usize {
        match way {
            Way::Straight | Way::Tree => self.text.len(),
            Way::Cjson => self.json.len(),
        }
    }

    fn to_lua(&self, way: Way) -> mlua::Value {
        to_lua_in(way, &self.lua, self.cjson.as_ref(), &self.text)
    }

    fn to_text(&self, way: Way, value: &mlua::Value) -> Written {
        to_text_in(way, &self.lua, self.cjson.as_ref(), value)
    }
}

fn to_lua_in(way: Way, lua: &Lua, cjson: Option<&CjsonSide>, text: &[u8]) -> mlua::Value {
    match way {
        Way::Straight => straight_in(lua, text),
        Way::Tree => tree_in(lua, text),
        Way::Cjson => cjson_in(cjson.unwrap()),
    }
}

fn to_text_in(way: Way, lua: &Lua, cjson: Option<&CjsonSide>, value: &mlua::Value) -> Written {
    match way {
        Way::Straight => Written::Rust(straight_out(lua, value)),
        Way::Tree => Written::Rust(tree_out(lua, value)),
        Way::Cjson => Written::Lua(cjson_out(cjson.unwrap(), value)),
    }
}

fn texts(save: &Save) -> Texts {
    let text = save.to_vec().unwrap();
    let json = serde_json::to_vec_pretty(&json::save_to_json(save)).unwrap();
    let cjson = if env::flag("SAVECHAIN_BENCH_NO_CJSON") {
        println!("lua-cjson: left out (SAVECHAIN_BENCH_NO_CJSON is set)");
        None
    } else {
        match CjsonSide::new(&json) {
            Ok(side) => {
                println!(
                    "lua-cjson {} loaded from {}; its own malloc buffers counted: {}",
                    side.cj.version,
                    cjson::dir(),
                    match &side.cj.c_allocations {
                        Ok(n) => format!("yes ({n} references rerouted)"),
                        Err(why) => format!("no ({why})"),
                    }
                );
                Some(side)
            }
            Err(why) => {
                println!("lua-cjson: left out, it did not load: {why}");
                None
            }
        }
    };
    Texts {
        text,
        json,
        lua: new_lua(),
        cjson,
    }
}

/// What came back of the numbers and the shape of a plain JSON document.
#[derive(Default, Debug)]
struct Loss {
    numbers: usize,
    /// Numbers that came back with another value or written as another kind (an integer as
    /// a float, a float as an integer).
    changed_numbers: usize,
    /// Other differences, such as an empty array written back as `{}`.
    other: usize,
}

fn compare(input: &serde_json::Value, output: &serde_json::Value, loss: &mut Loss) {
    use serde_json::Value as J;
    match (input, output) {
        (J::Number(a), J::Number(b)) => {
            loss.numbers += 1;
            if a != b {
                loss.changed_numbers += 1;
            }
        }
        (J::Array(a), J::Array(b)) if a.len() == b.len() => {
            for (a, b) in a.iter().zip(b) {
                compare(a, b, loss);
            }
        }
        (J::Object(a), J::Object(b)) if a.len() == b.len() => {
            for (key, a) in a {
                match b.get(key) {
                    Some(b) => compare(a, b, loss),
                    None => loss.other += 1,
                }
            }
        }
        (a, b) if a == b => {}
        _ => loss.other += 1,
    }
}

/// Checks every way once: savechain's output is its input; what lua-cjson loses.
fn check_texts(t: &Texts) {
    for way in [Way::Straight, Way::Tree] {
        let value = t.to_lua(way);
        let out = t.to_text(way, &value).to_bytes();
        assert!(
            out == t.text,
            "{}: text -> Lua -> text is not the same text",
            way.name()
        );
    }
    let tick_type = |lua: &Lua, value: &mlua::Value| -> String {
        lua.load("return function(t) return math.type(t.data.tick) end")
            .eval::<mlua::Function>()
            .unwrap()
            .call(value)
            .unwrap()
    };
    let value = t.to_lua(Way::Straight);
    println!(
        "savechain: text -> Lua -> text gives back the same bytes, both ways; data.tick is a Lua {}",
        tick_type(&t.lua, &value)
    );
    if let Some(side) = &t.cjson {
        let value = cjson_in(side);
        let tick = tick_type(&side.cj.lua, &value);
        let out = cjson_out(side, &value);
        let input: serde_json::Value = serde_json::from_slice(&t.json).unwrap();
        let output: serde_json::Value = serde_json::from_slice(&out.as_bytes())
            .expect("lua-cjson writes JSON that serde_json reads");
        let mut loss = Loss::default();
        compare(&input, &output, &mut loss);
        println!(
            "lua-cjson: data.tick is a Lua {tick} after cjson.decode; its text ({} bytes, compact) \
             has {} of {} numbers changed ({:.1} %: every number becomes a Lua float, doubles are \
             written with 14 significant digits, integers above 2^53 lose digits) and {} other \
             differences (such as empty arrays written as {{}})",
            out.as_bytes().len(),
            loss.changed_numbers,
            loss.numbers,
            100.0 * loss.changed_numbers as f64 / loss.numbers.max(1) as f64,
            loss.other
        );
    }
}

/// Best times of each way, `[text -> Lua, Lua -> text]`.
fn texts_best_of(t: &Texts, runs: usize) -> Vec<(Way, [Duration; 2])> {
    let ways = t.ways();
    let mut best = vec![[Duration::MAX; 2]; ways.len()];
    for _ in 0..runs {
        for (way, best) in ways.iter().zip(best.iter_mut()) {
            let lua = t.lua(*way);
            lua.gc_collect().unwrap();
            let start = Instant::now();
            let value = black_box(t.to_lua(*way));
            best[0] = best[0].min(start.elapsed());
            lua.gc_collect().unwrap();
            let start = Instant::now();
            drop(black_box(t.to_text(*way, &value)));
            best[1] = best[1].min(start.elapsed());
            drop(value);
            lua.gc_collect().unwrap();
        }
    }
    ways.into_iter().zip(best).collect()
}

fn print_texts(t: &Texts, runs: usize, best: &[(Way, [Duration; 2])]) {
    println!();
    println!(
        "Text -> Lua -> text of the game save (best of {runs}; savechain reads {:.1} MiB of \
         canonical text, lua-cjson {:.1} MiB of plain JSON; MiB/s of each way's own input):",
        t.text.len() as f64 / MIB,
        t.json.len() as f64 / MIB
    );
    println!(
        "{:<26} {:>12} {:>12} {:>14} {:>8}",
        "way", "text->Lua ms", "Lua->text ms", "round trip ms", "MiB/s"
    );
    for (way, [to, from]) in best {
        let round = *to + *from;
        println!(
            "{:<26} {:>12.1} {:>12.1} {:>14.1} {:>8.1}",
            way.name(),
            ms(*to),
            ms(*from),
            ms(round),
            t.input_len(*way) as f64 / MIB / round.as_secs_f64()
        );
    }
    let of = |way: Way| best.iter().find(|(w, _)| *w == way).map(|(_, b)| *b);
    let straight = of(Way::Straight).unwrap();
    let ratios = |other: [Duration; 2]| {
        let r = |o: Duration, s: Duration| o.as_secs_f64() / s.as_secs_f64();
        format!(
            "text->Lua {:.2}, Lua->text {:.2}, round trip {:.2}",
            r(other[0], straight[0]),
            r(other[1], straight[1]),
            r(other[0] + other[1], straight[0] + straight[1])
        )
    };
    println!("savechain straight's speed against (the other's time / straight's; above 1 straight is faster):");
    println!("  through a tree: {}", ratios(of(Way::Tree).unwrap()));
    match of(Way::Cjson) {
        Some(cjson) => println!(
            "  lua-cjson:      {} (goal: round trip above 1.00, while lossless)",
            ratios(cjson)
        ),
        None => println!("  lua-cjson:      not measured (see above)"),
    }
}

/// Checks that Lua's heap goes through the counting allocator: a table of strings made in
/// Lua, against what the Lua state says it uses.
fn check_lua_heap_counted() {
    let lua = Lua::new();
    let before = lua.used_memory();
    let (table, counted) = alloc::peak_of(|| {
        lua.load("local t = {} for i = 1, 200000 do t[i] = 'entry ' .. i end return t")
            .eval::<mlua::Table>()
            .unwrap()
    });
    let grown = lua.used_memory() - before;
    drop(table);
    let ok = counted as f64 >= 0.9 * grown as f64;
    println!(
        "Lua's heap through the counting allocator: Lua reports {:.1} MiB more in use, the \
         allocator counted {:.1} MiB: {}",
        grown as f64 / MIB,
        counted as f64 / MIB,
        if ok {
            "counted"
        } else {
            "NOT COUNTED, the figures below miss Lua's heap"
        }
    );
}

/// Peak heap of one way, `[text -> Lua, Lua -> text, round trip]`, each in a fresh Lua
/// state (for lua-cjson a fresh module, whose output buffer starts empty).
fn memory_of(t: &Texts, way: Way) -> [usize; 3] {
    let fresh = || -> (Lua, Option<CjsonSide>) {
        match way {
            Way::Cjson => {
                let side = CjsonSide::new(&t.json).unwrap();
                (side.cj.lua.clone(), Some(side))
            }
            _ => (new_lua(), None),
        }
    };
    let (lua, cjson) = fresh();
    lua.gc_collect().unwrap();
    let (value, into) = alloc::peak_of(|| to_lua_in(way, &lua, cjson.as_ref(), &t.text));
    let ((), out) = alloc::peak_of(|| drop(to_text_in(way, &lua, cjson.as_ref(), &value)));
    drop((value, cjson, lua));

    let (lua, cjson) = fresh();
    lua.gc_collect().unwrap();
    let ((), round) = alloc::peak_of(|| {
        let value = to_lua_in(way, &lua, cjson.as_ref(), &t.text);
        drop(to_text_in(way, &lua, cjson.as_ref(), &value));
    });
    [into, out, round]
}

fn print_memory(t: &Texts) {
    println!();
    check_lua_heap_counted();
    println!(
        "Peak heap (Rust's and Lua's{}), the input text excluded; multiples of each way's own \
         input text:",
        match t.cjson.as_ref().map(|s| &s.cj.c_allocations) {
            Some(Ok(_)) => ", and lua-cjson's malloc buffers",
            Some(Err(_)) => "; lua-cjson's own malloc buffers NOT counted",
            None => "",
        }
    );
    println!(
        "{:<26} {:>20} {:>20} {:>20}",
        "way", "text->Lua", "Lua->text", "round trip"
    );
    for way in t.ways() {
        let len = t.input_len(way) as f64;
        let cell =
            |bytes: usize| format!("{:.1} MiB ({:.2}x)", bytes as f64 / MIB, bytes as f64 / len);
        let [into, out, round] = memory_of(t, way);
        println!(
            "{:<26} {:>20} {:>20} {:>20}",
            way.name(),
            cell(into),
            cell(out),
            cell(round)
        );
    }
}

// ---------------------------------------------------------------------------------------

fn main() {
    let save = game::game_save(env::game_mib(game::MIB) << 20, game::SEED);
    let runs = env::runs(RUNS);
    let text = save.to_vec().unwrap();

    let bridge = env::part("bridge", PARTS).then(|| bridge(&save, &text));
    if let Some(b) = &bridge {
        print_bridge(b, runs, bridge_best_of(b, runs));
    }
    let texts = (env::part("text", PARTS) || env::part("memory", PARTS)).then(|| {
        println!();
        texts(&save)
    });
    if let Some(t) = &texts {
        check_texts(t);
        if env::part("text", PARTS) {
            print_texts(t, runs, &texts_best_of(t, runs));
        }
        if env::part("memory", PARTS) {
            print_memory(t);
        }
    }
    if env::table_only() {
        return;
    }

    let mut c = Criterion::default().configure_from_args();
    if let Some(b) = &bridge {
        let mut group = c.benchmark_group("game_lua");
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .throughput(Throughput::Bytes(b.text.len() as u64));
        group.bench_function("text_load", |g| g.iter(|| load(b)));
        group.bench_function("to_lua", |g| g.iter(|| into_lua(b)));
        group.bench_function("from_lua", |g| g.iter(|| out_of_lua(b)));
        group.finish();
    }
    if let Some(t) = texts.as_ref().filter(|_| env::part("text", PARTS)) {
        let mut group = c.benchmark_group("game_lua_text");
        group.sampling_mode(SamplingMode::Flat).sample_size(10);
        for way in t.ways() {
            let lua = t.lua(way);
            let id = match way {
                Way::Straight => "straight",
                Way::Tree => "tree",
                Way::Cjson => "cjson",
            };
            group.throughput(Throughput::Bytes(t.input_len(way) as u64));
            // A full collection before each iteration, outside the timing.
            group.bench_function(format!("{id}_to_lua"), |g| {
                g.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        lua.gc_collect().unwrap();
                        let start = Instant::now();
                        let value = black_box(t.to_lua(way));
                        total += start.elapsed();
                        drop(value);
                    }
                    total
                })
            });
            if way != Way::Tree {
                // Through a tree, the way back is the same as straight's.
                let value = t.to_lua(way);
                group.bench_function(format!("{id}_to_text"), |g| {
                    g.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            lua.gc_collect().unwrap();
                            let start = Instant::now();
                            drop(black_box(t.to_text(way, &value)));
                            total += start.elapsed();
                        }
                        total
                    })
                });
            }
            lua.gc_collect().unwrap();
        }
        group.finish();
    }
    c.final_summary();
}
