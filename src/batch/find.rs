//! Paths given by a user to the save files a batch works on: folders searched for saves
//! (links followed, loops left out), each file once, in path order.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::fsio;

/// A save file found, and where it sits below the path it was found through (its file name
/// when it was named directly): its place under an output folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The path to read it by, through the folder it was found in.
    pub path: PathBuf,
    /// Its path below the folder given (its file name when the file itself was given).
    pub relative: PathBuf,
    /// The file itself, links resolved: what makes two paths the same save.
    pub(crate) canonical: PathBuf,
    /// Whether it was named itself (on a command line), rather than found in a folder or
    /// read from a list: a file named that is not a save is an error, where one found is
    /// skipped ([`Found::skips`]).
    pub named: bool,
}

impl Found {
    /// Whether `error`, this file's, means it is left out rather than failed: it is not a
    /// save ([`ErrorKind::NotASave`], by the definition of `docs/FORMAT.md`, section 1) and
    /// it was found by a search, not named itself. The one rule for every command that
    /// meets files in folders.
    pub fn skips(&self, error: &Error) -> bool {
        error.kind() == ErrorKind::NotASave && !self.named
    }
}

/// What a search of the paths given found.
#[derive(Debug, Default)]
pub(crate) struct Search {
    /// The saves, in path order, each file once.
    pub(crate) saves: Vec<Found>,
    /// What was left out on purpose, and why: a link back to a folder above it, a file
    /// found twice, an excluded file.
    pub(crate) skipped: Vec<(PathBuf, String)>,
    /// What could not be read (a missing path, a broken link, a folder without permission).
    pub(crate) errors: Vec<Error>,
    /// Every folder searched or holding a file given, links resolved: where a writing run
    /// removes what killed writes left behind.
    pub(crate) folders: BTreeSet<PathBuf>,
    /// The folders searched, links resolved: an output folder may lie inside none of them.
    pub(crate) searched: BTreeSet<PathBuf>,
}

/// Folders of the system's own pseudo-files, which a link in a saves folder may lead into:
/// endless or huge, and never saves.
const SYSTEM_FOLDERS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Whether `folder` (resolved) holds the system's own pseudo-files: in [`SYSTEM_FOLDERS`],
/// but not `/dev/shm`, a file system in memory like any other.
fn is_system_folder(folder: &Path) -> bool {
    !folder.starts_with("/dev/shm") && SYSTEM_FOLDERS.iter().any(|s| folder.starts_with(s))
}

/// The endings of the names a folder's search takes as saves, in any case: plain text, and
/// the same text compressed ([`crate::compress`]). Backups (`*.bak`) and caches (`*.cache`)
/// of any of them end otherwise, so a search never takes them.
const SAVE_ENDINGS: [&str; 3] = [".json", ".json.zst", ".json.gz"];

/// How long the ending of `name` that makes it a save's is ([`SAVE_ENDINGS`], any case):
/// `Some(5)` for `a.json`, `Some(9)` for `a.JSON.zst`, `None` for `a.json.v1.bak`. A name
/// that is nothing but the ending (`.json`) has none.
pub(crate) fn save_ending(name: &str) -> Option<usize> {
    SAVE_ENDINGS.iter().map(|e| e.len()).find(|&len| {
        let Some(at) = name.len().checked_sub(len).filter(|&at| at > 0) else {
            return false;
        };
        let ending = name.as_bytes()[at..].to_ascii_lowercase();
        SAVE_ENDINGS.iter().any(|e| e.as_bytes() == ending)
    })
}

/// Whether a file met inside a folder is a save: `*.json`, `*.json.zst` or `*.json.gz` in
/// any case, not hidden (the temporary files of atomic writes are hidden).
fn looks_like_a_save(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    !name.starts_with('.') && save_ending(&name).is_some()
}

