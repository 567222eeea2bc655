//! Saves found in folders to a listing: each save's head read (on several threads) and
//! where it stands against a chain, in path order.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::read::{read_with, Head};
use crate::batch::{Found, Plan};
use crate::error::{Error, ErrorKind};
use crate::options::Options;
use crate::save::Save;
use crate::upgrade::{Chain, ModStatus};
use crate::value::Value;

/// One save of a listing: its path, its head, and where it stands.
#[derive(Debug)]
#[non_exhaustive]
pub struct Listed {
    /// The path it was found by (through the folder given).
    pub path: PathBuf,
    /// What its head says; `None` when it could not be read ([`Status::Damaged`],
    /// [`Status::NotASave`]).
    pub head: Option<Head>,
    /// Where it stands against the chain.
    pub status: Status,
}

/// Where a listed save stands against a chain: what [`Chain::plan_upgrade`] says of its
/// `meta` (the chain decides; nothing here is policy of its own).
#[derive(Debug)]
#[non_exhaustive]
pub enum Status {
    /// No chain was given: read, not checked.
    Unchecked,
    /// At the chain's latest version, and so is each installed mod's data.
    Current,
    /// An upgrade would run steps: the game's data goes to version `to` (its version now,
    /// when only mods' steps run), and each mod named to the version beside it.
    Outdated {
        /// The game's data version after the upgrade.
        to: u64,
        /// The mods whose steps would run, each with its data version after them.
        mods: Vec<(String, u64)>,
    },
    /// Newer than the chain knows: it needs a newer program. The chain's error.
    TooNew(Error),
    /// The chain cannot upgrade it for another reason (another game's save, older than the
    /// chain's oldest version, a mod's data it cannot upgrade): the chain's error.
    Refused(Error),
    /// Its head cannot be read: damaged text or compressed data, a file that cannot be
    /// read, or a file named that is not a save. The error names the file, and where.
    Damaged(Error),
    /// Found in a folder and not a save (a settings file beside the saves): left out, as
    /// every folder search leaves such files out ([`Found::skips`]).
    NotASave(Error),
}

impl Status {
    /// One word for it, as `save-upgrade list --json` spells it: `unchecked`, `current`,
    /// `outdated`, `too-new`, `refused`, `damaged`, `not-a-save`.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Unchecked => "unchecked",
            Status::Current => "current",
            Status::Outdated { .. } => "outdated",
            Status::TooNew(_) => "too-new",
            Status::Refused(_) => "refused",
            Status::Damaged(_) => "damaged",
            Status::NotASave(_) => "not-a-save",
        }
    }

    /// Whether a check finds work in it: it needs an upgrade, or cannot be read or
    /// upgraded by the chain (not for one left out as not a save, nor unchecked).
    pub fn needs_attention(&self) -> bool {
        !matches!(
            self,
            Status::Unchecked | Status::Current | Status::NotASave(_)
        )
    }

    /// The error it carries, for those that have one.
    pub fn error(&self) -> Option<&Error> {
        match self {
            Status::TooNew(e) | Status::Refused(e) | Status::Damaged(e) | Status::NotASave(e) => {
                Some(e)
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for Status {
    /// For a person: `current`, `needs upgrade to 5`, `needs upgrade to 9, mod tinker to 3`,
    /// `too new: ...`, `cannot upgrade: ...`, `damaged: ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Unchecked => f.write_str("not checked"),
            Status::Current => f.write_str("current"),
            Status::Outdated { to, mods } => {
                write!(f, "needs upgrade to {to}")?;
                for (name, version) in mods {
                    write!(f, ", mod {name} to {version}")?;
                }
                Ok(())
            }
            Status::TooNew(e) => write!(f, "too new: {}", e.message()),
            Status::Refused(e) => write!(f, "cannot upgrade: {}", without_file(e)),
            Status::Damaged(e) => write!(f, "damaged: {}", without_file(e)),
            Status::NotASave(e) => write!(f, "not a save: {}", e.message()),
        }
    }
}

/// An error's text without its file, which a listing prints beside it.
fn without_file(e: &Error) -> String {
    let text = e.to_string();
    match e.file() {
        Some(file) => {
            let prefix = format!("{}:", file.display());
            text.strip_prefix(&prefix)
                .map_or(text.clone(), |rest| rest.trim_start().to_string())
        }
        None => text,
    }
}

/// The saves of some folders and files, listed ([`list`]).
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Listing {
    /// Each save, damaged ones included, in path order.
    pub saves: Vec<Listed>,
    /// What was left out, and why: files found in folders that are not saves, and what
    /// the search left out ([`Plan::skipped`]).
    pub skipped: Vec<(PathBuf, String)>,
    /// Paths that could not be searched, and roots that hold no saves.
    pub errors: Vec<Error>,
}

impl Listing {
    /// Whether a check finds work: a save needs an upgrade, is damaged or refused, or a
    /// path could not be searched.
    pub fn needs_attention(&self) -> bool {
        !self.errors.is_empty() || self.saves.iter().any(|s| s.status.needs_attention())
    }
}

/// Lists the saves of `roots`, found as every folder search finds them ([`Plan::find`]:
/// `*.json`, `*.json.zst`, `*.json.gz`, links followed, each file once), each from its
/// head ([`read_with`](super::read_with)) and, with a chain, where it stands
/// against it. Heads are read on rayon's threads; the listing is in path order.
///
/// A save whose head cannot be read is listed as [`Status::Damaged`], never left out; a
/// file found in a folder that is not a save is left out, in [`Listing::skipped`].
///
/// The status is of the head alone: what only the data shows (a mod's data without its
/// version in `meta.mods`, a broken value) is found when the save is loaded or upgraded.
///
/// ```
/// use savechain::compress::{Codec, Compression};
/// use savechain::head::{self, Status};
/// use savechain::upgrade::{Chain, Step};
/// use savechain::{Options, Save, Value};
///
/// let dir = tempfile::tempdir()?;
/// let chain = Chain::new("1.1.0", vec![Step::rust(1, "nothing", "1", |_, _| Ok(()))])?;
/// chain.new_save(Value::Null).store(dir.path().join("a.json"))?;
/// // What a file holds decides how it is read, whatever its name.
/// Save::new(1, Value::Null).store_with(dir.path().join("b.json"), Compression::new(Codec::Gzip))?;
/// std::fs::write(dir.path().join("c.json"), "{\"meta\": {\"version\": 1")?;
///
/// let listing = head::list(&[dir.path()], Some(&chain), &Options::default());
/// let statuses: Vec<String> = listing.saves.iter().map(|s| s.status.to_string()).collect();
/// assert_eq!(statuses[0], "current");
/// assert_eq!(statuses[1], "needs upgrade to 2");
/// assert!(statuses[2].starts_with("damaged: 1:23: at meta: expected ',' or '}'"), "{}", statuses[2]);
/// assert_eq!(listing.saves[1].head.as_ref().unwrap().codec, Codec::Gzip);
/// assert!(listing.needs_attention());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn list(roots: &[impl AsRef<Path>], chain: Option<&Chain>, options: &Options) -> Listing {
    let plan = Plan::find(roots);
    let mut listing = Listing {
        saves: Vec::new(),
        skipped: plan.skipped,
        errors: plan.errors,
    };
    list_each(&plan.saves, chain, options, |listed| {
        match &listed.status {
            Status::NotASave(e) => listing
                .skipped
                .push((listed.path.clone(), e.message().to_string())),
            _ => listing.saves.push(listed),
        }
        ControlFlow::Continue(())
    });
    listing
}

