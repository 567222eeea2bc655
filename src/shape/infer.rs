//! A shape from saves: what the `data` of a set of saves at one version holds, for games
//! that have no Rust types to take it from (a Lua or C++ game, old versions).
//!
//! Saves show what a game wrote, not what it reads, so an inferred shape says as little as
//! they tell: every integer is an `i64` (a `u64`, or a wider range, when a value needs it),
//! text is text (never an enum), an array never seen with elements holds `any`, and keys
//! are members unless a [`Hints`] says that the keys at a place are data (a map).
//!
//! The result does not depend on the order of the saves: every place gathers the kinds
//! seen there, and the shape is built from that gathering in one fixed order.

use std::collections::BTreeMap;

use super::{IntRange, Member, Object, Shape};
use crate::error::{Error, ErrorKind, Result};
use crate::value::Value;

/// What inference cannot tell from the saves alone.
///
/// ```
/// use savechain::shape::{infer, Hints};
///
/// let saves = [
///     savechain::text::from_str(r#"{"systems": {"sol": {"visited": true}}, "turn": 3}"#)?,
///     savechain::text::from_str(r#"{"systems": {"vega": {"visited": false}}, "turn": 9}"#)?,
/// ];
/// let hints = Hints { maps: vec!["systems".into()] };
/// let shape = infer(&saves, &hints)?;
/// assert_eq!(
///     shape.to_json(),
///     serde_json::json!({"object": {
///         "systems": {"map": {"object": {"visited": "bool"}}},
///         "turn": "i64"
///     }})
/// );
/// # Ok::<(), savechain::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    /// The places whose keys are the game's data (ids, names), not member names: shape
    /// paths relative to `data` (`systems`, `sectors[*].stations`, `ship.cargo[].tags`,
    /// `["odd key"]`), `[]` for each element of an array and `[*]` for each value of a map.
    /// Each must name a place where the saves hold objects (or null), else [`infer`] fails
    /// naming it.
    pub maps: Vec<String>,
}

impl Hints {
    /// No hints: every object is read as one with members.
    pub fn new() -> Hints {
        Hints::default()
    }

    /// These hints and the place `path` (relative to `data`) as a map.
    pub fn map(mut self, path: impl Into<String>) -> Hints {
        self.maps.push(path.into());
        self
    }
}

/// The shape of the `data` of `values` (every save at one version, or every mod's part of
/// them): members found in every object required, the others optional; a place that is
/// sometimes null nullable; integers and doubles at one place a double; several kinds at one
/// place [`Shape::OneOf`] them, in a fixed order (bool, number, text, bytes, Lua table,
/// array, map, object).
///
/// Nothing is left out: for a game's own shape, take `data.mods` out of the values first,
/// as each mod's part has a shape of its own (inferred from `data.mods.<name>`).
///
/// Fails when a hint is not a shape path, names a place no save holds, or a place that
/// holds something else than objects.
pub fn infer<'a>(values: impl IntoIterator<Item = &'a Value>, hints: &Hints) -> Result<Shape> {
    let mut tree = HintNode::default();
    let mut parsed = Vec::with_capacity(hints.maps.len());
    for hint in &hints.maps {
        let steps = parse_shape_path(hint).ok_or_else(|| {
            hint_error(
                hint,
                "not a shape path (keys after dots, quoted in brackets when they are not \
                 plain names, [] for each element of an array, [*] for each value of a map)",
            )
        })?;
        tree.add(&steps);
        parsed.push((hint, steps));
    }
    let mut seen = Seen::default();
    for value in values {
        seen.add(value, Some(&tree));
    }
    for (hint, steps) in parsed {
        seen.check_hint(hint, &steps)?;
    }
    Ok(seen.shape())
}

fn hint_error(hint: &str, what: &str) -> Error {
    let relative = if hint == "data" || hint.starts_with("data.") || hint.starts_with("data[") {
        " (hints are relative to data: \"systems\", not \"data.systems\")"
    } else {
        ""
    };
    Error::new(
        ErrorKind::Shape,
        format!("map hint {hint:?}: {what}{relative}"),
    )
}

