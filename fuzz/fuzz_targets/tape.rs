//! Any bytes: the borrowed document (`text::Document`) and the tree (`text::from_slice`)
//! accept and refuse the same texts with the same error; what both accept gives the same
//! value and the same canonical text in every style.
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::text::{self, Document, Style};

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
