//! The fleet node's sans-I/O state machine, fed encoded responses: shared builders here,
//! tests by stream mode in the submodules.

mod delta;
mod sotw;

use std::sync::Arc;

use bytes::Bytes;
use prost::Message;
use xdsloop_proto::discovery::{
    Any, DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    WireResource,
};
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

use super::super::decode;
use super::*;
use crate::core::request::Outgoing;

pub(super) fn rules(mode: Variant, types: &[&str], nack: &[(&str, &str)]) -> Arc<Rules> {
    Arc::new(Rules {
        mode,
        types: types.iter().map(|t| t.to_string()).collect(),
        nack: nack
            .iter()
            .map(|(t, n)| (t.to_string(), n.to_string()))
            .collect(),
        names: Default::default(),
    })
}

pub(super) fn eds_cluster(name: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        ..Default::default()
    };
    any(CLUSTER, cluster.encode_to_vec())
}

pub(super) fn static_cluster(name: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        ..Default::default()
    };
    any(CLUSTER, cluster.encode_to_vec())
}

pub(super) fn endpoints(name: &str) -> Any {
    let cla = ClusterLoadAssignment {
        cluster_name: name.into(),
        ..Default::default()
    };
    any(ENDPOINT, cla.encode_to_vec())
}

pub(super) fn listener(name: &str, route: &str) -> Any {
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
                    decode::HCM_TYPE_URL,
                    hcm.encode_to_vec(),
                ))),
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    any(LISTENER, listener.encode_to_vec())
}

pub(super) fn route(name: &str) -> Any {
    let route = RouteConfiguration {
        name: name.into(),
        ..Default::default()
    };
    any(ROUTE, route.encode_to_vec())
}

pub(super) fn any(type_url: &str, value: Vec<u8>) -> Any {
    Any {
        type_url: type_url.into(),
        value,
    }
}

pub(super) fn sotw(type_url: &str, version: &str, nonce: &str, resources: Vec<Any>) -> Bytes {
    let response = DiscoveryResponse {
        version_info: version.into(),
        resources,
        type_url: type_url.into(),
        nonce: nonce.into(),
        ..Default::default()
    };
    response.encode_to_vec().into()
}

pub(super) fn delta(
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

/// The requests as the server decodes them.
pub(super) fn sotw_requests(requests: &[FleetRequest]) -> Vec<DiscoveryRequest> {
    requests
        .iter()
        .map(|r| match r.to_outgoing() {
            Outgoing::Sotw(r) => r,
            Outgoing::Delta(_) => panic!("a Delta request on a SotW node"),
        })
        .collect()
}

pub(super) fn delta_requests(requests: &[FleetRequest]) -> Vec<DeltaDiscoveryRequest> {
    requests
        .iter()
        .map(|r| match r.to_outgoing() {
            Outgoing::Delta(r) => r,
            Outgoing::Sotw(_) => panic!("a SotW request on a Delta node"),
        })
        .collect()
}

pub(super) fn cds_eds_node(mode: Variant, nack: &[(&str, &str)]) -> Node {
    Node::new("n0".into(), rules(mode, &[CLUSTER, ENDPOINT], nack))
}
