//! tonic services on the stream state machines. [`Discovery`] starts SotW and Delta streams
//! for any transport; [`Ads`] is the Aggregated Discovery Service on top of it. The per-type
//! services (CDS, EDS, LDS, RDS, ...) are the same two calls with their own [`Transport`].

use std::{net::SocketAddr, sync::Arc};

use futures::Stream;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::info;
use xdsloop_proto::{
    discovery::{
        DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
    },
    envoy::envoy::service::discovery::v3::aggregated_discovery_service_server::{
        AggregatedDiscoveryService, AggregatedDiscoveryServiceServer,
    },
};

use crate::{
    Snapshot,
    delta::DeltaStream,
    registry::{Registry, Transport},
    sotw::SotwStream,
    stream::{self, Feeds, OUTBOUND_CAPACITY, StreamMachine},
};

/// gRPC's default 4 MiB limit is far too small for real fleets' CDS/EDS (S13).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Responses as a gRPC server stream.
pub type ResponseStream<T> = ReceiverStream<Result<T, Status>>;

/// What every stream needs: the snapshots to serve, the registry to report to, and the signal
/// that ends all streams when the server stops. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Discovery {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    registry: Registry,
    shutdown: watch::Receiver<bool>,
    max_message_bytes: usize,
}

impl Discovery {
    /// `shutdown` turning true (or its sender dropping) ends every open stream.
    pub fn new(
        snapshots: watch::Receiver<Arc<Snapshot>>,
        registry: Registry,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            snapshots,
            registry,
            shutdown,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    /// The gRPC message limit the serving tonic services use, so streams can log responses
    /// that will not fit.
    pub fn with_max_message_bytes(mut self, max_message_bytes: usize) -> Self {
        self.max_message_bytes = max_message_bytes;
        self
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Starts a SotW stream over `requests` and returns its responses.
    pub fn sotw<S>(
        &self,
        transport: Transport,
        peer: Option<SocketAddr>,
        requests: S,
    ) -> ResponseStream<DiscoveryResponse>
    where
        S: Stream<Item = Result<DiscoveryRequest, Status>> + Send + Unpin + 'static,
    {
        self.spawn(transport, peer, requests, SotwStream::new)
    }

    /// Starts a Delta stream over `requests` and returns its responses.
    pub fn delta<S>(
        &self,
        transport: Transport,
        peer: Option<SocketAddr>,
        requests: S,
    ) -> ResponseStream<DeltaDiscoveryResponse>
    where
        S: Stream<Item = Result<DeltaDiscoveryRequest, Status>> + Send + Unpin + 'static,
    {
        self.spawn(transport, peer, requests, DeltaStream::new)
    }

    fn spawn<M, S>(
        &self,
        transport: Transport,
        peer: Option<SocketAddr>,
        requests: S,
        machine: impl FnOnce(u64, Arc<Snapshot>) -> M,
    ) -> ResponseStream<M::Response>
    where
        M: StreamMachine,
        S: Stream<Item = Result<M::Request, Status>> + Send + Unpin + 'static,
    {
        let entry = self.registry.open(transport, peer);
        info!(stream = entry.id(), %transport, peer = ?peer, "stream opened");
        // Mark the snapshot the machine starts from as seen on this stream's own receiver, so
        // a reload between here and the loop's first poll is still noticed.
        let mut snapshots = self.snapshots.clone();
        let current = snapshots.borrow_and_update().clone();
        let machine = machine(entry.id(), current);
        let (tx, rx) = mpsc::channel(OUTBOUND_CAPACITY);
        let feeds = Feeds {
            snapshots,
            shutdown: self.shutdown.clone(),
            max_message_bytes: self.max_message_bytes,
        };
        tokio::spawn(stream::run(machine, requests, feeds, tx, entry));
        ReceiverStream::new(rx)
    }
}

/// The Aggregated Discovery Service: every type on one stream, SotW or Delta.
#[derive(Debug, Clone)]
pub struct Ads {
    discovery: Discovery,
}

impl Ads {
    pub fn new(discovery: Discovery) -> Self {
        Self { discovery }
    }

    /// The tonic service, with both message size limits set to `max_message_bytes`.
    pub fn into_server(self, max_message_bytes: usize) -> AggregatedDiscoveryServiceServer<Ads> {
        AggregatedDiscoveryServiceServer::new(self)
            .max_decoding_message_size(max_message_bytes)
            .max_encoding_message_size(max_message_bytes)
    }
}

#[tonic::async_trait]
impl AggregatedDiscoveryService for Ads {
    type StreamAggregatedResourcesStream = ResponseStream<DiscoveryResponse>;
    type DeltaAggregatedResourcesStream = ResponseStream<DeltaDiscoveryResponse>;

    async fn stream_aggregated_resources(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamAggregatedResourcesStream>, Status> {
        let peer = request.remote_addr();
        let requests = request.into_inner();
        let responses = self.discovery.sotw(Transport::ADS_SOTW, peer, requests);
        Ok(Response::new(responses))
    }

    async fn delta_aggregated_resources(
        &self,
        request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaAggregatedResourcesStream>, Status> {
        let peer = request.remote_addr();
        let requests = request.into_inner();
        let responses = self.discovery.delta(Transport::ADS_DELTA, peer, requests);
        Ok(Response::new(responses))
    }
}
