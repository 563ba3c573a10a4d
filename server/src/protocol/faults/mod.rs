//! Faults on purpose: what a scenario makes the server do wrong, kept out of the machines so
//! they stay the spec.
//!
//! - [`stage`]: the wire steps (delay, drop, close, mutations, ...) act on the machines'
//!   output: [`stage::FaultStage::plan`] turns a batch of responses into the steps the stream
//!   loop carries out, and the loop reports each fate back to the machine.

pub mod stage;
