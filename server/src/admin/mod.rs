//! What the server shows about its clients: the [`registry`] of open streams (each stream
//! reports its per-type status there, and its events to its timeline and the server's bus),
//! the [`status`] document and table built from it, the admin HTTP routes ([`http`]:
//! `/status`, `/snapshot`, `/healthz`) and the Client Status Discovery Service ([`csds`]: the
//! same ledger as Envoy's API), on the xDS port unless `--admin` places them on a listener of
//! their own, who may read them ([`access`]), and [`lines`]: events as transcript lines, the
//! one format the server shows them in. [`shared_status`] keeps the cost of polling `/status`
//! bounded, however many poll; [`push_log`] puts one line per push in the log when the
//! per-stream lines are too many to read.

pub(crate) mod access;
pub(crate) mod csds;
pub(crate) mod http;
pub(crate) mod lines;
pub(crate) mod page;
pub(crate) mod push_log;
pub(crate) mod registry;
pub(crate) mod scenario;
pub(crate) mod shared_status;
pub(crate) mod status;

pub(crate) use self::access::AdminAccess;
pub use self::http::Placement;
pub(crate) use self::http::{Admin, elsewhere};
