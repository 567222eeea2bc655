//! A place in the text and what stands there: whitespace, punctuation, the end, and the
//! syntax error that says what was expected and what was found instead. Strings and
//! numbers are read from a cursor too (`strings.rs`, `numbers.rs`).

use super::failure::{fail, Parsed};
use crate::error::ErrorKind;
use crate::text::scan::spaces_at;

/// Where reading stands in a text.
pub(crate) struct Cursor<'a> {
    pub(super) text: &'a str,
    /// `text` as bytes, which is how nearly everything looks at it.
    pub(super) bytes: &'a [u8],
    /// The offset of the next byte to read.
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    /// The byte here, if the text goes on.
    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    pub(crate) fn skip_whitespace(&mut self) {
        self.pos = skip_whitespace(self.bytes, self.pos);
    }

    /// A description of what stands here, for "found ..." messages.
    fn found(&self) -> String {
        match self.text[self.pos..].chars().next() {
            None => "the end of the text".to_string(),
            Some(c) if c.is_control() => format!("{c:?}"),
            Some(c) => format!("'{c}'"),
        }
    }

    /// The syntax error for a text that has something else here than `expected`, with a
    /// hint for what people coming from other formats type.
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

    /// Checks that nothing but whitespace follows.
    pub(crate) fn end(&mut self) -> Parsed<()> {
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            return self.syntax("the end of the text after the document");
        }
        Ok(())
    }

    /// Moves past `byte`, whitespace first; `expected` names it for the error.
    pub(crate) fn expect(&mut self, byte: u8, expected: &str) -> Parsed<()> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            self.syntax(expected)
        }
    }

    /// Whether a string of one lowercase letter stands here: what starts a tag.
    pub(crate) fn at_letter(&self) -> bool {
        matches!(
            self.bytes.get(self.pos..self.pos + 3),
            Some([b'"', b'a'..=b'z', b'"'])
        )
    }
}

/// Where the whitespace that starts at `pos` ends.
#[inline(always)]
pub(crate) fn skip_whitespace(bytes: &[u8], mut pos: usize) -> usize {
    loop {
        match bytes.get(pos) {
            // Whitespace is at most ' ': one comparison for what most often stands here,
            // a value or punctuation.
            Some(&b) if b > b' ' => return pos,
            Some(b' ' | b'\t' | b'\r') => pos += 1,
            Some(b'\n') => {
                // Indentation follows a newline: skip its spaces many at a time.
                pos += 1;
                pos += spaces_at(bytes, pos);
            }
            _ => return pos,
        }
    }
}
