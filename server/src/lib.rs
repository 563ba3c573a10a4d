//! xdsloop-server: a fixture-driven mock xDS control plane.
//!
//! Layout, one layer per folder; a layer uses only the layers above it in this list
//! (`tests/architecture` checks it, and `docs/architecture.md` walks one fixture edit through
//! them):
//! - [`snapshot`] (pure): the immutable [`Snapshot`] every stream serves from, and what is
//!   derived from it once per fixture generation and shared by all streams (encoded response
//!   entries, views). It is the seam: [`config`] writes snapshots into a `watch` channel,
//!   streams read them; neither side knows the other.
//! - [`config`]: fixture directory → `Snapshot` (errors name file, line and field), and the
//!   watcher that reloads it on every edit, shows its progress, and is restarted if it dies.
//! - [`protocol`] (pure, sans-I/O): the SotW and Delta stream state machines, the
//!   subscription ledger (ACK/NACK), nonces, make-before-break ordering, stateless fetches, and
//!   the requests and responses they take and give; the events the tap reports, the
//!   conformance judge and the fault stage that sit around each machine.
//! - [`net`]: the connections below HTTP: the accept loop, TLS and mTLS with certificate
//!   rotation, the peer's identity, connection limits and the per-connection request budget,
//!   closing connections at shutdown.
//! - [`admin`]: the registry of open streams (each with its last few events), the server's
//!   event bus and counters, the `/status` document and table, and the admin routes that serve
//!   them (on the xDS port unless `--admin` gives them a listener); events as transcript lines.
//! - [`transport`]: I/O — the async loop around each state machine and its tap, gRPC request
//!   and response bodies, ADS, the per-type services, REST-JSON, health and reflection, and the
//!   transcript recorder fed by the bus.
//! - [`app`]: wiring: bind, start the watcher and the servers, shut down cleanly.
//! - [`testkit`]: the server in a Rust test: resources given in code, awaits for a node's ACKs
//!   and NACKs, the requests it sent.
//!
//! [`error`] is the crate's one error type, usable from every layer.

pub mod admin;
pub mod app;
pub mod config;
pub mod error;
pub mod net;
pub mod protocol;
pub mod snapshot;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod transport;

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
pub use snapshot::{Snapshot, TypeResources};
/// The server in a Rust test of an xDS client (what grpc-go's in-process management server is
/// to its tests); the `testkit` feature.
#[cfg(feature = "testkit")]
pub use testkit::TestServer;
