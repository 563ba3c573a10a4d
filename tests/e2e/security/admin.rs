//! Item 3: the admin data (`/status`, `/snapshot`, `/scenario`, the live page, CSDS) answers
//! loopback peers, the admin token and verified client certificates; everyone else gets 401
//! (CSDS: `UNAUTHENTICATED`) with a hint, and /healthz stays open.
//!
//! A remote peer needs an address of this host that is not loopback: the one the kernel
//! would use toward a TEST-NET address (a UDP "connect" sends nothing). A host without one
//! (no interface but `lo`) skips these tests, saying so.

use std::net::{IpAddr, SocketAddr, UdpSocket};

use tonic::transport::Channel;
use xdsloop_proto::csds::ClientStatusRequest;
use xdsloop_proto::envoy::envoy::service::status::v3::client_status_discovery_service_client::ClientStatusDiscoveryServiceClient;
use xdsloop_server::{app::Placement, testkit::TestServer};
use xdsloop_tests::certs::Pki;

use super::*;

fn non_loopback_ip() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The demo served on all interfaces, with `token`; the address to reach it from this host's
/// non-loopback address.
async fn exposed(token: Option<&str>) -> Option<(Exposed, SocketAddr)> {
    let Some(ip) = non_loopback_ip() else {
        eprintln!("skipped: this host has no non-loopback address to be a remote peer from");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&demo_dir(), dir.path());
    let token = token.map(str::to_string);
    let server = TestServer::builder()
        .fixtures(dir.path())
        .listen("0.0.0.0:0".parse().unwrap())
        .admin()
        .configure(move |config| config.admin_token = token.clone())
        .start()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let remote = SocketAddr::new(ip, server.addr().port());
    Some(((dir, server), remote))
}

/// Kept alive for the test's length: the fixtures and the server.
type Exposed = (TempDir, TestServer);

#[tokio::test]
async fn admin_remote_peer_without_token_gets_401_with_hint() {
    let Some((_served, remote)) = exposed(Some("s3cret")).await else {
        return;
    };
    // The page and its per-stream view show what /status shows; /scenario can change faults.
    for path in ["/status", "/snapshot", "/scenario", "/", "/streams/1"] {
        let refused = crate::harness::http_get(remote, path).await;
        assert_eq!(refused.status, 401, "{path}: {refused:?}");
        assert_eq!(
            refused.header("www-authenticate"),
            Some("Bearer realm=\"xdsloop-admin\"")
        );
        let body = refused.json();
        let error = body["error"].as_str().unwrap();
        assert!(error.contains("is not a loopback peer"), "{body}");
        let hint = body["hint"].as_str().unwrap();
        assert!(
            hint.contains("--admin-token") && hint.contains("--tls-client-ca"),
            "{body}"
        );
    }
    let error = remote::get(&remote.to_string(), "/status")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("HTTP 401"), "{error}");
    assert!(error.to_string().contains("pass --admin-token"), "{error}");
}

/// A remote peer cannot change the scenario either: the refusal comes before the body is read.
#[tokio::test]
async fn admin_remote_peer_cannot_put_a_scenario() {
    let Some((_served, remote)) = exposed(Some("s3cret")).await else {
        return;
    };
    let rules = "version: 1\nrules:\n  - match: { type: cds }\n    do: { drop: {} }\n";
    for method in ["PUT", "DELETE"] {
        let refused = crate::harness::http_send(remote, method, "/scenario", Some(rules)).await;
        assert_eq!(refused.status, 401, "{method}: {refused:?}");
    }
    let local = SocketAddr::new([127, 0, 0, 1].into(), remote.port());
    let scenario = crate::harness::http_get(local, "/scenario").await;
    assert!(
        !scenario.body.contains("drop"),
        "the refused PUT left no rule: {scenario:?}"
    );
}

