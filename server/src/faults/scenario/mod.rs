//! Scenarios: rules that make the server misbehave on purpose, for testing clients' failure
//! paths (`docs/scenarios.md`).
//!
//! - [`model`]: the typed rules ([`Scenario`], [`Rule`], [`Match`], [`When`], [`Action`]),
//!   public for Rust tests, and the checks every rule must pass;
//! - [`parse`]: YAML text → [`Scenario`] (pure), errors with line:col and the rule;
//! - [`installed`]: the seam, [`Scenarios`]: the scenario in force with its per-rule counters,
//!   installed by the file, the admin API or code (last writer wins), followed by streams;
//! - [`watch`]: `--scenario FILE`, reloaded on every edit; a bad edit keeps the one in force;
//! - [`check`]: `xdsloop-server scenario check FILE`, the same reading offline;
//! - [`outage`]: the server-wide outages the rules set off, as data the accept loop follows
//!   and `/status` shows.

pub(crate) mod check;
pub(crate) mod installed;
pub(crate) mod model;
pub(crate) mod outage;
pub(crate) mod parse;
pub(crate) mod watch;

#[cfg(test)]
mod tests;

pub use installed::{Installed, Origin, Scenarios};
pub use model::{
    Action, Match, Place, Requested, ResetScope, Rule, Scenario, Service, Variant, When,
};
pub use parse::ParseError;

impl Scenario {
    /// Reads a scenario file's text (see `docs/scenarios.md`).
    pub fn from_yaml(text: &str) -> Result<Scenario, ParseError> {
        parse::parse(text)
    }
}
