//! I/O: the connections themselves, below any HTTP: accepting them ([`incoming`]), TLS and
//! mTLS with certificate rotation ([`tls`], [`rotation`]), who the peer is ([`identity`],
//! [`conn::PeerInfo`]), what one connection may cost ([`Limits`], [`conn::RequestBudget`]),
//! refusals in plain words ([`refusal`]), closing every connection at shutdown ([`close`]) and
//! the listener's outages on purpose ([`outage`]).
//!
//! Both listeners (the xDS port and a separate admin listener) accept through here, so the
//! admin access rule and `/status` see the same [`conn::PeerInfo`] for every request.

pub(crate) mod close;
pub(crate) mod conn;
pub(crate) mod identity;
pub(crate) mod incoming;
pub(crate) mod outage;
pub(crate) mod refusal;
pub(crate) mod rotation;
pub(crate) mod tls;

use tokio::sync::watch;

use self::{refusal::NetStats, rotation::TlsView};

/// gRPC's usual request limit; an xDS request is a node and a list of names.
pub(crate) const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// Above what the fleet puts on one connection (N = 32,000 nodes on 8 connections).
pub(crate) const DEFAULT_MAX_STREAMS_PER_CONNECTION: u32 = 4096;
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// What one client may cost (docs/security.md adds it up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request message (gRPC, REST body); separate from the response limit.
    pub max_request_bytes: usize,
    /// HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`.
    pub max_streams_per_connection: u32,
    /// Connections open at once; more are closed as they arrive.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_streams_per_connection: DEFAULT_MAX_STREAMS_PER_CONNECTION,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl Limits {
    /// The unfinished-request bytes one connection's streams share: two whole requests, so
    /// one stream's large request never starves another stream's.
    pub(crate) fn budget_bytes(&self) -> usize {
        self.max_request_bytes.saturating_mul(2)
    }
}

/// What `/status` shows about a listener: limits, counters, TLS. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Listening {
    pub limits: Limits,
    pub stats: NetStats,
    pub tls: Option<watch::Receiver<TlsView>>,
}
