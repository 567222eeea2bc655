//! The shape of a Rust type: what `T::deserialize` reads, found by driving it with a
//! deserializer that hands it made-up values and notes every request.
//!
//! Why not serde-reflection: it answers `deserialize_any` with an error, so it cannot
//! describe a `savechain::Value` or `serde_json::Value` field (state the game keeps without
//! reading it, which has the shape `"any"`), and it records a struct's fields without
//! telling which of them the type can do without. Here each field is tried once left out:
//! the derive then takes its missing-field path, and the field is required exactly when
//! that fails with "missing field".
//!
//! How: `T::deserialize` is run several times ("passes"). A pass gives every struct all of
//! its fields, every sequence one element, every map one entry, every number 0 (1 when the
//! type refuses 0, for `NonZeroU32`). An enum takes one variant a pass, so passes go on
//! until every variant of every enum, wherever it sits, has been read once; then one pass
//! for each struct field leaves that field out. What was read is kept by its place in the
//! type (`hero.class.Warrior.weapon`), so a generic type is described as it is used there.
//!
//! What is recognised by name: a `savechain::Value` asks for a newtype named
//! [`TABLE_TOKEN`](crate::serde::TABLE_TOKEN), a `serde_json::Value` calls `deserialize_any`
//! with a visitor expecting "any valid JSON value"; both are `"any"`. Every other
//! `deserialize_any` (an untagged or internally tagged enum, a hand-written `Deserialize`
//! that looks at the data first), an adjacently tagged enum (a struct whose visitor expects
//! "adjacently tagged enum ...") and a struct with `#[serde(flatten)]` (a struct read as a
//! map: its visitor expects "struct ...") cannot be described and are refused with their
//! place in the type.

use std::any::type_name;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ::serde::de::value::BorrowedStrDeserializer;
use ::serde::de::{self, DeserializeOwned, DeserializeSeed, Expected, Visitor};

use super::{IntRange, Member, Object, Shape};
use crate::error::{Error, ErrorKind, Result};
use crate::path::{Path, Segment};

/// The shape of what `T` reads when a save is loaded into it: the shape a game whose state
/// is `T` has at its current version.
///
/// Structs are objects whose members are their fields (by their serde names; an alias is
/// not a member: savechain writes the field's own name), required unless the type can do
/// without them (an `Option`, a `#[serde(default)]`); enums are what savechain writes: a
/// unit variant is its name (`{"enum": [...]}`), another variant an object with the
/// variant's name as its one member, an enum with several kinds of variant
/// `{"one_of": [...]}` (a variant's aliases are listed as variants: the game reads them).
/// `Option<T>` is `{"nullable": T}` (`Option<Option<T>>` too; `Option<Value>` is `"any"`). Integers have their type's
/// range (`i128` and `u128` the range savechain reads them in, from `i64::MIN` to
/// `u64::MAX`), `char` is a string (its one-character limit is not expressed), `()` and unit
/// structs are null, newtype structs their inner shape, tuples, tuple structs and `[T; N]`
/// tuples, maps `{"map": S}` whatever their keys (savechain writes integer, bool, char and
/// unit-variant keys as their text; the shape does not say which text), `Vec<u8>` an array
/// of `u8` (as savechain reads it) and `serde_bytes` byte strings `"bytes"`.
///
/// Refused, with the place in the type and why: recursive types, untagged, internally and
/// adjacently tagged enums, `#[serde(flatten)]`, other types that read `deserialize_any`,
/// map keys savechain cannot write (structs, sequences, floats), and types whose
/// `Deserialize` refuses every made-up value it is given (a string that must parse).
///
/// ```
/// use serde::Deserialize;
/// use savechain::shape::{self, Shape};
///
/// #[derive(Deserialize)]
/// struct Ship {
///     name: String,
///     crew: u32,
///     captain: Option<String>,
///     cargo: Vec<(String, f64)>,
/// }
///
/// let expected: Shape = r#"{"object": {
///     "name": "string",
///     "crew": "u32",
///     "captain": {"optional": {"nullable": "string"}},
///     "cargo": {"array": {"tuple": ["string", "double"]}}
/// }}"#.parse()?;
/// assert_eq!(shape::of::<Ship>()?, expected);
/// # Ok::<(), savechain::Error>(())
/// ```
pub fn of<T: DeserializeOwned>() -> Result<Shape> {
    let state = RefCell::new(State::default());
    let fail = |why: String| {
        Error::new(
            ErrorKind::Shape,
            format!("the shape of {}: {why}", type_name::<T>()),
        )
    };
    let mut passes = 0usize;
    let mut count = || {
        passes += 1;
        match passes > PASS_LIMIT {
            true => Err(fail(format!(
                "more than {PASS_LIMIT} passes through the type: too large to describe"
            ))),
            false => Ok(()),
        }
    };

    // Every variant of every enum, read once.
    let root = loop {
        count()?;
        let Some(root) = pass::<T>(&state).map_err(&fail)? else {
            continue;
        };
        let mut st = state.borrow_mut();
        let Some(next) = st.unread_variant() else {
            break root;
        };
        if st.goal == Goal::Read(Some(next.clone())) {
            return Err(fail(format!(
                "{}: variant {:?} could not be reached",
                show(&next.0),
                st.enums[&next.0].variants[next.1]
            )));
        }
        st.goal = Goal::Read(Some(next));
    };

    // Every struct field, left out once.
    loop {
        let next = state.borrow().untried_field();
        let Some((at, field)) = next else { break };
        state.borrow_mut().goal = Goal::LeaveOut(at.clone(), field);
        count()?;
        pass::<T>(&state).map_err(&fail)?;
        if !state.borrow().structs[&at].required.contains_key(field) {
            return Err(fail(format!(
                "{}: the field {field:?} could not be left out to see whether it is required",
                show(&at)
            )));
        }
    }

    let st = state.borrow();
    Ok(st.resolve(&root))
}

