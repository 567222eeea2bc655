//! Save text to a borrowed, read-only document ([`Document`]): one vector of small nodes
//! in text order, strings pointing into the text, and the walk that writes it back as
//! canonical text through the [`Writer`]. What `save-upgrade fmt` and a DOM load use, so
//! that neither pays for an owned [`Value`] tree.
//!
//! The reader fills the tape top-down through the [`Build`] hooks: each array and object
//! gets its node when it opens, and learns its length and where it ends when it closes, so
//! a walk can step over it. An `["a", [...]]` escape leaves a tombstone in front of its
//! content rather than moving it (no subtree is ever copied, however deep the escapes
//! nest). Objects keep their members in text order, and know whether their keys were
//! already in key order; the writer sorts the others as it writes them.

use std::borrow::Cow;
use std::vec::Drain;

use super::build::Build;
use super::reader::{utf8, Reader};
use super::tags::{self, Shape};
use super::write::{too_deep, Halt, Sink, Writer, INLINE_NUMBERS, PIECE};
use super::{Style, MAX_DEPTH};
use crate::error::{Error, ErrorKind, Result};
use crate::path::Segment;
use crate::value::{Key, Map, Table, Value};

/// How many levels deeper than its text a document's canonical text can nest, with room to
/// spare: one, a bare typed number (`1.5`, `1e30`) being written as a `["d", ...]` tag;
/// escapes, bytes and Lua tables are written as deep as they are read.
const WRITTEN_DEEPER: usize = 4;

/// How many nodes a run of one-element arrays may wrap for its levels to be merged into
/// one [`Slot::Wraps`] node (which moves them): a bound on the copying per node saved.
const MERGED_AT_MOST: usize = 16;

/// One node of the tape, as it is read (stored [`Packed`]). Containers are followed by their contents (an object's as key,
/// value, key, value...), and know the index just past their last node.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    /// A string (or key) standing in the text as it is: its offset and length.
    Text {
        at: u32,
        len: u32,
    },
    /// A string (or key) with escapes, unescaped into [`Document::unescaped`].
    Unescaped {
        at: u32,
        len: u32,
    },
    /// A byte string, in [`Document::bytes`].
    Bytes {
        at: u32,
        len: u32,
    },
    Array {
        len: u32,
        end: u32,
    },
    /// `sorted`: its keys stand in key order in the text already.
    Object {
        len: u32,
        end: u32,
        sorted: bool,
    },
    /// The escape `["a", content]`: the letter follows, then the content, an array.
    Escape {
        end: u32,
    },
    /// A Lua table tag (`t`, `s`, `r`, `c`), rare, kept checked as a [`Value`] in
    /// [`Document::tables`].
    Table(u32),
    /// `levels` (two or more) arrays of one element each, one inside the other, around the
    /// value that follows: `[[[x]]]` in one node rather than a node per level, so that
    /// arrays nested hundreds deep take no more room than flat data.
    Wraps {
        levels: u32,
        end: u32,
    },
}

/// A [`Slot`] as the tape stores it: three 32-bit words, the kind and a 64-bit payload in
/// two halves, so that a node takes 12 bytes where a `Slot` takes 16 (its 64-bit payloads
/// align it to 8). The tape is most of what a load holds besides the text.
#[derive(Clone, Copy, Debug)]
struct Packed {
    kind: u32,
    low: u32,
    high: u32,
}

// Small nodes are the point of the tape.
const _: () = assert!(std::mem::size_of::<Packed>() == 12);

impl Slot {
    fn pack(self) -> Packed {
        let wide = |kind, v: u64| Packed {
            kind,
            low: v as u32,
            high: (v >> 32) as u32,
        };
        let two = |kind, low, high| Packed { kind, low, high };
        match self {
            Slot::Null => two(0, 0, 0),
            Slot::Bool(b) => two(1, u32::from(b), 0),
            Slot::Int(i) => wide(2, i as u64),
            Slot::UInt(u) => wide(3, u),
            Slot::Double(d) => wide(4, d.to_bits()),
            Slot::Text { at, len } => two(5, at, len),
            Slot::Unescaped { at, len } => two(6, at, len),
            Slot::Bytes { at, len } => two(7, at, len),
            Slot::Array { len, end } => two(8, len, end),
            Slot::Object { len, end, sorted } => two(if sorted { 9 } else { 10 }, len, end),
            Slot::Escape { end } => two(11, 0, end),
            Slot::Table(i) => two(12, i, 0),
            Slot::Wraps { levels, end } => two(13, levels, end),
        }
    }
}

impl Packed {
    /// Moves where the node ends, if it is a node that ends somewhere (an array, object,
    /// escape or run: their upper word, as [`Slot::pack`] lays them out), back by `by`.
    #[inline]
    fn end_back(&mut self, by: u32) {
        if matches!(self.kind, 8..=11 | 13) {
            self.high -= by;
        }
    }

    #[inline]
    fn unpack(self) -> Slot {
        let Packed { kind, low, high } = self;
        let wide = u64::from(low) | (u64::from(high) << 32);
        match kind {
            0 => Slot::Null,
            1 => Slot::Bool(low != 0),
            2 => Slot::Int(wide as i64),
            3 => Slot::UInt(wide),
            4 => Slot::Double(f64::from_bits(wide)),
            5 => Slot::Text { at: low, len: high },
            6 => Slot::Unescaped { at: low, len: high },
            7 => Slot::Bytes { at: low, len: high },
            8 => Slot::Array {
                len: low,
                end: high,
            },
            9 | 10 => Slot::Object {
                len: low,
                end: high,
                sorted: kind == 9,
            },
            11 => Slot::Escape { end: high },
            12 => Slot::Table(low),
            13 => Slot::Wraps {
                levels: low,
                end: high,
            },
            _ => unreachable!("only Slot::pack makes nodes"),
        }
    }
}

