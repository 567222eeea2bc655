//! Upgrading save files on disk: read, upgrade in memory, then write back in place after
//! keeping the original as a backup, or write to another path and leave the source alone.

use std::path::{Path, PathBuf};

use super::run::{StepReport, Upgrader};
use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::options::Options;
use crate::save::Save;

/// Where [`upgrade_file`] writes the upgraded save.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// Replace the save. With `backup`, the original is first kept beside it as
    /// `<name>.v<N>.bak` (N its version; `<name>.v<N>.<k>.bak` when a different file holds
    /// that name already, so an older backup is never overwritten).
    InPlace {
        /// Keep the original as a backup before replacing it.
        backup: bool,
    },
    /// Write the upgraded save to this path (making its folder), leaving the source as it
    /// is. A save already at the target version is copied byte for byte, so a folder of
    /// outputs is complete. A path that is the save itself (through a link, say) is an
    /// error: that would replace the original without its backup.
    To(&'a Path),
    /// Write nothing: only say which steps would run.
    Nowhere,
}

/// What [`upgrade_file`] did to one save.
#[derive(Debug)]
pub struct FileReport {
    /// The save's version before.
    pub from: u64,
    /// Its version after (or, with [`Target::Nowhere`], the version it would have).
    pub to: u64,
    /// The steps that ran, or with [`Target::Nowhere`] the steps that would run (their
    /// `changes` and `dropped` empty, since nothing ran).
    pub steps: Vec<StepReport>,
    /// The file written, if any.
    pub written: Option<PathBuf>,
    /// The backup of the original, when one was written.
    pub backup: Option<PathBuf>,
}

impl FileReport {
    /// Whether the save was already at the target version.
    pub fn was_current(&self) -> bool {
        self.from == self.to
    }
}

/// Upgrades the save at `path` and writes it to `target`, each write atomic (temporary file,
/// flush, rename): a crash leaves every file either as it was or whole.
///
/// A save that does not load, is outside the chain's versions, or fails a step is an error
/// naming the file, and nothing is written. A save already at the target version is not
/// rewritten in place.
///
/// ```
/// use savechain::upgrade::{upgrade_file, Chain, Step, Target};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("world.json");
/// std::fs::write(&path, r#"{"meta": {"version": 1}, "data": {"hp": 3}}"#)?;
/// let chain = Chain::new("1.1.0", vec![Step::lua(
///     "0001-health.lua",
///     "return function(data) data.health = data.hp * 10; data.hp = nil end",
/// )?])?;
///
/// let report = upgrade_file(&mut chain.upgrader(), &path, Target::InPlace { backup: true },
///                           &savechain::Options::default())?;
/// assert_eq!((report.from, report.to), (1, 2));
/// assert_eq!(report.backup, Some(dir.path().join("world.json.v1.bak")));
/// assert_eq!(savechain::Save::load(&path)?.data.to_string(), r#"{"health":30}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn upgrade_file(
    upgrader: &mut Upgrader<'_>,
    path: impl AsRef<Path>,
    target: Target<'_>,
    options: &Options,
) -> Result<FileReport> {
    let path = path.as_ref();
    upgrade_file_at(upgrader, path, target, options, None).map_err(|e| e.with_file(path))
}

/// [`upgrade_file`] for a batch: with `flush`, the folder of each upgraded save is flushed
/// later, once for many saves (the save's own bytes are on disk before its rename, and a
/// backup is made durable before the save is replaced).
pub(crate) fn upgrade_file_in_batch(
    upgrader: &mut Upgrader<'_>,
    path: &Path,
    target: Target<'_>,
    options: &Options,
    flush: &fsio::FolderFlush,
) -> Result<FileReport> {
    upgrade_file_at(upgrader, path, target, options, Some(flush)).map_err(|e| e.with_file(path))
}

