//! The xDS protocol, sans-I/O: plain structs with pure methods, unit-tested without a runtime.
//! Nothing here uses tonic, hyper or tokio, and nothing reads a clock (`tests/architecture`
//! checks both); the transport layer feeds these machines requests, snapshots and the time and
//! writes out what they return.
//!
//! This is the core, and only the core: the features around it (the judge, the tap, faults,
//! replay) live in rooms of their own beside it and use it; nothing here uses them.
//!
//! - [`sotw`] / [`delta`]: the stream state machines (requests, snapshots and the time in,
//!   responses out). The transport drives them through [`machine::StreamMachine`], the
//!   protocol (seven methods), and [`machine::MachineHooks`], what the loop's observers and
//!   fault stage ask besides (nine); both keep their common state in one `StreamState`
//!   (`stream.rs`: node, nonces, per-type subscriptions, masks);
//!   [`kind`]: how a stream reached the server (SotW or Delta, which service).
//! - [`now`]: the time as the machines take it: the transport passes the moment in.
//! - [`subscription`]: per stream and type, what the client wants and what happened on the
//!   wire (sent, ACKed, NACKed), and the status each stream reports.
//! - [`nonce`], [`ordering`]: response nonces (S1) and make-before-break order (S11).
//! - [`request`]: requests as they come off the wire, SotW names read in place;
//!   [`response`]: responses as the machines return them, resource entries shared;
//!   [`facts`]: what each of them tells an observer or a judge, as plain data.
//! - [`fetch`]: stateless fetches (gRPC `Fetch*`, REST) answered by the SotW machine.
//! - [`ttl`]: what a client can take of TTLs (its client features) and when a type is owed a
//!   heartbeat; the machines send it on `on_tick`.
//! - [`wire`]: what a fault did to a response on the wire, as the ledger records it;
//!   [`mask`]: the names a `flap` hides from a stream's machine for a while (the machine
//!   serves the cut set itself, so its ledger stays exact); [`held`]: what a client holds
//!   when its stream ends.
//! - [`bounds`]: what one stream's subscriptions may hold (types, name bytes).
//! - [`chatter`]: whether per-stream lines are logged at INFO (a few dozen streams) or DEBUG;
//!   the machines log through it.

pub(crate) mod bounds;
pub(crate) mod chatter;
pub(crate) mod delta;
pub(crate) mod facts;
pub(crate) mod fetch;
pub(crate) mod held;
pub(crate) mod kind;
pub(crate) mod machine;
pub(crate) mod mask;
pub(crate) mod nonce;
pub(crate) mod now;
pub(crate) mod ordering;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod sotw;
pub(crate) mod stream;
pub(crate) mod subscription;
pub(crate) mod ttl;
pub(crate) mod wire;
