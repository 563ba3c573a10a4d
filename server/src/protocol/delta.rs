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
//!   ([`StreamMachine::on_tick`]: for each TTL'd resource the client holds,
//!   `Resource{name, version, ttl}` without `resource`, the version it holds: a heartbeat,
//!   not an update); a TTL'd resource that leaves the fixtures is not put in
//!   `removed_resources`: its heartbeats stop and the client lets it expire.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use tracing::{info, warn};
use xdsloop_proto::{
    Resource,
    discovery::{DeltaDiscoveryRequest, DeltaDiscoveryResponse},
    type_url,
};

use crate::{
    protocol::held::Held,
    protocol::machine::{MachineHooks, StreamMachine},
    protocol::now::Now,
    protocol::ordering::{Planned, make_before_break},
    protocol::request::normalize_delta,
    protocol::response::{DeltaResponse, Manifest},
    protocol::sotw::control_plane,
    protocol::stream::{PerType, StreamState},
    protocol::subscription::{
        Change, Exchange, Interest, Ledger, Subscription, TypeStatus, Verdict, WILDCARD,
        delta_subscribes_wildcard,
    },
    protocol::ttl::Heartbeats,
    protocol::wire::{FaultMark, WireFate},
    snapshot::Snapshot,
    snapshot::TypeResources,
    snapshot::entries::delta_heartbeat,
};

use self::known::Known;
use self::reconcile::{Changes, reconcile};

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

impl PerType for TypeState {
    fn sub(&self) -> &Subscription {
        &self.sub
    }
    fn sub_mut(&mut self) -> &mut Subscription {
        &mut self.sub
    }
    fn heartbeats(&self) -> &Heartbeats {
        &self.heartbeats
    }
    fn held_hash(&self) -> Option<u64> {
        TypeState::held_hash(self)
    }
    /// As owned maps (built here: the stream shares its base with the snapshot).
    fn delta_known(&self) -> BTreeMap<String, Option<String>> {
        self.known.to_map()
    }
}

/// One Delta stream (ADS or a per-type service).
#[derive(Debug)]
pub(crate) struct DeltaStream {
    /// What every stream machine keeps: node, nonces, the types and their subscriptions.
    s: StreamState<TypeState>,
}

impl DeltaStream {
    /// Stream `id` (its nonces are `<id>-<n>`), serving `snapshot` until the next one.
    pub(crate) fn new(id: u64, snapshot: Arc<Snapshot>) -> Self {
        Self {
            s: StreamState::new(id, snapshot),
        }
    }
}

impl StreamMachine for DeltaStream {
    type Request = DeltaDiscoveryRequest;
    type Response = DeltaResponse;

