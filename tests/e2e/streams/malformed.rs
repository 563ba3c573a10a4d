//! A raw gRPC client that can put bytes on the ADS stream that are not a `DiscoveryRequest`.

use prost::{Message, bytes::BufMut};
use tonic::{
    Status, Streaming,
    codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder},
    codegen::http::uri::PathAndQuery,
    transport::Channel,
};
use xdsloop_proto::discovery::DiscoveryResponse;

/// Sends raw bytes, decodes `DiscoveryResponse`s.
#[derive(Debug, Default, Clone, Copy)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = DiscoveryResponse;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }
    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = DiscoveryResponse;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<DiscoveryResponse>, Status> {
        DiscoveryResponse::decode(src)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// Opens StreamAggregatedResources and sends `bytes` as its one request message.
pub(super) async fn send_raw(
    addr: std::net::SocketAddr,
    bytes: Vec<u8>,
) -> Streaming<DiscoveryResponse> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = PathAndQuery::from_static(
        "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
    );
    let requests = tokio_stream::iter([bytes]);
    let response = grpc.streaming(tonic::Request::new(requests), path, RawCodec);
    response.await.expect("the stream opens").into_inner()
}