/// Finds the saves of `roots`: a file is taken whatever its name; a folder is searched
/// with its subfolders for `*.json`, `*.json.zst` and `*.json.gz` files (any case, not
/// hidden), following links to files
/// and folders, leaving out links back to a folder above them. What is not a regular file
/// (a FIFO, a device, a socket) is never read: left out of a folder's search with a note
/// in [`Search::skipped`], and an error when given itself. A file reached twice (two
/// links, `dir/./a.json`, the same file named twice) is taken once, by the first path in
/// path order. Files and folders whose resolved path is in `exclude` (a report, an output
/// folder) are left out. A root that yields no saves is an error that says so. The first
/// `named` roots were named on a command line ([`Found::named`]); the others come from a
/// list.
pub(crate) fn find_saves(roots: &[impl AsRef<Path>], named: usize, exclude: &[PathBuf]) -> Search {
    let exclude: HashSet<PathBuf> = exclude
        .iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .collect();
    let mut search = Search::default();
    let mut candidates = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let root = root.as_ref();
        let before = candidates.len();
        let errors_before = search.errors.len();
        match fs::metadata(root) {
            Err(e) => search
                .errors
                .push(Error::io(e, "cannot read it").with_file(root)),
            Ok(m) if m.is_dir() => {
                let mut walk = Walk {
                    exclude: &exclude,
                    search: &mut search,
                    found: &mut candidates,
                    ancestors: Vec::new(),
                };
                walk.folder(root, root);
            }
            Ok(m) if !m.is_file() => {
                let what = fsio::kind_of(&m.file_type());
                let why = format!("it is {what}, not a regular file, so it is not read");
                search
                    .errors
                    .push(Error::new(ErrorKind::Io, why).with_file(root));
            }
            Ok(_) => {
                let name = root.file_name().map_or(root.into(), PathBuf::from);
                let named = i < named;
                push_file(root, name, named, &exclude, &mut search, &mut candidates);
                let canonical = fs::canonicalize(root).ok();
                if let Some(folder) = canonical.as_deref().and_then(Path::parent) {
                    search.folders.insert(folder.to_path_buf());
                }
            }
        }
        if candidates.len() == before && search.errors.len() == errors_before {
            search.errors.push(
                Error::new(
                    ErrorKind::Usage,
                    "no saves here: no *.json, *.json.zst or *.json.gz files (in any case, \
                     hidden ones left out) in it or its subfolders",
                )
                .with_file(root),
            );
        }
    }
    take_each_once(candidates, &mut search);
    // A path given itself and also met in a folder given (a FIFO) is told once, as an error.
    let failed: HashSet<PathBuf> = search
        .errors
        .iter()
        .filter_map(|e| e.file().and_then(|f| fs::canonicalize(f).ok()))
        .collect();
    if !failed.is_empty() {
        search
            .skipped
            .retain(|(path, _)| fs::canonicalize(path).map_or(true, |c| !failed.contains(&c)));
    }
    search
}

/// Puts each file of `candidates` in `search.saves` once, in path order, and the other
/// paths to it in `search.skipped`. A file reached by several paths is taken by the path
/// that is not itself a link, so that its backup sits beside it, or else by the first in
/// path order.
fn take_each_once(mut candidates: Vec<Found>, search: &mut Search) {
    // Only a file reached twice needs to know which of its paths are links: a look at the
    // disk for each of those, none for the others.
    let mut reached = std::collections::HashMap::<&Path, usize>::new();
    for found in &candidates {
        *reached.entry(found.canonical.as_path()).or_default() += 1;
    }
    let repeated: HashSet<PathBuf> = reached
        .into_iter()
        .filter(|&(_, count)| count > 1)
        .map(|(canonical, _)| canonical.to_path_buf())
        .collect();
    let is_link = |f: &Found| {
        repeated.contains(&f.canonical)
            && fs::symlink_metadata(&f.path).is_ok_and(|m| m.is_symlink())
    };
    candidates.sort_by_cached_key(|f| (is_link(f), f.path.clone()));
    let mut taken: std::collections::HashMap<PathBuf, PathBuf> = Default::default();
    let mut repeats = Vec::new();
    for found in candidates {
        let why = match taken.get(&found.canonical) {
            None => {
                taken.insert(found.canonical.clone(), found.path.clone());
                search.saves.push(found);
                continue;
            }
            Some(first) if *first == found.path => "named twice".to_string(),
            Some(first) => format!("the same file as {}", first.display()),
        };
        repeats.push((found.path, why));
    }
    repeats.sort();
    search.skipped.extend(repeats);
    search.saves.sort_by(|a, b| a.path.cmp(&b.path));
}

