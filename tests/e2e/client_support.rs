//! Shared by the `client_*` areas: the testkit's server over a temp copy of `fixtures/demo`
//! (watched and reloaded as `xdsloop-server` does), and a real `xdsloop-client` pointed at it.

#![allow(dead_code)] // Each client area uses a different subset.

use std::net::SocketAddr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;
use tokio::sync::broadcast;
use xdsloop_client::{
    BackoffConfig, Client, ClientConfig, Interest, Report, Source, Store, Subscription, Variant,
};
use xdsloop_server::Snapshot;
use xdsloop_server::testkit::{Builder, TestServer};
use xdsloop_tests::{NoViolations, copy_dir};

/// Longest wait for something that should happen; waits end as soon as it does.
pub const WAIT: Duration = Duration::from_secs(15);
/// How long to watch for something that must NOT happen.
pub const QUIET: Duration = Duration::from_millis(500);
const DEBOUNCE: Duration = Duration::from_millis(50);
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

pub fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo")
}

/// A temp copy of the demo fixtures, to edit before or while serving it.
pub fn demo_copy() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&demo_dir(), dir.path());
    dir
}

/// The testkit's server over `dir`, as the binary serves a fixture directory (admin routes
/// on the xDS port), with a fast debounce and a large message limit.
pub fn demo_server(dir: &Path) -> Builder {
    TestServer::builder()
        .fixtures(dir)
        .admin()
        .max_message_bytes(MAX_MESSAGE_BYTES)
        .configure(|config| config.debounce = DEBOUNCE)
}

/// The testkit's server over a temp copy of the demo, which lives as long as it does, and
/// the guard that fails the test if xdsloop-client broke a client rule.
pub struct Demo {
    pub dir: TempDir,
    pub server: TestServer,
    pub judge: NoViolations,
}

impl Deref for Demo {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl Demo {
    pub async fn start() -> Self {
        Self::start_with(|server| server).await
    }

    /// [`Demo::start`], with `tweak` changing how the server starts (TLS, limits, ...).
    pub async fn start_with(tweak: impl FnOnce(Builder) -> Builder) -> Self {
        let dir = demo_copy();
        let server = tweak(demo_server(dir.path())).start().await;
        Self::judged(dir, server.unwrap_or_else(|e| panic!("{e}")))
    }

    /// A server over `dir` on `listen`: the address of one stopped earlier, to reconnect.
    pub async fn on(dir: TempDir, listen: SocketAddr) -> Self {
        let server = demo_server(dir.path()).listen(listen).start().await;
        Self::judged(dir, server.unwrap_or_else(|e| panic!("{e}")))
    }

    fn judged(dir: TempDir, server: TestServer) -> Self {
        let judge = NoViolations::new(server.registry().clone());
        Self { dir, server, judge }
    }

    /// Stops the server completely (streams, listener, watcher), keeping its fixtures.
    pub async fn stop(self) -> (TempDir, SocketAddr) {
        let addr = self.server.addr();
        self.server.shutdown().await.unwrap();
        (self.dir, addr)
    }

    /// Rewrites a fixture file and waits until the server serves the result.
    pub async fn edit(&self, file: &str, edit: impl FnOnce(String) -> String) -> Arc<Snapshot> {
        let text = edit(std::fs::read_to_string(self.dir.path().join(file)).unwrap());
        let written = self.server.write_fixture(file, &text, WAIT).await;
        written.unwrap_or_else(|e| panic!("{e}"))
    }
}

/// A client config with fast backoff for tests (the defaults would make restarts slow).
pub fn config(addr: SocketAddr, source: Source) -> ClientConfig {
    let mut config = ClientConfig::new(addr.to_string(), "client-e2e");
    config.source = source;
    config.follow_deps = true;
    config.backoff = BackoffConfig {
        initial: Duration::from_millis(50),
        max: Duration::from_millis(500),
        ..BackoffConfig::default()
    };
    config
}

/// Keeps a subscription read (an unread one eventually holds the client up).
pub fn drain(mut subscription: Subscription) {
    tokio::spawn(async move { while subscription.recv().await.is_some() {} });
}

/// A client following dependencies from LDS and CDS wildcard, like the CLI's default.
pub async fn demo_client(config: ClientConfig) -> (Client, broadcast::Receiver<Report>) {
    let client = Client::start(config, std::future::pending()).unwrap();
    let reports = client.reports();
    for type_url in [
        xdsloop_proto::type_url::LISTENER,
        xdsloop_proto::type_url::CLUSTER,
    ] {
        drain(
            client
                .subscribe(type_url, Interest::Wildcard)
                .await
                .unwrap(),
        );
    }
    (client, reports)
}

/// Waits until the applied store satisfies `done`.
pub async fn store_where(client: &Client, done: impl Fn(&Store) -> bool) -> Arc<Store> {
    let mut store = client.store();
    let found = tokio::time::timeout(WAIT, store.wait_for(|s| done(s))).await;
    let found =
        found.unwrap_or_else(|_| panic!("store never matched: {:#?}", client.store().borrow()));
    found.unwrap().clone()
}

/// The next report matching `pick`, skipping others.
pub async fn report<T>(
    reports: &mut broadcast::Receiver<Report>,
    mut pick: impl FnMut(&Report) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            let report = reports.recv().await.expect("reports flow");
            if let Some(found) = pick(&report) {
                return found;
            }
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .expect("expected report")
}

/// Every report until `QUIET` passes without one.
pub async fn quiet_reports(reports: &mut broadcast::Receiver<Report>) -> Vec<Report> {
    let mut seen = Vec::new();
    while let Ok(Ok(report)) = tokio::time::timeout(QUIET, reports.recv()).await {
        seen.push(report);
    }
    seen
}

/// Whether the store holds exactly what the snapshot serves to this client, per type:
/// SotW by type version, Delta by per-resource versions.
pub fn matches_snapshot(store: &Store, snapshot: &Snapshot, source: &Source) -> bool {
    snapshot
        .type_urls("client-e2e")
        .into_iter()
        .all(|type_url| {
            let served = snapshot.get("client-e2e", type_url).unwrap();
            let Some(held) = store.of_type(type_url) else {
                return false;
            };
            let same_names = held.resources.keys().eq(served.resources.keys());
            let same_versions = match source.mode() {
                Variant::Sotw => held.version == served.version,
                Variant::Delta => served.resources.iter().all(|(name, r)| {
                    held.resources
                        .get(name)
                        .is_some_and(|h| h.version == r.version)
                }),
            };
            same_names && same_versions
        })
}
