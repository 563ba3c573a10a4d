use std::error::Error as StdError;

use thiserror::Error;

/// The error underneath one of the client's own, kept as its `source()`.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// The client library's result.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

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
    #[error("TLS: {message}")]
    Tls {
        /// What is wrong, naming the flag and file.
        message: String,
        /// The error underneath (reading the file, parsing it), if one.
        #[source]
        source: Option<BoxError>,
    },
    /// The file source cannot watch its file.
    #[error("cannot watch {path}: {message}")]
    Watch {
        /// The file.
        path: String,
        /// What could not be done.
        message: String,
        /// The error underneath, if one.
        #[source]
        source: Option<BoxError>,
    },
    /// Output that cannot be written (the CLI's).
    #[error("output: {message}")]
    Output {
        /// What could not be written, and where.
        message: String,
        /// The error underneath.
        #[source]
        source: Option<BoxError>,
    },
    /// A fleet report that cannot be read, written or merged; the message names the file.
    #[error("{message}")]
    FleetReport {
        /// What is wrong, naming the file.
        message: String,
        /// The error underneath (reading, writing, parsing), if one.
        #[source]
        source: Option<BoxError>,
    },
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl ClientError {
    pub(crate) fn tls(message: impl Into<String>) -> Self {
        Self::Tls {
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn tls_because(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Tls {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    #[cfg(feature = "cli")]
    pub(crate) fn output_because(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Output {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    #[cfg(feature = "fleet")]
    pub(crate) fn fleet_report(message: impl Into<String>) -> Self {
        Self::FleetReport {
            message: message.into(),
            source: None,
        }
    }

    #[cfg(feature = "fleet")]
    pub(crate) fn fleet_report_because(
        message: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> Self {
        Self::FleetReport {
            message: message.into(),
            source: Some(source.into()),
        }
    }
}

/// `error` and each of its sources, joined with `: `: the one line a program prints.
pub fn chain(error: &dyn StdError) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_line_carries_every_source_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let error = ClientError::tls_because("--tls-ca /x/ca.pem", io);
        assert_eq!(error.to_string(), "TLS: --tls-ca /x/ca.pem");
        assert_eq!(chain(&error), "TLS: --tls-ca /x/ca.pem: No such file");
        assert!(error.source().is_some(), "the io error is its source");
        assert_eq!(chain(&ClientError::tls("plain")), "TLS: plain");
    }
}
