//! Rules judged within one stream: C1, C4, C5, C12, C20; `--strict` and `--conformance off`.

use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest},
    type_url::{CLUSTER, ENDPOINT},
};
use xdsloop_server::ConformanceMode;

use super::*;

#[tokio::test]
async fn c1_node_a_first_request_without_node_is_reported() {
    let server = lenient_server().await;
    let (requests, mut responses) = sotw_on(&channel(server.addr()).await).await;
    let request = DiscoveryRequest {
        type_url: CLUSTER.to_string(),
        ..Default::default()
    };
    requests.send(request).await.unwrap();
    within("a response", responses.message()).await.unwrap();
    let v = violation(server.registry(), "C1.node").await;
    assert_eq!(v.rule, "C1");
    let expected = format!("the stream's first request (for {CLUSTER}) carries no node");
    assert!(v.message.starts_with(&expected), "{}", v.message);
}

#[tokio::test]
async fn c4_unknown_nonce_a_nonce_never_sent_is_reported() {
    let server = lenient_server().await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client
        .request(CLUSTER, &[], &first.version_info, "made-up")
        .await;
    let v = violation(server.registry(), "C4.unknown-nonce").await;
    assert!(
        v.message.contains("names nonce made-up which this stream"),
        "{}",
        v.message
    );
    assert_eq!(v.type_url.as_deref(), Some(CLUSTER));
}

#[tokio::test]
async fn c4_ack_version_an_ack_with_another_version_is_reported() {
    let server = lenient_server().await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.request(CLUSTER, &[], "not-it", &first.nonce).await;
    let v = violation(server.registry(), "C4.ack-version").await;
    let expected = format!(
        "ACK of {CLUSTER} nonce {} carries version_info \"not-it\", but the response with that \
         nonce had {:?}",
        first.nonce, first.version_info
    );
    assert_eq!(&*v.message, expected);
}

#[tokio::test]
async fn c5_nack_version_a_nack_carrying_the_rejected_version_is_reported() {
    let server = lenient_server().await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.nack(&first, &[], &first.version_info).await;
    let v = violation(server.registry(), "C5.nack-version").await;
    assert!(
        v.message
            .ends_with("the last version accepted on this stream is \"\""),
        "{}",
        v.message
    );
    assert!(v.message.contains(&first.nonce), "{}", v.message);
}

#[tokio::test]
async fn c5_nack_fields_a_delta_nack_without_a_message_is_reported() {
    let server = lenient_server().await;
    let mut client = DeltaClient::connect(server.addr(), "node-1").await;
    client.change(CLUSTER, &["*"], &[], "").await;
    let first = client.recv().await;
    let nack = DeltaDiscoveryRequest {
        type_url: CLUSTER.to_string(),
        response_nonce: first.nonce.clone(),
        error_detail: nack_status(""),
        ..Default::default()
    };
    client.send(nack).await;
    let v = violation(server.registry(), "C5.nack-fields").await;
    assert!(v.message.contains("an empty message"), "{}", v.message);
}

#[tokio::test]
async fn c12_coalesce_one_eds_request_per_new_cluster_is_reported() {
    let server = lenient_server().await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let clusters = client.subscribe(CLUSTER, &[]).await;
    client.ack(&clusters, &[]).await;
    let mut names: Vec<&str> = Vec::new();
    for name in ["alpha", "beta", "gamma"] {
        names.push(name);
        client.request(ENDPOINT, &names, "", "").await;
    }
    let v = violation(server.registry(), "C12.coalesce").await;
    assert!(
        v.message
            .starts_with("3 eds requests added names after one cds response"),
        "{}",
        v.message
    );
}

#[tokio::test]
async fn c12_before_ack_endpoints_asked_for_before_the_clusters_are_acked() {
    let server = lenient_server().await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let clusters = client.subscribe(CLUSTER, &[]).await;
    client.ack(&clusters, &[]).await;
    let held = client.subscribe(ENDPOINT, &["alpha"]).await;
    client.ack(&held, &["alpha"]).await;
    // One change of clusters and endpoints: CDS, then EDS, on the wire.
    let grown = ResourceSet::default()
        .with(cluster("alpha"))
        .with(cluster("beta"))
        .with(cluster("gamma"))
        .with(endpoints("alpha", 8009))
        .with(endpoints("beta", 8002));
    server.set_resources(None, grown).unwrap();
    let pushed = client.recv().await;
    assert_eq!(pushed.type_url, CLUSTER);
    let moved = client.recv().await;
    assert_eq!(moved.type_url, ENDPOINT);
    // ACKs the endpoints (so it had the clusters, sent before them), then asks for the new
    // cluster's endpoints without ACKing the clusters first.
    client.ack(&moved, &["alpha"]).await;
    client
        .request(
            ENDPOINT,
            &["alpha", "gamma"],
            &moved.version_info,
            &moved.nonce,
        )
        .await;
    let v = violation(server.registry(), "C12.before-ack").await;
    assert!(
        v.message
            .starts_with("new eds names were asked for before the latest cds response"),
        "{}",
        v.message
    );
    assert!(
        all_violations(server.registry())
            .iter()
            .all(|v| v.check != "C12.coalesce"),
        "one request is coalesced"
    );
}

