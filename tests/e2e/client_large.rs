//! C16: responses of tens of MiB are accepted when configured; the limit is the client's own.

use xdsloop_client::{ConnectionReport, Interest, Report, Source};
use xdsloop_proto::type_url::CLUSTER;

use crate::client_support::{config, drain, report, store_where};
use crate::harness::{ResourceSet, TestServer, cluster, serve_with};

/// About 20 MiB of clusters: 100 clusters with a 200 KiB metadata blob each.
fn twenty_mib() -> ResourceSet {
    (0..100).fold(ResourceSet::default(), |builder, i| {
        let mut c = cluster(&format!("big-{i:03}"));
        let blob = "x".repeat(200 * 1024);
        c["metadata"] = serde_json::json!({"filter_metadata": {"xdsloop": {"blob": blob}}});
        builder.with(c)
    })
}

async fn accepts_a_20_mib_response(source: Source) {
    let server = serve_with(
        TestServer::builder().max_message_bytes(64 << 20),
        twenty_mib(),
    )
    .await;
    let mut config = config(server.addr(), source.clone());
    config.follow_deps = false;
    let client = xdsloop_client::Client::start(config, std::future::pending()).unwrap();
    drain(client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap());
    let store = store_where(&client, |s| {
        s.of_type(CLUSTER).is_some_and(|t| t.resources.len() == 100)
    })
    .await;
    let bytes: usize = store
        .of_type(CLUSTER)
        .unwrap()
        .resources
        .values()
        .map(|r| r.bytes.len())
        .sum();
    assert!(bytes > 20_000_000, "{bytes}");
    client.stop().await;
}

#[tokio::test]
async fn c16_client_sotw_accepts_a_20_mib_response_by_default() {
    accepts_a_20_mib_response(Source::Ads).await;
}

#[tokio::test]
async fn c16_client_delta_accepts_a_20_mib_response_by_default() {
    accepts_a_20_mib_response(Source::AdsDelta).await;
}

#[tokio::test]
async fn c16_client_message_limit_is_configurable_and_c10_failures_without_response_keep_backing_off()
 {
    let server = serve_with(
        TestServer::builder().max_message_bytes(64 << 20),
        twenty_mib(),
    )
    .await;
    let mut config = config(server.addr(), Source::Ads);
    config.max_message_bytes = 4 << 20;
    let client = xdsloop_client::Client::start(config, std::future::pending()).unwrap();
    let mut reports = client.reports();
    drain(client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap());
    let reason = report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::StreamClosed { reason }) => Some(reason.clone()),
        _ => None,
    })
    .await;
    assert!(reason.contains("too large"), "{reason}");
    assert!(
        client.store().borrow().of_type(CLUSTER).is_none(),
        "nothing applied"
    );
    client.stop().await;
}
