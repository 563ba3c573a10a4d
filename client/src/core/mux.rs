//! The multiplexer: one stream carrying many type watches (Envoy's `GrpcMux`), sans-I/O.
//!
//! Inputs are method calls (`add_watch`, `on_stream_start`, `on_sotw_response`, `on_timer`,
//! ...) with the current time; outputs accumulate in an [`Output`] the I/O loop drains with
//! [`Mux::take_output`]: requests for the wire, events for subscriptions, reports for observers.
//!
//! This file holds the mux's state; each concept is a file of its own `impl Mux`:
//! - `watch`: what subscriptions want, merged per type; `requests`: what is owed to the wire,
//!   in order, and pause/resume; `stream`: the streams types ride on, opened and closed;
//! - `wire`: all that SotW and Delta differ in; `update`: a response validated, applied and
//!   ACKed, or NACKed; `decide`: updates held for the subscriptions' callbacks; `follow`:
//!   dependent types (C12);
//! - `delivery`: what each subscription is told; `missing`: names that do not exist, and the
//!   timer input; `ttl`: heartbeats and expiry (C17);
//! - `received`: each response reported as it arrived; `csds`: what the client holds, as CSDS
//!   shows it.

mod csds;
mod decide;
mod delivery;
mod follow;
mod missing;
mod received;
mod requests;
mod stream;
mod ttl;
mod update;
mod watch;
mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use xdsloop_proto::Codec;
use xdsloop_proto::discovery::Node;

use self::csds::Nack;
use self::decide::Pending;
pub use self::decide::Proposal;
use crate::config::{ReceivedReports, SourceKind, Validator, Variant};
use crate::core::event::{Event, Report};
use crate::core::not_found::NotFound;
use crate::core::request::{Outgoing, TypeState};
use crate::core::store::Store;
use crate::core::stream::StreamIds;
pub(crate) use crate::core::stream::StreamKey;
use crate::core::ttl::Expiry;
use crate::core::watch_map::{WatchId, WatchMap};

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
}

#[cfg(test)]
mod tests;
