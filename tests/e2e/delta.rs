//! Delta over ADS, end to end: S8 (only changes, removals), S9 (reconnect), S10 (unsubscribe).

use std::collections::BTreeMap;

use xdsloop_proto::{
    discovery::DeltaDiscoveryRequest,
    type_url::{CLUSTER, ENDPOINT},
};

use crate::harness::*;

fn clusters(names: &[&str]) -> ResourceSet {
    names
        .iter()
        .fold(ResourceSet::default(), |b, n| b.with(cluster(n)))
}

#[tokio::test]
async fn s8_delta_add_update_remove_sends_only_changes() {
    let server = serve(clusters(&["a", "b", "c"])).await;
    let mut client = DeltaClient::connect(server.addr(), "node-1").await;
    client.change(CLUSTER, &["*"], &[], "").await;
    let first = client.recv().await;
    assert_eq!(delta_names(&first), ["a", "b", "c"]);
    assert!(first.resources.iter().all(|r| !r.version.is_empty()));
    assert!(!first.system_version_info.is_empty());
    client.ack(&first).await;
    client.assert_silent("after an ACK").await;

    let next = ResourceSet::default()
        .with(cluster_with_timeout("a", 7))
        .with(cluster("c"))
        .with(cluster("d"));
    server.set_resources(None, next).unwrap();
    let pushed = client.recv().await;
    assert_eq!(delta_names(&pushed), ["a", "d"], "only updated and added");
    assert_eq!(pushed.removed_resources, ["b"]);
    assert_ne!(pushed.nonce, first.nonce);
}

#[tokio::test]
async fn s8_subscribing_to_a_missing_name_reports_it_removed() {
    let server = serve(demo_endpoints()).await;
    let mut client = DeltaClient::connect(server.addr(), "node-1").await;
    client.change(ENDPOINT, &["alpha", "ghost"], &[], "").await;
    let first = client.recv().await;
    assert_eq!(delta_names(&first), ["alpha"]);
    assert_eq!(first.removed_resources, ["ghost"]);
    client.ack(&first).await;
    server
        .set_resources(None, demo_endpoints().with(endpoints("ghost", 9999)))
        .unwrap();
    let appeared = client.recv().await;
    assert_eq!(delta_names(&appeared), ["ghost"]);
    assert!(appeared.removed_resources.is_empty());
}

fn demo_endpoints() -> ResourceSet {
    ResourceSet::default()
        .with(endpoints("alpha", 8001))
        .with(endpoints("beta", 8002))
}

#[tokio::test]
async fn s9_reconnect_with_initial_versions_sends_only_changes_and_named_resources() {
    let before = clusters(&["keep", "keep-named", "change", "drop"]);
    let server = serve(before).await;
    let mut first = DeltaClient::connect(server.addr(), "node-1").await;
    first.change(CLUSTER, &[], &[], "").await;
    let held: BTreeMap<String, String> = delta_resources(&first.recv().await).into_iter().collect();
    assert_eq!(held.len(), 4);
    drop(first);

    let after = ResourceSet::default()
        .with(cluster("keep"))
        .with(cluster("keep-named"))
        .with(cluster_with_timeout("change", 5))
        .with(cluster("new"));
    server.set_resources(None, after).unwrap();
    let mut resumed = DeltaClient::connect(server.addr(), "node-1").await;
    // The client holds everything it had; it names "keep-named" (held at the current
    // version) and "extra" (never held, does not exist) next to the wildcard.
    let request = DeltaDiscoveryRequest {
        type_url: CLUSTER.into(),
        resource_names_subscribe: strings(&["*", "keep-named", "extra"]),
        initial_resource_versions: held.clone().into_iter().collect(),
        ..Default::default()
    };
    resumed.send(request).await;
    let response = resumed.recv().await;
    let sent: BTreeMap<String, String> = delta_resources(&response).into_iter().collect();
    assert_eq!(
        sent.keys().collect::<Vec<_>>(),
        ["change", "keep-named", "new"],
        "unchanged wildcard-only 'keep' skipped; named 'keep-named' sent although held"
    );
    assert_eq!(
        sent["keep-named"], held["keep-named"],
        "sent at its current version"
    );
    assert_ne!(sent["change"], held["change"]);
    assert_eq!(response.removed_resources, ["drop", "extra"]);
}

#[tokio::test]
async fn s10_delta_unsubscribe_stops_pushes() {
    let server = serve(demo_endpoints()).await;
    let mut client = DeltaClient::connect(server.addr(), "node-1").await;
    client.change(ENDPOINT, &["alpha", "beta"], &[], "").await;
    let first = client.recv().await;
    assert_eq!(delta_names(&first), ["alpha", "beta"]);
    client.change(ENDPOINT, &[], &["beta"], &first.nonce).await;
    client
        .assert_silent("unsubscribing needs no response")
        .await;
    let next = ResourceSet::default()
        .with(endpoints("alpha", 8001))
        .with(endpoints("beta", 9002));
    server.set_resources(None, next).unwrap();
    client.assert_silent("beta is no longer subscribed").await;
    let next = ResourceSet::default()
        .with(endpoints("alpha", 9001))
        .with(endpoints("beta", 9003));
    server.set_resources(None, next).unwrap();
    let pushed = client.recv().await;
    assert_eq!(delta_names(&pushed), ["alpha"]);
    assert!(pushed.removed_resources.is_empty());
}

#[tokio::test]
async fn s3_delta_nack_is_recorded_and_not_resent() {
    let server = serve(clusters(&["a"])).await;
    let mut client = DeltaClient::connect(server.addr(), "node-1").await;
    client.change(CLUSTER, &[], &[], "").await;
    let first = client.recv().await;
    client.nack(&first).await;
    registry_until(server.registry(), "the Delta NACK", |s| {
        s.iter()
            .any(|s| s.types.get(CLUSTER).is_some_and(|t| t.last_nack.is_some()))
    })
    .await;
    client.assert_silent("a NACKed version is not resent").await;
    server
        .set_resources(
            None,
            ResourceSet::default().with(cluster_with_timeout("a", 4)),
        )
        .unwrap();
    assert_eq!(delta_names(&client.recv().await), ["a"]);
}
