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
        Map::from_entries(members.collect())
            .map(Value::Object)
            .map_err(|(_, first, second)| (first, second))
    }

    fn table(&mut self, tag: u8, content: Value, _at: usize) -> std::result::Result<Value, String> {
        let Value::Array(items) = content else {
            unreachable!("the reader gives tables arrays")
        };
        Table::from_tag(tag, items).map(Value::from)
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
