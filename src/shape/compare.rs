//! A recorded shape against the current one: each difference by shape path, a member
//! removed and another added in its place reported as a likely rename.
//!
//! ```
//! use savechain::shape::{compare, Shape};
//!
//! let recorded: Shape = r#"{"object": {"hero": {"object": {"hp": "u32", "name": "string"}}}}"#.parse()?;
//! let current: Shape = r#"{"object": {"hero": {"object": {"health": "u32", "name": "string",
//!     "shield": "double"}}}}"#.parse()?;
//! let lines: Vec<String> = compare(&recorded, &current).iter().map(|d| d.to_string()).collect();
//! assert_eq!(lines, [
//!     "data.hero.hp: removed (it was an integer from 0 to 4294967295); likely renamed to data.hero.health",
//!     "data.hero.shield: added (a number (a double))",
//! ]);
//! # Ok::<(), savechain::Error>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{IntRange, Member, Object, Shape};
use crate::path::{Path, Segment};

/// One difference between a recorded shape and the current one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Difference {
    /// Where, as a shape path from the root (`data` unless [`Compare`] says another root):
    /// `data.ship.cargo[].mass` (`[]` each element of an array, `[*]` each value of a map,
    /// keys that are not plain names quoted: `data["odd key"]`). For a rename, the old
    /// member's path.
    pub path: String,
    /// What changed there.
    pub change: Change,
}

/// What changed at one place, from the recorded shape to the current one.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// A member the recorded shape does not have, with its shape now.
    Added(Shape),
    /// A member the current shape no longer has, with its shape then.
    Removed(Shape),
    /// A member removed while another was added to the same object with the same shape or
    /// a compatible one (the same kind; objects sharing at least half their members).
    /// What else changed in it follows as differences at the new member's path.
    LikelyRenamed {
        /// The new member's shape path (`data.hero.health`).
        to: String,
        /// The new member's name (`health`), as a declared rename takes it.
        name: String,
        /// The removed member's shape.
        was: Shape,
    },
    /// What the game reads here is of another kind (text where an integer was, an array
    /// where an object was).
    KindChanged {
        /// The recorded shape here.
        from: Shape,
        /// The current shape here.
        to: Shape,
    },
    /// An integer whose range changed (`u8` to `u32`). Shapes inferred from saves cannot
    /// know ranges (every integer is an `i64`): [`Compare`] with `exact_int_ranges` false
    /// leaves these out.
    RangeChanged {
        /// The recorded range.
        from: IntRange,
        /// The current range.
        to: IntRange,
    },
    /// A member that was optional and is now required: a save without it no longer loads.
    NowRequired,
    /// A member that was required and is now optional.
    NowOptional,
    /// A place that may now be null as well.
    NowNullable,
    /// A place that was allowed to be null and no longer is.
    NoLongerNullable,
}

/// How to compare: where the shapes sit in a save, and what their sources can know.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compare {
    /// The path that differences start from: `data` (a game's shape), or
    /// `data.mods.<name>` for a mod's.
    pub root: String,
    /// Whether integer ranges are known on both sides. False when one side was inferred
    /// from saves (whose integers are all `i64`) and the other says `u32`: then
    /// [`Change::RangeChanged`] is never reported, and two shapes that differ only in
    /// ranges count as equal when renames are paired.
    pub exact_int_ranges: bool,
    /// Whether enums are known on both sides. False when one side was inferred from
    /// saves, which cannot tell an enum's words from text: then text and an enum
    /// (`{"enum": [...]}`) count as the same.
    pub exact_enums: bool,
}

impl Default for Compare {
    fn default() -> Compare {
        Compare {
            root: "data".into(),
            exact_int_ranges: true,
            exact_enums: true,
        }
    }
}

impl Compare {
    /// From `data`, ranges known on both sides.
    pub fn new() -> Compare {
        Compare::default()
    }

    /// Differences from `root` (`data.mods.cartographer`).
    pub fn root(mut self, root: impl Into<String>) -> Compare {
        self.root = root.into();
        self
    }

    /// Whether integer ranges are known on both sides.
    pub fn exact_int_ranges(mut self, exact: bool) -> Compare {
        self.exact_int_ranges = exact;
        self
    }

