//! The xDS client protocol, sans-I/O: the [`mux`] takes method calls with the current time
//! (a watch added, a stream opened, a response received, a timer due) and returns requests,
//! events and reports for the I/O around it to deliver. Nothing here uses tonic, hyper or
//! tokio (`tests/architecture` checks it).
//!
//! - [`mux`]: type watches on one stream (or one per type): ACK/NACK, pause/resume, reconnect
//!   resubscription, dependency following (Envoy's `GrpcMux`).
//! - [`request`]: per-type stream state and the SotW / Delta requests built from it.
//! - [`watch_map`]: the watches of one type merged into one wire interest.
//! - [`validate`]: the checks before anything is accepted (C6), plus the user's validator.
//! - [`deps`]: LDS → RDS and CDS → EDS dependency names.
//! - [`not_found`]: not-found timers (C14); [`ttl`]: expiry of TTL'd resources (C17).
//! - [`store`]: applied resources with version, nonce and time.
//! - [`stream`]: which stream a type travels on, stream numbers, how a stream ended.
//! - [`event`]: what subscriptions and observers are told; [`resource`]: typed decoding.

pub(crate) mod deps;
pub(crate) mod event;
pub(crate) mod mux;
pub(crate) mod not_found;
pub(crate) mod request;
pub(crate) mod resource;
pub(crate) mod store;
pub(crate) mod stream;
pub(crate) mod ttl;
pub(crate) mod validate;
pub(crate) mod watch_map;
