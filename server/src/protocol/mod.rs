//! The xDS protocol, sans-I/O: plain structs with pure methods, unit-tested without a runtime.
//! Nothing here uses tonic, hyper or tokio (`tests/architecture` checks it); the transport
//! layer feeds these machines requests, snapshots and the time and writes out what they return.
//!
//! - [`sotw`] / [`delta`]: the stream state machines (requests, snapshots and the time in,
//!   responses out). The transport drives them through [`machine::StreamMachine`], the
//!   protocol (seven methods), and [`machine::MachineHooks`], what the loop's observers and
//!   fault stage ask besides (nine); both keep their common state in one `StreamState`
//!   (`stream.rs`: node, nonces, per-type subscriptions, masks);
//!   [`replay`]: the machine that serves a recorded server side again (`--replay`);
//!   [`kind`]: how a stream reached the server (SotW or Delta, which service).
//! - [`now`]: the time as the machines take it. Nothing here reads a clock
//!   (`tests/architecture` checks that too): the transport passes the moment in.
//! - [`subscription`]: per stream and type, what the client wants and what happened on the
//!   wire (sent, ACKed, NACKed), and the status each stream reports.
//! - [`nonce`], [`ordering`]: response nonces (S1) and make-before-break order (S11).
//! - [`request`]: requests as they come off the wire, SotW names read in place;
//!   [`response`]: responses as the machines return them, resource entries shared.
//! - [`fetch`]: stateless fetches (gRPC `Fetch*`, REST) answered by the SotW machine.
//! - [`ttl`]: what a client can take of TTLs (its client features) and when a type is owed a
//!   heartbeat; the machines send it on `on_tick`.
//! - [`tap`]: what happened on a stream as plain events, for whoever observes it;
//!   [`wire`]: what a fault did to a response on the wire; [`held`]: what a client holds
//!   when its stream ends.
//! - [`faults`]: the fault stage between the machines and the wire (scenario rules);
//!   [`mask`]: the names a `flap` hides from a stream's machine for a while;
//!   [`conformance`]: the judge that checks each client against the C rules as it runs.
//! - [`bounds`]: what one stream's subscriptions may hold (types, name bytes).
//! - [`chatter`]: whether per-stream lines are logged at INFO (a few dozen streams) or DEBUG.

pub mod bounds;
pub mod chatter;
pub mod conformance;
pub mod delta;
pub mod faults;
pub mod fetch;
pub mod held;
pub mod kind;
pub mod machine;
pub mod mask;
pub mod nonce;
pub mod now;
pub mod ordering;
pub mod replay;
pub mod request;
pub mod response;
pub mod sotw;
pub(crate) mod stream;
pub mod subscription;
pub mod tap;
pub mod ttl;
pub mod wire;
