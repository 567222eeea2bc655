//! Throughput of the text codec against `serde_json::Value`, on the standard JSON corpora and
//! on a generated game save of about 50 MB.
//!
//! ```text
//! cargo bench --bench text                 # everything, a few minutes on 2 cores
//! cargo bench --bench text -- canada       # one document (criterion's filter)
//! cargo bench --bench text -- --quick      # criterion's quick mode; the table still prints
//! SAVECHAIN_BENCH_GAME_MB=10 cargo bench --bench text -- game   # a smaller game save
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench text         # only the table, ~1.5 min
//! ```
//!
//! For each document, both sides do the same job on their own text:
//!
//! - load: `Save::from_slice` on the canonical pretty text, against
//!   `serde_json::from_slice::<serde_json::Value>` on the same document as plain JSON (for a
//!   corpus, the save envelope around the original file; for the game save, the document
//!   with doubles as JSON numbers and byte strings as arrays of integers, written by
//!   `serde_json::to_vec_pretty`);
//! - save: `Save::to_vec` (pretty) and `Save::to_vec_compact`, against
//!   `serde_json::to_vec_pretty` and `serde_json::to_vec`;
//! - save_decimal: the decimal view (`Save::write` with `Style::Decimal`, what
//!   `save-upgrade show` prints), against `serde_json::to_vec_pretty`, which also writes
//!   doubles in decimal. The table ends with what `show` costs against `fmt` in memory:
//!   (load + save_decimal) / (load + save_pretty), goal at most 1.2.
//!
//! Criterion's throughput is each side's own text length. Since the texts differ in size
//! (a tagged hexfloat is longer than a decimal), the fair comparison is documents per
//! second, which the table at the end gives as a ratio. The table comes from a plain timing
//! loop in the same process (so it prints in `--quick` runs too): single runs of the two
//! sides alternate and the best of each counts, which on a shared virtual machine is much
//! steadier than criterion's means. Dropping the loaded tree and the written text is inside
//! the timed work on both sides.

#[path = "support/args.rs"]
mod args;
#[path = "support/game.rs"]
mod game;
#[path = "support/json.rs"]
mod json;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};
use savechain::text::Style;
use savechain::Save;

/// One document, on both sides.
struct Doc {
    name: String,
    save: Save,
    /// The canonical pretty text, what `Save::store` writes and `Save::load` reads.
    ours: Vec<u8>,
    ours_compact_len: usize,
    ours_decimal_len: usize,
    json: serde_json::Value,
    /// The plain JSON text serde_json loads.
    json_text: Vec<u8>,
    json_pretty_len: usize,
    json_compact_len: usize,
}

impl Doc {
    fn new(name: String, save: Save, json: serde_json::Value, json_text: Vec<u8>) -> Doc {
        let ours = save.to_vec().expect("the document can be written");
        let back = Save::from_slice(&ours).expect("the canonical text loads");
        assert!(
            back == save,
            "{name}: the canonical text does not load back the same save"
        );
        let parsed: serde_json::Value = serde_json::from_slice(&json_text).expect("valid JSON");
        assert!(
            parsed == json,
            "{name}: the JSON text does not load back the same value"
        );
        Doc {
            ours_compact_len: save.to_vec_compact().unwrap().len(),
            ours_decimal_len: decimal_view(&save).len(),
            json_pretty_len: serde_json::to_vec_pretty(&json).unwrap().len(),
            json_compact_len: serde_json::to_vec(&json).unwrap().len(),
            name,
            save,
            ours,
            json,
            json_text,
        }
    }

