//! Recorded shapes, one file a version in a chain's `shapes` folder: read from the folder
//! or from texts compiled in, and a new version's shape written there, never changing one
//! already recorded.
//!
//! A shape file is `shapes/NNNN.json` (`0009.json` for version 9), its content
//! `{"data": SHAPE, "savechain_shape": 1, "version": 9}` as canonical pretty JSON (keys
//! sorted, two spaces of indent) with a final newline, so that a member that changes from
//! one version to the next is a small diff between two files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::Shape;
use crate::error::{Error, ErrorKind, Result};

/// The folder of a steps folder (or a mod's folder) that holds its recorded shapes.
pub const SHAPES_DIR: &str = "shapes";

/// The format of shape files this savechain writes and reads (`savechain_shape`).
const FORMAT: u64 = 1;

/// The shapes recorded for the versions of one chain (a game's or a mod's), by version.
///
/// ```
/// use savechain::shape::Shapes;
///
/// let shapes = Shapes::from_files(&[
///     ("0001.json", r#"{"data": {"object": {"hp": "u32"}}, "savechain_shape": 1, "version": 1}"#),
///     ("0002.json", r#"{"data": {"object": {"health": "u32"}}, "savechain_shape": 1, "version": 2}"#),
/// ])?;
/// let (latest, shape) = shapes.latest().unwrap();
/// assert_eq!(latest, 2);
/// assert!(shape.check(&savechain::text::from_str(r#"{"health": 7}"#)?).is_empty());
/// assert!(shapes.get(3).is_none());
/// # Ok::<(), savechain::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shapes {
    by_version: BTreeMap<u64, Entry>,
}

/// A shape recorded for a version: where it was read from or written to, and whether this
/// recording made it or found it there already.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recorded {
    /// The shape was written to this new file.
    New(PathBuf),
    /// This file already held the same shape: nothing was written.
    Same(PathBuf),
}

impl Recorded {
    /// The shape file.
    pub fn path(&self) -> &Path {
        match self {
            Recorded::New(path) | Recorded::Same(path) => path,
        }
    }
}

/// A shape of [`Shapes`] with the file it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    shape: Shape,
    file: PathBuf,
}

impl Shapes {
    /// No shapes: a chain that records none.
    pub fn new() -> Shapes {
        Shapes::default()
    }

