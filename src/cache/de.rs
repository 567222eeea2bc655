//! A serde `Deserializer` over a cache, so `#[derive(Deserialize)]` state loads straight
//! from it, borrowing strings from the cache.

use ::serde::de::{self, Deserialize, Error as _, IntoDeserializer, Unexpected, Visitor};
use ::serde::forward_to_deserialize_any;

use super::view::{Entries, Kind, NodeRef};
use crate::path::Segment;
use crate::serde::de::{visit_enum_entries, EnumDeserializer};
use crate::serde::Error;
use crate::serde::ValueDeserializer;
use crate::text::MAX_DEPTH;

/// Deserializes a `T` from a node of a cache, borrowing strings from it; errors give the
/// path from `node`. For a save's whole data section, [`Loaded::data_as`](super::Loaded::data_as)
/// also names the file.
pub fn from_view<'a, T: Deserialize<'a>>(node: NodeRef<'a>) -> crate::Result<T> {
    Ok(T::deserialize(ViewDeserializer { node, depth: 0 })?)
}

/// [`from_view`] for a node reached through `segment`, which errors name first.
pub(crate) fn from_view_at<'a, T: Deserialize<'a>>(
    node: NodeRef<'a>,
    segment: Segment,
) -> crate::Result<T> {
    T::deserialize(ViewDeserializer { node, depth: 0 }).map_err(|e| e.at(segment).into())
}

/// Deserializes from one node of a cache.
pub struct ViewDeserializer<'a> {
    node: NodeRef<'a>,
    /// How deep in the document: a cache is untrusted input, and nesting is bounded as
    /// in the text.
    depth: usize,
}

impl<'de> IntoDeserializer<'de, Error> for NodeRef<'de> {
    type Deserializer = ViewDeserializer<'de>;

    fn into_deserializer(self) -> ViewDeserializer<'de> {
        ViewDeserializer {
            node: self,
            depth: 0,
        }
    }
}

fn too_deep() -> Error {
    Error::new(format!("the cache nests more than {MAX_DEPTH} deep"))
}

/// The elements of an array, handed to a visitor.
struct Items<'de, I> {
    items: I,
    index: usize,
    depth: usize,
    _node: std::marker::PhantomData<NodeRef<'de>>,
}

impl<'de, I: ExactSizeIterator<Item = NodeRef<'de>>> de::SeqAccess<'de> for Items<'de, I> {
    type Error = Error;

    fn next_element_seed<S: de::DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some(node) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(ViewDeserializer {
            node,
            depth: self.depth,
        })
        .map(Some)
        .map_err(|e| e.at(Segment::Index(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The members of an object, handed to a visitor.
struct Members<'de> {
    entries: Entries<'de>,
    pending: Option<(&'de str, NodeRef<'de>)>,
    depth: usize,
}

impl<'de> de::MapAccess<'de> for Members<'de> {
    type Error = Error;

    fn next_key_seed<S: de::DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.pending = Some((key, value));
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
            .map_err(|e: Error| e.at(Segment::Key(key.to_string())))
    }

    fn next_value_seed<S: de::DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let (key, node) = self
            .pending
            .take()
            .ok_or_else(|| Error::new("map value requested before its key"))?;
        seed.deserialize(ViewDeserializer {
            node,
            depth: self.depth,
        })
        .map_err(|e| e.at(Segment::Key(key.to_string())))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
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
            Kind::Array | Kind::Object if self.depth >= MAX_DEPTH => Err(too_deep()),
            Kind::Array => {
                let mut items = Items {
                    items: node.items(),
                    index: 0,
                    depth: self.depth + 1,
                    _node: std::marker::PhantomData,
                };
                let value = visitor.visit_seq(&mut items)?;
                match items.items.len() {
                    0 => Ok(value),
                    _ => Err(Error::invalid_length(
                        node.len(),
                        &"fewer elements in array",
                    )),
                }
            }
            Kind::Object => {
                let mut members = Members {
                    entries: node.entries(),
                    pending: None,
                    depth: self.depth + 1,
                };
                let value = visitor.visit_map(&mut members)?;
                match members.entries.len() {
                    0 => Ok(value),
                    _ => Err(Error::invalid_length(node.len(), &"fewer elements in map")),
                }
            }
            // Lua tables are rare in typed state: read them through a tree.
            Kind::Table => {
                let value = node.to_value().map_err(|e| Error::new(e.message()))?;
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
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name == crate::serde::TABLE_TOKEN && self.node.kind() == Some(Kind::Table) {
            // A `Value` asking for a Lua table: made through the tree, as in deserialize_any.
            let value = self.node.to_value().map_err(|e| Error::new(e.message()))?;
            return de::Deserializer::deserialize_newtype_struct(
                ValueDeserializer::new(value),
                name,
                visitor,
            );
        }
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
        match self.node.kind() {
            Some(Kind::Object) => visit_enum_entries(self.node.entries(), visitor),
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
