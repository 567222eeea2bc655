//! The upgrade chain: small steps, each moving a save from version N to N + 1, in Rust or
//! Lua, applied in order to bring an old save to the latest version.
//!
//! ```
//! use savechain::upgrade::{Chain, Options, Step, StepContext};
//! use savechain::{Save, Value};
//!
//! fn add_shield(data: &mut Value, _: &mut StepContext) -> Result<(), String> {
//!     let ship = data.get_mut("ship").and_then(Value::as_object_mut).ok_or("no ship")?;
//!     ship.insert("shield", Value::Double(100.0));
//!     Ok(())
//! }
//!
//! let chain = Chain::new(vec![
//!     Step::rust(1, "add ship.shield", add_shield),
//!     Step::lua(2, "0002-rename-hull.lua", r#"
//!         local up = require("savechain.upgrade")
//!         return function(data) up.rename(data, "ship.hull", "integrity") end
//!     "#),
//! ])?;
//! assert_eq!((chain.oldest(), chain.latest()), (1, 3));
//!
//! let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {"ship": {"hull": 7}}}"#)?;
//! let upgraded = chain.upgrader().upgrade(save, &Options::default())?;
//! assert_eq!(upgraded.save.meta.version, 3);
//! assert_eq!(
//!     upgraded.save.data.to_string(),
//!     r#"{"ship":{"integrity":7,"shield":["d","0x1.9p+6"]}}"#
//! );
//! # Ok::<(), savechain::Error>(())
//! ```

mod diff;
mod lua_steps;
mod run;

use std::fmt;
use std::path::{Path, PathBuf};

pub use diff::{diff, Changes};
pub use lua_steps::parse_name as parse_step_name;
pub use run::{Options, StepReport, Upgraded, Upgrader};

use crate::error::{Error, ErrorKind, Result};
use crate::value::Value;

/// A step written in Rust: changes the document's data in place.
pub type RustStep = fn(&mut Value, &mut StepContext) -> std::result::Result<(), String>;

/// What a step is told, and what it declares.
pub struct StepContext {
    /// The version the data has now, and the one the step makes.
    pub from: u64,
    pub to: u64,
    /// The save's `meta` section, read only.
    pub meta: crate::save::Meta,
    dropped: Vec<String>,
}

impl StepContext {
    /// Declares that the step removes `path` (`"player.legacy_flag"`, relative to the data)
    /// on purpose, and removes it; strict upgrades accept only declared removals. Returns
    /// whether there was something to remove.
    pub fn drop_path(&mut self, data: &mut Value, path: &str) -> bool {
        self.dropped.push(path.to_string());
        let (parent, key) = match path.rsplit_once('.') {
            Some((parent, key)) => (lookup_mut(data, parent), key),
            None => (Some(data), path),
        };
        parent
            .and_then(Value::as_object_mut)
            .and_then(|map| map.remove(key))
            .is_some()
    }

    /// Declares that the step removes `path` on purpose, for removals it makes itself (a
    /// rename or a move removes its source).
    pub fn declare_removed(&mut self, path: &str) {
        self.dropped.push(path.to_string());
    }
}

fn lookup_mut<'v>(data: &'v mut Value, dotted: &str) -> Option<&'v mut Value> {
    dotted.split('.').try_fold(data, |v, key| v.get_mut(key))
}

/// How a step is written.
#[derive(Clone)]
pub enum StepKind {
    Rust(RustStep),
    /// A Lua chunk that returns `function(data, ctx)`; `dir` is the folder it may `require`
    /// its own modules from.
    Lua {
        source: String,
        dir: Option<PathBuf>,
    },
}

/// One step: from version `from` to `from + 1`.
#[derive(Clone)]
pub struct Step {
    pub from: u64,
    /// The file a Lua step came from, or a name for a Rust step.
    pub name: String,
    pub description: String,
    pub kind: StepKind,
}

impl Step {
    pub fn rust(from: u64, description: &str, step: RustStep) -> Step {
        Step {
            from,
            name: format!("{from:04} (rust)"),
            description: description.to_string(),
            kind: StepKind::Rust(step),
        }
    }

    /// A Lua step from its file name (`NNNN-short-description.lua`, where NNNN is `from`)
    /// and source; the description is the first line's comment, or the file name's words.
    pub fn lua(from: u64, file_name: &str, source: &str) -> Step {
        Step {
            from,
            name: file_name.to_string(),
            description: lua_steps::description(file_name, source),
            kind: StepKind::Lua {
                source: source.to_string(),
                dir: None,
            },
        }
    }

