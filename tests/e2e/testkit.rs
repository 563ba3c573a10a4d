//! The Rust test API: `xdsloop_server::testkit::TestServer` with a real xdsloop-client.
//! Awaits see what happened before they were called; a NACK names the rejected version; a
//! timeout says what the node did instead; overlays reach their node only.

use std::time::Duration;

use bytes::Bytes;
use xdsloop_client::{Client, ClientConfig, Interest, Source};
use xdsloop_proto::{Resource, envoy::envoy::config::cluster::v3::Cluster, type_url::CLUSTER};
use xdsloop_server::{
    ConformanceMode, Verdict,
    app::Placement,
    testkit::{KitError, Resources, TestServer, WaitError},
};

use crate::client_support::{demo_copy, demo_dir, drain};
use crate::harness::{SotwClient, http_get};

const WAIT: Duration = Duration::from_secs(15);
/// One more cluster for the demo's `clusters.yaml`.
const CANARY: &str = "- {\"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster, name: canary, connect_timeout: 1s}\n";

pub(crate) fn cluster(name: &str, stat_name: &str) -> Resource {
    let cluster = Cluster {
        name: name.into(),
        alt_stat_name: stat_name.into(),
        ..Default::default()
    };
    Resource::from_message(&cluster).unwrap()
}

/// A cluster the client cannot decode: it must NACK it (C6).
fn undecodable(name: &str) -> Resource {
    Resource {
        bytes: Bytes::from_static(b"\x0a\xff"),
        version: "broken".into(),
        ..cluster(name, "")
    }
}

async fn client(server: &TestServer, node: &str, source: Source) -> Client {
    let mut config = ClientConfig::new(server.addr().to_string(), node);
    config.source = source;
    let client = Client::start(config, std::future::pending()).unwrap();
    drain(client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap());
    client
}

#[tokio::test]
async fn testkit_await_ack_counts_an_ack_that_came_before_the_call() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    let version = server.version("n1", "cds").unwrap();
    let first = server
        .await_ack("n1", "cds", Some(&version), WAIT)
        .await
        .unwrap();
    assert_eq!(
        (first.type_url.as_str(), first.version.as_str()),
        (CLUSTER, version.as_str())
    );
    // Nothing more happens on the stream: the ACK already in must satisfy a later await.
    let again = server
        .await_ack("n1", "cds", Some(&version), WAIT)
        .await
        .unwrap();
    assert_eq!(again, first);
    client.stop().await;
    server.shutdown().await.unwrap();
}

async fn nack_names_the_rejected_version(source: Source) {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", source).await;
    let good = server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    let bad = server
        .set_resources(None, Resources::new([undecodable("web")]).version("v2"))
        .unwrap();
    let nack = server.await_nack("n1", "cds", WAIT).await.unwrap();
    let served = &bad.get("n1", CLUSTER).unwrap().version;
    assert_eq!(
        &nack.version, served,
        "the NACK is of the version just pushed"
    );
    assert_eq!(nack.stream, good.stream);
    assert!(nack.message.contains("cannot decode"), "{nack:?}");
    let store = client.store().borrow().clone();
    assert_eq!(
        store.version(CLUSTER),
        Some(good.version.as_str()),
        "C6: keeps the last good"
    );
    client.stop().await;
}

#[tokio::test]
async fn testkit_sotw_await_nack_names_the_rejected_version_and_message() {
    nack_names_the_rejected_version(Source::Ads).await;
}

#[tokio::test]
async fn testkit_delta_await_nack_names_the_rejected_version_and_message() {
    nack_names_the_rejected_version(Source::AdsDelta).await;
}

