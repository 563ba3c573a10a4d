//! The per-type ("singleton") xDS services: CDS, EDS, LDS, RDS, SRDS, VHDS, SDS, RTDS and
//! ECDS, each with its SotW stream, Delta stream and unary Fetch where the API defines them.
//!
//! They are ADS restricted to one type: the streams run on the same [`Discovery`] (the same
//! SotW and Delta state machines), registered with their service's [`Transport`], and Fetch is
//! [`crate::protocol::fetch`]. The only per-type rule is the type URL: a client may omit it (it is
//! implicit in the service), and a request for another type ends the stream with
//! `INVALID_ARGUMENT` (xDS protocol: the type is "implicit in requests made via singleton xDS
//! APIs"; serving another type there would hide a misconfigured client).

use std::{fmt, net::SocketAddr};

use futures::StreamExt;
use tonic::Status;
use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest, DiscoveryResponse},
    type_url,
};

use crate::{
    admin::registry::{Transport, Variant},
    protocol::fetch::{Fetched, Fetcher},
    protocol::request::{Requests, SotwRequest},
    snapshot::entries::{DeltaResponse, SotwResponse},
    transport::discovery::{Discovery, ResponseStream},
};

/// One per-type API: the name streams show in `/status`, its type URL, its gRPC service and
/// method suffix (`Stream<m>`, `Delta<m>`, `Fetch<m>`), and its REST-JSON path
/// (`POST /v3/discovery:<rest>`, from the API's HTTP annotation) when it has a Fetch method.
/// An API without Fetch (VHDS) has no SotW stream either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Api {
    pub service: &'static str,
    pub type_url: &'static str,
    pub grpc: &'static str,
    pub method: &'static str,
    pub rest: Option<&'static str>,
}

pub const CLUSTERS: Api = api(
    "clusters",
    type_url::CLUSTER,
    "envoy.service.cluster.v3.ClusterDiscoveryService",
    "Clusters",
    Some("clusters"),
);
pub const ENDPOINTS: Api = api(
    "endpoints",
    type_url::ENDPOINT,
    "envoy.service.endpoint.v3.EndpointDiscoveryService",
    "Endpoints",
    Some("endpoints"),
);
pub const LISTENERS: Api = api(
    "listeners",
    type_url::LISTENER,
    "envoy.service.listener.v3.ListenerDiscoveryService",
    "Listeners",
    Some("listeners"),
);
pub const ROUTES: Api = api(
    "routes",
    type_url::ROUTE,
    "envoy.service.route.v3.RouteDiscoveryService",
    "Routes",
    Some("routes"),
);
pub const SCOPED_ROUTES: Api = api(
    "scoped-routes",
    type_url::SCOPED_ROUTE,
    "envoy.service.route.v3.ScopedRoutesDiscoveryService",
    "ScopedRoutes",
    Some("scoped-routes"),
);
/// VHDS is Delta-only (no SotW stream, no Fetch).
pub const VIRTUAL_HOSTS: Api = api(
    "virtual-hosts",
    type_url::VIRTUAL_HOST,
    "envoy.service.route.v3.VirtualHostDiscoveryService",
    "VirtualHosts",
    None,
);
pub const SECRETS: Api = api(
    "secrets",
    type_url::SECRET,
    "envoy.service.secret.v3.SecretDiscoveryService",
    "Secrets",
    Some("secrets"),
);
pub const RUNTIME: Api = api(
    "runtime",
    type_url::RUNTIME,
    "envoy.service.runtime.v3.RuntimeDiscoveryService",
    "Runtime",
    Some("runtime"),
);
pub const EXTENSION_CONFIGS: Api = api(
    "extension-configs",
    type_url::EXTENSION_CONFIG,
    "envoy.service.extension.v3.ExtensionConfigDiscoveryService",
    "ExtensionConfigs",
    Some("extension_configs"),
);

/// Every per-type API served, in make-before-break order.
pub const APIS: [Api; 9] = [
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

const fn api(
    service: &'static str,
    type_url: &'static str,
    grpc: &'static str,
    method: &'static str,
    rest: Option<&'static str>,
) -> Api {
    Api {
        service,
        type_url,
        grpc,
        method,
        rest,
    }
}

/// A request for another type than the service's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongType {
    pub api: Api,
    pub requested: String,
}

impl fmt::Display for WrongType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} service serves only {} (type_url may be omitted); this request asks for {}: \
             use ADS or that type's own service",
            self.api.service, self.api.type_url, self.requested
        )
    }
}

