//! The shapes recorded for a chain's versions (a game's, a mod's): given to the chain, and
//! a save checked against them, the game's data by the game's shape of the save's version
//! and each mod's part by the mod's shape of the mod's version.

use std::sync::Arc;

use super::chain::{Chain, Mod};
use super::declared_check::{check_against, check_mod_against};
use super::step::Step;
use crate::error::{Error, ErrorKind, Result};
use crate::path::{Path, Segment};
use crate::save::{Meta, Save};
use crate::shape::{Mismatch, MismatchKind, Shape, Shapes};
use crate::value::Value;

impl Chain {
    /// The chain with `shapes`, the shapes recorded for its versions, instead of those it
    /// had. They are not part of the chain's identity ([`Chain::fingerprint`]): a shape
    /// changes nothing a step writes, so recording one rebuilds no cache.
    ///
    /// A shape of a version beyond the chain's latest is an error naming its file: a
    /// version's shape is recorded when the steps that make the version are there.
    ///
    /// A declared step that contradicts the shapes (renaming a member the shape of its
    /// version does not have, adding one it has, leaving what the next version's shape
    /// does not read) is an error naming the step and the change.
    pub fn with_shapes(self, shapes: Shapes) -> Result<Chain> {
        check_declared(self.steps(), &shapes, None)?;
        self.with_shapes_unchecked(shapes)
    }

    /// [`Chain::with_shapes`] without the check of declared steps, which a mod makes on
    /// its part of the data.
    fn with_shapes_unchecked(mut self, shapes: Shapes) -> Result<Chain> {
        refuse_beyond_latest(&shapes, self.latest())?;
        self.shapes = Arc::new(shapes);
        Ok(self)
    }

    /// The shapes recorded for the chain's versions (none unless given,
    /// [`Chain::with_shapes`], or read beside its steps, [`Chain::from_lua_dir`]).
    pub fn shapes(&self) -> &Shapes {
        &self.shapes
    }

    /// Every place of `save` that does not match what the game reads at its version: its
    /// `data` against the chain's shape of `meta.version`, and the part of each of the
    /// chain's mods that has shapes (`data.mods.<name>`) against the mod's shape of its
    /// version (`meta.mods.<name>.version`). Paths start at the save's root
    /// (`data.player.rank.level`). Empty when the save matches.
    ///
    /// When the game's shape is an object that names no `mods` member, `data.mods` may
    /// still hold an object: that is where mods keep their parts. A mod the chain does not
    /// have, one with no recorded shapes, or one the save's `meta.mods` does not name, is
    /// not checked.
    ///
    /// Errors: the save's version, or the version of a mod with shapes, has no recorded
    /// shape (the error says which versions have one and how to record).
    ///
    /// ```
    /// use savechain::shape::Shapes;
    /// use savechain::upgrade::Chain;
    /// use savechain::Save;
    ///
    /// let shapes = Shapes::from_files(&[(
    ///     "0001.json",
    ///     r#"{"data": {"object": {"level": "u32"}}, "savechain_shape": 1, "version": 1}"#,
    /// )])?;
    /// let chain = Chain::new("1.0.0", vec![])?.with_shapes(shapes)?;
    /// let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {"level": ["d", "0x1.cp+1"]}}"#)?;
    /// let found = chain.check_save(&save)?;
    /// assert_eq!(
    ///     found[0].to_string(),
    ///     "data.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double"
    /// );
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn check_save(&self, save: &Save) -> Result<Vec<Mismatch>> {
        let version = save.meta.version;
        let mut found = self
            .check_game_data(&save.data, version)
            .ok_or_else(|| no_shape(&self.shapes, version, self.latest()))?;
        for m in &self.mods {
            found.extend(
                m.check_part(save)?
                    .map(|(_, found)| found)
                    .unwrap_or_default(),
            );
        }
        Ok(found)
    }

