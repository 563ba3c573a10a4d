//! xdstp:// names end to end (S18, C19): the server serves `fixtures/grpc/federation.yaml`
//! under normalised names, and xdsloop-client, asking with the context parameters in another
//! order, follows the listener to its route and the cluster to its endpoints.

use std::path::Path;

use xdsloop_client::{Client, Interest, Source};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};
use xdsloop_server::status::SyncState;
use xdsloop_server::status::sync_state;
use xdsloop_server::testkit::TestServer;

use crate::client_support::*;

const AUTHORITY: &str = "xdstp://xdsloop.test";

fn name(kind: &str, id: &str) -> String {
    format!("{AUTHORITY}/envoy.config.{kind}/{id}")
}

#[tokio::test]
async fn s18_c19_xdstp_names_served_and_followed() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/grpc");
    xdsloop_tests::copy_dir(&fixtures, dir.path());
    let server = TestServer::builder()
        .fixtures(dir.path())
        .admin()
        .start()
        .await;
    let server = server.unwrap();
    let running = server.running().unwrap();
    let listener = name("listener.v3.Listener", "greeter");
    let route = name("route.v3.RouteConfiguration", "greeter-route");
    let sorted = name("cluster.v3.Cluster", "greeter-fed?app=greeter&zone=local");
    let unsorted = name("cluster.v3.Cluster", "greeter-fed?zone=local&app=greeter");
    let endpoints = name("endpoint.v3.ClusterLoadAssignment", "greeter-fed");

    for source in [Source::Ads, Source::AdsDelta] {
        let client = Client::start(
            config_for(running.addr, source.clone()),
            std::future::pending(),
        );
        let client = client.unwrap();
        let watches = [
            (LISTENER.to_string(), Interest::names([listener.clone()])),
            (CLUSTER.to_string(), Interest::names([unsorted.clone()])),
        ];
        client
            .subscribe_all(watches)
            .await
            .unwrap()
            .into_iter()
            .for_each(drain);
        let held = [
            (LISTENER, &listener),
            (ROUTE, &route),
            (CLUSTER, &sorted),
            (ENDPOINT, &endpoints),
        ];
        store_where(&client, |s| held.iter().all(|(t, n)| s.holds(t, n))).await;

        let snapshot = running.snapshots.borrow().clone();
        let streams =
            crate::harness::registry_until(&running.registry, "every type SYNCED", |streams| {
                streams.iter().any(|s| {
                    s.types.len() == 4
                        && s.types.values().all(|t| {
                            let current =
                                snapshot.get("xdstp-client", &t.type_url).map(AsRef::as_ref);
                            sync_state(t, current, s.kind.variant) == SyncState::Synced
                        })
                })
            })
            .await;
        let cds = &streams.iter().find(|s| s.types.len() == 4).unwrap().types[CLUSTER];
        assert_eq!(
            &*cds.names,
            std::slice::from_ref(&sorted),
            "{source:?}: subscribed under the served name"
        );
        client.stop().await;
    }
    server.shutdown().await.unwrap();
}

fn config_for(addr: std::net::SocketAddr, source: Source) -> xdsloop_client::ClientConfig {
    let mut config = config(addr, source);
    config.node.id = "xdstp-client".into();
    config
}