fn push_file(
    path: &Path,
    relative: PathBuf,
    named: bool,
    exclude: &HashSet<PathBuf>,
    search: &mut Search,
    found: &mut Vec<Found>,
) {
    push_resolved(
        path,
        fs::canonicalize(path),
        relative,
        named,
        exclude,
        search,
        found,
    );
}

/// [`push_file`] for a file whose resolved path, `canonical`, is known already.
fn push_resolved(
    path: &Path,
    canonical: std::io::Result<PathBuf>,
    relative: PathBuf,
    named: bool,
    exclude: &HashSet<PathBuf>,
    search: &mut Search,
    found: &mut Vec<Found>,
) {
    match canonical {
        Ok(canonical) if exclude.contains(&canonical) => search
            .skipped
            .push((path.to_path_buf(), "written by this run".to_string())),
        Ok(canonical) => found.push(Found {
            path: path.to_path_buf(),
            relative,
            canonical,
            named,
        }),
        Err(e) => search
            .errors
            .push(Error::io(e, "cannot read it").with_file(path)),
    }
}

/// The search below one root.
struct Walk<'a> {
    exclude: &'a HashSet<PathBuf>,
    search: &'a mut Search,
    found: &'a mut Vec<Found>,
    /// The resolved folders from the root down to the one being read: a link to one of
    /// them would loop.
    ancestors: Vec<PathBuf>,
}