/// A JSON text of the format read into a read-only document that borrows the text: its
/// strings and keys point into it (those with escapes are unescaped once, into one buffer
/// of the document), and its values are nodes of one vector, in text order, so reading
/// costs no allocation per value. Objects keep their members in the order the text has
/// them; a [`Node::get`] looks a key up by a scan of the object.
///
/// It reads and refuses exactly what [`from_slice`](crate::text::from_slice) does, with
/// the same errors, and [`Document::write`] writes the same canonical text as
/// [`write_value`](crate::text::write_value) writes of that [`Value`]. A program that wants
/// to edit a document takes it as a [`Value`] ([`Document::to_value`]).
///
/// ```
/// use savechain::text::{Document, Kind, Style};
///
/// let text = br#"{"meta": {"version": 3}, "data": {"ships": [{"name": "Sol", "hull": ["d", "0x1.8p+1"]}]}}"#;
/// let doc = Document::parse(text)?;
/// let ship = doc.root().get("data").and_then(|d| d.get("ships")).and_then(|s| s.index(0)).unwrap();
/// assert_eq!(ship.get("name").and_then(|n| n.as_str()), Some("Sol"));
/// assert_eq!(ship.get("hull").and_then(|h| h.as_f64()), Some(3.0));
/// assert_eq!(ship.kind(), Kind::Object);
/// let keys: Vec<&str> = ship.members().map(|(k, _)| k).collect();
/// assert_eq!(keys, ["name", "hull"]);
///
/// // The canonical text, the same as the tree's.
/// let value = savechain::text::from_slice(text)?;
/// assert_eq!(doc.to_vec(Style::Compact)?, savechain::text::to_vec_compact(&value)?);
/// assert_eq!(doc.to_value(), value);
/// # Ok::<(), savechain::Error>(())
/// ```
#[derive(Debug)]
pub struct Document<'a> {
    text: &'a str,
    slots: Vec<Packed>,
    unescaped: String,
    bytes: Vec<u8>,
    tables: Vec<Value>,
    /// How many arrays and objects deep the text nests at most.
    deepest: usize,
}

/// What a [`Node`] of a [`Document`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool,
    /// An integer (read with [`Node::as_i64`] or [`Node::as_u64`]).
    Int,
    /// A double.
    Double,
    /// A string.
    String,
    /// A byte string.
    Bytes,
    /// An array.
    Array,
    /// An object.
    Object,
    /// A Lua table (a `t`, `s`, `r` or `c` tag): read it with [`Node::to_value`].
    Table,
}

/// A value in a [`Document`]: a cheap handle to copy around.
#[derive(Clone, Copy, Debug)]
pub struct Node<'d, 'a> {
    doc: &'d Document<'a>,
    at: usize,
    /// How many levels of the [`Slot::Wraps`] at `at` are above this one (0 for any
    /// other node).
    inside: u32,
}

