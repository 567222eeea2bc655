//! A value against a shape: every place where a save holds what the game would not read,
//! each as a [`Mismatch`] naming its path, what the game reads there and what is there.
//!
//! The walk allocates nothing while the value matches: the path of a place is kept as a
//! chain of borrowed steps on the stack and written out only for a mismatch, so checking a
//! large save costs a fraction of loading it.

use std::fmt;

use super::{Object, Shape};
use crate::path::{Path, Segment};
use crate::value::{Map, Value};

/// One place of a value that does not match its shape.
///
/// Displayed for a modder, with the path as `save-upgrade get FILE PATH` takes it:
///
/// ```
/// use savechain::shape::Shape;
/// use savechain::path::{Path, Segment};
///
/// let shape: Shape = r#"{"object": {"rank": {"object": {"level": "u32"}}}}"#.parse()?;
/// let player = savechain::text::from_str(r#"{"rank": {"level": ["d", "0x1.cp+1"]}}"#)?;
/// let root = Path::from(vec![Segment::Key("data".into()), Segment::Key("player".into())]);
/// let found = shape.check_at(&player, &root);
/// assert_eq!(
///     found[0].to_string(),
///     "data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double"
/// );
/// # Ok::<(), savechain::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mismatch {
    /// Where, from the root the check was given.
    pub path: Path,
    /// What the game reads there, in words (`an integer from 0 to 4294967295`); for a
    /// member the game does not read, `no member "nick"`.
    pub expected: String,
    /// What is there, in words (`3.5 is a double`, `the member is missing`).
    pub found: String,
    /// Which of the three ways the place does not match.
    pub kind: MismatchKind,
}

/// How a place does not match its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MismatchKind {
    /// A value the game does not read there (another kind, an integer out of range, a
    /// string not among the enum's).
    Wrong,
    /// A required member is absent.
    Missing,
    /// A member the object's shape does not name: the game would drop it when it saves.
    Extra,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            MismatchKind::Extra => write!(
                f,
                "{}: the game reads {} here (it would be dropped when the game saves)",
                self.path, self.expected
            ),
            MismatchKind::Wrong | MismatchKind::Missing => write!(
                f,
                "{}: the game reads {} here; {}",
                self.path, self.expected, self.found
            ),
        }
    }
}

impl Shape {
    /// Every place of `value` that does not match this shape, paths from `value` itself
    /// (a mismatch of `value` as a whole is at `(root)`). Empty when it matches.
    pub fn check(&self, value: &Value) -> Vec<Mismatch> {
        self.check_at(value, &Path::new())
    }

    /// Every place of `value` that does not match this shape, paths starting with `root`,
    /// where `value` sits in its document (`data` for a game's data, `data.mods.tinker`
    /// for a mod's part): the paths can then be pasted into `save-upgrade get FILE PATH`.
    pub fn check_at(&self, value: &Value, root: &Path) -> Vec<Mismatch> {
        let mut walk = Walk {
            root,
            found: Vec::new(),
            record: true,
            failed: false,
        };
        walk.shape(self, value, None, self);
        walk.found
    }

    /// Whether `value` matches this shape, allocating nothing.
    pub fn matches(&self, value: &Value) -> bool {
        matches(self, value)
    }
}

fn matches(shape: &Shape, value: &Value) -> bool {
    let root = Path::new();
    let mut walk = Walk {
        root: &root,
        found: Vec::new(),
        record: false,
        failed: false,
    };
    walk.shape(shape, value, None, shape);
    !walk.failed
}

/// One step of the way to the place being checked, borrowed from the value.
#[derive(Clone, Copy)]
enum Step<'v> {
    Key(&'v str),
    Index(usize),
}

/// Where the walk is: the step into this place and the place it came from.
struct At<'a, 'v> {
    parent: Option<&'a At<'a, 'v>>,
    step: Step<'v>,
}

struct Walk<'r> {
    root: &'r Path,
    found: Vec<Mismatch>,
    /// Whether mismatches are kept; when not, the walk stops at the first.
    record: bool,
    failed: bool,
}

