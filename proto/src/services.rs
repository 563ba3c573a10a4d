//! The discovery services by name: the Aggregated Discovery Service and the per-type
//! ("singleton") services, with their gRPC method paths and REST-JSON paths. One table for the
//! server that serves them and the clients that call them.

use crate::type_url;

/// gRPC service name of ADS.
pub const ADS_SERVICE: &str = "envoy.service.discovery.v3.AggregatedDiscoveryService";
/// The ADS State-of-the-World method.
pub const ADS_SOTW_PATH: &str =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
/// The ADS Delta (incremental) method.
pub const ADS_DELTA_PATH: &str =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

/// One per-type API: the short name streams of it show in `/status` (`clusters-sotw`), its
/// type URL, its gRPC service and the suffix its methods share (`Stream<m>`, `Delta<m>`,
/// `Fetch<m>`), and its REST-JSON path (from the API's `google.api.http` rule) when it has a
/// Fetch method. An API without Fetch (VHDS, on-demand) has no SotW stream either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerTypeApi {
    /// Short name, e.g. `clusters`; `/status` shows a stream of it as `clusters-sotw` or
    /// `clusters-delta`.
    pub service: &'static str,
    /// The one resource type the API serves.
    pub type_url: &'static str,
    /// Fully qualified gRPC service name, e.g. `envoy.service.cluster.v3.ClusterDiscoveryService`.
    pub grpc: &'static str,
    /// The suffix of its method names, e.g. `Clusters` for `StreamClusters`.
    pub method: &'static str,
    /// REST-JSON path of its Fetch method, e.g. `/v3/discovery:clusters`; `None` when the API
    /// has no Fetch (and no SotW stream).
    pub rest_path: Option<&'static str>,
}

impl PerTypeApi {
    /// Whether the API has a SotW stream (and unary Fetch, and a REST path).
    pub fn has_sotw(&self) -> bool {
        self.rest_path.is_some()
    }

    /// `/<service>/Stream<m>`, when the API has a SotW stream.
    pub fn sotw_path(&self) -> Option<String> {
        self.has_sotw()
            .then(|| format!("/{}/Stream{}", self.grpc, self.method))
    }

    /// `/<service>/Delta<m>`.
    pub fn delta_path(&self) -> String {
        format!("/{}/Delta{}", self.grpc, self.method)
    }
}

/// CDS: the Cluster Discovery Service.
pub const CLUSTERS: PerTypeApi = api(
    "clusters",
    type_url::CLUSTER,
    "envoy.service.cluster.v3.ClusterDiscoveryService",
    "Clusters",
    Some("/v3/discovery:clusters"),
);
/// EDS: the Endpoint Discovery Service (`ClusterLoadAssignment`s).
pub const ENDPOINTS: PerTypeApi = api(
    "endpoints",
    type_url::ENDPOINT,
    "envoy.service.endpoint.v3.EndpointDiscoveryService",
    "Endpoints",
    Some("/v3/discovery:endpoints"),
);
/// LDS: the Listener Discovery Service.
pub const LISTENERS: PerTypeApi = api(
    "listeners",
    type_url::LISTENER,
    "envoy.service.listener.v3.ListenerDiscoveryService",
    "Listeners",
    Some("/v3/discovery:listeners"),
);
/// RDS: the Route Discovery Service (`RouteConfiguration`s).
pub const ROUTES: PerTypeApi = api(
    "routes",
    type_url::ROUTE,
    "envoy.service.route.v3.RouteDiscoveryService",
    "Routes",
    Some("/v3/discovery:routes"),
);
/// SRDS: the Scoped Route Discovery Service.
pub const SCOPED_ROUTES: PerTypeApi = api(
    "scoped-routes",
    type_url::SCOPED_ROUTE,
    "envoy.service.route.v3.ScopedRoutesDiscoveryService",
    "ScopedRoutes",
    Some("/v3/discovery:scoped-routes"),
);
/// VHDS is Delta-only (no SotW stream, no Fetch).
pub const VIRTUAL_HOSTS: PerTypeApi = api(
    "virtual-hosts",
    type_url::VIRTUAL_HOST,
    "envoy.service.route.v3.VirtualHostDiscoveryService",
    "VirtualHosts",
    None,
);
/// SDS: the Secret Discovery Service (TLS certificates, keys, validation contexts).
pub const SECRETS: PerTypeApi = api(
    "secrets",
    type_url::SECRET,
    "envoy.service.secret.v3.SecretDiscoveryService",
    "Secrets",
    Some("/v3/discovery:secrets"),
);
/// RTDS: the Runtime Discovery Service (runtime layers).
pub const RUNTIME: PerTypeApi = api(
    "runtime",
    type_url::RUNTIME,
    "envoy.service.runtime.v3.RuntimeDiscoveryService",
    "Runtime",
    Some("/v3/discovery:runtime"),
);
/// ECDS: the Extension Config Discovery Service (`TypedExtensionConfig`s, e.g. HTTP filters).
pub const EXTENSION_CONFIGS: PerTypeApi = api(
    "extension-configs",
    type_url::EXTENSION_CONFIG,
    "envoy.service.extension.v3.ExtensionConfigDiscoveryService",
    "ExtensionConfigs",
    Some("/v3/discovery:extension_configs"),
);

