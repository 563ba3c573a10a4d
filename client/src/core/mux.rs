//! The multiplexer: one stream carrying many type watches (Envoy's `GrpcMux`), sans-I/O.
//!
//! Inputs are method calls (`add_watch`, `on_stream_start`, `on_sotw_response`, `on_timer`,
//! ...) with the current time; outputs accumulate in an [`Output`] the I/O loop drains with
//! [`Mux::take_output`]: requests for the wire, events for subscriptions, reports for observers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use prost::Message;
use xdsloop_proto::Codec;
use xdsloop_proto::csds::{
    ClientConfig, ClientResourceStatus, GenericXdsConfig, UpdateFailureState, timestamp,
};
use xdsloop_proto::discovery::{
    Any, DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Node,
    WireResource,
};
use xdsloop_proto::type_url;
use xdsloop_proto::wrapper::RESOURCE_WRAPPER;

use crate::config::{ReceivedReports, SourceKind, Validator, Variant};
use crate::core::deps;
use crate::core::event::{
    Event, Failure, ReceivedReport, ReceivedResource, Report, SentReport, Step, UpdateReport,
    Verdict,
};
use crate::core::not_found::NotFound;
use crate::core::request::{Outgoing, TypeState, nack_detail};
use crate::core::store::{Applied, Diff, Stamp, Store};
use crate::core::stream::StreamEnd;
use crate::core::stream::StreamIds;
pub(crate) use crate::core::stream::StreamKey;
use crate::core::ttl::Expiry;
use crate::core::validate::{self, Decoded, Heartbeat, Rejection, Validated};
use crate::core::watch_map::{Interest, Wanted, WatchId, WatchMap};

/// How the mux behaves; fixed for the life of a client.
#[derive(Clone)]
pub struct MuxConfig {
    /// SotW or Delta.
    pub variant: Variant,
    /// Which config source the wire is: decides whether every type shares one stream and
    /// labels the reports.
    pub source: SourceKind,
    /// The node sent on the first request of every stream (C1).
    pub node: Node,
    /// Follow LDS → RDS and CDS → EDS references (C12).
    pub follow_deps: bool,
    /// Dependent types not followed even with `follow_deps`: they travel on another config
    /// source, so this mux's parent updates must not subscribe them here.
    pub unfollowed: BTreeSet<&'static str>,
    /// How long a requested name may go unanswered before it is reported missing (C14).
    pub not_found_timeout: Duration,
    /// The client's own per-resource check (see [`crate::Validator`]).
    pub validator: Option<Validator>,
    /// How resources are decoded and named.
    pub codec: Codec,
    /// Whether each response is reported as it arrives ([`Report::Received`]).
    pub received: ReceivedReports,
}

impl std::fmt::Debug for MuxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let validator = crate::config::validator_shown(&self.validator);
        f.debug_struct("MuxConfig")
            .field("variant", &self.variant)
            .field("source", &self.source)
            .field("node", &self.node)
            .field("follow_deps", &self.follow_deps)
            .field("unfollowed", &self.unfollowed)
            .field("not_found_timeout", &self.not_found_timeout)
            .field("validator", &validator)
            .field("codec", &self.codec)
            .field("received", &self.received)
            .finish()
    }
}

impl MuxConfig {
    /// An aggregated (ADS) mux of `mode`.
    pub fn new(mode: Variant, node: Node) -> Self {
        let source = match mode {
            Variant::Sotw => SourceKind::Ads,
            Variant::Delta => SourceKind::AdsDelta,
        };
        Self::for_source(source, node)
    }

    /// A mux for a config source; the protocol flavour follows from it.
    pub fn for_source(source: SourceKind, node: Node) -> Self {
        Self {
            variant: source.variant(),
            source,
            node,
            follow_deps: false,
            unfollowed: BTreeSet::new(),
            not_found_timeout: crate::config::DEFAULT_NOT_FOUND_TIMEOUT,
            validator: None,
            codec: Codec::envoy(),
            received: ReceivedReports::Off,
        }
    }
}

/// Everything the mux wants done since the last [`Mux::take_output`].
#[derive(Debug, Default)]
pub struct Output {
    /// Requests for the wire, in order.
    pub requests: Vec<Outgoing>,
    /// Events for subscriptions.
    pub deliveries: Vec<(WatchId, Event)>,
    /// Updates held back until the callbacks of the subscriptions asked answer; each wants
    /// one [`Mux::decide`] before its ACK or NACK is built.
    pub proposals: Vec<Proposal>,
    pub reports: Vec<Report>,
    /// The store changed (observers of the store should be told).
    pub store_changed: bool,
}

/// An update the mux holds back for the verdict of the subscriptions that decide (Envoy's
/// `SubscriptionCallbacks::onConfigUpdate` and the status it returns). Nothing of it is applied
/// or answered until [`Mux::decide`].
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The type URL of the update.
    pub type_url: String,
    /// The response's version (SotW `version_info`, Delta `system_version_info`).
    pub version: String,
    /// The response's nonce: [`Mux::decide`] applies a verdict only to the update it names.
    pub nonce: String,
    /// What each deciding subscription would be told if the update is applied; every one of
    /// them must accept it.
    pub asks: Vec<(WatchId, Event)>,
}

/// A validated update not applied yet.
#[derive(Debug)]
struct Candidate {
    version: String,
    nonce: String,
    at: SystemTime,
    changes: Changes,
}

#[derive(Debug)]
enum Changes {
    Sotw {
        resources: Vec<Decoded>,
        heartbeats: Vec<Heartbeat>,
    },
    Delta {
        added: Vec<Decoded>,
        removed: Vec<String>,
        heartbeats: Vec<Heartbeat>,
    },
}

impl Changes {
    /// The names the update sends (CSDS reports them NACKED if it is rejected).
    fn names(&self) -> BTreeSet<String> {
        let resources = match self {
            Changes::Sotw { resources, .. } => resources,
            Changes::Delta { added, .. } => added,
        };
        resources.iter().map(|r| r.name.clone()).collect()
    }
}

/// An update waiting for [`Mux::decide`], and the subscriptions that were asked.
#[derive(Debug)]
struct Pending {
    update: Candidate,
    asked: Vec<WatchId>,
}

