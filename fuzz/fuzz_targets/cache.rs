//! Any bytes as a cache: reading must never panic or read out of bounds. The header and
//! body hashes are recomputed first, so the fuzzer explores the structure behind them
//! (a real load would refuse most of these on the hashes alone).
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::cache::fuzzing::{seal, view_bytes, Aligned};
use savechain::cache::{self, NodeRef};

/// Walks every node reachable by the view's accessors.
fn walk(node: NodeRef<'_>, depth: usize) {
    if depth > 64 {
        return;
    }
    let _ = (node.kind(), node.as_bool(), node.as_i64(), node.as_u64(), node.as_f64());
    let _ = (node.as_str(), node.as_bytes(), node.len());
    for item in node.items() {
        walk(item, depth + 1);
    }
    for (key, value) in node.entries() {
        let _ = node.get(key);
        walk(value, depth + 1);
    }
    let _ = node.index(usize::MAX);
    let _ = node.to_value();
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Aligned::copy_of(data);
    seal(bytes.bytes_mut());
    if let Ok(view) = view_bytes(bytes.bytes()) {
        walk(view.root(), 0);
        let _: Result<savechain::Value, _> = cache::from_view(view.root());
    }
});