    /// Whether enums are known on both sides.
    pub fn exact_enums(mut self, exact: bool) -> Compare {
        self.exact_enums = exact;
        self
    }

    /// One side was inferred from saves: neither integer ranges nor enums are known.
    pub fn one_side_inferred(self) -> Compare {
        self.exact_int_ranges(false).exact_enums(false)
    }
}

/// The differences from the `recorded` shape to the `current` one, from `data`, integer
/// ranges compared: see [`compare_with`].
pub fn compare(recorded: &Shape, current: &Shape) -> Vec<Difference> {
    compare_with(recorded, current, &Compare::default())
}

/// The differences from the `recorded` shape to the `current` one, in path order (members
/// by name, a place before what is inside it; what changed inside a renamed member right
/// after its rename). Empty when they read the same saves.
///
/// In one object, members removed and members added with a compatible shape are paired as
/// likely renames, each at most once: pairs with equal shapes first, then the pairs whose
/// names are nearest, then by name, so the result is the same every time.
pub fn compare_with(recorded: &Shape, current: &Shape, how: &Compare) -> Vec<Difference> {
    let mut walk = Walk {
        exact_int_ranges: how.exact_int_ranges,
        exact_enums: how.exact_enums,
        out: Vec::new(),
    };
    walk.shapes(&how.root, recorded, current);
    walk.out
}

struct Walk {
    exact_int_ranges: bool,
    exact_enums: bool,
    out: Vec<Difference>,
}

impl Walk {
    fn push(&mut self, path: &str, change: Change) {
        self.out.push(Difference {
            path: path.to_string(),
            change,
        });
    }

    /// Whether `a` and `b` read the same saves, as this comparison sees them.
    fn same(&self, a: &Shape, b: &Shape) -> bool {
        let mut inner = Walk {
            exact_int_ranges: self.exact_int_ranges,
            exact_enums: self.exact_enums,
            out: Vec::new(),
        };
        inner.shapes("", a, b);
        inner.out.is_empty()
    }

    fn shapes(&mut self, path: &str, from: &Shape, to: &Shape) {
        if from == to {
            return;
        }
        match (from, to) {
            (Shape::Object(a), Shape::Object(b)) => self.objects(path, a, b),
            (Shape::Array(a), Shape::Array(b)) => self.shapes(&format!("{path}[]"), a, b),
            (Shape::Map(a), Shape::Map(b)) => self.shapes(&format!("{path}[*]"), a, b),
            (Shape::Tuple(a), Shape::Tuple(b)) if a.len() == b.len() => {
                for (i, (a, b)) in a.iter().zip(b).enumerate() {
                    self.shapes(&format!("{path}[{i}]"), a, b);
                }
            }
            (Shape::Nullable(a), Shape::Nullable(b)) => self.shapes(path, a, b),
            (Shape::Nullable(a), b) if class(a) == class(b) => {
                self.push(path, Change::NoLongerNullable);
                self.shapes(path, a, b);
            }
            (a, Shape::Nullable(b)) if class(a) == class(b) => {
                self.push(path, Change::NowNullable);
                self.shapes(path, a, b);
            }
            (Shape::Int(a), Shape::Int(b)) => {
                if self.exact_int_ranges {
                    self.push(path, Change::RangeChanged { from: *a, to: *b });
                }
            }
            (Shape::String, Shape::Strings(_)) | (Shape::Strings(_), Shape::String)
                if !self.exact_enums => {}
            (Shape::Strings(a), Shape::Strings(b))
                if a.iter().collect::<BTreeSet<_>>() == b.iter().collect::<BTreeSet<_>>() => {}
            (Shape::OneOf(a), Shape::OneOf(b)) if by_class(a, b).is_some() => {
                for (a, b) in by_class(a, b).unwrap_or_default() {
                    self.shapes(path, a, b);
                }
            }
            _ => self.push(
                path,
                Change::KindChanged {
                    from: from.clone(),
                    to: to.clone(),
                },
            ),
        }
    }