/// Every per-type API, in make-before-break order.
pub const PER_TYPE_APIS: [PerTypeApi; 9] = [
    CLUSTERS,
    ENDPOINTS,
    LISTENERS,
    ROUTES,
    SCOPED_ROUTES,
    VIRTUAL_HOSTS,
    SECRETS,
    RUNTIME,
    EXTENSION_CONFIGS,
];

/// The per-type API of `type_url`, if the type has one.
pub fn per_type_api(type_url: &str) -> Option<PerTypeApi> {
    PER_TYPE_APIS.into_iter().find(|a| a.type_url == type_url)
}

const fn api(
    service: &'static str,
    type_url: &'static str,
    grpc: &'static str,
    method: &'static str,
    rest_path: Option<&'static str>,
) -> PerTypeApi {
    PerTypeApi {
        service,
        type_url,
        grpc,
        method,
        rest_path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::envoy::service as svc;

    #[test]
    fn every_api_names_its_generated_service() {
        let generated = [
            svc::cluster::v3::cluster_discovery_service_server::SERVICE_NAME,
            svc::endpoint::v3::endpoint_discovery_service_server::SERVICE_NAME,
            svc::listener::v3::listener_discovery_service_server::SERVICE_NAME,
            svc::route::v3::route_discovery_service_server::SERVICE_NAME,
            svc::route::v3::scoped_routes_discovery_service_server::SERVICE_NAME,
            svc::route::v3::virtual_host_discovery_service_server::SERVICE_NAME,
            svc::secret::v3::secret_discovery_service_server::SERVICE_NAME,
            svc::runtime::v3::runtime_discovery_service_server::SERVICE_NAME,
            svc::extension::v3::extension_config_discovery_service_server::SERVICE_NAME,
        ];
        let ours: Vec<&str> = PER_TYPE_APIS.iter().map(|a| a.grpc).collect();
        assert_eq!(ours, generated);
        let ads = svc::discovery::v3::aggregated_discovery_service_server::SERVICE_NAME;
        assert_eq!(ADS_SERVICE, ads);
        assert!(ADS_SOTW_PATH.starts_with(&format!("/{ads}/")));
        assert!(ADS_DELTA_PATH.starts_with(&format!("/{ads}/")));
    }

    #[test]
    fn every_method_and_rest_path_is_in_the_envoy_api_descriptors() {
        // The REST paths are the `google.api.http` rules of Envoy's services: check them, and
        // the method names, against the descriptor set rather than trusting the table.
        let set = crate::codec::envoy_descriptor_set();
        let text = String::from_utf8_lossy(set);
        for api in PER_TYPE_APIS {
            let mut expected = vec![format!("Delta{}", api.method)];
            if let Some(rest) = api.rest_path {
                expected.extend([format!("Stream{}", api.method), rest.to_string()]);
            }
            for name in expected {
                assert!(text.contains(&name), "{name} is not in the Envoy API");
            }
        }
        let ads = ["StreamAggregatedResources", "DeltaAggregatedResources"];
        assert!(ads.iter().all(|m| text.contains(m)));
    }

    #[test]
    fn every_type_with_a_service_has_one_api() {
        for (alias, url) in type_url::ORDERED {
            let apis = PER_TYPE_APIS.iter().filter(|a| a.type_url == *url).count();
            assert_eq!(apis, 1, "{alias}");
            assert_eq!(per_type_api(url).map(|a| a.type_url), Some(*url));
        }
        assert_eq!(VIRTUAL_HOSTS.sotw_path(), None);
        let path = "/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters";
        assert_eq!(CLUSTERS.sotw_path().as_deref(), Some(path));
    }
}
