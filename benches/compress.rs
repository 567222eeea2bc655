//! Compressed saves (issue 30): the 50 MiB game save in zstd and gzip against plain text,
//! against the `zstd` and `gzip` programs and against the codec crates called directly;
//! what typical saves get; whole commands; and listing a folder of saves against reading
//! them whole.
//!
//! ```text
//! cargo bench --bench compress                                  # every part: tables, then criterion
//! SAVECHAIN_BENCH_TABLE_ONLY=1 cargo bench --bench compress     # the tables only
//! SAVECHAIN_BENCH_ONLY=size,typical cargo bench --bench compress
//! SAVECHAIN_BENCH_ONLY=list cargo bench --bench compress        # 1,000 saves of 5 MiB: 5 GiB on disk
//! ```
//!
//! Parts (`SAVECHAIN_BENCH_ONLY`, see `support/env.rs`):
//!
//! - `size`: the game save's canonical text compressed at the default levels (zstd 3,
//!   gzip 6) by the library, by the `zstd` crate at level 3 (the same C library, without
//!   the frame's checksum), by the `zstd` program at its default level and by `gzip -6 -n`;
//! - `load`: `Save::load` of the plain, zstd and gzip files (goal: compressed at most
//!   1.4x plain);
//! - `store`: `Save::store` against `Save::store_with` in zstd and gzip, and the same
//!   without the write (`to_vec` against `to_vec_with`); compressing alone against the
//!   `zstd` crate;
//! - `decompress`: `compress::decompress` against the `zstd` crate's streaming decoder and
//!   its one-shot decoder, and against `flate2`'s `GzDecoder`;
//! - `typical`: sizes and load ratios of the `citm_catalog`, `twitter` and `canada`
//!   corpora (`../shared/bench-data/`) as saves: text a save of names, numbers and
//!   repeated structure gets, where the game save is mostly random doubles;
//! - `commands`: whole `save-upgrade` processes: `fmt -` reading the zstd file against
//!   `zstd -dc | save-upgrade fmt -` and against `fmt -` reading the plain file, and
//!   `fmt --check` of each file;
//! - `list`: `save-upgrade list --json` of a folder of `SAVECHAIN_BENCH_LIST_SAVES` saves
//!   (1,000) of `SAVECHAIN_BENCH_LIST_MB` MiB (5) against reading each whole
//!   (`Meta::from_slice` of the file's bytes), for each codec of
//!   `SAVECHAIN_BENCH_LIST_CODECS` (`none,zstd`), with the bytes each reads per save
//!   (`rchar` of `/proc/self/io`, which counts reaped children). Skipped, saying so, while
//!   `save-upgrade` has no `list` command.
//!
//! Tables come from plain timing loops: the compared operations alternate and the best of
//! `SAVECHAIN_BENCH_RUNS` (5) counts. Files are in a temporary folder, warm in the page
//! cache. Without `--bench` (`cargo test --benches`) the save is 1 MiB and each part runs
//! once, as a smoke test.

#[path = "support/env.rs"]
mod env;
#[path = "support/game.rs"]
mod game;
#[path = "support/json.rs"]
mod json;

use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use savechain::compress::{self, Codec, Compression};
use savechain::{Meta, Save};

const PARTS: &[&str] = &[
    "size",
    "load",
    "store",
    "decompress",
    "typical",
    "commands",
    "list",
];
const MIB: f64 = 1024.0 * 1024.0;
const SAVE_UPGRADE: &str = env!("CARGO_BIN_EXE_save-upgrade");

type Op<'a> = (String, Box<dyn Fn() + 'a>);

