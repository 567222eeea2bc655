//! Helpers shared by the unit tests of several modules.

use std::path::Path;

/// The file names in `dir`, sorted (temporaries included).
pub(crate) fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
