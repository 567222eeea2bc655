//! The reader: save text to what it holds, scanned once. It knows the whole format (strict
//! JSON, the tags, their escapes, hexfloats, the depth limit) and hands each value to a
//! [`Build`]er; errors carry the byte offset and the path inside the document.
//!
//! This file reads the structure (values, arrays, objects, tags); what stands at a place in
//! the text is read by a [`Cursor`] (`cursor.rs`), strings by `strings.rs`, numbers by
//! `numbers.rs`, and what goes wrong is a [`Failure`] (`failure.rs`).
//!
//! Tags are decided bottom-up, when an array closes: a two-element array whose first
//! element is a one-letter string is a tag (`tags::is_tag`). The content of an
//! `["a", [...]]` escape is the one array whose own tag must not be decoded; it is known
//! as such at its closing bracket, by the bracket that follows it, so no text is ever
//! scanned twice whatever the nesting.

mod cursor;
mod failure;
mod numbers;
mod strings;

use std::borrow::Cow;

use self::cursor::{skip_whitespace, Cursor};
use self::numbers::{decimal_double, double_error};
use self::strings::{latin1, string_at};
use super::build::Build;
use super::tags::{
    self, Shape, TAG_BYTES, TAG_CLASS, TAG_DOUBLE, TAG_KEYED, TAG_LITERAL, TAG_REF, TAG_SHARED,
};
use super::MAX_DEPTH;
use crate::error::{Error, ErrorKind, Location, Result};
use crate::hexfloat;
use crate::path::Segment;

use self::failure::{fail, within};

pub(crate) use self::failure::{Failure, Parsed};
pub(crate) use self::numbers::Number;

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

