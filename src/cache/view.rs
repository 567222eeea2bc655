//! Reading a cache in place: walk objects by key and arrays by index without building a
//! tree, or turn any part into a [`Value`].
//!
//! The bytes may come from anywhere, so every step is checked: a malformed cache gives
//! `None` or an error, never a panic and never a read out of bounds.

use std::cmp::Ordering;

use super::format::*;
use crate::text::MAX_DEPTH;
use crate::value::{Key, Map, Table, Value};

/// A cache's document, borrowed from its bytes.
#[derive(Clone, Copy)]
pub struct CacheView<'a> {
    header: &'a Header,
    nodes: &'a [Node],
    strings: &'a [u8],
}

/// Why bytes are not a readable cache (before any hash is checked).
pub(crate) fn parse(bytes: &[u8]) -> Result<CacheView<'_>, String> {
    if bytes.len() < HEADER_LEN {
        return Err(format!(
            "the cache is truncated ({} bytes, shorter than its header)",
            bytes.len()
        ));
    }
    let header: &Header = bytemuck::try_from_bytes(&bytes[..HEADER_LEN])
        .map_err(|_| "the cache is not aligned in memory".to_string())?;
    if header.magic != MAGIC {
        return Err("the file is not a savechain cache".into());
    }
    if header.format_version != FORMAT_VERSION || header.header_len as usize != HEADER_LEN {
        return Err(format!(
            "the cache has format version {}, this program reads version {FORMAT_VERSION}",
            header.format_version
        ));
    }
    if header.compute_header_hash() != header.header_hash {
        return Err("the cache's header is damaged".into());
    }
    if !cfg!(target_endian = "little") {
        return Err("caches are little-endian and this machine is not".into());
    }
    let nodes_len = usize::try_from(header.node_count)
        .ok()
        .and_then(|n| n.checked_mul(16));
    let strings_len = usize::try_from(header.strings_len).ok();
    let body = &bytes[HEADER_LEN..];
    let (Some(nodes_len), Some(strings_len)) = (nodes_len, strings_len) else {
        return Err("the cache's header is damaged".into());
    };
    if nodes_len.checked_add(strings_len) != Some(body.len()) {
        return Err(format!(
            "the cache is truncated or padded: its header promises {} bytes of body, the file has {}",
            nodes_len.saturating_add(strings_len),
            body.len()
        ));
    }
    let nodes: &[Node] = bytemuck::try_cast_slice(&body[..nodes_len])
        .map_err(|_| "the cache is not aligned in memory".to_string())?;
    if nodes.is_empty() {
        return Err("the cache holds no document".into());
    }
    Ok(CacheView {
        header,
        nodes,
        strings: &body[nodes_len..],
    })
}

impl<'a> CacheView<'a> {
    /// The whole document, `{"data": ..., "meta": ...}`.
    pub fn root(&self) -> NodeRef<'a> {
        NodeRef {
            view: *self,
            index: 0,
        }
    }

    /// The save's data.
    pub fn data(&self) -> Option<NodeRef<'a>> {
        self.root().get("data")
    }

    /// The document's version, as the header records it.
    pub fn version(&self) -> u64 {
        self.header.version
    }

    /// How many nodes the cache holds.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// `null`.
    Null,
    /// A boolean.
    Bool,
    /// An integer that fits in an `i64`.
    Int,
    /// An integer above `i64::MAX`.
    UInt,
    /// A double.
    Double,
    /// UTF-8 text.
    String,
    /// A byte string.
    Bytes,
    /// An array.
    Array,
    /// An object.
    Object,
    /// A keyed table, shared table, reference or class instance: read it with
    /// [`NodeRef::to_value`].
    Table,
}

/// One value inside a cache.
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    view: CacheView<'a>,
    index: usize,
}

impl<'a> NodeRef<'a> {
    fn node(&self) -> Node {
        self.view.nodes[self.index]
    }

