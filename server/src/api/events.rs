//! What happened on a stream, as plain events ([`WireEvent`]): opened, each request and
//! response as the server decoded and judged it, faults, closed. The server's bus carries
//! them to whoever listens ([`Registry::bus`](crate::status::Registry::bus)), and
//! [`to_line`] writes one as the transcript line `--record` would.
pub use crate::admin::lines::to_line;
pub use crate::admin::registry::bus::{Bus, Listener, Received};
pub use crate::protocol::facts::{
    Capture, ErrorFacts, Listed, Names, RequestFacts, ResponseFacts, StatusFacts, TypeName,
};
pub use crate::protocol::subscription::Change;
pub use crate::protocol::wire::FaultMark;
pub use crate::tap::{CloseReason, Closed, FaultFacts, Opened, What, WireEvent};
