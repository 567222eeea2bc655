//! What an upgrade of one save will do, namespace by namespace: the game's steps, then each
//! installed mod's, and where each mod's data stands, read from `meta.mods`.

use super::chain::{Chain, Mod};
use super::step::Step;
use crate::error::{Error, ErrorKind, Result};
use crate::options::Options;
use crate::path::{Path, Segment};
use crate::save::{Meta, Save};
use crate::value::{Map, Value};

/// What upgrading one save will do: the game's steps, then each mod's, and where every mod's
/// data stands ([`Chain::plan_upgrade`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Plan<'c> {
    /// The chain it is of.
    chain: &'c Chain,
    /// The game's data version the save has (`meta.version`).
    pub from: u64,
    /// The game's data version it will have.
    pub to: u64,
    /// Every mod installed or recorded in the save: the installed ones in the order they
    /// run, then those the save has and this chain does not, by name.
    pub mods: Vec<ModReport>,
    pub(super) runs: Vec<Run<'c>>,
}

/// The steps of one namespace to run on a save.
#[derive(Debug)]
pub(super) struct Run<'c> {
    /// The mod and its position in [`Chain::mods`]; `None` for the game's steps.
    pub(super) in_mod: Option<(usize, &'c Mod)>,
    pub(super) steps: &'c [Step],
}

impl Plan<'_> {
    /// Whether no step will run: the save is current (or what is left is held back).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Whether an upgrade would make or drop a `held` mark in `meta.mods` ([`mark`]), as it
    /// does even when no step runs.
    pub(super) fn changes_marks(&self, meta: &Meta) -> bool {
        let mut marked = meta.clone();
        mark(&mut marked, &self.mods, &self.chain.mods);
        marked != *meta
    }
}

/// Holds back every mod of `chain_mods` (in their order, so a mod held for this holds back
/// those after it in turn) whose steps were to run and that comes after a mod held back:
/// its steps would build on data the held mod's steps have not made.
pub(super) fn hold_followers(mods: &mut [ModReport], chain_mods: &[Mod]) {
    for m in chain_mods {
        let held = |name: &str| {
            mods.iter()
                .any(|r| r.name == name && matches!(r.status, ModStatus::Held(_)))
        };
        let Some(leader) = m.comes_after().iter().find(|a| held(a)).cloned() else {
            continue;
        };
        let report = mods.iter_mut().find(|r| r.name == m.name());
        if let Some(report) = report.filter(|r| r.status == ModStatus::Upgraded) {
            report.to = report.from;
            report.status = ModStatus::Held(format!(
                "mod {}: it comes after the mod {leader}, which is held back, and is held back \
                 with it",
                m.name()
            ));
        }
    }
}

/// Marks each mod of `chain_mods` held back in `mods` as such in `meta.mods`, and drops the
/// mark of an earlier upgrade from one that is no longer held back (its steps run, or its
/// data is current now). Mods not installed keep their entries as they are.
pub(super) fn mark(meta: &mut Meta, mods: &[ModReport], chain_mods: &[Mod]) {
    for report in mods {
        let Some(m) = chain_mods.iter().find(|m| m.name() == report.name) else {
            continue;
        };
        match &report.status {
            ModStatus::Held(why) => mark_held(meta, m, why),
            ModStatus::Upgraded | ModStatus::Current => unmark(meta, m),
            _ => {}
        }
    }
}

/// Marks in `meta.mods.<name>.held` that `m` was held back, with why, its data left at the
/// version recorded beside it (an entry is made if the save had none): for a person to see,
/// for a game storing the save again not to record the mod's latest version, and for a
/// later run, which retries it.
fn mark_held(meta: &mut Meta, m: &Mod, why: &str) {
    let mark: Map = [
        ("writer", Value::String(m.release().to_string())),
        ("error", Value::from(why)),
    ]
    .into_iter()
    .collect();
    let entries = meta
        .extra
        .entry("mods")
        .or_insert_with(|| Value::Object(Map::new()));
    // Anything but an object was refused when the upgrade was planned.
    if let Value::Object(entries) = entries {
        let entry = entries
            .entry(m.name())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(entry) = entry {
            entry.insert("held", Value::Object(mark));
        }
    }
}

