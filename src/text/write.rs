//! The writer: [`Value`] to canonical text, pretty for people or compact for machines.

use crate::error::{Error, ErrorKind, Result};
use crate::hexfloat;
use crate::path::{Path, Segment};
use crate::text::scan::{self, string_run};
use crate::text::tags::{
    tag_of, tag_of_pair, TAG_BYTES, TAG_CLASS, TAG_DOUBLE, TAG_KEYED, TAG_LITERAL, TAG_REF,
    TAG_SHARED,
};
use crate::text::MAX_DEPTH;
use crate::value::{Table, Value};

/// How the text is laid out. Both are canonical: keys in bytewise order, but for a `meta`
/// member of the top-level object, written first (a save's text starts with its `meta`);
/// the same value always gives the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Style {
    /// For people: two-space indentation, one member or element a line, tags and short
    /// arrays of numbers on one line, a final newline.
    #[default]
    Pretty,
    /// For machines: no whitespace at all, no final newline.
    Compact,
    /// The decimal view, for people reading and editing a save: the layout of
    /// [`Style::Pretty`], with every finite double written as the shortest decimal that
    /// reads back to the same bits (`["d", 0.965]`, `["d", -0.0]`, `["d", 1e300]`);
    /// infinities and NaNs keep their hexadecimal spelling. Reading it gives back the same
    /// document, bit for bit, but it is not canonical: the canonical text spells every
    /// double in hexadecimal.
    ///
    /// ```
    /// use savechain::text::{self, Style};
    ///
    /// let value = text::from_str(r#"{"hull": ["d", "0x1.ee147ae147ae1p-1"], "x": ["d", "-0x0p+0"]}"#)?;
    /// let mut view = Vec::new();
    /// text::write_value(&mut view, &value, Style::Decimal)?;
    /// let view = String::from_utf8(view)?;
    /// assert_eq!(view, "{\n  \"hull\": [\"d\", 0.965],\n  \"x\": [\"d\", -0.0]\n}\n");
    /// assert_eq!(text::from_str(&view)?, value);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    Decimal,
}

impl Style {
    /// The layout, pretty or compact, and whether doubles are written in decimal.
    fn layout(self) -> (Style, bool) {
        match self {
            Style::Decimal => (Style::Pretty, true),
            other => (other, false),
        }
    }
}

/// The member written first in the object at the top level of a document, before the others
/// in key order: a save's `meta`, so that its version stands in the first bytes of its
/// text and a reader of a save's head finds it there (format revision 3). Objects deeper
/// in have every member in key order.
pub(crate) const FIRST_MEMBER: &str = "meta";

/// Arrays of at most this many numbers (a position, a quaternion) stay on one line.
pub(crate) const INLINE_NUMBERS: usize = 4;

/// Writes `value` as text to `out`.
///
/// Fails only when the value is nested deeper than a reader accepts
/// ([`MAX_DEPTH`]), so that nothing is ever written that cannot be
/// read back.
pub fn write_value(out: &mut Vec<u8>, value: &Value, style: Style) -> Result<()> {
    let mut writer = Writer::new(out, style);
    writer.value(value, 0).map_err(too_deep)?;
    writer.finish();
    Ok(())
}

/// Writes an object of borrowed members as [`write_value`] writes a [`Value::Object`], for
/// a document assembled from parts (a save's `meta` and `data`) without copying them into
/// a map first. The members must be in the order the text has them: [`FIRST_MEMBER`]
/// first, then the others in key order.
pub(crate) fn write_members(
    out: &mut Vec<u8>,
    members: &[(&str, &Value)],
    style: Style,
) -> Result<()> {
    debug_assert!(members
        .windows(2)
        .all(|w| w[0].0 == FIRST_MEMBER || (w[1].0 != FIRST_MEMBER && w[0].0 < w[1].0)));
    let mut writer = Writer::new(out, style);
    writer
        .members(members.iter().map(|&(k, v)| (k, v)), 0)
        .map_err(too_deep)?;
    writer.finish();
    Ok(())
}

#[allow(clippy::boxed_local)] // The path travels boxed to keep the writer's results small.
pub(crate) fn too_deep(path: TooDeep) -> Error {
    Error::new(
        ErrorKind::Value,
        format!("nested more than {MAX_DEPTH} arrays and objects deep; it could not be read back"),
    )
    .in_path(*path)
}

