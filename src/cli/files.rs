//! Turning the paths given on the command line into the list of save files to work on.

use std::path::{Path, PathBuf};

/// Whether a file found inside a folder is a save: `*.json`, not hidden (our own temporary
/// files start with a dot).
fn is_save(path: &Path) -> bool {
    let hidden = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'));
    !hidden && path.extension().is_some_and(|e| e == "json")
}

/// Expands folders into the saves below them (recursively, sorted); files given by name are
/// taken whatever their extension. Paths that cannot be listed come back as errors.
pub fn expand(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
            match entry {
                Ok(e) if e.file_type().is_file() && is_save(e.path()) => files.push(e.into_path()),
                Ok(_) => {}
                Err(e) => errors.push((path.clone(), e.to_string())),
            }
        }
    }
    (files, errors)
}
