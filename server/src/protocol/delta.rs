//! The Delta (incremental) stream state machine (sans-I/O): `DeltaDiscoveryRequest`s and
//! snapshots in, `DeltaDiscoveryResponse`s out.
//!
//! Per type, the stream remembers what its client holds (`known`: name → version, or "told
//! it is absent"; stored as a shared base plus per-stream differences, see `known`). Every
//! decision compares the snapshot against that:
//! - S8: only resources whose version differs from what the client holds are sent, each as
//!   `Resource{name, version, resource}`; held resources that disappeared and subscribed names
//!   that don't exist go in `removed_resources`, each reported once.
//! - S9: the first request's `initial_resource_versions` seed `known`, so resources a wildcard
//!   covers are skipped after a reconnect when unchanged; names in `resource_names_subscribe`
//!   are always answered (sent at the current version, or reported removed), even when the
//!   request declares them held at that version (S9: named resources are still sent). A
//!   client that names a resource wants it confirmed, not assumed.
//! - S10: an unsubscribed name is forgotten and no longer pushed. If a wildcard still covers
//!   it, it is sent again (the client dropped it; the wildcard says it wants it).
//! - S4: interest changes are honoured even with a stale nonce; only the ACK/NACK is ignored.
//! - S3: a NACKed response stays "held" in `known`, so it is not resent until the content
//!   changes; the client keeps its last good copy meanwhile.
//! - Legacy wildcard: a first request that subscribes nothing is a wildcard (same as `*`).
//! - The first request for a type is always answered, even with an empty response, so the
//!   client knows the server has seen its subscription.
//! - S18: requested `xdstp://` names are normalised (context parameters sorted) first.
//! - S14-S16: entries carry their TTL; heartbeats keep TTL'd resources alive
//!   (`heartbeat`); a TTL'd resource that leaves the fixtures is not put in
//!   `removed_resources`: its heartbeats stop and the client lets it expire.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use tracing::{info, warn};
use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DeltaDiscoveryResponse},
    type_url,
};

use crate::{
    Snapshot, TypeResources,
    protocol::mask::Masks,
    protocol::nonce::NonceSource,
    protocol::ordering::{Planned, make_before_break},
    protocol::request::normalize_delta,
    protocol::response::{DeltaResponse, Manifest},
    protocol::sotw::control_plane,
    protocol::subscription::TypeStatus,
    protocol::subscription::{Change, Exchange, Interest, Subscription, Verdict, WILDCARD},
    protocol::ttl::{Features, Heartbeats},
};

use self::known::Known;
use self::reconcile::{Changes, reconcile};

mod hooks;

#[derive(Debug, Default)]
struct TypeState {
    sub: Subscription,
    /// What the client holds: `Some(version)`, or `None` = told it does not exist. Names the
    /// client knows nothing about are absent.
    known: Known,
    /// The type's content hash at the last reconciliation: unchanged content needs no work.
    seen_hash: Option<u64>,
    /// Held names that were sent with a TTL (S16: they expire rather than being removed).
    ttl_names: BTreeSet<String>,
    /// S15: when this type is owed a heartbeat.
    heartbeats: Heartbeats,
}

impl TypeState {
    /// Hash of what the client holds, by the formula of `TypeResources::content_hash`, so
    /// `/status` can compare it with the current snapshot. `None` before the first response.
    fn held_hash(&self) -> Option<u64> {
        self.sub.ledger.last_sent.as_ref()?;
        Some(self.known.held_hash())
    }
}

/// One Delta stream (ADS or a per-type service).
#[derive(Debug)]
pub struct DeltaStream {
    id: u64,
    nonces: NonceSource,
    node: Option<String>,
    /// What the client can take (S15), from the node on its first request.
    features: Features,
    snapshot: Arc<Snapshot>,
    types: BTreeMap<String, TypeState>,
    changed: BTreeSet<String>,
    empty: Arc<TypeResources>,
    /// What the last request did.
    exchange: Exchange,
    /// Names a fault hides for a while (`flap`).
    masks: Masks,
}

impl DeltaStream {
    pub fn new(id: u64, snapshot: Arc<Snapshot>) -> Self {
        Self {
            id,
            nonces: NonceSource::new(id),
            node: None,
            features: Features::default(),
            snapshot,
            types: BTreeMap::new(),
            changed: BTreeSet::new(),
            empty: Arc::new(TypeResources::new(BTreeMap::new(), None)),
            exchange: Exchange::default(),
            masks: Masks::default(),
        }
    }

