//! Declared steps: the common changes of a version (a member added with a default, renamed,
//! moved, dropped with a reason, an integer widened to a double, a value wrapped into or
//! taken out of an array), said rather than written, read from a step file or made by the
//! `Declare` derive, and applied to a save's data.
//!
//! ```
//! use savechain::upgrade::declared::Change;
//! use savechain::upgrade::{Chain, Step};
//! use savechain::{Options, Save, Value};
//!
//! let step = Step::declared(1, "health, and cargo counts", vec![
//!     Change::rename("hero.hp", "health"),
//!     Change::to_double("ship.cargo[].qty"),
//!     Change::add("ship.shield", Value::Double(100.0)),
//!     Change::drop("hero.mana", "magic left the game in 2.0"),
//! ]);
//! let chain = Chain::new("2.0.0", vec![step])?;
//! let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {
//!     "hero": {"hp": 7, "mana": 3}, "ship": {"cargo": [{"qty": 2}, {"qty": 5}]}}}"#)?;
//! let upgraded = chain.upgrader().upgrade(save, &Options::default())?;
//! assert_eq!(
//!     upgraded.save.data.to_string(),
//!     r#"{"hero":{"health":7},"ship":{"cargo":[{"qty":["d","0x1p+1"]},{"qty":["d","0x1.4p+2"]}],"shield":["d","0x1.9p+6"]}}"#
//! );
//! # Ok::<(), savechain::Error>(())
//! ```

use std::fmt;
use std::path::Path as FsPath;

use crate::error::{Error, ErrorKind, Result};
use crate::path::{is_identifier, Path, Segment};
use crate::value::{Map, Value};

/// One declared change of a step, applied to the data in the order of the step's list.
///
/// Paths are relative to the save's `data`, as a step sees it: keys joined by dots
/// (`player.wallet`), a key that is not a plain name quoted (`systems["tau ceti"]`), `[]`
/// for each element of an array and `[*]` for each value of a map (an object whose keys
/// are data): `ship.cargo[].qty` is the `qty` of every cargo record. A place the path does
/// not reach in a save (an optional member absent, or `null`, an empty array) is left
/// alone; a value of the wrong kind on the way (a string where the path goes through an
/// object) fails the save, naming the place (`data.ship.cargo[2]`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Change {
    /// The member at `path` is added with `default` where it is missing (an object that
    /// has it keeps its value). Objects on the way are not made: an object the path does
    /// not reach gets nothing (add the outer member with an object as its default).
    Add {
        /// The new member.
        path: String,
        /// Its value where it is missing.
        default: Value,
    },
    /// The member at `path` takes the name `to`, in the same object. A member already
    /// named `to` there fails the save.
    Rename {
        /// The member.
        path: String,
        /// Its new name: a key, not a path.
        to: String,
    },
    /// The value at `path` moves to `to`, a path relative to the data, making the objects
    /// on the way. Something already at `to` fails the save. Inside each element (`[]`,
    /// `[*]`), `to` starts with the same elements as `path` and stays in the same element.
    Move {
        /// Where the value is.
        path: String,
        /// Where it goes.
        to: String,
    },
    /// The member at `path` is removed, on purpose: `reason` says why (a drop is never
    /// silent). Strict upgrades accept the removal.
    Drop {
        /// The member.
        path: String,
        /// Why its data can go.
        reason: String,
    },
    /// The integer at `path` becomes the double of the same value (a double and `null`
    /// stay as they are). An integer no double holds exactly (beyond 2^53) fails the save
    /// rather than change its value.
    ToDouble {
        /// The value.
        path: String,
    },
    /// The value at `path` becomes an array of it: `v` becomes `[v]`.
    Wrap {
        /// The value.
        path: String,
    },
    /// The array of one element at `path` becomes that element: `[v]` becomes `v`. An
    /// array of another length, or a value that is not an array, fails the save.
    Unwrap {
        /// The value.
        path: String,
    },
}

impl Change {
    /// [`Change::Add`]: `path` added with `default` where it is missing.
    pub fn add(path: &str, default: Value) -> Change {
        Change::Add {
            path: path.to_string(),
            default,
        }
    }

    /// [`Change::Rename`]: the member at `path` renamed `to`, in the same object.
    pub fn rename(path: &str, to: &str) -> Change {
        Change::Rename {
            path: path.to_string(),
            to: to.to_string(),
        }
    }

    /// [`Change::Move`]: the value at `path` moved to `to`.
    pub fn moved(path: &str, to: &str) -> Change {
        Change::Move {
            path: path.to_string(),
            to: to.to_string(),
        }
    }

    /// [`Change::Drop`]: the member at `path` removed, for `reason`.
    pub fn drop(path: &str, reason: &str) -> Change {
        Change::Drop {
            path: path.to_string(),
            reason: reason.to_string(),
        }
    }

    /// [`Change::ToDouble`]: the integer at `path` becomes a double.
    pub fn to_double(path: &str) -> Change {
        Change::ToDouble {
            path: path.to_string(),
        }
    }

    /// [`Change::Wrap`]: the value at `path` becomes `[value]`.
    pub fn wrap(path: &str) -> Change {
        Change::Wrap {
            path: path.to_string(),
        }
    }

    /// [`Change::Unwrap`]: the array `[value]` at `path` becomes `value`.
    pub fn unwrap(path: &str) -> Change {
        Change::Unwrap {
            path: path.to_string(),
        }
    }

    /// The path the change applies to, relative to the data.
    pub fn path(&self) -> &str {
        match self {
            Change::Add { path, .. }
            | Change::Rename { path, .. }
            | Change::Move { path, .. }
            | Change::Drop { path, .. }
            | Change::ToDouble { path }
            | Change::Wrap { path }
            | Change::Unwrap { path } => path,
        }
    }