impl Walk<'_> {
    /// Whether to stop: a walk that only answers yes or no has its answer.
    fn done(&self) -> bool {
        !self.record && self.failed
    }

    fn path(&self, at: Option<&At<'_, '_>>) -> Path {
        let mut steps = Vec::new();
        let mut here = at;
        while let Some(place) = here {
            steps.push(match place.step {
                Step::Key(key) => Segment::Key(key.to_string()),
                Step::Index(index) => Segment::Index(index),
            });
            here = place.parent;
        }
        let mut segments = self.root.segments().to_vec();
        segments.extend(steps.into_iter().rev());
        Path::from(segments)
    }

    fn report(
        &mut self,
        at: Option<&At<'_, '_>>,
        kind: MismatchKind,
        expected: impl FnOnce() -> String,
        found: impl FnOnce() -> String,
    ) {
        self.failed = true;
        if self.record {
            let path = self.path(at);
            self.found.push(Mismatch {
                path,
                expected: expected(),
                found: found(),
                kind,
            });
        }
    }

    /// Checks `value` against `shape`; a mismatch of the place as a whole says the game
    /// reads `shown` there (the nullable or one-of shape `shape` was taken from).
    fn shape<'v>(
        &mut self,
        shape: &Shape,
        value: &'v Value,
        at: Option<&At<'_, 'v>>,
        shown: &Shape,
    ) {
        let fits = match (shape, value) {
            (Shape::Any, _) => true,
            (Shape::Null, Value::Null) => true,
            (Shape::Bool, Value::Bool(_)) => true,
            (Shape::Int(range), Value::Int(n)) => range.contains(i128::from(*n)),
            (Shape::Int(range), Value::UInt(n)) => range.contains(i128::from(*n)),
            (Shape::Double, Value::Double(_) | Value::Int(_) | Value::UInt(_)) => true,
            (Shape::String, Value::String(_)) => true,
            (Shape::Bytes, Value::Bytes(_)) => true,
            (Shape::LuaTable, Value::Table(_)) => true,
            (Shape::Strings(words), Value::String(s)) => words.iter().any(|w| w == s),
            (Shape::Array(inner), Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    let here = At {
                        parent: at,
                        step: Step::Index(index),
                    };
                    self.shape(inner, item, Some(&here), inner);
                    if self.done() {
                        return;
                    }
                }
                true
            }
            (Shape::Tuple(shapes), Value::Array(items)) if shapes.len() == items.len() => {
                for (index, (inner, item)) in shapes.iter().zip(items).enumerate() {
                    let here = At {
                        parent: at,
                        step: Step::Index(index),
                    };
                    self.shape(inner, item, Some(&here), inner);
                    if self.done() {
                        return;
                    }
                }
                true
            }
            (Shape::Map(inner), Value::Object(map)) => {
                for (key, item) in map.iter() {
                    let here = At {
                        parent: at,
                        step: Step::Key(key),
                    };
                    self.shape(inner, item, Some(&here), inner);
                    if self.done() {
                        return;
                    }
                }
                true
            }
            (Shape::Object(object), Value::Object(map)) => {
                self.object(object, map, at);
                true
            }
            (Shape::Nullable(_), Value::Null) => true,
            (Shape::Nullable(inner), _) => {
                self.shape(inner, value, at, shown);
                true
            }
            (Shape::OneOf(shapes), _) => {
                if shapes.iter().any(|s| matches(s, value)) {
                    return;
                }
                match closest(shapes, value) {
                    Some(best) => {
                        self.shape(best, value, at, shown);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        };
        if !fits {
            // An integer where the game reads one of a range is out of that range: saying
            // only that it is an integer would read as if that were the fault.
            let out_of_range =
                matches!(shape, Shape::Int(_)) && matches!(value, Value::Int(_) | Value::UInt(_));
            self.report(
                at,
                MismatchKind::Wrong,
                || shown.describe(),
                || match value {
                    Value::Int(n) if out_of_range => format!("{n} is out of that range"),
                    Value::UInt(n) if out_of_range => format!("{n} is out of that range"),
                    _ => describe_found(value),
                },
            );
        }
    }

    fn object<'v>(&mut self, object: &Object, map: &'v Map, at: Option<&At<'_, 'v>>) {
        // Both sides are sorted bytewise: one pass over each, in key order.
        let mut members = object.members.iter().peekable();
        let mut entries = map.iter().peekable();
        loop {
            if self.done() {
                return;
            }
            let order = match (members.peek(), entries.peek()) {
                (None, None) => return,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((name, _)), Some((key, _))) => name.as_str().cmp(key),
            };
            match order {
                std::cmp::Ordering::Equal => {
                    let (_, member) = members.next().expect("peeked");
                    let (key, item) = entries.next().expect("peeked");
                    let here = At {
                        parent: at,
                        step: Step::Key(key),
                    };
                    self.shape(&member.shape, item, Some(&here), &member.shape);
                }
                std::cmp::Ordering::Less => {
                    let (name, member) = members.next().expect("peeked");
                    if member.required {
                        let here = At {
                            parent: at,
                            step: Step::Key(name),
                        };
                        self.report(
                            Some(&here),
                            MismatchKind::Missing,
                            || member.shape.describe(),
                            || "the member is missing".to_string(),
                        );
                    }
                }
                std::cmp::Ordering::Greater => {
                    let (key, item) = entries.next().expect("peeked");
                    let here = At {
                        parent: at,
                        step: Step::Key(key),
                    };
                    self.report(
                        Some(&here),
                        MismatchKind::Extra,
                        || format!("no member {key:?}"),
                        || describe_found(item),
                    );
                }
            }
        }
    }
}

