//! A test's ear on a server's event bus: every stream's events as the tap reports them.
//!
//! Listen before acting (the bus carries events from the moment a listener exists), then wait
//! for the events the action causes, each within [`TIMEOUT`](super::TIMEOUT).

use std::sync::Arc;

use xdsloop_server::{
    events::Capture,
    events::{Listener, Received},
    events::{What, WireEvent},
    status::Registry,
};

use super::within;

pub(crate) struct Events {
    listener: Listener,
}

impl Events {
    /// Every event from now on, with every name and version.
    pub(crate) fn listen(registry: &Registry) -> Self {
        Self::listen_with(registry, Capture::Full)
    }

    pub(crate) fn listen_with(registry: &Registry, capture: Capture) -> Self {
        Self {
            listener: registry.bus().listen(capture),
        }
    }

    /// The next event; a gap fails the test (a test never produces that many).
    pub(crate) async fn next(&mut self) -> Arc<WireEvent> {
        match within("an event on the bus", self.listener.recv()).await {
            Received::Event(event) => event,
            Received::Gap { lost } => panic!("the test's listener lost {lost} events"),
        }
    }

    /// Events of `stream` up to and including the first that `last` accepts.
    pub(crate) async fn of_stream_until(
        &mut self,
        stream: u64,
        last: impl Fn(&WireEvent) -> bool,
    ) -> Vec<Arc<WireEvent>> {
        let mut seen = Vec::new();
        loop {
            let event = self.next().await;
            if event.stream != stream {
                continue;
            }
            let done = last(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }

    /// The `opened` event of the next stream that opens (its `stream` is the id).
    pub(crate) async fn opened(&mut self) -> Arc<WireEvent> {
        loop {
            let event = self.next().await;
            if matches!(event.what, What::Opened(_)) {
                return event;
            }
        }
    }
}