    fn objects(&mut self, path: &str, from: &Object, to: &Object) {
        let renames = self.renames(from, to);
        let renamed: BTreeSet<&str> = renames.values().copied().collect();
        let names: BTreeSet<&str> = from
            .members
            .keys()
            .chain(to.members.keys())
            .map(String::as_str)
            .collect();
        for name in names {
            let at = member_path(path, name);
            match (from.members.get(name), to.members.get(name)) {
                (Some(a), Some(b)) => self.members(&at, a, b),
                (Some(a), None) => match renames.get(name) {
                    Some(new) => {
                        let to_path = member_path(path, new);
                        self.push(
                            &at,
                            Change::LikelyRenamed {
                                to: to_path.clone(),
                                name: new.to_string(),
                                was: a.shape.clone(),
                            },
                        );
                        self.members(&to_path, a, &to.members[*new]);
                    }
                    None => self.push(&at, Change::Removed(a.shape.clone())),
                },
                (None, Some(b)) => {
                    if !renamed.contains(name) {
                        self.push(&at, Change::Added(b.shape.clone()));
                    }
                }
                (None, None) => unreachable!("a name of one of the objects"),
            }
        }
    }

    fn members(&mut self, path: &str, from: &Member, to: &Member) {
        match (from.required, to.required) {
            (true, false) => self.push(path, Change::NowOptional),
            (false, true) => self.push(path, Change::NowRequired),
            _ => {}
        }
        self.shapes(path, &from.shape, &to.shape);
    }

    /// The likely renames between the members only `from` has and those only `to` has:
    /// old name to new name.
    fn renames<'a>(&self, from: &'a Object, to: &'a Object) -> BTreeMap<&'a str, &'a str> {
        let mut candidates = Vec::new();
        for (old, a) in &from.members {
            if to.members.contains_key(old) {
                continue;
            }
            for (new, b) in &to.members {
                if from.members.contains_key(new) || !compatible(&a.shape, &b.shape) {
                    continue;
                }
                let equal = self.same(&a.shape, &b.shape);
                candidates.push((!equal, std::cmp::Reverse(likeness(old, new)), old, new));
            }
        }
        candidates.sort();
        let mut pairs = BTreeMap::new();
        let mut taken = BTreeSet::new();
        for (_, _, old, new) in candidates {
            if !pairs.contains_key(old.as_str()) && !taken.contains(new.as_str()) {
                pairs.insert(old.as_str(), new.as_str());
                taken.insert(new.as_str());
            }
        }
        pairs
    }
}

/// The shape path of member `name` of the place at `parent`.
fn member_path(parent: &str, name: &str) -> String {
    let key = Path::from(vec![Segment::Key(name.to_string())]).to_string();
    if parent.is_empty() || key.starts_with('[') {
        format!("{parent}{key}")
    } else {
        format!("{parent}.{key}")
    }
}

/// A kind's family: shapes of one family can stand for each other in a rename.
fn class(shape: &Shape) -> u8 {
    match shape {
        Shape::Any => 0,
        Shape::Null => 1,
        Shape::Bool => 2,
        Shape::Int(_) | Shape::Double => 3,
        Shape::String | Shape::Strings(_) => 4,
        Shape::Bytes => 5,
        Shape::LuaTable => 6,
        Shape::Array(_) | Shape::Tuple(_) => 7,
        Shape::Map(_) => 8,
        Shape::Object(_) => 9,
        Shape::Nullable(inner) => class(inner),
        Shape::OneOf(_) => 10,
    }
}

/// Whether a member of shape `a` may have been renamed to one of shape `b`: the same
/// family, and for objects at least half the members of the larger one in common.
fn compatible(a: &Shape, b: &Shape) -> bool {
    let strip = |shape: &Shape| match shape {
        Shape::Nullable(inner) => inner.as_ref().clone(),
        other => other.clone(),
    };
    match (&strip(a), &strip(b)) {
        (Shape::Object(a), Shape::Object(b)) => {
            let common = a
                .members
                .keys()
                .filter(|name| b.members.contains_key(*name))
                .count();
            2 * common >= a.members.len().max(b.members.len())
        }
        (Shape::Array(a), Shape::Array(b)) | (Shape::Map(a), Shape::Map(b)) => compatible(a, b),
        (a, b) => class(a) == class(b),
    }
}

