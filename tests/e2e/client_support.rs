//! Shared by the `client_*` areas: the real server (`app::start`) on 127.0.0.1 over
//! a temp copy of `fixtures/demo`, and a real `xdsloop-client` pointed at it.

#![allow(dead_code)] // Each client area uses a different subset.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;
use tokio::sync::broadcast;
use xdsloop_client::{
    BackoffConfig, Client, ClientConfig, Interest, Report, Source, Store, Subscription, Variant,
};
use xdsloop_server::Snapshot;
use xdsloop_server::app::{self, Running};
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

/// A running server (`app::start`, as the binary runs it) over a temp copy of the demo.
pub struct Served {
    pub dir: TempDir,
    pub running: Running,
    /// Checks, when the server stops or drops, that xdsloop-client broke no client rule.
    pub judge: NoViolations,
}

impl Served {
    pub async fn demo() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&demo_dir(), dir.path());
        Self::start(dir, "127.0.0.1:0".parse().unwrap()).await
    }

    async fn start(dir: TempDir, listen: SocketAddr) -> Self {
        let mut config = app::Config::new(dir.path());
        config.listen = listen;
        config.debounce = DEBOUNCE;
        config.max_message_bytes = MAX_MESSAGE_BYTES;
        let running = app::start(config).await.unwrap();
        let judge = NoViolations::new(running.registry.clone());
        Self {
            dir,
            running,
            judge,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.running.addr
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.running.snapshots.borrow().clone()
    }

    /// Stops the server completely (streams, listener, watcher).
    pub async fn stop(self) -> (TempDir, SocketAddr) {
        let addr = self.addr();
        self.running.shutdown().await.unwrap();
        (self.dir, addr)
    }

    /// A new server on the same address and fixtures.
    pub async fn restart(dir: TempDir, addr: SocketAddr) -> Self {
        Self::start(dir, addr).await
    }

    /// Rewrites a fixture file and waits until the server serves the result.
    pub async fn edit(&mut self, file: &str, edit: impl FnOnce(String) -> String) -> Arc<Snapshot> {
        let path = self.dir.path().join(file);
        let before = self.snapshot().generation;
        let text = edit(std::fs::read_to_string(&path).unwrap());
        std::fs::write(&path, text).unwrap();
        let mut snapshots = self.running.snapshots.clone();
        let next = snapshots.wait_for(|s| s.generation > before);
        let next = tokio::time::timeout(WAIT, next)
            .await
            .expect("fixture reloaded");
        next.unwrap().clone()
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
