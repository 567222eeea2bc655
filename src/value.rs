//! The document model: every value a save can hold, the key-sorted [`Map`] of objects, and
//! the ways to get around in a document (indexing, paths, entries).

use std::{fmt, ops};

use compact_str::CompactString;

use crate::path::{self, Step};

/// One value of a save document.
///
/// Equality is exact: doubles compare by their bits (so a NaN equals the same NaN and
/// `-0.0 != 0.0`), integers compare by their mathematical value whether stored as
/// [`Value::Int`] or [`Value::UInt`], and a string never equals a byte string.
///
/// # Getting around
///
/// As with `serde_json::Value`, a value is indexed by key or by position, and reading what
/// is not there gives `null` rather than a panic. Assigning through an index puts a member
/// into an object (turning a `null` into an object first), so a path is made as it is
/// written to:
///
/// ```
/// use savechain::Value;
///
/// let mut data = savechain::text::from_str(
///     r#"{"ship": {"hull": 96, "cargo": [{"mass": 12}]}}"#,
/// )?;
/// assert_eq!(data["ship"]["hull"], Value::Int(96));
/// assert_eq!(data["ship"]["cargo"][0]["mass"], Value::Int(12));
/// assert!(data["ship"]["shields"]["front"].is_null()); // nothing there: null
///
/// data["ship"]["stats"]["speed"] = Value::Int(7); // `stats` is made on the way
/// assert_eq!(data.pointer("ship.stats.speed"), Some(&Value::Int(7)));
///
/// // A move: take the old member out, put it in its new place.
/// let hull = data["ship"].as_object_mut().and_then(|ship| ship.remove("hull"));
/// data["ship"]["stats"]["hull"] = hull.unwrap_or_default();
/// assert_eq!(data["ship"]["stats"]["hull"], Value::Int(96));
/// # Ok::<(), savechain::Error>(())
/// ```
///
/// Where this differs from `serde_json`: [`Value::pointer`] takes a path as savechain's
/// errors print it (`ship.cargo[0].mass`), not a JSON Pointer (`/ship/cargo/0/mass`); and
/// neither indexing nor paths go inside a Lua table ([`Value::Table`]): indexing one gives
/// `null` and `pointer` finds nothing below one.
#[derive(Clone, Debug, Default)]
pub enum Value {
    #[default]
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A signed integer. The reader uses this for every integer that fits in an `i64`.
    Int(i64),
    /// An unsigned integer. The reader uses this only above `i64::MAX`.
    UInt(u64),
    /// A double, kept bit for bit (NaN payloads, `-0.0` and subnormals included).
    Double(f64),
    /// UTF-8 text.
    String(String),
    /// Arbitrary bytes (a Lua string that is not text, binary data).
    Bytes(Vec<u8>),
    /// An array.
    Array(Vec<Value>),
    /// An object, its keys sorted.
    Object(Map),
    /// A Lua table that a plain array or object cannot spell: typed keys, a table shared
    /// between several places, an instance of a class.
    Table(Box<Table>),
}

/// The Lua tables that JSON arrays and objects have no spelling for, each written as a tag
/// (see `docs/FORMAT.md`). The Lua mapping makes them; any program may.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Table {
    /// A table with keys that are not all strings and not the sequence `1..n`, each key
    /// kept with its type: `["t", [[key, value], ...]]`. Entries keep their order; the Lua
    /// mapping writes them sorted by key (booleans, numbers, strings, byte strings, tables).
    Keyed(Vec<(Value, Value)>),
    /// The first place a table reached from several places appears: `["s", [id, table]]`.
    /// `value` is an array, an object, a keyed table or a class instance.
    Shared {
        /// Its id, which references to it give.
        id: u64,
        /// The table.
        value: Value,
    },
    /// Another place the shared table `id` appears: `["r", [id]]`.
    Ref(u64),
    /// A table whose metatable is the class registered as `name`: `["c", [name, table]]`.
    /// `value` is an array, an object or a keyed table.
    Class {
        /// The name the class is registered under.
        name: String,
        /// The table.
        value: Value,
    },
}

impl Table {
    /// The letter of the tag this table is written with.
    pub(crate) fn tag(&self) -> u8 {
        match self {
            Table::Keyed(_) => b't',
            Table::Shared { .. } => b's',
            Table::Ref(_) => b'r',
            Table::Class { .. } => b'c',
        }
    }

