use std::sync::Arc;

use bytes::Bytes;
use prost::Message;
use xdsloop_proto::discovery::{Any, DeltaDiscoveryResponse, DiscoveryResponse, WireResource};
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::envoy::envoy::config::cluster::v3::cluster::{
    ClusterDiscoveryType, DiscoveryType,
};
use xdsloop_proto::envoy::envoy::config::endpoint::v3::ClusterLoadAssignment;
use xdsloop_proto::envoy::envoy::config::listener::v3::{Filter, FilterChain, Listener, filter};
use xdsloop_proto::envoy::envoy::config::route::v3::RouteConfiguration;
use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, Rds, http_connection_manager::RouteSpecifier,
};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::*;

fn rules(mode: Mode, types: &[&str], nack: &[(&str, &str)]) -> Arc<Rules> {
    Arc::new(Rules {
        mode,
        types: types.iter().map(|t| t.to_string()).collect(),
        nack: nack
            .iter()
            .map(|(t, n)| (t.to_string(), n.to_string()))
            .collect(),
    })
}

fn eds_cluster(name: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        ..Default::default()
    };
    any(CLUSTER, cluster.encode_to_vec())
}

fn static_cluster(name: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        ..Default::default()
    };
    any(CLUSTER, cluster.encode_to_vec())
}

fn endpoints(name: &str) -> Any {
    let cla = ClusterLoadAssignment {
        cluster_name: name.into(),
        ..Default::default()
    };
    any(ENDPOINT, cla.encode_to_vec())
}

