//! The public API's modules, each a curated view of the layers below for users of the crate
//! (`xdsloop_server::status`, `::events`, `::scenario`, `::fixtures`, `::tls`). They hold no
//! code of their own: every item is defined in the layer it belongs to and re-exported here,
//! so the facade can change shape without moving the code.

pub mod events;
pub mod fixtures;
pub mod scenario;
pub mod status;
pub mod tls;
