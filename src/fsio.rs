//! Safe file writes: bytes to a file that is replaced whole or not at all, under a lock
//! that the library's writers respect; reading only regular files (never waiting on a
//! FIFO); and the removal of what killed writes left behind.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind};

/// What the name of every temporary file of [`write_atomic`] holds:
/// `.<name>.savechain-<random>.tmp`, hidden, beside the file it will replace.
const TEMPORARY_MARK: &str = ".savechain-";
const TEMPORARY_SUFFIX: &str = ".tmp";

/// How long an upgrade or a format waits for a save that another writer holds locked,
/// before it fails that save: a game storing a save holds it for a moment; a longer hold is
/// another run working on the same save, and two runs each waiting for a save the other
/// holds must not wait forever.
pub(crate) const LOCK_WAIT: Duration = if cfg!(test) {
    Duration::from_millis(300)
} else {
    Duration::from_secs(10)
};

/// Replaces the file at `path` with `bytes` atomically.
///
/// The bytes go to a temporary file in the same folder (so the rename cannot cross file
/// systems), which is flushed to disk and then renamed over `path`. A crash at any moment
/// leaves either the old file or the new one, never a mix; the temporary file is removed on
/// failure. An existing file keeps its permissions and, where the writer may set it (root
/// upgrading a player's saves), its owner. A FIFO, socket or device at `path` is refused,
/// never replaced nor waited on.
///
/// While it writes, it holds the existing file's lock, the one savechain's upgrades hold
/// from reading a save to replacing it: a write that comes while a save is being upgraded
/// waits for the upgrade to finish, and then replaces the upgraded save, so the newest
/// write is what the file holds. On a file system that has no locks (some network file
/// systems) it writes without one.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> io::Result<()> {
    let path = path.as_ref();
    let _held = hold(path, Wait::Forever)?;
    write_atomic_like(path, bytes, None).map(drop)
}

/// [`write_atomic`] without taking the existing file's lock (a backup or a cache, or a
/// file whose lock the caller holds), giving a new file the permissions and owner of
/// `like` (a backup or a cache those of its save), so that what is written beside a save is
/// as private as it. Returns the file renamed into place, still locked: whoever waits for
/// the lock of `path` waits until it is dropped.
pub(crate) fn write_atomic_like(
    path: &Path,
    bytes: &[u8],
    like: Option<&Path>,
) -> io::Result<fs::File> {
    write_temporary(path, bytes, like)?.commit()
}

/// How long [`hold`] waits for a file that another writer holds locked.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wait {
    /// Until the other writer is done: a game's store waits for a running upgrade.
    Forever,
    /// At most this long, then `hold` fails with [`io::ErrorKind::WouldBlock`].
    UpTo(Duration),
}

/// A file locked against savechain's other writers (an advisory lock: `flock` on Unix),
/// from reading it to replacing it. Dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct Held {
    file: fs::File,
    path: PathBuf,
}

/// Locks the file at `path` (the file a link names), waiting as `wait` says. `None` when
/// there is no file there (a new save: there is nothing to lock). A FIFO, socket, device
/// or folder is refused.
///
/// A rename replaces the file a path names, and the lock stays with the old file: a writer
/// that waited for the lock may find, once it has it, that the path names another file
/// (the one the lock's holder renamed into place). It then locks that one instead, so the
/// lock it returns is always on the file the path names.
pub(crate) fn hold(path: &Path, wait: Wait) -> io::Result<Option<Held>> {
    let deadline = match wait {
        Wait::Forever => None,
        Wait::UpTo(wait) => Some(Instant::now() + wait),
    };
    loop {
        let file = match open_regular(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            other => other?,
        };
        if !lock(&file, deadline)? || names_file(path, &file) {
            return Ok(Some(Held {
                file,
                path: path.to_path_buf(),
            }));
        }
    }
}