/// Drops the mark of an upgrade that held `m` back, if its entry has one.
fn unmark(meta: &mut Meta, m: &Mod) {
    let entry = meta
        .extra
        .get_mut("mods")
        .and_then(|entries| entries.get_mut(m.name()))
        .and_then(Value::as_object_mut);
    if let Some(entry) = entry {
        entry.remove("held");
    }
}

/// Where one mod's data in a save stands, before or after an upgrade.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModReport {
    /// The mod's name, its key in `meta.mods`.
    pub name: String,
    /// The data version the save had for it, when it had one.
    pub from: Option<u64>,
    /// The data version it has after the upgrade (in a plan: will have).
    pub to: Option<u64>,
    /// What happened to it.
    pub status: ModStatus,
    /// For a mod held back because one of its steps failed: what its steps printed, each
    /// line with the step's name ([`StepReport::printed`](super::StepReport::printed)),
    /// since those steps are not among the upgrade's.
    pub printed: Vec<(String, String)>,
}

/// What an upgrade did (in a [`Plan`]: will do) to one mod's data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModStatus {
    /// Its steps ran (in a plan: will run), from `from` to `to`.
    Upgraded,
    /// At the installed release's latest version already.
    Current,
    /// Installed, and the save records no data version of it: it holds nothing of the mod
    /// yet, and no step runs (the game records the mod when it next stores the save).
    NotInSave,
    /// Recorded in the save, not installed: its data and `meta.mods` entry are kept exactly,
    /// to be upgraded when it is installed again.
    NotInstalled,
    /// Left exactly as it was, at its old version, with the reason: one of its steps failed,
    /// its data cannot be upgraded by the installed release (newer than it, older than its
    /// oldest step, no version recorded), or it comes after a mod held back. Only with
    /// [`Options::keep_going`]; otherwise the save fails. Marked in the save as
    /// `meta.mods.<name>.held`.
    Held(String),
    /// Not run because the game's upgrade stops before its latest version
    /// ([`Options::target`]): a mod's steps expect the game's data at its latest.
    Waiting,
}

impl ModStatus {
    /// Its word, as every report spells it (`save-upgrade --report`, the C ABI, the Lua
    /// module): `upgraded`, `current`, `not-in-the-save`, `not-installed`, `held`,
    /// `waiting`; one word each, so that a status read from one can be looked for in
    /// another.
    pub fn word(&self) -> &'static str {
        match self {
            ModStatus::Upgraded => "upgraded",
            ModStatus::Current => "current",
            ModStatus::NotInSave => "not-in-the-save",
            ModStatus::NotInstalled => "not-installed",
            ModStatus::Held(_) => "held",
            ModStatus::Waiting => "waiting",
        }
    }
}

