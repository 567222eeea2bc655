//! Paths inside a document (`data.player.ship.hull`, `data.systems[3].name`), for error messages.

use std::fmt;

/// One step into a document: an object key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// A member of an object.
    Key(String),
    /// An element of an array, from 0.
    Index(usize),
    /// A key of a Lua table that is not a string, as Lua would write it inside brackets
    /// (`-1`, `true`, `1.5`, `<table>`).
    LuaKey(String),
}

/// Where a value sits in a document, from the root.
///
/// Displayed the way a modder would point at it: keys joined by dots, indexes in brackets,
/// and keys that are not plain identifiers quoted (`data["odd key"]`). The root is `(root)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path {
    segments: Vec<Segment>,
}

impl Path {
    /// The root: an empty path.
    pub fn new() -> Path {
        Path::default()
    }

    /// The steps from the root, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Whether the path is the root.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// Adds a step in front. Errors are built from the inside out as they unwind, so this
    /// is how a path grows; the cost is paid only on the error path.
    pub(crate) fn push_front(&mut self, segment: Segment) {
        self.segments.insert(0, segment);
    }

    /// Adds a step at the end.
    pub(crate) fn push(&mut self, segment: Segment) {
        self.segments.push(segment);
    }

    /// Removes and returns the innermost step.
    pub(crate) fn pop(&mut self) -> Option<Segment> {
        self.segments.pop()
    }
}

impl From<Vec<Segment>> for Path {
    fn from(segments: Vec<Segment>) -> Path {
        Path { segments }
    }
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str("(root)");
        }
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Key(key) if is_identifier(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Segment::Key(key) => write!(f, "[{key:?}]")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::LuaKey(key) => write!(f, "[{key}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_like_a_modder_would_write_it() {
        let path = Path::from(vec![
            Segment::Key("data".into()),
            Segment::Key("systems".into()),
            Segment::Index(3),
            Segment::Key("odd key".into()),
            Segment::Key("name".into()),
        ]);
        assert_eq!(path.to_string(), r#"data.systems[3]["odd key"].name"#);
        assert_eq!(Path::new().to_string(), "(root)");
    }
}
