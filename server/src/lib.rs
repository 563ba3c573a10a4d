//! xdsloop-server: a fixture-driven mock xDS control plane.
//!
//! The public API: [`app`] starts the server the `xdsloop-server` binary runs, and [`testkit`]
//! is the server in a Rust test of an xDS client. The modules beside them name what their
//! signatures carry: [`fixtures`] (the directory a server serves), [`scenario`] (fault rules),
//! [`status`] (the `/status` document and the streams behind it), [`events`] (what happened on
//! a stream) and [`tls`]; at the root, the [`Snapshot`] served, the judge's
//! [`ConformanceMode`] and [`Violation`], a request's [`Verdict`], and Envoy's API ([`envoy`],
//! [`type_url`]). Everything else is the crate's own; the layout below is for its readers.
//!
//! Layout, one layer per folder; a layer uses only the layers listed before it
//! (`tests/architecture` checks it, and `docs/architecture.md` walks one fixture edit through
//! them):
//! - `snapshot/` (pure): the immutable [`Snapshot`] every stream serves from, and what is
//!   derived from it once per fixture generation and shared by all streams (encoded response
//!   entries, views). It is the seam: `config/` writes snapshots into a `watch` channel,
//!   streams read them; neither side knows the other.
//! - `config/`: fixture directory → `Snapshot` (errors name file, line and field), and the
//!   watcher that reloads it on every edit, shows its progress, and is restarted if it dies.
//! - `protocol/` (pure, sans-I/O): the core. The SotW and Delta stream state machines, the
//!   subscription ledger (ACK/NACK), nonces, make-before-break ordering, TTL schedules,
//!   stateless fetches, and the requests and responses they take and give. It uses no room.
//!
//! Each feature around the core has a room of its own; a room uses the core and the layers
//! below it, not another room (but the tap, whose events carry the judge's violations):
//! - `judge/` (pure): the conformance judge, checking each client against the C rules of
//!   `docs/protocol.md` as its stream runs (`--conformance`, `--strict`).
//! - `tap/` (pure): what happened on a stream as plain events, for whoever observes it.
//! - `faults/`: the fault stage between the machines and the wire and the server-wide rules
//!   (pure), and `faults/scenario/`: the rules' model and YAML, the scenario in force, the
//!   `--scenario` file (`docs/scenarios.md`).
//! - `replay/`: `--replay FILE`, a recorded server side served again by a machine of its own
//!   (pure), from the recording loaded and checked at start.
//!
//! Above them:
//! - `net/`: the connections below HTTP: the accept loop, TLS and mTLS with certificate
//!   rotation, the peer's identity, connection limits and the per-connection request budget,
//!   closing connections at shutdown.
//! - `admin/`: the registry of open streams (each with its last few events), the server's
//!   event bus and counters, the `/status` document and table, and the admin routes that serve
//!   them (on the xDS port unless `--admin` gives them a listener); events as transcript lines.
//! - `transport/`: I/O — the async loop around each state machine and its tap, gRPC request
//!   and response bodies, ADS, the per-type services, REST-JSON, health and reflection, and the
//!   transcript recorder fed by the bus.
//! - [`app`]: wiring: bind, start the watcher and the servers, shut down cleanly.
//! - [`testkit`]: the server in a Rust test: resources given in code, awaits for a node's ACKs
//!   and NACKs, the requests it sent.
//!
//! [`Error`] (`error.rs`) is the crate's one error type, usable from every layer.

// The public API is what a user needs, on purpose: nothing public by accident
// (`unreachable_pub`), every public item documented, and every type a public signature carries
// nameable from outside (re-exported below), so no user meets a type they cannot import.
#![warn(unnameable_types)]

mod admin;
mod api;
pub mod app;
mod config;
mod error;
mod faults;
mod judge;
mod net;
mod protocol;
mod replay;
mod snapshot;
mod tap;
#[cfg(feature = "testkit")]
pub mod testkit;
mod transport;

#[cfg(test)]
mod test_support;

/// The wire crate itself (the fixture codec, `Resource`, discovery messages), for what the
/// re-exports above leave out.
pub use xdsloop_proto as proto;
/// Envoy's v3 API: the generated messages and gRPC stubs (`envoy::config::cluster::v3::Cluster`,
/// `envoy::service::discovery::v3::DiscoveryRequest`, ...), re-exported from xdsloop-proto so a
/// user needs no second dependency.
pub use xdsloop_proto::envoy;
/// xDS type URLs (`type_url::CLUSTER`, ...) and their short aliases (`cds`, `eds`, ...).
pub use xdsloop_proto::type_url;

pub use error::Error;
pub use snapshot::{Snapshot, TypeResources, VersionKind};
/// The server in a Rust test of an xDS client (what grpc-go's in-process management server is
/// to its tests); the `testkit` feature.
#[cfg(feature = "testkit")]
pub use testkit::TestServer;

pub use judge::rules::{RULES as JUDGE_RULES, Rule as JudgeRule};
pub use judge::{Mode as ConformanceMode, Violation};
pub use protocol::subscription::Verdict;

pub use api::{events, fixtures, scenario, status, tls};