    /// Checks the content of a Lua table tag (`t`, `s`, `r`, `c`); the message says what the
    /// tag expects.
    pub(crate) fn from_tag(tag: u8, mut items: Vec<Value>) -> Result<Table, String> {
        let expects = |what: &str| format!("tag \"{}\" expects {what}", tag as char);
        match tag {
            b't' => {
                let mut entries = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let Value::Array(pair) = item else {
                        return Err(expects(&format!(
                            "an array of [key, value] pairs; element {i} is {}",
                            item.kind()
                        )));
                    };
                    let Ok([key, value]) = <[Value; 2]>::try_from(pair) else {
                        return Err(expects(&format!(
                            "an array of [key, value] pairs; element {i} does not have two elements"
                        )));
                    };
                    match key {
                        Value::Null => {
                            return Err(format!(
                                "key {i} of a keyed table is null; Lua keys cannot be nil"
                            ))
                        }
                        Value::Double(d) if d.is_nan() => {
                            return Err(format!(
                                "key {i} of a keyed table is NaN; Lua keys cannot be NaN"
                            ))
                        }
                        _ => entries.push((key, value)),
                    }
                }
                Ok(Table::Keyed(entries))
            }
            b'r' => match items.as_slice() {
                [id] => {
                    Ok(Table::Ref(table_id(id).ok_or_else(|| {
                        expects("[id] with an integer id of 1 or more")
                    })?))
                }
                _ => Err(expects("[id] with an integer id of 1 or more")),
            },
            b's' => {
                let shape = "[id, table] with an integer id of 1 or more and an array, object, keyed table or class instance";
                let (Some(value), Some(id), None) = (items.pop(), items.pop(), items.pop()) else {
                    return Err(expects(shape));
                };
                let id = table_id(&id).ok_or_else(|| expects(shape))?;
                if !is_table_body(&value, true) {
                    return Err(expects(&format!("{shape}; found {}", value.kind())));
                }
                Ok(Table::Shared { id, value })
            }
            _ => {
                let shape = "[\"ClassName\", table] with an array, object or keyed table";
                let (Some(value), Some(Value::String(name)), None) =
                    (items.pop(), items.pop(), items.pop())
                else {
                    return Err(expects(shape));
                };
                if name.is_empty() || !is_table_body(&value, false) {
                    return Err(expects(&format!("{shape}; found {}", value.kind())));
                }
                Ok(Table::Class { name, value })
            }
        }
    }

    /// The table a [`Table::spelling`] spells, or why it spells none.
    pub(crate) fn from_spelling(spelling: Value) -> Result<Table, String> {
        let not_a_table = || {
            format!(
                "expected a Lua table spelled as a tag, found {}",
                spelling.kind()
            )
        };
        let Value::Array(items) = &spelling else {
            return Err(not_a_table());
        };
        let tag = match items.as_slice() {
            [Value::String(tag), Value::Array(_)] => match tag.as_bytes() {
                [t @ (b't' | b's' | b'r' | b'c')] => *t,
                _ => return Err(not_a_table()),
            },
            _ => return Err(not_a_table()),
        };
        let Value::Array(mut items) = spelling else {
            unreachable!("matched above")
        };
        let Some(Value::Array(content)) = items.pop() else {
            unreachable!("matched above")
        };
        Table::from_tag(tag, content)
    }

    /// The tag as a plain two-element array, the way the text spells it, for formats that
    /// have no Lua tables.
    pub fn spelling(&self) -> Value {
        let content = match self {
            Table::Keyed(entries) => Value::Array(
                entries
                    .iter()
                    .map(|(k, v)| Value::Array(vec![k.clone(), v.clone()]))
                    .collect(),
            ),
            Table::Shared { id, value } => Value::Array(vec![Value::from(*id), value.clone()]),
            Table::Ref(id) => Value::Array(vec![Value::from(*id)]),
            Table::Class { name, value } => {
                Value::Array(vec![Value::String(name.clone()), value.clone()])
            }
        };
        Value::Array(vec![
            Value::String(char::from(self.tag()).to_string()),
            content,
        ])
    }
}

fn table_id(id: &Value) -> Option<u64> {
    id.as_u64().filter(|&id| id >= 1)
}

