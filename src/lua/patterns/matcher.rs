//! The backtracking matcher of Lua patterns over bytes: items, classes, sets, captures and
//! back-references, tried in the order Lua's C matcher tries them. A subject and a pattern go
//! in; where a match ends and its captures come out, each step charged to a [`Meter`].

use mlua::{Lua, Value};

use super::meter::{raise, Fail, Meter};

/// Lua's LUA_MAXCAPTURES.
const MAX_CAPTURES: usize = 32;
/// Lua's MAXCCALLS: how deeply a match may nest before "pattern too complex".
const MAX_DEPTH: u32 = 200;

/// How far a capture has got.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CapLen {
    /// Opened but not yet closed.
    Open,
    /// A position capture, `()`.
    Position,
    /// Closed, this many bytes long.
    Len(usize),
}

/// A capture of the match in progress.
#[derive(Clone, Copy)]
struct Capture {
    start: usize,
    len: CapLen,
}

/// A capture's value.
pub(super) enum Cap {
    /// Bytes `start..end` of the subject.
    Text(usize, usize),
    /// A position, from 1.
    Position(usize),
}

/// What is left after matching one pattern item.
enum Then {
    /// Matching goes on at subject position `.0` with the item at `.1`.
    Continue(usize, usize),
    /// The item matched the rest of the pattern itself: the match ends there, or fails.
    Done(Option<usize>),
}

/// A backtracking matcher over bytes, in the order Lua's matcher tries alternatives.
pub(super) struct Matcher<'a> {
    /// The subject.
    pub(super) src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    captures: [Capture; MAX_CAPTURES],
    depth: u32,
    meter: &'a mut Meter,
}

