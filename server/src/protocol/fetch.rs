//! Unary fetches (the gRPC `Fetch*` methods and REST-JSON polling): one `DiscoveryRequest`
//! in, one answer out, no state kept between requests.
//!
//! A fetch is the SotW state machine's answer to the first request of a fresh stream
//! ([`SotwStream`]): the same resources for the node, type and names, and the same
//! `version_info` a gRPC stream would send. There is no second protocol implementation here,
//! only the rule that a poller already at the current version gets no resources:
//!
//! - The xDS protocol asks REST long-pollers not to be sent a `DiscoveryResponse` unless the
//!   resources changed, and Envoy's REST fetcher treats HTTP 304 Not Modified as "nothing new"
//!   (`RestApiFetcher::onSuccess`). So a request whose `version_info` equals the type's current
//!   version is answered [`Fetched::NotModified`].
//! - Only when that version is a hash the server computed over the content: a fixture's
//!   explicit `version_info` can stay the same while the content changes, and a content change
//!   must never be silently dropped, so under an explicit version every fetch is answered in
//!   full (clients re-apply identical config, which Envoy does cheaply).
//! - A fetch never answers with an empty resource list to mean "unchanged": for LDS/CDS an
//!   empty SotW response means "delete everything".

use std::{collections::BTreeMap, sync::Arc};

use xdsloop_proto::discovery::{DiscoveryRequest, DiscoveryResponse};

use crate::{
    protocol::{machine::StreamMachine, now::Now, response::SotwResponse, sotw::SotwStream},
    snapshot::Snapshot,
    snapshot::TypeResources,
    snapshot::VersionKind,
};

/// Nonces of fetch responses are `0-1`: stream ids start at 1, so they never match a stream's.
/// REST-JSON makes the nonce optional (there is one request in flight at a time).
pub(crate) const FETCH_STREAM_ID: u64 = 0;

/// The answer to one fetch: the response decoded ([`fetch`]), or as a stream would send it
/// ([`fetch_wire`], for the fault stage).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fetched<R = DiscoveryResponse> {
    /// What a SotW stream would send for this request right now.
    Response(R),
    /// The client already holds `version` (REST: 304 Not Modified).
    NotModified { version: String },
}

#[cfg(test)]
/// Answers `request` for `type_url` from `snapshot`, at `now`. `type_url` overrides the
/// request's own (per-type services check it before calling).
pub(crate) fn fetch(
    snapshot: Arc<Snapshot>,
    type_url: &str,
    request: DiscoveryRequest,
    now: Now,
) -> Fetched {
    match fetch_wire(snapshot, type_url, request, now) {
        Fetched::Response(response) => Fetched::Response(response.to_message()),
        Fetched::NotModified { version } => Fetched::NotModified { version },
    }
}

/// [`fetch`], with the response as the SotW machine returns it (shared entries, manifest).
pub(crate) fn fetch_wire(
    snapshot: Arc<Snapshot>,
    type_url: &str,
    mut request: DiscoveryRequest,
    now: Now,
) -> Fetched<SotwResponse> {
    request.type_url = type_url.to_string();
    let node = request.node.as_ref().map(|n| n.id.as_str()).unwrap_or("");
    let (version, content_version) = match snapshot.get(node, type_url) {
        Some(current) => (current.version.clone(), is_content_version(current)),
        // A type without fixtures is served empty, at the empty set's hash version.
        None => (TypeResources::new(BTreeMap::new(), None).version, true),
    };
    if content_version && !request.version_info.is_empty() && request.version_info == version {
        return Fetched::NotModified { version };
    }
    let mut stream = SotwStream::new(FETCH_STREAM_ID, snapshot);
    let mut answers = stream.on_request(request.into(), now);
    Fetched::Response(
        answers
            .pop()
            .expect("the SotW machine answers the first request for a named type"),
    )
}

/// Whether the type's version is a hash the server computed over the content (alone, or
/// combined with several files' `version_info`s), so an equal version proves equal content; a
/// single explicit `version_info` proves nothing.
fn is_content_version(resources: &TypeResources) -> bool {
    resources.version_kind != VersionKind::Explicit
}

#[cfg(test)]
mod tests {
    use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

    use super::*;
    use crate::protocol::now::tests::now;
    use crate::test_support::{names, node, snapshot, type_resources};

    fn request(version: &str, resource_names: &[&str]) -> DiscoveryRequest {
        DiscoveryRequest {
            node: node("node-1"),
            version_info: version.to_string(),
            resource_names: names(resource_names),
            ..Default::default()
        }
    }

    fn response(fetched: Fetched) -> DiscoveryResponse {
        match fetched {
            Fetched::Response(r) => r,
            other => panic!("expected a response, got {other:?}"),
        }
    }

    #[test]
    fn a_fetch_is_answered_like_a_fresh_sotw_stream() {
        let current = snapshot(1, &[(CLUSTER, &[("a", "1"), ("b", "1")])]);
        let fetched = response(fetch(current.clone(), CLUSTER, request("", &[]), now()));
        let mut stream = SotwStream::new(9, current);
        let mut on_request = request("", &[]);
        on_request.type_url = CLUSTER.into();
        let streamed = stream.on_request_decoded(on_request, now()).remove(0);
        assert_eq!(fetched.version_info, streamed.version_info);
        assert_eq!(fetched.resources, streamed.resources);
        assert_eq!(fetched.type_url, CLUSTER);
        assert!(fetched.nonce.starts_with("0-"));
    }

    #[test]
    fn named_fetches_get_the_names_that_exist() {
        let current = snapshot(1, &[(ENDPOINT, &[("a", "1"), ("b", "1")])]);
        let fetched = response(fetch(
            current,
            ENDPOINT,
            request("", &["b", "ghost"]),
            now(),
        ));
        assert_eq!(fetched.resources.len(), 1);
        assert_eq!(fetched.resources[0].value, b"b@1");
    }

    #[test]
    fn the_current_version_is_not_modified_an_older_one_is_answered() {
        let current = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
        let version = current.base[CLUSTER].version.clone();
        assert_eq!(
            fetch(current.clone(), CLUSTER, request(&version, &[]), now()),
            Fetched::NotModified {
                version: version.clone()
            }
        );
        let older = response(fetch(current, CLUSTER, request("older", &[]), now()));
        assert_eq!(older.version_info, version);
        assert_eq!(older.resources.len(), 1);
    }

    #[test]
    fn an_explicit_version_is_always_answered_in_full() {
        let explicit = type_resources(CLUSTER, &[("a", "1")], Some("v7"));
        let current = Arc::new(Snapshot {
            generation: 1,
            base: [(CLUSTER.to_string(), explicit)].into(),
            overlays: BTreeMap::new(),
        });
        let answered = response(fetch(current, CLUSTER, request("v7", &[]), now()));
        assert_eq!(answered.version_info, "v7");
        assert_eq!(answered.resources.len(), 1);
    }

    #[test]
    fn a_type_without_fixtures_is_empty_and_then_not_modified() {
        let current = snapshot(1, &[(CLUSTER, &[("a", "1")])]);
        let empty = response(fetch(current.clone(), ENDPOINT, request("", &[]), now()));
        assert!(empty.resources.is_empty());
        let again = fetch(current, ENDPOINT, request(&empty.version_info, &[]), now());
        assert!(matches!(again, Fetched::NotModified { .. }));
    }
}
