use std::fmt;

use thiserror::Error;

/// Where a problem is in a fixture file: 1-based line and column. `line == 0` when there is
/// no file (a resource encoded on its own); it then displays as nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    pub fn new(line: usize, column: usize) -> Self {
        Self { line, column }
    }
}

/// `line 7, column 3: ` (with the separator, so messages read `{at}{what}`), or nothing.
impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return Ok(());
        }
        write!(f, "line {}, column {}: ", self.line, self.column)
    }
}

/// Why a fixture document, a resource or a descriptor set could not be decoded.
///
/// Every variant names where the problem is (line and column, resource, field path) so a
/// message naming the file is enough for the user to find it. Messages never quote secret
/// material (see [`crate::secret`]).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{at}duplicate key `{key}` (YAML and JSON parsers would silently keep only the last one)"
    )]
    DuplicateKey { at: Position, key: String },
    #[error(
        "{at}{value} is not allowed: NaN and infinite numbers are errors in fixtures (quote it if \
         you mean a string)"
    )]
    NonFinite { at: Position, value: String },
    #[error("{at}document {document}: {message}")]
    Shape {
        at: Position,
        document: usize,
        message: String,
    },
    #[error("{at}{resource}: missing \"@type\" (every resource needs its type URL)")]
    MissingType { at: Position, resource: String },
    #[error(
        "{at}{resource}: @type \"{type_url}\" must be \"type.googleapis.com/<message name>\" \
         (xDS clients match resources by their exact type URL)"
    )]
    BadTypeUrl {
        at: Position,
        resource: String,
        type_url: String,
    },
    #[error(
        "{at}{resource}: unknown @type \"{type_url}\" (not in the descriptor pool; add it with --descriptor-set)"
    )]
    UnknownType {
        at: Position,
        resource: String,
        type_url: String,
    },
    #[error("{at}{resource}: field `{path}`: {message}")]
    Field {
        at: Position,
        resource: String,
        path: String,
        message: String,
    },
    #[error("{at}{resource}: has no name (set `{field}`)")]
    MissingName {
        at: Position,
        resource: String,
        field: String,
    },
    #[error("{at}{resource}: @type {found} does not match the file's type_url {expected}")]
    TypeMismatch {
        at: Position,
        resource: String,
        expected: String,
        found: String,
    },
    #[error("cannot decode {type_url}: {message}")]
    Wire { type_url: String, message: String },
    #[error("descriptor set: {0}")]
    Descriptors(String),
}

impl DecodeError {
    /// Where the problem is in its fixture file, when the error came from one.
    pub fn position(&self) -> Option<Position> {
        let position = match self {
            DecodeError::Syntax { line, column, .. } => Position::new(*line, *column),
            // One list of the variants that carry a position: `position_mut`'s, read from a
            // copy (an error is small, and made once per rejected file).
            other => *other.clone().position_mut()?,
        };
        (position.line > 0).then_some(position)
    }

    /// The slot for where a content error is (syntax errors carry their own line and column).
    pub(crate) fn position_mut(&mut self) -> Option<&mut Position> {
        match self {
            DecodeError::DuplicateKey { at, .. }
            | DecodeError::NonFinite { at, .. }
            | DecodeError::Shape { at, .. }
            | DecodeError::MissingType { at, .. }
            | DecodeError::BadTypeUrl { at, .. }
            | DecodeError::UnknownType { at, .. }
            | DecodeError::Field { at, .. }
            | DecodeError::MissingName { at, .. }
            | DecodeError::TypeMismatch { at, .. } => Some(at),
            DecodeError::Syntax { .. } | DecodeError::Wire { .. } | DecodeError::Descriptors(_) => {
                None
            }
        }
    }

    /// Every free-text part of the message, for the last-line secret scrub.
    pub(crate) fn texts_mut(&mut self) -> Vec<&mut String> {
        match self {
            DecodeError::Syntax { message, .. }
            | DecodeError::Shape { message, .. }
            | DecodeError::Descriptors(message) => vec![message],
            DecodeError::DuplicateKey { key, .. } => vec![key],
            DecodeError::NonFinite { value, .. } => vec![value],
            DecodeError::MissingType { resource, .. } => vec![resource],
            DecodeError::BadTypeUrl {
                resource, type_url, ..
            }
            | DecodeError::UnknownType {
                resource, type_url, ..
            } => vec![resource, type_url],
            DecodeError::Field {
                resource,
                path,
                message,
                ..
            } => vec![resource, path, message],
            DecodeError::MissingName {
                resource, field, ..
            } => vec![resource, field],
            DecodeError::TypeMismatch {
                resource,
                expected,
                found,
                ..
            } => vec![resource, expected, found],
            DecodeError::Wire { type_url, message } => vec![type_url, message],
        }
    }
}
