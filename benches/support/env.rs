//! The environment variables the benchmarks share, to run parts of them and to shrink them
//! for quick checks.
//!
//! - `SAVECHAIN_BENCH_GAME_MB=N`: the generated game save is about N MiB of text;
//! - `SAVECHAIN_BENCH_RUNS=N`: best of N runs instead of each table's default;
//! - `SAVECHAIN_BENCH_ONLY=a,b`: only the named parts (each bench lists its parts);
//! - `SAVECHAIN_BENCH_TABLE_ONLY=1`: the tables, not criterion's groups.
//!
//! Benchmarks include this file with `#[path = "support/env.rs"] mod env;`.

#![allow(dead_code)]

/// A number from the environment variable `name`, or `default` when it is not set.
/// Panics on anything but a number, rather than run a bench of another size than asked.
pub fn number(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, found {v:?}")),
        Err(_) => default,
    }
}

/// `SAVECHAIN_BENCH_GAME_MB`, or `default` MiB.
pub fn game_mib(default: usize) -> usize {
    number("SAVECHAIN_BENCH_GAME_MB", default)
}

/// `SAVECHAIN_BENCH_RUNS`, or `default` runs (at least 1).
pub fn runs(default: usize) -> usize {
    number("SAVECHAIN_BENCH_RUNS", default).max(1)
}

/// Whether the environment variable `name` is set (to anything).
pub fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some()
}

/// `SAVECHAIN_BENCH_TABLE_ONLY`.
pub fn table_only() -> bool {
    flag("SAVECHAIN_BENCH_TABLE_ONLY")
}

/// Whether the part `name` runs: every part of `all` when `SAVECHAIN_BENCH_ONLY` is not set,
/// otherwise those it lists (comma-separated). A name it lists that is not in `all` is an
/// error, so a typo does not run nothing.
pub fn part(name: &str, all: &[&str]) -> bool {
    debug_assert!(all.contains(&name));
    match std::env::var("SAVECHAIN_BENCH_ONLY") {
        Err(_) => true,
        Ok(list) => {
            let parts: Vec<&str> = list
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            for p in &parts {
                assert!(
                    all.contains(p),
                    "SAVECHAIN_BENCH_ONLY: no part {p:?} in this bench (parts: {})",
                    all.join(", ")
                );
            }
            parts.contains(&name)
        }
    }
}
