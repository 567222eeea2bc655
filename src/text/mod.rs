//! The text codec: strict JSON with tags for doubles and byte strings, read and written
//! losslessly and canonically.
//!
//! A tag is a two-element array whose first element is a one-letter string:
//! `["d", "0x1.8p+1"]` is a double (and so is `["d", 3]`, a number typed by hand),
//! `["b", "\u00ff\u0000"]` a byte string, and `["a", [...]]` an array that would otherwise
//! look like a tag. `t`, `s`, `r` and `c` spell the Lua tables of
//! [`Table`](crate::value::Table). Every other letter is reserved and refused on reading,
//! so that later versions can add tags without changing what an existing save means.

pub(crate) mod build;
pub(crate) mod reader;
pub(crate) mod scan;
pub(crate) mod tags;
pub(crate) mod tape;
mod tree;
pub(crate) mod write;

pub use tape::{reformat, Document, Kind, Node};
pub use tree::{from_slice, from_slice_with_max_depth, from_str};
pub(crate) use tree::{Sparse, Tree};
pub use write::{to_string, to_string_compact, to_vec, to_vec_compact, write_value, Style};

/// The revision of the format (`docs/FORMAT.md`) this reader and writer implement. It is part
/// of every chain's identity, so that a cache made by a reader that read the same text
/// differently is refused: bump it whenever what some text reads as, or what the writer
/// writes, changes (revision 3 writes `meta` first and reads every text as 2 did).
///
/// A program that reports its versions names it beside the crate's, as `save-upgrade
/// --version` does:
///
/// ```
/// let line = format!("mygame 2.3.0 (savechain format revision {})", savechain::FORMAT_REVISION);
/// assert_eq!(line, "mygame 2.3.0 (savechain format revision 3)");
/// ```
pub const FORMAT_REVISION: u64 = 3;

/// The deepest nesting of arrays and objects a document may have (tags count as arrays).
/// Deeper input is refused with an error instead of exhausting the stack.
pub const MAX_DEPTH: usize = 512;

/// Refuses a nesting limit a caller asks for that the format has no room for: below 1, or
/// above [`MAX_DEPTH`].
pub(crate) fn check_max_depth(max_depth: usize) -> crate::Result<()> {
    if (1..=MAX_DEPTH).contains(&max_depth) {
        return Ok(());
    }
    Err(crate::Error::new(
        crate::ErrorKind::Usage,
        format!(
            "a nesting limit is from 1 to {MAX_DEPTH} (the format never nests deeper), not {max_depth}"
        ),
    ))
}
