//! Where a batch writes into an output folder, and the checks that make sure it can never
//! overwrite a source or read its own output back as a source.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use super::find::{save_ending, Found};
use crate::compress::Codec;
use crate::error::{Error, ErrorKind, Result};
use crate::upgrade::refuse_link;

/// The path `path` will have once it exists: links resolved in the part that exists, the
/// rest (`.` and `..` folded) appended.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut resolved = canonical;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        resolved.pop();
                    }
                    Component::CurDir => {}
                    other => resolved.push(other),
                }
            }
            return resolved;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// How the folder `a` overlaps the folder `b`, once links are resolved: `"is"`,
/// `"lies inside"` or `"contains"`; `None` when they are apart.
pub(crate) fn overlap(a: &Path, b: &Path) -> Option<&'static str> {
    let (a, b) = (resolve(a), resolve(b));
    if a == b {
        Some("is")
    } else if a.starts_with(&b) {
        Some("lies inside")
    } else if b.starts_with(&a) {
        Some("contains")
    } else {
        None
    }
}

/// Refuses an output folder that is, contains or lies inside a source: the folders given
/// and the files given. Outputs inside a source are read back as saves by the next run
/// over it; a source inside the output folder can be overwritten by an output. Refusing
/// every overlap is simpler to trust than proving, per file, that none of that happens.
pub(crate) fn check_apart(out_dir: &Path, roots: &[impl AsRef<Path>]) -> Result<()> {
    for root in roots {
        let root = root.as_ref();
        let Some(relation) = overlap(out_dir, root) else {
            continue;
        };
        let relation = format!("{relation} the source");
        return Err(Error::new(
            ErrorKind::Usage,
            format!(
                "the output folder {} {relation} {}: upgraded copies could overwrite the \
                 originals or be read back as saves by the next run; choose an output folder \
                 outside every source",
                out_dir.display(),
                root.display()
            ),
        ));
    }
    Ok(())
}

/// Refuses to write `out_dir` joined with `relative` when that output, or a folder between
/// it and the output folder, is a symbolic link: the output folder is the tool's, and a
/// link there could send an output (or its backup) over a file elsewhere, or have that
/// file taken for an earlier run's output. The output folder itself may be a link.
pub(crate) fn refuse_links(out_dir: &Path, relative: &Path) -> Result<()> {
    let mut path = out_dir.to_path_buf();
    for part in relative.components() {
        path.push(part);
        refuse_link(&path)?;
    }
    Ok(())
}

/// The output path of each save, `out_dir` joined with its place below the path it was
/// found through; two saves with the same output (`a/x.json` and `b/x.json` given as
/// `a/ b/`) are refused, since one would replace the other.
///
/// With a `codec` asked for, a name ending as a save's does ([`save_ending`]) ends as a
/// save in that codec's (`x.json` in zstd is `x.json.zst`, `x.json.gz` in none is `x.json`),
/// so that the output folder's names say what the files hold; other names are kept.
pub(crate) fn targets(
    out_dir: &Path,
    saves: &[Found],
    codec: Option<Codec>,
) -> Result<Vec<PathBuf>> {
    let mut first_of: HashMap<PathBuf, &Path> = HashMap::new();
    let mut targets = Vec::with_capacity(saves.len());
    // Thousands of saves share a few folders: each folder is resolved once (a path walked
    // link by link), not once a save, before the run's threads can start.
    let mut folders: HashMap<PathBuf, PathBuf> = HashMap::new();
    for found in saves {
        let target = out_dir.join(output_name(&found.relative, codec));
        if let Some(first) = first_of.insert(resolve_in(&target, &mut folders), &found.path) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{} and {} would both be written to {}; upgrade them in separate runs",
                    first.display(),
                    found.path.display(),
                    target.display()
                ),
            ));
        }
        targets.push(target);
    }
    Ok(targets)
}

/// [`resolve`] of `target`, with the resolved folders kept in `folders`: a name that is
/// not a link (or not there yet) resolves to its resolved folder joined with the name,
/// which is what `resolve` gives; a link is resolved whole.
fn resolve_in(target: &Path, folders: &mut HashMap<PathBuf, PathBuf>) -> PathBuf {
    let (Some(folder), Some(Component::Normal(name))) = (
        target.parent().filter(|f| !f.as_os_str().is_empty()),
        target.components().next_back(),
    ) else {
        return resolve(target);
    };
    if std::fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()) {
        return resolve(target);
    }
    let resolved = folders
        .entry(folder.to_path_buf())
        .or_insert_with(|| resolve(folder));
    resolved.join(name)
}