/// One step of a shape path.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    /// `[]`: each element of an array.
    Each,
    /// `[*]`: each value of a map.
    EachValue,
}

/// Reads a shape path relative to `data`; `None` when `text` is not one (an index such as
/// `[3]` has no place in a shape). The empty text and `(root)` are `data` itself.
fn parse_shape_path(text: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    if text == "(root)" {
        return Some(steps);
    }
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("[]") {
            steps.push(Step::Each);
            rest = after;
        } else if let Some(after) = rest.strip_prefix("[*]") {
            steps.push(Step::EachValue);
            rest = after;
        } else if let Some(quoted) = rest.strip_prefix("[\"") {
            let (key, after) = crate::path::unquote(quoted)?;
            steps.push(Step::Key(key.into_owned()));
            rest = after.strip_prefix(']')?;
        } else {
            let bare = if steps.is_empty() {
                rest
            } else {
                rest.strip_prefix('.')?
            };
            let end = bare.find(['.', '[']).unwrap_or(bare.len());
            if end == 0 {
                return None;
            }
            steps.push(Step::Key(bare[..end].to_string()));
            rest = &bare[end..];
        }
    }
    Some(steps)
}

/// The hints as a tree, walked beside the values so that a place's hint is found without
/// building its path.
#[derive(Default)]
struct HintNode {
    map: bool,
    keys: BTreeMap<String, HintNode>,
    each: Option<Box<HintNode>>,
    each_value: Option<Box<HintNode>>,
}

impl HintNode {
    fn add(&mut self, steps: &[Step]) {
        let Some((first, rest)) = steps.split_first() else {
            self.map = true;
            return;
        };
        let next = match first {
            Step::Key(key) => self.keys.entry(key.clone()).or_default(),
            Step::Each => self.each.get_or_insert_with(Default::default),
            Step::EachValue => self.each_value.get_or_insert_with(Default::default),
        };
        next.add(rest);
    }
}

/// Everything seen at one place of the saves.
#[derive(Default)]
struct Seen {
    null: bool,
    bool: bool,
    ints: Option<(i128, i128)>,
    double: bool,
    string: bool,
    bytes: bool,
    table: bool,
    /// The elements of every array seen here.
    array: Option<Box<Seen>>,
    /// The values of every object seen here, where a hint says the place is a map.
    map: Option<Box<Seen>>,
    /// The objects seen here otherwise.
    object: Option<Members>,
}

/// The objects seen at one place: how many, and each member with the number of objects
/// that had it.
#[derive(Default)]
struct Members {
    count: usize,
    members: BTreeMap<String, (usize, Seen)>,
}

impl Seen {
    fn add(&mut self, value: &Value, hint: Option<&HintNode>) {
        match value {
            Value::Null => self.null = true,
            Value::Bool(_) => self.bool = true,
            Value::Int(n) => self.int(i128::from(*n)),
            Value::UInt(n) => self.int(i128::from(*n)),
            Value::Double(_) => self.double = true,
            Value::String(_) => self.string = true,
            Value::Bytes(_) => self.bytes = true,
            Value::Table(_) => self.table = true,
            Value::Array(items) => {
                let elements = self.array.get_or_insert_with(Default::default);
                let hint = hint.and_then(|h| h.each.as_deref());
                for item in items {
                    elements.add(item, hint);
                }
            }
            Value::Object(object) if hint.is_some_and(|h| h.map) => {
                let values = self.map.get_or_insert_with(Default::default);
                let hint = hint.and_then(|h| h.each_value.as_deref());
                for item in object.values() {
                    values.add(item, hint);
                }
            }
            Value::Object(object) => {
                let seen = self.object.get_or_insert_with(Default::default);
                seen.count += 1;
                for (key, item) in object.iter() {
                    if !seen.members.contains_key(key) {
                        seen.members.insert(key.to_string(), Default::default());
                    }
                    let (count, member) = seen.members.get_mut(key).expect("just inserted");
                    *count += 1;
                    member.add(item, hint.and_then(|h| h.keys.get(key)));
                }
            }
        }
    }

