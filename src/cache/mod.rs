//! A binary cache beside each save (`world.json` -> `world.json.cache`) holding its
//! document after upgrading, so an unchanged save loads without parsing or upgrading.
//!
//! The JSON stays the truth: the cache is used only when it was made from exactly these
//! JSON bytes (length and XXH3-128 hash), by a chain with the same identity
//! ([`Chain::fingerprint`]: the game's version, every step and helper module), at the
//! version asked for, in this cache format, and is intact (hashes of its header and body).
//! Anything else (missing, stale, another chain, truncated, a flipped byte) is never
//! trusted: the save is loaded from its JSON, the cache is rewritten atomically, and
//! [`Loaded::source`] says why ([`Refusal`]).
//!
//! ```
//! use savechain::cache::{self, Refusal, Source};
//! use savechain::upgrade::{Chain, Step};
//! use savechain::Options;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("world.json");
//! std::fs::write(&path, r#"{"meta": {"version": 1}, "data": {"ship": {"hull": 7}}}"#)?;
//! let chain = Chain::new("1.1.0", vec![Step::lua(
//!     "0001-hull-in-percent.lua",
//!     "return function(data) data.ship.hull = data.ship.hull * 10 end",
//! )?])?;
//!
//! let first = cache::load(&path, &chain, &Options::default())?;
//! assert_eq!(first.source, Source::Json(Refusal::Missing));    // no cache yet: made now
//! let again = cache::load(&path, &chain, &Options::default())?;
//! assert_eq!(again.source, Source::Cache);
//! let hull = again.view().data().and_then(|d| d.get("ship")).and_then(|s| s.get("hull"));
//! assert_eq!(hull.and_then(|h| h.as_i64()), Some(70));
//!
//! // A new release of the game, or a changed step: the old cache is refused and rebuilt.
//! let next = Chain::new("1.2.0", chain.steps().to_vec())?;
//! let after = cache::load(&path, &next, &Options::default())?;
//! assert_eq!(after.source, Source::Json(Refusal::ChainChanged));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod aligned;
mod build;
mod check;
mod de;
mod format;
mod view;

use std::path::{Path, PathBuf};

pub use check::Refusal;
pub use de::{from_view, ViewDeserializer};
pub use view::{CacheView, Entries, Kind, NodeRef};

use crate::error::{Error, Result};
use crate::fsio;
use crate::options::Options;
use crate::save::{Meta, Save};
use crate::upgrade::Chain;
use crate::value::{Map, Value};
use aligned::Aligned;
use build::Provenance;
use check::{Expected, SourceCheck};

/// Internals the fuzz targets drive (feature `fuzzing`); not for games.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use super::aligned::Aligned;

    /// Reads cache bytes in place, checking their structure and header hash but not
    /// whether they match any save. The bytes must be 8-byte aligned.
    pub fn view_bytes(bytes: &[u8]) -> Result<super::CacheView<'_>, String> {
        super::view::parse(bytes)
    }

    /// Recomputes the body and header hashes of cache bytes, so that a fuzzer's changes
    /// are judged by the structure, not refused on the hashes.
    pub fn seal(bytes: &mut [u8]) {
        super::format::seal(bytes)
    }
}

/// The cache file of a save: its name with `.cache` added.
pub fn cache_path(save: impl AsRef<Path>) -> PathBuf {
    let mut name = save.as_ref().as_os_str().to_owned();
    name.push(".cache");
    PathBuf::from(name)
}

/// Where a loaded document came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The cache was valid and used in place.
    Cache,
    /// The JSON was loaded (and upgraded), because the cache could not be used.
    Json(Refusal),
}

enum Backing {
    Mapped(memmap2::Mmap),
    Built(Aligned),
}

/// A loaded save: its cache bytes (mapped from the file, or just built) and where the
/// document came from.
pub struct Loaded {
    backing: Backing,
    path: PathBuf,
    /// Where the document came from, and if from the JSON, why.
    pub source: Source,
    write_error: Option<Error>,
}

impl Loaded {
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

    /// The save's data as a game's own type, borrowing strings from the cache; errors
    /// name the file and the path from `data`, as [`Save::data_as`]'s do.
    pub fn data_as<'a, T: ::serde::Deserialize<'a>>(&'a self) -> Result<T> {
        let data = self.view().data().ok_or_else(|| {
            Error::new(
                crate::ErrorKind::Envelope,
                "the cache holds no data section",
            )
        })?;
        de::from_view_at(data, crate::path::Segment::Key("data".into()))
            .map_err(|e| e.with_file(&self.path))
    }

    /// The save's `meta`: its version, writer, history and any other members. A game that
    /// stores its state again passes it to [`Chain::resave`] so that they are kept.
    pub fn meta(&self) -> Result<Meta> {
        let meta = match self.view().root().get("meta") {
            Some(meta) => meta.to_value()?,
            None => Value::Null,
        };
        let document: Map = [("data", Value::Null), ("meta", meta)]
            .into_iter()
            .collect();
        Ok(Save::from_value(Value::Object(document))?.meta)
    }

    /// The save as a tree.
    pub fn to_save(&self) -> Result<Save> {
        Save::from_value(self.view().root().to_value()?)
    }

    /// When the document came from the JSON: why the new cache could not be written, if it
    /// could not. The load itself succeeded; the next one reads the JSON again.
    pub fn write_error(&self) -> Option<&Error> {
        self.write_error.as_ref()
    }
}

