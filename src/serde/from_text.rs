//! A serde `Deserializer` straight over save text: a game's typed state read without a
//! document tree, strings borrowed from the text where they have no escapes, errors with
//! line, column and path.
//!
//! It reads with the text reader's own scanning (strings, numbers, hexfloats, whitespace,
//! errors), so it accepts exactly what the reader does. Plain values, arrays and objects,
//! and canonical doubles stream; an array that starts with a one-letter string (a tag, or
//! something that could be one: an escape, a byte string, a Lua table) is read as a tree by
//! the reader and handed over from there, so the format's rules live in one place.

use std::borrow::Cow;

use ::serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use ::serde::forward_to_deserialize_any;

use super::de::ValueDeserializer;
use super::TABLE_TOKEN;
use crate::error::ErrorKind;
use crate::path::Segment;
use crate::text::reader::{Failure, Number, Parsed, Reader};
use crate::text::{Tree, MAX_DEPTH};

/// The error of the text deserializer: a reader failure, which knows where it is.
pub(crate) type TextError = Box<Failure>;

impl de::Error for Box<Failure> {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Failure::about_value(message.to_string())
    }
}

/// The keys of the objects being read, innermost last, with where each stands: shared by
/// all objects so none allocates its own, and checked for repeats as each object ends.
pub(crate) type Keys<'de> = Vec<(Cow<'de, str>, usize)>;

/// Deserializes from save text, one value at the current position of a reader.
pub(crate) struct TextDeserializer<'r, 'de> {
    reader: &'r mut Reader<'de, Tree>,
    keys: &'r mut Keys<'de>,
    depth: usize,
}

impl<'r, 'de> TextDeserializer<'r, 'de> {
    pub(crate) fn new(
        reader: &'r mut Reader<'de, Tree>,
        keys: &'r mut Keys<'de>,
    ) -> TextDeserializer<'r, 'de> {
        TextDeserializer {
            reader,
            keys,
            depth: 0,
        }
    }

    fn nested(&mut self) -> TextDeserializer<'_, 'de> {
        TextDeserializer {
            reader: &mut *self.reader,
            keys: &mut *self.keys,
            depth: self.depth,
        }
    }

    fn enter(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Failure::at(
                ErrorKind::Value,
                self.reader.pos(),
                format!("nested more than {MAX_DEPTH} arrays and objects deep"),
            ));
        }
        Ok(())
    }

    /// The value here read as a tree by the reader, and deserialized from the tree: for
    /// what the format spells as tags. Errors inside it are placed at its start, with
    /// their paths inside it.
    fn through_tree<V: Visitor<'de>>(
        &mut self,
        visit: impl FnOnce(ValueDeserializer, V) -> Result<V::Value, crate::serde::Error>,
        visitor: V,
    ) -> Parsed<V::Value> {
        let start = self.reader.pos();
        let value = self.reader.value()?;
        visit(ValueDeserializer::new(value), visitor)
            .map_err(|e| Failure::at(ErrorKind::Value, start, e.message()).inside_path(e.path()))
    }

    /// Whether the array starting here may be a tag (it starts with a one-letter string).
    fn may_be_tag(&mut self) -> bool {
        let start = self.reader.pos();
        self.reader.seek(start + 1);
        self.reader.skip_whitespace();
        let letter = self.reader.at_letter();
        self.reader.seek(start);
        letter
    }

    /// The array starting at `start`, read by the visitor. What the visitor refuses without
    /// saying where (a missing element) is placed at the array's `[` by the caller.
    fn array_here<V: Visitor<'de>>(&mut self, start: usize, visitor: V) -> Parsed<V::Value> {
        self.enter()?;
        self.reader.seek(start + 1);
        let mut elements = Elements::new(self);
        let value = visitor.visit_seq(&mut elements)?;
        elements.finish()?;
        self.depth -= 1;
        Ok(value)
    }

    /// The object starting at `start`, read by the visitor. What the visitor refuses without
    /// saying where (a missing or repeated field) is placed at the object's `{` by the caller.
    fn object_here<V: Visitor<'de>>(&mut self, start: usize, visitor: V) -> Parsed<V::Value> {
        self.enter()?;
        self.reader.seek(start + 1);
        let mut members = Members::new(self);
        let value = visitor.visit_map(&mut members)?;
        members.finish()?;
        self.depth -= 1;
        Ok(value)
    }

    fn unexpected_here<V: Visitor<'de>>(&mut self, visitor: &V) -> Parsed<V::Value> {
        let start = self.reader.pos();
        let found = match self.reader.peek() {
            Some(b'n') => Unexpected::Unit,
            Some(b't') => Unexpected::Bool(true),
            Some(b'f') => Unexpected::Bool(false),
            Some(b'"') => Unexpected::Other("a string"),
            Some(b'[') => Unexpected::Seq,
            Some(b'{') => Unexpected::Map,
            _ => Unexpected::Other("a number"),
        };
        Err(<TextError as de::Error>::invalid_type(found, visitor).place(start))
    }
}

