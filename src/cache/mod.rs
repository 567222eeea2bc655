//! A binary cache beside each save (`world.json` -> `world.json.cache`) holding its
//! document after upgrading, so an unchanged save loads without parsing or upgrading.
//!
//! The JSON stays the truth: the cache is used only when it was made from exactly these
//! bytes of the save's file (length and XXH3-128 hash; for a compressed save
//! ([`crate::compress`]), its compressed bytes as stored), by a chain with the same identity
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
mod file_hash;
mod format;
mod view;

use std::path::{Path, PathBuf};

pub use check::Refusal;
pub use de::{from_view, ViewDeserializer};
pub use view::{CacheView, Entries, Kind, NodeRef};

use crate::compress::{self, Compression};
use crate::error::{Error, Result};
use crate::fsio;
use crate::options::Options;
use crate::save::{Meta, Save};
use crate::upgrade::{Chain, ModReport, ModStatus, StepReport, Upgrader};
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
    InMemory(Aligned),
}

/// A loaded save: its cache bytes (mapped from the file, given, or just built), where the
/// document came from, and what the upgrade that made them did.
#[non_exhaustive]
pub struct Loaded {
    backing: Backing,
    /// The save's file, when loaded from one: errors name it.
    path: Option<PathBuf>,
    /// Where the document came from, and if from the JSON, why.
    pub source: Source,
    steps: Vec<StepReport>,
    mods: Vec<ModReport>,
    write_error: Option<Error>,
}

impl Loaded {
    fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Mapped(map) => map,
            Backing::InMemory(aligned) => aligned.bytes(),
        }
    }

    /// The document, read in place.
    pub fn view(&self) -> CacheView<'_> {
        view::parse(self.bytes()).expect("checked when loaded")
    }

    /// The save's data as a game's own type, borrowing strings from the cache; errors
    /// name the file (when loaded from one) and the path from `data`, as [`Save::data_as`]'s
    /// do.
    pub fn data_as<'a, T: ::serde::Deserialize<'a>>(&'a self) -> Result<T> {
        let data = self.view().data().ok_or_else(|| {
            Error::new(
                crate::ErrorKind::Envelope,
                "the cache holds no data section",
            )
        })?;
        de::from_view_at(data, crate::path::Segment::Key("data".into())).map_err(|e| {
            match &self.path {
                Some(path) => e.with_file(path),
                None => e,
            }
        })
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

    /// When the document came from the JSON: what each upgrade step did, in order, with
    /// what it printed ([`StepReport::printed`]): why the load upgraded, and what a Lua
    /// step had to say. Empty when the cache was used or no step ran. (When a step fails,
    /// the load fails; [`load_with`] keeps the reports in its [`Upgrader`].)
    pub fn steps(&self) -> &[StepReport] {
        &self.steps
    }

    /// When the document came from the JSON: the cache made from it, to keep beside the
    /// save. [`load`] has written it already; a game that loads through bytes
    /// ([`load_bytes`]) stores it itself. `None` when the cache was used.
    ///
    /// Also `None` when a mod was held back ([`Options::keep_going`]): the document is not
    /// the chain's whole work, and a later load (without `keep_going`, or after the mod is
    /// mended) must not be served it; [`load`] writes no cache then either.
    pub fn new_cache(&self) -> Option<&[u8]> {
        match self.source {
            Source::Json(_) if !held(&self.mods) => Some(self.bytes()),
            _ => None,
        }
    }

    /// When the document came from the JSON: where each mod's data stands after the
    /// upgrade ([`Upgraded::mods`](crate::upgrade::Upgraded::mods)). Empty when the cache
    /// was used.
    pub fn mods(&self) -> &[ModReport] {
        &self.mods
    }

    /// When the document came from the JSON: why the new cache could not be written, if it
    /// could not. The load itself succeeded; the next one reads the JSON again.
    pub fn write_error(&self) -> Option<&Error> {
        self.write_error.as_ref()
    }
}

