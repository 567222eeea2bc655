//! `save-upgrade test`: a chain's fixtures upgraded and compared with their expected forms.

use std::path::PathBuf;

use savechain::fixtures::{self, Verdict};
use savechain::guard;

use super::chain::ChainArg;
use super::output::{self, errln, outln};
use super::report::{changes_text, print_error};
use super::{EXIT_FAILED, EXIT_FOUND_WORK, EXIT_OK, EXIT_USAGE};

/// Test a chain: upgrade each fixture and compare it with its expected upgraded form.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  save-upgrade test fixtures/
  save-upgrade test --upgrades mymod/upgrades/ --writer 1.4.0 mymod/fixtures/
  save-upgrade test --bless fixtures/        write the expected forms after a change

Each save under FIXTURES is upgraded to the chain's latest version, in memory, and its
canonical text compared with its expected form: FIXTURES/a/b.json with EXPECTED/a/b.json
(EXPECTED is the folder `expected` beside FIXTURES unless --expected names another). What
differs is printed on standard output, path by path with its values (`~ data.ship.hull:
[\"d\",0.965] -> [\"d\",1.0]`, expected -> upgraded). What the steps printed for a
fixture that differs or fails goes to standard error as an upgrade writes it
(`fixtures/a.json: 0009-stolen-cargo.lua: text`); --print shows it for every fixture.
The fixtures are never written.
When the chain records shapes (save-upgrade shape record), each fixture is also upgraded
one step at a time and checked against the recorded shape of its own version, then of
each version a step brings it to, and each mod's part after the mods' steps: each place
that does not match is printed on standard output with the step that first left it so
(`fixtures/v7/a.json: after step 0007-mission-log.lua (7 -> 8, ...):
data.lua.missions.done: the game reads no member \"done\" here ...`): a step that forgot
a member. Versions without a recorded shape are not checked; --bless does not change this.
Exit status: 0 every fixture matches (or, with --bless, its expected form was written),
1 a fixture differs, has no expected form, or does not match a recorded shape after a
step, 2 a fixture failed to load or upgrade, or a usage error.")]
pub struct Args {
    /// Write the expected forms that are missing or differ, rather than compare.
    #[arg(long)]
    bless: bool,
    /// The folder of expected forms (default: `expected` beside FIXTURES).
    #[arg(long, value_name = "DIR")]
    expected: Option<PathBuf>,
    /// Print only differences and errors (with what the steps printed for them).
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Show what the steps printed for every fixture, not only for those that differ or
    /// fail.
    #[arg(long, conflicts_with = "quiet")]
    print: bool,
    #[command(flatten)]
    chain: ChainArg,
    /// The folder of fixtures: saves at older versions.
    fixtures: PathBuf,
}

pub fn run(args: Args) -> i32 {
    let Some(chain) = args.chain.load() else {
        return EXIT_USAGE;
    };
    let expected = args.expected.clone().unwrap_or_else(|| {
        let parent = args.fixtures.parent().unwrap_or("".as_ref());
        parent.join("expected")
    });
    let outcomes = match fixtures::check(&chain, &args.fixtures, &expected, args.bless) {
        Ok(outcomes) => outcomes,
        Err(e) => {
            print_error(&e, None);
            return EXIT_USAGE;
        }
    };
    let (mut matching, mut differing, mut missing, mut written, mut failed) = (0, 0, 0, 0, 0);
    for outcome in &outcomes {
        let (fixture, expected) = (outcome.fixture.display(), outcome.expected.display());
        let wanted = matches!(outcome.verdict, Verdict::Differs(_) | Verdict::Failed(_));
        if wanted || args.print {
            print_printed(outcome);
        }
        match &outcome.verdict {
            Verdict::Matches => {
                matching += 1;
                if !args.quiet {
                    errln!("ok: {fixture}");
                }
            }
            Verdict::Differs(changes) => {
                differing += 1;
                outln!("{fixture}: its upgrade differs from {expected}:");
                if changes.is_empty() {
                    outln!("  only in layout: {expected} is not canonical (run with --bless)");
                } else {
                    output::out(&changes_text(changes, "  "));
                }
            }
            Verdict::Missing => {
                missing += 1;
                outln!("{fixture}: no expected form {expected} (run with --bless to write it)");
            }
            Verdict::Written => {
                written += 1;
                errln!("wrote {expected}");
            }
            Verdict::Failed(e) => {
                failed += 1;
                print_error(e, None);
            }
            _ => {}
        }
    }
    // The chain check: each fixture, step by step, against the recorded shapes.
    let shaped = !chain.shapes().is_empty() || chain.mods().iter().any(|m| !m.shapes().is_empty());
    let mut mismatches = 0;
    if shaped {
        match guard::check_fixtures(&chain, &args.fixtures) {
            Ok(found) => {
                mismatches = found.len();
                let lines: String = found.iter().map(|m| format!("{m}\n")).collect();
                output::out(&lines);
            }
            // A fixture that does not upgrade is reported above already.
            Err(_) if failed > 0 => {}
            Err(e) => {
                print_error(&e, None);
                failed += 1;
            }
        }
    }
    if !args.quiet {
        let mut summary = format!(
            "fixtures: {matching} match, {differing} differ, {missing} without an expected \
             form, {failed} failed"
        );
        if shaped {
            let plural = if mismatches == 1 { "" } else { "es" };
            summary = format!(
                "{summary}; checked step by step against the recorded shapes: {mismatches} \
                 mismatch{plural}"
            );
            let unrecorded = guard::unrecorded_versions(&chain);
            if !unrecorded.is_empty() {
                let listed: Vec<String> = unrecorded.iter().map(u64::to_string).collect();
                let versions = match listed.as_slice() {
                    [one] => format!("version {one} has"),
                    many => format!("versions {} have", many.join(", ")),
                };
                let declared: Vec<&str> = chain
                    .steps()
                    .iter()
                    .filter(|s| s.kind_name() == "declared" && unrecorded.contains(&s.from()))
                    .map(|s| s.name())
                    .collect();
                let declared = match declared.as_slice() {
                    [] => String::new(),
                    names => format!(
                        ", nor were the declared steps from there ({}) checked against shapes",
                        names.join(", ")
                    ),
                };
                summary = format!("{summary}; {versions} no recorded shape: not checked{declared}");
            }
        }
        if args.bless {
            let forms = if written == 1 { "form" } else { "forms" };
            summary = format!("{summary}; wrote {written} expected {forms}");
        }
        errln!("{summary}");
    }
    if failed > 0 {
        EXIT_FAILED
    } else if differing + missing + mismatches > 0 {
        EXIT_FOUND_WORK
    } else {
        EXIT_OK
    }
}

/// What the steps printed on the fixture, to standard error as an upgrade writes it:
/// `FIXTURE: STEP: line` (`MOD/STEP` for a mod's step).
fn print_printed(outcome: &fixtures::Outcome) {
    let mut text = String::new();
    for step in &outcome.steps {
        let name = match &step.in_mod {
            Some(m) => format!("{m}/{}", step.name),
            None => step.name.clone(),
        };
        for line in &step.printed {
            let fixture = outcome.fixture.display();
            text.push_str(&format!("{fixture}: {name}: {line}\n"));
        }
    }
    output::err(&text);
}
