//! One stream's tap: it turns what the loop did into [`WireEvent`]s for the stream's timeline
//! and the server's bus, and counts it, through the stream's registry entry.
//!
//! While nobody listens and timelines are off, the tap builds nothing: its whole cost per
//! message is one relaxed atomic load ([`Tap::capture`]) and a few additions to a tally that
//! is published under the lock the loop takes anyway.

use std::{collections::BTreeSet, net::SocketAddr, sync::Arc, time::SystemTime};

use crate::{
    admin::registry::{Publish, Registry, StreamEntry, StreamKind},
    judge::Violation,
    net::identity::PeerIdentity,
    protocol::facts::{Capture, RequestFacts, StatusFacts, TapResponse},
    protocol::subscription::{Exchange, TypeStatus},
    protocol::wire::FaultMark,
    tap::{CloseReason, Closed, FaultFacts, Opened, What, WireEvent},
};

/// A stream's tap; owns the stream's registry entry (dropping it lists the stream as closed).
#[derive(Debug)]
pub(crate) struct Tap {
    entry: StreamEntry,
    /// Timelines are on.
    ring: bool,
    seq: u32,
    node: Option<Arc<str>>,
    /// Types the node's earlier streams had.
    earlier: Arc<BTreeSet<String>>,
    publish: Publish,
}

impl Tap {
    /// Registers a new stream and tells whoever listens that it opened.
    pub(crate) fn open(
        registry: &Registry,
        kind: StreamKind,
        peer: Option<SocketAddr>,
        identity: Option<Arc<PeerIdentity>>,
    ) -> Self {
        let entry = registry.open(kind, peer, identity);
        let mut tap = Self {
            ring: registry.timeline_depth() > 0,
            entry,
            seq: 0,
            node: None,
            earlier: Arc::default(),
            publish: Publish::default(),
        };
        if let Some(capture) = tap.capture() {
            let peer = peer.map(|p| Box::from(p.to_string()));
            tap.emit(What::Opened(Opened { kind, peer }), capture);
            tap.flush();
        }
        tap
    }

    pub(crate) fn stream(&self) -> u64 {
        self.entry.id()
    }

    /// How much to capture of the next message, or `None`: build nothing.
    pub(crate) fn capture(&self) -> Option<Capture> {
        match self.entry.registry().bus().capture() {
            Some(capture) => Some(capture),
            None => self.ring.then_some(Capture::Summary),
        }
    }

    /// The stream's node, from its first request on.
    pub(crate) fn identify(&mut self, node: &str) {
        if self.node.is_none() {
            self.earlier = self.entry.set_node(node);
            self.node = Some(Arc::from(node));
        }
    }

    /// The stream's node, once identified.
    pub(crate) fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    pub(crate) fn is_identified(&self) -> bool {
        self.node.is_some()
    }

    /// A request was handled as `exchange` says; `facts` were taken if someone listens.
    pub(crate) fn request(&mut self, facts: Option<(RequestFacts, Capture)>, exchange: Exchange) {
        self.publish.tally.request(exchange.verdict);
        if let Some((mut facts, capture)) = facts {
            let earlier = self.earlier.contains(&*facts.type_url);
            facts.settle(exchange, earlier);
            self.emit(What::Request(Box::new(facts)), capture);
        }
    }

    /// A response goes on the wire, changed by the rule `mark` names, if any (with whether
    /// that firing was counted already, [`Self::fault_counted`]).
    pub(crate) fn response<R: TapResponse>(
        &mut self,
        response: &R,
        mark: Option<(&FaultMark, bool)>,
    ) {
        self.publish.tally.responses += 1;
        if mark.is_some_and(|(_, counted)| !counted) {
            self.publish.tally.faults += 1;
        }
        if let Some(capture) = self.capture() {
            let mut facts = response.facts(capture);
            facts.fault = mark.map(|(m, _)| m.clone());
            self.emit(What::Response(Box::new(facts)), capture);
        }
    }

    /// A fault fired with no response to carry its mark (a drop, a hang, the stream's end).
    pub(crate) fn fault(&mut self, facts: FaultFacts) {
        self.publish.tally.faults += 1;
        if let Some(capture) = self.capture() {
            self.emit(What::Fault(Box::new(facts)), capture);
        }
    }

    /// A fault fired whose response goes out later (a `delay`): counted now, carried by
    /// that response's event when it is sent.
    pub(crate) fn fault_counted(&mut self) {
        self.publish.tally.faults += 1;
    }

    /// The judge found `violation`.
    pub(crate) fn violation(&mut self, violation: Violation) {
        self.publish.tally.violations += 1;
        let violation = Arc::new(violation);
        self.publish.violations.push(violation.clone());
        if let Some(capture) = self.capture() {
            self.emit(What::Violation(violation), capture);
        }
    }

    /// Publishes the status of the types that changed, the events since the last publish and
    /// the counts, in one critical section.
    pub(crate) fn publish(&mut self, types: Vec<TypeStatus>) {
        self.publish.types = types;
        self.entry.publish(&mut self.publish);
    }

    /// Publishes the events of responses just sent, if any were built. Counts alone wait for
    /// the stream's next publish: while nobody observes, sending costs no second lock.
    pub(crate) fn flush(&mut self) {
        if !self.publish.events.is_empty() || !self.publish.violations.is_empty() {
            self.entry.publish(&mut self.publish);
        }
    }

    /// The stream ended: the last event and the last counts, then the entry moves to the
    /// recently closed.
    pub(crate) fn closed(mut self, reason: CloseReason, status: Option<StatusFacts>) {
        if let Some(capture) = self.capture() {
            self.emit(What::Closed(Closed { reason, status }), capture);
        }
        self.entry.publish(&mut self.publish);
    }

    fn emit(&mut self, what: What, capture: Capture) {
        self.seq += 1;
        let event = WireEvent {
            at: SystemTime::now(),
            stream: self.entry.id(),
            seq: self.seq,
            node: self.node.clone(),
            what,
        };
        if capture == Capture::Summary {
            self.publish.events.push(Arc::new(event));
            return;
        }
        if self.ring {
            self.publish.events.push(Arc::new(event.summarized()));
        }
        self.entry.registry().bus().send(Arc::new(event));
    }
}