/// With `--admin ADDR` the xDS port's admin paths say where the admin is, whatever the
/// method: a PUT of a scenario sent to the wrong port is told where to go, not "method not
/// allowed".
#[tokio::test]
async fn admin_elsewhere_the_xds_port_names_the_admin_listener_for_every_method() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&demo_dir(), dir.path());
    let admin_port = Placement::Listener("127.0.0.1:0".parse().unwrap());
    let server = TestServer::builder()
        .fixtures(dir.path())
        .configure(move |config| config.admin = admin_port)
        .start()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let running = server.running().unwrap();
    let admin = running.admin_addr.expect("an admin listener").to_string();
    let rules = "version: 1\nrules:\n  - match: { type: cds }\n    do: { drop: {} }\n";
    for (method, path) in [
        ("GET", "/status"),
        ("PUT", "/scenario"),
        ("DELETE", "/scenario"),
    ] {
        let answer = crate::harness::http_send(running.addr, method, path, Some(rules)).await;
        assert_eq!(answer.status, 404, "{method} {path}: {answer:?}");
        assert!(answer.body.contains(&admin), "{method} {path}: {answer:?}");
    }
}

#[tokio::test]
async fn admin_bearer_token_allows() {
    let Some((_served, remote)) = exposed(Some("s3cret")).await else {
        return;
    };
    let with = |token: &str| remote::RemoteAccess {
        token: Some(token.to_string()),
        ..Default::default()
    };
    let doc = remote::fetch_with(&remote.to_string(), &with("s3cret")).await;
    assert!(doc.is_ok(), "{doc:?}");
    let wrong = remote::fetch_with(&remote.to_string(), &with("guess"))
        .await
        .unwrap_err();
    assert!(
        wrong.to_string().contains("not the server's --admin-token"),
        "{wrong}"
    );
}

#[tokio::test]
async fn healthz_stays_open() {
    let Some((_served, remote)) = exposed(None).await else {
        return;
    };
    let health = crate::harness::http_get(remote, "/healthz").await;
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(health.json()["status"], "ok");
}

#[tokio::test]
async fn admin_verified_client_cert_allows() {
    let Some(ip) = non_loopback_ip() else {
        eprintln!("skipped: this host has no non-loopback address to be a remote peer from");
        return;
    };
    let pki = Pki::new();
    // The admin routes on a listener of their own: there client certificates are optional,
    // so the rule decides (on the xDS port mTLS already requires one).
    let served = serve_tls(&pki, true, |c| {
        c.listen = "0.0.0.0:0".parse().unwrap();
        c.admin = Placement::Listener("0.0.0.0:0".parse().unwrap());
    })
    .await;
    let admin =
        SocketAddr::new(ip, served.running().unwrap().admin_addr.unwrap().port()).to_string();
    let mut anonymous = admin_access(&pki, None);
    anonymous.server_name = Some("localhost".into());
    let refused = remote::fetch_with(&admin, &anonymous).await.unwrap_err();
    assert!(refused.to_string().contains("HTTP 401"), "{refused}");
    let identity = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let mut certified = admin_access(&pki, identity);
    certified.server_name = Some("localhost".into());
    let doc = remote::fetch_with(&admin, &certified).await;
    assert!(doc.is_ok(), "{doc:?}");
    // Loopback needs neither.
    let admin_loopback = served.running().unwrap().admin_addr.unwrap().port();
    let local = format!("127.0.0.1:{admin_loopback}");
    assert!(
        remote::fetch_with(&local, &admin_access(&pki, None))
            .await
            .is_ok()
    );
}

/// CSDS shows what `/status` shows: on the xDS port it follows the same rule, refusing a
/// remote peer without the token with `UNAUTHENTICATED` and the same hint.
#[tokio::test]
async fn csds_follows_the_admin_access_rule() {
    let Some((_served, remote)) = exposed(Some("s3cret")).await else {
        return;
    };
    let channel = Channel::from_shared(format!("http://{remote}")).unwrap();
    let mut csds = ClientStatusDiscoveryServiceClient::new(channel.connect().await.unwrap());
    let refused = csds
        .fetch_client_status(ClientStatusRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    assert!(
        refused.message().contains("is not a loopback peer")
            && refused.message().contains("--admin-token"),
        "{refused:?}"
    );
    let mut request = tonic::Request::new(ClientStatusRequest::default());
    let bearer = "Bearer s3cret".parse().unwrap();
    request.metadata_mut().insert("authorization", bearer);
    let answered = csds.fetch_client_status(request).await;
    assert!(answered.is_ok(), "{answered:?}");
}
