//! The drift guard: what the game writes now against the shape recorded for its chain's
//! latest version, so that a change of what the game reads cannot ship without a new
//! version, its step and its shape; and the chain check: every fixture upgraded step by
//! step, matching the recorded shape of each version it reaches.
//!
//! It sits beside [`crate::shape`] and [`crate::upgrade`] rather than inside either: it
//! takes from both, and a chain holds its shapes, so inside `shape` it would make the two
//! import each other.

use std::fmt;
use std::path::{Path as FsPath, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::options::Options;
use crate::path::{Path, Segment};
use crate::save::Save;
use crate::shape::{compare, Change, Difference};
use crate::shape::{Mismatch, MismatchKind, Shape};
use crate::upgrade::{Chain, Mod, Step};
use crate::value::Value;

/// What the guard found: how what the game writes now differs from the shapes recorded
/// for its chain. [`Drift::is_clean`] when nothing does; its `Display` lists each finding
/// and says what to do.
#[derive(Debug)]
#[non_exhaustive]
pub struct Drift {
    /// The chain's latest version: the version of what the game writes now.
    pub latest: u64,
    /// The latest version of the game with a recorded shape.
    pub recorded: u64,
    /// Where that shape was read from.
    pub file: Option<PathBuf>,
    /// Each difference, in the order found.
    pub found: Vec<Found>,
}

/// One difference the guard found.
#[derive(Debug)]
#[non_exhaustive]
pub enum Found {
    /// The game's chain (or mod `in_mod`'s) has steps up to `latest`, and no shape is
    /// recorded for it: the latest recorded is `recorded`.
    Unrecorded {
        /// The mod, or `None` for the game.
        in_mod: Option<String>,
        /// Its latest version.
        latest: u64,
        /// Its latest version with a shape.
        recorded: u64,
    },
    /// A save given (by its position, from 0) is of a version beyond the chain's latest:
    /// the game writes a version the chain has no steps to.
    BeyondLatest {
        /// The save's position among those given.
        save: usize,
        /// Its version.
        version: u64,
    },
    /// A place of saves that does not match the recorded shape.
    Mismatch {
        /// The positions of the saves with this mismatch, from 0.
        saves: Vec<usize>,
        /// The mod whose part it is in, `None` for the game's.
        in_mod: Option<String>,
        /// Where and what.
        mismatch: Mismatch,
    },
    /// A required member is missing and a member the shape does not name sits in the same
    /// object with a value the missing member's shape reads: most likely renamed.
    LikelyRenamed {
        /// The positions of the saves where it is, from 0.
        saves: Vec<usize>,
        /// The mod whose part it is in, `None` for the game's.
        in_mod: Option<String>,
        /// The missing member, from the save's root.
        from: Path,
        /// The new member's name, in the same object.
        to: String,
        /// The missing member as a declared step names it: a shape path from `data`
        /// (`player.reputation`, `ship.cargo[].mass`).
        declared: String,
    },
    /// A difference between the game's type and the shape recorded for the latest version
    /// ([`drift`]), by shape path.
    Difference(Difference),
}

impl Drift {
    /// Whether nothing differs.
    pub fn is_clean(&self) -> bool {
        self.found.is_empty()
    }

    /// The drift as an error ([`ErrorKind::Shape`], its message the whole `Display`),
    /// `Ok` when clean: for a test that should fail on drift.
    pub fn into_result(self) -> Result<()> {
        if self.is_clean() {
            Ok(())
        } else {
            Err(Error::new(ErrorKind::Shape, self.to_string()))
        }
    }

    /// Whether the game itself needs a new version: something it writes differs from its
    /// latest recorded shape, which is that of its latest version.
    fn game_drifted(&self) -> bool {
        self.found.iter().any(|f| match f {
            Found::Mismatch { in_mod, .. } | Found::LikelyRenamed { in_mod, .. } => {
                in_mod.is_none()
            }
            Found::Difference(_) => true,
            Found::BeyondLatest { .. } | Found::Unrecorded { .. } => false,
        })
    }
}

fn saves_word(saves: &[usize]) -> String {
    let numbers: Vec<String> = saves.iter().map(|s| (s + 1).to_string()).collect();
    match numbers.as_slice() {
        [one] => format!("save {one}"),
        many => format!("saves {}", many.join(", ")),
    }
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Unrecorded {
                in_mod,
                latest,
                recorded,
            } => {
                let whose = in_mod
                    .as_ref()
                    .map_or(String::new(), |m| format!("mod {m}: "));
                write!(
                    f,
                    "{whose}version {latest} has steps but no recorded shape (the latest \
                     recorded is {recorded}): record it (save-upgrade shape record SAVES, or \
                     shape::record_type)"
                )
            }
            Found::BeyondLatest { save, version } => write!(
                f,
                "save {}: version {version}, beyond the chain's latest version: the steps up \
                 to version {version} are missing",
                save + 1
            ),
            Found::Mismatch {
                saves,
                in_mod: _,
                mismatch,
            } => write!(f, "{}: {mismatch}", saves_word(saves)),
            Found::LikelyRenamed {
                saves, from, to, ..
            } => write!(
                f,
                "{}: {from} is missing and {to:?} beside it is new: likely renamed to {to:?}",
                saves_word(saves)
            ),
            Found::Difference(difference) => write!(f, "{difference}"),
        }
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self
            .file
            .as_ref()
            .map_or(String::new(), |p| format!(", {}", p.display()));
        if self.is_clean() {
            return write!(
                f,
                "no drift: what the game writes matches the recorded shape of version {}{file}",
                self.recorded
            );
        }
        // The heading says what the findings below are: a difference from a shape, or only
        // what could not be compared (a version with no shape, a save beyond the chain).
        let differs = self.found.iter().any(|found| {
            matches!(
                found,
                Found::Mismatch { .. } | Found::LikelyRenamed { .. } | Found::Difference(_)
            )
        });
        if differs {
            writeln!(
                f,
                "drift: what the game writes does not match the recorded shapes (the game's \
                 latest recorded: version {}{file}):",
                self.recorded
            )?;
        } else {
            writeln!(
                f,
                "drift: what the game writes cannot be checked against a recorded shape:"
            )?;
        }
        for found in &self.found {
            writeln!(f, "  {found}")?;
        }
        if self.game_drifted() {
            let (l, next) = (self.latest, self.latest + 1);
            let renames: Vec<String> = self
                .found
                .iter()
                .filter_map(|found| match found {
                    Found::LikelyRenamed {
                        in_mod: None,
                        declared,
                        to,
                        ..
                    } => Some(serde_json::json!({"rename": declared, "to": to}).to_string()),
                    Found::Difference(Difference {
                        path,
                        change: Change::LikelyRenamed { to, .. },
                        ..
                    }) => Some(declared_rename(path, to)),
                    _ => None,
                })
                .collect();
            let declare = match renames.as_slice() {
                [] => String::new(),
                _ => format!(" (declare the renames: {})", renames.join(", ")),
            };
            write!(
                f,
                "what to do: a recorded shape never changes, so make version {next}: a step \
                 {l} -> {next}{declare}, the game's version {next}, and record the shape of \
                 {next}"
            )?;
            let attributes = derive_attributes(&self.found, l);
            if !attributes.is_empty() {
                write!(
                    f,
                    "\nthe step declared on the game's type instead (#[derive(savechain::Declare)], \
                     at = {l}: the step from {l}): {}",
                    attributes.join("; ")
                )?;
            }
        }
        let mods: Vec<&str> = self
            .found
            .iter()
            .filter_map(|found| match found {
                Found::Mismatch {
                    in_mod: Some(m), ..
                }
                | Found::LikelyRenamed {
                    in_mod: Some(m), ..
                } => Some(m.as_str()),
                _ => None,
            })
            .collect();
        let mut mods = mods;
        mods.dedup();
        for m in mods {
            write!(
                f,
                "\nwhat to do for mod {m}: make its next data version: a step, its release, \
                 and record the shape of that version"
            )?;
        }
        Ok(())
    }
}

