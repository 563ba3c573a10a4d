//! One reload: read and decode the directory off the async threads, say what a slow one is
//! doing, then publish the new snapshot, or keep the last good one and publish the rejection.

use std::{
    collections::BTreeSet,
    path::PathBuf,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, SystemTime},
};

use tokio::{
    sync::{oneshot, watch},
    time::Instant,
};
use xdsloop_proto::{Codec, type_url};

use super::{InProgress, ReloadStatus, WatcherHealth};
use crate::{
    config::fixtures::{FixtureError, Loader},
    error::Error,
    snapshot::Snapshot,
};

/// A reload running longer than this is logged (and then again at twice the time, and so on):
/// by then a user has saved and wonders why nothing happened.
const SLOW: Duration = Duration::from_secs(1);
/// How many file names a log line lists before "and N more".
const LOGGED_FILES: usize = 5;

/// Reads and decodes the fixture directory into the snapshot numbered `generation`, telling
/// `decoding` which files it is about to decode. Runs on a blocking thread, one load at a time.
/// The server's is [`Fixtures`]; tests put in one that holds a reload open as long as they need.
pub(super) trait Load: Send + Sync + 'static {
    fn load(
        &self,
        generation: u64,
        decoding: &mut dyn FnMut(Vec<PathBuf>),
    ) -> Result<Snapshot, FixtureError>;
}

/// The fixture directory, how to load it, and the two output channels. Shared by the
/// supervisor and every watcher it starts; reloads run one at a time.
pub(super) struct Reloader {
    /// As the user gave it: file names in errors and `/status` start with it.
    pub dir: PathBuf,
    /// Absolute, for notify.
    pub root: PathBuf,
    load: Arc<dyn Load>,
    pub snapshots: watch::Sender<Arc<Snapshot>>,
    pub reloads: watch::Sender<ReloadStatus>,
}

impl Reloader {
    /// Loads `dir` for the first time (on this thread): invalid fixtures are an Err.
    pub(super) fn start(
        dir: PathBuf,
        root: PathBuf,
        codec: Codec,
        max: u64,
    ) -> Result<Self, Error> {
        let fixtures = Fixtures::new(dir.clone(), codec, max);
        Self::new(dir, root, Arc::new(fixtures))
    }

    /// [`Self::start`] with another way to load.
    pub(super) fn new(dir: PathBuf, root: PathBuf, load: Arc<dyn Load>) -> Result<Self, Error> {
        let started = Instant::now();
        let snapshot = load.load(1, &mut |_| {})?;
        log_loaded(&snapshot, "fixtures loaded");
        let status = ReloadStatus::loaded(&snapshot, started);
        Ok(Self {
            dir,
            root,
            load,
            snapshots: watch::channel(Arc::new(snapshot)).0,
            reloads: watch::channel(status).0,
        })
    }

    /// Reloads the directory and publishes the outcome. While it runs, `/status` shows it in
    /// progress with the files being decoded, and the log says so once it gets slow.
    pub(super) async fn reload(&self) {
        let (since, started) = (SystemTime::now(), Instant::now());
        self.reloads.send_modify(|s| {
            s.in_progress = Some(InProgress {
                since,
                files: Vec::new(),
            });
        });
        let current = self.snapshots.borrow().clone();
        let generation = current.generation + 1;
        let (files_tx, files_rx) = oneshot::channel();
        let load = self.load.clone();
        // Decoding a large fixture set takes long enough to stall a runtime thread.
        let job = tokio::task::spawn_blocking(move || {
            let mut files_tx = Some(files_tx);
            load.load(generation, &mut |files| {
                if let Some(tx) = files_tx.take() {
                    let _ = tx.send(files);
                }
            })
        });
        let loaded = self.wait(job, files_rx, started).await;
        let took = started.elapsed();
        if took >= SLOW {
            let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
            tracing::info!(took = ?Duration::from_millis(ms), "reload finished");
        }
        self.apply(&current, loaded, started);
    }

    /// Waits for the load, publishing which files it decodes and logging while it is slow.
    async fn wait(
        &self,
        mut job: tokio::task::JoinHandle<Result<Snapshot, FixtureError>>,
        mut files: oneshot::Receiver<Vec<PathBuf>>,
        started: Instant,
    ) -> Result<Snapshot, FixtureError> {
        let (mut decoding, mut listed) = (Vec::new(), false);
        let mut next_notice = SLOW;
        loop {
            tokio::select! {
                joined = &mut job => return joined.unwrap_or_else(|e| Err(loader_failed(e))),
                list = &mut files, if !listed => {
                    listed = true;
                    decoding = list.unwrap_or_default();
                    self.reloads.send_modify(|s| {
                        if let Some(running) = &mut s.in_progress {
                            running.files.clone_from(&decoding);
                        }
                    });
                }
                () = tokio::time::sleep_until(started + next_notice) => {
                    tracing::warn!(
                        files = %describe(&decoding, listed),
                        "reload still running after {}s; edits made meanwhile are loaded after it",
                        next_notice.as_secs()
                    );
                    next_notice *= 2;
                }
            }
        }
    }

    /// Publishes the outcome of a load made on top of `current`.
    fn apply(&self, current: &Snapshot, loaded: Result<Snapshot, FixtureError>, started: Instant) {
        match loaded {
            Ok(next) if same_content(current, &next) => {
                tracing::debug!(
                    generation = current.generation,
                    "fixtures reloaded: nothing changed"
                );
                // A fix that restores the last good content must still clear the error.
                self.finish(started, |s| s.set_ok(current));
            }
            Ok(next) => {
                log_loaded(&next, "fixtures reloaded");
                self.finish(started, |s| s.set_ok(&next));
                self.snapshots.send_replace(Arc::new(next));
            }
            Err(error) => {
                tracing::warn!(
                    file = %error.file.as_deref().unwrap_or(self.dir.as_path()).display(),
                    error = %error.message,
                    serving = current.generation,
                    "fixtures rejected; still serving the last good snapshot"
                );
                self.finish(started, |s| s.set_failed(current, &error));
            }
        }
    }

