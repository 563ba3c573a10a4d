//! Item 2: secret values out of sight in `/snapshot`, CSDS, the client's `--dump` and both
//! sides' transcripts (`--record --record-resources`), shown with `--show-secrets`; the xDS wire
//! still carries them.

use clap::Parser;
use tonic::transport::Channel;
use xdsloop_client::cli::{self, Args};
use xdsloop_client::{Client, Interest};
use xdsloop_proto::csds::ClientStatusRequest;
use xdsloop_proto::envoy::envoy::service::status::v3::client_status_discovery_service_client::ClientStatusDiscoveryServiceClient;
use xdsloop_proto::redact::Secrets;
use xdsloop_proto::type_url;
use xdsloop_server::app::Recording;
use xdsloop_server::status::StreamStatus;
use xdsloop_server::testkit::TestServer;

use super::*;
use crate::harness::http_get;

const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldC0xMjM=\n-----END PRIVATE KEY-----\n";

fn secret_fixture() -> String {
    serde_json::json!([{
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
        "name": "edge-cert",
        "tls_certificate": {
            "certificate_chain": {"filename": "/etc/envoy/edge.pem"},
            "private_key": {"inline_string": KEY},
            "password": {"inline_string": "hunter2"}
        }
    }])
    .to_string()
}

/// The demo plus one SDS secret, plaintext, with `secrets` for `/snapshot`.
async fn serve_with_secret(secrets: Secrets) -> (TempDir, TestServer) {
    serve_with_secret_and(secrets, |_| {}).await
}

/// [`serve_with_secret`], after `tweak` changes the config.
async fn serve_with_secret_and(
    secrets: Secrets,
    tweak: impl Fn(&mut Config) + Send + Sync + 'static,
) -> (TempDir, TestServer) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&demo_dir(), dir.path());
    std::fs::write(dir.path().join("secret.json"), secret_fixture()).unwrap();
    let server = TestServer::builder()
        .fixtures(dir.path())
        .admin()
        .configure(move |config| config.secrets = secrets)
        .configure(tweak);
    (dir, server.start().await.unwrap_or_else(|e| panic!("{e}")))
}

