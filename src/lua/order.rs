//! The canonical order of a document converted from Lua, whatever order Lua's tables were
//! walked in: keyed-table entries sorted by key, and shared tables numbered, and defined,
//! in the order they appear in the text. The same Lua state always gives the same save.

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use crate::text::write::{to_string_ordering, FIRST_MEMBER};
use crate::value::{Table, Value};

/// The order of the entries of a keyed table: booleans, numbers by value, strings, byte
/// strings, then tables (by their text, which is deterministic).
pub(super) fn key_order(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::UInt(_) | Value::Double(_) => 2,
            Value::String(_) => 3,
            Value::Bytes(_) => 4,
            Value::Array(_) | Value::Object(_) | Value::Table(_) => 5,
        }
    }
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        (x, y) if rank(x) == 2 => number_order(x, y),
        (x, y) => to_string_ordering(x).cmp(&to_string_ordering(y)),
    })
}

fn number_order(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        _ => {
            let as_f64 = |v: &Value| match *v {
                Value::Int(i) => i as f64,
                Value::UInt(u) => u as f64,
                Value::Double(d) => d,
                _ => 0.0,
            };
            // Integers before doubles of the same value, then by bits for a total order.
            as_f64(a)
                .total_cmp(&as_f64(b))
                .then_with(|| matches!(a, Value::Double(_)).cmp(&matches!(b, Value::Double(_))))
                .then_with(|| a.to_string().cmp(&b.to_string()))
        }
    }
}

/// Renumbers shared tables so that each is defined where it first appears in the text and
/// ids count up in text order, whatever order the Lua tables were walked in; `top`: `root`
/// is a whole document, whose `meta` member its text has first.
pub(super) fn number_shared_tables(root: &mut Value, top: bool) {
    let mut bodies = FxHashMap::default();
    take_bodies(root, &mut bodies);
    // Keys that are tables were sorted by text holding walk-order ids: sort them again by
    // content, following references, so the order no longer depends on the walk.
    let snapshot = bodies.clone();
    sort_table_keys(root, &snapshot);
    for body in bodies.values_mut() {
        sort_table_keys(body, &snapshot);
    }
    let mut numbering = FxHashMap::default();
    place_bodies(root, &mut bodies, &mut numbering, top);
}

fn sort_table_keys(value: &mut Value, bodies: &FxHashMap<u64, Value>) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| sort_table_keys(v, bodies)),
        Value::Object(map) => map.values_mut().for_each(|v| sort_table_keys(v, bodies)),
        Value::Table(table) => match &mut **table {
            Table::Keyed(entries) => {
                for (k, v) in entries.iter_mut() {
                    sort_table_keys(k, bodies);
                    sort_table_keys(v, bodies);
                }
                if entries
                    .iter()
                    .any(|(k, _)| matches!(k, Value::Table(_) | Value::Array(_) | Value::Object(_)))
                {
                    entries.sort_by_cached_key(|(k, v)| SortKey::of(k, v, bodies));
                }
            }
            Table::Class { value, .. } | Table::Shared { value, .. } => {
                sort_table_keys(value, bodies)
            }
            Table::Ref(_) => {}
        },
        _ => {}
    }
}

/// Where an entry of a keyed table goes once shared tables are involved: scalars keys as
/// [`key_order`] puts them, table keys after them by a hash of their content.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortKey {
    Scalar(ScalarKey),
    Table(u64, u64),
}

/// A scalar key, ordered by [`key_order`].
struct ScalarKey(Value);