/// Whether `value` can be the contents of a shared table or class instance.
fn is_table_body(value: &Value, class_allowed: bool) -> bool {
    match value {
        Value::Array(_) | Value::Object(_) => true,
        Value::Table(t) => match **t {
            Table::Keyed(_) => true,
            Table::Class { .. } => class_allowed,
            Table::Shared { .. } | Table::Ref(_) => false,
        },
        _ => false,
    }
}

impl From<Table> for Value {
    fn from(t: Table) -> Value {
        Value::Table(Box::new(t))
    }
}

impl Value {
    /// The value as an `i64`, if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            Value::UInt(u) => i64::try_from(u).ok(),
            _ => None,
        }
    }

    /// The value as a `u64`, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Int(i) => u64::try_from(i).ok(),
            Value::UInt(u) => Some(u),
            _ => None,
        }
    }

    /// The value as an `f64`, if it is a double.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Double(d) => Some(d),
            _ => None,
        }
    }

    /// The boolean, if the value is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The text, if the value is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The bytes, if the value is a byte string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The elements, if the value is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The elements to change, if the value is an array.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The members, if the value is an object.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The members to change, if the value is an object.
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The member `key` of an object; `None` for a missing key or a value that is not an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.get(key)
    }

    /// The member `key` of an object, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.as_object_mut()?.get_mut(key)
    }

    /// Takes the value out, leaving `null` in its place.
    ///
    /// ```
    /// use savechain::Value;
    ///
    /// let mut data = savechain::text::from_str(r#"{"log": ["docked", "sold ore"]}"#)?;
    /// let log = data["log"].take();
    /// assert_eq!(log.as_array().map(Vec::len), Some(2));
    /// assert_eq!(data["log"], Value::Null);
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn take(&mut self) -> Value {
        std::mem::take(self)
    }

    /// The value at `path` below this one, written as error messages write paths: keys
    /// after dots, indexes in brackets, other keys quoted in brackets
    /// (`ship.cargo[0].mass`, `routes["Sol-Vega"].length`, `["odd key"]`). `None` when
    /// nothing is there, or when `path` is not a path.
    ///
    /// The path is relative to this value: on a save's `data`, leave out the `data.` that
    /// starts the paths of a save's errors. A key with no `.` or `[` in it may also be
    /// written bare (`routes.Sol-Vega.length`). The whole value is at the path `(root)`, or
    /// the empty path. Nothing below a Lua table ([`Value::Table`]) is found.
    ///
    /// ```
    /// use savechain::Value;
    ///
    /// let data = savechain::text::from_str(
    ///     r#"{"ship": {"cargo": [{"mass": 12}]}, "routes": {"Sol-Vega": {"length": 4}}}"#,
    /// )?;
    /// assert_eq!(data.pointer("ship.cargo[0].mass"), Some(&Value::Int(12)));
    /// assert_eq!(data.pointer(r#"routes["Sol-Vega"].length"#), Some(&Value::Int(4)));
    /// assert_eq!(data.pointer("routes.Sol-Vega.length"), Some(&Value::Int(4)));
    /// assert_eq!(data.pointer("ship.cargo[1]"), None);
    /// assert_eq!(data.pointer("ship.cargo[0"), None); // not a path
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn pointer(&self, path: &str) -> Option<&Value> {
        path::follow(path, self, |value, step| match step {
            Step::Key(key) => value.as_object()?.get(&key),
            Step::Index(index) => value.as_array()?.get(index),
        })
    }

    /// The value at `path` below this one, to change; `path` as [`Value::pointer`] takes it.
    /// Nothing is made on the way: `None` when nothing is there.
    ///
    /// ```
    /// use savechain::Value;
    ///
    /// let mut data = savechain::text::from_str(r#"{"ship": {"cargo": [{"mass": 12}]}}"#)?;
    /// if let Some(mass) = data.pointer_mut("ship.cargo[0].mass") {
    ///     *mass = Value::Int(mass.as_i64().unwrap_or(0) * 1000); // tonnes to kilograms
    /// }
    /// assert_eq!(data["ship"]["cargo"][0]["mass"], Value::Int(12_000));
    /// assert!(data.pointer_mut("ship.crew").is_none());
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn pointer_mut(&mut self, path: &str) -> Option<&mut Value> {
        path::follow(path, self, |value, step| match step {
            Step::Key(key) => value.as_object_mut()?.get_mut(&key),
            Step::Index(index) => value.as_array_mut()?.get_mut(index),
        })
    }

    /// A short name of the value's kind, as used in error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::UInt(_) => "an integer",
            Value::Double(_) => "a double",
            Value::String(_) => "a string",
            Value::Bytes(_) => "a byte string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
            Value::Table(t) => match **t {
                Table::Keyed(_) => "a keyed table",
                Table::Shared { .. } => "a shared table",
                Table::Ref(_) => "a reference to a shared table",
                Table::Class { .. } => "a class instance",
            },
        }
    }
}