/// The alternatives of two `one_of`s paired by family, when each family appears once on
/// each side.
fn by_class<'a>(a: &'a [Shape], b: &'a [Shape]) -> Option<Vec<(&'a Shape, &'a Shape)>> {
    let classes = |shapes: &'a [Shape]| -> Option<BTreeMap<u8, &'a Shape>> {
        let map: BTreeMap<u8, &Shape> = shapes.iter().map(|s| (class(s), s)).collect();
        (map.len() == shapes.len()).then_some(map)
    };
    let (a, b) = (classes(a)?, classes(b)?);
    if !a.keys().eq(b.keys()) {
        return None;
    }
    Some(a.into_values().zip(b.into_values()).collect())
}

/// How alike two names are, from 0 to 1000: one less the edit distance over the longer
/// length.
fn likeness(a: &str, b: &str) -> u32 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let longer = a.len().max(b.len());
    if longer == 0 {
        return 1000;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    ((longer - row[b.len()]) * 1000 / longer) as u32
}

fn range_words(range: &IntRange) -> String {
    match range.type_name() {
        Some(name) => format!("{name} ({} to {})", range.min, range.max),
        None => format!("{} to {}", range.min, range.max),
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Added(shape) => write!(f, "added ({})", shape.describe()),
            Change::Removed(shape) => write!(f, "removed (it was {})", shape.describe()),
            Change::LikelyRenamed { to, was, .. } => write!(
                f,
                "removed (it was {}); likely renamed to {to}",
                was.describe()
            ),
            Change::KindChanged { from, to } => write!(
                f,
                "the kind changed from {} to {}",
                from.describe(),
                to.describe()
            ),
            Change::RangeChanged { from, to } => {
                let effect = if to.min <= from.min && from.max <= to.max {
                    "wider: every integer it held is still read"
                } else {
                    "narrower: an integer it held may no longer be read"
                };
                write!(
                    f,
                    "the integer range changed from {} to {} ({effect})",
                    range_words(from),
                    range_words(to)
                )
            }
            Change::NowRequired => {
                f.write_str("now required (it was optional: a save without it no longer loads)")
            }
            Change::NowOptional => f.write_str("now optional (it was required)"),
            Change::NowNullable => f.write_str("may now be null as well"),
            Change::NoLongerNullable => f.write_str(
                "may no longer be null (it could be: a save holding null here no longer loads)",
            ),
        }
    }
}

