use std::{
    fmt,
    path::{Path, PathBuf},
};

use thiserror::Error;

/// Errors that stop the server from starting or serving. Expected protocol outcomes (NACKs,
/// stale nonces, rejected reloads) are values, not errors.
#[derive(Debug, Error)]
pub enum Error {
    #[error("fixture directory {}: {message}", path.display())]
    FixtureDir { path: PathBuf, message: String },
    /// The fixtures were rejected at start-up (later rejections are `ReloadStatus` values).
    #[error("invalid fixtures: {0}")]
    Fixture(#[from] FixtureError),
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

/// Why a fixture directory was rejected. `message` locates the problem inside `file`: a line
/// (syntax), or a resource and field path (content), or the other file involved (duplicates,
/// conflicting versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureError {
    pub file: Option<PathBuf>,
    pub message: String,
}

impl FixtureError {
    pub(crate) fn new(file: &Path, message: impl Into<String>) -> Self {
        Self {
            file: Some(file.to_path_buf()),
            message: message.into(),
        }
    }
}

impl fmt::Display for FixtureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for FixtureError {}
