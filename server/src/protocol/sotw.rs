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

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use tracing::{info, warn};
use xdsloop_proto::{
    discovery::{DiscoveryRequest, DiscoveryResponse},
    envoy::envoy::config::core::v3::ControlPlane,
    type_url,
};

use crate::{
    Snapshot, TypeResources,
    protocol::mask::Masks,
    protocol::nonce::NonceSource,
    protocol::ordering::{Planned, make_before_break},
    protocol::request::SotwRequest,
    protocol::response::{Manifest, SotwResponse},
    protocol::subscription::TypeStatus,
    protocol::subscription::{Change, Exchange, Interest, Subscription, Verdict},
    protocol::ttl::{Features, Heartbeats},
    snapshot::views::View,
};

mod hooks;

/// The `control_plane` every response carries, so clients can log who configured them.
pub fn control_plane() -> ControlPlane {
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
    /// Hash of the resources in the last response: what the client holds, or rejected.
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

/// One SotW stream (ADS or a per-type service).
#[derive(Debug)]
pub struct SotwStream {
    id: u64,
    nonces: NonceSource,
    node: Option<String>,
    /// What the client can take (S14, S15), from the node on its first request.
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

impl SotwStream {
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
    pub fn on_request(&mut self, request: SotwRequest) -> Vec<SotwResponse> {
        let names = request.names();
        let request = &request.head;
        let node = self.node_from(request);
        let url = request.type_url.clone();
        self.exchange = Exchange::default();
        if url.is_empty() {
            warn!(stream = self.id, %node, "request without type_url ignored");
            return Vec::new();
        }
        let first = !self.types.contains_key(&url);
        let state = self.types.entry(url.clone()).or_default();
        let heartbeat = heartbeat_answer(self.id, &node, &url, state, request);
        let verdict =
            heartbeat.unwrap_or_else(|| answer(self.id, &node, &url, &mut state.sub, request));
        if matches!(verdict, Verdict::Ack | Verdict::Nack) {
            state.heartbeats.on_answer();
        }
        self.exchange = Exchange {
            verdict,
            first_for_type: first,
            change: Change::None,
        };
        if verdict == Verdict::Stale {
            return Vec::new();
        }
        self.changed.insert(url.clone());
        let revision = state.sub.interest.revision();
        let widened = state.sub.interest.replace(&names);
        let change = Change::of(widened, revision, state.sub.interest.revision());
        self.exchange.change = change;
        if !(first || widened) {
            // A narrowed interest needs no response, but what the client holds of it is now
            // a subset of the last response: compare future snapshots against that subset.
            // A plain ACK leaves the interest as it was, and the hash with it.
            let narrowed = change == Change::Narrowed;
            if let Some(from) = state.sent_from.as_ref().filter(|_| narrowed) {
                state.sent_hash = Some(view(&state.sub.interest, from).hash);
            }
            return Vec::new();
        }
        let resources = self.resources(&node, &url);
        let state = self.types.get_mut(&url).expect("inserted above");
        let who = (self.id, node.as_str(), self.features);
        let planned = respond(who, &mut self.nonces, &url, state, &resources);
        vec![planned.response]
    }

    /// Handles a new snapshot; returns the responses to send, with shared resource entries.
    pub fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> Vec<SotwResponse> {
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

    /// The response `url` is owed when what the client would receive now differs from what
    /// it was last sent (S3), if it is subscribed.
    fn push_if_changed(&mut self, node: &str, url: &str) -> Option<Planned<SotwResponse>> {
        let resources = self.resources(node, url);
        let state = self.types.get_mut(url)?;
        if state.sub.interest.is_empty() {
            return None;
        }
        let hash = view(&state.sub.interest, &resources).hash;
        if state.was_sent(&resources.version, hash) {
            return None;
        }
        let who = (self.id, node, self.features);
        let planned = respond(who, &mut self.nonces, url, state, &resources);
        self.changed.insert(url.to_string());
        Some(planned)
    }

    /// [`Self::on_request`], with the responses decoded into plain messages (for fetches
    /// and tests; streams send the shared entries as they are).
    pub fn on_request_decoded(&mut self, request: DiscoveryRequest) -> Vec<DiscoveryResponse> {
        let out = self.on_request(request.into());
        out.iter().map(SotwResponse::to_message).collect()
    }

    /// [`Self::on_snapshot`], with the responses decoded into plain messages.
    pub fn on_snapshot_decoded(&mut self, snapshot: Arc<Snapshot>) -> Vec<DiscoveryResponse> {
        let out = self.on_snapshot(snapshot);
        out.iter().map(SotwResponse::to_message).collect()
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
                let mut status = state.sub.status(url, state.sent_hash);
                status.heartbeats = state.heartbeats.status();
                Some(status)
            })
            .collect()
    }

    /// The node id (and its features) are fixed by the stream's first request (C1: later ones
    /// may omit `node`).
    fn node_from(&mut self, request: &DiscoveryRequest) -> String {
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

/// Records what the request says about our latest response (S2, S4) and returns its verdict.
fn answer(
    stream: u64,
    node: &str,
    url: &str,
    sub: &mut Subscription,
    request: &DiscoveryRequest,
) -> Verdict {
    let short = type_url::short_name(url);
    let nonce = request.response_nonce.as_str();
    let error = request.error_detail.as_ref();
    let verdict = sub.ledger.classify(nonce, error.is_some());
    match verdict {
        Verdict::Stale => {
            crate::stream_line!(stream, %node, r#type = %short, %nonce, "stale nonce: request ignored");
        }
        Verdict::Ack => {
            sub.ledger.record_ack(&request.version_info);
            crate::stream_line!(stream, %node, r#type = %short, version = %request.version_info, %nonce, "ACK");
        }
        Verdict::Nack => {
            let message = error.map(|e| e.message.as_str()).unwrap_or_default();
            let nack = sub.ledger.record_nack(message);
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

/// The stream the response goes to: id, node and what its client can take.
type Who<'a> = (u64, &'a str, Features);

/// Builds the response for `state`'s current interest and records it as sent.
fn respond(
    (stream, node, features): Who<'_>,
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
    crate::stream_line!(stream, %node, r#type = %type_url::short_name(url), %version, %nonce,
        resources = view.picked.len(), "push");
    state
        .sub
        .ledger
        .record_sent(version, &nonce, view.picked.len());
    state.sent_hash = Some(view.hash);
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

mod heartbeat;

#[cfg(test)]
mod tests;
