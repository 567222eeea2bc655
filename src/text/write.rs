//! The writer: [`Value`] to canonical text, pretty for people or compact for machines.

use crate::error::{Error, ErrorKind, Result};
use crate::hexfloat;
use crate::path::{Path, Segment};
use crate::text::scan::string_run;
use crate::text::tags::{tag_of, tag_of_pair};
use crate::text::{MAX_DEPTH, TAG_BYTES, TAG_DOUBLE, TAG_LITERAL};
use crate::value::{Table, Value};

/// How the text is laid out. Both are canonical: keys in bytewise order, the same value
/// always gives the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Style {
    /// For people: two-space indentation, one member or element a line, tags and short
    /// arrays of numbers on one line, a final newline.
    #[default]
    Pretty,
    /// For machines: no whitespace at all, no final newline.
    Compact,
}

/// Arrays of at most this many numbers (a position, a quaternion) stay on one line.
pub(crate) const INLINE_NUMBERS: usize = 4;

/// Writes `value` as text to `out`.
///
/// Fails only when the value is nested deeper than a reader accepts
/// ([`MAX_DEPTH`]), so that nothing is ever written that cannot be
/// read back.
pub fn write_value(out: &mut Vec<u8>, value: &Value, style: Style) -> Result<()> {
    Writer::new(out, style).value(value, 0).map_err(too_deep)?;
    if style == Style::Pretty {
        out.push(b'\n');
    }
    Ok(())
}

/// Writes an object of borrowed members as [`write_value`] writes a [`Value::Object`], for
/// a document assembled from parts (a save's `data` and `meta`) without copying them into
/// a map first. The members must be in key order.
pub(crate) fn write_members(
    out: &mut Vec<u8>,
    members: &[(&str, &Value)],
    style: Style,
) -> Result<()> {
    debug_assert!(members.windows(2).all(|w| w[0].0 < w[1].0));
    Writer::new(out, style)
        .object(members.iter().map(|&(k, v)| (k, v)), 0)
        .map_err(too_deep)?;
    if style == Style::Pretty {
        out.push(b'\n');
    }
    Ok(())
}

#[allow(clippy::boxed_local)] // The path travels boxed to keep the writer's results small.
fn too_deep(path: TooDeep) -> Error {
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

struct Writer<'o> {
    out: &'o mut Vec<u8>,
    style: Style,
    /// How many `["a", [...]]` escapes enclose the current value: each adds a level of
    /// nesting to the text but not to the indentation.
    escapes: usize,
}

impl<'o> Writer<'o> {
    fn new(out: &'o mut Vec<u8>, style: Style) -> Writer<'o> {
        Writer {
            out,
            style,
            escapes: 0,
        }
    }
}

/// The error of a value nested too deeply: the path to it, built as the writer unwinds.
/// Boxed so that the `Result` of every call stays one word.
type TooDeep = Box<Path>;

impl Writer<'_> {
    /// Writes one value; `depth` is the number of arrays and objects of text around it.
    fn value(&mut self, value: &Value, depth: usize) -> Result<(), TooDeep> {
        match value {
            Value::Null => self.out.extend_from_slice(b"null"),
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            Value::Int(i) => self
                .out
                .extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
            Value::UInt(u) => self
                .out
                .extend_from_slice(itoa::Buffer::new().format(*u).as_bytes()),
            Value::Double(d) => {
                check_depth(depth + 1)?;
                self.tag_open(TAG_DOUBLE);
                self.out.push(b'"');
                hexfloat::write(*d, self.out);
                self.out.extend_from_slice(b"\"]");
            }
            Value::String(s) => write_string(self.out, s),
            Value::Bytes(b) => {
                check_depth(depth + 1)?;
                self.tag_open(TAG_BYTES);
                write_latin1(self.out, b);
                self.out.push(b']');
            }
            Value::Array(items) if looks_like_tag(items) => {
                // A literal array that a reader would take for a tag is escaped as ["a", [...]].
                check_depth(depth + 2)?;
                self.tag_open(TAG_LITERAL);
                self.escapes += 1;
                let written = self.array(items, depth + 1);
                self.escapes -= 1;
                written?;
                self.out.push(b']');
            }
            Value::Array(items) => self.array(items, depth)?,
            Value::Object(map) => self.object(map.iter(), depth)?,
            Value::Table(table) => self.table(table, depth)?,
        }
        Ok(())
    }

