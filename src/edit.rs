//! A save changed by hand: a value read or set by its document path, what differs between
//! two saves, and an edited save written back in place of the file it was read from.
//!
//! Paths are those of errors, from the save's document: `data.ship.cargo[0].mass`,
//! `meta.version`. Values are shown in the decimal view
//! ([`Style::Decimal`](crate::text::Style::Decimal)), which reads back bit for bit.
//!
//! ```
//! use savechain::{edit, Save, Value};
//!
//! let mut save = Save::from_str(r#"{"meta": {"version": 3},
//!     "data": {"ship": {"hull": ["d", "0x1.ee147ae147ae1p-1"]}, "player": {}}}"#)?;
//! let before = save.clone();
//! assert_eq!(edit::get(&save, "data.ship.hull")?, Some(Value::Double(0.965)));
//! // A double stays a double when given an integer; a member may be added.
//! edit::set(&mut save, "data.ship.hull", Value::Int(1))?;
//! edit::set(&mut save, "data.player.credits", Value::Int(100_000))?;
//! assert_eq!(save.data["ship"]["hull"], Value::Double(1.0));
//! let changes = edit::diff(&before, &save);
//! assert_eq!(changes.changed[0].path, "data.ship.hull");
//! assert_eq!(changes.changed[0].before.as_deref(), Some(r#"["d",0.965]"#));
//! assert_eq!(changes.added[0].path, "data.player.credits");
//! # Ok::<(), savechain::Error>(())
//! ```

use std::borrow::Cow;
use std::path::{Path as FsPath, PathBuf};

use crate::compress::{Codec, Compression};
use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::path::{self, Path, Segment, Step};
use crate::shape::{Mismatch, Shape};
use crate::upgrade::diff::diff_into;
use crate::upgrade::{history_reached, Chain, Changes};
use crate::value::{Map, Value};
use crate::{Meta, Save};

/// The steps of `text`, owned; an error saying what a path is when it is not one.
fn steps_of(text: &str) -> Result<Vec<Step<'static>>> {
    let steps = path::follow(text, Vec::new(), |mut steps: Vec<Step<'static>>, step| {
        steps.push(match step {
            Step::Key(key) => Step::Key(Cow::Owned(key.into_owned())),
            Step::Index(i) => Step::Index(i),
        });
        Some(steps)
    });
    let steps = steps.ok_or_else(|| {
        let why = match path::with_keys_quoted(text) {
            Some(meant) => format!(
                "a key in brackets is written in double quotes, as errors write it: {meant}"
            ),
            None => "write keys joined by dots and indexes in brackets, as errors write them \
                     (data.ship.cargo[0].mass)"
                .to_string(),
        };
        Error::new(ErrorKind::Value, format!("{text:?} is not a path: {why}"))
    })?;
    match steps.first() {
        Some(Step::Key(key)) if key == "data" || key == "meta" => Ok(steps),
        _ => Err(Error::new(
            ErrorKind::Value,
            format!("{text:?}: a path in a save starts with data or meta (data.player.name)"),
        )),
    }
}

/// The path `text` was likely meant as, when it is not a path only because keys in brackets
/// lack their double quotes (`data.systems[tau ceti].visited`, as a shell leaves
/// `data.systems["tau ceti"].visited` typed unquoted): `data.systems["tau ceti"].visited`.
pub fn meant_path(text: &str) -> Option<String> {
    steps_of(text)
        .is_err()
        .then(|| path::with_keys_quoted(text))?
}

/// The value at `path` in the save (`data.ship.hull`, `meta.version`, `data`): `None` when
/// nothing is there, an error when `path` is not a path of a save.
pub fn get(save: &Save, path: &str) -> Result<Option<Value>> {
    let steps = steps_of(path)?;
    let found = match &steps[0] {
        Step::Key(key) if key == "data" => at(&save.data, &steps[1..]).cloned(),
        _ => at(&save.meta.to_value(), &steps[1..]).cloned(),
    };
    Ok(found)
}

/// [`get`], with nothing at `path` an error saying why: the nearest key there is when a key
/// is not (`data.ship.hull` for `data.ship.hul`), what the value on the way is when it is
/// not an object or an array, or not the one the step needs (`data.systems is an object`
/// for `data.systems[1]`, with its keys).
pub fn get_existing(save: &Save, path: &str) -> Result<Value> {
    let steps = steps_of(path)?;
    let meta;
    let root = match &steps[0] {
        Step::Key(key) if key == "data" => &save.data,
        _ => {
            meta = save.meta.to_value();
            &meta
        }
    };
    let place = Place {
        steps: &steps,
        path,
        allow: Allow::default(),
        reads: &Reads::default(),
    };
    let mut value = root;
    for (n, step) in steps.iter().enumerate().skip(1) {
        value = match step {
            Step::Key(key) => value.as_object().and_then(|m| m.get(key)),
            Step::Index(i) => value.as_array().and_then(|a| a.get(*i)),
        }
        .ok_or_else(|| place.step_error(n, value))?;
    }
    Ok(value.clone())
}

fn at<'v>(root: &'v Value, steps: &[Step<'static>]) -> Option<&'v Value> {
    steps.iter().try_fold(root, |value, step| match step {
        Step::Key(key) => value.as_object()?.get(key),
        Step::Index(i) => value.as_array()?.get(*i),
    })
}

pub use crate::allow::Allow;

/// A value that a change by hand gave another kind, by its path in the document.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KindChange {
    /// Where, as errors write paths: `data.player.rank.level`.
    pub path: String,
    /// Its kind before (`an integer`), as [`Value::kind`] names it.
    pub before: &'static str,
    /// Its kind after (`a double`).
    pub after: &'static str,
}

impl std::fmt::Display for KindChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} from {} to {}", self.path, self.before, self.after)
    }
}

