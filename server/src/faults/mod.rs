//! Faults on purpose: what a scenario makes the server do wrong, kept out of the machines so
//! they stay the spec (`docs/scenarios.md`).
//!
//! - [`select`]: which rules apply to a stream (node glob, variant, service) and to a response
//!   (type, the moment: nth, every, version, after_ack, after);
//! - [`stage`]: the wire steps (delay, drop, close, reset, hang, mutations, reorder) act on the
//!   machines' output: [`stage::FaultStage::plan`] turns a batch of responses into the steps
//!   the stream loop carries out, and the loop reports each fate back to the machine;
//!   `ignore_acks` asks the machine itself for resends
//!   ([`stage::FaultStage::after_exchange`]), and `flap` has it hide names for a while
//!   ([`stage::FaultStage::on_flap`], on the stream's fault timer);
//! - [`server`]: the server-wide rules (`outage`), due at the installation, a time after it
//!   or the first request for a resource (`when.requested`), which no stream's stage takes;
//! - [`scenario`]: the rules themselves (typed, and read from YAML), the scenario in force
//!   that streams follow, the outages it sets off, and `--scenario FILE`.
//!
//! The stage, the selection and the server-wide rules are pure and read no clock: the
//! transport passes the time in ([`stage::StreamCtx`]). The scenario's store, outages and file
//! watcher are this room's edge to the running server.

pub(crate) mod scenario;
pub(crate) mod select;
pub(crate) mod server;
pub(crate) mod stage;
