//! String text to strings: borrowed from the text when there is no escape, unescaped
//! (surrogate pairs included) when there is; and a byte string's characters to its bytes.

use std::borrow::Cow;

use super::cursor::Cursor;
use super::failure::{fail, Parsed, NEVER_CLOSED};
use crate::error::ErrorKind;
use crate::text::scan::string_run;

const RUNS_TO_LINE_END: &str = "this string runs to the end of its line: is its closing '\"' \
     missing? (a line break inside a string is written \\n)";

impl<'a> Cursor<'a> {
    /// Reads a string starting at `"`: borrowed from the text when it has no escapes.
    /// Always inlined: left to the compiler it stays a call, 6-8 % of the instructions of
    /// a Document load of citm_catalog or twitter.
    #[inline(always)]
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
                self.string_slow(open, &mut out)?;
                Ok(Cow::Owned(out))
            }
            None => fail(ErrorKind::Syntax, open, NEVER_CLOSED),
        }
    }

    /// The rest of a string with escapes, from the first special byte on; the string's
    /// quote is at `open`, where a string that is never closed is wrong, escapes or not.
    fn string_slow(&mut self, open: usize, out: &mut String) -> Parsed<()> {
        loop {
            let Some(len) = string_run(self.bytes, self.pos) else {
                return fail(ErrorKind::Syntax, open, NEVER_CLOSED);
            };
            out.push_str(&self.text[self.pos..self.pos + len]);
            self.pos += len;
            match self.bytes[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => self.escape(out)?,
                // Most often a closing quote forgotten in a hand edit, not a line break
                // meant to be in the string.
                b'\n' | b'\r' => return fail(ErrorKind::Syntax, self.pos, RUNS_TO_LINE_END),
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
}

/// The string (an object's key) whose opening quote is at `offset` in `text`, read again
/// for an error message.
pub(super) fn string_at(text: &str, offset: usize) -> String {
    let mut cursor = Cursor::new(text);
    cursor.pos = offset;
    cursor
        .string_text()
        .map(Cow::into_owned)
        .unwrap_or_default()
}

/// The bytes of a byte string's text, one character U+0000 to U+00FF per byte, or the
/// first character out of that range.
pub(super) fn latin1(text: &str) -> std::result::Result<Vec<u8>, char> {
    let mut bytes = Vec::with_capacity(text.len());
    for c in text.chars() {
        bytes.push(u8::try_from(u32::from(c)).map_err(|_| c)?);
    }
    Ok(bytes)
}