    /// The word that names the change in a step file: `"add"`, `"rename"`, `"move"`,
    /// `"drop"`, `"to_double"`, `"wrap"` or `"unwrap"`.
    pub fn word(&self) -> &'static str {
        match self {
            Change::Add { .. } => "add",
            Change::Rename { .. } => "rename",
            Change::Move { .. } => "move",
            Change::Drop { .. } => "drop",
            Change::ToDouble { .. } => "to_double",
            Change::Wrap { .. } => "wrap",
            Change::Unwrap { .. } => "unwrap",
        }
    }

    /// The change as an object of a step file's `changes`
    /// (`{"rename": "player.hp", "to": "health"}`).
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert(self.word(), Value::from(self.path()));
        match self {
            Change::Add { default, .. } => {
                object.insert("default", default.clone());
            }
            Change::Rename { to, .. } | Change::Move { to, .. } => {
                object.insert("to", Value::from(to.as_str()));
            }
            Change::Drop { reason, .. } => {
                object.insert("reason", Value::from(reason.as_str()));
            }
            Change::ToDouble { .. } | Change::Wrap { .. } | Change::Unwrap { .. } => {}
        }
        Value::Object(object)
    }
}

impl Change {
    /// The change with its paths below `prefix` (a path relative to the data, `ship` or
    /// `ship.cargo[]`): what a struct's change becomes in the struct that holds it.
    pub fn under(self, prefix: &str) -> Change {
        let join = |path: String| match (prefix.is_empty(), path.starts_with('[')) {
            (true, _) => path,
            (false, true) => format!("{prefix}{path}"),
            (false, false) => format!("{prefix}.{path}"),
        };
        match self {
            Change::Add { path, default } => Change::Add {
                path: join(path),
                default,
            },
            Change::Rename { path, to } => Change::Rename {
                path: join(path),
                to,
            },
            Change::Move { path, to } => Change::Move {
                path: join(path),
                to: join(to),
            },
            Change::Drop { path, reason } => Change::Drop {
                path: join(path),
                reason,
            },
            Change::ToDouble { path } => Change::ToDouble { path: join(path) },
            Change::Wrap { path } => Change::Wrap { path: join(path) },
            Change::Unwrap { path } => Change::Unwrap { path: join(path) },
        }
    }
}

/// A type whose history is declared on its fields: the changes of each version, made by
/// `#[derive(savechain::Declare)]` (feature `derive`) from its `#[savechain(...)]`
/// attributes (the `savechain-derive` crate lists them all).
///
/// ```
/// # #[cfg(feature = "derive")] fn main() -> savechain::Result<()> {
/// use savechain::upgrade::{declared_steps, Chain, Declared};
/// use savechain::{Declare, Options, Save};
///
/// #[derive(serde::Deserialize, Declare)]
/// #[savechain(dropped(name = "mana", at = 1, reason = "magic left the game"))]
/// struct Hero {
///     #[savechain(renamed(from = "hp", at = 1))]
///     health: u32,
///     #[savechain(added(at = 2, default = 100.0))]
///     shield: f64,
/// }
///
/// assert_eq!(Hero::versions(), [1, 2]);
/// let chain = Chain::new("1.2.0", declared_steps::<Hero>())?;
/// let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {"hp": 7, "mana": 3}}"#)?;
/// let upgraded = chain.upgrader().upgrade(save, &Options::default())?;
/// let hero: Hero = savechain::from_value(upgraded.save.data)?;
/// assert_eq!((hero.health, hero.shield), (7, 100.0));
/// # Ok(()) }
/// # #[cfg(not(feature = "derive"))] fn main() {}
/// ```
pub trait Declared {
    /// The changes of the step from version `from` to `from + 1`, paths relative to a value
    /// of this type (nested types' changes below their fields); empty for a version with
    /// none.
    fn changes(from: u64) -> Vec<Change>;

    /// The versions whose steps have changes (this type's and its nested types'), in order.
    fn versions() -> Vec<u64>;
}

impl fmt::Display for Change {
    /// A few words: `rename player.hp to health`, `add ship.shield (default ["d","0x1.9p+6"])`,
    /// `drop player.mana (magic is gone)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Add { path, default } => {
                let default = crate::text::to_string_compact(default)
                    .unwrap_or_else(|_| default.kind().to_string());
                write!(f, "add {path} (default {default})")
            }
            Change::Rename { path, to } => write!(f, "rename {path} to {to}"),
            Change::Move { path, to } => write!(f, "move {path} to {to}"),
            Change::Drop { path, reason } => write!(f, "drop {path} ({reason})"),
            Change::ToDouble { path } => write!(f, "{path} to a double"),
            Change::Wrap { path } => write!(f, "wrap {path} in an array"),
            Change::Unwrap { path } => write!(f, "unwrap {path} from its array"),
        }
    }
}

/// One part of a declared path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// A member of an object.
    Key(String),
    /// `[]`: each element of an array.
    Each,
    /// `[*]`: each value of a map.
    EachValue,
}

