//! `/status` on a real server (`app::start` on a temp fixture dir, the admin routes on its xDS
//! port) with real ADS streams: what each client ACKed, NACKed and is waiting for.

mod admin;
mod decode;
mod exact;

use std::{path::Path, time::Duration};

use serde_json::Value;
use tempfile::TempDir;
use xdsloop_proto::{
    discovery::DiscoveryRequest,
    type_url::{CLUSTER, LISTENER},
};
use xdsloop_server::{
    app::Running,
    status::{StatusDocument, StreamView, SyncState, TypeView, remote},
    testkit::TestServer,
};

use crate::harness::*;

fn write(path: &Path, resources: &[Value]) {
    std::fs::write(path, serde_json::to_string_pretty(resources).unwrap()).unwrap();
}

/// A temp fixture dir with clusters `a`, `b` and listener `l`, served with the admin endpoint.
async fn serving() -> (TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("clusters.json"),
        &[cluster("a"), cluster("b")],
    );
    write(&dir.path().join("listeners.json"), &[listener("l", 10000)]);
    let server = TestServer::builder()
        .fixtures(dir.path())
        .admin()
        .configure(|config| config.debounce = Duration::from_millis(20));
    let server = server.start().await.unwrap_or_else(|e| panic!("{e}"));
    (dir, server)
}

fn admin_addr(running: &Running) -> String {
    running
        .admin_addr
        .expect("the admin routes are served")
        .to_string()
}

/// One real HTTP GET of `/status`.
async fn status(running: &Running) -> StatusDocument {
    let addr = admin_addr(running);
    remote::fetch(&addr).await.unwrap_or_else(|e| panic!("{e}"))
}

/// GETs `/status` until `check` holds (streams report on protocol events, and file events take
/// a moment), failing after the harness timeout.
async fn status_until(
    running: &Running,
    what: &str,
    check: impl Fn(&StatusDocument) -> bool,
) -> StatusDocument {
    let found = poll_until(what, TIMEOUT, async || {
        let doc = status(running).await;
        if check(&doc) {
            Ok(doc)
        } else {
            Err(format!("{doc:#?}"))
        }
    });
    found.await.unwrap_or_else(|e| panic!("{e}"))
}

fn stream_of<'a>(doc: &'a StatusDocument, node: &str) -> Option<&'a StreamView> {
    doc.streams
        .iter()
        .find(|s| s.node_id.as_deref() == Some(node))
}

fn type_of<'a>(doc: &'a StatusDocument, node: &str, type_url: &str) -> Option<&'a TypeView> {
    let stream = stream_of(doc, node)?;
    stream.types.iter().find(|t| t.type_url == type_url)
}

fn state(doc: &StatusDocument, node: &str, type_url: &str) -> Option<SyncState> {
    type_of(doc, node, type_url).map(|t| t.state)
}

/// A SotW client that received and ACKed the CDS wildcard response.
async fn synced_client(running: &Running, node: &str) -> (SotwClient, String) {
    let mut client = SotwClient::connect(running.addr, node).await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    (client, first.version_info)
}

