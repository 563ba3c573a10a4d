//! The vocabulary every layer may use: what a client is configured with ([`ClientConfig`]),
//! where configuration comes from ([`Source`], [`SourceKind`]), which protocol flavour a
//! stream speaks ([`Variant`]), reconnect settings ([`BackoffConfig`]) and the default limits.
//! It depends on nothing else in the crate, so the protocol core and the transports can both
//! use it without knowing each other.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use xdsloop_proto::Codec;
use xdsloop_proto::discovery::{Node, RESOURCE_IN_SOTW, SUPPORTS_RESOURCE_TTL};

use crate::error::ClientError;

pub use xdsloop_proto::Variant;

/// Default gRPC message limit for both directions: far above gRPC's 4 MiB so large
/// snapshots work (C16, S13).
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

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
    /// ADS, State of the World.
    Ads,
    /// ADS, Delta.
    AdsDelta,
    /// One SotW stream per type.
    Grpc,
    /// One Delta stream per type.
    DeltaGrpc,
    /// REST-JSON polling.
    Rest,
    /// A watched DiscoveryResponse file.
    File,
}

/// The names `--source` accepts, in the order the README lists them.
pub(crate) const SOURCE_NAMES: &[&str] =
    &["ads", "ads-delta", "grpc", "delta-grpc", "rest", "file"];

impl SourceKind {
    /// SotW or Delta.
    pub fn variant(self) -> Variant {
        match self {
            Self::AdsDelta | Self::DeltaGrpc => Variant::Delta,
            Self::Ads | Self::Grpc | Self::Rest | Self::File => Variant::Sotw,
        }
    }

    /// The source's name on the command line and in reports (`ads`, `ads-delta`, ...).
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
    /// The kind of this source, without its data.
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

    /// SotW or Delta.
    pub fn variant(&self) -> Variant {
        self.kind().variant()
    }

    /// The source's name on the command line and in reports (`ads`, `ads-delta`, ...).
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

/// TLS toward the server: the CA its certificate must chain to, a client certificate for
/// mTLS, and the name to check (default: the host of the server address). PEM bytes, read by
/// [`crate::transport::tls::load`]; files are read once, when the client starts.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientTls {
    /// The CA certificates that verify the server, PEM.
    pub ca_pem: Vec<u8>,
    /// Where the CA came from, to name it in errors.
    pub ca_file: String,
    /// The client's certificate and key, for mTLS.
    pub identity: Option<TlsIdentity>,
    /// The name to verify the server's certificate against; `None`: the address's host.
    pub server_name: Option<String>,
}

/// A client certificate and its private key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsIdentity {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

/// The key never shows in a debug print.
impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("cert_pem_bytes", &self.cert_pem.len())
            .finish_non_exhaustive()
    }
}

/// The key never shows in a debug print.
impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("ca_file", &self.ca_file)
            .field("client_certificate", &self.identity.is_some())
            .field("server_name", &self.server_name)
            .finish()
    }
}

/// Envoy's and gRPC's default initial fetch timeout.
pub(crate) const DEFAULT_NOT_FOUND_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a subscription's callbacks may take to decide an update.
pub(crate) const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(10);

/// The client's own check of each resource: `(type_url, name, bytes)`, `Err(reason)` rejects the
/// whole response (NACK). One for every type, set at start; [`crate::SubscriptionCallbacks`] decide
/// per subscription and per update.
pub type Validator = Arc<dyn Fn(&str, &str, &[u8]) -> Result<(), String> + Send + Sync>;

/// A validator is code: a debug print says only whether there is one.
pub(crate) fn validator_shown(validator: &Option<Validator>) -> &'static str {
    match validator {
        Some(_) => "Some(<fn>)",
        None => "None",
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("server", &self.server)
            .field("tls", &self.tls)
            .field("node", &self.node)
            .field("source", &self.source)
            .field("type_sources", &self.type_sources)
            .field("refresh_delay", &self.refresh_delay)
            .field("request_timeout", &self.request_timeout)
            .field("follow_deps", &self.follow_deps)
            .field("validator", &validator_shown(&self.validator))
            .field("callback_timeout", &self.callback_timeout)
            .field("not_found_timeout", &self.not_found_timeout)
            .field("backoff", &self.backoff)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("codec", &self.codec)
            .field("received_reports", &self.received_reports)
            .finish()
    }
}

/// Whether the client reports every response it receives ([`crate::Report::Received`]), for
/// observers that narrate or record the loop. Off by default: it costs decoding each
/// resource's name once more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReceivedReports {
    /// No [`crate::Report::Received`].
    #[default]
    Off,
    /// Names and per-resource versions.
    Names,
    /// Names, versions and each resource itself.
    Bodies,
}