/// The text of `parts`, as a declared path is written (keys quoted where they must be).
pub(crate) fn show(parts: &[Part]) -> String {
    let mut text = String::new();
    for part in parts {
        match part {
            Part::Key(key) if is_identifier(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Part::Key(key) => text.push_str(&format!("[{key:?}]")),
            Part::Each => text.push_str("[]"),
            Part::EachValue => text.push_str("[*]"),
        }
    }
    text
}

/// The parts of a declared path (`ship.cargo[].qty`, `systems[*].position`,
/// `["odd key"].x`), or what is wrong with it.
pub(crate) fn parse(text: &str) -> std::result::Result<Vec<Part>, String> {
    let wrong = |why: &str| {
        Err(format!(
            "malformed path {text:?}: {why} (a path is relative to the data: keys joined by \
             dots, [] for each element of an array, [*] for each value of a map, as in \
             \"ship.cargo[].qty\")"
        ))
    };
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(inside) = rest.strip_prefix('[') {
            if let Some(after) = inside.strip_prefix(']') {
                parts.push(Part::Each);
                rest = after;
            } else if let Some(after) = inside.strip_prefix("*]") {
                parts.push(Part::EachValue);
                rest = after;
            } else if let Some(quoted) = inside.strip_prefix('"') {
                let Some((key, after)) = unquote(quoted) else {
                    return wrong("a quoted key is not closed");
                };
                let Some(after) = after.strip_prefix(']') else {
                    return wrong("expected ] after a quoted key");
                };
                parts.push(Part::Key(key));
                rest = after;
            } else if inside.starts_with(|c: char| c.is_ascii_digit()) {
                return wrong(
                    "a declared change applies to every save, and [N] names one element: \
                     write [] for each element",
                );
            } else {
                return wrong("expected [], [*] or a quoted key after [");
            }
            continue;
        }
        let bare = if parts.is_empty() {
            rest
        } else if let Some(after) = rest.strip_prefix('.') {
            after
        } else {
            return wrong("expected . or [ between parts");
        };
        let end = bare.find(['.', '[']).unwrap_or(bare.len());
        if end == 0 {
            return wrong("an empty key (two dots, a dot at an end, or a dot before [)");
        }
        parts.push(Part::Key(bare[..end].to_string()));
        rest = &bare[end..];
    }
    if parts.is_empty() {
        return wrong("the path is empty");
    }
    Ok(parts)
}

/// A key quoted as Rust's `{:?}` quotes one (`\"`, `\\`, `\n`, `\t`, `\u{..}`), from after
/// its opening quote: the key and the text after its closing quote.
fn unquote(text: &str) -> Option<(String, &str)> {
    let mut key = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((key, &text[at + 1..])),
            '\\' => {
                let (_, escaped) = chars.next()?;
                match escaped {
                    'n' => key.push('\n'),
                    't' => key.push('\t'),
                    'r' => key.push('\r'),
                    '0' => key.push('\0'),
                    'u' => {
                        let (open, '{') = chars.next()? else {
                            return None;
                        };
                        let close = text[open..].find('}')? + open;
                        let code = u32::from_str_radix(&text[open + 1..close], 16).ok()?;
                        key.push(char::from_u32(code)?);
                        while chars.next().is_some_and(|(i, _)| i < close) {}
                    }
                    other => key.push(other),
                }
            }
            other => key.push(other),
        }
    }
    None
}

/// A change with its paths read, ready to apply.
#[derive(Clone, Debug)]
struct Compiled {
    change: Change,
    at: Vec<Part>,
    /// A move's target, after the elements it shares with `at` (`[]`, `[*]`): keys only.
    to: Vec<Part>,
    /// A move: how many parts of `at` lead to the element both paths are in.
    shared: usize,
}

/// The changes of a declared step, checked and ready to apply.
#[derive(Clone, Debug)]
pub(crate) struct Declaration {
    changes: Vec<Change>,
    compiled: Vec<Compiled>,
}

/// Why a list of changes cannot be a step: the index of the change, and what is wrong.
#[derive(Clone, Debug)]
pub(crate) struct Invalid {
    pub(crate) index: usize,
    pub(crate) message: String,
}

