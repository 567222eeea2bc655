//! The measurements of issue 11 ("one fast reader"): savechain's text codec side by side
//! with serde_json (`Value`, `float_roundtrip`), sonic-rs and simd-json, in one process.
//!
//! ```text
//! cargo bench --bench text_compare                       # criterion groups + tables
//! cargo bench --bench text_compare -- game               # one document (criterion's filter)
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench text_compare    # only the tables
//! SAVECHAIN_BENCH_GAME_MB=8 SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench text_compare
//! SAVECHAIN_BENCH_OPS=load SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench text_compare -- twitter
//! ```
//!
//! `SAVECHAIN_BENCH_OPS` names the operations timed for the tables (comma-separated, all
//! four unless given): the loads alone take a third of the time.
//!
//! Documents: `canada`, `citm_catalog`, `twitter` (the standard corpora, each the `data` of
//! a save) and `game`, the generated save of `support/game.rs` (50 MiB of canonical text
//! unless `SAVECHAIN_BENCH_GAME_MB` says otherwise). savechain reads its canonical pretty
//! text (doubles as `["d", "<hexfloat>"]`); the JSON libraries read the same document as
//! plain JSON (for a corpus the envelope around the original file; for the game save the
//! document with decimal doubles and byte strings as arrays of integers, written by
//! `serde_json::to_vec_pretty`).
//!
//! Operations, each library doing the same job on its own text and its own tree:
//!
//! - `load`: `Save::from_slice`; `text::Document::parse` (savechain's borrowed document,
//!   the `tape` column); `serde_json::from_slice::<serde_json::Value>`;
//!   `sonic_rs::from_slice::<sonic_rs::Value>`; `simd_json::to_owned_value` and
//!   `simd_json::to_borrowed_value`, which parse in place, each on a fresh copy of the text
//!   (the copy is part of their timed job, as it is of a program that keeps its text; the
//!   size table gives what the copy alone costs);
//! - `save_pretty`: `Save::to_vec`; `serde_json::to_vec_pretty`; `sonic_rs::to_vec_pretty`;
//!   `simd_json::to_vec_pretty`, each of its own library's tree;
//! - `load_save`: a load and then a pretty write of what was loaded (for the tape,
//!   `Document::to_vec`, which writes the bytes `Save::to_vec` writes);
//! - `typed` (the game save only): `Save::data_from_slice::<State>` against
//!   `from_slice::<StateJsonEnvelope>` of serde_json, sonic-rs and simd-json (serde), with
//!   `State` of `support/state.rs`.
//!
//! Dropping the loaded tree and the written text is inside the timed work everywhere. The
//! tables come from plain timing loops: single runs of every library alternate and the best
//! of each counts. The ratio columns are the other library's time divided by savechain's
//! (documents per second, since the texts differ in size): above 1, savechain is faster.
//!
//! Then peak heap memory of a load and a pretty write (and of a typed load) from a counting
//! allocator, the input text excluded; and hostile nesting: the same big array of star
//! systems under 250 `["a", [...]]` escapes and under as many plain nested arrays, and
//! arrays nested 500 deep against flat data, all texts of the same size, loaded as a
//! `Save` and as a `text::Document`.

#[path = "support/alloc.rs"]
mod alloc;
#[path = "support/args.rs"]
mod args;
#[path = "support/game.rs"]
mod game;
#[path = "support/json.rs"]
mod json;
#[path = "support/state.rs"]
mod state;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use savechain::text::Document;
use savechain::{Save, Value};
use state::{State, StateJsonEnvelope};

/// Size of the save whose star systems make the big array of the hostile texts.
const HOSTILE_MIB: usize = 8;
/// Escapes (and plain array levels) above the big array.
const ESCAPES: usize = 250;
/// How deep the arrays of the deep text nest (`MAX_DEPTH` is 512).
const DEEP: usize = 500;
const MIB: f64 = 1024.0 * 1024.0;

// Peak heap: the shared counting allocator (`support/alloc.rs`).
#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

// ---------------------------------------------------------------------------------------
// The libraries and the documents.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lib {
    Savechain,
    /// savechain's borrowed document, `text::Document` (loads and load + save).
    Tape,
    SerdeJson,
    Sonic,
    Simd,
    /// simd-json's borrowed tree, for loads only.
    SimdBorrowed,
}