/// What a [`Value`] can be indexed by: a key (`str`, `String`) for objects, a position
/// (`usize`) for arrays, and a reference to either. Not meant to be implemented outside
/// savechain.
pub trait Index: private::Sealed {
    /// The member or element this stands for in `value`, if there is one.
    #[doc(hidden)]
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value>;

    /// The member or element this stands for in `value`, to change; a key missing from an
    /// object (or a `null`, which becomes an empty object) is inserted as `null` first.
    /// Panics where [`ops::IndexMut`] on [`Value`] says.
    #[doc(hidden)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value;
}

mod private {
    pub trait Sealed {}
    impl Sealed for usize {}
    impl Sealed for str {}
    impl Sealed for String {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
}

impl Index for usize {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        value.as_array()?.get(*self)
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        match value {
            Value::Array(items) => {
                let len = items.len();
                items.get_mut(*self).unwrap_or_else(|| {
                    panic!("cannot index an array of {len} elements with [{self}]")
                })
            }
            other => panic!(
                "cannot index {} with [{self}]; only arrays have elements",
                other.kind()
            ),
        }
    }
}

impl Index for str {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        value.as_object()?.get(self)
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        if value.is_null() {
            *value = Value::Object(Map::new());
        }
        match value {
            Value::Object(map) => map.entry(self).or_insert(Value::Null),
            other => panic!(
                "cannot index {} with [{self:?}]; only objects (and null, which becomes one) have members",
                other.kind()
            ),
        }
    }
}

impl Index for String {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.as_str().index_into(value)
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        self.as_str().index_or_insert(value)
    }
}

impl<T: Index + ?Sized> Index for &T {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        (**self).index_into(value)
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        (**self).index_or_insert(value)
    }
}

/// The `null` that indexing gives for what is not there.
static NULL: Value = Value::Null;

impl<I: Index> ops::Index<I> for Value {
    type Output = Value;

    /// The member `value["key"]` of an object or the element `value[i]` of an array; `null`
    /// when there is none, or when the value is not an object or not an array (as
    /// `serde_json` does). [`Value::get`] and [`Value::pointer`] tell a missing value from a
    /// `null` one.
    fn index(&self, index: I) -> &Value {
        index.index_into(self).unwrap_or(&NULL)
    }
}

impl<I: Index> ops::IndexMut<I> for Value {
    /// The member `value["key"]` of an object, inserted as `null` when missing (a `null`
    /// value becomes an empty object first), or the element `value[i]` of an array, to
    /// change.
    ///
    /// Panics on a key into a value that is neither an object nor `null`, an index into a
    /// value that is not an array, and an index past an array's end, as `serde_json` does:
    /// a step that cannot be sure of the shape uses [`Value::get_mut`],
    /// [`Value::pointer_mut`] or [`Map::entry`], which do not panic.
    ///
    /// ```
    /// use savechain::Value;
    ///
    /// let mut data = savechain::text::from_str(r#"{"crew": ["Ada", "Grace"]}"#)?;
    /// data["crew"][1] = Value::from("Hedy");
    /// data["captain"] = data["crew"][0].take();
    /// assert_eq!(data.pointer("captain"), Some(&Value::from("Ada")));
    /// assert_eq!(data["crew"], Value::from(vec![Value::Null, Value::from("Hedy")]));
    /// # Ok::<(), savechain::Error>(())
    /// ```
    fn index_mut(&mut self, index: I) -> &mut Value {
        index.index_or_insert(self)
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (UInt(a), UInt(b)) => a == b,
            (Int(i), UInt(u)) | (UInt(u), Int(i)) => u64::try_from(*i) == Ok(*u),
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Array(a), Array(b)) => a == b,
            (Object(a), Object(b)) => a == b,
            (Table(a), Table(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

macro_rules! from_lossless {
    ($($t:ty => $variant:ident as $as:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$variant(v as $as)
            }
        }
    )*};
}

from_lossless!(i8 => Int as i64, i16 => Int as i64, i32 => Int as i64, i64 => Int as i64,
    u8 => Int as i64, u16 => Int as i64, u32 => Int as i64, f32 => Double as f64, f64 => Double as f64);

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::UInt(v),
        }
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::String(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::String(v.to_owned())
    }
}

impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Value {
        Value::Array(v)
    }
}

impl From<Map> for Value {
    fn from(v: Map) -> Value {
        Value::Object(v)
    }
}

/// An object: string keys with values, always kept sorted by key in bytewise order.
///
/// Sorted storage makes canonical output free and lookups a binary search; it is also
/// cheaper to build from a parsed document than a tree map. Keys of up to 24 bytes, which
/// is nearly all of them in a save, are stored inline rather than on the heap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Map {
    entries: Vec<(Key, Value)>,
}

/// An object key: inline up to 24 bytes.
pub(crate) type Key = CompactString;

impl Map {
    /// An empty map.
    pub fn new() -> Map {
        Map::default()
    }

    /// An empty map with room for `capacity` members.
    pub fn with_capacity(capacity: usize) -> Map {
        Map {
            entries: Vec::with_capacity(capacity),
        }
    }

    /// Builds a map from entries, sorting them. On a duplicate key, returns that key and the
    /// positions (in `entries`) of its first two occurrences.
    pub(crate) fn from_entries(
        mut entries: Vec<(Key, Value)>,
    ) -> Result<Map, (String, usize, usize)> {
        if entries.windows(2).all(|w| w[0].0 < w[1].0) {
            return Ok(Map { entries });
        }
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0).then(a.cmp(&b)));
        if let Some(w) = order
            .windows(2)
            .find(|w| entries[w[0]].0 == entries[w[1]].0)
        {
            return Err((entries[w[0]].0.to_string(), w[0], w[1]));
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Map { entries })
    }

    /// The members, in key order, with their keys as they are kept.
    pub(crate) fn into_entries(self) -> Vec<(Key, Value)> {
        self.entries
    }

    /// Builds a map from entries already sorted by key, with no two alike.
    pub(crate) fn from_sorted(entries: Vec<(Key, Value)>) -> Map {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        Map { entries }
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, key: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.position(key).ok().map(|i| &self.entries[i].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self.position(key) {
            Ok(i) => Some(&mut self.entries[i].1),
            Err(_) => None,
        }
    }

    /// Whether there is a member `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets `key` to `value`, returning the value it replaced.
    pub fn insert(&mut self, key: impl AsRef<str>, value: Value) -> Option<Value> {
        let key = key.as_ref();
        match self.position(key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (Key::new(key), value));
                None
            }
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        match self.position(key) {
            Ok(i) => Some(self.entries.remove(i).1),
            Err(_) => None,
        }
    }

    /// The member `key`, there or not, to look at, fill in or change with one lookup.
    ///
    /// ```
    /// use savechain::{Map, Value};
    ///
    /// let mut ship = Map::new();
    /// ship.insert("crew", Value::Int(4));
    /// ship.entry("fuel").or_insert(Value::Int(100)); // a default, when missing
    /// ship.entry("crew").or_insert(Value::Int(1)); // there already: left alone
    /// ship.entry("crew")
    ///     .and_modify(|crew| *crew = Value::from(crew.as_i64().unwrap_or(0) + 1));
    /// assert_eq!(ship.get("fuel"), Some(&Value::Int(100)));
    /// assert_eq!(ship.get("crew"), Some(&Value::Int(5)));
    /// ```
    pub fn entry(&mut self, key: impl AsRef<str>) -> Entry<'_> {
        let key = key.as_ref();
        match self.position(key) {
            Ok(index) => Entry::Occupied(OccupiedEntry { map: self, index }),
            Err(index) => Entry::Vacant(VacantEntry {
                map: self,
                index,
                key: Key::new(key),
            }),
        }
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Entries in key order, values mutable (keys cannot change: that would break the order).
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (&str, &mut Value)> {
        self.entries.iter_mut().map(|(k, v)| (k.as_str(), v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// The values, in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values to change, in key order.
    pub fn values_mut(&mut self) -> impl ExactSizeIterator<Item = &mut Value> {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

/// A member of a [`Map`], there or not: what [`Map::entry`] gives.
///
/// There are two cases and always will be (a key is in a map or it is not), so a `match`
/// on an entry needs no other arm.
#[derive(Debug)]
pub enum Entry<'a> {
    /// The key is not in the map.
    Vacant(VacantEntry<'a>),
    /// The key is in the map.
    Occupied(OccupiedEntry<'a>),
}

/// A key that is not in its [`Map`] yet.
pub struct VacantEntry<'a> {
    map: &'a mut Map,
    /// Where the key goes, to keep the map sorted.
    index: usize,
    key: Key,
}

/// A member of a [`Map`].
pub struct OccupiedEntry<'a> {
    map: &'a mut Map,
    index: usize,
}

// An entry shows its own member, not the whole map it borrows.

impl fmt::Debug for VacantEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("VacantEntry").field(&self.key()).finish()
    }
}

impl fmt::Debug for OccupiedEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OccupiedEntry")
            .field("key", &self.key())
            .field("value", self.get())
            .finish()
    }
}

