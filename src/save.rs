//! The save envelope: `{"meta": {"version": N, "writer": "x.y.z", ...}, "data": ...}`, loaded
//! from and written to bytes, strings, readers and files.

use std::io::{Read, Write};
use std::path::Path as FsPath;

use crate::error::{Error, ErrorKind, Location, Result};
use crate::fsio;
use crate::path::{Path, Segment};
use crate::text::read::{utf8, Parser};
use crate::text::write::Writer;
use crate::text::Style;
use crate::value::{Map, Value};

/// The `meta` section of a save.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The save's schema version: which layout `data` has.
    pub version: u64,
    /// The version of the program that wrote the save, when it says.
    pub writer: Option<semver::Version>,
    /// Every other `meta` member, kept as it is. Members named `version` or `writer` here
    /// are ignored when writing: the two fields above are what is written.
    pub extra: Map,
}

impl Meta {
    /// The `meta` object as a save holds it.
    pub fn to_value(&self) -> Value {
        let mut meta = self.extra.clone();
        meta.insert("version", Value::from(self.version));
        match &self.writer {
            Some(w) => meta.insert("writer", Value::String(w.to_string())),
            None => meta.remove("writer"),
        };
        Value::Object(meta)
    }
}

/// A save: its metadata and the game's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Save {
    pub meta: Meta,
    pub data: Value,
}

impl Save {
    /// A save of `data` at schema version `version`, with no writer recorded (set one with
    /// [`Save::with_writer`]).
    pub fn new(version: u64, data: Value) -> Save {
        Save {
            meta: Meta {
                version,
                writer: None,
                extra: Map::new(),
            },
            data,
        }
    }

    /// Records the version of the program writing the save.
    pub fn with_writer(mut self, writer: semver::Version) -> Save {
        self.meta.writer = Some(writer);
        self
    }

    /// Loads a save from its text.
    pub fn from_slice(bytes: &[u8]) -> Result<Save> {
        let text = utf8(bytes)?;
        let mut parser = Parser::new(text);
        let document = parser.value().map_err(|e| parser.error(e))?;
        parser.end().map_err(|e| parser.error(e))?;
        envelope(document).map_err(|(path, message)| {
            let offset = locate(text, path.segments()).unwrap_or(0);
            Error::new(ErrorKind::Envelope, message)
                .at(Location::of_offset(text.as_bytes(), offset))
                .in_path(path)
        })
    }

    /// A save from a document that is already parsed (`{"meta": ..., "data": ...}`).
    pub fn from_value(document: Value) -> Result<Save> {
        envelope(document)
            .map_err(|(path, message)| Error::new(ErrorKind::Envelope, message).in_path(path))
    }

    #[allow(clippy::should_implement_trait)] // `FromStr` could not borrow; this mirrors serde_json.
    pub fn from_str(text: &str) -> Result<Save> {
        Save::from_slice(text.as_bytes())
    }

    pub fn from_reader(mut reader: impl Read) -> Result<Save> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(e, "cannot read the save"))?;
        Save::from_slice(&bytes)
    }

    /// Loads the save in the file at `path`; errors name the file.
    pub fn load(path: impl AsRef<FsPath>) -> Result<Save> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .map_err(|e| Error::io(e, "cannot read the file").with_file(path))?;
        Save::from_slice(&bytes).map_err(|e| e.with_file(path))
    }

    /// Appends the save's text to `out` in the given style; a game that saves often can
    /// clear and reuse one buffer.
    pub fn write(&self, out: &mut Vec<u8>, style: Style) -> Result<()> {
        let envelope = [("data", &self.data), ("meta", &self.meta.to_value())];
        let mut writer = Writer::new(out, style);
        writer.out.push(b'{');
        for (i, (key, value)) in envelope.into_iter().enumerate() {
            if i > 0 {
                writer.out.push(b',');
            }
            if style == Style::Pretty {
                writer.out.extend_from_slice(b"\n  ");
            }
            crate::text::write::write_string(writer.out, key);
            writer
                .out
                .extend_from_slice(if style == Style::Pretty { b": " } else { b":" });
            writer.value(value, 1).map_err(|mut path| {
                path.push_front(Segment::Key(key.to_string()));
                Error::new(
                    ErrorKind::Value,
                    format!(
                        "nested more than {} arrays and objects deep; it could not be read back",
                        crate::text::MAX_DEPTH
                    ),
                )
                .in_path(*path)
            })?;
        }
        writer.out.extend_from_slice(match style {
            Style::Pretty => b"\n}\n",
            Style::Compact => b"}",
        });
        Ok(())
    }

    /// The canonical pretty text of the save.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write(&mut out, Style::Pretty)?;
        Ok(out)
    }

    /// The canonical compact text of the save.
    pub fn to_vec_compact(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write(&mut out, Style::Compact)?;
        Ok(out)
    }

    pub fn to_string(&self) -> Result<String> {
        self.to_vec()
            .map(|v| String::from_utf8(v).expect("the writer emits UTF-8"))
    }

    pub fn to_writer(&self, mut writer: impl Write, style: Style) -> Result<()> {
        let mut out = Vec::new();
        self.write(&mut out, style)?;
        writer
            .write_all(&out)
            .map_err(|e| Error::io(e, "cannot write the save"))
    }

    /// Writes the save to `path` in canonical pretty form, atomically: the file is either
    /// left as it was or holds the whole new save, whatever happens during the write.
    pub fn store(&self, path: impl AsRef<FsPath>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.to_vec().map_err(|e| e.with_file(path))?;
        fsio::write_atomic(path, &bytes)
            .map_err(|e| Error::io(e, "cannot write the file").with_file(path))
    }

    /// Deserializes the data section into a game's own type.
    pub fn data_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        crate::serde::from_value_ref(&self.data).map_err(|e| {
            let mut path = e.path().clone();
            path.push_front(Segment::Key("data".into()));
            Error::new(ErrorKind::Value, e.message().to_string()).in_path(path)
        })
    }
}