/// The best time of each operation over `runs` rounds in which they alternate.
fn best_of(runs: usize, ops: &[Op]) -> Vec<Duration> {
    let mut best = vec![Duration::MAX; ops.len()];
    for _ in 0..runs {
        for (i, (_, op)) in ops.iter().enumerate() {
            let started = Instant::now();
            op();
            best[i] = best[i].min(started.elapsed());
        }
    }
    best
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print_times(title: &str, ops: &[Op], best: &[Duration], mib: f64) {
    println!("\n{title}");
    println!("{:<58} {:>10} {:>10}", "operation", "ms", "MiB/s");
    for ((name, _), t) in ops.iter().zip(best) {
        println!(
            "{:<58} {:>10.2} {:>10.1}",
            name,
            ms(*t),
            mib / t.as_secs_f64()
        );
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// The first line `program --version` prints, or `None` when it cannot be run.
fn program_version(program: &str, flag: &str) -> Option<String> {
    let out = Command::new(program).arg(flag).output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    out.status
        .success()
        .then(|| text.lines().next().unwrap_or("").trim().to_string())
}

/// What `program args... file` writes on its standard output.
fn program_output(program: &str, args: &[&str], file: &Path) -> Vec<u8> {
    let out = Command::new(program)
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `command` with its standard input from `input` (or nothing) and its output
/// thrown away; panics unless it exits with one of `codes`.
fn run(command: &mut Command, input: Option<&Path>, codes: &[i32]) {
    let stdin = match input {
        Some(path) => Stdio::from(File::open(path).unwrap()),
        None => Stdio::null(),
    };
    let status = command
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        status.code().is_some_and(|c| codes.contains(&c)),
        "{command:?}: {status}"
    );
}

/// The bytes this process and its reaped children have read (`rchar`), on Linux.
fn bytes_read() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|n| n.trim().parse().ok())
}

/// The game save's files: the same canonical text plain, in zstd and in gzip.
struct Files {
    _dir: tempfile::TempDir,
    save: Save,
    text: Vec<u8>,
    plain: PathBuf,
    zstd: PathBuf,
    gzip: PathBuf,
}

impl Files {
    fn new(mib: usize) -> Files {
        let dir = tempfile::tempdir().unwrap();
        let save = game::game_save(mib << 20, game::SEED);
        let text = save.to_vec().unwrap();
        let plain = dir.path().join("game.json");
        let zstd = dir.path().join("game.json.zst");
        let gzip = dir.path().join("game.json.gz");
        save.store(&plain).unwrap();
        save.store_with(&zstd, Compression::new(Codec::Zstd))
            .unwrap();
        save.store_with(&gzip, Compression::new(Codec::Gzip))
            .unwrap();
        for path in [&plain, &zstd, &gzip] {
            assert!(Save::load(path).unwrap() == save, "{}", path.display());
        }
        Files {
            _dir: dir,
            save,
            text,
            plain,
            zstd,
            gzip,
        }
    }

    fn mib(&self) -> f64 {
        self.text.len() as f64 / MIB
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole as f64
}

/// One row of a size table: the compressed size against the text and against a reference.
fn size_row(name: &str, len: usize, text: usize, reference: Option<usize>) {
    let against = reference.map_or(String::new(), |r| format!("{:.4}", len as f64 / r as f64));
    println!(
        "{:<48} {:>12} {:>8.2} % {:>12}",
        name,
        len,
        percent(len, text),
        against
    );
}

/// Sizes of `text` (kept in `file`) through the library, the crate and the programs.
fn sizes(label: &str, text: &[u8], file: &Path) {
    let zstd_ours = compress::compress(text, Compression::new(Codec::Zstd)).len();
    let gzip_ours = compress::compress(text, Compression::new(Codec::Gzip)).len();
    let zstd_crate = zstd::bulk::compress(text, 3).unwrap().len();
    let zstd_program =
        program_version("zstd", "-V").map(|_| program_output("zstd", &["-q", "-c"], file).len());
    let gzip_program = program_version("gzip", "-V")
        .map(|_| program_output("gzip", &["-6", "-n", "-c"], file).len());
    println!("\n{label}: {} bytes of canonical text", text.len());
    println!(
        "{:<48} {:>12} {:>10} {:>12}",
        "compressed by", "bytes", "of text", "/ program"
    );
    size_row(
        "savechain zstd (level 3, checksum)",
        zstd_ours,
        text.len(),
        zstd_program,
    );
    size_row(
        "zstd crate, bulk level 3 (no checksum)",
        zstd_crate,
        text.len(),
        zstd_program,
    );
    match zstd_program {
        Some(n) => size_row(
            "zstd program, default level (-q -c)",
            n,
            text.len(),
            Some(n),
        ),
        None => println!("zstd program: not installed"),
    }
    size_row(
        "savechain gzip (level 6)",
        gzip_ours,
        text.len(),
        gzip_program,
    );
    match gzip_program {
        Some(n) => size_row("gzip program -6 -n", n, text.len(), Some(n)),
        None => println!("gzip program: not installed"),
    }
    if let Some(n) = zstd_program {
        println!(
            "goal: savechain zstd no larger than the zstd program's default: {} ({:+} bytes)",
            if zstd_ours <= n { "met" } else { "NOT met" },
            zstd_ours as i64 - n as i64
        );
    }
}

fn part_size(f: &Files) {
    println!(
        "\nlibzstd of the crate {}, {}; {}",
        zstd::zstd_safe::version_string(),
        program_version("zstd", "-V").unwrap_or_else(|| "no zstd program".into()),
        program_version("gzip", "-V").unwrap_or_else(|| "no gzip program".into())
    );
    sizes(
        &format!("Game save ({:.1} MiB)", f.mib()),
        &f.text,
        &f.plain,
    );
}

fn part_load(f: &Files, runs: usize) {
    let load = |path: &Path| drop(black_box(Save::load(path).unwrap()));
    let ops: Vec<Op> = vec![
        ("Save::load, plain".into(), Box::new(|| load(&f.plain))),
        ("Save::load, zstd".into(), Box::new(|| load(&f.zstd))),
        ("Save::load, gzip".into(), Box::new(|| load(&f.gzip))),
        (
            "  of which fs::read + decompress, zstd".into(),
            Box::new(|| read_decompress(&f.zstd)),
        ),
        (
            "  of which fs::read + decompress, gzip".into(),
            Box::new(|| read_decompress(&f.gzip)),
        ),
    ];
    let best = best_of(runs, &ops);
    print_times(
        &format!("Load of the game save, best of {runs} (MiB/s of text)"),
        &ops,
        &best,
        f.mib(),
    );
    let goal = |r: f64| if r <= 1.4 { "met" } else { "NOT met" };
    let (z, g) = (ratio(best[1], best[0]), ratio(best[2], best[0]));
    println!(
        "zstd load / plain load: {z:.2}x (goal at most 1.4x: {})",
        goal(z)
    );
    println!(
        "gzip load / plain load: {g:.2}x (goal at most 1.4x: {})",
        goal(g)
    );
}

fn read_decompress(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    drop(black_box(
        compress::decompress(&bytes, compress::DEFAULT_LIMIT)
            .unwrap()
            .into_owned(),
    ));
}

fn part_store(f: &Files, runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name);
    let (plain, zst, gz) = (out("out.json"), out("out.json.zst"), out("out.json.gz"));
    let zstd = Compression::new(Codec::Zstd);
    let gzip = Compression::new(Codec::Gzip);
    let save = &f.save;
    let text = &f.text;
    let ops: Vec<Op> = vec![
        (
            "Save::store, plain".into(),
            Box::new(|| save.store(&plain).unwrap()),
        ),
        (
            "Save::store_with, zstd 3".into(),
            Box::new(|| save.store_with(&zst, zstd).unwrap()),
        ),
        (
            "Save::store_with, gzip 6".into(),
            Box::new(|| save.store_with(&gz, gzip).unwrap()),
        ),
        (
            "Save::to_vec (no write)".into(),
            Box::new(|| drop(black_box(save.to_vec().unwrap()))),
        ),
        (
            "Save::to_vec_with, zstd 3 (no write)".into(),
            Box::new(|| drop(black_box(save.to_vec_with(zstd).unwrap()))),
        ),
        (
            "Save::to_vec_with, gzip 6 (no write)".into(),
            Box::new(|| drop(black_box(save.to_vec_with(gzip).unwrap()))),
        ),
        (
            "compress::compress of the text, zstd 3".into(),
            Box::new(|| drop(black_box(compress::compress(text, zstd)))),
        ),
        (
            "zstd crate bulk::compress of the text, level 3".into(),
            Box::new(|| drop(black_box(zstd::bulk::compress(text, 3).unwrap()))),
        ),
        (
            "compress::compress of the text, gzip 6".into(),
            Box::new(|| drop(black_box(compress::compress(text, gzip)))),
        ),
    ];
    let best = best_of(runs, &ops);
    print_times(
        &format!("Store of the game save, best of {runs} (MiB/s of text)"),
        &ops,
        &best,
        f.mib(),
    );
    println!(
        "zstd store / plain store: {:.2}x; gzip: {:.2}x",
        ratio(best[1], best[0]),
        ratio(best[2], best[0])
    );
    println!(
        "compress::compress / zstd crate, level 3: {:.2}x",
        ratio(best[6], best[7])
    );
}

fn part_decompress(f: &Files, runs: usize) {
    let zst = std::fs::read(&f.zstd).unwrap();
    let gz = std::fs::read(&f.gzip).unwrap();
    let len = f.text.len();
    let ours = |bytes: &[u8]| {
        drop(black_box(
            compress::decompress(bytes, compress::DEFAULT_LIMIT).unwrap(),
        ))
    };
    let ops: Vec<Op> = vec![
        ("compress::decompress, zstd".into(), Box::new(|| ours(&zst))),
        (
            "zstd crate stream::decode_all".into(),
            Box::new(|| drop(black_box(zstd::stream::decode_all(&zst[..]).unwrap()))),
        ),
        (
            "zstd crate bulk::decompress (capacity given)".into(),
            Box::new(|| drop(black_box(zstd::bulk::decompress(&zst, len).unwrap()))),
        ),
        ("compress::decompress, gzip".into(), Box::new(|| ours(&gz))),
        (
            "flate2 GzDecoder read_to_end (capacity given)".into(),
            Box::new(|| {
                let mut text = Vec::with_capacity(len);
                flate2::read::GzDecoder::new(&gz[..])
                    .read_to_end(&mut text)
                    .unwrap();
                drop(black_box(text));
            }),
        ),
    ];
    let best = best_of(runs, &ops);
    print_times(
        &format!("Decompressing the game save in memory, best of {runs} (MiB/s of text)"),
        &ops,
        &best,
        f.mib(),
    );
    println!(
        "compress::decompress / zstd streaming: {:.2}x; / zstd one-shot: {:.2}x; gzip / flate2: {:.2}x",
        ratio(best[0], best[1]),
        ratio(best[0], best[2]),
        ratio(best[3], best[4])
    );
}

fn part_typical(runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    for name in json::CORPORA {
        let save = Save::from_slice(&json::corpus_envelope(name)).unwrap();
        let text = save.to_vec().unwrap();
        let file = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, &text).unwrap();
        sizes(&format!("{name} as a save"), &text, &file);
        let zst = compress::compress(&text, Compression::new(Codec::Zstd));
        let gz = compress::compress(&text, Compression::new(Codec::Gzip));
        let load = |bytes: &[u8]| drop(black_box(Save::from_slice(bytes).unwrap()));
        let ops: Vec<Op> = vec![
            ("Save::from_slice, plain".into(), Box::new(|| load(&text))),
            ("Save::from_slice, zstd".into(), Box::new(|| load(&zst))),
            ("Save::from_slice, gzip".into(), Box::new(|| load(&gz))),
        ];
        let best = best_of(runs * 4, &ops);
        print_times(
            &format!("{name}: load, best of {}", runs * 4),
            &ops,
            &best,
            text.len() as f64 / MIB,
        );
        println!(
            "{name}: zstd load / plain load {:.2}x, gzip {:.2}x",
            ratio(best[1], best[0]),
            ratio(best[2], best[0])
        );
    }
}