/// `relative` with its file name ending in `codec`'s save ending, when it ends in a save's
/// ending; `relative` itself without a codec or such an ending.
fn output_name(relative: &Path, codec: Option<Codec>) -> PathBuf {
    let (Some(codec), Some(name)) = (codec, relative.file_name().and_then(|n| n.to_str())) else {
        return relative.to_path_buf();
    };
    let Some(ending) = save_ending(name) else {
        return relative.to_path_buf();
    };
    // `.json` as the name spells it, then the codec's own ending.
    let json = &name[name.len() - ending..][..".json".len()];
    let stem = &name[..name.len() - ending];
    relative.with_file_name(format!("{stem}{json}{}", codec.extension()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_output_folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let saves = dir.path().join("saves");
        std::fs::create_dir_all(saves.join("sub")).unwrap();
        std::fs::write(saves.join("a.json"), "{}").unwrap();
        let refused = [
            (saves.clone(), "is the source"),
            (saves.join("."), "is the source"),
            (saves.join("sub/../"), "is the source"),
            (saves.join("new"), "lies inside the source"),
            (saves.join("new/deeper"), "lies inside the source"),
            (dir.path().to_path_buf(), "contains the source"),
        ];
        for (out, why) in refused {
            let err = check_apart(&out, &[&saves]).unwrap_err();
            assert!(err.to_string().contains(why), "{}: {err}", out.display());
        }
        // A file given directly: an output folder holding it could overwrite it.
        let err = check_apart(dir.path(), &[saves.join("a.json")]).unwrap_err();
        assert!(err.to_string().contains("contains the source"), "{err}");
        check_apart(&dir.path().join("upgraded"), &[&saves]).unwrap();
        check_apart(&dir.path().join("savesX"), &[&saves]).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_the_source_is_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let saves = dir.path().join("saves");
        std::fs::create_dir(&saves).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&saves, &link).unwrap();
        assert!(check_apart(&link.join("new"), &[&saves]).is_err());
        assert!(check_apart(&link, &[&saves]).is_err());
    }

    #[test]
    fn two_saves_with_one_output_are_refused() {
        let found = |path: &str, relative: &str| Found {
            path: PathBuf::from(path),
            relative: PathBuf::from(relative),
            canonical: PathBuf::from(path),
            named: true,
        };
        let out = Path::new("/tmp/out");
        let ok = targets(
            out,
            &[found("a/x.json", "x.json"), found("a/y.json", "y.json")],
            None,
        );
        assert_eq!(ok.unwrap(), [out.join("x.json"), out.join("y.json")]);
        let err = targets(
            out,
            &[found("a/x.json", "x.json"), found("b/x.json", "x.json")],
            None,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("would both be written to"),
            "{err}"
        );
    }

    /// Each output folder is resolved once for all its saves: a link already in the output
    /// folder, to a file or to a folder, still makes two saves land on one output.
    #[cfg(unix)]
    #[test]
    fn outputs_through_links_in_the_output_folder_still_collide() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("real")).unwrap();
        std::fs::write(out.join("x.json"), "").unwrap();
        std::os::unix::fs::symlink(out.join("x.json"), out.join("y.json")).unwrap();
        std::os::unix::fs::symlink(out.join("real"), out.join("alias")).unwrap();
        let found = |relative: &str| Found {
            path: dir.path().join("src").join(relative),
            relative: PathBuf::from(relative),
            canonical: dir.path().join("src").join(relative),
            named: false,
        };
        let pairs = [
            ["x.json", "y.json"],
            ["real/a.json", "alias/a.json"],
            ["z.json", "./z.json"],
        ];
        for pair in pairs {
            let saves = pair.map(found);
            let err = targets(&out, &saves, None).unwrap_err();
            assert!(
                err.to_string().contains("would both be written to"),
                "{pair:?}: {err}"
            );
        }
        let apart = [found("real/a.json"), found("real/b.json"), found("z.json")];
        let ok = targets(&out, &apart, None).unwrap();
        for (target, save) in ok.iter().zip(&apart) {
            assert_eq!(resolve(target), resolve(&out.join(&save.relative)));
        }
    }

    #[test]
    fn outputs_asked_in_a_codec_are_named_for_it() {
        let name = |relative: &str, codec| output_name(Path::new(relative), codec);
        assert_eq!(name("a/x.json", None), Path::new("a/x.json"));
        assert_eq!(name("x.json.gz", None), Path::new("x.json.gz"));
        assert_eq!(
            name("a/x.json", Some(Codec::Zstd)),
            Path::new("a/x.json.zst")
        );
        assert_eq!(name("X.JSON", Some(Codec::Gzip)), Path::new("X.JSON.gz"));
        assert_eq!(
            name("x.json.gz", Some(Codec::Zstd)),
            Path::new("x.json.zst")
        );
        assert_eq!(name("x.Json.ZST", Some(Codec::Plain)), Path::new("x.Json"));
        assert_eq!(
            name("x.json.zst", Some(Codec::Zstd)),
            Path::new("x.json.zst")
        );
        // A file named itself may be called anything: its name is kept.
        assert_eq!(
            name("world.save", Some(Codec::Zstd)),
            Path::new("world.save")
        );
        // Two sources that become one output name are refused.
        let found = |path: &str| Found {
            path: PathBuf::from(path),
            relative: PathBuf::from(path),
            canonical: PathBuf::from(path),
            named: true,
        };
        let err = targets(
            Path::new("/tmp/out"),
            &[found("x.json"), found("x.json.gz")],
            Some(Codec::Zstd),
        )
        .unwrap_err();
        assert!(err.to_string().contains("x.json.zst"), "{err}");
    }
}
