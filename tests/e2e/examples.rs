//! The files in `examples/` are real client configurations: the Envoy bootstraps must decode as
//! `envoy.config.bootstrap.v3.Bootstrap` with the project's own descriptor pool (unknown fields
//! rejected, nested `Any`s resolved), and must point Envoy at `xdsloop-server` over ADS. No Envoy
//! binary is needed; the gRPC bootstrap is exercised for real by `make interop`.

use std::path::{Path, PathBuf};

use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage};
use xdsloop_proto::Codec;
use xdsloop_proto::envoy::envoy::config::bootstrap::v3::Bootstrap;
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::envoy::envoy::config::core::v3::{
    Address, ApiConfigSource, ApiVersion, ConfigSource, address, api_config_source::ApiType,
    config_source::ConfigSourceSpecifier, grpc_service::TargetSpecifier,
    socket_address::PortSpecifier,
};
use xdsloop_proto::envoy::envoy::config::endpoint::v3::lb_endpoint::HostIdentifier;

const BOOTSTRAP: &str = "type.googleapis.com/envoy.config.bootstrap.v3.Bootstrap";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives inside the repository")
        .to_path_buf()
}

fn read(relative: &str) -> String {
    let path = repo().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Decodes Envoy bootstrap YAML the strict way Envoy does: every field must exist.
fn decode_bootstrap(yaml: &str) -> Result<Bootstrap, String> {
    let value: serde_json::Value = serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())?;
    let codec = Codec::envoy();
    let desc = codec
        .message(BOOTSTRAP)
        .ok_or("Bootstrap is not in the descriptor pool")?;
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    let message = DynamicMessage::deserialize_with_options(desc, value, &options)
        .map_err(|e| e.to_string())?;
    Bootstrap::decode(message.encode_to_vec().as_slice()).map_err(|e| e.to_string())
}

/// The port `make run-server` listens on (`LISTEN ?= 127.0.0.1:PORT` in the Makefile).
fn make_listen_port() -> u32 {
    let makefile = read("Makefile");
    let listen = makefile
        .lines()
        .find_map(|line| line.strip_prefix("LISTEN ?="))
        .expect("the Makefile sets LISTEN");
    listen
        .trim()
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("LISTEN ends with a port")
}

fn assert_ads_source(source: Option<&ConfigSource>, what: &str) {
    let source = source.unwrap_or_else(|| panic!("{what} is not set"));
    assert!(
        matches!(
            source.config_source_specifier,
            Some(ConfigSourceSpecifier::Ads(_))
        ),
        "{what} must come over ADS: {source:?}"
    );
    assert_eq!(source.resource_api_version, ApiVersion::V3 as i32, "{what}");
}

/// The static cluster the ADS config names, which must reach `make run-server`'s port over HTTP/2.
fn assert_control_plane_cluster(bootstrap: &Bootstrap, name: &str) {
    let clusters: Vec<&Cluster> = bootstrap
        .static_resources
        .iter()
        .flat_map(|s| &s.clusters)
        .collect();
    let cluster = clusters
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no static cluster {name:?} for the ADS gRPC service"));
    let options = cluster
        .typed_extension_protocol_options
        .get("envoy.extensions.upstreams.http.v3.HttpProtocolOptions")
        .expect("xDS is gRPC: the control-plane cluster needs HTTP/2 protocol options");
    assert!(options.type_url.ends_with("HttpProtocolOptions"));
    let ports: Vec<u32> = cluster
        .load_assignment
        .iter()
        .flat_map(|a| &a.endpoints)
        .flat_map(|e| &e.lb_endpoints)
        .filter_map(|lb| match &lb.host_identifier {
            Some(HostIdentifier::Endpoint(e)) => e.address.as_ref(),
            _ => None,
        })
        .filter_map(port_of)
        .collect();
    assert_eq!(ports, vec![make_listen_port()], "control-plane endpoint");
}

fn port_of(address: &Address) -> Option<u32> {
    match &address.address {
        Some(address::Address::SocketAddress(socket)) => match socket.port_specifier {
            Some(PortSpecifier::PortValue(port)) => Some(port),
            _ => None,
        },
        _ => None,
    }
}

