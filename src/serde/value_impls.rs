//! `Serialize` and `Deserialize` for [`Value`] itself, so a document can go through any serde
//! format and back.

use std::fmt;

use ::serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use ::serde::ser::{Serialize, SerializeTuple, Serializer};

use super::{to_value, TABLE_TOKEN};
use crate::value::{Map, Table, Value};

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Int(i) => serializer.serialize_i64(*i),
            Value::UInt(u) => serializer.serialize_u64(*u),
            Value::Double(d) => serializer.serialize_f64(*d),
            Value::String(s) => serializer.serialize_str(s),
            Value::Bytes(b) => serializer.serialize_bytes(b),
            Value::Array(items) => serializer.collect_seq(items),
            Value::Object(map) => serializer.collect_map(map.iter()),
            // Other formats have no Lua tables: they get the tag as an array, as in the text.
            // savechain's own serializer knows the name and makes the table again.
            Value::Table(table) => {
                serializer.serialize_newtype_struct(TABLE_TOKEN, &Spelled(table))
            }
        }
    }
}

/// A Lua table as the two-element array of its tag, serialized without copying it.
struct Spelled<'a>(&'a Table);

impl Serialize for Spelled<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut tag = [0; 4];
        let tag: &str = char::from(self.0.tag()).encode_utf8(&mut tag);
        let mut spelling = serializer.serialize_tuple(2)?;
        spelling.serialize_element(tag)?;
        match self.0 {
            Table::Keyed(entries) => {
                spelling.serialize_element(&Pairs(entries))?;
            }
            Table::Shared { id, value } => spelling.serialize_element(&(id, value))?,
            Table::Ref(id) => spelling.serialize_element(&(id,))?,
            Table::Class { name, value } => spelling.serialize_element(&(name, value))?,
        }
        spelling.end()
    }
}

/// The entries of a keyed table as an array of `[key, value]` pairs.
struct Pairs<'a>(&'a [(Value, Value)]);

impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        // savechain's own deserializers answer this name for a Lua table with a map of one
        // member, TABLE_TOKEN, whose value is the table's spelling; other formats see a
        // plain newtype and hand over their value.
        deserializer.deserialize_newtype_struct(TABLE_TOKEN, ValueVisitor)
    }
}

struct ValueVisitor;

/// Caps preallocation: a size hint from an untrusted format could be huge.
fn capacity(hint: Option<usize>) -> usize {
    hint.unwrap_or(0).min(4096)
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any savechain value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    // 128-bit integers from other formats are kept when they fit one of the 64-bit forms.
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        to_value(&v).map_err(E::custom)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        to_value(&v).map_err(E::custom)
    }

    fn visit_f32<E: de::Error>(self, v: f32) -> Result<Value, E> {
        Ok(Value::Double(f64::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Double(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Bytes(v.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Value, E> {
        Ok(Value::Bytes(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Value::deserialize(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(capacity(seq.size_hint()));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries: Vec<(String, Value)> = Vec::with_capacity(capacity(map.size_hint()));
        match map.next_key::<String>()? {
            Some(key) if key == TABLE_TOKEN => {
                let spelling: Value = map.next_value()?;
                let table = Table::from_spelling(spelling).map_err(de::Error::custom)?;
                return Ok(Value::from(table));
            }
            Some(key) => entries.push((key, map.next_value()?)),
            None => {}
        }
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        // `Map`'s `FromIterator` sorts once and lets a repeated key's later value win.
        Ok(Value::Object(entries.into_iter().collect::<Map>()))
    }
}