const LIBS: [Lib; 6] = [
    Lib::Savechain,
    Lib::Tape,
    Lib::SerdeJson,
    Lib::Sonic,
    Lib::Simd,
    Lib::SimdBorrowed,
];

impl Lib {
    fn name(self) -> &'static str {
        match self {
            Lib::Savechain => "savechain",
            Lib::Tape => "savechain-tape",
            Lib::SerdeJson => "serde_json",
            Lib::Sonic => "sonic-rs",
            Lib::Simd => "simd-json",
            Lib::SimdBorrowed => "simd-json-borrowed",
        }
    }
}

struct Doc {
    name: String,
    save: Save,
    /// The canonical pretty text, what `Save::store` writes and `Save::load` reads.
    ours: Vec<u8>,
    /// The same document as plain JSON, what the JSON libraries read.
    json_text: Vec<u8>,
    json: serde_json::Value,
    sonic: sonic_rs::Value,
    simd: simd_json::OwnedValue,
    /// Whether the typed `State` of `support/state.rs` describes the document.
    typed: bool,
}

impl Doc {
    fn corpus(name: &str) -> Doc {
        let text = json::corpus_envelope(name);
        let save = Save::from_slice(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        Doc::new(name, save, text, false)
    }

    fn game(target: usize) -> Doc {
        let save = game::game_save(target, game::SEED);
        let json_text = serde_json::to_vec_pretty(&json::save_to_json(&save)).unwrap();
        Doc::new("game", save, json_text, true)
    }

    /// Loads each library's tree and checks that all of them hold the same document, and
    /// that what each writes loads back the same.
    fn new(name: &str, save: Save, json_text: Vec<u8>, typed: bool) -> Doc {
        let ours = save.to_vec().expect("the document can be written");
        assert!(
            Save::from_slice(&ours).unwrap() == save,
            "{name}: savechain"
        );
        assert!(tape_load_save(&ours) == ours, "{name}: savechain-tape");
        let json: serde_json::Value = serde_json::from_slice(&json_text).expect("valid JSON");
        let sonic: sonic_rs::Value = sonic_rs::from_slice(&json_text).expect("sonic-rs loads");
        let simd = simd_json::to_owned_value(&mut json_text.clone()).expect("simd-json loads");
        let same = |what: &str, other: serde_json::Value| {
            assert!(other == json, "{name}: {what} is not serde_json's document");
        };
        same("sonic-rs", serde_json::to_value(&sonic).unwrap());
        same("simd-json", serde_json::to_value(&simd).unwrap());
        let reread = |text: Vec<u8>| serde_json::from_slice::<serde_json::Value>(&text).unwrap();
        same(
            "sonic-rs pretty",
            reread(sonic_rs::to_vec_pretty(&sonic).unwrap()),
        );
        same(
            "simd-json pretty",
            reread(simd_json::to_vec_pretty(&simd).unwrap()),
        );
        if typed {
            let ours = Save::data_from_slice::<State>(&ours).expect("savechain typed");
            let serde = serde_json::from_slice::<StateJsonEnvelope>(&json_text).unwrap();
            let sonic = sonic_rs::from_slice::<StateJsonEnvelope>(&json_text).unwrap();
            let simd =
                simd_json::serde::from_slice::<StateJsonEnvelope>(&mut json_text.clone()).unwrap();
            assert!(ours.same_except_lua(&serde.data), "{name}: typed savechain");
            assert!(sonic == serde, "{name}: typed sonic-rs");
            assert!(simd == serde, "{name}: typed simd-json");
        }
        Doc {
            name: name.to_string(),
            save,
            ours,
            json_text,
            json,
            sonic,
            simd,
            typed,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Operations.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Load,
    SavePretty,
    LoadSave,
    Typed,
}

const OPS: [Op; 4] = [Op::Load, Op::SavePretty, Op::LoadSave, Op::Typed];

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Load => "load",
            Op::SavePretty => "save_pretty",
            Op::LoadSave => "load_save",
            Op::Typed => "typed",
        }
    }

    fn applies(self, doc: &Doc) -> bool {
        self != Op::Typed || doc.typed
    }

