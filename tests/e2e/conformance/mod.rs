//! The server's conformance judge against raw clients that break one client rule each
//! (docs/protocol.md, "What the server checks"): each test asserts the exact check and its
//! evidence, `--strict` ends the stream naming the rule, `--conformance off` finds nothing.
//! Well-behaved clients are checked everywhere else: every test server holds a
//! [`NoViolations`] guard.

mod reconnect;
mod report;
mod stream;

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Streaming, transport::Channel};
use xdsloop_proto::{
    discovery::{
        DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    },
    envoy::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient,
};
use xdsloop_server::{Violation, status::Registry};

use crate::harness::*;

/// Two clusters with their endpoints.
fn two_clusters() -> ResourceSet {
    ResourceSet::default()
        .with(cluster("alpha"))
        .with(cluster("beta"))
        .with(endpoints("alpha", 8001))
        .with(endpoints("beta", 8002))
}

/// A server whose clients misbehave on purpose.
async fn lenient_server() -> Judged {
    let mut server = serve(two_clusters()).await;
    server.allow_violations();
    server
}

/// A raw SotW ADS stream on `channel` (streams on one channel share its connection).
async fn sotw_on(
    channel: &Channel,
) -> (mpsc::Sender<DiscoveryRequest>, Streaming<DiscoveryResponse>) {
    let (tx, rx) = mpsc::channel(64);
    let mut client = AggregatedDiscoveryServiceClient::new(channel.clone());
    let responses = within("the SotW stream to open", async {
        let stream = client.stream_aggregated_resources(ReceiverStream::new(rx));
        stream.await.expect("stream opens").into_inner()
    })
    .await;
    (tx, responses)
}

/// A raw Delta ADS stream on `channel`.
async fn delta_on(
    channel: &Channel,
) -> (
    mpsc::Sender<DeltaDiscoveryRequest>,
    Streaming<DeltaDiscoveryResponse>,
) {
    let (tx, rx) = mpsc::channel(64);
    let mut client = AggregatedDiscoveryServiceClient::new(channel.clone());
    let responses = within("the Delta stream to open", async {
        let stream = client.delta_aggregated_resources(ReceiverStream::new(rx));
        stream.await.expect("stream opens").into_inner()
    })
    .await;
    (tx, responses)
}

/// Every violation the registry lists, open and recently closed streams alike.
fn all_violations(registry: &Registry) -> Vec<Arc<Violation>> {
    let open = registry.streams();
    let closed = registry.recently_closed();
    let streams = open.iter().chain(closed.iter().map(|c| &c.stream));
    streams
        .flat_map(|s| s.violations.last.iter().cloned())
        .collect()
}

/// Waits until the judge reports `check`, and returns it.
async fn violation(registry: &Registry, check: &str) -> Arc<Violation> {
    let what = format!("the judge to report {check}");
    let found = poll_until(&what, TIMEOUT, async || {
        let found = all_violations(registry);
        found.into_iter().find(|v| v.check == check)
    });
    found.await.unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until `n` streams have closed.
async fn closed(registry: &Registry, n: usize) {
    let closed = poll_until("the stream to close", TIMEOUT, async || {
        registry.recently_closed().len() >= n
    });
    closed.await.unwrap_or_else(|e| panic!("{e}"));
}
