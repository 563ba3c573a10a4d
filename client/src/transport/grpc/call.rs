//! The gRPC services a stream opens on: ADS for every type, or the type's own service (CDS,
//! EDS, LDS, RDS, SRDS, SDS, RTDS, ECDS) for per-type streams; and each type's REST path.

use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tonic::{Status, Streaming};
use xdsloop_proto::discovery::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use xdsloop_proto::envoy::envoy::service;
use xdsloop_proto::type_url;

use crate::config::Mode;
use crate::core::mux::StreamKey;
use crate::core::request::Outgoing;

/// Responses arriving on an open stream.
pub(crate) enum Incoming {
    Sotw(Streaming<DiscoveryResponse>),
    Delta(Streaming<DeltaDiscoveryResponse>),
}

/// One response of either flavour.
pub(crate) enum Response {
    Sotw(DiscoveryResponse),
    Delta(DeltaDiscoveryResponse),
}

impl Incoming {
    /// The next response; `Ok(None)` when the server ended the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<Response>, Status> {
        match self {
            Self::Sotw(s) => Ok(s.message().await?.map(Response::Sotw)),
            Self::Delta(s) => Ok(s.message().await?.map(Response::Delta)),
        }
    }
}

fn sotw_requests(
    requests: mpsc::Receiver<Outgoing>,
) -> impl Stream<Item = DiscoveryRequest> + Send + 'static {
    ReceiverStream::new(requests).filter_map(|r| async move {
        match r {
            Outgoing::Sotw(r) => Some(r),
            Outgoing::Delta(_) => None,
        }
    })
}

fn delta_requests(
    requests: mpsc::Receiver<Outgoing>,
) -> impl Stream<Item = DeltaDiscoveryRequest> + Send + 'static {
    ReceiverStream::new(requests).filter_map(|r| async move {
        match r {
            Outgoing::Delta(r) => Some(r),
            Outgoing::Sotw(_) => None,
        }
    })
}

/// Opens one stream: ADS for [`StreamKey::Aggregated`], else the type's own service.
pub(crate) async fn open(
    channel: Channel,
    stream: StreamKey,
    mode: Mode,
    max_message_bytes: usize,
    requests: mpsc::Receiver<Outgoing>,
) -> Result<Incoming, Status> {
    match stream {
        StreamKey::Aggregated => {
            use service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient as Ads;
            let mut client = Ads::new(channel)
                .max_decoding_message_size(max_message_bytes)
                .max_encoding_message_size(max_message_bytes);
            match mode {
                Mode::Sotw => Ok(Incoming::Sotw(
                    client
                        .stream_aggregated_resources(sotw_requests(requests))
                        .await?
                        .into_inner(),
                )),
                Mode::Delta => Ok(Incoming::Delta(
                    client
                        .delta_aggregated_resources(delta_requests(requests))
                        .await?
                        .into_inner(),
                )),
            }
        }
        StreamKey::Type(type_url) => {
            open_per_type(channel, type_url, mode, max_message_bytes, requests).await
        }
    }
}

/// Per type: its gRPC service's stubs, SotW and Delta methods, and REST path (the service's
/// `google.api.http` rule).
macro_rules! per_type_services {
    ($($type_url:expr => $client:ty, $sotw:ident, $delta:ident, $service:literal, $path:literal;)*) => {
        async fn open_per_type(
            channel: Channel,
            type_url: String,
            mode: Mode,
            max_message_bytes: usize,
            requests: mpsc::Receiver<Outgoing>,
        ) -> Result<Incoming, Status> {
            $(
                if type_url == $type_url {
                    let mut client = <$client>::new(channel)
                        .max_decoding_message_size(max_message_bytes)
                        .max_encoding_message_size(max_message_bytes);
                    return match mode {
                        Mode::Sotw => {
                            let r = sotw_requests(requests);
                            Ok(Incoming::Sotw(client.$sotw(r).await?.into_inner()))
                        }
                        Mode::Delta => {
                            let r = delta_requests(requests);
                            Ok(Incoming::Delta(client.$delta(r).await?.into_inner()))
                        }
                    };
                }
            )*
            Err(Status::unimplemented(format!(
                "no per-type discovery service for {type_url}; use ADS"
            )))
        }

        /// The gRPC service a type's per-type stream uses, if it has one.
        pub fn per_type_service(type_url: &str) -> Option<&'static str> {
            $(if type_url == $type_url { return Some($service); })*
            None
        }

        /// The REST path a type is polled on (`POST`), if it has one.
        pub fn rest_path(type_url: &str) -> Option<&'static str> {
            $(if type_url == $type_url { return Some($path); })*
            None
        }
    };
}