    fn libs(self) -> &'static [Lib] {
        const TREES: [Lib; 4] = [Lib::Savechain, Lib::SerdeJson, Lib::Sonic, Lib::Simd];
        const WITH_TAPE: [Lib; 5] = [
            Lib::Savechain,
            Lib::Tape,
            Lib::SerdeJson,
            Lib::Sonic,
            Lib::Simd,
        ];
        match self {
            Op::Load => &LIBS,
            Op::LoadSave => &WITH_TAPE,
            _ => &TREES,
        }
    }

    /// The text `lib` reads or writes, for criterion's throughput.
    fn text_len(self, doc: &Doc, lib: Lib) -> usize {
        match lib {
            Lib::Savechain | Lib::Tape => doc.ours.len(),
            _ => doc.json_text.len(),
        }
    }

    /// One run of the operation by `lib`, dropping what it made.
    fn run(self, doc: &Doc, lib: Lib) {
        let ours = black_box(&doc.ours[..]);
        let text = black_box(&doc.json_text[..]);
        match (self, lib) {
            (Op::Load, Lib::Savechain) => drop(black_box(Save::from_slice(ours).unwrap())),
            (Op::Load, Lib::Tape) => drop(black_box(Document::parse(ours).unwrap())),
            (Op::Load, Lib::SerdeJson) => drop(black_box(serde_load(text))),
            (Op::Load, Lib::Sonic) => drop(black_box(sonic_load(text))),
            (Op::Load, Lib::Simd) => drop(black_box(simd_load(text))),
            (Op::Load, Lib::SimdBorrowed) => {
                let mut copy = text.to_vec();
                drop(black_box(simd_json::to_borrowed_value(&mut copy).unwrap()));
            }
            (Op::SavePretty, Lib::Savechain) => drop(black_box(black_box(&doc.save).to_vec())),
            (Op::SavePretty, Lib::SerdeJson) => drop(black_box(serde_write(&doc.json))),
            (Op::SavePretty, Lib::Sonic) => drop(black_box(sonic_write(&doc.sonic))),
            (Op::SavePretty, Lib::Simd) => drop(black_box(simd_write(&doc.simd))),
            (Op::LoadSave, Lib::Savechain) => drop(black_box(ours_load_save(ours))),
            (Op::LoadSave, Lib::Tape) => drop(black_box(tape_load_save(ours))),
            (Op::LoadSave, Lib::SerdeJson) => drop(black_box(serde_write(&serde_load(text)))),
            (Op::LoadSave, Lib::Sonic) => drop(black_box(sonic_write(&sonic_load(text)))),
            (Op::LoadSave, Lib::Simd) => drop(black_box(simd_write(&simd_load(text)))),
            (Op::Typed, Lib::Savechain) => {
                drop(black_box(Save::data_from_slice::<State>(ours).unwrap()))
            }
            (Op::Typed, Lib::SerdeJson) => drop(black_box(
                serde_json::from_slice::<StateJsonEnvelope>(text).unwrap(),
            )),
            (Op::Typed, Lib::Sonic) => drop(black_box(
                sonic_rs::from_slice::<StateJsonEnvelope>(text).unwrap(),
            )),
            (Op::Typed, Lib::Simd) => {
                let mut copy = text.to_vec();
                drop(black_box(
                    simd_json::serde::from_slice::<StateJsonEnvelope>(&mut copy).unwrap(),
                ));
            }
            (_, Lib::SimdBorrowed) => unreachable!("loads only"),
            (_, Lib::Tape) => unreachable!("loads and load + save only"),
        }
    }
}

fn ours_load_save(text: &[u8]) -> Vec<u8> {
    Save::from_slice(text).unwrap().to_vec().unwrap()
}

/// The borrowed document, and its canonical pretty text: the same bytes as `Save::to_vec`.
fn tape_load_save(text: &[u8]) -> Vec<u8> {
    Document::parse(text)
        .unwrap()
        .to_vec(savechain::text::Style::Pretty)
        .unwrap()
}

fn serde_load(text: &[u8]) -> serde_json::Value {
    serde_json::from_slice(text).unwrap()
}

fn serde_write(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec_pretty(black_box(value)).unwrap()
}

fn sonic_load(text: &[u8]) -> sonic_rs::Value {
    sonic_rs::from_slice(text).unwrap()
}

fn sonic_write(value: &sonic_rs::Value) -> Vec<u8> {
    sonic_rs::to_vec_pretty(black_box(value)).unwrap()
}

/// simd-json parses in place: a copy of the text first, as part of the job.
fn simd_load(text: &[u8]) -> simd_json::OwnedValue {
    simd_json::to_owned_value(&mut text.to_vec()).unwrap()
}