fn check_envoy_bootstrap(relative: &str, api_type: ApiType) {
    let bootstrap = decode_bootstrap(&read(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"));
    let dynamic = bootstrap
        .dynamic_resources
        .as_ref()
        .expect("dynamic_resources is set");
    let ads: &ApiConfigSource = dynamic.ads_config.as_ref().expect("ads_config is set");
    assert_eq!(
        ads.api_type, api_type as i32,
        "{relative}: ads_config.api_type"
    );
    assert_eq!(ads.transport_api_version, ApiVersion::V3 as i32);
    let [service] = ads.grpc_services.as_slice() else {
        panic!("{relative}: ads_config needs exactly one grpc_service");
    };
    let Some(TargetSpecifier::EnvoyGrpc(envoy_grpc)) = &service.target_specifier else {
        panic!("{relative}: ads_config.grpc_services[0] must be envoy_grpc");
    };
    assert_ads_source(dynamic.lds_config.as_ref(), "lds_config");
    assert_ads_source(dynamic.cds_config.as_ref(), "cds_config");
    assert_control_plane_cluster(&bootstrap, &envoy_grpc.cluster_name);
    let node = bootstrap.node.as_ref().expect("node is set");
    assert!(
        !node.id.is_empty() && !node.cluster.is_empty(),
        "node id and cluster"
    );
}

#[test]
fn envoy_sotw_bootstrap_points_envoy_at_xdsloop_over_ads() {
    check_envoy_bootstrap("examples/envoy-ads.yaml", ApiType::Grpc);
}

#[test]
fn envoy_delta_bootstrap_points_envoy_at_xdsloop_over_delta_ads() {
    check_envoy_bootstrap("examples/envoy-ads-delta.yaml", ApiType::DeltaGrpc);
}

#[test]
fn bootstrap_validation_rejects_a_misspelt_field() {
    let text = read("examples/envoy-ads.yaml");
    // One typo at the top level, one inside the typed (`Any`) protocol options.
    for (field, typo) in [
        ("transport_api_version", "transport_api_versoin"),
        ("http2_protocol_options", "http2_protocol_option"),
    ] {
        let edited = text.replacen(field, typo, 1);
        assert_ne!(text, edited, "{field} is in the example");
        let error = decode_bootstrap(&edited).expect_err("a misspelt field must not decode");
        assert!(error.contains(typo), "{error}");
    }
}

#[test]
fn grpc_bootstrap_points_a_proxyless_client_at_xdsloop() {
    let text = read("examples/grpc-bootstrap.json");
    let bootstrap: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let servers = bootstrap["xds_servers"]
        .as_array()
        .expect("xds_servers is a list");
    let [server] = servers.as_slice() else {
        panic!("one xDS server expected: {servers:?}");
    };
    let uri = server["server_uri"].as_str().expect("server_uri");
    assert_eq!(uri, format!("127.0.0.1:{}", make_listen_port()));
    let creds: Vec<&str> = server["channel_creds"]
        .as_array()
        .expect("channel_creds is a list")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(creds, ["insecure"], "xdsloop-server speaks plaintext gRPC");
    let features = server["server_features"]
        .as_array()
        .expect("server_features");
    assert!(
        features.iter().any(|f| f == "xds_v3"),
        "older gRPC releases speak v3 only when told: {features:?}"
    );
    let node = &bootstrap["node"];
    assert!(
        node["id"].as_str().is_some_and(|id| !id.is_empty()),
        "node.id"
    );
}

#[test]
fn s18_federation_bootstrap_resolves_greeter_through_an_xdstp_listener_of_the_grpc_fixtures() {
    let text = read("examples/grpc-bootstrap-federation.json");
    let bootstrap: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let authority = &bootstrap["authorities"]["xdsloop.test"]["xds_servers"][0];
    let uri = authority["server_uri"]
        .as_str()
        .expect("the authority's server_uri");
    assert_eq!(uri, format!("127.0.0.1:{}", make_listen_port()));
    let template = bootstrap["client_default_listener_resource_name_template"]
        .as_str()
        .expect("a listener name template");
    let listener = template.replace("%s", "greeter");
    let resources = fixture_resources("fixtures/grpc");
    let named = |name: &str| resources.iter().any(|r| r["name"] == name);
    assert!(named(&listener), "fixtures/grpc serves {listener}");
    let federated = resources.iter().filter_map(|r| {
        let name = r["name"].as_str().or(r["cluster_name"].as_str())?;
        name.starts_with("xdstp://").then_some(name)
    });
    for name in federated {
        assert!(
            name.starts_with("xdstp://xdsloop.test/"),
            "{name}: another authority"
        );
    }
}

/// Every resource in a fixture directory (read as the server reads it: sub-folders too), as
/// proto JSON (proto field names).
fn fixture_resources(relative: &str) -> Vec<serde_json::Value> {
    let codec = Codec::envoy();
    let dir = repo().join(relative);
    let snapshot = xdsloop_server::fixtures::load(&dir, &codec, 1)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let resources = snapshot.base.values().flat_map(|t| t.resources.values());
    resources
        .map(|resource| {
            codec
                .to_json(&resource.type_url, &resource.bytes)
                .expect("an encoded fixture resource converts back to JSON")
        })
        .collect()
}

/// Paths of every `ConfigSource` (RDS `config_source`, EDS `eds_config`) that is not ADS.
fn non_ads_sources(value: &serde_json::Value, path: &str, found: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(object) => {
            for (key, child) in object {
                let here = format!("{path}.{key}");
                if (key == "config_source" || key == "eds_config") && child.get("ads").is_none() {
                    found.push(here.clone());
                }
                non_ads_sources(child, &here, found);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                non_ads_sources(child, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

/// The example bootstraps configure only the ADS stream, so every follow-up subscription the
/// fixtures they are meant for trigger (RDS from listeners, EDS from clusters) must be ADS too.
#[test]
fn example_fixture_sets_fetch_routes_and_endpoints_over_ads() {
    for dir in ["fixtures/demo", "fixtures/grpc", "fixtures/per-file"] {
        let resources = fixture_resources(dir);
        assert!(!resources.is_empty(), "{dir} has resources");
        let mut found = Vec::new();
        for resource in &resources {
            let name = resource["name"]
                .as_str()
                .or(resource["cluster_name"].as_str())
                .unwrap_or("?");
            non_ads_sources(resource, name, &mut found);
        }
        assert!(
            found.is_empty(),
            "{dir}: config sources not over ADS: {found:?}"
        );
    }
}
