//! Paths inside a document (`data.player.ship.hull`, `data.systems[3].name`): written for
//! error messages, and read back to find a value by one ([`Value::pointer`]).
//!
//! [`Value::pointer`]: crate::Value::pointer

use std::borrow::Cow;
use std::fmt;

/// One step into a document: an object key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Segment {
    /// A member of an object.
    Key(String),
    /// An element of an array, from 0.
    Index(usize),
    /// A key of a Lua table that is not a string, as Lua would write it inside brackets
    /// (`-1`, `true`, `1.5`, `<table>`).
    LuaKey(String),
}

/// Where a value sits in a document, from the root.
///
/// Displayed the way a modder would point at it: keys joined by dots, indexes in brackets,
/// and keys that are not plain identifiers quoted (`data["odd key"]`). The root is `(root)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path {
    segments: Vec<Segment>,
}

impl Path {
    /// The root: an empty path.
    pub fn new() -> Path {
        Path::default()
    }

    /// The steps from the root, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Whether the path is the root.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// Adds a step in front. Errors are built from the inside out as they unwind, so this
    /// is how a path grows; the cost is paid only on the error path.
    pub(crate) fn push_front(&mut self, segment: Segment) {
        self.segments.insert(0, segment);
    }

    /// Adds a step at the end.
    pub(crate) fn push(&mut self, segment: Segment) {
        self.segments.push(segment);
    }

    /// Removes and returns the innermost step.
    pub(crate) fn pop(&mut self) -> Option<Segment> {
        self.segments.pop()
    }
}

impl From<Vec<Segment>> for Path {
    fn from(segments: Vec<Segment>) -> Path {
        Path { segments }
    }
}

/// Whether `key` is written bare in a path (`ship`, not `["odd key"]`).
pub(crate) fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str("(root)");
        }
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Key(key) if is_identifier(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Segment::Key(key) => write!(f, "[{key:?}]")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::LuaKey(key) => write!(f, "[{key}]")?,
            }
        }
        Ok(())
    }
}

/// One step of a path read from its text: a key (borrowed from the text unless it was
/// quoted with escapes) or an index.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    Key(Cow<'a, str>),
    Index(usize),
}

/// Follows the path `text` from `start`, `step` taking each step from where the one before
/// led; `None` when a step leads nowhere or `text` is not a path.
///
/// `text` is written as [`Path`] displays it: keys after dots, indexes in brackets, keys
/// that are not identifiers quoted in brackets with Rust's escapes (`["odd key"]`,
/// `["a.b"]`, `["say \"hi\""]`), the root as `(root)` or the empty text. A key may also be
/// written bare after a dot when it holds no `.` or `[` (`ship.odd-key`): it runs to the
/// next `.` or `[`.
pub(crate) fn follow<'a, T>(
    text: &'a str,
    start: T,
    mut step: impl FnMut(T, Step<'a>) -> Option<T>,
) -> Option<T> {
    if text == "(root)" {
        return Some(start);
    }
    let mut at = start;
    let mut rest = text;
    let mut first = true;
    while !rest.is_empty() {
        let (next, after) = read_step(rest, first)?;
        at = step(at, next)?;
        rest = after;
        first = false;
    }
    Some(at)
}

/// `text` with each key in brackets that lacks its double quotes given them
/// (`systems[tau ceti]` as `systems["tau ceti"]`), when that makes it a path; `None` when
/// no such key is there or the text is still no path. A shell leaves a path typed unquoted
/// so: `data.systems["tau ceti"]` arrives as `data.systems[tau ceti]`.
pub(crate) fn with_keys_quoted(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    let mut quoted_any = false;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let inside = &rest[open + 1..];
        if let Some(quoted) = inside.strip_prefix('"') {
            // A key already quoted, which may hold brackets.
            let (_, after) = unquote(quoted)?;
            out.push_str(&rest[open..rest.len() - after.len()]);
            rest = after;
            continue;
        }
        let (key, after) = inside.split_once(']')?;
        if key.is_empty() {
            return None;
        }
        if key.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&rest[open..open + key.len() + 2]);
        } else {
            out.push_str(&format!("[{key:?}]"));
            quoted_any = true;
        }
        rest = after;
    }
    out.push_str(rest);
    let is_path = follow(&out, (), |(), _| Some(())).is_some();
    (quoted_any && is_path).then_some(out)
}

/// The step at the start of `text`, and the text after it. The first step of a path has no
/// dot before a bare key.
fn read_step(text: &str, first: bool) -> Option<(Step<'_>, &str)> {
    if let Some(inside) = text.strip_prefix('[') {
        if let Some(quoted) = inside.strip_prefix('"') {
            let (key, after) = unquote(quoted)?;
            return Some((Step::Key(key), after.strip_prefix(']')?));
        }
        let (digits, after) = inside.split_once(']')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        return Some((Step::Index(digits.parse().ok()?), after));
    }
    let bare = if first { text } else { text.strip_prefix('.')? };
    let end = bare.find(['.', '[']).unwrap_or(bare.len());
    if end == 0 {
        return None;
    }
    Some((Step::Key(Cow::Borrowed(&bare[..end])), &bare[end..]))
}