/// Far more than any game state needs (one pass per variant and per field); it stops a
/// type that would not settle.
const PASS_LIMIT: usize = 100_000;

/// One run of `T::deserialize`: the root of what it read, or `None` when the pass learnt
/// something that needs another one (a field is required, an alias, a value refused).
fn pass<T: DeserializeOwned>(state: &RefCell<State>) -> std::result::Result<Option<Node>, String> {
    state.borrow_mut().stack.clear();
    let out = RefCell::new(None);
    let tracer = Tracer {
        state,
        at: Vec::new(),
        out: &out,
    };
    match T::deserialize(tracer) {
        Ok(_) => Ok(Some(out.into_inner().unwrap_or(Node::Leaf(Shape::Any)))),
        Err(Fail::Again) => Ok(None),
        Err(Fail::Refused { at, why }) => Err(format!("{at}: {why}")),
        Err(other) => Err(format!("(root): {other}")),
    }
}

/// One step of a place in a type, written as shape paths are (`docs/FORMAT.md`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    /// A struct field, or the variant's name an enum's content sits under.
    Key(String),
    /// Each element of a sequence: `[]`.
    Each,
    /// Each value of a map: `[*]`.
    Values,
    /// One element of a tuple: `[0]`.
    Index(usize),
}

type At = Vec<Seg>;

/// A place in the type as a shape path: `hero.inventory[]`, `systems[*].name`, `(root)`.
fn show(at: &[Seg]) -> String {
    if at.is_empty() {
        return "(root)".to_string();
    }
    let mut text = String::new();
    for seg in at {
        match seg {
            Seg::Key(key) => {
                let one = Path::from(vec![Segment::Key(key.clone())]).to_string();
                if !text.is_empty() && !one.starts_with('[') {
                    text.push('.');
                }
                text.push_str(&one);
            }
            Seg::Each => text.push_str("[]"),
            Seg::Values => text.push_str("[*]"),
            Seg::Index(i) => text.push_str(&format!("[{i}]")),
        }
    }
    text
}

fn under(at: &[Seg], seg: Seg) -> At {
    let mut deeper = at.to_vec();
    deeper.push(seg);
    deeper
}

