use std::path::PathBuf;

use thiserror::Error;

/// Errors that stop the server from starting or serving. Expected protocol outcomes (NACKs,
/// stale nonces, rejected reloads) are values, not errors.
#[derive(Debug, Error)]
pub enum Error {
    #[error("fixture directory {}: {message}", path.display())]
    FixtureDir { path: PathBuf, message: String },
    /// The fixtures were rejected at start-up (later rejections are `ReloadStatus` values).
    #[error("invalid fixtures: {0}")]
    Fixture(#[from] crate::config::fixtures::FixtureError),
    #[error("--descriptor-set {}: {message}", path.display())]
    DescriptorSet { path: PathBuf, message: String },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("file watcher: {0}")]
    Watch(String),
    #[error("gRPC server: {0}")]
    Transport(String),
    /// The admin HTTP server failed, or `status` could not read a server's `/status`.
    #[error("admin: {0}")]
    Admin(String),
}