/// Sets the value at `path` in the save and returns the value it replaced (`None` when it
/// added an object's member).
///
/// Everything on the way must be there; the last step may add a member to an object, not
/// an element to an array ([`set_existing`] adds nothing). A double stays a double when
/// given an integer that it holds exactly (`100` over `["d", 96.5]` is the double 100),
/// and so does each double inside an array or object given in its place, matched by key
/// and place. Any other change of a value's kind, there or inside it (`3.5` over the
/// integer `3`, a string over a double, `null` over anything), is refused with the paths
/// and kinds named: [`set_allowing`] with [`Allow::kind_change`] makes it. A change to
/// `meta` must leave a valid `meta` (`meta.version` an integer, `meta.writer` a version),
/// and a version no lower than the one `meta.history` records an upgrade to, since the
/// next upgrade refuses such a save. Any change of `meta.version` or of a mod's version is
/// refused, naming the steps it would skip or run again: [`Allow::version_change`] makes
/// it.
pub fn set(save: &mut Save, path: &str, value: Value) -> Result<Option<Value>> {
    set_allowing(save, path, value, Allow::default().with_new_member())
}

/// [`set`], refusing to add a member: a path whose last key is not there is an error,
/// which names the nearest key there is (`credit` for `credits`), since a mistyped key
/// would otherwise add a member the game never reads.
pub fn set_existing(save: &mut Save, path: &str, value: Value) -> Result<Value> {
    set_allowing(save, path, value, Allow::default())
        .map(|old| old.expect("set_allowing adds nothing here"))
}

/// [`set`] doing what `allow` allows: a new member, a change of kind (the value then taken
/// as given: `3` over the double `3.5` is the integer 3).
///
/// ```
/// use savechain::edit::{self, Allow};
/// use savechain::{Save, Value};
///
/// let mut save = Save::from_str(r#"{"meta": {"version": 1}, "data": {"level": 3}}"#)?;
/// let err = edit::set(&mut save, "data.level", Value::Double(3.5)).unwrap_err();
/// assert!(err.to_string().contains("data.level from an integer to a double"));
/// let kinds = Allow::default().with_kind_change();
/// edit::set_allowing(&mut save, "data.level", Value::Double(3.5), kinds)?;
/// edit::set_allowing(&mut save, "data.level", Value::Int(3), kinds)?;
/// assert_eq!(save.data["level"], Value::Int(3));
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn set_allowing(
    save: &mut Save,
    path: &str,
    value: Value,
    allow: Allow,
) -> Result<Option<Value>> {
    set_reading(save, path, value, allow, &Reads::default())
}

/// [`set_allowing`] for a save of `chain`'s game: where the chain records what the game
/// reads at the place (the shape of the save's version, or of a mod's for its part), that
/// decides the kind. A value of another kind that the game reads there is a fix, not a
/// change of kind, and is set without [`Allow::kind_change`] (`true` over `1` where the
/// game reads a bool); an integer given where a double is stays an integer when the game
/// reads an integer there (`3` over the double `3.0` where it reads a `u32`). Elsewhere
/// (no recorded shape, a save of another game, `meta`, a place read as anything) it is
/// [`set_allowing`]. Whether the save as a whole is then what the game reads is
/// [`check_shape`]'s to say.
///
/// ```
/// use savechain::edit::{self, Allow};
/// use savechain::shape::Shapes;
/// use savechain::upgrade::Chain;
/// use savechain::{Save, Value};
///
/// let shapes = Shapes::from_files(&[(
///     "0001.json",
///     r#"{"data": {"object": {"level": "u32", "seen": "bool"}}, "savechain_shape": 1, "version": 1}"#,
/// )])?;
/// let chain = Chain::new("1.0.0", vec![])?.with_shapes(shapes)?;
/// let mut save = Save::from_str(
///     r#"{"meta": {"version": 1}, "data": {"level": ["d", "0x1.8p+1"], "seen": 1}}"#,
/// )?;
/// edit::set_shaped(&chain, &mut save, "data.seen", Value::Bool(true), Allow::default())?;
/// edit::set_shaped(&chain, &mut save, "data.level", Value::Int(3), Allow::default())?;
/// assert_eq!(save.data["seen"], Value::Bool(true));
/// assert_eq!(save.data["level"], Value::Int(3));
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn set_shaped(
    chain: &Chain,
    save: &mut Save,
    path: &str,
    value: Value,
    allow: Allow,
) -> Result<Option<Value>> {
    let reads = Reads::of(chain, &save.meta, save);
    set_reading(save, path, value, allow, &reads)
}

fn set_reading(
    save: &mut Save,
    path: &str,
    value: Value,
    allow: Allow,
    reads: &Reads,
) -> Result<Option<Value>> {
    let steps = steps_of(path)?;
    let in_meta = matches!(&steps[0], Step::Key(key) if key == "meta");
    let at = Place {
        steps: &steps,
        path,
        allow,
        reads,
    };
    if !in_meta {
        return at.set(&mut save.data, value);
    }
    let mut meta = save.meta.to_value();
    let old = at.set(&mut meta, value)?;
    let mut envelope = Map::new();
    envelope.insert("data", Value::Null);
    envelope.insert("meta", meta);
    let meta = Save::from_value(Value::Object(envelope))?.meta;
    check_history(&save.meta, &meta)?;
    refuse_unasked(&[], &version_changes(&save.meta, &meta), allow)?;
    save.meta = meta;
    Ok(old)
}

/// Checks `edited`, the save `original` changed as a whole (in a text editor), and makes it
/// what is to be written; returns the values whose kind it changed (none unless `allow`
/// allows it).
///
/// Unless `allow` allows a change of kind, an integer typed where a double is stays a
/// double ([`keep_doubles`]), and any other change of a value's kind is refused, every one
/// named. A version below the one `meta.history` records an upgrade to is refused (for
/// the game's data, or a mod's in `meta.mods`) unless the save was read so; any other
/// change of a version is refused unless `allow` allows it ([`Allow::version_change`]).
/// One refusal names every change of kind and of version that was not allowed. New members
/// are always allowed here: the text shows them.
pub fn check_edit(original: &Save, edited: &mut Save, allow: Allow) -> Result<Vec<KindChange>> {
    check_edit_reading(original, edited, allow, &Reads::default())
}