impl Chain {
    /// What upgrading `save` will do: the game's steps ([`Chain::plan`]), then each
    /// installed mod's, from the version `meta.mods` records for it to its latest.
    ///
    /// Fails when the game's steps cannot upgrade the save (as [`Chain::plan`]), when
    /// `meta.mods` is not an object, and, unless [`Options::keep_going`], when a mod's data
    /// cannot be upgraded by its installed release (its entry is malformed, its version is
    /// newer than the mod's latest or older than its oldest, or the save has data under
    /// `data.mods.<name>` and no entry saying its version); the error then names the mod
    /// ([`Error::failed_mod`]). With `keep_going` such a mod is [`ModStatus::Held`]
    /// instead.
    ///
    /// ```
    /// use savechain::upgrade::{Chain, Mod, ModStatus, Step};
    /// use savechain::{Options, Save};
    ///
    /// let radio = Mod::new("radio", "0.2.0", vec![
    ///     Step::lua("0001-stations.lua", "return function(data) data.mods.radio.on = true end")?,
    /// ])?;
    /// let chain = Chain::new("1.0.0", vec![])?.with_mods(vec![radio])?;
    /// let save = Save::from_str(r#"{
    ///     "meta": {"version": 1, "mods": {"radio": {"version": 1}, "lanterns": {"version": 4}}},
    ///     "data": {"mods": {"radio": {}, "lanterns": {"lit": 3}}}
    /// }"#)?;
    /// let plan = chain.plan_upgrade(&save, &Options::default())?;
    /// assert_eq!(plan.steps().len(), 1);
    /// let status: Vec<_> = plan.mods.iter().map(|m| (m.name.as_str(), m.status.clone())).collect();
    /// assert_eq!(status, [("radio", ModStatus::Upgraded), ("lanterns", ModStatus::NotInstalled)]);
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn plan_upgrade(&self, save: &Save, options: &Options) -> Result<Plan<'_>> {
        let meta = &save.meta;
        let steps = self.plan(meta, options.target)?;
        let from = meta.version;
        let to = steps.last().map_or(from, Step::to);
        let mut runs = Vec::new();
        if !steps.is_empty() {
            runs.push(Run {
                in_mod: None,
                steps,
            });
        }
        // A chain without mods keeps whatever a game put in `meta.mods`, as any member.
        let entries = match self.mods.is_empty() {
            true => mod_entries(meta).unwrap_or(None),
            false => mod_entries(meta)?,
        };
        // A mod's steps are written against the game's latest data.
        let mods_run = to == self.latest();
        let mut mods: Vec<ModReport> = Vec::new();
        for (index, m) in self.mods.iter().enumerate() {
            let entry = entries.and_then(|entries| entries.get(m.name()));
            let mut report = ModReport {
                name: m.name().to_string(),
                from: entry.and_then(|e| e.get("version")).and_then(Value::as_u64),
                to: None,
                status: ModStatus::NotInSave,
                printed: Vec::new(),
            };
            report.to = report.from;
            // No entry, or only the mark an upgrade left for a mod it held back for this.
            let no_version = entry.is_none_or(|e| e.get("version").is_none());
            let unversioned = no_version
                && save
                    .data
                    .get("mods")
                    .and_then(|d| d.get(m.name()))
                    .is_some();
            if unversioned {
                // Its data without its version: upgrading from a guess could mangle it, and
                // leaving it unrecorded would let the game's next store claim the latest.
                let e = Error::new(
                    ErrorKind::Upgrade,
                    format!(
                        "the save has data of the mod at data.mods.{0} but no version for it \
                         in meta.mods (was its entry removed by hand?); it is left as it is. \
                         Set meta.mods.{0}.version to the version of its data",
                        m.name()
                    ),
                )
                .in_path(meta_path(&["mods"]))
                .in_mod(m.name());
                match options.keep_going {
                    true => report.status = ModStatus::Held(e.to_string()),
                    false => return Err(e),
                }
            } else if entry.is_some() && !mods_run {
                report.status = ModStatus::Waiting;
            } else if let Some(entry) = entry {
                match mod_steps(m, entry, meta) {
                    Ok([]) => report.status = ModStatus::Current,
                    Ok(steps) => {
                        report.status = ModStatus::Upgraded;
                        report.to = steps.last().map(Step::to);
                        runs.push(Run {
                            in_mod: Some((index, m)),
                            steps,
                        });
                    }
                    Err(e) if options.keep_going => report.status = ModStatus::Held(e.to_string()),
                    Err(e) => return Err(e),
                }
            }
            mods.push(report);
        }
        // Without `keep_going` the save has failed on the mod held back already.
        hold_followers(&mut mods, &self.mods);
        runs.retain(|run| match run.in_mod {
            None => true,
            Some((_, m)) => mods
                .iter()
                .any(|r| r.name == m.name() && r.status == ModStatus::Upgraded),
        });
        for (name, entry) in entries.into_iter().flat_map(Map::iter) {
            if !self.mods.iter().any(|m| m.name() == name) {
                let version = entry.get("version").and_then(Value::as_u64);
                mods.push(ModReport {
                    name: name.to_string(),
                    from: version,
                    to: version,
                    status: ModStatus::NotInstalled,
                    printed: Vec::new(),
                });
            }
        }
        Ok(Plan {
            chain: self,
            from,
            to,
            mods,
            runs,
        })
    }
}

