//! Shapes: what a game reads at one version of its saves, recorded beside its steps, and
//! what checks a save, a hand edit or the game's own types against it.
//!
//! A [`Shape`] describes the `data` of a save (or a mod's part of it, `data.mods.<name>`):
//! which objects have which members, which of them the game cannot do without, and what
//! kind of value sits at each place. It is written as a small JSON file, one per version
//! (`docs/FORMAT.md`, section 11):
//!
//! ```
//! use savechain::shape::Shape;
//!
//! let shape: Shape = r#"{"object": {
//!     "hull": "double",
//!     "crew": "u32",
//!     "name": {"optional": "string"},
//!     "cargo": {"array": {"object": {"good": "string", "count": "u32"}}}
//! }}"#.parse()?;
//! assert_eq!(shape.to_string(), shape.to_string().parse::<Shape>()?.to_string());
//! # Ok::<(), savechain::Error>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde_json::Value as Json;

use crate::error::{Error, ErrorKind, Result};

mod check;
mod compare;
mod from_type;
mod infer;
mod store;
mod to_schema;

pub(crate) use check::describe_found;
pub use check::{Mismatch, MismatchKind};
pub use compare::{compare, compare_with, Change, Compare, Difference};
pub use from_type::of;
pub use infer::{infer, Hints};
pub use store::{record_type, Recorded, Shapes, SHAPES_DIR};
pub use to_schema::{json_schema, DRAFT_2020_12};

/// What the game reads at one place of a save.
///
/// Objects are closed: a member the shape does not name is one the game would drop when
/// it stores the save again, so a check reports it. A place whose keys are the game's
/// data (ids, names) is a [`Shape::Map`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shape {
    /// Any value at all: state the game keeps without reading it (a `savechain::Value`
    /// field, Lua modules' state). Written `"any"`.
    Any,
    /// `null` only. Written `"null"`.
    Null,
    /// `true` or `false`. Written `"bool"`.
    Bool,
    /// An integer in a range. Written by its type's name when it is one (`"u32"`, `"i64"`,
    /// ...), otherwise `{"int": [min, max]}`.
    Int(IntRange),
    /// A double; an integer is read as the double nearest it. Written `"double"`.
    Double,
    /// Text. Written `"string"`.
    String,
    /// A byte string. Written `"bytes"`.
    Bytes,
    /// A Lua table that only a tag spells (typed keys, a shared table, a class instance).
    /// Written `"lua-table"`.
    LuaTable,
    /// One of these strings (an enum's unit variants). Written `{"enum": ["a", "b"]}`.
    Strings(Vec<String>),
    /// An array whose every element has this shape. Written `{"array": S}`.
    Array(Box<Shape>),
    /// An array of exactly these elements. Written `{"tuple": [S, ...]}`.
    Tuple(Vec<Shape>),
    /// An object with any keys, every value of this shape. Written `{"map": S}`.
    Map(Box<Shape>),
    /// An object with these members. Written `{"object": {"name": S, "other": {"optional": S}}}`.
    Object(Object),
    /// `null` or this shape (an `Option`). Written `{"nullable": S}`.
    Nullable(Box<Shape>),
    /// Any one of these shapes (an enum with data). Written `{"one_of": [S, ...]}`.
    OneOf(Vec<Shape>),
}

/// The integers from `min` to `max`, both included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IntRange {
    /// The least.
    pub min: i128,
    /// The greatest.
    pub max: i128,
}

/// The integer types a range can be named by, as shape files name them.
const INT_NAMES: &[(&str, i128, i128)] = &[
    ("u8", 0, u8::MAX as i128),
    ("u16", 0, u16::MAX as i128),
    ("u32", 0, u32::MAX as i128),
    ("u64", 0, u64::MAX as i128),
    ("i8", i8::MIN as i128, i8::MAX as i128),
    ("i16", i16::MIN as i128, i16::MAX as i128),
    ("i32", i32::MIN as i128, i32::MAX as i128),
    ("i64", i64::MIN as i128, i64::MAX as i128),
];