    /// Handles one client request; returns the responses to send, with shared resource entries.
    fn on_request(&mut self, mut request: DeltaDiscoveryRequest, now: Now) -> Vec<DeltaResponse> {
        normalize_delta(&mut request);
        let s = &mut self.s;
        let node = s.node_from(request.node.as_ref());
        let url = request.type_url.clone();
        let (stream, short) = (s.id, type_url::short_name(&url));
        s.exchange = Exchange::default();
        if url.is_empty() {
            warn!(stream, %node, "request without type_url ignored");
            return Vec::new();
        }
        let resources = s.resources(&node, &url);
        let first = !s.types.contains_key(&url);
        let state = s.types.entry(url.clone()).or_default();
        let verdict = acknowledge((stream, &node, &url, now.wall), state, &request);
        let subscribe = &request.resource_names_subscribe;
        let unsubscribe = &request.resource_names_unsubscribe;
        let before = state.sub.interest.clone();
        state
            .sub
            .interest
            .apply_delta(first, subscribe, unsubscribe);
        let interest = &state.sub.interest;
        s.exchange = Exchange {
            verdict,
            first_for_type: first,
            change: change(&before, interest, subscribe),
            wildcard: delta_subscribes_wildcard(first, subscribe),
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
        s.changed.insert(url.clone());
        let mut changes = reconcile(&url, state, &resources, &force);
        // The one unsubscription the spec wants answered: a name named beside the wildcard.
        // If it exists the wildcard covers it and `reconcile` sent it again; if not, the
        // client cannot tell whether to keep it, so it is reported removed.
        let wildcard = state.sub.interest.is_wildcard();
        let dropped = unsubscribe
            .iter()
            .filter(|n| wildcard && *n != WILDCARD && before.names_contain(n));
        for name in dropped {
            if !resources.resources.contains_key(name) {
                changes.removed.insert(name.clone());
            }
        }
        if !first && changes.resources.is_empty() && changes.removed.is_empty() {
            return Vec::new();
        }
        let planned = self.respond(&node, &url, &resources, changes, now);
        vec![planned.response]
    }

    /// Handles a new snapshot; returns the responses to send, with shared resource entries.
    fn on_snapshot(&mut self, snapshot: Arc<Snapshot>, now: Now) -> Vec<DeltaResponse> {
        self.s.snapshot = snapshot;
        let Some(node) = self.s.node.clone() else {
            return Vec::new();
        };
        let urls: Vec<String> = self.s.types.keys().cloned().collect();
        let planned = urls
            .iter()
            .filter_map(|url| self.push_if_changed(&node, url, now))
            .collect();
        make_before_break(planned)
    }

    /// Heartbeats due at `now`; also schedules the types that just became due one.
    fn on_tick(&mut self, now: Now) -> Vec<DeltaResponse> {
        let s = &mut self.s;
        if !s.features.ttl {
            return Vec::new();
        }
        let node = s.node.clone().unwrap_or_default();
        let mut out = Vec::new();
        for (url, state) in &mut s.types {
            if !state.heartbeats.due(now.at) {
                continue;
            }
            let resources = s
                .snapshot
                .get(&node, url)
                .cloned()
                .unwrap_or_else(|| s.empty.clone());
            let held: Arc<[Arc<Resource>]> = held_resources(state, &resources)
                .into_iter()
                .cloned()
                .collect();
            if held.is_empty() {
                state.heartbeats.stop();
                continue;
            }
            let entries: Vec<_> = held.iter().map(|r| delta_heartbeat(r)).collect();
            let version = state
                .sub
                .ledger
                .last_sent
                .as_ref()
                .map(|s| s.version.clone());
            let nonce = s.nonces.next_nonce();
            crate::protocol::chatter::stream_line!(stream = s.id, %node, r#type = %type_url::short_name(url), %nonce,
                resources = entries.len(), "heartbeat");
            let head = DeltaDiscoveryResponse {
                system_version_info: version.unwrap_or_default(),
                type_url: url.clone(),
                nonce: nonce.clone(),
                control_plane: Some(control_plane()),
                ..Default::default()
            };
            state.heartbeats.on_sent(nonce, now.at, now.wall);
            s.changed.insert(url.clone());
            out.push(DeltaResponse {
                head,
                entries,
                manifest: Manifest::Heartbeat(held),
            });
        }
        out
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.s.next_deadline()
    }

    fn node_id(&self) -> Option<&str> {
        self.s.node_id()
    }

    fn take_status(&mut self) -> Vec<TypeStatus> {
        self.s.take_status()
    }

    fn held(self) -> Held {
        self.s.held()
    }
}

impl MachineHooks for DeltaStream {
    fn exchange(&self) -> Exchange {
        self.s.exchange
    }

    fn ledger(&self, type_url: &str) -> Option<&Ledger> {
        self.s.ledger(type_url)
    }

    fn nonces_issued(&self) -> u64 {
        self.s.nonces.issued()
    }

    /// Every resource the client holds of `url`, again, with a fresh nonce; `None` before the
    /// node is known or when it holds nothing and nothing was removed.
    fn repeat_last(&mut self, url: &str, now: Now) -> Option<DeltaResponse> {
        let node = self.s.node.clone()?;
        let resources = self.s.resources(&node, url);
        let state = self.s.types.get_mut(url)?;
        let known = state.known.iter().into_iter();
        let held: Vec<String> = known
            .filter(|(_, version)| version.is_some())
            .map(|(name, _)| name.to_string())
            .collect();
        let force: BTreeSet<&str> = held.iter().map(String::as_str).collect();
        let changes = reconcile(url, state, &resources, &force);
        if changes.resources.is_empty() && changes.removed.is_empty() {
            return None;
        }
        self.s.changed.insert(url.to_string());
        Some(self.respond(&node, url, &resources, changes, now).response)
    }

    fn mask(&mut self, url: &str, globs: Vec<String>, now: Now) -> Vec<DeltaResponse> {
        let Some(node) = self.s.mask(url, globs) else {
            return Vec::new();
        };
        let planned = self.push_if_changed(&node, url, now);
        planned.into_iter().map(|p| p.response).collect()
    }

    fn note_wire(&mut self, url: &str, planned: &str, mark: FaultMark, fate: WireFate, now: Now) {
        self.s.note_wire(url, planned, mark, fate, now.wall);
    }

    fn sent_names(&self, url: &str) -> Vec<String> {
        let Some(state) = self.s.types.get(url) else {
            return Vec::new();
        };
        let held = state.known.iter().into_iter();
        held.filter_map(|(name, version)| version.map(|_| name.to_string()))
            .collect()
    }

    fn withdraw(&mut self, url: &str, planned_nonce: &str) {
        self.s.withdraw(url, planned_nonce);
    }

