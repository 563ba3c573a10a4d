//! One reload: load the directory off the async threads, then publish the new snapshot, or keep
//! the last good one and publish the rejection.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::SystemTime,
};

use tokio::sync::watch;
use xdsloop_proto::{Codec, type_url};

use super::ReloadStatus;
use crate::{
    config::fixtures::{self, FixtureError},
    snapshot::Snapshot,
};

pub struct Reloader {
    pub dir: PathBuf,
    pub codec: Codec,
    /// Keeps each file's decoded documents between reloads (see [`fixtures::Loader`]).
    pub loader: Arc<Mutex<fixtures::Loader>>,
    pub snapshots: watch::Sender<Arc<Snapshot>>,
    pub reloads: watch::Sender<ReloadStatus>,
}

impl Reloader {
    pub async fn reload(&self) {
        let current = self.snapshots.borrow().clone();
        let (dir, codec, loader) = (self.dir.clone(), self.codec.clone(), self.loader.clone());
        let generation = current.generation + 1;
        // Decoding a large fixture set takes long enough to stall a runtime thread.
        let loaded = tokio::task::spawn_blocking(move || {
            let mut loader = loader.lock().unwrap_or_else(|e| e.into_inner());
            loader.load(&dir, &codec, generation)
        })
        .await
        .unwrap_or_else(|e| {
            Err(FixtureError {
                file: None,
                message: format!("the fixture loader failed: {e}"),
            })
        });
        self.apply(&current, loaded);
    }

    /// Publishes the outcome of a load made on top of `current`.
    pub fn apply(&self, current: &Snapshot, loaded: Result<Snapshot, FixtureError>) {
        match loaded {
            Ok(next) if same_content(current, &next) => {
                tracing::debug!(
                    generation = current.generation,
                    "fixtures reloaded: nothing changed"
                );
                // A fix that restores the last good content must still clear the error.
                if !self.reloads.borrow().ok {
                    self.reloads.send_replace(ReloadStatus::ok(current));
                }
            }
            Ok(next) => {
                log_loaded(&next, "fixtures reloaded");
                self.reloads.send_replace(ReloadStatus::ok(&next));
                self.snapshots.send_replace(Arc::new(next));
            }
            Err(error) => {
                tracing::warn!(
                    file = %error.file.as_deref().unwrap_or(self.dir.as_path()).display(),
                    error = %error.message,
                    serving = current.generation,
                    "fixtures rejected; still serving the last good snapshot"
                );
                self.reloads
                    .send_replace(ReloadStatus::failed(current, &error));
            }
        }
    }
}

fn same_content(a: &Snapshot, b: &Snapshot) -> bool {
    a.base == b.base && a.overlays == b.overlays
}

/// One info line per successful load: generation, and per type its version and size.
pub fn log_loaded(snapshot: &Snapshot, message: &str) {
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
    pub(crate) fn ok(snapshot: &Snapshot) -> Self {
        Self {
            generation: snapshot.generation,
            ok: true,
            file: None,
            error: None,
            at: SystemTime::now(),
            resources: snapshot.resource_count(),
        }
    }

    pub(crate) fn failed(serving: &Snapshot, error: &FixtureError) -> Self {
        Self {
            generation: serving.generation,
            ok: false,
            file: error.file.clone(),
            error: Some(error.to_string()),
            at: SystemTime::now(),
            resources: serving.resource_count(),
        }
    }
}
