//! Serde `Deserializer`s that read a [`Value`], owned or borrowed (so `&str` and `&[u8]` can
//! point into it).

use ::serde::de::value::StrDeserializer;
use ::serde::de::{self, DeserializeSeed, Error as _, IntoDeserializer, Unexpected, Visitor};
use ::serde::forward_to_deserialize_any;

use super::Error;
use crate::path::Segment;
use crate::value::{Table, Value};

/// Reads an owned [`Value`], moving its strings and byte strings out rather than copying.
pub struct ValueDeserializer {
    value: Value,
}

impl ValueDeserializer {
    /// A deserializer that moves values out of `value`.
    pub fn new(value: Value) -> ValueDeserializer {
        ValueDeserializer { value }
    }

    fn peek(&self) -> &Value {
        &self.value
    }
}

/// Reads a borrowed [`Value`]; strings and byte strings are lent to the visitor for `'de`.
pub struct ValueRefDeserializer<'de> {
    value: &'de Value,
}

impl<'de> ValueRefDeserializer<'de> {
    /// A deserializer that borrows from `value`.
    pub fn new(value: &'de Value) -> ValueRefDeserializer<'de> {
        ValueRefDeserializer { value }
    }

    fn peek(&self) -> &Value {
        self.value
    }
}

impl<'de> IntoDeserializer<'de, Error> for Value {
    type Deserializer = ValueDeserializer;

    fn into_deserializer(self) -> ValueDeserializer {
        ValueDeserializer::new(self)
    }
}

impl<'de> IntoDeserializer<'de, Error> for &'de Value {
    type Deserializer = ValueRefDeserializer<'de>;

    fn into_deserializer(self) -> ValueRefDeserializer<'de> {
        ValueRefDeserializer::new(self)
    }
}

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Int(i) => Unexpected::Signed(*i),
        Value::UInt(u) => Unexpected::Unsigned(*u),
        Value::Double(d) => Unexpected::Float(*d),
        Value::String(s) => Unexpected::Str(s),
        Value::Bytes(b) => Unexpected::Bytes(b),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
        Value::Table(_) => Unexpected::Other(value.kind()),
    }
}

fn not_one_entry() -> Error {
    Error::invalid_value(
        Unexpected::Map,
        &"a variant name or an object with exactly one entry",
    )
}

/// Hands a Lua table to `Value`'s visitor as the one-member map it recognises (see
/// [`TABLE_TOKEN`](super::TABLE_TOKEN)).
pub(crate) fn visit_table<'de, V: Visitor<'de>>(
    spelling: Value,
    visitor: V,
) -> Result<V::Value, Error> {
    let member = std::iter::once((super::TABLE_TOKEN, spelling));
    visitor.visit_map(de::value::MapDeserializer::new(member))
}

/// The methods that behave the same whether the value is owned or borrowed.
macro_rules! shared_methods {
    () => {
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.peek() {
                Value::Null => visitor.visit_none(),
                _ => visitor.visit_some(self),
            }
        }

        fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.peek() {
                Value::Null => visitor.visit_unit(),
                other => Err(Error::invalid_type(unexpected(other), &visitor)),
            }
        }

        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            self.deserialize_unit(visitor)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            if name == super::TABLE_TOKEN {
                return match self.peek() {
                    Value::Table(table) => visit_table(table.spelling(), visitor),
                    _ => self.deserialize_any(visitor),
                };
            }
            visitor.visit_newtype_struct(self)
        }

        // Floats also take integers: a modder may well type `5` for a float field.
        fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match *self.peek() {
                Value::Int(i) => visitor.visit_f64(i as f64),
                Value::UInt(u) => visitor.visit_f64(u as f64),
                _ => self.deserialize_any(visitor),
            }
        }

        fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match *self.peek() {
                Value::Int(i) => visitor.visit_f32(i as f32),
                Value::UInt(u) => visitor.visit_f32(u as f32),
                _ => self.deserialize_any(visitor),
            }
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_unit()
        }

        fn is_human_readable(&self) -> bool {
            true
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string
            seq tuple tuple_struct map struct identifier
        }
    };
}

