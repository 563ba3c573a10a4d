//! Fault rules through the Rust test API: a scenario given
//! to `TestServer` at start or at runtime makes xdsloop-client misbehave's other half happen:
//! a `close` makes it reconnect, resubscribe and ACK on the new stream; a `corrupt` makes it
//! NACK; a scenario that breaks a rule is refused with `KitError::Scenario`.

use std::time::Duration;

use xdsloop_client::{Client, ClientConfig, Interest, Source};
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{
    events::{Names, RequestFacts},
    scenario::{Action, Match, Rule, Scenario, When},
    testkit::{KitError, TestServer},
};

use crate::client_support::{demo_dir, drain};
use crate::testkit::cluster;

const WAIT: Duration = Duration::from_secs(15);

/// One rule on CDS: `action` at the `nth` response of a stream, once server-wide.
fn on_cds(id: &str, nth: u64, action: Action) -> Scenario {
    let rule = Rule {
        id: id.into(),
        selector: Match {
            type_url: Some(CLUSTER.into()),
            ..Default::default()
        },
        when: When {
            nth: Some(nth),
            ..Default::default()
        },
        times: Some(1),
        action,
        ..Default::default()
    };
    Scenario { rules: vec![rule] }
}

fn maintenance(nth: u64) -> Scenario {
    let close = Action::Close {
        code: tonic::Code::Unavailable as i32,
        message: "maintenance".into(),
    };
    on_cds("maintenance", nth, close)
}

async fn client(server: &TestServer, node: &str, source: Source) -> Client {
    let mut config = ClientConfig::new(server.addr().to_string(), node);
    config.source = source;
    config.backoff.initial = Duration::from_millis(50);
    let client = Client::start(config, std::future::pending()).unwrap();
    drain(client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap());
    client
}

/// The node's first CDS request on `stream`.
fn first_cds_request(server: &TestServer, stream: u64) -> RequestFacts {
    let requests = server.requests("n1");
    let first = requests
        .iter()
        .find(|r| r.stream == stream && &*r.facts.type_url == CLUSTER)
        .expect("a CDS request on the new stream");
    first.facts.clone()
}

#[tokio::test]
async fn testkit_close_rule_set_at_runtime_makes_the_client_reconnect_and_ack() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    let good = server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    server.set_scenario(maintenance(2)).unwrap();
    assert_eq!(server.fired("maintenance"), Some(0));
    // The update is the stream's 2nd CDS response: the stream is closed instead.
    server.set_resources(None, [cluster("web", "b")]).unwrap();
    let v2 = server.version("n1", "cds").unwrap();
    let acked = server
        .await_ack("n1", "cds", Some(&v2), WAIT)
        .await
        .unwrap();
    assert_ne!(acked.stream, good.stream, "ACKed on a new stream");
    assert_eq!(server.fired("maintenance"), Some(1));
    let resubscribe = first_cds_request(&server, acked.stream);
    assert_eq!(
        &*resubscribe.version, good.version,
        "C11: it resubscribes saying which version it holds"
    );
    server.clear_scenario();
    assert_eq!(server.fired("maintenance"), None, "no rule in force");
    client.stop().await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn testkit_close_rule_at_start_in_fixture_dir_mode_delta_resubscribes() {
    // The first CDS response is closed instead: the client holds nothing yet.
    let server = TestServer::builder()
        .fixtures(demo_dir())
        .scenario(maintenance(1))
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::AdsDelta).await;
    let acked = server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    assert_eq!(server.fired("maintenance"), Some(1));
    let closed = server.requests("n1")[0].stream;
    assert_ne!(
        acked.stream, closed,
        "ACKed on the stream after the closed one"
    );
    let resubscribe = first_cds_request(&server, acked.stream);
    assert!(
        resubscribe.earlier_had_type && matches!(resubscribe.names, Names::Delta { .. }),
        "a Delta resubscription: {resubscribe:?}"
    );
    client.stop().await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn testkit_corrupt_rule_makes_the_client_nack_and_keep_the_last_good() {
    let corrupt = on_cds("garble", 2, Action::Corrupt { resource: None });
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .scenario(corrupt)
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    let good = server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    server.set_resources(None, [cluster("web", "b")]).unwrap();
    let v2 = server.version("n1", "cds").unwrap();
    let nack = server.await_nack("n1", "cds", WAIT).await.unwrap();
    assert_eq!(
        nack.version, v2,
        "the corrupted response is the one rejected"
    );
    assert!(nack.message.contains("decode"), "{}", nack.message);
    assert_eq!(server.fired("garble"), Some(1));
    let held = client.store().borrow().version(CLUSTER).map(String::from);
    assert_eq!(
        held.as_deref(),
        Some(good.version.as_str()),
        "C6: last good kept"
    );
    client.stop().await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn testkit_a_bad_scenario_is_refused_with_the_rule_and_the_one_in_force_stays() {
    let bad = on_cds("zero", 0, Action::Drop);
    let refused = TestServer::builder()
        .resources([cluster("web", "a")])
        .scenario(bad.clone())
        .start()
        .await;
    let Err(KitError::Scenario(why)) = refused else {
        panic!("a bad scenario at start: {refused:?}")
    };
    assert_eq!(why, "rules[0] (zero): `when.nth` must be at least 1");
    let server = TestServer::builder()
        .scenario(maintenance(2))
        .start()
        .await
        .unwrap();
    let err = server.set_scenario(bad).unwrap_err();
    assert_eq!(
        err.to_string(),
        "scenario refused: rules[0] (zero): `when.nth` must be at least 1"
    );
    assert_eq!(server.fired("maintenance"), Some(0), "still in force");
    server.shutdown().await.unwrap();
}

/// A way back after a fault, with the rule kept: `resync` sends the NACKed type again and the
/// client ACKs the version it could not take.
#[tokio::test]
async fn testkit_resync_after_a_nack_brings_the_client_to_the_served_version() {
    let corrupt = on_cds("garble", 2, Action::Corrupt { resource: None });
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .scenario(corrupt)
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    let mark = server.mark();
    server.set_resources(None, [cluster("web", "b")]).unwrap();
    let v2 = server.version("n1", "cds").unwrap();
    server.await_nack("n1", "cds", WAIT).await.unwrap();
    server.resync();
    let ack = server
        .since(mark)
        .await_ack("n1", "cds", Some(&v2), WAIT)
        .await
        .unwrap();
    assert_eq!(ack.version, v2);
    assert_eq!(
        server.fired("garble"),
        Some(1),
        "the rule is still in force, spent"
    );
    client.stop().await;
    server.shutdown().await.unwrap();
}
