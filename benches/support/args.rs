//! Criterion's command line, as the benchmarks' own `main` functions need it.
//!
//! Benchmarks include this file with `#[path = "support/args.rs"] mod args;`.

#![allow(dead_code)]

/// Criterion's positional filters, if any: arguments that are neither options nor the value
/// of an option that takes one.
pub fn filters(args: &[String]) -> Vec<String> {
    const WITH_VALUE: &[&str] = &[
        "--baseline",
        "--baseline-lenient",
        "--save-baseline",
        "--load-baseline",
        "-b",
        "-s",
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--profile-time",
        "--plotting-backend",
        "--output-format",
        "--color",
        "-c",
        "--format",
        "--logfile",
    ];
    let mut out = Vec::new();
    let mut skip = false;
    for arg in args.iter().skip(1) {
        if skip {
            skip = false;
        } else if WITH_VALUE.contains(&arg.as_str()) {
            skip = true;
        } else if !arg.starts_with('-') {
            out.push(arg.clone());
        }
    }
    out
}
