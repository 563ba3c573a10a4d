//! xdsloop-server: a fixture-driven mock xDS control plane.
//!
//! Layout (the only seam between reloading and streams is a `watch` of `Arc<Snapshot>`):
//! - [`snapshot`]: the immutable snapshot: resources by type, versions, per-node overlays.
//! - [`fixtures`]: fixture directory → `Snapshot` (pure; errors name file, resource and field).
//! - [`watch`]: notify watcher + debounce → reload → publish, or reject and keep the last good;
//!   reloads show their progress, and a watcher that dies is restarted.
//! - [`subscription`]: per-stream, per-type interest and ACK/NACK ledger (pure).
//! - [`sotw`] / [`delta`]: the SotW and Delta stream state machines (pure), with [`nonce`] and
//!   the make-before-break [`ordering`] of one update's responses.
//! - [`stream`]: the short async loop that feeds a state machine and drains its responses.
//! - [`registry`]: open streams and their per-type state, for `/status`.
//! - [`service`]: starts streams on those state machines for any gRPC service.
//! - [`ads`]: the Aggregated Discovery Service (SotW + Delta) with the [`wire`] codec.
//! - [`wire`]: responses with resource entries encoded once and shared across streams.
//! - [`request`]: requests off the wire; SotW names stay in the received bytes.
//! - [`per_type`]: the per-type services (CDS, EDS, LDS, RDS, SRDS, VHDS, SDS, RTDS, ECDS):
//!   the same streams restricted to one type, plus unary Fetch.
//! - [`fetch`]: stateless fetches (gRPC `Fetch*`, REST polling) answered by the SotW machine.
//! - [`rest`]: Envoy's REST-JSON transport (`POST /v3/discovery:<type>`) on the xDS port.
//! - [`status`]: the `/status` document (per stream and type: SYNCED / PENDING / NACKED /
//!   STALE), its terminal table and the `status` command's client.
//! - [`admin`]: the HTTP admin surface (`/status`, `/snapshot`, `/healthz`), on the xDS port
//!   unless `--admin` gives it a listener of its own.
//! - [`introspection`]: gRPC health checking and server reflection on the xDS port.
//! - [`app`]: wiring: bind, start the watcher and the gRPC server, shut down cleanly.

pub mod admin;
pub mod ads;
pub mod app;
pub mod delta;
pub mod error;
pub mod fetch;
pub mod fixtures;
mod frames;
pub mod introspection;
pub mod names;
pub mod nonce;
pub mod ordering;
pub mod per_type;
pub mod registry;
pub mod request;
pub mod rest;
pub mod service;
pub mod snapshot;
pub mod sotw;
pub mod status;
pub mod stream;
pub mod subscription;
pub mod view;
pub mod watch;
pub mod wire;

#[cfg(test)]
mod test_support;

pub use error::Error;
pub use snapshot::{Snapshot, TypeResources};
