//! Unary answers (gRPC `Fetch*`, REST-JSON polls) against the newest snapshot, logged. What
//! the answer is, is [`crate::protocol::fetch`]'s decision.

use std::sync::Arc;

use tokio::sync::watch;
use tracing::info;
use xdsloop_proto::{discovery::DiscoveryRequest, type_url};

use crate::{
    Snapshot,
    protocol::fetch::{Fetched, fetch},
};

/// Fetches against the newest snapshot. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Fetcher {
    snapshots: watch::Receiver<Arc<Snapshot>>,
}

impl Fetcher {
    pub fn new(snapshots: watch::Receiver<Arc<Snapshot>>) -> Self {
        Self { snapshots }
    }

    /// Answers one fetch; `via` names the transport in the log (`grpc`, `rest`).
    pub fn fetch(&self, via: &str, type_url: &str, request: DiscoveryRequest) -> Fetched {
        let snapshot = self.snapshots.borrow().clone();
        let node = request
            .node
            .as_ref()
            .map(|n| n.id.clone())
            .unwrap_or_default();
        let held = request.version_info.clone();
        let fetched = fetch(snapshot, type_url, request);
        let short = type_url::short_name(type_url);
        match &fetched {
            Fetched::NotModified { version } => {
                info!(via, %node, r#type = %short, %version, "fetch: not modified");
            }
            Fetched::Response(r) => {
                info!(via, %node, r#type = %short, %held, version = %r.version_info,
                    resources = r.resources.len(), "fetch: answered");
            }
        }
        fetched
    }
}