impl Walk<'_> {
    fn folder(&mut self, path: &Path, root: &Path) {
        let canonical = match fs::canonicalize(path) {
            Ok(c) => c,
            Err(e) => {
                let error = Error::io(e, "cannot read the folder").with_file(path);
                return self.search.errors.push(error);
            }
        };
        if self.exclude.contains(&canonical) {
            let why = "written by this run".to_string();
            return self.search.skipped.push((path.to_path_buf(), why));
        }
        // A folder given (the first of the ancestors) is searched wherever it is.
        let given = self.ancestors.first();
        if is_system_folder(&canonical) && given.is_some_and(|g| !is_system_folder(g)) {
            let why = "a link into the system's own files".to_string();
            return self.search.skipped.push((path.to_path_buf(), why));
        }
        if self.ancestors.contains(&canonical) {
            let why = "a link back to a folder above it".to_string();
            return self.search.skipped.push((path.to_path_buf(), why));
        }
        let mut entries = match fs::read_dir(path).and_then(|d| d.collect::<Result<Vec<_>, _>>()) {
            Ok(entries) => entries,
            Err(e) => {
                let error = Error::io(e, "cannot read the folder").with_file(path);
                return self.search.errors.push(error);
            }
        };
        entries.sort_by_key(|e| e.file_name());
        self.search.folders.insert(canonical.clone());
        self.search.searched.insert(canonical.clone());
        self.ancestors.push(canonical);
        for entry in entries {
            let name = entry.file_name();
            if fsio::is_temporary(&name) {
                continue;
            }
            let child = entry.path();
            // A regular file that is not a link, as the folder's listing says (no look at
            // the file itself): it sits in the resolved folder under its own name. A
            // folder of thousands of saves is planned without a call to the disk a save.
            let plain_file = entry.file_type().is_ok_and(|t| t.is_file());
            if plain_file && looks_like_a_save(&name) {
                let canonical = self.ancestors.last().expect("pushed above").join(&name);
                let relative = child.strip_prefix(root).unwrap_or(&child).to_path_buf();
                let (exclude, search) = (self.exclude, &mut *self.search);
                push_resolved(
                    &child,
                    Ok(canonical),
                    relative,
                    false,
                    exclude,
                    search,
                    self.found,
                );
                continue;
            }
            // Follows links: a link to a folder is searched, a link to a file taken.
            match fs::metadata(&child) {
                Ok(m) if m.is_dir() => {
                    if !name.to_string_lossy().starts_with('.') {
                        self.folder(&child, root);
                    }
                }
                // A FIFO named *.json would make the run wait for a writer forever.
                Ok(m) if looks_like_a_save(&name) && !m.is_file() => {
                    let what = fsio::kind_of(&m.file_type());
                    let why = format!("{what}, not a regular file");
                    self.search.skipped.push((child, why));
                }
                Ok(_) if looks_like_a_save(&name) => {
                    let relative = child.strip_prefix(root).unwrap_or(&child).to_path_buf();
                    let (exclude, search) = (self.exclude, &mut *self.search);
                    push_file(&child, relative, false, exclude, search, self.found);
                }
                Ok(_) => {}
                Err(e) if looks_like_a_save(&name) => {
                    // ELOOP: the link leads to itself, one way or another.
                    let what = if e.raw_os_error() == Some(40) {
                        "a link that loops"
                    } else if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                        "a link to nothing"
                    } else {
                        "cannot read it"
                    };
                    self.search
                        .errors
                        .push(Error::io(e, what).with_file(&child));
                }
                Err(_) => {}
            }
        }
        self.ancestors.pop();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn names(search: &Search, root: &Path) -> Vec<String> {
        search
            .saves
            .iter()
            .map(|f| f.path.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn folders_as_users_have_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |p: &str| {
            let path = root.join(p);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "{}").unwrap();
        };
        write("saves/a.json");
        write("saves/UPPER.JSON");
        write("saves/notes.txt");
        write("saves/.hidden.json");
        write("saves/.a.json.savechain-abc123.tmp");
        write("saves/a.json.v1.bak");
        write("saves/sub/b.json");
        write("elsewhere/c.json");
        write("saves/report.json");
        symlink(
            root.join("elsewhere/c.json"),
            root.join("saves/linked.json"),
        )
        .unwrap();
        symlink(root.join("elsewhere"), root.join("saves/linked-folder")).unwrap();
        symlink(root.join("saves"), root.join("saves/sub/loop")).unwrap();
        symlink(root.join("missing.json"), root.join("saves/broken.json")).unwrap();
        symlink(root.join("saves/a.json"), root.join("saves/twin.json")).unwrap();

        let search = find_saves(&[root.join("saves")], 1, &[root.join("saves/report.json")]);
        assert_eq!(
            names(&search, &root.join("saves")),
            ["UPPER.JSON", "a.json", "linked-folder/c.json", "sub/b.json"]
        );
        let skipped: Vec<String> = search
            .skipped
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.strip_prefix(root).unwrap().display()))
            .collect();
        let root_text = root.display().to_string();
        assert_eq!(
            skipped,
            [
                "saves/report.json: written by this run".to_string(),
                "saves/sub/loop: a link back to a folder above it".to_string(),
                format!(
                    "saves/linked.json: the same file as {root_text}/saves/linked-folder/c.json"
                ),
                format!("saves/twin.json: the same file as {root_text}/saves/a.json"),
            ]
        );
        assert_eq!(search.errors.len(), 1);
        assert!(search.errors[0]
            .to_string()
            .contains("broken.json: a link to nothing"));
        let found = &search.saves[2];
        assert_eq!(found.relative, Path::new("linked-folder/c.json"));
    }

    /// Compressed saves are found as plain ones; their backups, caches and temporaries are
    /// not, nor a name that is only an ending.
    #[test]
    fn compressed_saves_are_found_and_what_is_written_beside_them_is_not() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "a.json.zst",
            "b.JSON.GZ",
            "c.json",
            "a.json.zst.v1.bak",
            "a.json.zst.v1.2.bak",
            "b.JSON.GZ.bak",
            "a.json.zst.cache",
            ".a.json.zst.savechain-abc123.tmp",
            "d.zst",
            "e.json.zstd",
            "f.gz",
        ] {
            fs::write(dir.path().join(name), "{}").unwrap();
        }
        fs::create_dir(dir.path().join(".json.zst")).unwrap();
        fs::write(dir.path().join(".json.zst/g.json.gz"), "{}").unwrap();
        let search = find_saves(&[dir.path()], 1, &[]);
        assert_eq!(
            names(&search, dir.path()),
            ["a.json.zst", "b.JSON.GZ", "c.json"]
        );
        let backup = crate::fsio::backup_path(&dir.path().join("a.json.zst"), Some("v1"), b"x");
        assert!(save_ending(&backup.file_name().unwrap().to_string_lossy()).is_none());
        let cache = crate::cache::cache_path(dir.path().join("a.json.zst"));
        assert!(save_ending(&cache.file_name().unwrap().to_string_lossy()).is_none());
        assert_eq!(save_ending(".json"), None);
        assert_eq!(save_ending("x.json.gz"), Some(8));
    }

    #[test]
    fn the_same_file_named_twice_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        fs::write(&a, "{}").unwrap();
        let dotted = dir.path().join(".").join("a.json");
        let search = find_saves(&[a.clone(), dotted, a.clone()], 3, &[]);
        assert_eq!(search.saves.len(), 1);
        assert_eq!(search.skipped.len(), 2);
        assert_eq!(search.skipped[0].1, "named twice");
        // A file named directly is taken whatever its extension.
        let other = dir.path().join("world.save");
        fs::write(&other, "{}").unwrap();
        assert_eq!(find_saves(&[other], 1, &[]).saves.len(), 1);
    }

    /// A file found in a folder is known by its resolved path without a look at it (its
    /// folder's, resolved, and its name): the same as the path of the file named itself,
    /// through a link to its folder or not, so each file is still taken once.
    #[test]
    fn a_file_found_in_a_folder_reached_through_a_link_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::write(real.join("a.json"), "{}").unwrap();
        let link = dir.path().join("link");
        symlink(&real, &link).unwrap();
        let named = dir.path().join("real/../real/a.json");
        let search = find_saves(&[link.clone(), named], 1, &[]);
        assert_eq!(search.saves.len(), 1, "{:?}", search.saves);
        let found = &search.saves[0];
        assert_eq!(
            found.canonical,
            fs::canonicalize(real.join("a.json")).unwrap()
        );
        assert_eq!(search.skipped.len(), 1, "{:?}", search.skipped);
        assert!(search.skipped[0].1.starts_with("the same file as"));
        // Excluded by its resolved path, though found through the link.
        let search = find_saves(&[&link], 1, &[real.join("a.json")]);
        assert!(search.saves.is_empty());
        assert_eq!(search.skipped[0].1, "written by this run");
    }

    /// A link from a saves folder into `/proc` is not followed; a folder given in memory
    /// (`/dev/shm`), or given inside `/dev`, is searched.
    #[test]
    fn system_folders_are_left_out_only_when_a_link_leads_there() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.json"), "{}").unwrap();
        symlink("/proc", dir.path().join("proc")).unwrap();
        let search = find_saves(&[dir.path()], 1, &[]);
        assert_eq!(search.saves.len(), 1);
        assert_eq!(search.skipped.len(), 1);
        assert_eq!(search.skipped[0].1, "a link into the system's own files");
        if Path::new("/dev/shm").is_dir() {
            let in_memory = tempfile::tempdir_in("/dev/shm").unwrap();
            fs::write(in_memory.path().join("b.json"), "{}").unwrap();
            let search = find_saves(&[in_memory.path()], 1, &[]);
            assert_eq!(names(&search, in_memory.path()), ["b.json"]);
            assert!(search.errors.is_empty(), "{:?}", search.errors);
        }
    }

    #[test]
    fn a_path_without_saves_is_an_error_that_says_so() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("settings.txt"), "x").unwrap();
        let search = find_saves(&[dir.path()], 1, &[]);
        assert!(search.saves.is_empty());
        assert_eq!(search.errors.len(), 1);
        assert_eq!(search.errors[0].kind(), ErrorKind::Usage);
        assert!(search.errors[0].to_string().contains("no saves here"));
        let missing = find_saves(&[dir.path().join("nope")], 1, &[]);
        assert_eq!(missing.errors.len(), 1);
        assert!(missing.errors[0].to_string().contains("cannot read it"));
    }
}