#[tokio::test]
async fn redact_sds_private_key_and_password_in_snapshot() {
    let (_dir, server) = serve_with_secret(Secrets::Hide).await;
    let running = server.running().unwrap();
    let raw = http_get(running.addr, "/snapshot?type=sds").await;
    assert_eq!(raw.status, 200, "{raw:?}");
    assert!(
        !raw.body.contains("PRIVATE KEY") && !raw.body.contains("hunter2"),
        "{}",
        raw.body
    );
    let doc = raw.json();
    let cert = &doc["types"][0]["resources"][0]["resource"]["tls_certificate"];
    let hidden = format!("[redacted, {} bytes]", KEY.len());
    assert_eq!(cert["private_key"]["inline_string"], hidden.as_str());
    assert_eq!(cert["password"]["inline_string"], "[redacted, 7 bytes]");
    assert_eq!(cert["certificate_chain"]["filename"], "/etc/envoy/edge.pem");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn show_secrets_reveals() {
    let (_dir, server) = serve_with_secret(Secrets::Show).await;
    let running = server.running().unwrap();
    let doc = http_get(running.addr, "/snapshot?type=sds").await.json();
    let cert = &doc["types"][0]["resources"][0]["resource"]["tls_certificate"];
    assert_eq!(cert["private_key"]["inline_string"], KEY);
    server.shutdown().await.unwrap();
}

/// `xdsloop-client --dump` over SDS: hidden by default, shown with `--show-secrets`.
async fn dump(addr: &str, extra: &[&str]) -> String {
    let mut argv = vec![
        "xdsloop-client",
        "--server",
        addr,
        "--types",
        "sds",
        "--dump",
    ];
    argv.extend(extra);
    argv.extend(["--output", "json"]);
    let args = Args::parse_from(argv);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let run = cli::run(args, std::future::pending(), &mut out, &mut err);
    tokio::time::timeout(crate::client_support::WAIT, run)
        .await
        .expect("--dump ends once synced")
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn client_dump_redacts_secret() {
    let (_dir, server) = serve_with_secret(Secrets::Hide).await;
    let running = server.running().unwrap();
    let addr = running.addr.to_string();
    let hidden = dump(&addr, &[]).await;
    assert!(
        !hidden.contains("PRIVATE KEY") && !hidden.contains("hunter2"),
        "{hidden}"
    );
    assert!(
        hidden.contains(&format!("[redacted, {} bytes]", KEY.len())),
        "{hidden}"
    );
    // The wire carried the key all along: --show-secrets prints what the client received.
    let shown = dump(&addr, &["--show-secrets"]).await;
    let doc: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let resource = &doc["types"][0]["resources"][0]["resource"];
    assert_eq!(
        resource["tls_certificate"]["private_key"]["inline_string"],
        KEY
    );
    server.shutdown().await.unwrap();
}

/// The recorded text holds the key's marker, and neither the key nor the password.
fn assert_redacted(text: &str) {
    assert!(
        !text.contains("PRIVATE KEY") && !text.contains("hunter2"),
        "{text}"
    );
    assert!(
        text.contains(&format!("[redacted, {} bytes]", KEY.len())),
        "{text}"
    );
}

/// The server's transcript with resource bodies: what went on the wire is recorded with the
/// secret values hidden, as `/snapshot` shows them.
#[tokio::test]
async fn server_record_resources_redacts_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.jsonl");
    let recording = Recording {
        path: path.clone(),
        resources: true,
    };
    let (_fixtures, server) =
        serve_with_secret_and(Secrets::Hide, move |c| c.record = Some(recording.clone())).await;
    let running = server.running().unwrap();
    // The client takes the real key (--show-secrets), so the wire is known to carry it.
    let shown = dump(&running.addr.to_string(), &["--show-secrets"]).await;
    assert!(shown.contains("PRIVATE KEY"), "{shown}");
    server.shutdown().await.unwrap();
    let recorded = std::fs::read_to_string(&path).unwrap();
    assert!(
        recorded.contains("edge-cert"),
        "the SDS push is recorded:\n{recorded}"
    );
    assert_redacted(&recorded);
}

/// The client's transcript with resource bodies hides secret values too.
#[tokio::test]
async fn client_record_resources_redacts_secrets() {
    let (_fixtures, server) = serve_with_secret(Secrets::Hide).await;
    let running = server.running().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.jsonl");
    let file = path.to_str().unwrap();
    let extra = ["--record", file, "--record-resources"];
    dump(&running.addr.to_string(), &extra).await;
    let recorded = std::fs::read_to_string(&path).unwrap();
    assert!(
        recorded.contains("edge-cert"),
        "the SDS push is recorded:\n{recorded}"
    );
    assert_redacted(&recorded);
    server.shutdown().await.unwrap();
}

/// CSDS carries the resources a client holds: their secret values are hidden as in
/// `/snapshot` (the client itself got the real key on the wire).
#[tokio::test]
async fn csds_redacts_secrets() {
    let (_fixtures, server) = serve_with_secret(Secrets::Hide).await;
    let running = server.running().unwrap();
    let client = Client::start(config(running.addr, Source::Ads), std::future::pending()).unwrap();
    let sds = client
        .subscribe(type_url::SECRET, Interest::Wildcard)
        .await
        .unwrap();
    crate::client_support::drain(sds);
    let held = crate::client_support::store_where(&client, |s| {
        s.get(type_url::SECRET, "edge-cert").is_some()
    })
    .await;
    let key = &held.get(type_url::SECRET, "edge-cert").unwrap().bytes;
    assert!(contains(key, b"PRIVATE KEY"), "the wire carried the key");
    crate::harness::registry_until(
        &running.registry,
        "the client to ACK the secret",
        |streams| {
            let acked = |s: &&StreamStatus| {
                s.types
                    .get(type_url::SECRET)
                    .is_some_and(|t| t.last_acked.is_some())
            };
            streams.iter().any(|s| acked(&s))
        },
    )
    .await;
    let channel = Channel::from_shared(format!("http://{}", running.addr)).unwrap();
    let mut csds = ClientStatusDiscoveryServiceClient::new(channel.connect().await.unwrap());
    let request = ClientStatusRequest::default();
    let answer = csds
        .fetch_client_status(request)
        .await
        .unwrap()
        .into_inner();
    let entries = answer.config.iter().flat_map(|c| &c.generic_xds_configs);
    let mut secret = entries.filter(|e| e.name == "edge-cert");
    let shown = secret
        .find_map(|e| e.xds_config.clone())
        .expect("the SYNCED secret's content")
        .value;
    assert!(!contains(&shown, b"PRIVATE KEY") && !contains(&shown, b"hunter2"));
    let marker = format!("[redacted, {} bytes]", KEY.len());
    assert!(contains(&shown, marker.as_bytes()), "{shown:?}");
    client.stop().await;
    server.shutdown().await.unwrap();
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