/// Locks `file`, waiting until `deadline` at most (`None`: for as long as it takes).
/// `false` when the file system has no locks: the caller goes on without one.
fn lock(file: &fs::File, deadline: Option<Instant>) -> io::Result<bool> {
    let Some(deadline) = deadline else {
        return match file.lock() {
            Ok(()) => Ok(true),
            Err(e) if locks_unsupported(&e) => Ok(false),
            Err(e) => Err(e),
        };
    };
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) if locks_unsupported(&e) => return Ok(false),
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "another program holds the file's lock",
            ));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Whether a lock failed because the file system cannot lock (some network file
/// systems), rather than because of the file.
fn locks_unsupported(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::Unsupported {
        return true;
    }
    #[cfg(target_os = "linux")]
    {
        // EBADF: NFS takes `flock` as a byte-range lock, which a file open only for
        // reading cannot have.
        matches!(
            e.raw_os_error(),
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS | libc::EBADF)
        )
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// [`hold`] for a save about to be upgraded or formatted in place: waits [`LOCK_WAIT`] at
/// most, with errors that say what to do.
pub(crate) fn hold_save(path: &Path) -> crate::Result<Option<Held>> {
    hold(path, Wait::UpTo(LOCK_WAIT)).map_err(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            Error::new(
                ErrorKind::Changed,
                format!(
                    "another program held the save's lock for {} s (a game storing it, or \
                     another run working on it), so it is left as it is; run again once it \
                     is done",
                    LOCK_WAIT.as_secs_f32()
                ),
            )
        } else {
            Error::io(e, "cannot read the file")
        }
    })
}

/// The bytes of the save at `path`: through `held`, its locked descriptor, when it is held.
pub(crate) fn read_save(path: &Path, held: Option<&Held>) -> crate::Result<Vec<u8>> {
    match held {
        Some(held) => held.read(),
        None => read_regular(path),
    }
    .map_err(|e| Error::io(e, "cannot read the file"))
}

/// Replaces the save at `path`, whose bytes were `read` while `held`, with `bytes`: a
/// temporary file beside it, flushed, renamed over it once the save is checked to be
/// unchanged, then the folder flushed.
pub(crate) fn replace_held(
    path: &Path,
    bytes: &[u8],
    held: Option<&Held>,
    read: &Fingerprint,
    work: Work,
) -> crate::Result<()> {
    let pending =
        write_temporary(path, bytes, None).map_err(|e| Error::io(e, "cannot write the file"))?;
    put_in_place(pending, held, read, work)
}

/// The last part of [`replace_held`] and [`replace_held_streamed`]: the temporary file
/// flushed, the save checked to be unchanged, the rename, then the folder flushed.
fn put_in_place(
    pending: Pending,
    held: Option<&Held>,
    read: &Fingerprint,
    work: Work,
) -> crate::Result<()> {
    let write_error = |e| Error::io(e, "cannot write the file");
    pending.sync().map_err(write_error)?;
    let dir = pending.dir().to_path_buf();
    if let Some(held) = held {
        held.check_unchanged(read, work)?;
    }
    pending.rename().map_err(write_error)?;
    // Replaced by now: a failed folder flush only weakens durability.
    let _ = sync_dir(&dir);
    Ok(())
}

/// Where a backup of `original`, the bytes of `path`, goes: `<name>.<tag>.bak` (`<name>.bak`
/// without a tag), or `<name>.<tag>.<k>.bak` when that exists with other content, so an
/// older backup is never overwritten by a different one.
pub(crate) fn backup_path(path: &Path, tag: Option<&str>, original: &[u8]) -> PathBuf {
    // The name as the file system has it, bytes that are not UTF-8 included: a lossy
    // spelling would give two saves one backup name.
    let name = path.file_name().unwrap_or_default();
    let tag = tag.map(|t| format!(".{t}")).unwrap_or_default();
    let named = |suffix: String| {
        let mut backup = name.to_os_string();
        backup.push(suffix);
        path.with_file_name(backup)
    };
    (0..)
        .map(|k: u32| match k {
            0 => named(format!("{tag}.bak")),
            k => named(format!("{tag}.{k}.bak")),
        })
        // Something that is not a file there (a folder, a FIFO) is never read, and the
        // backup's write then fails, naming it. A file that cannot be read (no permission)
        // may hold anything: its name is not free.
        .find(|p| match holds(p, original) {
            Ok(same) => same,
            Err(e) => matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::InvalidInput
            ),
        })
        .expect("an unbounded search")
}