    fn int(&mut self, n: i128) {
        let (min, max) = self.ints.get_or_insert((n, n));
        *min = (*min).min(n);
        *max = (*max).max(n);
    }

    /// The shapes of the kinds seen here other than null, in their fixed order.
    fn kinds(&self) -> Vec<Shape> {
        let mut kinds = Vec::new();
        if self.bool {
            kinds.push(Shape::Bool);
        }
        if self.double {
            kinds.push(Shape::Double);
        } else if let Some((min, max)) = self.ints {
            kinds.push(Shape::Int(int_range(min, max)));
        }
        if self.string {
            kinds.push(Shape::String);
        }
        if self.bytes {
            kinds.push(Shape::Bytes);
        }
        if self.table {
            kinds.push(Shape::LuaTable);
        }
        if let Some(elements) = &self.array {
            kinds.push(Shape::Array(Box::new(elements.shape())));
        }
        if let Some(values) = &self.map {
            kinds.push(Shape::Map(Box::new(values.shape())));
        }
        if let Some(seen) = &self.object {
            let members = seen.members.iter().map(|(name, (count, member))| {
                let member = Member {
                    shape: member.shape(),
                    required: *count == seen.count,
                };
                (name.clone(), member)
            });
            kinds.push(Shape::Object(Object::new(members)));
        }
        kinds
    }

    /// The shape of what was seen here; `any` when nothing was (the elements of arrays
    /// that were always empty).
    fn shape(&self) -> Shape {
        let mut kinds = self.kinds();
        let shape = match kinds.len() {
            0 if self.null => return Shape::Null,
            0 => return Shape::Any,
            1 => kinds.pop().expect("one kind"),
            _ => Shape::OneOf(kinds),
        };
        if self.null {
            Shape::Nullable(Box::new(shape))
        } else {
            shape
        }
    }

    /// Fails unless the saves hold objects (or null) at the place the hint names, and at
    /// least one object.
    fn check_hint(&self, hint: &str, steps: &[Step]) -> Result<()> {
        let mut at = self;
        for step in steps {
            let next = match step {
                Step::Key(key) => at
                    .object
                    .as_ref()
                    .and_then(|seen| seen.members.get(key))
                    .map(|(_, member)| member),
                Step::Each => at.array.as_deref(),
                Step::EachValue => at.map.as_deref(),
            };
            at = next.ok_or_else(|| {
                hint_error(
                    hint,
                    "no save holds a value there (a member inside a map is reached with [*], \
                     inside an array with [])",
                )
            })?;
        }
        let others: Vec<Shape> = at
            .kinds()
            .into_iter()
            .filter(|kind| !matches!(kind, Shape::Map(_)))
            .collect();
        if !others.is_empty() {
            let words: Vec<String> = others.iter().map(Shape::describe).collect();
            return Err(hint_error(
                hint,
                &format!(
                    "a map is an object, but the saves hold {} there",
                    words.join(" and ")
                ),
            ));
        }
        if at.map.is_none() {
            return Err(hint_error(hint, "no save holds an object there, only null"));
        }
        Ok(())
    }
}

