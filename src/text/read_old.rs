//! The reader: strict JSON text to [`Value`], decoding tags, with errors located by line,
// The reader this replaced, kept as it was for the differential tests and the fuzz
// target until the new one has run long enough against it.
#![allow(dead_code)]
//! column and document path.

use std::borrow::Cow;

use crate::error::{Error, ErrorKind, Location, Result};
use crate::hexfloat;
use crate::path::{Path, Segment};
use crate::text::scan::{spaces_at, string_run};
use crate::text::{
    MAX_DEPTH, TAG_BYTES, TAG_CLASS, TAG_DOUBLE, TAG_KEYED, TAG_LITERAL, TAG_REF, TAG_SHARED,
};
use crate::value::{Key, Map, Table, Value};

/// Parses a whole JSON text into a value (no save envelope required).
pub fn from_slice(bytes: &[u8]) -> Result<Value> {
    let text = utf8(bytes)?;
    let mut parser = Parser::new(text);
    let value = parser.value().map_err(|e| parser.error(e))?;
    parser.end().map_err(|e| parser.error(e))?;
    Ok(value)
}

/// Parses a whole JSON text into a value (no save envelope required).
pub fn from_str(text: &str) -> Result<Value> {
    from_slice(text.as_bytes())
}

/// Checks the text is UTF-8, and drops a leading byte order mark (which some editors add).
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        Error::new(
            ErrorKind::Syntax,
            format!(
                "invalid UTF-8 (byte 0x{:02x}); a save must be UTF-8 text",
                bytes[at]
            ),
        )
        .at(Location::of_offset(bytes, at))
    })
}

/// An error while parsing, before it is given a line and column. The path grows from the
/// inside out as the error unwinds through the values that contain it.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: ErrorKind,
    offset: usize,
    path: Path,
    message: String,
}

pub(crate) type Parsed<T> = std::result::Result<T, Box<Failure>>;