/// Whether the regular file at `path` ([`open_regular`]) holds exactly `bytes`: its length
/// first, then a piece at a time, so that a large save's backup is never read whole beside
/// the save being upgraded (a rerun finds one at every save).
fn holds(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let file = open_regular(path)?;
    if file.metadata()?.len() != bytes.len() as u64 {
        return Ok(false);
    }
    let mut at = 0;
    let mut same = true;
    each_piece(&file, bytes.len(), |piece| {
        // A file that grew since its length was read holds something else.
        same = bytes.get(at..at + piece.len()) == Some(piece);
        at += piece.len();
        same
    })?;
    Ok(same && at == bytes.len())
}

/// Reads `file` from where it stands to its end a piece at a time, never whole in memory,
/// handing each piece to `each` until it returns false; `len` is about how long the file
/// is (a small file is read into a small buffer).
fn each_piece(
    mut file: impl Read,
    len: usize,
    mut each: impl FnMut(&[u8]) -> bool,
) -> io::Result<()> {
    let mut piece = vec![0; (1 << 18).min(len.saturating_add(1))];
    loop {
        match file.read(&mut piece) {
            Ok(0) => return Ok(()),
            Ok(n) if !each(&piece[..n]) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The length and hash of a file's bytes as they were read: what they must still be when
/// the file is replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: usize,
    hash: u128,
}

impl Fingerprint {
    pub(crate) fn of(bytes: &[u8]) -> Fingerprint {
        Fingerprint {
            len: bytes.len(),
            hash: xxhash_rust::xxh3::xxh3_128(bytes),
        }
    }
}

/// What is being done to a held file, for the error that says it changed meanwhile.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    Upgrade,
    Format,
    Edit,
    Restore,
    /// The file at an upgrade's output, replaced by the upgraded save.
    Output,
}

impl Held {
    /// The file's bytes, read through the locked descriptor.
    pub(crate) fn read(&self) -> io::Result<Vec<u8>> {
        #[cfg(test)]
        if let Some(Err(e)) = watch::record(folder_of(&self.path), "read", &self.path) {
            return Err(e);
        }
        let mut file = &self.file;
        file.seek(io::SeekFrom::Start(0))?;
        let mut bytes = Vec::with_capacity(self.file.metadata().map_or(0, |m| m.len() as usize));
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The fingerprint of the file's bytes now, read through the locked descriptor a
    /// piece at a time (a large save is not held twice in memory).
    fn fingerprint_now(&self) -> io::Result<Fingerprint> {
        let mut file = &self.file;
        file.seek(io::SeekFrom::Start(0))?;
        let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
        let mut len = 0;
        each_piece(file, usize::MAX, |piece| {
            hasher.update(piece);
            len += piece.len();
            true
        })?;
        Ok(Fingerprint {
            len,
            hash: hasher.digest128(),
        })
    }

    /// Fails, saying so, when the path no longer names the locked file with the bytes that
    /// were `read`: a program that does not take the lock replaced, rewrote or removed it.
    /// Called right before the file is replaced; what that program writes between this
    /// check and the rename (microseconds) is the one window left.
    pub(crate) fn check_unchanged(&self, read: &Fingerprint, work: Work) -> crate::Result<()> {
        #[cfg(test)]
        if let Some(Err(e)) = watch::record(folder_of(&self.path), "check", &self.path) {
            return Err(Error::io(e, "cannot read the file"));
        }
        // The bytes first (reading them takes a while for a large save), the name last:
        // a file renamed over the save is then seen unless it comes in the instant
        // between this look and the rename.
        let rewritten = self
            .fingerprint_now()
            .map_err(|e| Error::io(e, "cannot read the file"))?
            != *read;
        let how = match fs::metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Some("removed it"),
            Err(e) => return Err(Error::io(e, "cannot read the file")),
            Ok(now) if !same_file(&now, &self.file.metadata()?) => Some("replaced it"),
            Ok(_) => rewritten.then_some("rewrote it"),
        };
        let Some(how) = how else { return Ok(()) };
        let (doing, redo) = match work {
            Work::Upgrade => ("upgraded", "upgrade"),
            Work::Format => ("formatted", "format"),
            Work::Edit => ("edited", "edit"),
            Work::Restore => ("restored", "restore"),
            Work::Output => {
                return Err(Error::new(
                    ErrorKind::Changed,
                    format!(
                        "the output {} changed while the save was being upgraded into it \
                         (another program {how}), so it is left as that program made it; run \
                         again to decide what to do with it",
                        self.path.display()
                    ),
                ))
            }
        };
        Err(Error::new(
            ErrorKind::Changed,
            format!(
                "the save changed while it was being {doing} (another program {how}), so it \
                 is left as that program made it; run again to {redo} its new content"
            ),
        ))
    }
}

/// Whether `path` (through links) names the file open as `file`.
fn names_file(path: &Path, file: &fs::File) -> bool {
    match (fs::metadata(path), file.metadata()) {
        (Ok(at_path), Ok(open)) => same_file(&at_path, &open),
        _ => false,
    }
}

/// Whether `a` and `b` name the same existing file (through links, or another spelling).
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(ma), Ok(mb)) => same_file(&ma, &mb),
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => a.canonicalize().ok() == b.canonicalize().ok(),
        _ => false,
    }
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    // No portable file identity; the bytes are still compared.
    true
}

