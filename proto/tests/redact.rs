//! Secret values hidden wherever a resource is displayed, found by Envoy's own
//! `udpa.annotations.sensitive` marks, inside `Any`s too; nothing else changes.

use prost::Message;
use serde_json::Value;
use xdsloop_proto::{Codec, Format, Resource, redact::Secrets, type_url};

const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n";

fn resource(yaml: &str) -> Resource {
    let codec = Codec::envoy();
    let mut docs = codec.decode_fixture(yaml, Format::Yaml).unwrap();
    docs.remove(0).resources.remove(0)
}

fn json(resource: &Resource, secrets: Secrets) -> Value {
    let codec = Codec::envoy();
    codec
        .to_json_with(&resource.type_url, &resource.bytes, secrets)
        .unwrap()
}

fn sds_secret() -> Resource {
    resource(&format!(
        r#"
"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
name: server-cert
tls_certificate:
  certificate_chain: {{ inline_string: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" }}
  private_key: {{ inline_string: {KEY:?} }}
  password: {{ inline_bytes: aHVudGVyMg== }}
"#
    ))
}

#[test]
fn redact_sds_private_key_and_password() {
    let secret = sds_secret();
    let shown = json(&secret, Secrets::Hide);
    let cert = &shown["tls_certificate"];
    let expected = format!("[redacted, {} bytes]", KEY.len());
    assert_eq!(cert["private_key"]["inline_string"], expected.as_str());
    assert_eq!(cert["password"]["inline_string"], "[redacted, 7 bytes]");
    assert!(cert["password"].get("inline_bytes").is_none());
    let chain = cert["certificate_chain"]["inline_string"].as_str().unwrap();
    assert!(
        chain.contains("BEGIN CERTIFICATE"),
        "certificates are public"
    );
    assert_eq!(shown["name"], "server-cert");
    let text = shown.to_string();
    assert!(
        !text.contains("PRIVATE KEY") && !text.contains("aHVudGVyMg"),
        "{text}"
    );
}

#[test]
fn show_secrets_reveals() {
    let shown = json(&sds_secret(), Secrets::Show);
    assert_eq!(
        shown["tls_certificate"]["private_key"]["inline_string"],
        KEY
    );
    assert_eq!(
        shown["tls_certificate"]["password"]["inline_bytes"],
        "aHVudGVyMg=="
    );
}

#[test]
fn redact_inline_cert_inside_cluster_transport_socket() {
    let cluster = resource(&format!(
        r#"
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: upstream
connect_timeout: 1s
transport_socket:
  name: envoy.transport_sockets.tls
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
    sni: api.internal
    common_tls_context:
      tls_certificates:
      - private_key: {{ inline_string: {KEY:?} }}
        certificate_chain: {{ filename: /etc/certs/chain.pem }}
      - private_key: {{ filename: /etc/certs/key.pem }}
"#
    ));
    let shown = json(&cluster, Secrets::Hide);
    let context = &shown["transport_socket"]["typed_config"];
    assert_eq!(context["sni"], "api.internal", "the rest of the Any stays");
    let certs = &context["common_tls_context"]["tls_certificates"];
    let hidden = certs[0]["private_key"]["inline_string"].as_str().unwrap();
    assert!(hidden.starts_with("[redacted, "), "{hidden}");
    assert_eq!(
        certs[1]["private_key"]["filename"], "/etc/certs/key.pem",
        "a file name is a reference, not the secret"
    );
    let codec = Codec::envoy();
    let bytes = codec
        .redacted(type_url::CLUSTER, &cluster.bytes)
        .unwrap()
        .expect("something was hidden");
    assert!(!String::from_utf8_lossy(&bytes).contains("PRIVATE KEY"));
    assert_eq!(
        codec.resource_name(type_url::CLUSTER, &bytes).unwrap(),
        "upstream"
    );
}

#[test]
fn redact_generic_secret_map_and_session_ticket_keys() {
    let generic = resource(
        r#"
"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
name: oauth
generic_secret:
  secrets:
    client-id: { inline_string: my-client }
    hmac: { inline_bytes: c2VjcmV0LWhtYWM= }
"#,
    );
    let shown = json(&generic, Secrets::Hide);
    let secrets = &shown["generic_secret"]["secrets"];
    assert_eq!(secrets["client-id"]["inline_string"], "[redacted, 9 bytes]");
    assert_eq!(secrets["hmac"]["inline_string"], "[redacted, 11 bytes]");
    let tickets = resource(
        r#"
"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
name: tickets
session_ticket_keys:
  keys: [{ inline_bytes: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA }]
"#,
    );
    let shown = json(&tickets, Secrets::Hide);
    let key = &shown["session_ticket_keys"]["keys"][0];
    assert_eq!(key["inline_string"], "[redacted, 96 bytes]");
}

#[test]
fn redact_nothing_secret_keeps_bytes_identical() {
    let cluster = resource(
        r#"
"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: plain
connect_timeout: 1s
metadata: { filter_metadata: { a: { x: 1 }, b: { y: 2 }, c: { z: 3 } } }
transport_socket:
  name: envoy.transport_sockets.tls
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
    common_tls_context:
      tls_certificates: [{ private_key: { filename: /etc/key.pem } }]
"#,
    );
    let codec = Codec::envoy();
    assert_eq!(
        codec.redacted(type_url::CLUSTER, &cluster.bytes).unwrap(),
        None
    );
    assert_eq!(json(&cluster, Secrets::Hide), json(&cluster, Secrets::Show));
    // And an encoded message the walk did not change still decodes to the same thing.
    let decoded = codec.decode(type_url::CLUSTER, &cluster.bytes).unwrap();
    assert_eq!(decoded.encode_to_vec().len(), cluster.bytes.len());
}
