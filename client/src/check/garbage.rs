//! A gRPC message that is not a `DiscoveryRequest`, sent on an ADS stream of its own (S12):
//! what a broken or hostile client puts on the wire.

use std::time::Duration;

use bytes::BufMut;
use futures::StreamExt as _;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use xdsloop_proto::services::ADS_SOTW_PATH;

use super::probe::{Gone, Target};

/// The message body: field 1 with wire type 7, which no protobuf decoder accepts.
pub(super) const MALFORMED: &[u8] = &[0x0f];

/// Sends raw bytes; responses are counted, not decoded.
#[derive(Clone, Copy, Debug, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = usize;
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
    type Item = usize;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<usize>, Status> {
        let len = bytes::Buf::remaining(src);
        bytes::Buf::advance(src, len);
        Ok(Some(len))
    }
}

/// Opens StreamAggregatedResources on its own connection, sends [`MALFORMED`] and reports
/// how the stream ended within `within` (`Gone::Silent`: it stayed open).
pub(super) async fn send_malformed(target: &Target, within: Duration) -> Gone {
    let mut grpc = tonic::client::Grpc::new(target.channel());
    let path = PathAndQuery::from_static(ADS_SOTW_PATH);
    let run = async {
        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        // The request stream stays open after the message, as a client's would.
        let requests =
            futures::stream::iter([MALFORMED.to_vec()]).chain(futures::stream::pending());
        let mut responses = grpc
            .streaming(tonic::Request::new(requests), path, RawCodec)
            .await?
            .into_inner();
        while responses.message().await?.is_some() {}
        Ok::<(), Status>(())
    };
    match tokio::time::timeout(within, run).await {
        Err(_) => Gone::Silent(within),
        Ok(Ok(())) => Gone::Ended(None),
        Ok(Err(status)) => Gone::Ended(Some((status.code(), status.message().to_string()))),
    }
}