/// Loads the save at `path` through its cache: the cache when it matches, otherwise the
/// JSON, upgraded by `chain`, with the cache rewritten. Fails only when the JSON itself
/// cannot be loaded or upgraded. What the steps printed is in [`Loaded::steps`].
///
/// A compressed save (zstd or gzip, [`crate::compress`]) is decompressed to at most
/// [`Options::max_text`] bytes of text; a damaged one, or one beyond the limit, fails with
/// an error of kind [`ErrorKind::Compressed`](crate::ErrorKind::Compressed) naming the
/// file, and no cache is written. A load never writes the save itself.
///
/// A save, or a cache, that is not a regular file (a FIFO, a device) is never waited on:
/// the save is refused with an error, the cache is not used (nor replaced).
pub fn load(path: impl AsRef<Path>, chain: &Chain, options: &Options) -> Result<Loaded> {
    load_with(path, &mut chain.upgrader(), options)
}

/// [`load`], upgrading with `upgrader` (its chain's): when a step fails, the load fails
/// and [`Upgrader::failed_steps`] gives the steps that ran, the failing one last, with
/// what each printed. A game that loads many saves may keep one upgrader for all of them.
///
/// ```
/// use savechain::cache;
/// use savechain::upgrade::{Chain, Step};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("world.json");
/// std::fs::write(&path, r#"{"meta": {"version": 1}, "data": {}}"#)?;
/// let chain = Chain::new("1.1.0", vec![Step::lua(
///     "0001-crew.lua",
///     "return function(data) print('no crew in this save'); error('cannot go on') end",
/// )?])?;
///
/// let mut upgrader = chain.upgrader();
/// let err = cache::load_with(&path, &mut upgrader, &savechain::Options::default()).err().unwrap();
/// assert!(err.to_string().contains("cannot go on"));
/// assert_eq!(upgrader.failed_steps()[0].printed, ["no crew in this save"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_with(
    path: impl AsRef<Path>,
    upgrader: &mut Upgrader<'_>,
    options: &Options,
) -> Result<Loaded> {
    let path = path.as_ref();
    match look(path, upgrader.chain(), options)? {
        Ok(map) => Ok(Loaded {
            backing: Backing::Mapped(map),
            path: Some(path.to_path_buf()),
            source: Source::Cache,
            steps: Vec::new(),
            mods: Vec::new(),
            write_error: None,
        }),
        Err(refusal) => {
            // Read again, whole this time: the look only hashed it, chunk by chunk. What
            // is read now is what the new cache records (length, hash, time).
            let (json, mtime) = read_json(path)?;
            from_json(path, &json, mtime, upgrader, options, refusal)
        }
    }
}

/// Loads the save at `path` from its JSON without looking at its cache, and rewrites the
/// cache.
pub fn rebuild(path: impl AsRef<Path>, chain: &Chain, options: &Options) -> Result<Loaded> {
    let path = path.as_ref();
    let (json, mtime) = read_json(path)?;
    from_json(
        path,
        &json,
        mtime,
        &mut chain.upgrader(),
        options,
        Refusal::Rebuild,
    )
}

/// Whether [`load`] would use the cache of `path` ([`Source::Cache`]) or why not, without
/// writing anything and without loading the JSON. Fails when the JSON cannot be read.
pub fn verify(path: impl AsRef<Path>, chain: &Chain, options: &Options) -> Result<Source> {
    Ok(match look(path.as_ref(), chain, options)? {
        Ok(_) => Source::Cache,
        Err(refusal) => Source::Json(refusal),
    })
}

/// Writes `save` as JSON to `path` and its cache beside it, each atomically. The save
/// should be at `chain`'s latest version: a cache holding another version is refused by
/// loads that upgrade to the latest.
///
/// It takes the save's lock, as [`Save::store`] does: a running upgrade of the save (by
/// `save-upgrade` or a batch) finishes first, and this save then replaces the upgraded one.
///
/// A save whose `meta.mods` marks a mod as held back (`held`, [`Options::keep_going`]) gets
/// no cache, and any cache of the path before is removed: its document is not the chain's
/// whole work, and a later load must upgrade the JSON (failing, or holding the mod back
/// again) rather than be served it.
///
/// The save is written as plain text, whatever the file held before: [`store_with`]
/// stores it compressed.
pub fn store(save: &Save, path: impl AsRef<Path>, chain: &Chain) -> Result<()> {
    store_with(save, path, chain, Compression::NONE)
}