impl<'a> Entry<'a> {
    /// The key.
    pub fn key(&self) -> &str {
        match self {
            Entry::Vacant(entry) => entry.key(),
            Entry::Occupied(entry) => entry.key(),
        }
    }

    /// The member's value, after inserting `default` if the key was missing.
    ///
    /// ```
    /// use savechain::{Map, Value};
    ///
    /// let mut flags = Map::new();
    /// *flags.entry("visited").or_insert(Value::Bool(false)) = Value::Bool(true);
    /// assert_eq!(flags.get("visited"), Some(&Value::Bool(true)));
    /// ```
    pub fn or_insert(self, default: Value) -> &'a mut Value {
        self.or_insert_with(|| default)
    }

    /// The member's value, after inserting what `default` makes if the key was missing
    /// (`default` is not called otherwise).
    ///
    /// ```
    /// use savechain::{Map, Value};
    ///
    /// let mut data = Map::new();
    /// let log = data.entry("log").or_insert_with(|| Value::Array(Vec::new()));
    /// log.as_array_mut().unwrap().push(Value::from("docked at Vega"));
    /// assert_eq!(data.get("log").and_then(Value::as_array).map(Vec::len), Some(1));
    /// ```
    pub fn or_insert_with(self, default: impl FnOnce() -> Value) -> &'a mut Value {
        match self {
            Entry::Vacant(entry) => entry.insert(default()),
            Entry::Occupied(entry) => entry.into_mut(),
        }
    }

    /// Changes the member's value with `change` if the key is there; the entry either way,
    /// for an [`Entry::or_insert`] after.
    ///
    /// ```
    /// use savechain::{Map, Value};
    ///
    /// let mut kills = Map::new();
    /// for _ in 0..3 {
    ///     kills
    ///         .entry("pirates")
    ///         .and_modify(|n| *n = Value::from(n.as_i64().unwrap_or(0) + 1))
    ///         .or_insert(Value::Int(1));
    /// }
    /// assert_eq!(kills.get("pirates"), Some(&Value::Int(3)));
    /// ```
    pub fn and_modify(self, change: impl FnOnce(&mut Value)) -> Entry<'a> {
        match self {
            Entry::Occupied(mut entry) => {
                change(entry.get_mut());
                Entry::Occupied(entry)
            }
            vacant => vacant,
        }
    }
}

impl<'a> VacantEntry<'a> {
    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Inserts the key with `value`, and gives the value back to change.
    ///
    /// ```
    /// use savechain::value::Entry;
    /// use savechain::{Map, Value};
    ///
    /// let mut ship = Map::new();
    /// if let Entry::Vacant(entry) = ship.entry("name") {
    ///     entry.insert(Value::from("Kestrel"));
    /// }
    /// assert_eq!(ship.get("name"), Some(&Value::from("Kestrel")));
    /// ```
    pub fn insert(self, value: Value) -> &'a mut Value {
        self.map.entries.insert(self.index, (self.key, value));
        &mut self.map.entries[self.index].1
    }
}

impl<'a> OccupiedEntry<'a> {
    /// The key.
    pub fn key(&self) -> &str {
        &self.map.entries[self.index].0
    }

    /// The value.
    pub fn get(&self) -> &Value {
        &self.map.entries[self.index].1
    }

