//! What a step did to a document: the paths it added, removed and changed, with their
//! values before and after.

use crate::path::{Path, Segment};
use crate::value::Value;

/// Values are shown in their compact text, cut to this many characters.
const SHOWN_CHARS: usize = 60;

/// One path a step added, removed or changed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// The path from the document's root (`data.ship.cargo[2].mass`), as `get` and `set`
    /// take it.
    pub path: String,
    /// The value before, as compact text with doubles in decimal (`["d",0.965]`), cut to 60
    /// characters with `…` (none when added).
    pub before: Option<String>,
    /// The value after, likewise (none when removed).
    pub after: Option<String>,
}

/// The differences between two documents, as paths from the document's root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Changes {
    /// Paths present only after (a whole new subtree counts once, at its root).
    pub added: Vec<Change>,
    /// Paths present only before.
    pub removed: Vec<Change>,
    /// Paths whose value changed, where it is not an object or array on both sides (or the
    /// kind changed, as when an array becomes an object).
    pub changed: Vec<Change>,
}

impl Changes {
    /// Whether nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Compares the data `before` with the data `after` (a save's `data`): objects key by key,
/// arrays index by index, paths from the document's root (`data.…`).
pub fn diff_data(before: &Value, after: &Value) -> Changes {
    let mut changes = Changes::default();
    let root = Path::from(vec![Segment::Key("data".to_string())]);
    diff_into(before, after, root, &mut changes);
    changes
}

/// `path`, a path from the data's root as steps write it (`ship.cargo`, `["odd key"]`),
/// from the document's root as reports print it (`data.ship.cargo`).
pub(crate) fn from_data(path: &str) -> String {
    match path.starts_with('[') {
        true => format!("data{path}"),
        false => format!("data.{path}"),
    }
}

/// `path`, a path from the document's root under `data`, from the data's root again, as
/// a step writes it; `None` for a path not under `data`.
pub(crate) fn in_data(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("data")?;
    match rest.as_bytes().first() {
        Some(b'.') => Some(&rest[1..]),
        Some(b'[') => Some(rest),
        _ => None,
    }
}

/// [`diff`] of two values found at `path`, their changes added to `changes` with paths
/// from there.
pub(crate) fn diff_into(before: &Value, after: &Value, mut path: Path, changes: &mut Changes) {
    walk(before, after, &mut path, changes);
}

fn walk(before: &Value, after: &Value, path: &mut Path, changes: &mut Changes) {
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, old) in a.iter() {
                path.push(Segment::Key(key.to_string()));
                match b.get(key) {
                    Some(new) => walk(old, new, path, changes),
                    None => changes.removed.push(change(path, Some(old), None)),
                }
                path.pop();
            }
            for (key, new) in b.iter().filter(|(k, _)| !a.contains_key(k)) {
                path.push(Segment::Key(key.to_string()));
                changes.added.push(change(path, None, Some(new)));
                path.pop();
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                path.push(Segment::Index(i));
                match (a.get(i), b.get(i)) {
                    (Some(old), Some(new)) => walk(old, new, path, changes),
                    (Some(old), None) => changes.removed.push(change(path, Some(old), None)),
                    (None, new) => changes.added.push(change(path, None, new)),
                }
                path.pop();
            }
        }
        (a, b) if a != b => changes.changed.push(change(path, Some(a), Some(b))),
        _ => {}
    }
}

fn change(path: &Path, before: Option<&Value>, after: Option<&Value>) -> Change {
    Change {
        path: path.to_string(),
        before: before.map(shown),
        after: after.map(shown),
    }
}

/// A value's compact text with doubles in decimal, cut to [`SHOWN_CHARS`] characters.
fn shown(value: &Value) -> String {
    let text = crate::text::write::to_string_shown(value);
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
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
        let changes = diff_data(&before, &after);
        let paths = |list: &[Change]| list.iter().map(|c| c.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&changes.added), ["data.b.e", "data.new"]);
        assert_eq!(paths(&changes.removed), ["data.b.c[2]", "data.gone"]);
        assert_eq!(paths(&changes.changed), ["data.a", "data.b.c[1]"]);
        let a = &changes.changed[0];
        assert_eq!(
            (a.before.as_deref(), a.after.as_deref()),
            (Some("1"), Some("2"))
        );
        assert!(diff_data(&before, &before).is_empty());
    }

    #[test]
    fn values_are_shown_and_long_ones_cut() {
        let before =
            from_str(r#"{"hull": ["d", "0x1.8p+6"], "log": "short", "gone": [1, 2]}"#).unwrap();
        let long = "é".repeat(100);
        let after = from_str(&format!(
            r#"{{"hull": 100, "log": "{long}", "new": {{"a": true}}}}"#
        ))
        .unwrap();
        let changes = diff_data(&before, &after);
        let shown = |c: &Change| format!("{} {:?} {:?}", c.path, c.before, c.after);
        assert_eq!(
            shown(&changes.added[0]),
            r#"data.new None Some("{\"a\":true}")"#
        );
        assert_eq!(
            shown(&changes.removed[0]),
            r#"data.gone Some("[1,2]") None"#
        );
        assert_eq!(
            shown(&changes.changed[0]),
            r#"data.hull Some("[\"d\",96.0]") Some("100")"#
        );
        let log = changes.changed[1].after.as_deref().unwrap();
        assert_eq!(log.chars().count(), 61);
        assert!(log.starts_with("\"éé") && log.ends_with("é…"), "{log}");
    }

    #[test]
    fn covered_paths_respect_segment_boundaries() {
        assert!(covered_by("ship.cargo", "ship.cargo"));
        assert!(covered_by("ship.cargo[2]", "ship.cargo"));
        assert!(covered_by("ship.cargo.x", "ship.cargo"));
        assert!(!covered_by("ship.cargo_hold", "ship.cargo"));
    }

    #[test]
    fn paths_go_between_the_data_and_the_documents_root() {
        assert_eq!(from_data("ship.cargo[2]"), "data.ship.cargo[2]");
        assert_eq!(from_data("[\"odd key\"]"), "data[\"odd key\"]");
        assert_eq!(in_data("data.ship.cargo[2]"), Some("ship.cargo[2]"));
        assert_eq!(in_data("data[\"odd key\"]"), Some("[\"odd key\"]"));
        assert_eq!(in_data("database"), None);
        assert_eq!(in_data("meta.version"), None);
    }
}