/// The `#[savechain(...)]` attributes that declare, on a Rust game's type, the step from
/// version `at` for the differences the type's shape shows ([`Found::Difference`]): a
/// rename on the renamed field, an addition on the added one, a drop on the struct.
fn derive_attributes(found: &[Found], at: u64) -> Vec<String> {
    let last = |path: &str| path.rsplit('.').next().unwrap_or(path).to_string();
    let parent = |path: &str| path.rsplit_once('.').map_or("data", |(p, _)| p).to_string();
    let mut out = Vec::new();
    let mut nested = false;
    for found in found {
        let Found::Difference(Difference { path, change, .. }) = found else {
            continue;
        };
        nested |= path.contains('[');
        match change {
            Change::LikelyRenamed { to, .. } => out.push(format!(
                "on the field {to}, #[savechain(renamed(from = {:?}, at = {at}))]",
                last(path)
            )),
            Change::Added(_) => out.push(format!(
                "on the field {path}, #[savechain(added(at = {at}, default = ...))] (the value \
                 saves of version {at} get)"
            )),
            Change::Removed(_) => out.push(format!(
                "on the struct at {}, #[savechain(dropped(name = {:?}, at = {at}, reason = \
                 \"...\"))]",
                parent(path),
                last(path)
            )),
            _ => {}
        }
    }
    if nested && !out.is_empty() {
        out.push(
            "a field inside a Vec's elements or a map's values is reached by each or \
             each_value on the field holding them"
                .to_string(),
        );
    }
    out
}

/// The declared rename of the member at the shape path `path` (from the save's root,
/// `data.player.reputation`) to `to`, as a step file writes it: its path from `data`, and
/// the new member's name alone.
fn declared_rename(path: &str, to: &str) -> String {
    let from = path
        .strip_prefix("data.")
        .or_else(|| path.strip_prefix("data"))
        .unwrap_or(path);
    let to = to.rsplit('.').next().unwrap_or(to);
    serde_json::json!({"rename": from, "to": to}).to_string()
}

/// Fails, listing each difference and what to do, when what the game's type `T` reads
/// differs from the shape recorded for the chain's latest version, when that version has
/// no shape, or when the chain has none: the drift guard for a Rust game's own `cargo
/// test`: a test that calls it (`#[test] fn no_drift() { ... }`) is the guard.
///
/// ```
/// use savechain::shape::{self, Shapes};
/// use savechain::upgrade::Chain;
///
/// #[derive(serde::Deserialize)]
/// struct State { gold: u32 }
///
/// // Version 1's shape, recorded from the type itself: no drift.
/// let recorded = Shapes::file_text(1, &shape::of::<State>()?);
/// let shapes = Shapes::from_files(&[(Shapes::file_name(1), recorded)])?;
/// let chain = Chain::new("1.0.0", vec![])?.with_shapes(shapes)?;
/// savechain::guard::guard::<State>(&chain)?;
///
/// // A later build renames the field without a new version: the guard fails.
/// #[derive(serde::Deserialize)]
/// struct Renamed { coins: u32 }
/// let err = savechain::guard::guard::<Renamed>(&chain).unwrap_err();
/// assert!(err.to_string().contains("likely renamed to data.coins"), "{err}");
/// # Ok::<(), savechain::Error>(())
/// ```
///
/// See [`drift`] for what is compared.
pub fn guard<T: serde::de::DeserializeOwned>(chain: &Chain) -> Result<()> {
    drift::<T>(chain)?.into_result()
}

