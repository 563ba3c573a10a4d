//! Hot reload: notify watcher + debounce → reload the whole directory → publish, or reject and
//! keep serving the last good snapshot.
//!
//! The only output is two `tokio::sync::watch` channels. A watch holds just the latest value, so
//! a slow consumer skips stale snapshots instead of queueing them, and memory stays bounded.
//!
//! Every reload re-reads the whole directory rather than patching the files an event named:
//! events get coalesced, reordered or lost (inotify overflow, renames from outside the tree), and
//! a full read is always right. If the directory itself is deleted, the last good snapshot stays
//! served and the error is reported; when a directory (or a symlink to one) appears at the same
//! path again, it is watched and loaded.
//!
//! Pieces, each in its own module:
//! - `events`: notify events → what each says about its file (written to, complete, gone);
//!   keeps the watches on a replaced directory;
//! - `debounce`: when a burst of events is over: a short settle window once every file of the
//!   burst is complete, the configured quiet period otherwise (pure);
//! - `follow`: one watcher's loop: events → debounce → one reload at a time;
//! - `reload`: one reload off the async threads, its progress, and publishing the outcome;
//!   the load itself is behind a small trait, so tests can hold a reload open for as long as
//!   they need instead of hoping a big file decodes slowly enough;
//! - `supervise`: restarts a watcher that died (notify thread gone, directory and its parent
//!   gone, a panic) with a fresh one and a full rescan, and reports it meanwhile.

pub(crate) mod debounce;
mod events;
mod follow;
mod links;
mod reload;
mod supervise;
#[cfg(test)]
mod tests;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use tokio::{sync::watch, task::JoinHandle};
use xdsloop_proto::Codec;

pub(crate) use self::events::touches_content;
use self::{events::WatchedRoot, reload::Reloader};
use crate::{config::fixtures, error::Error, snapshot::Snapshot};

/// The outcome of the latest reload, the one running now, and whether the directory is being
/// watched at all: for `/status`, `/healthz` and logs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReloadStatus {
    /// The generation being served (after a rejection: the last good one).
    pub generation: u64,
    /// Whether the latest reload was accepted (`false`: `error` says why, the last good snapshot is
    /// still served).
    pub ok: bool,
    /// The file a rejection is about, if it is about one file.
    pub file: Option<PathBuf>,
    /// The whole rejection, `"<file>: <line or resource and field>: <problem>"`.
    pub error: Option<String>,
    /// When the latest reload finished.
    pub at: SystemTime,
    /// When it started, on the monotonic clock: a reload that started after a file was written
    /// has read it (wall-clock `at - took` can be stepped by NTP).
    #[serde(skip)]
    pub started: Instant,
    /// How long the latest reload took, from reading the directory to publishing.
    pub took: Duration,
    /// Reloads finished since start-up, the first load included. It moves on every reload,
    /// also on one that changed nothing, so "the reload loop is alive" can be seen.
    pub count: u64,
    /// Resources in the snapshot being served (base plus overlays).
    pub resources: usize,
    /// The reload running now, if any.
    pub in_progress: Option<InProgress>,
    /// Whether the directory is being watched, and how often the watcher restarted.
    pub watcher: WatcherHealth,
}

/// A reload that has started and not finished.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InProgress {
    /// When it started.
    pub since: SystemTime,
    /// The files being decoded (changed since the last good load); empty while the directory
    /// is still being read.
    pub files: Vec<PathBuf>,
}

/// Whether file changes are being followed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WatcherHealth {
    /// Whether the watcher is running (`false`: edits are not picked up while it restarts).
    pub ok: bool,
    /// Why the watcher is down (it is being restarted).
    pub error: Option<String>,
    /// When it went down.
    pub since: Option<SystemTime>,
    /// How many times a failed watcher was replaced by a working one.
    pub restarts: u64,
}

impl Default for WatcherHealth {
    fn default() -> Self {
        Self {
            ok: true,
            error: None,
            since: None,
            restarts: 0,
        }
    }
}

/// How the watcher reloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Quiet time after the last file event before reloading.
    pub debounce: Duration,
    /// Fixture files larger than this are rejected (see [`fixtures::DEFAULT_MAX_FILE_BYTES`]).
    pub max_file_bytes: u64,
}

impl Settings {
    /// Settings with this debounce and the default file size limit.
    pub fn new(debounce: Duration) -> Self {
        Self {
            debounce,
            max_file_bytes: fixtures::DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// A running fixture watcher. Dropping it (or [`Watcher::stop`]) stops watching; the receivers
/// then see no further changes. Clone the receivers to hand them out.
#[derive(Debug)]
pub struct Watcher {
    /// The snapshot being served, replaced on every good reload.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// The outcome of the latest reload.
    pub reloads: watch::Receiver<ReloadStatus>,
    task: JoinHandle<()>,
}

impl Watcher {
    /// [`Watcher::start_with`] with the default size limit.
    pub fn start(dir: PathBuf, codec: Codec, debounce: Duration) -> Result<Watcher, Error> {
        Self::start_with(dir, codec, Settings::new(debounce))
    }

    /// Loads synchronously first: a missing/unreadable directory or invalid fixtures at start-up
    /// are an Err (clear one-line message); an empty directory is fine (served as empty).
    /// Then watches `dir` and reloads `settings.debounce` after the last change of each burst.
    /// Must be called inside a Tokio runtime.
    pub fn start_with(dir: PathBuf, codec: Codec, settings: Settings) -> Result<Watcher, Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::Watch("Watcher::start must run inside a Tokio runtime".into()))?;
        let root = watched_path(&dir)?;
        // Watch before the first load, so an edit made while loading is not missed.
        let (signal_tx, signal_rx) = WatchedRoot::channel();
        let watched =
            WatchedRoot::start(root.clone(), signal_tx).map_err(|e| Error::FixtureDir {
                path: dir.clone(),
                message: format!("cannot watch: {e}"),
            })?;
        let reloader = Reloader::start(dir, root, codec, settings.max_file_bytes)?;
        let snapshots = reloader.snapshots.subscribe();
        let reloads = reloader.reloads.subscribe();
        let first = (watched, signal_rx);
        let task = runtime.spawn(supervise::run(Arc::new(reloader), first, settings.debounce));
        Ok(Watcher {
            snapshots,
            reloads,
            task,
        })
    }

    /// Stops watching (as dropping it does).
    pub fn stop(self) {
        // Drop does the work.
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // Aborting the supervisor drops the running watcher (its notify thread ends) and any
        // reload in flight. A decode already on a blocking thread finishes there, unpublished.
        self.task.abort();
    }
}

/// The absolute path to hand to notify (its events name absolute paths), after checking that
/// `dir` is a readable directory: the start-up errors users hit most deserve a clear message.
fn watched_path(dir: &Path) -> Result<PathBuf, Error> {
    let fail = |message: String| Error::FixtureDir {
        path: dir.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(dir).map_err(|e| fail(e.to_string()))?;
    if !meta.is_dir() {
        return Err(fail("not a directory".into()));
    }
    std::fs::read_dir(dir).map_err(|e| fail(e.to_string()))?;
    let absolute = std::path::absolute(dir).map_err(|e| fail(e.to_string()))?;
    // Drop `.` components and trailing slashes, so event paths compare equal to it.
    Ok(absolute.components().collect())
}
