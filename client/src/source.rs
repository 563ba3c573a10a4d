//! Config sources (Envoy's `ConfigSource`) and the transport each one opens. For now the
//! aggregated ones: `ads` (SotW) and `ads-delta`. Per-type gRPC, REST and file sources plug in
//! here as further [`Source`] variants.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;
use tonic::transport::{Channel, Endpoint};
use xdsloop_proto::discovery::{DeltaDiscoveryResponse, DiscoveryResponse};
use xdsloop_proto::envoy::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;

use crate::error::ClientError;
use crate::request::{Mode, Outgoing};

/// Default gRPC message limit for both directions: far above gRPC's 4 MiB so large
/// snapshots work (C16, S13).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

/// Where configuration comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Aggregated Discovery Service, State-of-the-World.
    Ads,
    /// Aggregated Discovery Service, Delta (incremental).
    AdsDelta,
}

impl Source {
    pub fn mode(self) -> Mode {
        match self {
            Self::Ads => Mode::Sotw,
            Self::AdsDelta => Mode::Delta,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Ads => "ads",
            Self::AdsDelta => "ads-delta",
        }
    }

    pub fn parse(name: &str) -> Result<Self, ClientError> {
        match name {
            "ads" => Ok(Self::Ads),
            "ads-delta" | "delta-ads" => Ok(Self::AdsDelta),
            other => Err(ClientError::Argument(format!(
                "unknown config source {other:?} (expected ads or ads-delta)"
            ))),
        }
    }

    /// Opens one stream on `channel`; requests are taken from `requests`.
    pub(crate) async fn open(
        self,
        channel: Channel,
        max_message_bytes: usize,
        requests: mpsc::Receiver<Outgoing>,
    ) -> Result<Incoming, tonic::Status> {
        let client = AggregatedDiscoveryServiceClient::new(channel)
            .max_decoding_message_size(max_message_bytes)
            .max_encoding_message_size(max_message_bytes);
        let requests = ReceiverStream::new(requests);
        match self {
            Self::Ads => {
                let sotw = requests.filter_map(|r| async move {
                    match r {
                        Outgoing::Sotw(r) => Some(r),
                        Outgoing::Delta(_) => None,
                    }
                });
                let mut client = client;
                let stream = client.stream_aggregated_resources(sotw).await?;
                Ok(Incoming::Sotw(stream.into_inner()))
            }
            Self::AdsDelta => {
                let delta = requests.filter_map(|r| async move {
                    match r {
                        Outgoing::Delta(r) => Some(r),
                        Outgoing::Sotw(_) => None,
                    }
                });
                let mut client = client;
                let stream = client.delta_aggregated_resources(delta).await?;
                Ok(Incoming::Delta(stream.into_inner()))
            }
        }
    }
}

/// The gRPC endpoint for a server address (`host:port` or a full `http://` URI).
pub fn endpoint(server: &str, connect_timeout: Duration) -> Result<Endpoint, ClientError> {
    let uri = if server.contains("://") {
        server.to_string()
    } else {
        format!("http://{server}")
    };
    let endpoint = Endpoint::from_shared(uri).map_err(|e| ClientError::Address {
        address: server.to_string(),
        message: e.to_string(),
    })?;
    Ok(endpoint
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        // Notices a dead server on an idle stream instead of waiting forever.
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10)))
}

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
    pub(crate) async fn next(&mut self) -> Result<Option<Response>, tonic::Status> {
        match self {
            Self::Sotw(s) => Ok(s.message().await?.map(Response::Sotw)),
            Self::Delta(s) => Ok(s.message().await?.map(Response::Delta)),
        }
    }
}