/// How what the game's type `T` reads (its shape, [`crate::shape::of`]) differs
/// from the shape recorded for the chain's latest version: each difference by path (a
/// member added, removed, of another kind, now required or optional, likely renamed),
/// [`Found::Difference`]; and each chain (the game's, its mods') whose latest version has no
/// recorded shape, [`Found::Unrecorded`]. When the latest version has no shape, `T` is
/// compared with nothing: record it first.
///
/// Errors: the chain has no recorded shapes (saying how to record them), `T` cannot be
/// described.
pub fn drift<T: serde::de::DeserializeOwned>(chain: &Chain) -> Result<Drift> {
    let mut drift = start(chain)?;
    if drift.recorded == chain.latest() {
        let recorded = chain
            .shapes()
            .get(drift.recorded)
            .expect("the latest recorded version has a shape");
        let current = crate::shape::of::<T>()?;
        drift.found.extend(
            compare(recorded, &current)
                .into_iter()
                .map(Found::Difference),
        );
    }
    Ok(drift)
}

/// The shape of the game's latest version, or an error saying how to record shapes.
fn latest_recorded(chain: &Chain) -> Result<(u64, &Shape)> {
    chain.shapes().latest().ok_or_else(|| {
        Error::new(
            ErrorKind::Shape,
            format!(
                "the chain has no recorded shapes, so nothing says what the game reads: record \
                 the shape of its latest version, {} (save-upgrade shape record SAVES, from \
                 saves the game writes now, or shape::record_type from its Rust type), and \
                 commit the file beside the steps",
                chain.latest()
            ),
        )
    })
}

/// The drift (with nothing found yet) of `chain`: its latest version and the latest
/// recorded, and each chain (the game's, its mods') whose latest version has no shape.
fn start(chain: &Chain) -> Result<Drift> {
    let (recorded, _) = latest_recorded(chain)?;
    let mut drift = Drift {
        latest: chain.latest(),
        recorded,
        file: chain.shapes().file(recorded).map(FsPath::to_path_buf),
        found: Vec::new(),
    };
    if recorded < chain.latest() {
        drift.found.push(Found::Unrecorded {
            in_mod: None,
            latest: chain.latest(),
            recorded,
        });
    }
    for m in chain.mods() {
        if let Some((recorded, _)) = m.shapes().latest() {
            if recorded < m.latest() {
                drift.found.push(Found::Unrecorded {
                    in_mod: Some(m.name().to_string()),
                    latest: m.latest(),
                    recorded,
                });
            }
        }
    }
    Ok(drift)
}

/// Whether mod `m` has a shape recorded for its latest version, so saves' parts of it are
/// checked.
fn mod_recorded(m: &Mod) -> bool {
    m.shapes().get(m.latest()).is_some()
}

/// The drift of `saves`, what the game writes now (at the chain's latest version), from
/// the chain's recorded shapes: `save-upgrade shape check SAVES`.
///
/// The game's data of each save is checked against the shape of the chain's latest
/// version, and each mod's part against the mod's shape of its version, when the latest
/// versions have one; a chain (the game's or a mod's) whose latest version has no shape is
/// a difference itself ([`Found::Unrecorded`]). A save beyond the latest version is a
/// difference ([`Found::BeyondLatest`]). A required member missing beside a member the
/// shape does not name, holding a value the missing one's shape reads, is reported once
/// as a likely rename ([`Found::LikelyRenamed`]) instead of two mismatches. A mismatch
/// found in several saves is reported once, naming them.
///
/// Errors: the chain has no recorded shapes (the message says how to record them), a save
/// older than the latest version (not what the game writes now: check old saves with
/// [`Chain::check_save`]), a mod's version with no recorded shape in a save.
pub fn drift_of_saves(chain: &Chain, saves: &[Save]) -> Result<Drift> {
    let mut drift = start(chain)?;
    let latest = chain.latest();
    let game_recorded = drift.recorded == latest;
    for (index, save) in saves.iter().enumerate() {
        let version = save.meta.version;
        if version < latest {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "save {} is version {version}, older than the chain's latest version \
                     {latest}: the drift guard takes saves the game writes now (check saves of \
                     older versions with save-upgrade validate)",
                    index + 1
                ),
            ));
        }
        if version > latest {
            drift.found.push(Found::BeyondLatest {
                save: index,
                version,
            });
            continue;
        }
        if game_recorded {
            let found = chain
                .check_game_data(&save.data, version)
                .expect("the latest version has a shape");
            let shape = chain.shapes().get(version).expect("recorded");
            add_save(&mut drift, index, None, shape, &save.data, &[], found);
        }
        for m in chain.mods() {
            if !mod_recorded(m) {
                continue;
            }
            let Some((shape, found)) = m.check_part(save)? else {
                continue;
            };
            let part = save.data.get("mods").and_then(|mods| mods.get(m.name()));
            let part = part.unwrap_or(&Value::Null);
            let at = ["mods", m.name()];
            add_save(&mut drift, index, Some(m.name()), shape, part, &at, found);
        }
    }
    Ok(drift)
}