/// Envoy's `GrpcMux`, sans-I/O (see the module docs).
#[derive(Debug)]
pub struct Mux {
    config: MuxConfig,
    watches: WatchMap,
    types: BTreeMap<String, TypeState>,
    store: Store,
    not_found: NotFound,
    /// When held TTL'd resources expire (C17).
    expiry: Expiry,
    paused: BTreeMap<String, usize>,
    /// Streams open now, and the numbers reports give them.
    streams: StreamIds,
    /// Streams whose first request (with the node, C1) went out.
    node_sent: BTreeSet<StreamKey>,
    /// Internal watch per dependent type (dependency following).
    dep_watches: BTreeMap<String, WatchId>,
    /// Types whose last response was NACKed, with that NACK.
    nacked: BTreeMap<String, Nack>,
    /// Types that received any response since the client started.
    answered: BTreeSet<String>,
    synced: bool,
    /// Watches whose subscription decides its updates (it has callbacks).
    deciding: BTreeSet<WatchId>,
    /// Per type, the update waiting for its callbacks' verdict.
    pending: BTreeMap<String, Pending>,
    out: Output,
}

impl Mux {
    /// A mux with no watches and no stream.
    pub fn new(config: MuxConfig) -> Self {
        let not_found = NotFound::new(config.not_found_timeout);
        Self {
            config,
            watches: WatchMap::default(),
            types: BTreeMap::new(),
            store: Store::default(),
            not_found,
            expiry: Expiry::default(),
            paused: BTreeMap::new(),
            streams: StreamIds::default(),
            node_sent: BTreeSet::new(),
            dep_watches: BTreeMap::new(),
            nacked: BTreeMap::new(),
            answered: BTreeSet::new(),
            synced: false,
            deciding: BTreeSet::new(),
            pending: BTreeMap::new(),
            out: Output::default(),
        }
    }

    /// SotW or Delta.
    pub fn variant(&self) -> Variant {
        self.config.variant
    }

    /// What it applied, per type.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Everything it wants done since the last call: requests, events, reports, proposals.
    pub fn take_output(&mut self) -> Output {
        std::mem::take(&mut self.out)
    }

    /// The merged interest of a type (what the wire subscription covers).
    pub fn wanted(&self, type_url: &str) -> Wanted {
        self.watches.wanted(type_url)
    }

    /// Starts a watch. If everything it wants is already held, it gets the held value at once
    /// and no request goes out (C15).
    pub fn add_watch(&mut self, id: WatchId, type_url: &str, interest: Interest, now: Instant) {
        let interest = interest.normalized();
        let before = self.watches.wanted(type_url);
        self.watches.add(id, type_url, interest.clone(), false);
        self.types
            .entry(type_url.to_string())
            .or_insert_with(|| TypeState::new(type_url));
        if self.can_serve_from_store(type_url, &before, &interest) {
            self.deliver_held(id, type_url);
        }
        self.interest_changed(type_url, before, now);
    }

    /// Starts a watch whose subscription decides each update before it is applied (Envoy's
    /// `SubscriptionCallbacks`): an update it would be told of comes out as a [`Proposal`]
    /// and waits for [`Mux::decide`].
    pub fn add_deciding_watch(
        &mut self,
        id: WatchId,
        type_url: &str,
        interest: Interest,
        now: Instant,
    ) {
        self.deciding.insert(id);
        self.add_watch(id, type_url, interest, now);
    }

    /// Changes what a watch wants; only names new to (or gone from) the whole type reach the wire.
    pub fn set_interest(&mut self, id: WatchId, interest: Interest, now: Instant) {
        let interest = interest.normalized();
        let Some(type_url) = self.watches.type_of(id).map(str::to_string) else {
            return;
        };
        let before = self.watches.wanted(&type_url);
        let serve = self.can_serve_from_store(&type_url, &before, &interest);
        self.watches.set_interest(id, interest);
        if serve {
            self.deliver_held(id, &type_url);
        }
        self.interest_changed(&type_url, before, now);
    }

    /// Ends a watch (Envoy's watch removal); names nobody wants any more leave the wire interest.
    pub fn remove_watch(&mut self, id: WatchId, now: Instant) {
        let Some(type_url) = self.watches.type_of(id).map(str::to_string) else {
            return;
        };
        let before = self.watches.wanted(&type_url);
        self.watches.remove(id);
        self.deciding.remove(&id);
        self.interest_changed(&type_url, before, now);
    }

    /// Holds back requests of a type (ACKs included) until the matching [`Mux::resume`].
    pub fn pause(&mut self, type_url: &str) {
        *self.paused.entry(type_url.to_string()).or_default() += 1;
    }

    /// Undoes one [`Mux::pause`] of the type; when none is left, what was held back goes out as one
    /// request.
    pub fn resume(&mut self, type_url: &str, now: Instant) {
        if let Some(count) = self.paused.get_mut(type_url) {
            *count -= 1;
            if *count == 0 {
                self.paused.remove(type_url);
            }
        }
        self.flush(now);
    }

