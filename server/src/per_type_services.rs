//! The generated per-type service traits, each a thin mapping onto [`PerType`]'s three calls
//! with its [`super::Api`]. Nothing but names differs between them.

use tonic::{Request, Streaming};
use xdsloop_proto::{
    discovery::{
        DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    },
    envoy::envoy::service::{
        cluster::v3::cluster_discovery_service_server::ClusterDiscoveryService,
        endpoint::v3::endpoint_discovery_service_server::EndpointDiscoveryService,
        extension::v3::extension_config_discovery_service_server::ExtensionConfigDiscoveryService,
        listener::v3::listener_discovery_service_server::ListenerDiscoveryService,
        route::v3::route_discovery_service_server::RouteDiscoveryService,
        route::v3::scoped_routes_discovery_service_server::ScopedRoutesDiscoveryService,
        route::v3::virtual_host_discovery_service_server::VirtualHostDiscoveryService,
        runtime::v3::runtime_discovery_service_server::RuntimeDiscoveryService,
        secret::v3::secret_discovery_service_server::SecretDiscoveryService,
    },
};

use super::*;
use crate::service::MessageStream;

pub(super) use xdsloop_proto::envoy::envoy::service::{
    cluster::v3::cluster_discovery_service_server::ClusterDiscoveryServiceServer as CdsServer,
    endpoint::v3::endpoint_discovery_service_server::EndpointDiscoveryServiceServer as EdsServer,
    extension::v3::extension_config_discovery_service_server::ExtensionConfigDiscoveryServiceServer as EcdsServer,
    listener::v3::listener_discovery_service_server::ListenerDiscoveryServiceServer as LdsServer,
    route::v3::route_discovery_service_server::RouteDiscoveryServiceServer as RdsServer,
    route::v3::scoped_routes_discovery_service_server::ScopedRoutesDiscoveryServiceServer as SrdsServer,
    route::v3::virtual_host_discovery_service_server::VirtualHostDiscoveryServiceServer as VhdsServer,
    runtime::v3::runtime_discovery_service_server::RuntimeDiscoveryServiceServer as RtdsServer,
    secret::v3::secret_discovery_service_server::SecretDiscoveryServiceServer as SdsServer,
};

#[tonic::async_trait]
impl ClusterDiscoveryService for PerType {
    type StreamClustersStream = MessageStream<DiscoveryResponse>;
    type DeltaClustersStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_clusters(&self, r: Request<Streaming<DiscoveryRequest>>) -> SotwResult {
        self.sotw(CLUSTERS, r)
    }
    async fn delta_clusters(&self, r: Request<Streaming<DeltaDiscoveryRequest>>) -> DeltaResult {
        self.delta(CLUSTERS, r)
    }
    async fn fetch_clusters(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(CLUSTERS, r)
    }
}

#[tonic::async_trait]
impl EndpointDiscoveryService for PerType {
    type StreamEndpointsStream = MessageStream<DiscoveryResponse>;
    type DeltaEndpointsStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_endpoints(&self, r: Request<Streaming<DiscoveryRequest>>) -> SotwResult {
        self.sotw(ENDPOINTS, r)
    }
    async fn delta_endpoints(&self, r: Request<Streaming<DeltaDiscoveryRequest>>) -> DeltaResult {
        self.delta(ENDPOINTS, r)
    }
    async fn fetch_endpoints(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(ENDPOINTS, r)
    }
}

#[tonic::async_trait]
impl ListenerDiscoveryService for PerType {
    type StreamListenersStream = MessageStream<DiscoveryResponse>;
    type DeltaListenersStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_listeners(&self, r: Request<Streaming<DiscoveryRequest>>) -> SotwResult {
        self.sotw(LISTENERS, r)
    }
    async fn delta_listeners(&self, r: Request<Streaming<DeltaDiscoveryRequest>>) -> DeltaResult {
        self.delta(LISTENERS, r)
    }
    async fn fetch_listeners(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(LISTENERS, r)
    }
}

#[tonic::async_trait]
impl RouteDiscoveryService for PerType {
    type StreamRoutesStream = MessageStream<DiscoveryResponse>;
    type DeltaRoutesStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_routes(&self, r: Request<Streaming<DiscoveryRequest>>) -> SotwResult {
        self.sotw(ROUTES, r)
    }
    async fn delta_routes(&self, r: Request<Streaming<DeltaDiscoveryRequest>>) -> DeltaResult {
        self.delta(ROUTES, r)
    }
    async fn fetch_routes(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(ROUTES, r)
    }
}

#[tonic::async_trait]
impl ScopedRoutesDiscoveryService for PerType {
    type StreamScopedRoutesStream = MessageStream<DiscoveryResponse>;
    type DeltaScopedRoutesStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_scoped_routes(&self, r: Request<Streaming<DiscoveryRequest>>) -> SotwResult {
        self.sotw(SCOPED_ROUTES, r)
    }
    async fn delta_scoped_routes(
        &self,
        r: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> DeltaResult {
        self.delta(SCOPED_ROUTES, r)
    }
    async fn fetch_scoped_routes(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(SCOPED_ROUTES, r)
    }
}

#[tonic::async_trait]
impl VirtualHostDiscoveryService for PerType {
    type DeltaVirtualHostsStream = MessageStream<DeltaDiscoveryResponse>;
    async fn delta_virtual_hosts(
        &self,
        r: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> DeltaResult {
        self.delta(VIRTUAL_HOSTS, r)
    }
}

#[tonic::async_trait]
impl SecretDiscoveryService for PerType {
    type StreamSecretsStream = MessageStream<DiscoveryResponse>;
    type DeltaSecretsStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_secrets(&self, r: Request<Streaming<DiscoveryRequest>>) -> SotwResult {
        self.sotw(SECRETS, r)
    }
    async fn delta_secrets(&self, r: Request<Streaming<DeltaDiscoveryRequest>>) -> DeltaResult {
        self.delta(SECRETS, r)
    }
    async fn fetch_secrets(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(SECRETS, r)
    }
}

#[tonic::async_trait]
impl RuntimeDiscoveryService for PerType {
    type StreamRuntimeStream = MessageStream<DiscoveryResponse>;
    type DeltaRuntimeStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_runtime(&self, r: Request<Streaming<DiscoveryRequest>>) -> SotwResult {
        self.sotw(RUNTIME, r)
    }
    async fn delta_runtime(&self, r: Request<Streaming<DeltaDiscoveryRequest>>) -> DeltaResult {
        self.delta(RUNTIME, r)
    }
    async fn fetch_runtime(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(RUNTIME, r)
    }
}

#[tonic::async_trait]
impl ExtensionConfigDiscoveryService for PerType {
    type StreamExtensionConfigsStream = MessageStream<DiscoveryResponse>;
    type DeltaExtensionConfigsStream = MessageStream<DeltaDiscoveryResponse>;
    async fn stream_extension_configs(
        &self,
        r: Request<Streaming<DiscoveryRequest>>,
    ) -> SotwResult {
        self.sotw(EXTENSION_CONFIGS, r)
    }
    async fn delta_extension_configs(
        &self,
        r: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> DeltaResult {
        self.delta(EXTENSION_CONFIGS, r)
    }
    async fn fetch_extension_configs(&self, r: Request<DiscoveryRequest>) -> FetchResult {
        self.fetch(EXTENSION_CONFIGS, r)
    }
}
