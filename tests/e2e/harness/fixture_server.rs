//! The testkit's server over a temp fixture directory (watched and reloaded as the binary
//! does): fixture files a test writes, or a copy of `fixtures/demo`; with edits that wait until
//! the server has taken them.

use std::{net::SocketAddr, ops::Deref, path::Path, sync::Arc, time::Duration};

use serde_json::Value;
use tempfile::TempDir;
use xdsloop_server::{
    Snapshot,
    app::Running,
    fixtures::ReloadStatus,
    testkit::{Builder, TestServer},
};
use xdsloop_tests::NoViolations;

use super::{TIMEOUT, within};
use crate::client_support::demo_copy;

/// The demo's large CDS responses (and the client tests' large sets) fit under it.
const DEMO_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The testkit's server over its own fixture files, which live as long as it does, and the
/// guard that fails the test if its clients broke a client rule.
pub(crate) struct FixtureServer {
    pub dir: TempDir,
    pub server: TestServer,
    /// Checks, when the server drops, that its clients broke no client rule.
    pub judge: NoViolations,
}

impl Deref for FixtureServer {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl FixtureServer {
    /// Writes `files` (name → JSON list of resources) and starts the server on a free port.
    pub(crate) async fn start(files: &[(&str, Vec<Value>)]) -> Self {
        Self::start_with(files, |server| server).await
    }

    /// [`Self::start`], with `tweak` saying how the server starts (conformance mode, a
    /// recording, ...).
    pub(crate) async fn start_with(
        files: &[(&str, Vec<Value>)],
        tweak: impl FnOnce(Builder) -> Builder,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (name, resources) in files {
            write_json(&dir, name, resources);
        }
        Self::start_in(dir, "127.0.0.1:0".parse().unwrap(), tweak).await
    }

    async fn start_in(
        dir: TempDir,
        listen: SocketAddr,
        tweak: impl FnOnce(Builder) -> Builder,
    ) -> Self {
        let server = TestServer::builder()
            .fixtures(dir.path())
            .listen(listen)
            .admin()
            .configure(|config| config.debounce = Duration::from_millis(20));
        let server = tweak(server)
            .start()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let judge = NoViolations::new(server.registry().clone());
        Self { dir, server, judge }
    }

    /// A temp copy of `fixtures/demo`, served with a large message limit (as the client tests
    /// want it).
    pub(crate) async fn demo() -> Self {
        Self::demo_with(|server| server).await
    }

    /// [`Self::demo`], with `tweak` saying how the server starts (TLS, limits, ...).
    pub(crate) async fn demo_with(tweak: impl FnOnce(Builder) -> Builder) -> Self {
        Self::on(demo_copy(), "127.0.0.1:0".parse().unwrap(), tweak).await
    }

    /// The server over `dir` on `listen`: the address of one stopped earlier, to reconnect.
    pub(crate) async fn on(
        dir: TempDir,
        listen: SocketAddr,
        tweak: impl FnOnce(Builder) -> Builder,
    ) -> Self {
        Self::start_in(dir, listen, |server| {
            tweak(server.max_message_bytes(DEMO_MAX_MESSAGE_BYTES))
        })
        .await
    }

    /// Stops the server completely (streams, listener, watcher), keeping its fixtures.
    pub(crate) async fn stop(self) -> (TempDir, SocketAddr) {
        let addr = self.server.addr();
        self.server.shutdown().await.expect("clean shutdown");
        (self.dir, addr)
    }

    /// Rewrites a fixture file by `edit` and waits until the server serves the result.
    pub(crate) async fn edit_text(
        &self,
        file: &str,
        edit: impl FnOnce(String) -> String,
    ) -> Arc<Snapshot> {
        let text = edit(std::fs::read_to_string(self.dir.path().join(file)).unwrap());
        let written = self.server.write_fixture(file, &text, TIMEOUT).await;
        written.unwrap_or_else(|e| panic!("{e}"))
    }

    /// This test's clients break client rules on purpose.
    pub(crate) fn allow_violations(&mut self) {
        self.judge.allow();
    }

    /// Rewrites one file and waits until the server serves the result.
    pub(crate) async fn edit(&self, name: &str, resources: &[Value]) -> Arc<Snapshot> {
        let text = serde_json::to_string_pretty(resources).unwrap();
        let written = self.server.write_fixture(name, &text, TIMEOUT).await;
        written.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Writes `text` to one file and waits until the reload is rejected.
    pub(crate) async fn break_file(&self, name: &str, text: &str) -> ReloadStatus {
        std::fs::write(self.dir.path().join(name), text).unwrap();
        let mut reloads = self.server.running().expect("fixtures").reloads.clone();
        let rejected = within("the bad edit to be rejected", async {
            reloads.wait_for(|r| !r.ok).await.map(|r| r.clone())
        });
        rejected.await.expect("the watcher is running")
    }

    /// Stops everything and starts a new server on the same port and fixtures.
    pub(crate) async fn restart(self) -> Self {
        let addr = self.server.addr();
        self.server.shutdown().await.expect("clean shutdown");
        Self::start_in(self.dir, addr, |server| server).await
    }
}

/// Writes `text` to `file` in `running`'s fixture directory and waits until the server serves
/// the result (a new snapshot: the edit must change what is served).
pub(crate) async fn write_served(running: &Running, file: &Path, text: &str) -> Arc<Snapshot> {
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
pub(crate) async fn replace_served(running: &Running, file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{}: no {from:?}", file.display());
    write_served(running, file, &text.replace(from, to)).await;
}

fn write_json(dir: &TempDir, name: &str, resources: &[Value]) {
    let text = serde_json::to_string_pretty(resources).unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
}