/// [`store`], the save's text stored as `how` says (zstd or gzip, [`crate::compress`]):
/// its cache is of the compressed bytes, so [`load`] uses it as long as the file holds
/// exactly these bytes.
///
/// ```
/// use savechain::cache::{self, Source};
/// use savechain::compress::{Codec, Compression};
/// use savechain::upgrade::Chain;
/// use savechain::{Options, Save, Value};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("slot1.json.zst");
/// let chain = Chain::new("1.0.0", Vec::new())?;
/// let save = Save::new(chain.latest(), Value::from("the whole game state"));
/// cache::store_with(&save, &path, &chain, Compression::new(Codec::Zstd))?;
/// assert_eq!(Codec::of(&std::fs::read(&path)?), Codec::Zstd);
///
/// let loaded = cache::load(&path, &chain, &Options::default())?;
/// assert_eq!(loaded.source, Source::Cache);
/// assert_eq!(loaded.to_save()?, save);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn store_with(
    save: &Save,
    path: impl AsRef<Path>,
    chain: &Chain,
    how: Compression,
) -> Result<()> {
    let path = path.as_ref();
    let json = save.to_vec_with(how)?;
    let write_error = |e| Error::io(e, "cannot write the save").with_file(path);
    let held = fsio::hold(path, fsio::Wait::Forever).map_err(write_error)?;
    // Still locked: a writer that comes next waits until this cache is written too.
    let written = fsio::write_atomic_like(path, &json, None).map_err(write_error)?;
    drop(held);
    let mtime = written.metadata().map(|m| mtime_ns(&m)).unwrap_or(0);
    let cache_file = cache_path(path);
    if holds_a_mod_back(save, chain) {
        // No cache, and none from before: a load must upgrade the JSON again (see
        // `Loaded::new_cache`).
        return clear(path).map(drop);
    }
    let built = build::build(save, &provenance(&json, mtime, chain))?;
    fsio::write_atomic_like(&cache_file, built.bytes(), Some(path))
        .map(drop)
        .map_err(|e| Error::io(e, "cannot write the cache").with_file(&cache_file))
}

/// Whether the save's `meta.mods` marks one of the chain's mods as held back by an upgrade
/// ([`Options::keep_going`]): its document is not the chain's whole work, so no cache of
/// it may be used in place of upgrading its JSON.
fn holds_a_mod_back(save: &Save, chain: &Chain) -> bool {
    let Some(Value::Object(entries)) = save.meta.extra.get("mods") else {
        return false;
    };
    chain.mods().iter().any(|m| {
        let entry = entries.get(m.name());
        matches!(entry.and_then(|e| e.get("held")), Some(Value::Object(_)))
    })
}