/// [`check_edit`] for a save of `chain`'s game, following what the game reads where the
/// chain records it, as [`set_shaped`] does: a value retyped as another kind that the game
/// reads there is not refused as a change of kind, and an integer typed over a double
/// stays an integer where the game reads an integer. The values whose kind changed are
/// all returned, those allowed so included. Whether the edited save is what the game reads
/// is [`check_shape`]'s to say.
pub fn check_edit_shaped(
    chain: &Chain,
    original: &Save,
    edited: &mut Save,
    allow: Allow,
) -> Result<Vec<KindChange>> {
    let reads = Reads::of(chain, &original.meta, edited);
    check_edit_reading(original, edited, allow, &reads)
}

fn check_edit_reading(
    original: &Save,
    edited: &mut Save,
    allow: Allow,
    reads: &Reads,
) -> Result<Vec<KindChange>> {
    if !allow.kind_change {
        let mut at = vec![Segment::Key("data".to_string())];
        keep_doubles_in(&original.data, &mut edited.data, &mut at, reads);
    }
    check_history(&original.meta, &edited.meta)?;
    let changes = kind_changes(original, edited);
    let unread = kind_changes_reading(original, edited, reads);
    refuse_unasked(
        &unread,
        &version_changes(&original.meta, &edited.meta),
        allow,
    )?;
    Ok(changes)
}

/// Refuses `after`, the save `before` changed by hand ([`set_allowing`], [`check_edit`]),
/// when the change makes it hold what the game does not read at its version: each place
/// where `after` does not match the shape `chain` records for its version (and each mod's
/// part, at the mod's version), unless `before` already did not match there the same way
/// (a wrong value, a required member missing, a member the game does not read). A save
/// that did not match before stays editable: only what the change brings is refused.
///
/// Nothing is checked where the chain cannot tell: a version with no recorded shape, or a
/// save of another game than the one the chain names ([`Chain::game`]). Nor is the part
/// (the game's data, or a mod's) whose version the change sets: a version changed by hand,
/// which only [`Allow::version_change`] allows, puts its data knowingly at odds with it. The error, of kind
/// [`ErrorKind::Shape`], names each place and what the game reads there
/// (`data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a
/// double`); [`Allow::shape_mismatch`] lets the change through
/// ([`Error::refused_unless`] says so).
///
/// ```
/// use savechain::edit::{self, Allow};
/// use savechain::shape::Shapes;
/// use savechain::upgrade::Chain;
/// use savechain::{Save, Value};
///
/// let shapes = Shapes::from_files(&[(
///     "0001.json",
///     r#"{"data": {"object": {"level": "u32"}}, "savechain_shape": 1, "version": 1}"#,
/// )])?;
/// let chain = Chain::new("1.0.0", vec![])?.with_shapes(shapes)?;
/// let before = Save::from_str(r#"{"meta": {"version": 1}, "data": {"level": 3}}"#)?;
/// let mut after = before.clone();
/// let kinds = Allow::default().with_kind_change();
/// edit::set_allowing(&mut after, "data.level", Value::Double(3.5), kinds)?;
/// let err = edit::check_shape(&chain, &before, &after, kinds).unwrap_err();
/// assert!(err.to_string().contains(
///     "data.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double"
/// ));
/// assert!(err.refused_unless().unwrap().shape_mismatch);
/// edit::check_shape(&chain, &before, &after, kinds.with_shape_mismatch())?;
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn check_shape(chain: &Chain, before: &Save, after: &Save, allow: Allow) -> Result<()> {
    if allow.shape_mismatch || !is_of_chains_game(chain, after) {
        return Ok(());
    }
    // A version changed by hand (allowed only when asked for) knowingly puts its data at
    // odds with it: that part is not checked.
    let changed =
        |in_mod: Option<&str>| version_of(&before.meta, in_mod) != version_of(&after.meta, in_mod);
    let found = chain.check_save_where_recorded(after, &changed);
    if found.is_empty() {
        return Ok(());
    }
    // Only when the change brought a mismatch is the save as it was checked too.
    let already = chain.check_save_where_recorded(before, &changed);
    // A place that did not match the same way before is not the change's doing, even when
    // its value changed (3.5 retyped as 3 over a double stays the double 3.0).
    let brought: Vec<&Mismatch> = found
        .iter()
        .filter(|m| !already.iter().any(|a| a.path == m.path && a.kind == m.kind))
        .collect();
    if brought.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 10;
    let mut listed = brought
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if brought.len() > SHOWN {
        listed += &format!("; and {} more", brought.len() - SHOWN);
    }
    let version = after.meta.version;
    Err(Error::new(
        ErrorKind::Shape,
        format!(
            "{listed}. The game at version {version} reads the save as its recorded shape \
             says, so it would fail to load this, or drop what it does not read"
        ),
    )
    .unless(Allow {
        shape_mismatch: true,
        ..Allow::default()
    }))
}

/// Whether `save` is of the game `chain` is for: any save when the chain names no game.
fn is_of_chains_game(chain: &Chain, save: &Save) -> bool {
    match chain.game() {
        None => true,
        Some(game) => save.meta.extra.get("game").and_then(Value::as_str) == Some(game),
    }
}

/// Why a hand edit of a save is not checked against a chain's shapes ([`check_shape`],
/// [`set_shaped`]): [`not_checked`] tells.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotChecked {
    /// The save is of another game than the one the chain is for.
    OtherGame {
        /// The save's `meta.game`, `None` when it names none.
        save: Option<String>,
        /// The chain's game ([`Chain::game`]).
        chain: String,
    },
    /// The chain records no shape of the save's version.
    NoShape {
        /// The save's `meta.version`.
        version: u64,
        /// Whether the chain records the shape of any version.
        any: bool,
    },
}

