//! The same documents as plain JSON, for the benchmarks that set savechain beside JSON
//! libraries: a savechain value with doubles as JSON numbers and byte strings as arrays of
//! integers, and the standard corpora in a save's envelope.
//!
//! Benchmarks include this file with `#[path = "support/json.rs"] mod json;`.

#![allow(dead_code)] // Each bench that includes this file uses a different part of it.

use savechain::{Save, Value};

/// Where the standard corpora (`canada`, `citm_catalog`, `twitter`) are.
pub const DATA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/bench-data/");

/// The names of the standard corpora in [`DATA_DIR`].
pub const CORPORA: &[&str] = &["canada", "citm_catalog", "twitter"];

/// The corpus file `name` as the `data` of a save, `{"meta": ..., "data": <the file>}`:
/// text that savechain loads (its plain decimals load as doubles) and that is plain JSON.
pub fn corpus_envelope(name: &str) -> Vec<u8> {
    let path = format!("{DATA_DIR}{name}.json");
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let mut text = br#"{"meta": {"version": 1, "writer": "0.1.0"}, "data": "#.to_vec();
    text.extend_from_slice(&file);
    text.extend_from_slice(b"}\n");
    text
}

/// A save as the plain JSON document `{"data": ..., "meta": {"version": ..., "writer": ...}}`
/// (see [`to_json`]).
pub fn save_to_json(save: &Save) -> serde_json::Value {
    let mut meta = serde_json::Map::new();
    meta.insert("version".into(), save.meta.version.into());
    if let Some(writer) = &save.meta.writer {
        meta.insert("writer".into(), writer.to_string().into());
    }
    let mut top = serde_json::Map::new();
    top.insert("data".into(), to_json(&save.data));
    top.insert("meta".into(), serde_json::Value::Object(meta));
    serde_json::Value::Object(top)
}

/// The savechain value as plain JSON: doubles as numbers (finite only: the generator makes
/// no others), byte strings as arrays of integers, Lua tables as their tag arrays.
pub fn to_json(value: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::UInt(u) => J::from(*u),
        Value::Double(d) => J::from(serde_json::Number::from_f64(*d).expect("a finite double")),
        Value::String(s) => J::String(s.clone()),
        Value::Bytes(b) => J::Array(b.iter().map(|&x| J::from(x)).collect()),
        Value::Array(items) => J::Array(items.iter().map(to_json).collect()),
        Value::Object(map) => J::Object(
            map.iter()
                .map(|(k, v)| (k.to_string(), to_json(v)))
                .collect(),
        ),
        Value::Table(table) => to_json(&table.spelling()),
    }
}