/// gRPC C-core, seen in the interop run: it ACKed the clusters and asked for their endpoints
/// while a newer CDS push crossed both on the wire. It could not have known of that push.
#[tokio::test]
async fn c12_before_ack_a_cds_push_crossing_the_ack_and_the_eds_request_passes() {
    let server = lenient_server().await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let clusters = client.subscribe(CLUSTER, &[]).await;
    client.ack(&clusters, &[]).await;
    let held = client.subscribe(ENDPOINT, &["alpha"]).await;
    client.ack(&held, &["alpha"]).await;
    let two = ResourceSet::default()
        .with(cluster("alpha"))
        .with(cluster("beta"))
        .with(cluster("gamma"))
        .with(endpoints("alpha", 8001))
        .with(endpoints("beta", 8002));
    server.set_resources(None, two).unwrap();
    let grown = client.recv().await;
    assert_eq!(grown.type_url, CLUSTER);
    // The next push goes out before the client's answers to the first arrive.
    let three = ResourceSet::default()
        .with(cluster("alpha"))
        .with(cluster("beta"))
        .with(cluster("gamma"))
        .with(cluster("delta"))
        .with(endpoints("alpha", 8001))
        .with(endpoints("beta", 8002));
    server.set_resources(None, three).unwrap();
    // On the wire the push is on its way while the client answers the one before: the
    // server gets the answers after it sent the push.
    let crossed = client.recv().await;
    assert_eq!(crossed.type_url, CLUSTER);
    client.ack(&grown, &[]).await;
    client
        .request(
            ENDPOINT,
            &["alpha", "gamma"],
            &held.version_info,
            &held.nonce,
        )
        .await;
    client.ack(&crossed, &[]).await;
    client
        .request(
            ENDPOINT,
            &["alpha", "delta", "gamma"],
            &held.version_info,
            &held.nonce,
        )
        .await;
    // The judge runs inline, before the server answers: wait for the answer, if one comes.
    let _ = tokio::time::timeout(std::time::Duration::from_millis(300), client.try_recv()).await;
    assert!(
        all_violations(server.registry()).is_empty(),
        "{:?}",
        all_violations(server.registry())
    );
}

#[tokio::test]
async fn c20_storm_requests_without_a_response_in_between_are_reported() {
    let server = lenient_server().await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    for _ in 0..21 {
        client.ack(&first, &[]).await;
    }
    let v = violation(server.registry(), "C20.storm").await;
    assert!(v.message.starts_with("21 requests for"), "{}", v.message);
}

/// A raw server with the given judging, clusters only.
async fn fixture_server(mode: ConformanceMode) -> FixtureServer {
    let files = [("clusters.json", vec![cluster("alpha")])];
    let mut server = FixtureServer::start_with(&files, |server| server.conformance(mode)).await;
    server.allow_violations();
    server
}

#[tokio::test]
async fn strict_ends_the_stream_with_failed_precondition_naming_the_rule() {
    let server = fixture_server(ConformanceMode::Strict).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.nack(&first, &[], &first.version_info).await;
    let status = within("the stream to end", client.try_recv())
        .await
        .expect_err("a strict server ends the stream with a status");
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert!(
        status.message().starts_with(
            "xdsloop --strict: C5.nack-version (ack-nack.5, proto.discovery-request.1): NACK of"
        ),
        "{}",
        status.message()
    );
}

/// A strict server ends the stream at the request that broke a rule, before the response
/// that request asked for goes out: `/status` must not list that response.
#[tokio::test]
async fn strict_end_at_the_first_request_leaves_no_response_that_never_went_out() {
    let server = fixture_server(ConformanceMode::Strict).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    client.request(CLUSTER, &[], "", "made-up").await;
    let status = within("the stream to end", client.try_recv())
        .await
        .expect_err("a strict server ends the stream with a status");
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    let registry = &server.registry();
    let closed = poll_until("the stream listed closed", TIMEOUT, async || {
        registry.recently_closed().into_iter().next()
    });
    let closed = closed.await.unwrap_or_else(|e| panic!("{e}"));
    let cds = closed.stream.types.get(CLUSTER);
    assert!(
        cds.is_none_or(|t| t.last_sent.is_none()),
        "no response went out: {cds:?}"
    );
}

#[tokio::test]
async fn conformance_off_judges_nothing() {
    let server = fixture_server(ConformanceMode::Off).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.nack(&first, &[], &first.version_info).await;
    client.request(CLUSTER, &[], "", "made-up").await;
    client
        .assert_silent("the stream stays open and quiet")
        .await;
    assert_eq!(server.registry().counters().violations, 0);
}