impl IntRange {
    /// The range of `i64`.
    pub const I64: IntRange = IntRange::new(i64::MIN as i128, i64::MAX as i128);
    /// The range of `u64`.
    pub const U64: IntRange = IntRange::new(0, u64::MAX as i128);

    /// The integers from `min` to `max`.
    pub const fn new(min: i128, max: i128) -> IntRange {
        IntRange { min, max }
    }

    /// The name of the integer type with exactly this range (`"u32"`), if there is one.
    pub fn type_name(&self) -> Option<&'static str> {
        INT_NAMES
            .iter()
            .find(|(_, min, max)| *min == self.min && *max == self.max)
            .map(|(name, _, _)| *name)
    }

    /// Whether `n` is in the range.
    pub fn contains(&self, n: i128) -> bool {
        self.min <= n && n <= self.max
    }
}

/// The members of an object shape, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Object {
    /// Each member the game reads, by name.
    pub members: BTreeMap<String, Member>,
}

/// One member of an object shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// What the game reads there.
    pub shape: Shape,
    /// Whether the game needs it: a save without a required member does not load. An
    /// optional member (an `Option` or a field with a default) may be left out.
    pub required: bool,
}

impl Member {
    /// A member the game cannot do without.
    pub fn required(shape: Shape) -> Member {
        Member {
            shape,
            required: true,
        }
    }

    /// A member that may be left out.
    pub fn optional(shape: Shape) -> Member {
        Member {
            shape,
            required: false,
        }
    }
}

impl Object {
    /// An object shape with these members.
    pub fn new(members: impl IntoIterator<Item = (String, Member)>) -> Object {
        Object {
            members: members.into_iter().collect(),
        }
    }
}

impl Shape {
    /// The shape of integers from `min` to `max`.
    pub fn int(min: i128, max: i128) -> Shape {
        Shape::Int(IntRange::new(min, max))
    }

    /// What the game reads here, in words, for error messages: `an integer from 0 to
    /// 4294967295`, `an object`, `null or text`.
    pub fn describe(&self) -> String {
        match self {
            Shape::Any => "any value".into(),
            Shape::Null => "null".into(),
            Shape::Bool => "true or false".into(),
            Shape::Int(range) => format!("an integer from {} to {}", range.min, range.max),
            Shape::Double => "a number (a double)".into(),
            Shape::String => "text".into(),
            Shape::Bytes => "a byte string".into(),
            Shape::LuaTable => "a Lua table tag".into(),
            Shape::Strings(words) => {
                let quoted: Vec<String> = words.iter().map(|w| format!("{w:?}")).collect();
                match quoted.as_slice() {
                    [one] => format!("the text {one}"),
                    _ => format!("one of {}", quoted.join(", ")),
                }
            }
            Shape::Array(_) => "an array".into(),
            Shape::Tuple(items) => format!("an array of {} elements", items.len()),
            Shape::Map(_) | Shape::Object(_) => "an object".into(),
            Shape::Nullable(inner) => format!("null or {}", inner.describe()),
            Shape::OneOf(shapes) => {
                let words: Vec<String> = shapes.iter().map(Shape::describe).collect();
                format!("one of: {}", words.join("; "))
            }
        }
    }

    /// The shape as the JSON of a shape file.
    pub fn to_json(&self) -> Json {
        let tagged = |tag: &str, inner: Json| {
            let mut object = serde_json::Map::new();
            object.insert(tag.to_string(), inner);
            Json::Object(object)
        };
        let list = |shapes: &[Shape]| Json::Array(shapes.iter().map(Shape::to_json).collect());
        match self {
            Shape::Any => "any".into(),
            Shape::Null => "null".into(),
            Shape::Bool => "bool".into(),
            Shape::Int(range) => match range.type_name() {
                Some(name) => name.into(),
                None => tagged(
                    "int",
                    Json::Array(vec![int_json(range.min), int_json(range.max)]),
                ),
            },
            Shape::Double => "double".into(),
            Shape::String => "string".into(),
            Shape::Bytes => "bytes".into(),
            Shape::LuaTable => "lua-table".into(),
            Shape::Strings(words) => tagged(
                "enum",
                Json::Array(words.iter().map(|w| Json::String(w.clone())).collect()),
            ),
            Shape::Array(inner) => tagged("array", inner.to_json()),
            Shape::Tuple(items) => tagged("tuple", list(items)),
            Shape::Map(inner) => tagged("map", inner.to_json()),
            Shape::Object(object) => {
                let members = object
                    .members
                    .iter()
                    .map(|(name, member)| {
                        let shape = member.shape.to_json();
                        let shape = if member.required {
                            shape
                        } else {
                            tagged("optional", shape)
                        };
                        (name.clone(), shape)
                    })
                    .collect();
                tagged("object", Json::Object(members))
            }
            Shape::Nullable(inner) => tagged("nullable", inner.to_json()),
            Shape::OneOf(shapes) => tagged("one_of", list(shapes)),
        }
    }

