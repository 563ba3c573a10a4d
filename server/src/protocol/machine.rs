//! The one interface between the protocol and the transport: a stream state machine takes
//! requests and snapshots and returns the responses to send, and reports what changed for
//! `/status`. The transport's stream loop drives any machine through it, SotW or Delta.

use std::{sync::Arc, time::Instant};

use crate::{Snapshot, protocol::subscription::TypeStatus};

/// A sans-I/O stream state machine (SotW or Delta).
pub trait StreamMachine: Send + 'static {
    type Request: Send + 'static;
    type Response: Send + 'static;
    /// Handles one client request; returns the responses to send, in order.
    fn on_request(&mut self, request: Self::Request) -> Vec<Self::Response>;
    /// Handles a new snapshot; returns the responses to send, in order.
    fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> Vec<Self::Response>;
    /// The time is `now`: returns the heartbeats due (S15). Called after every event, so
    /// types that just became idle are scheduled from then.
    fn on_tick(&mut self, now: Instant) -> Vec<Self::Response>;
    /// When [`Self::on_tick`] has something to do next, if ever.
    fn next_deadline(&self) -> Option<Instant>;
    /// The node id, once the first request has told it.
    fn node_id(&self) -> Option<&str>;
    /// Status of the types whose state changed since the last call.
    fn take_status(&mut self) -> Vec<TypeStatus>;
    /// A response's type URL and the bytes of its resources (close to its encoded size).
    fn payload(response: &Self::Response) -> (&str, usize);
}