/// One line a developer can act on: `data.ship.shield: added (a number (a double))`.
impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Shape {
        text.parse().unwrap()
    }

    fn lines(recorded: &str, current: &str) -> Vec<String> {
        compare(&shape(recorded), &shape(current))
            .iter()
            .map(Difference::to_string)
            .collect()
    }

    #[test]
    fn the_same_shape_has_no_differences() {
        let text = r#"{"object": {"a": {"one_of": ["string", "u8"]}, "b": {"enum": ["x", "y"]}}}"#;
        assert!(lines(text, text).is_empty());
        // The order of alternatives and of enum words is no difference.
        assert!(lines(
            text,
            r#"{"object": {"a": {"one_of": ["u8", "string"]}, "b": {"enum": ["y", "x"]}}}"#
        )
        .is_empty());
    }

    #[test]
    fn added_and_removed_members() {
        assert_eq!(
            lines(
                r#"{"object": {"ship": {"object": {"hull": "double", "crew": "string"}}}}"#,
                r#"{"object": {"ship": {"object": {"hull": "double", "shield": "double"}}}}"#
            ),
            [
                "data.ship.crew: removed (it was text)",
                "data.ship.shield: added (a number (a double))"
            ]
        );
    }

    #[test]
    fn kind_changed() {
        assert_eq!(
            lines(
                r#"{"object": {"player": {"object": {"rank": {"object": {"level": "string"}}}}}}"#,
                r#"{"object": {"player": {"object": {"rank": {"object": {"level": "u8"}}}}}}"#
            ),
            ["data.player.rank.level: the kind changed from text to an integer from 0 to 255"]
        );
        assert_eq!(
            lines(r#"{"array": "u8"}"#, r#"{"map": "u8"}"#),
            ["data: the kind changed from an array to an object"]
        );
        assert_eq!(
            lines(r#"{"enum": ["a"]}"#, r#"{"enum": ["a", "b"]}"#),
            [r#"data: the kind changed from the text "a" to one of "a", "b""#]
        );
    }

    #[test]
    fn range_changed_unless_ranges_are_not_known() {
        let recorded = shape(r#"{"object": {"level": "i64", "count": "u8"}}"#);
        let current = shape(r#"{"object": {"level": "u32", "count": "u16"}}"#);
        let all: Vec<String> = compare(&recorded, &current)
            .iter()
            .map(Difference::to_string)
            .collect();
        assert_eq!(
            all,
            [
                "data.count: the integer range changed from u8 (0 to 255) to u16 (0 to 65535) (wider: every integer it held is still read)",
                "data.level: the integer range changed from i64 (-9223372036854775808 to 9223372036854775807) to u32 (0 to 4294967295) (narrower: an integer it held may no longer be read)",
            ]
        );
        let how = Compare::new().exact_int_ranges(false);
        assert!(compare_with(&recorded, &current, &how).is_empty());
        // An integer that became a double is still a change of kind.
        let double = shape(r#"{"object": {"level": "double", "count": "u16"}}"#);
        assert_eq!(
            compare_with(&recorded, &double, &how)
                .iter()
                .map(Difference::to_string)
                .collect::<Vec<_>>(),
            ["data.level: the kind changed from an integer from -9223372036854775808 to 9223372036854775807 to a number (a double)"]
        );
    }

    #[test]
    fn text_and_an_enum_are_the_same_unless_enums_are_known() {
        let inferred = shape(r#"{"object": {"kind": "string", "level": "i64"}}"#);
        let typed = shape(r#"{"object": {"kind": {"enum": ["cadet", "captain"]}, "level": "u8"}}"#);
        assert_eq!(compare(&inferred, &typed).len(), 2);
        let how = Compare::new().one_side_inferred();
        assert!(compare_with(&inferred, &typed, &how).is_empty());
        assert!(compare_with(&typed, &inferred, &how).is_empty());
        // Two enums are both known: their words still count.
        let other = shape(r#"{"object": {"kind": {"enum": ["cadet"]}, "level": "u8"}}"#);
        assert_eq!(compare_with(&typed, &other, &how).len(), 1);
    }

    #[test]
    fn required_and_optional_and_nullable() {
        assert_eq!(
            lines(
                r#"{"object": {"a": "bool", "b": {"optional": "bool"}, "c": {"nullable": "string"}, "d": "string"}}"#,
                r#"{"object": {"a": {"optional": "bool"}, "b": "bool", "c": "string", "d": {"nullable": "string"}}}"#
            ),
            [
                "data.a: now optional (it was required)",
                "data.b: now required (it was optional: a save without it no longer loads)",
                "data.c: may no longer be null (it could be: a save holding null here no longer loads)",
                "data.d: may now be null as well",
            ]
        );
        // Nullable of another kind is one change of kind.
        assert_eq!(
            lines(r#"{"nullable": "string"}"#, r#""bool""#),
            ["data: the kind changed from null or text to true or false"]
        );
        // An Option field that became required and non-null: both, at its path.
        assert_eq!(
            lines(
                r#"{"object": {"x": {"optional": {"nullable": "u8"}}}}"#,
                r#"{"object": {"x": "u16"}}"#
            ),
            [
                "data.x: now required (it was optional: a save without it no longer loads)",
                "data.x: may no longer be null (it could be: a save holding null here no longer loads)",
                "data.x: the integer range changed from u8 (0 to 255) to u16 (0 to 65535) (wider: every integer it held is still read)",
            ]
        );
    }

    #[test]
    fn a_member_removed_and_another_added_alike_is_a_likely_rename() {
        let diffs = compare(
            &shape(r#"{"object": {"hero": {"object": {"hp": "i64", "name": "string"}}}}"#),
            &shape(r#"{"object": {"hero": {"object": {"health": "i64", "name": "string"}}}}"#),
        );
        assert_eq!(
            diffs,
            [Difference {
                path: "data.hero.hp".into(),
                change: Change::LikelyRenamed {
                    to: "data.hero.health".into(),
                    name: "health".into(),
                    was: Shape::Int(IntRange::I64),
                },
            }]
        );
        assert_eq!(
            diffs[0].to_string(),
            "data.hero.hp: removed (it was an integer from -9223372036854775808 to 9223372036854775807); likely renamed to data.hero.health"
        );
    }

    #[test]
    fn a_rename_with_changes_inside_lists_them_at_the_new_path() {
        assert_eq!(
            lines(
                r#"{"object": {"wallet": {"object": {"credits": "i64", "debt": "i64"}}}}"#,
                r#"{"object": {"purse": {"optional": {"object": {"credits": "double", "debt": "i64", "gems": "u8"}}}}}"#
            ),
            [
                "data.wallet: removed (it was an object); likely renamed to data.purse",
                "data.purse: now optional (it was required)",
                "data.purse.credits: the kind changed from an integer from -9223372036854775808 to 9223372036854775807 to a number (a double)",
                "data.purse.gems: added (an integer from 0 to 255)",
            ]
        );
    }

    #[test]
    fn renames_are_not_guessed_across_kinds_or_unlike_objects() {
        assert_eq!(
            lines(
                r#"{"object": {"a": "string", "o": {"object": {"x": "u8", "y": "u8", "z": "u8"}}}}"#,
                r#"{"object": {"b": "bool", "p": {"object": {"x": "u8", "q": "u8", "r": "u8"}}}}"#
            ),
            [
                "data.a: removed (it was text)",
                "data.b: added (true or false)",
                "data.o: removed (it was an object)",
                "data.p: added (an object)",
            ]
        );
    }

    #[test]
    fn several_candidates_pair_equal_shapes_first_then_nearest_names() {
        // hp (an i64) pairs with health (an i64) rather than with hit_points (a double),
        // though hit_points is the nearer name; mana pairs with the nearest name left.
        assert_eq!(
            lines(
                r#"{"object": {"hp": "i64", "mana": "bool"}}"#,
                r#"{"object": {"health": "i64", "hit_points": "double", "magic": "bool", "manna": "bool"}}"#
            ),
            [
                "data.hit_points: added (a number (a double))",
                "data.hp: removed (it was an integer from -9223372036854775808 to 9223372036854775807); likely renamed to data.health",
                "data.magic: added (true or false)",
                "data.mana: removed (it was true or false); likely renamed to data.manna",
            ]
        );
        // Without ranges known, an i64 and a u32 count as equal for the pairing.
        let how = Compare::new().exact_int_ranges(false);
        let diffs = compare_with(
            &shape(r#"{"object": {"hp": "i64"}}"#),
            &shape(r#"{"object": {"hit_points": "double", "health": "u32"}}"#),
            &how,
        );
        assert!(
            matches!(&diffs[1].change, Change::LikelyRenamed { name, .. } if name == "health"),
            "{diffs:?}"
        );
    }

    #[test]
    fn renames_inside_array_elements_and_map_values() {
        assert_eq!(
            lines(
                r#"{"object": {
                    "ship": {"object": {"cargo": {"array": {"object": {"good": "string", "qty": "u32"}}}}},
                    "systems": {"map": {"object": {"seen": "bool", "name": "string"}}}
                }}"#,
                r#"{"object": {
                    "ship": {"object": {"cargo": {"array": {"object": {"item": "string", "count": "u32"}}}}},
                    "systems": {"map": {"object": {"visited": "bool", "name": "string"}}}
                }}"#
            ),
            [
                "data.ship.cargo[].good: removed (it was text); likely renamed to data.ship.cargo[].item",
                "data.ship.cargo[].qty: removed (it was an integer from 0 to 4294967295); likely renamed to data.ship.cargo[].count",
                "data.systems[*].seen: removed (it was true or false); likely renamed to data.systems[*].visited",
            ]
        );
    }

    #[test]
    fn paths_quote_odd_keys_and_start_at_the_root_given() {
        let recorded = shape(
            r#"{"object": {"odd key": {"object": {"a": "u8"}}, "t": {"tuple": ["u8", "u8"]}}}"#,
        );
        let current = shape(
            r#"{"object": {"odd key": {"object": {"a": "bool"}}, "t": {"tuple": ["u8", "bool"]}}}"#,
        );
        let how = Compare::new().root("data.mods.cartographer");
        assert_eq!(
            compare_with(&recorded, &current, &how)
                .iter()
                .map(Difference::to_string)
                .collect::<Vec<_>>(),
            [
                r#"data.mods.cartographer["odd key"].a: the kind changed from an integer from 0 to 255 to true or false"#,
                "data.mods.cartographer.t[1]: the kind changed from an integer from 0 to 255 to true or false",
            ]
        );
        let at_root = compare_with(&recorded, &current, &Compare::new().root(""));
        assert_eq!(at_root[0].path, r#"["odd key"].a"#);
        assert_eq!(at_root[1].path, "t[1]");
    }

    #[test]
    fn one_of_alternatives_compare_by_kind() {
        assert_eq!(
            lines(
                r#"{"one_of": ["string", {"object": {"a": "u8"}}]}"#,
                r#"{"one_of": [{"object": {"a": "u8", "b": "u8"}}, "string"]}"#
            ),
            ["data.b: added (an integer from 0 to 255)"]
        );
        assert_eq!(
            lines(r#"{"one_of": ["string", "u8"]}"#, r#"{"one_of": ["string", "bool"]}"#),
            ["data: the kind changed from one of: text; an integer from 0 to 255 to one of: text; true or false"]
        );
    }

    #[test]
    fn the_example_game_s_releases_inferred_from_its_fixtures() {
        use crate::shape::{infer, Hints};
        let inferred = |version: u32| -> Shape {
            let saves: Vec<crate::Value> = ["small", "edge"]
                .iter()
                .map(|name| {
                    let path = format!(
                        "{}/fixtures/v{version}/{name}.json",
                        env!("CARGO_MANIFEST_DIR")
                    );
                    crate::Save::load(path).unwrap().data
                })
                .collect();
            // Systems became a table keyed by id in version 5.
            let hints = match version {
                1..=4 => Hints::new(),
                _ => Hints::new().map("systems"),
            };
            infer(&saves, &hints).unwrap()
        };
        let mut text = String::new();
        for from in 1..9 {
            text.push_str(&format!("{from} -> {}:\n", from + 1));
            for difference in compare(&inferred(from), &inferred(from + 1)) {
                text.push_str(&format!("  {difference}\n"));
            }
        }
        insta::assert_snapshot!("starlane_releases", text);
    }

    fn arb_shape() -> impl proptest::strategy::Strategy<Value = Shape> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Shape::Any),
            Just(Shape::Null),
            Just(Shape::Bool),
            Just(Shape::Double),
            Just(Shape::String),
            Just(Shape::Bytes),
            (-3i128..3, 0i128..300).prop_map(|(min, max)| Shape::int(min, min + max)),
            proptest::collection::vec("[a-c]", 1..3).prop_map(Shape::Strings),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|s| Shape::Array(Box::new(s))),
                inner.clone().prop_map(|s| Shape::Map(Box::new(s))),
                inner.clone().prop_map(|s| Shape::Nullable(Box::new(s))),
                proptest::collection::vec(inner.clone(), 1..3).prop_map(Shape::Tuple),
                proptest::collection::btree_map("[a-d]", (inner, any::<bool>()), 0..4).prop_map(
                    |members| {
                        Shape::Object(Object::new(
                            members.into_iter().map(|(name, (shape, required))| {
                                (name, Member { shape, required })
                            }),
                        ))
                    }
                ),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn a_shape_has_no_differences_with_itself_and_a_renamed_member_is_one_rename(
            shape in arb_shape(),
            members in proptest::collection::btree_map("[a-d]", arb_shape(), 1..4),
            pick in 0usize..4,
        ) {
            proptest::prop_assert!(compare(&shape, &shape).is_empty());
            let recorded = Object::new(members.into_iter().map(|(n, s)| (n, Member::required(s))));
            let old = recorded.members.keys().nth(pick % recorded.members.len()).unwrap().clone();
            let mut current = recorded.clone();
            let member = current.members.remove(&old).unwrap();
            current.members.insert("renamed".into(), member.clone());
            let diffs = compare(&Shape::Object(recorded), &Shape::Object(current));
            proptest::prop_assert_eq!(
                diffs,
                vec![Difference {
                    path: format!("data.{old}"),
                    change: Change::LikelyRenamed {
                        to: "data.renamed".into(),
                        name: "renamed".into(),
                        was: member.shape,
                    },
                }]
            );
        }
    }

    #[test]
    fn likeness_of_names() {
        assert_eq!(likeness("mana", "mana"), 1000);
        assert_eq!(likeness("mana", "manna"), 800);
        assert_eq!(likeness("", ""), 1000);
        assert_eq!(likeness("ab", ""), 0);
        assert!(likeness("hp", "hit_points") > likeness("hp", "health"));
    }
}
