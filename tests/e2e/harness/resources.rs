//! Real Envoy resources (encoded through the project's codec) and the sets a test serves.

use std::{collections::BTreeMap, sync::LazyLock};

use serde_json::{Value, json};
use xdsloop_proto::{Codec, Resource, type_url};
use xdsloop_server::testkit::{Builder, Resources, TestServer};

pub(crate) static CODEC: LazyLock<Codec> = LazyLock::new(Codec::envoy);

pub(crate) fn cluster(name: &str) -> Value {
    cluster_with_timeout(name, 1)
}

/// An EDS cluster; vary `timeout_secs` to change its content.
pub(crate) fn cluster_with_timeout(name: &str, timeout_secs: u32) -> Value {
    json!({
        "@type": type_url::CLUSTER, "name": name, "type": "EDS",
        "connect_timeout": format!("{timeout_secs}s"),
        "eds_cluster_config": {"eds_config": {"ads": {}}},
    })
}

pub(crate) fn endpoints(cluster: &str, port: u32) -> Value {
    json!({
        "@type": type_url::ENDPOINT, "cluster_name": cluster,
        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address":
            {"address": "127.0.0.1", "port_value": port}}}}]}],
    })
}

pub(crate) fn listener(name: &str, port: u32) -> Value {
    json!({
        "@type": type_url::LISTENER, "name": name,
        "address": {"socket_address": {"address": "0.0.0.0", "port_value": port}},
    })
}

pub(crate) fn route(name: &str, cluster: &str) -> Value {
    json!({
        "@type": type_url::ROUTE, "name": name,
        "virtual_hosts": [{"name": "all", "domains": ["*"],
            "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster}}]}],
    })
}

pub(crate) fn encode(value: &Value) -> Resource {
    CODEC
        .encode_resource(value, "test resource")
        .expect("test resources are valid")
}

/// What a test server serves, given in code: resources for every node, and per-node overlays
/// (a resource of the same type and name replaces the base one for that node).
#[derive(Debug, Default, Clone)]
pub struct ResourceSet {
    base: Vec<Resource>,
    overlays: BTreeMap<String, Vec<Resource>>,
}

impl ResourceSet {
    /// Adds (or replaces) a resource for every node.
    pub fn with(mut self, resource: Value) -> Self {
        let r = encode(&resource);
        self.base
            .retain(|b| (&b.type_url, &b.name) != (&r.type_url, &r.name));
        self.base.push(r);
        self
    }

    /// Adds a resource for one node only.
    pub fn for_node(mut self, node: &str, resource: Value) -> Self {
        let r = encode(&resource);
        self.overlays.entry(node.to_string()).or_default().push(r);
        self
    }

    /// The testkit's server on this set (and whatever else `builder` says).
    pub async fn serve_with(self, builder: Builder) -> TestServer {
        let mut builder = builder.resources(self.base);
        for (node, resources) in self.overlays {
            builder = builder.node_resources(&node, resources);
        }
        builder.start().await.unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The set every node gets, for [`TestServer::set_resources`] (a set published after the
/// start has no overlays).
impl From<ResourceSet> for Resources {
    fn from(set: ResourceSet) -> Self {
        assert!(set.overlays.is_empty(), "overlays are set at the start");
        Resources::new(set.base)
    }
}