    /// What the node is; `None` for a kind this program does not know (a damaged cache).
    pub fn kind(&self) -> Option<Kind> {
        Some(match self.node().kind {
            NULL => Kind::Null,
            BOOL => Kind::Bool,
            INT => Kind::Int,
            UINT => Kind::UInt,
            DOUBLE => Kind::Double,
            STRING => Kind::String,
            BYTES => Kind::Bytes,
            ARRAY => Kind::Array,
            OBJECT => Kind::Object,
            KEYED | SHARED | REF | CLASS => Kind::Table,
            _ => return None,
        })
    }

    /// Whether the node is `null`.
    pub fn is_null(&self) -> bool {
        self.node().kind == NULL
    }

    /// The boolean, if the node is one.
    pub fn as_bool(&self) -> Option<bool> {
        let n = self.node();
        (n.kind == BOOL).then_some(n.payload != 0)
    }

    /// The integer, if the node is one that fits in an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        let n = self.node();
        match n.kind {
            INT => Some(n.payload as i64),
            UINT => i64::try_from(n.payload).ok(),
            _ => None,
        }
    }

    /// The integer, if the node is a non-negative one.
    pub fn as_u64(&self) -> Option<u64> {
        let n = self.node();
        match n.kind {
            INT => u64::try_from(n.payload as i64).ok(),
            UINT => Some(n.payload),
            _ => None,
        }
    }

    /// The double, if the node is one (integers are not converted).
    pub fn as_f64(&self) -> Option<f64> {
        let n = self.node();
        (n.kind == DOUBLE).then(|| f64::from_bits(n.payload))
    }

    fn raw_bytes(&self, kind: u32) -> Option<&'a [u8]> {
        let n = self.node();
        if n.kind != kind {
            return None;
        }
        let start = usize::try_from(n.payload).ok()?;
        let end = start.checked_add(n.len as usize)?;
        self.view.strings.get(start..end)
    }

    /// The text of a string node (checked to be UTF-8).
    pub fn as_str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.raw_bytes(STRING)?).ok()
    }

    /// The bytes of a byte string, borrowed from the cache.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        self.raw_bytes(BYTES)
    }

    /// The first child's index and the number of children, checked to lie after this node
    /// and inside the cache.
    fn children(&self, count: usize) -> Option<usize> {
        let start = usize::try_from(self.node().payload).ok()?;
        let end = start.checked_add(count)?;
        (start > self.index && end <= self.view.nodes.len()).then_some(start)
    }

    fn at(&self, index: usize) -> NodeRef<'a> {
        NodeRef {
            view: self.view,
            index,
        }
    }

    /// The number of elements of an array or members of an object (0 for anything else).
    pub fn len(&self) -> usize {
        match self.node().kind {
            ARRAY | OBJECT | KEYED => self.node().len as usize,
            _ => 0,
        }
    }

    /// Whether the node has no elements, members or entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` of an array.
    pub fn index(&self, i: usize) -> Option<NodeRef<'a>> {
        let n = self.node();
        if n.kind != ARRAY || i >= n.len as usize {
            return None;
        }
        let start = self.children(n.len as usize)?;
        Some(self.at(start + i))
    }

    /// The elements of an array (none for anything else).
    pub fn items(&self) -> impl ExactSizeIterator<Item = NodeRef<'a>> + 'a {
        let n = self.node();
        let (start, len) = match (n.kind, self.children(n.len as usize)) {
            (ARRAY, Some(start)) => (start, n.len as usize),
            _ => (0, 0),
        };
        let this = *self;
        (start..start + len).map(move |i| this.at(i))
    }

    /// Member `key` of an object, found by binary search.
    pub fn get(&self, key: &str) -> Option<NodeRef<'a>> {
        let n = self.node();
        if n.kind != OBJECT {
            return None;
        }
        let len = n.len as usize;
        let start = self.children(len.checked_mul(2)?)?;
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = self.at(start + 2 * mid).raw_bytes(STRING)?;
            match k.cmp(key.as_bytes()) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(self.at(start + 2 * mid + 1)),
            }
        }
        None
    }

    /// The members of an object, in key order (none for anything else; a key that is not
    /// text, in a damaged cache, reads as "").
    pub fn entries(&self) -> Entries<'a> {
        let n = self.node();
        let (start, len) = match (n.kind, self.children(2 * n.len as usize)) {
            (OBJECT, Some(start)) => (start, n.len as usize),
            _ => (0, 0),
        };
        Entries {
            node: *self,
            next: start,
            end: start + 2 * len,
        }
    }

    /// This part of the document as a [`Value`].
    pub fn to_value(&self) -> crate::Result<Value> {
        self.value_at(0)
            .map_err(|e| crate::Error::new(crate::ErrorKind::Value, e))
    }

    fn damaged(&self) -> String {
        format!("the cache is damaged at node {}", self.index)
    }

    fn value_at(&self, depth: usize) -> Result<Value, String> {
        if depth > 2 * MAX_DEPTH {
            return Err(format!("the cache nests too deeply at node {}", self.index));
        }
        let damaged = || self.damaged();
        let n = self.node();
        Ok(match n.kind {
            NULL => Value::Null,
            BOOL => Value::Bool(n.payload != 0),
            INT => Value::Int(n.payload as i64),
            UINT => Value::from(n.payload),
            DOUBLE => Value::Double(f64::from_bits(n.payload)),
            STRING => Value::String(self.as_str().ok_or_else(damaged)?.to_owned()),
            BYTES => Value::Bytes(self.as_bytes().ok_or_else(damaged)?.to_vec()),
            ARRAY => {
                let start = self.children(n.len as usize).ok_or_else(damaged)?;
                let items = (start..start + n.len as usize)
                    .map(|i| self.at(i).value_at(depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                Value::Array(items)
            }
            OBJECT => {
                let pairs = self.pairs_at(depth)?;
                let entries = pairs
                    .into_iter()
                    .map(|(key, value)| match key {
                        Value::String(key) => Ok((Key::from(key.as_str()), value)),
                        _ => Err(damaged()),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Value::Object(Map::from_entries(entries).map_err(|_| damaged())?)
            }
            KEYED | SHARED | REF | CLASS => Value::from(self.table_at(depth)?),
            _ => return Err(damaged()),
        })
    }

    /// The children of an object or keyed table, as key and value pairs.
    fn pairs_at(&self, depth: usize) -> Result<Vec<(Value, Value)>, String> {
        let len = self.node().len as usize;
        let start = self.children(2 * len).ok_or_else(|| self.damaged())?;
        (0..len)
            .map(|i| {
                Ok((
                    self.at(start + 2 * i).value_at(depth + 1)?,
                    self.at(start + 2 * i + 1).value_at(depth + 1)?,
                ))
            })
            .collect()
    }

    fn table_at(&self, depth: usize) -> Result<Table, String> {
        let damaged = || self.damaged();
        let n = self.node();
        // Shared tables and class instances have two children: the id or name, the table.
        let pair = || -> Result<(Value, Value), String> {
            let start = self.children(2).ok_or_else(damaged)?;
            Ok((
                self.at(start).value_at(depth + 1)?,
                self.at(start + 1).value_at(depth + 1)?,
            ))
        };
        Ok(match n.kind {
            KEYED => Table::Keyed(self.pairs_at(depth)?),
            SHARED => {
                let (id, value) = pair()?;
                let id = id.as_u64().ok_or_else(damaged)?;
                Table::Shared { id, value }
            }
            REF => Table::Ref(n.payload),
            _ => match pair()? {
                (Value::String(name), value) => Table::Class { name, value },
                _ => return Err(damaged()),
            },
        })
    }
}

/// The members of an object node.
pub struct Entries<'a> {
    node: NodeRef<'a>,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a str, NodeRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let key = self.node.at(self.next).as_str().unwrap_or("");
        let value = self.node.at(self.next + 1);
        self.next += 2;
        Some((key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.end - self.next) / 2;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Entries<'_> {}

pub(crate) fn header<'a>(view: &CacheView<'a>) -> &'a Header {
    view.header
}
