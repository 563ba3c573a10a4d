//! S13: responses far above gRPC's 4 MiB default go through, and the limit is configurable.

use xdsloop_proto::type_url::CLUSTER;

use crate::harness::*;

/// About 10 MiB of clusters: 100 clusters with a 100 KiB metadata blob each.
fn ten_mib() -> ResourceSet {
    (0..100).fold(ResourceSet::default(), |b, i| {
        let mut c = cluster(&format!("big-{i:03}"));
        let blob = "x".repeat(100 * 1024);
        c["metadata"] = serde_json::json!({"filter_metadata": {"xdsloop": {"blob": blob}}});
        b.with(c)
    })
}

fn total_bytes<'a>(values: impl Iterator<Item = &'a Vec<u8>>) -> usize {
    values.map(Vec::len).sum()
}

#[tokio::test]
async fn s13_a_10_mib_snapshot_goes_through_sotw_and_delta() {
    let server = serve(ten_mib()).await;
    let mut sotw = SotwClient::connect(server.addr(), "node-1").await;
    let response = sotw.subscribe(CLUSTER, &[]).await;
    assert_eq!(response.resources.len(), 100);
    assert!(total_bytes(response.resources.iter().map(|a| &a.value)) > 10_000_000);

    let mut delta = DeltaClient::connect(server.addr(), "node-1").await;
    delta.change(CLUSTER, &["*"], &[], "").await;
    let response = delta.recv().await;
    assert_eq!(delta_names(&response).len(), 100);
}

#[tokio::test]
async fn s13_the_message_limit_is_configurable() {
    let server = serve_with(
        TestServer::builder().max_message_bytes(4 * 1024 * 1024),
        ten_mib(),
    )
    .await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    client.request(CLUSTER, &[], "", "").await;
    let outcome = within("the oversized response to fail", client.try_recv()).await;
    let status = outcome.expect_err("a 10 MiB response cannot pass a 4 MiB limit");
    // tonic reports an oversized outgoing message as OUT_OF_RANGE.
    assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
    assert!(status.message().contains("too large"), "{status:?}");
}
