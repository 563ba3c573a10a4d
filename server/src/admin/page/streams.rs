//! One stream's conversation for the page: `GET /streams/{id}` (the stream as `/status` shows
//! it, with its timeline) and `GET /streams/{id}/events` (server-sent events: `head`, the
//! stream's types with the version held vs the one served; `event`, one per message, first
//! the timeline's ring then live from the bus, each labelled with its loop step and the Envoy
//! call that takes it; `gap` when the page fell behind the bus, followed by the ring again).
//!
//! A page that reads slowly only makes its own bus listener lag: the bus drops the oldest
//! events for it, never waits.

use std::{collections::VecDeque, convert::Infallible, sync::Arc, time::SystemTime};

use axum::response::sse::Event;
use futures::{Stream, StreamExt, stream};
use serde_json::{Value, json};
use xdsloop_proto::Variant;
use xdsloop_transcript::{Step, line::RequestBody, line::What as Line};

use super::Sources;
use crate::{
    admin::{
        lines,
        registry::{StreamStatus, bus::Listener, bus::Received},
        status::{self, StreamView},
    },
    protocol::facts::Capture,
    tap::{What, WireEvent},
};

/// The stream, open or recently closed, as `/status` shows it (`None`: unknown or forgotten).
pub(crate) fn view(sources: &Sources, id: u64) -> Option<StreamView> {
    let (stream, closed_at) = find(sources, id)?;
    let snapshot = sources.snapshots.borrow().clone();
    Some(status::stream_view(&snapshot, &stream, closed_at))
}

fn find(sources: &Sources, id: u64) -> Option<(StreamStatus, Option<SystemTime>)> {
    if let Some(open) = sources.registry.stream(id) {
        return Some((open, None));
    }
    let closed = sources.registry.recently_closed().into_iter();
    closed
        .filter(|c| c.stream.id == id)
        .map(|c| (c.stream, Some(c.disconnected_at)))
        .next()
}

/// An event as the page shows it: its transcript line, plus the loop step's title and the
/// Envoy call (the labels `xdsloop-client --explain` prints).
pub(crate) fn page_event(event: &WireEvent) -> Value {
    let line = lines::to_line(event, None);
    let step = match &line.what {
        Line::Open(_) => Some(Step::Established),
        Line::Request(r) => Some(r.step),
        Line::Response(r) => Some(r.step),
        Line::Close(_) => Some(Step::Closed),
        _ => None,
    };
    // A Delta request carries no version: its ACK and NACK are told without one.
    let variant = match &line.what {
        Line::Request(r) if matches!(r.body, RequestBody::Delta { .. }) => Variant::Delta,
        _ => Variant::Sotw,
    };
    let mut value = serde_json::to_value(&line).unwrap_or(Value::Null);
    if let (Some(step), Some(map)) = (step, value.as_object_mut()) {
        map.insert("step".into(), json!(step.label()));
        map.insert("title".into(), json!(step.title()));
        map.insert("envoy".into(), json!(step.envoy_call_on(variant)));
    }
    if let (What::Request(facts), Some(map)) = (&event.what, value.as_object_mut()) {
        // A request naming nothing is the legacy wildcard only sometimes: SotW, until the
        // client names resources of the type (then it unsubscribes from everything); Delta,
        // on a first request (its ACKs and NACKs name nothing and change nothing). The page
        // cannot tell them apart from the line; the machine, which read it, can.
        map.insert("wildcard".into(), json!(facts.wildcard));
    }
    value
}

struct Follow {
    sources: Sources,
    id: u64,
    /// `None` once the stream closed: nothing more will come.
    listener: Option<Listener>,
    /// The last event sent, by its position in the stream.
    last_seq: u32,
    ready: VecDeque<(&'static str, Value)>,
}

/// The SSE stream of one stream's conversation.
pub(crate) fn events(sources: Sources, id: u64) -> impl Stream<Item = Result<Event, Infallible>> {
    conversation(sources, id).map(|(name, value)| Ok(json_event(name, &value)))
}

/// One stream's conversation as (event name, JSON) pairs: `event`s from the ring, a `head`,
/// then live `event`s each followed by a `head`; a `gap` when this reader fell behind the bus.
pub(crate) fn conversation(sources: Sources, id: u64) -> impl Stream<Item = (&'static str, Value)> {
    // Listen before reading the ring, so nothing falls between the two.
    let listener = sources.registry.bus().listen(Capture::Full);
    let mut follow = Follow {
        sources,
        id,
        listener: Some(listener),
        last_seq: 0,
        ready: VecDeque::new(),
    };
    follow.replay_ring();
    stream::unfold(follow, |mut follow| async move {
        loop {
            if let Some(event) = follow.ready.pop_front() {
                return Some((event, follow));
            }
            follow.wait().await;
        }
    })
}

impl Follow {
    /// The head, then the ring's events the page has not seen.
    fn replay_ring(&mut self) {
        let Some((stream, _)) = find(&self.sources, self.id) else {
            self.ready
                .push_back(("head", json!({"id": self.id, "gone": true})));
            self.listener = None;
            return;
        };
        let events: Vec<Arc<WireEvent>> = stream.recent.iter().cloned().collect();
        for event in events {
            self.push_event(&event);
        }
        self.push_head();
    }

    fn push_event(&mut self, event: &WireEvent) {
        if event.stream != self.id || event.seq <= self.last_seq {
            return;
        }
        self.last_seq = event.seq;
        if matches!(event.what, What::Closed(_)) {
            // Its last event: stop listening (and costing the streams a capture).
            self.listener = None;
        }
        self.ready.push_back(("event", page_event(event)));
    }

    fn push_head(&mut self) {
        let head = view(&self.sources, self.id).map(|mut v| {
            v.recent.clear();
            v
        });
        let value = match head {
            Some(v) => serde_json::to_value(v).unwrap_or(Value::Null),
            None => json!({"id": self.id, "gone": true}),
        };
        self.ready.push_back(("head", value));
    }

    /// Waits for this stream's next events (all that are waiting), then queues them and a
    /// fresh head.
    async fn wait(&mut self) {
        let Some(listener) = self.listener.as_mut() else {
            return std::future::pending().await;
        };
        let mut received = vec![listener.recv().await];
        while let Some(more) = listener.try_recv() {
            received.push(more);
        }
        let before = self.ready.len();
        for item in received {
            match item {
                Received::Event(event) => self.push_event(&event),
                Received::Gap { lost } => {
                    self.ready.push_back(("gap", json!({"lost": lost})));
                    self.replay_ring();
                }
            }
        }
        if self.ready.len() > before {
            self.push_head();
        }
    }
}

fn json_event(name: &'static str, value: &Value) -> Event {
    Event::default()
        .event(name)
        .json_data(value)
        .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()))
}

#[cfg(test)]
mod tests;