impl Declaration {
    /// Reads the paths of `changes`, or says which change is wrong and how.
    pub(crate) fn new(changes: &[Change]) -> std::result::Result<Declaration, Invalid> {
        let compiled = changes
            .iter()
            .enumerate()
            .map(|(index, change)| {
                compile(change).map_err(|why| Invalid {
                    index,
                    message: format!("{} {:?}: {why}", change.word(), change.path()),
                })
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(Declaration {
            changes: changes.to_vec(),
            compiled,
        })
    }

    /// The changes, as declared.
    pub(crate) fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// The canonical text of the changes, paths written one way: the chain's identity.
    pub(crate) fn canonical(&self) -> String {
        let changes = self
            .compiled
            .iter()
            .map(|c| {
                let mut value = c.change.to_value();
                if let Value::Object(object) = &mut value {
                    object.insert(c.change.word(), Value::from(show(&c.at)));
                    if let Change::Move { .. } = c.change {
                        let mut to = c.at[..c.shared].to_vec();
                        to.extend(c.to.iter().cloned());
                        object.insert("to", Value::from(show(&to)));
                    }
                }
                value
            })
            .collect();
        crate::text::to_string_compact(&Value::Array(changes))
            .expect("a declared default is a value a save can hold")
    }

    /// Applies the changes in order to `data`, adding the paths it removes on purpose
    /// (from the document's root: `data.player.mana`) to `dropped`; or why the save
    /// cannot take them.
    pub(crate) fn apply(
        &self,
        data: &mut Value,
        dropped: &mut Vec<String>,
    ) -> std::result::Result<(), String> {
        for (index, c) in self.compiled.iter().enumerate() {
            apply_one(c, data, dropped)
                .map_err(|why| format!("change {index} ({}): {why}", c.change))?;
        }
        Ok(())
    }
}

fn compile(change: &Change) -> std::result::Result<Compiled, String> {
    let at = parse(change.path())?;
    let last_is_key = matches!(at.last(), Some(Part::Key(_)));
    let mut compiled = Compiled {
        change: change.clone(),
        at,
        to: Vec::new(),
        shared: 0,
    };
    match change {
        Change::Add { default, .. } => {
            if !last_is_key {
                return Err("an add's path ends with the new member's name".into());
            }
            crate::text::to_string_compact(default).map_err(|e| {
                format!(
                    "the default is not a value a save can hold: {}",
                    e.message()
                )
            })?;
        }
        Change::Rename { to, .. } => {
            if !last_is_key {
                return Err("a rename's path ends with the member's name".into());
            }
            if to.is_empty() {
                return Err("the new name is empty".into());
            }
        }
        Change::Drop { reason, .. } => {
            if !last_is_key {
                return Err("a drop's path ends with the member's name".into());
            }
            if reason.trim().is_empty() {
                return Err(
                    "a drop says why the data can go (its reason): a drop is never silent".into(),
                );
            }
        }
        Change::Move { to, .. } => {
            if !last_is_key {
                return Err("a move's path ends with the member's name".into());
            }
            let to_parts = parse(to)?;
            let at = &compiled.at;
            let shared = at
                .iter()
                .rposition(|p| !matches!(p, Part::Key(_)))
                .map_or(0, |i| i + 1);
            let same_elements = to_parts.len() > shared && to_parts[..shared] == at[..shared];
            let keys_after = to_parts[shared.min(to_parts.len())..]
                .iter()
                .all(|p| matches!(p, Part::Key(_)));
            if !same_elements || !keys_after {
                return Err(if shared == 0 {
                    format!(
                        "the target {to:?} is inside each element ([] or [*]) and the value is \
                         not: a move takes one value to one place"
                    )
                } else {
                    format!(
                        "a move inside each element stays in the same element: the target \
                         {to:?} starts with {} and has no [] or [*] after it",
                        show(&at[..shared])
                    )
                });
            }
            if to_parts == *at {
                return Err("the target is the path itself".into());
            }
            if to_parts.starts_with(at) {
                return Err(format!("the target {to:?} is inside the value moved"));
            }
            compiled.to = to_parts[shared..].to_vec();
            compiled.shared = shared;
        }
        Change::ToDouble { .. } | Change::Wrap { .. } | Change::Unwrap { .. } => {}
    }
    Ok(compiled)
}

/// The place `here` (a path from the data's root) as printed: from the document's root.
fn place(here: &Path) -> String {
    let mut path = here.clone();
    path.push_front(Segment::Key("data".to_string()));
    path.to_string()
}

/// Calls `f` on each value `parts` reaches from `value` (at `here`); a missing member or a
/// `null` on the way reaches nothing, a value of another kind is an error naming it.
fn each(
    value: &mut Value,
    parts: &[Part],
    here: &mut Path,
    f: &mut dyn FnMut(&mut Value, &mut Path) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let Some((part, rest)) = parts.split_first() else {
        return f(value, here);
    };
    if value.is_null() {
        return Ok(());
    }
    match (part, value) {
        (Part::Key(key), Value::Object(object)) => {
            let Some(member) = object.get_mut(key) else {
                return Ok(());
            };
            here.push(Segment::Key(key.clone()));
            let done = each(member, rest, here, f);
            here.pop();
            done
        }
        (Part::Each, Value::Array(elements)) => {
            for (i, element) in elements.iter_mut().enumerate() {
                here.push(Segment::Index(i));
                let done = each(element, rest, here, f);
                here.pop();
                done?;
            }
            Ok(())
        }
        (Part::EachValue, Value::Object(object)) => {
            for (key, member) in object.iter_mut() {
                here.push(Segment::Key(key.to_string()));
                let done = each(member, rest, here, f);
                here.pop();
                done?;
            }
            Ok(())
        }
        (part, value) => {
            let expected = match part {
                Part::Key(_) | Part::EachValue => "an object",
                Part::Each => "an array",
            };
            Err(format!(
                "{} is {}; the path goes through {expected} here",
                place(here),
                value.kind()
            ))
        }
    }
}

/// The object that holds the member at the end of a path, reached at `here`: `None` for a
/// `null` (an optional object absent), an error for another kind.
fn holder<'v>(
    value: &'v mut Value,
    here: &Path,
) -> std::result::Result<Option<&'v mut Map>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Object(object) => Ok(Some(object)),
        other => Err(format!(
            "{} is {}; the change is to a member of an object here",
            place(here),
            other.kind()
        )),
    }
}

fn key_of(parts: &[Part]) -> &str {
    match parts.last() {
        Some(Part::Key(key)) => key,
        _ => unreachable!("checked when the change was read"),
    }
}

