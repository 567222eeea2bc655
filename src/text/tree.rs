//! Reader findings to the document model: the builder that makes a [`Value`] tree, and
//! the functions that read a whole text into one.

use std::borrow::Cow;
use std::vec::Drain;

use super::build::Build;
use super::reader::{utf8, Reader};
use crate::error::Result;
use crate::value::{Key, Map, Table, Value};

/// Builds [`Value`]s: strings owned, objects sorted by key, Lua tables checked.
pub(crate) struct Tree;

impl<'a> Build<'a> for Tree {
    type Value = Value;
    type Key = Key;

    #[inline]
    fn null(&mut self) -> Value {
        Value::Null
    }

    #[inline]
    fn bool(&mut self, b: bool) -> Value {
        Value::Bool(b)
    }

    #[inline]
    fn int(&mut self, i: i64) -> Value {
        Value::Int(i)
    }

    #[inline]
    fn uint(&mut self, u: u64) -> Value {
        Value::UInt(u)
    }

    #[inline]
    fn double(&mut self, d: f64) -> Value {
        Value::Double(d)
    }

    #[inline]
    fn string(&mut self, s: Cow<'a, str>) -> Value {
        Value::String(s.into_owned())
    }

    #[inline]
    fn bytes(&mut self, b: Vec<u8>) -> Value {
        Value::Bytes(b)
    }

    #[inline]
    fn key(&mut self, k: Cow<'a, str>) -> Key {
        // Short keys, nearly all of them, are stored inline without a heap allocation.
        match k {
            Cow::Borrowed(text) => Key::new(text),
            Cow::Owned(text) => Key::from(text),
        }
    }

    #[inline]
    fn array(&mut self, items: Drain<'_, Value>) -> Value {
        Value::Array(items.collect())
    }

    #[inline]
    fn object(
        &mut self,
        members: Drain<'_, (Key, Value)>,
    ) -> std::result::Result<Value, (usize, usize)> {
        object(members.collect())
    }

    #[inline]
    fn array_of(&mut self, items: &mut Vec<Value>, base: usize) -> Value {
        Value::Array(take_tail(items, base))
    }

    #[inline]
    fn object_of(
        &mut self,
        members: &mut Vec<(Key, Value)>,
        base: usize,
    ) -> std::result::Result<Value, (usize, usize)> {
        object(take_tail(members, base))
    }

    fn table(&mut self, tag: u8, content: Value, _at: usize) -> std::result::Result<Value, String> {
        let Value::Array(items) = content else {
            unreachable!("the reader gives tables arrays")
        };
        Table::from_tag(tag, items).map(Value::from)
    }
}

#[inline]
fn object(members: Vec<(Key, Value)>) -> std::result::Result<Value, (usize, usize)> {
    Map::from_entries(members)
        .map(Value::Object)
        .map_err(|(_, first, second)| (first, second))
}

/// The elements at `items[base..]`, moved into a vector of their own with no spare room:
/// `Vec::split_off`, except when `base` is 0, where `split_off` would hand over `items`'
/// own buffer (the scratch stack's capacity). Moving them all at once rather
/// than through a `Drain` one at a time is most of what a small array costs besides its
/// allocation (the 500-deep arrays of the hostile texts).
#[inline]
fn take_tail<T>(items: &mut Vec<T>, base: usize) -> Vec<T> {
    if base == 0 {
        let mut out = Vec::with_capacity(items.len());
        out.append(items);
        out
    } else {
        items.split_off(base)
    }
}

/// Reads a whole JSON text into a value (no save envelope required).
pub fn from_slice(bytes: &[u8]) -> Result<Value> {
    let text = utf8(bytes)?;
    read(Reader::new(text, Tree))
}

/// Reads a whole JSON text into a value as [`from_slice`] does, refusing arrays and objects
/// nested more than `max_depth` deep (tags count as arrays) as [`from_slice`] refuses
/// those nested more than [`MAX_DEPTH`](super::MAX_DEPTH): for a program that reads text
/// from elsewhere and wants a lower limit, as the Lua library's `decode_max_depth` sets.
/// `max_depth` is from 1 to [`MAX_DEPTH`](super::MAX_DEPTH); the format never nests deeper.
///
/// ```
/// use savechain::text::from_slice_with_max_depth;
///
/// assert!(from_slice_with_max_depth(b"[[1], {\"a\": 2}]", 2).is_ok());
/// let err = from_slice_with_max_depth(b"[[[1]]]", 2).unwrap_err();
/// assert_eq!(err.to_string(), "line 1, column 3: at [0][0]: nested more than 2 arrays and objects deep");
/// assert!(from_slice_with_max_depth(b"[]", 0).is_err());
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn from_slice_with_max_depth(bytes: &[u8], max_depth: usize) -> Result<Value> {
    super::check_max_depth(max_depth)?;
    let text = utf8(bytes)?;
    read(Reader::new(text, Tree).with_max_depth(max_depth))
}

fn read(mut reader: Reader<'_, Tree>) -> Result<Value> {
    let value = reader.value().map_err(|e| reader.error(e))?;
    reader.end().map_err(|e| reader.error(e))?;
    Ok(value)
}

