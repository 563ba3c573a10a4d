//! What each one-shot rule makes of a REST answer, in JSON (`json`), through the handler.

use std::sync::Arc;

use axum::http::StatusCode;
use prost_reflect::{DeserializeOptions, DynamicMessage};
use serde_json::{Value, json};
use xdsloop_proto::{Codec, discovery::DiscoveryResponse, services::CLUSTERS, type_url::CLUSTER};

use super::{
    Rest,
    faults::RestFaults,
    tests::{body, rest},
};
use crate::{
    admin::registry::Registry,
    faults::scenario::{Scenario, Scenarios},
    snapshot::Snapshot,
};

const POLL: &[u8] = br#"{"node": {"id": "n1"}}"#;

fn two_clusters() -> Snapshot {
    let codec = Codec::envoy();
    let resources = ["c1", "c2"]
        .into_iter()
        .map(|name| {
            let value = json!({"@type": CLUSTER, "name": name, "connect_timeout": "1s"});
            let resource = codec.encode_resource(&value, "test").unwrap();
            (resource.name.clone(), Arc::new(resource))
        })
        .collect();
    let types = crate::snapshot::TypeResources::new(resources, None);
    Snapshot {
        generation: 1,
        base: [(CLUSTER.to_string(), Arc::new(types))].into(),
        overlays: Default::default(),
    }
}

/// A REST handler over two clusters with `action` in force on CDS polls, and the registry it
/// counts in.
fn rest_with(action: &str) -> (Rest, Registry) {
    let rule = format!("match: {{ service: rest, type: cds }}\n    do: {{ {action} }}");
    let (rest, registry, _) = rest_with_rule(&rule);
    (rest, registry)
}

/// A REST handler over two clusters with one rule (`id: r`; `rule` is the rest of its YAML).
fn rest_with_rule(rule: &str) -> (Rest, Registry, Scenarios) {
    let scenarios = Scenarios::new();
    let yaml = format!("version: 1\nrules:\n  - id: r\n    {rule}\n");
    scenarios.set(Scenario::from_yaml(&yaml).unwrap()).unwrap();
    let registry = Registry::new();
    let faults = RestFaults::new(scenarios.clone(), registry.clone());
    (
        rest(two_clusters()).with_faults(faults),
        registry,
        scenarios,
    )
}

async fn poll(rest: &Rest, node: &str, version: &str) -> (StatusCode, String) {
    let request = json!({"node": {"id": node}, "version_info": version}).to_string();
    body(rest.handle(CLUSTERS, request.as_bytes()).await).await
}

async fn answer(action: &str) -> (StatusCode, String, Registry) {
    let (rest, registry) = rest_with(action);
    let (status, text) = body(rest.handle(CLUSTERS, POLL).await).await;
    (status, text, registry)
}

/// Parses a DiscoveryResponse the way a lenient client does (unknown fields ignored).
fn lenient_parse(text: &str) -> Result<DiscoveryResponse, String> {
    let codec = Codec::envoy();
    let descriptor = codec.pool().get_message_by_name(super::RESPONSE).unwrap();
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let mut json = serde_json::Deserializer::from_str(text);
    let message = DynamicMessage::deserialize_with_options(descriptor, &mut json, &options)
        .map_err(|e| e.to_string())?;
    message.transcode_to().map_err(|e| e.to_string())
}

fn names(json: &Value) -> Vec<Value> {
    let resources = json["resources"].as_array().unwrap();
    resources.iter().map(|r| r["name"].clone()).collect()
}

#[tokio::test]
async fn rest_withhold_and_duplicate_change_the_resource_list() {
    let (status, text, registry) = answer("withhold: { names: [c1] }").await;
    assert_eq!(status, StatusCode::OK);
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(names(&json), [json!("c2")]);
    assert_eq!(registry.counters().faults, 1);
    let (_, text, _) = answer("duplicate: { resource: c2 }").await;
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(names(&json), [json!("c1"), json!("c2"), json!("c2")]);
}

#[tokio::test]
async fn rest_corrupt_puts_a_number_where_the_name_goes() {
    let (status, text, _) = answer("corrupt: { resource: c2 }").await;
    assert_eq!(status, StatusCode::OK);
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["resources"][0]["name"], "c1");
    assert_eq!(json["resources"][1], json!({"@type": CLUSTER, "name": 15}));
    let error = lenient_parse(&text).unwrap_err();
    assert!(error.contains("15"), "{error}");
}

#[tokio::test]
async fn rest_wrong_type_url_and_oversize() {
    let (_, text, _) = answer("wrong_type_url: { in: resource, type: eds }").await;
    let json: Value = serde_json::from_str(&text).unwrap();
    let foreign = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
    assert_eq!(json["resources"][0]["@type"], foreign);
    assert_eq!(
        json["resources"][0]["name"], "c1",
        "the fields stay the cluster's"
    );
    let (_, text, _) = answer("wrong_type_url: { in: response, type: eds }").await;
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["type_url"], foreign);
    let (status, text, _) = answer("oversize: { bytes: 64KiB }").await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.len() >= 64 * 1024, "{}", text.len());
    let json: Value = serde_json::from_str(&text).expect("still JSON");
    assert_eq!(names(&json).len(), 2);
}

#[tokio::test]
async fn rest_nth_counts_each_nodes_answers_and_not_304s() {
    let (rest, _, scenarios) = rest_with_rule(
        "match: { service: rest, type: cds }\n    when: { nth: 2 }\n    do: { corrupt: {} }",
    );
    let corrupted = |text: &str| text.contains(r#""name":15"#);
    let (_, first) = poll(&rest, "n1", "").await;
    assert!(!corrupted(&first));
    let version = serde_json::from_str::<Value>(&first).unwrap()["version_info"].clone();
    let (status, _) = poll(&rest, "n1", version.as_str().unwrap()).await;
    assert_eq!(
        status,
        StatusCode::NOT_MODIFIED,
        "not an answer: not counted"
    );
    let (_, other) = poll(&rest, "n2", "").await;
    assert!(!corrupted(&other), "n2 counts its own answers");
    let (_, second) = poll(&rest, "n1", "").await;
    assert!(corrupted(&second), "n1's second answer");
    assert_eq!(scenarios.current().counters[0].fired(), 1);
}

#[tokio::test]
async fn rest_skips_a_stream_only_rule_without_a_service() {
    let (rest, registry, scenarios) =
        rest_with_rule("match: { type: cds }\n    do: { stale_nonce: {} }");
    let (status, text) = poll(&rest, "n1", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&serde_json::from_str(&text).unwrap()).len(), 2);
    let counters = &scenarios.current().counters[0];
    assert_eq!((counters.fired(), counters.skipped_count()), (0, 0));
    assert_eq!(registry.counters().faults, 0);
}

#[tokio::test]
async fn rest_timed_close_fires_on_the_next_poll_even_a_304() {
    let (_, plain) = poll(&rest(two_clusters()), "n1", "").await;
    let json: Value = serde_json::from_str(&plain).unwrap();
    let current = json["version_info"].as_str().unwrap().to_string();
    let (rest, registry, _) = rest_with_rule(
        "match: { service: rest }\n    when: { after: 0s }\n    times: 1\n    do: { close: { code: UNAVAILABLE, message: gone } }",
    );
    let (status, text) = poll(&rest, "n1", &current).await;
    assert_eq!(
        (status, text.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "gone")
    );
    assert_eq!(registry.counters().faults, 1);
    let (status, _) = poll(&rest, "n1", &current).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED, "spent");
}
