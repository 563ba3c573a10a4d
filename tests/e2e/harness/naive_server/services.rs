//! The gRPC services of the naive server: ADS and the four per-type services, SotW and Delta,
//! every stream a [`machine::run`] of its own over the same machines.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{
    Request, Response, Status, Streaming,
    transport::{Server, server::Router},
};
use xdsloop_proto::{
    discovery::{
        DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    },
    envoy::envoy::service::{
        cluster::v3::cluster_discovery_service_server::{
            ClusterDiscoveryService, ClusterDiscoveryServiceServer,
        },
        discovery::v3::aggregated_discovery_service_server::{
            AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
        },
        endpoint::v3::endpoint_discovery_service_server::{
            EndpointDiscoveryService, EndpointDiscoveryServiceServer,
        },
        listener::v3::listener_discovery_service_server::{
            ListenerDiscoveryService, ListenerDiscoveryServiceServer,
        },
        route::v3::route_discovery_service_server::{
            RouteDiscoveryService, RouteDiscoveryServiceServer,
        },
    },
};

use super::{Legal, Shared, delta, machine, sotw};

/// Each stream's responses wait here for tonic; a few at a time.
const RESPONSES: usize = 16;
/// The suite sends multi-megabyte responses (xdsloop.large-responses).
const MESSAGE_LIMIT: usize = 64 << 20;

type Out<T> = ReceiverStream<Result<T, Status>>;

/// Every service on one router.
pub(super) fn router(mut server: Server, shared: Shared) -> Router {
    macro_rules! limited {
        ($server:ident) => {
            $server::new(shared.clone())
                .max_decoding_message_size(MESSAGE_LIMIT)
                .max_encoding_message_size(MESSAGE_LIMIT)
        };
    }
    server
        .add_service(limited!(AggregatedDiscoveryServiceServer))
        .add_service(limited!(ClusterDiscoveryServiceServer))
        .add_service(limited!(EndpointDiscoveryServiceServer))
        .add_service(limited!(ListenerDiscoveryServiceServer))
        .add_service(limited!(RouteDiscoveryServiceServer))
}

impl Shared {
    /// A SotW stream (`ads`: on ADS, where types share the stream).
    fn sotw(
        &self,
        requests: Streaming<DiscoveryRequest>,
        ads: bool,
    ) -> Result<Response<Out<DiscoveryResponse>>, Status> {
        if !ads && self.legal == Legal::AdsOnly {
            return Err(Status::unimplemented("naive server: ADS only"));
        }
        let (tx, rx) = mpsc::channel(RESPONSES);
        let machine = sotw::Sotw::new(self.bug, self.legal, ads, self.eds_streams.clone());
        tokio::spawn(machine::run(machine, requests, self.clone(), tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    fn delta(
        &self,
        requests: Streaming<DeltaDiscoveryRequest>,
        ads: bool,
    ) -> Result<Response<Out<DeltaDiscoveryResponse>>, Status> {
        if self.legal == Legal::DeltaUnimplemented || (!ads && self.legal == Legal::AdsOnly) {
            return Err(Status::unimplemented("naive server: no Delta"));
        }
        let (tx, rx) = mpsc::channel(RESPONSES);
        let machine = delta::Delta::new(self.bug, self.legal, self.eds_streams.clone());
        tokio::spawn(machine::run(machine, requests, self.clone(), tx));
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

#[tonic::async_trait]
impl AggregatedDiscoveryService for Shared {
    type StreamAggregatedResourcesStream = Out<DiscoveryResponse>;
    type DeltaAggregatedResourcesStream = Out<DeltaDiscoveryResponse>;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Out<DiscoveryResponse>>, Status> {
        self.sotw(request.into_inner(), true)
    }

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Out<DeltaDiscoveryResponse>>, Status> {
        self.delta(request.into_inner(), true)
    }
}

/// A per-type service: its SotW and Delta methods over the shared machines, no unary fetch.
macro_rules! per_type {
    ($service:ident, $sotw:ident, $sotw_stream:ident, $delta:ident, $delta_stream:ident, $fetch:ident) => {
        #[tonic::async_trait]
        impl $service for Shared {
            type $sotw_stream = Out<DiscoveryResponse>;
            type $delta_stream = Out<DeltaDiscoveryResponse>;

            async fn $sotw(
                &self,
                request: Request<Streaming<DiscoveryRequest>>,
            ) -> Result<Response<Out<DiscoveryResponse>>, Status> {
                self.sotw(request.into_inner(), false)
            }

            async fn $delta(
                &self,
                request: Request<Streaming<DeltaDiscoveryRequest>>,
            ) -> Result<Response<Out<DeltaDiscoveryResponse>>, Status> {
                self.delta(request.into_inner(), false)
            }

            async fn $fetch(
                &self,
                _: Request<DiscoveryRequest>,
            ) -> Result<Response<DiscoveryResponse>, Status> {
                Err(Status::unimplemented("naive server: no unary fetch"))
            }
        }
    };
}

per_type!(
    ClusterDiscoveryService,
    stream_clusters,
    StreamClustersStream,
    delta_clusters,
    DeltaClustersStream,
    fetch_clusters
);
per_type!(
    EndpointDiscoveryService,
    stream_endpoints,
    StreamEndpointsStream,
    delta_endpoints,
    DeltaEndpointsStream,
    fetch_endpoints
);
per_type!(
    ListenerDiscoveryService,
    stream_listeners,
    StreamListenersStream,
    delta_listeners,
    DeltaListenersStream,
    fetch_listeners
);
per_type!(
    RouteDiscoveryService,
    stream_routes,
    StreamRoutesStream,
    delta_routes,
    DeltaRoutesStream,
    fetch_routes
);