#[tokio::test]
async fn acking_client_is_synced_with_the_acked_version() {
    let (_dir, server) = serving().await;
    let running = server.running().unwrap();
    let (_client, version) = synced_client(running, "node-1").await;
    let doc = status_until(running, "CDS SYNCED", |d| {
        state(d, "node-1", CLUSTER) == Some(SyncState::Synced)
    })
    .await;
    let stream = stream_of(&doc, "node-1").unwrap();
    assert_eq!(stream.transport, "ads-sotw");
    let peer: std::net::SocketAddr = stream.peer.as_deref().unwrap().parse().unwrap();
    assert!(peer.ip().is_loopback());
    let cds = type_of(&doc, "node-1", CLUSTER).unwrap();
    assert_eq!(cds.alias, "cds");
    assert!(cds.wildcard);
    assert_eq!(cds.last_acked.as_ref().unwrap().version, version);
    assert_eq!(cds.last_sent.as_ref().unwrap().version, version);
    assert_eq!(cds.last_sent.as_ref().unwrap().resources, 2);
    assert_eq!(cds.snapshot_version, version);
    assert!(cds.last_nack.is_none());
    assert_eq!((doc.totals.open_streams, doc.totals.synced), (1, 1));
    assert!(doc.reload.ok);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn after_a_fixture_edit_and_before_the_ack_it_is_pending() {
    let (dir, server) = serving().await;
    let running = server.running().unwrap();
    let (mut client, v1) = synced_client(running, "node-1").await;
    write(
        &dir.path().join("clusters.json"),
        &[cluster("a"), cluster("c")],
    );
    let pushed = client.recv().await;
    assert_ne!(pushed.version_info, v1);
    // The stream records a response before it sends it: no waiting needed.
    let doc = status(running).await;
    let cds = type_of(&doc, "node-1", CLUSTER).unwrap();
    assert_eq!(cds.state, SyncState::Pending);
    let sent = cds.last_sent.as_ref().unwrap();
    assert_eq!(
        (&sent.version, &sent.nonce),
        (&pushed.version_info, &pushed.nonce)
    );
    assert_eq!(
        cds.last_acked.as_ref().unwrap().version,
        v1,
        "still the old ACK"
    );
    assert_eq!(cds.snapshot_version, pushed.version_info);
    assert_eq!(doc.totals.pending, 1);

    client.ack(&pushed, &[]).await;
    let doc = status_until(running, "SYNCED after the ACK", |d| {
        state(d, "node-1", CLUSTER) == Some(SyncState::Synced)
    })
    .await;
    let cds = type_of(&doc, "node-1", CLUSTER).unwrap();
    assert_eq!(
        cds.last_acked.as_ref().unwrap().version,
        pushed.version_info
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn nacking_client_is_nacked_with_its_exact_message_and_is_not_resent() {
    let (dir, server) = serving().await;
    let running = server.running().unwrap();
    let (mut client, v1) = synced_client(running, "node-1").await;
    let lds = client.subscribe(LISTENER, &[]).await;
    client.ack(&lds, &[]).await;
    write(
        &dir.path().join("clusters.json"),
        &[cluster_with_timeout("a", 7)],
    );
    let pushed = client.recv().await;
    assert_eq!(pushed.type_url, CLUSTER);
    let message = "cluster \"a\": connect_timeout 7s too long\n  at clusters[0] — ✗";
    client
        .send(DiscoveryRequest {
            version_info: v1.clone(),
            type_url: CLUSTER.to_string(),
            response_nonce: pushed.nonce.clone(),
            error_detail: nack_status(message),
            ..Default::default()
        })
        .await;
    let doc = status_until(running, "CDS NACKED", |d| {
        state(d, "node-1", CLUSTER) == Some(SyncState::Nacked)
    })
    .await;
    let cds = type_of(&doc, "node-1", CLUSTER).unwrap();
    let nack = cds.last_nack.as_ref().unwrap();
    assert_eq!(nack.message, message, "verbatim, newlines and all");
    assert_eq!(
        (&nack.version, &nack.nonce),
        (&pushed.version_info, &pushed.nonce)
    );
    assert_eq!(cds.last_acked.as_ref().unwrap().version, v1);
    assert_eq!(doc.totals.nacked, 1);

    // Another type's change reaches the same stream; the NACKed CDS must not come first.
    write(&dir.path().join("listeners.json"), &[listener("l", 10001)]);
    let next = client.recv().await;
    assert_eq!(next.type_url, LISTENER, "the NACKed version is not resent");
    client.ack(&next, &[]).await;
    let doc = status_until(running, "LDS SYNCED", |d| {
        state(d, "node-1", LISTENER) == Some(SyncState::Synced)
    })
    .await;
    let cds = type_of(&doc, "node-1", CLUSTER).unwrap();
    assert_eq!(cds.state, SyncState::Nacked);
    assert_eq!(
        cds.last_sent.as_ref().unwrap().nonce,
        pushed.nonce,
        "nothing sent since"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn delta_client_states_show_with_its_transport() {
    let (_dir, server) = serving().await;
    let running = server.running().unwrap();
    let mut client = DeltaClient::connect(running.addr, "delta-1").await;
    client.change(CLUSTER, &["a", "missing"], &[], "").await;
    let first = client.recv().await;
    let doc = status(running).await;
    assert_eq!(state(&doc, "delta-1", CLUSTER), Some(SyncState::Pending));
    assert_eq!(stream_of(&doc, "delta-1").unwrap().transport, "ads-delta");
    client.ack(&first).await;
    let doc = status_until(running, "Delta CDS SYNCED", |d| {
        state(d, "delta-1", CLUSTER) == Some(SyncState::Synced)
    })
    .await;
    let cds = type_of(&doc, "delta-1", CLUSTER).unwrap();
    assert!(!cds.wildcard);
    assert_eq!(cds.names, ["a", "missing"]);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn disconnected_client_leaves_the_open_streams_and_shows_as_recently_closed() {
    let (_dir, server) = serving().await;
    let running = server.running().unwrap();
    let (client, version) = synced_client(running, "leaving").await;
    let (_stays, _) = synced_client(running, "staying").await;
    let doc = status_until(running, "both SYNCED", |d| {
        state(d, "leaving", CLUSTER) == Some(SyncState::Synced)
            && state(d, "staying", CLUSTER) == Some(SyncState::Synced)
    })
    .await;
    let id = stream_of(&doc, "leaving").unwrap().id;
    drop(client);
    let doc = status_until(running, "the closed stream to leave", |d| {
        stream_of(d, "leaving").is_none()
    })
    .await;
    assert!(stream_of(&doc, "staying").is_some());
    assert_eq!(doc.totals.open_streams, 1);
    let closed = &doc.recently_closed[0];
    assert_eq!(
        (closed.id, closed.node_id.as_deref()),
        (id, Some("leaving"))
    );
    assert!(closed.disconnected_at.is_some());
    let cds = &closed.types[0];
    assert_eq!(
        cds.last_acked.as_ref().unwrap().version,
        version,
        "last state kept"
    );
    server.shutdown().await.unwrap();
}
