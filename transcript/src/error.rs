//! The crate's one error type: what a person must fix, with the file and line.

use std::{fmt, io};

/// Why a transcript command or read failed; every message names the file, or the flag.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file that cannot be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// The path as given, or `output` when writing the command's output failed.
        file: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// A line that is not what the format says.
    #[error("{0}")]
    Line(LineError),
    /// A flag value that cannot be used (`--ignore` of a field no line has).
    #[error("{0}")]
    Usage(String),
}

/// `FILE:LINE[:COLUMN]: message`, the way compilers and editors point at a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The path as given.
    pub file: String,
    /// 1-based line number; the header is line 1.
    pub line: usize,
    /// 1-based column, when the problem is at one place in the line.
    pub column: Option<usize>,
    /// What is wrong with the line.
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(column) = self.column {
            write!(f, ":{column}")?;
        }
        write!(f, ": {}", self.message)
    }
}
