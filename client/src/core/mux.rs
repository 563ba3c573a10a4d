//! The multiplexer: one stream carrying many type watches (Envoy's `GrpcMux`), sans-I/O.
//!
//! Inputs are method calls (`add_watch`, `on_stream_start`, `on_sotw_response`, `on_timer`,
//! ...) with the current time; outputs accumulate in an [`Output`] the I/O loop drains with
//! [`Mux::take_output`]: requests for the wire, events for subscriptions, reports for observers.

mod deliver;
mod received;
mod status;
mod streams;
mod ttl;
mod update;

use self::status::Nack;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use xdsloop_proto::Codec;
use xdsloop_proto::discovery::Node;
use xdsloop_proto::type_url;

use crate::config::ReceivedReports;
use crate::config::SourceKind;
use crate::config::Validator;
use crate::config::Variant;
use crate::core::event::{Event, Report, SentReport, Step};
use crate::core::not_found::NotFound;
use crate::core::request::{Outgoing, TypeState};
use crate::core::store::Store;
use crate::core::stream::StreamIds;
pub use crate::core::stream::StreamKey;
use crate::core::ttl::Expiry;
use crate::core::watch_map::{Interest, Wanted, WatchId, WatchMap};

/// How the mux behaves; fixed for the life of a client.
#[derive(Clone)]
pub struct MuxConfig {
    pub mode: Variant,
    /// Which config source the wire is: decides whether every type shares one stream and
    /// labels the reports.
    pub source: SourceKind,
    pub node: Node,
    /// Follow LDS → RDS and CDS → EDS references (C12).
    pub follow_deps: bool,
    pub not_found_timeout: Duration,
    pub validator: Option<Validator>,
    pub codec: Codec,
    /// Whether each response is reported as it arrives ([`Report::Received`]).
    pub received: ReceivedReports,
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
            mode: source.mode(),
            source,
            node,
            follow_deps: false,
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
    pub reports: Vec<Report>,
    /// The store changed (observers of the store should be told).
    pub store_changed: bool,
}

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
    out: Output,
}

impl Mux {
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
            out: Output::default(),
        }
    }

    pub fn mode(&self) -> Variant {
        self.config.mode
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

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

    pub fn remove_watch(&mut self, id: WatchId, now: Instant) {
        let Some(type_url) = self.watches.type_of(id).map(str::to_string) else {
            return;
        };
        let before = self.watches.wanted(&type_url);
        self.watches.remove(id);
        self.interest_changed(&type_url, before, now);
    }

    /// Holds back requests of a type (ACKs included) until the matching [`Mux::resume`].
    pub fn pause(&mut self, type_url: &str) {
        *self.paused.entry(type_url.to_string()).or_default() += 1;
    }

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
        let request = match self.config.mode {
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

#[cfg(test)]
mod tests;