impl From<WrongType> for Status {
    fn from(wrong: WrongType) -> Self {
        Status::invalid_argument(wrong.to_string())
    }
}

/// The requests that carry a type URL.
pub trait Typed {
    fn type_url_mut(&mut self) -> &mut String;
}

impl Typed for DiscoveryRequest {
    fn type_url_mut(&mut self) -> &mut String {
        &mut self.type_url
    }
}

impl Typed for SotwRequest {
    fn type_url_mut(&mut self) -> &mut String {
        &mut self.head.type_url
    }
}

impl Typed for DeltaDiscoveryRequest {
    fn type_url_mut(&mut self) -> &mut String {
        &mut self.type_url
    }
}

impl Api {
    /// Fills in an omitted type URL; rejects a different one.
    pub fn claim<R: Typed>(&self, mut request: R) -> Result<R, WrongType> {
        let url = request.type_url_mut();
        if url.is_empty() {
            *url = self.type_url.to_string();
        } else if url != self.type_url {
            let requested = std::mem::take(url);
            return Err(WrongType {
                api: *self,
                requested,
            });
        }
        Ok(request)
    }

    fn transport(&self, variant: Variant) -> Transport {
        Transport {
            variant,
            service: self.service,
        }
    }
}

/// What every per-type service serves from. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PerType {
    discovery: Discovery,
    fetcher: Fetcher,
}

impl PerType {
    pub fn new(discovery: Discovery, fetcher: Fetcher) -> Self {
        Self { discovery, fetcher }
    }

    fn sotw(
        &self,
        api: Api,
        peer: Option<SocketAddr>,
        requests: Requests<SotwRequest>,
    ) -> ResponseStream<SotwResponse> {
        // A wrong type becomes the stream's error: the loop sends it and ends this stream.
        let requests = requests.map(move |r| r.and_then(|r| api.claim(r).map_err(Status::from)));
        let transport = api.transport(Variant::Sotw);
        self.discovery.sotw(transport, peer, requests)
    }

    fn delta(
        &self,
        api: Api,
        peer: Option<SocketAddr>,
        requests: Requests<DeltaDiscoveryRequest>,
    ) -> ResponseStream<DeltaResponse> {
        let requests = requests.map(move |r| r.and_then(|r| api.claim(r).map_err(Status::from)));
        let transport = api.transport(Variant::Delta);
        self.discovery.delta(transport, peer, requests)
    }

    /// gRPC has no "304": the current version is answered `FAILED_PRECONDITION` (the
    /// precondition "version_info is not the current version" failed, as HTTP conditional
    /// requests do), never with an empty response, which would mean "delete everything".
    fn fetch(&self, api: Api, request: DiscoveryRequest) -> Result<DiscoveryResponse, Status> {
        let request = api.claim(request)?;
        match self.fetcher.fetch("grpc", api.type_url, request) {
            Fetched::Response(response) => Ok(response),
            Fetched::NotModified { version } => Err(Status::failed_precondition(format!(
                "not modified: version_info {version:?} is the current version of {}",
                api.type_url
            ))),
        }
    }
}

mod routes;
pub use routes::add_to;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_omitted_type_url_is_the_services_and_another_is_rejected() {
        let filled = CLUSTERS.claim(DiscoveryRequest::default()).unwrap();
        assert_eq!(filled.type_url, type_url::CLUSTER);
        let same = DeltaDiscoveryRequest {
            type_url: type_url::CLUSTER.into(),
            ..Default::default()
        };
        assert!(CLUSTERS.claim(same).is_ok());
        let other = DiscoveryRequest {
            type_url: type_url::LISTENER.into(),
            ..Default::default()
        };
        let wrong = CLUSTERS.claim(other).unwrap_err();
        assert_eq!(wrong.requested, type_url::LISTENER);
        let status = Status::from(wrong);
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().contains("clusters service serves only"));
        assert!(status.message().contains(type_url::LISTENER));
    }

    #[test]
    fn every_api_names_its_generated_service() {
        use xdsloop_proto::envoy::envoy::service as svc;
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
        let ours: Vec<&str> = APIS.iter().map(|a| a.grpc).collect();
        assert_eq!(ours, generated);
    }

    #[test]
    fn every_type_with_a_service_has_one_api() {
        for (alias, url) in type_url::ORDERED {
            let apis = APIS.iter().filter(|a| a.type_url == *url).count();
            assert_eq!(apis, 1, "{alias}");
        }
    }
}
