//! The interface between the protocol and the transport, in two parts.
//!
//! [`StreamMachine`] is the protocol: a stream state machine takes requests, snapshots and
//! the time and returns the responses to send, says when it next wants the time, and reports
//! what changed for `/status` and what the client holds when the stream ends. The transport's
//! stream loop drives any machine through it, SotW, Delta or a replay.
//!
//! [`MachineHooks`] is what the loop's observers and its fault stage need besides, all pure
//! and cheap: what the last request decided ([`MachineHooks::exchange`]), the ledger and the
//! nonce count the conformance judge reads before a request is handled, what happened to a
//! response on the wire once the fault stage had its say ([`MachineHooks::note_wire`],
//! [`MachineHooks::withdraw`]), a resend of the last response
//! ([`MachineHooks::repeat_last`], [`MachineHooks::resync`]), resources hidden for a while
//! ([`MachineHooks::mask`]) and a machine's wish to end the stream
//! ([`MachineHooks::take_ending`]).

use std::{sync::Arc, time::Instant};

use crate::{
    protocol::facts::{StatusFacts, TapRequest, TapResponse},
    protocol::held::Held,
    protocol::now::Now,
    protocol::subscription::{Exchange, Ledger, TypeStatus},
    protocol::wire::{FaultMark, WireFate, WireResponse},
    snapshot::Snapshot,
};

/// A sans-I/O stream state machine (SotW or Delta): the protocol the stream loop runs.
pub(crate) trait StreamMachine: Send + 'static {
    type Request: TapRequest + Send + 'static;
    type Response: TapResponse + WireResponse + Send + 'static;
    /// Handles one client request; returns the responses to send, in order.
    fn on_request(&mut self, request: Self::Request, now: Now) -> Vec<Self::Response>;
    /// Handles a new snapshot; returns the responses to send, in order.
    fn on_snapshot(&mut self, snapshot: Arc<Snapshot>, now: Now) -> Vec<Self::Response>;
    /// The time is `now`: returns the heartbeats due (S15). Called after every event, so
    /// types that just became idle are scheduled from then.
    fn on_tick(&mut self, now: Now) -> Vec<Self::Response>;
    /// When [`Self::on_tick`] has something to do next, if ever.
    fn next_deadline(&self) -> Option<Instant>;
    /// The node id, once the first request has told it.
    fn node_id(&self) -> Option<&str>;
    /// Status of the types whose state changed since the last call.
    fn take_status(&mut self) -> Vec<TypeStatus>;
    /// What the client holds when the stream ends, per type.
    fn held(self) -> Held;
}

/// What the stream loop's observers (tap, conformance judge) and fault stage ask of a machine
/// besides the protocol.
pub(crate) trait MachineHooks: StreamMachine {
    /// What the last [`StreamMachine::on_request`] decided.
    fn exchange(&self) -> Exchange;
    /// The wire history of one type, as it stands (read before a request is handled).
    fn ledger(&self, type_url: &str) -> Option<&Ledger>;
    /// How many nonces this stream has handed out: every one is `<stream>-<n>` with `n` at
    /// most this.
    fn nonces_issued(&self) -> u64;
    /// The response for `type_url`'s current interest again, with a fresh nonce, even though
    /// the client has it (a push storm on purpose); recorded in the ledger like any other.
    /// `None` when the type has no subscription or nothing to send.
    fn repeat_last(&mut self, type_url: &str, now: Now) -> Option<Self::Response>;
    /// From now on serves `type_url` without the resources whose names `globs` pick (empty:
    /// all of them again), as if the snapshot lacked them; returns the response that tells
    /// the client, if its subscription sees a difference (a `flap` fault).
    fn mask(&mut self, type_url: &str, globs: Vec<String>, now: Now) -> Vec<Self::Response>;
    /// What became of the response planned with `planned_nonce`: the fault stage `mark`ed it
    /// and it went out as `fate` says, at `now`. The ledger then shows what really happened.
    fn note_wire(
        &mut self,
        type_url: &str,
        planned_nonce: &str,
        mark: FaultMark,
        fate: WireFate,
        now: Now,
    );
    /// The names of `type_url` the client holds from this stream: sent on it, not withheld,
    /// not unsubscribed since (what a `when.requested` rule tells a new name by).
    fn sent_names(&self, type_url: &str) -> Vec<String> {
        let _ = type_url;
        Vec::new()
    }
    /// The response planned with `planned_nonce` never went on the wire (the stream ended
    /// before it was sent): the ledger forgets it, so `/status` lists only what went out.
    fn withdraw(&mut self, type_url: &str, planned_nonce: &str) {
        let _ = (type_url, planned_nonce);
    }
    /// The current snapshot again, with fresh nonces, for every type the client may not hold
    /// as served ([`crate::protocol::subscription::Ledger::unsettled`]): a way back to a known
    /// state after faults (`DELETE /scenario`, `POST /resync`).
    fn resync(&mut self, now: Now) -> Vec<Self::Response> {
        let _ = now;
        Vec::new()
    }
    /// Set when the machine wants the stream ended with a gRPC status (a replay whose client
    /// strayed from the recording); the loop sends it once the request's responses are out.
    fn take_ending(&mut self) -> Option<StatusFacts> {
        None
    }
}