impl std::fmt::Display for NotChecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotChecked::OtherGame {
                save: Some(game),
                chain,
            } => write!(f, "the save is of game {game:?}, the chain's is {chain:?}"),
            NotChecked::OtherGame { save: None, chain } => write!(
                f,
                "the save names no game (meta.game), the chain's is {chain:?}"
            ),
            NotChecked::NoShape { version, any: true } => {
                write!(f, "version {version} has no recorded shape")
            }
            NotChecked::NoShape {
                version,
                any: false,
            } => write!(
                f,
                "version {version} has no recorded shape (the chain records none)"
            ),
        }
    }
}

/// Why the game's data of `save` is not checked against `chain`'s shapes by a hand edit,
/// `None` when it is: a save of another game, or of a version with no recorded shape.
pub fn not_checked(chain: &Chain, save: &Save) -> Option<NotChecked> {
    if !is_of_chains_game(chain, save) {
        return Some(NotChecked::OtherGame {
            save: save
                .meta
                .extra
                .get("game")
                .and_then(Value::as_str)
                .map(str::to_string),
            chain: chain.game().unwrap_or_default().to_string(),
        });
    }
    let version = save.meta.version;
    chain
        .shapes()
        .get(version)
        .is_none()
        .then(|| NotChecked::NoShape {
            version,
            any: !chain.shapes().is_empty(),
        })
}

/// What the game reads at the places of a save, by the shapes a chain records for the
/// save's version (its data) and for each mod's version (its part): a hand edit follows it.
/// Empty for a save of another game, and for a part whose version the edit changes.
#[derive(Default)]
struct Reads<'c> {
    game: Option<&'c Shape>,
    mods: Vec<(&'c str, &'c Shape)>,
}

impl<'c> Reads<'c> {
    /// What `chain` says the game reads in `after`, a change of a save whose `meta` was
    /// `before`.
    fn of(chain: &'c Chain, before: &Meta, after: &Save) -> Reads<'c> {
        if !is_of_chains_game(chain, after) {
            return Reads::default();
        }
        let kept =
            |in_mod: Option<&str>| version_of(before, in_mod) == version_of(&after.meta, in_mod);
        let game = match kept(None) {
            true => chain.shapes().get(after.meta.version),
            false => None,
        };
        let mods = chain
            .mods()
            .iter()
            .filter(|m| kept(Some(m.name())))
            .filter_map(|m| {
                let version = version_of(&after.meta, Some(m.name()))?;
                Some((m.name(), m.shapes().get(version)?))
            })
            .collect();
        Reads { game, mods }
    }

    /// The shape at `path` (from the save's root), when one says what the game reads there:
    /// not in `meta`, not where a member the game does not read leads, not inside one of
    /// several shapes, not a place read as anything.
    fn at(&self, path: &[Segment]) -> Option<&'c Shape> {
        let [Segment::Key(root), rest @ ..] = path else {
            return None;
        };
        if root != "data" {
            return None;
        }
        let game_reads_mods = match self.game {
            Some(Shape::Object(object)) => object.members.contains_key("mods"),
            Some(_) => true,
            None => false,
        };
        let (mut shape, rest) = match rest {
            [Segment::Key(mods), Segment::Key(name), rest @ ..]
                if mods == "mods" && !game_reads_mods =>
            {
                (self.mods.iter().find(|(n, _)| n == name)?.1, rest)
            }
            _ => (self.game?, rest),
        };
        for step in rest {
            shape = inside(shape, step)?;
        }
        (*shape != Shape::Any).then_some(shape)
    }

    /// Whether the game reads `value` at `path`, by a recorded shape.
    fn reads(&self, path: &[Segment], value: &Value) -> bool {
        self.at(path).is_some_and(|shape| shape.matches(value))
    }

    /// Whether the game reads `value`, an integer, as an integer at `path` (not as the
    /// double it would be kept as).
    fn reads_integer(&self, path: &[Segment], value: &Value) -> bool {
        let as_double = match value {
            Value::Int(i) => *i as f64,
            Value::UInt(u) => *u as f64,
            _ => return false,
        };
        self.at(path)
            .is_some_and(|shape| shape.matches(value) && !shape.matches(&Value::Double(as_double)))
    }
}

/// The shape of what `shape` holds at `step`.
fn inside<'s>(shape: &'s Shape, step: &Segment) -> Option<&'s Shape> {
    match (shape, step) {
        (Shape::Nullable(inner), _) => inside(inner, step),
        (Shape::Any, _) => Some(shape),
        (Shape::Object(object), Segment::Key(key)) => {
            object.members.get(key.as_str()).map(|m| &m.shape)
        }
        (Shape::Map(values), Segment::Key(_)) => Some(values),
        (Shape::Array(elements), Segment::Index(_)) => Some(elements),
        (Shape::Tuple(elements), Segment::Index(i)) => elements.get(*i),
        _ => None,
    }
}

/// A version changed by hand: the game's (`mod_name` `None`) or a mod's, `None` where the
/// save records none.
struct VersionChange<'m> {
    mod_name: Option<&'m str>,
    before: Option<u64>,
    after: Option<u64>,
}

/// The version of the game's data, or of mod `name`'s in `meta.mods`.
fn version_of(meta: &Meta, in_mod: Option<&str>) -> Option<u64> {
    match in_mod {
        None => Some(meta.version),
        Some(name) => meta
            .extra
            .get("mods")
            .and_then(|mods| mods.get(name))
            .and_then(|entry| entry.get("version"))
            .and_then(Value::as_u64),
    }
}

/// The versions that differ between two `meta`s: the game's, then each mod's recorded in
/// either.
fn version_changes<'m>(before: &'m Meta, after: &'m Meta) -> Vec<VersionChange<'m>> {
    let mut names: Vec<Option<&str>> = vec![None];
    for meta in [before, after] {
        if let Some(Value::Object(mods)) = meta.extra.get("mods") {
            for (name, _) in mods.iter() {
                if !names.contains(&Some(name)) {
                    names.push(Some(name));
                }
            }
        }
    }
    names
        .into_iter()
        .map(|mod_name| VersionChange {
            mod_name,
            before: version_of(before, mod_name),
            after: version_of(after, mod_name),
        })
        .filter(|change| change.before != change.after)
        .collect()
}

