//! Safe file writes: bytes to a file that is replaced whole or not at all, and the removal
//! of what writes that were killed left behind.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the name of every temporary file of [`write_atomic`] holds:
/// `.<name>.savechain-<random>.tmp`, hidden, beside the file it will replace.
const TEMPORARY_MARK: &str = ".savechain-";
const TEMPORARY_SUFFIX: &str = ".tmp";

/// A temporary file this old, that no writer holds locked, was left by a write that did
/// not finish (a killed run). A writer locks its file the moment it is made, so the age
/// only covers that instant; it is generous so that clocks a little apart cannot matter.
const STALE_AFTER: Duration = Duration::from_secs(5);

/// Replaces the file at `path` with `bytes` atomically.
///
/// The bytes go to a temporary file in the same folder (so the rename cannot cross file
/// systems), which is flushed to disk and then renamed over `path`. A crash at any moment
/// leaves either the old file or the new one, never a mix; the temporary file is removed on
/// failure. An existing file keeps its permissions and, where the writer may set it (root
/// upgrading a player's saves), its owner.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> io::Result<()> {
    write_atomic_like(path.as_ref(), bytes, None)
}

/// [`write_atomic`], giving a new file the permissions and owner of `like` (a backup or a
/// cache those of its save), so that what is written beside a save is as private as it.
pub(crate) fn write_atomic_like(path: &Path, bytes: &[u8], like: Option<&Path>) -> io::Result<()> {
    let pending = write_temporary(path, bytes, like)?;
    pending.temp.as_file().sync_all()?;
    let dir = pending.dir.clone();
    pending.rename()?;
    // The file is replaced by now. Failing to flush the folder only weakens durability
    // across a power cut; reporting the write as failed would be wrong, so this is best
    // effort.
    let _ = sync_dir(&dir);
    Ok(())
}

/// Folders whose renames are flushed together, once, at the end of a batch: each file's
/// contents are on disk before its rename, and the folder flush that makes the rename
/// survive a power cut is shared by every save renamed in it. Until then a power cut can
/// only undo a rename, leaving that save as it was.
#[derive(Debug, Default)]
pub(crate) struct FolderFlush {
    folders: std::sync::Mutex<std::collections::BTreeSet<PathBuf>>,
}

impl FolderFlush {
    pub(crate) fn defer(&self, dir: &Path) {
        let mut folders = self.folders.lock().unwrap_or_else(|e| e.into_inner());
        if !folders.contains(dir) {
            folders.insert(dir.to_path_buf());
        }
    }

    /// Flushes every folder renamed in since the last call; the folders that could not be.
    pub(crate) fn flush(&self) -> Vec<(PathBuf, io::Error)> {
        let folders = std::mem::take(&mut *self.folders.lock().unwrap_or_else(|e| e.into_inner()));
        folders
            .into_iter()
            .filter_map(|dir| sync_dir(&dir).err().map(|e| (dir, e)))
            .collect()
    }
}

/// A file of [`write_atomic`] cut short: its bytes are in its temporary file, not yet
/// flushed nor renamed, so that a batch can flush many at once ([`make_durable`]) before
/// renaming them. The temporary stays locked while it waits (another run leaves it alone),
/// and dropping it removes it.
#[derive(Debug)]
pub(crate) struct Pending {
    temp: tempfile::NamedTempFile,
    /// The file it will replace (a link resolved).
    path: PathBuf,
    dir: PathBuf,
    len: usize,
}

impl Pending {
    /// The folder it will be renamed in.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many bytes it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Renames the temporary over its file; the folder is not flushed.
    pub(crate) fn rename(self) -> io::Result<()> {
        #[cfg(test)]
        if let Some(watch) = watch::record(&self.dir, "rename", &self.path) {
            watch?;
        }
        self.temp.persist(&self.path).map(drop).map_err(|e| e.error)
    }
}

