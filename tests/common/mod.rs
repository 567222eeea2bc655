//! Shared test helpers: a proptest strategy for arbitrary documents.

use proptest::prelude::*;
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

/// Any value, nested a few levels, including arrays that look like tags.
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
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            // Literal arrays that a reader would take for a tag unless escaped.
            (tag_letter(), inner.clone())
                .prop_map(|(t, v)| Value::Array(vec![Value::String(t), v])),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map>())),
        ]
    })
}
