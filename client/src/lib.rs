//! xdsloop-client: an xDS client that behaves on the wire as Envoy does. It watches resource
//! types over one ADS stream (SotW or Delta), a stream per type, REST polls or a watched file;
//! checks each response before applying it and answers it with exactly one ACK or NACK; follows
//! listeners to routes and clusters to endpoints; and reconnects with backoff.
//!
//! ```no_run
//! use xdsloop_client::{Client, ClientConfig, Event, Interest, type_url};
//! # async fn watch() -> Result<(), xdsloop_client::ClientError> {
//! let config = ClientConfig::new("127.0.0.1:18000", "node-1");
//! // Runs until this future resolves (here never) or the last handle is dropped.
//! let client = Client::start(config, std::future::pending())?;
//! let mut clusters = client.subscribe(type_url::CLUSTER, Interest::Wildcard).await?;
//! while let Some(event) = clusters.recv().await {
//!     if let Event::Sotw { version, resources, .. } = event {
//!         println!("CDS {version}: {} clusters", resources.len());
//!     }
//!     let store = client.store().borrow().clone(); // what every watch has applied so far
//!     println!("CDS applied: {:?}", store.version(type_url::CLUSTER));
//! }
//! # Ok(()) }
//! ```
//!
//! The types to start from: [`Client`] starts the client and makes watches; [`ClientConfig`]
//! and [`Source`] say where and how it connects; a [`Subscription`] yields [`Event`]s (a
//! [`TypedSubscription`] decoded messages, [`SubscriptionCallbacks`] decide ACK or NACK); the
//! [`Store`] holds what is applied; [`Report`]s tell everything that happens on the way.
//!
//! The crate's README.md covers the sources, the CLI and its output, CSDS, fleet mode and the
//! conformance suite; docs/ in the repository has the rest, `examples/` runnable programs.
//!
//! Layout, one layer per folder; each uses only those above it (`tests/architecture` checks):
//! - `config`: the vocabulary every layer uses ([`ClientConfig`], [`Source`], [`Variant`]).
//! - `core`, sans-I/O: the [`Mux`] (type watches, ACK/NACK, pause/resume), validation,
//!   dependency following, not-found timers, the store, and the events and reports.
//! - `transport`: the config sources (gRPC streams, REST polls, a file), reconnect [`Backoff`].
//! - `client`: the [`Client`] handle, its session, the subscription handles.
//! - [`cli`], [`fleet`] (simulated nodes for load tests; a deliberate second implementation of
//!   the protocol) and [`check`] (a conformance suite over raw streams): the binary's modes.
//!
//! `error` holds the crate's one error type, [`ClientError`].

#[cfg(feature = "check")]
pub mod check;
#[cfg(feature = "cli")]
pub mod cli;
mod client;
mod config;
mod core;
mod error;
#[cfg(feature = "fleet")]
pub mod fleet;
mod transport;

/// The wire crate itself (the fixture codec, `Resource`, discovery messages), for what the
/// re-exports above leave out.
pub use xdsloop_proto as proto;
/// Envoy's v3 API: the generated messages and gRPC stubs (`envoy::config::cluster::v3::Cluster`,
/// `envoy::service::discovery::v3::DiscoveryRequest`, ...), re-exported from xdsloop-proto so a
/// user needs no second dependency.
pub use xdsloop_proto::envoy;
/// xDS type URLs (`type_url::CLUSTER`, ...) and their short aliases (`cds`, `eds`, ...).
pub use xdsloop_proto::type_url;