per_type_services! {
    type_url::CLUSTER => service::cluster::v3::cluster_discovery_service_client::ClusterDiscoveryServiceClient<Channel>,
        stream_clusters, delta_clusters,
        "envoy.service.cluster.v3.ClusterDiscoveryService", "/v3/discovery:clusters";
    type_url::ENDPOINT => service::endpoint::v3::endpoint_discovery_service_client::EndpointDiscoveryServiceClient<Channel>,
        stream_endpoints, delta_endpoints,
        "envoy.service.endpoint.v3.EndpointDiscoveryService", "/v3/discovery:endpoints";
    type_url::LISTENER => service::listener::v3::listener_discovery_service_client::ListenerDiscoveryServiceClient<Channel>,
        stream_listeners, delta_listeners,
        "envoy.service.listener.v3.ListenerDiscoveryService", "/v3/discovery:listeners";
    type_url::ROUTE => service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient<Channel>,
        stream_routes, delta_routes,
        "envoy.service.route.v3.RouteDiscoveryService", "/v3/discovery:routes";
    type_url::SCOPED_ROUTE => service::route::v3::scoped_routes_discovery_service_client::ScopedRoutesDiscoveryServiceClient<Channel>,
        stream_scoped_routes, delta_scoped_routes,
        "envoy.service.route.v3.ScopedRoutesDiscoveryService", "/v3/discovery:scoped-routes";
    type_url::SECRET => service::secret::v3::secret_discovery_service_client::SecretDiscoveryServiceClient<Channel>,
        stream_secrets, delta_secrets,
        "envoy.service.secret.v3.SecretDiscoveryService", "/v3/discovery:secrets";
    type_url::RUNTIME => service::runtime::v3::runtime_discovery_service_client::RuntimeDiscoveryServiceClient<Channel>,
        stream_runtime, delta_runtime,
        "envoy.service.runtime.v3.RuntimeDiscoveryService", "/v3/discovery:runtime";
    type_url::EXTENSION_CONFIG => service::extension::v3::extension_config_discovery_service_client::ExtensionConfigDiscoveryServiceClient<Channel>,
        stream_extension_configs, delta_extension_configs,
        "envoy.service.extension.v3.ExtensionConfigDiscoveryService", "/v3/discovery:extension_configs";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_types_have_a_service_and_a_rest_path() {
        assert_eq!(rest_path(type_url::CLUSTER), Some("/v3/discovery:clusters"));
        assert_eq!(
            rest_path(type_url::SCOPED_ROUTE),
            Some("/v3/discovery:scoped-routes")
        );
        assert_eq!(
            per_type_service(type_url::ENDPOINT),
            Some("envoy.service.endpoint.v3.EndpointDiscoveryService")
        );
        // VHDS is Delta-only and on-demand: no per-type SotW service, no REST.
        assert_eq!(rest_path(type_url::VIRTUAL_HOST), None);
    }

    #[test]
    fn every_rest_path_is_in_the_envoy_api_descriptors() {
        // The paths are the `google.api.http` rules of Envoy's services: check them against
        // the descriptor set rather than trusting the table.
        let set = xdsloop_proto::codec::envoy_descriptor_set();
        let text = String::from_utf8_lossy(set);
        for (_, type_url) in type_url::ORDERED {
            if let Some(path) = rest_path(type_url) {
                assert!(text.contains(path), "{path} not in the Envoy API");
            }
        }
    }
}
