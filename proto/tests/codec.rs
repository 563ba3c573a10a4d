//! The codec against realistic fixture documents: nested `Any`, YAML multi-documents,
//! DiscoveryResponse shapes, and errors that point at the problem.

use xdsloop_proto::{Codec, DecodeError, Format, type_url};

const LISTENER: &str = r#"
"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: ingress
address: { socket_address: { address: 0.0.0.0, port_value: 10000 } }
filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      stat_prefix: ingress
      rds: { route_config_name: local_route, config_source: { ads: {}, resource_api_version: V3 } }
      http_filters:
      - name: envoy.filters.http.router
        typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
"#;

#[test]
fn listener_with_nested_any_round_trips_through_json() {
    let codec = Codec::envoy();
    let docs = codec.decode_fixture(LISTENER, Format::Yaml).unwrap();
    let resource = &docs[0].resources[0];
    assert_eq!(resource.type_url, type_url::LISTENER);
    assert_eq!(resource.name, "ingress");
    let json = codec.to_json(&resource.type_url, &resource.bytes).unwrap();
    let hcm = &json["filter_chains"][0]["filters"][0]["typed_config"];
    assert_eq!(hcm["rds"]["route_config_name"], "local_route");
    assert_eq!(json["@type"], type_url::LISTENER);
}

#[test]
fn versions_are_deterministic_and_follow_content() {
    let codec = Codec::envoy();
    let a = codec.decode_fixture(LISTENER, Format::Yaml).unwrap();
    let b = codec.decode_fixture(LISTENER, Format::Yaml).unwrap();
    assert_eq!(a[0].resources[0].version, b[0].resources[0].version);
    let changed = LISTENER.replace("10000", "10001");
    let c = codec.decode_fixture(&changed, Format::Yaml).unwrap();
    assert_ne!(a[0].resources[0].version, c[0].resources[0].version);
}

#[test]
fn discovery_response_shape_and_multi_document_yaml() {
    let text = r#"
version_info: v7
resources:
- { "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster, name: a, type: EDS, eds_cluster_config: { eds_config: { ads: {} } } }
- { "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster, name: b, connect_timeout: 1s }
---
- { "@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment, cluster_name: a }
"#;
    let docs = Codec::envoy().decode_fixture(text, Format::Yaml).unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0].version_info.as_deref(), Some("v7"));
    let names: Vec<_> = docs
        .iter()
        .flat_map(|d| &d.resources)
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "a"]);
    assert_eq!(docs[1].resources[0].type_url, type_url::ENDPOINT);
}

#[test]
fn errors_name_line_resource_and_field() {
    let codec = Codec::envoy();
    let syntax = codec
        .decode_fixture("name: [unclosed\n", Format::Yaml)
        .unwrap_err();
    assert!(
        matches!(syntax, DecodeError::Syntax { line: 1 | 2, .. }),
        "{syntax}"
    );

    let unknown_field = r#"{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "a",
        "load_assignment": {"cluster_name": "a", "endpoints": [{"bogus": 1}]}}"#;
    let err = codec
        .decode_fixture(unknown_field, Format::Json)
        .unwrap_err()
        .to_string();
    assert!(err.contains("Cluster \"a\""), "{err}");
    assert!(err.contains("load_assignment.endpoints[0]"), "{err}");
    assert!(err.contains("bogus"), "{err}");

    let top_level_typo = r#"{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "a", "conect_timeout": "1s"}"#;
    let err = codec
        .decode_fixture(top_level_typo, Format::Json)
        .unwrap_err();
    assert!(
        matches!(&err, DecodeError::Field { path, .. } if path == "conect_timeout"),
        "{err}"
    );

    let wrong_type = r#"{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "a", "connect_timeout": 5}"#;
    let err = codec
        .decode_fixture(wrong_type, Format::Json)
        .unwrap_err()
        .to_string();
    assert!(err.contains("connect_timeout"), "{err}");

    let unknown_type =
        r#"{"@type": "type.googleapis.com/envoy.config.cluster.v3.Clustr", "name": "a"}"#;
    let err = codec
        .decode_fixture(unknown_type, Format::Json)
        .unwrap_err();
    assert!(matches!(err, DecodeError::UnknownType { .. }), "{err}");
}

#[test]
fn a_generated_message_becomes_a_named_resource_versioned_by_content() {
    use xdsloop_proto::{Resource, envoy::envoy::config::cluster::v3::Cluster};
    let cluster = |name: &str, alt_stat_name: &str| Cluster {
        name: name.into(),
        alt_stat_name: alt_stat_name.into(),
        ..Default::default()
    };
    let web = Resource::from_message(&cluster("web", "a")).unwrap();
    assert_eq!(web.type_url, type_url::CLUSTER);
    assert_eq!(web.name, "web");
    let again = Resource::from_message(&cluster("web", "a")).unwrap();
    assert_eq!(web.version, again.version, "equal content, equal version");
    let edited = Resource::from_message(&cluster("web", "b")).unwrap();
    assert_ne!(web.version, edited.version, "an edit is a new version");
    let err = Resource::from_message(&cluster("", "a")).unwrap_err();
    assert!(matches!(err, DecodeError::MissingName { .. }), "{err}");
}