fn fail<T>(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Parsed<T> {
    Err(Box::new(Failure {
        kind,
        offset,
        path: Path::new(),
        message: message.into(),
    }))
}

fn within<T>(result: Parsed<T>, segment: impl FnOnce() -> Segment) -> Parsed<T> {
    result.map_err(|mut f| {
        f.path.push_front(segment());
        f
    })
}

pub(crate) struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
    /// Offsets of the keys of the objects being parsed, innermost last, so a duplicate key
    /// can be reported where it stands without a position per map entry.
    key_offsets: Vec<usize>,
    /// Elements of the arrays being parsed, innermost last.
    items: Vec<Value>,
    /// Members of the objects being parsed, innermost last.
    entries: Vec<(Key, Value)>,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str) -> Parser<'a> {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
            key_offsets: Vec::new(),
            items: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Turns a failure into an [`Error`] with line and column.
    #[allow(clippy::boxed_local)] // Failures travel boxed to keep `Parsed` results small.
    pub(crate) fn error(&self, failure: Box<Failure>) -> Error {
        let Failure {
            kind,
            offset,
            path,
            message,
        } = *failure;
        Error::new(kind, message)
            .at(Location::of_offset(self.bytes, offset))
            .in_path(path)
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    pub(crate) fn skip_whitespace(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' => {
                    // Indentation follows a newline: skip its spaces eight at a time.
                    self.pos += 1;
                    self.pos += spaces_at(self.bytes, self.pos);
                }
                _ => break,
            }
        }
    }

    /// A description of what stands at the current position, for "found ..." messages.
    fn found(&self) -> String {
        match self.text[self.pos..].chars().next() {
            None => "the end of the text".to_string(),
            Some(c) if c.is_control() => format!("{c:?}"),
            Some(c) => format!("'{c}'"),
        }
    }

    fn syntax<T>(&self, expected: &str) -> Parsed<T> {
        let hint = match self.peek() {
            Some(b'/') => " (JSON has no comments)",
            Some(b'N' | b'I') => {
                " (a NaN or infinity is written as [\"d\", \"nan\"] or [\"d\", \"inf\"])"
            }
            Some(b'\'') => " (JSON strings use double quotes)",
            _ => "",
        };
        fail(
            ErrorKind::Syntax,
            self.pos,
            format!("expected {expected}, found {}{hint}", self.found()),
        )
    }

    /// Checks that nothing but whitespace follows the document.
    pub(crate) fn end(&mut self) -> Parsed<()> {
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            return self.syntax("the end of the text after the document");
        }
        Ok(())
    }

    pub(crate) fn expect(&mut self, byte: u8, expected: &str) -> Parsed<()> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            self.syntax(expected)
        }
    }

    /// Parses one value, skipping whitespace before it.
    pub(crate) fn value(&mut self) -> Parsed<Value> {
        self.skip_whitespace();
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(false),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            _ => self.syntax("a value (object, array, string, number, true, false or null)"),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Parsed<Value> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            self.syntax("a value (object, array, string, number, true, false or null)")
        }
    }

    #[inline]
    fn enter(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return fail(
                ErrorKind::Value,
                self.pos,
                format!("nested more than {MAX_DEPTH} arrays and objects deep"),
            );
        }
        Ok(())
    }

    /// Parses an object starting at `{`.
    pub(crate) fn object(&mut self) -> Parsed<Value> {
        self.enter()?;
        self.pos += 1;
        // Members gather on a stack shared by all objects, as array elements do.
        let base = self.entries.len();
        let first_key = self.key_offsets.len();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    if self.peek() == Some(b'}') && self.entries.len() > base {
                        return self
                            .syntax("another key after ',' (JSON allows no trailing comma)");
                    }
                    return self.syntax("a key in double quotes");
                }
                self.key_offsets.push(self.pos);
                let key = self.key()?;
                self.expect(b':', "':' after the key")?;
                let value = match self.value() {
                    Ok(v) => v,
                    Err(mut f) => {
                        f.path.push_front(Segment::Key(key.to_string()));
                        return Err(f);
                    }
                };
                let more = self.after_member(&key)?;
                self.entries.push((key, value));
                if !more {
                    break;
                }
            }
        }
        self.depth -= 1;
        let entries: Vec<(Key, Value)> = self.entries.drain(base..).collect();
        match Map::from_entries(entries) {
            Ok(map) => {
                self.key_offsets.truncate(first_key);
                Ok(Value::Object(map))
            }
            Err((key, first, second)) => {
                let offsets = &self.key_offsets[first_key..];
                self.duplicate_key(&key, offsets[first], offsets[second])
            }
        }
    }

    /// After an object member: whether another follows (`,`) or the object ends (`}`).
    fn after_member(&mut self, key: &str) -> Parsed<bool> {
        self.skip_whitespace();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b'}') => {
                self.pos += 1;
                Ok(false)
            }
            _ => self.syntax(&format!("',' or '}}' after the member {key:?}")),
        }
    }

    fn duplicate_key<T>(&self, key: &str, first: usize, second: usize) -> Parsed<T> {
        let earlier = Location::of_offset(self.bytes, first);
        fail(
            ErrorKind::Value,
            second,
            format!(
                "duplicate key {key:?} (first at line {}, column {}); each key may appear once",
                earlier.line, earlier.column
            ),
        )
    }

    /// Parses an object starting at `{` as [`Parser::object`] does, but lets `value` parse
    /// each member's value (it is given the key, and must parse exactly one value), and
    /// returns the object with the offset where each member's value starts: for readers
    /// that point errors at members, like a save's envelope. Meant for small objects.
    pub(crate) fn object_with(
        &mut self,
        mut value: impl FnMut(&mut Self, &str) -> Parsed<Value>,
    ) -> Parsed<(Map, Vec<(Key, usize)>)> {
        self.enter()?;
        self.pos += 1;
        let mut entries: Vec<(Key, Value)> = Vec::new();
        let mut key_offsets = Vec::new();
        let mut value_offsets = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    if self.peek() == Some(b'}') && !entries.is_empty() {
                        return self
                            .syntax("another key after ',' (JSON allows no trailing comma)");
                    }
                    return self.syntax("a key in double quotes");
                }
                key_offsets.push(self.pos);
                let key = self.key()?;
                self.expect(b':', "':' after the key")?;
                self.skip_whitespace();
                value_offsets.push((key.clone(), self.pos));
                let item = within(value(self, &key), || Segment::Key(key.to_string()))?;
                let more = self.after_member(&key)?;
                entries.push((key, item));
                if !more {
                    break;
                }
            }
        }
        self.depth -= 1;
        match Map::from_entries(entries) {
            Ok(map) => Ok((map, value_offsets)),
            Err((key, first, second)) => {
                self.duplicate_key(&key, key_offsets[first], key_offsets[second])
            }
        }
    }

    /// Parses an array starting at `[`, decoding a tag unless `literal` (the content of an
    /// `["a", [...]]` escape, which is an array whatever it looks like).
    fn array(&mut self, literal: bool) -> Parsed<Value> {
        self.enter()?;
        self.pos += 1;
        if !literal {
            if let Some(d) = self.tagged_double()? {
                self.depth -= 1;
                return Ok(d);
            }
        }
        // Elements gather on a stack shared by all arrays, so each array is allocated once,
        // at its final size.
        let base = self.items.len();
        let mut second_offset = self.pos;
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                let index = self.items.len() - base;
                if self.peek() == Some(b']') && index > 0 {
                    return self.syntax("another value after ',' (JSON allows no trailing comma)");
                }
                if index == 1 {
                    second_offset = self.pos;
                }
                // The second element of an `["a", ...]` escape is a literal array.
                let escaped = !literal
                    && index == 1
                    && matches!(&self.items[base], Value::String(s) if s.as_bytes() == [TAG_LITERAL])
                    && self.peek() == Some(b'[')
                    && self.is_last_element();
                let item = if escaped {
                    self.array(true)
                } else if !literal
                    && index == 1
                    && matches!(self.peek(), Some(b'-' | b'0'..=b'9'))
                    && matches!(&self.items[base], Value::String(s) if s.as_bytes() == [TAG_DOUBLE])
                {
                    // `["d", <number>]`: a double typed as a JSON number, if the array ends
                    // after it; otherwise an ordinary element of a longer array.
                    let start = self.pos;
                    let is_double = within(self.scan_number(), || Segment::Index(index))?;
                    let end = self.pos;
                    self.skip_whitespace();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        self.depth -= 1;
                        self.items.truncate(base);
                        return decimal_double(&self.text[start..end], start);
                    }
                    self.number_value(start, end, is_double)
                } else if self.peek() == Some(b'[') {
                    // Arrays of arrays (positions, tagged doubles) are the common case.
                    self.array(false)
                } else {
                    self.value()
                };
                let item = within(item, || Segment::Index(index))?;
                self.items.push(item);
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return self.syntax("',' or ']' after an array element"),
                }
            }
        }
        self.depth -= 1;
        let items: Vec<Value> = self.items.drain(base..).collect();
        if literal {
            return Ok(Value::Array(items));
        }
        // How the second element was typed, for hints: the text up to the closing bracket.
        decode_tag(
            items,
            second_offset,
            &self.text[second_offset..self.pos - 1],
        )
    }

    /// Whether the array element starting here is the last one of its array. Scans ahead
    /// without building anything; only asked for arrays that start like an `"a"` escape.
    /// Escapes nested in escapes scan their text again, so the worst case is bounded by
    /// `MAX_DEPTH / 2` scans of the document, never more.
    fn is_last_element(&self) -> bool {
        let mut pos = self.pos;
        let mut depth = 0usize;
        while let Some(&b) = self.bytes.get(pos) {
            match b {
                b'"' => {
                    pos += 1;
                    loop {
                        match self.bytes.get(pos) {
                            None => return false,
                            Some(b'\\') => pos += 2,
                            Some(b'"') => break,
                            Some(_) => pos += 1,
                        }
                    }
                }
                b'[' | b'{' => depth += 1,
                b']' | b'}' if depth > 0 => depth -= 1,
                b']' => return true,
                b',' | b'}' if depth == 0 => return false,
                _ => {}
            }
            pos += 1;
        }
        false
    }

    /// The fast path for the most common tag, `["d", "<hex>"]`, read without building the
    /// array. Returns `None`, with the position unchanged, for anything else.
    fn tagged_double(&mut self) -> Parsed<Option<Value>> {
        let start = self.pos;
        // The exact canonical spellings, pretty and compact, first.
        let rest = &self.bytes[start..];
        const PRETTY: &[u8] = b"\"d\", \"";
        const COMPACT: &[u8] = b"\"d\",\"";
        let opening = if rest.starts_with(PRETTY) {
            PRETTY.len()
        } else if rest.starts_with(COMPACT) {
            COMPACT.len()
        } else {
            0
        };
        if opening > 0 {
            if let Some((d, len)) = hexfloat::parse_canonical_prefix(&rest[opening..]) {
                if rest[opening + len..].starts_with(b"\"]") {
                    self.pos = start + opening + len + 2;
                    return Ok(Some(Value::Double(d)));
                }
            }
        }
        self.skip_whitespace();
        if !self.bytes[self.pos..].starts_with(b"\"d\"") {
            self.pos = start;
            return Ok(None);
        }
        self.pos += 3;
        self.skip_whitespace();
        if self.peek() != Some(b',') {
            self.pos = start;
            return Ok(None);
        }
        self.pos += 1;
        self.skip_whitespace();
        if self.peek() != Some(b'"') {
            self.pos = start;
            return Ok(None);
        }
        let hex_start = self.pos + 1;
        let (double, hex_end) = match hexfloat::parse_canonical_prefix(&self.bytes[hex_start..]) {
            Some((d, len)) if self.bytes.get(hex_start + len) == Some(&b'"') => {
                (Some(d), hex_start + len)
            }
            // Not canonical: find the end of the string and let the full parser decide.
            _ => match string_run(self.bytes, hex_start) {
                Some(len) if self.bytes[hex_start + len] == b'"' => (None, hex_start + len),
                _ => {
                    self.pos = start;
                    return Ok(None);
                }
            },
        };
        self.pos = hex_end + 1;
        self.skip_whitespace();
        if self.peek() != Some(b']') {
            // A longer array that merely starts like a double: not a tag.
            self.pos = start;
            return Ok(None);
        }
        self.pos += 1;
        if let Some(d) = double {
            return Ok(Some(Value::Double(d)));
        }
        let hex = &self.text[hex_start..hex_end];
        match hexfloat::parse(hex) {
            Ok(d) => Ok(Some(Value::Double(d))),
            Err(e) => fail(ErrorKind::Value, hex_start - 1, double_error(hex, &e)),
        }
    }

    /// Parses an object key starting at `"`: short keys, nearly all of them, are stored
    /// inline without a heap allocation.
    fn key(&mut self) -> Parsed<Key> {
        Ok(match self.string_text()? {
            Cow::Borrowed(text) => Key::new(text),
            Cow::Owned(text) => Key::from(text),
        })
    }

    /// Parses a string starting at `"`.
    pub(crate) fn string(&mut self) -> Parsed<String> {
        self.string_text().map(Cow::into_owned)
    }

    /// Parses a string starting at `"`: borrowed from the text when it has no escapes.
    fn string_text(&mut self) -> Parsed<Cow<'a, str>> {
        let open = self.pos;
        self.pos += 1;
        let start = self.pos;
        match string_run(self.bytes, start) {
            Some(len) if self.bytes[start + len] == b'"' => {
                self.pos = start + len + 1;
                Ok(Cow::Borrowed(&self.text[start..start + len]))
            }
            Some(len) => {
                self.pos = start + len;
                let mut out = self.text[start..start + len].to_owned();
                self.string_slow(&mut out)?;
                Ok(Cow::Owned(out))
            }
            None => fail(
                ErrorKind::Syntax,
                open,
                "this string is never closed (expected a '\"' before the end of the text)",
            ),
        }
    }

    /// The rest of a string with escapes, from the first special byte on.
    fn string_slow(&mut self, out: &mut String) -> Parsed<()> {
        loop {
            let Some(len) = string_run(self.bytes, self.pos) else {
                return fail(
                    ErrorKind::Syntax,
                    self.pos,
                    "this string is never closed (expected a '\"' before the end of the text)",
                );
            };
            out.push_str(&self.text[self.pos..self.pos + len]);
            self.pos += len;
            match self.bytes[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => self.escape(out)?,
                control => {
                    return fail(
                        ErrorKind::Syntax,
                        self.pos,
                        format!(
                            "control character U+{control:04X} inside a string; write it as an escape such as \\n or \\u{control:04x}"
                        ),
                    )
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Parsed<()> {
        let at = self.pos;
        let Some(&kind) = self.bytes.get(self.pos + 1) else {
            return fail(
                ErrorKind::Syntax,
                at,
                "unfinished escape at the end of the text",
            );
        };
        self.pos += 2;
        let c = match kind {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4(at)?;
                if (0xD800..0xDC00).contains(&high) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    if self.bytes[self.pos..].starts_with(b"\\u") {
                        let second = self.pos;
                        self.pos += 2;
                        let low = self.hex4(second)?;
                        if (0xDC00..0xE000).contains(&low) {
                            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                            char::from_u32(c).expect("a surrogate pair is a valid scalar")
                        } else {
                            return fail(ErrorKind::Syntax, second, "expected a low surrogate (\\udc00 to \\udfff) after a high surrogate");
                        }
                    } else {
                        return fail(ErrorKind::Syntax, at, "unpaired surrogate: a \\ud800-\\udbff escape must be followed by a \\udc00-\\udfff escape");
                    }
                } else if (0xDC00..0xE000).contains(&high) {
                    return fail(
                        ErrorKind::Syntax,
                        at,
                        "unpaired low surrogate escape; a string must be valid Unicode",
                    );
                } else {
                    char::from_u32(high).expect("a non-surrogate BMP code point is a valid scalar")
                }
            }
            _ => {
                self.pos = at + 1;
                return self
                    .syntax("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX) after '\\'");
            }
        };
        out.push(c);
        Ok(())
    }

    /// Four hex digits of a `\u` escape that started at `at`.
    fn hex4(&mut self, at: usize) -> Parsed<u32> {
        let digits = self.bytes.get(self.pos..self.pos + 4);
        let value = digits.and_then(|d| {
            d.iter()
                .try_fold(0u32, |acc, &b| Some(acc * 16 + (b as char).to_digit(16)?))
        });
        match value {
            Some(v) => {
                self.pos += 4;
                Ok(v)
            }
            None => fail(
                ErrorKind::Syntax,
                at,
                "expected four hexadecimal digits after \\u",
            ),
        }
    }

    /// Parses a JSON number: an exact integer, or a decimal with a fraction or exponent read
    /// as the correctly rounded double.
    fn number(&mut self) -> Parsed<Value> {
        let start = self.pos;
        let is_double = self.scan_number()?;
        self.number_value(start, self.pos, is_double)
    }

    /// Moves past a JSON number, checking its syntax; returns whether it has a fraction or an
    /// exponent.
    fn scan_number(&mut self) -> Parsed<bool> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return fail(
                        ErrorKind::Syntax,
                        start,
                        "a number may not start with 0 followed by more digits",
                    );
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return self.syntax("a digit after '-'"),
        }
        let mut is_double = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return self.syntax("a digit after the decimal point");
            }
            self.digits();
            is_double = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return self.syntax("a digit in the exponent");
            }
            self.digits();
            is_double = true;
        }
        Ok(is_double)
    }

    /// The value of the JSON number `text[start..end]` that [`Parser::scan_number`] checked:
    /// a double when it has a fraction or an exponent, otherwise an exact integer.
    fn number_value(&self, start: usize, end: usize, is_double: bool) -> Parsed<Value> {
        let text = &self.text[start..end];
        if is_double {
            return decimal_double(text, start);
        }
        let (negative, digits) = match text.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, text),
        };
        let magnitude = digits.parse::<u64>().ok();
        let value = match (negative, magnitude) {
            (false, Some(m)) => Some(Value::from(m)),
            (true, Some(m)) if m <= 1 << 63 => Some(Value::Int((m as i64).wrapping_neg())),
            _ => None,
        };
        match value {
            Some(v) => Ok(v),
            None => fail(
                ErrorKind::Value,
                start,
                format!(
                    "the integer {text} is out of range; integers must fit in 64 bits \
                     (-9223372036854775808 to 18446744073709551615), or write a double such as 1e30"
                ),
            ),
        }
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }
}