#[tokio::test]
async fn testkit_timeout_says_what_the_node_did_instead() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    let ack = server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    // The awaited version never comes: the wait's own timeout ends it (no timing asserted).
    let err = server
        .await_ack("n1", "cds", Some("v9"), Duration::from_millis(200))
        .await
        .unwrap_err();
    let (v, nonce) = (&ack.version, &ack.nonce);
    assert_eq!(
        err.to_string(),
        format!(
            "node \"n1\" did not ACK cds at version \"v9\" within 200ms; instead, its last cds \
             messages:\n  stream 1: subscribe (version \"\")\n  stream 1: push version {v:?} \
             nonce {nonce:?} (1 resource)\n  stream 1: ack version {v:?} nonce {nonce:?}"
        )
    );
    let xdsloop_server::testkit::WaitError::Timeout { last, .. } = err else {
        panic!("an await of an ACK times out: {err:?}")
    };
    let last = last.expect("the node's ledger for cds");
    assert_eq!(last.last_acked.unwrap().version, ack.version);

    let err = server
        .await_nack("n2", "cds", Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("instead: no stream of that node was seen"),
        "{err}"
    );
    client.stop().await;
}

#[tokio::test]
async fn testkit_node_overlay_reaches_that_node_only_and_since_skips_earlier_acks() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .start()
        .await
        .unwrap();
    let (n1, n2) = (
        client(&server, "n1", Source::Ads).await,
        client(&server, "n2", Source::Ads).await,
    );
    let base = server.version("n2", "cds").unwrap();
    server
        .await_ack("n2", "cds", Some(&base), WAIT)
        .await
        .unwrap();
    server
        .await_ack("n1", "cds", Some(&base), WAIT)
        .await
        .unwrap();
    let mark = server.mark();
    server
        .set_resources(Some("n1"), [cluster("web", "b"), cluster("db", "b")])
        .unwrap();
    let overlay = server.version("n1", "cds").unwrap();
    assert_ne!(overlay, base);
    let ack = server
        .since(mark)
        .await_ack("n1", "cds", None, WAIT)
        .await
        .unwrap();
    assert_eq!(
        ack.version, overlay,
        "the ACK before the mark does not count"
    );
    assert!(n1.store().borrow().holds(CLUSTER, "db"));
    assert!(
        !n2.store().borrow().holds(CLUSTER, "db"),
        "n2 still has the base set"
    );
    assert_eq!(server.version("n2", "cds"), Some(base));
    n1.stop().await;
    n2.stop().await;
}

#[tokio::test]
async fn testkit_requests_lists_what_the_node_sent_in_order() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    let requests = server.requests("n1");
    assert!(!requests.incomplete);
    let verdicts: Vec<Verdict> = requests.iter().map(|r| r.facts.verdict).collect();
    assert_eq!(verdicts, [Verdict::Initial, Verdict::Ack], "{requests:#?}");
    assert!(server.requests("n2").is_empty());
    assert!(server.violations().is_empty(), "{:?}", server.violations());
    client.stop().await;
}

#[tokio::test]
async fn testkit_serves_a_fixture_directory_and_refuses_set_resources_there() {
    let server = TestServer::builder()
        .fixtures(demo_dir())
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    let version = server.version("n1", "cds").unwrap();
    server
        .await_ack("n1", "cds", Some(&version), WAIT)
        .await
        .unwrap();
    let err = server
        .set_resources(None, [cluster("web", "b")])
        .unwrap_err();
    assert!(matches!(err, KitError::ServesFixtures(_)), "{err}");
    let both = TestServer::builder()
        .fixtures(demo_dir())
        .resources([cluster("web", "a")])
        .start()
        .await;
    assert!(matches!(both, Err(KitError::TwoSources)));
    client.stop().await;
}

