//! Snapshot builders for the state machines' unit tests.

use std::{collections::BTreeMap, sync::Arc};

use bytes::Bytes;
use xdsloop_proto::{
    Resource,
    discovery::{DiscoveryRequest, Node, Status},
};

use crate::{snapshot::Snapshot, snapshot::TypeResources};

pub(crate) fn resource(type_url: &str, name: &str, version: &str) -> Arc<Resource> {
    Arc::new(Resource {
        type_url: type_url.to_string(),
        name: name.to_string(),
        bytes: Bytes::from(format!("{name}@{version}")),
        version: version.to_string(),
        ttl: None,
    })
}

/// One type's resources from `(name, version)` pairs.
pub(crate) fn type_resources(
    type_url: &str,
    resources: &[(&str, &str)],
    explicit_version: Option<&str>,
) -> Arc<TypeResources> {
    let map: BTreeMap<String, Arc<Resource>> = resources
        .iter()
        .map(|(n, v)| (n.to_string(), resource(type_url, n, v)))
        .collect();
    Arc::new(TypeResources::new(map, explicit_version.map(String::from)))
}

/// A snapshot with base resources only, by type.
pub(crate) fn snapshot(generation: u64, types: &[(&str, &[(&str, &str)])]) -> Arc<Snapshot> {
    Arc::new(Snapshot {
        generation,
        base: types
            .iter()
            .map(|(url, rs)| (url.to_string(), type_resources(url, rs, None)))
            .collect(),
        overlays: BTreeMap::new(),
    })
}

pub(crate) fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn node(id: &str) -> Option<Node> {
    Some(Node {
        id: id.to_string(),
        ..Default::default()
    })
}

/// A SotW request; `nonce`/`version` empty for an initial one.
pub(crate) fn sotw(
    type_url: &str,
    resource_names: &[&str],
    version: &str,
    nonce: &str,
) -> DiscoveryRequest {
    DiscoveryRequest {
        version_info: version.to_string(),
        node: node("node-1"),
        resource_names: names(resource_names),
        type_url: type_url.to_string(),
        response_nonce: nonce.to_string(),
        ..Default::default()
    }
}

pub(crate) fn error(message: &str) -> Option<Status> {
    Some(Status {
        code: 3,
        message: message.to_string(),
        details: vec![],
    })
}

/// A SotW request with every field a client sets, names in request order (one not ASCII).
pub(crate) fn full_request() -> DiscoveryRequest {
    DiscoveryRequest {
        version_info: "v1".into(),
        node: node("n"),
        resource_names: vec!["b".into(), "a".into(), "é".repeat(100)],
        type_url: "t".into(),
        response_nonce: "1-1".into(),
        ..Default::default()
    }
}

/// What a request decided, for a subscription that does not subscribe the wildcard.
pub(crate) fn exchange(
    verdict: crate::protocol::subscription::Verdict,
    first_for_type: bool,
    change: crate::protocol::subscription::Change,
) -> crate::protocol::subscription::Exchange {
    crate::protocol::subscription::Exchange {
        verdict,
        first_for_type,
        change,
        wildcard: false,
    }
}

/// A bus event at the epoch: `what` on `stream` at position `seq`, from `node` if known.
pub(crate) fn wire_event(
    stream: u64,
    seq: u32,
    node: Option<&str>,
    what: crate::tap::What,
) -> Arc<crate::tap::WireEvent> {
    Arc::new(crate::tap::WireEvent {
        at: std::time::SystemTime::UNIX_EPOCH,
        stream,
        seq,
        node: node.map(Arc::from),
        what,
    })
}

/// Stream `stream`'s close by its client, at position `seq`: the plainest event there is.
pub(crate) fn closed_event(stream: u64, seq: u32) -> Arc<crate::tap::WireEvent> {
    let closed = crate::tap::Closed {
        reason: crate::tap::CloseReason::Client,
        status: None,
    };
    wire_event(stream, seq, None, crate::tap::What::Closed(closed))
}