/// What one pass read at a place. Structs and enums refer to their place, where what is
/// learnt over all passes (which fields are required, each variant's content) is kept.
#[derive(Clone, Debug)]
enum Node {
    Leaf(Shape),
    Array(Box<Node>),
    Tuple(Vec<Node>),
    Map(Box<Node>),
    Nullable(Box<Node>),
    Struct(At, Vec<(&'static str, Node)>),
    Enum(At),
}

/// What a pass is for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Goal {
    /// Read the variants not read yet; this one (place, variant) at least.
    Read(Option<(At, usize)>),
    /// Leave this field out of the struct at this place.
    LeaveOut(At, &'static str),
}

impl Default for Goal {
    fn default() -> Goal {
        Goal::Read(None)
    }
}

#[derive(Debug)]
struct EnumSite {
    variants: &'static [&'static str],
    /// Each variant's content once read: `None` for a unit variant.
    read: Vec<Option<Option<Node>>>,
}

#[derive(Debug, Default)]
struct StructSite {
    /// The fields given in the last pass that read the struct whole.
    fields: Vec<&'static str>,
    /// Whether each field is required, once it has been left out.
    required: BTreeMap<&'static str, bool>,
    /// Names that turned out to be aliases of another field (serde lists them with the
    /// fields): not given, not members.
    aliases: BTreeSet<&'static str>,
    /// Names known to be a field's own, given before the others so an alias comes second.
    own: BTreeSet<&'static str>,
}

#[derive(Debug, Default)]
struct State {
    goal: Goal,
    enums: BTreeMap<At, EnumSite>,
    structs: BTreeMap<At, StructSite>,
    /// Which made-up value a number gets, by place, after the type refused the first.
    tries: BTreeMap<At, usize>,
    /// The visitors being run, outermost first: the same one twice is a recursive type.
    stack: Vec<&'static str>,
}

impl State {
    fn unread_variant(&self) -> Option<(At, usize)> {
        self.enums.iter().find_map(|(at, site)| {
            site.read
                .iter()
                .position(Option::is_none)
                .map(|i| (at.clone(), i))
        })
    }

    fn untried_field(&self) -> Option<(At, &'static str)> {
        self.structs.iter().find_map(|(at, site)| {
            site.fields
                .iter()
                .find(|f| !site.required.contains_key(*f))
                .map(|f| (at.clone(), *f))
        })
    }

    /// The variant the enum at `at` takes this pass: the one leading to the goal, else one
    /// not read yet, else the first.
    fn choose(&self, at: &[Seg], site: &EnumSite) -> usize {
        let target = match &self.goal {
            Goal::Read(Some((target, i))) if target == at => return *i,
            Goal::Read(target) => target.as_ref().map(|(t, _)| t),
            Goal::LeaveOut(target, _) => Some(target),
        };
        let leads = |i: usize| {
            target.is_some_and(|t| {
                t.len() > at.len()
                    && t.starts_with(at)
                    && t[at.len()] == Seg::Key(site.variants[i].to_string())
            })
        };
        let unread = |i: usize| matches!(self.goal, Goal::Read(_)) && site.read[i].is_none();
        (0..site.variants.len())
            .find(|&i| leads(i))
            .or_else(|| (0..site.variants.len()).find(|&i| unread(i)))
            .unwrap_or(0)
    }