/// The correctly rounded double of the JSON number `text` (an integer too, as in
/// `["d", 100]`, and `-0` is -0.0), which stands at `offset`. A number too large for a
/// double is refused rather than read as infinity, as hexadecimal spellings are; one too
/// small becomes zero, as rounding says.
fn decimal_double(text: &str, offset: usize) -> Parsed<Value> {
    let d: f64 = text.parse().expect("a JSON number is a valid Rust float");
    if d.is_infinite() {
        let inf = if d < 0.0 { "-inf" } else { "inf" };
        let shown = if text.len() <= 40 {
            text.to_string()
        } else {
            format!("{}... ({} characters)", &text[..24], text.len())
        };
        return fail(
            ErrorKind::Value,
            offset,
            format!(
                "the number {shown} is too large for a double (the largest is about 1.8e308); \
                 if infinity is meant, write [\"d\", \"{inf}\"]"
            ),
        );
    }
    Ok(Value::Double(d))
}

fn double_error(hex: &str, e: &hexfloat::HexFloatError) -> String {
    // A decimal typed inside the quotes: the number goes without them.
    let decimal = hex.trim();
    if !decimal.is_empty() && decimal.parse::<f64>().is_ok_and(f64::is_finite) {
        return format!(
            "bad double [\"d\", {hex:?}]: a decimal number is written without quotes, \
             [\"d\", {decimal}]; in quotes the format wants a hexadecimal float such as \"0x1.8p+1\""
        );
    }
    format!("bad double [\"d\", {hex:?}]: {e}")
}