/// The steps from version `low` to `high`, as `1->2, 2->3`, the middle left out when they
/// are many.
fn steps_between(low: u64, high: u64) -> String {
    let step = |n: u64| format!("{n}->{}", n + 1);
    if high - low <= 4 {
        (low..high).map(step).collect::<Vec<_>>().join(", ")
    } else {
        format!(
            "{}, {}, ..., {} ({} steps)",
            step(low),
            step(low + 1),
            step(high - 1),
            high - low
        )
    }
}

impl std::fmt::Display for VersionChange<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, whose) = match self.mod_name {
            None => ("meta.version".to_string(), "steps".to_string()),
            Some(name) => (
                format!("meta{}.version", key_text("mods") + &key_text(name)),
                format!("steps of mod {name:?}"),
            ),
        };
        match (self.before, self.after) {
            (Some(old), Some(new)) if new > old => write!(
                f,
                "{path} would go from {old} to {new}, skipping the {whose} {}: the data would \
                 lack what they do, and the next upgrade would run only the steps after {new} \
                 on it",
                steps_between(old, new)
            ),
            (Some(old), Some(new)) => write!(
                f,
                "{path} would go from {old} to {new}: the next upgrade would run the {whose} \
                 {} again on data that has them",
                steps_between(new, old)
            ),
            (None, Some(new)) => write!(
                f,
                "{path} would be {new} where the save records none: the next upgrade would \
                 take the data to have had the {whose} up to {new}"
            ),
            (Some(old), None) => write!(
                f,
                "{path} would be removed (it is {old}): the next upgrade could not tell which \
                 {whose} the data has had"
            ),
            (None, None) => write!(f, "{path} is unchanged"),
        }
    }
}

/// Refuses the changes of kind and of version that `allow` does not allow, all in one
/// error that says what asking for them is ([`Error::refused_unless`]).
fn refuse_unasked(kinds: &[KindChange], versions: &[VersionChange], allow: Allow) -> Result<()> {
    let kinds = if allow.kind_change { &[][..] } else { kinds };
    let versions = if allow.version_change {
        &[][..]
    } else {
        versions
    };
    let mut parts = Vec::new();
    if !kinds.is_empty() {
        parts.push(kinds_refused(kinds));
    }
    if !versions.is_empty() {
        let listed = versions
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        parts.push(format!(
            "{listed}. A version says which upgrade steps the data has had, so it changes \
             only when a change of version is asked for; upgrading is what brings a save up \
             to date"
        ));
    }
    if parts.is_empty() {
        return Ok(());
    }
    let needs = Allow {
        new_member: false,
        kind_change: !kinds.is_empty(),
        version_change: !versions.is_empty(),
        shape_mismatch: false,
    };
    Err(Error::new(ErrorKind::Value, parts.join(". Also, ")).unless(needs))
}

/// The values present in both saves whose kinds differ, by path: members matched by key,
/// elements by place, `data` before `meta`.
pub fn kind_changes(before: &Save, after: &Save) -> Vec<KindChange> {
    kind_changes_reading(before, after, &Reads::default())
}

/// [`kind_changes`] but those to a value the game reads at its place, by `reads`.
fn kind_changes_reading(before: &Save, after: &Save, reads: &Reads) -> Vec<KindChange> {
    let mut changes = Vec::new();
    let under = |key: &str| vec![Segment::Key(key.to_string())];
    kinds_into(
        &before.data,
        &after.data,
        &mut under("data"),
        reads,
        &mut changes,
    );
    let (meta_before, meta_after) = (before.meta.to_value(), after.meta.to_value());
    kinds_into(
        &meta_before,
        &meta_after,
        &mut under("meta"),
        reads,
        &mut changes,
    );
    changes
}

fn kinds_into(
    old: &Value,
    new: &Value,
    at: &mut Vec<Segment>,
    reads: &Reads,
    out: &mut Vec<KindChange>,
) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b.iter() {
                if let Some(old) = a.get(key) {
                    at.push(Segment::Key(key.to_string()));
                    kinds_into(old, value, at, reads, out);
                    at.pop();
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (old, value)) in a.iter().zip(b.iter()).enumerate() {
                at.push(Segment::Index(i));
                kinds_into(old, value, at, reads, out);
                at.pop();
            }
        }
        // Elements added or removed: places no longer match (deleting the first of
        // [1.5, 2, 3] moves the integer 2 where the double was), so each element is held to
        // the kinds the array had.
        (Value::Array(a), Value::Array(b)) => {
            for (i, value) in b.iter().enumerate() {
                if a.is_empty() || a.iter().any(|old| old.kind() == value.kind()) {
                    continue;
                }
                at.push(Segment::Index(i));
                if !reads.reads(at, value) {
                    out.push(KindChange {
                        path: Path::from(at.clone()).to_string(),
                        before: a[i.min(a.len() - 1)].kind(),
                        after: value.kind(),
                    });
                }
                at.pop();
            }
        }
        _ if old.kind() != new.kind() && !reads.reads(at, new) => out.push(KindChange {
            path: Path::from(at.clone()).to_string(),
            before: old.kind(),
            after: new.kind(),
        }),
        _ => {}
    }
}

/// Why `changes` are refused, unless asked for.
fn kinds_refused(changes: &[KindChange]) -> String {
    const SHOWN: usize = 10;
    let mut listed = changes
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if changes.len() > SHOWN {
        listed += &format!("; and {} more", changes.len() - SHOWN);
    }
    format!(
        "this would change the kind of {}: {listed}. A game that reads the old kind fails on \
         the new one, so a kind changes only when a change of kind is asked for, and the same \
         change with the old value changes it back",
        match changes.len() {
            1 => "a value".to_string(),
            n => format!("{n} values"),
        }
    )
}