    /// [`Chain::check_save`], leaving out the parts whose version has no recorded shape
    /// instead of failing, and those `unchecked` names (`None` the game's data, `Some` a
    /// mod's part): for a hand edit, which is checked where the chain can tell.
    pub(crate) fn check_save_where_recorded(
        &self,
        save: &Save,
        unchecked: &dyn Fn(Option<&str>) -> bool,
    ) -> Vec<Mismatch> {
        let mut found = Vec::new();
        if !unchecked(None) {
            found = self
                .check_game_data(&save.data, save.meta.version)
                .unwrap_or_default();
        }
        for m in self.mods.iter().filter(|m| !unchecked(Some(m.name()))) {
            if let Ok(Some((_, part))) = m.check_part(save) {
                found.extend(part);
            }
        }
        found
    }

    /// The mismatches of the game's `data` at `version` against the game's shape of it
    /// (`data.mods` allowed as [`Chain::check_save`] says), paths from the save's root;
    /// `None` when `version` has no recorded shape.
    pub(crate) fn check_game_data(&self, data: &Value, version: u64) -> Option<Vec<Mismatch>> {
        let shape = self.shapes.get(version)?;
        let at = Path::from(vec![Segment::Key("data".into())]);
        let mut found = shape.check_at(data, &at);
        if !names_mods(shape) {
            allow_mods_member(&mut found, data);
        }
        Some(found)
    }
}

impl Mod {
    /// The mod with `shapes`, the shapes recorded for its data versions (of its part of a
    /// save, `data.mods.<name>`), checked as [`Chain::with_shapes`] checks a game's.
    pub fn with_shapes(mut self, shapes: Shapes) -> Result<Mod> {
        check_declared(self.chain.steps(), &shapes, Some(&self.name))
            .map_err(|e| e.in_mod(&self.name))?;
        self.chain = self
            .chain
            .with_shapes_unchecked(shapes)
            .map_err(|e| e.in_mod(&self.name))?;
        Ok(self)
    }

    /// The shapes recorded for its data versions.
    pub fn shapes(&self) -> &Shapes {
        self.chain.shapes()
    }

    /// The shape of the version `meta.mods.<name>` records and the mismatches of its part of
    /// `save` (`data.mods.<name>`) against it, paths from the save's root; `None` when it is not
    /// checked (the mod has no shapes, or the save records no version of it). An error when
    /// that version has no recorded shape.
    pub(crate) fn check_part(&self, save: &Save) -> Result<Option<(&Shape, Vec<Mismatch>)>> {
        if self.shapes().is_empty() {
            return Ok(None);
        }
        let Some(version) = mod_version(&save.meta, self.name()) else {
            return Ok(None);
        };
        let shape = self
            .shapes()
            .get(version)
            .ok_or_else(|| no_shape(self.shapes(), version, self.latest()).in_mod(self.name()))?;
        let at = Path::from(vec![
            Segment::Key("data".into()),
            Segment::Key("mods".into()),
            Segment::Key(self.name().to_string()),
        ]);
        let found = match save.data.get("mods").and_then(|mods| mods.get(self.name())) {
            Some(part) => shape.check_at(part, &at),
            None if *shape == Shape::Any => Vec::new(),
            None => vec![Mismatch {
                path: at,
                expected: shape.describe(),
                found: "the member is missing".to_string(),
                kind: MismatchKind::Missing,
            }],
        };
        Ok(Some((shape, found)))
    }
}

fn refuse_beyond_latest(shapes: &Shapes, latest: u64) -> Result<()> {
    let Some((version, _)) = shapes.latest() else {
        return Ok(());
    };
    if version <= latest {
        return Ok(());
    }
    let error = Error::new(
        ErrorKind::Shape,
        format!(
            "a shape of version {version}, beyond the chain's latest version {latest}: a \
             version's shape is recorded once the step that makes the version is there (add \
             the steps up to version {version}, or remove this shape)"
        ),
    );
    Err(match shapes.file(version) {
        Some(file) => error.with_file(file),
        None => error,
    })
}