    /// When the next not-found or expiry timer fires, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        let timers = [self.not_found.next_deadline(), self.expiry.next_deadline()];
        timers.into_iter().flatten().min()
    }

    fn interest_changed(&mut self, type_url: &str, before: Wanted, now: Instant) {
        let after = self.watches.wanted(type_url);
        if before == after {
            return;
        }
        if let Some(state) = self.types.get_mut(type_url) {
            state.mark_dirty();
        }
        if !after.wildcard {
            let held = self.store.held_versions(type_url);
            let dropped: Vec<String> = held.into_keys().filter(|n| !after.wants(n)).collect();
            // Nobody wants them any more: forget them like Envoy drops unwatched resources.
            for name in self.store.forget(type_url, &dropped) {
                self.expiry.forget(type_url, &name);
                self.out.store_changed = true;
            }
        }
        for name in before.names.difference(&after.names) {
            self.not_found.forget(type_url, name);
        }
        self.flush(now);
        self.check_synced();
    }

    fn can_serve_from_store(&self, type_url: &str, before: &Wanted, interest: &Interest) -> bool {
        let Some(store) = self.store.of_type(type_url) else {
            return false;
        };
        match interest {
            Interest::Wildcard => before.wildcard,
            Interest::Names(names) => {
                !names.is_empty() && names.iter().all(|n| store.resources.contains_key(n))
            }
        }
    }

    /// Builds and queues every owed request, types in make-before-break order (C11).
    fn flush(&mut self, now: Instant) {
        let mut order: Vec<String> = self
            .types
            .keys()
            .filter(|t| self.is_live(t))
            .cloned()
            .collect();
        order.sort_by_key(|t| (type_url::order(t), t.clone()));
        for type_url in order {
            if self.paused.contains_key(&type_url) {
                continue;
            }
            self.send_owed(&type_url, now);
        }
    }

    fn send_owed(&mut self, type_url: &str, now: Instant) {
        let wanted = self.watches.wanted(type_url);
        let stream = self.stream_of(type_url);
        let node = (!self.node_sent.contains(&stream)).then(|| self.config.node.clone());
        let held = self.store.held_versions(type_url);
        let Some(state) = self.types.get_mut(type_url) else {
            return;
        };
        if !state.needs_request() {
            return;
        }
        let step = state.next_step();
        let request = match self.config.variant {
            Variant::Sotw => state.build_sotw(&wanted, node).map(Outgoing::Sotw),
            Variant::Delta => state.build_delta(&wanted, &held, node).map(Outgoing::Delta),
        };
        let Some(request) = request else {
            return;
        };
        self.node_sent.insert(stream.clone());
        for name in wanted.names.iter().filter(|n| !held.contains_key(*n)) {
            self.not_found.start(type_url, name, now);
        }
        tracing::debug!(
            type_url,
            nonce = request.response_nonce(),
            nack = request.error().is_some(),
            "request queued"
        );
        self.report_sent(&stream, step, &request);
        self.out.requests.push(request);
    }

    fn report_sent(&mut self, stream: &StreamKey, step: Step, request: &Outgoing) {
        self.out.reports.push(Report::Sent(Box::new(SentReport {
            stream: self.streams.id_of(stream),
            step,
            request: request.clone(),
        })));
    }

    /// Emits [`Report::Synced`] when every wanted type has answered and every wanted name is
    /// held, known missing, or NACKed.
    fn check_synced(&mut self) {
        let synced = !self.types.is_empty()
            && self.types.keys().all(|t| {
                let wanted = self.watches.wanted(t);
                wanted.is_empty()
                    || (self.answered.contains(t)
                        && (self.nacked.contains_key(t)
                            || wanted.names.iter().all(|n| {
                                self.store.holds(t, n) || self.not_found.is_missing(t, n)
                            })))
            });
        if synced && !self.synced {
            self.out.reports.push(Report::Synced);
        }
        self.synced = synced;
    }
}

// ------------------------------------------------------------------------------------------
// Responses and timers: validate, apply to the store, ACK or NACK, tell subscriptions, follow
// dependencies.

/// The reply to a response of a type nobody subscribed to (C8): a NACK with this message.
pub(crate) const UNWATCHED: &str = "no subscription for this type";

/// The TTL of each resource about to be applied.
fn ttls(resources: &[Decoded]) -> Vec<(String, Option<Duration>)> {
    resources.iter().map(|r| (r.name.clone(), r.ttl)).collect()
}

/// Internal watch ids count down from the top so they never meet subscriber ids.
const FIRST_INTERNAL_WATCH: u64 = u64::MAX;

impl Mux {
    /// Handles a SotW response: exactly one ACK or NACK follows (C4).
    pub fn on_sotw_response(
        &mut self,
        mut response: DiscoveryResponse,
        now: Instant,
        at: SystemTime,
    ) {
        self.report_sotw_received(&response);
        let type_url = response.type_url.clone();
        if !self.types.contains_key(&type_url) {
            return self.reply_unwatched(&type_url, &response.nonce);
        }
        let validator = self.config.validator.as_ref();
        let result = validate::sotw(
            &self.config.codec,
            &type_url,
            std::mem::take(&mut response.resources),
            validator,
        );
        let (version, nonce) = (&response.version_info, &response.nonce);
        let result = result.and_then(|v| {
            self.check_sotw_heartbeats(&type_url, version, &v.heartbeats)?;
            Ok(v)
        });
        match result {
            Err(rejection) => self.rejected(&type_url, version, nonce, &rejection, at),
            Ok(v) if v.resources.is_empty() && !v.heartbeats.is_empty() => {
                self.heartbeat_only(&type_url, version, nonce, &v.heartbeats, (now, at));
            }
            Ok(Validated {
                resources: decoded,
                heartbeats,
            }) => {
                let wanted = self.watches.wanted(&type_url);
                // Resources that were not asked for are ignored (C8).
                let resources: Vec<_> = decoded
                    .into_iter()
                    .filter(|d| wanted.wants(&d.name))
                    .collect();
                let update = Candidate {
                    version: version.clone(),
                    nonce: nonce.clone(),
                    at,
                    changes: Changes::Sotw {
                        resources,
                        heartbeats,
                    },
                };
                let Some(update) = self.propose(&type_url, update, now) else {
                    // Held back until the callbacks answer (`Mux::decide`).
                    return;
                };
                self.commit(&type_url, update, &[], now);
            }
        }
        self.finish_response(&type_url, now);
    }

    /// Handles a Delta response: exactly one ACK or NACK follows (C4).
    pub fn on_delta_response(
        &mut self,
        mut response: DeltaDiscoveryResponse,
        now: Instant,
        at: SystemTime,
    ) {
        self.report_delta_received(&response);
        let type_url = response.type_url.clone();
        if !self.types.contains_key(&type_url) {
            return self.reply_unwatched(&type_url, &response.nonce);
        }
        let validator = self.config.validator.as_ref();
        let codec = &self.config.codec;
        let resources = std::mem::take(&mut response.resources);
        let removed = &response.removed_resources;
        let result = validate::delta(codec, &type_url, resources, removed, validator);
        let (version, nonce) = (&response.system_version_info, &response.nonce);
        match result {
            Err(rejection) => self.rejected(&type_url, version, nonce, &rejection, at),
            Ok((v, removed))
                if v.resources.is_empty() && removed.is_empty() && !v.heartbeats.is_empty() =>
            {
                self.heartbeat_only(&type_url, version, nonce, &v.heartbeats, (now, at));
            }
            Ok((
                Validated {
                    resources: added,
                    heartbeats,
                },
                removed,
            )) => {
                let wanted = self.watches.wanted(&type_url);
                let added: Vec<_> = added
                    .into_iter()
                    .filter(|d| wanted.wants(&d.name))
                    .collect();
                let update = Candidate {
                    version: version.clone(),
                    nonce: nonce.clone(),
                    at,
                    changes: Changes::Delta {
                        added,
                        removed,
                        heartbeats,
                    },
                };
                let Some(update) = self.propose(&type_url, update, now) else {
                    // Held back until the callbacks answer (`Mux::decide`).
                    return;
                };
                self.commit(&type_url, update, &[], now);
            }
        }
        self.finish_response(&type_url, now);
    }