type EnvelopeError = (Path, String);

fn path_of(keys: &[&str]) -> Path {
    Path::from(
        keys.iter()
            .map(|k| Segment::Key(k.to_string()))
            .collect::<Vec<_>>(),
    )
}

/// Splits a parsed document into meta and data, checking it is a save.
fn envelope(document: Value) -> std::result::Result<Save, EnvelopeError> {
    const SHAPE: &str = r#"a save is an object {"meta": {"version": N, ...}, "data": ...}"#;
    let Value::Object(top) = document else {
        return Err((
            Path::new(),
            format!("not a save: {SHAPE}, found {}", document.kind()),
        ));
    };
    let mut meta = None;
    let mut data = None;
    for (key, value) in top {
        match key.as_str() {
            "meta" => meta = Some(value),
            "data" => data = Some(value),
            _ => {
                return Err((
                    path_of(&[&key]),
                    format!(r#"unknown top-level member {key:?}; {SHAPE} and nothing else"#),
                ))
            }
        }
    }
    let Some(meta) = meta else {
        return Err((
            Path::new(),
            format!(r#"not a save: the "meta" member is missing; {SHAPE}"#),
        ));
    };
    let Some(data) = data else {
        return Err((
            Path::new(),
            format!(r#"not a save: the "data" member is missing; {SHAPE}"#),
        ));
    };
    let Value::Object(mut extra) = meta else {
        return Err((
            path_of(&["meta"]),
            format!("meta must be an object, found {}", meta.kind()),
        ));
    };
    let version = match extra.remove("version") {
        Some(v) => v.as_u64().ok_or_else(|| {
            (
                path_of(&["meta", "version"]),
                format!(
                    "meta.version must be a non-negative integer (the save's schema version), found {}",
                    if v.as_i64().is_some() { "a negative integer" } else { v.kind() }
                ),
            )
        })?,
        None => {
            return Err((
                path_of(&["meta"]),
                "meta.version is missing; it must be a non-negative integer (the save's schema version)"
                    .to_string(),
            ))
        }
    };
    let writer = match extra.remove("writer") {
        None => None,
        Some(Value::String(s)) => Some(semver::Version::parse(&s).map_err(|e| {
            (
                path_of(&["meta", "writer"]),
                format!(
                    r#"meta.writer must be a semantic version such as "1.2.3", found {s:?}: {e}"#
                ),
            )
        })?),
        Some(other) => {
            return Err((
                path_of(&["meta", "writer"]),
                format!(
                    r#"meta.writer must be a string with a semantic version such as "1.2.3", found {}"#,
                    other.kind()
                ),
            ))
        }
    };
    Ok(Save {
        meta: Meta {
            version,
            writer,
            extra,
        },
        data,
    })
}

/// The byte offset of the value at `path` in a document known to parse, to point an error
/// at it. Used only on the error path, so it simply parses again.
fn locate(text: &str, path: &[Segment]) -> Option<usize> {
    let mut parser = Parser::new(text);
    for segment in path {
        parser.skip_whitespace();
        match segment {
            Segment::Key(wanted) => {
                parser.expect(b'{', "").ok()?;
                loop {
                    parser.skip_whitespace();
                    if parser.peek() != Some(b'"') {
                        return None;
                    }
                    let key = parser.string().ok()?;
                    parser.expect(b':', "").ok()?;
                    if &key == wanted {
                        break;
                    }
                    parser.value().ok()?;
                    parser.expect(b',', "").ok()?;
                }
            }
            Segment::Index(index) => {
                parser.expect(b'[', "").ok()?;
                for _ in 0..*index {
                    parser.value().ok()?;
                    parser.expect(b',', "").ok()?;
                }
            }
            // Lua keys appear only in errors about Lua values, which have no text to point at.
            Segment::LuaKey(_) => return None,
        }
    }
    parser.skip_whitespace();
    Some(parser.pos())
}
