//! A binary cache beside each save (`world.json` -> `world.json.cache`) holding its
//! document after upgrading, so an unchanged save loads without parsing or upgrading.
//!
//! The JSON stays the truth: the cache is used only when it was made from exactly these
//! JSON bytes (length and XXH3-128 hash), by this upgrade chain, in this cache format, and
//! is intact (hashes of its header and body). Anything else (missing, stale, another
//! chain, truncated, a flipped byte) is never trusted: the save is loaded from its JSON,
//! the cache is rewritten atomically, and [`Loaded::source`] says why.
//!
//! ```
//! use savechain::cache::{self, CacheOptions, Source};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("world.json");
//! std::fs::write(&path, r#"{"meta": {"version": 9}, "data": {"ship": {"hull": 7}}}"#)?;
//! let chain = savechain::example::chain()?;
//!
//! let first = cache::load(&path, &chain, &CacheOptions::default())?;
//! assert!(matches!(first.source, Source::Json { .. }));          // no cache yet: made now
//! let again = cache::load(&path, &chain, &CacheOptions::default())?;
//! assert_eq!(again.source, Source::Cache);
//! let hull = again.view().data().and_then(|d| d.get("ship")).and_then(|s| s.get("hull"));
//! assert_eq!(hull.and_then(|h| h.as_i64()), Some(7));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod de;
mod format;
mod view;

use std::fs::File;
use std::path::{Path, PathBuf};

pub use de::{from_view, ViewDeserializer};
pub use view::{CacheView, Entries, Kind, NodeRef};

use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::save::Save;
use crate::upgrade::{Chain, Options};
use build::Provenance;

/// Reads cache bytes in place, checking their structure and header hash but not whether
/// they match any save (that is [`load`]'s job). The bytes must be 8-byte aligned
/// ([`Aligned`] is).
pub fn view_bytes(bytes: &[u8]) -> std::result::Result<CacheView<'_>, String> {
    view::parse(bytes)
}

/// Recomputes the body and header hashes of cache bytes, for tests and fuzzing that
/// change a cache's contents and want its structure, not its hashes, to be judged.
pub fn seal(bytes: &mut [u8]) {
    if bytes.len() < format::HEADER_LEN {
        return;
    }
    let body_hash = format::hash(&bytes[format::HEADER_LEN..]);
    let mut header: format::Header = bytemuck::pod_read_unaligned(&bytes[..format::HEADER_LEN]);
    header.body_hash = body_hash;
    header.header_hash = header.compute_header_hash();
    bytes[..format::HEADER_LEN].copy_from_slice(bytemuck::bytes_of(&header));
}

/// The cache file of a save: its name with `.cache` added.
pub fn cache_path(save: &Path) -> PathBuf {
    let mut name = save.as_os_str().to_owned();
    name.push(".cache");
    PathBuf::from(name)
}

/// How much a load checks before it trusts a cache.
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheOptions {
    /// Trust the cache when the JSON file's size and modification time match the ones
    /// recorded, without reading and hashing the JSON: loads cost O(size of the cache).
    /// The cost in safety: an edit that keeps the size and restores the modification time
    /// (a tool that preserves times, a clock set back, a file system with coarse times and
    /// an edit within the same tick) goes unseen until the JSON changes again.
    pub trust_mtime: bool,
    /// Never read an existing cache (but still write a fresh one).
    pub ignore_cache: bool,
}

/// Where a loaded document came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The cache was valid and used in place.
    Cache,
    /// The JSON was loaded (and upgraded), because of `reason`; the cache was rewritten
    /// unless `reason` says it could not be.
    Json { reason: String },
}

/// Bytes aligned for the cache's 8-byte fields.
pub struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    /// A copy of `bytes`, aligned.
    pub fn copy_of(bytes: &[u8]) -> Aligned {
        let mut aligned = Aligned::zeroed(bytes.len());
        aligned.bytes_mut().copy_from_slice(bytes);
        aligned
    }

    fn zeroed(len: usize) -> Aligned {
        Aligned {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

enum Backing {
    Mapped(memmap2::Mmap),
    Built(Aligned),
}

/// A loaded save: its cache bytes (mapped from the file, or just built) and where the
/// document came from.
pub struct Loaded {
    backing: Backing,
    pub source: Source,
}

impl Loaded {
    fn mapped(map: memmap2::Mmap) -> Loaded {
        Loaded {
            backing: Backing::Mapped(map),
            source: Source::Cache,
        }
    }

    fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Mapped(map) => map,
            Backing::Built(aligned) => aligned.bytes(),
        }
    }

    /// The document, read in place.
    pub fn view(&self) -> CacheView<'_> {
        view::parse(self.bytes()).expect("checked when loaded")
    }

    /// The save as a tree.
    pub fn to_save(&self) -> Result<Save> {
        let document = self
            .view()
            .root()
            .to_value()
            .map_err(|e| Error::new(ErrorKind::Value, e))?;
        Save::from_value(document)
    }
}