/// Lists the saves `found` (from [`Plan::find`]) as [`list`] does, handing each to `each`
/// in their order as soon as it and those before it are read, until `each` breaks: for a
/// listing of millions of saves, which need not be held at once. Files that are not saves
/// come as [`Status::NotASave`].
pub fn list_each(
    found: &[Found],
    chain: Option<&Chain>,
    options: &Options,
    mut each: impl FnMut(Listed) -> ControlFlow<()>,
) {
    // Enough at once to keep every thread busy, few enough to stream.
    let chunk = 64 * rayon::current_num_threads().max(1);
    for saves in found.chunks(chunk) {
        let listed: Vec<Listed> = saves
            .par_iter()
            .map(|found| listed(found, chain, options))
            .collect();
        for one in listed {
            if each(one).is_break() {
                return;
            }
        }
    }
}

fn listed(found: &Found, chain: Option<&Chain>, options: &Options) -> Listed {
    let path = found.path.clone();
    match read_with(&found.path, options) {
        Ok(head) => {
            let status = match chain {
                Some(chain) => status(&head, chain, options),
                None => Status::Unchecked,
            };
            Listed {
                path,
                head: Some(head),
                status,
            }
        }
        Err(e) => Listed {
            path,
            head: None,
            status: match found.skips(&e) {
                true => Status::NotASave(e),
                false => Status::Damaged(e),
            },
        },
    }
}

/// Where the save whose head is `head` stands against `chain`, by the chain's plan.
fn status(head: &Head, chain: &Chain, options: &Options) -> Status {
    // The data is not read: the plan looks at `meta` (and at the data only for a mod's
    // data without a version, which a load finds).
    let save = Save {
        meta: head.meta.clone(),
        data: Value::Null,
    };
    let plan = match chain.plan_upgrade(&save, options) {
        Ok(plan) => plan,
        Err(e) if head.meta.version > chain.latest() => return Status::TooNew(e),
        Err(e) => return Status::Refused(e),
    };
    if let Some(held) = plan.mods.iter().find_map(|m| match &m.status {
        ModStatus::Held(why) => Some(why),
        _ => None,
    }) {
        return Status::Refused(Error::new(ErrorKind::Upgrade, held.clone()));
    }
    if plan.is_empty() {
        return Status::Current;
    }
    let mods = plan
        .mods
        .iter()
        .filter(|m| m.status == ModStatus::Upgraded)
        .map(|m| (m.name.clone(), m.to.unwrap_or_default()))
        .collect();
    Status::Outdated { to: plan.to, mods }
}