/// Which tag an array spells, if any: two elements, the first a single lowercase letter,
/// and the second, for `d` and `b`, anything at all (a string is a double or a byte string,
/// a number typed into `d` is a double, anything else is a mistake the reader reports), and
/// for the other letters something written in brackets or braces (an array, an object, or a
/// tagged value). `a` is defined; the other letters are reserved for later versions of the
/// format.
///
/// The reader decodes exactly these arrays as tags, and the writer escapes every literal
/// array of this shape as `["a", [...]]`, so the rule lives here alone.
pub(crate) fn tag_of(items: &[Value]) -> Option<u8> {
    match items {
        [first, second] => tag_of_pair(first, second),
        _ => None,
    }
}

/// [`tag_of`] for the two elements of an array.
pub(crate) fn tag_of_pair(first: &Value, second: &Value) -> Option<u8> {
    let Value::String(name) = first else {
        return None;
    };
    match (name.as_bytes(), second) {
        ([t @ (TAG_DOUBLE | TAG_BYTES)], _) => Some(*t),
        (
            [t @ b'a'..=b'z'],
            Value::Array(_)
            | Value::Object(_)
            | Value::Double(_)
            | Value::Bytes(_)
            | Value::Table(_),
        ) => Some(*t),
        _ => None,
    }
}

