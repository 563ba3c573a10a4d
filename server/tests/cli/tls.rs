//! As users run it: `--tls-cert --tls-key --tls-client-ca`, the client's
//! verified identity in the log line of its stream, and `xdsloop-server status` reaching the
//! server over mTLS (and told what to do without TLS). Certificates are made here (rcgen).

use std::{path::Path, time::Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use tokio_stream::StreamExt;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
use xdsloop_proto::{
    discovery::{DiscoveryRequest, Node},
    envoy::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient,
    type_url::CLUSTER,
};

use crate::support::{Server, WAIT, fixtures, status};

const SPIFFE: &str = "spiffe://xdsloop.test/cli-client";

/// CA, server (localhost, 127.0.0.1) and client certificates in `dir`; the client's PEM pair.
fn certificates(dir: &Path) -> (String, String) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "cli test CA");
    let ca_key = KeyPair::generate().unwrap();
    std::fs::write(dir.join("ca.pem"), ca.self_signed(&ca_key).unwrap().pem()).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let sign = |params: CertificateParams, name: &str| {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap().pem();
        std::fs::write(dir.join(format!("{name}.pem")), &cert).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
        (cert, key.serialize_pem())
    };
    let mut server = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    server
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    sign(server, "server");
    let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(DnType::CommonName, "cli-client");
    client
        .subject_alt_names
        .push(SanType::URI(SPIFFE.try_into().unwrap()));
    sign(client, "client")
}

#[test]
fn mtls_identity_shows_in_the_log_and_in_status() {
    let dir = fixtures("v1");
    let certs = tempfile::tempdir().unwrap();
    let (client_cert, client_key) = certificates(certs.path());
    let file = |name: &str| certs.path().join(name).to_str().unwrap().to_string();
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        &file("server.pem"),
        "--tls-key",
        &file("server.key"),
        "--tls-client-ca",
        &file("ca.pem"),
    ];
    let server = Server::spawn(dir.path(), &args, &[]);
    let addr = server.listening();
    let admin_line = server.line().unwrap();
    assert!(admin_line.starts_with("admin: https://"), "{admin_line}");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ca = std::fs::read(certs.path().join("ca.pem")).unwrap();
    let _stream = runtime.block_on(async {
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(ca))
            .identity(Identity::from_pem(client_cert, client_key));
        let channel = Channel::from_shared(format!("https://{addr}"))
            .unwrap()
            .tls_config(tls)
            .unwrap()
            .connect()
            .await
            .expect("connects over mTLS");
        let request = DiscoveryRequest {
            node: Some(Node {
                id: "cli-node".into(),
                ..Default::default()
            }),
            type_url: CLUSTER.into(),
            ..Default::default()
        };
        let mut client = AggregatedDiscoveryServiceClient::new(channel);
        let requests = tokio_stream::iter([request]).chain(tokio_stream::pending());
        let mut responses = client
            .stream_aggregated_resources(requests)
            .await
            .unwrap()
            .into_inner();
        responses.message().await.unwrap().expect("a CDS response");
        responses
    });
    let deadline = Instant::now() + WAIT;
    loop {
        let line = server.log_line().expect("the server logs the stream");
        if line.contains("stream opened") {
            assert!(
                line.contains(&format!("identity=\"{SPIFFE}\"")) || line.contains(SPIFFE),
                "{line}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "no stream line");
    }

    let tls_args = [
        "--server",
        &addr,
        "--tls-ca",
        &file("ca.pem"),
        "--tls-cert",
        &file("client.pem"),
        "--tls-key",
        &file("client.key"),
        "--output",
        "json",
    ];
    let out = status(&tls_args);
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["streams"][0]["identity"]["uri_sans"][0], SPIFFE);
    assert_eq!(doc["streams"][0]["identity"]["subject_cn"], "cli-client");
    assert_eq!(doc["tls"]["client_auth"], "required");

    let plain = status(&["--server", &addr]);
    assert!(!plain.status.success());
    let stderr = String::from_utf8(plain.stderr).unwrap();
    assert!(
        stderr.contains("this port speaks TLS: use https://"),
        "{stderr}"
    );
}
