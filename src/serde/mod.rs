//! Serde support: convert any `Serialize` type into a [`Value`] and any `Deserialize` type out
//! of one, keeping every bit (u64 above `i64::MAX`, NaN payloads, byte strings).

pub(crate) mod de;
mod error;
pub(crate) mod from_text;
mod ser;
#[cfg(test)]
mod tests;
mod value_impls;

use ::serde::de::{Deserialize, DeserializeOwned, IntoDeserializer};
use ::serde::ser::Serialize;

pub use de::{ValueDeserializer, ValueRefDeserializer};
pub use error::Error;
pub use ser::Serializer;

use crate::value::Value;

/// The name under which [`Value`]'s `Serialize` and `Deserialize` pass a Lua table through
/// savechain's own serializer and deserializers intact; other formats see its spelling.
pub(crate) const TABLE_TOKEN: &str = "$savechain::private::Table";

/// Converts `value` into a [`Value`].
///
/// Integers become [`Value::Int`] (or [`Value::UInt`] above `i64::MAX`; 128-bit integers
/// outside both ranges are an error), floats [`Value::Double`], `serialize_bytes` data
/// [`Value::Bytes`]. `None`, `()` and unit structs become `Null`; a unit variant is its name as
/// a string, other variants an object with the variant name as the only key. Map keys must be
/// strings, chars, integers, bools (stored as their text), unit variants or newtypes of those.
pub fn to_value<T: ?Sized + Serialize>(value: &T) -> Result<Value, Error> {
    value.serialize(Serializer)
}

/// Converts a [`Value`] into a `T`, moving strings and byte strings out of it.
///
/// Float fields also accept integers. On failure, [`Error::path`] says where in `value`.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    T::deserialize(value.into_deserializer())
}

/// Converts a borrowed [`Value`] into a `T`, which may borrow `&str` and `&[u8]` from it.
pub fn from_value_ref<'de, T: Deserialize<'de>>(value: &'de Value) -> Result<T, Error> {
    T::deserialize(ValueRefDeserializer::new(value))
}