impl<'a> Document<'a> {
    /// Reads a whole JSON text (no save envelope required), as
    /// [`from_slice`](crate::text::from_slice) does. The document borrows `bytes`.
    ///
    /// A text above 4 GiB is refused ([`ErrorKind::Usage`]): the nodes address the text with
    /// 32-bit offsets; [`from_slice`](crate::text::from_slice) reads it.
    pub fn parse(bytes: &'a [u8]) -> Result<Document<'a>> {
        let text = utf8(bytes)?;
        if u32::try_from(text.len()).is_err() {
            return Err(Error::new(
                ErrorKind::Usage,
                "a document above 4 GiB is read with text::from_slice",
            ));
        }
        let mut reader = Reader::new(text, Tape::new(text));
        reader.value().map_err(|e| reader.error(e))?;
        reader.end().map_err(|e| reader.error(e))?;
        Ok(reader.builder.doc)
    }

    /// The top-level value.
    pub fn root(&self) -> Node<'_, 'a> {
        Node {
            doc: self,
            at: self.resolve(0),
            inside: 0,
        }
    }

    /// The document as an owned [`Value`], equal to what
    /// [`from_slice`](crate::text::from_slice) reads from the same text.
    pub fn to_value(&self) -> Value {
        self.value_at(0).0
    }

    /// Appends the document's canonical text in `style` to `out`, as
    /// [`write_value`](crate::text::write_value) writes the same document as a [`Value`]: a
    /// top-level `meta` first, keys in order, doubles as hexfloats.
    pub fn write(&self, out: &mut Vec<u8>, style: Style) -> Result<()> {
        self.write_streamed(out, style, None)
    }

    /// The document's canonical text in `style`.
    pub fn to_vec(&self, style: Style) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.text.len());
        self.write(&mut out, style)?;
        Ok(out)
    }

    /// Hands the canonical text in `style` to `sink` in pieces of about [`PIECE`] bytes: a
    /// long text is never all in memory. The sink's error stops the walk.
    pub(crate) fn stream(&self, style: Style, sink: &mut Sink<'_>) -> Result<()> {
        let mut piece = Vec::with_capacity(2 * PIECE);
        self.write_streamed(&mut piece, style, Some(sink))
    }

    /// Writes the canonical text in `style` to `out`, or, with a `sink`, in pieces handed to
    /// it (`out` is its buffer, left empty).
    fn write_streamed(
        &self,
        out: &mut Vec<u8>,
        style: Style,
        mut sink: Option<&mut Sink<'_>>,
    ) -> Result<()> {
        let mut writer = Writer::new(out, style);
        let walked = Walk {
            doc: self,
            sink: sink.as_deref_mut(),
        }
        .node(&mut writer, 0, 0);
        match walked {
            Ok(()) => {}
            Err(Halt::Deep(path)) => return Err(too_deep(path)),
            Err(Halt::Sink(e)) => return Err(e),
        }
        writer.finish();
        if let Some(sink) = sink {
            sink(out)?;
            out.clear();
        }
        Ok(())
    }

    /// Whether the document is a plain save whose canonical text is what
    /// [`Save::to_vec`](crate::Save::to_vec) writes of it: an object of `meta` and `data`
    /// alone, `meta` an object whose `version` is a non-negative integer and whose
    /// `writer`, if any, is a semantic version spelled as semver spells it. Anything else
    /// is for the [`Save`](crate::Save) path to load, refuse or normalize.
    ///
    /// A text nested nearly [`MAX_DEPTH`] deep is for that path too: what it writes can
    /// nest deeper than what it reads (a bare `1.5` is written `["d", ...]`), and the
    /// `Save` path finds that before it writes anything, where the document's walk would
    /// find it halfway through its text (after `fmt -` had printed part of it).
    pub(crate) fn is_plain_save(&self) -> bool {
        if self.deepest + WRITTEN_DEEPER > MAX_DEPTH {
            return false;
        }
        let root = self.root();
        if root.kind() != Kind::Object || root.len() != 2 {
            return false;
        }
        let (Some(meta), Some(_)) = (root.get("meta"), root.get("data")) else {
            return false;
        };
        if meta.kind() != Kind::Object || meta.get("version").and_then(|v| v.as_u64()).is_none() {
            return false;
        }
        match meta.get("writer") {
            None => true,
            Some(writer) => writer.as_str().is_some_and(|s| {
                semver::Version::parse(s).is_ok_and(|version| version.to_string() == s)
            }),
        }
    }

    #[inline]
    fn slot(&self, at: usize) -> Slot {
        self.slots[at].unpack()
    }

    /// The node at `at`, past any escapes in front of it.
    fn resolve(&self, mut at: usize) -> usize {
        while let Slot::Escape { .. } = self.slot(at) {
            // The letter, then the content.
            at += 2;
        }
        at
    }

    /// The index just past the value at `at`.
    fn next(&self, at: usize) -> usize {
        match self.slot(at) {
            Slot::Array { end, .. }
            | Slot::Object { end, .. }
            | Slot::Escape { end }
            | Slot::Wraps { end, .. } => end as usize,
            _ => at + 1,
        }
    }

    /// The string or key at `at`.
    fn str_at(&self, at: usize) -> &str {
        match self.slot(at) {
            Slot::Text { at, len } => &self.text[at as usize..(at + len) as usize],
            Slot::Unescaped { at, len } => &self.unescaped[at as usize..(at + len) as usize],
            other => unreachable!("a string, not {other:?}"),
        }
    }

    fn shape(&self, at: usize) -> Shape {
        match self.slot(at) {
            Slot::Null => Shape::Null,
            Slot::Bool(_) => Shape::Bool,
            Slot::Int(_) | Slot::UInt(_) => Shape::Int,
            Slot::Double(_) => Shape::Double,
            Slot::Text { .. } | Slot::Unescaped { .. } => match self.str_at(at).as_bytes() {
                [letter @ b'a'..=b'z'] => Shape::Letter(*letter),
                _ => Shape::String,
            },
            Slot::Bytes { .. } => Shape::Bytes,
            Slot::Array { .. } | Slot::Escape { .. } | Slot::Wraps { .. } => Shape::Array,
            Slot::Object { .. } => Shape::Object,
            Slot::Table(_) => Shape::Table,
        }
    }

    /// The value at `at`, and the index just past it.
    fn value_at(&self, at: usize) -> (Value, usize) {
        self.value_with(at, &mut |i| self.tables[i].clone())
    }

    /// [`Document::value_at`], each Lua table given by `table` from its index in `tables`
    /// (cloned for a reader, moved out while a tag is built).
    fn value_with(&self, at: usize, table: &mut dyn FnMut(usize) -> Value) -> (Value, usize) {
        let next = at + 1;
        match self.slot(at) {
            Slot::Null => (Value::Null, next),
            Slot::Bool(b) => (Value::Bool(b), next),
            Slot::Int(i) => (Value::Int(i), next),
            Slot::UInt(u) => (Value::UInt(u), next),
            Slot::Double(d) => (Value::Double(d), next),
            Slot::Text { .. } | Slot::Unescaped { .. } => {
                (Value::String(self.str_at(at).to_string()), next)
            }
            Slot::Bytes { at, len } => (
                Value::Bytes(self.bytes[at as usize..(at + len) as usize].to_vec()),
                next,
            ),
            Slot::Table(i) => (table(i as usize), next),
            Slot::Escape { end } => (self.value_with(next + 1, table).0, end as usize),
            Slot::Wraps { levels, end } => (
                wrapped(self.value_with(next, table).0, levels),
                end as usize,
            ),
            Slot::Array { len, end } => {
                let mut items = Vec::with_capacity(len as usize);
                let mut child = next;
                while child < end as usize {
                    let (item, after) = self.value_with(child, table);
                    items.push(item);
                    child = after;
                }
                (Value::Array(items), end as usize)
            }
            Slot::Object { len, end, sorted } => {
                let mut entries = Vec::with_capacity(len as usize);
                let mut child = next;
                while child < end as usize {
                    let key = Key::new(self.str_at(child));
                    let (item, after) = self.value_with(child + 1, table);
                    entries.push((key, item));
                    child = after;
                }
                let map = match sorted {
                    true => Map::from_sorted(entries),
                    false => Map::from_entries(entries).expect("keys checked when read"),
                };
                (Value::Object(map), end as usize)
            }
        }
    }
}

impl<'d, 'a> Node<'d, 'a> {
    /// What the value is.
    pub fn kind(&self) -> Kind {
        match self.slot() {
            Slot::Null => Kind::Null,
            Slot::Bool(_) => Kind::Bool,
            Slot::Int(_) | Slot::UInt(_) => Kind::Int,
            Slot::Double(_) => Kind::Double,
            Slot::Text { .. } | Slot::Unescaped { .. } => Kind::String,
            Slot::Bytes { .. } => Kind::Bytes,
            Slot::Array { .. } | Slot::Escape { .. } | Slot::Wraps { .. } => Kind::Array,
            Slot::Object { .. } => Kind::Object,
            Slot::Table(_) => Kind::Table,
        }
    }

    fn slot(&self) -> Slot {
        self.doc.slot(self.at)
    }

