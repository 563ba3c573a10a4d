//! Opening one gRPC stream: on ADS for every type, or on the type's own service for per-type
//! streams. The method paths come from the table the server serves
//! ([`xdsloop_proto::services`]); the calls are the ones tonic's generated stubs make (prost
//! codec, the message limit both ways).

use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::client::Grpc;
use tonic::codegen::{StdError, http::uri::PathAndQuery};
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};
use tonic_prost::ProstCodec;
use xdsloop_proto::discovery::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use xdsloop_proto::services::{ADS_DELTA_PATH, ADS_SOTW_PATH, per_type_api};

use crate::config::Variant;
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

/// The method a stream of `mode` opens: ADS for [`StreamKey::Aggregated`], else the type's
/// own service. Per-type streams are opened for the APIs with a SotW stream (CDS, EDS, LDS,
/// RDS, SRDS, SDS, RTDS, ECDS); VHDS, Delta-only and on-demand, is subscribed over ADS.
fn method_path(stream: &StreamKey, mode: Variant) -> Result<String, Status> {
    let type_url = match stream {
        StreamKey::Aggregated => {
            let path = match mode {
                Variant::Sotw => ADS_SOTW_PATH,
                Variant::Delta => ADS_DELTA_PATH,
            };
            return Ok(path.to_string());
        }
        StreamKey::Type(type_url) => type_url,
    };
    let api = per_type_api(type_url).filter(|api| api.has_sotw());
    let path = api.and_then(|api| match mode {
        Variant::Sotw => api.sotw_path(),
        Variant::Delta => Some(api.delta_path()),
    });
    path.ok_or_else(|| {
        Status::unimplemented(format!(
            "no per-type discovery service for {type_url}; use ADS"
        ))
    })
}

/// Opens one stream: ADS for [`StreamKey::Aggregated`], else the type's own service.
pub(crate) async fn open(
    channel: Channel,
    stream: StreamKey,
    mode: Variant,
    max_message_bytes: usize,
    requests: mpsc::Receiver<Outgoing>,
) -> Result<Incoming, Status> {
    let path = method_path(&stream, mode)?;
    let path = PathAndQuery::try_from(path).map_err(|e| Status::internal(e.to_string()))?;
    let mut grpc = Grpc::new(channel)
        .max_decoding_message_size(max_message_bytes)
        .max_encoding_message_size(max_message_bytes);
    grpc.ready().await.map_err(|e| {
        let e: StdError = e.into();
        Status::unknown(format!("Service was not ready: {e}"))
    })?;
    match mode {
        Variant::Sotw => {
            let codec = ProstCodec::<DiscoveryRequest, DiscoveryResponse>::default();
            let requests = Request::new(sotw_requests(requests));
            let response = grpc.streaming(requests, path, codec).await?;
            Ok(Incoming::Sotw(response.into_inner()))
        }
        Variant::Delta => {
            let codec = ProstCodec::<DeltaDiscoveryRequest, DeltaDiscoveryResponse>::default();
            let requests = Request::new(delta_requests(requests));
            let response = grpc.streaming(requests, path, codec).await?;
            Ok(Incoming::Delta(response.into_inner()))
        }
    }
}

#[cfg(test)]
mod tests {
    use xdsloop_proto::type_url;

    use super::*;

    #[test]
    fn streams_open_on_ads_or_the_types_own_service() {
        let ads = method_path(&StreamKey::Aggregated, Variant::Delta).unwrap();
        assert_eq!(ads, ADS_DELTA_PATH);
        let cds = StreamKey::Type(type_url::CLUSTER.into());
        let path = "/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters";
        assert_eq!(method_path(&cds, Variant::Sotw).unwrap(), path);
        let delta = "/envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters";
        assert_eq!(method_path(&cds, Variant::Delta).unwrap(), delta);
        // VHDS is Delta-only and on-demand: no per-type stream; other types have none at all.
        for url in [type_url::VIRTUAL_HOST, "type.googleapis.com/my.Type"] {
            let error = method_path(&StreamKey::Type(url.into()), Variant::Delta).unwrap_err();
            assert_eq!(error.code(), tonic::Code::Unimplemented);
        }
    }
}