/// Reconnect backoff settings. Defaults follow Envoy: 500 ms doubling up to 30 s, ±20% jitter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    /// Each delay is the last one times this (before jitter).
    pub multiplier: f64,
    /// Fraction of the delay randomised either way, so many clients don't reconnect in step.
    pub jitter: f64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: 0.2,
        }
    }
}

/// Everything a client needs to know.
#[derive(Clone)]
pub struct ClientConfig {
    /// `host:port`, or an `http://` (`https://` with [`ClientConfig::tls`]) URI: the gRPC
    /// server, or the REST server for [`Source::Rest`]. Unused for [`Source::File`].
    pub server: String,
    /// TLS (and mTLS) toward the server; `None`: plaintext.
    pub tls: Option<ClientTls>,
    /// The node this client is (Envoy's `Node`): sent on the first request of every stream.
    pub node: Node,
    /// The config source: ADS, per-type gRPC, REST, a file (Envoy's `ConfigSource`).
    pub source: Source,
    /// Types that come from another config source than [`ClientConfig::source`] (Envoy gives
    /// each its own `ConfigSource`: `cds_config` over ADS, a cluster's `eds_config` over REST,
    /// ...). Keys are type URLs or their aliases (`eds`). Each distinct source runs as a session
    /// of its own under the one [`crate::Client`]: its own stream or polls, its own ACKs, one
    /// store and one report stream for all. Dependency following (`follow_deps`) stays within
    /// a source: a type whose dependent type comes from another source does not follow it, and
    /// only that pair stops (EDS over REST: CDS no longer drives EDS, LDS still drives RDS).
    pub type_sources: BTreeMap<String, Source>,
    /// REST: time between polls of a type (Envoy's `refresh_delay`).
    pub refresh_delay: Duration,
    /// REST: how long one poll may take (Envoy's `request_timeout`, default 1 s).
    pub request_timeout: Duration,
    /// Follow LDS → RDS and CDS → EDS references (C12).
    pub follow_deps: bool,
    /// The client's own per-resource check, run before anything else (see [`Validator`]).
    pub validator: Option<Validator>,
    /// How long the client waits for a subscription's callbacks to decide an update
    /// ([`crate::SubscriptionCallbacks`]). Envoy calls `onConfigUpdate` synchronously and
    /// waits as long as it takes; here callbacks run on a task of their own, and no answer
    /// in time rejects the update (NACK): it was not applied.
    pub callback_timeout: Duration,
    /// How long a requested name may go unanswered before it is reported missing (Envoy's
    /// `initial_fetch_timeout`; C14).
    pub not_found_timeout: Duration,
    /// The reconnect backoff.
    pub backoff: BackoffConfig,
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// gRPC message limit, both directions (C16).
    pub max_message_bytes: usize,
    /// How resources are decoded and named (Envoy's types by default).
    pub codec: Codec,
    /// Report every response received (see [`ReceivedReports`]).
    pub received_reports: ReceivedReports,
}

impl ClientConfig {
    /// A client of `server` (`host:port` or a URI) as node `node_id`, over ADS (SotW), with the
    /// defaults.
    pub fn new(server: impl Into<String>, node_id: impl Into<String>) -> Self {
        let node = Node {
            id: node_id.into(),
            user_agent_name: "xdsloop-client".into(),
            // C17: TTL'd resources are unwrapped in SotW, expire, and heartbeats refresh them.
            client_features: vec![SUPPORTS_RESOURCE_TTL.into(), RESOURCE_IN_SOTW.into()],
            ..Default::default()
        };
        Self {
            server: server.into(),
            tls: None,
            node,
            source: Source::Ads,
            type_sources: BTreeMap::new(),
            refresh_delay: Duration::from_secs(1),
            request_timeout: Duration::from_secs(1),
            follow_deps: false,
            validator: None,
            callback_timeout: DEFAULT_CALLBACK_TIMEOUT,
            not_found_timeout: DEFAULT_NOT_FOUND_TIMEOUT,
            backoff: BackoffConfig::default(),
            connect_timeout: Duration::from_secs(5),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            codec: Codec::envoy(),
            received_reports: ReceivedReports::Off,
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
        assert_eq!(Source::DeltaGrpc.variant(), Variant::Delta);
        assert_eq!(Source::Rest.variant(), Variant::Sotw);
        assert!(Source::Grpc.kind().per_type_streams());
        assert!(!Source::Ads.kind().per_type_streams());
        assert!(!Source::File("x".into()).kind().has_ack_channel());
        assert!(Source::Rest.kind().has_ack_channel());
    }
}
