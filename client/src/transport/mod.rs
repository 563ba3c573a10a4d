//! Config sources (Envoy's `ConfigSource`) and the one place that maps a source to the transport
//! implementing it ([`Transport::new`], Envoy's `SubscriptionFactoryImpl`). Every transport
//! drives the same mux, so subscriptions, events, reports and the store look the same whatever
//! the source:
//! - [`grpc`]: `ads` / `ads-delta` (one stream for every type) and `grpc` / `delta-grpc` (one
//!   stream per type, Envoy's non-aggregated `GrpcMuxImpl`), over the stubs in [`services`];
//! - [`rest`]: `rest`, polling `POST /v3/discovery:<type>` with JSON ([`http`]);
//! - [`file`]: `file`, a watched DiscoveryResponse file (`path_config_source`).

mod file;
mod grpc;
pub mod http;
mod rest;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use tonic::transport::Endpoint;

use crate::client::ClientConfig;
use crate::client::session::Core;
use crate::core::request::Mode;
use crate::error::ClientError;

pub use grpc::call::{per_type_service, rest_path};

/// Default gRPC message limit for both directions: far above gRPC's 4 MiB so large
/// snapshots work (C16, S13).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

/// Where configuration comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Aggregated Discovery Service, State-of-the-World.
    Ads,
    /// Aggregated Discovery Service, Delta (incremental).
    AdsDelta,
    /// One State-of-the-World stream per type on the type's own service (CDS, EDS, ...).
    Grpc,
    /// One Delta stream per type on the type's own service.
    DeltaGrpc,
    /// REST-JSON polling (`POST /v3/discovery:<type>`), State-of-the-World.
    Rest,
    /// A DiscoveryResponse file, reloaded when it changes. No server, no ACK channel.
    File(PathBuf),
}

/// The kind of a [`Source`], without its data: what reports and output are labelled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceKind {
    Ads,
    AdsDelta,
    Grpc,
    DeltaGrpc,
    Rest,
    File,
}

/// The names `--source` accepts, in the order the README lists them.
pub const SOURCE_NAMES: &[&str] = &["ads", "ads-delta", "grpc", "delta-grpc", "rest", "file"];

impl SourceKind {
    pub fn mode(self) -> Mode {
        match self {
            Self::AdsDelta | Self::DeltaGrpc => Mode::Delta,
            Self::Ads | Self::Grpc | Self::Rest | Self::File => Mode::Sotw,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Ads => "ads",
            Self::AdsDelta => "ads-delta",
            Self::Grpc => "grpc",
            Self::DeltaGrpc => "delta-grpc",
            Self::Rest => "rest",
            Self::File => "file",
        }
    }

    /// Each type on its own stream rather than one aggregated stream.
    pub fn per_type_streams(self) -> bool {
        matches!(self, Self::Grpc | Self::DeltaGrpc)
    }

    /// Whether the server hears the verdict. A file has nobody to tell; everything else does
    /// (REST only through the version of the next poll).
    pub fn has_ack_channel(self) -> bool {
        self != Self::File
    }
}

impl Source {
    pub fn kind(&self) -> SourceKind {
        match self {
            Self::Ads => SourceKind::Ads,
            Self::AdsDelta => SourceKind::AdsDelta,
            Self::Grpc => SourceKind::Grpc,
            Self::DeltaGrpc => SourceKind::DeltaGrpc,
            Self::Rest => SourceKind::Rest,
            Self::File(_) => SourceKind::File,
        }
    }

    pub fn mode(&self) -> Mode {
        self.kind().mode()
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// A source by name; `file` needs its path, so it is built as [`Source::File`] instead.
    pub fn parse(name: &str) -> Result<Self, ClientError> {
        match name {
            "ads" => Ok(Self::Ads),
            "ads-delta" | "delta-ads" => Ok(Self::AdsDelta),
            "grpc" => Ok(Self::Grpc),
            "delta-grpc" | "grpc-delta" => Ok(Self::DeltaGrpc),
            "rest" => Ok(Self::Rest),
            "file" => Err(ClientError::Argument(
                "the file source needs a path: use --file PATH".into(),
            )),
            other => Err(ClientError::Argument(format!(
                "unknown config source {other:?} (expected one of {})",
                SOURCE_NAMES.join(", ")
            ))),
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

/// The transport a client runs on, chosen by its source.
pub(crate) enum Transport {
    Grpc(Box<grpc::GrpcTransport>),
    Rest(Box<rest::RestTransport>),
    File(Box<file::FileTransport>),
}

impl Transport {
    /// The factory: the only place a source is mapped to its implementation. Everything that
    /// can be checked before running (addresses, the watched directory) fails here.
    pub(crate) fn new(config: &ClientConfig) -> Result<Self, ClientError> {
        Ok(match &config.source {
            Source::Ads | Source::AdsDelta | Source::Grpc | Source::DeltaGrpc => {
                Self::Grpc(Box::new(grpc::GrpcTransport::new(config)?))
            }
            Source::Rest => Self::Rest(Box::new(rest::RestTransport::new(config)?)),
            Source::File(path) => Self::File(Box::new(file::FileTransport::new(path, config)?)),
        })
    }

    /// Runs until `shutdown` resolves or every handle is gone.
    pub(crate) async fn run(
        self,
        core: &mut Core,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) {
        match self {
            Self::Grpc(t) => t.run(core, shutdown).await,
            Self::Rest(t) => t.run(core, shutdown).await,
            Self::File(t) => t.run(core, shutdown).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_parses_except_file_which_needs_a_path() {
        for name in SOURCE_NAMES {
            match Source::parse(name) {
                Ok(source) => assert_eq!(source.name(), *name),
                Err(e) => {
                    assert_eq!(*name, "file");
                    assert!(e.to_string().contains("--file PATH"));
                }
            }
        }
        assert!(Source::parse("xds").is_err());
    }

    #[test]
    fn kinds_decide_mode_streams_and_ack_channel() {
        assert_eq!(Source::DeltaGrpc.mode(), Mode::Delta);
        assert_eq!(Source::Rest.mode(), Mode::Sotw);
        assert!(Source::Grpc.kind().per_type_streams());
        assert!(!Source::Ads.kind().per_type_streams());
        assert!(!Source::File("x".into()).kind().has_ack_channel());
        assert!(Source::Rest.kind().has_ack_channel());
    }
}
