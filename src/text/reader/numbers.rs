//! Number text to numbers: JSON integers exactly (as `i64`, or `u64` above it), decimals
//! as the correctly rounded double; and what to say about a tagged double that does not read.

use super::cursor::Cursor;
use super::failure::{fail, Parsed};
use crate::error::ErrorKind;
use crate::hexfloat::HexFloatError;

/// A JSON number read as what it is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Number {
    Int(i64),
    UInt(u64),
    /// Typed with a fraction or an exponent.
    Double(f64),
}

impl Cursor<'_> {
    /// Reads a JSON number starting here.
    pub(crate) fn number_token(&mut self) -> Parsed<Number> {
        let start = self.pos;
        let is_double = self.scan_number()?;
        self.number_at(start, self.pos, is_double)
    }

    /// The integer of at most 18 digits that stands here, passed, when a byte that may
    /// follow a value follows it: most numbers of a save, read in one pass. `None`, with
    /// nothing read, for anything else, which [`Cursor::scan_number`] reads (its errors
    /// included).
    #[inline]
    pub(crate) fn short_int(&mut self) -> Option<i64> {
        const MOST: usize = 18;
        let negative = self.peek() == Some(b'-');
        let first = self.pos + usize::from(negative);
        let mut pos = first;
        let mut magnitude = 0u64;
        while let Some(&b) = self.bytes.get(pos) {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            // Wraps only past `MOST` digits, which are read again by the general path.
            magnitude = magnitude.wrapping_mul(10).wrapping_add(u64::from(digit));
            pos += 1;
        }
        let len = pos - first;
        let ends = matches!(
            self.bytes.get(pos),
            None | Some(b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t')
        );
        if len == 0 || len > MOST || (len > 1 && self.bytes[first] == b'0') || !ends {
            return None;
        }
        self.pos = pos;
        // Below 10^18, so it fits an i64 with either sign.
        let magnitude = magnitude as i64;
        Some(if negative { -magnitude } else { magnitude })
    }

    /// Moves past a JSON number, checking its syntax; returns whether it has a fraction or
    /// an exponent.
    #[inline]
    pub(crate) fn scan_number(&mut self) -> Parsed<bool> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'x' | b'X') = self.peek() {
                    return self.unquoted_hex(start);
                }
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

    /// The value of the JSON number `text[start..end]` that [`Cursor::scan_number`] checked.
    #[inline]
    pub(crate) fn number_at(&self, start: usize, end: usize, is_double: bool) -> Parsed<Number> {
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

    /// The error for a hexadecimal number typed as a JSON number (`0x1p+0` where
    /// `"0x1p+0"`, the string of a tagged double, was meant), at its start: what to write.
    #[cold]
    fn unquoted_hex<T>(&self, start: usize) -> Parsed<T> {
        let rest = &self.bytes[start..];
        let mut len = 0;
        while let Some(&b) = rest.get(len) {
            let sign_of_exponent =
                matches!(b, b'+' | b'-') && len > 0 && matches!(rest[len - 1], b'p' | b'P');
            let leading_sign = b == b'-' && len == 0;
            let part = b.is_ascii_hexdigit() || matches!(b, b'x' | b'X' | b'.' | b'p' | b'P');
            if !(part || sign_of_exponent || leading_sign) {
                break;
            }
            len += 1;
        }
        let text = &self.text[start..start + len];
        let message = if text.contains(['p', 'P']) {
            format!(
                "a hexfloat must be quoted: [\"d\", \"{text}\"] (JSON has no hexadecimal numbers)"
            )
        } else {
            format!(
                "JSON has no hexadecimal numbers: write the integer in decimal, or a double \
                 as a quoted hexfloat with its exponent, such as [\"d\", \"{text}p+0\"]"
            )
        };
        fail(ErrorKind::Syntax, start, message)
    }

    #[inline]
    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }
}

/// A JSON integer's value: `i64` when it fits, `u64` above that.
enum Integer {
    Signed(i64),
    Unsigned(u64),
}

/// The value of the text of a JSON integer, if it fits in 64 bits.
#[inline]
fn integer(text: &str) -> Option<Integer> {
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

/// The correctly rounded double of a JSON number's text at `offset`; one too large is
/// refused.
pub(super) fn decimal_double(text: &str, offset: usize) -> Parsed<f64> {
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

/// The message for `["d", hex]` whose string `hex` is not a hexadecimal float.
pub(super) fn double_error(hex: &str, e: &HexFloatError) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `text` read by [`Cursor::short_int`] and by the general path: the same integer and
    /// the same end when the short path reads it, nothing read when it does not.
    fn agree(text: &str) -> bool {
        let mut short = Cursor::new(text);
        let mut general = Cursor::new(text);
        let read = general.number_token();
        match short.short_int() {
            Some(i) => {
                assert!(matches!(read, Ok(Number::Int(j)) if j == i), "{text}: {i}");
                assert_eq!(short.pos, general.pos, "{text}");
                true
            }
            None => {
                assert_eq!(short.pos, 0, "{text}");
                false
            }
        }
    }

    #[test]
    fn short_integers_read_as_the_general_path_reads_them() {
        let digits = [
            "0",
            "7",
            "00",
            "01",
            "10",
            "999999999999999999",
            "1000000000000000000",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551616",
            "123456789012345678901234",
        ];
        let after = [
            "", ",", "]", "}", " ", "\n", "\r", "\t", ".5", "e3", "E3", "x1", "a", "\"", "/", "-",
        ];
        for digits in digits {
            for sign in ["", "-"] {
                for after in after {
                    agree(&format!("{sign}{digits}{after}"));
                }
            }
        }
        for text in ["", "-", "-,", "x", " 1"] {
            assert!(!agree(text), "{text}");
        }
        for text in ["0", "-0,", "999999999999999999]", "-123456789012345678\n"] {
            assert!(agree(text), "{text}");
        }
        for text in ["1000000000000000000", "1.0", "1e2", "01", "0x1", "12a"] {
            assert!(!agree(text), "{text}");
        }
    }

    proptest! {
        #[test]
        fn any_integer_reads_as_the_general_path_reads_it(
            i in any::<i64>(),
            after in prop::sample::select(vec!["", ",", "]", "}", " ", "\n", ".5", "e-3", "x"]),
        ) {
            agree(&format!("{i}{after}"));
        }
    }
}
