//! The error of loading and writing saves: what went wrong, in which file, where in the text
//! and where in the document.

use std::fmt;
use std::path::{Path as FsPath, PathBuf};

use crate::path::Path;

/// What kind of problem an [`Error`] is, for callers that react differently to each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing a file failed.
    Io,
    /// The text is not strict JSON (or not UTF-8).
    Syntax,
    /// Valid JSON that holds something a save cannot: a malformed tag, an integer out of
    /// range, a duplicate key, nesting that is too deep.
    Value,
    /// A save whose envelope is broken: `meta.version` is a negative integer or too large,
    /// `meta.writer` is not a semantic version.
    Envelope,
    /// JSON that is not a save at all (`docs/FORMAT.md`, section 1): its top level is not
    /// an object whose only members are `meta` and `data`, `meta` an object holding an
    /// integer `version` (a settings file beside the saves, a sprite sheet whose
    /// `meta.version` is a string, settings with a `meta.version` and members of their
    /// own), whatever else it holds. Tools that go through folders skip it ([`Found::skips`]).
    ///
    /// [`Found::skips`]: crate::batch::Found::skips
    NotASave,
    /// Files and folders that cannot be worked on as asked: an output folder that overlaps
    /// a source, two saves that would be written to the same output, a folder with no
    /// saves, an output that holds something else than the upgrade writes
    /// ([`Options::replace_outputs`](crate::Options::replace_outputs)).
    Usage,
    /// Lua failed: a script raised an error or ran out of its budget, or a Lua value has no
    /// place in a save (a function, a table with an unregistered metatable).
    Lua,
    /// The upgrade chain is malformed, a save's version is outside it, or a step failed.
    Upgrade,
    /// Another program wrote the file while it was being upgraded or formatted, or held
    /// the file's lock too long: the file was left as the other program has it, and
    /// running again does the work on its new content.
    Changed,
    /// A shape ([`crate::shape`]) is malformed or cannot be made (a type with no shape, a
    /// folder of saves of several versions), or a save or a hand edit does not match the
    /// shape the game reads.
    Shape,
    /// A compressed save ([`crate::compress`]) is damaged (truncated, corrupt, a failed
    /// checksum) or decompresses to more than the limit; nothing of it was read.
    Compressed,
}

/// Why Lua failed, so that a game can tell a script that ran out of a limit from one that
/// raised an error or left something a save cannot hold: [`Error::lua_failure`], on errors
/// of kind [`ErrorKind::Lua`] and on those of kind [`ErrorKind::Upgrade`] that a Lua step
/// caused.
///
/// ```
/// use savechain::upgrade::{Chain, Step};
/// use savechain::{LuaFailure, Options, Save};
///
/// let chain = Chain::new("1.0.0", vec![Step::lua("0001-spin.lua", "return function() while true do end end")?])?;
/// let mut options = Options::default();
/// options.limits = savechain::lua::Limits::new(1_000_000, 64 << 20);
/// let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#)?;
/// let err = chain.upgrader().upgrade(save, &options).unwrap_err();
/// assert_eq!(err.lua_failure(), Some(LuaFailure::InstructionBudget));
/// # Ok::<(), savechain::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LuaFailure {
    /// A script ran more instructions than its limit allows.
    InstructionBudget,
    /// A script needed more memory than its limit allows.
    MemoryLimit,
    /// A script ran longer than its time limit allows.
    TimeLimit,
    /// A file did not compile.
    Syntax,
    /// A script raised an error, or did what the sandbox refuses (`io.open`, a `__gc`).
    Runtime,
    /// A script left a value a save cannot hold: a function, a table with a metatable that
    /// is not a registered class, a key that cannot be saved.
    Unsaveable,
}

/// A line and column in the text, both counted from 1; the column counts characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The line, from 1.
    pub line: usize,
    /// The column in characters, from 1.
    pub column: usize,
    /// Byte offset from the start of the text.
    pub offset: usize,
}

impl Location {
    /// The location of byte `offset` in `text`.
    pub(crate) fn of_offset(text: &[u8], offset: usize) -> Location {
        let offset = offset.min(text.len());
        let before = &text[..offset];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        // Count characters, not bytes, so the column matches what an editor shows; UTF-8
        // continuation bytes do not start a character.
        let column = 1 + before[line_start..]
            .iter()
            .filter(|&&b| (b & 0xC0) != 0x80)
            .count();
        Location {
            line,
            column,
            offset,
        }
    }
}