    /// The value, to change while the entry lives.
    pub fn get_mut(&mut self) -> &mut Value {
        &mut self.map.entries[self.index].1
    }

    /// The value, to change for as long as the map is borrowed.
    pub fn into_mut(self) -> &'a mut Value {
        &mut self.map.entries[self.index].1
    }

    /// Sets the value to `value`, returning the one it replaced.
    pub fn insert(&mut self, value: Value) -> Value {
        std::mem::replace(self.get_mut(), value)
    }

    /// Removes the member from the map, returning its value.
    ///
    /// ```
    /// use savechain::value::Entry;
    /// use savechain::{Map, Value};
    ///
    /// let mut ship: Map = [("hull", Value::Int(0)), ("name", Value::from("Wreck"))]
    ///     .into_iter()
    ///     .collect();
    /// // Scrap a ship whose hull is gone.
    /// if let Entry::Occupied(hull) = ship.entry("hull") {
    ///     if hull.get() == &Value::Int(0) {
    ///         hull.remove();
    ///     }
    /// }
    /// assert_eq!(ship.keys().collect::<Vec<_>>(), ["name"]);
    /// ```
    pub fn remove(self) -> Value {
        self.map.entries.remove(self.index).1
    }
}

impl IntoIterator for Map {
    type Item = (String, Value);
    type IntoIter = MapIntoIter;

    fn into_iter(self) -> MapIntoIter {
        MapIntoIter {
            entries: self.entries.into_iter(),
        }
    }
}

/// The entries of a [`Map`], in key order, taken out of it.
pub struct MapIntoIter {
    entries: std::vec::IntoIter<(Key, Value)>,
}

impl Iterator for MapIntoIter {
    type Item = (String, Value);

    fn next(&mut self) -> Option<(String, Value)> {
        self.entries.next().map(|(k, v)| (k.into_string(), v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for MapIntoIter {}

impl<K: AsRef<str>> FromIterator<(K, Value)> for Map {
    /// Later entries replace earlier ones with the same key.
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Map {
        let mut entries: Vec<(Key, Value)> = iter
            .into_iter()
            .map(|(k, v)| (Key::new(k.as_ref()), v))
            .collect();
        // A stable sort keeps equal keys in insertion order, so keeping the last one of each
        // run gives "later wins".
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut deduped: Vec<(Key, Value)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match deduped.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => deduped.push(entry),
            }
        }
        Map { entries: deduped }
    }
}

impl std::ops::Index<&str> for Map {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        match self.get(key) {
            Some(v) => v,
            None => panic!("no key {key:?} in map"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_compare_by_value_across_representations() {
        assert_eq!(Value::Int(5), Value::UInt(5));
        assert_ne!(Value::Int(-1), Value::UInt(u64::MAX));
        assert_eq!(Value::from(u64::MAX), Value::UInt(u64::MAX));
        assert_eq!(Value::from(7u64), Value::Int(7));
    }

    #[test]
    fn doubles_compare_by_bits() {
        assert_eq!(Value::Double(f64::NAN), Value::Double(f64::NAN));
        assert_ne!(Value::Double(0.0), Value::Double(-0.0));
        assert_ne!(Value::Double(1.0), Value::Int(1));
    }

    #[test]
    fn map_stays_sorted_and_finds_duplicates() {
        let mut m = Map::new();
        m.insert("b", Value::Int(2));
        m.insert("a", Value::Int(1));
        m.insert("é", Value::Int(3));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b", "é"]);
        assert_eq!(m.insert("a", Value::Null), Some(Value::Int(1)));
        assert_eq!(m.remove("b"), Some(Value::Int(2)));
        assert_eq!(m.len(), 2);

        let dup = Map::from_entries(vec![
            ("x".into(), Value::Null),
            ("a".into(), Value::Null),
            ("x".into(), Value::Null),
        ]);
        assert_eq!(dup, Err(("x".to_string(), 0, 2)));
    }

    #[test]
    fn from_iter_keeps_the_last_duplicate() {
        let m: Map = [
            ("k", Value::Int(1)),
            ("j", Value::Int(0)),
            ("k", Value::Int(2)),
        ]
        .into_iter()
        .collect();
        assert_eq!(m.get("k"), Some(&Value::Int(2)));
        assert_eq!(m.len(), 2);
    }
}
