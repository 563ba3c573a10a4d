//! The Aggregated Discovery Service: every type on one stream, SotW or Delta.
//!
//! It is the generated tonic service's routing written out by hand for one reason: the
//! generated one encodes responses with prost from plain messages, and ADS responses here are
//! [`Outbound`](crate::wire::Outbound) values whose resource entries are encoded once and
//! shared by every stream ([`OutboundCodec`]). Requests are decoded with prost as before.

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use tonic::{
    Code, Request, Response, Status, Streaming,
    body::Body,
    codegen::http,
    server::{Grpc, NamedService, StreamingService},
};
use xdsloop_proto::discovery::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};

use crate::{
    registry::Transport,
    service::{Discovery, ResponseStream},
    wire::{DeltaResponse, OutboundCodec, SotwResponse},
};

/// gRPC service name of ADS.
pub const ADS_SERVICE: &str = "envoy.service.discovery.v3.AggregatedDiscoveryService";
const SOTW_PATH: &str =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
const DELTA_PATH: &str =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// ADS as a tonic route. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Ads {
    discovery: Discovery,
    max_message_bytes: usize,
}

impl Ads {
    /// Both gRPC message limits are `max_message_bytes` (S13).
    pub fn new(discovery: Discovery, max_message_bytes: usize) -> Self {
        Self {
            discovery,
            max_message_bytes,
        }
    }

    fn grpc<M, Req>(&self) -> Grpc<OutboundCodec<M, Req>>
    where
        M: prost::Message + Default + Send + 'static,
        Req: prost::Message + Default + Send + 'static,
    {
        let limit = Some(self.max_message_bytes);
        Grpc::new(OutboundCodec::default()).apply_max_message_size_config(limit, limit)
    }
}

impl NamedService for Ads {
    const NAME: &'static str = ADS_SERVICE;
}

impl tonic::codegen::Service<http::Request<Body>> for Ads {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let ads = self.clone();
        match request.uri().path() {
            SOTW_PATH => Box::pin(async move {
                let mut grpc = ads.grpc::<DiscoveryResponse, DiscoveryRequest>();
                Ok(grpc.streaming(SotwCall(ads.discovery), request).await)
            }),
            DELTA_PATH => Box::pin(async move {
                let mut grpc = ads.grpc::<DeltaDiscoveryResponse, DeltaDiscoveryRequest>();
                Ok(grpc.streaming(DeltaCall(ads.discovery), request).await)
            }),
            _ => Box::pin(async { Ok(Status::new(Code::Unimplemented, "").into_http()) }),
        }
    }
}

struct SotwCall(Discovery);

impl StreamingService<DiscoveryRequest> for SotwCall {
    type Response = SotwResponse;
    type ResponseStream = ResponseStream<SotwResponse>;
    type Future = std::future::Ready<Result<Response<Self::ResponseStream>, Status>>;

    fn call(&mut self, request: Request<Streaming<DiscoveryRequest>>) -> Self::Future {
        let peer = request.remote_addr();
        let responses = self.0.sotw(Transport::ADS_SOTW, peer, request.into_inner());
        std::future::ready(Ok(Response::new(responses)))
    }
}

struct DeltaCall(Discovery);

impl StreamingService<DeltaDiscoveryRequest> for DeltaCall {
    type Response = DeltaResponse;
    type ResponseStream = ResponseStream<DeltaResponse>;
    type Future = std::future::Ready<Result<Response<Self::ResponseStream>, Status>>;

    fn call(&mut self, request: Request<Streaming<DeltaDiscoveryRequest>>) -> Self::Future {
        let peer = request.remote_addr();
        let responses = self
            .0
            .delta(Transport::ADS_DELTA, peer, request.into_inner());
        std::future::ready(Ok(Response::new(responses)))
    }
}