/// An error with everything a person needs to fix it: file, line and column, the path
/// inside the document, and what was expected.
pub struct Error {
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    file: Option<PathBuf>,
    location: Option<Location>,
    path: Path,
    message: String,
    source: Option<std::io::Error>,
    lua: Option<LuaFailure>,
    /// What a change by hand needs asked for to be made, when that alone refused it.
    unless: Option<crate::allow::Allow>,
    /// The mod whose chain or data the error is about.
    in_mod: Option<String>,
    /// The step whose file the error is about, and the line there when known.
    step: Option<(String, Option<usize>)>,
    /// Refusing to replace a file already at an output: where replacing would keep it.
    output_backup: Option<PathBuf>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            inner: Box::new(Inner {
                kind,
                file: None,
                location: None,
                path: Path::new(),
                message: message.into(),
                source: None,
                lua: None,
                unless: None,
                in_mod: None,
                step: None,
                output_backup: None,
            }),
        }
    }

    pub(crate) fn io(error: std::io::Error, what: impl Into<String>) -> Error {
        let mut e = Error::new(ErrorKind::Io, format!("{}: {error}", what.into()));
        e.inner.source = Some(error);
        e
    }

    pub(crate) fn at(mut self, location: Location) -> Error {
        self.inner.location = Some(location);
        self
    }

    pub(crate) fn in_path(mut self, path: Path) -> Error {
        self.inner.path = path;
        self
    }

    pub(crate) fn because(mut self, failure: LuaFailure) -> Error {
        self.inner.lua = Some(failure);
        self
    }

    /// The error, as about the mod `name`: its message starts `mod NAME: ` once.
    pub(crate) fn in_mod(mut self, name: &str) -> Error {
        if self.inner.in_mod.is_none() {
            self.inner.message = format!("mod {name}: {}", self.inner.message);
            self.inner.in_mod = Some(name.to_string());
        }
        self
    }

    /// The error, as refusing to replace a file already at an output, which replacing
    /// would keep as `backup`.
    pub(crate) fn output_taken(mut self, backup: PathBuf) -> Error {
        self.inner.output_backup = Some(backup);
        self
    }

    /// When the error refuses to replace a file already at an output that holds something
    /// else than the upgrade writes ([`Target::To`](crate::upgrade::Target::To), a batch's
    /// output folder): where replacing it
    /// ([`Options::replace_outputs`](crate::Options::replace_outputs)) would keep it. The
    /// message says what the file holds; a tool adds how its user asks for replacing.
    pub fn output_backup(&self) -> Option<&FsPath> {
        self.inner.output_backup.as_deref()
    }

    /// The error, as about the step `name` (its file's name), at `line` of that file.
    pub(crate) fn in_step(mut self, name: &str, line: Option<usize>) -> Error {
        self.inner.step = Some((name.to_string(), line));
        self
    }

    /// The step the error is about, when it is about one: it failed on a save, or (loading
    /// a chain) its file does not compile or does not give a step. The message names it too.
    ///
    /// ```
    /// use savechain::upgrade::{Chain, Step};
    /// use savechain::{Options, Save};
    ///
    /// let step = Step::lua("0001-hull.lua", "return function(data)\n  data.hull = data.hull * 2\nend")?;
    /// let chain = Chain::new("1.0.0", vec![step])?;
    /// let save = Save::from_str(r#"{"meta": {"version": 1}, "data": {}}"#)?;
    /// let err = chain.upgrader().upgrade(save, &Options::default()).unwrap_err();
    /// assert_eq!(err.failed_step(), Some("0001-hull.lua"));
    /// assert_eq!(err.step_line(), Some(2));
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn failed_step(&self) -> Option<&str> {
        self.inner.step.as_ref().map(|(name, _)| name.as_str())
    }

    /// The line of the failed step's file ([`Error::failed_step`]) the failure is at, when
    /// Lua says: where a file does not compile, or where a step raised its error.
    pub fn step_line(&self) -> Option<usize> {
        self.inner.step.as_ref().and_then(|(_, line)| *line)
    }

    /// The mod the error is about, when it is about one: its chain is malformed, one of
    /// its steps failed, or the save's data of it cannot be upgraded
    /// ([`Mod`](crate::upgrade::Mod)). The message names it too.
    pub fn failed_mod(&self) -> Option<&str> {
        self.inner.in_mod.as_deref()
    }

    /// The error, as a change by hand refused only because `allow` was not asked for.
    pub(crate) fn unless(mut self, allow: crate::allow::Allow) -> Error {
        self.inner.unless = Some(allow);
        self
    }

    /// What a change by hand ([`edit`](crate::edit)) would need asked for to be made, when
    /// it was refused only for that: a new member, a change of a value's kind, a change of
    /// a version. A program words its own way of asking (a flag, a question), and may make
    /// the change again with these allowed.
    ///
    /// ```
    /// use savechain::{edit, Save, Value};
    ///
    /// let mut save = Save::from_str(r#"{"meta": {"version": 1}, "data": {"level": 3}}"#)?;
    /// let err = edit::set(&mut save, "data.level", Value::Double(3.5)).unwrap_err();
    /// let needs = err.refused_unless().unwrap();
    /// assert!(needs.kind_change && !needs.version_change);
    /// let err = edit::set(&mut save, "meta.version", Value::Int(5)).unwrap_err();
    /// assert!(err.refused_unless().unwrap().version_change);
    /// # Ok::<(), savechain::Error>(())
    /// ```
    pub fn refused_unless(&self) -> Option<crate::allow::Allow> {
        self.inner.unless
    }

    /// Why Lua failed, when it did: a limit, an error, a value a save cannot hold.
    pub fn lua_failure(&self) -> Option<LuaFailure> {
        self.inner.lua
    }

    /// Names the file the error is about.
    pub fn with_file(mut self, file: impl AsRef<FsPath>) -> Error {
        self.inner.file = Some(file.as_ref().to_path_buf());
        self
    }

    /// What kind of problem it is.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The file the error is about, when known.
    pub fn file(&self) -> Option<&FsPath> {
        self.inner.file.as_deref()
    }

    /// Where in the text the problem is, when it is about a text.
    pub fn location(&self) -> Option<Location> {
        self.inner.location
    }

    /// The line of [`Error::location`].
    pub fn line(&self) -> Option<usize> {
        self.inner.location.map(|l| l.line)
    }

    /// The column of [`Error::location`].
    pub fn column(&self) -> Option<usize> {
        self.inner.location.map(|l| l.column)
    }

    /// Where in the document the problem is (the root when it is not inside a value).
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What went wrong and what was expected, without the location.
    pub fn message(&self) -> &str {
        &self.inner.message
    }
}

