//! The per-type gRPC (`grpc`, `delta-grpc`) and REST (`rest`) config sources against the real
//! server, through the same `Subscription` API as ADS: the initial config, a fixture edit as a
//! new applied version, a rejected update keeping the last good config, and a server restart
//! survived. (The file source is in `client_sources_file`.)

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use xdsloop_client::{
    Client, ClientConfig, ConnectionReport, Event, Interest, Report, Source, SourceKind, Verdict,
};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use crate::client_nack::{refuse_web_cluster_while, rejected_update_keeps_the_last_good_config};
use crate::client_restart::survives_restart;
use crate::client_support::*;
use crate::client_sync::{fixture_edit_arrives, reaches_demo_versions};

#[tokio::test]
async fn grpc_source_reaches_the_demo_versions() {
    reaches_demo_versions(Source::Grpc).await;
}

#[tokio::test]
async fn delta_grpc_source_reaches_the_demo_versions() {
    reaches_demo_versions(Source::DeltaGrpc).await;
}

#[tokio::test]
async fn grpc_source_applies_a_fixture_edit_as_a_new_version() {
    fixture_edit_arrives(Source::Grpc).await;
}

#[tokio::test]
async fn delta_grpc_source_applies_a_fixture_edit_as_a_new_version() {
    fixture_edit_arrives(Source::DeltaGrpc).await;
}

#[tokio::test]
async fn grpc_source_nack_is_recorded_and_keeps_the_last_good_config() {
    rejected_update_keeps_the_last_good_config(Source::Grpc).await;
}

#[tokio::test]
async fn delta_grpc_source_nack_is_recorded_and_keeps_the_last_good_config() {
    rejected_update_keeps_the_last_good_config(Source::DeltaGrpc).await;
}

#[tokio::test]
async fn grpc_source_survives_a_server_restart() {
    survives_restart(Source::Grpc).await;
}

#[tokio::test]
async fn delta_grpc_source_survives_a_server_restart() {
    survives_restart(Source::DeltaGrpc).await;
}

/// The server sees one stream per type, each on that type's own service, never ADS.
async fn one_stream_per_type(source: Source) {
    let served = FixtureServer::demo().await;
    let (client, _reports) = demo_client(config(served.addr(), source.clone())).await;
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &source)).await;
    let streams = served.registry().streams();
    let services: BTreeSet<&str> = streams.iter().map(|s| s.kind.service).collect();
    assert_eq!(
        services,
        BTreeSet::from(["clusters", "endpoints", "listeners", "routes"])
    );
    for stream in &streams {
        let types: Vec<&String> = stream.types.keys().collect();
        assert_eq!(types.len(), 1, "{}: {types:?}", stream.kind);
    }
    client.stop().await;
}

#[tokio::test]
async fn grpc_source_opens_one_stream_per_type_on_its_own_service() {
    one_stream_per_type(Source::Grpc).await;
}

#[tokio::test]
async fn delta_grpc_source_opens_one_stream_per_type_on_its_own_service() {
    one_stream_per_type(Source::DeltaGrpc).await;
}

#[tokio::test]
async fn grpc_source_a_stream_that_fails_is_reopened_on_its_own_while_the_others_stream() {
    let served = FixtureServer::demo().await;
    let client = Client::start(config(served.addr(), Source::Grpc), std::future::pending());
    let client = client.unwrap();
    let mut reports = client.reports();
    let mut clusters = client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap();
    // A type with no per-type discovery service: its stream cannot open.
    let unknown = "type.googleapis.com/example.v1.Unserved";
    drain(client.subscribe(unknown, Interest::Wildcard).await.unwrap());
    for _ in 0..2 {
        let reason = report(&mut reports, |r| match r {
            Report::Connection(ConnectionReport::StreamClosed { reason }) => Some(reason.clone()),
            _ => None,
        })
        .await;
        assert!(reason.contains("example.v1.Unserved stream"), "{reason}");
        assert!(reason.contains("reopening in"), "{reason}");
    }
    let snapshot = served.snapshot();
    let served_web = snapshot.get("client-e2e", CLUSTER).unwrap().version.clone();
    store_where(&client, |s| s.version(CLUSTER) == Some(served_web.as_str())).await;
    // The CDS stream was never interrupted: its subscription heard of no failure.
    while let Ok(Some(event)) = tokio::time::timeout(QUIET, clusters.recv()).await {
        assert!(!matches!(event, Event::Failed { .. }), "{event:?}");
    }
    let streams = served.registry().streams();
    let services: BTreeSet<&str> = streams.iter().map(|s| s.kind.service).collect();
    // Clusters, and the endpoints they depend on; the unserved type never reached the server.
    assert_eq!(services, BTreeSet::from(["clusters", "endpoints"]));
    client.stop().await;
}

// REST polls every refresh delay; the defaults (1 s) are kept where the shared checks run.