impl<'a> Matcher<'a> {
    /// A matcher of `pat` (without its `^` anchor) in `src`, charging `meter`.
    pub(super) fn new(src: &'a [u8], pat: &'a [u8], meter: &'a mut Meter) -> Matcher<'a> {
        Matcher {
            src,
            pat,
            level: 0,
            captures: [Capture {
                start: 0,
                len: CapLen::Open,
            }; MAX_CAPTURES],
            depth: MAX_DEPTH,
            meter,
        }
    }

    /// Matches the whole pattern at `s`, afresh; returns where the match ends.
    pub(super) fn match_at(&mut self, s: usize) -> Result<Option<usize>, Fail> {
        self.level = 0;
        self.depth = MAX_DEPTH;
        self.do_match(s, 0)
    }

    /// The pattern byte at `p`, or 0 past its end, where Lua reads the terminating NUL.
    #[inline]
    fn pat_at(&self, p: usize) -> u8 {
        self.pat.get(p).copied().unwrap_or(0)
    }

    #[inline]
    fn src_at(&self, s: usize) -> u8 {
        self.src.get(s).copied().unwrap_or(0)
    }

    fn do_match(&mut self, s: usize, p: usize) -> Result<Option<usize>, Fail> {
        if self.depth == 0 {
            return Err(raise("pattern too complex"));
        }
        self.depth -= 1;
        self.meter.charge(1)?;
        let result = self.match_items(s, p);
        self.depth += 1;
        result
    }

    /// Matches pattern items from `p` on; loops where a recursive call would be a tail call.
    fn match_items(&mut self, mut s: usize, mut p: usize) -> Result<Option<usize>, Fail> {
        loop {
            if p == self.pat.len() {
                return Ok(Some(s));
            }
            let then = match self.pat[p] {
                b'(' if self.pat_at(p + 1) == b')' => {
                    Then::Done(self.start_capture(s, p + 2, CapLen::Position)?)
                }
                b'(' => Then::Done(self.start_capture(s, p + 1, CapLen::Open)?),
                b')' => Then::Done(self.end_capture(s, p + 1)?),
                b'$' if p + 1 == self.pat.len() => Then::Done((s == self.src.len()).then_some(s)),
                b'%' => match self.pat_at(p + 1) {
                    b'b' => self.balance_item(s, p)?,
                    b'f' => self.frontier_item(s, p)?,
                    d if d.is_ascii_digit() => self.back_reference_item(s, p)?,
                    _ => self.single_item(s, p)?,
                },
                _ => self.single_item(s, p)?,
            };
            match then {
                Then::Continue(next_s, next_p) => (s, p) = (next_s, next_p),
                Then::Done(end) => return Ok(end),
            }
        }
    }

    /// `%bxy` at `p`.
    fn balance_item(&mut self, s: usize, p: usize) -> Result<Then, Fail> {
        Ok(match self.match_balance(s, p + 2)? {
            Some(end) => Then::Continue(end, p + 4),
            None => Then::Done(None),
        })
    }

    /// `%f[set]` at `p`: matches no text, only a border where the byte before is not in the
    /// set and the byte at `s` is.
    fn frontier_item(&mut self, s: usize, p: usize) -> Result<Then, Fail> {
        let p = p + 2;
        if self.pat_at(p) != b'[' {
            return Err(raise("missing '[' after '%f' in pattern"));
        }
        let ep = self.class_end(p)?;
        let previous = if s == 0 { 0 } else { self.src[s - 1] };
        // At the end of the subject Lua reads the terminating NUL.
        let current = self.src_at(s);
        self.meter.charge(1 + (ep - p) as u64 / 8)?;
        Ok(
            if !self.in_set(previous, p, ep - 1) && self.in_set(current, p, ep - 1) {
                Then::Continue(s, ep)
            } else {
                Then::Done(None)
            },
        )
    }

    /// A back-reference `%0`..`%9` at `p`.
    fn back_reference_item(&mut self, s: usize, p: usize) -> Result<Then, Fail> {
        Ok(match self.match_capture(s, self.pat[p + 1])? {
            Some(end) => Then::Continue(end, p + 2),
            None => Then::Done(None),
        })
    }

    /// A single-character class at `p`, possibly with a quantifier.
    fn single_item(&mut self, s: usize, p: usize) -> Result<Then, Fail> {
        let ep = self.class_end(p)?;
        let quantifier = self.pat_at(ep);
        if !self.single_match(s, p, ep)? {
            // Zero repetitions are fine for these.
            return Ok(if matches!(quantifier, b'*' | b'?' | b'-') {
                Then::Continue(s, ep + 1)
            } else {
                Then::Done(None)
            });
        }
        Ok(match quantifier {
            b'?' => match self.do_match(s + 1, ep + 1)? {
                Some(end) => Then::Done(Some(end)),
                None => Then::Continue(s, ep + 1),
            },
            b'+' => Then::Done(self.max_expand(s + 1, p, ep)?),
            b'*' => Then::Done(self.max_expand(s, p, ep)?),
            b'-' => Then::Done(self.min_expand(s, p, ep)?),
            _ => Then::Continue(s + 1, ep),
        })
    }

    fn start_capture(&mut self, s: usize, p: usize, len: CapLen) -> Result<Option<usize>, Fail> {
        if self.level >= MAX_CAPTURES {
            return Err(raise("too many captures"));
        }
        self.captures[self.level] = Capture { start: s, len };
        self.level += 1;
        let result = self.do_match(s, p)?;
        if result.is_none() {
            self.level -= 1;
        }
        Ok(result)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Result<Option<usize>, Fail> {
        let Some(l) = (0..self.level)
            .rev()
            .find(|&l| self.captures[l].len == CapLen::Open)
        else {
            return Err(raise("invalid pattern capture"));
        };
        self.captures[l].len = CapLen::Len(s - self.captures[l].start);
        let result = self.do_match(s, p)?;
        if result.is_none() {
            self.captures[l].len = CapLen::Open;
        }
        Ok(result)
    }

    /// A back-reference `%1`..`%9` (and the invalid `%0`).
    fn match_capture(&mut self, s: usize, digit: u8) -> Result<Option<usize>, Fail> {
        let l = i32::from(digit) - i32::from(b'1');
        if l < 0 || l as usize >= self.level || self.captures[l as usize].len == CapLen::Open {
            return Err(raise(format!("invalid capture index %{}", l + 1)));
        }
        let capture = self.captures[l as usize];
        let CapLen::Len(len) = capture.len else {
            // A position capture never matches text.
            return Ok(None);
        };
        self.meter.charge(1 + len as u64 / 16)?;
        let matches = self.src.len() - s >= len
            && self.src[capture.start..capture.start + len] == self.src[s..s + len];
        Ok(matches.then_some(s + len))
    }

    /// `%bxy` with `p` at `x`.
    fn match_balance(&mut self, s: usize, p: usize) -> Result<Option<usize>, Fail> {
        if p + 1 >= self.pat.len() {
            return Err(raise("malformed pattern (missing arguments to '%b')"));
        }
        self.meter.charge(1)?;
        if self.src_at(s) != self.pat[p] {
            return Ok(None);
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        let mut depth = 1;
        for i in s + 1..self.src.len() {
            self.meter.charge(1)?;
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
        }
        Ok(None)
    }

    /// Where the single-character class at `p` ends.
    fn class_end(&mut self, p: usize) -> Result<usize, Fail> {
        let start = p;
        let mut p = p;
        let c = self.pat[p];
        p += 1;
        match c {
            b'%' => {
                if p >= self.pat.len() {
                    return Err(raise("malformed pattern (ends with '%')"));
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.pat_at(p) == b'^' {
                    p += 1;
                }
                // The first byte of a set is never its end, so `[]]` is the set of ']'.
                loop {
                    if p >= self.pat.len() {
                        return Err(raise("malformed pattern (missing ']')"));
                    }
                    let c = self.pat[p];
                    p += 1;
                    if c == b'%' && p < self.pat.len() {
                        p += 1;
                    }
                    if self.pat_at(p) == b']' {
                        // Scanning a long set is work too.
                        self.meter.charge((p - start) as u64 / 16)?;
                        return Ok(p + 1);
                    }
                }
            }
            _ => Ok(p),
        }
    }

    /// Whether the subject byte at `s` matches the class `p..ep`.
    #[inline]
    fn single_match(&mut self, s: usize, p: usize, ep: usize) -> Result<bool, Fail> {
        self.meter.charge(1)?;
        let Some(&c) = self.src.get(s) else {
            return Ok(false);
        };
        Ok(match self.pat[p] {
            b'.' => true,
            b'%' => class_matches(c, self.pat[p + 1]),
            b'[' => {
                self.meter.charge((ep - p) as u64 / 16)?;
                self.in_set(c, p, ep - 1)
            }
            pc => pc == c,
        })
    }

    /// Whether `c` is in the set `[...]` from `p` (at '[') to `end` (at ']').
    fn in_set(&self, c: u8, p: usize, end: usize) -> bool {
        let pat = self.pat;
        let mut p = p;
        let mut found = true;
        if pat[p + 1] == b'^' {
            found = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= end {
                return !found;
            }
            if pat[p] == b'%' {
                p += 1;
                if class_matches(c, pat[p]) {
                    return found;
                }
            } else if pat[p + 1] == b'-' && p + 2 < end {
                p += 2;
                if pat[p - 2] <= c && c <= pat[p] {
                    return found;
                }
            } else if pat[p] == c {
                return found;
            }
        }
    }

    /// The longest run of the class `p..ep` from `s`, then shorter ones, until the rest matches.
    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Result<Option<usize>, Fail> {
        let mut i = 0;
        while self.single_match(s + i, p, ep)? {
            i += 1;
        }
        loop {
            if let Some(end) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(end));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    /// The shortest run of the class `p..ep` from `s` after which the rest matches.
    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Result<Option<usize>, Fail> {
        loop {
            if let Some(end) = self.do_match(s, ep + 1)? {
                return Ok(Some(end));
            }
            if self.single_match(s, p, ep)? {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    /// Capture `i` of a match of `start..end`; without captures, `%1` is the whole match.
    pub(super) fn get_capture(&self, i: usize, start: usize, end: usize) -> Result<Cap, Fail> {
        if i >= self.level {
            if i != 0 {
                return Err(raise(format!("invalid capture index %{}", i + 1)));
            }
            return Ok(Cap::Text(start, end));
        }
        let capture = self.captures[i];
        match capture.len {
            CapLen::Open => Err(raise("unfinished capture")),
            CapLen::Position => Ok(Cap::Position(capture.start + 1)),
            CapLen::Len(len) => Ok(Cap::Text(capture.start, capture.start + len)),
        }
    }

    /// The Lua value of capture `i` of a match of `start..end`: a string or a position.
    pub(super) fn capture_value(
        &self,
        lua: &Lua,
        i: usize,
        start: usize,
        end: usize,
    ) -> Result<Value, Fail> {
        Ok(match self.get_capture(i, start, end)? {
            Cap::Text(a, b) => Value::String(lua.create_string(&self.src[a..b])?),
            Cap::Position(at) => Value::Integer(at as i64),
        })
    }

    /// The captures of the last match, or the whole match `whole` if it has none (`find`
    /// passes `None`: it returns only captures).
    pub(super) fn push_captures(
        &self,
        lua: &Lua,
        whole: Option<(usize, usize)>,
        out: &mut Vec<Value>,
    ) -> Result<(), Fail> {
        let n = if self.level == 0 && whole.is_some() {
            1
        } else {
            self.level
        };
        let (start, end) = whole.unwrap_or((0, 0));
        for i in 0..n {
            out.push(self.capture_value(lua, i, start, end)?);
        }
        Ok(())
    }
}

/// Whether `c` is in the class `%cl`, in the C locale.
fn class_matches(c: u8, cl: u8) -> bool {
    let result = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'g' => c.is_ascii_graphic(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        // C's isspace also counts the vertical tab, which Rust's is_ascii_whitespace does not.
        b's' => c == b' ' || (b'\t'..=b'\r').contains(&c),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return cl == c,
    };
    if cl.is_ascii_uppercase() {
        !result
    } else {
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps to search all of `src` for `pat` (no captures, no errors), or `None` if
    /// `allowance` ran out.
    fn search_steps(src: &[u8], pat: &[u8], allowance: u64) -> Option<u64> {
        let mut meter = Meter {
            steps: 0,
            allowance,
        };
        let mut m = Matcher::new(src, pat, &mut meter);
        for s in 0..=src.len() {
            match m.match_at(s) {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(Fail::Budget) => return None,
                Err(_) => panic!("unexpected error"),
            }
        }
        Some(meter.steps)
    }

    #[test]
    fn steps_grow_with_the_backtracking() {
        let text = "word ".repeat(200);
        let linear = search_steps(text.as_bytes(), b"%d", u64::MAX).unwrap();
        assert!(linear <= 3 * text.len() as u64, "{linear}");
        let a = "a".repeat(200);
        let quadratic = search_steps(a.as_bytes(), b".-b", u64::MAX).unwrap();
        assert!(quadratic >= 200 * 200 / 2, "{quadratic}");
        let cubic = search_steps(a.as_bytes(), b".-.-b", u64::MAX).unwrap();
        assert!(cubic >= 200 * 200 * 200 / 6, "{cubic}");
        assert_eq!(search_steps(a.as_bytes(), b".-.-b", cubic / 2), None);
    }
}
