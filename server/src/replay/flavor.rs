//! What differs between replaying a SotW and a Delta stream: how a request names what it
//! wants, and how a recorded response is encoded again.

use std::sync::Arc;

use xdsloop_proto::discovery::{DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryResponse};
use xdsloop_transcript::line::RequestBody;

use crate::{
    protocol::{
        facts::{TapRequest, TapResponse},
        request::SotwRequest,
        response::{DeltaResponse, Manifest, Outbound, SotwResponse},
        wire::WireResponse,
    },
    replay::script::RecordedResponse,
    snapshot::entries::{delta_entry, sotw_entry},
};

/// SotW or Delta, for [`super::ReplayStream`].
pub(crate) trait Flavor: Send + 'static {
    type Request: TapRequest + Send + 'static;
    type Response: TapResponse + WireResponse + Send + 'static;
    /// The node id the request names, if it carries a node.
    fn node(request: &Self::Request) -> Option<&str>;
    /// What the request asks for, in the recording's terms.
    fn body(request: &Self::Request) -> RequestBody;
    /// The recorded response, encoded again (its nonce and versions as recorded).
    fn response(recorded: &RecordedResponse) -> Self::Response;
}

/// State of the World.
#[derive(Debug)]
pub(crate) struct Sotw;

/// Delta (incremental).
#[derive(Debug)]
pub(crate) struct Delta;

impl Flavor for Sotw {
    type Request = SotwRequest;
    type Response = SotwResponse;

    fn node(request: &SotwRequest) -> Option<&str> {
        request.head.node.as_ref().map(|n| n.id.as_str())
    }

    fn body(request: &SotwRequest) -> RequestBody {
        RequestBody::Sotw {
            version: request.head.version_info.clone(),
            names: request
                .names()
                .into_iter()
                .map(|n| n.into_owned())
                .collect(),
        }
    }

    fn response(recorded: &RecordedResponse) -> SotwResponse {
        let url = &recorded.type_url;
        Outbound {
            head: DiscoveryResponse {
                version_info: recorded.version.clone(),
                type_url: url.clone(),
                nonce: recorded.nonce.clone(),
                ..Default::default()
            },
            entries: recorded
                .resources
                .iter()
                .map(|r| sotw_entry(url, r))
                .collect(),
            manifest: Manifest::Replayed(Arc::clone(&recorded.resources)),
        }
    }
}

impl Flavor for Delta {
    type Request = DeltaDiscoveryRequest;
    type Response = DeltaResponse;

    fn node(request: &DeltaDiscoveryRequest) -> Option<&str> {
        request.node.as_ref().map(|n| n.id.as_str())
    }

    fn body(request: &DeltaDiscoveryRequest) -> RequestBody {
        RequestBody::Delta {
            subscribe: request.resource_names_subscribe.clone(),
            unsubscribe: request.resource_names_unsubscribe.clone(),
            initial_resource_versions: (request.initial_resource_versions.iter())
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect(),
        }
    }

    fn response(recorded: &RecordedResponse) -> DeltaResponse {
        let url = &recorded.type_url;
        Outbound {
            head: DeltaDiscoveryResponse {
                system_version_info: recorded.version.clone(),
                type_url: url.clone(),
                nonce: recorded.nonce.clone(),
                removed_resources: recorded.removed.clone().unwrap_or_default(),
                ..Default::default()
            },
            entries: recorded
                .resources
                .iter()
                .map(|r| delta_entry(url, r))
                .collect(),
            manifest: Manifest::Replayed(Arc::clone(&recorded.resources)),
        }
    }
}