    /// The boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self.slot() {
            Slot::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The integer, if it is one that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self.slot() {
            Slot::Int(i) => Some(i),
            _ => None,
        }
    }

    /// The integer, if it is one that fits a `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match self.slot() {
            Slot::Int(i) => u64::try_from(i).ok(),
            Slot::UInt(u) => Some(u),
            _ => None,
        }
    }

    /// The double, if it is one (an integer is not).
    pub fn as_f64(&self) -> Option<f64> {
        match self.slot() {
            Slot::Double(d) => Some(d),
            _ => None,
        }
    }

    /// The string, if it is one: borrowed from the text when it has no escapes.
    pub fn as_str(&self) -> Option<&'d str> {
        match self.slot() {
            Slot::Text { .. } | Slot::Unescaped { .. } => Some(self.doc.str_at(self.at)),
            _ => None,
        }
    }

    /// The byte string, if it is one.
    pub fn as_bytes(&self) -> Option<&'d [u8]> {
        match self.slot() {
            Slot::Bytes { at, len } => Some(&self.doc.bytes[at as usize..(at + len) as usize]),
            _ => None,
        }
    }

    /// The number of elements of an array or members of an object; 0 for anything else.
    pub fn len(&self) -> usize {
        match self.slot() {
            Slot::Array { len, .. } | Slot::Object { len, .. } => len as usize,
            Slot::Wraps { .. } => 1,
            _ => 0,
        }
    }

    /// Whether [`Node::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The member of an object with this key (found by a scan of its members).
    pub fn get(&self, key: &str) -> Option<Node<'d, 'a>> {
        self.members().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The element of an array at `index`.
    pub fn index(&self, index: usize) -> Option<Node<'d, 'a>> {
        self.items().nth(index)
    }

    /// The elements of an array, in order (none for anything else).
    pub fn items(&self) -> impl Iterator<Item = Node<'d, 'a>> + 'd {
        let doc = self.doc;
        // A level of a run of one-element arrays: its one element is the next level, or
        // past the last level the value they wrap.
        let mut level = match self.slot() {
            Slot::Wraps { levels, .. } if self.inside + 1 < levels => Some(Node {
                inside: self.inside + 1,
                ..*self
            }),
            _ => None,
        };
        let (mut child, end) = match self.slot() {
            Slot::Array { end, .. } => (self.at + 1, end as usize),
            Slot::Wraps { end, .. } if level.is_none() => (self.at + 1, end as usize),
            _ => (0, 0),
        };
        std::iter::from_fn(move || {
            if let Some(level) = level.take() {
                return Some(level);
            }
            if child >= end {
                return None;
            }
            let at = child;
            child = doc.next(child);
            Some(Node {
                doc,
                at: doc.resolve(at),
                inside: 0,
            })
        })
    }

    /// The members of an object as key and value, in the order the text has them (none
    /// for anything else).
    pub fn members(&self) -> impl Iterator<Item = (&'d str, Node<'d, 'a>)> + 'd {
        let doc = self.doc;
        let (mut child, end) = match self.slot() {
            Slot::Object { end, .. } => (self.at + 1, end as usize),
            _ => (0, 0),
        };
        std::iter::from_fn(move || {
            if child >= end {
                return None;
            }
            let key = doc.str_at(child);
            let value = child + 1;
            child = doc.next(value);
            Some((
                key,
                Node {
                    doc,
                    at: doc.resolve(value),
                    inside: 0,
                },
            ))
        })
    }

    /// The value as an owned [`Value`] (a Lua table's only way out).
    pub fn to_value(&self) -> Value {
        match self.slot() {
            Slot::Wraps { levels, .. } => {
                wrapped(self.doc.value_at(self.at + 1).0, levels - self.inside)
            }
            _ => self.doc.value_at(self.at).0,
        }
    }
}

/// `value` inside `levels` arrays of one element each.
fn wrapped(mut value: Value, levels: u32) -> Value {
    for _ in 0..levels {
        value = Value::Array(vec![value]);
    }
    value
}

/// Adds `segment` in front of the path of a value nested too deeply below it.
fn within(segment: impl FnOnce() -> Segment) -> impl FnOnce(Halt) -> Halt {
    move |halt| halt.within(segment)
}

/// The walk of a document through the [`Writer`], laid out as the [`Value`] walk lays it
/// out.
struct Walk<'d, 'a, 'r, 's> {
    doc: &'d Document<'a>,
    sink: Option<&'r mut Sink<'s>>,
}

impl Walk<'_, '_, '_, '_> {
    fn node(&mut self, w: &mut Writer<'_>, at: usize, depth: usize) -> Result<(), Halt> {
        let doc = self.doc;
        match doc.slot(at) {
            Slot::Null => w.null(),
            Slot::Bool(b) => w.bool(b),
            Slot::Int(i) => w.int(i),
            Slot::UInt(u) => w.uint(u),
            Slot::Double(d) => w.double(d, depth)?,
            Slot::Text { .. } | Slot::Unescaped { .. } => w.string(doc.str_at(at)),
            Slot::Bytes { at, len } => {
                w.bytes(&doc.bytes[at as usize..(at + len) as usize], depth)?
            }
            Slot::Table(i) => w.value(&doc.tables[i as usize], depth)?,
            Slot::Escape { .. } => return self.node(w, at + 2, depth),
            Slot::Wraps { levels, .. } => return self.wraps(w, at, levels, depth),
            Slot::Array { len, .. } => {
                let len = len as usize;
                let mut child = at + 1;
                // Only short arrays of numbers stay on one line: no need to look at others.
                let numbers = len <= INLINE_NUMBERS
                    && (0..len).all(|_| {
                        let number = matches!(
                            doc.slot(child),
                            Slot::Int(_) | Slot::UInt(_) | Slot::Double(_)
                        );
                        child = doc.next(child);
                        number
                    });
                let tag_like = len == 2 && self.tag_like(at + 1);
                let mut child = at + 1;
                w.array(len, numbers, tag_like, depth, |w, i, depth| {
                    let this = child;
                    child = doc.next(child);
                    self.node(w, this, depth)
                        .map_err(within(|| Segment::Index(i)))?;
                    self.flush(w)
                })?
            }
            Slot::Object { len, sorted, .. } => {
                let mut child = at + 1;
                let in_order = sorted && w.first_member_at(depth, self.keys(at)).is_none();
                if in_order {
                    w.object(len as usize, depth, |w, _, depth| {
                        let (key, value) = (child, child + 1);
                        child = doc.next(value);
                        self.member(w, key, value, depth)
                    })?
                } else {
                    let mut members: Vec<(&str, usize)> = Vec::with_capacity(len as usize);
                    for _ in 0..len {
                        members.push((doc.str_at(child), child + 1));
                        child = doc.next(child + 1);
                    }
                    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    if let Some(first) = w.first_member_at(depth, members.iter().map(|m| m.0)) {
                        members[..=first].rotate_right(1);
                    }
                    w.object(members.len(), depth, |w, i, depth| {
                        self.member(w, members[i].1 - 1, members[i].1, depth)
                    })?
                }
            }
        }
        Ok(())
    }

