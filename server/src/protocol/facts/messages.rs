//! The facts of each message kind: SotW and Delta requests as they arrived, responses as the
//! machines built them (names and versions from the response's manifest, not decoded again).

use prost::Message;
use xdsloop_proto::discovery::DeltaDiscoveryRequest;

use super::{
    Capture, ErrorFacts, Listed, Names, RequestFacts, RequestView, ResponseFacts, TapRequest,
    TapResponse, TypeName,
};
use crate::protocol::{
    kind::Variant,
    request::SotwRequest,
    response::{DeltaResponse, Outbound, SotwResponse},
    subscription::{Change, Verdict},
};

fn text(s: &str) -> Box<str> {
    Box::from(s)
}

/// The request's own facts, before the machine judged it.
fn request(view: RequestView<'_>, names: Names) -> RequestFacts {
    RequestFacts {
        type_url: TypeName::of(view.type_url),
        verdict: Verdict::Ignored,
        first_for_type: false,
        change: Change::None,
        wildcard: false,
        earlier_had_type: false,
        version: text(view.version),
        nonce: text(view.nonce),
        error: view.error.map(|(code, message)| ErrorFacts {
            code,
            message: text(message),
        }),
        has_node: view.has_node,
        names,
    }
}

impl TapRequest for SotwRequest {
    fn view(&self) -> RequestView<'_> {
        let head = &self.head;
        RequestView {
            type_url: &head.type_url,
            version: &head.version_info,
            nonce: &head.response_nonce,
            initial_versions: None,
            has_node: head.node.is_some(),
            node_id: head.node.as_ref().map(|n| n.id.as_str()),
            error: head
                .error_detail
                .as_ref()
                .map(|e| (e.code, e.message.as_str())),
        }
    }

    fn facts(&self, capture: Capture) -> RequestFacts {
        let names = self.names().into_iter().map(|n| text(&n));
        request(self.view(), Names::Sotw(Listed::capture(names, capture)))
    }
}

impl TapRequest for DeltaDiscoveryRequest {
    fn view(&self) -> RequestView<'_> {
        RequestView {
            type_url: &self.type_url,
            version: "",
            nonce: &self.response_nonce,
            initial_versions: Some(&self.initial_resource_versions),
            has_node: self.node.is_some(),
            node_id: self.node.as_ref().map(|n| n.id.as_str()),
            error: self
                .error_detail
                .as_ref()
                .map(|e| (e.code, e.message.as_str())),
        }
    }

    fn facts(&self, capture: Capture) -> RequestFacts {
        let list = |names: &[String]| Listed::capture(names.iter().map(|n| text(n)), capture);
        let declared = self.initial_resource_versions.iter();
        let names = Names::Delta {
            subscribe: list(&self.resource_names_subscribe),
            unsubscribe: list(&self.resource_names_unsubscribe),
            initial_versions: Listed::capture(declared.map(|(n, v)| (text(n), text(v))), capture),
        };
        request(self.view(), names)
    }
}

/// What both flavours of response share.
fn response<M: Message + Default>(
    out: &Outbound<M>,
    capture: Capture,
    head: (&str, &str, &str),
    variant: Variant,
    removed: &[String],
) -> ResponseFacts {
    let (type_url, version, nonce) = head;
    let resources = out.manifest.resources().iter();
    let resources = resources.map(|r| (text(&r.name), text(&r.version)));
    ResponseFacts {
        type_url: TypeName::of(type_url),
        variant,
        version: text(version),
        nonce: text(nonce),
        resources: Listed::capture(resources, capture),
        removed: Listed::capture(removed.iter().map(|n| text(n)), capture),
        bytes: out.encoded_len(),
        fault: None,
        bodies: (capture == Capture::Bodies)
            .then(|| out.manifest.shared())
            .flatten(),
        heartbeat: out.manifest.is_heartbeat(),
    }
}

impl TapResponse for SotwResponse {
    fn type_url(&self) -> &str {
        &self.head.type_url
    }

    fn nonce(&self) -> &str {
        &self.head.nonce
    }

    fn facts(&self, capture: Capture) -> ResponseFacts {
        let h = &self.head;
        let head = (
            h.type_url.as_str(),
            h.version_info.as_str(),
            h.nonce.as_str(),
        );
        response(self, capture, head, Variant::Sotw, &[])
    }
}

impl TapResponse for DeltaResponse {
    fn type_url(&self) -> &str {
        &self.head.type_url
    }

    fn nonce(&self) -> &str {
        &self.head.nonce
    }

    fn facts(&self, capture: Capture) -> ResponseFacts {
        let h = &self.head;
        let head = (
            h.type_url.as_str(),
            h.system_version_info.as_str(),
            h.nonce.as_str(),
        );
        response(self, capture, head, Variant::Delta, &h.removed_resources)
    }
}