impl fmt::Display for Error {
    /// `file:line:column: at data.player.hp: message`, leaving out what is not known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        match (&inner.file, inner.location) {
            (Some(file), Some(l)) => write!(f, "{}:{}:{}: ", file.display(), l.line, l.column)?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, Some(l)) => write!(f, "line {}, column {}: ", l.line, l.column)?,
            (None, None) => {}
        }
        if !inner.path.is_root() {
            write!(f, "at {}: ", inner.path)?;
        }
        f.write_str(&inner.message)
    }
}

impl fmt::Debug for Error {
    /// The kind and the whole message, so that a `main` returning this error prints what a
    /// person can act on.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.inner.kind)
            .field("message", &self.to_string())
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A result whose error is savechain's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<std::io::Error> for Error {
    /// An I/O error with nothing said of what was being done; [`Error::with_file`] names
    /// the file.
    fn from(error: std::io::Error) -> Error {
        let mut e = Error::new(ErrorKind::Io, error.to_string());
        e.inner.source = Some(error);
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_the_whole_message() {
        // What a `main` returning this error prints.
        let e = Error::new(ErrorKind::Syntax, "expected ':'")
            .at(Location::of_offset(b"{\n \"a\" 1}", 7))
            .with_file("world.json");
        assert_eq!(
            format!("{e:?}"),
            r#"Error { kind: Syntax, message: "world.json:2:6: expected ':'" }"#
        );
    }

    #[test]
    fn hexfloat_errors_convert_for_the_question_mark() {
        fn parse(text: &str) -> Result<f64> {
            Ok(crate::hexfloat::parse(text)?)
        }
        let e = parse("0x1.g").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Value);
        assert!(e.message().contains("malformed hexadecimal float"), "{e}");
    }

    #[test]
    fn columns_count_characters() {
        let text = "{\n  \"né\": x";
        let l = Location::of_offset(text.as_bytes(), text.len() - 1);
        assert_eq!((l.line, l.column), (2, 9));
    }
}