fn part_commands(f: &Files, runs: usize) {
    let zstd_program = program_version("zstd", "-V").is_some();
    let fmt_stdin = |input: &Path| {
        run(
            Command::new(SAVE_UPGRADE).args(["fmt", "-"]),
            Some(input),
            &[0],
        )
    };
    // `fmt --check` of a file: exit 1 says the bytes are not the canonical text, which a
    // build that compares compressed bytes with the text says of a compressed file.
    let fmt_check = |file: &Path| {
        run(
            Command::new(SAVE_UPGRADE)
                .arg("fmt")
                .arg("--check")
                .arg(file),
            None,
            &[0, 1],
        )
    };
    let mut ops: Vec<Op> = vec![
        (
            "save-upgrade fmt - < game.json.zst".into(),
            Box::new(|| fmt_stdin(&f.zstd)),
        ),
        (
            "save-upgrade fmt - < game.json".into(),
            Box::new(|| fmt_stdin(&f.plain)),
        ),
        (
            "save-upgrade fmt - < game.json.gz".into(),
            Box::new(|| fmt_stdin(&f.gzip)),
        ),
        (
            "save-upgrade fmt --check game.json.zst".into(),
            Box::new(|| fmt_check(&f.zstd)),
        ),
        (
            "save-upgrade fmt --check game.json".into(),
            Box::new(|| fmt_check(&f.plain)),
        ),
    ];
    if zstd_program {
        ops.push((
            "zstd -dc game.json.zst | save-upgrade fmt -".into(),
            Box::new(|| {
                run(
                    Command::new("sh")
                        .arg("-c")
                        .arg("zstd -dc \"$1\" | \"$2\" fmt -")
                        .arg("sh")
                        .arg(&f.zstd)
                        .arg(SAVE_UPGRADE),
                    None,
                    &[0],
                )
            }),
        ));
        ops.push((
            "zstd -dc game.json.zst > /dev/null".into(),
            Box::new(|| run(Command::new("zstd").arg("-dc").arg(&f.zstd), None, &[0])),
        ));
    }
    let best = best_of(runs, &ops);
    print_times(
        &format!("Whole commands on the game save, best of {runs} (MiB/s of text)"),
        &ops,
        &best,
        f.mib(),
    );
    println!(
        "fmt - of the zstd file / of the plain file: {:.2}x; gzip: {:.2}x",
        ratio(best[0], best[1]),
        ratio(best[2], best[1])
    );
    if zstd_program {
        println!(
            "fmt - of the zstd file / zstd -dc | fmt -: {:.2}x",
            ratio(best[0], best[5])
        );
    }
}