    /// Envoy's `SubscriptionCallbacks::onConfigUpdate` returning: the callbacks' verdict on
    /// the update of `type_url` held back in a [`Proposal`]. `Ok` applies it and ACKs;
    /// `Err` NACKs it with the rejection's message, and the type keeps its last good config
    /// and version (C5). `nonce` is the [`Proposal`]'s: a verdict for an update no longer held
    /// back (its stream closed meanwhile, or a newer response superseded it) is ignored, so it
    /// can never decide another update of the type.
    pub fn decide(
        &mut self,
        type_url: &str,
        nonce: &str,
        verdict: Result<(), Rejection>,
        now: Instant,
    ) {
        if self.pending.get(type_url).map(|p| p.update.nonce.as_str()) != Some(nonce) {
            tracing::debug!(
                type_url,
                nonce,
                "verdict for an update no longer held: ignored"
            );
            return;
        }
        let Some(Pending { update, asked }) = self.pending.remove(type_url) else {
            return;
        };
        match verdict {
            Ok(()) => self.commit(type_url, update, &asked, now),
            Err(mut rejection) => {
                if rejection.names.is_empty() {
                    rejection.names = update.changes.names();
                }
                let (version, nonce) = (&update.version, &update.nonce);
                self.rejected(type_url, version, nonce, &rejection, update.at);
            }
        }
        self.finish_response(type_url, now);
    }

    /// Holds `update` back if a subscription of the type decides (it registered callbacks)
    /// and would be told of it: queues a [`Proposal`] with what each such subscription would
    /// get, and returns `None`. Otherwise gives the update back to be applied at once.
    fn propose(&mut self, type_url: &str, update: Candidate, now: Instant) -> Option<Candidate> {
        if let Some(stale) = self.pending.remove(type_url) {
            // The loop fed a response before answering the last one: that one is not applied,
            // and still gets its one reply (C4).
            let why =
                Rejection::new("superseded by a newer response before its callbacks answered");
            let (version, nonce) = (&stale.update.version, &stale.update.nonce);
            // Its proposal is void: no verdict is asked for an update already answered.
            self.out
                .proposals
                .retain(|p| !(p.type_url == type_url && &p.nonce == nonce));
            self.rejected(type_url, version, nonce, &why, stale.update.at);
            self.flush(now);
        }
        let deciding = self
            .watches
            .subscribers(type_url)
            .any(|(id, _, _)| self.deciding.contains(&id));
        if !deciding {
            return Some(update);
        }
        // What the subscriptions would be told, from a copy of the store with the update in.
        let mut trial = self.store.clone();
        let stamp = Stamp {
            version: &update.version,
            nonce: &update.nonce,
            at: update.at,
        };
        let events = match &update.changes {
            Changes::Sotw {
                resources,
                heartbeats,
            } => {
                let kept = self.current_heartbeats(type_url, heartbeats);
                let full = type_url::full_state(type_url);
                let resources = resources.clone();
                let diff = trial.apply_sotw(type_url, stamp, resources, full, &kept);
                sotw_events(&trial, &self.watches, type_url, &diff)
            }
            Changes::Delta { added, removed, .. } => {
                let diff = trial.apply_delta(type_url, stamp, added.clone(), removed);
                delta_events(&trial, &self.watches, type_url, &diff)
            }
        };
        let asks: Vec<(WatchId, Event)> = events
            .into_iter()
            .filter(|(id, _)| self.deciding.contains(id))
            .collect();
        if asks.is_empty() {
            return Some(update);
        }
        tracing::debug!(type_url, version = %update.version, "update held for its callbacks");
        self.out.proposals.push(Proposal {
            type_url: type_url.to_string(),
            version: update.version.clone(),
            nonce: update.nonce.clone(),
            asks: asks.clone(),
        });
        let asked = asks.into_iter().map(|(id, _)| id).collect();
        self.pending
            .insert(type_url.to_string(), Pending { update, asked });
        None
    }

    /// Applies an accepted update: store, TTLs, ACK, events (except to the subscriptions in
    /// `asked`, which saw it when they decided), the update report.
    fn commit(&mut self, type_url: &str, update: Candidate, asked: &[WatchId], now: Instant) {
        let Candidate {
            version,
            nonce,
            at,
            changes,
        } = update;
        let stamp = Stamp {
            version: &version,
            nonce: &nonce,
            at,
        };
        let mut missing = Vec::new();
        let (diff, events) = match changes {
            Changes::Sotw {
                resources,
                heartbeats,
            } => {
                for resource in &resources {
                    self.not_found.received(type_url, &resource.name);
                }
                let ttls = ttls(&resources);
                let kept = self.refresh(type_url, &heartbeats, now);
                let full = type_url::full_state(type_url);
                let diff = self
                    .store
                    .apply_sotw(type_url, stamp, resources, full, &kept);
                self.set_ttls(type_url, ttls, &diff, now);
                let events = sotw_events(&self.store, &self.watches, type_url, &diff);
                (diff, events)
            }
            Changes::Delta {
                added,
                removed,
                heartbeats,
            } => {
                for resource in &added {
                    self.not_found.received(type_url, &resource.name);
                }
                self.refresh(type_url, &heartbeats, now);
                let ttls = ttls(&added);
                let diff = self.store.apply_delta(type_url, stamp, added, &removed);
                self.set_ttls(type_url, ttls, &diff, now);
                // A removal of an explicitly wanted name means it does not exist, at once.
                let wanted = self.watches.wanted(type_url);
                missing = removed
                    .iter()
                    .filter(|n| wanted.names.contains(*n))
                    .filter(|n| self.not_found.mark_missing(type_url, n))
                    .cloned()
                    .collect();
                let events = delta_events(&self.store, &self.watches, type_url, &diff);
                (diff, events)
            }
        };
        self.types
            .get_mut(type_url)
            .expect("checked")
            .ack(&nonce, &version);
        self.deliver(events, asked);
        self.accepted(type_url, &version, &nonce, diff, at);
        self.report_missing(type_url, missing, at);
    }