#[tokio::test]
async fn rest_source_reaches_the_demo_versions() {
    reaches_demo_versions(Source::Rest).await;
}

#[tokio::test]
async fn rest_source_applies_a_fixture_edit_as_a_new_version() {
    fixture_edit_arrives(Source::Rest).await;
}

fn rest_config(served: &FixtureServer) -> ClientConfig {
    let mut config = config(served.addr(), Source::Rest);
    config.refresh_delay = Duration::from_millis(100);
    config
}

#[tokio::test]
async fn rest_source_polls_that_find_nothing_new_are_not_updates() {
    let served = FixtureServer::demo().await;
    let (client, mut reports) = demo_client(rest_config(&served)).await;
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Rest)).await;
    reports = reports.resubscribe();
    // Several refresh delays: each poll carries the current version and gets 304, or (under
    // the listeners' explicit version) the same answer again.
    let quiet = quiet_reports(&mut reports).await;
    let updates: Vec<_> = quiet
        .iter()
        .filter(|r| matches!(r, Report::Update(_)))
        .collect();
    assert!(updates.is_empty(), "{updates:#?}");
    // A client that had stopped polling would pass the quiet window too: the next edit must
    // still arrive by a poll, as one update of the edited type.
    served
        .edit_text("endpoints.yaml", |text| {
            text.replace("port_value: 8091", "port_value: 9091")
        })
        .await;
    let update = report(&mut reports, |r| match r {
        Report::Update(u) => Some(u.clone()),
        _ => None,
    })
    .await;
    assert_eq!(
        (update.type_url.as_str(), update.diff.updated.clone()),
        (ENDPOINT, vec!["api".to_string()])
    );
    client.stop().await;
}

#[tokio::test]
async fn rest_source_rejected_update_keeps_the_last_good_config_and_version() {
    let served = FixtureServer::demo().await;
    let refuse = Arc::new(AtomicBool::new(false));
    let mut config = rest_config(&served);
    config.validator = Some(refuse_web_cluster_while(&refuse));
    let (client, mut reports) = demo_client(config).await;
    let first = served.snapshot();
    let good = store_where(&client, |s| matches_snapshot(s, &first, &Source::Rest)).await;
    reports = reports.resubscribe();
    refuse.store(true, Ordering::SeqCst);
    let next = served
        .edit_text("clusters.yaml", |text| {
            text.replacen("connect_timeout: 0.25s", "connect_timeout: 0.5s", 1)
        })
        .await;
    let new_version = next.get("client-e2e", CLUSTER).unwrap().version.clone();
    let cds_nack = |r: &Report| match r {
        Report::Update(u) if u.type_url == CLUSTER => match &u.verdict {
            Verdict::Nack(reason) => Some((u.source, u.version.clone(), reason.clone())),
            Verdict::Ack => panic!("accepted while refusing: {u:?}"),
        },
        _ => None,
    };
    let (source, version, reason) = report(&mut reports, cds_nack).await;
    assert_eq!(source, SourceKind::Rest);
    assert_eq!(version, new_version);
    assert!(reason.contains("web refused by test"), "{reason}");
    assert_eq!(
        client.store().borrow().of_type(CLUSTER),
        good.of_type(CLUSTER)
    );
    // The version did not advance: the next poll still carries the last accepted one, so the
    // server answers with the refused version again rather than "not modified".
    let (_, again, _) = report(&mut reports, cds_nack).await;
    assert_eq!(again, new_version);
    assert_eq!(
        client.store().borrow().of_type(CLUSTER),
        good.of_type(CLUSTER)
    );
    // Accepting again: the next poll applies it.
    refuse.store(false, Ordering::SeqCst);
    store_where(&client, |s| matches_snapshot(s, &next, &Source::Rest)).await;
    client.stop().await;
}

#[tokio::test]
async fn rest_source_keeps_polling_through_a_server_restart() {
    let served = FixtureServer::demo().await;
    let (client, mut reports) = demo_client(rest_config(&served)).await;
    let snapshot = served.snapshot();
    let before = store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Rest)).await;
    let (dir, addr) = served.stop().await;
    report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::ConnectFailed { .. }) => Some(()),
        _ => None,
    })
    .await;
    assert!(
        client.store().borrow().holds(CLUSTER, "web"),
        "failed polls are not config errors"
    );
    let served = FixtureServer::on(dir, addr, |server| server).await;
    report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::Connected { .. }) => Some(()),
        _ => None,
    })
    .await;
    let next = served
        .edit_text("endpoints.yaml", |text| {
            text.replace("port_value: 8091", "port_value: 9091")
        })
        .await;
    let after = store_where(&client, |s| matches_snapshot(s, &next, &Source::Rest)).await;
    assert_ne!(after.get(ENDPOINT, "api"), before.get(ENDPOINT, "api"));
    client.stop().await;
}