fn listener(name: &str, route: &str) -> Any {
    let hcm = HttpConnectionManager {
        route_specifier: Some(RouteSpecifier::Rds(Rds {
            route_config_name: route.into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let listener = Listener {
        name: name.into(),
        filter_chains: vec![FilterChain {
            filters: vec![Filter {
                name: "hcm".into(),
                config_type: Some(filter::ConfigType::TypedConfig(any(
                    wire::HCM_TYPE_URL,
                    hcm.encode_to_vec(),
                ))),
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    any(LISTENER, listener.encode_to_vec())
}

fn route(name: &str) -> Any {
    let route = RouteConfiguration {
        name: name.into(),
        ..Default::default()
    };
    any(ROUTE, route.encode_to_vec())
}

use super::super::wire;

fn any(type_url: &str, value: Vec<u8>) -> Any {
    Any {
        type_url: type_url.into(),
        value,
    }
}

fn sotw(type_url: &str, version: &str, nonce: &str, resources: Vec<Any>) -> Bytes {
    let response = DiscoveryResponse {
        version_info: version.into(),
        resources,
        type_url: type_url.into(),
        nonce: nonce.into(),
        ..Default::default()
    };
    response.encode_to_vec().into()
}

fn delta(
    type_url: &str,
    nonce: &str,
    resources: Vec<(&str, &str, Any)>,
    removed: &[&str],
) -> Bytes {
    let response = DeltaDiscoveryResponse {
        system_version_info: String::new(),
        resources: resources
            .into_iter()
            .map(|(name, version, resource)| WireResource {
                name: name.into(),
                version: version.into(),
                resource: Some(resource),
                ..Default::default()
            })
            .collect(),
        type_url: type_url.into(),
        nonce: nonce.into(),
        removed_resources: removed.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    };
    response.encode_to_vec().into()
}

fn sotw_requests(handled: &Handled) -> Vec<&DiscoveryRequest> {
    handled
        .requests
        .iter()
        .map(|r| match r {
            Outgoing::Sotw(r) => r,
            Outgoing::Delta(_) => panic!("a Delta request on a SotW node"),
        })
        .collect()
}

fn delta_requests(handled: &Handled) -> Vec<&DeltaDiscoveryRequest> {
    handled
        .requests
        .iter()
        .map(|r| match r {
            Outgoing::Delta(r) => r,
            Outgoing::Sotw(_) => panic!("a SotW request on a Delta node"),
        })
        .collect()
}

fn cds_eds_node(mode: Mode, nack: &[(&str, &str)]) -> Node {
    Node::new("n0".into(), rules(mode, &[CLUSTER, ENDPOINT], nack))
}

#[test]
fn c1_sotw_first_request_is_cds_wildcard_with_the_node() {
    let mut node = cds_eds_node(Mode::Sotw, &[]);
    let start = node.on_stream_start();
    assert_eq!(start.len(), 1, "EDS waits for clusters: {start:?}");
    let Outgoing::Sotw(cds) = &start[0] else {
        panic!()
    };
    assert_eq!(cds.type_url, CLUSTER);
    assert!(cds.resource_names.is_empty());
    assert_eq!(cds.node.as_ref().unwrap().id, "n0");
    assert!(!node.configured());
}

#[test]
fn c12_sotw_cds_ack_then_one_eds_request_for_the_eds_clusters() {
    let mut node = cds_eds_node(Mode::Sotw, &[]);
    node.on_stream_start();
    let clusters = vec![eds_cluster("b"), eds_cluster("a"), static_cluster("s")];
    let handled = node
        .on_response(sotw(CLUSTER, "v1", "n1", clusters))
        .unwrap();
    let requests = sotw_requests(&handled);
    assert_eq!(requests.len(), 2);
    let (ack, eds) = (requests[0], requests[1]);
    assert_eq!(
        (ack.type_url.as_str(), ack.version_info.as_str()),
        (CLUSTER, "v1")
    );
    assert_eq!(ack.response_nonce, "n1");
    assert!(ack.error_detail.is_none() && ack.node.is_none());
    assert_eq!(eds.type_url, ENDPOINT);
    assert_eq!(eds.resource_names, vec!["a", "b"]);
    let outcome = handled.outcome.unwrap();
    assert!(outcome.first && outcome.changed && outcome.verdict.is_ok());
    assert_eq!(outcome.resources, 3);
    assert!(!node.configured(), "EDS was asked for and not yet received");

    let handled = node
        .on_response(sotw(
            ENDPOINT,
            "e1",
            "n2",
            vec![endpoints("a"), endpoints("b")],
        ))
        .unwrap();
    let requests = sotw_requests(&handled);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].resource_names, vec!["a", "b"]);
    assert_eq!(requests[0].version_info, "e1");
    assert!(node.configured());
    assert_eq!(node.version(ENDPOINT), Some("e1"));
}

#[test]
fn c12_sotw_new_cluster_extends_eds_names_keeping_version_and_nonce() {
    let mut node = cds_eds_node(Mode::Sotw, &[]);
    node.on_stream_start();
    node.on_response(sotw(CLUSTER, "v1", "n1", vec![eds_cluster("a")]))
        .unwrap();
    node.on_response(sotw(ENDPOINT, "e1", "n2", vec![endpoints("a")]))
        .unwrap();
    let clusters = vec![eds_cluster("a"), eds_cluster("c")];
    let handled = node
        .on_response(sotw(CLUSTER, "v2", "n3", clusters))
        .unwrap();
    let requests = sotw_requests(&handled);
    let eds = requests[1];
    assert_eq!(eds.resource_names, vec!["a", "c"]);
    assert_eq!(
        (eds.version_info.as_str(), eds.response_nonce.as_str()),
        ("e1", "n2")
    );
    let outcome = handled.outcome.unwrap();
    assert!(!outcome.first && outcome.changed);
    assert_eq!(outcome.previous.as_deref(), Some("v1"));
    // The same CDS version again changes nothing and asks for nothing new.
    let clusters = vec![eds_cluster("a"), eds_cluster("c")];
    let handled = node
        .on_response(sotw(CLUSTER, "v2", "n4", clusters))
        .unwrap();
    assert_eq!(handled.requests.len(), 1);
    assert!(!handled.outcome.unwrap().changed);
}

#[test]
fn c5_sotw_nack_rule_keeps_the_last_accepted_version_and_names() {
    let mut node = cds_eds_node(Mode::Sotw, &[(CLUSTER, "bad")]);
    node.on_stream_start();
    node.on_response(sotw(CLUSTER, "v1", "n1", vec![eds_cluster("a")]))
        .unwrap();
    let clusters = vec![eds_cluster("a"), eds_cluster("bad")];
    let handled = node
        .on_response(sotw(CLUSTER, "v2", "n2", clusters))
        .unwrap();
    let requests = sotw_requests(&handled);
    assert_eq!(requests.len(), 1, "no EDS change after a NACK");
    let nack = requests[0];
    assert_eq!(
        (nack.version_info.as_str(), nack.response_nonce.as_str()),
        ("v1", "n2")
    );
    let detail = nack.error_detail.as_ref().unwrap();
    assert_ne!(detail.code, 0);
    assert!(detail.message.contains("bad"), "{}", detail.message);
    let outcome = handled.outcome.unwrap();
    assert_eq!(outcome.version, "v2");
    assert!(outcome.verdict.is_err() && !outcome.changed);
    assert_eq!(node.version(CLUSTER), Some("v1"));
}

#[test]
fn c6_duplicates_wrong_types_and_garbage_are_nacked() {
    let cases = vec![
        vec![eds_cluster("a"), eds_cluster("a")],
        vec![endpoints("a")],
        vec![any(CLUSTER, vec![0xff, 0xff, 0xff])],
    ];
    for resources in cases {
        let mut node = cds_eds_node(Mode::Sotw, &[]);
        node.on_stream_start();
        let handled = node
            .on_response(sotw(CLUSTER, "v1", "n1", resources))
            .unwrap();
        let requests = sotw_requests(&handled);
        assert!(requests[0].error_detail.is_some(), "{requests:?}");
        assert_eq!(node.version(CLUSTER), None);
    }
}

#[test]
fn c8_response_for_a_type_never_asked_for_is_ignored() {
    let mut node = cds_eds_node(Mode::Sotw, &[]);
    node.on_stream_start();
    let handled = node
        .on_response(sotw(LISTENER, "l1", "n1", vec![]))
        .unwrap();
    assert_eq!(handled, Handled::default());
}

#[test]
fn c11_sotw_reconnect_resubscribes_every_type_with_versions_and_no_nonce() {
    let mut node = cds_eds_node(Mode::Sotw, &[]);
    node.on_stream_start();
    node.on_response(sotw(CLUSTER, "v1", "n1", vec![eds_cluster("a")]))
        .unwrap();
    node.on_response(sotw(ENDPOINT, "e1", "n2", vec![endpoints("a")]))
        .unwrap();
    let again = node.on_stream_start();
    let requests: Vec<_> = again
        .iter()
        .map(|r| match r {
            Outgoing::Sotw(r) => r,
            Outgoing::Delta(_) => panic!(),
        })
        .collect();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].node.is_some() && requests[1].node.is_none());
    assert_eq!(
        (
            requests[0].type_url.as_str(),
            requests[0].version_info.as_str()
        ),
        (CLUSTER, "v1")
    );
    assert_eq!(requests[1].resource_names, vec!["a"]);
    assert!(requests.iter().all(|r| r.response_nonce.is_empty()));
}

#[test]
fn c12_sotw_listeners_drive_route_names() {
    let mut node = Node::new("n0".into(), rules(Mode::Sotw, &[ROUTE, LISTENER], &[]));
    let start = node.on_stream_start();
    assert_eq!(start.len(), 1);
    let handled = node
        .on_response(sotw(
            LISTENER,
            "l1",
            "n1",
            vec![listener("ingress", "local")],
        ))
        .unwrap();
    let requests = sotw_requests(&handled);
    assert_eq!(requests[1].type_url, ROUTE);
    assert_eq!(requests[1].resource_names, vec!["local"]);
    node.on_response(sotw(ROUTE, "r1", "n2", vec![route("local")]))
        .unwrap();
    assert!(node.configured());
}

#[test]
fn c3_delta_follows_clusters_with_subscribe_and_unsubscribe_changes() {
    let mut node = cds_eds_node(Mode::Delta, &[]);
    let start = node.on_stream_start();
    let Outgoing::Delta(first) = &start[0] else {
        panic!()
    };
    assert!(first.node.is_some() && first.resource_names_subscribe.is_empty());

    let clusters = vec![("a", "1", eds_cluster("a")), ("b", "1", eds_cluster("b"))];
    let handled = node
        .on_response(delta(CLUSTER, "n1", clusters, &[]))
        .unwrap();
    let requests = delta_requests(&handled);
    assert_eq!(requests[0].response_nonce, "n1");
    assert!(requests[0].error_detail.is_none());
    assert_eq!(requests[1].type_url, ENDPOINT);
    assert_eq!(requests[1].resource_names_subscribe, vec!["a", "b"]);
    assert!(requests[1].node.is_none());

    let handled = node
        .on_response(delta(CLUSTER, "n2", vec![], &["b"]))
        .unwrap();
    let requests = delta_requests(&handled);
    assert_eq!(requests[1].resource_names_unsubscribe, vec!["b"]);
    assert!(requests[1].resource_names_subscribe.is_empty());
    assert_eq!(node.held(CLUSTER), vec!["a"]);
}

#[test]
fn c11_delta_reconnect_declares_held_versions() {
    let mut node = cds_eds_node(Mode::Delta, &[]);
    node.on_stream_start();
    node.on_response(delta(
        CLUSTER,
        "n1",
        vec![("a", "7", eds_cluster("a"))],
        &[],
    ))
    .unwrap();
    node.on_response(delta(ENDPOINT, "n2", vec![("a", "3", endpoints("a"))], &[]))
        .unwrap();
    assert!(node.configured());
    let again = node.on_stream_start();
    let requests: Vec<_> = again
        .iter()
        .map(|r| match r {
            Outgoing::Delta(r) => r,
            Outgoing::Sotw(_) => panic!(),
        })
        .collect();
    assert_eq!(requests[0].initial_resource_versions.get("a").unwrap(), "7");
    assert_eq!(requests[1].resource_names_subscribe, vec!["a"]);
    assert_eq!(requests[1].initial_resource_versions.get("a").unwrap(), "3");
}

#[test]
fn delta_without_system_version_reports_a_digest_equal_across_nodes() {
    let mut versions = Vec::new();
    for id in ["x", "y"] {
        let mut node = Node::new(id.into(), rules(Mode::Delta, &[CLUSTER], &[]));
        node.on_stream_start();
        let handled = node
            .on_response(delta(
                CLUSTER,
                "n1",
                vec![("a", "1", static_cluster("a"))],
                &[],
            ))
            .unwrap();
        versions.push(handled.outcome.unwrap().version);
    }
    assert_eq!(versions[0], versions[1]);
    assert!(versions[0].starts_with('#'));
}

#[test]
fn c6_delta_name_both_updated_and_removed_is_nacked() {
    let mut node = cds_eds_node(Mode::Delta, &[]);
    node.on_stream_start();
    let handled = node
        .on_response(delta(
            CLUSTER,
            "n1",
            vec![("a", "1", eds_cluster("a"))],
            &["a"],
        ))
        .unwrap();
    let requests = delta_requests(&handled);
    assert_eq!(requests.len(), 1);
    assert!(requests[0].error_detail.is_some());
    assert!(node.held(CLUSTER).is_empty());
}