impl<'de> de::Deserializer<'de> for ValueDeserializer {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Int(i) => visitor.visit_i64(i),
            Value::UInt(u) => visitor.visit_u64(u),
            Value::Double(d) => visitor.visit_f64(d),
            Value::String(s) => visitor.visit_string(s),
            Value::Bytes(b) => visitor.visit_byte_buf(b),
            Value::Array(items) => visit_array(items.into_iter(), visitor),
            Value::Object(map) => visit_object(map.into_iter(), visitor),
            // A class instance or shared table reads as its contents; the other Lua tables
            // have no serde counterpart.
            Value::Table(table) => match *table {
                Table::Shared { value, .. } | Table::Class { value, .. } => {
                    ValueDeserializer::new(value).deserialize_any(visitor)
                }
                other => Err(Error::invalid_type(
                    unexpected(&Value::Table(Box::new(other))),
                    &visitor,
                )),
            },
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_byte_buf(s.into_bytes()),
            other => ValueDeserializer::new(other).deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::String(variant) => visitor.visit_enum(EnumDeserializer::<_, Value> {
                variant,
                content: None,
            }),
            Value::Object(map) => visit_enum_entries(map.into_iter(), visitor),
            other => Err(Error::invalid_type(unexpected(&other), &visitor)),
        }
    }

    shared_methods!();
}

impl<'de> de::Deserializer<'de> for ValueRefDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::UInt(u) => visitor.visit_u64(*u),
            Value::Double(d) => visitor.visit_f64(*d),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Bytes(b) => visitor.visit_borrowed_bytes(b),
            Value::Array(items) => visit_array(items.iter(), visitor),
            Value::Object(map) => visit_object(map.iter(), visitor),
            Value::Table(table) => match &**table {
                Table::Shared { value, .. } | Table::Class { value, .. } => {
                    ValueRefDeserializer::new(value).deserialize_any(visitor)
                }
                _ => Err(Error::invalid_type(unexpected(self.value), &visitor)),
            },
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_borrowed_bytes(s.as_bytes()),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::String(variant) => visitor.visit_enum(EnumDeserializer::<_, &Value> {
                variant: variant.as_str(),
                content: None,
            }),
            Value::Object(map) => visit_enum_entries(map.iter(), visitor),
            other => Err(Error::invalid_type(unexpected(other), &visitor)),
        }
    }

    shared_methods!();
}

/// Hands an enum stored as an object to a visitor: its one member is the variant's name
/// and content (`{"Move": [1, 2]}`); any other number of members is an error.
pub(crate) fn visit_enum_entries<'de, I, K, V, Vis>(
    mut entries: I,
    visitor: Vis,
) -> Result<Vis::Value, Error>
where
    I: Iterator<Item = (K, V)>,
    K: ObjectKey<'de>,
    V: IntoDeserializer<'de, Error>,
    Vis: Visitor<'de>,
{
    match (entries.next(), entries.next()) {
        (Some((variant, content)), None) => visitor.visit_enum(EnumDeserializer {
            variant,
            content: Some(content),
        }),
        _ => Err(not_one_entry()),
    }
}

/// Hands an array's elements to a visitor, numbering them for error paths.
struct SeqDeserializer<I> {
    items: I,
    index: usize,
}

fn visit_array<'de, I, V>(items: I, visitor: V) -> Result<V::Value, Error>
where
    I: ExactSizeIterator,
    I::Item: IntoDeserializer<'de, Error>,
    V: Visitor<'de>,
{
    let len = items.len();
    let mut seq = SeqDeserializer { items, index: 0 };
    let value = visitor.visit_seq(&mut seq)?;
    // A tuple that stops early would silently drop the rest.
    match seq.items.len() {
        0 => Ok(value),
        _ => Err(Error::invalid_length(len, &"fewer elements in array")),
    }
}