    /// The shapes of the folder `dir` (a steps folder's `shapes`, [`SHAPES_DIR`]): every
    /// `NNNN.json` in it. A JSON file named otherwise is an error (a shape left unread
    /// would check nothing); other files and folders are left alone. Errors name the file.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Shapes> {
        let dir = dir.as_ref();
        let entries = std::fs::read_dir(dir).map_err(|e| {
            Error::io(e, "cannot read the folder of recorded shapes").with_file(dir)
        })?;
        let mut shapes = Shapes::new();
        for entry in entries {
            let entry = entry.map_err(|e| {
                Error::io(e, "cannot read the folder of recorded shapes").with_file(dir)
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let is_json = name
                .rsplit_once('.')
                .is_some_and(|(_, ext)| ext.eq_ignore_ascii_case("json"));
            if name.starts_with('.') || !is_json || path.is_dir() {
                continue;
            }
            let bytes = crate::fsio::read_regular(&path)
                .map_err(|e| Error::io(e, "cannot read the shape file").with_file(&path))?;
            let text = std::str::from_utf8(&bytes).map_err(|_| {
                Error::new(ErrorKind::Shape, "a shape file is UTF-8 text").with_file(&path)
            })?;
            shapes.add(&name, text, path.clone())?;
        }
        Ok(shapes)
    }

    /// The shapes recorded in the steps folder (or mod folder) `dir`: those of its
    /// `shapes` folder ([`SHAPES_DIR`], [`Shapes::from_dir`]), none when it has no such
    /// folder.
    pub fn in_steps_dir(dir: impl AsRef<Path>) -> Result<Shapes> {
        let shapes = dir.as_ref().join(SHAPES_DIR);
        match std::fs::metadata(&shapes) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Shapes::new()),
            Ok(meta) if !meta.is_dir() => Err(Error::new(
                ErrorKind::Shape,
                "expected a folder of recorded shapes (NNNN.json files)",
            )
            .with_file(&shapes)),
            _ => Shapes::from_dir(&shapes),
        }
    }

    /// The shapes of files compiled into the program, each given as its name
    /// (`0009.json`, or a path ending in it) and its text: `include_str!` of each file of a
    /// steps folder's `shapes`. Errors name the file.
    pub fn from_files<N: AsRef<str>, T: AsRef<str>>(files: &[(N, T)]) -> Result<Shapes> {
        let mut shapes = Shapes::new();
        for (name, text) in files {
            let name = name.as_ref();
            let file_name = name.rsplit(['/', '\\']).next().unwrap_or(name);
            shapes.add(file_name, text.as_ref(), PathBuf::from(name))?;
        }
        Ok(shapes)
    }

    /// Reads the shape file `file_name` (its name alone) of text `text`, from `file`.
    fn add(&mut self, file_name: &str, text: &str, file: PathBuf) -> Result<()> {
        let version = version_of_name(file_name).ok_or_else(|| {
            Error::new(
                ErrorKind::Shape,
                "not a shape file name: expected NNNN.json, the version it is the shape of in \
                 four digits or more (0009.json)",
            )
            .with_file(&file)
        })?;
        let shape = read_file_text(text, version).map_err(|e| e.with_file(&file))?;
        if let Some(other) = self.by_version.get(&version) {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "a second shape of version {version}, beside {}",
                    other.file.display()
                ),
            )
            .with_file(&file));
        }
        self.by_version.insert(version, Entry { shape, file });
        Ok(())
    }

    /// The shape recorded for `version`.
    pub fn get(&self, version: u64) -> Option<&Shape> {
        self.by_version.get(&version).map(|e| &e.shape)
    }

    /// The file the shape of `version` was read from (its name, for compiled-in texts).
    pub fn file(&self, version: u64) -> Option<&Path> {
        self.by_version.get(&version).map(|e| e.file.as_path())
    }

    /// The latest version with a recorded shape, and its shape.
    pub fn latest(&self) -> Option<(u64, &Shape)> {
        self.by_version
            .iter()
            .next_back()
            .map(|(v, e)| (*v, &e.shape))
    }

    /// Each version with a recorded shape, and its shape, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &Shape)> {
        self.by_version.iter().map(|(v, e)| (*v, &e.shape))
    }

    /// How many versions have a recorded shape.
    pub fn len(&self) -> usize {
        self.by_version.len()
    }

    /// Whether no version has a recorded shape.
    pub fn is_empty(&self) -> bool {
        self.by_version.is_empty()
    }

    /// The name of the shape file of `version`: `0009.json`.
    pub fn file_name(version: u64) -> String {
        format!("{version:04}.json")
    }

    /// The text of the shape file of `version` holding `shape`: canonical pretty JSON with a
    /// final newline.
    pub fn file_text(version: u64, shape: &Shape) -> String {
        let mut file = serde_json::Map::new();
        file.insert("data".into(), shape.to_json());
        file.insert("savechain_shape".into(), Json::from(FORMAT));
        file.insert("version".into(), Json::from(version));
        let mut text =
            serde_json::to_string_pretty(&Json::Object(file)).expect("JSON values always print");
        text.push('\n');
        text
    }

    /// Records `shape` as the shape of `version` in the folder `dir` (a steps folder's
    /// `shapes`, made if it is not there): writes `dir/NNNN.json` atomically.
    ///
    /// A recorded shape never changes, since saves of that version exist with it: when
    /// `dir` already holds a shape of `version`, the same shape is [`Recorded::Same`] and
    /// nothing is written, and another shape is refused, saying to make a new version.
    ///
    /// ```
    /// use savechain::shape::{Recorded, Shape, Shapes};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let shapes = dir.path().join("shapes");
    /// let shape: Shape = r#"{"object": {"hp": "u32"}}"#.parse()?;
    /// assert!(matches!(Shapes::record(&shapes, 9, &shape)?, Recorded::New(_)));
    /// assert!(matches!(Shapes::record(&shapes, 9, &shape)?, Recorded::Same(_)));
    /// let other: Shape = r#"{"object": {"hp": "double"}}"#.parse()?;
    /// assert!(Shapes::record(&shapes, 9, &other).is_err());
    /// assert_eq!(Shapes::from_dir(&shapes)?.get(9), Some(&shape));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record(dir: impl AsRef<Path>, version: u64, shape: &Shape) -> Result<Recorded> {
        let dir = dir.as_ref();
        if version == 0 {
            return Err(Error::new(
                ErrorKind::Shape,
                "versions start at 1: there is no version 0 to record a shape of",
            ));
        }
        let path = dir.join(Shapes::file_name(version));
        match crate::fsio::read_regular(&path) {
            Ok(bytes) => {
                let text = std::str::from_utf8(&bytes).map_err(|_| {
                    Error::new(ErrorKind::Shape, "a shape file is UTF-8 text").with_file(&path)
                })?;
                let recorded = read_file_text(text, version).map_err(|e| e.with_file(&path))?;
                if &recorded == shape {
                    return Ok(Recorded::Same(path));
                }
                // The chain is not known here, so the version to make is not named: the
                // caller that knows the chain's latest says it.
                return Err(Error::new(
                    ErrorKind::Shape,
                    format!(
                        "version {version} already has a recorded shape, and a different one \
                         is given; a recorded shape never changes (saves of version {version} \
                         exist with it): if the game now reads something else, that is a new \
                         version after the chain's latest: its step, the game's version, and \
                         its shape recorded"
                    ),
                )
                .with_file(&path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(e, "cannot read the shape file").with_file(&path)),
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::io(e, "cannot make the folder of recorded shapes").with_file(dir)
        })?;
        crate::fsio::write_atomic(&path, Shapes::file_text(version, shape).as_bytes())
            .map_err(|e| Error::io(e, "cannot write the shape file").with_file(&path))?;
        Ok(Recorded::New(path))
    }
}