/// Refuses `edited`, a `meta` changed by hand from `original`, when it sets the version of
/// the game's data, or of a mod's, below the one its history records an upgrade to, the
/// rule an upgrade refuses such a save by ([`history_reached`]); a save read that way
/// already may keep it.
fn check_history(original: &Meta, edited: &Meta) -> Result<()> {
    let below = |meta: &Meta, in_mod: Option<&str>| {
        let version = version_of(meta, in_mod)?;
        history_reached(meta, in_mod)
            .filter(|&reached| reached > version)
            .map(|reached| (version, reached))
    };
    let mut names: Vec<Option<&str>> = vec![None];
    if let Some(Value::Object(mods)) = edited.extra.get("mods") {
        names.extend(mods.iter().map(|(name, _)| Some(name)));
    }
    for in_mod in names {
        let Some((version, reached)) = below(edited, in_mod) else {
            continue;
        };
        if below(original, in_mod) == Some((version, reached)) {
            continue;
        }
        let (path, whose) = match in_mod {
            None => ("meta.version".to_string(), String::new()),
            Some(name) => (
                format!("meta{}.version", key_text("mods") + &key_text(name)),
                format!(" of mod {name:?}"),
            ),
        };
        return Err(Error::new(
            ErrorKind::Value,
            format!(
                "{path} would be {version}, below version {reached}, the version the save's \
                 history (meta.history) records an upgrade{whose} to: the next upgrade would \
                 refuse the save, since it would run the steps from {version} again on data \
                 that has them. Set it to {reached} or more; to go back to an older version, \
                 restore a backup made before the upgrade (`save-upgrade backups list`)"
            ),
        ));
    }
    Ok(())
}

/// Where a value is set: the steps of `path`, the first (`data` or `meta`) included.
struct Place<'a> {
    steps: &'a [Step<'static>],
    path: &'a str,
    allow: Allow,
    /// What the game reads where, when the chain records it.
    reads: &'a Reads<'a>,
}

impl Place<'_> {
    /// The path of the first `n` steps, as errors write it.
    fn prefix(&self, n: usize) -> String {
        let segments = self.steps[..n]
            .iter()
            .map(|step| match step {
                Step::Key(key) => Segment::Key(key.to_string()),
                Step::Index(i) => Segment::Index(*i),
            })
            .collect::<Vec<_>>();
        Path::from(segments).to_string()
    }

    fn error(&self, why: String) -> Error {
        Error::new(ErrorKind::Value, format!("nothing at {}: {why}", self.path))
    }

    /// The path with step `n` the key `key`.
    fn with_key(&self, n: usize, key: &str) -> String {
        let mut segments = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            segments.push(match step {
                _ if i == n => Segment::Key(key.to_string()),
                Step::Key(key) => Segment::Key(key.to_string()),
                Step::Index(i) => Segment::Index(*i),
            });
        }
        Path::from(segments).to_string()
    }

    /// Why step `n` leads nowhere from `parent`, the value at the steps before it.
    fn step_error(&self, n: usize, parent: &Value) -> Error {
        let here = self.prefix(n);
        let why = match (&self.steps[n], parent) {
            (Step::Key(key), Value::Object(members)) => {
                let near = nearest_key(members, key)
                    .map(|k| format!("; did you mean {}?", self.with_key(n, k)))
                    .unwrap_or_default();
                if n + 1 == self.steps.len() {
                    format!("{here} has no member {key:?}{near}")
                } else {
                    format!("{} is not there{near}", self.prefix(n + 1))
                }
            }
            (Step::Index(_), Value::Array(items)) if items.is_empty() => {
                format!("{here} is an empty array")
            }
            (Step::Index(_), Value::Array(items)) => format!(
                "{here} has {} elements (indexes 0 to {})",
                items.len(),
                items.len() - 1
            ),
            (Step::Index(i), Value::Object(members)) => {
                const SHOWN: usize = 10;
                let mut keys = members
                    .iter()
                    .take(SHOWN)
                    .map(|(k, _)| format!("{k:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if members.len() > SHOWN {
                    keys += &format!(" and {} more", members.len() - SHOWN);
                }
                let near = members
                    .get(&i.to_string())
                    .map(|_| format!("; did you mean {}?", self.with_key(n, &i.to_string())))
                    .unwrap_or_default();
                match members.len() {
                    0 => format!("{here} is an empty object, not an array"),
                    _ => format!("{here} is an object, not an array (its keys: {keys}){near}"),
                }
            }
            (Step::Key(_), Value::Array(items)) => format!(
                "{here} is an array of {} elements, not an object: an element is written with \
                 its index, {here}[0]",
                items.len()
            ),
            (_, other) => format!("{here} is {}", other.kind()),
        };
        self.error(why)
    }

    /// `value` to put where `old` is: the doubles of `old` kept in it, and refused when it
    /// changes a kind; as given when a change of kind is allowed.
    fn checked(&self, old: &Value, value: Value) -> Result<Value> {
        if self.allow.kind_change {
            return Ok(value);
        }
        let mut at = Vec::new();
        for step in self.steps {
            at.push(match step {
                Step::Key(key) => Segment::Key(key.to_string()),
                Step::Index(i) => Segment::Index(*i),
            });
        }
        let value = kept_doubles_of(old, value, self.path, &mut at, self.reads)?;
        let mut changes = Vec::new();
        kinds_into(old, &value, &mut at, self.reads, &mut changes);
        refuse_unasked(&changes, &[], self.allow)?;
        Ok(value)
    }

    /// Sets the value in `root`, the value of the first step.
    fn set(&self, root: &mut Value, value: Value) -> Result<Option<Value>> {
        let mut parent = root;
        let last = self.steps.len() - 1;
        for (n, step) in self
            .steps
            .iter()
            .enumerate()
            .skip(1)
            .take(last.saturating_sub(1))
        {
            let found = match step {
                Step::Key(key) => parent.as_object().is_some_and(|m| m.get(key).is_some()),
                Step::Index(i) => parent.as_array().is_some_and(|a| a.get(*i).is_some()),
            };
            if !found {
                return Err(self.step_error(n, parent));
            }
            parent = match step {
                Step::Key(key) => parent.as_object_mut().and_then(|m| m.get_mut(key)),
                Step::Index(i) => parent.as_array_mut().and_then(|a| a.get_mut(*i)),
            }
            .expect("found above");
        }
        if last == 0 {
            let new = self.checked(parent, value)?;
            return Ok(Some(std::mem::replace(parent, new)));
        }
        match (&self.steps[last], parent) {
            (Step::Key(key), Value::Object(members)) => match members.get_mut(key) {
                Some(slot) => {
                    let new = self.checked(slot, value)?;
                    Ok(Some(std::mem::replace(slot, new)))
                }
                None if self.allow.new_member => {
                    members.insert(key.as_ref(), value);
                    Ok(None)
                }
                None => {
                    let near = nearest_key(members, key)
                        .map(|k| format!("; did you mean {}?", self.prefix(last) + &key_text(k)))
                        .unwrap_or_default();
                    Err(self
                        .error(format!(
                            "{} has no member {key:?}{near} (a new member is added only when \
                             asked for)",
                            self.prefix(last)
                        ))
                        .unless(Allow::default().with_new_member()))
                }
            },
            (Step::Index(i), Value::Array(items)) => match items.get_mut(*i) {
                Some(slot) => {
                    let new = self.checked(slot, value)?;
                    Ok(Some(std::mem::replace(slot, new)))
                }
                None => Err(self.error(format!(
                    "the array has {} elements (an element is not added)",
                    items.len()
                ))),
            },
            (_, parent) => Err(self.step_error(last, parent)),
        }
    }
}

