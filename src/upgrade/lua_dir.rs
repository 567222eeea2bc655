//! Steps read from a folder: `NNNN-short-description.lua` files (Lua steps) and
//! `NNNN-short-description.json` files (declared steps), each moving a save from version
//! NNNN to NNNN + 1, and the helper modules in its subfolders, read into memory once so
//! that what runs is what the chain's identity was made from. Nothing outside the folder is
//! read: a link that leads out of it is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::declared::{self, Declaration};
use crate::error::{Error, ErrorKind, Result};
use crate::lua::Chunk;

/// The helper modules of a steps folder, by the name `require` knows them by.
#[derive(Debug, Default)]
pub(crate) struct Modules {
    /// Module name (`lib.util`) to the file it came from and its source.
    pub(crate) by_name: BTreeMap<String, Module>,
}

#[derive(Debug)]
pub(crate) struct Module {
    pub(crate) file: PathBuf,
    /// Its source, compiled once for every save's sandbox.
    pub(crate) chunk: Arc<Chunk>,
}

impl Module {
    pub(crate) fn new(file: PathBuf, source: Vec<u8>) -> Module {
        let chunk = Arc::new(Chunk::of_file(&file.display().to_string(), source));
        Module { file, chunk }
    }

    pub(crate) fn source(&self) -> &[u8] {
        self.chunk.source()
    }
}

/// Folders below a steps folder are searched this deep for helper modules.
const MAX_MODULE_DEPTH: usize = 16;
/// More helper files than this means the folder is probably not a steps folder.
const MAX_MODULES: usize = 10_000;

/// The version a Lua step file (`NNNN-short-description.lua`) starts from, if its name is
/// well formed.
pub(crate) fn parse_name(file_name: &str) -> Option<u64> {
    parse_stem(file_name.strip_suffix(".lua")?)
}

/// The version a declared step file (`NNNN-short-description.json`) starts from, if its
/// name is well formed.
pub(crate) fn parse_declared_name(file_name: &str) -> Option<u64> {
    parse_stem(file_name.strip_suffix(".json")?)
}

/// The version of a step file's name without its extension (`NNNN-short-description`).
fn parse_stem(stem: &str) -> Option<u64> {
    let (digits, words) = stem.split_once('-')?;
    let well_formed = digits.len() == 4
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !words.is_empty()
        && words
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    well_formed.then(|| digits.parse().ok()).flatten()
}

/// Whether a file directly in a steps folder is meant as a step: its extension is `.lua` in
/// any case, or its name starts with a digit. Hidden files (an editor's swap and lock files)
/// are not.
fn looks_like_step(file_name: &str) -> bool {
    let lua_extension = file_name
        .rsplit_once('.')
        .is_some_and(|(_, ext)| ext.eq_ignore_ascii_case("lua"));
    !file_name.starts_with('.')
        && (lua_extension || file_name.starts_with(|c: char| c.is_ascii_digit()))
}

/// The error for a step file whose name is not `NNNN-short-description.lua`, with a hint
/// that fits the name.
pub(crate) fn misnamed(file: impl AsRef<Path>) -> Error {
    let file = file.as_ref();
    let name = file
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let hint = match name.rsplit_once('.') {
        Some((_, "lua")) => "helper modules go in a subfolder",
        Some((_, ext)) if ext.eq_ignore_ascii_case("lua") => "the extension is .lua, in lowercase",
        Some((_, "json")) => {
            "a .json file whose name starts with a digit is taken for a declared step"
        }
        Some((_, ext)) if ext.eq_ignore_ascii_case("json") => {
            "the extension is .json, in lowercase"
        }
        _ => {
            "a file whose name starts with a digit is taken for a step: keep others out of the \
             steps folder"
        }
    };
    Error::new(
        ErrorKind::Upgrade,
        format!(
            "not a step file name: expected NNNN-short-description.lua, or .json for a declared \
             step (four digits, the version it upgrades from, then lowercase words joined by \
             '-'); {hint}"
        ),
    )
    .with_file(file)
    .in_step(&name, None)
}

