//! Fault scenarios in code: the typed rules (the vocabulary of a scenario file,
//! `docs/scenarios.md`), the scenario in force on a running server, and the offline check
//! `xdsloop-server scenario check FILE` runs.
pub use crate::faults::scenario::check::check_file;
pub use crate::faults::scenario::installed::{Firing, RuleCounters};
pub use crate::faults::scenario::outage::{Outage, RebindFailure};
pub use crate::faults::scenario::{
    Action, Installed, Match, Origin, ParseError, Place, Requested, ResetScope, Rule, Scenario,
    Scenarios, Service, Variant, When,
};