fn apply_one(
    c: &Compiled,
    data: &mut Value,
    dropped: &mut Vec<String>,
) -> std::result::Result<(), String> {
    let mut here = Path::new();
    let (parents, _) = c.at.split_at(c.at.len() - 1);
    match &c.change {
        Change::Add { default, .. } => {
            let key = key_of(&c.at);
            each(data, parents, &mut here, &mut |value, here| {
                if let Some(object) = holder(value, here)? {
                    if !object.contains_key(key) {
                        object.insert(key, default.clone());
                    }
                }
                Ok(())
            })
        }
        Change::Rename { to, .. } => {
            let key = key_of(&c.at);
            each(data, parents, &mut here, &mut |value, here| {
                let Some(object) = holder(value, here)? else {
                    return Ok(());
                };
                if !object.contains_key(key) {
                    return Ok(());
                }
                let mut from = here.clone();
                from.push(Segment::Key(key.to_string()));
                if object.contains_key(to) {
                    let mut taken = here.clone();
                    taken.push(Segment::Key(to.clone()));
                    return Err(format!(
                        "cannot rename {} to {to}: {} is there already",
                        place(&from),
                        place(&taken)
                    ));
                }
                let member = object.remove(key).expect("there");
                object.insert(to, member);
                dropped.push(place(&from));
                Ok(())
            })
        }
        Change::Drop { .. } => {
            let key = key_of(&c.at);
            // Declared even where it is not there, as `up.drop` does: a path with no `[]`
            // names one place, which is then dropped in every save.
            let wildcards = c.at.iter().any(|p| !matches!(p, Part::Key(_)));
            if !wildcards {
                let path: Vec<Segment> =
                    c.at.iter()
                        .map(|p| match p {
                            Part::Key(k) => Segment::Key(k.clone()),
                            _ => unreachable!("no wildcards"),
                        })
                        .collect();
                dropped.push(place(&Path::from(path)));
            }
            each(data, parents, &mut here, &mut |value, here| {
                if let Some(object) = holder(value, here)? {
                    let removed = object.remove(key).is_some();
                    if wildcards && removed {
                        let mut at = here.clone();
                        at.push(Segment::Key(key.to_string()));
                        dropped.push(place(&at));
                    }
                }
                Ok(())
            })
        }
        Change::Move { .. } => {
            let (element, from) = c.at.split_at(c.shared);
            each(data, element, &mut here, &mut |value, here| {
                move_in(value, from, &c.to, here, dropped)
            })
        }
        Change::ToDouble { .. } => each(data, &c.at, &mut here, &mut |value, here| {
            let exact = |n: i128, d: f64| d as i128 == n && d.is_finite();
            *value = match *value {
                Value::Int(i) if exact(i as i128, i as f64) => Value::Double(i as f64),
                Value::UInt(u) if exact(u as i128, u as f64) => Value::Double(u as f64),
                Value::Int(_) | Value::UInt(_) => {
                    return Err(format!(
                        "{} is the integer {}, which no double holds exactly: the step would \
                         change its value",
                        place(here),
                        crate::text::to_string_compact(value).unwrap_or_default()
                    ))
                }
                Value::Double(_) | Value::Null => return Ok(()),
                ref other => {
                    return Err(format!("{} is {}, not a number", place(here), other.kind()))
                }
            };
            Ok(())
        }),
        Change::Wrap { .. } => each(data, &c.at, &mut here, &mut |value, _| {
            let inner = std::mem::take(value);
            *value = Value::Array(vec![inner]);
            Ok(())
        }),
        Change::Unwrap { .. } => each(data, &c.at, &mut here, &mut |value, here| match value {
            Value::Array(elements) if elements.len() == 1 => {
                let element = elements.pop().expect("one element");
                *value = element;
                Ok(())
            }
            Value::Array(elements) => Err(format!(
                "{} is an array of {} elements; unwrap takes the element of an array of one",
                place(here),
                elements.len()
            )),
            other => Err(format!(
                "{} is {}; unwrap takes the element of an array of one",
                place(here),
                other.kind()
            )),
        }),
    }
}

/// Moves the value at `from` (keys) below `base` (at `here`) to `to` (keys) below it,
/// making the objects on the way.
fn move_in(
    base: &mut Value,
    from: &[Part],
    to: &[Part],
    here: &mut Path,
    dropped: &mut Vec<String>,
) -> std::result::Result<(), String> {
    let key = |p: &Part| match p {
        Part::Key(k) => k.clone(),
        _ => unreachable!("a move's paths after their shared elements are keys"),
    };
    let mut from_at = here.clone();
    // The object holding the value: a missing or null one on the way holds nothing.
    let mut value = &mut *base;
    for part in &from[..from.len() - 1] {
        let Some(object) = holder(value, &from_at)? else {
            return Ok(());
        };
        let k = key(part);
        let Some(next) = object.get_mut(&k) else {
            return Ok(());
        };
        from_at.push(Segment::Key(k));
        value = next;
    }
    let Some(object) = holder(value, &from_at)? else {
        return Ok(());
    };
    let last = key(from.last().expect("a path has parts"));
    let Some(moved) = object.remove(&last) else {
        return Ok(());
    };
    from_at.push(Segment::Key(last));
    let whole = with(here, to);
    let mut to_at = here.clone();
    let mut target = base;
    for part in &to[..to.len() - 1] {
        let k = key(part);
        let object = match target {
            Value::Object(object) => object,
            other => {
                return Err(format!(
                    "cannot move {} to {}: {} is {}, not an object",
                    place(&from_at),
                    place(&whole),
                    place(&to_at),
                    other.kind()
                ))
            }
        };
        to_at.push(Segment::Key(k.clone()));
        target = object
            .entry(&k)
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let last = key(to.last().expect("a path has parts"));
    let Value::Object(object) = target else {
        return Err(format!(
            "cannot move {} to {}: {} is {}, not an object",
            place(&from_at),
            place(&whole),
            place(&to_at),
            target.kind()
        ));
    };
    to_at.push(Segment::Key(last.clone()));
    if object.contains_key(&last) {
        return Err(format!(
            "cannot move {} to {}: something is there",
            place(&from_at),
            place(&to_at)
        ));
    }
    object.insert(&last, moved);
    dropped.push(place(&from_at));
    Ok(())
}

/// `base` followed by the keys `to`, for messages.
fn with(base: &Path, to: &[Part]) -> Path {
    let mut path = base.clone();
    for part in to {
        if let Part::Key(k) = part {
            path.push(Segment::Key(k.clone()));
        }
    }
    path
}

/// The members a change may have beside its word, by word.
const CHANGES: &[(&str, &[&str])] = &[
    ("add", &["default"]),
    ("rename", &["to"]),
    ("move", &["to"]),
    ("drop", &["reason"]),
    ("to_double", &[]),
    ("wrap", &[]),
    ("unwrap", &[]),
];

/// What a declared step file says: its description, when it gives one, and its changes.
#[derive(Debug)]
pub(crate) struct StepFile {
    pub(crate) description: Option<String>,
    pub(crate) declaration: Declaration,
}

/// Reads a declared step file (`NNNN-short-name.json`, `file` for errors): `{"description":
/// "...", "changes": [...]}`, values in save text.
pub(crate) fn read_file(file: &FsPath, bytes: &[u8]) -> Result<StepFile> {
    let name = file
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let fail = |at: Vec<Segment>, message: String| {
        Error::new(ErrorKind::Upgrade, message)
            .with_file(file)
            .in_path(Path::from(at))
            .in_step(&name, None)
    };
    let value =
        crate::text::from_slice(bytes).map_err(|e| e.with_file(file).in_step(&name, None))?;
    let example = r#"{"description": "...", "changes": [{"rename": "player.hp", "to": "health"}]}"#;
    let Value::Object(top) = value else {
        return Err(fail(
            vec![],
            format!("a declared step is an object such as {example}"),
        ));
    };
    if let Some(unknown) = top
        .keys()
        .find(|k| !matches!(*k, "description" | "changes"))
    {
        return Err(fail(
            vec![Segment::Key(unknown.to_string())],
            "a declared step has only \"description\" and \"changes\"".to_string(),
        ));
    }
    let description = match top.get("description") {
        None => None,
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.clone()),
        Some(_) => {
            return Err(fail(
                vec![Segment::Key("description".into())],
                "expected what the step does, in a few words (a string)".to_string(),
            ))
        }
    };
    let Some(Value::Array(list)) = top.get("changes") else {
        return Err(fail(
            vec![Segment::Key("changes".into())],
            format!("expected the step's changes, an array: {example}"),
        ));
    };
    let mut changes = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let at = |member: Option<&str>| {
            let mut path = vec![Segment::Key("changes".into()), Segment::Index(index)];
            path.extend(member.map(|m| Segment::Key(m.to_string())));
            path
        };
        changes.push(read_change(entry).map_err(|(member, why)| fail(at(member), why))?);
    }
    let declaration = Declaration::new(&changes).map_err(|invalid| {
        fail(
            vec![
                Segment::Key("changes".into()),
                Segment::Index(invalid.index),
            ],
            invalid.message,
        )
    })?;
    Ok(StepFile {
        description,
        declaration,
    })
}

