//! A chain's fixtures (saves at older versions) upgraded and compared with their expected
//! upgraded forms, or those forms written: how a game or a mod author tests a chain.
//!
//! The expected form of `FIXTURES/a/b.json` is `EXPECTED/a/b.json`, the canonical text of
//! its upgrade to the chain's latest version. A fixture may be compressed
//! ([`crate::compress`]), and so may its expected form: what is compared is the text.
//!
//! ```
//! use savechain::fixtures;
//! use savechain::upgrade::{Chain, Step};
//!
//! let dir = tempfile::tempdir()?;
//! let (inputs, expected) = (dir.path().join("fixtures"), dir.path().join("expected"));
//! std::fs::create_dir(&inputs)?;
//! std::fs::write(inputs.join("old.json"), r#"{"meta": {"version": 1}, "data": {"hp": 3}}"#)?;
//! let chain = Chain::new("1.0.0", vec![
//!     Step::lua("0001-double-hp.lua", "return function(d) d.hp = d.hp * 2 end")?,
//! ])?;
//! // No expected forms yet: bless writes them.
//! let outcomes = fixtures::check(&chain, &inputs, &expected, true)?;
//! assert!(matches!(outcomes[0].verdict, fixtures::Verdict::Written));
//! let outcomes = fixtures::check(&chain, &inputs, &expected, false)?;
//! assert!(matches!(outcomes[0].verdict, fixtures::Verdict::Matches));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use crate::batch::out_dir::overlap;
use crate::batch::Plan;
use crate::compress::{self, Codec, Compression};
use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::options::Options;
use crate::upgrade::{Chain, Changes, StepReport, Upgrader};
use crate::Save;

/// One fixture and what became of it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// The fixture.
    pub fixture: PathBuf,
    /// Its expected form.
    pub expected: PathBuf,
    /// How its upgrade compares.
    pub verdict: Verdict,
    /// The steps that ran on it, in order, each with what it printed
    /// ([`StepReport::printed`]): when its upgrade failed, those that ran, the failing one
    /// last. Empty when no step ran (or it did not load).
    pub steps: Vec<StepReport>,
}

/// How a fixture's upgrade compares with its expected form.
#[derive(Debug)]
#[non_exhaustive]
pub enum Verdict {
    /// Byte for byte the expected file's text (decompressed, when it is compressed).
    Matches,
    /// Not the expected file: what differs from the expected save to the upgraded one, by
    /// document path (empty when only the expected file's layout differs: it is not
    /// canonical).
    Differs(Changes),
    /// There is no expected file.
    Missing,
    /// With `bless`: the expected file was written (it was missing or differed).
    Written,
    /// The fixture did not load or upgrade, or its expected file could not be read or
    /// written.
    Failed(Error),
}

/// Upgrades every save under `fixtures` (searched as a batch searches a folder) with
/// `chain` and compares each with its expected form under `expected`; with `bless`, writes
/// the expected forms that are missing or differ instead (atomically, making folders;
/// compressed as the expected file was, or a missing one as its fixture is). Outcomes come
/// in path order. An error only when `fixtures` holds no saves.
pub fn check(chain: &Chain, fixtures: &Path, expected: &Path, bless: bool) -> Result<Vec<Outcome>> {
    // Expected forms among the fixtures would be tested as fixtures, and fixtures among
    // the expected forms could be blessed over.
    if let Some(relation) = overlap(expected, fixtures) {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "the expected forms ({}) may not lie inside the fixtures' folder ({}), nor \
                 be or contain it: the folder of expected forms {relation} it",
                expected.display(),
                fixtures.display()
            ),
        ));
    }
    let plan = Plan::find(&[fixtures]);
    if let Some(error) = plan.errors.into_iter().next() {
        return Err(error);
    }
    let mut upgrader = chain.upgrader();
    let options = Options::default();
    let mut outcomes = Vec::new();
    for found in &plan.saves {
        let relative = found.path.strip_prefix(fixtures).unwrap_or(&found.path);
        let expected_path = expected.join(relative);
        let (verdict, steps) = match upgraded_text(&mut upgrader, &found.path, &options) {
            Ok(Some((text, steps, codec))) => (compare(&text, &expected_path, bless, codec), steps),
            // Not a save (no meta): not a fixture.
            Ok(None) => continue,
            Err((e, steps)) => (Verdict::Failed(e), steps),
        };
        outcomes.push(Outcome {
            fixture: found.path.clone(),
            expected: expected_path,
            verdict,
            steps,
        });
    }
    if outcomes.is_empty() {
        return Err(Error::new(
            ErrorKind::Io,
            format!("{} holds no saves to test", fixtures.display()),
        ));
    }
    Ok(outcomes)
}

/// The canonical text of the fixture at `path` upgraded to the latest version, the reports
/// of the steps that ran and how the fixture is stored; `None` for a file that is not a
/// save. An error comes with the reports of the steps that ran before it, the failing one
/// last.
#[allow(clippy::type_complexity)]
fn upgraded_text(
    upgrader: &mut Upgrader<'_>,
    path: &Path,
    options: &Options,
) -> std::result::Result<Option<(Vec<u8>, Vec<StepReport>, Codec)>, (Error, Vec<StepReport>)> {
    let read = fsio::read_regular(path).map_err(|e| {
        (
            Error::io(e, "cannot read the file").with_file(path),
            Vec::new(),
        )
    })?;
    let save = match Save::from_slice(&read) {
        Ok(save) => save,
        Err(e) if e.kind() == ErrorKind::NotASave => return Ok(None),
        Err(e) => return Err((e.with_file(path), Vec::new())),
    };
    let upgraded = upgrader
        .upgrade(save, options)
        .map_err(|e| (e.with_file(path), upgrader.failed_steps().to_vec()))?;
    match upgraded.save.to_vec() {
        Ok(text) => Ok(Some((text, upgraded.steps, Codec::of(&read)))),
        Err(e) => Err((e.with_file(path), upgraded.steps)),
    }
}

/// How `text` compares with the file `expected`; with `bless`, the file written when it
/// differs, compressed as it was (as the fixture is, `codec`, when it is missing).
fn compare(text: &[u8], expected: &Path, bless: bool, codec: Codec) -> Verdict {
    let (verdict, codec) = match fsio::read_regular(expected) {
        Ok(bytes) => {
            let same_text = compress::decompress(&bytes, compress::DEFAULT_LIMIT)
                .is_ok_and(|expected| expected.as_ref() == text);
            if same_text {
                return Verdict::Matches;
            }
            let verdict = match Save::from_slice(&bytes) {
                Ok(expected_save) => {
                    let upgraded = Save::from_slice(text).expect("the writer's text loads");
                    Verdict::Differs(crate::edit::diff(&expected_save, &upgraded))
                }
                Err(e) if !bless => return Verdict::Failed(e.with_file(expected)),
                Err(_) => Verdict::Missing,
            };
            (verdict, Codec::of(&bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Verdict::Missing, codec),
        Err(e) => return Verdict::Failed(Error::io(e, "cannot read the file").with_file(expected)),
    };
    if !bless {
        return verdict;
    }
    let written = expected
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            fsio::write_atomic(expected, &compress::compress(text, Compression::new(codec)))
        });
    match written {
        Ok(()) => Verdict::Written,
        Err(e) => Verdict::Failed(Error::io(e, "cannot write the file").with_file(expected)),
    }
}