/// Loads the save at `path` through its cache: the cache when it matches, otherwise the
/// JSON, upgraded by `chain`, with the cache rewritten. Fails only when the JSON itself
/// cannot be loaded or upgraded.
pub fn load(path: impl AsRef<Path>, chain: &Chain, options: &Options) -> Result<Loaded> {
    let path = path.as_ref();
    let looked = look(path, chain, options)?;
    match looked.verdict {
        Ok(map) => Ok(Loaded {
            backing: Backing::Mapped(map),
            path: path.to_path_buf(),
            source: Source::Cache,
            write_error: None,
        }),
        Err(refusal) => from_json(path, looked.json, looked.mtime, chain, options, refusal),
    }
}

/// Loads the save at `path` from its JSON without looking at its cache, and rewrites the
/// cache.
pub fn rebuild(path: impl AsRef<Path>, chain: &Chain, options: &Options) -> Result<Loaded> {
    let path = path.as_ref();
    let mtime = mtime_ns(&metadata(path)?);
    from_json(path, None, mtime, chain, options, Refusal::Rebuild)
}

/// Whether [`load`] would use the cache of `path` ([`Source::Cache`]) or why not, without
/// writing anything and without loading the JSON. Fails when the JSON cannot be read.
pub fn verify(path: impl AsRef<Path>, chain: &Chain, options: &Options) -> Result<Source> {
    let looked = look(path.as_ref(), chain, options)?;
    Ok(match looked.verdict {
        Ok(_) => Source::Cache,
        Err(refusal) => Source::Json(refusal),
    })
}

/// Writes `save` as JSON to `path` and its cache beside it, each atomically. The save
/// should be at `chain`'s latest version: a cache holding another version is refused by
/// loads that upgrade to the latest.
pub fn store(save: &Save, path: impl AsRef<Path>, chain: &Chain) -> Result<()> {
    let path = path.as_ref();
    let json = save.to_vec()?;
    fsio::write_atomic(path, &json)
        .map_err(|e| Error::io(e, "cannot write the save").with_file(path))?;
    let mtime = std::fs::metadata(path).map(|m| mtime_ns(&m)).unwrap_or(0);
    let built = build::build(save, &provenance(&json, mtime, chain))?;
    let cache_file = cache_path(path);
    fsio::write_atomic_like(&cache_file, built.bytes(), Some(path))
        .map_err(|e| Error::io(e, "cannot write the cache").with_file(&cache_file))
}

/// Deletes the cache of `path`, if there is one; returns whether there was.
pub fn clear(path: impl AsRef<Path>) -> Result<bool> {
    let cache_file = cache_path(path);
    match std::fs::remove_file(&cache_file) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(e, "cannot delete the cache").with_file(&cache_file)),
    }
}

/// What a load found: the cache to use or why not, and the JSON if it was read.
struct Looked {
    verdict: std::result::Result<memmap2::Mmap, Refusal>,
    json: Option<Vec<u8>>,
    mtime: u64,
}

/// Checks the cache of `path` against its JSON, `chain` and the target version.
fn look(path: &Path, chain: &Chain, options: &Options) -> Result<Looked> {
    let metadata = metadata(path)?;
    let mtime = mtime_ns(&metadata);
    let fingerprint = chain.fingerprint();
    let version = options.target.unwrap_or(chain.latest());
    let cache_file = cache_path(path);
    if options.trust_mtime {
        let expected = Expected {
            source_len: metadata.len(),
            source: SourceCheck::Mtime(mtime),
            chain: &fingerprint,
            version,
        };
        let verdict = check::map_file(&cache_file).and_then(|map| {
            let body_ok = check::body_hash_matches(&map);
            check::check(&map, &expected, body_ok).map(|()| map)
        });
        return Ok(Looked {
            verdict,
            json: None,
            mtime,
        });
    }
    // One after the other: run side by side, reading the JSON (faulting in a fresh
    // buffer) and populating the cache's mapping contend for the same memory-map lock and
    // were measured slower.
    let json = read(path)?;
    let expected = Expected {
        source_len: json.len() as u64,
        source: SourceCheck::Hash(format::hash(&json)),
        chain: &fingerprint,
        version,
    };
    let verdict = check::map_file(&cache_file).and_then(|map| {
        let body_ok = check::body_hash_matches(&map);
        check::check(&map, &expected, body_ok).map(|()| map)
    });
    Ok(Looked {
        verdict,
        json: Some(json),
        mtime,
    })
}

/// Loads and upgrades the JSON (read now unless given), and writes its cache.
fn from_json(
    path: &Path,
    json: Option<Vec<u8>>,
    mtime: u64,
    chain: &Chain,
    options: &Options,
    refusal: Refusal,
) -> Result<Loaded> {
    let json = match json {
        Some(json) => json,
        None => read(path)?,
    };
    let save = Save::from_slice(&json).map_err(|e| e.with_file(path))?;
    let save = chain
        .upgrader()
        .upgrade(save, options)
        .map_err(|e| e.with_file(path))?
        .save;
    let built = build::build(&save, &provenance(&json, mtime, chain))?;
    let cache_file = cache_path(path);
    let write_error = fsio::write_atomic_like(&cache_file, built.bytes(), Some(path))
        .err()
        .map(|e| Error::io(e, "cannot write the cache").with_file(&cache_file));
    Ok(Loaded {
        backing: Backing::Built(built),
        path: path.to_path_buf(),
        source: Source::Json(refusal),
        write_error,
    })
}

fn provenance(json: &[u8], mtime: u64, chain: &Chain) -> Provenance {
    Provenance {
        source_len: json.len() as u64,
        source_hash: format::hash(json),
        source_mtime_ns: mtime,
        chain: chain.fingerprint(),
    }
}

fn metadata(path: &Path) -> Result<std::fs::Metadata> {
    std::fs::metadata(path).map_err(|e| Error::io(e, "cannot read the file").with_file(path))
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