// Here rather than in `value.rs`, so that the document model does not depend on its text
// codec.
impl std::fmt::Display for Value {
    /// The compact text form, as `text::to_string_compact` writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match to_vec_compact(self) {
            Ok(bytes) => f.write_str(&String::from_utf8_lossy(&bytes)),
            Err(_) => f.write_str("<value nested too deeply to print>"),
        }
    }
}

/// The compact text of `value` with every object's members in key order, the top level's
/// too: the text that orders tables used as keys among a keyed table's entries
/// (`lua/order.rs`, and `key_text` in `lua/savechain.lua`). The order of those entries is
/// one of the deeper levels the top level's [`FIRST_MEMBER`] leaves as they were.
pub(crate) fn to_string_ordering(value: &Value) -> String {
    let mut out = Vec::new();
    let mut writer = Writer::new(&mut out, Style::Compact);
    writer.first_member = false;
    match writer.value(value, 0) {
        Ok(()) => String::from_utf8(out).expect("the writer emits UTF-8"),
        // As `Display` spells it.
        Err(_) => "<value nested too deeply to print>".to_string(),
    }
}

/// `value` on one line for people: the compact layout, with doubles in decimal as the
/// decimal view writes them (`{"hull":["d",0.965]}`); for diffs and messages.
pub(crate) fn to_string_shown(value: &Value) -> String {
    let mut out = Vec::new();
    let mut writer = Writer::new(&mut out, Style::Compact);
    writer.decimal = true;
    match writer.value(value, 0) {
        Ok(()) => String::from_utf8(out).expect("the writer emits UTF-8"),
        Err(_) => "<value nested too deeply to print>".to_string(),
    }
}

/// A double as people read it: the decimal view's spelling when it is finite (Ryu's
/// shortest digits, `3.5`, `3.0`), its hexadecimal spelling otherwise (`inf`, `nan`).
pub(crate) fn decimal(d: f64) -> String {
    if d.is_finite() {
        ryu::Buffer::new().format_finite(d).to_string()
    } else {
        crate::hexfloat::format(d)
    }
}

/// The canonical pretty text of `value`.
pub fn to_vec(value: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_value(&mut out, value, Style::Pretty)?;
    Ok(out)
}

/// The canonical compact text of `value`.
pub fn to_vec_compact(value: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_value(&mut out, value, Style::Compact)?;
    Ok(out)
}

/// The canonical pretty text of `value`, as a `String`.
pub fn to_string(value: &Value) -> Result<String> {
    to_vec(value).map(|v| String::from_utf8(v).expect("the writer emits UTF-8"))
}

/// The canonical compact text of `value`, as a `String`.
pub fn to_string_compact(value: &Value) -> Result<String> {
    to_vec_compact(value).map(|v| String::from_utf8(v).expect("the writer emits UTF-8"))
}

/// Lays out canonical text. The layout rules (where lines break, how far they are indented,
/// when an array is escaped or kept on one line) live here; what is written comes from the
/// caller, element by element, through closures: the [`Value`] walk below, and the Lua
/// walk of `lua/lua_to_text.rs`, which writes Lua tables with no tree in between.
pub(crate) struct Writer<'o> {
    out: &'o mut Vec<u8>,
    /// The layout: pretty or compact.
    style: Style,
    /// Whether finite doubles are written in decimal ([`Style::Decimal`]).
    decimal: bool,
    /// How many `["a", [...]]` escapes enclose the current value: each adds a level of
    /// nesting to the text but not to the indentation.
    escapes: usize,
    /// Whether the top-level object writes [`FIRST_MEMBER`] first (canonical text), or
    /// every member in key order (the text that orders table keys).
    first_member: bool,
}

/// The error of a value nested too deeply: the path to it, built as the writer unwinds.
/// Boxed so that the `Result` of every call stays one word.
pub(crate) type TooDeep = Box<Path>;

