//! What the server shows about its clients: the [`registry`] of open streams (each stream
//! reports its per-type status there), the [`status`] document and table built from it, and
//! the admin HTTP routes ([`http`]: `/status`, `/snapshot`, `/healthz`) and the Client Status
//! Discovery Service ([`csds`]: the same ledger as Envoy's API), on the xDS port unless
//! `--admin` places them on a listener of their own.

pub mod csds;
pub mod http;
pub mod registry;
pub mod status;

pub use self::http::{Admin, AdminServer, Placement, ROUTES, elsewhere, serve};