/// A running client: its session, its subscriptions, the store of what it applied.
pub use client::Client;
/// A type paused with [`Client::pause`] (Envoy's `GrpcMux::pause` and its `ScopedResume`).
pub use client::Paused;
/// Asks a running client what it holds, as CSDS reports it (Envoy's config dump of xDS).
pub use client::StatusHandle;
/// Serves what a running client holds over CSDS (Envoy's `ClientStatusDiscoveryService`), as
/// `xdsloop-client --csds ADDR` does.
pub use client::csds;
/// Envoy's `Subscription`: one watch of a type (all of it, or named resources) on the client's
/// stream; its [`Event`]s are what Envoy delivers to `SubscriptionCallbacks`.
pub use client::subscription::Subscription;
/// Envoy's `SubscriptionBase<T>`: a [`Subscription`] whose updates arrive decoded as `T`
/// ([`TypedEvent`]).
pub use client::subscription::TypedSubscription;
/// Envoy's `SubscriptionCallbacks`, deciding: `on_config_update` (Envoy's `onConfigUpdate`)
/// returns `Ok` to apply and ACK an update, or a [`Rejection`] to NACK it and keep the last
/// good config. Given to [`Client::subscribe_with`]; the typed form to
/// [`Client::subscribe_typed_with`].
pub use client::subscription::{SubscriptionCallbacks, TypedSubscriptionCallbacks};
/// TLS toward the server (Envoy's `UpstreamTlsContext` of the xDS cluster): the CA and, for
/// mTLS, the client's identity; [`load_tls`] reads it from PEM files.
pub use config::ClientTls;
/// Whether each response is reported as it arrives ([`Report::Received`]), with or without
/// its resources' bodies.
pub use config::ReceivedReports;
pub use config::{BackoffConfig, ClientConfig, Source, SourceKind, Validator, Variant};
/// Envoy's `SubscriptionCallbacks`: `Event::Sotw` and `Event::Delta` are `onConfigUpdate`
/// (State-of-the-World and Delta), `Event::Failed` is `onConfigUpdateFailed` with its
/// [`Failure`] (Envoy's `ConfigUpdateFailureReason`).
pub use core::event::Event;
/// One step of the loop stream → subscribe → push → apply → ACK/NACK, as reports and
/// transcripts name it.
pub use core::event::Step;
pub use core::event::{ConnectionReport, Failure, Report, UpdateReport, Verdict};
/// Envoy's `GrpcMux` without I/O: type watches on one stream (or one per type), ACK/NACK,
/// `pause`/`resume`. Feed it responses and the clock; it gives [`Outgoing`] requests and
/// events, and [`Proposal`]s: updates held back until deciding subscriptions answer
/// ([`Mux::decide`]). [`Client`] runs one for you.
pub use core::mux::{Mux, MuxConfig, Proposal};
/// A request the [`Mux`] wants on the wire (`DiscoveryRequest` or `DeltaDiscoveryRequest`).
pub use core::request::Outgoing;
/// Envoy's `SubscriptionBase<T>` decoding: a resource type with its type URL, and decoded
/// updates.
pub use core::resource::{Typed, TypedEvent, XdsResource};
/// What the client applied, per type, and what one update changed.
pub use core::store::{Applied, Diff, Store};
/// Why an update is rejected (NACKed): the reason a [`SubscriptionCallbacks`] returns (Envoy's
/// `onConfigUpdate` failing), or the problems validation found. Its message is the NACK's
/// `error_detail`.
pub use core::validate::Rejection;
/// What a watch wants (Envoy's `addWatch` resource names, or wildcard), and its id on the
/// [`Mux`] (Envoy's `GrpcMux::addWatch` handle).
pub use core::watch_map::{Interest, WatchId};
pub use error::{BoxError, ClientError, Result, chain as error_chain};
/// Envoy's `SubscriptionFactoryImpl`: [`Transport::new`] maps a [`Source`] to the transport
/// that implements it (gRPC, Delta gRPC, ADS, ADS Delta, REST, file).
pub use transport::Transport;
pub use transport::backoff::Backoff;
/// Reads a [`ClientTls`] from PEM files: the CA, and for mTLS the certificate and key.
pub use transport::tls::load as load_tls;

/// `docs/testkit.md`, compiled and run as a doc-test here rather than in xdsloop-server: its
/// example tests this client against the server's test kit, and the client already depends on
/// the server for its tests (the other way round would be a dependency cycle).
#[cfg(doctest)]
#[doc = include_str!("../../docs/testkit.md")]
pub struct TestkitDoc;