    /// Handles one client request; returns the responses to send, with shared resource entries.
    pub fn on_request(&mut self, mut request: DeltaDiscoveryRequest) -> Vec<DeltaResponse> {
        normalize_delta(&mut request);
        let node = self.node_from(&request);
        let url = request.type_url.clone();
        let (stream, short) = (self.id, type_url::short_name(&url));
        self.exchange = Exchange::default();
        if url.is_empty() {
            warn!(stream, %node, "request without type_url ignored");
            return Vec::new();
        }
        let resources = self.resources(&node, &url);
        let first = !self.types.contains_key(&url);
        let state = self.types.entry(url.clone()).or_default();
        let verdict = acknowledge(stream, &node, &url, state, &request);
        let subscribe = &request.resource_names_subscribe;
        let unsubscribe = &request.resource_names_unsubscribe;
        let before = state.sub.interest.clone();
        state
            .sub
            .interest
            .apply_delta(first, subscribe, unsubscribe);
        let interest = &state.sub.interest;
        self.exchange = Exchange {
            verdict,
            first_for_type: first,
            change: change(&before, interest, subscribe),
        };
        for name in unsubscribe {
            if name == WILDCARD {
                state.known.retain(|n| interest.names_contain(n));
            } else {
                state.known.remove(name);
            }
        }
        let declared = &request.initial_resource_versions;
        if first {
            let held = declared.iter().filter(|(n, _)| interest.contains(n));
            for (name, version) in held {
                state.known.insert(name, Some(version));
            }
        } else if !declared.is_empty() {
            info!(stream, %node, r#type = %short, "initial_resource_versions after the first request ignored");
        }
        let force: BTreeSet<&str> = subscribe
            .iter()
            .filter(|n| *n != WILDCARD)
            .map(String::as_str)
            .collect();
        self.changed.insert(url.clone());
        let changes = reconcile(&url, state, &resources, &force);
        if !first && changes.resources.is_empty() && changes.removed.is_empty() {
            return Vec::new();
        }
        let planned = self.respond(&node, &url, &resources, changes);
        vec![planned.response]
    }

    /// Handles a new snapshot; returns the responses to send, with shared resource entries.
    pub fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> Vec<DeltaResponse> {
        self.snapshot = snapshot;
        let Some(node) = self.node.clone() else {
            return Vec::new();
        };
        let urls: Vec<String> = self.types.keys().cloned().collect();
        let planned = urls
            .iter()
            .filter_map(|url| self.push_if_changed(&node, url))
            .collect();
        make_before_break(planned)
    }

    /// The response `url` is owed when the resources it serves now differ from what the client
    /// holds (S8), if any.
    fn push_if_changed(&mut self, node: &str, url: &str) -> Option<Planned<DeltaResponse>> {
        let resources = self.resources(node, url);
        let state = self.types.get_mut(url)?;
        if state.seen_hash == Some(resources.content_hash) {
            // Same names and versions: the client holds the same share of the new one.
            state.known.rebase(&resources, &state.sub.interest);
            return None;
        }
        let changes = reconcile(url, state, &resources, &BTreeSet::new());
        if changes.resources.is_empty() && changes.removed.is_empty() {
            return None;
        }
        self.changed.insert(url.to_string());
        Some(self.respond(node, url, &resources, changes))
    }

    /// [`Self::on_request`], with the responses decoded into plain messages (for fetches
    /// and tests; streams send the shared entries as they are).
    pub fn on_request_decoded(
        &mut self,
        request: DeltaDiscoveryRequest,
    ) -> Vec<DeltaDiscoveryResponse> {
        let out = self.on_request(request);
        out.iter().map(DeltaResponse::to_message).collect()
    }

    /// [`Self::on_snapshot`], with the responses decoded into plain messages.
    pub fn on_snapshot_decoded(&mut self, snapshot: Arc<Snapshot>) -> Vec<DeltaDiscoveryResponse> {
        let out = self.on_snapshot(snapshot);
        out.iter().map(DeltaResponse::to_message).collect()
    }

    pub fn node_id(&self) -> Option<&str> {
        self.node.as_deref()
    }

    pub fn take_status(&mut self) -> Vec<TypeStatus> {
        let changed = std::mem::take(&mut self.changed);
        changed
            .iter()
            .filter_map(|url| {
                let state = self.types.get(url)?;
                let mut status = state.sub.status(url, state.held_hash());
                status.heartbeats = state.heartbeats.status();
                Some(status)
            })
            .collect()
    }

    fn node_from(&mut self, request: &DeltaDiscoveryRequest) -> String {
        if self.node.is_none() {
            self.features = Features::of(request.node.as_ref());
        }
        self.node
            .get_or_insert_with(|| {
                let node = request.node.as_ref().map(|n| n.id.clone());
                if node.is_none() {
                    warn!(
                        stream = self.id,
                        "first request has no node: serving the base fixtures"
                    );
                }
                node.unwrap_or_default()
            })
            .clone()
    }

    /// The resources of `url` this stream serves: the snapshot's, without what a fault masks.
    fn resources(&mut self, node: &str, url: &str) -> Arc<TypeResources> {
        let resources = self.snapshot.get(node, url).unwrap_or(&self.empty);
        self.masks.apply(url, resources.clone())
    }

    fn respond(
        &mut self,
        node: &str,
        url: &str,
        resources: &TypeResources,
        changes: Changes,
    ) -> Planned<DeltaResponse> {
        let nonce = self.nonces.next_nonce();
        let version = resources.version.as_str();
        let (sent, removed) = (changes.resources.len(), changes.removed.len());
        crate::stream_line!(stream = self.id, %node, r#type = %type_url::short_name(url), %version, %nonce,
            resources = sent, removed, "push");
        let state = self.types.get_mut(url).expect("responding to a known type");
        state.sub.ledger.record_sent(version, &nonce, sent);
        let (ttl, held) = match resources.has_ttl() {
            true => heartbeat::held_ttl(state, resources),
            false => (None, 0),
        };
        let ttl = ttl.filter(|_| self.features.ttl);
        state.heartbeats.on_push(ttl, held);
        Planned {
            type_url: url.to_string(),
            removal_only: sent == 0,
            response: DeltaResponse {
                head: DeltaDiscoveryResponse {
                    system_version_info: version.to_string(),
                    type_url: url.to_string(),
                    removed_resources: changes.removed.into_iter().collect(),
                    nonce,
                    control_plane: Some(control_plane()),
                    ..Default::default()
                },
                entries: changes.resources,
                manifest: Manifest::Delta(changes.sent),
            },
        }
    }
}

/// How a request's subscription changes moved the interest from `before` to `after`.
fn change(before: &Interest, after: &Interest, subscribe: &[String]) -> Change {
    let new = |name: &String| {
        if name == WILDCARD {
            !before.is_wildcard()
        } else {
            !before.contains(name)
        }
    };
    let widened = (after.is_wildcard() && !before.is_wildcard()) || subscribe.iter().any(new);
    Change::of(widened, before.revision(), after.revision())
}

/// Records what the request says about our latest response (ACK, NACK, or a stale nonce whose
/// verdict is ignored while its interest changes still count), and returns the verdict.
fn acknowledge(
    stream: u64,
    node: &str,
    url: &str,
    state: &mut TypeState,
    request: &DeltaDiscoveryRequest,
) -> Verdict {
    let short = type_url::short_name(url);
    let nonce = request.response_nonce.as_str();
    let error = request.error_detail.as_ref();
    let (sub, heartbeats) = (&mut state.sub, &mut state.heartbeats);
    if heartbeats.answers_heartbeat(nonce) {
        // S15: the answer to a heartbeat answers no push; the ledger is left alone.
        heartbeats.on_answer();
        let Some(error) = error else {
            return Verdict::Ack;
        };
        warn!(stream, %node, r#type = %short, %nonce, error = error.message,
            "heartbeat NACKed (the client advertised xds.config.supports-resource-ttl)");
        return Verdict::Nack;
    }
    let verdict = sub.ledger.classify(nonce, error.is_some());
    match verdict {
        Verdict::Ack => {
            let version = sub.ledger.last_sent.as_ref().map(|s| s.version.clone());
            let version = version.unwrap_or_default();
            sub.ledger.record_ack(&version);
            heartbeats.on_answer();
            crate::stream_line!(stream, %node, r#type = %short, %version, %nonce, "ACK");
        }
        Verdict::Nack => {
            let message = error.map(|e| e.message.as_str()).unwrap_or_default();
            heartbeats.on_answer();
            let nack = sub.ledger.record_nack(message);
            warn!(stream, %node, r#type = %short, version = %nack.version, %nonce,
                error = nack.message, "NACK: not resending these versions until they change");
        }
        Verdict::Stale => {
            crate::stream_line!(stream, %node, r#type = %short, %nonce, "stale nonce: ACK/NACK ignored, subscription changes applied");
        }
        Verdict::Initial | Verdict::Ignored => {}
    }
    verdict
}

mod heartbeat;
mod known;
mod reconcile;

#[cfg(test)]
mod tests;