    fn resync(&mut self, now: Now) -> Vec<DeltaResponse> {
        let unsettled = self.s.unsettled();
        let again = unsettled
            .iter()
            .filter_map(|url| self.repeat_last(url, now));
        again.collect()
    }
}

impl DeltaStream {
    /// The response `url` is owed when the resources it serves now differ from what the client
    /// holds (S8), if any.
    fn push_if_changed(
        &mut self,
        node: &str,
        url: &str,
        now: Now,
    ) -> Option<Planned<DeltaResponse>> {
        let resources = self.s.resources(node, url);
        let state = self.s.types.get_mut(url)?;
        if state.seen_hash == Some(resources.content_hash) {
            // Same names and versions: the client holds the same share of the new one.
            state.known.rebase(&resources, &state.sub.interest);
            return None;
        }
        let changes = reconcile(url, state, &resources, &BTreeSet::new());
        if changes.resources.is_empty() && changes.removed.is_empty() {
            return None;
        }
        self.s.changed.insert(url.to_string());
        Some(self.respond(node, url, &resources, changes, now))
    }

    #[cfg(test)]
    /// [`StreamMachine::on_request`], with the responses decoded into plain messages (for
    /// fetches and tests; streams send the shared entries as they are).
    pub(crate) fn on_request_decoded(
        &mut self,
        request: DeltaDiscoveryRequest,
        now: Now,
    ) -> Vec<DeltaDiscoveryResponse> {
        let out = self.on_request(request, now);
        out.iter().map(DeltaResponse::to_message).collect()
    }

    #[cfg(test)]
    /// [`StreamMachine::on_snapshot`], with the responses decoded into plain messages.
    pub(crate) fn on_snapshot_decoded(
        &mut self,
        snapshot: Arc<Snapshot>,
        now: Now,
    ) -> Vec<DeltaDiscoveryResponse> {
        let out = self.on_snapshot(snapshot, now);
        out.iter().map(DeltaResponse::to_message).collect()
    }

    fn respond(
        &mut self,
        node: &str,
        url: &str,
        resources: &TypeResources,
        changes: Changes,
        now: Now,
    ) -> Planned<DeltaResponse> {
        let s = &mut self.s;
        let nonce = s.nonces.next_nonce();
        let version = resources.version.as_str();
        let (sent, removed) = (changes.resources.len(), changes.removed.len());
        crate::protocol::chatter::stream_line!(stream = s.id, %node, r#type = %type_url::short_name(url), %version, %nonce,
            resources = sent, removed, "push");
        let state = s.types.get_mut(url).expect("responding to a known type");
        state
            .sub
            .ledger
            .record_sent(version, &nonce, sent, now.wall);
        let (ttl, held) = match resources.has_ttl() {
            true => held_ttl(state, resources),
            false => (None, 0),
        };
        let ttl = ttl.filter(|_| s.features.ttl);
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

/// How a request's subscription changes moved the interest from `before` to `after`: a name
/// is new unless it was named before (the wildcard covering it does not make it asked for).
fn change(before: &Interest, after: &Interest, subscribe: &[String]) -> Change {
    let new = |name: &String| {
        if name == WILDCARD {
            !before.is_wildcard()
        } else {
            !before.names_contain(name)
        }
    };
    let widened = (after.is_wildcard() && !before.is_wildcard()) || subscribe.iter().any(new);
    Change::of(widened, before.revision(), after.revision())
}

/// Records what the request, received at `at`, says about our latest response (ACK, NACK, or
/// a stale nonce whose verdict is ignored while its interest changes still count), and returns
/// the verdict.
fn acknowledge(
    (stream, node, url, at): (u64, &str, &str, SystemTime),
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
            sub.ledger.record_ack(&version, at);
            heartbeats.on_answer();
            crate::protocol::chatter::stream_line!(stream, %node, r#type = %short, %version, %nonce, "ACK");
        }
        Verdict::Nack => {
            let message = error.map(|e| e.message.as_str()).unwrap_or_default();
            heartbeats.on_answer();
            let nack = sub.ledger.record_nack(message, at);
            warn!(stream, %node, r#type = %short, version = %nack.version, %nonce,
                error = nack.message, "NACK: not resending these versions until they change");
        }
        Verdict::Stale => {
            crate::protocol::chatter::stream_line!(stream, %node, r#type = %short, %nonce, "stale nonce: ACK/NACK ignored, subscription changes applied");
        }
        Verdict::Initial | Verdict::Ignored => {}
    }
    verdict
}

/// The TTL'd resources the client holds at their current version.
fn held_resources<'a>(state: &TypeState, resources: &'a TypeResources) -> Vec<&'a Arc<Resource>> {
    let known = state.known.iter().into_iter();
    let held = known.filter_map(|(name, version)| {
        let resource = resources.resources.get(name)?;
        let same = version == Some(resource.version.as_str());
        (same && resource.ttl.is_some()).then_some(resource)
    });
    held.collect()
}

/// The shortest TTL among the resources the client holds, and how many have one.
fn held_ttl(state: &TypeState, resources: &TypeResources) -> (Option<Duration>, usize) {
    let held = held_resources(state, resources);
    (held.iter().filter_map(|r| r.ttl).min(), held.len())
}

mod known;
mod reconcile;

#[cfg(test)]
mod tests;
