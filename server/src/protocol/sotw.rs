//! The State-of-the-World stream state machine (sans-I/O): requests and snapshots in,
//! `DiscoveryResponse`s out.
//!
//! Decisions, by rule of `docs/protocol.md`:
//! - S1: every response gets a fresh nonce from the stream's [`NonceSource`]; each `Any` is
//!   stamped with the response's type URL.
//! - S2/S3: ACK and NACK are told apart by `error_detail` only. Neither causes a resend: a
//!   type is pushed again only when its version or its content differs from the last
//!   response's, whether the client ACKed that response or NACKed it.
//! - S4: a request whose nonce is not the latest sent for its type is ignored entirely (no
//!   response, no interest change): the client will send its full interest again when it
//!   answers the newest response.
//! - S5/S6: a response holds every subscribed resource that exists (all of them for a
//!   wildcard). For LDS/CDS that is the full set the protocol requires; for EDS/RDS it is the
//!   requested names that exist. A request that adds a name is answered even if the resources
//!   were sent before.
//! - S7: a request only ever produces a response for its own type.
//! - S11: a snapshot change yields its responses make-before-break ([`crate::protocol::ordering`]).
//! - S12: any type URL is served what the snapshot has for it, so a type without fixtures (or
//!   one nobody knows) gets an empty response and no other type is affected; a request
//!   without a type URL is ignored.
//! - S18: requested `xdstp://` names are normalised (context parameters sorted) before they are
//!   matched, as fixture names are ([`SotwRequest::names`]).
//!
//! A type changed for this stream when the version it would be served now (the node's version of
//! the type) differs from the last response's, or the hash of the resources it would receive
//! differs from the hash of what it was last sent: an explicit `version_info` may be bumped while
//! the content stays, or stay while the content changes, and neither may be dropped.
//!
//! S15 heartbeats: on a tick, each type whose heartbeat is due gets a response with the
//! version the client holds and, for each resource it holds, the `Resource` wrapper without
//! `resource`: only the TTL'd ones for EDS/RDS-like types, every one for LDS and CDS, whose
//! responses are the full state (a resource missing from one would be deleted).

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Instant, SystemTime},
};

use bytes::Bytes;
use tracing::{info, warn};
use xdsloop_proto::{
    Resource,
    discovery::{DiscoveryRequest, DiscoveryResponse},
    envoy::envoy::config::core::v3::ControlPlane,
    type_url,
};

use crate::{
    protocol::held::Held,
    protocol::machine::{MachineHooks, StreamMachine},
    protocol::nonce::NonceSource,
    protocol::now::Now,
    protocol::ordering::{Planned, make_before_break},
    protocol::request::SotwRequest,
    protocol::response::{Manifest, SotwResponse},
    protocol::stream::{PerType, StreamState},
    protocol::subscription::{
        Change, Exchange, Interest, Ledger, Subscription, TypeStatus, Verdict,
    },
    protocol::ttl::{Features, Heartbeats},
    protocol::wire::{FaultMark, WireFate},
    snapshot::Snapshot,
    snapshot::TypeResources,
    snapshot::entries::sotw_heartbeat,
    snapshot::views::View,
};

/// The `control_plane` every response carries, so clients can log who configured them.
pub(crate) fn control_plane() -> ControlPlane {
    ControlPlane {
        identifier: concat!("xdsloop-server/", env!("CARGO_PKG_VERSION")).to_string(),
    }
}

#[derive(Debug, Default)]
struct TypeState {
    sub: Subscription,
    /// S15: when this type is owed a heartbeat.
    heartbeats: Heartbeats,
    /// Whether "TTL not sent" was logged for this type (once is enough).
    warned_unwrapped: bool,
    /// What the client holds, or rejected, of the last response: its view's hash for a
    /// wildcard, its stamp for named resources ([`held_key`]).
    sent_hash: Option<u64>,
    /// The type's resources at the last response, to tell removal-only updates apart (S11).
    /// Shared with the snapshot, so keeping it costs a pointer.
    sent_from: Option<Arc<TypeResources>>,
}

impl TypeState {
    /// Whether the last response carried `version` and resources hashing to `hash`: then there
    /// is nothing new to push, whether it was ACKed or NACKed (S3).
    fn was_sent(&self, version: &str, hash: u64) -> bool {
        let last = self.sub.ledger.last_sent.as_ref();
        self.sent_hash == Some(hash) && last.is_some_and(|sent| sent.version == version)
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
        self.sent_hash
    }
    fn delta_known(&self) -> BTreeMap<String, Option<String>> {
        BTreeMap::new()
    }
}