/// The member key as a path writes it after its object: `.name`, or `["odd key"]`.
fn key_text(key: &str) -> String {
    let path = Path::from(vec![
        Segment::Key("x".into()),
        Segment::Key(key.to_string()),
    ]);
    path.to_string()[1..].to_string()
}

/// The key of `members` nearest to `key`: the same but for case, or at most two letters
/// added, removed or changed.
fn nearest_key<'m>(members: &'m Map, key: &str) -> Option<&'m str> {
    members
        .iter()
        .map(|(k, _)| k)
        .map(|k| (distance(&k.to_lowercase(), &key.to_lowercase()), k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// `value` to put where `old` is, with the doubles of `old` kept: an integer over a double
/// is that double when the double holds it exactly (an error otherwise), and inside arrays
/// and objects every integer where a double was likewise (left an integer otherwise).
fn kept_doubles_of(
    old: &Value,
    value: Value,
    path: &str,
    at: &mut Vec<Segment>,
    reads: &Reads,
) -> Result<Value> {
    let mut value = match reads.reads_integer(at, &value) {
        true => value,
        false => kept_double(old, value, path)?,
    };
    keep_doubles_in(old, &mut value, at, reads);
    Ok(value)
}

/// `value` to put where `old` is: an integer over a double becomes that double, when the
/// double holds it exactly.
fn kept_double(old: &Value, value: Value, path: &str) -> Result<Value> {
    let as_double = match (old, &value) {
        (Value::Double(_), Value::Int(i)) => Some((*i as f64, (*i as f64) as i64 == *i)),
        (Value::Double(_), Value::UInt(u)) => Some((*u as f64, (*u as f64) as u64 == *u)),
        _ => None,
    };
    match as_double {
        None => Ok(value),
        Some((d, true)) => Ok(Value::Double(d)),
        Some((_, false)) => Err(Error::new(
            ErrorKind::Value,
            format!(
                "{path} is a double, and {value} is not one exactly: write it as a decimal \
                 or in a tag, [\"d\", {value}], to store the nearest double"
            ),
        )),
    }
}

/// Makes every integer of `edited` that stands where `original` has a double that double
/// again, when it holds the integer exactly: a person who retypes `["d", 96.5]` as a plain
/// `100` means the double 100, not an integer. Paths are matched as they are in both saves
/// (members by key, elements by place; in an array that gained or lost elements, an integer
/// becomes a double only where the array held doubles alone); nothing else changes.
/// ([`check_edit_shaped`] leaves an integer where the game reads one.)
pub fn keep_doubles(original: &Save, edited: &mut Save) {
    let mut at = vec![Segment::Key("data".to_string())];
    keep_doubles_in(&original.data, &mut edited.data, &mut at, &Reads::default());
}

/// Keeps the doubles of `original` in `edited`, both at `at`, but where `reads` says the
/// game reads an integer.
fn keep_doubles_in(original: &Value, edited: &mut Value, at: &mut Vec<Segment>, reads: &Reads) {
    match (original, edited) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in b.iter_mut() {
                if let Some(old) = a.get(key) {
                    at.push(Segment::Key(key.to_string()));
                    keep_doubles_in(old, value, at, reads);
                    at.pop();
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (old, value)) in a.iter().zip(b.iter_mut()).enumerate() {
                at.push(Segment::Index(i));
                keep_doubles_in(old, value, at, reads);
                at.pop();
            }
        }
        // Elements added or removed: places no longer match, so an integer becomes a double
        // only in an array that held doubles alone (a position, a list of weights).
        (Value::Array(a), Value::Array(b)) => {
            if let Some(double) = a
                .first()
                .filter(|_| a.iter().all(|v| v.kind() == a[0].kind()))
            {
                for (i, value) in b.iter_mut().enumerate() {
                    at.push(Segment::Index(i));
                    keep_doubles_in(double, value, at, reads);
                    at.pop();
                }
            }
        }
        (old @ Value::Double(_), edited @ (Value::Int(_) | Value::UInt(_))) => {
            if reads.reads_integer(at, edited) {
                return;
            }
            if let Ok(double) = kept_double(old, edited.clone(), "") {
                *edited = double;
            }
        }
        _ => {}
    }
}

/// What differs between two saves: the paths from the document's root (`data.ship.hull`,
/// `meta.version`) added, removed and changed, values in the decimal view cut to 60
/// characters. Key order never matters; doubles are compared by their bits.
pub fn diff(before: &Save, after: &Save) -> Changes {
    // Each part in path order (`data` before `meta`, whatever order the text has them), with
    // no copy of the data.
    let mut changes = Changes::default();
    let under = |key: &str| Path::from(vec![Segment::Key(key.to_string())]);
    diff_into(&before.data, &after.data, under("data"), &mut changes);
    let (meta_before, meta_after) = (before.meta.to_value(), after.meta.to_value());
    diff_into(&meta_before, &meta_after, under("meta"), &mut changes);
    changes
}

/// Reads the save at `path`: its bytes, to give [`store_edited`] once it is edited, and the
/// save they hold. Errors name the file, and the line and column of what does not load.
///
/// A compressed save (zstd or gzip, [`crate::compress`]) is read through its text; the
/// bytes returned are the file's, compressed. A damaged one, or one whose text is longer
/// than [`DEFAULT_LIMIT`](crate::compress::DEFAULT_LIMIT), is an error of kind [`ErrorKind::Compressed`].
pub fn read(path: impl AsRef<FsPath>) -> Result<(Vec<u8>, Save)> {
    let path = path.as_ref();
    let bytes = fsio::read_regular(path)
        .map_err(|e| Error::io(e, "cannot read the file").with_file(path))?;
    let save = Save::from_slice(&bytes).map_err(|e| e.with_file(path))?;
    Ok((bytes, save))
}

/// Writes `save`, canonical, to `path` in place of the file whose bytes were `read`,
/// keeping those bytes as a backup beside it; returns the backup's path.
///
/// The backup is `<name>.bak`, or `<name>.<k>.bak` when that exists with other content, so
/// an older backup is never overwritten. Both writes are atomic, and the save's lock is
/// held from checking the file to replacing it: when the file no longer holds `read`
/// (the game or another program wrote it meanwhile), nothing is written and the error is
/// of kind [`ErrorKind::Changed`].
///
/// A compressed save stays compressed: the save is written in the codec of the bytes
/// `read` (at that codec's default level, [`Compression::new`]), and its backup is those
/// bytes, compressed as they were. [`store_edited_with`] chooses the compression.
///
/// ```
/// use savechain::compress::{Codec, Compression};
/// use savechain::{edit, Save, Value};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("slot1.json.zst");
/// Save::new(1, Value::from(3)).store_with(&path, Compression::new(Codec::Zstd))?;
///
/// let (read, mut save) = edit::read(&path)?;
/// edit::set(&mut save, "data", Value::from(4))?;
/// let backup = edit::store_edited(&path, &read, &save)?;
/// assert_eq!(std::fs::read(&backup)?, read);                          // the original bytes
/// assert_eq!(Codec::of(&std::fs::read(&path)?), Codec::Zstd);         // still zstd
/// assert_eq!(Save::load(&path)?.data, Value::from(4));
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn store_edited(path: impl AsRef<FsPath>, read: &[u8], save: &Save) -> Result<PathBuf> {
    store_edited_with(path, read, save, Compression::new(Codec::of(read)))
}

/// [`store_edited`], the save stored as `how` says whatever the bytes `read` were: plain
/// text ([`Compression::NONE`]), zstd or gzip at a level. The backup is the bytes `read`,
/// as they were.
pub fn store_edited_with(
    path: impl AsRef<FsPath>,
    read: &[u8],
    save: &Save,
    how: Compression,
) -> Result<PathBuf> {
    let path = path.as_ref();
    store_at(path, read, save, how).map_err(|e| e.with_file(path))
}

/// Refuses a save that [`store_edited`] would refuse to replace as read-only, with the same
/// error: checked before an edit starts, so that nobody edits what cannot be written.
pub fn check_writable(path: impl AsRef<FsPath>) -> Result<()> {
    let path = path.as_ref();
    fsio::refuse_read_only(path).map_err(|e| e.with_file(path))
}

fn store_at(path: &FsPath, read: &[u8], save: &Save, how: Compression) -> Result<PathBuf> {
    let bytes = save.to_vec_with(how)?;
    let held = fsio::hold_save(path)?;
    let read_print = fsio::Fingerprint::of(read);
    // Checked before the backup is written, and again right before the rename.
    if fsio::Fingerprint::of(&fsio::read_save(path, held.as_ref())?) != read_print {
        return Err(Error::new(
            ErrorKind::Changed,
            "the save changed on disk since it was read (the game or another program wrote \
             it), so it is left as that program made it",
        ));
    }
    fsio::refuse_read_only(path)?;
    let backup = fsio::backup_path(path, None, read);
    fsio::write_atomic_like(&backup, read, Some(path))
        .map_err(|e| Error::io(e, format!("cannot write the backup {}", backup.display())))?;
    fsio::replace_held(path, &bytes, held.as_ref(), &read_print, fsio::Work::Edit)?;
    Ok(backup)
}

/// Keeps `text`, an edit of the save at `path` that was not written (it did not load, was
/// refused, the save changed meanwhile, or the editor failed after changing it), beside the save as `<name>.edit.bak`
/// (`<name>.edit.<k>.bak` when that holds something else), where the save's backups are and
/// where it outlives a temporary folder in memory; returns its path. Written atomically,
/// with the save's permissions. It is the text as edited, plain even for a compressed save:
/// it is kept for a person to read (every reader of saves reads it, whatever its name).
pub fn keep_edit(path: impl AsRef<FsPath>, text: &[u8]) -> Result<PathBuf> {
    let path = path.as_ref();
    let kept = fsio::backup_path(path, Some("edit"), text);
    let like = path.exists().then_some(path);
    fsio::write_atomic_like(&kept, text, like)
        .map_err(|e| Error::io(e, "cannot keep the edit").with_file(&kept))?;
    Ok(kept)
}
