//! The resources the edit checks write, in the proto3 JSON mapping Envoy's filesystem-xDS
//! files use, and how to find one in a response.

use serde_json::{Value, json};
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::DiscoveryResponse;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

/// An EDS cluster; a different `timeout_secs` is a content change.
pub(super) fn cluster(name: &str, timeout_secs: u32) -> Value {
    json!({
        "@type": CLUSTER, "name": name, "type": "EDS",
        "connect_timeout": format!("{timeout_secs}s"),
        "eds_cluster_config": {"eds_config": {"ads": {}}},
    })
}

/// A cluster of about `bytes` encoded bytes (a long `alt_stat_name`), for S13.
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

/// The encoded bytes of resource `name` in a SotW response, if it holds it.
pub(super) fn body<'r>(
    codec: &Codec,
    response: &'r DiscoveryResponse,
    name: &str,
) -> Option<&'r [u8]> {
    let mut found = response.resources.iter().filter(|any| {
        codec
            .resource_name(&any.type_url, &any.value)
            .is_ok_and(|n| n == name)
    });
    found.next().map(|any| any.value.as_slice())
}