/// Adds the mismatches `found` of save `index` (of the game's data, or of mod `in_mod`'s
/// part at `within`, both checked against `shape` from `value`) to `drift`: likely renames
/// paired, and each mismatch or rename already found in another save given that save too.
fn add_save(
    drift: &mut Drift,
    index: usize,
    in_mod: Option<&str>,
    shape: &Shape,
    value: &Value,
    within: &[&str],
    found: Vec<Mismatch>,
) {
    // Paths start `data`, then `within`, then the place inside `value`.
    let skip = 1 + within.len();
    let inside = |m: &Mismatch| -> Vec<Segment> { m.path.segments()[skip..].to_vec() };
    let mut renames: Vec<(usize, usize)> = Vec::new();
    for (i, missing) in found.iter().enumerate() {
        if missing.kind != MismatchKind::Missing {
            continue;
        }
        let Some((Segment::Key(_), parent)) = inside(missing)
            .split_last()
            .map(|(l, p)| (l.clone(), p.to_vec()))
        else {
            continue;
        };
        let Some(member_shape) = shape_at(shape, &inside(missing)) else {
            continue;
        };
        let fits = |j: usize| {
            let extra = &found[j];
            let segments = inside(extra);
            extra.kind == MismatchKind::Extra
                && segments.len() == parent.len() + 1
                && segments[..parent.len()] == parent[..]
                && value_at(value, &segments).is_some_and(|v| member_shape.matches(v))
        };
        let candidates: Vec<usize> = (0..found.len()).filter(|&j| fits(j)).collect();
        if let [j] = candidates.as_slice() {
            if !renames.iter().any(|(_, taken)| taken == j) {
                renames.push((i, *j));
            }
        }
    }
    let paired: Vec<usize> = renames.iter().flat_map(|&(i, j)| [i, j]).collect();
    let in_mod = in_mod.map(str::to_string);
    for &(i, j) in &renames {
        let from = found[i].path.clone();
        let Some(Segment::Key(to)) = found[j].path.segments().last().cloned() else {
            continue;
        };
        let mut declared = within.iter().map(|k| key_text(k)).collect::<Vec<_>>();
        declared.push(shape_path(shape, &inside(&found[i])));
        let declared = join_shape_path(&declared);
        let same = drift.found.iter_mut().find(|f| {
            matches!(f, Found::LikelyRenamed { in_mod: m, from: fr, to: t, .. }
                if *m == in_mod && *fr == from && *t == to)
        });
        match same {
            Some(Found::LikelyRenamed { saves, .. }) => saves.push(index),
            _ => drift.found.push(Found::LikelyRenamed {
                saves: vec![index],
                in_mod: in_mod.clone(),
                from,
                to,
                declared,
            }),
        }
    }
    for (k, mismatch) in found.into_iter().enumerate() {
        if paired.contains(&k) {
            continue;
        }
        let same = drift.found.iter_mut().find(|f| {
            matches!(f, Found::Mismatch { in_mod: m, mismatch: other, .. }
                if *m == in_mod && *other == mismatch)
        });
        match same {
            Some(Found::Mismatch { saves, .. }) => saves.push(index),
            _ => drift.found.push(Found::Mismatch {
                saves: vec![index],
                in_mod: in_mod.clone(),
                mismatch,
            }),
        }
    }
}

/// The value at `segments` inside `value`.
fn value_at<'v>(value: &'v Value, segments: &[Segment]) -> Option<&'v Value> {
    segments.iter().try_fold(value, |v, segment| match segment {
        Segment::Key(key) => v.get(key),
        Segment::Index(i) => v.as_array()?.get(*i),
        _ => None,
    })
}

/// The shape the place `segments` (a concrete path inside a value of `shape`) is read by.
fn shape_at<'s>(shape: &'s Shape, segments: &[Segment]) -> Option<&'s Shape> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(shape);
    };
    match (shape, first) {
        (Shape::Object(object), Segment::Key(key)) => {
            shape_at(&object.members.get(key)?.shape, rest)
        }
        (Shape::Map(inner), Segment::Key(_)) | (Shape::Array(inner), Segment::Index(_)) => {
            shape_at(inner, rest)
        }
        (Shape::Tuple(items), Segment::Index(i)) => shape_at(items.get(*i)?, rest),
        (Shape::Nullable(inner), _) => shape_at(inner, segments),
        (Shape::OneOf(shapes), _) => shapes.iter().find_map(|s| shape_at(s, segments)),
        _ => None,
    }
}

/// A key as a path writes it: bare when it is an identifier, quoted in brackets otherwise.
fn key_text(key: &str) -> String {
    Path::from(vec![Segment::Key(key.to_string())]).to_string()
}

/// The shape path of the concrete place `segments` inside a value of `shape`: `[]` for
/// each element of an array, `[*]` for each value of a map (`ship.cargo[].mass`).
fn shape_path(shape: &Shape, segments: &[Segment]) -> String {
    let mut parts = Vec::new();
    let mut here = Some(shape);
    for segment in segments {
        let mut at = here;
        while let Some(Shape::Nullable(inner)) = at {
            at = Some(inner);
        }
        if let Some(Shape::OneOf(shapes)) = at {
            at = shapes
                .iter()
                .find(|s| shape_at(s, std::slice::from_ref(segment)).is_some());
        }
        let (part, next) = match (at, segment) {
            (Some(Shape::Map(inner)), Segment::Key(_)) => ("[*]".to_string(), Some(&**inner)),
            (Some(Shape::Array(inner)), Segment::Index(_)) => ("[]".to_string(), Some(&**inner)),
            (Some(Shape::Object(object)), Segment::Key(key)) => (
                key_text(key),
                object.members.get(key).map(|member| &member.shape),
            ),
            (Some(Shape::Tuple(items)), Segment::Index(i)) => (format!("[{i}]"), items.get(*i)),
            (_, Segment::Key(key)) => (key_text(key), None),
            (_, Segment::Index(i)) => (format!("[{i}]"), None),
            (_, other) => (Path::from(vec![other.clone()]).to_string(), None),
        };
        parts.push(part);
        here = next;
    }
    join_shape_path(&parts)
}

/// Joins the parts of a shape path: keys after dots, bracketed parts as they are.
fn join_shape_path(parts: &[String]) -> String {
    let mut out = String::new();
    for part in parts.iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() && !part.starts_with('[') {
            out.push('.');
        }
        out.push_str(part);
    }
    out
}

