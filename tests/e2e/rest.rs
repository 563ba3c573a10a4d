//! Envoy's REST-JSON transport through the whole server (`app::start` over real fixture
//! files), over real HTTP/1.1 on the xDS port: JSON in and out, the same versions as gRPC,
//! 304 at the current version, 400 on bad bodies, a rejected edit keeps the last good
//! config, and polling resumes after a restart on the same port.

use serde_json::{Value, json};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE, RUNTIME, SECRET};

use crate::harness::*;

fn files(timeout_secs: u32) -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "clusters.json",
            vec![cluster_with_timeout("web", timeout_secs), cluster("api")],
        ),
        (
            "endpoints.json",
            vec![endpoints("web", 8081), endpoints("api", 8091)],
        ),
        ("listeners.json", vec![listener("ingress", 10000)]),
        ("routes.json", vec![route("local", "web")]),
        (
            "others.json",
            vec![
                json!({"@type": SECRET, "name": "tls"}),
                json!({"@type": RUNTIME, "name": "rtds", "layer": {"a": 1}}),
            ],
        ),
    ]
}

fn poll_body(node: &str, version: &str, names: &[&str]) -> String {
    json!({"node": {"id": node}, "version_info": version, "resource_names": names}).to_string()
}

/// POSTs a poll and expects a 200 DiscoveryResponse; returns it as JSON.
async fn poll(server: &FixtureServer, path: &str, version: &str, names: &[&str]) -> Value {
    let response = http_post(server.addr(), path, &poll_body("node-1", version, names)).await;
    assert_eq!(response.status, 200, "{path}: {}", response.body);
    assert_eq!(response.header("content-type"), Some("application/json"));
    response.json()
}

fn resource_names(response: &Value) -> Vec<String> {
    let resources = response["resources"].as_array().expect("resources");
    resources
        .iter()
        .map(|r| {
            let name = r.get("name").or_else(|| r.get("cluster_name"));
            name.and_then(Value::as_str).expect("named").to_string()
        })
        .collect()
}

fn version(response: &Value) -> String {
    response["version_info"]
        .as_str()
        .expect("version_info")
        .to_string()
}

#[tokio::test]
async fn rest_serves_each_type_as_json_with_the_versions_grpc_serves() {
    let server = FixtureServer::start(&files(1)).await;
    let cases: [(&str, &str, &[&str], &[&str]); 6] = [
        ("clusters", CLUSTER, &[], &["api", "web"]),
        ("endpoints", ENDPOINT, &["web"], &["web"]),
        ("listeners", LISTENER, &[], &["ingress"]),
        ("routes", ROUTE, &["local"], &["local"]),
        ("secrets", SECRET, &[], &["tls"]),
        ("runtime", RUNTIME, &[], &["rtds"]),
    ];
    let mut ads = SotwClient::connect(server.addr(), "node-1").await;
    for (rest, url, asked, served) in cases {
        let path = format!("/v3/discovery:{rest}");
        let response = poll(&server, &path, "", asked).await;
        assert_eq!(response["type_url"], url, "{rest}");
        assert!(
            response["resources"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["@type"] == url)
        );
        assert_eq!(resource_names(&response), served, "{rest}");
        let streamed = ads.subscribe(url, asked).await;
        assert_eq!(
            version(&response),
            streamed.version_info,
            "{rest}: same version as ADS"
        );
    }
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn rest_answers_304_at_the_current_version_and_the_edit_as_a_new_version() {
    let server = FixtureServer::start(&files(1)).await;
    let path = "/v3/discovery:clusters";
    let first = poll(&server, path, "", &[]).await;
    let v1 = version(&first);
    let unchanged = http_post(server.addr(), path, &poll_body("node-1", &v1, &[])).await;
    assert_eq!(unchanged.status, 304, "{}", unchanged.body);
    assert_eq!(unchanged.body, "", "Not Modified carries no body");

    let (name, resources) = files(2).remove(0);
    server.edit(name, &resources).await;
    let edited = poll(&server, path, &v1, &[]).await;
    let v2 = version(&edited);
    assert_ne!(v2, v1);
    assert_eq!(edited["resources"][1]["name"], "web");
    assert_eq!(edited["resources"][1]["connect_timeout"], "2s");
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn rest_keeps_serving_the_last_good_version_after_a_rejected_edit() {
    let server = FixtureServer::start(&files(1)).await;
    let path = "/v3/discovery:clusters";
    let good = version(&poll(&server, path, "", &[]).await);
    let rejected = server.break_file("clusters.json", "[{\"@type\": ").await;
    assert!(rejected.error.unwrap_or_default().contains("clusters.json"));
    let served = poll(&server, path, "", &[]).await;
    assert_eq!(version(&served), good);
    assert_eq!(resource_names(&served), ["api", "web"]);
    let held = http_post(server.addr(), path, &poll_body("node-1", &good, &[])).await;
    assert_eq!(held.status, 304, "a poller at the last good version has it");
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn malformed_json_is_400_with_the_parse_error() {
    let server = FixtureServer::start(&files(1)).await;
    let path = "/v3/discovery:clusters";
    let broken = http_post(server.addr(), path, "{\"node\": {\"id\": ").await;
    assert_eq!(broken.status, 400);
    assert!(
        broken.body.contains("not a DiscoveryRequest"),
        "{}",
        broken.body
    );
    assert!(broken.body.contains("line 1 column"), "{}", broken.body);
    let unknown = http_post(server.addr(), path, r#"{"version": "v1"}"#).await;
    assert_eq!(unknown.status, 400);
    assert!(unknown.body.contains("version"), "{}", unknown.body);
    let other = json!({"type_url": LISTENER}).to_string();
    let foreign = http_post(server.addr(), path, &other).await;
    assert_eq!(foreign.status, 400);
    assert!(foreign.body.contains("serves only"), "{}", foreign.body);
    let nowhere = http_post(server.addr(), "/v3/discovery:nothing", "{}").await;
    assert_eq!(nowhere.status, 404);
    assert!(
        nowhere.body.contains("/v3/discovery:clusters"),
        "{}",
        nowhere.body
    );
    // The server still answers good polls.
    assert_eq!(
        resource_names(&poll(&server, path, "", &[]).await),
        ["api", "web"]
    );
    server.server.shutdown().await.unwrap();
}

#[tokio::test]
async fn rest_polling_resumes_after_the_server_restarts_on_the_same_port() {
    let server = FixtureServer::start(&files(1)).await;
    let path = "/v3/discovery:endpoints";
    let before = poll(&server, path, "", &["web"]).await;
    let server = server.restart().await;
    let body = poll_body("node-1", &version(&before), &["web"]);
    let held = http_post(server.addr(), path, &body).await;
    assert_eq!(
        held.status, 304,
        "content-hash versions survive restarts: nothing new to fetch"
    );
    let (name, resources) = (
        "endpoints.json",
        vec![endpoints("web", 9999), endpoints("api", 8091)],
    );
    server.edit(name, &resources).await;
    let after = poll(&server, path, &version(&before), &["web"]).await;
    assert_ne!(version(&after), version(&before));
    let port = &after["resources"][0]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
        ["port_value"];
    assert_eq!(port, 9999);
    server.server.shutdown().await.unwrap();
}