fn simd_write(value: &simd_json::OwnedValue) -> Vec<u8> {
    simd_json::to_vec_pretty(black_box(value)).unwrap()
}

// ---------------------------------------------------------------------------------------
// Timing.

/// Single runs of every job alternate, at least `min_runs` of each and for at least
/// `budget`; the best (shortest) run of each counts. Alternating single runs, rather than a
/// batch of one then the other, keeps a burst of load from other processes from favouring
/// one side.
fn best_of(jobs: &[&dyn Fn()], min_runs: usize, budget: Duration) -> Vec<Duration> {
    for job in jobs {
        job(); // warm-up
    }
    let mut best = vec![Duration::MAX; jobs.len()];
    let start = Instant::now();
    let mut runs = 0;
    while runs < min_runs || start.elapsed() < budget {
        for (job, best) in jobs.iter().zip(&mut best) {
            let t = Instant::now();
            job();
            *best = (*best).min(t.elapsed());
        }
        runs += 1;
    }
    best
}

/// How many runs a document's timings take: few for a big document, more for a small one.
fn runs_for(len: usize) -> (usize, Duration) {
    if len > 10 << 20 {
        (5, Duration::ZERO)
    } else {
        (10, Duration::from_secs(2))
    }
}

struct Row {
    doc: String,
    op: Op,
    /// Best time of each library of `op.libs()`, in that order.
    times: Vec<Duration>,
}

impl Row {
    fn time(&self, lib: Lib) -> Option<Duration> {
        self.op
            .libs()
            .iter()
            .position(|&l| l == lib)
            .map(|i| self.times[i])
    }
}

fn time_doc(doc: &Doc) -> Vec<Row> {
    let (min_runs, budget) = runs_for(doc.ours.len());
    let ops = std::env::var("SAVECHAIN_BENCH_OPS").ok();
    let timed = |op: &Op| {
        ops.as_deref()
            .is_none_or(|ops| ops.split(',').any(|name| name.trim() == op.name()))
    };
    OPS.iter()
        .filter(|op| op.applies(doc) && timed(op))
        .map(|&op| {
            let jobs: Vec<Box<dyn Fn() + '_>> = op
                .libs()
                .iter()
                .map(|&lib| Box::new(move || op.run(doc, lib)) as Box<dyn Fn()>)
                .collect();
            let jobs: Vec<&dyn Fn()> = jobs.iter().map(|j| &**j).collect();
            Row {
                doc: doc.name.clone(),
                op,
                times: best_of(&jobs, min_runs, budget),
            }
        })
        .collect()
}

fn ms(t: Duration) -> f64 {
    t.as_secs_f64() * 1e3
}

fn print_sizes(docs: &[Doc]) {
    println!();
    println!("Text sizes (bytes), and the best time of a plain copy of the JSON text:");
    println!(
        "{:<14} {:>12} {:>12} {:>12} {:>10}",
        "document", "savechain", "JSON loaded", "JSON pretty", "copy ms"
    );
    for d in docs {
        let copy = best_of(
            &[&|| drop(black_box(d.json_text.clone()))],
            10,
            Duration::ZERO,
        );
        println!(
            "{:<14} {:>12} {:>12} {:>12} {:>10.2}",
            d.name,
            d.ours.len(),
            d.json_text.len(),
            serde_json::to_vec_pretty(&d.json).unwrap().len(),
            ms(copy[0]),
        );
    }
}

