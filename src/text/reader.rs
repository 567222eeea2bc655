//! The reader: save text to what it holds, scanned once. It knows the whole format (strict
//! JSON, the tags, their escapes, hexfloats, the depth limit) and hands each value to a
//! [`Build`]er; errors carry the byte offset and the path inside the document.
//!
//! Tags are decided bottom-up, when an array closes: a two-element array whose first
//! element is a one-letter string is a tag (`tags::is_tag`). The content of an
//! `["a", [...]]` escape is the one array whose own tag must not be decoded; it is known
//! as such at its closing bracket, by the bracket that follows it, so no text is ever
//! scanned twice whatever the nesting.

use std::borrow::Cow;

use super::build::Build;
use super::scan::{spaces_at, string_run};
use super::tags::{self, Shape};
use super::{MAX_DEPTH, TAG_BYTES, TAG_DOUBLE, TAG_LITERAL};
use crate::error::{Error, ErrorKind, Location, Result};
use crate::hexfloat;
use crate::path::{Path, Segment};

/// An error while reading, before it is given a line and column. The path grows from the
/// inside out as the error unwinds through the values that contain it.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: ErrorKind,
    offset: usize,
    path: Path,
    message: String,
}

/// Failures travel boxed to keep results small on the hot path.
pub(crate) type Parsed<T> = std::result::Result<T, Box<Failure>>;

/// The offset of a failure not yet placed in the text (one a serde visitor made): the value
/// it is about places it as it unwinds.
const UNPLACED: usize = usize::MAX;

impl Failure {
    /// A failure about a value, placed by [`Failure::place`].
    pub(crate) fn about_value(message: impl Into<String>) -> Box<Failure> {
        Box::new(Failure {
            kind: ErrorKind::Value,
            offset: UNPLACED,
            path: Path::new(),
            message: message.into(),
        })
    }