    /// An update that could not even be read — a REST body that is not a DiscoveryResponse, a
    /// watched file that is unreadable or malformed — is rejected like an invalid response:
    /// the last good config and version stay (C5) and subscriptions hear of the failure.
    pub fn reject_update(
        &mut self,
        type_url: &str,
        version: &str,
        nonce: &str,
        reason: &str,
        now: Instant,
        at: SystemTime,
    ) {
        if !self.types.contains_key(type_url) {
            return;
        }
        let rejection = Rejection {
            problems: vec![reason.to_string()],
            ..Default::default()
        };
        self.rejected(type_url, version, nonce, &rejection, at);
        self.finish_response(type_url, now);
    }

    /// Not-found timers that expired by `now` are reported missing (C14); TTL'd resources
    /// whose TTL lapsed are removed (C17).
    pub fn on_timer(&mut self, now: Instant, at: SystemTime) {
        self.expire(now, at);
        let expired = self.not_found.expired(now);
        let mut by_type: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (type_url, name) in expired {
            by_type.entry(type_url).or_default().push(name);
        }
        for (type_url, names) in by_type {
            self.report_missing(&type_url, names, at);
        }
        self.check_synced();
    }

    fn report_missing(&mut self, type_url: &str, names: Vec<String>, at: SystemTime) {
        if names.is_empty() {
            return;
        }
        tracing::info!(type_url, ?names, "resources not found");
        let subscribers: Vec<_> = self
            .watches
            .subscribers(type_url)
            .map(|(id, interest, _)| (id, interest.clone()))
            .collect();
        for (id, interest) in subscribers {
            let mine: Vec<String> = names
                .iter()
                .filter(|n| interest.wants(n))
                .cloned()
                .collect();
            if !mine.is_empty() {
                let event = Event::Missing {
                    type_url: type_url.to_string(),
                    names: mine,
                };
                self.out.deliveries.push((id, event));
            }
        }
        let report = Report::NotFound {
            at,
            type_url: type_url.to_string(),
            names,
        };
        self.out.reports.push(report);
    }

    fn rejected(
        &mut self,
        type_url: &str,
        version: &str,
        nonce: &str,
        why: &Rejection,
        at: SystemTime,
    ) {
        let message = why.message();
        tracing::warn!(type_url, version, nonce, error = %message, "update rejected");
        // The server answered; the client refused what it got. Envoy stops the
        // subscription's init-fetch timer on a rejected update: what was asked for is not
        // "not found" (CSDS says NACKED).
        self.not_found.on_rejected(type_url);
        let state = self.types.get_mut(type_url).expect("caller checked");
        state.nack(nonce, &message);
        let nack = Nack {
            version: version.to_string(),
            message: message.clone(),
            at,
            names: why.names.clone(),
        };
        self.nacked.insert(type_url.to_string(), nack);
        self.answered.insert(type_url.to_string());
        self.out.reports.push(Report::Update(UpdateReport {
            at,
            mode: self.config.variant,
            source: self.config.source,
            type_url: type_url.to_string(),
            version: version.to_string(),
            nonce: nonce.to_string(),
            verdict: Verdict::Nack(message.clone()),
            diff: Diff::default(),
        }));
        let ids: Vec<_> = self
            .watches
            .subscribers(type_url)
            .map(|(id, _, _)| id)
            .collect();
        for id in ids {
            let reason = Failure::Rejected(message.clone());
            let event = Event::Failed {
                type_url: type_url.to_string(),
                reason,
            };
            self.out.deliveries.push((id, event));
        }
    }

    fn accepted(&mut self, type_url: &str, version: &str, nonce: &str, diff: Diff, at: SystemTime) {
        tracing::info!(type_url, version, nonce, ?diff, "update applied");
        self.nacked.remove(type_url);
        self.answered.insert(type_url.to_string());
        self.out.store_changed = true;
        self.out.reports.push(Report::Update(UpdateReport {
            at,
            mode: self.config.variant,
            source: self.config.source,
            type_url: type_url.to_string(),
            version: version.to_string(),
            nonce: nonce.to_string(),
            verdict: Verdict::Ack,
            diff,
        }));
    }

    /// C17: each applied resource's TTL (none clears an earlier one); removed ones are gone.
    fn set_ttls(
        &mut self,
        type_url: &str,
        ttls: Vec<(String, Option<Duration>)>,
        diff: &Diff,
        now: Instant,
    ) {
        for (name, ttl) in ttls {
            self.expiry.set(type_url, &name, ttl, now);
        }
        for name in &diff.removed {
            self.expiry.forget(type_url, name);
        }
    }

    /// Sends the parent's ACK or NACK, then the dependent type's coalesced request (C12).
    fn finish_response(&mut self, type_url: &str, now: Instant) {
        let child = self.follow_dependencies(type_url, now);
        self.flush(now);
        if let Some(child) = child {
            self.resume(child, now);
        }
        self.check_synced();
    }

    /// Recomputes the dependent names of `type_url` with the child type paused; returns the
    /// paused child, which the caller resumes after the parent's reply went out.
    fn follow_dependencies(&mut self, type_url: &str, now: Instant) -> Option<&'static str> {
        if !self.config.follow_deps || self.nacked.contains_key(type_url) {
            return None;
        }
        let child = deps::child_of(type_url)?;
        if self.config.unfollowed.contains(child) {
            return None;
        }
        self.pause(child);
        let held = self.store.of_type(type_url);
        let bytes = held
            .into_iter()
            .flat_map(|t| t.resources.values())
            .map(|r| &r.bytes[..]);
        let names = deps::names_for(type_url, bytes);
        let interest = Interest::Names(names);
        match self.dep_watches.get(child).copied() {
            Some(id) => self.set_interest(id, interest, now),
            None => {
                let id = FIRST_INTERNAL_WATCH - self.dep_watches.len() as u64;
                self.dep_watches.insert(child.to_string(), id);
                let before = self.watches.wanted(child);
                self.watches.add(id, child, interest, true);
                self.types
                    .entry(child.to_string())
                    .or_insert_with(|| crate::core::request::TypeState::new(child));
                self.interest_changed(child, before, now);
            }
        }
        Some(child)
    }

    /// C8: a response for a type nobody subscribed to is NACKed, and nothing else happens.
    fn reply_unwatched(&mut self, type_url: &str, nonce: &str) {
        tracing::warn!(type_url, nonce, "response for a type with no subscription");
        let stream = self.stream_of(type_url);
        if !self.streams.is_open(&stream) {
            return;
        }
        let node = (!self.node_sent.contains(&stream)).then(|| self.config.node.clone());
        self.node_sent.insert(stream.clone());
        let error_detail = Some(nack_detail(UNWATCHED));
        let request = match self.config.variant {
            Variant::Sotw => Outgoing::Sotw(DiscoveryRequest {
                node,
                type_url: type_url.to_string(),
                response_nonce: nonce.to_string(),
                error_detail,
                ..Default::default()
            }),
            Variant::Delta => Outgoing::Delta(DeltaDiscoveryRequest {
                node,
                type_url: type_url.to_string(),
                response_nonce: nonce.to_string(),
                error_detail,
                ..Default::default()
            }),
        };
        self.report_sent(&stream, Step::Nack, &request);
        self.out.requests.push(request);
    }
}

