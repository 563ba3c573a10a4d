use thiserror::Error;

/// Why a fixture document, a resource or a descriptor set could not be decoded.
///
/// Every variant names where the problem is (line, resource, field path) so a
/// message naming the file is enough for the user to find it.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("document {document}: {message}")]
    Shape { document: usize, message: String },
    #[error("{resource}: missing \"@type\" (every resource needs its type URL)")]
    MissingType { resource: String },
    #[error(
        "{resource}: unknown @type \"{type_url}\" (not in the descriptor pool; add it with --descriptor-set)"
    )]
    UnknownType { resource: String, type_url: String },
    #[error("{resource}: field `{path}`: {message}")]
    Field {
        resource: String,
        path: String,
        message: String,
    },
    #[error("{resource}: has no name (set `{field}`)")]
    MissingName { resource: String, field: String },
    #[error("{resource}: @type {found} does not match the file's type_url {expected}")]
    TypeMismatch {
        resource: String,
        expected: String,
        found: String,
    },
    #[error("cannot decode {type_url}: {message}")]
    Wire { type_url: String, message: String },
    #[error("descriptor set: {0}")]
    Descriptors(String),
}