/// Loads a save kept as bytes (in memory, a virtual file system, a console's storage)
/// through its cache bytes, as [`load`] does a file: `cache` is used when it was made from
/// exactly these JSON bytes (compressed ones as they are: [`crate::compress`]) by
/// `upgrader`'s chain at the version asked for and is intact;
/// otherwise the JSON is loaded and upgraded, and [`Loaded::new_cache`] gives the new cache
/// for the game to keep. Nothing is read or written on disk. With no file there is no
/// modification time: [`Options::trust_mtime`] does not apply, the JSON is always hashed.
///
/// ```
/// use std::collections::HashMap;
/// use savechain::cache::{self, Refusal, Source};
/// use savechain::upgrade::{Chain, Step};
/// use savechain::{Options, Value};
///
/// // Where the game keeps its saves: names to bytes.
/// let mut storage: HashMap<&str, Vec<u8>> = HashMap::new();
/// storage.insert("slot1.json", br#"{"meta": {"version": 1}, "data": {"hp": 3}}"#.to_vec());
/// let chain = Chain::new("1.1.0", vec![Step::lua(
///     "0001-health.lua",
///     "return function(data) data.health = data.hp * 10; data.hp = nil end",
/// )?])?;
/// let mut upgrader = chain.upgrader();
/// let options = Options::default();
///
/// let cached = storage.get("slot1.json.cache").map(Vec::as_slice);
/// let loaded = cache::load_bytes(&storage["slot1.json"], cached, &mut upgrader, &options)?;
/// assert_eq!(loaded.source, Source::Json(Refusal::Missing));
/// if let Some(new_cache) = loaded.new_cache() {
///     storage.insert("slot1.json.cache", new_cache.to_vec());   // kept for the next load
/// }
///
/// let cached = storage.get("slot1.json.cache").map(Vec::as_slice);
/// let again = cache::load_bytes(&storage["slot1.json"], cached, &mut upgrader, &options)?;
/// assert_eq!(again.source, Source::Cache);
/// let health = again.view().data().and_then(|d| d.get("health")).and_then(|h| h.as_i64());
/// assert_eq!(health, Some(30));
///
/// // Stored again: the save's text and its cache, for the game to keep.
/// let save = chain.resave(again.meta()?, savechain::text::from_slice(br#"{"health": 25}"#)?);
/// let stored = cache::store_bytes(&save, &chain)?;
/// storage.insert("slot1.json", stored.json);
/// storage.insert("slot1.json.cache", stored.cache);
/// let cached = storage.get("slot1.json.cache").map(Vec::as_slice);
/// let last = cache::load_bytes(&storage["slot1.json"], cached, &mut upgrader, &options)?;
/// assert_eq!(last.source, Source::Cache);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_bytes(
    json: &[u8],
    cache: Option<&[u8]>,
    upgrader: &mut Upgrader<'_>,
    options: &Options,
) -> Result<Loaded> {
    let chain = upgrader.chain();
    let fingerprint = chain.fingerprint();
    let expected = Expected {
        source_len: json.len() as u64,
        source: SourceCheck::Hash(format::hash(json)),
        chain: &fingerprint,
        version: options.target.unwrap_or(chain.latest()),
    };
    // Copied: the view reads 8-byte fields in place, and given bytes may lie anywhere.
    let verdict = match cache {
        None => Err(Refusal::Missing),
        Some(bytes) => {
            let aligned = Aligned::copy_of(bytes);
            let body_ok = check::body_hash_matches(aligned.bytes());
            check::check(aligned.bytes(), &expected, body_ok).map(|()| aligned)
        }
    };
    match verdict {
        Ok(aligned) => Ok(Loaded {
            backing: Backing::InMemory(aligned),
            path: None,
            source: Source::Cache,
            steps: Vec::new(),
            mods: Vec::new(),
            write_error: None,
        }),
        Err(refusal) => {
            let (built, steps, mods) = upgrade_and_build(json, 0, upgrader, options)?;
            Ok(Loaded {
                backing: Backing::InMemory(built),
                path: None,
                source: Source::Json(refusal),
                steps,
                mods,
                write_error: None,
            })
        }
    }
}

/// A save's text and its cache, made by [`store_bytes`] for a game to keep where it keeps
/// its saves.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Stored {
    /// The save's bytes: its canonical text, what [`Save::store`] would write, compressed
    /// when [`store_bytes_with`] was asked to.
    pub json: Vec<u8>,
    /// Its cache, which [`load_bytes`] uses with exactly these JSON bytes; empty for a save
    /// that holds a mod back, as [`store`] writes none for it (`load_bytes` refuses empty
    /// bytes and upgrades the JSON).
    pub cache: Vec<u8>,
}

/// [`store`] through bytes: the text of `save` and its cache, for a game that keeps saves
/// in memory, a virtual file system or a console's storage. The save should be at
/// `chain`'s latest version.
pub fn store_bytes(save: &Save, chain: &Chain) -> Result<Stored> {
    store_bytes_with(save, chain, Compression::NONE)
}

/// [`store_bytes`], the save's text compressed as `how` says; the cache is of the
/// compressed bytes ([`load_bytes`] takes them as they are).
pub fn store_bytes_with(save: &Save, chain: &Chain, how: Compression) -> Result<Stored> {
    let json = save.to_vec_with(how)?;
    if holds_a_mod_back(save, chain) {
        // As `store` writes none: empty bytes, which `load_bytes` refuses as a cache.
        return Ok(Stored {
            cache: Vec::new(),
            json,
        });
    }
    let built = build::build(save, &provenance(&json, 0, chain))?;
    Ok(Stored {
        cache: built.bytes().to_vec(),
        json,
    })
}

/// Deletes the cache of `path`, if there is one; returns whether there was. Something
/// there that is not a file (a FIFO, a device) is not a cache, and is left as it is.
pub fn clear(path: impl AsRef<Path>) -> Result<bool> {
    let cache_file = cache_path(path);
    if let Ok(metadata) = std::fs::symlink_metadata(&cache_file) {
        let file_type = metadata.file_type();
        if !file_type.is_file() && !file_type.is_symlink() && !file_type.is_dir() {
            let what = fsio::kind_of(&file_type);
            return Err(Error::new(
                crate::ErrorKind::Io,
                format!("it is {what}, not a cache, so it is left as it is"),
            )
            .with_file(&cache_file));
        }
    }
    match std::fs::remove_file(&cache_file) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(e, "cannot delete the cache").with_file(&cache_file)),
    }
}