/// One change of a step file, or the member that is wrong (`None`: the change itself) and
/// what is wrong with it.
fn read_change(entry: &Value) -> std::result::Result<Change, (Option<&str>, String)> {
    let words: Vec<&str> = CHANGES.iter().map(|(w, _)| *w).collect();
    let quoted = |list: &[&str]| {
        list.iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Value::Object(object) = entry else {
        return Err((
            None,
            format!(
                "expected a change, an object such as {{\"rename\": \"player.hp\", \"to\": \
                 \"health\"}}, found {}",
                entry.kind()
            ),
        ));
    };
    let found: Vec<&str> = object.keys().filter(|k| words.contains(k)).collect();
    let (word, members) = match found.as_slice() {
        [word] => *CHANGES.iter().find(|(w, _)| w == word).expect("found"),
        [] => {
            return Err((
                None,
                format!("a change is one of {}: found none", quoted(&words)),
            ))
        }
        [a, b, ..] => {
            return Err((
                None,
                format!(
                    "a change is one of {}: found both \"{a}\" and \"{b}\" (one change an object)",
                    quoted(&words)
                ),
            ))
        }
    };
    if let Some(unknown) = object.keys().find(|k| *k != word && !members.contains(k)) {
        let allowed: Vec<&str> = std::iter::once(word)
            .chain(members.iter().copied())
            .collect();
        return Err((
            None,
            format!(
                "a {word} has only {}; found \"{unknown}\"",
                quoted(&allowed)
            ),
        ));
    }
    let text = |member: &'static str, what: &str| match object.get(member) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err((
            Some(member),
            format!("expected {what}, a string; found {}", other.kind()),
        )),
        None => Err((None, format!("a {word} needs \"{member}\": {what}"))),
    };
    let path = text(word, "the path of the value, relative to the data")?;
    Ok(match word {
        "add" => Change::Add {
            path,
            default: object.get("default").cloned().ok_or_else(|| {
                (
                    None,
                    "an add needs \"default\": the value where the member is missing (in save \
                     text: a double is [\"d\", \"0x1.9p+6\"])"
                        .to_string(),
                )
            })?,
        },
        "rename" => Change::Rename {
            path,
            to: text("to", "the member's new name (a key, not a path)")?,
        },
        "move" => Change::Move {
            path,
            to: text("to", "where the value goes, a path relative to the data")?,
        },
        "drop" => Change::Drop {
            path,
            reason: text("reason", "why the data can go (a drop is never silent)")?,
        },
        "to_double" => Change::ToDouble { path },
        "wrap" => Change::Wrap { path },
        _ => Change::Unwrap { path },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::from_str;

    fn run(changes: Vec<Change>, data: &str) -> std::result::Result<(String, Vec<String>), String> {
        let declaration = Declaration::new(&changes).map_err(|i| i.message)?;
        let mut data = from_str(data).unwrap();
        let mut dropped = Vec::new();
        declaration.apply(&mut data, &mut dropped)?;
        Ok((data.to_string(), dropped))
    }

    fn part() -> impl proptest::strategy::Strategy<Value = Part> {
        use proptest::prelude::*;
        prop_oneof![
            "[a-z_][a-z0-9_]{0,6}".prop_map(Part::Key),
            // Keys that must be quoted: dots, brackets, quotes, spaces, escapes, digits first.
            "[ -~\\n\\t\u{e9}]{1,6}".prop_map(Part::Key),
            Just(Part::Each),
            Just(Part::EachValue),
        ]
    }

    proptest::proptest! {
        /// A path written and read again is the same path.
        #[test]
        fn paths_round_trip(parts in proptest::collection::vec(part(), 1..6)) {
            let text = show(&parts);
            proptest::prop_assert_eq!(parse(&text), Ok(parts), "{}", text);
        }

        /// A change written as a step file's entry reads back as the same change.
        #[test]
        fn changes_round_trip_through_a_step_file(
            parts in proptest::collection::vec(part(), 1..4),
            key in "[a-z]{1,5}",
            word in 0..7usize,
        ) {
            let mut path = parts;
            path.push(Part::Key(key.clone()));
            let path = show(&path);
            let change = match word {
                0 => Change::add(&path, Value::Double(1.5)),
                1 => Change::rename(&path, &key),
                2 => Change::moved(&key, &format!("{key}_moved.x")),
                3 => Change::drop(&path, "why"),
                4 => Change::to_double(&path),
                5 => Change::wrap(&path),
                _ => Change::unwrap(&path),
            };
            let mut file = Map::new();
            file.insert("changes", Value::Array(vec![change.to_value()]));
            let text = crate::text::to_string(&Value::Object(file)).unwrap();
            let read = read_file(FsPath::new("0001-x.json"), text.as_bytes()).unwrap();
            proptest::prop_assert_eq!(read.declaration.changes(), &[change][..]);
        }
    }

    #[test]
    fn paths_read_and_written() {
        for text in [
            "a",
            "a.b",
            "ship.cargo[].qty",
            "systems[*].position",
            "[\"odd key\"].x",
            "a[][]",
            "a[\"say \\\"hi\\\"\"]",
        ] {
            assert_eq!(show(&parse(text).unwrap()), text, "{text}");
        }
        assert_eq!(show(&parse("[\"plain\"].b").unwrap()), "plain.b");
        for bad in [
            "", ".a", "a.", "a..b", "a[2]", "a[x]", "a[\"x\"", "a.[]", "a[]b",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("a[2]")
            .unwrap_err()
            .contains("write [] for each element"));
    }

    #[test]
    fn each_change_on_plain_members() {
        let (data, dropped) = run(
            vec![
                Change::rename("player.reputation", "standing"),
                Change::moved("player.credits", "player.wallet.credits"),
                Change::add("ship.shield", Value::Double(100.0)),
                Change::drop("player.tutorial_done", "the tutorial is gone"),
                Change::to_double("player.level"),
                Change::wrap("player.title"),
                Change::unwrap("player.ranks"),
            ],
            r#"{"player": {"reputation": 0.5, "credits": 7, "tutorial_done": true,
                "level": 3, "title": "ace", "ranks": ["cadet"]}, "ship": {}}"#,
        )
        .unwrap();
        assert_eq!(
            data,
            r#"{"player":{"level":["d","0x1.8p+1"],"ranks":"cadet","standing":["d","0x1p-1"],"title":["ace"],"wallet":{"credits":7}},"ship":{"shield":["d","0x1.9p+6"]}}"#
        );
        assert_eq!(
            dropped,
            [
                "data.player.reputation",
                "data.player.credits",
                "data.player.tutorial_done"
            ]
        );
    }

    #[test]
    fn absent_members_and_nulls_are_left_alone() {
        let changes = vec![
            Change::rename("a.x", "y"),
            Change::moved("a.m", "b.m"),
            Change::to_double("a.n"),
            Change::wrap("a.w"),
            Change::unwrap("a.u"),
            Change::drop("a.gone", "why"),
            Change::add("missing.z", Value::Int(1)),
            Change::add("a.kept", Value::Int(1)),
        ];
        let (data, dropped) = run(changes.clone(), r#"{"a": {"kept": 5, "n": null}}"#).unwrap();
        assert_eq!(data, r#"{"a":{"kept":5,"n":null}}"#);
        // A drop of a path without [] is declared in every save, as up.drop does.
        assert_eq!(dropped, ["data.a.gone"]);
        let (data, _) = run(changes, r#"{"a": null}"#).unwrap();
        assert_eq!(data, r#"{"a":null}"#);
    }

    #[test]
    fn inside_each_element_and_map_value() {
        let (data, dropped) = run(
            vec![
                Change::rename("ship.cargo[].qty", "count"),
                Change::to_double("ship.cargo[].count"),
                Change::drop("ship.cargo[].old", "unused"),
                Change::moved("systems[*].pos.x", "systems[*].x"),
                Change::add("systems[*].visited", Value::Bool(false)),
                Change::to_double("grid[][]"),
            ],
            r#"{"ship": {"cargo": [{"qty": 1, "old": 0}, {"qty": 2}]},
                "systems": {"sol": {"pos": {"x": 1}}, "tau ceti": {"pos": {}}},
                "grid": [[1, 2], []]}"#,
        )
        .unwrap();
        assert_eq!(
            data,
            r#"{"grid":[[["d","0x1p+0"],["d","0x1p+1"]],[]],"ship":{"cargo":[{"count":["d","0x1p+0"]},{"count":["d","0x1p+1"]}]},"systems":{"sol":{"pos":{},"visited":false,"x":1},"tau ceti":{"pos":{},"visited":false}}}"#
        );
        assert_eq!(
            dropped,
            [
                "data.ship.cargo[0].qty",
                "data.ship.cargo[1].qty",
                "data.ship.cargo[0].old",
                "data.systems.sol.pos.x"
            ]
        );
    }

    #[test]
    fn wrong_kinds_fail_naming_the_concrete_path() {
        let fails = |change: Change, data: &str| run(vec![change], data).unwrap_err();
        assert_eq!(
            fails(
                Change::to_double("ship.cargo[].qty"),
                r#"{"ship": {"cargo": [{"qty": 1}, {"qty": 2}, {"qty": "x"}]}}"#
            ),
            "change 0 (ship.cargo[].qty to a double): data.ship.cargo[2].qty is a string, not a number"
        );
        assert_eq!(
            fails(Change::rename("a.b", "c"), r#"{"a": {"b": 1, "c": 2}}"#),
            "change 0 (rename a.b to c): cannot rename data.a.b to c: data.a.c is there already"
        );
        assert_eq!(
            fails(Change::moved("a", "b.c"), r#"{"a": 1, "b": {"c": 2}}"#),
            "change 0 (move a to b.c): cannot move data.a to data.b.c: something is there"
        );
        assert_eq!(
            fails(Change::moved("a", "b.c"), r#"{"a": 1, "b": 3}"#),
            "change 0 (move a to b.c): cannot move data.a to data.b.c: data.b is an integer, not an object"
        );
        assert_eq!(
            fails(Change::unwrap("a[]"), r#"{"a": [[1], [1, 2]]}"#),
            "change 0 (unwrap a[] from its array): data.a[1] is an array of 2 elements; unwrap takes the element of an array of one"
        );
        assert_eq!(
            fails(Change::drop("a[].b", "x"), r#"{"a": {"b": 1}}"#),
            "change 0 (drop a[].b (x)): data.a is an object; the path goes through an array here"
        );
        assert_eq!(
            fails(Change::add("a.b", Value::Null), r#"{"a": "text"}"#),
            "change 0 (add a.b (default null)): data.a is a string; the change is to a member of an object here"
        );
        assert!(fails(Change::to_double("n"), r#"{"n": 9007199254740993}"#)
            .contains("no double holds exactly"));
        assert!(run(vec![Change::to_double("n")], r#"{"n": 9007199254740992}"#).is_ok());
    }

    #[test]
    fn malformed_declarations() {
        let invalid = |change: Change| Declaration::new(&[change]).unwrap_err().message;
        assert!(invalid(Change::drop("a", " ")).contains("never silent"));
        assert!(invalid(Change::rename("a[]", "b")).contains("ends with the member's name"));
        assert!(invalid(Change::moved("a[].b", "c")).contains("stays in the same element"));
        assert!(invalid(Change::moved("a[].b", "a[].c[].d")).contains("stays in the same element"));
        assert!(invalid(Change::moved("a", "b[].c")).contains("a move takes one value"));
        assert!(invalid(Change::moved("a", "a.b")).contains("inside the value moved"));
        assert!(invalid(Change::wrap("a[3]")).starts_with("wrap \"a[3]\": malformed path"));
    }

    #[test]
    fn canonical_text_writes_paths_one_way() {
        let a = Declaration::new(&[
            Change::rename("[\"player\"].hp", "health"),
            Change::moved("a[].b", "a[].c"),
        ])
        .unwrap();
        assert_eq!(
            a.canonical(),
            r#"[{"rename":"player.hp","to":"health"},{"move":"a[].b","to":"a[].c"}]"#
        );
        let b = Declaration::new(&[Change::rename("player.hp", "life")]).unwrap();
        assert_ne!(a.canonical(), b.canonical());
    }

    #[test]
    fn step_files() {
        let read = |text: &str| read_file(FsPath::new("steps/0003-x.json"), text.as_bytes());
        let file = read(
            r#"{"description": "shields", "changes": [
                {"add": "ship.shield", "default": ["d", "0x1.9p+6"]},
                {"drop": "player.tutorial_done", "reason": "gone"}]}"#,
        )
        .unwrap();
        assert_eq!(file.description.as_deref(), Some("shields"));
        assert_eq!(
            file.declaration.changes(),
            [
                Change::add("ship.shield", Value::Double(100.0)),
                Change::drop("player.tutorial_done", "gone")
            ]
        );
        let error = |text: &str| read(text).unwrap_err().to_string();
        assert_eq!(
            error(r#"{"changes": [{"rename": "a"}]}"#),
            "steps/0003-x.json: at changes[0]: a rename needs \"to\": the member's new name (a key, not a path)"
        );
        assert_eq!(
            error(r#"{"changes": [{"to_double": "a"}, {"drop": "a"}]}"#),
            "steps/0003-x.json: at changes[1]: a drop needs \"reason\": why the data can go (a drop is never silent)"
        );
        assert_eq!(
            error(r#"{"changes": [{"rename": "a", "move": "b"}]}"#),
            "steps/0003-x.json: at changes[0]: a change is one of \"add\", \"rename\", \"move\", \"drop\", \"to_double\", \"wrap\", \"unwrap\": found both \"move\" and \"rename\" (one change an object)"
        );
        assert_eq!(
            error(r#"{"changes": [{"wrap": "a", "to": "b"}]}"#),
            "steps/0003-x.json: at changes[0]: a wrap has only \"wrap\"; found \"to\""
        );
        assert_eq!(
            error(r#"{"changes": [{"wrap": 3}]}"#),
            "steps/0003-x.json: at changes[0].wrap: expected the path of the value, relative to the data, a string; found an integer"
        );
        assert!(error(r#"{"changes": [{"wrap": "a[0]"}]}"#)
            .starts_with("steps/0003-x.json: at changes[0]: wrap \"a[0]\": malformed path"));
        assert_eq!(
            error(r#"{"changes": [], "extra": 1}"#),
            "steps/0003-x.json: at extra: a declared step has only \"description\" and \"changes\""
        );
        assert!(error(r#"{"description": "x"}"#)
            .starts_with("steps/0003-x.json: at changes: expected the step's changes"));
        assert!(error("[1,").starts_with("steps/0003-x.json:1:"));
    }
}
