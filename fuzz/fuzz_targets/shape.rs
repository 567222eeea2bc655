//! Any bytes, as a shape file's text and a document, split at the first line `---`: reading
//! a shape never panics, and a shape read reads back the same from its own text; checking a
//! document against it never panics and agrees with `matches`; its JSON Schema is made
//! without a panic; and the shape inferred from the document admits the document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::shape::{infer, json_schema, Hints, Shape};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (shape_text, document) = text.split_once("\n---\n").unwrap_or((text, ""));
    let value = savechain::text::from_str(document).ok();
    if let Ok(shape) = shape_text.parse::<Shape>() {
        let again: Shape = match shape.to_string().parse() {
            Ok(again) => again,
            Err(e) => panic!("{shape_text:?} read, but its own text does not: {e}"),
        };
        assert_eq!(again, shape, "{shape_text:?} reads back differently");
        let _ = json_schema(None, &shape, 1, &[]);
        if let Some(value) = &value {
            let mismatches = shape.check(value);
            assert_eq!(mismatches.is_empty(), shape.matches(value));
            for mismatch in &mismatches {
                let _ = mismatch.to_string();
            }
        }
    }
    if let Some(value) = &value {
        if let Ok(inferred) = infer([value], &Hints::default()) {
            let mismatches = inferred.check(value);
            assert!(
                mismatches.is_empty(),
                "the shape inferred from {document:?} refuses it: {}",
                mismatches[0]
            );
        }
    }
});