/// The error for a save (or a mod's part) at `version`, which has no recorded shape, of a
/// chain whose latest version is `latest`.
fn no_shape(shapes: &Shapes, version: u64, latest: u64) -> Error {
    if version > latest {
        // Recording is refused beyond the chain's latest: the steps are what is missing.
        return Error::new(
            ErrorKind::Shape,
            format!(
                "version {version}, beyond the chain's latest version {latest}: the steps up to \
                 version {version} are missing (the chain is older than the save), so nothing \
                 says what the game reads at {version}"
            ),
        );
    }
    let recorded: Vec<String> = shapes.iter().map(|(v, _)| v.to_string()).collect();
    let recorded = match recorded.as_slice() {
        [] => "none is recorded".to_string(),
        [one] => format!("only version {one} has one"),
        many => format!("versions {} have one", many.join(", ")),
    };
    Error::new(
        ErrorKind::Shape,
        format!(
            "version {version} has no recorded shape ({recorded}): record it from saves of \
             that version (save-upgrade shape record SAVES)"
        ),
    )
}

/// Whether the game's shape says what `data.mods` holds itself.
fn names_mods(shape: &Shape) -> bool {
    match shape {
        Shape::Object(object) => object.members.contains_key("mods"),
        _ => true,
    }
}

/// Takes back the report of `data.mods` as a member the game does not read, when it is an
/// object: mods keep their parts there, and each mod's shape checks its own.
fn allow_mods_member(found: &mut Vec<Mismatch>, data: &Value) {
    let Some(mods) = data.get("mods") else {
        return;
    };
    let at_mods = |m: &Mismatch| {
        m.kind == MismatchKind::Extra
            && matches!(m.path.segments(), [Segment::Key(d), Segment::Key(n)] if d == "data" && n == "mods")
    };
    let Some(index) = found.iter().position(at_mods) else {
        return;
    };
    if let Value::Object(_) = mods {
        found.remove(index);
    } else {
        let m = &mut found[index];
        m.kind = MismatchKind::Wrong;
        m.expected = "an object holding each mod's data under its name".to_string();
        m.found = crate::shape::describe_found(mods);
    }
}

/// The data version of mod `name` that `meta.mods` records.
fn mod_version(meta: &Meta, name: &str) -> Option<u64> {
    meta.extra
        .get("mods")?
        .get(name)?
        .get("version")
        .and_then(Value::as_u64)
}

