//! Mods put after a game's chain: read from their folders (a `mod.json` manifest beside
//! their steps), checked for clashes, and put in the order they run.

use std::collections::BTreeSet;
use std::path::Path;

use super::chain::{check_mod_name, check_release, Chain, Mod};
use super::step::Step;
use crate::error::{Error, ErrorKind, Location, Result};
use crate::shape::Shapes;
use crate::text::reader::{utf8, Reader};
use crate::text::Tree;
use crate::value::Value;

/// The manifest of a mod's folder.
pub(crate) const MANIFEST: &str = "mod.json";

impl Chain {
    /// The chain with `mods` added after the game's steps (to those it has: a game's
    /// built-in mods, then a folder of players' mods). An upgrade runs the game's steps,
    /// then each mod's, in this order: a mod after those it declares it comes after
    /// ([`Mod::after`]), and otherwise by name (bytewise), so the order never depends on
    /// how the mods were listed or found.
    ///
    /// Errors: two mods of one name (here, or one here and one the chain has), or mods
    /// that come after each other in a circle (naming them).
    pub fn with_mods(mut self, mods: Vec<Mod>) -> Result<Chain> {
        let all = std::mem::take(&mut self.mods)
            .into_iter()
            .chain(mods)
            .collect();
        let ordered = order(all)?;
        self.set_mods(ordered);
        Ok(self)
    }

    /// The chain without its mods: the game's steps alone.
    pub fn without_mods(mut self) -> Chain {
        self.set_mods(Vec::new());
        self
    }

    /// The chain with the mods of the folder `dir` ([`Mod::all_in`]) after the game's steps.
    pub fn with_mods_dir(self, dir: impl AsRef<Path>) -> Result<Chain> {
        self.with_mods(Mod::all_in(dir)?)
    }
}

impl Mod {
    /// The mod in the folder `dir`: its manifest, `mod.json`, its Lua steps and helper
    /// modules, as in a game's steps folder ([`Step::lua_dir`]), and the shapes recorded in
    /// `dir/shapes` when there is such a folder ([`Mod::with_shapes`]).
    ///
    /// The manifest is a JSON object: `name` (the mod's name, see [`Mod::new`]),
    /// `release` (its release, a semantic version) and, optionally, `after` (an array of
    /// the names of mods it runs after). Other members are refused, so a misspelt one is
    /// not silently ignored.
    ///
    /// ```json
    /// {"name": "tinker", "release": "1.2.0", "after": ["shipyard"]}
    /// ```
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Mod> {
        let dir = dir.as_ref();
        let file = dir.join(MANIFEST);
        let bytes = std::fs::read(&file).map_err(|e| {
            Error::io(
                e,
                format!(
                    "cannot read {}, the manifest every mod folder has (name, release, after)",
                    file.display()
                ),
            )
        })?;
        let manifest = read_manifest(&bytes).map_err(|e| e.with_file(&file))?;
        let steps = Step::lua_dir(dir)?;
        // Errors about a step name its file; the others are about the manifest.
        let mut m =
            Mod::new(&manifest.name, &manifest.release, steps).map_err(|e| match e.file() {
                Some(_) => e,
                None => e.with_file(&file),
            })?;
        m.manifest = Some(file);
        let shapes = Shapes::in_steps_dir(dir).map_err(|e| e.in_mod(m.name()))?;
        Ok(m.with_shapes(shapes)?.after(&manifest.after))
    }

    /// The mods of the folder `dir`, one in each folder in it (hidden folders and files
    /// are left out); a folder without a manifest is an error naming it.
    pub fn all_in(dir: impl AsRef<Path>) -> Result<Vec<Mod>> {
        let dir = dir.as_ref();
        if dir.join(MANIFEST).is_file() {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{} is a mod (it has a {MANIFEST}), not a folder of mods: give the folder \
                     that holds it, such as {}",
                    dir.display(),
                    dir.parent()
                        .filter(|p| !p.as_os_str().is_empty())
                        .map_or(".".to_string(), |p| format!("{}/", p.display()))
                ),
            ));
        }
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::io(e, format!("cannot read the mods folder {}", dir.display())))?;
        let mut folders = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| {
                Error::io(e, format!("cannot read the mods folder {}", dir.display()))
            })?;
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !hidden && entry.path().is_dir() {
                folders.push(entry.path());
            }
        }
        folders.sort();
        folders.iter().map(Mod::from_dir).collect()
    }
}

/// What a manifest says.
struct Manifest {
    name: String,
    release: String,
    after: Vec<String>,
}