    pub fn to(&self) -> u64 {
        self.from + 1
    }

    /// `"rust"` or `"lua"`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            StepKind::Rust(_) => "rust",
            StepKind::Lua { .. } => "lua",
        }
    }
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} -> {} {} {:?} ({})",
            self.from,
            self.to(),
            self.kind_name(),
            self.name,
            self.description
        )
    }
}

/// A checked sequence of steps with no gaps and no two from the same version.
#[derive(Clone, Debug)]
pub struct Chain {
    steps: Vec<Step>,
}

impl Chain {
    /// Checks and orders the steps. The error names the steps in conflict or around a gap.
    pub fn new(mut steps: Vec<Step>) -> Result<Chain> {
        if steps.is_empty() {
            return Err(chain_error("the chain has no steps".to_string()));
        }
        steps.sort_by_key(|s| s.from);
        for pair in steps.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.from == b.from {
                return Err(chain_error(format!(
                    "two steps from version {}: {} and {}",
                    a.from, a.name, b.name
                )));
            }
            if b.from != a.to() {
                return Err(chain_error(format!(
                    "gap in the chain: {} goes to version {}, but the next step, {}, starts from version {}",
                    a.name,
                    a.to(),
                    b.name,
                    b.from
                )));
            }
        }
        if steps[0].from == 0 {
            return Err(chain_error(format!(
                "{}: versions start at 1",
                steps[0].name
            )));
        }
        Ok(Chain { steps })
    }

    /// The chain of the Lua steps in `dir`: every `NNNN-short-description.lua` file there.
    /// Other `.lua` files directly in `dir` are refused (a misnamed step would otherwise be
    /// skipped); helper modules go in subfolders.
    pub fn from_lua_dir(dir: &Path) -> Result<Chain> {
        Chain::new(lua_steps::load_dir(dir)?)
    }

    /// The chain with `steps` added (replacing none: a clash is an error).
    pub fn with(&self, steps: Vec<Step>) -> Result<Chain> {
        Chain::new(self.steps.iter().cloned().chain(steps).collect())
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The version every save is upgraded to.
    pub fn latest(&self) -> u64 {
        self.steps.last().map_or(1, Step::to)
    }

    /// The oldest version the chain can upgrade.
    pub fn oldest(&self) -> u64 {
        self.steps.first().map_or(1, |s| s.from)
    }

    /// The steps that take a save from `version` to `target` (the latest when `None`), or
    /// why it cannot be done.
    pub fn plan(
        &self,
        version: u64,
        writer: Option<&semver::Version>,
        target: Option<u64>,
    ) -> Result<&[Step]> {
        let target = target.unwrap_or(self.latest());
        let by = writer.map_or(String::new(), |w| format!(", written by {w}"));
        if target > self.latest() || target < self.oldest() {
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!(
                    "target version {target} is outside this chain's versions {} to {}",
                    self.oldest(),
                    self.latest()
                ),
            ));
        }
        if version > self.latest() {
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!(
                    "the save is version {version}{by}, newer than this program knows (latest version {}); \
                     it needs a newer program and is left as it is",
                    self.latest()
                ),
            ));
        }
        if version < self.oldest() {
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!(
                    "the save is version {version}{by}, older than the oldest version this chain upgrades ({}); \
                     it is left as it is",
                    self.oldest()
                ),
            ));
        }
        if version > target {
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!("the save is version {version}{by}, past the target version {target}"),
            ));
        }
        let start = (version - self.oldest()) as usize;
        let end = (target - self.oldest()) as usize;
        Ok(&self.steps[start..end])
    }

    /// The identity of the chain, for caches made by it: its versions and every step's
    /// name, kind, description and Lua source. Rust steps are code, so the program's
    /// version stands for them.
    pub fn fingerprint(&self) -> [u8; 16] {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(b"savechain chain 1\0");
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        for step in &self.steps {
            h.update(&step.from.to_le_bytes());
            for part in [step.kind_name(), &step.name, &step.description] {
                h.update(&(part.len() as u64).to_le_bytes());
                h.update(part.as_bytes());
            }
            if let StepKind::Lua { source, .. } = &step.kind {
                h.update(&(source.len() as u64).to_le_bytes());
                h.update(source.as_bytes());
            }
        }
        h.digest128().to_le_bytes()
    }

    /// Something that runs this chain on saves, keeping a Lua sandbox between them.
    pub fn upgrader(&self) -> Upgrader<'_> {
        Upgrader::new(self)
    }
}

fn chain_error(message: String) -> Error {
    Error::new(ErrorKind::Upgrade, message)
}