/// Reads a whole JSON text into a value (no save envelope required).
pub fn from_str(text: &str) -> Result<Value> {
    from_slice(text.as_bytes())
}

/// Builds [`Value`]s as [`Tree`] does, or nothing while `skipping`: for readers that want
/// one part of a document (a save's `meta`) and only a syntax check of the rest. What is
/// skipped reads as `null`, and its objects' keys are not checked for duplicates.
#[derive(Default)]
pub(crate) struct Sparse {
    pub(crate) skipping: bool,
}

impl<'a> Build<'a> for Sparse {
    type Value = Value;
    type Key = Key;

    fn null(&mut self) -> Value {
        Value::Null
    }

    fn bool(&mut self, b: bool) -> Value {
        self.or_null(|| Tree.bool(b))
    }

    fn int(&mut self, i: i64) -> Value {
        self.or_null(|| Tree.int(i))
    }

    fn uint(&mut self, u: u64) -> Value {
        self.or_null(|| Tree.uint(u))
    }

    fn double(&mut self, d: f64) -> Value {
        self.or_null(|| Tree.double(d))
    }

    fn string(&mut self, s: Cow<'a, str>) -> Value {
        self.or_null(|| Tree.string(s))
    }

    fn bytes(&mut self, b: Vec<u8>) -> Value {
        self.or_null(|| Tree.bytes(b))
    }

    fn key(&mut self, k: Cow<'a, str>) -> Key {
        match self.skipping {
            true => Key::default(),
            false => <Tree as Build<'a>>::key(&mut Tree, k),
        }
    }

    fn array(&mut self, items: Drain<'_, Value>) -> Value {
        self.or_null(|| Tree.array(items))
    }

    fn array_of(&mut self, items: &mut Vec<Value>, base: usize) -> Value {
        match self.skipping {
            true => {
                items.truncate(base);
                Value::Null
            }
            false => <Tree as Build<'a>>::array_of(&mut Tree, items, base),
        }
    }

    fn object_of(
        &mut self,
        members: &mut Vec<(Key, Value)>,
        base: usize,
    ) -> std::result::Result<Value, (usize, usize)> {
        match self.skipping {
            true => {
                members.truncate(base);
                Ok(Value::Null)
            }
            false => <Tree as Build<'a>>::object_of(&mut Tree, members, base),
        }
    }

    fn object(
        &mut self,
        members: Drain<'_, (Key, Value)>,
    ) -> std::result::Result<Value, (usize, usize)> {
        match self.skipping {
            true => Ok(Value::Null),
            false => Tree.object(members),
        }
    }

    fn table(&mut self, tag: u8, content: Value, at: usize) -> std::result::Result<Value, String> {
        match self.skipping {
            true => Ok(Value::Null),
            false => <Tree as Build<'a>>::table(&mut Tree, tag, content, at),
        }
    }
}

impl Sparse {
    #[inline]
    fn or_null(&self, build: impl FnOnce() -> Value) -> Value {
        match self.skipping {
            true => Value::Null,
            false => build(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_tail_moves_the_tail_at_its_own_size_and_leaves_the_head() {
        for len in 0..6 {
            for base in 0..=len {
                let mut items: Vec<String> = Vec::with_capacity(64);
                items.extend((0..len).map(|i| i.to_string()));
                let tail = take_tail(&mut items, base);
                let expected: Vec<String> = (base..len).map(|i| i.to_string()).collect();
                assert_eq!(tail, expected, "len {len} base {base}");
                assert_eq!(tail.capacity(), len - base, "no spare room");
                assert_eq!(items.len(), base);
                assert_eq!(items.capacity(), 64, "the scratch stack keeps its buffer");
            }
        }
    }

    #[test]
    fn sparse_builds_nothing_while_skipping_and_drops_what_it_skipped() {
        let mut items = vec![Value::Int(1), Value::String("x".into()), Value::Int(3)];
        let mut sparse = Sparse { skipping: true };
        assert_eq!(sparse.array_of(&mut items, 1), Value::Null);
        assert_eq!(items, [Value::Int(1)]);
        let mut members = vec![(Key::new("a"), Value::Int(1)), (Key::new("b"), Value::Null)];
        assert_eq!(sparse.object_of(&mut members, 0), Ok(Value::Null));
        assert!(members.is_empty());

        let mut sparse = Sparse { skipping: false };
        let mut items = vec![Value::Int(1), Value::Int(2)];
        assert_eq!(
            sparse.array_of(&mut items, 0),
            Value::Array(vec![Value::Int(1), Value::Int(2)])
        );
        let mut members = vec![(Key::new("b"), Value::Int(1)), (Key::new("a"), Value::Null)];
        let Ok(Value::Object(map)) = sparse.object_of(&mut members, 0) else {
            panic!("an object")
        };
        assert_eq!(map.keys().collect::<Vec<_>>(), ["a", "b"]);
        let mut members = vec![(Key::new("a"), Value::Int(1)), (Key::new("a"), Value::Null)];
        assert_eq!(sparse.object_of(&mut members, 0), Err((0, 1)));
    }
}
