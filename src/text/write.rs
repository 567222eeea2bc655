//! The writer: [`Value`] to canonical text, pretty for people or compact for machines.

use crate::error::{Error, ErrorKind, Result};
use crate::hexfloat;
use crate::path::{Path, Segment};
use crate::text::scan::string_run;
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

/// Adds `segment` in front of the path of a value nested too deeply below it.
fn within(segment: impl FnOnce() -> Segment) -> impl FnOnce(TooDeep) -> TooDeep {
    move |mut path| {
        path.push_front(segment());
        path
    }
}

/// The walk of a [`Value`].
impl Writer<'_> {
    /// Writes one value; `depth` is the number of arrays and objects of text around it.
    pub(crate) fn value(&mut self, value: &Value, depth: usize) -> Result<(), TooDeep> {
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
                    w.value(&items[i], depth)
                        .map_err(within(|| Segment::Index(i)))
                },
            )?,
            Value::Object(map) => match self.first_member_at(depth, map.keys()) {
                Some(first) => {
                    let mut members: Vec<(&str, &Value)> = map.iter().collect();
                    members[..=first].rotate_right(1);
                    self.members(members.into_iter(), depth)?
                }
                None => self.members(map.iter(), depth)?,
            },
            Value::Table(table) => self.table(table, depth)?,
        }
        Ok(())
    }

    /// Writes an object of these members, which are in the order the text has them.
    fn members<'v>(
        &mut self,
        members: impl ExactSizeIterator<Item = (&'v str, &'v Value)>,
        depth: usize,
    ) -> Result<(), TooDeep> {
        let mut members = members;
        self.object(members.len(), depth, |w, _, depth| {
            let (key, item) = members.next().expect("as many members as its length");
            w.key(key);
            w.value(item, depth)
                .map_err(within(|| Segment::Key(key.to_string())))
        })
    }

    /// Writes a Lua table tag, laid out as if the tag were not there: whatever the table
    /// holds is indented one step more than the line the tag starts on.
    fn table(&mut self, table: &Table, depth: usize) -> Result<(), TooDeep> {
        match table {
            Table::Keyed(entries) => self.keyed(entries.len(), depth, |w, i, depth| {
                let (key, value) = &entries[i];
                w.entry(key, value, depth)
                    .map_err(within(|| Segment::Index(i)))
            }),
            Table::Class { name, value } => {
                let tag_like = tag_of_pair(&Value::String(name.clone()), value).is_some();
                self.class(name, tag_like, depth, |w, depth| w.value(value, depth))
            }
            Table::Shared { id, value } => {
                // The tag's array and its content array.
                check_depth(depth + 2)?;
                self.tag_open(TAG_SHARED);
                self.out.push(b'[');
                self.uint(*id);
                self.separator();
                self.escapes += 2;
                let written = self.value(value, depth + 2);
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
    fn entry(&mut self, key: &Value, value: &Value, depth: usize) -> Result<(), TooDeep> {
        self.pair(
            tag_of_pair(key, value).is_some(),
            depth,
            |w, depth| w.value(key, depth),
            |w, depth| w.value(value, depth),
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

    #[test]
    fn the_text_that_orders_table_keys_has_every_key_in_order() {
        let value = from_str(r#"{"meta": 1, "a": 2}"#).unwrap();
        assert_eq!(to_string_ordering(&value), r#"{"a":2,"meta":1}"#);
        assert_eq!(value.to_string(), r#"{"meta":1,"a":2}"#);
    }
}
