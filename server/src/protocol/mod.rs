//! The xDS protocol, sans-I/O: plain structs with pure methods, unit-tested without a runtime.
//! Nothing here uses tonic, hyper or tokio (`tests/architecture` checks it); the transport
//! layer feeds these machines requests and snapshots and writes out what they return.
//!
//! - [`sotw`] / [`delta`]: the stream state machines (requests and snapshots in, responses
//!   out), behind the one interface the transport drives, [`machine::StreamMachine`].
//! - [`subscription`]: per stream and type, what the client wants and what happened on the
//!   wire (sent, ACKed, NACKed), and the status each stream reports.
//! - [`nonce`], [`ordering`]: response nonces (S1) and make-before-break order (S11).
//! - [`request`]: requests as they come off the wire, SotW names read in place;
//!   [`response`]: responses as the machines return them, resource entries shared.
//! - [`fetch`]: stateless fetches (gRPC `Fetch*`, REST) answered by the SotW machine.
//! - [`bounds`]: what one stream's subscriptions may hold (types, name bytes).

pub mod bounds;
pub mod delta;
pub mod fetch;
pub mod machine;
pub mod nonce;
pub mod ordering;
pub mod request;
pub mod response;
pub mod sotw;
pub mod subscription;
