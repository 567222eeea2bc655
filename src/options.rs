//! How to load and upgrade: one set of options for upgrading in memory, upgrading files
//! and loading through the cache.

use crate::compress::{self, Compression};
use crate::lua::Limits;

/// How to upgrade a save, and how far to trust its cache.
///
/// [`Options::default()`] upgrades to the chain's latest version with the default Lua
/// budget and checks caches by the content hash of the JSON. Options will grow: start from
/// the default and set what you need.
///
/// ```
/// let mut options = savechain::Options::default();
/// options.strict = true;
/// options.target = Some(5);
/// assert!(!options.diff);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Stop at this version instead of the chain's latest.
    pub target: Option<u64>,
    /// Fail a step that removes a path it did not declare dropped.
    pub strict: bool,
    /// Report, for each step, the paths it added, removed and changed (costs a copy of the
    /// data per step).
    pub diff: bool,
    /// What each Lua step may use.
    pub limits: Limits,
    /// Trust a cache when the JSON file's size and modification time match the ones it
    /// recorded, without reading and hashing the JSON: loads cost O(size of the cache).
    ///
    /// The cost in safety: an edit that keeps the size and restores the modification time
    /// (a tool that preserves times, a clock set back, a file system with coarse times and
    /// an edit within the same tick) goes unseen until the JSON changes again.
    pub trust_mtime: bool,
    /// When a mod's step fails, or a mod's data cannot be upgraded by its installed
    /// release, upgrade the rest of the save and leave that mod's data exactly as it was,
    /// at its old version, with the data of the mods that come after it
    /// ([`ModStatus::Held`](crate::upgrade::ModStatus::Held)); each is marked in the save
    /// (`meta.mods.<name>.held`) for a person, a later store and a later run (which retries
    /// it) to see. Without it, the save fails, naming the mod. The game's own steps always
    /// fail the save. Costs a copy of the save, from which, when a mod fails, the save is
    /// upgraded again without it (an upgrade depends only on the save and the chain).
    ///
    /// ```
    /// use savechain::upgrade::{Chain, Mod, ModStatus, Step};
    /// use savechain::{Options, Save};
    ///
    /// let broken = Mod::new("broken", "1.0.0", vec![
    ///     Step::lua("0001-oops.lua", "return function(data) error('no fuel') end")?,
    /// ])?;
    /// let chain = Chain::new("1.0.0", vec![])?.with_mods(vec![broken])?;
    /// let save = Save::from_str(
    ///     r#"{"meta": {"version": 1, "mods": {"broken": {"version": 1}}}, "data": {"mods": {"broken": {}}}}"#,
    /// )?;
    /// assert!(chain.upgrader().upgrade(save.clone(), &Options::default()).is_err());
    ///
    /// let mut options = Options::default();
    /// options.keep_going = true;
    /// let upgraded = chain.upgrader().upgrade(save, &options)?;
    /// assert!(matches!(upgraded.mods[0].status, ModStatus::Held(_)));
    /// assert!(upgraded.save.meta.extra["mods"]["broken"].get("held").is_some());
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub keep_going: bool,
    /// Upgrading into another path ([`Target::To`](crate::upgrade::Target::To), a batch's
    /// output folder): replace a file found at the output that holds something else than
    /// what the upgrade writes (a save a player changed there since an earlier run, a file
    /// that is not a save), keeping it first as a backup beside it, as an in-place
    /// upgrade keeps its original: `<name>.v<N>.bak` when it is a save at version N,
    /// `<name>.bak` otherwise (a different file of that name is never overwritten).
    /// Without it, such an output is refused ([`ErrorKind::Usage`](crate::ErrorKind::Usage))
    /// and left as it is. An output that already holds exactly what the upgrade writes is
    /// left alone either way.
    pub replace_outputs: bool,
    /// How a save rewritten by an upgrade is stored: `None` (the default) keeps each save's
    /// own codec ([`Codec`](crate::compress::Codec)) at that codec's default level, so a
    /// zstd save stays zstd and a plain one plain; `Some` stores every save so.
    pub compression: Option<Compression>,
    /// The most text a compressed save may decompress to; a save beyond it is refused with
    /// an error of kind [`ErrorKind::Compressed`](crate::ErrorKind::Compressed) (a
    /// decompression bomb stops there). [`compress::DEFAULT_LIMIT`] unless set.
    pub max_text: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            target: None,
            strict: false,
            diff: false,
            limits: Limits::default(),
            trust_mtime: false,
            keep_going: false,
            replace_outputs: false,
            compression: None,
            max_text: compress::DEFAULT_LIMIT,
        }
    }
}

impl Options {
    /// The default options for one of `jobs` upgrades running at once: Lua's memory limit
    /// is each job's share of the memory available ([`Limits::for_jobs`]).
    ///
    /// ```
    /// let options = savechain::Options::for_jobs(4);
    /// assert!(options.limits.memory <= savechain::lua::Limits::default().memory);
    /// ```
    pub fn for_jobs(jobs: usize) -> Options {
        Options {
            limits: Limits::for_jobs(jobs),
            ..Options::default()
        }
    }
}