impl<'o> Writer<'o> {
    /// Bytes of text in the output so far.
    pub(crate) fn written(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn new(out: &'o mut Vec<u8>, style: Style) -> Writer<'o> {
        let (style, decimal) = style.layout();
        Writer {
            out,
            style,
            decimal,
            escapes: 0,
            first_member: true,
        }
    }

    /// Where [`FIRST_MEMBER`] goes among the members of an object `depth` arrays and objects
    /// deep, whose keys are `sorted` in key order: `Some(i)` when the one at `i` is
    /// written first (the top level), `None` when the members go in key order.
    pub(crate) fn first_member_at<K: AsRef<[u8]>>(
        &self,
        depth: usize,
        sorted: impl IntoIterator<Item = K>,
    ) -> Option<usize> {
        if depth != 0 || !self.first_member {
            return None;
        }
        sorted
            .into_iter()
            .position(|key| key.as_ref() == FIRST_MEMBER.as_bytes())
    }

    /// Hands the text written so far to `sink` and forgets it, for a walk that streams a
    /// long text out in pieces (the layout never looks back at what it wrote).
    pub(crate) fn flush<E>(&mut self, sink: impl FnOnce(&[u8]) -> Result<(), E>) -> Result<(), E> {
        sink(self.out)?;
        self.out.clear();
        Ok(())
    }

    /// Ends a whole text: pretty text ends with a newline.
    pub(crate) fn finish(self) {
        if self.style == Style::Pretty {
            self.out.push(b'\n');
        }
    }

    pub(crate) fn null(&mut self) {
        self.out.extend_from_slice(b"null");
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.out
            .extend_from_slice(if b { b"true" as &[u8] } else { b"false" });
    }

    pub(crate) fn int(&mut self, i: i64) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
    }

    pub(crate) fn uint(&mut self, u: u64) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
    }

    pub(crate) fn double(&mut self, d: f64, depth: usize) -> Result<(), TooDeep> {
        check_depth(depth + 1)?;
        self.tag_open(TAG_DOUBLE);
        if self.decimal && d.is_finite() {
            // Ryu's shortest digits: reading them back gives the same bits.
            self.out
                .extend_from_slice(ryu::Buffer::new().format_finite(d).as_bytes());
            self.out.push(b']');
            return Ok(());
        }
        self.out.push(b'"');
        hexfloat::write(d, self.out);
        self.out.extend_from_slice(b"\"]");
        Ok(())
    }

    pub(crate) fn string(&mut self, s: &str) {
        write_string(self.out, s);
    }

    pub(crate) fn bytes(&mut self, b: &[u8], depth: usize) -> Result<(), TooDeep> {
        check_depth(depth + 1)?;
        self.tag_open(TAG_BYTES);
        write_latin1(self.out, b);
        self.out.push(b']');
        Ok(())
    }

