//! A serde `Deserializer` over a cache, so `#[derive(Deserialize)]` state loads straight
//! from it, borrowing strings from the cache.

use ::serde::de::{self, Deserialize, Error as _, IntoDeserializer, Unexpected, Visitor};
use ::serde::forward_to_deserialize_any;

use super::view::{Kind, NodeRef};
use crate::serde::de::{not_one_entry, visit_array, visit_object, EnumDeserializer};
use crate::serde::Error;
use crate::serde::ValueDeserializer;

/// Deserializes a `T` from a node of a cache (`loaded.view().data()`, for a save's data).
pub fn from_view<'a, T: Deserialize<'a>>(node: NodeRef<'a>) -> Result<T, Error> {
    T::deserialize(ViewDeserializer { node })
}

/// Deserializes from one node of a cache.
pub struct ViewDeserializer<'a> {
    node: NodeRef<'a>,
}

impl<'de> IntoDeserializer<'de, Error> for NodeRef<'de> {
    type Deserializer = ViewDeserializer<'de>;

    fn into_deserializer(self) -> ViewDeserializer<'de> {
        ViewDeserializer { node: self }
    }
}

fn damaged() -> Error {
    Error::new("the cache is damaged")
}

fn unexpected<'a>(node: &NodeRef<'a>) -> Unexpected<'a> {
    match node.kind() {
        Some(Kind::Null) => Unexpected::Unit,
        Some(Kind::Bool) => Unexpected::Bool(node.as_bool().unwrap_or(false)),
        Some(Kind::Int) => Unexpected::Signed(node.as_i64().unwrap_or(0)),
        Some(Kind::UInt) => Unexpected::Unsigned(node.as_u64().unwrap_or(0)),
        Some(Kind::Double) => Unexpected::Float(node.as_f64().unwrap_or(0.0)),
        Some(Kind::String) => Unexpected::Str(node.as_str().unwrap_or("")),
        Some(Kind::Bytes) => Unexpected::Bytes(node.as_bytes().unwrap_or(&[])),
        Some(Kind::Array) => Unexpected::Seq,
        Some(Kind::Object) => Unexpected::Map,
        Some(Kind::Table) | None => Unexpected::Other("a Lua table"),
    }
}

impl<'de> de::Deserializer<'de> for ViewDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let node = self.node;
        match node.kind().ok_or_else(damaged)? {
            Kind::Null => visitor.visit_unit(),
            Kind::Bool => visitor.visit_bool(node.as_bool().ok_or_else(damaged)?),
            Kind::Int => visitor.visit_i64(node.as_i64().ok_or_else(damaged)?),
            Kind::UInt => visitor.visit_u64(node.as_u64().ok_or_else(damaged)?),
            Kind::Double => visitor.visit_f64(node.as_f64().ok_or_else(damaged)?),
            Kind::String => visitor.visit_borrowed_str(node.as_str().ok_or_else(damaged)?),
            Kind::Bytes => visitor.visit_borrowed_bytes(node.as_bytes().ok_or_else(damaged)?),
            Kind::Array => visit_array(node.items(), visitor),
            Kind::Object => visit_object(node.entries(), visitor),
            // Lua tables are rare in typed state: read them through a tree.
            Kind::Table => {
                let value = node.to_value().map_err(Error::new)?;
                de::Deserializer::deserialize_any(ValueDeserializer::new(value), visitor)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.node.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.node.is_null() {
            visitor.visit_unit()
        } else {
            Err(Error::invalid_type(unexpected(&self.node), &visitor))
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
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    // Floats also take integers, as from the text.
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match (self.node.kind(), self.node.as_i64(), self.node.as_u64()) {
            (Some(Kind::Int), Some(i), _) => visitor.visit_f64(i as f64),
            (Some(Kind::UInt), _, Some(u)) => visitor.visit_f64(u as f64),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.node.as_str() {
            Some(s) => visitor.visit_borrowed_bytes(s.as_bytes()),
            None => self.deserialize_any(visitor),
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
        if let Some(variant) = self.node.as_str() {
            return visitor.visit_enum(EnumDeserializer::<_, NodeRef<'de>> {
                variant,
                content: None,
            });
        }
        let mut entries = self.node.entries();
        match (self.node.kind(), entries.next(), entries.next()) {
            (Some(Kind::Object), Some((variant, content)), None) => {
                visitor.visit_enum(EnumDeserializer {
                    variant,
                    content: Some(content),
                })
            }
            (Some(Kind::Object), _, _) => Err(not_one_entry()),
            _ => Err(Error::invalid_type(unexpected(&self.node), &visitor)),
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
}