/// Writes `bytes` to a new temporary file beside `path` (a link's target): the first half
/// of [`write_atomic_like`].
pub(crate) fn write_temporary(
    path: &Path,
    bytes: &[u8],
    like: Option<&Path>,
) -> io::Result<Pending> {
    // Through a symbolic link, replace the file it names, as editors do, not the link.
    let resolved;
    let path = if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        resolved = fs::canonicalize(path)?;
        resolved.as_path()
    } else {
        path
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
    let prefix = temporary_prefix(name);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(TEMPORARY_SUFFIX);
    // A new save gets the mode any new file would (0666 less the umask), not the
    // owner-only mode of a temporary file.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut temp = builder.tempfile_in(dir)?;
    // Held until the file is renamed and closed: another run that finds it while it is
    // being written, or waits for its group's flush, leaves it alone
    // (remove_stale_temporaries).
    temp.as_file().lock()?;
    temp.write_all(bytes)?;
    let model = fs::metadata(path)
        .ok()
        .or_else(|| like.and_then(|l| fs::metadata(l).ok()));
    if let Some(model) = model {
        take_owner(temp.as_file(), &model)?;
        temp.as_file().set_permissions(model.permissions())?;
    }
    Ok(Pending {
        temp,
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        len: bytes.len(),
    })
}

/// Flushes the bytes of `files` to disk; for each file, whether it is durable.
///
/// On Linux one `syncfs` per file system covers every file on it: one journal commit for
/// the lot, where an `fsync` per file costs a commit each and the commits of two jobs wait
/// on each other. A failed `syncfs` fails every file of its file system. It also flushes
/// what other programs wrote there, so a file system busy with other writes makes it
/// slower. Elsewhere each file gets its own `fsync`.
pub(crate) fn make_durable(files: &[&Pending]) -> Vec<io::Result<()>> {
    #[cfg(test)]
    if let Some(Err(e)) = files
        .first()
        .and_then(|f| watch::record(&f.dir, "flush files", Path::new(&files.len().to_string())))
    {
        return files.iter().map(|_| Err(copy_error(&e))).collect();
    }
    #[cfg(target_os = "linux")]
    if syncfs::reports_errors() {
        return syncfs::per_file_system(files);
    }
    files.iter().map(|f| f.temp.as_file().sync_all()).collect()
}

