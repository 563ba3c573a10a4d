//! I/O: how requests reach the protocol machines and responses leave them.
//!
//! - [`stream`]: the short async loop around one state machine: requests, snapshot changes
//!   and shutdown in; responses, status and events out, through the judge, the fault stage
//!   and the tap.
//! - [`discovery`]: starts those loops for any gRPC service, registered in the registry.
//! - [`request_body`]: a streaming call's requests, read off its HTTP/2 body as they arrive;
//!   `response_body`: its responses, written frame by frame with the shared resource bytes
//!   uncopied.
//! - [`ads`]: the Aggregated Discovery Service; [`per_type`]: CDS, EDS, LDS, RDS, ... as
//!   their own services (streams and unary Fetch); [`rest`]: Envoy's REST-JSON polling;
//!   [`unary`]: the newest snapshot's answers to both kinds of fetch.
//! - [`introspection`]: gRPC health checking and reflection on the xDS port.
//! - [`record`]: the transcript recorder (`--record`), fed by the registry's event bus.
//! - [`outage`]: the server-wide fault rules carried out (`outage`, `when.requested`).

pub(crate) mod ads;
pub(crate) mod discovery;
pub(crate) mod introspection;
pub(crate) mod outage;
pub(crate) mod per_type;
pub(crate) mod record;
pub(crate) mod request_body;
mod response_body;
pub(crate) mod rest;
pub(crate) mod stream;
pub(crate) mod unary;
