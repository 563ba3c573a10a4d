//! Real Envoy resources (encoded through the project's codec) and snapshot builders.

use std::{collections::BTreeMap, sync::Arc, sync::LazyLock};

use serde_json::{Value, json};
use xdsloop_proto::{Codec, Resource, type_url};
use xdsloop_server::{Snapshot, TypeResources};

pub static CODEC: LazyLock<Codec> = LazyLock::new(Codec::envoy);

pub fn cluster(name: &str) -> Value {
    cluster_with_timeout(name, 1)
}

/// An EDS cluster; vary `timeout_secs` to change its content.
pub fn cluster_with_timeout(name: &str, timeout_secs: u32) -> Value {
    json!({
        "@type": type_url::CLUSTER, "name": name, "type": "EDS",
        "connect_timeout": format!("{timeout_secs}s"),
        "eds_cluster_config": {"eds_config": {"ads": {}}},
    })
}

pub fn endpoints(cluster: &str, port: u32) -> Value {
    json!({
        "@type": type_url::ENDPOINT, "cluster_name": cluster,
        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address":
            {"address": "127.0.0.1", "port_value": port}}}}]}],
    })
}

pub fn listener(name: &str, port: u32) -> Value {
    json!({
        "@type": type_url::LISTENER, "name": name,
        "address": {"socket_address": {"address": "0.0.0.0", "port_value": port}},
    })
}

pub fn route(name: &str, cluster: &str) -> Value {
    json!({
        "@type": type_url::ROUTE, "name": name,
        "virtual_hosts": [{"name": "all", "domains": ["*"],
            "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster}}]}],
    })
}

pub fn encode(value: &Value) -> Resource {
    CODEC
        .encode_resource(value, "test resource")
        .expect("test resources are valid")
}

/// Builds snapshots the way the fixture loader does: encoded resources by type, per-node
/// overlays merged over the base.
#[derive(Debug, Default, Clone)]
pub struct SnapshotBuilder {
    generation: u64,
    base: BTreeMap<String, BTreeMap<String, Arc<Resource>>>,
    overlays: BTreeMap<String, BTreeMap<String, BTreeMap<String, Arc<Resource>>>>,
}

impl SnapshotBuilder {
    pub fn new(generation: u64) -> Self {
        Self {
            generation,
            ..Self::default()
        }
    }

    /// Adds (or replaces) a resource for every node.
    pub fn with(mut self, resource: Value) -> Self {
        let r = encode(&resource);
        let by_type = self.base.entry(r.type_url.clone()).or_default();
        by_type.insert(r.name.clone(), Arc::new(r));
        self
    }

    /// Adds (or replaces) a resource for one node only.
    pub fn for_node(mut self, node: &str, resource: Value) -> Self {
        let r = encode(&resource);
        let types = self.overlays.entry(node.to_string()).or_default();
        let by_type = types.entry(r.type_url.clone()).or_default();
        by_type.insert(r.name.clone(), Arc::new(r));
        self
    }

    pub fn build(self) -> Snapshot {
        let types = |m: BTreeMap<String, BTreeMap<String, Arc<Resource>>>| {
            m.into_iter()
                .map(|(url, rs)| (url, Arc::new(TypeResources::new(rs, None))))
                .collect::<BTreeMap<_, _>>()
        };
        let mut overlays = BTreeMap::new();
        for (node, node_types) in self.overlays {
            let mut merged = BTreeMap::new();
            for (url, rs) in node_types {
                let mut all = self.base.get(&url).cloned().unwrap_or_default();
                all.extend(rs);
                merged.insert(url, all);
            }
            overlays.insert(node, types(merged));
        }
        Snapshot {
            generation: self.generation,
            base: types(self.base),
            overlays,
        }
    }
}