    /// The `left` innermost levels of the run of one-element arrays at `at`, as the
    /// [`Slot::Array`] arm writes each of them.
    fn wraps(
        &mut self,
        w: &mut Writer<'_>,
        at: usize,
        left: u32,
        depth: usize,
    ) -> Result<(), Halt> {
        let inner = at + 1;
        // An escape here (as in the Array arm) holds an array: not a number either way.
        let numbers = left == 1
            && matches!(
                self.doc.slot(inner),
                Slot::Int(_) | Slot::UInt(_) | Slot::Double(_)
            );
        w.array(1, numbers, false, depth, |w, i, depth| {
            match left {
                1 => self.node(w, inner, depth),
                _ => self.wraps(w, at, left - 1, depth),
            }
            .map_err(within(|| Segment::Index(i)))?;
            self.flush(w)
        })
    }

    fn member(
        &mut self,
        w: &mut Writer<'_>,
        key: usize,
        value: usize,
        depth: usize,
    ) -> Result<(), Halt> {
        let key = self.doc.str_at(key);
        w.key(key);
        self.node(w, value, depth)
            .map_err(within(|| Segment::Key(key.to_string())))?;
        self.flush(w)
    }

    /// The keys of the object at `at`, in text order.
    fn keys(&self, at: usize) -> impl Iterator<Item = &str> {
        let doc = self.doc;
        let end = doc.next(at);
        let mut child = at + 1;
        std::iter::from_fn(move || {
            if child >= end {
                return None;
            }
            let key = doc.str_at(child);
            child = doc.next(child + 1);
            Some(key)
        })
    }

    /// Whether the two elements starting at `first` would read as a tag.
    fn tag_like(&self, first: usize) -> bool {
        match self.doc.shape(first) {
            Shape::Letter(letter) => tags::is_tag(letter, self.doc.shape(self.doc.next(first))),
            _ => false,
        }
    }

    /// Hands the text so far to the sink once there is a piece of it.
    #[inline]
    fn flush(&mut self, w: &mut Writer<'_>) -> Result<(), Halt> {
        match &mut self.sink {
            Some(sink) if w.written() >= PIECE => w.flush(|text| sink(text)).map_err(Halt::Sink),
            _ => Ok(()),
        }
    }
}

/// The builder that fills a [`Document`]'s tape as the reader reads.
struct Tape<'a> {
    doc: Document<'a>,
    /// Where the node of each open array or object stands, innermost last.
    open: Vec<usize>,
    /// Where the keys of the objects being read stand, innermost last.
    keys: Vec<usize>,
    /// Where the keys of each open object start in `keys`, and whether each key so far
    /// came after the one before it in key order.
    key_bases: Vec<(usize, bool)>,
    /// Member indices, for finding a duplicate key among unsorted ones.
    order: Vec<usize>,
}

impl<'a> Tape<'a> {
    fn new(text: &'a str) -> Tape<'a> {
        Tape {
            doc: Document {
                text,
                // Saves have a node per 6 (compact) to 12 or more (pretty) bytes of text: a start
                // that is not far above most, and grows for the others.
                slots: Vec::with_capacity(text.len() / 10 + 1),
                unescaped: String::new(),
                bytes: Vec::new(),
                tables: Vec::new(),
                deepest: 0,
            },
            open: Vec::new(),
            keys: Vec::new(),
            key_bases: Vec::new(),
            order: Vec::new(),
        }
    }

    fn string_slot(&mut self, s: Cow<'a, str>) -> Slot {
        match s {
            Cow::Borrowed(s) => {
                // Strings without escapes are slices of the text, which is below 4 GiB.
                let at = s.as_ptr() as usize - self.doc.text.as_ptr() as usize;
                debug_assert!(at + s.len() <= self.doc.text.len(), "a slice of the text");
                Slot::Text {
                    at: at as u32,
                    len: s.len() as u32,
                }
            }
            Cow::Owned(s) => {
                let at = self.doc.unescaped.len() as u32;
                self.doc.unescaped.push_str(&s);
                Slot::Unescaped {
                    at,
                    len: s.len() as u32,
                }
            }
        }
    }

    #[inline]
    fn push(&mut self, slot: Slot) {
        self.doc.slots.push(slot.pack());
    }

    /// The array begun last ends here, with `len` elements. An array of one element that
    /// is itself an array of one element becomes one [`Slot::Wraps`] node with it
    /// ([`Tape::wrap`]).
    #[inline]
    fn close_array(&mut self, len: usize) {
        let start = self.open.pop().expect("an array was begun");
        if len == 1 && self.wrap(start, 1) {
            return;
        }
        self.doc.slots[start] = Slot::Array {
            len: len as u32,
            end: self.doc.slots.len() as u32,
        }
        .pack();
    }

    /// Makes the `levels` arrays whose nodes stand from `start` on, each the one element of
    /// the one before and closing here, and any run of one-element arrays that the
    /// innermost holds, one [`Slot::Wraps`] node at `start`, when what they wrap is at
    /// most [`MERGED_AT_MOST`] nodes: it moves back to follow that node, so the copying
    /// stays within that many nodes for each node saved, and a run of arrays nested 500
    /// deep ends as two nodes. Returns whether it did (not when there is no run, or what
    /// it wraps is longer).
    #[inline]
    fn wrap(&mut self, start: usize, levels: usize) -> bool {
        let slots = &mut self.doc.slots;
        let end = slots.len();
        let inner = start + levels;
        let (more, content) = match slots[inner].unpack() {
            Slot::Array { len: 1, .. } => (1, inner + 1),
            Slot::Wraps { levels, .. } => (levels as usize, inner + 1),
            _ => (0, inner),
        };
        if levels + more < 2 || end - content > MERGED_AT_MOST {
            return false;
        }
        let back = content - (start + 1);
        for packed in &mut slots[content..] {
            packed.end_back(back as u32);
        }
        slots.copy_within(content..end, start + 1);
        slots.truncate(end - back);
        slots[start] = Slot::Wraps {
            levels: (levels + more) as u32,
            end: (end - back) as u32,
        }
        .pack();
        true
    }
    /// The first two members (in text order) of the object whose keys, not in key order,
    /// are `self.keys[base..]` that have the same key, as [`Map::from_entries`] finds them.
    fn repeated_key(&mut self, base: usize) -> Option<(usize, usize)> {
        let doc = &self.doc;
        let keys = &self.keys[base..];
        self.order.clear();
        self.order.extend(0..keys.len());
        self.order
            .sort_by(|&a, &b| doc.str_at(keys[a]).cmp(doc.str_at(keys[b])).then(a.cmp(&b)));
        self.order
            .windows(2)
            .find(|w| doc.str_at(keys[w[0]]) == doc.str_at(keys[w[1]]))
            .map(|w| (w[0], w[1]))
    }
}

impl<'a> Build<'a> for Tape<'a> {
    type Value = ();
    type Key = ();

