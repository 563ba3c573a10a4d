//! Reusable end-to-end harness: a real server on 127.0.0.1:0 fed from an in-memory snapshot
//! source, real tonic ADS clients (SotW and Delta), resource builders, and waiting helpers.
//! Test areas `use crate::harness::*;`.
//!
//! Waiting rules: every receive has a timeout ([`TIMEOUT`]); [`QUIET`] is used only to assert
//! that nothing arrives.

#![allow(dead_code)] // Shared by several test areas; not every area uses every helper.

mod clients;
mod events;
mod fixture_server;
mod http;
mod invalid;
mod naive_server;
mod resources;
mod sse;

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use tokio::sync::watch;
use xdsloop_server::{
    Snapshot,
    app::DEFAULT_MAX_MESSAGE_BYTES,
    app::{GrpcServer, serve},
    status::{Registry, StreamStatus},
};
pub use xdsloop_tests::NoViolations;

pub use clients::*;
pub use events::Events;
pub use fixture_server::*;
pub use http::*;
pub use invalid::{INVALID, SECRET_TEXT};
pub use naive_server::{Bug, Legal, NaiveServer};
pub use resources::*;
pub use sse::{Sse, SseEvent};

/// Longest wait for something that should happen.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// How long to watch for something that must NOT happen.
pub const QUIET: Duration = Duration::from_millis(300);

/// The gRPC server on an in-memory snapshot source.
pub struct TestServer {
    pub server: GrpcServer,
    pub source: watch::Sender<Arc<Snapshot>>,
    /// Checks, when the server drops, that its clients broke no client rule.
    pub judge: NoViolations,
}

impl TestServer {
    pub async fn start(snapshot: Snapshot) -> Self {
        Self::start_with_limit(snapshot, DEFAULT_MAX_MESSAGE_BYTES).await
    }

    pub async fn start_with_limit(snapshot: Snapshot, max_message_bytes: usize) -> Self {
        let (source, snapshots) = watch::channel(Arc::new(snapshot));
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server = serve(listen, snapshots, max_message_bytes)
            .await
            .expect("server starts on a free port");
        let judge = NoViolations::new(server.registry().clone());
        Self {
            server,
            source,
            judge,
        }
    }

    /// This test's clients break client rules on purpose.
    pub fn allow_violations(&mut self) {
        self.judge.allow();
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    pub fn registry(&self) -> &Registry {
        self.server.registry()
    }

    /// Publishes a new snapshot, as a fixture reload would.
    pub fn publish(&self, snapshot: Snapshot) {
        self.source.send_replace(Arc::new(snapshot));
    }

    pub async fn sotw(&self, node: &str) -> SotwClient {
        SotwClient::connect(self.addr(), node).await
    }

    pub async fn delta(&self, node: &str) -> DeltaClient {
        DeltaClient::connect(self.addr(), node).await
    }
}

/// Waits for `future` or fails the test after [`TIMEOUT`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(TIMEOUT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {TIMEOUT:?} waiting for {what}"))
}

/// Waits until `check` holds on the registry (it changes on protocol events).
pub async fn registry_until(
    registry: &Registry,
    what: &str,
    check: impl Fn(&[StreamStatus]) -> bool,
) -> Vec<StreamStatus> {
    within(what, async {
        loop {
            let streams = registry.streams();
            if check(&streams) {
                return streams;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}
