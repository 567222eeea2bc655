//! The document model: every value a save can hold, and the key-sorted [`Map`] of objects.

use compact_str::CompactString;

/// One value of a save document.
///
/// Equality is exact: doubles compare by their bits (so a NaN equals the same NaN and
/// `-0.0 != 0.0`), integers compare by their mathematical value whether stored as
/// [`Value::Int`] or [`Value::UInt`], and a string never equals a byte string.
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
    pub fn tag(&self) -> u8 {
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