fn upgrade_file_at(
    upgrader: &mut Upgrader<'_>,
    path: &Path,
    target: Target<'_>,
    options: &Options,
    flush: Option<&fsio::FolderFlush>,
) -> Result<FileReport> {
    if let Target::To(out) = target {
        if same_file(path, out) {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "the output {} is the save itself; upgrading in place keeps a backup",
                    out.display()
                ),
            ));
        }
    }
    let original = std::fs::read(path).map_err(|e| Error::io(e, "cannot read the file"))?;
    let save = Save::from_slice(&original)?;
    let from = save.meta.version;
    let plan = upgrader
        .chain()
        .plan(from, save.meta.writer.as_ref(), options.target)?;
    let mut report = FileReport {
        from,
        to: plan.last().map_or(from, |s| s.to()),
        steps: Vec::new(),
        written: None,
        backup: None,
    };
    match target {
        Target::Nowhere => {
            report.steps = plan.iter().map(StepReport::pending).collect();
            return Ok(report);
        }
        Target::InPlace { .. } if plan.is_empty() => return Ok(report),
        Target::InPlace { .. } => fsio::refuse_read_only(path).map_err(|e| {
            let hint = "; or upgrade it into another folder, leaving it as it is";
            Error::new(e.kind(), format!("{}{hint}", e.message()))
        })?,
        Target::To(out) if plan.is_empty() => {
            write_new(out, &original, flush)?;
            report.written = Some(out.to_path_buf());
            return Ok(report);
        }
        _ => {}
    }
    let upgraded = upgrader.upgrade(save, options)?;
    let text = upgraded.save.to_vec()?;
    report.steps = upgraded.steps;
    match target {
        Target::InPlace { backup } => {
            if backup {
                let backup = backup_path(path, from, &original);
                fsio::write_atomic_like(&backup, &original, Some(path)).map_err(|e| {
                    Error::io(e, format!("cannot write the backup {}", backup.display()))
                })?;
                report.backup = Some(backup);
            }
            fsio::write_atomic_with(path, &text, None, flush)
                .map_err(|e| Error::io(e, "cannot write the upgraded save"))?;
            report.written = Some(path.to_path_buf());
        }
        Target::To(out) => {
            write_new(out, &text, flush)?;
            report.written = Some(out.to_path_buf());
        }
        Target::Nowhere => unreachable!("returned above"),
    }
    Ok(report)
}

/// Writes `bytes` to `out`, making its folder first.
fn write_new(out: &Path, bytes: &[u8], flush: Option<&fsio::FolderFlush>) -> Result<()> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io(e, format!("cannot make the folder {}", parent.display())))?;
    }
    fsio::write_atomic_with(out, bytes, None, flush)
        .map_err(|e| Error::io(e, format!("cannot write {}", out.display())))
}

/// `<name>.v<N>.bak`, or `<name>.v<N>.<k>.bak` when that exists with other content, so an
/// older backup is never overwritten by a different one.
fn backup_path(path: &Path, from: u64, original: &[u8]) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let candidate = |k: u32| {
        let suffix = if k == 0 {
            format!("{name}.v{from}.bak")
        } else {
            format!("{name}.v{from}.{k}.bak")
        };
        path.with_file_name(suffix)
    };
    (0..)
        .map(candidate)
        .find(|p| std::fs::read(p).map_or(true, |existing| existing == original))
        .expect("an unbounded search")
}

/// Whether `a` and `b` name the same existing file (through links, or another spelling).
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (ma.dev(), ma.ino()) == (mb.dev(), mb.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        a.canonicalize().ok() == b.canonicalize().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upgrade::{Chain, Step};

    #[cfg(unix)]
    #[test]
    fn a_read_only_save_is_refused_in_place_and_may_go_elsewhere() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        let original = r#"{"meta": {"version": 1}, "data": {}}"#;
        std::fs::write(&path, original).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let step = Step::lua("0001-x.lua", "return function(d) d.x = 1 end").unwrap();
        let chain = Chain::new("1.0.0", vec![step]).unwrap();
        let options = Options::default();
        let in_place = Target::InPlace { backup: true };
        let err = upgrade_file(&mut chain.upgrader(), &path, in_place, &options).unwrap_err();
        assert!(err.to_string().contains("the save is read-only"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no backup"
        );
        let out = dir.path().join("out.json");
        upgrade_file(&mut chain.upgrader(), &path, Target::To(&out), &options).unwrap();
        assert_eq!(Save::load(&out).unwrap().meta.version, 2);
    }

    #[test]
    fn writing_over_the_save_itself_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.json");
        let original = r#"{"meta": {"version": 1}, "data": {}}"#;
        std::fs::write(&path, original).unwrap();
        let step = Step::lua("0001-x.lua", "return function(d) d.x = 1 end").unwrap();
        let chain = Chain::new("1.0.0", vec![step]).unwrap();
        let mut outs = vec![path.clone(), dir.path().join(".").join("world.json")];
        #[cfg(unix)]
        {
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            outs.push(link);
        }
        for out in outs {
            let err = upgrade_file(
                &mut chain.upgrader(),
                &path,
                Target::To(&out),
                &Options::default(),
            )
            .unwrap_err();
            assert!(err.to_string().contains("is the save itself"), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        }
    }
}