/// The members of `meta.mods`, when it has one.
fn mod_entries(meta: &Meta) -> Result<Option<&Map>> {
    match meta.extra.get("mods") {
        None => Ok(None),
        Some(Value::Object(entries)) => Ok(Some(entries)),
        Some(other) => Err(Error::new(
            ErrorKind::Upgrade,
            format!(
                "expected an object with a member for each mod, such as {{\"tinker\": {{\"version\": 2, \"writer\": \"1.1.0\"}}}}, found {}",
                other.kind()
            ),
        )
        .in_path(meta_path(&["mods"]))),
    }
}

/// The steps of `m` that bring its data, recorded in the save as `entry`, to the mod's
/// latest version; or why they cannot, as an error about the mod.
fn mod_steps<'c>(m: &'c Mod, entry: &Value, meta: &Meta) -> Result<&'c [Step]> {
    let name = m.name();
    let at = |member: &str| meta_path(&["mods", name, member]);
    let refuse = |message: String, member: &str| {
        Err(Error::new(ErrorKind::Upgrade, message)
            .in_path(at(member))
            .in_mod(name))
    };
    let Some(entry) = entry.as_object() else {
        return refuse(
            format!(
                "expected an object such as {{\"version\": 2, \"writer\": \"1.1.0\"}}, found {}",
                entry.kind()
            ),
            "",
        );
    };
    let version = entry.get("version");
    let Some(version) = version.and_then(Value::as_u64).filter(|&v| v >= 1) else {
        let found = match version {
            None => "nothing".to_string(),
            Some(Value::Int(v)) => v.to_string(),
            Some(other) => other.kind().to_string(),
        };
        return refuse(
            format!("expected the mod's data version, an integer of 1 or more, found {found}"),
            "version",
        );
    };
    let by =
        match entry
            .get("writer")
            .map(|w| w.as_str().map(semver::Version::parse))
        {
            None => String::new(),
            Some(Some(Ok(writer))) => format!(", written by its release {writer}"),
            Some(_) => return refuse(
                r#"expected a string with the mod's release, a semantic version such as "1.2.3""#
                    .to_string(),
                "writer",
            ),
        };
    let chain = &m.chain;
    if version > chain.latest() {
        return refuse(
            format!(
                "its data is version {version}{by}, newer than the installed release {} knows \
                 (latest version {}); it needs a newer release of the mod, and is left as it is",
                chain.writer(),
                chain.latest()
            ),
            "version",
        );
    }
    if version < chain.oldest() {
        return refuse(
            format!(
                "its data is version {version}{by}, older than the oldest version the installed \
                 release {} upgrades ({}); it is left as it is",
                chain.writer(),
                chain.oldest()
            ),
            "version",
        );
    }
    if let Some(reached) =
        super::chain::history_reached(meta, Some(name)).filter(|&reached| reached > version)
    {
        return refuse(
            format!(
                "the save says the mod's data is version {version} but its history records an \
                 upgrade of it to version {reached}: was its version edited by hand? Upgrading \
                 would run its steps from {version} again on data that has them already, so it \
                 is left as it is; if its data is version {reached}'s, set the version back to \
                 {reached}"
            ),
            "version",
        );
    }
    let start = (version - chain.oldest()) as usize;
    Ok(&chain.steps()[start..])
}

/// `meta.<parts>`, skipping empty parts.
pub(super) fn meta_path(parts: &[&str]) -> Path {
    let keys = std::iter::once("meta").chain(parts.iter().copied());
    Path::from(
        keys.filter(|k| !k.is_empty())
            .map(|k| Segment::Key(k.to_string()))
            .collect::<Vec<_>>(),
    )
}
