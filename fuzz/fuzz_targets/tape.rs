//! Any bytes: the borrowed document (`text::Document`) and the tree (`text::from_slice`)
//! accept and refuse the same texts with the same error; what both accept gives the same
//! value and the same canonical text in every style, read whole or node by node.
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::text::{self, Document, Kind, Node, Style};
use savechain::{Map, Value};

/// The value read through the `Node` API alone.
fn through_nodes(node: Node<'_, '_>) -> Value {
    match node.kind() {
        Kind::Null => Value::Null,
        Kind::Bool => Value::Bool(node.as_bool().expect("a bool")),
        Kind::Int => match node.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::UInt(node.as_u64().expect("an integer")),
        },
        Kind::Double => Value::Double(node.as_f64().expect("a double")),
        Kind::String => Value::String(node.as_str().expect("a string").to_string()),
        Kind::Bytes => Value::Bytes(node.as_bytes().expect("bytes").to_vec()),
        Kind::Array => {
            let items: Vec<Value> = node.items().map(through_nodes).collect();
            assert_eq!(items.len(), node.len(), "an array's len");
            Value::Array(items)
        }
        Kind::Object => {
            let mut map = Map::new();
            for (key, value) in node.members() {
                map.insert(key, through_nodes(value));
            }
            assert_eq!(map.len(), node.len(), "an object's len");
            Value::Object(map)
        }
        _ => node.to_value(),
    }
}

fuzz_target!(|bytes: &[u8]| {
    match (text::from_slice(bytes), Document::parse(bytes)) {
        (Ok(value), Ok(doc)) => {
            // Compared as canonical text, which holds every double's bits (NaN == NaN).
            let value_text = text::to_vec_compact(&value).expect("the tree writes");
            assert_eq!(
                text::to_vec_compact(&doc.to_value()).expect("the tape's value writes"),
                value_text,
                "to_value differs from the tree"
            );
            assert_eq!(
                text::to_vec_compact(&through_nodes(doc.root())).expect("the nodes' value writes"),
                value_text,
                "the nodes differ from the tree"
            );
            for style in [Style::Pretty, Style::Compact, Style::Decimal] {
                let mut expected = Vec::new();
                text::write_value(&mut expected, &value, style).expect("the tree writes");
                let written = doc.to_vec(style).expect("the tape writes");
                assert!(
                    written == expected,
                    "{style:?} text differs\n--- tree ---\n{}\n--- tape ---\n{}",
                    String::from_utf8_lossy(&expected),
                    String::from_utf8_lossy(&written)
                );
            }
            assert_eq!(
                text::reformat(bytes, Style::Pretty).expect("reformat reads it"),
                text::to_vec(&value).expect("the tree writes")
            );
        }
        (Err(tree), Err(tape)) => {
            assert_eq!(tree.to_string(), tape.to_string());
            assert_eq!(tree.kind(), tape.kind());
        }
        (tree, tape) => panic!("tree {tree:?}, tape {tape:?}"),
    }
});