/// Checks the cache of `path` against its JSON, `chain` and the target version: the cache
/// to use, or why not.
fn look(
    path: &Path,
    chain: &Chain,
    options: &Options,
) -> Result<std::result::Result<memmap2::Mmap, Refusal>> {
    let file = fsio::open_regular(path).map_err(|e| read_error(e, path))?;
    let metadata = file.metadata().map_err(|e| read_error(e, path))?;
    let mtime = mtime_ns(&metadata);
    let fingerprint = chain.fingerprint();
    let (source_len, source) = match options.trust_mtime {
        true => (metadata.len(), SourceCheck::Mtime(mtime)),
        false => {
            // The JSON's content, read to its end (not its size when opened): a byte
            // flipped anywhere, or one more or fewer, is another hash.
            let (len, hash) = file_hash::hash_file(&file).map_err(|e| read_error(e, path))?;
            (len, SourceCheck::Hash(hash))
        }
    };
    let expected = Expected {
        source_len,
        source,
        chain: &fingerprint,
        version: options.target.unwrap_or(chain.latest()),
    };
    // After the JSON is hashed, not beside it: both cores read and hash the JSON.
    Ok(check::map_file(&cache_path(path)).and_then(|map| {
        let body_ok = check::body_hash_matches(&map);
        check::check(&map, &expected, body_ok).map(|()| map)
    }))
}

/// Loads and upgrades the JSON of `path`, and writes its cache.
fn from_json(
    path: &Path,
    json: &[u8],
    mtime: u64,
    upgrader: &mut Upgrader<'_>,
    options: &Options,
    refusal: Refusal,
) -> Result<Loaded> {
    let (built, steps, mods) =
        upgrade_and_build(json, mtime, upgrader, options).map_err(|e| e.with_file(path))?;
    let cache_file = cache_path(path);
    // A document with a mod held back is not the chain's whole work (see `new_cache`).
    let write_error = match held(&mods) {
        true => None,
        false => fsio::write_atomic_like(&cache_file, built.bytes(), Some(path))
            .err()
            .map(|e| Error::io(e, "cannot write the cache").with_file(&cache_file)),
    };
    Ok(Loaded {
        backing: Backing::InMemory(built),
        path: Some(path.to_path_buf()),
        source: Source::Json(refusal),
        steps,
        mods,
        write_error,
    })
}

/// The cache of a save's JSON, upgraded, the reports of the steps that ran and where each
/// mod's data stands.
fn upgrade_and_build(
    json: &[u8],
    mtime: u64,
    upgrader: &mut Upgrader<'_>,
    options: &Options,
) -> Result<(Aligned, Vec<StepReport>, Vec<ModReport>)> {
    // The identity (`provenance`) is of the bytes as stored; the save is their text.
    let text = compress::decompress(json, options.max_text)?;
    let save = Save::from_slice_within(&text, options.max_text)?;
    let upgraded = upgrader.upgrade(save, options)?;
    let built = build::build(&upgraded.save, &provenance(json, mtime, upgrader.chain()))?;
    Ok((built, upgraded.steps, upgraded.mods))
}

/// Whether a mod was held back.
fn held(mods: &[ModReport]) -> bool {
    mods.iter().any(|m| matches!(m.status, ModStatus::Held(_)))
}

fn provenance(json: &[u8], mtime: u64, chain: &Chain) -> Provenance {
    Provenance {
        source_len: json.len() as u64,
        source_hash: format::hash(json),
        source_mtime_ns: mtime,
        chain: chain.fingerprint(),
    }
}

/// The JSON of `path` and its modification time, from one opening of the file.
fn read_json(path: &Path) -> Result<(Vec<u8>, u64)> {
    let mut file = fsio::open_regular(path).map_err(|e| read_error(e, path))?;
    let metadata = file.metadata().map_err(|e| read_error(e, path))?;
    let mut json = Vec::with_capacity(metadata.len() as usize);
    std::io::Read::read_to_end(&mut file, &mut json).map_err(|e| read_error(e, path))?;
    Ok((json, mtime_ns(&metadata)))
}

fn read_error(e: std::io::Error, path: &Path) -> Error {
    Error::io(e, "cannot read the file").with_file(path)
}

fn mtime_ns(metadata: &std::fs::Metadata) -> u64 {
    metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}