    /// Writes an object of these members, which are in key order.
    fn object<'v>(
        &mut self,
        members: impl ExactSizeIterator<Item = (&'v str, &'v Value)>,
        depth: usize,
    ) -> Result<(), TooDeep> {
        check_depth(depth + 1)?;
        if members.len() == 0 {
            self.out.extend_from_slice(b"{}");
            return Ok(());
        }
        self.out.push(b'{');
        for (i, (key, item)) in members.enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.newline(depth + 1);
            write_string(self.out, key);
            self.out.push(b':');
            if self.style == Style::Pretty {
                self.out.push(b' ');
            }
            self.value(item, depth + 1).map_err(|mut path| {
                path.push_front(Segment::Key(key.to_string()));
                path
            })?;
        }
        self.newline(depth);
        self.out.push(b'}');
        Ok(())
    }

    /// Writes a Lua table tag, laid out as if the tag were not there: whatever the table
    /// holds is indented one step more than the line the tag starts on.
    fn table(&mut self, table: &Table, depth: usize) -> Result<(), TooDeep> {
        // The tag's array and its content array.
        check_depth(depth + 2)?;
        self.tag_open(table.tag());
        match table {
            Table::Keyed(entries) if entries.is_empty() => self.out.extend_from_slice(b"[]"),
            Table::Keyed(entries) => {
                self.escapes += 1;
                self.out.push(b'[');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.newline(depth + 2);
                    let written = self.pair(key, value, depth + 2);
                    if let Err(mut path) = written {
                        self.escapes -= 1;
                        path.push_front(Segment::Index(i));
                        return Err(path);
                    }
                }
                self.newline(depth + 1);
                self.out.push(b']');
                self.escapes -= 1;
            }
            Table::Shared { id, value } => {
                self.out.push(b'[');
                self.out
                    .extend_from_slice(itoa::Buffer::new().format(*id).as_bytes());
                self.separator();
                self.escapes += 2;
                let written = self.value(value, depth + 2);
                self.escapes -= 2;
                written?;
                self.out.push(b']');
            }
            Table::Ref(id) => {
                self.out.push(b'[');
                self.out
                    .extend_from_slice(itoa::Buffer::new().format(*id).as_bytes());
                self.out.push(b']');
            }
            Table::Class { name, value } => {
                self.escapes += 1;
                let written = self.pair(&Value::String(name.clone()), value, depth + 1);
                self.escapes -= 1;
                written?;
            }
        }
        self.out.push(b']');
        Ok(())
    }

    /// Writes the two-element array `[first, second]` on the line it starts on, escaped as
    /// `["a", [...]]` if it would read as a tag; `depth` counts the arrays and objects
    /// around it.
    fn pair(&mut self, first: &Value, second: &Value, depth: usize) -> Result<(), TooDeep> {
        let escaped = tag_of_pair(first, second).is_some();
        let depth = if escaped {
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
        let mut written = self.value(first, depth + 1);
        if written.is_ok() {
            self.separator();
            written = self.value(second, depth + 1);
        }
        self.out.push(b']');
        self.escapes -= 1;
        if escaped {
            self.escapes -= 1;
            self.out.push(b']');
        }
        written
    }

    fn separator(&mut self) {
        match self.style {
            Style::Pretty => self.out.extend_from_slice(b", "),
            Style::Compact => self.out.push(b','),
        }
    }

    /// Writes the array itself, never as a tag.
    fn array(&mut self, items: &[Value], depth: usize) -> Result<(), TooDeep> {
        check_depth(depth + 1)?;
        if items.is_empty() {
            self.out.extend_from_slice(b"[]");
            return Ok(());
        }
        let inline = self.style == Style::Compact
            || (items.len() <= INLINE_NUMBERS
                && items
                    .iter()
                    .all(|v| matches!(v, Value::Int(_) | Value::UInt(_) | Value::Double(_))));
        self.out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
                if inline && self.style == Style::Pretty {
                    self.out.push(b' ');
                }
            }
            if !inline {
                self.newline(depth + 1);
            }
            self.value(item, depth + 1).map_err(|mut path| {
                path.push_front(Segment::Index(i));
                path
            })?;
        }
        if !inline {
            self.newline(depth);
        }
        self.out.push(b']');
        Ok(())
    }

    fn tag_open(&mut self, tag: u8) {
        let sep: &[u8] = match self.style {
            Style::Pretty => b", ",
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

fn check_depth(depth: usize) -> Result<(), TooDeep> {
    if depth > MAX_DEPTH {
        Err(Box::default())
    } else {
        Ok(())
    }
}

/// Whether a reader would take this array for a tag.
fn looks_like_tag(items: &[Value]) -> bool {
    tag_of(items).is_some()
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