/// Reads a text from its start, handing each value it finds to the builder `B`.
pub(crate) struct Reader<'a, B: Build<'a>> {
    cursor: Cursor<'a>,
    depth: usize,
    /// The deepest nesting read: [`MAX_DEPTH`], or less as a caller asks
    /// ([`Reader::with_max_depth`]).
    max_depth: usize,
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
            cursor: Cursor::new(text),
            depth: 0,
            max_depth: MAX_DEPTH,
            builder,
            key_offsets: Vec::new(),
            items: Vec::new(),
            members: Vec::new(),
            escaped: vec![None; MAX_DEPTH + 2],
        }
    }

    /// Refuses nesting deeper than `max_depth` (at most [`MAX_DEPTH`], which the format
    /// never exceeds) as it refuses nesting deeper than [`MAX_DEPTH`].
    pub(crate) fn with_max_depth(mut self, max_depth: usize) -> Reader<'a, B> {
        self.max_depth = max_depth.min(MAX_DEPTH);
        self
    }

    /// Turns a failure into an [`Error`] with line and column.
    #[allow(clippy::boxed_local)]
    pub(crate) fn error(&self, failure: Box<Failure>) -> Error {
        failure.into_error(self.cursor.bytes)
    }

    // What the cursor reads, for those that read some values themselves (a save's
    // envelope, the serde deserializer over text) and for the reader's own use.

    pub(crate) fn pos(&self) -> usize {
        self.cursor.pos
    }

    /// Moves to `pos` (back to the start of a value, to read it again another way).
    pub(crate) fn seek(&mut self, pos: usize) {
        self.cursor.pos = pos;
    }

    pub(crate) fn text(&self) -> &'a str {
        self.cursor.text
    }

    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.cursor.peek()
    }

    #[inline]
    pub(crate) fn skip_whitespace(&mut self) {
        self.cursor.skip_whitespace();
    }

    pub(crate) fn syntax<T>(&self, expected: &str) -> Parsed<T> {
        self.cursor.syntax(expected)
    }

    /// Checks that nothing but whitespace follows the document.
    pub(crate) fn end(&mut self) -> Parsed<()> {
        self.cursor.end()
    }

    pub(crate) fn expect(&mut self, byte: u8, expected: &str) -> Parsed<()> {
        self.cursor.expect(byte, expected)
    }

    /// Reads a string starting at `"`: borrowed from the text when it has no escapes.
    #[inline]
    pub(crate) fn string_text(&mut self) -> Parsed<Cow<'a, str>> {
        self.cursor.string_text()
    }

    /// Reads a JSON number starting here.
    pub(crate) fn number_token(&mut self) -> Parsed<Number> {
        self.cursor.number_token()
    }

    /// Whether the text here is a string of one lowercase letter: what starts a tag.
    pub(crate) fn at_letter(&self) -> bool {
        self.cursor.at_letter()
    }

    /// Reads one value, skipping whitespace before it.
    pub(crate) fn value(&mut self) -> Parsed<B::Value> {
        self.value_shaped().map(|(v, _)| v)
    }

    fn value_shaped(&mut self) -> Parsed<(B::Value, Shape)> {
        self.skip_whitespace();
        match self.peek() {
            Some(b'[') => {
                let shape = self.array(0)?;
                let value = self.items.pop().expect("an array leaves its value");
                Ok((value, shape))
            }
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
        if !self.cursor.bytes[self.cursor.pos..].starts_with(word.as_bytes()) {
            return self.syntax("a value (object, array, string, number, true, false or null)");
        }
        self.cursor.pos += word.len();
        let value = match shape {
            Shape::Null => self.builder.null(),
            _ => self.builder.bool(word == "true"),
        };
        Ok((value, shape))
    }

    #[inline]
    fn enter(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return fail(
                ErrorKind::Value,
                self.cursor.pos,
                format!(
                    "nested more than {} arrays and objects deep",
                    self.max_depth
                ),
            );
        }
        Ok(())
    }

    /// Reads an object starting at `{`.
    pub(crate) fn object(&mut self) -> Parsed<B::Value> {
        self.enter()?;
        self.cursor.pos += 1;
        self.builder.begin_object();
        let base = self.members.len();
        let first_key = self.key_offsets.len();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.cursor.pos += 1;
        } else {
            loop {
                let (at, text) = self.member_key(self.members.len() > base)?;
                self.key_offsets.push(at);
                // The key before its value: some builders make things in text order.
                let key = self.builder.key(text.clone());
                let value = match self.value() {
                    Ok(v) => v,
                    Err(f) => return Err(f.inside(Segment::Key(text.into_owned()))),
                };
                let more = self.after_member(&text)?;
                self.members.push((key, value));
                if !more {
                    break;
                }
            }
        }
        self.depth -= 1;
        match self.builder.object_of(&mut self.members, base) {
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
        let at = self.cursor.pos;
        let text = self.string_text()?;
        self.expect(b':', "':' after the key")?;
        Ok((at, text))
    }

    /// After an object member: whether another follows (`,`) or the object ends (`}`).
    fn after_member(&mut self, key: &str) -> Parsed<bool> {
        self.skip_whitespace();
        match self.peek() {
            Some(b',') => {
                self.cursor.pos += 1;
                Ok(true)
            }
            Some(b'}') => {
                self.cursor.pos += 1;
                Ok(false)
            }
            _ => self.syntax(&format!("',' or '}}' after the member {key:?}")),
        }
    }

    /// The error for a key that appears twice in an object: both keys are read again from
    /// the text at their offsets.
    fn duplicate_key<T>(&self, first: usize, second: usize) -> Parsed<T> {
        let key = string_at(self.cursor.text, second);
        let earlier = Location::of_offset(self.cursor.bytes, first);
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
        self.cursor.pos += 1;
        self.builder.begin_object();
        let base = self.members.len();
        let mut key_offsets = Vec::new();
        let mut value_offsets = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.cursor.pos += 1;
        } else {
            loop {
                let (at, text) = self.member_key(!key_offsets.is_empty())?;
                key_offsets.push(at);
                self.skip_whitespace();
                value_offsets.push((text.to_string(), self.cursor.pos));
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
        match self.builder.object_of(&mut self.members, base) {
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
        let next = skip_whitespace(self.cursor.bytes, after);
        let escaped = self.cursor.bytes.get(next) == Some(&b']')
            && !self.is_escaped(next + 1, chain - 1, depth - 1);
        self.escaped[depth] = Some(escaped);
        escaped
    }

    /// Reads one element of an array, skipping whitespace before it, and pushes it onto
    /// `items`: arrays push their own value, so that nested arrays are not moved from
    /// one return to the next (most of what one level of the deep texts cost besides its
    /// allocation).
    #[inline]
    fn element(&mut self) -> Parsed<Shape> {
        self.skip_whitespace();
        if self.peek() == Some(b'[') {
            return self.array(0);
        }
        let (value, shape) = self.value_shaped()?;
        push(&mut self.items, value);
        Ok(shape)
    }

    /// Reads an array starting at `[`, deciding at its end whether it is a tag, and pushes
    /// what it is onto `items`.
    fn array(&mut self, chain: EscapeChain) -> Parsed<Shape> {
        self.enter()?;
        self.cursor.pos += 1;
        self.escaped[self.depth] = None;
        if let Some(d) = self.tagged_double(chain)? {
            self.depth -= 1;
            let value = self.builder.double(d);
            push(&mut self.items, value);
            return Ok(Shape::Double);
        }
        self.builder.begin_array();
        let base = self.items.len();
        let mut letter = None;
        let mut second = (Shape::Null, self.cursor.pos);
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.cursor.pos += 1;
        } else {
            loop {
                self.skip_whitespace();
                let index = self.items.len() - base;
                if self.peek() == Some(b']') && index > 0 {
                    return self.syntax("another value after ',' (JSON allows no trailing comma)");
                }
                let shape = match (index, letter) {
                    (1, Some(l @ (TAG_DOUBLE | TAG_BYTES))) => {
                        second.1 = self.cursor.pos;
                        // `["d", x]` and `["b", x]` with a scalar x: decoded here, without
                        // building the array, when it ends after x. Errors in reading x
                        // are in x; errors in what it means are the tag's.
                        match within(self.scalar_tag(l, chain), || Segment::Index(1))? {
                            Second::Element((value, shape)) => {
                                push(&mut self.items, value);
                                shape
                            }
                            tagged => {
                                self.depth -= 1;
                                self.items.truncate(base);
                                self.builder.drop_array();
                                let (value, shape) = self.decode_scalar_tag(l, second.1, tagged)?;
                                push(&mut self.items, value);
                                return Ok(shape);
                            }
                        }
                    }
                    (1, Some(TAG_LITERAL)) if self.peek() == Some(b'[') => {
                        second.1 = self.cursor.pos;
                        within(self.array(chain + 1), || Segment::Index(1))?
                    }
                    (1, _) => {
                        second.1 = self.cursor.pos;
                        within(self.element(), || Segment::Index(1))?
                    }
                    (_, _) => within(self.element(), || Segment::Index(index))?,
                };
                match (index, shape) {
                    (0, Shape::Letter(l)) => letter = Some(l),
                    (1, shape) => second.0 = shape,
                    _ => {}
                }
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
                self.cursor.pos += 1;
                Ok(true)
            }
            Some(b']') => {
                self.cursor.pos += 1;
                Ok(false)
            }
            _ => self.syntax("',' or ']' after an array element"),
        }
    }

    /// The array whose elements stand at `items[base..]`, just closed: a tag if it is one
    /// (`letter` its first element's, `second` its second's shape and offset), unless it is
    /// the content of an escape. What it is takes the elements' place in `items`.
    #[inline]
    fn close_array(
        &mut self,
        base: usize,
        letter: Option<u8>,
        second: (Shape, usize),
        chain: EscapeChain,
    ) -> Parsed<Shape> {
        let count = self.items.len() - base;
        let tag = letter.filter(|&l| count == 2 && tags::is_tag(l, second.0));
        match tag {
            Some(tag) if !self.is_escaped(self.cursor.pos, chain, self.depth + 1) => {
                let (value, shape) = self.decode_tag(tag, base, second)?;
                push(&mut self.items, value);
                Ok(shape)
            }
            // An array, or the content of an escape: an array, whatever it looks like.
            _ => {
                let value = self.builder.array_of(&mut self.items, base);
                push(&mut self.items, value);
                Ok(Shape::Array)
            }
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
            (TAG_KEYED | TAG_SHARED | TAG_REF | TAG_CLASS, Shape::Array) => {
                match self.builder.table(tag, content, offset) {
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
                let typed = self.cursor.text[offset..self.cursor.pos - 1].trim_end();
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
        let start = self.cursor.pos;
        // Whether the array closes after the element that ends at `after`, as a tag.
        let closes = |this: &mut Self, after: usize| {
            let end = skip_whitespace(this.cursor.bytes, after);
            this.cursor.bytes.get(end) == Some(&b']')
                && !this.is_escaped(end + 1, chain, this.depth)
        };
        match self.peek() {
            Some(b'"') => {
                let s = self.string_text()?;
                if !closes(self, self.cursor.pos) {
                    return Ok(Second::Element(self.string_value(s)));
                }
                self.skip_whitespace();
                self.cursor.pos += 1;
                Ok(Second::Text(s))
            }
            Some(b'-' | b'0'..=b'9') if tag == TAG_DOUBLE => {
                let is_double = self.cursor.scan_number()?;
                let end = self.cursor.pos;
                if !closes(self, end) {
                    return Ok(Second::Element(self.number_value(start, end, is_double)?));
                }
                self.skip_whitespace();
                self.cursor.pos += 1;
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
                let d = decimal_double(&self.cursor.text[start..end], start)?;
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
        let rest = &self.cursor.bytes[self.cursor.pos..];
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
        let after = self.cursor.pos + end + 2;
        if self.is_escaped(after, chain, self.depth) {
            return Ok(None);
        }
        self.cursor.pos = after;
        Ok(Some(d))
    }

    /// Reads a JSON number: an exact integer, or a decimal with a fraction or exponent read
    /// as the correctly rounded double.
    fn number(&mut self) -> Parsed<(B::Value, Shape)> {
        let start = self.cursor.pos;
        let is_double = self.cursor.scan_number()?;
        self.number_value(start, self.cursor.pos, is_double)
    }

    /// The value of the JSON number `text[start..end]` that [`Cursor::scan_number`] checked.
    fn number_value(
        &mut self,
        start: usize,
        end: usize,
        is_double: bool,
    ) -> Parsed<(B::Value, Shape)> {
        Ok(match self.cursor.number_at(start, end, is_double)? {
            Number::Int(i) => (self.builder.int(i), Shape::Int),
            Number::UInt(u) => (self.builder.uint(u), Shape::Int),
            Number::Double(d) => (self.builder.double(d), Shape::Number),
        })
    }

    /// At `[`: a canonical `["d", "<hex>"]`, read whole, or `None` with nothing read.
    pub(crate) fn canonical_double(&mut self) -> Option<f64> {
        let start = self.cursor.pos;
        self.cursor.pos += 1;
        match self.tagged_double(0) {
            Ok(Some(d)) => Some(d),
            _ => {
                self.cursor.pos = start;
                None
            }
        }
    }
}

/// Pushes `value` onto `items` with the vector's growth out of line: the common push then
/// has no call between making the value and storing it, so it is stored straight into
/// its slot rather than first into a temporary on the stack (whose copy, in wider loads than
/// the stores that wrote it, stalled each array's close).
#[inline(always)]
fn push<V>(items: &mut Vec<V>, value: V) {
    if items.len() < items.capacity() {
        items.push(value);
    } else {
        push_growing(items, value);
    }
}

#[cold]
#[inline(never)]
fn push_growing<V>(items: &mut Vec<V>, value: V) {
    items.push(value);
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