    /// Reads a shape from the JSON of a shape file; `at` is where it sits in that file,
    /// for errors (`data.object.hull`).
    pub fn from_json(json: &Json) -> Result<Shape> {
        from_json_at(json, "data")
    }
}

fn int_json(n: i128) -> Json {
    if let Ok(n) = i64::try_from(n) {
        Json::from(n)
    } else if let Ok(n) = u64::try_from(n) {
        Json::from(n)
    } else {
        // Out of both ranges: no save can hold such an integer anyway.
        Json::String(n.to_string())
    }
}

fn invalid(at: &str, what: String) -> Error {
    Error::new(ErrorKind::Shape, format!("{at}: {what}"))
}

const KINDS: &str = "\"any\", \"null\", \"bool\", \"double\", \"string\", \"bytes\", \"lua-table\", an integer type (\"u8\" to \"u64\", \"i8\" to \"i64\") or an object with one of \"int\", \"enum\", \"array\", \"tuple\", \"map\", \"object\", \"nullable\", \"one_of\"";

fn from_json_at(json: &Json, at: &str) -> Result<Shape> {
    match json {
        Json::String(word) => {
            let shape = match word.as_str() {
                "any" => Shape::Any,
                "null" => Shape::Null,
                "bool" => Shape::Bool,
                "double" => Shape::Double,
                "string" => Shape::String,
                "bytes" => Shape::Bytes,
                "lua-table" => Shape::LuaTable,
                other => match INT_NAMES.iter().find(|(name, _, _)| *name == other) {
                    Some((_, min, max)) => Shape::int(*min, *max),
                    None => {
                        return Err(invalid(
                            at,
                            format!("unknown kind {other:?}; expected {KINDS}"),
                        ))
                    }
                },
            };
            Ok(shape)
        }
        Json::Object(object) if object.len() == 1 => {
            let (tag, inner) = object.iter().next().expect("one member");
            let at = format!("{at}.{tag}");
            let list = |inner: &Json| -> Result<Vec<Shape>> {
                let items = inner
                    .as_array()
                    .ok_or_else(|| invalid(&at, "expected an array of shapes".into()))?;
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| from_json_at(item, &format!("{at}[{i}]")))
                    .collect()
            };
            let shape = match tag.as_str() {
                "int" => {
                    let bound = |json: &Json| -> Option<i128> {
                        json.as_i64()
                            .map(i128::from)
                            .or_else(|| json.as_u64().map(i128::from))
                    };
                    let range = match inner.as_array().map(Vec::as_slice) {
                        Some([min, max]) => bound(min).zip(bound(max)),
                        _ => None,
                    };
                    match range {
                        Some((min, max)) if min <= max => Shape::int(min, max),
                        _ => {
                            return Err(invalid(
                                &at,
                                "expected [min, max], two integers with min <= max".into(),
                            ))
                        }
                    }
                }
                "enum" => {
                    let words = inner.as_array().and_then(|items| {
                        items
                            .iter()
                            .map(|w| w.as_str().map(str::to_string))
                            .collect::<Option<Vec<String>>>()
                    });
                    match words {
                        Some(words) if !words.is_empty() => Shape::Strings(words),
                        _ => return Err(invalid(&at, "expected an array of strings".into())),
                    }
                }
                "array" => Shape::Array(Box::new(from_json_at(inner, &at)?)),
                "tuple" => Shape::Tuple(list(inner)?),
                "map" => Shape::Map(Box::new(from_json_at(inner, &at)?)),
                "nullable" => Shape::Nullable(Box::new(from_json_at(inner, &at)?)),
                "one_of" => {
                    let shapes = list(inner)?;
                    if shapes.len() < 2 {
                        return Err(invalid(
                            &at,
                            "expected an array of two shapes or more".into(),
                        ));
                    }
                    Shape::OneOf(shapes)
                }
                "object" => {
                    let members = inner
                        .as_object()
                        .ok_or_else(|| invalid(&at, "expected an object of members".into()))?;
                    let mut object = Object::default();
                    for (name, member) in members {
                        let member_at = format!(
                            "{at}.{}",
                            crate::path::Path::from(vec![crate::path::Segment::Key(name.clone()),])
                        );
                        let member = match member {
                            Json::Object(m) if m.len() == 1 && m.contains_key("optional") => {
                                Member::optional(from_json_at(&m["optional"], &member_at)?)
                            }
                            _ => Member::required(from_json_at(member, &member_at)?),
                        };
                        object.members.insert(name.clone(), member);
                    }
                    Shape::Object(object)
                }
                "optional" => {
                    return Err(invalid(
                        &at,
                        "\"optional\" marks a member of an object, not a shape of its own".into(),
                    ))
                }
                other => {
                    return Err(invalid(
                        &at,
                        format!("unknown kind {other:?}; expected {KINDS}"),
                    ))
                }
            };
            Ok(shape)
        }
        _ => Err(invalid(at, format!("expected {KINDS}"))),
    }
}