fn part_list(runs: usize, bench_mode: bool) {
    // `list --help` would be read as paths to upgrade; `help list` fails for a command
    // that does not exist.
    let has_list = Command::new(SAVE_UPGRADE)
        .args(["help", "list"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_list {
        println!("\nlist: skipped: this save-upgrade has no `list` command");
        return;
    }
    let count = env::number(
        "SAVECHAIN_BENCH_LIST_SAVES",
        if bench_mode { 1000 } else { 3 },
    );
    let mib = env::number("SAVECHAIN_BENCH_LIST_MB", if bench_mode { 5 } else { 1 });
    let codecs =
        std::env::var("SAVECHAIN_BENCH_LIST_CODECS").unwrap_or_else(|_| "none,zstd".into());
    let mut save = game::game_save(mib << 20, game::SEED);
    for codec in codecs
        .split(',')
        .map(|c| c.trim().parse::<Codec>().unwrap())
    {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let mut on_disk = 0;
        let paths: Vec<PathBuf> = (0..count)
            .map(|i| {
                // Distinct saves: each its own slot.
                save.meta
                    .extra
                    .insert("slot", savechain::Value::from(i as u64));
                let path = dir
                    .path()
                    .join(format!("save{i:04}.json{}", codec.extension()));
                save.store_with(&path, Compression::new(codec)).unwrap();
                on_disk += std::fs::metadata(&path).unwrap().len();
                path
            })
            .collect();
        println!(
            "\n{count} saves of {:.1} MiB of text ({codec}, {:.1} MiB each on disk), written in {:.0} s",
            save.to_vec().unwrap().len() as f64 / MIB,
            on_disk as f64 / count as f64 / MIB,
            started.elapsed().as_secs_f64()
        );
        let list = || {
            run(
                Command::new(SAVE_UPGRADE)
                    .arg("list")
                    .arg("--json")
                    .arg(dir.path()),
                None,
                &[0, 1],
            )
        };
        let whole = || {
            for path in &paths {
                let bytes = std::fs::read(path).unwrap();
                drop(black_box(Meta::from_slice(&bytes).unwrap()));
            }
        };
        let read_only = || {
            for path in &paths {
                drop(black_box(std::fs::read(path).unwrap()));
            }
        };
        let measured = |f: &dyn Fn()| {
            let before = bytes_read();
            f();
            before
                .zip(bytes_read())
                .map(|(a, b)| (b - a) / count as u64)
        };
        let per_save = [measured(&list), measured(&whole), measured(&read_only)];
        let ops: Vec<Op> = vec![
            (
                "save-upgrade list --json DIR (one process)".into(),
                Box::new(list),
            ),
            (
                "Meta::from_slice of each file read whole".into(),
                Box::new(whole),
            ),
            ("  fs::read of each file alone".into(), Box::new(read_only)),
        ];
        let best = best_of(runs.min(3), &ops);
        println!(
            "{:<48} {:>10} {:>18}",
            "operation", "ms", "bytes read a save"
        );
        for (((name, _), t), bytes) in ops.iter().zip(&best).zip(per_save) {
            let bytes = bytes.map_or("?".into(), |b| b.to_string());
            println!("{:<48} {:>10.1} {:>18}", name, ms(*t), bytes);
        }
        let r = ratio(best[1], best[0]);
        println!(
            "reading whole / list: {r:.1}x (goal at least 100x: {})",
            if r >= 100.0 { "met" } else { "NOT met" }
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    // `cargo bench` passes --bench; without it (`cargo test --benches`) everything is small.
    let bench_mode = has("--bench");
    let table_only = env::table_only();
    if has("--list") {
        return;
    }
    let runs = if bench_mode || table_only {
        env::runs(5)
    } else {
        1
    };
    let mib = env::game_mib(if bench_mode || table_only {
        game::MIB
    } else {
        1
    });
    let part = |name: &str| env::part(name, PARTS);
    let needs_game = ["size", "load", "store", "decompress", "commands"]
        .iter()
        .any(|p| part(p));
    let started = Instant::now();
    let files = needs_game.then(|| Files::new(mib));
    if let Some(f) = &files {
        println!(
            "Game save: {} bytes of canonical text, made and written three ways in {:.1} s",
            f.text.len(),
            started.elapsed().as_secs_f64()
        );
    }
    if let Some(f) = &files {
        if part("size") {
            part_size(f);
        }
        if part("load") {
            part_load(f, runs);
        }
        if part("store") {
            part_store(f, runs);
        }
        if part("decompress") {
            part_decompress(f, runs);
        }
    }
    if part("typical") {
        part_typical(runs);
    }
    if let Some(f) = files.as_ref().filter(|_| part("commands")) {
        part_commands(f, runs);
    }
    if part("list") {
        part_list(runs, bench_mode || table_only);
    }
    let Some(f) = files.as_ref().filter(|_| !table_only && part("load")) else {
        return;
    };

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("compress/game");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .throughput(Throughput::Bytes(f.text.len() as u64));
    for (name, path) in [
        ("load_plain", &f.plain),
        ("load_zstd", &f.zstd),
        ("load_gzip", &f.gzip),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| drop(black_box(Save::load(path).unwrap())))
        });
    }
    let zst = std::fs::read(&f.zstd).unwrap();
    group.bench_function("decompress_zstd", |b| {
        b.iter(|| {
            drop(black_box(
                compress::decompress(&zst, compress::DEFAULT_LIMIT).unwrap(),
            ))
        })
    });
    group.bench_function("compress_zstd", |b| {
        b.iter(|| {
            drop(black_box(compress::compress(
                &f.text,
                Compression::new(Codec::Zstd),
            )))
        })
    });
    group.finish();
    c.final_summary();
}
