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
    /// The fixture directory cannot be read.
    #[error("fixture directory {}: {message}", path.display())]
    FixtureDir {
        /// The directory.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The fixtures were rejected at start-up (later rejections are `ReloadStatus` values).
    #[error("invalid fixtures: {0}")]
    Fixture(#[from] FixtureError),
    /// A `--descriptor-set` file cannot be read or is not a valid `FileDescriptorSet`.
    #[error("--descriptor-set {}: {message}", path.display())]
    DescriptorSet {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// An address cannot be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why the operating system refused.
        source: std::io::Error,
    },
    /// A TLS file is missing or does not hold what its flag needs.
    #[error("TLS: {0}")]
    Tls(String),
    /// The fixture watcher could not start (it needs a Tokio runtime).
    #[error("file watcher: {0}")]
    Watch(String),
    /// The gRPC server (or its reflection service) failed.
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
    Record {
        /// The transcript file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// `--replay FILE` cannot be replayed: `FILE[:LINE]: what is wrong`.
    #[error("--replay {0}")]
    Replay(String),
}

/// Why a fixture directory was rejected. `message` locates the problem inside `file`: a line and
/// column (`line 7, column 3: ...`, for anything the decoder refuses, with the resource and
/// field path for content), or the other file involved (duplicates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureError {
    /// The file at fault; `None` for the directory itself.
    pub file: Option<PathBuf>,
    /// What is wrong, located inside `file`.
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
