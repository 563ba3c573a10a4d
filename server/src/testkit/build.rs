//! Builders for the set most tests serve: a listener whose routes come from RDS, the route
//! configuration sending everything to one cluster, the cluster with its endpoints from EDS,
//! and those endpoints. All four ask for the next over ADS, as a proxy follows them.
//!
//! ```
//! use xdsloop_server::testkit::{Chain, Resources};
//!
//! let web = Chain::new("web").port(10000).endpoint(([127, 0, 0, 1], 8080).into());
//! let set: Resources = web.resources().into();
//! assert_eq!(set.items().count(), 4);
//! ```

use std::net::SocketAddr;

use xdsloop_proto::Resource;

use super::memory::Resources;

/// One service's chain, as a proxy follows it: listener `name` (on `0.0.0.0:port`) → route configuration
/// `name` (every path) → cluster `name` (EDS) → its endpoints. Each resource is also there on
/// its own, to serve a part or change one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    name: String,
    port: u16,
    endpoints: Vec<SocketAddr>,
}

impl Chain {
    /// The service `name` on port 10000 with no endpoints yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            port: 10000,
            endpoints: Vec::new(),
        }
    }

    /// The listener's port.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Adds a backend to the cluster's endpoints.
    pub fn endpoint(mut self, addr: SocketAddr) -> Self {
        self.endpoints.push(addr);
        self
    }

    /// The four resources: listener, route configuration, cluster, endpoints.
    pub fn resources(&self) -> Vec<Resource> {
        vec![
            self.listener(),
            self.route(),
            self.cluster(),
            self.load_assignment(),
        ]
    }

    /// The listener: an HTTP connection manager whose route configuration comes over ADS.
    pub fn listener(&self) -> Resource {
        let (name, port) = (quoted(&self.name), self.port);
        decode(&format!(
            r#""@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: {name}
address: {{socket_address: {{address: 0.0.0.0, port_value: {port}}}}}
filter_chains:
- filters:
  - name: envoy.filters.network.http_connection_manager
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      stat_prefix: {name}
      rds:
        route_config_name: {name}
        config_source: {{ads: {{}}, resource_api_version: V3}}
      http_filters:
      - name: envoy.filters.http.router
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
"#
        ))
    }

    /// The route configuration: every path of every domain to the cluster.
    pub fn route(&self) -> Resource {
        let name = quoted(&self.name);
        decode(&format!(
            r#""@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
name: {name}
virtual_hosts:
- name: {name}
  domains: ["*"]
  routes:
  - match: {{prefix: /}}
    route: {{cluster: {name}}}
"#
        ))
    }

    /// The cluster, its endpoints from EDS over ADS.
    pub fn cluster(&self) -> Resource {
        let name = quoted(&self.name);
        decode(&format!(
            r#""@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: {name}
type: EDS
connect_timeout: 1s
eds_cluster_config:
  eds_config: {{ads: {{}}, resource_api_version: V3}}
"#
        ))
    }

    /// The cluster's endpoints (Envoy's `ClusterLoadAssignment`), one locality.
    pub fn load_assignment(&self) -> Resource {
        let name = quoted(&self.name);
        let endpoints: String = self
            .endpoints
            .iter()
            .map(|a| {
                let (ip, port) = (quoted(&a.ip().to_string()), a.port());
                format!(
                    "  - endpoint: {{address: {{socket_address: {{address: {ip}, port_value: \
                     {port}}}}}}}\n"
                )
            })
            .collect();
        let lb_endpoints = match endpoints.is_empty() {
            true => "  lb_endpoints: []\n".to_string(),
            false => format!("  lb_endpoints:\n{endpoints}"),
        };
        decode(&format!(
            r#""@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
cluster_name: {name}
endpoints:
- locality: {{}}
{lb_endpoints}"#
        ))
    }
}

impl From<Chain> for Resources {
    fn from(service: Chain) -> Self {
        Resources::new(service.resources())
    }
}

/// A YAML scalar that is always a string, whatever the name holds.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// The builders write fixture YAML and read it as a fixture is read: checked against Envoy's
/// schema like every served resource. What they write is fixed, so it always decodes.
fn decode(yaml: &str) -> Resource {
    let set = Resources::from_yaml(yaml)
        .unwrap_or_else(|e| panic!("the testkit's builder wrote a bad resource: {e}\n{yaml}"));
    set.items().next().expect("one resource").clone()
}

#[cfg(test)]
mod tests {
    use prost::Message;
    use xdsloop_proto::envoy::envoy::config::{
        cluster::v3::Cluster, endpoint::v3::ClusterLoadAssignment, listener::v3::Listener,
        route::v3::RouteConfiguration,
    };
    use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

    use super::*;

    #[test]
    fn a_chain_is_a_listener_a_route_a_cluster_and_its_endpoints_that_name_each_other() {
        let service = Chain::new("web")
            .port(10001)
            .endpoint(([127, 0, 0, 1], 8080).into())
            .endpoint(([127, 0, 0, 2], 8081).into());
        let set = service.resources();
        let types: Vec<_> = set
            .iter()
            .map(|r| (r.type_url.as_str(), r.name.as_str()))
            .collect();
        assert_eq!(
            types,
            [
                (LISTENER, "web"),
                (ROUTE, "web"),
                (CLUSTER, "web"),
                (ENDPOINT, "web")
            ]
        );

        let listener = Listener::decode(set[0].bytes.clone()).unwrap();
        let port = listener.address.unwrap().address;
        assert!(format!("{port:?}").contains("PortValue(10001)"), "{port:?}");
        let route = RouteConfiguration::decode(set[1].bytes.clone()).unwrap();
        assert!(
            format!("{route:?}").contains("Cluster(\"web\")"),
            "{route:?}"
        );
        let cluster = Cluster::decode(set[2].bytes.clone()).unwrap();
        assert!(cluster.eds_cluster_config.is_some());
        let endpoints = ClusterLoadAssignment::decode(set[3].bytes.clone()).unwrap();
        assert_eq!(endpoints.endpoints[0].lb_endpoints.len(), 2);
    }

    #[test]
    fn a_name_that_yaml_would_read_as_something_else_stays_a_string() {
        for name in ["true", "1", "a: b", "- x"] {
            let cluster = Chain::new(name).cluster();
            assert_eq!(cluster.name, name);
        }
    }
}