/// One SotW stream (ADS or a per-type service).
#[derive(Debug)]
pub(crate) struct SotwStream {
    /// What every stream machine keeps: node, nonces, the types and their subscriptions.
    s: StreamState<TypeState>,
}

impl SotwStream {
    /// Stream `id` (its nonces are `<id>-<n>`), serving `snapshot` until the next one.
    pub(crate) fn new(id: u64, snapshot: Arc<Snapshot>) -> Self {
        Self {
            s: StreamState::new(id, snapshot),
        }
    }
}

impl StreamMachine for SotwStream {
    type Request = SotwRequest;
    type Response = SotwResponse;

    /// Handles one client request; returns the responses to send, with shared resource entries.
    fn on_request(&mut self, request: SotwRequest, now: Now) -> Vec<SotwResponse> {
        let names = request.names();
        let request = &request.head;
        let s = &mut self.s;
        let node = s.node_from(request.node.as_ref());
        let url = request.type_url.clone();
        s.exchange = Exchange::default();
        if url.is_empty() {
            warn!(stream = s.id, %node, "request without type_url ignored");
            return Vec::new();
        }
        let first = !s.types.contains_key(&url);
        let state = s.types.entry(url.clone()).or_default();
        let heartbeat = heartbeat_answer(s.id, &node, &url, state, request);
        let verdict = heartbeat
            .unwrap_or_else(|| answer((s.id, &node, &url, now.wall), &mut state.sub, request));
        if matches!(verdict, Verdict::Ack | Verdict::Nack) {
            state.heartbeats.on_answer();
        }
        s.exchange = Exchange {
            verdict,
            first_for_type: first,
            change: Change::None,
            wildcard: state.sub.interest.sotw_subscribes_wildcard(&names),
        };
        if verdict == Verdict::Stale {
            return Vec::new();
        }
        s.changed.insert(url.clone());
        let revision = state.sub.interest.revision();
        let widened = state.sub.interest.replace(&names);
        let change = Change::of(widened, revision, state.sub.interest.revision());
        s.exchange.change = change;
        if !(first || widened) {
            // A narrowed interest needs no response, but what the client holds of it is now
            // a subset of the last response: compare future snapshots against that subset.
            // A plain ACK leaves the interest as it was, and the hash with it.
            let narrowed = change == Change::Narrowed;
            if let Some(from) = state.sent_from.as_ref().filter(|_| narrowed) {
                let interest = &state.sub.interest;
                state.sent_hash = Some(held_key(interest, &view(interest, from)));
            }
            return Vec::new();
        }
        let resources = s.resources(&node, &url);
        let state = s.types.get_mut(&url).expect("inserted above");
        let who = (s.id, node.as_str(), s.features, now.wall);
        let planned = respond(who, &mut s.nonces, &url, state, &resources);
        vec![planned.response]
    }

