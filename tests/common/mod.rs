//! Shared test helpers: proptest strategies for arbitrary documents, the example game's
//! chain, the `save-upgrade` binary, and stock Lua interpreters with the native module.

// Each test crate uses a part of these helpers.
#![allow(dead_code)]

/// The example game's chain, as the `save-upgrade` binary carries it.
#[path = "../../src/bin/save-upgrade/starlane.rs"]
pub mod starlane;

/// Stock Lua interpreters running scripts with the native module (`lua-module/`).
pub mod stock_lua;

use proptest::prelude::*;
use savechain::value::Table;
use savechain::{Map, Value};

/// Any double, drawn from all 2^64 bit patterns with the interesting ones made common.
pub fn any_double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        prop::sample::select(vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff8_0000_0000_0001),
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::MIN,
            0.1,
        ]),
        any::<f64>(),
    ]
}

fn tag_letter() -> impl Strategy<Value = String> {
    "[a-z]"
}

/// A key of a keyed table: anything but null and NaN.
fn table_key(inner: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    inner.prop_map(|key| match key {
        Value::Null => Value::Bool(false),
        Value::Double(d) if d.is_nan() => Value::Double(0.5),
        key => key,
    })
}

/// What a shared table or class instance may hold: an array, an object or a keyed table.
fn table_body(inner: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    inner.prop_map(|value| match value {
        Value::Array(_) | Value::Object(_) => value,
        Value::Table(ref t) if matches!(**t, Table::Keyed(_)) => value,
        other => Value::Array(vec![other]),
    })
}

/// The Lua tables of the format (not necessarily consistent: references need not match a
/// shared table, as the text codec does not care).
fn any_table(inner: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::collection::vec((table_key(inner.clone()), inner.clone()), 0..5)
            .prop_map(|entries| Value::from(Table::Keyed(entries))),
        (1..5u64, table_body(inner.clone()))
            .prop_map(|(id, value)| Value::from(Table::Shared { id, value })),
        (1..5u64).prop_map(|id| Value::from(Table::Ref(id))),
        (
            prop_oneof!["[a-z]", "[A-Z][a-z]{0,6}", ".+"],
            table_body(inner)
        )
            .prop_map(|(name, value)| Value::from(Table::Class { name, value })),
    ]
}

/// A key of an object: often `meta`, which goes first at the top level of a document
/// (docs/FORMAT.md, section 5), among keys before and after it.
pub fn object_key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<String>(),
        1 => Just("meta".to_string()),
        1 => "[a-z]{1,5}",
    ]
}

/// Any value, nested a few levels, including arrays that look like tags and Lua tables.
pub fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (i64::MAX as u64 + 1..=u64::MAX).prop_map(Value::UInt),
        any_double().prop_map(Value::Double),
        any::<String>().prop_map(Value::String),
        tag_letter().prop_map(Value::String),
        prop::collection::vec(any::<u8>(), 0..12).prop_map(Value::Bytes),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            any_table(inner.clone().boxed()),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            // Literal arrays that a reader would take for a tag unless escaped: any letter,
            // and often "d" or "b", which make a tag whatever follows (numbers, booleans,
            // null, strings, arrays, objects, tags).
            (prop_oneof![tag_letter(), "[db]"], inner.clone())
                .prop_map(|(t, v)| Value::Array(vec![Value::String(t), v])),
            prop::collection::vec((object_key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map>())),
        ]
    })
}

/// Runs the `save-upgrade` binary in `cwd`.
pub fn save_upgrade(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_save-upgrade"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The file names in `dir`, sorted (temporaries included).
pub fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