fn read_manifest(bytes: &[u8]) -> Result<Manifest> {
    let text = utf8(bytes)?;
    let mut reader = Reader::new(text, Tree);
    reader.skip_whitespace();
    let root = reader.pos();
    let (value, offsets) = if reader.peek() == Some(b'{') {
        reader
            .object_with(|reader, _| reader.value())
            .map_err(|e| reader.error(e))?
    } else {
        let value = reader.value().map_err(|e| reader.error(e))?;
        (value, Vec::new())
    };
    reader.end().map_err(|e| reader.error(e))?;
    let wrong = |member: &str, expected: &str| {
        let at = offsets
            .iter()
            .find(|(key, _)| key == member)
            .map_or(root, |&(_, at)| at);
        // An unknown member is wrong by its key, not its value.
        let known = matches!(member, "" | "name" | "release" | "after");
        let at = if known { at } else { key_before(bytes, at) };
        let error = Error::new(ErrorKind::Upgrade, format!("expected {expected}"))
            .at(Location::of_offset(bytes, at));
        match member {
            "" => error,
            member => error.in_path(crate::path::Path::from(vec![crate::path::Segment::Key(
                member.to_string(),
            )])),
        }
    };
    let Value::Object(members) = value else {
        return Err(wrong(
            "",
            r#"a mod's manifest, an object such as {"name": "tinker", "release": "1.2.0", "after": []}"#,
        ));
    };
    if let Some(unknown) = members
        .keys()
        .find(|k| !matches!(*k, "name" | "release" | "after"))
    {
        return Err(wrong(
            unknown,
            "only \"name\", \"release\" and \"after\" in a mod's manifest",
        ));
    }
    let text_of = |member: &str, expected: &str| match members.get(member) {
        Some(Value::String(text)) => Ok(text.clone()),
        _ => Err(wrong(member, expected)),
    };
    let name = text_of("name", "the mod's name, a string such as \"tinker\"")?;
    if check_mod_name(&name).is_err() {
        return Err(wrong(
            "name",
            &format!(
                "the mod's name, 1 to 64 letters, digits, '_', '-' and '.', not starting with \
                 '.', found {name:?}"
            ),
        ));
    }
    let release_expected = "the mod's release, a string with a semantic version such as \"1.2.0\"";
    let release = text_of("release", release_expected)?;
    if check_release(&release).is_err() {
        return Err(wrong(
            "release",
            &format!("{release_expected}, found {release:?}"),
        ));
    }
    let after = match members.get("after") {
        None => Vec::new(),
        Some(Value::Array(names)) if names.iter().all(|n| n.as_str().is_some()) => names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect(),
        Some(_) => {
            return Err(wrong(
                "after",
                "an array of the names of the mods this one runs after, such as [\"shipyard\"]",
            ))
        }
    };
    Ok(Manifest {
        name,
        release,
        after,
    })
}

/// Where the key of the member whose value starts at `value` starts: back over `"key" :`.
fn key_before(bytes: &[u8], value: usize) -> usize {
    let mut at = value;
    let skip_space = |at: &mut usize| {
        while *at > 0 && bytes[*at - 1].is_ascii_whitespace() {
            *at -= 1;
        }
    };
    skip_space(&mut at);
    if at == 0 || bytes[at - 1] != b':' {
        return value;
    }
    at -= 1;
    skip_space(&mut at);
    if at == 0 || bytes[at - 1] != b'"' {
        return value;
    }
    at -= 1;
    // The key's opening quote: the first quote before that is not escaped.
    while at > 0 {
        at -= 1;
        if bytes[at] == b'"' && (at == 0 || bytes[at - 1] != b'\\') {
            return at;
        }
    }
    value
}

/// `mods` in the order they run: each after those it comes after (when installed), the
/// first by name among those free to go.
fn order(mods: Vec<Mod>) -> Result<Vec<Mod>> {
    let mut names = BTreeSet::new();
    for m in &mods {
        if !names.insert(m.name().to_string()) {
            let from: Vec<String> = mods
                .iter()
                .filter(|other| other.name() == m.name())
                .map(where_from)
                .collect();
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!(
                    "two mods named {} ({}): a name is a mod's key in meta.mods",
                    m.name(),
                    from.join(" and ")
                ),
            ));
        }
    }
    if let Some(m) = mods
        .iter()
        .find(|m| m.comes_after().iter().any(|a| a == m.name()))
    {
        return Err(Error::new(
            ErrorKind::Upgrade,
            format!(
                "the mod {} ({}) says it comes after itself: take its own name out of \"after\"",
                m.name(),
                where_from(m)
            ),
        ));
    }
    let mut left = mods;
    left.sort_by(|a, b| a.name().cmp(b.name()));
    let mut ordered: Vec<Mod> = Vec::with_capacity(left.len());
    while !left.is_empty() {
        let waits = |m: &Mod| {
            m.comes_after()
                .iter()
                .any(|a| left.iter().any(|l| l.name() == a))
        };
        match left.iter().position(|m| !waits(m)) {
            Some(free) => ordered.push(left.remove(free)),
            None => {
                let circle: Vec<String> = left
                    .iter()
                    .map(|m| format!("{} ({})", m.name(), where_from(m)))
                    .collect();
                return Err(Error::new(
                    ErrorKind::Upgrade,
                    format!(
                        "the mods {} each come after another of them (their manifests' \"after\"), \
                         so none can run first",
                        circle.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(ordered)
}

/// Where a mod came from, for errors: its manifest, or that a program made it.
fn where_from(m: &Mod) -> String {
    match &m.manifest {
        Some(file) => file.display().to_string(),
        None => "made by the program".to_string(),
    }
}