/// Each declared step of `steps` followed on the shape of the version it upgrades from
/// (and checked against the next version's, when recorded); a step whose version has no
/// shape is not checked. `mod_name`: the steps are a mod's, whose shapes describe its
/// part of the data.
fn check_declared(steps: &[Step], shapes: &Shapes, mod_name: Option<&str>) -> Result<()> {
    for step in steps {
        let (Some(changes), Some(before)) = (step.declared_changes(), shapes.get(step.from()))
        else {
            continue;
        };
        let after = shapes.get(step.to());
        let checked = match mod_name {
            None => check_against(changes, before, after),
            Some(name) => check_mod_against(name, changes, before, after),
        };
        if let Err(message) = checked {
            let file = |version: u64| match shapes.file(version) {
                Some(file) => format!("{} ({})", version, file.display()),
                None => version.to_string(),
            };
            let against = match after {
                Some(_) => format!(
                    "the shapes of versions {} and {}",
                    file(step.from()),
                    file(step.to())
                ),
                None => format!("the shape of version {}", file(step.from())),
            };
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "the declared step {} does not fit {against}: {message}",
                    step.name()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upgrade::Step;

    fn shapes(files: &[(u64, &str)]) -> Shapes {
        let texts: Vec<(String, String)> = files
            .iter()
            .map(|(v, s)| {
                (
                    Shapes::file_name(*v),
                    Shapes::file_text(*v, &s.parse().unwrap()),
                )
            })
            .collect();
        Shapes::from_files(&texts).unwrap()
    }

    fn lua(name: &str) -> Step {
        Step::lua(name, "return function(data) end").unwrap()
    }

    fn lines(found: &[Mismatch]) -> Vec<String> {
        found.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_shape_beyond_the_latest_version_is_an_error_naming_its_file() {
        let chain = Chain::new("1.0.0", vec![lua("0001-a.lua")]).unwrap();
        let fine = chain
            .clone()
            .with_shapes(shapes(&[(1, "\"any\""), (2, "\"any\"")]))
            .unwrap();
        assert_eq!(fine.shapes().len(), 2);
        let err = chain
            .with_shapes(shapes(&[(2, "\"any\""), (3, "\"any\"")]))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Shape);
        assert!(
            err.to_string().starts_with(
                "0003.json: a shape of version 3, beyond the chain's latest version 2"
            ),
            "{err}"
        );
    }

    #[test]
    fn shapes_are_not_part_of_the_identity_and_stay_with_added_steps() {
        let chain = Chain::new("1.0.0", vec![lua("0001-a.lua")]).unwrap();
        let shaped = chain
            .clone()
            .with_shapes(shapes(&[(2, "\"any\"")]))
            .unwrap();
        assert_eq!(chain.fingerprint(), shaped.fingerprint());
        let longer = shaped.with(vec![lua("0002-b.lua")]).unwrap();
        assert_eq!(longer.shapes().latest().map(|(v, _)| v), Some(2));
    }

    #[test]
    fn a_steps_folder_has_its_shapes_read_and_they_are_no_helper_modules() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0001-a.lua"), "return function(data) end").unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("lib/util.lua"), "return {}").unwrap();
        let without = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
        assert!(without.shapes().is_empty());

        for v in [1, 2] {
            Shapes::record(
                dir.path().join("shapes"),
                v,
                &r#"{"object": {"hp": "u32"}}"#.parse().unwrap(),
            )
            .unwrap();
        }
        let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
        assert_eq!(
            chain.shapes().iter().map(|(v, _)| v).collect::<Vec<_>>(),
            [1, 2]
        );
        let modules: Vec<&String> = chain.modules().by_name.keys().collect();
        assert_eq!(modules, ["lib.util"]);
        assert_eq!(chain.fingerprint(), without.fingerprint());

        std::fs::write(
            dir.path().join("shapes/0003.json"),
            Shapes::file_text(3, &Shape::Any),
        )
        .unwrap();
        let err = Chain::from_lua_dir("1.0.0", dir.path()).unwrap_err();
        assert_eq!(
            err.file(),
            Some(dir.path().join("shapes/0003.json").as_path())
        );

        std::fs::remove_dir_all(dir.path().join("shapes")).unwrap();
        std::fs::write(dir.path().join("shapes"), "").unwrap();
        let err = Chain::from_lua_dir("1.0.0", dir.path()).unwrap_err();
        assert!(
            err.to_string()
                .contains("expected a folder of recorded shapes"),
            "{err}"
        );
    }

    #[test]
    fn a_mod_folder_has_its_shapes_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mod.json"),
            r#"{"name": "tinker", "release": "1.0.0"}"#,
        )
        .unwrap();
        Shapes::record(dir.path().join("shapes"), 1, &Shape::Any).unwrap();
        let m = Mod::from_dir(dir.path()).unwrap();
        assert_eq!(m.shapes().get(1), Some(&Shape::Any));

        Shapes::record(dir.path().join("shapes"), 2, &Shape::Any).unwrap();
        let err = Mod::from_dir(dir.path()).unwrap_err();
        assert_eq!(err.failed_mod(), Some("tinker"));
        assert!(
            err.to_string().contains("mod tinker: a shape of version 2"),
            "{err}"
        );
    }

    fn modded_chain() -> Chain {
        let game = shapes(&[(1, r#"{"object": {"level": "u32"}}"#)]);
        let tinker = Mod::new("tinker", "1.0.0", vec![lua("0001-a.lua")])
            .unwrap()
            .with_shapes(shapes(&[(2, r#"{"object": {"charge": "u8"}}"#)]))
            .unwrap();
        let plain = Mod::new("plain", "1.0.0", vec![]).unwrap();
        Chain::new("1.0.0", vec![])
            .unwrap()
            .with_shapes(game)
            .unwrap()
            .with_mods(vec![tinker, plain])
            .unwrap()
    }

    fn check(chain: &Chain, save: &str) -> Result<Vec<String>> {
        chain
            .check_save(&Save::from_str(save).unwrap())
            .map(|found| lines(&found))
    }

    #[test]
    fn a_save_is_checked_by_the_game_and_by_each_mod_at_its_version() {
        let chain = modded_chain();
        let good = r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 2}, "plain": {"version": 1}}},
            "data": {"level": 3, "mods": {"tinker": {"charge": 7}, "plain": {"anything": true}, "gone": 1}}}"#;
        assert_eq!(check(&chain, good).unwrap(), Vec::<String>::new());

        let bad = r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 2}}},
            "data": {"level": ["d", "0x1.cp+1"], "mods": {"tinker": {"charge": 300, "x": 1}}}}"#;
        assert_eq!(
            check(&chain, bad).unwrap(),
            [
                "data.level: the game reads an integer from 0 to 4294967295 here; 3.5 is a double",
                "data.mods.tinker.charge: the game reads an integer from 0 to 255 here; 300 is out of that range",
                "data.mods.tinker.x: the game reads no member \"x\" here (it would be dropped when the game saves)",
            ]
        );

        // A mod the save's meta does not name is not checked.
        let unnamed = r#"{"meta": {"version": 1}, "data": {"level": 1, "mods": {"tinker": 5}}}"#;
        assert_eq!(check(&chain, unnamed).unwrap(), Vec::<String>::new());

        let missing =
            r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 2}}}, "data": {"level": 1}}"#;
        assert_eq!(
            check(&chain, missing).unwrap(),
            ["data.mods.tinker: the game reads an object here; the member is missing"]
        );

        let not_an_object = r#"{"meta": {"version": 1}, "data": {"level": 1, "mods": [1]}}"#;
        assert_eq!(
            check(&chain, not_an_object).unwrap(),
            ["data.mods: the game reads an object holding each mod's data under its name here; an array of 1 element"]
        );
    }

    #[test]
    fn a_game_shape_that_names_mods_checks_them_itself() {
        let chain = Chain::new("1.0.0", vec![])
            .unwrap()
            .with_shapes(shapes(&[(1, r#"{"object": {"mods": {"map": "u8"}}}"#)]))
            .unwrap();
        let save = r#"{"meta": {"version": 1}, "data": {"mods": {"a": "x"}}}"#;
        assert_eq!(
            check(&chain, save).unwrap(),
            ["data.mods.a: the game reads an integer from 0 to 255 here; \"x\" is text"]
        );
    }

    #[test]
    fn a_version_without_a_recorded_shape_is_an_error() {
        let chain = modded_chain();
        let err = check(&chain, r#"{"meta": {"version": 2}, "data": {}}"#).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Shape);
        // Beyond the chain's latest, recording is refused: the steps are missing.
        assert_eq!(
            err.to_string(),
            "version 2, beyond the chain's latest version 1: the steps up to version 2 are \
             missing (the chain is older than the save), so nothing says what the game reads \
             at 2"
        );
        let stepped = Chain::new("1.0.0", vec![lua("0001-a.lua")])
            .unwrap()
            .with_shapes(shapes(&[(1, r#"{"object": {"level": "u32"}}"#)]))
            .unwrap();
        let err = check(&stepped, r#"{"meta": {"version": 2}, "data": {}}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "version 2 has no recorded shape (only version 1 has one): record it from saves of \
             that version (save-upgrade shape record SAVES)"
        );
        let err = check(
            &chain,
            r#"{"meta": {"version": 1, "mods": {"tinker": {"version": 1}}}, "data": {"level": 1}}"#,
        )
        .unwrap_err();
        assert_eq!(err.failed_mod(), Some("tinker"));
        assert!(err
            .to_string()
            .starts_with("mod tinker: version 1 has no recorded shape"));
        let bare = Chain::new("1.0.0", vec![]).unwrap();
        let err = check(&bare, r#"{"meta": {"version": 1}, "data": {}}"#).unwrap_err();
        assert!(err.to_string().contains("(none is recorded)"), "{err}");
    }
}
