//! The error of converting between Rust types and [`Value`](crate::Value), with where in the
//! value it happened.

use std::fmt;

use crate::path::{Path, Segment};

/// A failed conversion: what went wrong, and the path (relative to the converted value) where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    path: Path,
    message: String,
}

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Error {
        Error {
            path: Path::new(),
            message: message.into(),
        }
    }

    /// Puts the error one step deeper: each enclosing array or object adds its step as the
    /// error unwinds.
    pub(crate) fn at(mut self, segment: Segment) -> Error {
        self.path.push_front(segment);
        self
    }

    /// Where the problem is, relative to the value being converted.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What went wrong, without the path.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_root() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for crate::Error {
    /// A conversion error as a savechain error, keeping its path, so that `?` works
    /// across serde conversions and loads.
    fn from(e: Error) -> crate::Error {
        crate::Error::new(crate::ErrorKind::Value, e.message).in_path(e.path)
    }
}

impl ::serde::ser::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Error {
        Error::new(message.to_string())
    }
}

impl ::serde::de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Error {
        Error::new(message.to_string())
    }
}
