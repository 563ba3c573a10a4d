//! Dependency following like Envoy: the RDS names a listener's HTTP connection managers use
//! drive the RDS subscription, and EDS clusters drive the EDS subscription. The parent update's
//! dependents go out as one coalesced request after the parent's ACK (C12).

use std::collections::BTreeSet;

use prost::{Message, Name};
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::envoy::envoy::config::cluster::v3::cluster::{
    ClusterDiscoveryType, DiscoveryType,
};
use xdsloop_proto::envoy::envoy::config::listener::v3::{
    FilterChain, Listener, filter::ConfigType,
};
use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager::RouteSpecifier,
};
use xdsloop_proto::envoy::google::protobuf::Any;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};
use xdsloop_proto::xdstp;

/// The dependent type a parent type drives, if any: LDS → RDS, CDS → EDS.
pub(crate) fn child_of(type_url: &str) -> Option<&'static str> {
    match type_url {
        LISTENER => Some(ROUTE),
        CLUSTER => Some(ENDPOINT),
        _ => None,
    }
}

/// The names the dependent type must subscribe for the given parent resources, `xdstp://`
/// names normalised (C19). Resources that don't decode contribute nothing (they were
/// validated on arrival).
pub(crate) fn names_for<'a>(
    parent: &str,
    resources: impl IntoIterator<Item = &'a [u8]>,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for bytes in resources {
        match parent {
            LISTENER => {
                if let Ok(listener) = Listener::decode(bytes) {
                    names.extend(route_names(&listener));
                }
            }
            CLUSTER => {
                if let Ok(cluster) = Cluster::decode(bytes) {
                    names.extend(eds_name(&cluster));
                }
            }
            _ => {}
        }
    }
    if names.iter().any(|n| xdstp::is_xdstp(n)) {
        names = names
            .iter()
            .map(|n| xdstp::normalize(n).into_owned())
            .collect();
    }
    names
}

/// RDS names of a listener: HTTP connection managers in its filter chains, its default filter
/// chain, and its `api_listener` (proxyless gRPC clients use the latter).
pub(crate) fn route_names(listener: &Listener) -> BTreeSet<String> {
    let chains = listener
        .filter_chains
        .iter()
        .chain(&listener.default_filter_chain);
    let mut managers: Vec<&Any> = chains.flat_map(chain_managers).collect();
    if let Some(any) = listener
        .api_listener
        .as_ref()
        .and_then(|a| a.api_listener.as_ref())
    {
        managers.push(any);
    }
    managers
        .into_iter()
        .filter(|any| any.type_url == HttpConnectionManager::type_url())
        .filter_map(|any| HttpConnectionManager::decode(any.value.as_slice()).ok())
        .filter_map(|hcm| match hcm.route_specifier {
            Some(RouteSpecifier::Rds(rds)) if !rds.route_config_name.is_empty() => {
                Some(rds.route_config_name)
            }
            _ => None,
        })
        .collect()
}

fn chain_managers(chain: &FilterChain) -> impl Iterator<Item = &Any> {
    chain
        .filters
        .iter()
        .filter_map(|filter| match &filter.config_type {
            Some(ConfigType::TypedConfig(any)) => Some(any),
            _ => None,
        })
}

/// The EDS name of a cluster of type EDS: `eds_cluster_config.service_name`, else its name.
pub(crate) fn eds_name(cluster: &Cluster) -> Option<String> {
    let eds = DiscoveryType::Eds as i32;
    if cluster.cluster_discovery_type != Some(ClusterDiscoveryType::Type(eds)) {
        return None;
    }
    let service = cluster
        .eds_cluster_config
        .as_ref()
        .map(|c| c.service_name.clone())
        .filter(|s| !s.is_empty());
    Some(service.unwrap_or_else(|| cluster.name.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdsloop_proto::envoy::envoy::config::cluster::v3::cluster::EdsClusterConfig;
    use xdsloop_proto::envoy::envoy::config::listener::v3::{ApiListener, Filter};
    use xdsloop_proto::envoy::envoy::extensions::filters::network::http_connection_manager::v3::Rds;

    fn hcm_any(route: &str) -> Any {
        let hcm = HttpConnectionManager {
            route_specifier: Some(RouteSpecifier::Rds(Rds {
                route_config_name: route.into(),
                ..Default::default()
            })),
            ..Default::default()
        };
        Any {
            type_url: HttpConnectionManager::type_url(),
            value: hcm.encode_to_vec(),
        }
    }

    fn chain(route: &str) -> FilterChain {
        FilterChain {
            filters: vec![Filter {
                name: "envoy.filters.network.http_connection_manager".into(),
                config_type: Some(ConfigType::TypedConfig(hcm_any(route))),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn listener_routes_come_from_chains_default_chain_and_api_listener() {
        let listener = Listener {
            name: "l".into(),
            filter_chains: vec![chain("r1"), chain("r2")],
            default_filter_chain: Some(chain("r3")),
            api_listener: Some(ApiListener {
                api_listener: Some(hcm_any("r4")),
            }),
            ..Default::default()
        };
        let bytes = listener.encode_to_vec();
        let names = names_for(LISTENER, [bytes.as_slice()]);
        assert_eq!(
            names,
            BTreeSet::from(["r1", "r2", "r3", "r4"].map(String::from))
        );
    }

    #[test]
    fn only_eds_clusters_drive_eds_with_service_name_preferred() {
        let eds = |name: &str, service: &str| Cluster {
            name: name.into(),
            cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
            eds_cluster_config: Some(EdsClusterConfig {
                service_name: service.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let strict = Cluster {
            name: "dns".into(),
            cluster_discovery_type: Some(ClusterDiscoveryType::Type(
                DiscoveryType::StrictDns as i32,
            )),
            ..Default::default()
        };
        let encoded: Vec<Vec<u8>> = [eds("web", ""), eds("api", "api-svc"), strict]
            .iter()
            .map(Message::encode_to_vec)
            .collect();
        let names = names_for(CLUSTER, encoded.iter().map(Vec::as_slice));
        assert_eq!(names, BTreeSet::from(["api-svc", "web"].map(String::from)));
        assert_eq!(child_of(CLUSTER), Some(ENDPOINT));
        assert_eq!(child_of(ROUTE), None);
    }
}
