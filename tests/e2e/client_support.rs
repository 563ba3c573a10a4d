//! Shared by the `client_*` areas: a real `xdsloop-client` pointed at the testkit's server over
//! a temp copy of `fixtures/demo` ([`FixtureServer::demo`]), and waits on what it applied.

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
use xdsloop_tests::copy_dir;

pub(crate) use crate::harness::FixtureServer;

/// Longest wait for something that should happen; waits end as soon as it does.
pub(crate) const WAIT: Duration = Duration::from_secs(15);
/// How long to watch for something that must NOT happen.
pub(crate) const QUIET: Duration = Duration::from_millis(500);

pub(crate) fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo")
}

/// A temp copy of the demo fixtures, to edit before or while serving it.
pub(crate) fn demo_copy() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&demo_dir(), dir.path());
    dir
}

/// A client config with fast backoff for tests (the defaults would make restarts slow).
pub(crate) fn config(addr: SocketAddr, source: Source) -> ClientConfig {
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
pub(crate) fn drain(mut subscription: Subscription) {
    tokio::spawn(async move { while subscription.recv().await.is_some() {} });
}

/// A client following dependencies from LDS and CDS wildcard, like the CLI's default.
pub(crate) async fn demo_client(config: ClientConfig) -> (Client, broadcast::Receiver<Report>) {
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
pub(crate) async fn store_where(client: &Client, done: impl Fn(&Store) -> bool) -> Arc<Store> {
    let mut store = client.store();
    let found = tokio::time::timeout(WAIT, store.wait_for(|s| done(s))).await;
    let found =
        found.unwrap_or_else(|_| panic!("store never matched: {:#?}", client.store().borrow()));
    found.unwrap().clone()
}

/// The next report matching `pick`, skipping others.
pub(crate) async fn report<T>(
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
pub(crate) async fn quiet_reports(reports: &mut broadcast::Receiver<Report>) -> Vec<Report> {
    let mut seen = Vec::new();
    while let Ok(Ok(report)) = tokio::time::timeout(QUIET, reports.recv()).await {
        seen.push(report);
    }
    seen
}

/// Whether the store holds exactly what the snapshot serves to this client, per type:
/// SotW by type version, Delta by per-resource versions.
pub(crate) fn matches_snapshot(store: &Store, snapshot: &Snapshot, source: &Source) -> bool {
    snapshot
        .type_urls("client-e2e")
        .into_iter()
        .all(|type_url| {
            let served = snapshot.get("client-e2e", type_url).unwrap();
            let Some(held) = store.of_type(type_url) else {
                return false;
            };
            let same_names = held.resources.keys().eq(served.resources.keys());
            let same_versions = match source.variant() {
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
