//! xdsloop-client: an Envoy-style xDS client.
//!
//! Layout:
//! - [`client`]: [`Client`] — start a session, subscribe, observe [`Report`]s and the [`Store`].
//! - [`subscription`]: [`Subscription`] / [`TypedSubscription`] handles and their [`Event`]s.
//! - [`resource`]: [`XdsResource`], typed decoding generic over the resource type.
//! - [`source`]: config sources ([`Source`]: ads, ads-delta, grpc, delta-grpc, rest, file) and
//!   the factory mapping each to its transport (gRPC streams, REST polling, a watched file).
//! - [`session`]: what every transport shares: commands, event delivery, the store and reports,
//!   and the reconnect [`Backoff`] with jitter and a cap.
//! - [`mux`]: sans-I/O core — type watches on one stream (or one per type); ACK/NACK,
//!   pause/resume.
//! - [`request`]: per-type stream state and SotW / Delta request building.
//! - [`watch_map`]: watches of one type merged into one wire interest.
//! - [`validate`]: checks before accepting (C6) plus the user's validator.
//! - [`deps`]: LDS → RDS and CDS → EDS dependency following.
//! - [`not_found`]: not-found timers (C14).
//! - [`store`]: applied resources with version, nonce and time.
//! - [`output`]: the CLI's text and JSON lines and `--dump` (see below).
//! - [`cli`]: the CLI's flags and run loop (`main.rs` only calls it).
//! - [`log_format`]: `--log-format text|json`, colour, and the CLI's own stderr lines.
//! - [`fleet`]: `xdsloop-client fleet`, N cheap simulated nodes for load tests.
//! - [`check`]: `xdsloop-client check`, a conformance suite that judges any ADS server.
#![doc = include_str!("../README.md")]

pub mod check;
pub mod cli;
pub mod client;
pub mod deps;
pub mod error;
pub mod event;
pub mod fleet;
pub mod log_format;
pub mod mux;
pub mod not_found;
pub mod output;
pub mod request;
pub mod resource;
pub mod session;
pub mod source;
pub mod store;
pub mod subscription;
pub mod validate;
pub mod watch_map;

pub use client::{Client, ClientConfig};
pub use error::ClientError;
pub use event::{ConnectionReport, Event, Failure, Report, UpdateReport, Verdict};
pub use request::Mode;
pub use resource::{Typed, TypedEvent, XdsResource};
pub use session::{Backoff, BackoffConfig};
pub use source::{Source, SourceKind};
pub use store::{Applied, Store};
pub use subscription::{Subscription, TypedSubscription};
pub use validate::Validator;
pub use watch_map::Interest;