// ------------------------------------------------------------------------------------------
// Handing what was applied to the subscriptions that want it: SotW and Delta updates after a
// response, and the held resources a new watch gets at once (C15).

impl Mux {
    /// Hands `events` to their subscriptions, except those in `asked` (they saw the update
    /// when they decided it); every one of them counts as primed.
    fn deliver(&mut self, events: Vec<(WatchId, Event)>, asked: &[WatchId]) {
        for (id, event) in events {
            self.watches.set_primed(id);
            if !asked.contains(&id) {
                self.out.deliveries.push((id, event));
            }
        }
    }

    /// C15: a new watch whose resources are all held gets them now.
    fn deliver_held(&mut self, id: u64, type_url: &str) {
        if self.watches.is_internal(id) {
            return;
        }
        let (Some(store), Some(interest)) =
            (self.store.of_type(type_url), self.watches.interest(id))
        else {
            return;
        };
        let resources: Vec<_> = store
            .resources
            .values()
            .filter(|r| interest.wants(&r.name))
            .cloned()
            .collect();
        let type_url = type_url.to_string();
        let event = match self.config.variant {
            Variant::Sotw => Event::Sotw {
                type_url,
                version: store.version.clone(),
                resources,
            },
            Variant::Delta => Event::Delta {
                type_url,
                system_version: store.version.clone(),
                added: resources,
                removed: Vec::new(),
            },
        };
        self.out.deliveries.push((id, event));
        self.watches.set_primed(id);
    }
}

/// SotW: each subscription whose resources changed (or that has had nothing yet) gets every
/// resource of `store` it wants.
fn sotw_events(
    store: &Store,
    watches: &WatchMap,
    type_url: &str,
    diff: &Diff,
) -> Vec<(WatchId, Event)> {
    let Some(store) = store.of_type(type_url) else {
        return Vec::new();
    };
    let mut events = Vec::new();
    for (id, interest, was_primed) in watches.subscribers(type_url) {
        if was_primed && !diff.touches(|n| interest.wants(n)) {
            continue;
        }
        let resources = store.resources.values().filter(|r| interest.wants(&r.name));
        let event = Event::Sotw {
            type_url: type_url.to_string(),
            version: store.version.clone(),
            resources: resources.cloned().collect(),
        };
        events.push((id, event));
    }
    events
}

/// Delta: each subscription gets what changed among the names it wants.
fn delta_events(
    store: &Store,
    watches: &WatchMap,
    type_url: &str,
    diff: &Diff,
) -> Vec<(WatchId, Event)> {
    let Some(store) = store.of_type(type_url) else {
        return Vec::new();
    };
    let mut events = Vec::new();
    for (id, interest, was_primed) in watches.subscribers(type_url) {
        let changed = diff
            .added
            .iter()
            .chain(&diff.updated)
            .filter(|n| interest.wants(n));
        let added: Vec<_> = changed
            .filter_map(|n| store.resources.get(n))
            .cloned()
            .collect();
        let removed: Vec<String> = diff
            .removed
            .iter()
            .filter(|n| interest.wants(n))
            .cloned()
            .collect();
        if was_primed && added.is_empty() && removed.is_empty() {
            continue;
        }
        let event = Event::Delta {
            type_url: type_url.to_string(),
            system_version: store.version.clone(),
            added,
            removed,
        };
        events.push((id, event));
    }
    events
}

// ------------------------------------------------------------------------------------------
// TTLs on the client (C17): heartbeats refresh held resources without counting as an update,
// and a resource whose TTL lapses is removed and reported `Expired`, like Envoy's TTL manager.

impl Mux {
    /// SotW: a heartbeat (a wrapper without `resource`) carries the version the client holds;
    /// in a response of another version it is an error.
    fn check_sotw_heartbeats(
        &self,
        type_url: &str,
        version: &str,
        heartbeats: &[Heartbeat],
    ) -> Result<(), Rejection> {
        let held = self.types.get(type_url).map(|t| t.version.as_str());
        let Some(first) = heartbeats.first().filter(|_| held != Some(version)) else {
            return Ok(());
        };
        let problem = format!(
            "resource \"{}\": a Resource without resource (a heartbeat) in a response of version \
             {version:?}, but the held version is {:?}",
            first.name,
            held.unwrap_or_default()
        );
        Err(Rejection {
            problems: vec![problem],
            names: heartbeats.iter().map(|h| h.name.clone()).collect(),
        })
    }

    /// Refreshes the TTLs of the heartbeats that name a held resource (Delta: at the version
    /// held); returns their names.
    fn refresh(&mut self, type_url: &str, beats: &[Heartbeat], now: Instant) -> Vec<String> {
        let current = self.current_heartbeats(type_url, beats);
        for beat in beats.iter().filter(|b| current.contains(&b.name)) {
            self.expiry.refresh(type_url, &beat.name, beat.ttl, now);
        }
        current
    }

