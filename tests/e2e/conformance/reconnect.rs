//! Rules judged across a node's streams: C10 (reconnect backoff) and C11 (a reconnecting
//! client resubscribes with what it held), through the server's node book.

use std::collections::HashMap;

use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest},
    type_url::CLUSTER,
};

use super::*;

fn sotw_request(version: &str, nonce: &str) -> DiscoveryRequest {
    DiscoveryRequest {
        type_url: CLUSTER.to_string(),
        version_info: version.to_string(),
        response_nonce: nonce.to_string(),
        ..Default::default()
    }
}

/// On one connection: a stream that subscribes to every cluster, ACKs, and closes.
async fn held_then_closed(server: &Judged, channel: &Channel) -> DiscoveryResponse {
    let (requests, responses) = sotw_on(channel).await;
    let mut client = SotwClient::from_parts("node-1", requests, responses);
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    registry_until(server.registry(), "the ACK", |s| {
        s.iter()
            .any(|s| s.types.get(CLUSTER).is_some_and(|t| t.last_acked.is_some()))
    })
    .await;
    drop(client);
    closed(server.registry(), 1).await;
    first
}

#[tokio::test]
async fn c11_version_a_resubscription_without_the_acked_version_is_reported() {
    let server = lenient_server().await;
    let channel = channel(server.addr()).await;
    let first = held_then_closed(&server, &channel).await;
    let (requests, mut responses) = sotw_on(&channel).await;
    let mut request = sotw_request("", &first.nonce);
    request.node = node("node-1");
    requests.send(request).await.unwrap();
    within("a response", responses.message()).await.unwrap();
    let v = violation(server.registry(), "C11.version").await;
    let expected = format!(
        "the reconnected client's first request for {CLUSTER} declares version_info \"\"; on \
         stream 1 it had ACKed {:?}",
        first.version_info
    );
    assert_eq!(&*v.message, expected);
    let v = violation(server.registry(), "C11.old-stream-nonce").await;
    assert!(
        v.message
            .contains(&format!("names nonce {} from stream 1", first.nonce))
    );
}

#[tokio::test]
async fn c11_a_resubscription_with_the_acked_version_passes() {
    let server = serve(two_clusters()).await;
    let channel = channel(server.addr()).await;
    let first = held_then_closed(&server, &channel).await;
    let (requests, responses) = sotw_on(&channel).await;
    let mut client = SotwClient::from_parts("node-1", requests, responses);
    client.request(CLUSTER, &[], &first.version_info, "").await;
    let again = client.recv().await;
    client.ack(&again, &[]).await;
    registry_until(server.registry(), "the ACK on the new stream", |s| {
        s.iter()
            .any(|s| s.types.get(CLUSTER).is_some_and(|t| t.last_acked.is_some()))
    })
    .await;
    server.judge.check();
}

#[tokio::test]
async fn c11_versions_delta_declares_versions_it_never_acked() {
    let server = lenient_server().await;
    let channel = channel(server.addr()).await;
    let (requests, responses) = delta_on(&channel).await;
    let mut client = DeltaClient::from_parts("node-1", requests, responses);
    client.change(CLUSTER, &["*"], &[], "").await;
    let first = client.recv().await;
    client.ack(&first).await;
    registry_until(server.registry(), "the ACK", |s| {
        s.iter()
            .any(|s| s.types.get(CLUSTER).is_some_and(|t| t.last_acked.is_some()))
    })
    .await;
    drop(client);
    closed(server.registry(), 1).await;
    let (requests, mut responses) = delta_on(&channel).await;
    let declared = HashMap::from([("alpha".to_string(), "not-what-it-got".to_string())]);
    let request = DeltaDiscoveryRequest {
        node: node("node-1"),
        type_url: CLUSTER.to_string(),
        resource_names_subscribe: vec!["*".into()],
        initial_resource_versions: declared,
        ..Default::default()
    };
    requests.send(request).await.unwrap();
    within("a response", responses.message()).await.unwrap();
    let v = violation(server.registry(), "C11.versions").await;
    assert!(
        v.message
            .contains("for 1 resource(s): alpha \"not-what-it-got\" (ACKed "),
        "{}",
        v.message
    );
}

#[tokio::test]
async fn c10_backoff_a_tight_reconnect_loop_is_reported() {
    let server = lenient_server().await;
    let channel = channel(server.addr()).await;
    // Each stream names its node and ends before any response: a request without a type
    // gets none.
    for n in 1..=7 {
        let (requests, _responses) = sotw_on(&channel).await;
        let request = DiscoveryRequest {
            node: node("node-1"),
            ..Default::default()
        };
        requests.send(request).await.unwrap();
        registry_until(server.registry(), "the node to be named", |s| {
            s.iter().any(|s| s.node_id.is_some())
        })
        .await;
        drop(requests);
        closed(server.registry(), n).await;
    }
    let v = violation(server.registry(), "C10.backoff").await;
    assert!(
        v.message
            .contains("node \"node-1\" from 127.0.0.1 opened 6 ads streams"),
        "{}",
        v.message
    );
}