/// The first line's `--` comment, or the words of the file name.
pub(crate) fn description(file_name: &str, source: &[u8]) -> String {
    let first_line = source.split(|&b| b == b'\n').next().unwrap_or_default();
    if let Some(comment) = first_line.strip_prefix(b"--") {
        let comment = String::from_utf8_lossy(comment);
        let comment = comment.trim();
        if !comment.is_empty() {
            return comment.to_string();
        }
    }
    let stem = file_name.strip_suffix(".lua").unwrap_or(file_name);
    let stem = stem.strip_suffix(".json").unwrap_or(stem);
    let words = stem.split_once('-').map_or(stem, |(_, w)| w);
    words.replace('-', " ")
}

/// A step file of a folder, read.
pub(crate) struct StepFile {
    /// The version it upgrades from.
    pub(crate) from: u64,
    pub(crate) file_name: String,
    pub(crate) description: String,
    pub(crate) body: Body,
}

/// What a step file holds.
pub(crate) enum Body {
    /// A Lua step's source, compiled.
    Lua(Arc<Chunk>),
    /// A declared step's changes, and the file's path.
    Declared {
        declaration: Arc<Declaration>,
        path: PathBuf,
    },
}

/// The step files of `dir`, in name order, and the folder's helper modules; a file that
/// looks like a step ([`looks_like_step`]) but is not named as one is an error.
pub(crate) fn read(dir: &Path) -> Result<(Vec<StepFile>, Arc<Modules>)> {
    let entries = list(dir)?;
    let root = Root::of(dir)?;
    let modules = Arc::new(read_modules(&root)?);
    let mut steps = Vec::new();
    for (path, file_name) in entries {
        // Folders hold helper modules. A file that looks like a step must be named as one:
        // skipping it would end the chain early, or leave a gap, without a word.
        if !looks_like_step(&file_name) || path.is_dir() {
            continue;
        }
        if let Some(from) = parse_declared_name(&file_name) {
            let text = root.read(&path)?;
            let file = declared::read_file(&path, &text)?;
            steps.push(StepFile {
                from,
                description: file
                    .description
                    .unwrap_or_else(|| description(&file_name, b"")),
                body: Body::Declared {
                    declaration: Arc::new(file.declaration),
                    path,
                },
                file_name,
            });
            continue;
        }
        let from = parse_name(&file_name).ok_or_else(|| misnamed(&path))?;
        let source = root.read(&path)?;
        steps.push(StepFile {
            from,
            description: description(&file_name, &source),
            body: Body::Lua(Arc::new(Chunk::of_file(
                &path.display().to_string(),
                source,
            ))),
            file_name,
        });
    }
    Ok((steps, modules))
}

/// The steps folder, which everything read must be inside.
struct Root {
    dir: PathBuf,
    real: PathBuf,
}

impl Root {
    fn of(dir: &Path) -> Result<Root> {
        let real = dir
            .canonicalize()
            .map_err(|e| Error::io(e, "cannot read the upgrades folder").with_file(dir))?;
        Ok(Root {
            dir: dir.to_path_buf(),
            real,
        })
    }

    /// Where `path` really is (links followed), if that is inside the folder: a step or a
    /// helper that is a link out of it could read a player's files into a save.
    fn inside(&self, path: &Path) -> Result<PathBuf> {
        let real = path
            .canonicalize()
            .map_err(|e| Error::io(e, "cannot read the file").with_file(path))?;
        if !real.starts_with(&self.real) {
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!(
                    "a link to {}, outside the upgrades folder {}: steps and their helper modules \
                     are read only from inside it (copy the file in instead)",
                    real.display(),
                    self.dir.display()
                ),
            )
            .with_file(path));
        }
        Ok(real)
    }

    /// The bytes of the file at `path`, inside the folder.
    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        let real = self.inside(path)?;
        // Reading a FIFO or a device could wait forever.
        if !real.is_file() {
            return Err(Error::new(ErrorKind::Upgrade, "not a regular file").with_file(path));
        }
        std::fs::read(&real).map_err(|e| Error::io(e, "cannot read the file").with_file(path))
    }
}

