//! The whole server as the binary runs it (`app::start`: watcher + every transport) over a
//! temp fixture directory, with edits that wait until the server has taken them.

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use serde_json::Value;
use tempfile::TempDir;
use xdsloop_server::{
    Snapshot,
    app::{self, Config, Running},
    fixtures::ReloadStatus,
};
use xdsloop_tests::NoViolations;

use super::within;

/// A running server over its own fixture files.
pub struct FixtureServer {
    pub dir: TempDir,
    pub running: Running,
    /// Checks, when the server drops, that its clients broke no client rule.
    pub judge: NoViolations,
}

impl FixtureServer {
    /// Writes `files` (name → JSON list of resources) and starts the server on a free port.
    pub async fn start(files: &[(&str, Vec<Value>)]) -> Self {
        Self::start_with(files, |_| {}).await
    }

    /// [`Self::start`], with `configure` changing the server's configuration first.
    pub async fn start_with(
        files: &[(&str, Vec<Value>)],
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (name, resources) in files {
            write_json(&dir, name, resources);
        }
        Self::start_in(dir, "127.0.0.1:0".parse().unwrap(), configure).await
    }

    async fn start_in(
        dir: TempDir,
        listen: SocketAddr,
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        let mut config = Config::new(dir.path());
        config.listen = listen;
        config.debounce = Duration::from_millis(20);
        configure(&mut config);
        let running = app::start(config).await.unwrap_or_else(|e| panic!("{e}"));
        let judge = NoViolations::new(running.registry.clone());
        Self {
            dir,
            running,
            judge,
        }
    }

    /// This test's clients break client rules on purpose.
    pub fn allow_violations(&mut self) {
        self.judge.allow();
    }

    pub fn addr(&self) -> SocketAddr {
        self.running.addr
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.running.snapshots.borrow().clone()
    }

    /// Rewrites one file and waits until the server serves the result.
    pub async fn edit(&self, name: &str, resources: &[Value]) -> Arc<Snapshot> {
        let text = serde_json::to_string_pretty(resources).unwrap();
        write_served(&self.running, &self.dir.path().join(name), &text).await
    }

    /// Writes `text` to one file and waits until the reload is rejected.
    pub async fn break_file(&self, name: &str, text: &str) -> ReloadStatus {
        std::fs::write(self.dir.path().join(name), text).unwrap();
        let mut reloads = self.running.reloads.clone();
        let rejected = within("the bad edit to be rejected", async {
            reloads.wait_for(|r| !r.ok).await.map(|r| r.clone())
        });
        rejected.await.expect("the watcher is running")
    }

    /// Stops everything and starts a new server on the same port and fixtures.
    pub async fn restart(self) -> Self {
        let addr = self.addr();
        self.running.shutdown().await.expect("clean shutdown");
        Self::start_in(self.dir, addr, |_| {}).await
    }
}

/// Writes `text` to `file` in `running`'s fixture directory and waits until the server serves
/// the result (a new snapshot: the edit must change what is served).
pub async fn write_served(running: &Running, file: &Path, text: &str) -> Arc<Snapshot> {
    let before = running.snapshots.borrow().generation;
    std::fs::write(file, text).unwrap();
    let mut snapshots = running.snapshots.clone();
    let next = within("the edit to be served", async {
        snapshots
            .wait_for(|s| s.generation > before)
            .await
            .map(|s| s.clone())
    });
    next.await.expect("the watcher is running")
}

/// Replaces `from` by `to` in `file` (it must occur there) and waits until the server serves it.
pub async fn replace_served(running: &Running, file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{}: no {from:?}", file.display());
    write_served(running, file, &text.replace(from, to)).await;
}

fn write_json(dir: &TempDir, name: &str, resources: &[Value]) {
    let text = serde_json::to_string_pretty(resources).unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
}
