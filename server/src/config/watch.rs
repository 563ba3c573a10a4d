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
//! path again, it is watched and loaded. If its parent directory goes too, nothing notices.

mod debounce;
mod events;
mod reload;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use tokio::{sync::mpsc, sync::watch, task::JoinHandle};
use xdsloop_proto::Codec;

use self::{debounce::Debounce, events::WatchedRoot, reload::Reloader};
use crate::{Error, config::fixtures, snapshot::Snapshot};

/// The outcome of the latest reload, for `/status` and logs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReloadStatus {
    /// The generation being served (after a rejection: the last good one).
    pub generation: u64,
    pub ok: bool,
    /// The file a rejection is about, if it is about one file.
    pub file: Option<PathBuf>,
    /// The whole rejection, `"<file>: <line or resource and field>: <problem>"`.
    pub error: Option<String>,
    pub at: SystemTime,
    /// Resources in the snapshot being served (base plus overlays).
    pub resources: usize,
}

/// A running fixture watcher. Dropping it (or [`Watcher::stop`]) stops watching; the receivers
/// then see no further changes. Clone the receivers to hand them out.
pub struct Watcher {
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    pub reloads: watch::Receiver<ReloadStatus>,
    task: JoinHandle<()>,
}

impl Watcher {
    /// Loads synchronously first: a missing/unreadable directory or invalid fixtures at start-up
    /// are an Err (clear one-line message); an empty directory is fine (served as empty).
    /// Then watches `dir` and reloads `debounce` after the last change of each burst.
    /// Must be called inside a Tokio runtime.
    pub fn start(dir: PathBuf, codec: Codec, debounce: Duration) -> Result<Watcher, Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::Watch("Watcher::start must run inside a Tokio runtime".into()))?;
        let root = watched_path(&dir)?;
        // Watch before the first load, so an edit made while loading is not missed.
        let (signal_tx, signal_rx) = mpsc::channel(1);
        let watched = WatchedRoot::start(root, signal_tx).map_err(|e| Error::FixtureDir {
            path: dir.clone(),
            message: format!("cannot watch: {e}"),
        })?;
        let mut loader = fixtures::Loader::default();
        let snapshot = loader.load(&dir, &codec, 1)?;
        reload::log_loaded(&snapshot, "fixtures loaded");
        let (reloads_tx, reloads) = watch::channel(ReloadStatus::ok(&snapshot));
        let (snapshots_tx, snapshots) = watch::channel(Arc::new(snapshot));
        let reloader = Reloader {
            dir,
            codec,
            loader: Arc::new(std::sync::Mutex::new(loader)),
            snapshots: snapshots_tx,
            reloads: reloads_tx,
        };
        let task = runtime.spawn(run(reloader, watched, signal_rx, debounce));
        Ok(Watcher {
            snapshots,
            reloads,
            task,
        })
    }

    pub fn stop(self) {
        // Drop does the work.
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // Dropping the task drops the notify watcher, which ends its thread.
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

async fn run(
    reloader: Reloader,
    mut watched: WatchedRoot,
    mut signals: mpsc::Receiver<()>,
    quiet: Duration,
) {
    let mut debounce = Debounce::new(quiet);
    loop {
        let deadline = debounce.deadline();
        let due = async move {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            signal = signals.recv() => match signal {
                Some(()) => debounce.on_event(Instant::now()),
                // The notify watcher (which holds the sender) is owned by this task.
                None => return,
            },
            () = due => {
                debounce.fire();
                watched.refresh();
                reloader.reload().await;
            }
        }
    }
}