/// Turns a parsed array into the value its tag spells, if it is a tag; `second_offset`
/// locates the tag's content for errors, and `second_text` is how it was typed (up to the
/// closing bracket).
fn decode_tag(mut items: Vec<Value>, second_offset: usize, second_text: &str) -> Parsed<Value> {
    let Some(tag) = tag_of(&items) else {
        return Ok(Value::Array(items));
    };
    let content = items.pop().expect("a tag has two elements");
    match (tag, content) {
        (TAG_DOUBLE, Value::String(hex)) => match hexfloat::parse(&hex) {
            Ok(d) => Ok(Value::Double(d)),
            Err(e) => fail(ErrorKind::Value, second_offset, double_error(&hex, &e)),
        },
        (TAG_BYTES, Value::String(latin1)) => {
            let mut bytes = Vec::with_capacity(latin1.len());
            for c in latin1.chars() {
                match u8::try_from(u32::from(c)) {
                    Ok(b) => bytes.push(b),
                    Err(_) => {
                        return fail(
                            ErrorKind::Value,
                            second_offset,
                            format!(
                                "tag \"b\" expects a string of characters U+0000 to U+00FF, one per byte; found {c:?} (U+{:04X})",
                                u32::from(c)
                            ),
                        )
                    }
                }
            }
            Ok(Value::Bytes(bytes))
        }
        (TAG_LITERAL, Value::Array(items)) => Ok(Value::Array(items)),
        (TAG_LITERAL, other) => fail(
            ErrorKind::Value,
            second_offset,
            format!("tag \"a\" expects an array, found {}", other.kind()),
        ),
        (TAG_KEYED | TAG_SHARED | TAG_REF | TAG_CLASS, Value::Array(items)) => {
            match Table::from_tag(tag, items) {
                Ok(table) => Ok(Value::Table(Box::new(table))),
                Err(message) => fail(ErrorKind::Value, second_offset, message),
            }
        }
        (TAG_DOUBLE | TAG_BYTES, other) => {
            let expects = if tag == TAG_DOUBLE {
                "a number or a hexadecimal float string such as \"0x1.8p+1\""
            } else {
                "a string of characters U+0000 to U+00FF, one per byte"
            };
            fail(
                ErrorKind::Value,
                second_offset,
                format!(
                    "tag \"{0}\" expects {expects}, found {1}; to store this array as it is, \
                     write [\"a\", [\"{0}\", {2}]]",
                    tag as char,
                    typed_kind(&other, second_text),
                    shortened(second_text.trim_end()),
                ),
            )
        }
        (_, _) => fail(
            ErrorKind::Value,
            second_offset,
            format!(
                "unknown tag \"{0}\": a two-element array of a single lowercase letter and an array or object \
                 is reserved for tags; to store this array as it is, write [\"a\", [\"{0}\", ...]]",
                tag as char
            ),
        ),
    }
}

/// What a tag's content is, for messages, given how it was typed: a double or a byte string
/// there is a tag, or a number typed as it is.
fn typed_kind(content: &Value, typed: &str) -> &'static str {
    match content {
        Value::Double(_) if typed.starts_with('[') => "a tagged double",
        Value::Double(_) => "a number",
        Value::Bytes(_) => "a tagged byte string",
        other => other.kind(),
    }
}

/// Text as it was typed, for a message: itself when short and on one line, otherwise `[...]`,
/// `{...}` or `...`.
fn shortened(text: &str) -> &str {
    const SHORT: usize = 40;
    if text.len() <= SHORT && !text.contains(['\n', '\r']) {
        text
    } else if text.starts_with('[') {
        "[...]"
    } else if text.starts_with('{') {
        "{...}"
    } else {
        "..."
    }
}
