use thiserror::Error;

/// Errors of the client library. Expected protocol outcomes (a NACK, a missing resource, a
/// dropped stream that is retried) are reported as events, never as errors.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("invalid server address {address:?}: {message}")]
    Address { address: String, message: String },
    #[error("unknown resource type {0:?} (use cds, eds, lds, rds, ... or a full type URL)")]
    UnknownType(String),
    #[error("invalid argument: {0}")]
    Argument(String),
    #[error("the client has stopped")]
    Stopped,
    #[error("cannot decode {type_url} resource {name:?}: {message}")]
    Decode {
        type_url: String,
        name: String,
        message: String,
    },
    /// A TLS file is missing or does not hold what its flag needs, or a TLS flag goes with
    /// an address it cannot apply to.
    #[error("TLS: {0}")]
    Tls(String),
    #[error("cannot watch {path}: {message}")]
    Watch { path: String, message: String },
    #[error("output: {0}")]
    Output(String),
    /// A fleet report that cannot be read, written or merged; the message names the file.
    #[error("{0}")]
    FleetReport(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
