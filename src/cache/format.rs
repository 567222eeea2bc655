//! The cache file's layout: a header, then the document as fixed-size nodes, then one
//! table of string bytes. Everything little-endian; see `docs/FORMAT.md`, section 10.

use bytemuck::{Pod, Zeroable};

/// `svchain` and a format byte: a cache file starts with these.
pub const MAGIC: [u8; 8] = *b"svchain\x01";
/// Bumped whenever the layout changes; a cache of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 1;
pub const HEADER_LEN: usize = 128;

/// One value of the document: 16 bytes, 8-aligned.
///
/// - null: nothing; boolean: `payload` 0 or 1; integer, u64, double: `payload` holds the
///   64 bits (the double's raw bits).
/// - string, byte string: `len` bytes at offset `payload` of the string table.
/// - array: `len` elements, the nodes from index `payload` on.
/// - object: `len` members, the `2 * len` nodes from index `payload` on, key (a string
///   node) then value, keys sorted bytewise, so a key is found by binary search.
/// - keyed table: like an object, with keys of any kind, in the document's order.
/// - shared table: two nodes from `payload`: its id (an integer) and its contents.
/// - reference: the id in `payload`.
/// - class instance: two nodes from `payload`: the class name (a string) and its contents.
///
/// Children always come after their parent (`payload` > the parent's index), which is
/// what lets a reader walk an untrusted file without looping.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq, Eq)]
pub struct Node {
    pub kind: u32,
    pub len: u32,
    pub payload: u64,
}

pub const NULL: u32 = 0;
pub const BOOL: u32 = 1;
pub const INT: u32 = 2;
pub const UINT: u32 = 3;
pub const DOUBLE: u32 = 4;
pub const STRING: u32 = 5;
pub const BYTES: u32 = 6;
pub const ARRAY: u32 = 7;
pub const OBJECT: u32 = 8;
pub const KEYED: u32 = 9;
pub const SHARED: u32 = 10;
pub const REF: u32 = 11;
pub const CLASS: u32 = 12;

/// The header, at offset 0 of the file.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Header {
    pub magic: [u8; 8],
    pub format_version: u32,
    pub header_len: u32,
    /// Length and XXH3-128 of the JSON text the cache was made from.
    pub source_len: u64,
    pub source_hash: [u8; 16],
    /// [`Chain::fingerprint`](crate::upgrade::Chain::fingerprint) of the chain that
    /// upgraded the document.
    pub chain: [u8; 16],
    /// The document's version (after upgrading).
    pub version: u64,
    /// The JSON file's modification time (nanoseconds since the Unix epoch), for the
    /// opt-in trust mode.
    pub source_mtime_ns: u64,
    pub node_count: u64,
    pub strings_len: u64,
    pub reserved: u64,
    /// XXH3-128 of everything after the header.
    pub body_hash: [u8; 16],
    /// XXH3-128 of the header's bytes before this field.
    pub header_hash: [u8; 16],
}

const _: () = assert!(std::mem::size_of::<Header>() == HEADER_LEN);
const _: () = assert!(std::mem::size_of::<Node>() == 16);

/// Bytes per chunk of [`hash`].
pub const HASH_CHUNK: usize = 1 << 20;

/// The hash the header records: XXH3-128 of the XXH3-128 hashes (16 bytes each,
/// little-endian) of the bytes' 1 MiB chunks, so the chunks hash on all cores.
pub fn hash(bytes: &[u8]) -> [u8; 16] {
    use rayon::prelude::*;
    let chunk_hashes: Vec<[u8; 16]> = bytes.par_chunks(HASH_CHUNK).map(chunk_hash).collect();
    hash_of_chunks(&chunk_hashes)
}

/// The hash of one chunk of [`hash`] (its last may be shorter).
pub fn chunk_hash(chunk: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(chunk).to_le_bytes()
}

/// [`hash`] from the hashes of the chunks, in order ([`chunk_hash`]).
pub fn hash_of_chunks(chunk_hashes: &[[u8; 16]]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128(bytemuck::cast_slice(chunk_hashes)).to_le_bytes()
}

impl Header {
    /// The hash of the header's fields, everything before `header_hash`.
    pub fn compute_header_hash(&self) -> [u8; 16] {
        hash(&bytemuck::bytes_of(self)[..HEADER_LEN - 16])
    }
}

/// Recomputes the body and header hashes of cache bytes (for tests and fuzzing that change
/// a cache's contents and want its structure, not its hashes, judged).
#[cfg_attr(not(feature = "fuzzing"), allow(dead_code))]
pub fn seal(bytes: &mut [u8]) {
    if bytes.len() < HEADER_LEN {
        return;
    }
    let body_hash = hash(&bytes[HEADER_LEN..]);
    let mut header: Header = bytemuck::pod_read_unaligned(&bytes[..HEADER_LEN]);
    header.body_hash = body_hash;
    header.header_hash = header.compute_header_hash();
    bytes[..HEADER_LEN].copy_from_slice(bytemuck::bytes_of(&header));
}
