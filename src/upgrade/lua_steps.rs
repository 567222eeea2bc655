//! Lua steps on disk: `NNNN-short-description.lua` files, each moving a save from version
//! NNNN to NNNN + 1.

use std::path::Path;

use super::{Step, StepKind};
use crate::error::{Error, ErrorKind, Result};

/// The version a step file (`NNNN-short-description.lua`) starts from, if its name is well
/// formed.
pub fn parse_name(file_name: &str) -> Option<u64> {
    let stem = file_name.strip_suffix(".lua")?;
    let (digits, words) = stem.split_once('-')?;
    let well_formed = digits.len() == 4
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !words.is_empty()
        && words
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    well_formed.then(|| digits.parse().ok()).flatten()
}

/// The first line's `--` comment, or the words of the file name.
pub(crate) fn description(file_name: &str, source: &str) -> String {
    if let Some(comment) = source.lines().next().and_then(|l| l.strip_prefix("--")) {
        let comment = comment.trim();
        if !comment.is_empty() {
            return comment.to_string();
        }
    }
    let stem = file_name.strip_suffix(".lua").unwrap_or(file_name);
    let words = stem.split_once('-').map_or(stem, |(_, w)| w);
    words.replace('-', " ")
}

pub(crate) fn load_dir(dir: &Path) -> Result<Vec<Step>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::io(
            e,
            format!("cannot read the upgrades folder {}", dir.display()),
        )
    })?;
    let mut steps = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(e, format!("cannot read {}", dir.display())))?;
        let path = entry.path();
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if !file_name.ends_with(".lua") || !path.is_file() {
            continue;
        }
        let Some(from) = parse_name(&file_name) else {
            return Err(Error::new(
                ErrorKind::Upgrade,
                "not a step file name: expected NNNN-short-description.lua (four digits, the version it \
                 upgrades from, then lowercase words joined by '-'); helper modules go in a subfolder",
            )
            .with_file(&path));
        };
        let source = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(e, "cannot read the step").with_file(&path))?;
        steps.push(Step {
            from,
            name: file_name.clone(),
            description: description(&file_name, &source),
            kind: StepKind::Lua {
                source,
                dir: Some(dir.to_path_buf()),
            },
        });
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_file_names() {
        assert_eq!(parse_name("0001-rename-hp.lua"), Some(1));
        assert_eq!(parse_name("0012-x2.lua"), Some(12));
        for bad in [
            "1-rename.lua",
            "0001.lua",
            "0001-.lua",
            "0001-Rename.lua",
            "0001_rename.lua",
            "0001-rename.txt",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
        assert_eq!(
            description("0003-change-units.lua", "local x\n"),
            "change units"
        );
        assert_eq!(
            description("0003-change-units.lua", "-- Fuel in m3.\nreturn"),
            "Fuel in m3."
        );
    }
}