    /// The heartbeats that name a held resource (Delta: at the version held).
    fn current_heartbeats(&self, type_url: &str, beats: &[Heartbeat]) -> Vec<String> {
        let held = self.store.held_versions(type_url);
        let mut refreshed = Vec::new();
        for beat in beats {
            let current = match self.config.variant {
                Variant::Sotw => held.contains_key(&beat.name),
                Variant::Delta => held.get(&beat.name) == Some(&beat.version),
            };
            if !current {
                tracing::debug!(type_url, name = %beat.name, "heartbeat for a resource not held: ignored");
                continue;
            }
            refreshed.push(beat.name.clone());
        }
        refreshed
    }

    /// A response that only held heartbeats: ACKed, TTLs refreshed, no update (C17).
    fn heartbeat_only(
        &mut self,
        type_url: &str,
        version: &str,
        nonce: &str,
        beats: &[Heartbeat],
        (now, at): (Instant, SystemTime),
    ) {
        let names = self.refresh(type_url, beats, now);
        tracing::debug!(type_url, version, nonce, ?names, "heartbeat");
        self.types
            .get_mut(type_url)
            .expect("checked")
            .ack(nonce, version);
        self.answered.insert(type_url.to_string());
        let type_url = type_url.to_string();
        self.out.reports.push(Report::Heartbeat {
            at,
            type_url,
            names,
        });
    }

    /// Held resources whose TTL lapsed by `now` are removed, delivered as removals and
    /// reported; a name still wanted counts as missing until the server sends it again.
    fn expire(&mut self, now: Instant, at: SystemTime) {
        let mut by_type: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (type_url, name) in self.expiry.expired(now) {
            by_type.entry(type_url).or_default().push(name);
        }
        for (type_url, names) in by_type {
            let names = self.store.forget(&type_url, &names);
            if names.is_empty() {
                continue;
            }
            tracing::info!(
                type_url,
                ?names,
                "resources expired (TTL lapsed without a heartbeat)"
            );
            let wanted = self.watches.wanted(&type_url);
            for name in names.iter().filter(|n| wanted.names.contains(*n)) {
                self.not_found.mark_missing(&type_url, name);
            }
            let diff = Diff {
                removed: names.clone(),
                ..Diff::default()
            };
            let events = match self.config.variant {
                Variant::Sotw => sotw_events(&self.store, &self.watches, &type_url, &diff),
                Variant::Delta => delta_events(&self.store, &self.watches, &type_url, &diff),
            };
            self.deliver(events, &[]);
            self.out.store_changed = true;
            self.out.reports.push(Report::Expired {
                at,
                type_url,
                names,
            });
        }
    }
}

// ------------------------------------------------------------------------------------------
// The streams the mux rides on: which stream carries a type, which should be open, and what
// their opening (resubscribe everything it carries, C11) and closing (C13, C14) do.

impl Mux {
    /// The stream carrying `type_url`'s requests.
    pub fn stream_of(&self, type_url: &str) -> StreamKey {
        if self.config.source.per_type_streams() {
            StreamKey::Type(type_url.to_string())
        } else {
            StreamKey::Aggregated
        }
    }

    /// The streams that should be open: those of every type with a non-empty interest.
    pub fn streams_wanted(&self) -> BTreeSet<StreamKey> {
        self.types
            .keys()
            .filter(|t| !self.watches.wanted(t).is_empty())
            .map(|t| self.stream_of(t))
            .collect()
    }

    fn is_live(&self, type_url: &str) -> bool {
        self.streams.is_open(&self.stream_of(type_url))
    }

    /// A new aggregated stream is live (see [`Mux::on_stream_open`]).
    pub fn on_stream_start(&mut self, now: Instant) {
        self.on_stream_open(&StreamKey::Aggregated, now);
    }

    /// A new stream is live: forget its per-stream state and resubscribe every type it carries
    /// (C11); its first request carries the node (C1).
    pub fn on_stream_open(&mut self, stream: &StreamKey, now: Instant) {
        let opened = self.streams.open(stream);
        self.out.reports.push(Report::StreamOpened(opened));
        self.node_sent.remove(stream);
        let types: Vec<String> = self.types_on(stream);
        for type_url in types {
            if let Some(state) = self.types.get_mut(&type_url) {
                state.on_stream_start();
            }
        }
        self.flush(now);
    }

    /// The aggregated stream ended (see [`Mux::on_stream_closed`]).
    pub fn on_stream_end(&mut self, end: impl Into<StreamEnd>) {
        self.on_stream_closed(&StreamKey::Aggregated, end);
    }

    /// A stream ended. Applied resources stay valid (C13); its types' timers stop (C14) and
    /// their subscriptions hear of the failure. Other streams are untouched.
    pub fn on_stream_closed(&mut self, stream: &StreamKey, end: impl Into<StreamEnd>) {
        let Some(closed) = self.streams.close(stream) else {
            return;
        };
        let end = end.into();
        let reason = end.reason.as_str();
        let types = self.types_on(stream);
        for type_url in &types {
            self.not_found.on_disconnect(type_url);
            // Its nonce is dead with the stream: the new stream's first response replaces it.
            self.pending.remove(type_url);
        }
        let ids: Vec<(WatchId, String)> = types
            .iter()
            .flat_map(|t| {
                self.watches
                    .subscribers(t)
                    .map(|(id, _, _)| (id, t.clone()))
            })
            .collect();
        for (id, type_url) in ids {
            let reason = Failure::ConnectionFailure(reason.to_string());
            self.out
                .deliveries
                .push((id, Event::Failed { type_url, reason }));
        }
        self.out.reports.push(Report::StreamClosed {
            stream: closed,
            end,
        });
    }

    fn types_on(&self, stream: &StreamKey) -> Vec<String> {
        self.types
            .keys()
            .filter(|t| self.stream_of(t) == *stream)
            .cloned()
            .collect()
    }
}

// ------------------------------------------------------------------------------------------
// [`Report::Received`]: each response as it arrived, before it is checked, for observers that
// narrate or record the loop. Built only when the config asks for it.

impl Mux {
    fn report_sotw_received(&mut self, response: &DiscoveryResponse) {
        let detail = self.config.received;
        if detail == ReceivedReports::Off {
            return;
        }
        let mut report = self.received(Variant::Sotw, &response.type_url, response.encoded_len());
        report.version = response.version_info.clone();
        report.nonce = response.nonce.clone();
        for any in &response.resources {
            match sotw_entry(&self.config.codec, detail, any) {
                Some(entry) => report.resources.push(entry),
                None => report.undecodable += 1,
            }
        }
        self.out.reports.push(Report::Received(Box::new(report)));
    }