impl PartialEq for ScalarKey {
    fn eq(&self, other: &ScalarKey) -> bool {
        key_order(&self.0, &other.0) == Ordering::Equal
    }
}
impl Eq for ScalarKey {}
impl PartialOrd for ScalarKey {
    fn partial_cmp(&self, other: &ScalarKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ScalarKey {
    fn cmp(&self, other: &ScalarKey) -> Ordering {
        key_order(&self.0, &other.0)
    }
}

impl SortKey {
    fn of(key: &Value, value: &Value, bodies: &FxHashMap<u64, Value>) -> SortKey {
        match key {
            Value::Table(_) | Value::Array(_) | Value::Object(_) => {
                SortKey::Table(shape_hash(key, bodies, 0), shape_hash(value, bodies, 0))
            }
            scalar => SortKey::Scalar(ScalarKey(scalar.clone())),
        }
    }
}

/// A hash of what a value holds, following references a few levels and ignoring ids and
/// the order of keyed entries, so that it does not depend on how the tables were walked.
fn shape_hash(value: &Value, bodies: &FxHashMap<u64, Value>, depth: u32) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    match value {
        Value::Null => 0u8.hash(&mut h),
        Value::Bool(b) => (1u8, b).hash(&mut h),
        Value::Int(i) => (2u8, i).hash(&mut h),
        Value::UInt(u) => (2u8, u).hash(&mut h),
        Value::Double(d) => (3u8, d.to_bits()).hash(&mut h),
        Value::String(s) => (4u8, s).hash(&mut h),
        Value::Bytes(b) => (5u8, b).hash(&mut h),
        Value::Array(items) => {
            6u8.hash(&mut h);
            for item in items {
                shape_hash(item, bodies, depth).hash(&mut h);
            }
        }
        Value::Object(map) => {
            7u8.hash(&mut h);
            for (k, v) in map.iter() {
                (k, shape_hash(v, bodies, depth)).hash(&mut h);
            }
        }
        Value::Table(table) => match &**table {
            Table::Keyed(entries) => {
                // A sum does not depend on the order of the entries.
                let sum = entries.iter().fold(0u64, |acc, (k, v)| {
                    let mut e = rustc_hash::FxHasher::default();
                    (shape_hash(k, bodies, depth), shape_hash(v, bodies, depth)).hash(&mut e);
                    acc.wrapping_add(e.finish())
                });
                (8u8, sum).hash(&mut h);
            }
            Table::Class { name, value } => {
                (9u8, name, shape_hash(value, bodies, depth)).hash(&mut h)
            }
            Table::Shared { value, .. } => return shape_hash(value, bodies, depth),
            Table::Ref(id) => match bodies.get(id) {
                Some(body) if depth < 4 => return shape_hash(body, bodies, depth + 1),
                _ => 10u8.hash(&mut h),
            },
        },
    }
    h.finish()
}

/// Moves every shared table's contents out, leaving a reference in its place.
fn take_bodies(value: &mut Value, bodies: &mut FxHashMap<u64, Value>) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| take_bodies(v, bodies)),
        Value::Object(map) => map.values_mut().for_each(|v| take_bodies(v, bodies)),
        Value::Table(table) => match &mut **table {
            Table::Keyed(entries) => entries.iter_mut().for_each(|(k, v)| {
                take_bodies(k, bodies);
                take_bodies(v, bodies);
            }),
            Table::Class { value, .. } => take_bodies(value, bodies),
            Table::Shared { id, value } => {
                let id = *id;
                let mut body = std::mem::take(value);
                take_bodies(&mut body, bodies);
                bodies.insert(id, body);
                **table = Table::Ref(id);
            }
            Table::Ref(_) => {}
        },
        _ => {}
    }
}

/// Walks in text order, putting each shared table's contents at its first reference;
/// `top`: `value` is the whole document, whose `meta` member the text has first.
fn place_bodies(
    value: &mut Value,
    bodies: &mut FxHashMap<u64, Value>,
    numbering: &mut FxHashMap<u64, u64>,
    top: bool,
) {
    match value {
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| place_bodies(v, bodies, numbering, false)),
        Value::Object(map) => {
            let first = top.then_some(FIRST_MEMBER);
            if let Some(v) = first.and_then(|first| map.get_mut(first)) {
                place_bodies(v, bodies, numbering, false);
            }
            for (k, v) in map.iter_mut() {
                if Some(k) != first {
                    place_bodies(v, bodies, numbering, false);
                }
            }
        }
        Value::Table(table) => match &mut **table {
            Table::Keyed(entries) => entries.iter_mut().for_each(|(k, v)| {
                place_bodies(k, bodies, numbering, false);
                place_bodies(v, bodies, numbering, false);
            }),
            Table::Class { value, .. } => place_bodies(value, bodies, numbering, false),
            Table::Shared { value, .. } => place_bodies(value, bodies, numbering, false),
            Table::Ref(old) => {
                if let Some(&new) = numbering.get(old) {
                    **table = Table::Ref(new);
                } else {
                    let new = numbering.len() as u64 + 1;
                    numbering.insert(*old, new);
                    let mut body = bodies.remove(old).unwrap_or_default();
                    place_bodies(&mut body, bodies, numbering, false);
                    **table = Table::Shared {
                        id: new,
                        value: body,
                    };
                }
            }
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{from_str, to_string_compact};

    #[test]
    fn shared_tables_are_numbered_in_text_order_meta_first_at_the_top_level() {
        // As a walk of Lua tables may leave them: ids and definitions anywhere.
        let walked = r#"{"a": ["s", [7, [1]]], "meta": {"x": ["r", [7]]}, "z": ["s", [3, []]], "b": ["r", [3]]}"#;
        let mut document = from_str(walked).unwrap();
        number_shared_tables(&mut document, true);
        assert_eq!(
            to_string_compact(&document).unwrap(),
            r#"{"meta":{"x":["s",[1,[1]]]},"a":["r",[1]],"b":["s",[2,[]]],"z":["r",[2]]}"#
        );
        // A step's data is no document's top level: its `meta` has its place in key order.
        let mut data = from_str(walked).unwrap();
        number_shared_tables(&mut data, false);
        let mut text = Vec::new();
        crate::text::write::Writer::new(&mut text, crate::text::Style::Compact)
            .value(&data, 1)
            .unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            r#"{"a":["s",[1,[1]]],"b":["s",[2,[]]],"meta":{"x":["r",[1]]},"z":["r",[2]]}"#
        );
    }
}
