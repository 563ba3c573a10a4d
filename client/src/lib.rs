//! xdsloop-client: an Envoy-style xDS client.
//!
//! Layout, one layer per folder; a layer uses only the layers above it in this list
//! (`tests/architecture` checks it):
//! - [`config`]: the vocabulary every layer may use: [`ClientConfig`], [`Source`] and
//!   [`SourceKind`], [`Mode`], [`BackoffConfig`], the default limits.
//! - [`core`] (pure, sans-I/O): the mux (type watches on one stream, or one per type; ACK/NACK,
//!   pause/resume), per-type request state, validation (C6), dependency following, not-found
//!   timers, the [`Store`] of applied resources, stream numbers, and the [`Event`]s and
//!   [`Report`]s it emits.
//! - [`transport`]: I/O, the config sources (Envoy's subscription factory): gRPC streams (ADS
//!   or one per type), REST polling, a watched file; and the hub they all drive the mux
//!   through, with the reconnect [`Backoff`].
//! - [`client`]: the [`Client`] handle, its session, and [`Subscription`] /
//!   [`TypedSubscription`] handles.
//! - [`cli`]: the CLI's flags, run loop, text and JSON output, log format, the `--explain`
//!   narration and the `--record` transcript (`main.rs` only calls it).
//! - [`fleet`]: `xdsloop-client fleet`, N cheap simulated nodes for load tests: a deliberate
//!   second implementation of the client protocol (see its module docs for why, and what it
//!   shares with [`core`]).
//! - [`check`]: `xdsloop-client check`, a conformance suite that judges any ADS server over raw
//!   streams (it must send what the library never does: stale nonces, garbage).
//!
//! [`error`] is the crate's one error type.
#![doc = include_str!("../README.md")]

pub mod check;
pub mod cli;
pub mod client;
pub mod config;
pub mod core;
pub mod error;
pub mod fleet;
pub mod transport;

pub use client::Client;
pub use client::subscription::{Subscription, TypedSubscription};
pub use config::{BackoffConfig, ClientConfig, Mode, Source, SourceKind, Validator};
pub use core::event::{ConnectionReport, Event, Failure, Report, UpdateReport, Verdict};
pub use core::resource::{Typed, TypedEvent, XdsResource};
pub use core::store::{Applied, Store};
pub use core::watch_map::Interest;
pub use error::ClientError;
pub use transport::backoff::Backoff;

/// `docs/testkit.md`, compiled and run as a doc-test here rather than in xdsloop-server: its
/// example tests this client against the server's test kit, and the client already depends on
/// the server for its tests (the other way round would be a dependency cycle).
#[cfg(doctest)]
#[doc = include_str!("../../docs/testkit.md")]
pub struct TestkitDoc;
