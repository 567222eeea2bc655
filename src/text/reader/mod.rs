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
///
/// `simdutf8` checks 32 or 64 bytes at a time where std goes byte by byte through text
/// that is not ASCII (15 % of a `Document` load of twitter.json, mostly Japanese); std
/// then finds where invalid text goes wrong, for the error.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Ok(text) = simdutf8::basic::from_utf8(bytes) {
        return Ok(text);
    }
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
                if let Some(d) = self.double_element() {
                    return Ok((self.builder.double(d), Shape::Double));
                }
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
        // `": "` in pretty text, `":"` in compact text, passed without a call.
        match self.cursor.bytes.get(self.cursor.pos..self.cursor.pos + 2) {
            Some(b": ") => self.cursor.pos += 2,
            Some([b':', _]) => self.cursor.pos += 1,
            _ => self.expect(b':', "':' after the key")?,
        }
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
            if let Some(d) = self.double_element() {
                let value = self.builder.double(d);
                push(&mut self.items, value);
                return Ok(Shape::Double);
            }
            return self.array(0);
        }
        let (value, shape) = self.value_shaped()?;
        push(&mut self.items, value);
        Ok(shape)
    }

    /// Reads an array starting at `[`, deciding at its end whether it is a tag, and pushes
    /// what it is onto `items`.
    ///
    /// Arrays whose first element is another array (`[[[...`) are opened in a loop rather
    /// than one call each, and closed in a loop once the innermost is read: an array whose
    /// first element is an array is never a tag, and its elements start where its first
    /// element's do (`base`), so each level keeps nothing but its depth. Deep chains of
    /// arrays cost a few steps a level rather than a call with its frame.
    fn array(&mut self, chain: EscapeChain) -> Parsed<Shape> {
        let base = self.items.len();
        // Arrays opened whose first element is the array opened after them.
        let mut opened = 0;
        let mut inner_chain = chain;
        let innermost = loop {
            if let Err(f) = self.enter() {
                return Err(at_first(f, opened));
            }
            self.cursor.pos += 1;
            // Only an array in an escape chain is ever asked whether it is escaped.
            if inner_chain > 0 {
                self.escaped[self.depth] = None;
            }
            // `[[`, the usual case in deep texts, is neither a double nor spaced.
            if self.peek() != Some(b'[') {
                if let Some(d) = self.tagged_double(inner_chain) {
                    self.depth -= 1;
                    let value = self.builder.double(d);
                    push(&mut self.items, value);
                    break Shape::Double;
                }
                self.builder.begin_array();
                self.skip_whitespace();
                if self.peek() != Some(b'[') {
                    match self.elements(base, inner_chain, false) {
                        Ok(shape) => break shape,
                        Err(f) => return Err(at_first(f, opened)),
                    }
                }
            } else {
                self.builder.begin_array();
            }
            opened += 1;
            inner_chain = 0;
        };
        let mut shape = innermost;
        while opened > 0 {
            // `]]]`: each array holds its first element alone, so none is a tag; they
            // close together.
            let closing = self.cursor.bytes[self.cursor.pos..]
                .iter()
                .take(opened)
                .take_while(|&&b| b == b']')
                .count();
            if closing > 0 {
                self.cursor.pos += closing;
                self.depth -= closing;
                opened -= closing;
                self.builder.arrays_of_one(&mut self.items, base, closing);
                shape = Shape::Array;
                continue;
            }
            opened -= 1;
            let chain = if opened == 0 { chain } else { 0 };
            shape = match self.elements(base, chain, true) {
                Ok(shape) => shape,
                Err(f) => return Err(at_first(f, opened)),
            };
        }
        Ok(shape)
    }

    /// Reads the elements of the array open innermost, which go to `items[base..]`, up to
    /// its closing bracket, and closes it. With `first_read` its first element, an array,
    /// is read already (so it is no tag), and what follows that element is next.
    #[inline(always)]
    fn elements(&mut self, base: usize, chain: EscapeChain, first_read: bool) -> Parsed<Shape> {
        let mut letter = None;
        let mut second = (Shape::Null, self.cursor.pos);
        let mut more = if first_read {
            self.after_element()?
        } else if self.peek() == Some(b']') {
            self.cursor.pos += 1;
            false
        } else {
            true
        };
        while more {
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
            more = self.after_element()?;
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
    #[inline(always)]
    fn tagged_double(&mut self, chain: EscapeChain) -> Option<f64> {
        let rest = &self.cursor.bytes[self.cursor.pos..];
        // `"d", "` (pretty) or `"d","` (compact); a compact one with less than a byte
        // after it holds no hexfloat.
        let opening = match rest.get(..6)? {
            [b'"', b'd', b'"', b',', b' ', b'"'] => 6,
            [b'"', b'd', b'"', b',', b'"', _] => 5,
            _ => return None,
        };
        let (d, len) = hexfloat::parse_canonical_prefix(&rest[opening..])?;
        let end = opening + len;
        if !rest[end..].starts_with(b"\"]") {
            return None;
        }
        let after = self.cursor.pos + end + 2;
        if self.is_escaped(after, chain, self.depth) {
            return None;
        }
        self.cursor.pos = after;
        Some(d)
    }

    /// Reads a JSON number: an exact integer, or a decimal with a fraction or exponent read
    /// as the correctly rounded double.
    fn number(&mut self) -> Parsed<(B::Value, Shape)> {
        if let Some(i) = self.cursor.short_int() {
            return Ok((self.builder.int(i), Shape::Int));
        }
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

    /// At `[` outside any escape: a canonical `["d", "<hex>"]` read whole, without the
    /// steps of opening and closing an array, or `None` with nothing read. Its array is one
    /// level deeper than the reader is, so it is left to [`Reader::array`] (and its
    /// error) when that is too deep.
    #[inline]
    fn double_element(&mut self) -> Option<f64> {
        if self.depth >= self.max_depth {
            return None;
        }
        self.canonical_double()
    }

    /// At `[`: a canonical `["d", "<hex>"]`, read whole, or `None` with nothing read.
    #[inline]
    pub(crate) fn canonical_double(&mut self) -> Option<f64> {
        let start = self.cursor.pos;
        self.cursor.pos += 1;
        let d = self.tagged_double(0);
        if d.is_none() {
            self.cursor.pos = start;
        }
        d
    }
}

/// A failure in the first element of `levels` arrays, each the first element of the one
/// before: its path from the outermost of them.
#[cold]
fn at_first(mut failure: Box<Failure>, levels: usize) -> Box<Failure> {
    for _ in 0..levels {
        failure = failure.inside(Segment::Index(0));
    }
    failure
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

#[cfg(test)]
mod tests {
    use crate::text::{from_slice, from_slice_with_max_depth, to_vec_compact, Document, Style};
    use crate::Value;

    /// Reads `text` with the tree and the borrowed document, which must agree: the compact
    /// canonical text, or the error's text.
    fn read(text: &str) -> Result<String, String> {
        let tree = from_slice(text.as_bytes())
            .map(|v| String::from_utf8(to_vec_compact(&v).unwrap()).unwrap())
            .map_err(|e| e.to_string());
        let doc = Document::parse(text.as_bytes())
            .map(|d| String::from_utf8(d.to_vec(Style::Compact).unwrap()).unwrap())
            .map_err(|e| e.to_string());
        assert_eq!(tree, doc, "{text}");
        tree.map(|t| t.trim_end().to_string())
    }

    #[test]
    fn texts_are_utf8_exactly_when_std_says_so_and_errors_point_at_the_same_byte() {
        let long = "Ünïcödé 日本語 ".repeat(20);
        let mut cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"\xEF\xBB\xBF{}".to_vec(),
            long.clone().into_bytes(),
            b"\xC0\x80".to_vec(),
            b"\xED\xA0\x80".to_vec(),
            b"\xF4\x90\x80\x80".to_vec(),
            b"\xE6\x97".to_vec(),
            b"\xFF".to_vec(),
        ];
        // Each bad sequence far into long text, and cut off at its end, where the SIMD
        // check looks at it in a block of its own.
        for bad in [
            &b"\xC0\x80"[..],
            b"\xED\xA0\x80",
            b"\xE6\x97",
            b"\x80",
            b"\xFF",
        ] {
            for at in [0, 7, 31, 64, 65, long.len()] {
                let Some(prefix) = long.get(..at) else {
                    continue;
                };
                let mut text = prefix.as_bytes().to_vec();
                text.extend_from_slice(bad);
                cases.push(text.clone());
                text.extend_from_slice(b" and more text after the bad bytes");
                cases.push(text);
            }
        }
        for text in cases {
            let bytes = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&text);
            match (super::utf8(&text), std::str::from_utf8(bytes)) {
                (Ok(ours), Ok(std)) => assert_eq!(ours, std),
                (Err(ours), Err(std)) => {
                    let at = crate::error::Location::of_offset(bytes, std.valid_up_to());
                    assert_eq!(
                        (ours.line(), ours.column()),
                        (Some(at.line), Some(at.column))
                    );
                    let byte = format!("(byte 0x{:02x})", bytes[std.valid_up_to()]);
                    assert!(ours.to_string().contains(&byte), "{ours}");
                }
                (ours, std) => panic!("{text:?}: {ours:?} against std's {std:?}"),
            }
        }
    }

    #[test]
    fn a_key_and_its_colon_read_however_they_are_spaced() {
        for text in [
            "{\"a\":1}",
            "{\"a\": 1}",
            "{\"a\" : 1}",
            "{\"a\"\n:\n1}",
            "{\"a\":\t1}",
            "{\"a\":  1}",
        ] {
            assert_eq!(read(text).as_deref(), Ok("{\"a\":1}"), "{text:?}");
        }
        let cases = [
            (
                "{\"a\" 1}",
                "line 1, column 6: expected ':' after the key, found '1'",
            ),
            (
                "{\"a\";1}",
                "line 1, column 5: expected ':' after the key, found ';'",
            ),
            (
                "{\"a\"",
                "line 1, column 5: expected ':' after the key, found the end of the text",
            ),
            (
                "{\"a\":",
                "line 1, column 6: at a: expected a value (object, array, string, number, true, false or null), found the end of the text",
            ),
            (
                "{\"a\": ",
                "line 1, column 7: at a: expected a value (object, array, string, number, true, false or null), found the end of the text",
            ),
            (
                "{\"a\":}",
                "line 1, column 6: at a: expected a value (object, array, string, number, true, false or null), found '}'",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(read(text), Err(message.to_string()), "{text:?}");
        }
    }

    #[test]
    fn runs_of_arrays_that_open_arrays_read_as_each_level_alone_would() {
        let cases = [
            ("[[[1]]]", "[[[1]]]"),
            ("[[[1], 2], 3]", "[[[1],2],3]"),
            ("[ [ [1] ] , [[]]]", "[[[1]],[[]]]"),
            ("[[[[]]]]", "[[[[]]]]"),
            ("[[[\"d\", \"0x1.8p+0\"]]]", "[[[\"d\",\"0x1.8p+0\"]]]"),
            (
                "[[[\"d\", 1.5]], [\"b\", \"A\"]]",
                "[[[\"d\",\"0x1.8p+0\"]],[\"b\",\"A\"]]",
            ),
            // An escape's content whose first element is an array: read literally, its
            // elements as usual.
            ("[\"a\", [[\"d\", \"0x1p+0\"]]]", "[[\"d\",\"0x1p+0\"]]"),
            ("[\"a\", [[\"a\", [\"x\", [1]]]]]", "[[\"a\",[\"x\",[1]]]]"),
            (
                "[\"a\", [[[\"d\", \"0x1p+0\"]], 2]]",
                "[[[\"d\",\"0x1p+0\"]],2]",
            ),
            (
                "[[\"a\", [\"d\", \"0x1p+0\"]]]",
                "[[\"a\",[\"d\",\"0x1p+0\"]]]",
            ),
        ];
        for (text, canonical) in cases {
            assert_eq!(read(text).as_deref(), Ok(canonical), "{text}");
        }
        let deep = format!("{}\"x\"{}", "[".repeat(512), "]".repeat(512));
        let mut value = from_slice(deep.as_bytes()).unwrap();
        for _ in 0..512 {
            let Value::Array(mut items) = value else {
                panic!("512 arrays")
            };
            assert_eq!(items.len(), 1);
            value = items.pop().unwrap();
        }
        assert_eq!(value, Value::String("x".into()));
    }

    #[test]
    fn errors_inside_runs_of_arrays_carry_the_path_to_them() {
        let cases = [
            (
                "[[[1,]]]",
                "line 1, column 6: at [0][0]: expected another value after ',' (JSON allows no trailing comma), found ']'",
            ),
            (
                "[[[1] 2]]",
                "line 1, column 7: at [0]: expected ',' or ']' after an array element, found '2'",
            ),
            (
                "[[[1]], 2 3]",
                "line 1, column 11: expected ',' or ']' after an array element, found '3'",
            ),
            (
                "[[[[\"d\", \"x\"]]]]",
                "line 1, column 10: at [0][0][0]: bad double [\"d\", \"x\"]: malformed hexadecimal float at character 1: expected '0x' (a valid spelling looks like 0x1.8p+3, -0x1p-4, inf or nan)",
            ),
            (
                "[[[1]], [[\"q\", [2]]]]",
                "line 1, column 16: at [1][0]: unknown tag \"q\": a two-element array of a single lowercase letter and an array or object is reserved for tags; to store this array as it is, write [\"a\", [\"q\", ...]]",
            ),
            ("[[[", "line 1, column 4: at [0][0][0]: expected a value (object, array, string, number, true, false or null), found the end of the text"),
        ];
        for (text, message) in cases {
            assert_eq!(read(text), Err(message.to_string()), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(513), "]".repeat(513));
        let err = read(&deep).unwrap_err();
        assert!(
            err.starts_with("line 1, column 513: at [0]")
                && err.ends_with("nested more than 512 arrays and objects deep"),
            "{err}"
        );
        let err = from_slice_with_max_depth(b"[[[[1]]]]", 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 1, column 4: at [0][0][0]: nested more than 3 arrays and objects deep"
        );
        let err = from_slice_with_max_depth(b"[1, [[[1]]]]", 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 1, column 7: at [1][0][0]: nested more than 3 arrays and objects deep"
        );
    }

    #[test]
    fn doubles_read_whole_are_read_as_the_general_path_reads_them() {
        // `0x1p+0` takes the fast path, `0x2p-1` (the same 1.0) the array's; as an
        // element, a member's value and a tag's content, at every depth around the limit.
        let spellings = ["\"0x1p+0\"", "\"0x2p-1\""];
        let holders = [
            ("[", "]", 1),
            ("[0, ", "]", 1),
            ("{\"k\": ", "}", 1),
            ("[\"a\", [", "]]", 2),
        ];
        for depth in 0..=6 {
            for (open, close, levels) in holders {
                let read_at = |spelling: &str, max: usize| {
                    let text = format!(
                        "{}[\"d\", {spelling}]{}",
                        open.repeat(depth),
                        close.repeat(depth)
                    );
                    from_slice_with_max_depth(text.as_bytes(), max)
                        .map(|v| to_vec_compact(&v).unwrap())
                        .map_err(|e| e.to_string())
                };
                for max in 1..=8 {
                    let general = read_at(spellings[1], max);
                    assert_eq!(read_at(spellings[0], max), general, "{open} {depth} {max}");
                    assert_eq!(
                        general.is_ok(),
                        depth * levels < max,
                        "{open} {depth} {max}"
                    );
                }
            }
        }
        assert_eq!(
            read("{\"k\": [\"d\", \"0x1p+0\"]}"),
            read("{\"k\": [\"d\", \"0x2p-1\"]}")
        );
        assert_eq!(
            read("[[\"d\", \"0x1p+0\"]]"),
            Ok("[[\"d\",\"0x1p+0\"]]".into())
        );
    }
}
