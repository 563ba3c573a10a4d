//! The mux's state machine, driven by hand-made responses: shared builders here, tests by
//! concept in the submodules.

mod decide;
mod deps;
mod narration;
mod per_type;
mod requests;
mod status;
mod ttl;

use std::time::{Instant, SystemTime};

use prost::{Message, Name};
use xdsloop_proto::discovery::{Any, DiscoveryRequest, DiscoveryResponse, Node};
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::envoy::envoy::config::cluster::v3::cluster::{
    ClusterDiscoveryType, DiscoveryType,
};
use xdsloop_proto::envoy::envoy::config::endpoint::v3::ClusterLoadAssignment;
use xdsloop_proto::envoy::envoy::config::listener::v3::{ApiListener, Listener};
use xdsloop_proto::envoy::envoy::config::route::v3::RouteConfiguration;
use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, Rds, http_connection_manager::RouteSpecifier,
};
use xdsloop_proto::type_url;

use super::update::UNWATCHED;
use super::*;
use crate::core::validate::Rejection;
use crate::core::watch_map::Interest;

pub(super) fn node() -> Node {
    Node {
        id: "n1".into(),
        ..Default::default()
    }
}

pub(super) fn mux(mode: Variant) -> Mux {
    let mut config = MuxConfig::new(mode, node());
    config.follow_deps = true;
    Mux::new(config)
}

pub(super) fn eds_cluster(name: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        ..Default::default()
    };
    Any {
        type_url: Cluster::type_url(),
        value: cluster.encode_to_vec(),
    }
}

pub(super) fn endpoints(name: &str) -> Any {
    let cla = ClusterLoadAssignment {
        cluster_name: name.into(),
        ..Default::default()
    };
    Any {
        type_url: ClusterLoadAssignment::type_url(),
        value: cla.encode_to_vec(),
    }
}

/// A listener whose HTTP connection manager takes its routes from RDS `route`.
pub(super) fn rds_listener(name: &str, route: &str) -> Any {
    let manager = HttpConnectionManager {
        route_specifier: Some(RouteSpecifier::Rds(Rds {
            route_config_name: route.into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let listener = Listener {
        name: name.into(),
        api_listener: Some(ApiListener {
            api_listener: Some(Any {
                type_url: HttpConnectionManager::type_url(),
                value: manager.encode_to_vec(),
            }),
        }),
        ..Default::default()
    };
    Any {
        type_url: Listener::type_url(),
        value: listener.encode_to_vec(),
    }
}

pub(super) fn routes(name: &str) -> Any {
    let config = RouteConfiguration {
        name: name.into(),
        ..Default::default()
    };
    Any {
        type_url: RouteConfiguration::type_url(),
        value: config.encode_to_vec(),
    }
}

pub(super) fn sotw(
    type_url: &str,
    version: &str,
    nonce: &str,
    resources: Vec<Any>,
) -> DiscoveryResponse {
    DiscoveryResponse {
        version_info: version.into(),
        resources,
        type_url: type_url.into(),
        nonce: nonce.into(),
        ..Default::default()
    }
}

pub(super) fn sotw_requests(out: &Output) -> Vec<&DiscoveryRequest> {
    out.requests
        .iter()
        .map(|r| match r {
            Outgoing::Sotw(r) => r,
            Outgoing::Delta(_) => panic!("expected SotW"),
        })
        .collect()
}

pub(super) fn t0() -> Instant {
    Instant::now()
}

/// The requests' `(type_url, version_info, response_nonce)`, in order.
pub(super) fn acks(out: &Output) -> Vec<(&str, &str, &str)> {
    sotw_requests(out)
        .into_iter()
        .map(|r| {
            (
                r.type_url.as_str(),
                r.version_info.as_str(),
                r.response_nonce.as_str(),
            )
        })
        .collect()
}

/// Hands the mux a SotW response, received at `now`.
pub(super) fn respond(
    mux: &mut Mux,
    now: Instant,
    type_url: &str,
    version: &str,
    nonce: &str,
    resources: Vec<Any>,
) {
    mux.on_sotw_response(
        sotw(type_url, version, nonce, resources),
        now,
        SystemTime::now(),
    );
}
