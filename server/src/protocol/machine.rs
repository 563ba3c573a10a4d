//! The one interface between the protocol and the transport: a stream state machine takes
//! requests and snapshots and returns the responses to send, and reports what changed for
//! `/status`. The transport's stream loop drives any machine through it, SotW or Delta.
//!
//! Besides the protocol itself, the interface has the hooks the loop's observers need, all
//! pure and cheap: what the last request was ([`StreamMachine::exchange`]), the ledger the
//! conformance judge reads before a request is handled, what happened to a response on the
//! wire once the fault stage had its say ([`StreamMachine::note_wire`]), a resend of the last
//! response ([`StreamMachine::repeat_last`]), resources hidden for a while
//! ([`StreamMachine::mask`]) and what the client holds when the stream ends
//! ([`StreamMachine::held`]), and a machine's wish to end the stream
//! ([`StreamMachine::take_ending`]).

use std::{sync::Arc, time::Instant};

use crate::{
    Snapshot,
    protocol::facts::{StatusFacts, TapRequest, TapResponse},
    protocol::held::Held,
    protocol::subscription::{Exchange, Ledger, TypeStatus},
    protocol::wire::{FaultMark, WireFate, WireResponse},
};

/// A sans-I/O stream state machine (SotW or Delta).
pub trait StreamMachine: Send + 'static {
    type Request: TapRequest + Send + 'static;
    type Response: TapResponse + WireResponse + Send + 'static;
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
    /// What the last [`Self::on_request`] decided.
    fn exchange(&self) -> Exchange;
    /// The wire history of one type, as it stands (read before a request is handled).
    fn ledger(&self, type_url: &str) -> Option<&Ledger>;
    /// How many nonces this stream has handed out: every one is `<stream>-<n>` with `n` at
    /// most this.
    fn nonces_issued(&self) -> u64;
    /// The response for `type_url`'s current interest again, with a fresh nonce, even though
    /// the client has it (a push storm on purpose); recorded in the ledger like any other.
    /// `None` when the type has no subscription or nothing to send.
    fn repeat_last(&mut self, type_url: &str) -> Option<Self::Response>;
    /// From now on serves `type_url` without the resources whose names `globs` pick (empty:
    /// all of them again), as if the snapshot lacked them; returns the response that tells
    /// the client, if its subscription sees a difference (a `flap` fault).
    fn mask(&mut self, type_url: &str, globs: Vec<String>) -> Vec<Self::Response>;
    /// What became of the response planned with `planned_nonce`: the fault stage `mark`ed it
    /// and it went out as `fate` says. The ledger then shows what really happened.
    fn note_wire(&mut self, type_url: &str, planned_nonce: &str, mark: FaultMark, fate: WireFate);
    /// The response planned with `planned_nonce` never went on the wire (the stream ended
    /// before it was sent): the ledger forgets it, so `/status` lists only what went out.
    fn withdraw(&mut self, type_url: &str, planned_nonce: &str) {
        let _ = (type_url, planned_nonce);
    }
    /// The current snapshot again, with fresh nonces, for every type the client may not hold
    /// as served ([`crate::protocol::subscription::Ledger::unsettled`]): a way back to a known
    /// state after faults (`DELETE /scenario`, `POST /resync`).
    fn resync(&mut self) -> Vec<Self::Response> {
        Vec::new()
    }
    /// Set when the machine wants the stream ended with a gRPC status (a replay whose client
    /// strayed from the recording); the loop sends it once the request's responses are out.
    fn take_ending(&mut self) -> Option<StatusFacts> {
        None
    }
    /// What the client holds when the stream ends, per type.
    fn held(self) -> Held;
}