/// Records the shape of the game's type `T` ([`super::of`]) as the shape of
/// `version` in the folder `dir`, as [`Shapes::record`] does: how a Rust game records the
/// shape of a new version.
pub fn record_type<T: serde::de::DeserializeOwned>(
    dir: impl AsRef<Path>,
    version: u64,
) -> Result<Recorded> {
    Shapes::record(dir, version, &super::from_type::of::<T>()?)
}

/// The version a shape file's name gives: `0009.json` is 9. Only the name [`Shapes::file_name`]
/// writes is taken, so two files cannot name one version.
fn version_of_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".json")?;
    if digits.len() < 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let version: u64 = digits.parse().ok()?;
    (Shapes::file_name(version) == name).then_some(version)
}

/// The shape in the text of the shape file of `version`.
fn read_file_text(text: &str, version: u64) -> Result<Shape> {
    let json: Json = serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorKind::Shape, format!("not JSON: {e}")))?;
    let expected =
        "expected a shape file: {\"data\": SHAPE, \"savechain_shape\": 1, \"version\": N}";
    let Json::Object(members) = &json else {
        return Err(Error::new(ErrorKind::Shape, expected));
    };
    if let Some(other) = members
        .keys()
        .find(|k| !matches!(k.as_str(), "data" | "savechain_shape" | "version"))
    {
        return Err(Error::new(
            ErrorKind::Shape,
            format!("{expected}; found a member {other:?}"),
        ));
    }
    match members.get("savechain_shape").and_then(Json::as_u64) {
        Some(FORMAT) => {}
        Some(newer) if newer > FORMAT => {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "shape file format {newer}, newer than this savechain reads ({FORMAT}): \
                     use a newer savechain"
                ),
            ))
        }
        _ => {
            return Err(Error::new(
                ErrorKind::Shape,
                format!("{expected}; \"savechain_shape\" must be {FORMAT}"),
            ))
        }
    }
    match members.get("version").and_then(Json::as_u64) {
        Some(v) if v == version => {}
        Some(v) => {
            return Err(Error::new(
                ErrorKind::Shape,
                format!(
                    "the file says version {v}, its name version {version}: a shape file is \
                     named by its version ({})",
                    Shapes::file_name(v)
                ),
            ))
        }
        None => {
            return Err(Error::new(
                ErrorKind::Shape,
                format!("{expected}; \"version\" must be an integer"),
            ))
        }
    }
    let data = members
        .get("data")
        .ok_or_else(|| Error::new(ErrorKind::Shape, format!("{expected}; \"data\" is missing")))?;
    Shape::from_json(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(kind: &str) -> Shape {
        format!(r#"{{"object": {{"hp": "{kind}"}}}}"#)
            .parse()
            .unwrap()
    }

    #[test]
    fn the_file_text_is_canonical_with_a_final_newline() {
        let text = Shapes::file_text(9, &hp("u32"));
        assert_eq!(
            text,
            "{\n  \"data\": {\n    \"object\": {\n      \"hp\": \"u32\"\n    }\n  },\n  \"savechain_shape\": 1,\n  \"version\": 9\n}\n"
        );
        assert_eq!(read_file_text(&text, 9).unwrap(), hp("u32"));
    }

    #[test]
    fn file_names() {
        assert_eq!(Shapes::file_name(9), "0009.json");
        assert_eq!(Shapes::file_name(12345), "12345.json");
        assert_eq!(version_of_name("0009.json"), Some(9));
        assert_eq!(version_of_name("12345.json"), Some(12345));
        for bad in [
            "9.json",
            "00009.json",
            "0009.JSON",
            "0009-x.json",
            "abcd.json",
            "0009.json.bak",
        ] {
            assert_eq!(version_of_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn record_writes_a_new_version_and_never_changes_one() {
        let dir = tempfile::tempdir().unwrap();
        let shapes_dir = dir.path().join("steps").join(SHAPES_DIR);
        let written = Shapes::record(&shapes_dir, 9, &hp("u32")).unwrap();
        assert_eq!(written, Recorded::New(shapes_dir.join("0009.json")));
        let text = std::fs::read_to_string(written.path()).unwrap();
        assert_eq!(text, Shapes::file_text(9, &hp("u32")));

        let again = Shapes::record(&shapes_dir, 9, &hp("u32")).unwrap();
        assert_eq!(again, Recorded::Same(shapes_dir.join("0009.json")));

        let err = Shapes::record(&shapes_dir, 9, &hp("double")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Shape);
        assert_eq!(err.file(), Some(shapes_dir.join("0009.json").as_path()));
        let message = err.to_string();
        assert!(
            message.contains("a recorded shape never changes"),
            "{message}"
        );
        // The store does not know the chain: it names no version to make (9 + 1 is wrong
        // when the chain is past 9).
        assert!(!message.contains("make version"), "{message}");
        assert!(
            message.contains("if the game now reads something else, that is a new version"),
            "{message}"
        );
        assert_eq!(std::fs::read_to_string(written.path()).unwrap(), text);

        Shapes::record(&shapes_dir, 10, &hp("double")).unwrap();
        let read = Shapes::from_dir(&shapes_dir).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read.get(9), Some(&hp("u32")));
        assert_eq!(read.latest(), Some((10, &hp("double"))));
        assert_eq!(read.iter().map(|(v, _)| v).collect::<Vec<_>>(), [9, 10]);
        assert_eq!(read.file(10), Some(shapes_dir.join("0010.json").as_path()));
        assert!(Shapes::record(&shapes_dir, 0, &hp("u8")).is_err());
    }

    #[test]
    fn a_hand_formatted_file_of_the_same_shape_is_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0003.json");
        std::fs::write(
            &path,
            r#"{"version": 3, "savechain_shape": 1, "data": {"object": {"hp": "u32"}}}"#,
        )
        .unwrap();
        let same = Shapes::record(dir.path(), 3, &hp("u32")).unwrap();
        assert_eq!(same, Recorded::Same(path.clone()));
        // Left as it was: recording never rewrites an earlier version.
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("{\"version\": 3"));
    }

    #[test]
    fn errors_name_the_file() {
        let good = Shapes::file_text(2, &hp("u32"));
        let cases = [
            ("2.json", good.clone(), "not a shape file name"),
            (
                "0003.json",
                good.clone(),
                "the file says version 2, its name version 3",
            ),
            ("0002.json", "{".to_string(), "not JSON"),
            (
                "0002.json",
                r#"{"data": "u8", "savechain_shape": 2, "version": 2}"#.to_string(),
                "newer than this savechain",
            ),
            (
                "0002.json",
                r#"{"data": "u8", "savechain_shape": 1, "version": 2, "x": 1}"#.to_string(),
                "found a member \"x\"",
            ),
            (
                "0002.json",
                r#"{"savechain_shape": 1, "version": 2}"#.to_string(),
                "\"data\" is missing",
            ),
            (
                "0002.json",
                r#"{"data": {"object": {"hp": "float"}}, "savechain_shape": 1, "version": 2}"#
                    .to_string(),
                "data.object.hp: unknown kind \"float\"",
            ),
        ];
        for (name, text, part) in cases {
            let err = Shapes::from_files(&[(format!("shapes/{name}"), text)]).unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("shapes/{name}: ")),
                "{message}"
            );
            assert!(message.contains(part), "{message}");
        }
        let twice =
            Shapes::from_files(&[("0002.json", good.as_str()), ("a/0002.json", good.as_str())]);
        assert!(twice
            .unwrap_err()
            .to_string()
            .contains("a second shape of version 2"));
    }

    #[test]
    fn from_dir_reads_shape_files_and_leaves_other_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("0001.json"),
            Shapes::file_text(1, &hp("u8")),
        )
        .unwrap();
        std::fs::write(dir.path().join("README.md"), "notes").unwrap();
        std::fs::write(dir.path().join(".0002.json.swp"), "x").unwrap();
        std::fs::create_dir(dir.path().join("old.json")).unwrap();
        let shapes = Shapes::from_dir(dir.path()).unwrap();
        assert_eq!(shapes.iter().map(|(v, _)| v).collect::<Vec<_>>(), [1]);

        std::fs::write(dir.path().join("1.json"), Shapes::file_text(1, &hp("u8"))).unwrap();
        let err = Shapes::from_dir(dir.path()).unwrap_err();
        assert_eq!(err.file(), Some(dir.path().join("1.json").as_path()));

        let missing = Shapes::from_dir(dir.path().join("nope")).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::Io);
    }
}
