use thiserror::Error;

/// Errors of the client library. Expected protocol outcomes (a NACK, a missing resource, a
/// dropped stream that is retried) are reported as events, never as errors.
#[derive(Debug, Error)]
pub enum ClientError {
    /// A server address that cannot be used.
    #[error("invalid server address {address:?}: {message}")]
    Address {
        /// The address as given.
        address: String,
        /// What is wrong with it.
        message: String,
    },
    /// A type alias or URL the client does not know.
    #[error("unknown resource type {0:?} (use cds, eds, lds, rds, ... or a full type URL)")]
    UnknownType(String),
    /// An argument that cannot be used.
    #[error("invalid argument: {0}")]
    Argument(String),
    /// The client's session has ended: nothing more can be asked of it.
    #[error("the client has stopped")]
    Stopped,
    /// A resource that does not decode as its type (typed subscriptions).
    #[error("cannot decode {type_url} resource {name:?}: {message}")]
    Decode {
        /// Its type URL.
        type_url: String,
        /// Its name.
        name: String,
        /// The decoder's error.
        message: String,
    },
    /// A TLS file is missing or does not hold what its flag needs, or a TLS flag goes with
    /// an address it cannot apply to.
    #[error("TLS: {0}")]
    Tls(String),
    /// The file source cannot watch its file.
    #[error("cannot watch {path}: {message}")]
    Watch {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// Output that cannot be written (the CLI's).
    #[error("output: {0}")]
    Output(String),
    /// A fleet report that cannot be read, written or merged; the message names the file.
    #[error("{0}")]
    FleetReport(String),
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
