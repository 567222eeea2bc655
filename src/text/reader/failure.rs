//! What goes wrong while reading: a failure with its byte offset and its path in the
//! document, made into an [`Error`] with line and column once reading has stopped.

use crate::error::{Error, ErrorKind, Location};
use crate::path::{Path, Segment};

/// An error while reading, before it is given a line and column. The path grows from the
/// inside out as the error unwinds through the values that contain it.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: ErrorKind,
    offset: usize,
    path: Path,
    message: String,
}

/// What a string that is never closed fails with, at its opening quote.
pub(crate) const NEVER_CLOSED: &str =
    "this string is never closed (expected a '\"' before the end of the text)";

/// Failures travel boxed to keep results small on the hot path.
pub(crate) type Parsed<T> = std::result::Result<T, Box<Failure>>;

/// The offset of a failure not yet placed in the text (one a serde visitor made): the value
/// it is about places it as it unwinds.
const UNPLACED: usize = usize::MAX;

impl Failure {
    /// A failure about a value, placed by [`Failure::place`].
    pub(crate) fn about_value(message: impl Into<String>) -> Box<Failure> {
        Failure::at(ErrorKind::Value, UNPLACED, message)
    }

    /// A failure of `kind` at `offset`.
    pub(crate) fn at(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Box<Failure> {
        Box::new(Failure {
            kind,
            offset,
            path: Path::new(),
            message: message.into(),
        })
    }

    /// Places a failure that is not placed yet at the value starting at `offset`.
    pub(crate) fn place(mut self: Box<Self>, offset: usize) -> Box<Failure> {
        if self.offset == UNPLACED {
            self.offset = offset;
        }
        self
    }

    /// Puts the failure one step deeper in the document.
    pub(crate) fn inside(mut self: Box<Self>, segment: Segment) -> Box<Failure> {
        self.path.push_front(segment);
        self
    }

    /// Puts the failure `path` deeper in the document: for a failure found in a part of the
    /// document read some other way, whose path is relative to that part.
    pub(crate) fn inside_path(mut self: Box<Self>, path: &Path) -> Box<Failure> {
        for segment in path.segments().iter().rev() {
            self.path.push_front(segment.clone());
        }
        self
    }

    /// Whether this is a syntax error placed before the last `margin` bytes of a text of
    /// `len` bytes that more text after it cannot undo (a string never closed is placed
    /// at its start, but more text may close it).
    pub(crate) fn is_syntax_before(&self, len: usize, margin: usize) -> bool {
        self.kind == ErrorKind::Syntax
            && self.offset != UNPLACED
            && self.offset.saturating_add(margin) < len
            && self.message != NEVER_CLOSED
    }

    /// The error this failure is, placed in `text` (the bytes the offset counts in).
    pub(crate) fn into_error(self, text: &[u8]) -> Error {
        Error::new(self.kind, self.message)
            .at(Location::of_offset(text, self.offset))
            .in_path(self.path)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_root() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for Failure {}

/// A failure of `kind` at `offset`, as a result.
pub(crate) fn fail<T>(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Parsed<T> {
    Err(Failure::at(kind, offset, message))
}

/// Puts a failure one step deeper in the document.
pub(crate) fn within<T>(result: Parsed<T>, segment: impl FnOnce() -> Segment) -> Parsed<T> {
    result.map_err(|f| f.inside(segment()))
}