    fn finish(&self, started: Instant, outcome: impl FnOnce(&mut ReloadStatus)) {
        self.reloads.send_modify(|s| {
            outcome(s);
            s.in_progress = None;
            s.at = SystemTime::now();
            s.started = started.into_std();
            s.took = started.elapsed();
            s.count += 1;
        });
    }
}

/// The fixture directory read with one [`Loader`] for the server's life, so that a reload
/// decodes only the files that changed.
pub(super) struct Fixtures {
    dir: PathBuf,
    codec: Codec,
    state: Mutex<LoaderState>,
}

#[derive(Debug)]
struct LoaderState {
    loader: Loader,
    /// The zero-byte files of the last read: each is logged once, when it becomes empty, not
    /// again on every reload while it stays so.
    empty: BTreeSet<PathBuf>,
}

impl Fixtures {
    pub(super) fn new(dir: PathBuf, codec: Codec, max_file_bytes: u64) -> Self {
        let state = LoaderState {
            loader: Loader::new(max_file_bytes),
            empty: BTreeSet::new(),
        };
        Self {
            dir,
            codec,
            state: Mutex::new(state),
        }
    }
}

impl Load for Fixtures {
    fn load(
        &self,
        generation: u64,
        decoding: &mut dyn FnMut(Vec<PathBuf>),
    ) -> Result<Snapshot, FixtureError> {
        let mut state = lock(&self.state);
        let files = state.loader.read(&self.dir)?;
        let empty: BTreeSet<PathBuf> = files.empty().map(|e| e.path.clone()).collect();
        for newly in files.empty().filter(|e| !state.empty.contains(&e.path)) {
            let file = newly.path.display();
            if newly.kept {
                tracing::warn!(%file, "empty fixture file: treated as not written yet; its previous resources stay served (delete the file to remove them)");
            } else {
                tracing::warn!(%file, "empty fixture file: treated as not written yet; it adds nothing");
            }
        }
        state.empty = empty;
        decoding(files.to_decode());
        state.loader.decode(files, &self.codec, generation)
    }
}

/// The loader, even after a load panicked while holding it: a loader only changes at the end
/// of a good load, so what it holds is still right.
fn lock(loader: &Mutex<LoaderState>) -> MutexGuard<'_, LoaderState> {
    loader.lock().unwrap_or_else(|poisoned| {
        loader.clear_poison();
        poisoned.into_inner()
    })
}

fn loader_failed(e: tokio::task::JoinError) -> FixtureError {
    let why = if e.is_panic() {
        panic_message(e.into_panic())
    } else {
        e.to_string()
    };
    FixtureError {
        file: None,
        message: format!("the fixture loader failed: {why}"),
    }
}

/// The message a panic was raised with.
pub(super) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_string(),
            Err(_) => "(no message)".to_string(),
        },
    }
}

/// `a.yaml, b.yaml and 3 more`, for a log line.
fn describe(files: &[PathBuf], listed: bool) -> String {
    if !listed {
        return "(still reading the fixture directory)".to_string();
    }
    if files.is_empty() {
        return "(no file to decode: checking the whole set)".to_string();
    }
    let shown: Vec<String> = files
        .iter()
        .take(LOGGED_FILES)
        .map(|f| f.display().to_string())
        .collect();
    match files.len().saturating_sub(LOGGED_FILES) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

fn same_content(a: &Snapshot, b: &Snapshot) -> bool {
    a.base == b.base && a.overlays == b.overlays
}

/// One info line per successful load: generation, and per type its version and size.
pub(super) fn log_loaded(snapshot: &Snapshot, message: &str) {
    let mut types: Vec<_> = snapshot.base.iter().collect();
    types.sort_by_key(|(url, _)| (type_url::order(url), url.as_str()));
    let versions = types
        .iter()
        .map(|(url, t)| {
            format!(
                "{}={}({})",
                type_url::short_name(url),
                t.version,
                t.resources.len()
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    tracing::info!(
        generation = snapshot.generation,
        resources = snapshot.resource_count(),
        overlays = snapshot.overlays.len(),
        types = %versions,
        "{message}"
    );
}

impl ReloadStatus {
    /// A snapshot served as loaded, with no watcher behind it (snapshots from code).
    pub(crate) fn ok(snapshot: &Snapshot) -> Self {
        Self::loaded(snapshot, Instant::now())
    }

    /// After the first load, which began at `started`.
    fn loaded(snapshot: &Snapshot, started: Instant) -> Self {
        Self {
            generation: snapshot.generation,
            ok: true,
            file: None,
            error: None,
            at: SystemTime::now(),
            started: started.into_std(),
            took: started.elapsed(),
            count: 1,
            resources: snapshot.resource_count(),
            in_progress: None,
            watcher: WatcherHealth::default(),
        }
    }

    fn set_ok(&mut self, serving: &Snapshot) {
        self.generation = serving.generation;
        self.ok = true;
        self.file = None;
        self.error = None;
        self.resources = serving.resource_count();
    }

    fn set_failed(&mut self, serving: &Snapshot, error: &FixtureError) {
        self.generation = serving.generation;
        self.ok = false;
        self.file.clone_from(&error.file);
        self.error = Some(error.to_string());
        self.resources = serving.resource_count();
    }
}
