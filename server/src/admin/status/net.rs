//! The `tls` and `limits` parts of the status document: how the xDS port is protected and
//! what it holds back, read from the listener ([`Listening`]).

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::rfc3339;
use crate::net::{Listening, identity::PeerIdentity, rotation::TlsView};

/// TLS on the xDS port (`/status` `tls`; absent without TLS).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsStatusView {
    /// `required` (mTLS: `--tls-client-ca`) or `off`.
    pub client_auth: String,
    /// The certificate being served.
    pub cert: CertView,
    /// Why the latest reading of the TLS files failed (the previous certificate is still
    /// served); `null` after a good one.
    pub reload_error: Option<String>,
    /// Certificates loaded since start-up, the first included.
    pub loads: u64,
    /// The last 32 refused handshakes, most recent first.
    pub handshake_failures: Vec<HandshakeFailureView>,
}

/// A served certificate and where it was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertView {
    /// `--tls-cert`.
    pub file: String,
    /// `--tls-key`.
    pub key_file: String,
    /// `--tls-client-ca`, with mTLS.
    pub client_ca_file: Option<String>,
    /// The served certificate's names and serial.
    #[serde(flatten)]
    pub identity: PeerIdentity,
    /// When it was read.
    #[serde(with = "rfc3339")]
    pub loaded_at: SystemTime,
}

/// A TLS handshake the server refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandshakeFailureView {
    /// The client's address.
    pub peer: String,
    /// When.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    /// Why, in words (an untrusted client certificate, no certificate, ...).
    pub reason: String,
}

/// The limits in force on the xDS port and how close the server is to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsView {
    /// `--max-request-bytes`.
    pub max_request_bytes: usize,
    /// `--max-streams-per-connection`.
    pub max_streams_per_connection: u32,
    /// `--max-connections`.
    pub max_connections: usize,
    /// Connections open now.
    pub open_connections: usize,
    /// Connections closed on arrival because `max_connections` were open.
    pub refused_connections: u64,
}

pub(crate) fn limits(listening: &Listening) -> LimitsView {
    let limits = listening.limits;
    LimitsView {
        max_request_bytes: limits.max_request_bytes,
        max_streams_per_connection: limits.max_streams_per_connection,
        max_connections: limits.max_connections,
        open_connections: listening.stats.open_connections(),
        refused_connections: listening.stats.refused_connections(),
    }
}

/// `None` for a plaintext listener.
pub(crate) fn tls(listening: &Listening) -> Option<TlsStatusView> {
    let view: TlsView = listening.tls.as_ref()?.borrow().clone();
    let display = |p: &std::path::Path| p.display().to_string();
    let failures = listening.stats.handshake_failures().into_iter();
    Some(TlsStatusView {
        client_auth: if view.loaded.client_auth {
            "required"
        } else {
            "off"
        }
        .to_string(),
        cert: CertView {
            file: display(&view.files.cert),
            key_file: display(&view.files.key),
            client_ca_file: view.files.client_ca.as_deref().map(display),
            identity: view.loaded.cert.clone(),
            loaded_at: view.loaded.loaded_at,
        },
        reload_error: view.reload_error,
        loads: view.loads,
        handshake_failures: failures
            .map(|f| HandshakeFailureView {
                peer: f.peer.to_string(),
                at: f.at,
                reason: f.reason,
            })
            .collect(),
    })
}
