//! A serde `Serializer` that builds a [`Value`] instead of writing text.

use std::fmt;

use ::serde::ser::{self, Impossible, Serialize};

use super::Error;
use crate::path::Segment;
use crate::value::{Map, Table, Value};

/// Serializes any `Serialize` type into a [`Value`]; [`to_value`](super::to_value) gives the
/// mapping.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serializer;

/// 128-bit integers are accepted when they fit one of the two 64-bit forms a document can hold.
fn from_128<T: Copy + fmt::Display + TryInto<i64> + TryInto<u64>>(v: T) -> Result<Value, Error> {
    if let Ok(i) = v.try_into() {
        Ok(Value::Int(i))
    } else if let Ok(u) = v.try_into() {
        Ok(Value::UInt(u))
    } else {
        Err(Error::new(format!("integer {v} does not fit in 64 bits")))
    }
}

impl ser::Serializer for Serializer {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = SerializeArray;
    type SerializeTuple = SerializeArray;
    type SerializeTupleStruct = SerializeArray;
    type SerializeTupleVariant = SerializeTupleVariant;
    type SerializeMap = SerializeObject;
    type SerializeStruct = SerializeObject;
    type SerializeStructVariant = SerializeStructVariant;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::Bool(v))
    }

    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        Ok(Value::from(v))
    }

    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        Ok(Value::from(v))
    }

    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        Ok(Value::from(v))
    }

    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Ok(Value::Int(v))
    }

    fn serialize_i128(self, v: i128) -> Result<Value, Error> {
        from_128(v)
    }

    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Ok(Value::from(v))
    }

    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Ok(Value::from(v))
    }

    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Ok(Value::from(v))
    }

    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        Ok(Value::from(v))
    }

    fn serialize_u128(self, v: u128) -> Result<Value, Error> {
        from_128(v)
    }

    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        Ok(Value::Double(f64::from(v)))
    }

    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        Ok(Value::Double(v))
    }

    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::String(v.to_string()))
    }

    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::String(v.to_owned()))
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        Ok(Value::Bytes(v.to_vec()))
    }

    fn serialize_none(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, Error> {
        Ok(Value::Null)
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, Error> {
        Ok(Value::String(variant.to_owned()))
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        let value = value.serialize(self)?;
        if name == super::TABLE_TOKEN {
            // A `Value` holding a Lua table: make the table again from its spelling.
            return Table::from_spelling(value)
                .map(Value::from)
                .map_err(Error::new);
        }
        Ok(value)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        let mut object = SerializeObject::default();
        object.push(variant.to_owned(), value)?;
        Ok(object.finish())
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<SerializeArray, Error> {
        Ok(SerializeArray {
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<SerializeArray, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SerializeArray, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SerializeTupleVariant, Error> {
        Ok(SerializeTupleVariant {
            variant,
            array: self.serialize_seq(Some(len))?,
        })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<SerializeObject, Error> {
        Ok(SerializeObject {
            entries: Vec::with_capacity(len.unwrap_or(0)),
            pending_key: None,
        })
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<SerializeObject, Error> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SerializeStructVariant, Error> {
        Ok(SerializeStructVariant {
            variant,
            object: self.serialize_map(Some(len))?,
        })
    }

    fn is_human_readable(&self) -> bool {
        true
    }
}

/// Collects a sequence, tuple or tuple struct into [`Value::Array`].
pub struct SerializeArray {
    items: Vec<Value>,
}

impl SerializeArray {
    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        let index = self.items.len();
        let value = value
            .serialize(Serializer)
            .map_err(|e| e.at(Segment::Index(index)))?;
        self.items.push(value);
        Ok(())
    }
}

impl ser::SerializeSeq for SerializeArray {
    type Ok = Value;
    type Error = Error;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }

    fn end(self) -> Result<Value, Error> {
        Ok(Value::Array(self.items))
    }
}

impl ser::SerializeTuple for SerializeArray {
    type Ok = Value;
    type Error = Error;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }

    fn end(self) -> Result<Value, Error> {
        Ok(Value::Array(self.items))
    }
}

impl ser::SerializeTupleStruct for SerializeArray {
    type Ok = Value;
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }

    fn end(self) -> Result<Value, Error> {
        Ok(Value::Array(self.items))
    }
}

/// Collects a tuple variant into `{variant: [...]}`.
pub struct SerializeTupleVariant {
    variant: &'static str,
    array: SerializeArray,
}

impl ser::SerializeTupleVariant for SerializeTupleVariant {
    type Ok = Value;
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        let variant = self.variant;
        self.array
            .push(value)
            .map_err(|e| e.at(Segment::Key(variant.to_owned())))
    }

    fn end(self) -> Result<Value, Error> {
        let content = Value::Array(self.array.items);
        Ok(Value::Object(Map::from_iter([(self.variant, content)])))
    }
}

/// Collects a map or struct into [`Value::Object`].
#[derive(Default)]
pub struct SerializeObject {
    entries: Vec<(String, Value)>,
    pending_key: Option<String>,
}

impl SerializeObject {
    fn push<T: ?Sized + Serialize>(&mut self, key: String, value: &T) -> Result<(), Error> {
        match value.serialize(Serializer) {
            Ok(value) => {
                self.entries.push((key, value));
                Ok(())
            }
            Err(e) => Err(e.at(Segment::Key(key))),
        }
    }

    /// Sorting once at the end keeps big maps O(n log n), where `Map::insert` per entry would
    /// shift the entries each time; `Map`'s `FromIterator` lets a repeated key's later value win.
    fn finish(self) -> Value {
        Value::Object(self.entries.into_iter().collect())
    }
}

impl ser::SerializeMap for SerializeObject {
    type Ok = Value;
    type Error = Error;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Error> {
        self.pending_key = Some(key.serialize(KeySerializer)?);
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .pending_key
            .take()
            .ok_or_else(|| Error::new("map value serialized before its key"))?;
        self.push(key, value)
    }

    fn end(self) -> Result<Value, Error> {
        Ok(self.finish())
    }
}

impl ser::SerializeStruct for SerializeObject {
    type Ok = Value;
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.push(key.to_owned(), value)
    }

    fn end(self) -> Result<Value, Error> {
        Ok(self.finish())
    }
}

/// Collects a struct variant into `{variant: {...}}`.
pub struct SerializeStructVariant {
    variant: &'static str,
    object: SerializeObject,
}

impl ser::SerializeStructVariant for SerializeStructVariant {
    type Ok = Value;
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let variant = self.variant;
        self.object
            .push(key.to_owned(), value)
            .map_err(|e| e.at(Segment::Key(variant.to_owned())))
    }

    fn end(self) -> Result<Value, Error> {
        let content = self.object.finish();
        Ok(Value::Object(Map::from_iter([(self.variant, content)])))
    }
}

