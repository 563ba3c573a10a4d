//! I/O: the config sources (Envoy's `ConfigSource`) and the one place that maps a source to the
//! transport implementing it ([`Transport::new`], Envoy's `SubscriptionFactoryImpl`). Every
//! transport drives the same mux through the [`hub`], so subscriptions, events, reports and the
//! store look the same whatever the source:
//! - `grpc`: `ads` / `ads-delta` (one stream for every type) and `grpc` / `delta-grpc` (one
//!   stream per type, Envoy's non-aggregated `GrpcMuxImpl`), reconnecting with [`backoff`];
//! - `rest`: `rest`, polling `POST /v3/discovery:<type>` with JSON ([`http`]);
//! - `file`: `file`, a watched DiscoveryResponse file (`path_config_source`).

pub(crate) mod backoff;
mod file;
mod grpc;
pub(crate) mod http;
pub(crate) mod hub;
mod rest;
pub(crate) mod tls;

use std::future::Future;
use std::time::Duration;

use tonic::transport::Endpoint;

use crate::config::{ClientConfig, ClientTls, Source, SourceKind};
use crate::error::ClientError;
use crate::transport::hub::Hub;

/// The gRPC endpoint for a server address (`host:port`, or a full `http://` or `https://`
/// URI), over TLS with `tls`.
pub(crate) fn endpoint(
    server: &str,
    connect_timeout: Duration,
    tls: Option<&ClientTls>,
) -> Result<Endpoint, ClientError> {
    let uri = uri(server, tls.is_some())?;
    let endpoint = Endpoint::from_shared(uri).map_err(|e| ClientError::Address {
        address: server.to_string(),
        message: e.to_string(),
    })?;
    let endpoint = match tls {
        None => endpoint,
        Some(tls) => endpoint
            .tls_config(tls::grpc_config(tls))
            .map_err(|e| ClientError::tls_because("the TLS settings", e))?,
    };
    Ok(endpoint
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        // Notices a dead server on an idle stream instead of waiting forever.
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10)))
}

/// The URI for `server`: `https://` with TLS, `http://` without. tonic applies a TLS
/// configuration only to `https://` URIs and would silently connect an `http://` one in
/// plaintext, so that combination is refused, as is `https://` without TLS.
pub(crate) fn uri(server: &str, tls: bool) -> Result<String, ClientError> {
    let scheme = server.split_once("://").map(|(scheme, _)| scheme);
    let wrong = |message: &str| ClientError::Address {
        address: server.to_string(),
        message: message.to_string(),
    };
    match (scheme, tls) {
        (None, false) => Ok(format!("http://{server}")),
        (None, true) => Ok(format!("https://{server}")),
        (Some("http"), false) | (Some("https"), true) => Ok(server.to_string()),
        (Some("http"), true) => Err(wrong(
            "http:// is plaintext but TLS flags were given: use https://HOST:PORT or HOST:PORT",
        )),
        (Some("https"), false) => Err(wrong("https:// needs --tls-ca FILE (the server's CA)")),
        (Some(_), _) => Err(wrong("expected HOST:PORT, http:// or https://")),
    }
}

/// The transport a client runs on, chosen by its source: what Envoy's
/// `SubscriptionFactoryImpl::subscriptionFromConfigSource` makes of a `ConfigSource`.
/// [`Transport::new`] is the factory; [`Client::start_on`](crate::Client::start_on) runs a
/// client on the transport it made ([`Client::start`](crate::Client::start) does both).
pub struct Transport {
    kind: SourceKind,
    inner: Inner,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

enum Inner {
    Grpc(Box<grpc::GrpcTransport>),
    Rest(Box<rest::RestTransport>),
    File(Box<file::FileTransport>),
}

impl Transport {
    /// The factory: the only place a source is mapped to its implementation (gRPC streams for
    /// `ads`, `ads-delta`, `grpc`, `delta-grpc`; REST polling; a watched file). Everything that
    /// can be checked before running (addresses, the watched directory) fails here.
    pub fn new(config: &ClientConfig) -> Result<Self, ClientError> {
        let inner = match &config.source {
            Source::Ads | Source::AdsDelta | Source::Grpc | Source::DeltaGrpc => {
                Inner::Grpc(Box::new(grpc::GrpcTransport::new(config)?))
            }
            Source::Rest => Inner::Rest(Box::new(rest::RestTransport::new(config)?)),
            Source::File(path) => Inner::File(Box::new(file::FileTransport::new(path, config)?)),
        };
        Ok(Self {
            kind: config.source.kind(),
            inner,
        })
    }

    /// The kind of source this transport serves (and so SotW or Delta).
    pub fn kind(&self) -> SourceKind {
        self.kind
    }

    /// Runs until `shutdown` resolves or every handle is gone.
    pub(crate) async fn run(
        self,
        hub: &mut Hub,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) {
        match self.inner {
            Inner::Grpc(t) => t.run(hub, shutdown).await,
            Inner::Rest(t) => t.run(hub, shutdown).await,
            Inner::File(t) => t.run(hub, shutdown).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_http_scheme_with_tls_flags_is_an_error() {
        assert_eq!(uri("h:1", false).unwrap(), "http://h:1");
        assert_eq!(uri("h:1", true).unwrap(), "https://h:1");
        assert_eq!(uri("https://h:1", true).unwrap(), "https://h:1");
        let plain = uri("http://h:1", true).unwrap_err().to_string();
        assert!(
            plain.contains("http:// is plaintext but TLS flags were given"),
            "{plain}"
        );
        let missing = uri("https://h:1", false).unwrap_err().to_string();
        assert!(missing.contains("needs --tls-ca"), "{missing}");
        assert!(uri("ftp://h:1", false).is_err());
    }
}