    #[inline]
    fn null(&mut self) {
        self.push(Slot::Null);
    }

    #[inline]
    fn bool(&mut self, b: bool) {
        self.push(Slot::Bool(b));
    }

    #[inline]
    fn int(&mut self, i: i64) {
        self.push(Slot::Int(i));
    }

    #[inline]
    fn uint(&mut self, u: u64) {
        self.push(Slot::UInt(u));
    }

    #[inline]
    fn double(&mut self, d: f64) {
        self.push(Slot::Double(d));
    }

    #[inline]
    fn string(&mut self, s: Cow<'a, str>) {
        let slot = self.string_slot(s);
        self.push(slot);
    }

    fn bytes(&mut self, b: Vec<u8>) {
        let at = self.doc.bytes.len() as u32;
        self.doc.bytes.extend_from_slice(&b);
        self.push(Slot::Bytes {
            at,
            len: b.len() as u32,
        });
    }

    #[inline]
    fn key(&mut self, k: Cow<'a, str>) {
        // Each key against the one before it as it arrives, while it holds the string
        // already: most objects are in order, and then they are never sorted.
        if let Some((base, in_order)) = self.key_bases.last_mut() {
            if *in_order && self.keys.len() > *base {
                let before = *self.keys.last().expect("a key before this one");
                *in_order = self.doc.str_at(before) < k.as_ref();
            }
        }
        self.keys.push(self.doc.slots.len());
        let slot = self.string_slot(k);
        self.push(slot);
    }

    #[inline]
    fn begin_array(&mut self) {
        self.open.push(self.doc.slots.len());
        self.doc.deepest = self.doc.deepest.max(self.open.len());
        self.push(Slot::Array { len: 0, end: 0 });
    }

    #[inline]
    fn begin_object(&mut self) {
        self.open.push(self.doc.slots.len());
        self.doc.deepest = self.doc.deepest.max(self.open.len());
        self.key_bases.push((self.keys.len(), true));
        self.push(Slot::Object {
            len: 0,
            end: 0,
            sorted: true,
        });
    }

    #[inline]
    fn array(&mut self, items: Drain<'_, ()>) {
        self.close_array(items.len());
    }

    /// Without a `Drain` of nothing: most of what closing one of the 500-deep arrays cost.
    #[inline]
    fn array_of(&mut self, items: &mut Vec<()>, base: usize) {
        let len = items.len() - base;
        items.truncate(base);
        self.close_array(len);
    }

    /// One node for the run, or, around a long value, a node per level.
    fn arrays_of_one(&mut self, items: &mut Vec<()>, base: usize, levels: usize) {
        debug_assert_eq!(items.len(), base + 1, "one element");
        let first = self.open.len() - levels;
        let start = self.open[first];
        // The reader begins each level of a run straight after the one outside it (spaced
        // `[ [` too), so their nodes follow each other.
        debug_assert!(
            self.open[first..]
                .iter()
                .enumerate()
                .all(|(i, &at)| at == start + i),
            "the levels' nodes follow each other"
        );
        self.open.truncate(first);
        if self.wrap(start, levels) {
            return;
        }
        let end = self.doc.slots.len() as u32;
        for slot in &mut self.doc.slots[start..start + levels] {
            *slot = Slot::Array { len: 1, end }.pack();
        }
    }

    fn object(&mut self, members: Drain<'_, ((), ())>) -> std::result::Result<(), (usize, usize)> {
        let start = self.open.pop().expect("an object was begun");
        let (base, in_order) = self.key_bases.pop().expect("an object was begun");
        let repeated = match in_order {
            true => None,
            false => self.repeated_key(base),
        };
        self.keys.truncate(base);
        if let Some(pair) = repeated {
            return Err(pair);
        }
        self.doc.slots[start] = Slot::Object {
            len: members.len() as u32,
            end: self.doc.slots.len() as u32,
            sorted: in_order,
        }
        .pack();
        Ok(())
    }

    fn table(&mut self, tag: u8, _content: (), _at: usize) -> std::result::Result<(), String> {
        let start = self.open.pop().expect("the tag's array was begun");
        // The tag's array: its node, the letter, then the content array. The tables inside
        // it are the last ones made: moved into it, not copied, so that tags nested deep
        // hold their content once.
        let mut tables = std::mem::take(&mut self.doc.tables);
        let mut first_inside = tables.len();
        let (content, _) = self.doc.value_with(start + 2, &mut |i| {
            first_inside = first_inside.min(i);
            std::mem::take(&mut tables[i])
        });
        tables.truncate(first_inside);
        self.doc.tables = tables;
        let Value::Array(items) = content else {
            unreachable!("the reader gives tables arrays")
        };
        let table = Table::from_tag(tag, items)?;
        self.doc.slots.truncate(start);
        self.doc.tables.push(Value::from(table));
        self.push(Slot::Table(self.doc.tables.len() as u32 - 1));
        Ok(())
    }