fn print_times(rows: &[Row]) {
    println!();
    println!("Best times in ms, and savechain's speed against each library (its time ÷");
    println!("savechain's; > 1 means savechain is faster). simd-json parses a copy of the text.");
    println!("The tape columns are the same ratios for savechain's borrowed document (tape).");
    println!(
        "{:<13} {:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} | {:>8} {:>8} {:>8} | {:>10} {:>10}",
        "document",
        "operation",
        "savechain",
        "tape",
        "serde_json",
        "sonic-rs",
        "simd-json",
        "simd borr.",
        "vs serde",
        "vs sonic",
        "vs simd",
        "tape/serde",
        "tape/sonic"
    );
    for r in rows {
        let cell = |lib| {
            r.time(lib)
                .map_or("-".to_string(), |t| format!("{:.2}", ms(t)))
        };
        let ratio_to = |lib, ours: Lib| match (r.time(lib), r.time(ours)) {
            (Some(t), Some(ours)) => format!("{:.2}x", t.as_secs_f64() / ours.as_secs_f64()),
            _ => "-".to_string(),
        };
        let ratio = |lib| ratio_to(lib, Lib::Savechain);
        println!(
            "{:<13} {:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} | {:>8} {:>8} {:>8} | {:>10} {:>10}",
            r.doc,
            r.op.name(),
            cell(Lib::Savechain),
            cell(Lib::Tape),
            cell(Lib::SerdeJson),
            cell(Lib::Sonic),
            cell(Lib::Simd),
            cell(Lib::SimdBorrowed),
            ratio(Lib::SerdeJson),
            ratio(Lib::Sonic),
            ratio(Lib::Simd),
            ratio_to(Lib::SerdeJson, Lib::Tape),
            ratio_to(Lib::Sonic, Lib::Tape),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Peak memory.

/// Peak heap of a load followed by a pretty write of what was loaded (and, for the game
/// save, of a typed load), per library, the input text excluded (it is allocated before).
fn print_memory(docs: &[Doc]) {
    println!();
    println!("Peak heap in MiB (input text excluded; simd-json's copy of it included), and as");
    println!("a multiple of each library's own input text (add 1 for the text itself):");
    println!(
        "{:<13} {:<12} {:>16} {:>16} {:>16} {:>16} {:>16}",
        "document", "operation", "savechain", "tape", "serde_json", "sonic-rs", "simd-json"
    );
    for doc in docs {
        for op in [Op::LoadSave, Op::Typed]
            .into_iter()
            .filter(|op| op.applies(doc))
        {
            let cells: Vec<String> = [
                Lib::Savechain,
                Lib::Tape,
                Lib::SerdeJson,
                Lib::Sonic,
                Lib::Simd,
            ]
            .iter()
            .map(|&lib| {
                if !op.libs().contains(&lib) {
                    return "-".to_string();
                }
                let ((), peak) = alloc::peak_of(|| op.run(doc, lib));
                let len = op.text_len(doc, lib);
                format!(
                    "{:.1} ({:.2}x)",
                    peak as f64 / MIB,
                    peak as f64 / len as f64
                )
            })
            .collect();
            println!(
                "{:<13} {:<12} {:>16} {:>16} {:>16} {:>16} {:>16}",
                doc.name,
                op.name(),
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4]
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Hostile nesting.

/// Texts of one size that savechain loads: the same big array of star systems flat as a
/// save's data, under `ESCAPES` plain nested array levels and under `ESCAPES` escapes; and
/// arrays nested `DEEP` deep.
struct Hostile {
    texts: Vec<(&'static str, Vec<u8>)>,
    /// How many chains of `DEEP` arrays the deep text holds.
    deep_chains: usize,
}

impl Hostile {
    fn new(target: usize) -> Hostile {
        let save = game::game_save(target, game::SEED);
        let Value::Object(data) = &save.data else {
            unreachable!("the data is an object")
        };
        let mut big = savechain::text::to_vec(&data["systems"]).unwrap();
        big.pop(); // the final newline

        // Each escape level wraps a one-element array holding the next level,
        // `["a", [["a", [ ... ]]]]`, so every level is an escape the reader must recognise
        // (an escape's content is read as a plain array, its elements as usual); the
        // innermost, `["a", <big>]`, escapes the big array itself. The plain levels are the
        // same bytes with the `"a",` blanked out: `[     [[     [ ... ]]]`.
        let mut escaped = Vec::new();
        let mut nested = Vec::new();
        for level in 0..ESCAPES {
            let last = level + 1 == ESCAPES;
            escaped.extend_from_slice(if last { b"[\"a\", " } else { b"[\"a\", [" });
            nested.extend_from_slice(if last { b"[     " } else { b"[     [" });
        }
        for text in [&mut escaped, &mut nested] {
            text.extend_from_slice(&big);
            text.push(b']');
            text.extend(b"]]".repeat(ESCAPES - 1));
        }
        let size = escaped.len();

        // Chains of `DEEP` arrays around a tagged double, `[[[...["d", "0x1.8p+0"]...]]]`,
        // as the elements of one array.
        let chain = format!(
            "{}[\"d\", \"0x1.8p+0\"]{}",
            "[".repeat(DEEP),
            "]".repeat(DEEP)
        );
        let mut deep = b"[".to_vec();
        let mut deep_chains = 0;
        while deep.len() + chain.len() + 3 < size {
            if deep.len() > 1 {
                deep.extend_from_slice(b", ");
            }
            deep.extend_from_slice(chain.as_bytes());
            deep_chains += 1;
        }
        deep.push(b']');

        let texts = [
            ("flat", big),
            ("nested", nested),
            ("escaped", escaped),
            ("deep", deep),
        ]
        .into_iter()
        .map(|(name, data)| {
            // Spaces after the data make every text the same size.
            let mut text = b"{\"data\": ".to_vec();
            text.extend_from_slice(&data);
            text.resize(text.len() + size - data.len(), b' ');
            text.extend_from_slice(b", \"meta\": {\"version\": 1, \"writer\": \"0.1.0\"}}\n");
            let save = Save::from_slice(&text)
                .unwrap_or_else(|e| panic!("hostile text {name} does not load: {e}"));
            // Each escape level loads as one array around the next one; each plain level
            // as two.
            let levels = match name {
                "escaped" => ESCAPES - 1,
                "nested" => 2 * ESCAPES - 1,
                _ => 0,
            };
            assert_eq!(
                wrappers(&save.data),
                levels,
                "{name}: levels above the data"
            );
            (name, text)
        })
        .collect();
        Hostile { texts, deep_chains }
    }

    /// The deep text's `Value` tree made in code, no text read: what its allocations and
    /// frees alone cost, one a level.
    fn build_deep(chains: usize) {
        let tree = Value::Array(
            (0..chains)
                .map(|_| (0..DEEP).fold(Value::Double(1.5), |v, _| Value::Array(vec![v])))
                .collect(),
        );
        drop(black_box(tree));
    }

    fn load(text: &[u8]) {
        drop(black_box(Save::from_slice(black_box(text)).unwrap()));
    }

    /// The same text into the borrowed document.
    fn load_tape(text: &[u8]) {
        drop(black_box(Document::parse(black_box(text)).unwrap()));
    }

    /// The best time of each text's load, then of each text's tape load, then of the deep
    /// tree built in code.
    fn time(&self) -> Vec<Duration> {
        let loads: [fn(&[u8]); 2] = [Hostile::load, Hostile::load_tape];
        let mut jobs: Vec<Box<dyn Fn() + '_>> = loads
            .iter()
            .flat_map(|&load| {
                self.texts
                    .iter()
                    .map(move |(_, text)| Box::new(move || load(text)) as Box<dyn Fn()>)
            })
            .collect();
        let chains = self.deep_chains;
        jobs.push(Box::new(move || Hostile::build_deep(chains)));
        let jobs: Vec<&dyn Fn()> = jobs.iter().map(|j| &**j).collect();
        best_of(&jobs, 5, Duration::from_secs(2))
    }

    fn print(&self, times: &[Duration]) {
        let len = self.texts[0].1.len();
        println!();
        println!(
            "Hostile nesting: savechain load of texts of {len} bytes each (goal: at most 2x plain)"
        );
        let plain_of = |name: &str| match name {
            "escaped" => Some(("nested", 1)),
            "nested" | "deep" => Some(("flat", 0)),
            _ => None,
        };
        println!("{:<16} {:>10} {:>10}   ratio", "text", "ms", "MiB/s");
        let count = self.texts.len();
        for (load, suffix) in [(0, ""), (1, " (tape)")] {
            let times = &times[load * count..(load + 1) * count];
            for ((name, _), &t) in self.texts.iter().zip(times) {
                let ratio = plain_of(name).map_or(String::new(), |(plain, i)| {
                    format!(
                        "{:.2}x {name}/{plain}",
                        t.as_secs_f64() / times[i].as_secs_f64()
                    )
                });
                println!(
                    "{:<16} {:>10.2} {:>10.1}   {ratio}",
                    format!("{name}{suffix}"),
                    ms(t),
                    len as f64 / MIB / t.as_secs_f64()
                );
            }
        }
        let built = times[2 * count];
        println!(
            "The deep text's `Value` tree made in code, no text read ({} arrays, each its own \
             allocation): {:.2} ms, {:.2}x flat",
            self.deep_chains * DEEP + 1,
            ms(built),
            built.as_secs_f64() / times[0].as_secs_f64()
        );
    }
}

/// How many one-element arrays wrap the innermost array of several elements.
fn wrappers(value: &Value) -> usize {
    match value {
        Value::Array(items) if items.len() == 1 => 1 + wrappers(&items[0]),
        _ => 0,
    }
}

// ---------------------------------------------------------------------------------------

fn env_mib(name: &str) -> Option<usize> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} is a number of MiB"))
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    // `cargo bench` passes --bench; without it (`cargo test --benches`) criterion runs each
    // benchmark once as a test, so keep everything small.
    let bench_mode = has("--bench");
    let table_only = std::env::var_os("SAVECHAIN_BENCH_TABLE_ONLY").is_some();
    let timing = (bench_mode || table_only)
        && !has("--list")
        && !args.iter().any(|a| a.starts_with("--profile-time"));
    let filters = args::filters(&args);
    // A document is prepared when a filter names it or is part of one of its benchmark ids
    // (`game/load/sonic-rs`).
    let wanted = |name: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                f.contains(name)
                    || OPS.iter().any(|op| {
                        LIBS.iter().any(|lib| {
                            format!("{name}/{}/{}", op.name(), lib.name()).contains(f.as_str())
                        })
                    })
            })
    };
    let game_mib = env_mib("SAVECHAIN_BENCH_GAME_MB").unwrap_or(if bench_mode || table_only {
        game::MIB
    } else {
        1
    });

    let mut criterion = Criterion::default().configure_from_args();
    let mut docs = Vec::new();
    let mut rows = Vec::new();
    let names = json::CORPORA.iter().copied().chain(["game"]);
    for name in names.filter(|n| wanted(n)) {
        let started = Instant::now();
        let doc = if name == "game" {
            Doc::game(game_mib << 20)
        } else {
            Doc::corpus(name)
        };
        println!(
            "{}: savechain text {} bytes, JSON text {} bytes (prepared and checked in {:.1} s)",
            doc.name,
            doc.ours.len(),
            doc.json_text.len(),
            started.elapsed().as_secs_f64()
        );
        let doc_rows = if timing { time_doc(&doc) } else { Vec::new() };
        let big = doc.ours.len() > 10 << 20;
        for op in OPS.into_iter().filter(|op| op.applies(&doc) && !table_only) {
            let mut group = criterion.benchmark_group(format!("{}/{}", doc.name, op.name()));
            group
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(500));
            if big {
                // About 10 runs a library: the measurement time comes from the timing above,
                // so that criterion does not warn it cannot finish in time.
                let slowest = doc_rows
                    .iter()
                    .find(|r| r.op == op)
                    .map_or(Duration::from_millis(500), |r| {
                        r.times.iter().copied().max().unwrap()
                    });
                group
                    .sample_size(10)
                    .measurement_time((slowest * 12).max(Duration::from_secs(1)));
            } else {
                group
                    .sample_size(20)
                    .measurement_time(Duration::from_millis(1000));
            }
            for &lib in op.libs() {
                group.throughput(Throughput::Bytes(op.text_len(&doc, lib) as u64));
                group.bench_function(lib.name(), |b| b.iter(|| op.run(&doc, lib)));
            }
            group.finish();
        }
        rows.extend(doc_rows);
        docs.push(doc);
    }

    let hostile = if wanted("hostile") {
        let started = Instant::now();
        let hostile = Hostile::new(game_mib.min(HOSTILE_MIB) << 20);
        println!(
            "hostile: 4 texts of {} bytes (prepared and checked in {:.1} s)",
            hostile.texts[0].1.len(),
            started.elapsed().as_secs_f64()
        );
        let times = if timing { hostile.time() } else { Vec::new() };
        if !table_only {
            let mut group = criterion.benchmark_group("hostile/load");
            group
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(500))
                .sample_size(10);
            for (i, (name, text)) in hostile.texts.iter().enumerate() {
                // About 10 runs of the slow texts, as for the game save.
                if let Some(&t) = times.get(i) {
                    group.measurement_time((t * 12).max(Duration::from_secs(5)));
                }
                group.throughput(Throughput::Bytes(text.len() as u64));
                group.bench_function(*name, |b| b.iter(|| Hostile::load(text)));
            }
            group.finish();
        }
        Some((hostile, times))
    } else {
        None
    };
    criterion.final_summary();

    if timing {
        print_sizes(&docs);
        print_times(&rows);
        print_memory(&docs);
        if let Some((hostile, times)) = hostile {
            hostile.print(&times);
        }
    }
}