/// The one shape of `shapes` that `value` is most likely meant to be, to point at the
/// place inside it that is wrong: the only one of the value's kind, or, for an object, the
/// only object shape naming every member it has (an enum's variant). `None` when no one
/// stands out: the mismatch is then the value as a whole.
fn closest<'s>(shapes: &'s [Shape], value: &Value) -> Option<&'s Shape> {
    let mut of_kind = shapes.iter().filter(|s| same_kind(s, value));
    let first = of_kind.next()?;
    if of_kind.next().is_none() {
        return Some(first);
    }
    let Value::Object(map) = value else {
        return None;
    };
    let mut naming_all = shapes.iter().filter(|s| match s {
        Shape::Object(object) => map.keys().all(|k| object.members.contains_key(k)),
        _ => false,
    });
    let first = naming_all.next()?;
    naming_all.next().is_none().then_some(first)
}

/// Whether `value` is of the kind `shape` reads, whatever is inside it.
fn same_kind(shape: &Shape, value: &Value) -> bool {
    match shape {
        Shape::Any => true,
        Shape::Null => value.is_null(),
        Shape::Bool => matches!(value, Value::Bool(_)),
        Shape::Int(_) => matches!(value, Value::Int(_) | Value::UInt(_)),
        Shape::Double => matches!(value, Value::Double(_) | Value::Int(_) | Value::UInt(_)),
        Shape::String | Shape::Strings(_) => matches!(value, Value::String(_)),
        Shape::Bytes => matches!(value, Value::Bytes(_)),
        Shape::LuaTable => matches!(value, Value::Table(_)),
        Shape::Array(_) | Shape::Tuple(_) => matches!(value, Value::Array(_)),
        Shape::Map(_) | Shape::Object(_) => matches!(value, Value::Object(_)),
        Shape::Nullable(inner) => value.is_null() || same_kind(inner, value),
        Shape::OneOf(shapes) => shapes.iter().any(|s| same_kind(s, value)),
    }
}

/// Strings longer than this are cut when shown.
const SHOWN_CHARS: usize = 40;

