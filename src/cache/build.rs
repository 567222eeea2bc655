//! Writing a cache: a save's document as nodes and a string table behind a header.

use rustc_hash::FxHashMap;

use bytemuck::Zeroable;

use super::aligned::Aligned;
use super::format::*;
use crate::error::{Error, ErrorKind, Result};
use crate::save::Save;
use crate::text::MAX_DEPTH;
use crate::value::{Table, Value};

/// What the header records about where the document came from.
pub struct Provenance {
    pub source_len: u64,
    pub source_hash: [u8; 16],
    pub source_mtime_ns: u64,
    pub chain: [u8; 16],
}

/// The cache of `save` (already upgraded), as bytes ready to write or view.
pub fn build(save: &Save, provenance: &Provenance) -> Result<Aligned> {
    // The document is {"data": ..., "meta": ...}, written from the save's parts rather
    // than from `Save::to_value`, which would copy the whole data first.
    let meta = save.meta.to_value();
    let mut builder = Builder::default();
    builder.nodes.push(Node::zeroed());
    let start = builder.children(4);
    builder.nodes[0] = node(OBJECT, 2, start as u64);
    builder.nodes[start] = builder.key("data")?;
    builder.put(&save.data, start + 1, 1)?;
    builder.nodes[start + 2] = builder.key("meta")?;
    builder.put(&meta, start + 3, 1)?;

    let nodes = bytemuck::cast_slice::<Node, u8>(&builder.nodes);
    let body_len = nodes.len() + builder.strings.len();
    let total = HEADER_LEN + body_len;
    let mut out = Aligned::zeroed(total);
    let bytes = out.bytes_mut();
    bytes[HEADER_LEN..HEADER_LEN + nodes.len()].copy_from_slice(nodes);
    bytes[HEADER_LEN + nodes.len()..total].copy_from_slice(&builder.strings);
    let mut header = Header {
        magic: MAGIC,
        format_version: FORMAT_VERSION,
        header_len: HEADER_LEN as u32,
        source_len: provenance.source_len,
        source_hash: provenance.source_hash,
        chain: provenance.chain,
        version: save.meta.version,
        source_mtime_ns: provenance.source_mtime_ns,
        node_count: builder.nodes.len() as u64,
        strings_len: builder.strings.len() as u64,
        reserved: 0,
        body_hash: hash(&bytes[HEADER_LEN..total]),
        header_hash: [0; 16],
    };
    header.header_hash = header.compute_header_hash();
    bytes[..HEADER_LEN].copy_from_slice(bytemuck::bytes_of(&header));
    Ok(out)
}

#[derive(Default)]
struct Builder<'v> {
    nodes: Vec<Node>,
    strings: Vec<u8>,
    /// Object keys already in the string table: keys repeat across a save.
    keys: FxHashMap<&'v str, u64>,
}

fn node(kind: u32, len: u32, payload: u64) -> Node {
    Node { kind, len, payload }
}

fn too_long() -> Error {
    Error::new(
        ErrorKind::Value,
        "a string or container of 2^32 or more elements does not fit in a cache",
    )
}

impl<'v> Builder<'v> {
    fn bytes(&mut self, kind: u32, bytes: &[u8]) -> Result<Node> {
        let len = u32::try_from(bytes.len()).map_err(|_| too_long())?;
        let offset = self.strings.len() as u64;
        self.strings.extend_from_slice(bytes);
        Ok(node(kind, len, offset))
    }

    fn key(&mut self, key: &'v str) -> Result<Node> {
        let len = u32::try_from(key.len()).map_err(|_| too_long())?;
        let offset = match self.keys.get(key) {
            Some(&offset) => offset,
            None => {
                let offset = self.strings.len() as u64;
                self.strings.extend_from_slice(key.as_bytes());
                self.keys.insert(key, offset);
                offset
            }
        };
        Ok(node(STRING, len, offset))
    }

    /// Reserves `count` nodes for children, returning the first one's index.
    fn children(&mut self, count: usize) -> usize {
        let start = self.nodes.len();
        self.nodes.resize(start + count, Node::zeroed());
        start
    }

    /// Fills node `at` with `value`, and its children after everything so far.
    fn put(&mut self, value: &'v Value, at: usize, depth: usize) -> Result<()> {
        if depth > 2 * MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::Value,
                "nested too deeply for a cache",
            ));
        }
        let n = match value {
            Value::Null => node(NULL, 0, 0),
            Value::Bool(b) => node(BOOL, 0, u64::from(*b)),
            Value::Int(i) => node(INT, 0, *i as u64),
            Value::UInt(u) => node(UINT, 0, *u),
            Value::Double(d) => node(DOUBLE, 0, d.to_bits()),
            Value::String(s) => self.bytes(STRING, s.as_bytes())?,
            Value::Bytes(b) => self.bytes(BYTES, b)?,
            Value::Array(items) => {
                let len = u32::try_from(items.len()).map_err(|_| too_long())?;
                let start = self.children(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.put(item, start + i, depth + 1)?;
                }
                node(ARRAY, len, start as u64)
            }
            Value::Object(map) => {
                let len = u32::try_from(map.len()).map_err(|_| too_long())?;
                let start = self.children(2 * map.len());
                for (i, (key, item)) in map.iter().enumerate() {
                    self.nodes[start + 2 * i] = self.key(key)?;
                    self.put(item, start + 2 * i + 1, depth + 1)?;
                }
                node(OBJECT, len, start as u64)
            }
            Value::Table(table) => match &**table {
                Table::Keyed(entries) => {
                    let len = u32::try_from(entries.len()).map_err(|_| too_long())?;
                    let start = self.children(2 * entries.len());
                    for (i, (key, item)) in entries.iter().enumerate() {
                        self.put(key, start + 2 * i, depth + 1)?;
                        self.put(item, start + 2 * i + 1, depth + 1)?;
                    }
                    node(KEYED, len, start as u64)
                }
                Table::Shared { id, value } => {
                    let start = self.children(2);
                    self.nodes[start] = node(UINT, 0, *id);
                    self.put(value, start + 1, depth + 1)?;
                    node(SHARED, 2, start as u64)
                }
                Table::Ref(id) => node(REF, 0, *id),
                Table::Class { name, value } => {
                    let start = self.children(2);
                    self.nodes[start] = self.bytes(STRING, name.as_bytes())?;
                    self.put(value, start + 1, depth + 1)?;
                    node(CLASS, 2, start as u64)
                }
            },
        };
        self.nodes[at] = n;
        Ok(())
    }
}
