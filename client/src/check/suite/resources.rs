//! The resources the edit checks write, in the proto3 JSON mapping Envoy's filesystem-xDS
//! files use: one of each type, each with a knob whose change is a content change.

use serde_json::{Value, json};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

/// An EDS cluster; a different `timeout_secs` is a content change.
pub(super) fn cluster(name: &str, timeout_secs: u32) -> Value {
    json!({
        "@type": CLUSTER, "name": name, "type": "EDS",
        "connect_timeout": format!("{timeout_secs}s"),
        "eds_cluster_config": {"eds_config": {"ads": {}}},
    })
}

/// A cluster of about `bytes` encoded bytes (a long `alt_stat_name`).
pub(super) fn large_cluster(name: &str, bytes: usize) -> Value {
    json!({
        "@type": CLUSTER, "name": name, "type": "STATIC",
        "connect_timeout": "1s",
        "alt_stat_name": "x".repeat(bytes),
    })
}

/// One endpoint on 127.0.0.1:`port`; a different port is a content change.
pub(super) fn endpoints(cluster: &str, port: u32) -> Value {
    json!({
        "@type": ENDPOINT, "cluster_name": cluster,
        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address":
            {"address": "127.0.0.1", "port_value": port}}}}]}],
    })
}

/// A listener on `port` whose routes come from RDS `route` over ADS.
pub(super) fn listener(name: &str, route: &str, port: u32) -> Value {
    json!({
        "@type": LISTENER, "name": name,
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": name,
                "rds": {"route_config_name": route, "config_source": {"ads": {}}},
                "http_filters": [{"name": "envoy.filters.http.router", "typed_config":
                    {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}]}],
    })
}

/// A route configuration sending everything to `cluster`; a different `cluster` is a change.
pub(super) fn route(name: &str, cluster: &str) -> Value {
    json!({
        "@type": ROUTE, "name": name,
        "virtual_hosts": [{"name": "all", "domains": ["*"],
            "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster}}]}],
    })
}

/// A resource of type `url` named `name`; `revision` changes its content.
pub(super) fn of_type(url: &str, name: &str, revision: u32) -> Value {
    match url {
        CLUSTER => cluster(name, revision),
        ENDPOINT => endpoints(name, 20_000 + revision),
        LISTENER => listener(name, name, 20_000 + revision),
        _ => route(name, &format!("cluster-{revision}")),
    }
}
