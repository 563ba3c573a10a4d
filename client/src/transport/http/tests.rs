//! The REST HTTP client against a raw socket that answers with canned HTTP, and the JSON forms.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use xdsloop_proto::discovery::Node;
use xdsloop_proto::type_url::CLUSTER;

use super::*;

/// Serves one connection: reads the request head and body, answers `reply`, and hands back
/// what it read.
async fn one_shot(reply: &'static str) -> (Base, tokio::task::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = Base::parse(&listener.local_addr().unwrap().to_string()).unwrap();
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    break;
                }
            }
        }
        socket.write_all(reply.as_bytes()).await.unwrap();
        socket.shutdown().await.unwrap();
        String::from_utf8(seen).unwrap()
    });
    (base, task)
}

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_200_answer_is_the_body_and_the_request_is_a_json_post() {
    let (base, server) =
        one_shot("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}").await;
    let answer = post(
        &base,
        "/v3/discovery:clusters",
        b"{\"a\":1}".to_vec(),
        TIMEOUT,
        1 << 20,
    )
    .await
    .unwrap();
    assert_eq!(answer, Answer::Body(Bytes::from_static(b"{}")));
    let seen = server.await.unwrap();
    assert!(
        seen.starts_with("POST /v3/discovery:clusters HTTP/1.1\r\n"),
        "{seen}"
    );
    assert!(
        seen.to_ascii_lowercase()
            .contains("content-type: application/json")
    );
    assert!(seen.ends_with("{\"a\":1}"));
}

#[tokio::test]
async fn a_304_answer_means_not_modified() {
    let (base, _server) = one_shot("HTTP/1.1 304 Not Modified\r\n\r\n").await;
    let answer = post(&base, "/x", Vec::new(), TIMEOUT, 1 << 20)
        .await
        .unwrap();
    assert_eq!(answer, Answer::NotModified);
}

#[tokio::test]
async fn other_statuses_are_errors_with_the_status_and_body() {
    let (base, _server) =
        one_shot("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\ndown").await;
    let error = post(&base, "/x", Vec::new(), TIMEOUT, 1 << 20)
        .await
        .unwrap_err();
    assert!(error.contains("503") && error.contains("down"), "{error}");
}

#[tokio::test]
async fn a_body_over_the_limit_is_an_error() {
    let (base, _server) = one_shot("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123456789").await;
    let error = post(&base, "/x", Vec::new(), TIMEOUT, 4).await.unwrap_err();
    assert!(error.contains("body"), "{error}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = Base::parse(&listener.local_addr().unwrap().to_string()).unwrap();
    // Accepts and then says nothing.
    let _hold = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        std::future::pending::<()>().await;
        drop(socket);
    });
    let error = post(&base, "/x", Vec::new(), Duration::from_millis(200), 1 << 20)
        .await
        .unwrap_err();
    assert!(error.contains("no answer within"), "{error}");
}

#[tokio::test]
async fn a_closed_port_is_a_connection_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = Base::parse(&format!("127.0.0.1:{port}")).unwrap();
    let error = post(&base, "/x", Vec::new(), TIMEOUT, 1 << 20)
        .await
        .unwrap_err();
    assert!(error.contains("connect to"), "{error}");
}

#[test]
fn base_takes_host_port_or_an_http_uri_with_a_prefix() {
    assert_eq!(
        Base::parse("http://localhost:8080/xds/").unwrap(),
        Base {
            authority: "localhost:8080".into(),
            prefix: "/xds".into(),
            tls: None,
        }
    );
    assert_eq!(Base::parse("127.0.0.1:1").unwrap().prefix, "");
    let https = Base::parse("https://h:1").unwrap_err().to_string();
    assert!(https.contains("needs --tls-ca"), "{https}");
    assert!(Base::parse("nohost").is_err());
}

#[test]
fn requests_are_json_with_proto_field_names() {
    let codec = Codec::envoy();
    let request = DiscoveryRequest {
        version_info: "v3".into(),
        node: Some(Node {
            id: "n1".into(),
            ..Default::default()
        }),
        resource_names: vec!["a".into(), "b".into()],
        type_url: CLUSTER.into(),
        ..Default::default()
    };
    let json: serde_json::Value = serde_json::from_slice(&request_json(&codec, &request)).unwrap();
    assert_eq!(json["version_info"], "v3");
    assert_eq!(json["node"]["id"], "n1");
    assert_eq!(json["resource_names"], serde_json::json!(["a", "b"]));
    assert_eq!(json["type_url"], CLUSTER);
}

#[test]
fn responses_parse_with_any_resources_and_ignore_unknown_fields() {
    let codec = Codec::envoy();
    let body = serde_json::json!({
        "version_info": "v9",
        "nonce": "n",
        "type_url": CLUSTER,
        "some_future_field": 1,
        "resources": [{"@type": CLUSTER, "name": "web", "connect_timeout": "1s"}],
    });
    let response = response_from_json(&codec, body.to_string().as_bytes()).unwrap();
    assert_eq!(response.version_info, "v9");
    assert_eq!(response.resources.len(), 1);
    assert_eq!(response.resources[0].type_url, CLUSTER);
    assert_eq!(
        codec
            .resource_name(CLUSTER, &response.resources[0].value)
            .unwrap(),
        "web"
    );
    assert!(response_from_json(&codec, b"{\"version_info\": 3").is_err());
    let unknown = serde_json::json!({"resources": [{"@type": "type.googleapis.com/no.Such"}]});
    assert!(response_from_json(&codec, unknown.to_string().as_bytes()).is_err());
}
