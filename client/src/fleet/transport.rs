//! The fleet's gRPC plumbing: M shared HTTP/2 connections, and ADS streams whose responses
//! arrive as raw bytes (decoded later by the node, only as deep as it needs).

use std::time::Duration;

use bytes::{Buf, Bytes};
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};

use crate::error::ClientError;
use crate::request::{Mode, Outgoing};
use crate::source::endpoint;

const SOTW_PATH: &str =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
const DELTA_PATH: &str =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources";

/// Flow-control windows: large responses (hundreds of KiB per node) should not stall on
/// HTTP/2's 64 KiB default window while thousands of streams share a connection.
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 32 * 1024 * 1024;

/// `connections` lazily connected channels to `server`; each is one HTTP/2 connection that
/// reconnects by itself.
pub fn connect(
    server: &str,
    connections: usize,
    connect_timeout: Duration,
) -> Result<Vec<Channel>, ClientError> {
    let endpoint = endpoint(server, connect_timeout)?
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    Ok((0..connections.max(1))
        .map(|_| endpoint.connect_lazy())
        .collect())
}

/// Opens one ADS stream on `channel`, sending what `requests` yields.
pub async fn open(
    channel: Channel,
    mode: Mode,
    max_message_bytes: usize,
    requests: mpsc::Receiver<Outgoing>,
) -> Result<Streaming<Bytes>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel)
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let path = match mode {
        Mode::Sotw => SOTW_PATH,
        Mode::Delta => DELTA_PATH,
    };
    let request = Request::new(ReceiverStream::new(requests));
    let response = grpc
        .streaming(request, PathAndQuery::from_static(path), RawCodec)
        .await?;
    Ok(response.into_inner())
}

/// Encodes requests with prost; hands responses over undecoded. The `Bytes` shares tonic's
/// receive buffer, so nothing is copied here.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Outgoing;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Outgoing;
    type Error = Status;

    fn encode(&mut self, item: Outgoing, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        let encoded = match item {
            Outgoing::Sotw(r) => r.encode(dst),
            Outgoing::Delta(r) => r.encode(dst),
        };
        encoded.map_err(|e| Status::internal(format!("cannot encode a request: {e}")))
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}