/// Turns a map key into object key text, the way serde_json does.
struct KeySerializer;

fn key_must_be_string() -> Error {
    Error::new("map keys must be strings or integers")
}

macro_rules! key_as_text {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, v: $t) -> Result<String, Error> {
            Ok(v.to_string())
        }
    )*};
}

macro_rules! key_rejected {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, _v: $t) -> Result<String, Error> {
            Err(key_must_be_string())
        }
    )*};
}

impl ser::Serializer for KeySerializer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = Impossible<String, Error>;
    type SerializeTuple = Impossible<String, Error>;
    type SerializeTupleStruct = Impossible<String, Error>;
    type SerializeTupleVariant = Impossible<String, Error>;
    type SerializeMap = Impossible<String, Error>;
    type SerializeStruct = Impossible<String, Error>;
    type SerializeStructVariant = Impossible<String, Error>;

    key_as_text!(serialize_bool: bool, serialize_char: char, serialize_str: &str,
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_u128: u128);

    key_rejected!(serialize_f32: f32, serialize_f64: f64, serialize_bytes: &[u8],
        serialize_unit_struct: &'static str);

    fn serialize_none(self) -> Result<String, Error> {
        Err(key_must_be_string())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _value: &T) -> Result<String, Error> {
        Err(key_must_be_string())
    }

    fn serialize_unit(self) -> Result<String, Error> {
        Err(key_must_be_string())
    }

    /// A fieldless enum as a key reads the same as its value form, the variant name.
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, Error> {
        Ok(variant.to_owned())
    }

    /// Id newtypes (`struct ShipId(u32)`) are common keys; they key by their inner value.
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, Error> {
        Err(key_must_be_string())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Impossible<String, Error>, Error> {
        Err(key_must_be_string())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Impossible<String, Error>, Error> {
        Err(key_must_be_string())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Impossible<String, Error>, Error> {
        Err(key_must_be_string())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Impossible<String, Error>, Error> {
        Err(key_must_be_string())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<String, Error>, Error> {
        Err(key_must_be_string())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Impossible<String, Error>, Error> {
        Err(key_must_be_string())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<String, Error>, Error> {
        Err(key_must_be_string())
    }
}
