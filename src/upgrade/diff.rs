//! What a step did to a document: the paths it added, removed and changed.

use crate::path::{Path, Segment};
use crate::value::Value;

/// The differences between two documents, as paths from the data's root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Paths present only after (a whole new subtree counts once, at its root).
    pub added: Vec<String>,
    /// Paths present only before.
    pub removed: Vec<String>,
    /// Paths whose value changed, where it is not an object or array on both sides (or the
    /// kind changed, as when an array becomes an object).
    pub changed: Vec<String>,
}

impl Changes {
    /// Whether nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Compares `before` with `after`: objects key by key, arrays index by index.
pub fn diff(before: &Value, after: &Value) -> Changes {
    let mut changes = Changes::default();
    let mut path = Path::new();
    walk(before, after, &mut path, &mut changes);
    changes
}

fn walk(before: &Value, after: &Value, path: &mut Path, changes: &mut Changes) {
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, old) in a.iter() {
                path.push(Segment::Key(key.to_string()));
                match b.get(key) {
                    Some(new) => walk(old, new, path, changes),
                    None => changes.removed.push(path.to_string()),
                }
                path.pop();
            }
            for (key, _) in b.iter().filter(|(k, _)| !a.contains_key(k)) {
                path.push(Segment::Key(key.to_string()));
                changes.added.push(path.to_string());
                path.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                path.push(Segment::Index(i));
                match (a.get(i), b.get(i)) {
                    (Some(old), Some(new)) => walk(old, new, path, changes),
                    (Some(_), None) => changes.removed.push(path.to_string()),
                    (None, _) => changes.added.push(path.to_string()),
                }
                path.pop();
            }
        }
        (a, b) if a != b => changes.changed.push(path.to_string()),
        _ => {}
    }
}

/// Whether `path` is `declared` or lies inside it (`ship.cargo[2]` inside `ship.cargo`).
pub(crate) fn covered_by(path: &str, declared: &str) -> bool {
    path == declared
        || (path.starts_with(declared)
            && matches!(path.as_bytes().get(declared.len()), Some(b'.' | b'[')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::from_str;

    #[test]
    fn lists_added_removed_and_changed_paths() {
        let before =
            from_str(r#"{"a": 1, "b": {"c": [1, 2, 3], "d": "x"}, "gone": {"deep": 1}}"#).unwrap();
        let after = from_str(r#"{"a": 2, "b": {"c": [1, 5], "d": "x", "e": {"f": 1}}, "new": []}"#)
            .unwrap();
        let changes = diff(&before, &after);
        assert_eq!(changes.added, ["b.e", "new"]);
        assert_eq!(changes.removed, ["b.c[2]", "gone"]);
        assert_eq!(changes.changed, ["a", "b.c[1]"]);
        assert!(diff(&before, &before).is_empty());
    }

    #[test]
    fn covered_paths_respect_segment_boundaries() {
        assert!(covered_by("ship.cargo", "ship.cargo"));
        assert!(covered_by("ship.cargo[2]", "ship.cargo"));
        assert!(covered_by("ship.cargo.x", "ship.cargo"));
        assert!(!covered_by("ship.cargo_hold", "ship.cargo"));
    }
}