    /// A corpus file in a save envelope, as savechain reads it (plain decimals load as
    /// doubles) and as serde_json reads it.
    fn corpus(name: &str) -> Doc {
        let text = json::corpus_envelope(name);
        let save = Save::from_slice(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let json = serde_json::from_slice(&text).expect("the corpus is JSON");
        Doc::new(name.to_string(), save, json, text)
    }

    /// The generated game save of about `target` bytes.
    fn game(target: usize) -> Doc {
        let save = game::game_save(target, game::SEED);
        let json = json::save_to_json(&save);
        let json_text = serde_json::to_vec_pretty(&json).unwrap();
        Doc::new("game".to_string(), save, json, json_text)
    }
}

/// The save's decimal view.
fn decimal_view(save: &Save) -> Vec<u8> {
    let mut out = Vec::new();
    save.write(&mut out, Style::Decimal).unwrap();
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Load,
    SavePretty,
    SaveCompact,
    SaveDecimal,
}

const OPS: [Op; 4] = [Op::Load, Op::SavePretty, Op::SaveCompact, Op::SaveDecimal];

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Load => "load",
            Op::SavePretty => "save_pretty",
            Op::SaveCompact => "save_compact",
            Op::SaveDecimal => "save_decimal",
        }
    }

    /// The text each side reads or writes: (savechain, serde_json) lengths in bytes.
    fn lens(self, doc: &Doc) -> (usize, usize) {
        match self {
            Op::Load => (doc.ours.len(), doc.json_text.len()),
            Op::SavePretty => (doc.ours.len(), doc.json_pretty_len),
            Op::SaveCompact => (doc.ours_compact_len, doc.json_compact_len),
            Op::SaveDecimal => (doc.ours_decimal_len, doc.json_pretty_len),
        }
    }

    fn run_ours(self, doc: &Doc) {
        match self {
            Op::Load => drop(black_box(Save::from_slice(black_box(&doc.ours)).unwrap())),
            Op::SavePretty => drop(black_box(black_box(&doc.save).to_vec().unwrap())),
            Op::SaveCompact => drop(black_box(black_box(&doc.save).to_vec_compact().unwrap())),
            Op::SaveDecimal => drop(black_box(decimal_view(black_box(&doc.save)))),
        }
    }

    fn run_json(self, doc: &Doc) {
        match self {
            Op::Load => drop(black_box(
                serde_json::from_slice::<serde_json::Value>(black_box(&doc.json_text)).unwrap(),
            )),
            Op::SavePretty => drop(black_box(
                serde_json::to_vec_pretty(black_box(&doc.json)).unwrap(),
            )),
            Op::SaveCompact => drop(black_box(serde_json::to_vec(black_box(&doc.json)).unwrap())),
            Op::SaveDecimal => drop(black_box(
                serde_json::to_vec_pretty(black_box(&doc.json)).unwrap(),
            )),
        }
    }
}

#[derive(Clone)]
struct Row {
    doc: String,
    op: Op,
    ours_len: usize,
    json_len: usize,
    ours: Duration,
    json: Duration,
}

const MIB: f64 = 1024.0 * 1024.0;

fn mib_per_s(len: usize, t: Duration) -> f64 {
    len as f64 / MIB / t.as_secs_f64()
}

/// Times every operation on both sides: single runs of each side alternate, at least
/// `min_runs` of each and for at least `budget`, and the best (shortest) of each side
/// counts. Alternating single runs, rather than a batch of one side then the other, keeps
/// a burst of load from other processes from favouring one side.
fn time_doc(doc: &Doc, min_runs: usize, budget: Duration) -> Vec<Row> {
    OPS.iter()
        .map(|&op| {
            op.run_ours(doc); // warm-up
            op.run_json(doc);
            let (mut ours, mut json) = (Duration::MAX, Duration::MAX);
            let start = Instant::now();
            let mut runs = 0;
            while runs < min_runs || start.elapsed() < budget {
                let t = Instant::now();
                op.run_ours(doc);
                ours = ours.min(t.elapsed());
                let t = Instant::now();
                op.run_json(doc);
                json = json.min(t.elapsed());
                runs += 1;
            }
            let (ours_len, json_len) = op.lens(doc);
            Row {
                doc: doc.name.clone(),
                op,
                ours_len,
                json_len,
                ours,
                json,
            }
        })
        .collect()
}