    /// Handles a new snapshot; returns the responses to send, with shared resource entries.
    fn on_snapshot(&mut self, snapshot: Arc<Snapshot>, now: Now) -> Vec<SotwResponse> {
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
    fn on_tick(&mut self, now: Now) -> Vec<SotwResponse> {
        let s = &mut self.s;
        if !s.features.ttl {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (url, state) in &mut s.types {
            if !state.heartbeats.due(now.at) {
                continue;
            }
            let (Some(from), Some(sent)) = (&state.sent_from, &state.sub.ledger.last_sent) else {
                continue;
            };
            let held = view(&state.sub.interest, from);
            let full = type_url::full_state(url);
            let picked = held.picked.iter().filter(|r| full || r.ttl.is_some());
            let kept: Arc<[Arc<Resource>]> = picked.cloned().collect();
            if !kept.iter().any(|r| r.ttl.is_some()) {
                state.heartbeats.stop();
                continue;
            }
            let entries: Vec<Bytes> = kept.iter().map(|r| sotw_heartbeat(r)).collect();
            let nonce = s.nonces.next_nonce();
            crate::protocol::chatter::stream_line!(stream = s.id, node = s.node.as_deref().unwrap_or_default(),
                r#type = %type_url::short_name(url), version = %sent.version, %nonce,
                resources = entries.len(), "heartbeat");
            let head = DiscoveryResponse {
                version_info: sent.version.clone(),
                type_url: url.clone(),
                nonce: nonce.clone(),
                control_plane: Some(control_plane()),
                ..Default::default()
            };
            state.heartbeats.on_sent(nonce, now.at, now.wall);
            s.changed.insert(url.clone());
            out.push(SotwResponse {
                head,
                entries,
                manifest: Manifest::Heartbeat(kept),
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

impl MachineHooks for SotwStream {
    fn exchange(&self) -> Exchange {
        self.s.exchange
    }

    fn ledger(&self, type_url: &str) -> Option<&Ledger> {
        self.s.ledger(type_url)
    }

    fn nonces_issued(&self) -> u64 {
        self.s.nonces.issued()
    }

    /// The current interest's response again, with a fresh nonce, whether or not the client
    /// has it; `None` before the node is known or when nothing is subscribed.
    fn repeat_last(&mut self, url: &str, now: Now) -> Option<SotwResponse> {
        let s = &mut self.s;
        let node = s.node.clone()?;
        let resources = s.resources(&node, url);
        let state = s.types.get_mut(url)?;
        if state.sub.interest.is_empty() {
            return None;
        }
        let who = (s.id, node.as_str(), s.features, now.wall);
        let planned = respond(who, &mut s.nonces, url, state, &resources);
        s.changed.insert(url.to_string());
        Some(planned.response)
    }

    fn mask(&mut self, url: &str, globs: Vec<String>, now: Now) -> Vec<SotwResponse> {
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
        let (Some(from), Some(sent)) = (&state.sent_from, &state.sub.ledger.last_sent) else {
            return Vec::new();
        };
        let withheld = sent.withheld.as_ref().map(|w| w.names.as_slice());
        let names = from.resources.keys().filter(|name| {
            state.sub.interest.contains(name) && !withheld.unwrap_or_default().contains(name)
        });
        names.cloned().collect()
    }

    fn withdraw(&mut self, url: &str, planned_nonce: &str) {
        self.s.withdraw(url, planned_nonce);
    }

    fn resync(&mut self, now: Now) -> Vec<SotwResponse> {
        let unsettled = self.s.unsettled();
        let again = unsettled
            .iter()
            .filter_map(|url| self.repeat_last(url, now));
        again.collect()
    }
}

impl SotwStream {
    /// The response `url` is owed when what the client would receive now differs from what
    /// it was last sent (S3), if it is subscribed.
    fn push_if_changed(
        &mut self,
        node: &str,
        url: &str,
        now: Now,
    ) -> Option<Planned<SotwResponse>> {
        let s = &mut self.s;
        let resources = s.resources(node, url);
        let state = s.types.get_mut(url)?;
        if state.sub.interest.is_empty() {
            return None;
        }
        let interest = &state.sub.interest;
        let key = held_key(interest, &view(interest, &resources));
        // A wildcard is sent the type's whole set under the type's version: a new version is
        // news. Named resources are news only when they themselves changed.
        let unchanged = match interest.is_wildcard() {
            true => state.was_sent(&resources.version, key),
            false => state.sent_hash == Some(key),
        };
        if unchanged {
            return None;
        }
        let who = (s.id, node, s.features, now.wall);
        let planned = respond(who, &mut s.nonces, url, state, &resources);
        s.changed.insert(url.to_string());
        Some(planned)
    }

    #[cfg(test)]
    /// [`StreamMachine::on_request`], with the responses decoded into plain messages (for
    /// fetches and tests; streams send the shared entries as they are).
    pub(crate) fn on_request_decoded(
        &mut self,
        request: DiscoveryRequest,
        now: Now,
    ) -> Vec<DiscoveryResponse> {
        let out = self.on_request(request.into(), now);
        out.iter().map(SotwResponse::to_message).collect()
    }

    #[cfg(test)]
    /// [`StreamMachine::on_snapshot`], with the responses decoded into plain messages.
    pub(crate) fn on_snapshot_decoded(
        &mut self,
        snapshot: Arc<Snapshot>,
        now: Now,
    ) -> Vec<DiscoveryResponse> {
        let out = self.on_snapshot(snapshot, now);
        out.iter().map(SotwResponse::to_message).collect()
    }
}

/// The resources a subscription receives: all of them for a wildcard, else the named ones
/// that exist, with their hash (for a wildcard the type's content hash: same formula). Shared
/// by streams with the same interest (see [`crate::snapshot::views`]).
fn view(interest: &Interest, resources: &TypeResources) -> Arc<View> {
    if interest.is_wildcard() {
        let all = || resources.resources.values().cloned().collect();
        return resources
            .views
            .all(|| View::new(all(), resources.content_hash));
    }
    resources.named_view(&interest.shared_names())
}

/// What a client of `interest` holds after being sent `view`, as compared on the next
/// snapshot and by `/status`: the content hash for a wildcard (its version is the type's),
/// the stamp for named resources (their own content and `version_info`s).
fn held_key(interest: &Interest, view: &View) -> u64 {
    match interest.is_wildcard() {
        true => view.hash,
        false => view.stamp,
    }
}

/// Records what the request, received at `at`, says about our latest response (S2, S4) and
/// returns its verdict.
fn answer(
    (stream, node, url, at): (u64, &str, &str, SystemTime),
    sub: &mut Subscription,
    request: &DiscoveryRequest,
) -> Verdict {
    let short = type_url::short_name(url);
    let nonce = request.response_nonce.as_str();
    let error = request.error_detail.as_ref();
    let verdict = sub.ledger.classify(nonce, error.is_some());
    match verdict {
        Verdict::Stale => {
            crate::protocol::chatter::stream_line!(stream, %node, r#type = %short, %nonce, "stale nonce: request ignored");
        }
        Verdict::Ack => {
            sub.ledger.record_ack(&request.version_info, at);
            crate::protocol::chatter::stream_line!(stream, %node, r#type = %short, version = %request.version_info, %nonce, "ACK");
        }
        Verdict::Nack => {
            let message = error.map(|e| e.message.as_str()).unwrap_or_default();
            let nack = sub.ledger.record_nack(message, at);
            warn!(stream, %node, r#type = %short, version = %nack.version, %nonce,
                error = nack.message, "NACK: not resending until the fixtures change");
        }
        Verdict::Initial | Verdict::Ignored => {}
    }
    verdict
}

/// If the request answers one of the type's recent heartbeats (S15), its ACK or NACK: it answers no
/// push (the ledger is left alone), and its interest still counts.
fn heartbeat_answer(
    stream: u64,
    node: &str,
    url: &str,
    state: &TypeState,
    request: &DiscoveryRequest,
) -> Option<Verdict> {
    let nonce = request.response_nonce.as_str();
    if !state.heartbeats.answers_heartbeat(nonce) {
        return None;
    }
    let Some(error) = &request.error_detail else {
        return Some(Verdict::Ack);
    };
    warn!(stream, %node, r#type = %type_url::short_name(url), %nonce, error = error.message,
        "heartbeat NACKed (the client advertised xds.config.supports-resource-ttl)");
    Some(Verdict::Nack)
}

/// The stream the response goes to (id, node and what its client can take) and the time.
type Who<'a> = (u64, &'a str, Features, SystemTime);

/// Builds the response for `state`'s current interest and records it as sent.
fn respond(
    (stream, node, features, at): Who<'_>,
    nonces: &mut NonceSource,
    url: &str,
    state: &mut TypeState,
    resources: &Arc<TypeResources>,
) -> Planned<SotwResponse> {
    let view = view(&state.sub.interest, resources);
    let wrap = features.resource_in_sotw;
    if view.has_ttl() && !wrap && !std::mem::replace(&mut state.warned_unwrapped, true) {
        info!(stream, %node, r#type = %type_url::short_name(url),
            "TTL not sent: the client does not advertise xds.config.resource-in-sotw");
    }
    let removal_only = state.sent_from.as_ref().is_some_and(|before| {
        view.picked.iter().all(|r| {
            before
                .resources
                .get(&r.name)
                .is_some_and(|b| b.version == r.version)
        })
    });
    let nonce = nonces.next_nonce();
    let head = DiscoveryResponse {
        version_info: resources.version.clone(),
        type_url: url.to_string(),
        nonce: nonce.clone(),
        control_plane: Some(control_plane()),
        ..Default::default()
    };
    let entries = vec![view.sotw_entries(url, resources, wrap)];
    let manifest = Manifest::Sotw(view.clone());
    let response = SotwResponse {
        head,
        entries,
        manifest,
    };
    let version = resources.version.as_str();
    crate::protocol::chatter::stream_line!(stream, %node, r#type = %type_url::short_name(url), %version, %nonce,
        resources = view.picked.len(), "push");
    state
        .sub
        .ledger
        .record_sent(version, &nonce, view.picked.len(), at);
    state.sent_hash = Some(held_key(&state.sub.interest, &view));
    state.sent_from = Some(resources.clone());
    // Heartbeats need both features: they are wrappers.
    let beats = features.ttl && wrap;
    let held = match wrap {
        true => view.picked.iter().filter(|r| r.ttl.is_some()).count(),
        false => 0,
    };
    state
        .heartbeats
        .on_push(view.min_ttl().filter(|_| beats), held);
    Planned {
        type_url: url.to_string(),
        removal_only,
        response,
    }
}

#[cfg(test)]
mod tests;