    fn resolve(&self, node: &Node) -> Shape {
        match node {
            Node::Leaf(shape) => shape.clone(),
            Node::Array(inner) => Shape::Array(Box::new(self.resolve(inner))),
            Node::Tuple(items) => Shape::Tuple(items.iter().map(|n| self.resolve(n)).collect()),
            Node::Map(inner) => Shape::Map(Box::new(self.resolve(inner))),
            Node::Nullable(inner) => match self.resolve(inner) {
                // `Option<Option<T>>`: savechain writes both `None`s as null; `any` already
                // takes null (`Option<Value>`).
                shape @ (Shape::Nullable(_) | Shape::Any) => shape,
                shape => Shape::Nullable(Box::new(shape)),
            },
            Node::Struct(at, fields) => {
                let site = self.structs.get(at);
                let members = fields.iter().map(|(name, node)| {
                    let required = site
                        .and_then(|s| s.required.get(name).copied())
                        .unwrap_or(true);
                    let shape = self.resolve(node);
                    let member = match required {
                        true => Member::required(shape),
                        false => Member::optional(shape),
                    };
                    (name.to_string(), member)
                });
                Shape::Object(Object::new(members))
            }
            Node::Enum(at) => {
                let site = &self.enums[at];
                let mut words = Vec::new();
                let mut shapes = Vec::new();
                for (name, read) in site.variants.iter().zip(&site.read) {
                    match read {
                        Some(Some(content)) => {
                            let member = Member::required(self.resolve(content));
                            shapes.push(Shape::Object(Object::new([(name.to_string(), member)])));
                        }
                        _ => words.push(name.to_string()),
                    }
                }
                if !words.is_empty() {
                    shapes.insert(0, Shape::Strings(words));
                }
                match shapes.len() {
                    1 => shapes.remove(0),
                    _ => Shape::OneOf(shapes),
                }
            }
        }
    }
}

/// Why a pass stopped.
#[derive(Debug)]
enum Fail {
    /// The type cannot be described: where and why.
    Refused { at: String, why: String },
    /// The pass learnt something and another must be run.
    Again,
    /// The type's `Deserialize` says a field is missing.
    Missing(&'static str),
    /// The type's `Deserialize` says a field was given twice (an alias).
    Duplicate(&'static str),
    /// The type's `Deserialize` refused what it was given.
    Custom(String),
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fail::Refused { at, why } => write!(f, "{at}: {why}"),
            Fail::Again => f.write_str("another pass is needed"),
            Fail::Missing(field) => write!(f, "missing field `{field}`"),
            Fail::Duplicate(field) => write!(f, "duplicate field `{field}`"),
            Fail::Custom(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Fail {}

impl de::Error for Fail {
    fn custom<M: fmt::Display>(message: M) -> Fail {
        Fail::Custom(message.to_string())
    }

    fn missing_field(field: &'static str) -> Fail {
        Fail::Missing(field)
    }

    fn duplicate_field(field: &'static str) -> Fail {
        Fail::Duplicate(field)
    }
}

type Traced<T> = std::result::Result<T, Fail>;

/// The deserializer of one place in the type: it hands the visitor a made-up value and
/// puts what was asked for in `out`.
struct Tracer<'a> {
    state: &'a RefCell<State>,
    at: At,
    out: &'a RefCell<Option<Node>>,
}

fn expecting(visitor: &dyn Expected) -> String {
    visitor.to_string()
}

impl<'a> Tracer<'a> {
    fn child<'b>(&'b self, at: At, out: &'b RefCell<Option<Node>>) -> Tracer<'b> {
        Tracer {
            state: self.state,
            at,
            out,
        }
    }

    fn refuse(&self, why: impl Into<String>) -> Fail {
        Fail::Refused {
            at: show(&self.at),
            why: why.into(),
        }
    }

    /// What the type's own `Deserialize` refused here, as a refusal naming the place.
    fn settle(&self, fail: Fail) -> Fail {
        match fail {
            Fail::Custom(message) => self.refuse(format!(
                "the type refused the made-up value it was given, so its shape cannot be \
                 traced: {message}"
            )),
            Fail::Missing(_) | Fail::Duplicate(_) => {
                self.refuse(format!("the type refused the fields it was given: {fail}"))
            }
            other => other,
        }
    }

    fn put(&self, node: Node) {
        *self.out.borrow_mut() = Some(node);
    }

    /// Enters a visitor that holds others; the same visitor inside itself is a recursive
    /// type, whose shape would never end.
    fn enter<V>(&self, visitor: &V) -> Traced<()>
    where
        V: Expected,
    {
        let name = type_name::<V>();
        let mut st = self.state.borrow_mut();
        if st.stack.contains(&name) {
            return Err(self.refuse(format!(
                "recursive type: cannot be described ({} contains itself here)",
                expecting(visitor)
            )));
        }
        st.stack.push(name);
        Ok(())
    }

    fn leave(&self) {
        self.state.borrow_mut().stack.pop();
    }

    /// A value of one kind: the first made-up value the type takes among `values`.
    fn leaf<'de, V, T>(
        self,
        shape: Shape,
        values: &[T],
        visitor: V,
        visit: impl FnOnce(V, T) -> Traced<V::Value>,
    ) -> Traced<V::Value>
    where
        V: Visitor<'de>,
        T: Copy,
    {
        let i = self
            .state
            .borrow()
            .tries
            .get(&self.at)
            .copied()
            .unwrap_or(0);
        self.put(Node::Leaf(shape));
        match visit(visitor, values[i.min(values.len() - 1)]) {
            Err(Fail::Custom(_)) if i + 1 < values.len() => {
                self.state.borrow_mut().tries.insert(self.at.clone(), i + 1);
                Err(Fail::Again)
            }
            Err(fail) => Err(self.settle(fail)),
            Ok(value) => Ok(value),
        }
    }

    fn any_value<'de, V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.put(Node::Leaf(Shape::Any));
        visitor.visit_unit().map_err(|e| self.settle(e))
    }
}

fn range<T: TryInto<i128>>(min: T, max: T) -> IntRange {
    let wide = |n: T| n.try_into().unwrap_or_default();
    IntRange::new(wide(min), wide(max))
}

macro_rules! ints {
    ($($method:ident => $visit:ident: $t:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
            let range = range(<$t>::MIN, <$t>::MAX);
            self.leaf(Shape::Int(range), &[0 as $t, 1], visitor, |v, n| v.$visit(n))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Tracer<'_> {
    type Error = Fail;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        let expects = expecting(&visitor);
        // serde_json::Value: the game keeps whatever is there.
        if expects == "any valid JSON value" || expects == "any savechain value" {
            return self.any_value(visitor);
        }
        let why = if expects.starts_with("internally tagged enum") {
            format!(
                "an internally tagged enum (#[serde(tag = \"...\")], {expects}) reads the data \
                 before it knows what it is: its shape cannot be traced; savechain writes \
                 enums externally tagged"
            )
        } else if type_name::<V>().contains("ContentVisitor") {
            "an untagged enum (#[serde(untagged)]) or another type serde reads as buffered \
             content decides what it is from the data: its shape cannot be traced"
                .to_string()
        } else {
            format!(
                "this type reads any kind of value and decides from the data (its \
                 Deserialize calls deserialize_any, expecting {expects}): its shape cannot \
                 be traced"
            )
        };
        Err(self.refuse(why))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::Bool, &[false, true], visitor, |v, b| v.visit_bool(b))
    }

    ints!(deserialize_i8 => visit_i8: i8, deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32, deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8, deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32, deserialize_u64 => visit_u64: u64);

    // savechain reads a 128-bit integer from the integers a save holds: i64 and u64.
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        let wide = IntRange::new(i64::MIN.into(), u64::MAX.into());
        self.leaf(Shape::Int(wide), &[0i128, 1], visitor, |v, n| {
            v.visit_i128(n)
        })
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        let wide = IntRange::U64;
        self.leaf(Shape::Int(wide), &[0u128, 1], visitor, |v, n| {
            v.visit_u128(n)
        })
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::Double, &[0.0, 1.0], visitor, |v, x| v.visit_f32(x))
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::Double, &[0.0, 1.0], visitor, |v, x| v.visit_f64(x))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::String, &['a'], visitor, |v, c| v.visit_char(c))
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::String, &[""], visitor, |v, s| v.visit_str(s))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::Bytes, &[()], visitor, |v, ()| v.visit_bytes(&[]))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::Bytes, &[()], visitor, |v, ()| {
            v.visit_byte_buf(Vec::new())
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.enter(&visitor)?;
        let inner = RefCell::new(None);
        let read = visitor.visit_some(self.child(self.at.clone(), &inner));
        self.leave();
        let read = read.map_err(|e| self.settle(e))?;
        let inner = inner.into_inner().unwrap_or(Node::Leaf(Shape::Any));
        self.put(Node::Nullable(Box::new(inner)));
        Ok(read)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.leaf(Shape::Null, &[()], visitor, |v, ()| v.visit_unit())
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Traced<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Traced<V::Value> {
        // A `savechain::Value`: the game keeps whatever is there.
        if name == crate::serde::TABLE_TOKEN {
            return self.any_value(visitor);
        }
        self.enter(&visitor)?;
        let read = visitor.visit_newtype_struct(self.child(self.at.clone(), self.out));
        self.leave();
        read.map_err(|e| self.settle(e))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.enter(&visitor)?;
        let slot = RefCell::new(None);
        let mut one = Elements {
            tracer: &self,
            slots: std::slice::from_ref(&slot),
            next: 0,
            each: true,
        };
        let read = visitor.visit_seq(&mut one);
        self.leave();
        let read = read.map_err(|e| self.settle(e))?;
        let element = slot.into_inner().unwrap_or(Node::Leaf(Shape::Any));
        self.put(Node::Array(Box::new(element)));
        Ok(read)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Traced<V::Value> {
        self.enter(&visitor)?;
        let slots: Vec<RefCell<Option<Node>>> = (0..len).map(|_| RefCell::new(None)).collect();
        let mut all = Elements {
            tracer: &self,
            slots: &slots,
            next: 0,
            each: false,
        };
        let read = visitor.visit_seq(&mut all);
        self.leave();
        let read = read.map_err(|e| self.settle(e))?;
        let items = slots
            .into_iter()
            .map(|s| s.into_inner().unwrap_or(Node::Leaf(Shape::Any)))
            .collect();
        self.put(Node::Tuple(items));
        Ok(read)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Traced<V::Value> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        let expects = expecting(&visitor);
        if expects.starts_with("struct ") {
            return Err(self.refuse(format!(
                "{expects} is read as a map of any members (#[serde(flatten)]): which \
                 members it has cannot be traced"
            )));
        }
        self.enter(&visitor)?;
        let slot = RefCell::new(None);
        let mut one = Entry {
            tracer: &self,
            slot: &slot,
            given: false,
        };
        let read = visitor.visit_map(&mut one);
        self.leave();
        let read = read.map_err(|e| self.settle(e))?;
        let value = slot.into_inner().unwrap_or(Node::Leaf(Shape::Any));
        self.put(Node::Map(Box::new(value)));
        Ok(read)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Traced<V::Value> {
        let expects = expecting(&visitor);
        if expects.starts_with("adjacently tagged enum") {
            return Err(self.refuse(format!(
                "an adjacently tagged enum (#[serde(tag = \"...\", content = \"...\")], \
                 {expects}): what its content is depends on its tag, which a shape cannot \
                 say; savechain writes enums externally tagged"
            )));
        }
        self.enter(&visitor)?;
        let (keys, left_out) = {
            let mut st = self.state.borrow_mut();
            let left_out = match &st.goal {
                Goal::LeaveOut(at, field) if *at == self.at => Some(*field),
                _ => None,
            };
            let site = st.structs.entry(self.at.clone()).or_default();
            let mut keys: Vec<&'static str> = fields
                .iter()
                .copied()
                .filter(|f| !site.aliases.contains(f) && Some(*f) != left_out)
                .collect();
            // A field's own name before its aliases: then the alias is the duplicate.
            keys.sort_by_key(|k| !site.own.contains(k));
            (keys, left_out)
        };
        let slots: Vec<RefCell<Option<Node>>> = keys.iter().map(|_| RefCell::new(None)).collect();
        let mut access = Fields {
            tracer: &self,
            keys: &keys,
            slots: &slots,
            next: 0,
        };
        let read = visitor.visit_map(&mut access);
        let last = access.next.checked_sub(1).map(|i| keys[i]);
        self.leave();
        let mut st = self.state.borrow_mut();
        let site = st.structs.get_mut(&self.at).expect("entered above");
        match read {
            Ok(read) => {
                match left_out {
                    Some(field) => {
                        site.required.insert(field, false);
                    }
                    None => site.fields = keys.clone(),
                }
                drop(st);
                let members = keys
                    .iter()
                    .zip(slots)
                    .map(|(k, s)| (*k, s.into_inner().unwrap_or(Node::Leaf(Shape::Any))))
                    .collect();
                self.put(Node::Struct(self.at.clone(), members));
                Ok(read)
            }
            Err(Fail::Missing(field)) if Some(field) == left_out => {
                site.required.insert(field, true);
                Err(Fail::Again)
            }
            Err(Fail::Duplicate(own)) => match last {
                Some(key) if key != own => {
                    site.aliases.insert(key);
                    Err(Fail::Again)
                }
                Some(key) if site.own.insert(key) => Err(Fail::Again),
                _ => {
                    drop(st);
                    Err(self.settle(Fail::Duplicate(own)))
                }
            },
            Err(fail) => {
                drop(st);
                Err(self.settle(fail))
            }
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Traced<V::Value> {
        if variants.is_empty() {
            return Err(self.refuse(format!(
                "{} has no variants: no save can hold one",
                expecting(&visitor)
            )));
        }
        self.enter(&visitor)?;
        let chosen = {
            let mut st = self.state.borrow_mut();
            let site = st.enums.remove(&self.at).unwrap_or_else(|| EnumSite {
                variants,
                read: variants.iter().map(|_| None).collect(),
            });
            let chosen = st.choose(&self.at, &site);
            st.enums.insert(self.at.clone(), site);
            chosen
        };
        let read = visitor.visit_enum(Variant {
            tracer: &self,
            index: chosen,
            name: variants[chosen],
        });
        self.leave();
        let read = read.map_err(|e| self.settle(e))?;
        self.put(Node::Enum(self.at.clone()));
        Ok(read)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        self.any_value(visitor)
    }

    // savechain's own deserializers are human readable: types that read differently (an
    // address as text or as bytes) read as they do from a save.
    fn is_human_readable(&self) -> bool {
        true
    }
}

/// The elements of a sequence (one, standing for each) or of a tuple (all of them).
struct Elements<'t, 'a> {
    tracer: &'t Tracer<'a>,
    slots: &'t [RefCell<Option<Node>>],
    next: usize,
    each: bool,
}

impl<'de> de::SeqAccess<'de> for Elements<'_, '_> {
    type Error = Fail;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Traced<Option<S::Value>> {
        let Some(slot) = self.slots.get(self.next) else {
            return Ok(None);
        };
        let seg = match self.each {
            true => Seg::Each,
            false => Seg::Index(self.next),
        };
        self.next += 1;
        let child = self.tracer.child(under(&self.tracer.at, seg), slot);
        let at = child.at.clone();
        seed.deserialize(child)
            .map(Some)
            .map_err(|e| self.tracer.child(at, slot).settle(e))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.slots.len() - self.next)
    }
}

/// A map's one entry, standing for each.
struct Entry<'t, 'a> {
    tracer: &'t Tracer<'a>,
    slot: &'t RefCell<Option<Node>>,
    given: bool,
}

impl<'de> de::MapAccess<'de> for Entry<'_, '_> {
    type Error = Fail;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Traced<Option<K::Value>> {
        if self.given {
            return Ok(None);
        }
        self.given = true;
        let key = Key {
            at: &self.tracer.at,
        };
        seed.deserialize(key).map(Some).map_err(|e| match e {
            Fail::Refused { .. } | Fail::Again => e,
            other => self.tracer.refuse(format!(
                "the map's keys refused the made-up key they were given: {other}"
            )),
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Traced<S::Value> {
        let at = under(&self.tracer.at, Seg::Values);
        let child = self.tracer.child(at.clone(), self.slot);
        seed.deserialize(child)
            .map_err(|e| self.tracer.child(at, self.slot).settle(e))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(usize::from(!self.given))
    }
}

/// A struct's fields, each given once.
struct Fields<'t, 'a> {
    tracer: &'t Tracer<'a>,
    keys: &'t [&'static str],
    slots: &'t [RefCell<Option<Node>>],
    next: usize,
}

impl<'de> de::MapAccess<'de> for Fields<'_, '_> {
    type Error = Fail;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Traced<Option<K::Value>> {
        let Some(&key) = self.keys.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Traced<S::Value> {
        let i = self.next - 1;
        let at = under(&self.tracer.at, Seg::Key(self.keys[i].to_string()));
        let slot = &self.slots[i];
        seed.deserialize(self.tracer.child(at.clone(), slot))
            .map_err(|e| self.tracer.child(at, slot).settle(e))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.keys.len() - self.next)
    }
}

/// The variant an enum takes this pass.
struct Variant<'t, 'a> {
    tracer: &'t Tracer<'a>,
    index: usize,
    name: &'static str,
}

impl Variant<'_, '_> {
    fn record(&self, content: Option<Node>) {
        let mut st = self.tracer.state.borrow_mut();
        // A pass that leaves a field out reads a struct without it: not the content.
        if let Goal::LeaveOut(..) = st.goal {
            return;
        }
        if let Some(site) = st.enums.get_mut(&self.tracer.at) {
            site.read[self.index] = Some(content);
        }
    }

    fn content_at(&self) -> At {
        under(&self.tracer.at, Seg::Key(self.name.to_string()))
    }
}

impl<'de> de::EnumAccess<'de> for Variant<'_, '_> {
    type Error = Fail;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Traced<(S::Value, Self)> {
        let name = seed.deserialize(BorrowedStrDeserializer::new(self.name))?;
        Ok((name, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, '_> {
    type Error = Fail;

    fn unit_variant(self) -> Traced<()> {
        self.record(None);
        Ok(())
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Traced<S::Value> {
        let slot = RefCell::new(None);
        let at = self.content_at();
        let child = self.tracer.child(at.clone(), &slot);
        let read = seed
            .deserialize(child)
            .map_err(|e| self.tracer.child(at, &slot).settle(e))?;
        self.record(Some(slot.into_inner().unwrap_or(Node::Leaf(Shape::Any))));
        Ok(read)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Traced<V::Value> {
        let slot = RefCell::new(None);
        let read = de::Deserializer::deserialize_tuple(
            self.tracer.child(self.content_at(), &slot),
            len,
            visitor,
        )?;
        self.record(slot.into_inner());
        Ok(read)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Traced<V::Value> {
        let slot = RefCell::new(None);
        let read = de::Deserializer::deserialize_struct(
            self.tracer.child(self.content_at(), &slot),
            self.name,
            fields,
            visitor,
        )?;
        self.record(slot.into_inner());
        Ok(read)
    }
}

/// A map's key: savechain writes keys as text, so only what it can write as text is taken
/// (strings, chars, integers, bools, unit variants and newtypes of those).
struct Key<'t> {
    at: &'t [Seg],
}

impl Key<'_> {
    fn refuse(&self, what: &str) -> Fail {
        Fail::Refused {
            at: show(self.at),
            why: format!(
                "a map whose keys are {what}: savechain writes a map's keys as text, and only \
                 strings, chars, integers, bools, unit variants and newtypes of those can be"
            ),
        }
    }
}

macro_rules! key_ints {
    ($($method:ident => $visit:ident: $t:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
            visitor.$visit(0)
        }
    )*};
}

macro_rules! key_refused {
    ($($method:ident: $what:literal),*) => {$(
        fn $method<V: Visitor<'de>>(self, _visitor: V) -> Traced<V::Value> {
            Err(self.refuse($what))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Key<'_> {
    type Error = Fail;

    key_ints!(deserialize_i8 => visit_i8: i8, deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32, deserialize_i64 => visit_i64: i64,
        deserialize_i128 => visit_i128: i128, deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16, deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64, deserialize_u128 => visit_u128: u128);

    key_refused!(deserialize_any: "read as any kind of value",
        deserialize_f32: "floats", deserialize_f64: "floats",
        deserialize_bytes: "byte strings", deserialize_byte_buf: "byte strings",
        deserialize_option: "options", deserialize_unit: "units",
        deserialize_seq: "sequences", deserialize_map: "maps",
        deserialize_ignored_any: "ignored");

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        visitor.visit_bool(false)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        visitor.visit_char('a')
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        visitor.visit_str("")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        visitor.visit_str("")
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Traced<V::Value> {
        visitor.visit_str("")
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _visitor: V,
    ) -> Traced<V::Value> {
        Err(self.refuse("unit structs"))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Traced<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Traced<V::Value> {
        Err(self.refuse("tuples"))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        _visitor: V,
    ) -> Traced<V::Value> {
        Err(self.refuse("tuple structs"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Traced<V::Value> {
        Err(self.refuse("structs"))
    }

    /// A unit variant as a key is its name; the first variant stands for each.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Traced<V::Value> {
        match variants.first() {
            Some(&first) => visitor
                .visit_enum(BorrowedStrDeserializer::<Fail>::new(first))
                .map_err(|_| self.refuse("enums whose first variant is not a unit variant")),
            None => Err(self.refuse("enums without variants")),
        }
    }

    fn is_human_readable(&self) -> bool {
        true
    }
}
