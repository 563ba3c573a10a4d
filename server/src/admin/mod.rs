//! What the server shows about its clients: the [`registry`] of open streams (each stream
//! reports its per-type status there), the [`status`] document and table built from it, and
//! the admin HTTP routes ([`http`]: `/status`, `/snapshot`, `/healthz`), on the xDS port unless
//! `--admin` places them on a listener of their own, and who may read them ([`access`]).

pub mod access;
pub mod http;
pub mod registry;
pub mod status;

pub use self::access::AdminAccess;
pub use self::http::{Admin, Placement, ROUTES, elsewhere};