    fn report_delta_received(&mut self, response: &DeltaDiscoveryResponse) {
        let detail = self.config.received;
        if detail == ReceivedReports::Off {
            return;
        }
        let mut report = self.received(Variant::Delta, &response.type_url, response.encoded_len());
        report.version = response.system_version_info.clone();
        report.nonce = response.nonce.clone();
        report.removed = response.removed_resources.clone();
        for resource in &response.resources {
            let any = resource.resource.as_ref();
            let name = match (resource.name.as_str(), any) {
                ("", Some(any)) => name_of(&self.config.codec, any),
                ("", None) => None,
                (name, _) => Some(name.to_string()),
            };
            let Some(name) = name else {
                report.undecodable += 1;
                continue;
            };
            report.resources.push(ReceivedResource {
                name,
                version: Some(resource.version.clone()),
                body: any.and_then(|any| body(detail, any)),
                // Removals travel in `removed_resources`: an entry without a body is a
                // heartbeat.
                heartbeat: any.is_none(),
            });
        }
        self.out.reports.push(Report::Received(Box::new(report)));
    }

    fn received(&self, mode: Variant, type_url: &str, bytes: usize) -> ReceivedReport {
        ReceivedReport {
            stream: self.streams.id_of(&self.stream_of(type_url)),
            mode,
            type_url: type_url.to_string(),
            version: String::new(),
            nonce: String::new(),
            resources: Vec::new(),
            removed: Vec::new(),
            undecodable: 0,
            bytes,
        }
    }
}

/// A SotW entry: a bare resource, or a `Resource` wrapper (C17) holding one, or none (a
/// heartbeat for the wrapper's name). `None`: no name could be read.
fn sotw_entry(codec: &Codec, detail: ReceivedReports, any: &Any) -> Option<ReceivedResource> {
    let entry = |name, body, heartbeat| ReceivedResource {
        name,
        version: None,
        body,
        heartbeat,
    };
    if any.type_url != RESOURCE_WRAPPER {
        return Some(entry(name_of(codec, any)?, body(detail, any), false));
    }
    let wrapper = WireResource::decode(any.value.as_slice()).ok()?;
    match &wrapper.resource {
        Some(inner) => Some(entry(name_of(codec, inner)?, body(detail, inner), false)),
        None if wrapper.name.is_empty() => None,
        None => Some(entry(wrapper.name, None, true)),
    }
}

fn name_of(codec: &Codec, any: &Any) -> Option<String> {
    codec.resource_name(&any.type_url, &any.value).ok()
}

fn body(detail: ReceivedReports, any: &Any) -> Option<Any> {
    (detail == ReceivedReports::Bodies).then(|| any.clone())
}

// ------------------------------------------------------------------------------------------
// What this client holds, as CSDS reports it (C18): one `GenericXdsConfig` per resource it
// wants or holds, with Envoy's client statuses.
//
// - ACKED: held, with the version and time of the update that last changed it;
// - NACKED: in the last response of its type, which was rejected: `error_state` has the
//   rejected version and the reason, `xds_config` the resource still held (the last good one);
// - DOES_NOT_EXIST: the not-found timer fired, or a Delta response removed it;
// - REQUESTED: wanted, nothing received yet.
//
// `config_status` stays UNKNOWN (only a server knows whether it sent everything), and
// `client_scope` is the config source's name.

/// A rejected response, kept until the type's next accepted one (CSDS shows it).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Nack {
    /// The rejected response's version.
    version: String,
    message: String,
    at: SystemTime,
    /// The resources it held that could be read; empty: it could not be read at all.
    names: BTreeSet<String>,
}

impl Mux {
    /// This client's CSDS `ClientConfig`; with `contents` false, without the resources
    /// themselves (the request's `exclude_resource_contents`).
    pub fn client_config(&self, contents: bool) -> ClientConfig {
        let mut types: Vec<&String> = self.types.keys().collect();
        types.sort_by_key(|t| (type_url::order(t), t.to_string()));
        let generic_xds_configs = types
            .into_iter()
            .flat_map(|t| self.type_configs(t, contents))
            .collect();
        ClientConfig {
            node: Some(self.config.node.clone()),
            generic_xds_configs,
            client_scope: self.config.source.name().to_string(),
            ..Default::default()
        }
    }

    fn type_configs(&self, type_url: &str, contents: bool) -> Vec<GenericXdsConfig> {
        let wanted = self.watches.wanted(type_url);
        let mut names = wanted.names.clone();
        let held = self.store.of_type(type_url);
        names.extend(held.iter().flat_map(|t| t.resources.keys()).cloned());
        let nack = self.nacked.get(type_url);
        names
            .iter()
            .map(|name| {
                let applied = held.and_then(|t| t.resources.get(name));
                let rejected = nack.filter(|n| n.names.is_empty() || n.names.contains(name));
                let missing = self.not_found.is_missing(type_url, name);
                let mut config = resource_config(type_url, name, applied, rejected, missing);
                if !contents {
                    config.xds_config = None;
                }
                config
            })
            .collect()
    }
}

fn resource_config(
    type_url: &str,
    name: &str,
    applied: Option<&Applied>,
    nack: Option<&Nack>,
    missing: bool,
) -> GenericXdsConfig {
    let mut config = GenericXdsConfig {
        type_url: type_url.to_string(),
        name: name.to_string(),
        ..Default::default()
    };
    if let Some(applied) = applied {
        config.version_info = applied.version.clone();
        config.last_updated = Some(timestamp(applied.applied_at));
        config.xds_config = Some(Any {
            type_url: type_url.to_string(),
            value: applied.bytes.to_vec(),
        });
    }
    config.client_status = match (applied, nack, missing) {
        (_, Some(nack), _) => {
            config.error_state = Some(UpdateFailureState {
                failed_configuration: None,
                last_update_attempt: Some(timestamp(nack.at)),
                details: nack.message.clone(),
                version_info: nack.version.clone(),
            });
            ClientResourceStatus::Nacked
        }
        (Some(_), None, _) => ClientResourceStatus::Acked,
        (None, None, true) => ClientResourceStatus::DoesNotExist,
        (None, None, false) => ClientResourceStatus::Requested,
    } as i32;
    config
}

#[cfg(test)]
mod tests;