    fn drop_array(&mut self) {
        let start = self.open.pop().expect("an array was begun");
        // Its letter, unescaped if it was typed with an escape, goes with it.
        if let Some(Slot::Unescaped { at, .. }) = self.doc.slots.get(start + 1).map(|p| p.unpack())
        {
            self.doc.unescaped.truncate(at as usize);
        }
        self.doc.slots.truncate(start);
    }

    fn unescape(&mut self, _content: ()) {
        let start = self.open.pop().expect("the escape's array was begun");
        self.doc.slots[start] = Slot::Escape {
            end: self.doc.slots.len() as u32,
        }
        .pack();
    }
}

/// Save text (the text of any document: a save, what `savechain.encode` wrote, a hand
/// edit) written again in `style`: [`Style::Pretty`] or [`Style::Compact`] give its
/// canonical text, [`Style::Decimal`] its decimal view. The same as [`from_slice`] then
/// [`write_value`](super::write_value); text that does not read is an error that says where, as the reader's do.
///
/// ```
/// use savechain::text::{reformat, Style};
///
/// let typed = br#"{"pos": [1, ["d", 2.5]],  "name": "Sol"}"#;
/// let compact = reformat(typed, Style::Compact)?;
/// assert_eq!(compact, br#"{"name":"Sol","pos":[1,["d","0x1.4p+1"]]}"#);
/// let view = reformat(&compact, Style::Decimal)?;
/// assert_eq!(view, b"{\n  \"name\": \"Sol\",\n  \"pos\": [1, [\"d\", 2.5]]\n}\n");
/// // The view reads back to the same document, bit for bit.
/// assert_eq!(reformat(&view, Style::Compact)?, compact);
///
/// let err = reformat(b"{\"a\": 1,}", Style::Pretty).unwrap_err();
/// assert_eq!((err.line(), err.column()), (Some(1), Some(9)));
/// # Ok::<(), savechain::Error>(())
/// ```
///
/// [`from_slice`]: crate::text::from_slice
pub fn reformat(text: &[u8], style: Style) -> Result<Vec<u8>> {
    if u32::try_from(text.len()).is_err() {
        let value = super::from_slice(text)?;
        let mut out = Vec::with_capacity(text.len());
        super::write_value(&mut out, &value, style)?;
        return Ok(out);
    }
    // The same text, read into the borrowed document: no tree to build and drop.
    Document::parse(text)?.to_vec(style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{from_slice, write_value};

    /// The tape and the tree agree on `text`: the same error, or the same value and the
    /// same canonical text in every style.
    fn agree(text: &str) {
        let tree = from_slice(text.as_bytes());
        let tape = Document::parse(text.as_bytes());
        match (tree, tape) {
            (Ok(value), Ok(doc)) => {
                assert_eq!(doc.to_value(), value, "{text}");
                for style in [Style::Pretty, Style::Compact, Style::Decimal] {
                    let mut expected = Vec::new();
                    write_value(&mut expected, &value, style).unwrap();
                    assert_eq!(
                        String::from_utf8(doc.to_vec(style).unwrap()).unwrap(),
                        String::from_utf8(expected).unwrap(),
                        "{text}"
                    );
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
            (a, b) => panic!("{text}: tree {a:?}, tape {b:?}"),
        }
    }

    #[test]
    fn nodes_are_twelve_bytes_and_pack_every_slot() {
        assert_eq!(std::mem::size_of::<Packed>(), 12);
        for slot in [
            Slot::Null,
            Slot::Bool(true),
            Slot::Int(-3),
            Slot::Int(i64::MIN),
            Slot::UInt(u64::MAX),
            Slot::Double(-0.0),
            Slot::Text { at: 1, len: 2 },
            Slot::Unescaped { at: 3, len: 4 },
            Slot::Bytes {
                at: 5,
                len: u32::MAX,
            },
            Slot::Array { len: 6, end: 7 },
            Slot::Object {
                len: 8,
                end: 9,
                sorted: false,
            },
            Slot::Object {
                len: 8,
                end: 9,
                sorted: true,
            },
            Slot::Escape { end: 10 },
            Slot::Table(11),
            Slot::Wraps {
                levels: 12,
                end: 13,
            },
        ] {
            assert_eq!(format!("{:?}", slot.pack().unpack()), format!("{slot:?}"));
            let mut moved = slot.pack();
            moved.end_back(3);
            let expected = match slot {
                Slot::Array { len, end } => Slot::Array { len, end: end - 3 },
                Slot::Object { len, end, sorted } => Slot::Object {
                    len,
                    end: end - 3,
                    sorted,
                },
                Slot::Escape { end } => Slot::Escape { end: end - 3 },
                Slot::Wraps { levels, end } => Slot::Wraps {
                    levels,
                    end: end - 3,
                },
                other => other,
            };
            assert_eq!(format!("{:?}", moved.unpack()), format!("{expected:?}"));
        }
    }

    #[test]
    fn the_tape_reads_and_writes_as_the_tree_does() {
        for text in [
            "null",
            "[]",
            "{}",
            "  [1, -2, 18446744073709551615, 1.5, true, false, null]  ",
            r#"{"z": 1, "a": {"y": [1, 2], "b": "x\ny"}, "meta": {"version": 2}}"#,
            r#"{"b\u0062": 1, "a": "\u00e9t\u00e9"}"#,
            r#"[["d", "0x1.8p+1"], ["d", 2.5], ["d", 3], ["b", "\u00ff\u0000a"]]"#,
            r#"[["\u0064", "0x1p+0"], ["d", "0x1p+0", 3], ["b", "x", "y"]]"#,
            r#"["a", ["d", "0x1p+0"]]"#,
            r#"["a", ["a", ["a", ["x", [1]]]]]"#,
            r#"[["a", ["t", {}]], ["a", []], ["x", 1], ["a", 1, 2]]"#,
            r#"["t", [[1, 2], ["k", {"a": 1}]]]"#,
            r#"{"s": ["s", [1, {"me": ["r", [1]]}]], "c": ["c", ["V", {"x": 1}]]}"#,
            r#"{"meta": 1, "data": [1, 2, 3, 4, 5], "m": [1, ["d", "0x1p+0"]]}"#,
            r#"[1, 2, "a"]"#,
            // Refused, each the same way.
            "",
            "[1,]",
            r#"{"a": 1, "b": 2, "a": 3}"#,
            r#"{"b": 1, "a": 2, "b": 3}"#,
            r#"{"x": {"k": 1, "k": 2}}"#,
            r#"["d", "0x1.8q+1"]"#,
            r#"["d", [1]]"#,
            r#"["b", "\u0100"]"#,
            r#"["x", [1]]"#,
            r#"["a", 1]"#,
            r#"["t", [1]]"#,
            r#"["r", [1, 2]]"#,
            r#"{"a": [1, 2}"#,
            r#""\x""#,
            "[1] 2",
            "\u{feff}[1]",
        ] {
            agree(text);
        }
    }

    #[test]
    fn deep_nesting_and_escapes_agree() {
        for depth in [511, 512, 513] {
            agree(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
        }
        let mut escaped = String::from("[1]");
        for _ in 0..250 {
            escaped = format!("[\"a\", {escaped}]");
        }
        agree(&escaped);
        let mut escaped = String::from("[\"d\", \"0x1p+0\"]");
        for _ in 0..255 {
            escaped = format!("[\"a\", {escaped}]");
        }
        agree(&escaped);
    }

    #[test]
    fn runs_of_one_element_arrays_take_one_node() {
        let nodes = |text: &str| Document::parse(text.as_bytes()).unwrap().slots.len();
        // A run and what it wraps: two nodes, however deep.
        assert_eq!(nodes("[[1]]"), 2);
        assert_eq!(
            nodes(&format!("{}1.5{}", "[".repeat(500), "]".repeat(500))),
            2
        );
        let chain = format!(
            "{}[\"d\", \"0x1.8p+0\"]{}",
            "[".repeat(500),
            "]".repeat(500)
        );
        let many = format!("[{}]", vec![chain.as_str(); 100].join(", "));
        assert_eq!(nodes(&many), 1 + 2 * 100);
        // A run around more than `MERGED_AT_MOST` nodes keeps a node per level.
        let long = format!("[{}]", vec!["1"; MERGED_AT_MOST].join(", "));
        assert_eq!(nodes(&format!("[[{long}]]")), 2 + 1 + MERGED_AT_MOST);
        assert_eq!(nodes(&format!("[[[{long}]]]")), 3 + 1 + MERGED_AT_MOST);
        let short = format!("[{}]", vec!["1"; MERGED_AT_MOST - 1].join(", "));
        assert_eq!(nodes(&format!("[[[{short}]]]")), 1 + 1 + MERGED_AT_MOST - 1);
    }

    #[test]
    fn tags_nested_deep_hold_their_content_once() {
        // Keyed tables nested 100 deep around one long string: each tag moves the
        // tables inside it, so the document keeps one table, not a copy per level.
        let mut text = format!("{{\"s\": \"{}\"}}", "x".repeat(10_000));
        for _ in 0..100 {
            text = format!("[\"t\", [[1, {text}]]]");
        }
        let doc = Document::parse(text.as_bytes()).unwrap();
        assert_eq!(doc.tables.len(), 1);
        assert_eq!(
            doc.to_value(),
            crate::text::from_slice(text.as_bytes()).unwrap()
        );
        agree(&text);
    }

    #[test]
    fn nodes_read_what_the_text_holds() {
        let doc = Document::parse(
            br#"{"b": ["a", ["x", [1]]], "a": [1, ["d", "0x1p-1"], "s\u00e9", ["b", "\u0001"]], "u": 18446744073709551615}"#,
        )
        .unwrap();
        let root = doc.root();
        assert_eq!(root.kind(), Kind::Object);
        assert_eq!(root.len(), 3);
        let a = root.get("a").unwrap();
        assert_eq!(a.index(0).and_then(|n| n.as_i64()), Some(1));
        assert_eq!(a.index(1).and_then(|n| n.as_f64()), Some(0.5));
        assert_eq!(a.index(2).and_then(|n| n.as_str()), Some("sé"));
        assert_eq!(a.index(3).and_then(|n| n.as_bytes()), Some(&[1u8][..]));
        assert!(a.index(4).is_none());
        let b = root.get("b").unwrap();
        assert_eq!(b.kind(), Kind::Array);
        assert_eq!(b.index(0).and_then(|n| n.as_str()), Some("x"));
        assert_eq!(root.get("u").and_then(|n| n.as_u64()), Some(u64::MAX));
        assert_eq!(root.get("u").and_then(|n| n.as_i64()), None);
        assert!(root.get("zz").is_none());
        let keys: Vec<&str> = root.members().map(|(k, _)| k).collect();
        assert_eq!(keys, ["b", "a", "u"]);
    }

    #[test]
    fn plain_saves_are_told_apart() {
        let plain = |text: &str| Document::parse(text.as_bytes()).unwrap().is_plain_save();
        assert!(plain(r#"{"data": 1, "meta": {"version": 1}}"#));
        assert!(plain(
            r#"{"meta": {"version": 1, "writer": "1.2.3-rc.1"}, "data": 1}"#
        ));
        assert!(!plain(r#"{"meta": {"version": -1}, "data": 1}"#));
        assert!(!plain(r#"{"meta": {"version": 1}}"#));
        assert!(!plain(r#"{"meta": {"version": 1}, "data": 1, "x": 2}"#));
        assert!(!plain(
            r#"{"meta": {"version": 1, "writer": "1.2"}, "data": 1}"#
        ));
        assert!(!plain(
            r#"{"meta": {"version": 1, "writer": 3}, "data": 1}"#
        ));
        assert!(!plain(r#"[1]"#));
    }
}