/// Opens the file at `path` for reading, refusing anything that is not a regular file (a
/// FIFO, whose opening and reading wait for a writer; a device; a folder) without waiting
/// on it: the type is checked on the descriptor opened.
pub(crate) fn open_regular(path: &Path) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    // Opening a FIFO without O_NONBLOCK waits for a writer.
    #[cfg(target_os = "linux")]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOCTTY,
    );
    #[cfg(not(target_os = "linux"))]
    require_regular(&fs::metadata(path)?)?;
    let file = options.open(path)?;
    require_regular(&file.metadata()?)?;
    Ok(file)
}

/// The bytes of the regular file at `path` ([`open_regular`]).
pub(crate) fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let mut bytes = Vec::with_capacity(file.metadata().map_or(0, |m| m.len() as usize));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// An error unless `metadata` is a regular file's, saying what it is instead.
pub(crate) fn require_regular(metadata: &fs::Metadata) -> io::Result<()> {
    if metadata.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "it is {}, not a regular file",
            kind_of(&metadata.file_type())
        ),
    ))
}

/// What a file that is not a regular file is, in words.
pub(crate) fn kind_of(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        } else if file_type.is_socket() {
            return "a socket";
        } else if file_type.is_char_device() {
            return "a character device";
        } else if file_type.is_block_device() {
            return "a block device";
        }
    }
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "neither a file nor a folder"
    }
}

/// Whether `file_type` is a FIFO, socket or device: what a write never replaces.
fn is_special(file_type: &fs::FileType) -> bool {
    !file_type.is_file() && !file_type.is_dir() && !file_type.is_symlink()
}