fn print_table(docs: &[Doc], rows: &[Row]) {
    println!();
    println!("Text sizes (bytes):");
    println!(
        "{:<14} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "document", "ours pretty", "ours compact", "json loaded", "json pretty", "json compact"
    );
    for d in docs {
        println!(
            "{:<14} {:>12} {:>12} {:>12} {:>12} {:>12}",
            d.name,
            d.ours.len(),
            d.ours_compact_len,
            d.json_text.len(),
            d.json_pretty_len,
            d.json_compact_len
        );
    }
    println!();
    println!("Throughput (MiB/s of each side's own text; best of N runs) and speed ratio");
    println!("(ratio = savechain documents/s ÷ serde_json documents/s for the same document,");
    println!(
        " the fair comparison since the texts differ in size; > 1 means savechain is faster):"
    );
    println!(
        "{:<14} {:<13} {:>13} {:>13} {:>11} {:>11} {:>7}",
        "document", "operation", "savechain", "serde_json", "ours ms", "json ms", "ratio"
    );
    for r in rows {
        println!(
            "{:<14} {:<13} {:>9.1} MiB/s {:>9.1} MiB/s {:>11.2} {:>11.2} {:>6.2}x",
            r.doc,
            r.op.name(),
            mib_per_s(r.ours_len, r.ours),
            mib_per_s(r.json_len, r.json),
            r.ours.as_secs_f64() * 1e3,
            r.json.as_secs_f64() * 1e3,
            r.json.as_secs_f64() / r.ours.as_secs_f64(),
        );
    }
    // `show` against `fmt`, in memory: both load; one writes the view, the other the
    // canonical text.
    for d in docs {
        let time = |op| {
            rows.iter()
                .find(|r| r.doc == d.name && r.op == op)
                .map(|r| r.ours)
        };
        if let (Some(load), Some(pretty), Some(decimal)) =
            (time(Op::Load), time(Op::SavePretty), time(Op::SaveDecimal))
        {
            println!(
                "{:<14} show / fmt = (load + save_decimal) / (load + save_pretty) = {:.2}  goal: at most 1.20",
                d.name,
                (load + decimal).as_secs_f64() / (load + pretty).as_secs_f64()
            );
        }
    }
}

fn bench_doc<M: criterion::measurement::Measurement>(
    group: &mut BenchmarkGroup<M>,
    doc: &Doc,
    op: Op,
) {
    let (ours_len, json_len) = op.lens(doc);
    group.throughput(Throughput::Bytes(ours_len as u64));
    group.bench_function("savechain", |b| b.iter(|| op.run_ours(doc)));
    group.throughput(Throughput::Bytes(json_len as u64));
    group.bench_function("serde_json", |b| b.iter(|| op.run_json(doc)));
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
    // A document is prepared when one of its benchmark ids matches a filter as a substring
    // or a filter (say `canada|game`) names it.
    let wanted = |name: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                f.contains(name)
                    || OPS.iter().any(|op| {
                        ["savechain", "serde_json"]
                            .iter()
                            .any(|side| format!("{name}/{}/{side}", op.name()).contains(f.as_str()))
                    })
            })
    };
    let game_mib = match std::env::var("SAVECHAIN_BENCH_GAME_MB") {
        Ok(v) => v
            .parse()
            .expect("SAVECHAIN_BENCH_GAME_MB is a number of MiB"),
        Err(_) if bench_mode || table_only => game::MIB,
        Err(_) => 1,
    };

    let mut criterion = Criterion::default().configure_from_args();
    let mut docs = Vec::new();
    let mut rows = Vec::new();
    let names = json::CORPORA
        .iter()
        .map(|s| s.to_string())
        .chain(["game".to_string()]);
    for name in names.filter(|n| wanted(n)) {
        let started = Instant::now();
        let doc = if name == "game" {
            Doc::game(game_mib << 20)
        } else {
            Doc::corpus(&name)
        };
        println!(
            "{}: savechain text {} bytes, serde_json text {} bytes (prepared in {:.1} s)",
            doc.name,
            doc.ours.len(),
            doc.json_text.len(),
            started.elapsed().as_secs_f64()
        );
        let big = doc.ours.len() > 10 << 20;
        let doc_rows = if timing {
            let r = if big {
                time_doc(&doc, 5, Duration::ZERO)
            } else {
                time_doc(&doc, 10, Duration::from_secs(2))
            };
            rows.extend(r.iter().cloned());
            r
        } else {
            Vec::new()
        };
        for op in OPS.into_iter().filter(|_| !table_only) {
            let mut group = criterion.benchmark_group(format!("{}/{}", doc.name, op.name()));
            // Flat sampling: the same number of iterations in every sample, which suits
            // benchmarks of milliseconds to a second.
            group
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(500));
            if big {
                // About 10 runs a side: the measurement time comes from the timing above, so
                // that criterion does not warn it cannot finish in time.
                let slowest = doc_rows
                    .iter()
                    .find(|r| r.op == op)
                    .map_or(Duration::from_millis(500), |r| r.ours.max(r.json));
                group
                    .sample_size(10)
                    .measurement_time((slowest * 16).max(Duration::from_secs(1)));
            } else {
                group
                    .sample_size(20)
                    .measurement_time(Duration::from_millis(1500));
            }
            bench_doc(&mut group, &doc, op);
            group.finish();
        }
        docs.push(doc);
    }
    criterion.final_summary();
    if timing {
        print_table(&docs, &rows);
    }
}