    /// Writes an array of `len` elements, each written by `item(writer, index, depth)`;
    /// `numbers` says whether every element is a number (a short array of numbers stays on
    /// one line), and `tag_like` whether a reader would take the array for a tag, in which
    /// case it is escaped as `["a", [...]]`.
    pub(crate) fn array<E: From<TooDeep>>(
        &mut self,
        len: usize,
        numbers: bool,
        tag_like: bool,
        depth: usize,
        item: impl FnMut(&mut Self, usize, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        if !tag_like {
            return self.plain_array(len, numbers, depth, item);
        }
        check_depth(depth + 2)?;
        self.tag_open(TAG_LITERAL);
        self.escapes += 1;
        let written = self.plain_array(len, numbers, depth + 1, item);
        self.escapes -= 1;
        written?;
        self.out.push(b']');
        Ok(())
    }

    /// Writes the array itself, never as a tag.
    fn plain_array<E: From<TooDeep>>(
        &mut self,
        len: usize,
        numbers: bool,
        depth: usize,
        mut item: impl FnMut(&mut Self, usize, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        check_depth(depth + 1)?;
        if len == 0 {
            self.out.extend_from_slice(b"[]");
            return Ok(());
        }
        let inline = self.style == Style::Compact || (len <= INLINE_NUMBERS && numbers);
        self.out.push(b'[');
        for i in 0..len {
            if i > 0 {
                self.out.push(b',');
                if inline && self.style == Style::Pretty {
                    self.out.push(b' ');
                }
            }
            if !inline {
                self.newline(depth + 1);
            }
            item(self, i, depth + 1)?;
        }
        if !inline {
            self.newline(depth);
        }
        self.out.push(b']');
        Ok(())
    }

    /// Writes an object of `len` members, in key order, each written by
    /// `member(writer, index, depth)`, which writes its key with [`Writer::key`] and then
    /// its value.
    pub(crate) fn object<E: From<TooDeep>>(
        &mut self,
        len: usize,
        depth: usize,
        mut member: impl FnMut(&mut Self, usize, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        check_depth(depth + 1)?;
        if len == 0 {
            self.out.extend_from_slice(b"{}");
            return Ok(());
        }
        self.out.push(b'{');
        for i in 0..len {
            if i > 0 {
                self.out.push(b',');
            }
            self.newline(depth + 1);
            member(self, i, depth + 1)?;
        }
        self.newline(depth);
        self.out.push(b'}');
        Ok(())
    }

    /// Writes an object member's key and the colon after it.
    pub(crate) fn key(&mut self, key: &str) {
        write_string(self.out, key);
        self.out.push(b':');
        if self.style == Style::Pretty {
            self.out.push(b' ');
        }
    }

    /// Writes a keyed Lua table (`["t", [[key, value], ...]]`) of `len` entries, each
    /// written by `entry(writer, index, depth)` with [`Writer::pair`], laid out as if the
    /// tag were not there.
    pub(crate) fn keyed<E: From<TooDeep>>(
        &mut self,
        len: usize,
        depth: usize,
        mut entry: impl FnMut(&mut Self, usize, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        // The tag's array and its content array.
        check_depth(depth + 2)?;
        self.tag_open(TAG_KEYED);
        if len == 0 {
            self.out.extend_from_slice(b"[]]");
            return Ok(());
        }
        self.escapes += 1;
        self.out.push(b'[');
        for i in 0..len {
            if i > 0 {
                self.out.push(b',');
            }
            self.newline(depth + 2);
            entry(self, i, depth + 2)?;
        }
        self.newline(depth + 1);
        self.out.push(b']');
        self.escapes -= 1;
        self.out.push(b']');
        Ok(())
    }

    /// Writes a class instance (`["c", [name, value]]`), its value written by
    /// `value(writer, depth)`; `tag_like` says whether `[name, value]` would read as a tag.
    pub(crate) fn class<E: From<TooDeep>>(
        &mut self,
        name: &str,
        tag_like: bool,
        depth: usize,
        value: impl FnOnce(&mut Self, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        check_depth(depth + 2)?;
        self.tag_open(TAG_CLASS);
        self.escapes += 1;
        let written = self.pair(
            tag_like,
            depth + 1,
            |w, _| {
                w.string(name);
                Ok(())
            },
            value,
        );
        self.escapes -= 1;
        written?;
        self.out.push(b']');
        Ok(())
    }

    /// Writes the two-element array `[first, second]` on the line it starts on, escaped as
    /// `["a", [...]]` when `tag_like` (it would read as a tag); `depth` counts the arrays
    /// and objects around it.
    pub(crate) fn pair<E: From<TooDeep>>(
        &mut self,
        tag_like: bool,
        depth: usize,
        first: impl FnOnce(&mut Self, usize) -> Result<(), E>,
        second: impl FnOnce(&mut Self, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let depth = if tag_like {
            check_depth(depth + 1)?;
            self.tag_open(TAG_LITERAL);
            self.escapes += 1;
            depth + 1
        } else {
            depth
        };
        check_depth(depth + 1)?;
        self.escapes += 1;
        self.out.push(b'[');
        let mut written = first(self, depth + 1);
        if written.is_ok() {
            self.separator();
            written = second(self, depth + 1);
        }
        self.out.push(b']');
        self.escapes -= 1;
        if tag_like {
            self.escapes -= 1;
            self.out.push(b']');
        }
        written
    }

    fn separator(&mut self) {
        match self.style {
            Style::Pretty | Style::Decimal => self.out.extend_from_slice(b", "),
            Style::Compact => self.out.push(b','),
        }
    }

    fn tag_open(&mut self, tag: u8) {
        let sep: &[u8] = match self.style {
            Style::Pretty | Style::Decimal => b", ",
            Style::Compact => b",",
        };
        self.out.extend_from_slice(&[b'[', b'"', tag, b'"']);
        self.out.extend_from_slice(sep);
    }

    fn newline(&mut self, depth: usize) {
        if self.style == Style::Pretty {
            self.out.push(b'\n');
            let indent = depth - self.escapes;
            self.out.resize(self.out.len() + 2 * indent, b' ');
        }
    }
}

/// What a walk of a [`Value`] does between one member or element and the next: nothing
/// when the text is written whole ([`Whole`]), hand the text so far to a sink once there is
/// a piece of it when it is streamed ([`Streamed`]). The walk is the same code either way.
trait Pieces {
    /// Why a walk stops: a value nested too deeply, or, streamed, the sink's refusal.
    type Halt: From<TooDeep>;

    /// Adds `segment` in front of the path of a value nested too deeply below it.
    fn within(halt: Self::Halt, segment: impl FnOnce() -> Segment) -> Self::Halt;

    /// Called after each member, element and keyed table entry.
    fn piece(&mut self, w: &mut Writer<'_>) -> Result<(), Self::Halt>;
}

/// The text is written whole into the writer's output.
struct Whole;

impl Pieces for Whole {
    type Halt = TooDeep;

    fn within(mut path: TooDeep, segment: impl FnOnce() -> Segment) -> TooDeep {
        path.push_front(segment());
        path
    }

    #[inline(always)]
    fn piece(&mut self, _: &mut Writer<'_>) -> Result<(), TooDeep> {
        Ok(())
    }
}

/// Where streamed canonical text goes, piece by piece; its error stops the walk.
pub(crate) type Sink<'s> = dyn FnMut(&[u8]) -> Result<()> + 's;

/// About how many bytes of text a streamed write hands its sink at a time.
pub(crate) const PIECE: usize = 1 << 16;

/// The text is handed to a sink in pieces of about `piece` bytes ([`PIECE`]).
struct Streamed<'r, 's> {
    sink: &'r mut Sink<'s>,
    piece: usize,
}

/// Why a streamed walk stopped (of a [`Value`] here, of a `Document` in `tape.rs`).
pub(crate) enum Halt {
    /// Nested deeper than a reader accepts, at this path.
    Deep(TooDeep),
    /// The sink refused what it was given.
    Sink(Error),
}

impl From<TooDeep> for Halt {
    fn from(path: TooDeep) -> Halt {
        Halt::Deep(path)
    }
}

impl Halt {
    /// Adds `segment` in front of the path of a value nested too deeply below it.
    pub(crate) fn within(self, segment: impl FnOnce() -> Segment) -> Halt {
        match self {
            Halt::Deep(path) => Halt::Deep(Whole::within(path, segment)),
            other => other,
        }
    }
}

impl Pieces for Streamed<'_, '_> {
    type Halt = Halt;

    fn within(halt: Halt, segment: impl FnOnce() -> Segment) -> Halt {
        halt.within(segment)
    }

    #[inline]
    fn piece(&mut self, w: &mut Writer<'_>) -> Result<(), Halt> {
        if w.written() < self.piece {
            return Ok(());
        }
        w.flush(|text| (self.sink)(text)).map_err(Halt::Sink)
    }
}

/// [`write_members`] handing the text to `sink` in pieces of about [`PIECE`] bytes instead
/// of appending it to a buffer whole: a long document is never all in memory, the same
/// bytes in the same order. A value nested too deeply fails it midway, as does the sink's
/// error: what the sink was given by then is not a whole text.
pub(crate) fn stream_members(
    members: &[(&str, &Value)],
    style: Style,
    sink: &mut Sink<'_>,
) -> Result<()> {
    stream_members_in(members, style, PIECE, sink)
}

/// [`stream_members`] in pieces of about `piece` bytes.
fn stream_members_in(
    members: &[(&str, &Value)],
    style: Style,
    piece: usize,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let mut out = Vec::with_capacity(2 * piece);
    let mut writer = Writer::new(&mut out, style);
    let members = members.iter().map(|&(k, v)| (k, v));
    let mut streamed = Streamed {
        sink: &mut *sink,
        piece,
    };
    match writer.walk_members(members, 0, &mut streamed) {
        Ok(()) => {}
        Err(Halt::Deep(path)) => return Err(too_deep(path)),
        Err(Halt::Sink(e)) => return Err(e),
    }
    writer.finish();
    sink(&out)
}

/// The walk of a [`Value`].
impl Writer<'_> {
    /// Writes one value; `depth` is the number of arrays and objects of text around it.
    pub(crate) fn value(&mut self, value: &Value, depth: usize) -> Result<(), TooDeep> {
        self.walk(value, depth, &mut Whole)
    }

    /// Writes an object of these members, which are in the order the text has them.
    fn members<'v>(
        &mut self,
        members: impl ExactSizeIterator<Item = (&'v str, &'v Value)>,
        depth: usize,
    ) -> Result<(), TooDeep> {
        self.walk_members(members, depth, &mut Whole)
    }

    /// [`Writer::value`], calling `pieces` after each member and element.
    fn walk<P: Pieces>(
        &mut self,
        value: &Value,
        depth: usize,
        pieces: &mut P,
    ) -> Result<(), P::Halt> {
        match value {
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Int(i) => self.int(*i),
            Value::UInt(u) => self.uint(*u),
            Value::Double(d) => self.double(*d, depth)?,
            Value::String(s) => self.string(s),
            Value::Bytes(b) => self.bytes(b, depth)?,
            Value::Array(items) => self.array(
                items.len(),
                items
                    .iter()
                    .all(|v| matches!(v, Value::Int(_) | Value::UInt(_) | Value::Double(_))),
                tag_of(items).is_some(),
                depth,
                |w, i, depth| {
                    w.walk(&items[i], depth, pieces)
                        .map_err(|h| P::within(h, || Segment::Index(i)))?;
                    pieces.piece(w)
                },
            )?,
            Value::Object(map) => match self.first_member_at(depth, map.keys()) {
                Some(first) => {
                    let mut members: Vec<(&str, &Value)> = map.iter().collect();
                    members[..=first].rotate_right(1);
                    self.walk_members(members.into_iter(), depth, pieces)?
                }
                None => self.walk_members(map.iter(), depth, pieces)?,
            },
            Value::Table(table) => self.table(table, depth, pieces)?,
        }
        Ok(())
    }

    /// [`Writer::members`], calling `pieces` after each member.
    fn walk_members<'v, P: Pieces>(
        &mut self,
        members: impl ExactSizeIterator<Item = (&'v str, &'v Value)>,
        depth: usize,
        pieces: &mut P,
    ) -> Result<(), P::Halt> {
        let mut members = members;
        self.object(members.len(), depth, |w, _, depth| {
            let (key, item) = members.next().expect("as many members as its length");
            w.key(key);
            w.walk(item, depth, pieces)
                .map_err(|h| P::within(h, || Segment::Key(key.to_string())))?;
            pieces.piece(w)
        })
    }

    /// Writes a Lua table tag, laid out as if the tag were not there: whatever the table
    /// holds is indented one step more than the line the tag starts on.
    fn table<P: Pieces>(
        &mut self,
        table: &Table,
        depth: usize,
        pieces: &mut P,
    ) -> Result<(), P::Halt> {
        match table {
            Table::Keyed(entries) => self.keyed(entries.len(), depth, |w, i, depth| {
                let (key, value) = &entries[i];
                w.entry(key, value, depth, pieces)
                    .map_err(|h| P::within(h, || Segment::Index(i)))?;
                pieces.piece(w)
            }),
            Table::Class { name, value } => {
                let tag_like = tag_of_pair(&Value::String(name.clone()), value).is_some();
                self.class(name, tag_like, depth, |w, depth| {
                    w.walk(value, depth, pieces)
                })
            }
            Table::Shared { id, value } => {
                // The tag's array and its content array.
                check_depth(depth + 2)?;
                self.tag_open(TAG_SHARED);
                self.out.push(b'[');
                self.uint(*id);
                self.separator();
                self.escapes += 2;
                let written = self.walk(value, depth + 2, pieces);
                self.escapes -= 2;
                written?;
                self.out.extend_from_slice(b"]]");
                Ok(())
            }
            Table::Ref(id) => {
                check_depth(depth + 2)?;
                self.tag_open(TAG_REF);
                self.out.push(b'[');
                self.uint(*id);
                self.out.extend_from_slice(b"]]");
                Ok(())
            }
        }
    }

    /// Writes an entry of a keyed table, `[key, value]`.
    fn entry<P: Pieces>(
        &mut self,
        key: &Value,
        value: &Value,
        depth: usize,
        pieces: &mut P,
    ) -> Result<(), P::Halt> {
        self.pair(
            tag_of_pair(key, value).is_some(),
            depth,
            // A key is written whole into the piece: keys that are tables are rare.
            |w, depth| w.walk(key, depth, &mut Whole).map_err(P::Halt::from),
            |w, depth| w.walk(value, depth, pieces),
        )
    }
}

fn check_depth(depth: usize) -> Result<(), TooDeep> {
    if depth > MAX_DEPTH {
        Err(Box::default())
    } else {
        Ok(())
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_escape(out: &mut Vec<u8>, byte: u8) {
    match byte {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\t' => out.extend_from_slice(b"\\t"),
        b'\r' => out.extend_from_slice(b"\\r"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(byte >> 4) as usize],
            HEX[(byte & 0xf) as usize],
        ]),
    }
}

/// Writes text as a JSON string: non-ASCII stays as UTF-8 so people can read it.
fn write_string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    // Keys and string values are mostly short and plain: checked whole with a word or two
    // they skip the scan's loops, which cost the writer more than they save on them.
    if bytes.len() <= 16 && !short_needs_escape(bytes) {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        write_string_scanned(out, bytes);
    }
}

/// [`write_string`] of longer strings and of those with bytes to escape, kept out of line
/// so that the short plain ones need few registers.
#[inline(never)]
fn write_string_scanned(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    while let Some(run) = string_run(bytes, start) {
        let special = start + run;
        out.extend_from_slice(&bytes[start..special]);
        write_escape(out, bytes[special]);
        start = special + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether a string of at most 16 bytes holds a byte that must be escaped (a quote, a
/// backslash or a control character).
#[inline]
fn short_needs_escape(bytes: &[u8]) -> bool {
    scan::any_short_word(bytes, scan::string_ends_in)
}

/// Writes bytes as a JSON string of characters U+0000 to U+00FF, one per byte, in pure
/// ASCII: printable ASCII as it is, everything else escaped.
fn write_latin1(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b);
        } else {
            write_escape(out, b);
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::from_str;
    use crate::value::Map;
    use proptest::prelude::*;

    /// Values of every kind, nested a few levels: arrays that read as tags, Lua tables,
    /// objects with a `meta` key.
    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            any::<u64>().prop_map(Value::UInt),
            any::<f64>().prop_map(Value::Double),
            "[a-z\\\"\n\u{e9}]{0,12}".prop_map(Value::String),
            "[dbtscra]".prop_map(Value::String),
            prop::collection::vec(any::<u8>(), 0..6).prop_map(Value::Bytes),
        ];
        leaf.prop_recursive(5, 96, 8, |inner| {
            let key = prop_oneof![Just("meta".to_string()), "[a-z]{0,4}"];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                ("[dbtscra]", inner.clone())
                    .prop_map(|(t, v)| Value::Array(vec![Value::String(t), v])),
                prop::collection::vec((key, inner.clone()), 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<Map>())),
                prop::collection::vec((inner.clone(), inner.clone()), 0..4)
                    .prop_map(|entries| Value::Table(Box::new(Table::Keyed(entries)))),
                ("[A-Z][a-z]{0,3}", inner.clone()).prop_map(|(name, value)| {
                    Value::Table(Box::new(Table::Class { name, value }))
                }),
                (any::<u64>(), inner)
                    .prop_map(|(id, value)| Value::Table(Box::new(Table::Shared { id, value }))),
                any::<u64>().prop_map(|id| Value::Table(Box::new(Table::Ref(id)))),
            ]
        })
    }

    fn any_style() -> impl Strategy<Value = Style> {
        prop_oneof![
            Just(Style::Pretty),
            Just(Style::Compact),
            Just(Style::Decimal)
        ]
    }

    /// The pieces a streamed write of `members` hands its sink, `piece` bytes apart.
    fn pieces(members: &[(&str, &Value)], style: Style, piece: usize) -> Result<Vec<Vec<u8>>> {
        let mut pieces = Vec::new();
        stream_members_in(members, style, piece, &mut |p: &[u8]| {
            pieces.push(p.to_vec());
            Ok(())
        })
        .map(|()| pieces)
    }

    proptest! {
        /// Streamed in pieces however small, the text is the one written whole.
        #[test]
        fn a_streamed_text_is_the_text_written_whole(
            meta in any_value(),
            data in any_value(),
            style in any_style(),
            piece in prop_oneof![1usize..64, Just(PIECE)],
        ) {
            let members = [("meta", &meta), ("data", &data)];
            let mut whole = Vec::new();
            write_members(&mut whole, &members, style).unwrap();
            let streamed = pieces(&members, style, piece).unwrap();
            prop_assert_eq!(streamed.concat(), whole);
        }
    }

    /// A value nested too deeply after text already handed out fails the stream midway with
    /// the error (and path) the whole write gives; so does the sink's own error, which stops
    /// the walk at once.
    #[test]
    fn a_stream_stops_midway_on_a_deep_value_or_the_sinks_error() {
        let mut deep = Value::Int(1);
        for _ in 0..MAX_DEPTH + 2 {
            deep = Value::Array(vec![deep]);
        }
        let wide = Value::Array((0..1000).map(Value::Int).collect());
        let data: Map = [("a", wide.clone()), ("b", deep)].into_iter().collect();
        let data = Value::Object(data);
        let meta = Value::Int(0);
        let members = [("meta", &meta), ("data", &data)];
        let whole = write_members(&mut Vec::new(), &members, Style::Pretty).unwrap_err();
        let mut handed = 0;
        let streamed = stream_members_in(&members, Style::Pretty, 64, &mut |p: &[u8]| {
            handed += p.len();
            Ok(())
        })
        .unwrap_err();
        assert!(handed > 1000, "text was handed out before the deep value");
        assert_eq!(streamed.kind(), ErrorKind::Value);
        assert_eq!(streamed.to_string(), whole.to_string());
        assert!(streamed.to_string().contains("data.b"), "{streamed}");

        let data = Value::Object([("a", wide)].into_iter().collect());
        let members = [("meta", &meta), ("data", &data)];
        let mut calls = 0;
        let err = stream_members_in(&members, Style::Pretty, 64, &mut |_: &[u8]| {
            calls += 1;
            match calls {
                3 => Err(Error::new(ErrorKind::Io, "the disk is full")),
                _ => Ok(()),
            }
        })
        .unwrap_err();
        assert_eq!(err.message(), "the disk is full");
        assert_eq!(calls, 3);
    }

    fn compact(text: &str) -> String {
        to_string_compact(&from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn meta_goes_first_at_the_top_level_alone() {
        assert_eq!(
            compact(r#"{"z": 1, "data": {"meta": 1, "a": 2}, "meta": {"b": 1, "a": 2}, "a": 0}"#),
            r#"{"meta":{"a":2,"b":1},"a":0,"data":{"a":2,"meta":1},"z":1}"#
        );
        assert_eq!(
            to_string(&from_str(r#"{"data": 1, "meta": 2}"#).unwrap()).unwrap(),
            "{\n  \"meta\": 2,\n  \"data\": 1\n}\n"
        );
        // Not within an array, a tag or a Lua table: those objects are not the top level.
        for text in [
            r#"[{"a":1,"meta":2}]"#,
            r#"["s",[1,{"a":1,"meta":2}]]"#,
            r#"["c",["V",{"a":1,"meta":2}]]"#,
            r#"["t",[[{"a":1,"meta":2},1]]]"#,
            r#"{"a":1}"#,
            r#"{"meta":1}"#,
        ] {
            assert_eq!(compact(text), text);
        }
    }

    /// Every byte at every place of strings of 0 to 40 bytes: the whole-string check of
    /// short strings finds exactly the bytes to escape, and strings are written as one byte
    /// at a time would write them, on both sides of its 16-byte limit.
    #[test]
    fn strings_escape_every_special_byte_wherever_it_stands() {
        let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
        for len in 0..=16 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'x'; len];
                    bytes[at] = b;
                    assert_eq!(
                        short_needs_escape(&bytes),
                        special(b),
                        "byte {b:#x} at {at} of {len}"
                    );
                }
            }
            assert!(!short_needs_escape(&vec![0x7f; len]));
            assert!(!short_needs_escape(&vec![0xff; len]));
        }
        let one_at_a_time = |s: &str| {
            let mut out = vec![b'"'];
            for &b in s.as_bytes() {
                if special(b) {
                    write_escape(&mut out, b);
                } else {
                    out.push(b);
                }
            }
            out.push(b'"');
            out
        };
        for len in 0..=40 {
            for at in 0..len {
                for c in (0..0x80u8).map(char::from).chain(['\u{e9}', '\u{20ac}']) {
                    let mut s = "x".repeat(len);
                    s.replace_range(at..at + 1, c.encode_utf8(&mut [0; 4]));
                    let mut out = Vec::new();
                    write_string(&mut out, &s);
                    assert_eq!(out, one_at_a_time(&s), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn the_text_that_orders_table_keys_has_every_key_in_order() {
        let value = from_str(r#"{"meta": 1, "a": 2}"#).unwrap();
        assert_eq!(to_string_ordering(&value), r#"{"a":2,"meta":1}"#);
        assert_eq!(value.to_string(), r#"{"meta":1,"a":2}"#);
    }
}