/// A place of an upgraded fixture that does not match the shape recorded for the version
/// a step brought it to: the step most likely forgot or mangled that member.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepMismatch {
    /// The fixture (its file, or the name it was given by).
    pub fixture: PathBuf,
    /// The step after which the data did not match, as `name (from -> to, description)`;
    /// `None` for the fixture as it was given, before any step.
    pub step: Option<String>,
    /// The mod whose step it was and whose part did not match, `None` for the game.
    pub in_mod: Option<String>,
    /// Where and what.
    pub mismatch: Mismatch,
}

impl fmt::Display for StepMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whose = self
            .in_mod
            .as_ref()
            .map_or(String::new(), |m| format!("mod {m}'s "));
        match &self.step {
            Some(step) => write!(
                f,
                "{}: after {whose}step {step}: {}",
                self.fixture.display(),
                self.mismatch
            ),
            None => write!(
                f,
                "{}: as it is, before any {whose}step: {}",
                self.fixture.display(),
                self.mismatch
            ),
        }
    }
}

fn step_words(step: &Step) -> String {
    format!(
        "{} ({} -> {}, {})",
        step.name(),
        step.from(),
        step.to(),
        step.description()
    )
}

/// The chain check of one fixture, `save` (named `fixture` in what is reported): upgraded
/// one step at a time, its data checked after each step against the game's recorded shape
/// of the version the step made (when there is one), and at the end, once the mods' steps
/// have run too, each mod's part against the mod's shape of its version. The fixture as
/// given is checked against the shape of its own version too. Mismatches name the member
/// and the step ([`StepMismatch`]).
///
/// A version (the game's or a mod's) with no recorded shape is not checked, so a chain
/// without shapes checks nothing. An error when the fixture does not upgrade, naming it.
pub fn check_fixture(chain: &Chain, fixture: &FsPath, save: Save) -> Result<Vec<StepMismatch>> {
    let mut out = Vec::new();
    let mismatch = |step: Option<String>, in_mod: Option<&str>, mismatch: Mismatch| StepMismatch {
        fixture: fixture.to_path_buf(),
        step,
        in_mod: in_mod.map(str::to_string),
        mismatch,
    };
    // What the last check found: a mismatch still there after the next step is the
    // earlier step's (or the fixture's), and is reported once.
    let mut earlier = Vec::new();
    if let Some(found) = chain.check_game_data(&save.data, save.meta.version) {
        out.extend(found.iter().cloned().map(|m| mismatch(None, None, m)));
        earlier = found;
    }
    // A mod's version with no recorded shape is not checked: fixtures keep old versions.
    let mods_before: Vec<Option<Vec<Mismatch>>> = chain
        .mods()
        .iter()
        .map(|m| m.check_part(&save).ok().flatten().map(|(_, found)| found))
        .collect();
    let latest = chain.latest();
    let mut upgrader = chain.upgrader();
    let mut save = save;
    let mods_ran: Vec<(String, Option<u64>)> = loop {
        let version = save.meta.version;
        // The last upgrade also runs the mods' steps (they wait for the game's latest).
        let last = version + 1 >= latest;
        let options = Options {
            target: (!last).then_some(version + 1),
            ..Options::default()
        };
        let upgraded = upgrader
            .upgrade(save, &options)
            .map_err(|e| e.with_file(fixture))?;
        save = upgraded.save;
        if let Some(step) = chain
            .steps()
            .iter()
            .find(|s| s.to() == save.meta.version && s.from() == version)
        {
            if let Some(found) = chain.check_game_data(&save.data, save.meta.version) {
                let step = step_words(step);
                let new = found.iter().filter(|m| !earlier.contains(m)).cloned();
                out.extend(new.map(|m| mismatch(Some(step.clone()), None, m)));
                earlier = found;
            }
        }
        if last {
            break upgraded
                .mods
                .iter()
                .filter(|report| report.from != report.to)
                .map(|report| (report.name.clone(), report.to))
                .collect();
        }
    };
    for (m, before) in chain.mods().iter().zip(mods_before) {
        let ran = mods_ran.iter().find(|(name, _)| name == m.name());
        let step = ran.and_then(|(_, to)| {
            m.steps()
                .iter()
                .find(|s| Some(s.to()) == *to)
                .map(step_words)
        });
        let found = match ran {
            Some(_) => m.check_part(&save).ok().flatten().map(|(_, found)| found),
            None => before,
        };
        out.extend(
            found
                .unwrap_or_default()
                .into_iter()
                .map(|found| mismatch(step.clone(), Some(m.name()), found)),
        );
    }
    Ok(out)
}

/// The chain check ([`check_fixture`]) of every save under the folder `fixtures`
/// (searched as [`crate::fixtures::check`] searches it), in path order: what
/// `save-upgrade test FIXTURES` adds when the chain has shapes. Files that are not saves
/// are skipped; one that does not load or upgrade is an error naming it.
pub fn check_fixtures(chain: &Chain, fixtures: &FsPath) -> Result<Vec<StepMismatch>> {
    let plan = crate::batch::Plan::find(&[fixtures]);
    if let Some(error) = plan.errors.into_iter().next() {
        return Err(error);
    }
    let mut out = Vec::new();
    for found in &plan.saves {
        let bytes = crate::fsio::read_regular(&found.path)
            .map_err(|e| Error::io(e, "cannot read the file").with_file(&found.path))?;
        let save = match Save::from_slice(&bytes) {
            Ok(save) => save,
            Err(e) if e.kind() == ErrorKind::NotASave => continue,
            Err(e) => return Err(e.with_file(&found.path)),
        };
        out.extend(check_fixture(chain, &found.path, save)?);
    }
    Ok(out)
}