/// The same error again, for each of several files it fails.
pub(crate) fn copy_error(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

#[cfg(target_os = "linux")]
mod syncfs {
    use super::{copy_error, Pending};
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;

    /// Whether `syncfs` says when a write failed: only from Linux 5.8 on, before which it
    /// returned success whatever happened, so a flush that failed would go unseen.
    pub(super) fn reports_errors() -> bool {
        static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *ANSWER.get_or_init(|| {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            let mut numbers = release
                .split(|c: char| !c.is_ascii_digit())
                .map(|n| n.parse::<u32>().unwrap_or(0));
            (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0)) >= (5, 8)
        })
    }

    pub(super) fn per_file_system(files: &[&Pending]) -> Vec<io::Result<()>> {
        let devices: Vec<io::Result<u64>> = files
            .iter()
            .map(|f| f.temp.as_file().metadata().map(|m| m.dev()))
            .collect();
        // Each file system is flushed through the group's first file on it: `syncfs`
        // reports the write errors since its descriptor was opened, the earliest there.
        let mut flushed: Vec<(u64, io::Result<()>)> = Vec::new();
        for (file, device) in files.iter().zip(&devices) {
            let Ok(device) = device else { continue };
            if flushed.iter().all(|(d, _)| d != device) {
                flushed.push((*device, syncfs(file)));
            }
        }
        files
            .iter()
            .zip(devices)
            .map(|(file, device)| {
                let device = device?;
                match &flushed
                    .iter()
                    .find(|(d, _)| *d == device)
                    .expect("flushed above")
                    .1
                {
                    Ok(()) => Ok(()),
                    // A file system that has no syncfs (some sandboxes): one fsync a file.
                    Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                        file.temp.as_file().sync_all()
                    }
                    Err(e) => Err(copy_error(e)),
                }
            })
            .collect()
    }

    fn syncfs(file: &Pending) -> io::Result<()> {
        // SAFETY: the descriptor of a file that `file` keeps open for the call.
        if unsafe { libc::syncfs(file.temp.as_file().as_raw_fd()) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Gives `file` the owner and group of `model`, when they differ and the writer may: root
/// may, an ordinary user only to a group of its own, and otherwise the file stays the
/// writer's (the user could not have taken the original's owner anyway).
#[cfg(unix)]
fn take_owner(file: &fs::File, model: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mine = file.metadata()?;
    if (mine.uid(), mine.gid()) == (model.uid(), model.gid()) {
        return Ok(());
    }
    match std::os::unix::fs::fchown(file, Some(model.uid()), Some(model.gid())) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(()),
        other => other,
    }
}

#[cfg(not(unix))]
fn take_owner(_file: &fs::File, _model: &fs::Metadata) -> io::Result<()> {
    Ok(())
}

/// The start of the name of a temporary file for the file named `name`; a random part and
/// [`TEMPORARY_SUFFIX`] follow.
fn temporary_prefix(name: &OsStr) -> String {
    format!(".{}{TEMPORARY_MARK}", name.to_string_lossy())
}

/// A save that its owner made read-only is not replaced, even by a user (root) whom the
/// system would let write it: the mode says to leave it alone.
pub(crate) fn refuse_read_only(path: &Path) -> crate::Result<()> {
    let metadata =
        std::fs::metadata(path).map_err(|e| crate::Error::io(e, "cannot read the file"))?;
    #[cfg(unix)]
    let read_only = std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o222 == 0;
    #[cfg(not(unix))]
    let read_only = metadata.permissions().readonly();
    if read_only {
        return Err(crate::Error::new(
            crate::ErrorKind::Io,
            "the save is read-only (no write permission), so it is left as it is; make it \
             writable first if it should change",
        ));
    }
    Ok(())
}

/// Whether `file_name` is that of a temporary file of [`write_atomic`].
pub(crate) fn is_temporary(file_name: &OsStr) -> bool {
    let name = file_name.to_string_lossy();
    name.starts_with('.') && name.contains(TEMPORARY_MARK) && name.ends_with(TEMPORARY_SUFFIX)
}

/// Removes from `dir` (not its subfolders) the temporary files of [`write_atomic`] that a
/// killed write left behind: only files named as ours, only when no writer holds them and
/// they are a few seconds old. Returns the files removed.
pub(crate) fn remove_stale_temporaries(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if !is_temporary(&entry.file_name()) || !entry.file_type()?.is_file() {
            continue;
        }
        let path = entry.path();
        if is_stale(&path).unwrap_or(false) {
            match fs::remove_file(&path) {
                Ok(()) => removed.push(path),
                // Another run removed it, or renamed it into place, first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

fn is_stale(path: &Path) -> io::Result<bool> {
    let file = fs::File::open(path)?;
    let age = file
        .metadata()?
        .modified()?
        .elapsed()
        .unwrap_or(Duration::ZERO);
    if age < STALE_AFTER {
        return Ok(false);
    }
    // A writer holds its lock until the rename; if we get it, nobody is writing.
    Ok(file.try_lock().is_ok())
}

/// Flushes a folder's entries, so that a rename inside it survives a power cut.
#[cfg(unix)]
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(test)]
    if let Some(watch) = watch::record(dir, "flush folder", Path::new("")) {
        watch?;
    }
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub(crate) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// For tests: the flushes and renames of files in a watched folder, in order, and failures
/// made to order.
#[cfg(test)]
pub(crate) mod watch {
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    struct Watched {
        dir: PathBuf,
        fail: Option<&'static str>,
        log: Vec<String>,
    }

    static WATCHED: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

    /// Records what is done in `dir` (a folder of a test's own); `fail`: the operation
    /// (`"flush files"`, `"rename"`, `"flush folder"`) that fails there, each time.
    pub(crate) fn watch(dir: &Path, fail: Option<&'static str>) {
        let mut watched = WATCHED.lock().unwrap();
        watched.retain(|w| w.dir != dir);
        watched.push(Watched {
            dir: dir.to_path_buf(),
            fail,
            log: Vec::new(),
        });
    }

    /// What was done in `dir`, in order: `flush files <count>`, `rename <name>`,
    /// `flush folder`.
    pub(crate) fn log(dir: &Path) -> Vec<String> {
        let watched = WATCHED.lock().unwrap();
        let watch = watched.iter().find(|w| w.dir == dir);
        watch.map(|w| w.log.clone()).unwrap_or_default()
    }

    /// Records `operation` in `dir`, on `what` (a file, a count); `Some` when the folder
    /// is watched, with the error asked for.
    pub(super) fn record(dir: &Path, operation: &str, what: &Path) -> Option<io::Result<()>> {
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        let watch = watched.iter_mut().find(|w| w.dir == dir)?;
        let what = what.file_name().unwrap_or_default().to_string_lossy();
        watch
            .log
            .push(format!("{operation} {what}").trim_end().to_string());
        Some(if watch.fail == Some(operation) {
            Err(io::Error::other(format!(
                "{operation} failed (made to by a test)"
            )))
        } else {
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn replaces_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        fs::write(&path, b"old").unwrap();
        write_atomic(&path, b"new contents").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new contents");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_a_symbolic_link() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        let real = dir.path().join("real").join("a.json");
        let link = dir.path().join("link.json");
        fs::write(&real, b"old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_dir(dir.path().join("real")).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn new_files_get_an_ordinary_mode_and_old_ones_keep_theirs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.json");
        write_atomic(&new, b"x").unwrap();
        let plain = dir.path().join("plain.json");
        fs::write(&plain, b"x").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&new), mode(&plain));
        let old = dir.path().join("old.json");
        fs::write(&old, b"x").unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&old, b"y").unwrap();
        assert_eq!(
            fs::metadata(&old).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }

    #[test]
    fn stale_temporaries_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        let make = |name: &str| {
            let path = dir.path().join(name);
            fs::write(&path, b"partial").unwrap();
            let file = fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(old).unwrap();
            (path, file)
        };
        let (stale, _) = make(".a.json.savechain-x1y2z3.tmp");
        let (held, held_file) = make(".b.json.savechain-a1b2c3.tmp");
        held_file.lock().unwrap();
        // Not ours: an editor's swap file, another program's temporary.
        let (foreign, _) = make(".a.json.swp");
        let (other_tmp, _) = make(".a.json.abc123.tmp");
        let (fresh, _) = make(".c.json.savechain-q1w2e3.tmp");
        fs::File::options()
            .write(true)
            .open(&fresh)
            .unwrap()
            .set_modified(SystemTime::now())
            .unwrap();
        let removed = remove_stale_temporaries(dir.path()).unwrap();
        assert_eq!(removed, std::slice::from_ref(&stale));
        assert!(!stale.exists());
        for kept in [&held, &foreign, &other_tmp, &fresh] {
            assert!(kept.exists(), "{}", kept.display());
        }
    }

    #[test]
    fn temporaries_are_named_as_ours() {
        let ours = format!(
            "{}k3j4h5{TEMPORARY_SUFFIX}",
            temporary_prefix(OsStr::new("a.json"))
        );
        assert_eq!(ours, ".a.json.savechain-k3j4h5.tmp");
        assert!(is_temporary(OsStr::new(&ours)));
        for not_ours in [
            "a.json",
            "a.json.savechain-1.tmp",
            ".a.json.tmp",
            ".a.json.savechain-1",
        ] {
            assert!(!is_temporary(OsStr::new(not_ours)), "{not_ours}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_like_another_takes_its_mode_and_owner() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let save = dir.path().join("a.json");
        fs::write(&save, b"x").unwrap();
        fs::set_permissions(&save, fs::Permissions::from_mode(0o600)).unwrap();
        let running_as_root = fs::metadata(&save).unwrap().uid() == 0;
        if running_as_root {
            // A player's save, upgraded by root: it stays the player's.
            std::os::unix::fs::chown(&save, Some(1000), Some(1000)).unwrap();
        }
        let backup = dir.path().join("a.json.v1.bak");
        write_atomic_like(&backup, b"x", Some(&save)).unwrap();
        write_atomic(&save, b"y").unwrap();
        for path in [&save, &backup] {
            let m = fs::metadata(path).unwrap();
            assert_eq!(m.permissions().mode() & 0o777, 0o600, "{}", path.display());
            if running_as_root {
                assert_eq!((m.uid(), m.gid()), (1000, 1000), "{}", path.display());
            }
        }
    }

    #[test]
    fn fails_without_touching_anything_when_folder_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("a.json");
        assert!(write_atomic(&path, b"x").is_err());
        assert!(!path.exists());
    }
}