#[tokio::test]
async fn testkit_write_fixture_waits_until_the_edit_is_served_and_names_a_rejected_one() {
    let dir = demo_copy();
    let server = TestServer::builder()
        .fixtures(dir.path())
        .configure(|config| config.debounce = Duration::from_millis(20))
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    let mark = server.mark();
    let text = std::fs::read_to_string(dir.path().join("clusters.yaml")).unwrap() + CANARY;
    let served = server
        .write_fixture("clusters.yaml", &text, WAIT)
        .await
        .unwrap();
    let clusters = served.get("n1", CLUSTER).unwrap();
    assert!(clusters.resources.contains_key("canary"), "served at once");
    let version = clusters.version.clone();
    let since = server.since(mark);
    since
        .await_ack("n1", "cds", Some(&version), WAIT)
        .await
        .unwrap();

    let broken = server
        .write_fixture(
            "clusters.yaml",
            "- {name: [unclosed\n",
            Duration::from_secs(2),
        )
        .await
        .unwrap_err();
    let message = broken.to_string();
    assert!(
        message.contains("the reload was rejected") && message.contains("clusters.yaml"),
        "{message}"
    );
    assert!(matches!(broken, KitError::Wait(WaitError::NotMet { .. })));
    assert_eq!(
        server.version("n1", "cds"),
        Some(version),
        "the last good set stays"
    );
    client.stop().await;
}

#[tokio::test]
async fn testkit_configure_applies_to_fixture_servers_only() {
    let dir = demo_copy();
    let server = TestServer::builder()
        .fixtures(dir.path())
        .configure(|config| config.admin = Placement::Listener("127.0.0.1:0".parse().unwrap()))
        .start()
        .await
        .unwrap();
    let admin = server
        .running()
        .unwrap()
        .admin_addr
        .expect("its own admin port");
    assert_ne!(admin, server.addr());
    assert_eq!(http_get(admin, "/status").await.status, 200);
    assert_eq!(server.fixture_dir(), Some(dir.path()));

    let in_code = TestServer::builder()
        .resources([cluster("web", "a")])
        .configure(|config| config.debounce = Duration::ZERO)
        .start()
        .await;
    assert!(matches!(in_code, Err(KitError::ConfigNeedsFixtures)));
    let in_code = TestServer::builder()
        .resources([cluster("web", "a")])
        .start()
        .await
        .unwrap();
    assert!(in_code.running().is_none());
    let refused = in_code.write_fixture("clusters.yaml", "[]", WAIT).await;
    assert!(matches!(refused, Err(KitError::ServesResources)));
}

#[tokio::test]
async fn testkit_admin_serves_status_on_the_xds_port_only_when_asked() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .admin()
        .start()
        .await
        .unwrap();
    let client = client(&server, "n1", Source::Ads).await;
    server.await_ack("n1", "cds", None, WAIT).await.unwrap();
    let status = http_get(server.addr(), "/status").await;
    assert_eq!(status.status, 200);
    let streams = &status.json()["streams"];
    assert_eq!(streams[0]["node_id"], "n1", "{streams:#}");
    assert!(
        !streams[0]["recent"].as_array().unwrap().is_empty(),
        "timelines are on"
    );
    client.stop().await;
    let quiet = TestServer::builder().start().await.unwrap();
    assert_eq!(http_get(quiet.addr(), "/status").await.status, 404);
}

#[tokio::test]
async fn testkit_await_violation_reports_what_the_judge_found_and_strict_ends_the_stream() {
    let server = TestServer::builder()
        .resources([cluster("web", "a")])
        .conformance(ConformanceMode::Strict)
        .start()
        .await
        .unwrap();
    // A raw client that ACKs with a version the response never had (C4).
    let mut raw = SotwClient::connect(server.addr(), "n1").await;
    let first = raw.subscribe(CLUSTER, &[]).await;
    raw.request(CLUSTER, &[], "not-it", &first.nonce).await;
    let violation = server.await_violation("n1", WAIT).await.unwrap();
    assert_eq!(violation.check, "C4.ack-version", "{violation:?}");
    assert_eq!(server.violations(), [violation]);
    let ended = raw.try_recv().await.unwrap_err();
    assert_eq!(ended.code(), tonic::Code::FailedPrecondition, "{ended:?}");
}
