//! What the server shows about its clients: the [`registry`] of open streams (each stream
//! reports its per-type status there), the [`status`] document and table built from it, and
//! the admin HTTP endpoint ([`http`]: `/status`, `/snapshot`, `/healthz`).

pub mod http;
pub mod registry;
pub mod status;

pub use self::http::{Admin, AdminServer, DEFAULT_ADDR, serve};
