//! `/status` is exact: SYNCED only when the stream ACKed the version it
//! would be served now, and STALE (not PENDING) for a stream that cannot take pushes.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Endpoint;
use xdsloop_proto::envoy::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use xdsloop_tests::copy_dir;

use super::*;

/// The demo set, copied to a temp dir and served (admin routes on the xDS port).
async fn serving_demo() -> (TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo");
    copy_dir(&demo, dir.path());
    let server = TestServer::builder()
        .fixtures(dir.path())
        .admin()
        .configure(|config| config.debounce = Duration::from_millis(20));
    let server = server.start().await.unwrap_or_else(|e| panic!("{e}"));
    (dir, server)
}

#[tokio::test]
async fn status_synced_only_when_current_version_acked() {
    let (dir, server) = serving_demo().await;
    let running = server.running().unwrap();
    let mut client = SotwClient::connect(running.addr, "node-1").await;
    let first = client.subscribe(LISTENER, &[]).await;
    client.ack(&first, &[]).await;
    status_until(running, "LDS SYNCED on v1", |d| {
        state(d, "node-1", LISTENER) == Some(SyncState::Synced)
    })
    .await;

    // The reproduction: only the version changes.
    let file = dir.path().join("listeners.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    write_served(
        running,
        &file,
        &text.replace("version_info: v1", "version_info: v2"),
    )
    .await;
    let pushed = client.recv().await;
    assert_eq!(pushed.version_info, "v2");
    // The stream records a response before it sends it: no waiting needed.
    let doc = status(running).await;
    let lds = type_of(&doc, "node-1", LISTENER).unwrap();
    assert_eq!(lds.snapshot_version, "v2");
    assert_eq!(lds.last_acked.as_ref().unwrap().version, "v1");
    assert_eq!(lds.state, SyncState::Pending, "v1 is ACKed, v2 is served");

    client.ack(&pushed, &[]).await;
    let doc = status_until(running, "LDS SYNCED on v2", |d| {
        state(d, "node-1", LISTENER) == Some(SyncState::Synced)
    })
    .await;
    let lds = type_of(&doc, "node-1", LISTENER).unwrap();
    assert_eq!(lds.last_acked.as_ref().unwrap().version, "v2");
    server.shutdown().await.unwrap();
}

/// A cluster with `size` bytes of metadata, so that a few responses fill a small HTTP/2 window.
fn big_cluster(fill: char, size: usize) -> Value {
    let mut cluster = cluster("big");
    let blob: String = std::iter::repeat_n(fill, size).collect();
    cluster["metadata"] = serde_json::json!({"filter_metadata": {"test": {"blob": blob}}});
    cluster
}

/// A SotW client whose connection grants the server only 64 KiB of HTTP/2 window: once it
/// stops reading, the server can push little before its stream has to wait.
async fn small_window_client(running: &Running, node: &str) -> SotwClient {
    let window = Some(64 * 1024);
    let channel = Endpoint::from_shared(format!("http://{}", running.addr))
        .unwrap()
        .initial_stream_window_size(window)
        .initial_connection_window_size(window)
        .connect()
        .await
        .expect("connects");
    let mut client = AggregatedDiscoveryServiceClient::new(channel);
    let (requests, rx) = mpsc::channel(16);
    let responses = within("the stream to open", async {
        let stream = client.stream_aggregated_resources(ReceiverStream::new(rx));
        stream.await.expect("stream opens").into_inner()
    })
    .await;
    SotwClient::from_parts(node, requests, responses)
}

/// A served directory and a client that ACKed the first CDS response and then stopped
/// reading while twelve edits made 1 MiB responses: the window, the server's send buffer and
/// its bounded queue fill after a few.
async fn stuck_stream() -> (TempDir, TestServer, SotwClient) {
    let (dir, server) = serving().await;
    let running = server.running().unwrap();
    let mut client = small_window_client(running, "stuck").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    let file = dir.path().join("clusters.json");
    for fill in ('a'..='z').take(12) {
        let text = serde_json::to_string(&[big_cluster(fill, 1 << 20)]).unwrap();
        write_served(running, &file, &text).await;
    }
    (dir, server, client)
}

#[tokio::test]
async fn status_stale_when_client_stops_reading() {
    let (_dir, server, client) = stuck_stream().await;
    let running = server.running().unwrap();
    let doc = status_until(running, "the stuck stream to show STALE", |d| {
        state(d, "stuck", CLUSTER) == Some(SyncState::Stale)
    })
    .await;
    let cds = type_of(&doc, "stuck", CLUSTER).unwrap();
    let sent = cds.last_sent.as_ref().unwrap();
    assert_ne!(sent.version, cds.snapshot_version, "behind the snapshot");
    assert_ne!(
        cds.last_acked.as_ref().unwrap().nonce,
        sent.nonce,
        "not answered"
    );
    assert_eq!(doc.totals.stale, 1);
    assert_eq!(doc.totals.pending, 0);
    drop(client);
    server.shutdown().await.unwrap();
}

/// A graceful shutdown waits for responses already handed to HTTP/2, which a client that
/// stopped reading never takes: the server must stop anyway, after its grace period, and close
/// that client's connection, which would otherwise live on in its own task (with the socket and
/// the undelivered responses) for as long as the runtime does.
#[tokio::test]
async fn shutdown_does_not_wait_for_a_client_that_stopped_reading() {
    let (_dir, server, mut client) = stuck_stream().await;
    status_until(
        server.running().unwrap(),
        "the stuck stream to show STALE",
        |d| state(d, "stuck", CLUSTER) == Some(SyncState::Stale),
    )
    .await;
    within("the server to shut down", server.shutdown())
        .await
        .expect("shutdown succeeds");
    // Reading again, the client gets what was already in flight and then its connection's
    // end: an error, not the rest of the responses and a clean end of stream.
    let ended = within("the client to see its connection end", async {
        loop {
            match client.try_recv().await {
                Ok(Some(_)) => continue,
                Ok(None) => return None,
                Err(status) => return Some(status),
            }
        }
    })
    .await;
    let status = ended.expect("the connection was closed, not served to the end");
    assert_ne!(status.code(), tonic::Code::Ok, "{status:?}");
}
