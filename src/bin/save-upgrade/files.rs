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

/// A save to work on, and where it sits below the path it was found through (its file name
/// when given directly), for mirroring the tree under `--out-dir`.
pub struct Found {
    pub path: PathBuf,
    pub relative: PathBuf,
}

/// Like [`expand`], keeping each file's place below the path it was found through.
pub fn expand_with_roots(paths: &[PathBuf]) -> (Vec<Found>, Vec<(PathBuf, String)>) {
    let mut found = Vec::new();
    let mut all_errors = Vec::new();
    for root in paths {
        let (files, errors) = expand(std::slice::from_ref(root));
        all_errors.extend(errors);
        for path in files {
            let relative = if root.is_dir() {
                path.strip_prefix(root).unwrap_or(&path).to_path_buf()
            } else {
                PathBuf::from(path.file_name().unwrap_or(path.as_os_str()))
            };
            found.push(Found { path, relative });
        }
    }
    (found, all_errors)
}

/// Reads a list of paths, one a line, from a file or standard input (`-`).
pub fn read_list(source: &Path) -> std::io::Result<Vec<PathBuf>> {
    let text = if source.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(source)?
    };
    Ok(text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect())
}