/// Written as a shape file writes it: canonical JSON, keys sorted, two spaces of indent,
/// so that a changed member is a small diff.
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string_pretty(&self.to_json()).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl FromStr for Shape {
    type Err = Error;

    fn from_str(text: &str) -> Result<Shape> {
        let json: Json = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Shape, format!("not JSON: {e}")))?;
        Shape::from_json(&json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_as_written() {
        let text = r#"{"object": {
            "a": "any", "b": "null", "c": "bool", "d": "double", "e": "string",
            "f": "bytes", "g": "lua-table", "h": "u32", "i": {"int": [-3, 9]},
            "j": {"enum": ["x", "y"]}, "k": {"array": "i64"}, "l": {"tuple": ["u8", "string"]},
            "m": {"map": "double"}, "n": {"nullable": "string"},
            "o": {"one_of": ["string", {"object": {"p": "bool"}}]},
            "q": {"optional": {"array": "u64"}}
        }}"#;
        let shape: Shape = text.parse().unwrap();
        let Shape::Object(object) = &shape else {
            panic!("an object")
        };
        assert_eq!(object.members["h"].shape, Shape::int(0, u32::MAX as i128));
        assert!(!object.members["q"].required);
        assert!(object.members["a"].required);
        let again: Shape = shape.to_string().parse().unwrap();
        assert_eq!(again, shape);
    }

    #[test]
    fn refuses_what_is_not_a_shape_naming_where() {
        let cases = [
            (r#""integer""#, "data: unknown kind \"integer\""),
            (
                r#"{"object": {"hull": "float"}}"#,
                "data.object.hull: unknown kind \"float\"",
            ),
            (r#"{"int": [5, 1]}"#, "data.int: expected [min, max]"),
            (
                r#"{"optional": "u8"}"#,
                "data.optional: \"optional\" marks a member",
            ),
            (r#"{"array": "u8", "map": "u8"}"#, "data: expected"),
        ];
        for (text, start) in cases {
            let err = text.parse::<Shape>().unwrap_err().to_string();
            assert!(err.contains(start), "{text}: {err}");
        }
    }

    #[test]
    fn describes_what_the_game_reads_in_words() {
        assert_eq!(
            Shape::int(0, u32::MAX as i128).describe(),
            "an integer from 0 to 4294967295"
        );
        assert_eq!(
            Shape::Nullable(Box::new(Shape::String)).describe(),
            "null or text"
        );
    }
}
