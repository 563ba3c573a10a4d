//! Unary answers (gRPC `Fetch*`, REST-JSON polls) against the newest snapshot, logged. What
//! the answer is, is [`crate::protocol::fetch`]'s decision.

use std::sync::Arc;

use tokio::sync::watch;
use tracing::info;
use xdsloop_proto::{discovery::DiscoveryRequest, type_url};

use crate::{
    protocol::{
        fetch::{Fetched, fetch_wire},
        response::SotwResponse,
    },
    snapshot::Snapshot,
};

/// Fetches against the newest snapshot. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    snapshots: watch::Receiver<Arc<Snapshot>>,
}

impl Fetcher {
    pub(crate) fn new(snapshots: watch::Receiver<Arc<Snapshot>>) -> Self {
        Self { snapshots }
    }

    /// Answers one fetch; `via` names the transport in the log (`grpc`, `rest`).
    pub(crate) fn fetch(&self, via: &str, type_url: &str, request: DiscoveryRequest) -> Fetched {
        match self.fetch_wire(via, type_url, request) {
            Fetched::Response(response) => Fetched::Response(response.to_message()),
            Fetched::NotModified { version } => Fetched::NotModified { version },
        }
    }

    /// [`Self::fetch`], with the response as a stream would send it (for the fault stage).
    pub(crate) fn fetch_wire(
        &self,
        via: &str,
        type_url: &str,
        request: DiscoveryRequest,
    ) -> Fetched<SotwResponse> {
        let snapshot = self.snapshots.borrow().clone();
        let node = request
            .node
            .as_ref()
            .map(|n| n.id.clone())
            .unwrap_or_default();
        let held = request.version_info.clone();
        let fetched = fetch_wire(snapshot, type_url, request, crate::transport::stream::now());
        let short = type_url::short_name(type_url);
        match &fetched {
            Fetched::NotModified { version } => {
                info!(via, %node, r#type = %short, %version, "fetch: not modified");
            }
            Fetched::Response(r) => {
                info!(via, %node, r#type = %short, %held, version = %r.head.version_info,
                    resources = r.manifest.resources().len(), "fetch: answered");
            }
        }
        fetched
    }
}
