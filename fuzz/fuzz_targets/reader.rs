//! Any bytes through the new text reader and the one it replaced: the same value, or both
//! refusing (a text with several mistakes may be reported by a different one first, since
//! the old reader looked ahead past an escape's content and the new one does not).
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::text;

fuzz_target!(|data: &[u8]| {
    let new = text::from_slice(data);
    let old = savechain::fuzzing::old_text_from_slice(data);
    match (&new, &old) {
        (Ok(new), Ok(old)) => assert!(new == old, "different values\nnew {new:?}\nold {old:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("one reader refused, the other did not\nnew {new:?}\nold {old:?}"),
    }
});