#[cfg(test)]
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
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

    /// Flushes its bytes to disk (one file; a group uses [`make_durable`]).
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.temp.as_file().sync_all()
    }

    /// Flushes it, renames it over its file and flushes the folder: the end of an atomic
    /// write of one file. Returns the file renamed, still locked.
    fn commit(self) -> io::Result<fs::File> {
        self.sync()?;
        let dir = self.dir.clone();
        let file = self.rename()?;
        // The file is replaced by now. Failing to flush the folder only weakens durability
        // across a power cut; reporting the write as failed would be wrong, so this is best
        // effort.
        let _ = sync_dir(&dir);
        Ok(file)
    }

    /// Renames the temporary over its file; the folder is not flushed. Returns the file
    /// renamed, still locked, so that the file the path names is locked from the instant
    /// of the rename until it is dropped.
    pub(crate) fn rename(self) -> io::Result<fs::File> {
        #[cfg(test)]
        if let Some(watch) = watch::record(&self.dir, "rename", &self.path) {
            watch?;
        }
        self.temp.persist(&self.path).map_err(|e| e.error)
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
    let existing = fs::metadata(path).ok();
    if let Some(special) = existing.as_ref().filter(|m| is_special(&m.file_type())) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {}, not a regular file, so it is left as it is",
                path.display(),
                kind_of(&special.file_type())
            ),
        ));
    }
    let prefix = temporary_prefix(name);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(TEMPORARY_SUFFIX);
    // A new save gets the mode any new file would (0666 less the umask), not the
    // owner-only mode of a temporary file.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut attempts = 0;
    let mut temp = loop {
        let temp = builder.tempfile_in(dir)?;
        // Held until the file is renamed and closed: another run that finds it while it is
        // being written, or waits for its group's flush, leaves it alone
        // (remove_stale_temporaries).
        // Where the file system has no locks, no run can tell a temporary under way from
        // an abandoned one, and none removes it (remove_if_abandoned cannot lock it).
        match temp.as_file().lock() {
            Err(e) if !locks_unsupported(&e) => return Err(e),
            _ => {}
        }
        // That run removes what no writer holds, and may have removed this one in the
        // instant between its making and its locking: then make another.
        if names_file(temp.path(), temp.as_file()) {
            break temp;
        }
        attempts += 1;
        if attempts == 10 {
            return Err(io::Error::other(
                "another program keeps removing the temporary files made in this folder",
            ));
        }
    };
    temp.write_all(bytes)?;
    let model = existing.or_else(|| like.and_then(|l| fs::metadata(l).ok()));
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
/// killed write left behind: only files named as ours, only when no writer holds them.
/// Returns the files removed.
///
/// A writer locks its temporary before writing to it and keeps the lock until the rename,
/// and a lock dies with its process: a temporary nobody holds is a dead run's, whatever its
/// age. One removed in the instant between its making and its locking is seen by its
/// writer, which makes another ([`write_temporary`]).
pub(crate) fn remove_stale_temporaries(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if !is_temporary(&entry.file_name()) || !entry.file_type()?.is_file() {
            continue;
        }
        let path = entry.path();
        match remove_if_abandoned(&path) {
            Ok(true) => removed.push(path),
            Ok(false) => {}
            // Another run removed it, or its writer renamed it into place, first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// Removes the temporary file at `path` if no writer holds it; whether it did.
fn remove_if_abandoned(path: &Path) -> io::Result<bool> {
    let file = open_regular(path)?;
    if file.try_lock().is_err() {
        return Ok(false);
    }
    // Renamed into place by its writer between the opening and the locking: a save now.
    if !names_file(path, &file) {
        return Ok(false);
    }
    // Removed while locked, so that its writer, if it was just made, sees it gone.
    fs::remove_file(path)?;
    Ok(true)
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

/// For tests: the reads, checks, flushes and renames of files in a watched folder, in
/// order; failures made to order; and something done at a chosen moment (another program
/// writing a save while it is upgraded).
#[cfg(test)]
pub(crate) mod watch {
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    type Action = Arc<dyn Fn(&Path) + Send + Sync>;

    struct Watched {
        dir: PathBuf,
        fail: Option<&'static str>,
        act: Option<(&'static str, Action)>,
        log: Vec<String>,
    }

    static WATCHED: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

    /// Records what is done in `dir` (a folder of a test's own); `fail`: the operation
    /// (`"flush files"`, `"rename"`, `"flush folder"`, `"read"`, `"check"`) that fails
    /// there, each time.
    pub(crate) fn watch(dir: &Path, fail: Option<&'static str>) {
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        watched.retain(|w| w.dir != dir);
        watched.push(Watched {
            dir: dir.to_path_buf(),
            fail,
            act: None,
            log: Vec::new(),
        });
    }

    /// Watches `dir` and runs `action` on the file (or count) of each `operation` there,
    /// just before the operation.
    pub(crate) fn act(
        dir: &Path,
        operation: &'static str,
        action: impl Fn(&Path) + Send + Sync + 'static,
    ) {
        watch(dir, None);
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        let watch = watched
            .iter_mut()
            .find(|w| w.dir == dir)
            .expect("just added");
        watch.act = Some((operation, Arc::new(action)));
    }

    /// What was done in `dir`, in order: `read <name>`, `flush files <count>`,
    /// `rename <name>`, `flush folder`, `check <name>`.
    pub(crate) fn log(dir: &Path) -> Vec<String> {
        let watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        let watch = watched.iter().find(|w| w.dir == dir);
        watch.map(|w| w.log.clone()).unwrap_or_default()
    }

    /// Records `operation` in `dir`, on `what` (a file, a count), after running the action
    /// asked for; `Some` when the folder is watched, with the error asked for.
    pub(super) fn record(dir: &Path, operation: &str, what: &Path) -> Option<io::Result<()>> {
        let action = {
            let watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
            let watch = watched.iter().find(|w| w.dir == dir)?;
            let action = watch.act.as_ref().filter(|(op, _)| *op == operation);
            action.map(|(_, action)| action.clone())
        };
        // Run unlocked: the action may read and write files in the folder.
        if let Some(action) = action {
            action(what);
        }
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        let watch = watched.iter_mut().find(|w| w.dir == dir)?;
        let name = what.file_name().unwrap_or_default().to_string_lossy();
        watch
            .log
            .push(format!("{operation} {name}").trim_end().to_string());
        Some(if watch.fail == Some(operation) {
            Err(io::Error::other(format!(
                "{operation} failed (made to by a test)"
            )))
        } else {
            Ok(())
        })
    }
}

/// [`replace_held`] with the new bytes handed over in pieces by `fill`, which calls the
/// writer it is given once per piece: the new text is never whole in memory (a streamed
/// canonical rewrite). The same rules: a temporary file beside the save, flushed, renamed
/// over it once the save is checked to be unchanged; on any failure, `fill`'s included,
/// the temporary file goes and the save stays as it was.
pub(crate) fn replace_held_streamed(
    path: &Path,
    held: Option<&Held>,
    read: &Fingerprint,
    work: Work,
    fill: impl FnOnce(&mut dyn FnMut(&[u8]) -> crate::Result<()>) -> crate::Result<()>,
) -> crate::Result<()> {
    let write_error = |e| Error::io(e, "cannot write the file");
    let pending = write_temporary_streamed(path, None, write_error, fill)?;
    put_in_place(pending, held, read, work)
}

/// [`write_temporary`] with the bytes handed over in pieces by `fill`, which calls the
/// writer it is given once per piece, through a buffer: a file's text that is made as it
/// is written (an upgraded save's) is never whole in memory. A failure to write is told by
/// `write_error`; on any failure, `fill`'s included (a value that cannot be written), the
/// temporary file is removed and nothing else was touched.
pub(crate) fn write_temporary_streamed(
    path: &Path,
    like: Option<&Path>,
    write_error: impl Fn(io::Error) -> Error,
    fill: impl FnOnce(&mut dyn FnMut(&[u8]) -> crate::Result<()>) -> crate::Result<()>,
) -> crate::Result<Pending> {
    let mut pending = write_temporary(path, &[], like).map_err(&write_error)?;
    #[cfg(test)]
    let full = full_disk::is(&pending.dir);
    let mut out = io::BufWriter::with_capacity(1 << 16, pending.temp.as_file_mut());
    let mut len = 0;
    fill(&mut |piece: &[u8]| {
        len += piece.len();
        out.write_all(piece).map_err(&write_error)?;
        #[cfg(test)]
        if full {
            return Err(write_error(io::Error::other(
                "no space left on the device (made to by a test)",
            )));
        }
        Ok(())
    })?;
    out.flush().map_err(&write_error)?;
    drop(out);
    pending.len = len;
    Ok(pending)
}

/// [`write_atomic`] with the bytes handed over in pieces by `fill`
/// ([`write_temporary_streamed`]): the existing file's lock held, a temporary beside it,
/// flushed, renamed over it, the folder flushed. A failure to write is told by
/// `write_error`; on any failure the temporary goes and the file stays as it was.
pub(crate) fn write_atomic_streamed(
    path: &Path,
    write_error: impl Fn(io::Error) -> Error,
    fill: impl FnOnce(&mut dyn FnMut(&[u8]) -> crate::Result<()>) -> crate::Result<()>,
) -> crate::Result<()> {
    let _held = hold(path, Wait::Forever).map_err(&write_error)?;
    let pending = write_temporary_streamed(path, None, &write_error, fill)?;
    pending.commit().map_err(&write_error)?;
    Ok(())
}

/// For tests: folders where every streamed write ([`write_temporary_streamed`]) fails after
/// its first piece, as on a full disk.
#[cfg(test)]
pub(crate) mod full_disk {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    static FOLDERS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

    /// Makes streamed writes in `dir` (a folder of a test's own) fail midway.
    pub(crate) fn fill(dir: &Path) {
        FOLDERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.to_path_buf());
    }

    pub(super) fn is(dir: &Path) -> bool {
        let folders = FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        folders.iter().any(|f| f == dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt;

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

    #[test]
    fn a_streamed_replace_that_fails_midway_or_finds_the_save_changed_leaves_it_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        fs::write(&path, b"old").unwrap();
        let replace = |fail: bool| {
            let held = hold_save(&path).unwrap();
            let bytes = read_save(&path, held.as_ref()).unwrap();
            let read = Fingerprint::of(&bytes);
            if !fail {
                // Another program writes the save while the new text is streamed.
                fs::write(&path, b"theirs").unwrap();
            }
            replace_held_streamed(&path, held.as_ref(), &read, Work::Format, |sink| {
                sink(b"new ")?;
                sink(b"text")?;
                match fail {
                    true => Err(Error::new(crate::ErrorKind::Usage, "stopped midway")),
                    false => Ok(()),
                }
            })
        };
        let err = replace(true).unwrap_err();
        assert_eq!(err.message(), "stopped midway");
        assert_eq!(fs::read(&path).unwrap(), b"old");
        let err = replace(false).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Changed, "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"theirs");
        // No temporary file is left beside the save.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
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
    fn temporaries_nobody_holds_are_removed_at_once_and_held_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let path = dir.path().join(name);
            fs::write(&path, b"partial").unwrap();
            let file = fs::File::options().write(true).open(&path).unwrap();
            (path, file)
        };
        // Left a moment ago by a killed run: its lock died with it, whatever the file's age.
        let (fresh, _) = make(".c.json.savechain-q1w2e3.tmp");
        let (old, old_file) = make(".a.json.savechain-x1y2z3.tmp");
        old_file
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        let (held, held_file) = make(".b.json.savechain-a1b2c3.tmp");
        held_file.lock().unwrap();
        // Not ours: an editor's swap file, another program's temporary.
        let (foreign, _) = make(".a.json.swp");
        let (other_tmp, _) = make(".a.json.abc123.tmp");
        let mut removed = remove_stale_temporaries(dir.path()).unwrap();
        removed.sort();
        assert_eq!(removed, [old.clone(), fresh.clone()]);
        assert!(!fresh.exists() && !old.exists());
        for kept in [&held, &foreign, &other_tmp] {
            assert!(kept.exists(), "{}", kept.display());
        }
    }

    #[cfg(unix)]
    #[test]
    fn fifos_and_devices_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("a.json");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string, for the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
        for path in [fifo.as_path(), Path::new("/dev/zero")] {
            let e = read_regular(path).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
            assert!(hold(path, Wait::Forever).is_err(), "{}", path.display());
        }
        let e = read_regular(&fifo).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a FIFO (named pipe), not a regular file"
        );
        let e = write_atomic(&fifo, b"x").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = write_atomic_like(&fifo, b"x", None).unwrap_err();
        assert!(e.to_string().contains("is a FIFO (named pipe)"), "{e}");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }

    #[test]
    fn a_writer_waits_for_the_lock_and_then_locks_the_file_renamed_into_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        fs::write(&path, b"first").unwrap();
        let upgrade = hold(&path, Wait::Forever).unwrap().unwrap();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || write_atomic(&path, b"third").unwrap())
        };
        // The upgrade replaces the file while the writer waits on the old one's lock; the
        // new file is locked from the instant it is renamed in.
        std::thread::sleep(Duration::from_millis(100));
        let renamed = write_atomic_like(&path, b"second", None).unwrap();
        drop(upgrade);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            fs::read(&path).unwrap(),
            b"second",
            "the writer waits still"
        );
        drop(renamed);
        writer.join().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"third");
        // An upgrade waits a while at most.
        let _writer = hold(&path, Wait::Forever).unwrap().unwrap();
        let e = hold_save(&path).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Changed);
        assert!(
            e.to_string()
                .contains("another program held the save's lock"),
            "{e}"
        );
    }

    #[test]
    fn a_held_file_that_another_program_changed_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        for (how, change) in [("rewrote it", 0), ("replaced it", 1), ("removed it", 2)] {
            fs::write(&path, b"old").unwrap();
            let held = hold_save(&path).unwrap().unwrap();
            let read = Fingerprint::of(&held.read().unwrap());
            held.check_unchanged(&read, Work::Upgrade).unwrap();
            match change {
                0 => fs::write(&path, b"new").unwrap(),
                1 => {
                    fs::write(dir.path().join("b"), b"new").unwrap();
                    fs::rename(dir.path().join("b"), &path).unwrap();
                }
                _ => fs::remove_file(&path).unwrap(),
            }
            let e = held.check_unchanged(&read, Work::Upgrade).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Changed);
            assert!(
                e.to_string().contains(&format!(
                    "the save changed while it was being upgraded (another program {how})"
                )),
                "{e}"
            );
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

    #[test]
    fn a_backup_name_is_reused_only_by_a_file_with_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let save = dir.path().join("a.json");
        let named = |name: &str| dir.path().join(name);
        assert_eq!(
            backup_path(&save, Some("v1"), b"abc"),
            named("a.json.v1.bak")
        );
        fs::write(named("a.json.v1.bak"), b"abc").unwrap();
        assert_eq!(
            backup_path(&save, Some("v1"), b"abc"),
            named("a.json.v1.bak")
        );
        // The same length, other bytes; a prefix; a longer text; nothing.
        for other in [&b"abd"[..], b"ab", b"abcd", b""] {
            fs::write(named("a.json.v1.bak"), other).unwrap();
            assert_eq!(
                backup_path(&save, Some("v1"), b"abc"),
                named("a.json.v1.1.bak"),
                "{other:?}"
            );
        }
        assert_eq!(backup_path(&save, Some("v1"), b""), named("a.json.v1.bak"));
        // Larger than one piece read, differing in the last byte only.
        let big = vec![7u8; (1 << 18) + 5];
        let mut last = big.clone();
        *last.last_mut().unwrap() = 8;
        fs::write(named("a.json.bak"), &last).unwrap();
        assert_eq!(backup_path(&save, None, &big), named("a.json.1.bak"));
        fs::write(named("a.json.1.bak"), &big).unwrap();
        assert_eq!(backup_path(&save, None, &big), named("a.json.1.bak"));
        assert_eq!(backup_path(&save, None, &last), named("a.json.bak"));
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
