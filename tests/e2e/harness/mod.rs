//! Reusable end-to-end harness: the testkit's server on 127.0.0.1:0 serving resources given in
//! code, real tonic ADS clients (SotW and Delta), resource builders, and waiting helpers.
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

use std::{future::Future, ops::Deref, time::Duration};

use xdsloop_server::status::{Registry, StreamStatus};
pub(crate) use xdsloop_server::testkit::{Builder, TestServer, poll_until};
pub(crate) use xdsloop_tests::NoViolations;

pub(crate) use clients::*;
pub(crate) use events::Events;
pub(crate) use fixture_server::*;
pub(crate) use http::*;
pub(crate) use invalid::{INVALID, SECRET_TEXT};
pub(crate) use naive_server::{Bug, Legal, NaiveServer};
pub(crate) use resources::*;
pub(crate) use sse::{Sse, SseEvent};

/// Longest wait for something that should happen.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);
/// How long to watch for something that must NOT happen.
pub(crate) const QUIET: Duration = Duration::from_millis(300);

/// The testkit's server on a set given in code, and the guard that fails the test when it
/// drops if the server's clients broke a client rule.
pub(crate) struct Judged {
    pub server: TestServer,
    pub judge: NoViolations,
}

impl Deref for Judged {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl Judged {
    /// This test's clients break client rules on purpose.
    pub(crate) fn allow_violations(&mut self) {
        self.judge.allow();
    }
}

/// The testkit's server on `set`, on a free port.
pub(crate) async fn serve(set: ResourceSet) -> Judged {
    serve_with(TestServer::builder(), set).await
}

/// [`serve`], with `builder` saying how the server starts.
pub(crate) async fn serve_with(builder: Builder, set: ResourceSet) -> Judged {
    let server = set.serve_with(builder).await;
    let judge = NoViolations::new(server.registry().clone());
    Judged { server, judge }
}

/// Waits for `future` or fails the test after [`TIMEOUT`].
pub(crate) async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(TIMEOUT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {TIMEOUT:?} waiting for {what}"))
}

/// Waits until `check` holds on the registry (it changes on protocol events).
pub(crate) async fn registry_until(
    registry: &Registry,
    what: &str,
    check: impl Fn(&[StreamStatus]) -> bool,
) -> Vec<StreamStatus> {
    let found = poll_until(what, TIMEOUT, async || {
        let streams = registry.streams();
        check(&streams).then_some(streams)
    });
    found.await.unwrap_or_else(|e| panic!("{e}"))
}