    /// A failure of `kind` at `offset`.
    pub(crate) fn at(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Box<Failure> {
        Box::new(Failure {
            kind,
            offset,
            path: Path::new(),
            message: message.into(),
        })
    }

    /// Places a failure that is not placed yet at the value starting at `offset`.
    pub(crate) fn place(mut self: Box<Self>, offset: usize) -> Box<Failure> {
        if self.offset == UNPLACED {
            self.offset = offset;
        }
        self
    }

    /// Puts the failure one step deeper in the document.
    pub(crate) fn inside(mut self: Box<Self>, segment: Segment) -> Box<Failure> {
        self.path.push_front(segment);
        self
    }

    /// A failure inside a part of the document read as a tree, at `offset`: its path is
    /// relative to that part.
    pub(crate) fn from_tree(e: crate::serde::Error, offset: usize) -> Box<Failure> {
        Box::new(Failure {
            kind: ErrorKind::Value,
            offset,
            path: e.path().clone(),
            message: e.message().to_string(),
        })
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_root() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for Failure {}

/// A JSON number read as what it is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Number {
    Int(i64),
    UInt(u64),
    /// Typed with a fraction or an exponent.
    Double(f64),
}

pub(crate) fn fail<T>(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Parsed<T> {
    Err(Box::new(Failure {
        kind,
        offset,
        path: Path::new(),
        message: message.into(),
    }))
}

/// Puts a failure one step deeper in the document.
pub(crate) fn within<T>(result: Parsed<T>, segment: impl FnOnce() -> Segment) -> Parsed<T> {
    result.map_err(|mut f| {
        f.path.push_front(segment());
        f
    })
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

pub(crate) struct Reader<'a, B: Build<'a>> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
    pub(crate) builder: B,
    /// Offsets of the keys of the objects being read, innermost last, so a duplicate key
    /// can be reported where it stands.
    key_offsets: Vec<usize>,
    /// Elements of the arrays being read, innermost last: each array is allocated once, at
    /// its final size, by the builder.
    items: Vec<B::Value>,
    /// Members of the objects being read, innermost last.
    members: Vec<(B::Key, B::Value)>,
    /// By depth, whether the array open there is the content of an escape, once known
    /// (see [`Reader::is_escaped`]).
    escaped: Vec<Option<bool>>,
}

/// Each member's key, and the offset where its value starts.
pub(crate) type MemberOffsets = Vec<(String, usize)>;

/// The second element of an array that starts with `"d"` or `"b"`.
enum Second<'a, V> {
    /// A string that closes the array: the tag's content.
    Text(Cow<'a, str>),
    /// A number, at `text[start..end]`, that closes an array starting with `"d"`.
    Number(usize, usize),
    /// Anything else: an element like any other.
    Element((V, Shape)),
}

/// How many arrays up, counting this one, each stand as the second element of an array that
/// starts with the string "a": each may be the content of an escape, taken literally, if it
/// is the last element of its array too (0: an array anywhere else).
type EscapeChain = usize;

impl<'a, B: Build<'a>> Reader<'a, B> {
    pub(crate) fn new(text: &'a str, builder: B) -> Reader<'a, B> {
        Reader {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            depth: 0,
            builder,
            key_offsets: Vec::new(),
            items: Vec::new(),
            members: Vec::new(),
            escaped: vec![None; MAX_DEPTH + 2],
        }
    }

    /// Turns a failure into an [`Error`] with line and column.
    #[allow(clippy::boxed_local)]
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

    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    pub(crate) fn skip_whitespace(&mut self) {
        self.pos = skip_whitespace(self.bytes, self.pos);
    }

    /// A description of what stands at the current position, for "found ..." messages.
    fn found(&self) -> String {
        match self.text[self.pos..].chars().next() {
            None => "the end of the text".to_string(),
            Some(c) if c.is_control() => format!("{c:?}"),
            Some(c) => format!("'{c}'"),
        }
    }

    pub(crate) fn syntax<T>(&self, expected: &str) -> Parsed<T> {
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

    /// Reads one value, skipping whitespace before it.
    pub(crate) fn value(&mut self) -> Parsed<B::Value> {
        self.value_shaped().map(|(v, _)| v)
    }

    fn value_shaped(&mut self) -> Parsed<(B::Value, Shape)> {
        self.skip_whitespace();
        match self.peek() {
            Some(b'[') => self.array(0),
            Some(b'{') => Ok((self.object()?, Shape::Object)),
            Some(b'"') => {
                let s = self.string_text()?;
                let shape = match s.as_bytes() {
                    [letter @ b'a'..=b'z'] => Shape::Letter(*letter),
                    _ => Shape::String,
                };
                Ok((self.builder.string(s), shape))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Shape::Bool),
            Some(b'f') => self.literal("false", Shape::Bool),
            Some(b'n') => self.literal("null", Shape::Null),
            _ => self.syntax("a value (object, array, string, number, true, false or null)"),
        }
    }

    fn literal(&mut self, word: &str, shape: Shape) -> Parsed<(B::Value, Shape)> {
        if !self.bytes[self.pos..].starts_with(word.as_bytes()) {
            return self.syntax("a value (object, array, string, number, true, false or null)");
        }
        self.pos += word.len();
        let value = match shape {
            Shape::Null => self.builder.null(),
            _ => self.builder.bool(word == "true"),
        };
        Ok((value, shape))
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

    /// Reads an object starting at `{`.
    pub(crate) fn object(&mut self) -> Parsed<B::Value> {
        self.enter()?;
        self.pos += 1;
        self.builder.begin_object();
        let base = self.members.len();
        let first_key = self.key_offsets.len();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                let (at, text) = self.member_key(self.members.len() > base)?;
                self.key_offsets.push(at);
                // The key before its value: some builders make things in text order.
                let key = self.builder.key(text.clone());
                let value = match self.value() {
                    Ok(v) => v,
                    Err(mut f) => {
                        f.path.push_front(Segment::Key(text.into_owned()));
                        return Err(f);
                    }
                };
                let more = self.after_member(&text)?;
                self.members.push((key, value));
                if !more {
                    break;
                }
            }
        }
        self.depth -= 1;
        match self.builder.object(self.members.drain(base..)) {
            Ok(object) => {
                self.key_offsets.truncate(first_key);
                Ok(object)
            }
            Err((first, second)) => {
                let offsets = &self.key_offsets[first_key..];
                self.duplicate_key(offsets[first], offsets[second])
            }
        }
    }

    /// An object member's key and the `:` after it, whitespace first: where the key starts,
    /// and its text. `after_comma` says a `,` came before, so a `}` here is a trailing comma.
    pub(crate) fn member_key(&mut self, after_comma: bool) -> Parsed<(usize, Cow<'a, str>)> {
        self.skip_whitespace();
        if self.peek() != Some(b'"') {
            if after_comma && self.peek() == Some(b'}') {
                return self.syntax("another key after ',' (JSON allows no trailing comma)");
            }
            return self.syntax("a key in double quotes");
        }
        let at = self.pos;
        let text = self.string_text()?;
        self.expect(b':', "':' after the key")?;
        Ok((at, text))
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

    /// The error for a key that appears twice in an object: both keys are read again from
    /// the text at their offsets.
    fn duplicate_key<T>(&self, first: usize, second: usize) -> Parsed<T> {
        let key = read_key_at(self.text, second);
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

    /// Reads an object starting at `{` as [`Reader::object`] does, but lets `value` read
    /// each member's value (it is given the key, and must read exactly one value), and
    /// returns the object with the offset where each member's value starts: for readers
    /// that point errors at members, like a save's envelope. Meant for small objects.
    pub(crate) fn object_with(
        &mut self,
        mut value: impl FnMut(&mut Self, &str) -> Parsed<B::Value>,
    ) -> Parsed<(B::Value, MemberOffsets)> {
        self.enter()?;
        self.pos += 1;
        self.builder.begin_object();
        let base = self.members.len();
        let mut key_offsets = Vec::new();
        let mut value_offsets = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                let (at, text) = self.member_key(!key_offsets.is_empty())?;
                key_offsets.push(at);
                self.skip_whitespace();
                value_offsets.push((text.to_string(), self.pos));
                let key = self.builder.key(text.clone());
                let item = within(value(self, &text), || Segment::Key(text.to_string()))?;
                let more = self.after_member(&text)?;
                self.members.push((key, item));
                if !more {
                    break;
                }
            }
        }
        self.depth -= 1;
        match self.builder.object(self.members.drain(base..)) {
            Ok(object) => Ok((object, value_offsets)),
            Err((first, second)) => self.duplicate_key(key_offsets[first], key_offsets[second]),
        }
    }

    /// Whether the array at `depth`, which closed just before `after` and stands in an
    /// escape chain of `chain`, is the content of an `["a", ...]` escape, to be taken
    /// literally: its array closes right after it, and that array is itself a real escape,
    /// not the literal content of another. Each answer is kept until the array at that
    /// depth is done, so the brackets that follow are looked at once each.
    #[inline]
    fn is_escaped(&mut self, after: usize, chain: EscapeChain, depth: usize) -> bool {
        chain > 0 && self.is_escaped_in_chain(after, chain, depth)
    }

    fn is_escaped_in_chain(&mut self, after: usize, chain: EscapeChain, depth: usize) -> bool {
        if let Some(known) = self.escaped[depth] {
            return known;
        }
        let next = skip_whitespace(self.bytes, after);
        let escaped =
            self.bytes.get(next) == Some(&b']') && !self.is_escaped(next + 1, chain - 1, depth - 1);
        self.escaped[depth] = Some(escaped);
        escaped
    }

    /// Reads an array starting at `[`, deciding at its end whether it is a tag.
    fn array(&mut self, chain: EscapeChain) -> Parsed<(B::Value, Shape)> {
        self.enter()?;
        self.pos += 1;
        self.escaped[self.depth] = None;
        if let Some(d) = self.tagged_double(chain)? {
            self.depth -= 1;
            return Ok((self.builder.double(d), Shape::Double));
        }
        self.builder.begin_array();
        let base = self.items.len();
        let mut letter = None;
        let mut second = (Shape::Null, self.pos);
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
                let element = match (index, letter) {
                    (1, Some(l @ (TAG_DOUBLE | TAG_BYTES))) => {
                        second.1 = self.pos;
                        // `["d", x]` and `["b", x]` with a scalar x: decoded here, without
                        // building the array, when it ends after x. Errors in reading x
                        // are in x; errors in what it means are the tag's.
                        match within(self.scalar_tag(l, chain), || Segment::Index(1))? {
                            Second::Element(element) => element,
                            tagged => {
                                self.depth -= 1;
                                self.items.truncate(base);
                                self.builder.drop_array();
                                return self.decode_scalar_tag(l, second.1, tagged);
                            }
                        }
                    }
                    (1, Some(TAG_LITERAL)) if self.peek() == Some(b'[') => {
                        second.1 = self.pos;
                        within(self.array(chain + 1), || Segment::Index(1))?
                    }
                    (1, _) => {
                        second.1 = self.pos;
                        within(self.value_shaped(), || Segment::Index(1))?
                    }
                    (_, _) => within(self.value_shaped(), || Segment::Index(index))?,
                };
                match (index, element.1) {
                    (0, Shape::Letter(l)) => letter = Some(l),
                    (1, shape) => second.0 = shape,
                    _ => {}
                }
                self.items.push(element.0);
                if !self.after_element()? {
                    break;
                }
            }
        }
        self.depth -= 1;
        self.close_array(base, letter, second, chain)
    }

    /// After an array element: whether another follows (`,`) or the array ends (`]`).
    #[inline]
    fn after_element(&mut self) -> Parsed<bool> {
        self.skip_whitespace();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b']') => {
                self.pos += 1;
                Ok(false)
            }
            _ => self.syntax("',' or ']' after an array element"),
        }
    }

    /// The array whose elements stand at `items[base..]`, just closed: a tag if it is one
    /// (`letter` its first element's, `second` its second's shape and offset), unless it is
    /// the content of an escape.
    #[inline]
    fn close_array(
        &mut self,
        base: usize,
        letter: Option<u8>,
        second: (Shape, usize),
        chain: EscapeChain,
    ) -> Parsed<(B::Value, Shape)> {
        let count = self.items.len() - base;
        let tag = letter.filter(|&l| count == 2 && tags::is_tag(l, second.0));
        match tag {
            Some(_) if self.is_escaped(self.pos, chain, self.depth + 1) => {
                // The content of an escape: an array, whatever it looks like.
                Ok((self.builder.array(self.items.drain(base..)), Shape::Array))
            }
            Some(tag) => self.decode_tag(tag, base, second),
            None => Ok((self.builder.array(self.items.drain(base..)), Shape::Array)),
        }
    }

    /// The tag `tag` that the array whose two elements stand at `items[base..]` spells;
    /// `second` is the shape and offset of its content, for errors.
    fn decode_tag(
        &mut self,
        tag: u8,
        base: usize,
        second: (Shape, usize),
    ) -> Parsed<(B::Value, Shape)> {
        let (shape, offset) = second;
        let content = self.items.pop().expect("a tag has two elements");
        self.items.truncate(base);
        match (tag, shape) {
            (TAG_LITERAL, Shape::Array) => Ok((self.builder.unescape(content), Shape::Array)),
            (TAG_LITERAL, other) => fail(
                ErrorKind::Value,
                offset,
                format!("tag \"a\" expects an array, found {}", other.kind()),
            ),
            (super::TAG_KEYED | super::TAG_SHARED | super::TAG_REF | super::TAG_CLASS, Shape::Array) => {
                match self.builder.table(tag, content) {
                    Ok(table) => Ok((table, Shape::Table)),
                    Err(message) => fail(ErrorKind::Value, offset, message),
                }
            }
            (TAG_DOUBLE | TAG_BYTES, other) => {
                let expects = if tag == TAG_DOUBLE {
                    "a number or a hexadecimal float string such as \"0x1.8p+1\""
                } else {
                    "a string of characters U+0000 to U+00FF, one per byte"
                };
                // How the content was typed, up to the closing bracket, for the hint.
                let typed = self.text[offset..self.pos - 1].trim_end();
                let found = match other {
                    Shape::Double => "a tagged double",
                    Shape::Number => "a number",
                    Shape::Bytes => "a tagged byte string",
                    other => other.kind(),
                };
                fail(
                    ErrorKind::Value,
                    offset,
                    format!(
                        "tag \"{0}\" expects {expects}, found {found}; to store this array as \
                         it is, write [\"a\", [\"{0}\", {1}]]",
                        tag as char,
                        shortened(typed),
                    ),
                )
            }
            (_, _) => fail(
                ErrorKind::Value,
                offset,
                format!(
                    "unknown tag \"{0}\": a two-element array of a single lowercase letter and an array or object \
                     is reserved for tags; to store this array as it is, write [\"a\", [\"{0}\", ...]]",
                    tag as char
                ),
            ),
        }
    }

    /// The second element of an array that started with `"d"` or `"b"` (the letter `tag`).
    /// A string, or for `d` a number, that closes the array is the tag's content, returned
    /// as text to decode (and the array's closing bracket is passed); anything else is an
    /// element of a longer array.
    fn scalar_tag(&mut self, tag: u8, chain: EscapeChain) -> Parsed<Second<'a, B::Value>> {
        let start = self.pos;
        // Whether the array closes after the element that ends at `after`, as a tag.
        let closes = |this: &mut Self, after: usize| {
            let end = skip_whitespace(this.bytes, after);
            this.bytes.get(end) == Some(&b']') && !this.is_escaped(end + 1, chain, this.depth)
        };
        match self.peek() {
            Some(b'"') => {
                let s = self.string_text()?;
                if !closes(self, self.pos) {
                    return Ok(Second::Element(self.string_value(s)));
                }
                self.skip_whitespace();
                self.pos += 1;
                Ok(Second::Text(s))
            }
            Some(b'-' | b'0'..=b'9') if tag == TAG_DOUBLE => {
                let is_double = self.scan_number()?;
                let end = self.pos;
                if !closes(self, end) {
                    return Ok(Second::Element(self.number_value(start, end, is_double)?));
                }
                self.skip_whitespace();
                self.pos += 1;
                Ok(Second::Number(start, end))
            }
            _ => Ok(Second::Element(self.value_shaped()?)),
        }
    }

    /// The tag `["d", x]` or `["b", x]` whose content `x`, at `offset`, was typed as
    /// `second`: the double or byte string it spells.
    fn decode_scalar_tag(
        &mut self,
        tag: u8,
        offset: usize,
        second: Second<'a, B::Value>,
    ) -> Parsed<(B::Value, Shape)> {
        match second {
            Second::Text(s) if tag == TAG_DOUBLE => match hexfloat::parse(&s) {
                Ok(d) => Ok((self.builder.double(d), Shape::Double)),
                Err(e) => fail(ErrorKind::Value, offset, double_error(&s, &e)),
            },
            Second::Text(s) => match latin1(&s) {
                Ok(bytes) => Ok((self.builder.bytes(bytes), Shape::Bytes)),
                Err(c) => fail(
                    ErrorKind::Value,
                    offset,
                    format!(
                        "tag \"b\" expects a string of characters U+0000 to U+00FF, one per byte; found {c:?} (U+{:04X})",
                        u32::from(c)
                    ),
                ),
            },
            Second::Number(start, end) => {
                let d = decimal_double(&self.text[start..end], start)?;
                Ok((self.builder.double(d), Shape::Double))
            }
            Second::Element(element) => Ok(element),
        }
    }

    fn string_value(&mut self, s: Cow<'a, str>) -> (B::Value, Shape) {
        let shape = match s.as_bytes() {
            [letter @ b'a'..=b'z'] => Shape::Letter(*letter),
            _ => Shape::String,
        };
        (self.builder.string(s), shape)
    }

    /// The fast path for the most common tag, `["d", "<hex>"]` in canonical spelling, read
    /// without building the array. Returns `None`, with the position unchanged, for
    /// anything else (which the general path reads, errors included).
    #[inline]
    fn tagged_double(&mut self, chain: EscapeChain) -> Parsed<Option<f64>> {
        let rest = &self.bytes[self.pos..];
        const PRETTY: &[u8] = b"\"d\", \"";
        const COMPACT: &[u8] = b"\"d\",\"";
        let opening = if rest.starts_with(PRETTY) {
            PRETTY.len()
        } else if rest.starts_with(COMPACT) {
            COMPACT.len()
        } else {
            return Ok(None);
        };
        let Some((d, len)) = hexfloat::parse_canonical_prefix(&rest[opening..]) else {
            return Ok(None);
        };
        let end = opening + len;
        if !rest[end..].starts_with(b"\"]") {
            return Ok(None);
        }
        let after = self.pos + end + 2;
        if self.is_escaped(after, chain, self.depth) {
            return Ok(None);
        }
        self.pos = after;
        Ok(Some(d))
    }

    /// Reads a string starting at `"`: borrowed from the text when it has no escapes.
    pub(crate) fn string_text(&mut self) -> Parsed<Cow<'a, str>> {
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
            b'u' => self.unicode_escape(at)?,
            _ => {
                self.pos = at + 1;
                return self
                    .syntax("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX) after '\\'");
            }
        };
        out.push(c);
        Ok(())
    }

    /// The character of a `\u` escape (and of the low surrogate escape that must follow a
    /// high one) that started at `at`.
    fn unicode_escape(&mut self, at: usize) -> Parsed<char> {
        let high = self.hex4(at)?;
        if (0xDC00..0xE000).contains(&high) {
            return fail(
                ErrorKind::Syntax,
                at,
                "unpaired low surrogate escape; a string must be valid Unicode",
            );
        }
        if !(0xD800..0xDC00).contains(&high) {
            return Ok(char::from_u32(high).expect("a non-surrogate BMP code point is a scalar"));
        }
        if !self.bytes[self.pos..].starts_with(b"\\u") {
            return fail(ErrorKind::Syntax, at, "unpaired surrogate: a \\ud800-\\udbff escape must be followed by a \\udc00-\\udfff escape");
        }
        let second = self.pos;
        self.pos += 2;
        let low = self.hex4(second)?;
        if !(0xDC00..0xE000).contains(&low) {
            return fail(
                ErrorKind::Syntax,
                second,
                "expected a low surrogate (\\udc00 to \\udfff) after a high surrogate",
            );
        }
        let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
        Ok(char::from_u32(c).expect("a surrogate pair is a valid scalar"))
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

    /// Reads a JSON number: an exact integer, or a decimal with a fraction or exponent read
    /// as the correctly rounded double.
    fn number(&mut self) -> Parsed<(B::Value, Shape)> {
        let start = self.pos;
        let is_double = self.scan_number()?;
        self.number_value(start, self.pos, is_double)
    }

    /// Moves past a JSON number, checking its syntax; returns whether it has a fraction or
    /// an exponent.
    pub(crate) fn scan_number(&mut self) -> Parsed<bool> {
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

    /// The value of the JSON number `text[start..end]` that [`Reader::scan_number`] checked.
    fn number_value(
        &mut self,
        start: usize,
        end: usize,
        is_double: bool,
    ) -> Parsed<(B::Value, Shape)> {
        Ok(match self.number_at(start, end, is_double)? {
            Number::Int(i) => (self.builder.int(i), Shape::Int),
            Number::UInt(u) => (self.builder.uint(u), Shape::Int),
            Number::Double(d) => (self.builder.double(d), Shape::Number),
        })
    }

    /// Reads a JSON number starting here.
    pub(crate) fn number_token(&mut self) -> Parsed<Number> {
        let start = self.pos;
        let is_double = self.scan_number()?;
        self.number_at(start, self.pos, is_double)
    }

    fn number_at(&self, start: usize, end: usize, is_double: bool) -> Parsed<Number> {
        let text = &self.text[start..end];
        if is_double {
            return decimal_double(text, start).map(Number::Double);
        }
        match integer(text) {
            Some(Integer::Signed(i)) => Ok(Number::Int(i)),
            Some(Integer::Unsigned(u)) => Ok(Number::UInt(u)),
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

    /// Moves to `pos` (back to the start of a value, to read it again another way).
    pub(crate) fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// At `[`: a canonical `["d", "<hex>"]`, read whole, or `None` with nothing read.
    pub(crate) fn canonical_double(&mut self) -> Option<f64> {
        let start = self.pos;
        self.pos += 1;
        match self.tagged_double(0) {
            Ok(Some(d)) => Some(d),
            _ => {
                self.pos = start;
                None
            }
        }
    }

    /// Whether the text at the current position is a string of one lowercase letter: what
    /// starts a tag.
    pub(crate) fn at_letter(&self) -> bool {
        matches!(
            self.bytes.get(self.pos..self.pos + 3),
            Some([b'"', b'a'..=b'z', b'"'])
        )
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }
}

/// Where the whitespace that starts at `from` ends.
#[inline]
pub(crate) fn skip_whitespace(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(&b) = bytes.get(pos) {
        match b {
            b' ' | b'\t' | b'\r' => pos += 1,
            b'\n' => {
                // Indentation follows a newline: skip its spaces eight at a time.
                pos += 1;
                pos += spaces_at(bytes, pos);
            }
            _ => break,
        }
    }
    pos
}

/// A JSON integer's value: `i64` when it fits, `u64` above that.
pub(crate) enum Integer {
    Signed(i64),
    Unsigned(u64),
}

/// The value of the text of a JSON integer, if it fits in 64 bits.
pub(crate) fn integer(text: &str) -> Option<Integer> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    let magnitude = digits.parse::<u64>().ok()?;
    match (negative, i64::try_from(magnitude)) {
        (false, Ok(i)) => Some(Integer::Signed(i)),
        (false, Err(_)) => Some(Integer::Unsigned(magnitude)),
        (true, _) if magnitude <= 1 << 63 => {
            Some(Integer::Signed((magnitude as i64).wrapping_neg()))
        }
        (true, _) => None,
    }
}

/// The correctly rounded double of a JSON number's text; one too large is refused.
pub(crate) fn decimal_double(text: &str, offset: usize) -> Parsed<f64> {
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
    Ok(d)
}

pub(crate) fn double_error(hex: &str, e: &hexfloat::HexFloatError) -> String {
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

/// The bytes of a byte string's text, one character U+0000 to U+00FF per byte, or the
/// first character out of that range.
pub(crate) fn latin1(text: &str) -> std::result::Result<Vec<u8>, char> {
    let mut bytes = Vec::with_capacity(text.len());
    for c in text.chars() {
        bytes.push(u8::try_from(u32::from(c)).map_err(|_| c)?);
    }
    Ok(bytes)
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

/// The key of the object member at `offset` (its opening quote), read again from the
/// text for an error message.
fn read_key_at(text: &str, offset: usize) -> String {
    let mut reader = Reader::new(text, super::tree::Tree);
    reader.pos = offset;
    reader
        .string_text()
        .map(Cow::into_owned)
        .unwrap_or_default()
}