/// The entries of a folder, sorted by name: paths and file names.
fn list(dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::io(e, "cannot read the upgrades folder").with_file(dir))?;
    let mut listed = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(e, "cannot read the folder").with_file(dir))?;
        listed.push((
            entry.path(),
            entry.file_name().to_string_lossy().into_owned(),
        ));
    }
    listed.sort();
    Ok(listed)
}

/// Whether `part` can be one dot-separated part of a module name.
pub(crate) fn is_module_part(part: &str) -> bool {
    !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Every module a step of `dir` could `require`: `dir/a/b.lua` is `a.b`. Files whose path
/// cannot be a module name are left out, since no `require` can reach them.
fn read_modules(root: &Root) -> Result<Modules> {
    let mut modules = Modules::default();
    let mut seen = Vec::new();
    for (path, name) in list(&root.dir)? {
        if is_module_part(&name) && path.is_dir() {
            read_module_dir(root, &path, &name, 1, &mut seen, &mut modules)?;
        }
    }
    Ok(modules)
}

fn read_module_dir(
    root: &Root,
    dir: &Path,
    prefix: &str,
    depth: usize,
    seen: &mut Vec<PathBuf>,
    modules: &mut Modules,
) -> Result<()> {
    // Symbolic links inside the folder are followed; a folder reached twice (a loop) is
    // read once.
    let canonical = root.inside(dir)?;
    if depth > MAX_MODULE_DEPTH || seen.contains(&canonical) {
        return Ok(());
    }
    seen.push(canonical);
    for (path, name) in list(dir)? {
        if path.is_dir() {
            if is_module_part(&name) {
                let prefix = format!("{prefix}.{name}");
                read_module_dir(root, &path, &prefix, depth + 1, seen, modules)?;
            }
            continue;
        }
        let Some(stem) = name.strip_suffix(".lua") else {
            continue;
        };
        if !is_module_part(stem) {
            continue;
        }
        if modules.by_name.len() == MAX_MODULES {
            return Err(Error::new(
                ErrorKind::Upgrade,
                format!(
                    "more than {MAX_MODULES} Lua files below the steps folder; is it the right folder?"
                ),
            )
            .with_file(dir));
        }
        let source = root.read(&path)?;
        modules
            .by_name
            .insert(format!("{prefix}.{stem}"), Module::new(path, source));
    }
    Ok(())
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
            description("0003-change-units.lua", b"local x\n"),
            "change units"
        );
        assert_eq!(
            description("0003-change-units.lua", b"-- Fuel in m3.\nreturn"),
            "Fuel in m3."
        );
    }

    #[test]
    fn files_that_look_like_steps() {
        for name in [
            "0001-a.lua",
            "0001-a.LUA",
            "x.Lua",
            "util.lua",
            "2-a.lua",
            "0002-a.lua.bak",
            "9",
        ] {
            assert!(looks_like_step(name), "{name}");
        }
        for name in [
            "README.md",
            "notes.txt",
            ".0001-a.lua.swp",
            ".#0001-a.lua",
            "lua",
            "x.luac",
        ] {
            assert!(!looks_like_step(name), "{name}");
        }
    }

    #[test]
    fn helper_modules_are_every_file_a_require_can_reach() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, format!("-- {name}")).unwrap();
        };
        for name in [
            "0001-a.lua",
            "lib/util.lua",
            "lib/deep/more.lua",
            "lib/not-a-module.lua",
            "lib/notes.txt",
            "bad-dir/x.lua",
        ] {
            write(name);
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("lib"), dir.path().join("lib/deep/loop"))
            .unwrap();
        let modules = read_modules(&Root::of(dir.path()).unwrap()).unwrap();
        let names: Vec<&str> = modules.by_name.keys().map(String::as_str).collect();
        assert_eq!(names, ["lib.deep.more", "lib.util"]);
        assert_eq!(modules.by_name["lib.util"].source(), b"-- lib/util.lua");
    }
}
