//! The streams the mux rides on: which stream carries a type (one aggregated, or one per
//! type), which should be open, and what opening one (resubscribe everything it carries,
//! C11, the node first, C1) and closing one (config stays, C13; timers stop, C14) do. The
//! I/O loop owns the connections; this is what the protocol makes of them.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{Mux, StreamKey};
use crate::core::event::{Event, Failure, Report};
use crate::core::stream::StreamEnd;
use crate::core::watch_map::WatchId;

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

    pub(super) fn is_live(&self, type_url: &str) -> bool {
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