/// Loads the save at `path` through its cache: the cache when it matches, otherwise the
/// JSON, upgraded by `chain`, with the cache rewritten. Fails only when the JSON itself
/// cannot be loaded or upgraded.
pub fn load(path: &Path, chain: &Chain, options: &CacheOptions) -> Result<Loaded> {
    let cache_file = cache_path(path);
    let metadata = std::fs::metadata(path)
        .map_err(|e| Error::io(e, "cannot read the file").with_file(path))?;
    let mtime = mtime_ns(&metadata);
    let fingerprint = chain.fingerprint();
    let mut json = None;
    let reason = if options.ignore_cache {
        "the cache was not asked for".to_string()
    } else if options.trust_mtime {
        match map_file(&cache_file).and_then(|map| {
            let body_ok = body_hash_matches(&map);
            check(
                &map,
                metadata.len(),
                None,
                Some(mtime),
                &fingerprint,
                body_ok,
            )
            .map(|()| map)
        }) {
            Ok(map) => return Ok(Loaded::mapped(map)),
            Err(reason) => reason,
        }
    } else {
        // One after the other: run side by side, reading the JSON (faulting in a fresh
        // buffer) and populating the cache's mapping contend for the same memory-map lock
        // and were measured slower.
        let source = read(path).map(|bytes| (format::hash(&bytes), bytes));
        let cache = map_file(&cache_file).map(|map| (body_hash_matches(&map), map));
        let (source_hash, bytes) = source?;
        let checked = cache.and_then(|(body_ok, map)| {
            check(
                &map,
                bytes.len() as u64,
                Some(source_hash),
                None,
                &fingerprint,
                body_ok,
            )
            .map(|()| map)
        });
        json = Some(bytes);
        match checked {
            Ok(map) => return Ok(Loaded::mapped(map)),
            Err(reason) => reason,
        }
    };
    let json = match json {
        Some(json) => json,
        None => read(path)?,
    };
    let save = Save::from_slice(&json).map_err(|e| e.with_file(path))?;
    let save = chain
        .upgrader()
        .upgrade(save, &Options::default())
        .map_err(|e| e.with_file(path))?
        .save;
    let built = build::build(
        &save,
        &Provenance {
            source_len: json.len() as u64,
            source_hash: format::hash(&json),
            source_mtime_ns: mtime,
            chain: fingerprint,
        },
    )?;
    let reason = match fsio::write_atomic(&cache_file, built.bytes()) {
        Ok(()) => reason,
        Err(e) => format!("{reason} (and the cache could not be written: {e})"),
    };
    Ok(Loaded {
        backing: Backing::Built(built),
        source: Source::Json { reason },
    })
}

/// Writes `save` as JSON to `path` and its cache beside it, each atomically. The save
/// should be at `chain`'s latest version (a cache holds the upgraded document).
pub fn store(save: &Save, path: &Path, chain: &Chain) -> Result<()> {
    let json = save.to_vec()?;
    fsio::write_atomic(path, &json)
        .map_err(|e| Error::io(e, "cannot write the save").with_file(path))?;
    let mtime = std::fs::metadata(path).map(|m| mtime_ns(&m)).unwrap_or(0);
    let built = build::build(
        save,
        &Provenance {
            source_len: json.len() as u64,
            source_hash: format::hash(&json),
            source_mtime_ns: mtime,
            chain: chain.fingerprint(),
        },
    )?;
    let cache_file = cache_path(path);
    fsio::write_atomic(&cache_file, built.bytes())
        .map_err(|e| Error::io(e, "cannot write the cache").with_file(&cache_file))
}

/// Whether the cache of `path` would be used, and if not, why.
pub fn verify(path: &Path, chain: &Chain) -> Result<std::result::Result<(), String>> {
    let json = read(path)?;
    Ok(map_file(&cache_path(path)).and_then(|map| {
        let body_ok = body_hash_matches(&map);
        check(
            &map,
            json.len() as u64,
            Some(format::hash(&json)),
            None,
            &chain.fingerprint(),
            body_ok,
        )
    }))
}

/// Deletes the cache of `path`, if there is one; returns whether there was.
pub fn clear(path: &Path) -> Result<bool> {
    let cache_file = cache_path(path);
    match std::fs::remove_file(&cache_file) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(e, "cannot delete the cache").with_file(&cache_file)),
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(e, "cannot read the file").with_file(path))
}

fn mtime_ns(metadata: &std::fs::Metadata) -> u64 {
    metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

fn map_file(path: &Path) -> std::result::Result<memmap2::Mmap, String> {
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "there is no cache".to_string(),
        _ => format!("the cache cannot be opened: {e}"),
    })?;
    // SAFETY: the mapping is read only, and savechain never changes a cache file in place:
    // it writes a new file and renames it over the old one, which leaves this mapping on
    // the old file. Another program truncating or rewriting the file in place while it is
    // mapped would break that; caches are ours, beside saves, and not meant to be edited.
    unsafe { memmap2::MmapOptions::new().populate().map(&file) }
        .map_err(|e| format!("the cache cannot be mapped: {e}"))
}

/// Whether the cache's body matches the hash in its header (false for anything too short
/// to have one).
fn body_hash_matches(bytes: &[u8]) -> bool {
    bytes.len() >= format::HEADER_LEN
        && bytemuck::pod_read_unaligned::<format::Header>(&bytes[..format::HEADER_LEN]).body_hash
            == format::hash(&bytes[format::HEADER_LEN..])
}

/// Checks a cache against its source (length, and hash or modification time) and chain;
/// `Err` says why it cannot be used. `body_ok` is [`body_hash_matches`] of it.
fn check(
    bytes: &[u8],
    source_len: u64,
    source_hash: Option<[u8; 16]>,
    source_mtime_ns: Option<u64>,
    chain: &[u8; 16],
    body_ok: bool,
) -> std::result::Result<(), String> {
    let view = view::parse(bytes)?;
    let header = view::header(&view);
    if header.source_len != source_len {
        return Err("the save changed since the cache was made (its length differs)".into());
    }
    if source_hash.is_some_and(|hash| hash != header.source_hash) {
        return Err("the save changed since the cache was made".into());
    }
    if source_mtime_ns.is_some_and(|mtime| mtime != header.source_mtime_ns) {
        return Err("the save's modification time differs from the cache's record".into());
    }
    if &header.chain != chain {
        return Err("the cache was made by another upgrade chain".into());
    }
    if !body_ok {
        return Err("the cache is damaged (its contents do not match their hash)".into());
    }
    Ok(())
}