/// What `value` is, in words for a modder: `3.5 is a double` (in decimal, as the decimal
/// view writes it), `"Zed" is text`, `an array of 3 elements`.
pub(crate) fn describe_found(value: &Value) -> String {
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    match value {
        Value::Null => "the value is null".into(),
        Value::Bool(b) => format!("{b} is a boolean"),
        Value::Int(n) => format!("{n} is an integer"),
        Value::UInt(n) => format!("{n} is an integer"),
        Value::Double(d) => format!("{} is a double", crate::text::write::decimal(*d)),
        Value::String(s) => {
            let shown = match s.char_indices().nth(SHOWN_CHARS) {
                Some((cut, _)) => format!("{:?}...", &s[..cut]),
                None => format!("{s:?}"),
            };
            format!("{shown} is text")
        }
        Value::Bytes(b) => format!("a byte string of {}", plural(b.len(), "byte", "bytes")),
        Value::Array(items) => {
            format!("an array of {}", plural(items.len(), "element", "elements"))
        }
        Value::Object(map) => format!("an object of {}", plural(map.len(), "member", "members")),
        Value::Table(_) => value.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::from_str;

    fn shape(text: &str) -> Shape {
        text.parse().unwrap()
    }

    fn value(text: &str) -> Value {
        from_str(text).unwrap()
    }

    fn data() -> Path {
        Path::from(vec![Segment::Key("data".into())])
    }

    /// The mismatches of `v` against `s`, from `data`, as displayed.
    fn lines(s: &str, v: &str) -> Vec<String> {
        shape(s)
            .check_at(&value(v), &data())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn each_kind_accepts_its_values_and_refuses_others() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "\"any\"",
                &["null", "1", "\"x\"", "[1]", "{}", r#"["b", "x"]"#],
                &[],
            ),
            ("\"null\"", &["null"], &["0", "false", "{}"]),
            ("\"bool\"", &["true", "false"], &["0", "null", "\"true\""]),
            (
                "\"u8\"",
                &["0", "255"],
                &["256", "-1", "1.5", r#"["d", "0x1p+0"]"#],
            ),
            (
                "\"i64\"",
                &["-9223372036854775808", "9223372036854775807"],
                &["9223372036854775808"],
            ),
            ("\"u64\"", &["18446744073709551615", "0"], &["-1"]),
            ("{\"int\": [-3, 9]}", &["-3", "9"], &["-4", "10"]),
            (
                "\"double\"",
                &[r#"["d", "0x1.8p+1"]"#, "3", "-7", "18446744073709551615"],
                &["\"3\"", "null"],
            ),
            ("\"string\"", &["\"\"", "\"hi\""], &[r#"["b", "hi"]"#, "1"]),
            ("\"bytes\"", &[r#"["b", "\u00ff"]"#], &["\"x\""]),
            (
                "\"lua-table\"",
                &[r#"["t", [[1, 2], [true, 3]]]"#, r#"["c", ["Ship", {}]]"#],
                &["{}", "[]"],
            ),
            (
                "{\"enum\": [\"red\", \"blue\"]}",
                &["\"red\"", "\"blue\""],
                &["\"green\"", "1"],
            ),
            (
                "{\"array\": \"u8\"}",
                &["[]", "[1, 2]"],
                &["[1, 300]", "{}"],
            ),
            (
                "{\"tuple\": [\"u8\", \"string\"]}",
                &["[1, \"a\"]"],
                &["[1]", "[1, \"a\", 2]", "[\"a\", 1]"],
            ),
            (
                "{\"map\": \"double\"}",
                &["{}", r#"{"a b": 1, "c": ["d", "0x1p-1"]}"#],
                &[r#"{"a": "x"}"#, "[]"],
            ),
            ("{\"nullable\": \"string\"}", &["null", "\"x\""], &["1"]),
            (
                "{\"one_of\": [\"string\", \"u8\"]}",
                &["\"x\"", "8"],
                &["-1", "null"],
            ),
            (
                "{\"object\": {\"a\": \"u8\", \"b\": {\"optional\": \"bool\"}}}",
                &[r#"{"a": 1}"#, r#"{"a": 1, "b": true}"#],
                &["{}", r#"{"a": 1, "c": 2}"#, r#"{"b": true}"#],
            ),
        ];
        for (s, good, bad) in cases {
            let s = shape(s);
            for v in *good {
                assert_eq!(s.check(&value(v)), vec![], "{s} should accept {v}");
                assert!(s.matches(&value(v)), "{s} should accept {v}");
            }
            for v in *bad {
                assert!(!s.check(&value(v)).is_empty(), "{s} should refuse {v}");
                assert!(!s.matches(&value(v)), "{s} should refuse {v}");
            }
        }
    }

    #[test]
    fn an_integer_refuses_every_double_even_a_whole_one() {
        assert_eq!(
            lines(r#"{"object": {"player": {"object": {"rank": {"object": {"level": "u32"}}}}}}"#,
                r#"{"player": {"rank": {"level": ["d", "0x1.cp+1"]}}}"#),
            ["data.player.rank.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double"]
        );
        assert_eq!(
            lines(
                r#"{"object": {"level": "u32"}}"#,
                r#"{"level": ["d", "0x1.8p+1"]}"#
            ),
            ["data.level: the game reads an integer from 0 to 4294967295 here; 3.0 is a double"]
        );
        assert_eq!(
            lines(r#"{"object": {"level": "u8"}}"#, r#"{"level": 256}"#),
            ["data.level: the game reads an integer from 0 to 255 here; 256 is out of that range"]
        );
    }

    #[test]
    fn a_double_accepts_integers_of_any_size() {
        let s = shape(r#"{"array": "double"}"#);
        assert!(s.matches(&value("[1, -1, 18446744073709551615, [\"d\", \"0x1p+0\"]]")));
    }

    #[test]
    fn missing_and_extra_members() {
        assert_eq!(
            lines(
                r#"{"object": {"player": {"object": {"name": "string", "hp": "u32", "nick": {"optional": "string"}}}}}"#,
                r#"{"player": {"name": "Ada", "nik": "A", "zz": [1, 2]}}"#
            ),
            [
                "data.player.hp: the game reads an integer from 0 to 4294967295 here; the member is missing",
                "data.player.nik: the game reads no member \"nik\" here (it would be dropped when the game saves)",
                "data.player.zz: the game reads no member \"zz\" here (it would be dropped when the game saves)",
            ]
        );
        let found = shape(r#"{"object": {}}"#).check(&value(r#"{"nick": "Zed"}"#));
        assert_eq!(found[0].kind, MismatchKind::Extra);
        assert_eq!(found[0].expected, "no member \"nick\"");
        assert_eq!(found[0].found, "\"Zed\" is text");
        assert_eq!(found[0].path.to_string(), "nick");
    }

    #[test]
    fn paths_of_elements_and_of_keys_that_need_quotes() {
        assert_eq!(
            lines(
                r#"{"object": {"ship": {"object": {"cargo": {"array": {"object": {"mass": "double"}}}}}}}"#,
                r#"{"ship": {"cargo": [{"mass": 1}, {"mass": "heavy"}]}}"#
            ),
            ["data.ship.cargo[1].mass: the game reads a number (a double) here; \"heavy\" is text"]
        );
        assert_eq!(
            lines(
                r#"{"object": {"systems": {"map": {"object": {"x": "i64"}}}}}"#,
                r#"{"systems": {"sol": {"x": 1}, "tau ceti": {"x": true}}}"#
            ),
            ["data.systems[\"tau ceti\"].x: the game reads an integer from -9223372036854775808 to 9223372036854775807 here; true is a boolean"]
        );
        // A mismatch of the value as a whole is at the root given.
        assert_eq!(
            shape("\"u8\"").check(&value("-1"))[0].path.to_string(),
            "(root)"
        );
        assert_eq!(
            lines("\"u8\"", "-1"),
            ["data: the game reads an integer from 0 to 255 here; -1 is out of that range"]
        );
    }

    #[test]
    fn every_mismatch_is_reported_in_key_order() {
        let found = lines(
            r#"{"object": {"a": "u8", "b": {"array": "bool"}, "c": "string"}}"#,
            r#"{"a": -1, "b": [true, 1, 2], "c": "ok", "d": null}"#,
        );
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].starts_with("data.a:"));
        assert!(found[1].starts_with("data.b[1]:"));
        assert!(found[2].starts_with("data.b[2]:"));
        assert!(found[3].starts_with("data.d:"));
    }

    #[test]
    fn nullable_says_null_is_read_too() {
        assert_eq!(
            lines(
                r#"{"object": {"nick": {"nullable": "string"}}}"#,
                r#"{"nick": 7}"#
            ),
            ["data.nick: the game reads null or text here; 7 is an integer"]
        );
        // Inside a nullable object, the wrong member is named.
        assert_eq!(
            lines(r#"{"nullable": {"object": {"a": "bool"}}}"#, r#"{"a": 1}"#),
            ["data.a: the game reads true or false here; 1 is an integer"]
        );
    }

    #[test]
    fn one_of_points_inside_the_alternative_the_value_is_meant_as() {
        let s = r#"{"one_of": [{"enum": ["Idle"]}, {"object": {"Mining": {"object": {"rate": "u8"}}}}, {"object": {"Trading": "string"}}]}"#;
        assert_eq!(lines(s, r#""Idle""#), Vec::<String>::new());
        assert_eq!(lines(s, r#"{"Trading": "ore"}"#), Vec::<String>::new());
        assert_eq!(
            lines(s, r#"{"Mining": {"rate": 300}}"#),
            ["data.Mining.rate: the game reads an integer from 0 to 255 here; 300 is out of that range"]
        );
        // Nothing to tell the alternatives apart: the value as a whole.
        let whole = lines(s, "3");
        assert_eq!(whole.len(), 1);
        assert!(
            whole[0].starts_with("data: the game reads one of: "),
            "{whole:?}"
        );
        assert!(whole[0].ends_with("; 3 is an integer"), "{whole:?}");
    }

    #[test]
    fn found_values_are_described_for_a_modder() {
        let described = |v: &str| describe_found(&value(v));
        assert_eq!(described("null"), "the value is null");
        assert_eq!(
            described(r#"["d", "0x1.91eb851eb851fp+1"]"#),
            "3.14 is a double"
        );
        assert_eq!(described(r#"["d", "-0x0p+0"]"#), "-0.0 is a double");
        assert_eq!(described(r#"["d", "inf"]"#), "inf is a double");
        assert_eq!(described("[1]"), "an array of 1 element");
        assert_eq!(described("[1, 2]"), "an array of 2 elements");
        assert_eq!(described("{}"), "an object of 0 members");
        assert_eq!(described(r#"["b", "ab"]"#), "a byte string of 2 bytes");
        assert_eq!(described(r#"["t", [[1, 2]]]"#), "a keyed table");
        let long = format!("\"{}\"", "é".repeat(50));
        assert_eq!(
            described(&long),
            format!("\"{}\"... is text", "é".repeat(40))
        );
    }
}
