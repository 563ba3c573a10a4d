//! A server restart on the same port is survived: the client backs off, reconnects,
//! resubscribes and ends with the same applied versions (C10, C11, C13).

use xdsloop_client::{ConnectionReport, Report, Source};
use xdsloop_client::{Outgoing, Step};
use xdsloop_proto::type_url::CLUSTER;

use crate::client_support::*;

pub(crate) async fn survives_restart(source: Source) {
    let served = FixtureServer::demo().await;
    let (client, mut reports) = demo_client(config(served.addr(), source.clone())).await;
    let snapshot = served.snapshot();
    let before = store_where(&client, |s| matches_snapshot(s, &snapshot, &source)).await;
    let (dir, addr) = served.stop().await;
    report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::BackingOff { .. }) => Some(()),
        _ => None,
    })
    .await;
    assert!(
        client.store().borrow().holds(CLUSTER, "web"),
        "C13: config survives the drop"
    );
    let served = FixtureServer::on(dir, addr, |server| server).await;
    report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::Connected { .. }) => Some(()),
        _ => None,
    })
    .await;
    let resubscribe = report(&mut reports, |r| match r {
        Report::Sent(sent) if sent.request.type_url() == CLUSTER => Some((**sent).clone()),
        _ => None,
    })
    .await;
    assert_eq!(resubscribe.step, Step::Resubscribe, "the client knows it");
    let held = before.of_type(CLUSTER).unwrap();
    match resubscribe.request {
        Outgoing::Sotw(request) => {
            assert_eq!(
                request.version_info, held.version,
                "SotW resends the last version"
            );
            assert!(request.node.is_some() && request.response_nonce.is_empty());
        }
        Outgoing::Delta(request) => {
            let sent: std::collections::BTreeMap<_, _> =
                request.initial_resource_versions.into_iter().collect();
            let expected = before.held_versions(CLUSTER);
            assert_eq!(sent, expected, "Delta sends initial_resource_versions");
        }
    }
    let snapshot = served.snapshot();
    let after = store_where(&client, |s| matches_snapshot(s, &snapshot, &source)).await;
    for (type_url, held) in before.types() {
        assert_eq!(
            after.version(type_url),
            Some(held.version.as_str()),
            "{type_url}"
        );
        assert_eq!(
            after.held_versions(type_url),
            before.held_versions(type_url)
        );
    }
    client.stop().await;
}

#[tokio::test]
async fn client_sotw_survives_a_server_restart_on_the_same_port() {
    survives_restart(Source::Ads).await;
}

#[tokio::test]
async fn client_delta_survives_a_server_restart_with_initial_resource_versions() {
    survives_restart(Source::AdsDelta).await;
}
