//! The client reaches what the server serves from `fixtures/demo`, in SotW and Delta, and
//! follows fixture edits.

use xdsloop_client::{Interest, Report, Source, TypedEvent, Verdict};
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use crate::client_support::*;

pub(crate) async fn reaches_demo_versions(source: Source) {
    let served = FixtureServer::demo().await;
    let (client, _reports) = demo_client(config(served.addr(), source.clone())).await;
    let snapshot = served.snapshot();
    let store = store_where(&client, |s| matches_snapshot(s, &snapshot, &source)).await;
    for (type_url, name) in [
        (LISTENER, "ingress"),
        (ROUTE, "local_route"),
        (CLUSTER, "web"),
        (ENDPOINT, "api"),
    ] {
        assert!(store.holds(type_url, name), "{type_url} {name}");
    }
    client.stop().await;
}

#[tokio::test]
async fn client_sotw_reaches_the_demo_versions_for_all_four_types() {
    reaches_demo_versions(Source::Ads).await;
}

#[tokio::test]
async fn client_delta_reaches_the_demo_versions_for_all_four_types() {
    reaches_demo_versions(Source::AdsDelta).await;
}

pub(crate) async fn fixture_edit_arrives(source: Source) {
    let served = FixtureServer::demo().await;
    let (client, mut reports) = demo_client(config(served.addr(), source.clone())).await;
    let first = served.snapshot();
    let before = store_where(&client, |s| matches_snapshot(s, &first, &source)).await;
    // Only what happens from here on.
    reports = reports.resubscribe();
    let old_api = before.get(ENDPOINT, "api").unwrap().clone();
    let next = served
        .edit_text("endpoints.yaml", |text| {
            text.replace("port_value: 8091", "port_value: 9091")
        })
        .await;
    let update = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == ENDPOINT => Some(u.clone()),
        _ => None,
    })
    .await;
    assert_eq!(update.verdict, Verdict::Ack);
    assert_eq!(update.diff.updated, vec!["api"]);
    let after = store_where(&client, |s| matches_snapshot(s, &next, &source)).await;
    let new_api = after.get(ENDPOINT, "api").unwrap();
    assert_ne!(new_api.bytes, old_api.bytes);
    assert_ne!(new_api.version, old_api.version, "a new applied version");
    assert_eq!(
        after.get(ENDPOINT, "web"),
        before.get(ENDPOINT, "web"),
        "web untouched"
    );
    client.stop().await;
}

#[tokio::test]
async fn client_sotw_applies_a_fixture_edit_as_a_new_version() {
    fixture_edit_arrives(Source::Ads).await;
}

#[tokio::test]
async fn client_delta_applies_a_fixture_edit_as_a_new_version() {
    fixture_edit_arrives(Source::AdsDelta).await;
}

#[tokio::test]
async fn client_typed_subscription_decodes_clusters() {
    let served = FixtureServer::demo().await;
    let client =
        xdsloop_client::Client::start(config(served.addr(), Source::Ads), std::future::pending())
            .unwrap();
    let mut clusters = client
        .subscribe_typed::<Cluster>(Interest::Wildcard)
        .await
        .unwrap();
    let event = tokio::time::timeout(WAIT, clusters.recv())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let TypedEvent::Sotw { version, resources } = event else {
        panic!("expected a SotW update, got {event:?}");
    };
    assert_eq!(
        version,
        served
            .snapshot()
            .get("client-e2e", CLUSTER)
            .unwrap()
            .version
    );
    let names: Vec<_> = resources.iter().map(|r| r.resource.name.as_str()).collect();
    assert_eq!(names, ["api", "web"]);
    client.stop().await;
}
