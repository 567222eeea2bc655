//! Deciding whether a cache may be used: its bytes checked against the save's JSON, the
//! chain and the target version, and, when it may not, why ([`Refusal`]).

use std::fmt;
use std::path::Path;

use super::format::{self, Header, HEADER_LEN};
use super::view;

/// Why a cache was not used. The save is then loaded from its JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// There is no cache file.
    Missing,
    /// The cache file exists but cannot be opened or mapped; the text says why.
    Unreadable(String),
    /// The file is not a cache this program reads (another format version, truncated, a
    /// damaged header); the text says which.
    Unusable(String),
    /// The save's JSON is not the one the cache was made from.
    SaveChanged,
    /// Trusting modification times ([`Options::trust_mtime`](crate::Options)): the JSON's
    /// modification time is not the one the cache recorded.
    SaveTouched,
    /// The cache was made by another chain: a step, a helper module, the game's version or
    /// savechain's changed since.
    ChainChanged,
    /// The cache holds the document at another version than the one asked for.
    OtherVersion {
        /// The version in the cache.
        cached: u64,
        /// The version the load upgrades to.
        wanted: u64,
    },
    /// The cache's contents do not match their hash.
    Damaged,
    /// The caller asked for the cache to be rebuilt from the JSON.
    Rebuild,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Missing => f.write_str("there is no cache"),
            Refusal::Unreadable(why) => write!(f, "the cache cannot be read: {why}"),
            Refusal::Unusable(why) => f.write_str(why),
            Refusal::SaveChanged => f.write_str("the save changed since the cache was made"),
            Refusal::SaveTouched => {
                f.write_str("the save's modification time differs from the cache's record")
            }
            Refusal::ChainChanged => f.write_str(
                "the cache was made by another upgrade chain (another game version, a changed \
                 step or helper module, other mods or a mod's other release, step or order, or \
                 another savechain)",
            ),
            Refusal::OtherVersion { cached, wanted } => write!(
                f,
                "the cache holds version {cached}, not the version asked for ({wanted})"
            ),
            Refusal::Damaged => {
                f.write_str("the cache is damaged (its contents do not match their hash)")
            }
            Refusal::Rebuild => f.write_str("a rebuild was asked for"),
        }
    }
}

/// What a cache must match to be used.
pub(super) struct Expected<'a> {
    pub source_len: u64,
    /// The JSON's hash, or with trust in modification times, its modification time.
    pub source: SourceCheck,
    pub chain: &'a [u8; 16],
    pub version: u64,
}

pub(super) enum SourceCheck {
    Hash([u8; 16]),
    Mtime(u64),
}

/// Maps the cache file read only. Something there that is not a regular file (a FIFO, a
/// device) is refused without being waited on.
pub(super) fn map_file(path: &Path) -> Result<memmap2::Mmap, Refusal> {
    let file = crate::fsio::open_regular(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Refusal::Missing,
        _ => Refusal::Unreadable(e.to_string()),
    })?;
    // SAFETY: the mapping is read only, and savechain never changes a cache file in place:
    // it writes a new file and renames it over the old one, which leaves this mapping on
    // the old file. Another program truncating or rewriting the file in place while it is
    // mapped would break that; caches are ours, beside saves, and not meant to be edited.
    unsafe { memmap2::MmapOptions::new().populate().map(&file) }
        .map_err(|e| Refusal::Unreadable(e.to_string()))
}

/// Whether the cache's body matches the hash in its header (false for anything too short
/// to have one).
pub(super) fn body_hash_matches(bytes: &[u8]) -> bool {
    bytes.len() >= HEADER_LEN
        && bytemuck::pod_read_unaligned::<Header>(&bytes[..HEADER_LEN]).body_hash
            == format::hash(&bytes[HEADER_LEN..])
}

/// Checks cache bytes against what they must match. `body_ok` is [`body_hash_matches`] of
/// them, computed by the caller so it can overlap with other work.
pub(super) fn check(bytes: &[u8], expected: &Expected<'_>, body_ok: bool) -> Result<(), Refusal> {
    let view = view::parse(bytes).map_err(Refusal::Unusable)?;
    let header = view::header(&view);
    if header.source_len != expected.source_len {
        return Err(Refusal::SaveChanged);
    }
    match expected.source {
        SourceCheck::Hash(hash) if hash != header.source_hash => return Err(Refusal::SaveChanged),
        SourceCheck::Mtime(mtime) if mtime != header.source_mtime_ns => {
            return Err(Refusal::SaveTouched)
        }
        _ => {}
    }
    if &header.chain != expected.chain {
        return Err(Refusal::ChainChanged);
    }
    if header.version != expected.version {
        return Err(Refusal::OtherVersion {
            cached: header.version,
            wanted: expected.version,
        });
    }
    if !body_ok {
        return Err(Refusal::Damaged);
    }
    Ok(())
}
