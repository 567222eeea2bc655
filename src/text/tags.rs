//! Which arrays are tags: the one rule the reader decodes by and the writer escapes by.

use crate::value::{Table, Value};

/// `["d", "0x1.8p+1"]`: a double.
pub(crate) const TAG_DOUBLE: u8 = b'd';
/// `["b", "..."]`: a byte string.
pub(crate) const TAG_BYTES: u8 = b'b';
/// `["a", [...]]`: an array taken literally, one that would otherwise look like a tag.
pub(crate) const TAG_LITERAL: u8 = b'a';
/// `["t", [[key, value], ...]]`: a Lua table with keys of any type.
pub(crate) const TAG_KEYED: u8 = b't';
/// `["s", [id, table]]`: the first place a shared table appears.
pub(crate) const TAG_SHARED: u8 = b's';
/// `["r", [id]]`: another place a shared table appears.
pub(crate) const TAG_REF: u8 = b'r';
/// `["c", [name, table]]`: an instance of a registered class.
pub(crate) const TAG_CLASS: u8 = b'c';

/// What kind of value the reader just read, as far as deciding tags needs: builders'
/// values are opaque to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Null,
    Bool,
    Int,
    /// A double typed as a JSON number.
    Number,
    /// A double spelled as a tag.
    Double,
    /// A string of one lowercase ASCII letter: what starts a tag.
    Letter(u8),
    String,
    Bytes,
    Array,
    Object,
    Table,
}

impl Shape {
    /// The name used in messages, as `Value::kind` gives it.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Shape::Null => "null",
            Shape::Bool => "a boolean",
            Shape::Int => "an integer",
            Shape::Number | Shape::Double => "a double",
            Shape::Letter(_) | Shape::String => "a string",
            Shape::Bytes => "a byte string",
            Shape::Array => "an array",
            Shape::Object => "an object",
            Shape::Table => "a Lua table",
        }
    }
}

impl Shape {
    /// The shape of a value in a tree.
    pub(crate) fn of(value: &Value) -> Shape {
        match value {
            Value::Null => Shape::Null,
            Value::Bool(_) => Shape::Bool,
            Value::Int(_) | Value::UInt(_) => Shape::Int,
            Value::Double(_) => Shape::Double,
            Value::String(s) => match s.as_bytes() {
                [letter @ b'a'..=b'z'] => Shape::Letter(*letter),
                _ => Shape::String,
            },
            Value::Bytes(_) => Shape::Bytes,
            Value::Array(_) => Shape::Array,
            Value::Object(_) => Shape::Object,
            Value::Table(t) => match **t {
                Table::Keyed(_) | Table::Shared { .. } | Table::Ref(_) | Table::Class { .. } => {
                    Shape::Table
                }
            },
        }
    }
}

/// Whether a two-element array whose first element is the one-letter string `letter` and
/// whose second has the shape `second` is a tag: for `d` and `b` whatever the second
/// element is (a string is a double or a byte string, a number typed into `d` is a double,
/// anything else is a mistake the reader reports); for the other letters when it is
/// something written in brackets or braces (an array, an object, or a tagged value; a
/// double counts, whether tagged or typed). `a` is defined, `t`, `s`, `r` and `c` spell Lua
/// tables, and the other letters are reserved for later versions of the format.
///
/// The reader decodes exactly these arrays as tags, and the writer escapes every literal
/// array of this shape as `["a", [...]]`.
pub(crate) fn is_tag(letter: u8, second: Shape) -> bool {
    matches!(letter, TAG_DOUBLE | TAG_BYTES)
        || matches!(
            second,
            Shape::Array
                | Shape::Object
                | Shape::Number
                | Shape::Double
                | Shape::Bytes
                | Shape::Table
        )
}

/// [`is_tag`] for the elements of an array in a tree: the tag's letter, if it is one.
pub(crate) fn tag_of(items: &[Value]) -> Option<u8> {
    match items {
        [first, second] => tag_of_pair(first, second),
        _ => None,
    }
}

/// [`tag_of`] for the two elements of an array.
pub(crate) fn tag_of_pair(first: &Value, second: &Value) -> Option<u8> {
    match Shape::of(first) {
        Shape::Letter(letter) if is_tag(letter, Shape::of(second)) => Some(letter),
        _ => None,
    }
}