impl<'de, I> de::SeqAccess<'de> for SeqDeserializer<I>
where
    I: ExactSizeIterator,
    I::Item: IntoDeserializer<'de, Error>,
{
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(item.into_deserializer())
            .map(Some)
            .map_err(|e| e.at(Segment::Index(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// An object key as a map access holds it: owned (lent out only for the visit) or borrowed
/// for `'de`.
pub(crate) trait ObjectKey<'de> {
    fn deserializer(&self) -> KeyDeserializer<'_, 'de>;
    fn into_segment(self) -> Segment;
}

impl<'de> ObjectKey<'de> for String {
    fn deserializer(&self) -> KeyDeserializer<'_, 'de> {
        KeyDeserializer::Transient(self)
    }

    fn into_segment(self) -> Segment {
        Segment::Key(self)
    }
}

impl<'de> ObjectKey<'de> for &'de str {
    fn deserializer(&self) -> KeyDeserializer<'_, 'de> {
        KeyDeserializer::Borrowed(self)
    }

    fn into_segment(self) -> Segment {
        Segment::Key(self.to_string())
    }
}

/// Hands an object's entries to a visitor, keeping each key until its value is read so errors
/// can name it.
struct MapDeserializer<I, K, V> {
    entries: I,
    pending: Option<(K, V)>,
}

fn visit_object<'de, I, K, V, Vis>(entries: I, visitor: Vis) -> Result<Vis::Value, Error>
where
    I: ExactSizeIterator<Item = (K, V)>,
    K: ObjectKey<'de>,
    V: IntoDeserializer<'de, Error>,
    Vis: Visitor<'de>,
{
    let len = entries.len();
    let mut map = MapDeserializer {
        entries,
        pending: None,
    };
    let value = visitor.visit_map(&mut map)?;
    match map.entries.len() {
        0 => Ok(value),
        _ => Err(Error::invalid_length(len, &"fewer elements in map")),
    }
}

impl<'de, I, K, V> de::MapAccess<'de> for MapDeserializer<I, K, V>
where
    I: ExactSizeIterator<Item = (K, V)>,
    K: ObjectKey<'de>,
    V: IntoDeserializer<'de, Error>,
{
    type Error = Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        match seed.deserialize(key.deserializer()) {
            Ok(read) => {
                self.pending = Some((key, value));
                Ok(Some(read))
            }
            Err(e) => Err(e.at(key.into_segment())),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| Error::custom("map value requested before its key"))?;
        seed.deserialize(value.into_deserializer())
            .map_err(|e| e.at(key.into_segment()))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// An enum as stored: the variant name, and the content unless it is a unit variant written as
/// a bare string.
pub(crate) struct EnumDeserializer<K, V> {
    pub(crate) variant: K,
    pub(crate) content: Option<V>,
}

impl<'de, K, V> de::EnumAccess<'de> for EnumDeserializer<K, V>
where
    K: ObjectKey<'de>,
    V: IntoDeserializer<'de, Error>,
{
    type Error = Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), Error> {
        let read = seed.deserialize(self.variant.deserializer())?;
        Ok((read, self))
    }
}

impl<'de, K, V> de::VariantAccess<'de> for EnumDeserializer<K, V>
where
    K: ObjectKey<'de>,
    V: IntoDeserializer<'de, Error>,
{
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.content {
            None => Ok(()),
            Some(content) => de::Deserialize::deserialize(content.into_deserializer())
                .map_err(|e: Error| e.at(self.variant.into_segment())),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        match self.content {
            Some(content) => seed
                .deserialize(content.into_deserializer())
                .map_err(|e| e.at(self.variant.into_segment())),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }

    fn tuple_variant<Vis: Visitor<'de>>(
        self,
        len: usize,
        visitor: Vis,
    ) -> Result<Vis::Value, Error> {
        use ::serde::Deserializer as _;
        match self.content {
            Some(content) => content
                .into_deserializer()
                .deserialize_tuple(len, visitor)
                .map_err(|e| e.at(self.variant.into_segment())),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }

    fn struct_variant<Vis: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: Vis,
    ) -> Result<Vis::Value, Error> {
        use ::serde::Deserializer as _;
        match self.content {
            Some(content) => content
                .into_deserializer()
                .deserialize_struct("", fields, visitor)
                .map_err(|e| e.at(self.variant.into_segment())),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

/// An object key or variant name. Typed map keys (`u32`, `bool`) are read back from the text
/// the serializer made of them, as serde_json does.
pub(crate) enum KeyDeserializer<'a, 'de> {
    Transient(&'a str),
    Borrowed(&'de str),
}

impl KeyDeserializer<'_, '_> {
    fn as_str(&self) -> &str {
        match *self {
            KeyDeserializer::Transient(s) | KeyDeserializer::Borrowed(s) => s,
        }
    }
}

macro_rules! parse_key {
    ($($method:ident => $visit:ident: $t:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.as_str().parse::<$t>() {
                Ok(n) => visitor.$visit(n),
                // Let the visitor say what it expected instead of a bare parse error.
                Err(_) => self.deserialize_any(visitor),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for KeyDeserializer<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            KeyDeserializer::Transient(s) => visitor.visit_str(s),
            KeyDeserializer::Borrowed(s) => visitor.visit_borrowed_str(s),
        }
    }

    parse_key!(deserialize_bool => visit_bool: bool,
        deserialize_i8 => visit_i8: i8, deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32, deserialize_i64 => visit_i64: i64,
        deserialize_i128 => visit_i128: i128, deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16, deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64, deserialize_u128 => visit_u128: u128);

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(StrDeserializer::<Error>::new(self.as_str()))
    }

    fn is_human_readable(&self) -> bool {
        true
    }

    forward_to_deserialize_any! {
        f32 f64 char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}