/// The game's versions, from the chain's first to its latest, that have no recorded shape:
/// the chain check ([`check_fixture`]) cannot check fixtures at them, nor the declared
/// steps from them against shapes. Empty when every version has a shape, or none has (a
/// chain without shapes checks nothing, and says so otherwise).
pub fn unrecorded_versions(chain: &Chain) -> Vec<u64> {
    if chain.shapes().is_empty() {
        return Vec::new();
    }
    let first = chain
        .steps()
        .iter()
        .map(Step::from)
        .min()
        .unwrap_or(chain.latest());
    (first..=chain.latest())
        .filter(|&version| chain.shapes().get(version).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shapes;

    fn shapes(files: &[(u64, &str)]) -> Shapes {
        let texts: Vec<(String, String)> = files
            .iter()
            .map(|(v, s)| {
                let shape: Shape = s.parse().unwrap();
                (Shapes::file_name(*v), Shapes::file_text(*v, &shape))
            })
            .collect();
        Shapes::from_files(&texts).unwrap()
    }

    fn lua(name: &str, source: &str) -> Step {
        Step::lua(name, source).unwrap()
    }

    fn noop(name: &str) -> Step {
        lua(name, "return function(data) end")
    }

    fn save(text: &str) -> Save {
        Save::from_str(text).unwrap()
    }

    const PLAYER: &str =
        r#"{"object": {"player": {"object": {"name": "string", "reputation": "i64"}}}}"#;

    #[test]
    fn a_chain_without_shapes_is_an_error_saying_how_to_record() {
        let chain = Chain::new("1.0.0", vec![noop("0001-a.lua")]).unwrap();
        let err = drift_of_saves(&chain, &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Shape);
        assert!(
            err.to_string().contains(
                "record the shape of its latest version, 2 (save-upgrade shape record SAVES"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_latest_version_without_a_shape_is_drift() {
        let chain = Chain::new("1.0.0", vec![noop("0001-a.lua")])
            .unwrap()
            .with_shapes(shapes(&[(1, PLAYER)]))
            .unwrap();
        let drift = drift_of_saves(&chain, &[]).unwrap();
        assert!(!drift.is_clean());
        assert!(matches!(
            drift.found[..],
            [Found::Unrecorded {
                in_mod: None,
                latest: 2,
                recorded: 1
            }]
        ));
        let text = drift.to_string();
        assert!(text.contains("version 2 has steps but no recorded shape (the latest recorded is 1): record it (save-upgrade shape record SAVES, or shape::record_type)"), "{text}");
        // Nothing was compared: the heading does not say something does not match.
        assert!(
            text.starts_with(
                "drift: what the game writes cannot be checked against a recorded shape:\n"
            ),
            "{text}"
        );
        assert!(!text.contains("does not match"), "{text}");
        assert!(drift.into_result().is_err());
    }

    #[test]
    fn saves_that_match_are_no_drift() {
        let chain = Chain::new("1.0.0", vec![])
            .unwrap()
            .with_shapes(shapes(&[(1, PLAYER)]))
            .unwrap();
        let good = save(
            r#"{"meta": {"version": 1}, "data": {"player": {"name": "Ada", "reputation": 3}}}"#,
        );
        let drift = drift_of_saves(&chain, &[good]).unwrap();
        assert!(drift.is_clean());
        assert_eq!(
            drift.to_string(),
            "no drift: what the game writes matches the recorded shape of version 1, 0001.json"
        );
        assert!(drift.into_result().is_ok());
    }

    #[test]
    fn a_renamed_member_is_a_likely_rename_with_what_to_declare() {
        let chain = Chain::new("1.0.0", vec![])
            .unwrap()
            .with_shapes(shapes(&[(1, PLAYER)]))
            .unwrap();
        let renamed =
            r#"{"meta": {"version": 1}, "data": {"player": {"name": "Ada", "standing": 3}}}"#;
        let drift = drift_of_saves(&chain, &[save(renamed), save(renamed)]).unwrap();
        let [Found::LikelyRenamed {
            saves,
            from,
            to,
            declared,
            in_mod: None,
        }] = &drift.found[..]
        else {
            panic!("{drift:?}");
        };
        assert_eq!(
            (
                saves.as_slice(),
                from.to_string().as_str(),
                to.as_str(),
                declared.as_str()
            ),
            (
                &[0, 1][..],
                "data.player.reputation",
                "standing",
                "player.reputation"
            )
        );
        let text = drift.to_string();
        assert!(text.contains("saves 1, 2: data.player.reputation is missing and \"standing\" beside it is new: likely renamed to \"standing\""), "{text}");
        assert!(text.contains(r#"make version 2: a step 1 -> 2 (declare the renames: {"rename":"player.reputation","to":"standing"}), the game's version 2, and record the shape of 2"#), "{text}");
        // Saves say nothing of a Rust type: the JSON step file alone.
        assert!(!text.contains("#[savechain"), "{text}");

        // A new member whose value the missing one's shape does not read is no rename.
        let changed = save(
            r#"{"meta": {"version": 1}, "data": {"player": {"name": "Ada", "standing": "high"}}}"#,
        );
        let drift = drift_of_saves(&chain, &[changed]).unwrap();
        assert_eq!(drift.found.len(), 2, "{drift}");
        assert!(drift
            .found
            .iter()
            .all(|f| matches!(f, Found::Mismatch { .. })));
    }

    #[test]
    fn renames_inside_elements_and_map_values_are_declared_with_shape_paths() {
        let shape = r#"{"object": {"ship": {"object": {"cargo": {"array": {"object": {"mass": "double"}}}}}, "systems": {"map": {"object": {"x": "i64"}}}}}"#;
        let chain = Chain::new("1.0.0", vec![])
            .unwrap()
            .with_shapes(shapes(&[(1, shape)]))
            .unwrap();
        let s = save(
            r#"{"meta": {"version": 1}, "data": {"ship": {"cargo": [{"weight": 1}]}, "systems": {"tau ceti": {"pos_x": 4}}}}"#,
        );
        let drift = drift_of_saves(&chain, &[s]).unwrap();
        let declared: Vec<&str> = drift
            .found
            .iter()
            .filter_map(|f| match f {
                Found::LikelyRenamed { declared, .. } => Some(declared.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(declared, ["ship.cargo[].mass", "systems[*].x"], "{drift}");
    }

    #[test]
    fn a_mismatch_in_several_saves_is_reported_once_and_old_or_newer_saves_are_told_apart() {
        let chain = Chain::new("1.0.0", vec![noop("0001-a.lua")])
            .unwrap()
            .with_shapes(shapes(&[(2, PLAYER)]))
            .unwrap();
        let bad = r#"{"meta": {"version": 2}, "data": {"player": {"name": 1, "reputation": 3}}}"#;
        let newer = r#"{"meta": {"version": 3}, "data": {}}"#;
        let drift = drift_of_saves(&chain, &[save(bad), save(newer), save(bad)]).unwrap();
        let text = drift.to_string();
        assert_eq!(drift.found.len(), 2, "{text}");
        assert!(
            text.starts_with(
                "drift: what the game writes does not match the recorded shapes (the game's \
                 latest recorded: version 2, 0002.json):\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "  saves 1, 3: data.player.name: the game reads text here; 1 is an integer\n"
            ),
            "{text}"
        );
        assert!(text.contains("  save 2: version 3, beyond the chain's latest version: the steps up to version 3 are missing\n"), "{text}");
        let old = save(r#"{"meta": {"version": 1}, "data": {}}"#);
        let err = drift_of_saves(&chain, &[old]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("save 1 is version 1, older than the chain's latest version 2"),
            "{err}"
        );
    }

    #[test]
    fn a_mod_part_is_checked_by_the_mod_shape() {
        let tinker = Mod::new("tinker", "1.0.0", vec![])
            .unwrap()
            .with_shapes(shapes(&[(1, r#"{"object": {"charge": "u8"}}"#)]))
            .unwrap();
        let chain = Chain::new("1.0.0", vec![])
            .unwrap()
            .with_shapes(shapes(&[(1, r#"{"object": {}}"#)]))
            .unwrap()
            .with_mods(vec![tinker])
            .unwrap();
        let s = save(
            r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1}}}, "data": {"mods": {"tinker": {"charge": 300}}}}"#,
        );
        let drift = drift_of_saves(&chain, &[s]).unwrap();
        let text = drift.to_string();
        assert!(
            matches!(&drift.found[..], [Found::Mismatch { in_mod: Some(m), .. }] if m == "tinker"),
            "{text}"
        );
        assert!(text.contains("what to do for mod tinker"), "{text}");
        assert!(!text.contains("make version 2"), "{text}");
    }

    fn forgetful_chain() -> Chain {
        let steps = vec![
            lua(
                "0001-rename-hp.lua",
                "-- hp is health\nreturn function(d) d.health = d.hp; d.hp = nil end",
            ),
            lua(
                "0002-add-shield.lua",
                "-- add the shield\nreturn function(d) end",
            ),
        ];
        let health = r#"{"object": {"health": "u32"}}"#;
        let shielded = r#"{"object": {"health": "u32", "shield": "double"}}"#;
        Chain::new("1.0.0", steps)
            .unwrap()
            .with_shapes(shapes(&[
                (1, r#"{"object": {"hp": "u32"}}"#),
                (2, health),
                (3, shielded),
            ]))
            .unwrap()
    }

    #[test]
    fn a_step_that_forgets_a_member_is_named_with_the_member() {
        let chain = forgetful_chain();
        let fixture = save(r#"{"meta": {"version": 1}, "data": {"hp": 3}}"#);
        let found = check_fixture(&chain, FsPath::new("fixtures/v1/a.json"), fixture).unwrap();
        let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            ["fixtures/v1/a.json: after step 0002-add-shield.lua (2 -> 3, add the shield): data.shield: the game reads a number (a double) here; the member is missing"]
        );
        assert_eq!(
            found[0].step.as_deref(),
            Some("0002-add-shield.lua (2 -> 3, add the shield)")
        );

        // A member missing from the start is the fixture's, and reported once.
        let bare = save(r#"{"meta": {"version": 1}, "data": {}}"#);
        let lines: Vec<String> = check_fixture(&chain, FsPath::new("c.json"), bare)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines[0].starts_with("c.json: as it is, before any step: data.hp:"));
        assert!(lines[1].starts_with(
            "c.json: after step 0001-rename-hp.lua (1 -> 2, hp is health): data.health:"
        ));
        assert!(lines[2].starts_with(
            "c.json: after step 0002-add-shield.lua (2 -> 3, add the shield): data.shield:"
        ));

        // The fixture as given is checked against its own version's shape.
        let wrong = save(r#"{"meta": {"version": 2}, "data": {"health": -1}}"#);
        let lines: Vec<String> = check_fixture(&chain, FsPath::new("b.json"), wrong)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(lines[0], "b.json: as it is, before any step: data.health: the game reads an integer from 0 to 4294967295 here; -1 is out of that range");
    }

    #[test]
    fn a_mod_step_that_forgets_a_member_is_named() {
        let tinker = Mod::new(
            "tinker",
            "1.0.0",
            vec![lua(
                "0001-charge.lua",
                "-- charge it\nreturn function(d) end",
            )],
        )
        .unwrap()
        .with_shapes(shapes(&[(2, r#"{"object": {"charge": "u8"}}"#)]))
        .unwrap();
        let chain = Chain::new("1.0.0", vec![noop("0001-a.lua")])
            .unwrap()
            .with_mods(vec![tinker])
            .unwrap();
        let fixture = save(
            r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1}}}, "data": {"mods": {"tinker": {}}}}"#,
        );
        let found = check_fixture(&chain, FsPath::new("m.json"), fixture).unwrap();
        let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            ["m.json: after mod tinker's step 0001-charge.lua (1 -> 2, charge it): data.mods.tinker.charge: the game reads an integer from 0 to 255 here; the member is missing"]
        );
    }

    #[test]
    fn every_fixture_of_a_folder_is_checked_and_one_that_fails_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("v1")).unwrap();
        std::fs::write(
            dir.path().join("v1/a.json"),
            r#"{"meta": {"version": 1}, "data": {"hp": 3}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("v1/settings.json"), r#"{"volume": 3}"#).unwrap();
        std::fs::write(
            dir.path().join("good.json"),
            r#"{"meta": {"version": 3}, "data": {"health": 3, "shield": 1}}"#,
        )
        .unwrap();
        let chain = forgetful_chain();
        let found = check_fixtures(&chain, dir.path()).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].fixture, dir.path().join("v1/a.json"));

        std::fs::write(
            dir.path().join("v1/b.json"),
            r#"{"meta": {"version": 9}, "data": {}}"#,
        )
        .unwrap();
        let err = check_fixtures(&chain, dir.path()).unwrap_err();
        assert_eq!(
            err.file(),
            Some(dir.path().join("v1/b.json").as_path()),
            "{err}"
        );
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Player {
        name: String,
        reputation: i64,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct State {
        player: Player,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct RenamedPlayer {
        name: String,
        standing: i64,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct RenamedState {
        player: RenamedPlayer,
    }

    fn typed_chain(steps: Vec<Step>) -> Chain {
        let dir = tempfile::tempdir().unwrap();
        crate::shape::record_type::<State>(dir.path(), 1).unwrap();
        Chain::new("1.0.0", steps)
            .unwrap()
            .with_shapes(Shapes::from_dir(dir.path()).unwrap())
            .unwrap()
    }

    #[test]
    fn the_type_the_shape_was_recorded_from_passes_the_guard() {
        let chain = typed_chain(vec![]);
        guard::<State>(&chain).unwrap();
        assert!(drift::<State>(&chain).unwrap().is_clean());
    }

    #[test]
    fn a_member_renamed_in_the_type_without_a_new_version_fails_the_guard() {
        let chain = typed_chain(vec![]);
        let drift = drift::<RenamedState>(&chain).unwrap();
        assert!(!drift.is_clean());
        assert!(
            drift
                .found
                .iter()
                .all(|f| matches!(f, Found::Difference(_))),
            "{drift}"
        );
        let text = drift.to_string();
        assert!(
            text.contains("reputation") && text.contains("standing"),
            "{text}"
        );
        assert!(text.contains("make version 2: a step 1 -> 2"), "{text}");
        // A Rust game declares the step on its type: the derive's attribute, at = 1.
        assert!(
            text.contains(
                "the step declared on the game's type instead (#[derive(savechain::Declare)], \
                 at = 1: the step from 1): on the field data.player.standing, \
                 #[savechain(renamed(from = \"reputation\", at = 1))]"
            ),
            "{text}"
        );
        let err = guard::<RenamedState>(&chain).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Shape);
        assert_eq!(err.to_string(), text);
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct GrownPlayer {
        name: String,
        reputation: i64,
        shield: f64,
    }

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct GrownState {
        player: GrownPlayer,
    }

    #[test]
    fn a_member_added_in_the_type_is_declared_with_the_derive_s_added() {
        let text = drift::<GrownState>(&typed_chain(vec![]))
            .unwrap()
            .to_string();
        assert!(
            text.contains(
                "on the field data.player.shield, #[savechain(added(at = 1, default = ...))]"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_latest_version_without_a_shape_fails_the_guard_whatever_the_type() {
        let chain = typed_chain(vec![noop("0001-a.lua")]);
        let err = guard::<State>(&chain).unwrap_err();
        assert!(
            err.to_string()
                .contains("version 2 has steps but no recorded shape"),
            "{err}"
        );
        let bare = Chain::new("1.0.0", vec![]).unwrap();
        assert!(guard::<State>(&bare)
            .unwrap_err()
            .to_string()
            .contains("no recorded shapes"));
    }

    #[test]
    fn unrecorded_versions_are_those_between_the_first_and_the_latest_without_a_shape() {
        let steps = vec![noop("0001-a.lua"), noop("0002-b.lua"), noop("0003-c.lua")];
        let chain = Chain::new("1.0.0", steps.clone())
            .unwrap()
            .with_shapes(shapes(&[(1, PLAYER), (3, PLAYER)]))
            .unwrap();
        assert_eq!(unrecorded_versions(&chain), [2, 4]);
        // A chain without shapes checks nothing, and says so otherwise.
        let bare = Chain::new("1.0.0", steps).unwrap();
        assert_eq!(unrecorded_versions(&bare), Vec::<u64>::new());
    }

    #[test]
    fn record_type_records_once() {
        let dir = tempfile::tempdir().unwrap();
        let first = crate::shape::record_type::<State>(dir.path(), 3).unwrap();
        assert!(matches!(first, crate::shape::Recorded::New(_)));
        let again = crate::shape::record_type::<State>(dir.path(), 3).unwrap();
        assert!(matches!(again, crate::shape::Recorded::Same(_)));
        assert!(crate::shape::record_type::<RenamedState>(dir.path(), 3).is_err());
    }

    #[test]
    fn a_declared_rename_is_written_from_data_with_the_new_name_alone() {
        assert_eq!(
            declared_rename("data.player.reputation", "standing"),
            r#"{"rename":"player.reputation","to":"standing"}"#
        );
        assert_eq!(
            declared_rename("data.ship.cargo[].weight", "data.ship.cargo[].mass"),
            r#"{"rename":"ship.cargo[].weight","to":"mass"}"#
        );
    }
}