/// The range saves can tell: `i64`, or `u64` (or from `i64::MIN` to `u64::MAX`) when a
/// value needs it.
fn int_range(min: i128, max: i128) -> IntRange {
    if max <= i128::from(i64::MAX) {
        IntRange::I64
    } else if min >= 0 {
        IntRange::U64
    } else {
        IntRange::new(IntRange::I64.min, IntRange::U64.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Map, Table};
    use proptest::prelude::*;

    fn value(text: &str) -> Value {
        crate::text::from_str(text).unwrap()
    }

    fn infer_text(texts: &[&str], maps: &[&str]) -> Result<String> {
        let values: Vec<Value> = texts.iter().map(|t| value(t)).collect();
        let hints = Hints {
            maps: maps.iter().map(|m| m.to_string()).collect(),
        };
        infer(&values, &hints).map(|shape| shape.to_json().to_string())
    }

    fn fixtures(version: u32) -> Vec<Value> {
        let dir = format!("{}/fixtures/v{version}", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|path| crate::Save::load(path).unwrap().data)
            .collect()
    }

    #[test]
    fn the_latest_fixtures_of_the_example_game() {
        let saves = fixtures(9);
        let shape = infer(&saves, &Hints::new().map("systems")).unwrap();
        insta::assert_snapshot!("starlane_v9", shape.to_string());
    }

    #[test]
    fn version_5_fixtures_with_systems_a_map() {
        let saves = fixtures(5);
        let shape = infer(&saves, &Hints::new().map("systems")).unwrap();
        insta::assert_snapshot!("starlane_v5", shape.to_string());
        let Shape::Object(data) = &shape else {
            panic!("an object")
        };
        let systems = &data.members["systems"].shape;
        assert!(matches!(systems, Shape::Map(_)), "{systems}");
        // Only `edge.json` has notes.
        assert!(!data.members["notes"].required);
        assert!(data.members["ship"].required);
    }

    #[test]
    fn a_mod_s_part_of_its_fixture() {
        let path = format!(
            "{}/mods/cartographer/fixtures/v3/charted.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let save = crate::Save::load(path).unwrap();
        let part = &save.data["mods"]["cartographer"];
        let shape = infer([part], &Hints::new().map("notes")).unwrap();
        assert_eq!(
            shape.to_json().to_string(),
            r#"{"object":{"notes":{"map":{"object":{"pinned":"bool","text":"string"}}},"waypoints":{"array":{"object":{"name":"string","system":"string"}}}}}"#
        );
    }

    #[test]
    fn the_order_of_the_fixtures_does_not_matter() {
        for version in 1..=9 {
            let mut saves = fixtures(version);
            // Systems were an array before version 5.
            let hints = match version {
                1..=4 => Hints::new(),
                _ => Hints::new().map("systems"),
            };
            let forward = infer(&saves, &hints).unwrap();
            saves.reverse();
            assert_eq!(infer(&saves, &hints).unwrap(), forward, "v{version}");
        }
    }

    #[test]
    fn members_missing_somewhere_are_optional_and_null_makes_nullable() {
        assert_eq!(
            infer_text(
                &[r#"{"a": 1, "b": null}"#, r#"{"a": 2, "b": "x", "c": true}"#],
                &[]
            )
            .unwrap(),
            r#"{"object":{"a":"i64","b":{"nullable":"string"},"c":{"optional":"bool"}}}"#
        );
    }

    #[test]
    fn integers_and_doubles_make_a_double_and_wide_integers_a_wider_range() {
        assert_eq!(
            infer_text(&[r#"[1, ["d", "0x1p+0"]]"#], &[]).unwrap(),
            r#"{"array":"double"}"#
        );
        assert_eq!(
            infer_text(&["[1, 18446744073709551615]"], &[]).unwrap(),
            r#"{"array":"u64"}"#
        );
        assert_eq!(
            infer_text(&["[-1, 18446744073709551615]"], &[]).unwrap(),
            r#"{"array":{"int":[-9223372036854775808,18446744073709551615]}}"#
        );
    }

    #[test]
    fn different_kinds_make_one_flat_one_of_in_a_fixed_order() {
        let texts = [
            r#"{"x": [1]}"#,
            r#"{"x": "a"}"#,
            r#"{"x": null}"#,
            r#"{"x": {"k": 1}}"#,
            r#"{"x": true}"#,
        ];
        let expected = r#"{"object":{"x":{"nullable":{"one_of":["bool","string",{"array":"i64"},{"object":{"k":"i64"}}]}}}}"#;
        assert_eq!(infer_text(&texts, &[]).unwrap(), expected);
        let mut reversed = texts;
        reversed.reverse();
        assert_eq!(infer_text(&reversed, &[]).unwrap(), expected);
    }

    #[test]
    fn empty_arrays_hold_any_and_text_is_never_an_enum_and_lua_tables_are_lua_tables() {
        assert_eq!(
            infer_text(
                &[r#"{"a": [], "b": "x", "c": ["t", [[1, 2]]], "d": ["b", "AA"], "e": null}"#],
                &[]
            )
            .unwrap(),
            r#"{"object":{"a":{"array":"any"},"b":"string","c":"lua-table","d":"bytes","e":"null"}}"#
        );
        assert_eq!(infer_text(&[], &[]).unwrap(), r#""any""#);
    }

    #[test]
    fn map_hints_reach_inside_arrays_maps_and_quoted_keys() {
        let text = r#"{"sectors": {"a": {"stations": {"s1": 1}}, "b": {"stations": {}}},
            "cargo": [{"tags": {"x": true}}], "odd key": {"k": "v"}}"#;
        assert_eq!(
            infer_text(
                &[text],
                &[
                    "sectors",
                    "sectors[*].stations",
                    "cargo[].tags",
                    r#"["odd key"]"#
                ]
            )
            .unwrap(),
            r#"{"object":{"cargo":{"array":{"object":{"tags":{"map":"bool"}}}},"odd key":{"map":"string"},"sectors":{"map":{"object":{"stations":{"map":"i64"}}}}}}"#
        );
        assert_eq!(
            infer_text(&[r#"{"a": 1}"#, r#"{"a": 2}"#], &["(root)"]).unwrap(),
            r#"{"map":"i64"}"#
        );
        assert_eq!(
            infer_text(&[r#"{"m": null}"#, r#"{"m": {"k": 1}}"#], &["m"]).unwrap(),
            r#"{"object":{"m":{"nullable":{"map":"i64"}}}}"#
        );
    }

    #[test]
    fn a_map_hint_that_names_no_object_is_an_error_naming_it() {
        let save = r#"{"systems": {"sol": {"name": "Sol"}}, "ship": {"name": "K"}, "n": null}"#;
        for (hint, expected) in [
            (
                "planets",
                r#"map hint "planets": no save holds a value there"#,
            ),
            (
                "data.systems",
                r#"map hint "data.systems": no save holds a value there (a member inside a map is reached with [*], inside an array with []) (hints are relative to data"#,
            ),
            (
                "systems.sol.name",
                r#"map hint "systems.sol.name": a map is an object, but the saves hold text there"#,
            ),
            (
                "n",
                r#"map hint "n": no save holds an object there, only null"#,
            ),
            ("systems[0]", r#"map hint "systems[0]": not a shape path"#),
            ("systems..x", r#"map hint "systems..x": not a shape path"#),
        ] {
            let err = infer_text(&[save], &[hint]).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Shape);
            assert!(err.to_string().contains(expected), "{hint}: {err}");
        }
        // A member of a map's values is reached through [*].
        let err = infer_text(&[save], &["systems", "systems.sol"]).unwrap_err();
        assert!(
            err.to_string().contains("no save holds a value there"),
            "{err}"
        );
    }

    #[test]
    fn shape_paths_read_as_written() {
        assert_eq!(
            parse_shape_path(r#"a.b[][*]["c d"].e"#),
            Some(vec![
                Step::Key("a".into()),
                Step::Key("b".into()),
                Step::Each,
                Step::EachValue,
                Step::Key("c d".into()),
                Step::Key("e".into()),
            ])
        );
        assert_eq!(parse_shape_path(""), Some(vec![]));
        assert_eq!(parse_shape_path("[]"), Some(vec![Step::Each]));
        for bad in [".a", "a.", "a[1]", "a[", r#"a["b"#, "a[]b"] {
            assert_eq!(parse_shape_path(bad), None, "{bad}");
        }
    }

    /// Whether `shape` admits `value`, as DESIGN29 states it: the property the inferred
    /// shape must have, stated here on its own (the checker lives elsewhere).
    fn admits(shape: &Shape, value: &Value) -> bool {
        match (shape, value) {
            (Shape::Any, _) => true,
            (Shape::Null, Value::Null) => true,
            (Shape::Bool, Value::Bool(_)) => true,
            (Shape::Int(range), Value::Int(n)) => range.contains(i128::from(*n)),
            (Shape::Int(range), Value::UInt(n)) => range.contains(i128::from(*n)),
            (Shape::Double, Value::Double(_) | Value::Int(_) | Value::UInt(_)) => true,
            (Shape::String, Value::String(_)) => true,
            (Shape::Strings(words), Value::String(s)) => words.contains(s),
            (Shape::Bytes, Value::Bytes(_)) => true,
            (Shape::LuaTable, Value::Table(_)) => true,
            (Shape::Array(inner), Value::Array(items)) => items.iter().all(|i| admits(inner, i)),
            (Shape::Tuple(shapes), Value::Array(items)) => {
                shapes.len() == items.len() && shapes.iter().zip(items).all(|(s, i)| admits(s, i))
            }
            (Shape::Map(inner), Value::Object(object)) => {
                object.values().all(|item| admits(inner, item))
            }
            (Shape::Object(shape), Value::Object(object)) => {
                object.keys().all(|k| shape.members.contains_key(k))
                    && shape
                        .members
                        .iter()
                        .all(|(name, member)| match object.get(name) {
                            Some(item) => admits(&member.shape, item),
                            None => !member.required,
                        })
            }
            (Shape::Nullable(_), Value::Null) => true,
            (Shape::Nullable(inner), _) => admits(inner, value),
            (Shape::OneOf(shapes), _) => shapes.iter().any(|s| admits(s, value)),
            _ => false,
        }
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            (i64::MAX as u64 + 1..=u64::MAX).prop_map(Value::UInt),
            any::<f64>().prop_map(Value::Double),
            "[a-c]{0,2}".prop_map(Value::String),
            proptest::collection::vec(any::<u8>(), 0..3).prop_map(Value::Bytes),
            (1..4u64).prop_map(|id| Value::Table(Box::new(Table::Ref(id)))),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                // Few key names, so that objects share members and miss some.
                proptest::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect::<Map>())),
            ]
        })
    }

    proptest! {
        #[test]
        fn every_value_is_admitted_by_the_shape_inferred_from_it(
            values in proptest::collection::vec(arb_value(), 0..6)
        ) {
            let shape = infer(&values, &Hints::new()).unwrap();
            for value in &values {
                prop_assert!(admits(&shape, value), "{shape} does not admit {value:?}");
            }
            // The shape reads back from its text unchanged.
            prop_assert_eq!(shape.to_string().parse::<Shape>().unwrap(), shape);
        }

        #[test]
        fn inference_does_not_depend_on_the_order_of_the_saves(
            (values, shuffled) in proptest::collection::vec(arb_value(), 0..6)
                .prop_flat_map(|values| (Just(values.clone()), Just(values).prop_shuffle()))
        ) {
            let shape = infer(&values, &Hints::new()).unwrap();
            prop_assert_eq!(infer(&shuffled, &Hints::new()).unwrap(), shape);
        }

        #[test]
        fn a_map_hint_at_the_root_admits_every_object(
            values in proptest::collection::vec(
                proptest::collection::btree_map("[a-z]{1,3}", arb_value(), 1..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect::<Map>())),
                1..4,
            )
        ) {
            let shape = infer(&values, &Hints::new().map("")).unwrap();
            prop_assert!(matches!(shape, Shape::Map(_)), "{}", shape);
            for value in &values {
                prop_assert!(admits(&shape, value));
            }
        }
    }
}