/// A key quoted as Rust's `{:?}` quotes a string, from after its opening quote: the key,
/// and the text after its closing quote.
pub(crate) fn unquote(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let special = text.find(['"', '\\'])?;
    if let Some(after) = text[special..].strip_prefix('"') {
        return Some((Cow::Borrowed(&text[..special]), after));
    }
    let mut key = text[..special].to_string();
    let mut chars = text[special..].chars();
    loop {
        match chars.next()? {
            '"' => return Some((Cow::Owned(key), chars.as_str())),
            '\\' => key.push(match chars.next()? {
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                '0' => '\0',
                c @ ('\\' | '"' | '\'') => c,
                'u' => {
                    let rest = chars.as_str().strip_prefix('{')?;
                    let (hex, after) = rest.split_once('}')?;
                    if hex.is_empty() || hex.len() > 6 {
                        return None;
                    }
                    let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                    chars = after.chars();
                    c
                }
                _ => return None,
            }),
            c => key.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(text: &str) -> Option<Vec<Step<'_>>> {
        follow(text, Vec::new(), |mut steps, step| {
            steps.push(step);
            Some(steps)
        })
    }

    fn key(k: &str) -> Step<'_> {
        Step::Key(Cow::Borrowed(k))
    }

    #[test]
    fn reads_paths_as_they_are_displayed() {
        assert_eq!(
            steps(r#"data.systems[3]["odd key"].name"#),
            Some(vec![
                key("data"),
                key("systems"),
                Step::Index(3),
                key("odd key"),
                key("name")
            ])
        );
        assert_eq!(steps("(root)"), Some(vec![]));
        assert_eq!(steps(""), Some(vec![]));
        assert_eq!(
            steps("[0][12]"),
            Some(vec![Step::Index(0), Step::Index(12)])
        );
        assert_eq!(
            steps(r#"["a.b"]["[0]"][""]"#),
            Some(vec![key("a.b"), key("[0]"), key("")])
        );
        assert_eq!(
            steps(r#"["say \"hi\"\\ \n\t\r\0 \u{301}\u{10ffff}"]"#),
            Some(vec![Step::Key(Cow::Owned(
                "say \"hi\"\\ \n\t\r\0 \u{301}\u{10ffff}".into()
            ))])
        );
        assert_eq!(
            steps("ship.odd-key.é"),
            Some(vec![key("ship"), key("odd-key"), key("é")])
        );
    }

    #[test]
    fn refuses_what_is_not_a_path() {
        for text in [
            ".ship",
            "ship.",
            "ship..hull",
            "ship[",
            "ship[]",
            "ship[-1]",
            "ship[+1]",
            "ship[1",
            "ship[x]",
            "ship[99999999999999999999999]",
            r#"ship["hull"#,
            r#"ship["hull""#,
            r#"ship["hull"x]"#,
            r#"ship["\q"]"#,
            r#"ship["\u{}"]"#,
            r#"ship["\u{d800}"]"#,
            r#"ship["\u{1234567}"]"#,
            r#"ship["\u1234"]"#,
            "ship[0]hull",
        ] {
            assert_eq!(steps(text), None, "{text}");
        }
    }

    #[test]
    fn keys_in_brackets_without_quotes_are_given_them() {
        for (text, meant) in [
            (
                "data.systems[tau ceti].visited",
                Some(r#"data.systems["tau ceti"].visited"#),
            ),
            (
                r#"data.a[x][0]["b]c"][y z]"#,
                Some(r#"data.a["x"][0]["b]c"]["y z"]"#),
            ),
            ("data.systems[3].name", None),
            ("data.systems[]", None),
            ("data.systems[x", None),
            ("data..systems[x]", None),
        ] {
            assert_eq!(with_keys_quoted(text).as_deref(), meant, "{text}");
        }
    }

    #[test]
    fn every_key_reads_back_as_displayed() {
        for k in [
            "plain", "odd key", "a.b", "[0]", "", "\"", "\\", "\u{301}x", "\u{200b}", "(root)",
            "1st", "é",
        ] {
            let path = Path::from(vec![
                Segment::Key("top".into()),
                Segment::Key(k.into()),
                Segment::Index(7),
            ]);
            let shown = path.to_string();
            assert_eq!(
                steps(&shown),
                Some(vec![key("top"), key(k), Step::Index(7)]),
                "{shown}"
            );
        }
    }

    #[test]
    fn displays_like_a_modder_would_write_it() {
        let path = Path::from(vec![
            Segment::Key("data".into()),
            Segment::Key("systems".into()),
            Segment::Index(3),
            Segment::Key("odd key".into()),
            Segment::Key("name".into()),
        ]);
        assert_eq!(path.to_string(), r#"data.systems[3]["odd key"].name"#);
        assert_eq!(Path::new().to_string(), "(root)");
    }
}