impl<'de> de::Deserializer<'de> for &mut TextDeserializer<'_, 'de> {
    type Error = TextError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        self.reader.skip_whitespace();
        let start = self.reader.pos();
        let result = match self.reader.peek() {
            Some(b'n') => {
                self.reader.value()?;
                visitor.visit_unit()
            }
            Some(b't' | b'f') => {
                let b = self.reader.peek() == Some(b't');
                self.reader.value()?;
                visitor.visit_bool(b)
            }
            Some(b'"') => match self.reader.string_text()? {
                Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
                Cow::Owned(s) => visitor.visit_string(s),
            },
            Some(b'-' | b'0'..=b'9') => match self.reader.number_token()? {
                Number::Int(i) => visitor.visit_i64(i),
                Number::UInt(u) => visitor.visit_u64(u),
                Number::Double(d) => visitor.visit_f64(d),
            },
            Some(b'[') => {
                if let Some(d) = self.reader.canonical_double() {
                    visitor.visit_f64(d)
                } else if self.may_be_tag() {
                    self.through_tree(|d, v| de::Deserializer::deserialize_any(d, v), visitor)
                } else {
                    self.array_here(start, visitor)
                }
            }
            Some(b'{') => self.object_here(start, visitor),
            _ => self
                .reader
                .syntax("a value (object, array, string, number, true, false or null)"),
        };
        result.map_err(|e| e.place(start))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        self.reader.skip_whitespace();
        if self.reader.peek() == Some(b'n') {
            self.reader.value()?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    // Floats also take integers, as from a tree: a modder may well type `5`.
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        self.reader.skip_whitespace();
        let start = self.reader.pos();
        match self.reader.peek() {
            Some(b'-' | b'0'..=b'9') => {
                let d = match self.reader.number_token()? {
                    Number::Int(i) => i as f64,
                    Number::UInt(u) => u as f64,
                    Number::Double(d) => d,
                };
                visitor.visit_f64(d).map_err(|e: TextError| e.place(start))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        self.reader.skip_whitespace();
        let start = self.reader.pos();
        match self.reader.peek() {
            Some(b'"') => match self.reader.string_text()? {
                Cow::Borrowed(s) => visitor.visit_borrowed_bytes(s.as_bytes()),
                Cow::Owned(s) => visitor.visit_byte_buf(s.into_bytes()),
            }
            .map_err(|e: TextError| e.place(start)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        self.reader.skip_whitespace();
        if self.reader.peek() == Some(b'n') {
            self.reader.value()?;
            visitor.visit_unit()
        } else {
            self.unexpected_here(&visitor)
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Parsed<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Parsed<V::Value> {
        if name == TABLE_TOKEN {
            // A `Value`, which keeps Lua tables: what may be a tag goes through the tree.
            self.reader.skip_whitespace();
            if self.reader.peek() == Some(b'[') && self.may_be_tag() {
                return self.through_tree(
                    |d, v| de::Deserializer::deserialize_newtype_struct(d, name, v),
                    visitor,
                );
            }
            return self.deserialize_any(visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Parsed<V::Value> {
        self.reader.skip_whitespace();
        let start = self.reader.pos();
        let result = match self.reader.peek() {
            Some(b'"') => {
                let variant = self.reader.string_text()?;
                visitor.visit_enum(variant.into_deserializer())
            }
            Some(b'{') => self.enter().and_then(|()| {
                self.reader.seek(start + 1);
                let value = visitor.visit_enum(Variant {
                    de: &mut *self,
                    start,
                })?;
                self.depth -= 1;
                Ok(value)
            }),
            Some(b'[') if self.may_be_tag() => self.through_tree(
                |d, v| de::Deserializer::deserialize_enum(d, name, variants, v),
                visitor,
            ),
            _ => Err(<TextError as de::Error>::invalid_value(
                Unexpected::Other("this value"),
                &"a variant name or an object with exactly one entry",
            )),
        };
        result.map_err(|e| e.place(start))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Parsed<V::Value> {
        // Skipped, but checked as the reader checks everything.
        self.reader.value()?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        true
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string
        seq tuple tuple_struct map struct identifier
    }
}

/// The elements of an array, after its `[`.
struct Elements<'a, 'r, 'de> {
    de: &'a mut TextDeserializer<'r, 'de>,
    index: usize,
    done: bool,
}

impl<'a, 'r, 'de> Elements<'a, 'r, 'de> {
    fn new(de: &'a mut TextDeserializer<'r, 'de>) -> Self {
        Elements {
            de,
            index: 0,
            done: false,
        }
    }

    /// After the visitor: an array it did not read to the end has more elements than the
    /// type takes, an error as from a tree.
    fn finish(mut self) -> Parsed<()> {
        let read = self.index;
        while de::SeqAccess::next_element::<de::IgnoredAny>(&mut self)?.is_some() {}
        if self.index == read {
            return Ok(());
        }
        Err(<TextError as de::Error>::invalid_length(
            self.index,
            &"fewer elements in array",
        ))
    }
}

impl<'de> de::SeqAccess<'de> for Elements<'_, '_, 'de> {
    type Error = TextError;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Parsed<Option<S::Value>> {
        if self.done {
            return Ok(None);
        }
        let reader = &mut *self.de.reader;
        reader.skip_whitespace();
        if self.index > 0 {
            match reader.peek() {
                Some(b',') => {
                    reader.seek(reader.pos() + 1);
                    reader.skip_whitespace();
                    if reader.peek() == Some(b']') {
                        return reader
                            .syntax("another value after ',' (JSON allows no trailing comma)");
                    }
                }
                Some(b']') => {
                    reader.seek(reader.pos() + 1);
                    self.done = true;
                    return Ok(None);
                }
                _ => return reader.syntax("',' or ']' after an array element"),
            }
        } else if reader.peek() == Some(b']') {
            reader.seek(reader.pos() + 1);
            self.done = true;
            return Ok(None);
        }
        let index = self.index;
        self.index += 1;
        seed.deserialize(&mut self.de.nested())
            .map(Some)
            .map_err(|e| e.inside(Segment::Index(index)))
    }
}

/// The members of an object, after its `{`; keys are checked for repeats at the end.
struct Members<'a, 'r, 'de> {
    de: &'a mut TextDeserializer<'r, 'de>,
    /// Where this object's keys start on the shared stack.
    base: usize,
    /// Whether the keys so far came in strictly increasing order, as a canonical text has
    /// them: then no key can repeat, and nothing more needs checking.
    sorted: bool,
    done: bool,
}

impl<'a, 'r, 'de> Members<'a, 'r, 'de> {
    fn new(de: &'a mut TextDeserializer<'r, 'de>) -> Self {
        let base = de.keys.len();
        Members {
            de,
            base,
            sorted: true,
            done: false,
        }
    }

    fn count(&self) -> usize {
        self.de.keys.len() - self.base
    }

    /// After the visitor: refuses a key that appears twice, as the reader does, and an
    /// object the visitor did not read to the end (more members than the type takes, an
    /// error as from a tree).
    fn finish(mut self) -> Parsed<()> {
        let read = self.count();
        while !self.done {
            if de::MapAccess::next_key::<de::IgnoredAny>(&mut self)?.is_some() {
                de::MapAccess::next_value::<de::IgnoredAny>(&mut self)?;
            }
        }
        let count = self.count();
        let keys = &self.de.keys[self.base..];
        let repeat = if self.sorted { None } else { repeated(keys) };
        if let Some((first, second)) = repeat {
            let key = &keys[second].0;
            let text = self.de.reader.text().as_bytes();
            let earlier = crate::error::Location::of_offset(text, keys[first].1);
            return Err(Failure::at(
                ErrorKind::Value,
                keys[second].1,
                format!(
                    "duplicate key {key:?} (first at line {}, column {}); each key may appear once",
                    earlier.line, earlier.column
                ),
            ));
        }
        self.de.keys.truncate(self.base);
        if count > read {
            return Err(<TextError as de::Error>::invalid_length(
                count,
                &"fewer elements in map",
            ));
        }
        Ok(())
    }
}

/// The first pair of keys that are the same, by the position of the second.
fn repeated(keys: &[(Cow<'_, str>, usize)]) -> Option<(usize, usize)> {
    if keys.len() <= 16 {
        return (1..keys.len())
            .find_map(|j| (0..j).find(|&i| keys[i].0 == keys[j].0).map(|i| (i, j)));
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| keys[a].0.cmp(&keys[b].0).then(a.cmp(&b)));
    order
        .windows(2)
        .filter(|w| keys[w[0]].0 == keys[w[1]].0)
        .map(|w| (w[0], w[1]))
        .min_by_key(|&(_, second)| second)
}

impl<'de> de::MapAccess<'de> for Members<'_, '_, 'de> {
    type Error = TextError;

    fn next_key_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Parsed<Option<S::Value>> {
        if self.done {
            return Ok(None);
        }
        let reader = &mut *self.de.reader;
        reader.skip_whitespace();
        let after_comma = self.de.keys.len() > self.base;
        if after_comma {
            match reader.peek() {
                Some(b',') => reader.seek(reader.pos() + 1),
                Some(b'}') => {
                    reader.seek(reader.pos() + 1);
                    self.done = true;
                    return Ok(None);
                }
                _ => {
                    let key = &self.de.keys[self.de.keys.len() - 1].0;
                    return reader.syntax(&format!("',' or '}}' after the member {key:?}"));
                }
            }
        } else if reader.peek() == Some(b'}') {
            reader.seek(reader.pos() + 1);
            self.done = true;
            return Ok(None);
        }
        let (at, key) = reader.member_key(after_comma)?;
        if self.sorted && after_comma {
            self.sorted = self.de.keys[self.de.keys.len() - 1].0 < key;
        }
        self.de.keys.push((key.clone(), at));
        let read = match key {
            Cow::Borrowed(k) => seed.deserialize(de::value::BorrowedStrDeserializer::new(k)),
            Cow::Owned(k) => seed.deserialize(de::value::StringDeserializer::new(k)),
        };
        // A key the type refuses (an unknown field) is named in the path, as from a tree.
        read.map(Some).map_err(|e: TextError| {
            let key = self.de.keys[self.de.keys.len() - 1].0.to_string();
            e.place(at).inside(Segment::Key(key))
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Parsed<S::Value> {
        let index = self.de.keys.len() - 1;
        seed.deserialize(&mut self.de.nested())
            .map_err(|e| e.inside(Segment::Key(self.de.keys[index].0.to_string())))
    }
}

/// An enum written as an object of one member, after its `{`.
struct Variant<'a, 'r, 'de> {
    de: &'a mut TextDeserializer<'r, 'de>,
    start: usize,
}

impl<'a, 'r, 'de> de::EnumAccess<'de> for Variant<'a, 'r, 'de> {
    type Error = TextError;
    type Variant = VariantContent<'a, 'r, 'de>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Parsed<(S::Value, Self::Variant)> {
        let reader = &mut *self.de.reader;
        reader.skip_whitespace();
        if reader.peek() != Some(b'"') {
            return Err(<TextError as de::Error>::invalid_value(
                Unexpected::Map,
                &"a variant name or an object with exactly one entry",
            )
            .place(self.start));
        }
        let at = reader.pos();
        let name = reader.string_text()?;
        reader.expect(b':', "':' after the key")?;
        let read = match &name {
            Cow::Borrowed(k) => seed.deserialize(de::value::BorrowedStrDeserializer::new(k)),
            Cow::Owned(k) => seed.deserialize(de::value::StrDeserializer::new(k)),
        };
        let variant = read.map_err(|e: TextError| e.place(at))?;
        Ok((
            variant,
            VariantContent {
                de: self.de,
                name: name.into_owned(),
                start: self.start,
            },
        ))
    }
}

struct VariantContent<'a, 'r, 'de> {
    de: &'a mut TextDeserializer<'r, 'de>,
    name: String,
    start: usize,
}

impl<'de> VariantContent<'_, '_, 'de> {
    /// After the content: the object must end, with no second member.
    fn close<T>(self, value: T) -> Parsed<T> {
        let reader = &mut *self.de.reader;
        reader.skip_whitespace();
        if reader.peek() == Some(b'}') {
            reader.seek(reader.pos() + 1);
            return Ok(value);
        }
        Err(<TextError as de::Error>::invalid_value(
            Unexpected::Map,
            &"a variant name or an object with exactly one entry",
        )
        .place(self.start))
    }

    fn content<T>(
        &mut self,
        read: impl FnOnce(&mut TextDeserializer<'_, 'de>) -> Parsed<T>,
    ) -> Parsed<T> {
        let name = self.name.clone();
        read(&mut self.de.nested()).map_err(|e| e.inside(Segment::Key(name)))
    }
}

impl<'de> de::VariantAccess<'de> for VariantContent<'_, '_, 'de> {
    type Error = TextError;

    fn unit_variant(mut self) -> Parsed<()> {
        self.content(|de| <() as de::Deserialize>::deserialize(de))?;
        self.close(())
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(mut self, seed: S) -> Parsed<S::Value> {
        let value = self.content(|de| seed.deserialize(de))?;
        self.close(value)
    }

    fn tuple_variant<V: Visitor<'de>>(mut self, _len: usize, visitor: V) -> Parsed<V::Value> {
        let value = self.content(|de| de::Deserializer::deserialize_seq(de, visitor))?;
        self.close(value)
    }

    fn struct_variant<V: Visitor<'de>>(
        mut self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Parsed<V::Value> {
        let value = self.content(|de| de::Deserializer::deserialize_map(de, visitor))?;
        self.close(value)
    }
}
