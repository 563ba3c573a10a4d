//! The requests owed: which types need one, built in make-before-break order (C11), the node on
//! a stream's first (C1), held back while a type is paused and sent as one when it resumes
//! (Envoy's `pause`/`resume`). Every change of interest and every ACK or NACK ends here, so
//! this is the one place that decides what goes on the wire and when.

use std::time::Instant;

use xdsloop_proto::type_url;

use super::{Mux, StreamKey};
use crate::config::Variant;
use crate::core::event::{Report, SentReport, Step};
use crate::core::request::Outgoing;

impl Mux {
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

    /// Builds and queues every owed request, types in make-before-break order (C11).
    pub(super) fn flush(&mut self, now: Instant) {
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

    pub(super) fn report_sent(&mut self, stream: &StreamKey, step: Step, request: &Outgoing) {
        self.out.reports.push(Report::Sent(Box::new(SentReport {
            stream: self.streams.id_of(stream),
            step,
            request: request.clone(),
        })));
    }
}
