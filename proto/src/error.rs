//! The crate's one error type, [`DecodeError`], and [`Position`], where in a fixture file a
//! problem is.

use std::fmt;

use thiserror::Error;

/// Where a problem is in a fixture file: 1-based line and column. `line == 0` when there is
/// no file (a resource encoded on its own); it then displays as nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// 1-based line in the fixture file; 0 when there is no file.
    pub line: usize,
    /// 1-based column on that line.
    pub column: usize,
}

impl Position {
    /// The position at 1-based `line` and `column` (`line` 0 for "no file").
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
    /// The text is not valid JSON or YAML, or YAML nests deeper than the parser is allowed
    /// to go.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line, 0 when the parser did not say where.
        line: usize,
        /// 1-based column, 0 when the parser did not say where.
        column: usize,
        /// The parser's own description of the problem.
        message: String,
    },
    #[error(
        "{at}duplicate key `{key}` (YAML and JSON parsers would silently keep only the last one)"
    )]
    /// A mapping repeats a key; refused because the parsers would silently keep the last value.
    DuplicateKey {
        /// Where the repeated key is.
        at: Position,
        /// The repeated key.
        key: String,
    },
    #[error(
        "{at}{value} is not allowed: NaN and infinite numbers are errors in fixtures (quote it if \
         you mean a string)"
    )]
    /// A number is NaN or infinite (YAML `.nan`, `.inf`), which the decoder would take as unset.
    NonFinite {
        /// Where the number is.
        at: Position,
        /// `NaN`, `infinity` or `-infinity`.
        value: String,
    },
    #[error("{at}document {document}: {message}")]
    /// A document is none of the accepted shapes (a resource, a list of them, a
    /// `DiscoveryResponse`), has an unknown top-level key, or a key of the wrong kind.
    Shape {
        /// Where the offending value or key is.
        at: Position,
        /// 1-based number of the document in the file (YAML may hold several).
        document: usize,
        /// What was expected and what was found.
        message: String,
    },
    #[error("{at}{resource}: missing \"@type\" (every resource needs its type URL)")]
    /// A resource object has no `@type`.
    MissingType {
        /// Where the resource is.
        at: Position,
        /// The resource's label in the file, e.g. `resource #2` or `resources[0]`.
        resource: String,
    },
    #[error(
        "{at}{resource}: @type \"{type_url}\" must be \"type.googleapis.com/<message name>\" \
         (xDS clients match resources by their exact type URL)"
    )]
    /// A `@type` is not of the form `type.googleapis.com/<message name>`.
    BadTypeUrl {
        /// Where the `@type` is.
        at: Position,
        /// The resource's label, with its name when it has one.
        resource: String,
        /// The `@type` as written.
        type_url: String,
    },
    #[error(
        "{at}{resource}: unknown @type \"{type_url}\" (not in the descriptor pool; add it with --descriptor-set)"
    )]
    /// A well-formed `@type` names a message the descriptor pool does not hold.
    UnknownType {
        /// Where the `@type` is.
        at: Position,
        /// The resource's label, with its name when it has one.
        resource: String,
        /// The `@type` as written.
        type_url: String,
    },
    #[error("{at}{resource}: field `{path}`: {message}")]
    /// A field's value does not fit the message: unknown field, wrong type, bad enum value, a
    /// violated constraint, or a malformed `xdstp://` name or `Resource` wrapper.
    Field {
        /// Where the field is.
        at: Position,
        /// The resource's label, with its name when it has one.
        resource: String,
        /// Dotted field path inside the resource, e.g. `socket_options[0].state`; `.` for the
        /// resource itself.
        path: String,
        /// What is wrong with the value; secret values are redacted.
        message: String,
    },
    #[error("{at}{resource}: has no name (set `{field}`)")]
    /// A resource has no name, so clients could not subscribe to it.
    MissingName {
        /// Where the resource is.
        at: Position,
        /// The resource's label in the file.
        resource: String,
        /// The field that holds the name for its type (`name`, or `cluster_name` for
        /// `ClusterLoadAssignment`).
        field: String,
    },
    #[error("{at}{resource}: @type {found} does not match the file's type_url {expected}")]
    /// A resource in a `DiscoveryResponse`-shaped document has a `@type` other than the
    /// document's `type_url`.
    TypeMismatch {
        /// Where the resource's `@type` is.
        at: Position,
        /// The resource's label in the file.
        resource: String,
        /// The document's `type_url`.
        expected: String,
        /// The resource's `@type`.
        found: String,
    },
    #[error("cannot decode {type_url}: {message}")]
    /// Encoded bytes (from the wire or the caller) are not a valid message of their type, have
    /// no name, or their type is not in the pool.
    Wire {
        /// The type the bytes were read as.
        type_url: String,
        /// The decoder's description of the problem.
        message: String,
    },
    /// A user `FileDescriptorSet` (`--descriptor-set`) could not be decoded or merged into the
    /// pool; holds the pool's message.
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
