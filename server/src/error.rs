use std::{
    fmt,
    path::{Path, PathBuf},
};

use thiserror::Error;
use xdsloop_proto::secret;

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
    /// `--scenario FILE` cannot be read, or breaks a rule (`FILE:line:col: ...`).
    #[error("--scenario {0}")]
    Scenario(String),
    /// `--record FILE` cannot be written.
    #[error("--record {}: {message}", path.display())]
    Record { path: PathBuf, message: String },
    /// `--replay FILE` cannot be replayed: `FILE[:LINE]: what is wrong`.
    #[error("--replay {0}")]
    Replay(String),
}

/// Why a fixture directory was rejected. `message` locates the problem inside `file`: a line and
/// column (`line 7, column 3: ...`, for anything the decoder refuses, with the resource and
/// field path for content), or the other file involved (duplicates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureError {
    pub file: Option<PathBuf>,
    pub message: String,
}

impl FixtureError {
    /// Messages go to the log and `/status`: secret-looking text is cut out of every one (the
    /// decoder already keeps secret values out of its own; this also covers the other checks).
    pub(crate) fn new(file: &Path, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            file: Some(file.to_path_buf()),
            message: secret::scrub(&message).into_owned(),
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
