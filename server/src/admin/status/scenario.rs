//! The `scenario` section of `/status` (and the body of `GET /scenario`): what is in force,
//! where it came from, the last refused one, and per rule how often it fired.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use xdsloop_proto::type_url;

use super::rfc3339;
use crate::faults::scenario::{
    Installed, Scenarios,
    installed::Firing,
    outage::{Outage, Outages},
};

/// The scenario in force (`/status` `scenario`, also `GET /scenario`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioView {
    /// `none`, `file`, `api` or `code`.
    pub source: String,
    /// The file, when it came from `--scenario FILE`.
    pub path: Option<String>,
    /// +1 per installation; 0: none ever installed.
    pub generation: u64,
    /// When it was installed.
    #[serde(with = "rfc3339")]
    pub loaded_at: SystemTime,
    /// Why the last scenario given was refused (the one shown stays in force).
    pub error: Option<String>,
    /// Its rules, in file order, with how often each fired.
    pub rules: Vec<RuleView>,
    /// The outage in progress, else the last one (`null`: none yet).
    #[serde(default)]
    pub outage: Option<OutageView>,
}

/// A server-wide `outage`: the xDS listener closed and every connection with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutageView {
    /// In progress: new connections are refused until `ends_at`.
    pub active: bool,
    /// The id of the rule that set it off.
    pub rule: String,
    /// The installation that rule belongs to: the scenario in force while `generation` is the
    /// same, an earlier one otherwise.
    pub generation: u64,
    /// What set it off: `installed`, `5s after the installation`, `requested: cds web by
    /// node n on stream 3`.
    pub trigger: String,
    /// When the listener closed.
    #[serde(with = "rfc3339")]
    pub started_at: SystemTime,
    /// When it opens again.
    #[serde(with = "rfc3339")]
    pub ends_at: SystemTime,
    /// When the listener was bound again.
    #[serde(with = "rfc3339::option")]
    pub ended_at: Option<SystemTime>,
    /// Connections it closed.
    pub connections_closed: usize,
    /// Outages since the server started.
    pub count: u64,
    /// Past `ends_at`, the address cannot be bound again (another process holds the port):
    /// the last error; xDS stays unserved while it lasts. `null` otherwise.
    #[serde(default)]
    pub rebind_error: Option<String>,
    /// When binding again first failed.
    #[serde(default, with = "rfc3339::option")]
    pub rebind_failing_since: Option<SystemTime>,
}

/// One rule of the scenario in force and its counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleView {
    /// The rule's id.
    pub id: String,
    /// Its action, as the scenario file names it.
    pub action: String,
    /// Times it fired.
    pub fired: u64,
    /// Firings that had nothing to act on (`stale_nonce` before any nonce, a resource not in
    /// the response).
    pub skipped: u64,
    /// Its latest firing.
    pub last: Option<FiringView>,
}

/// Where and when a rule fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FiringView {
    /// When.
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    /// On which stream.
    pub stream: u64,
    /// The stream's node, once known.
    pub node: Option<String>,
    /// The type's short name (`cds`, ...), `type` in the JSON.
    #[serde(rename = "type")]
    pub alias: Option<String>,
    /// The nonce of the response it touched.
    pub nonce: Option<String>,
}

/// The section as of now.
pub(crate) fn view(scenarios: &Scenarios) -> ScenarioView {
    let installed = scenarios.current();
    let error = scenarios.rejected().map(|r| r.error);
    let mut view = view_of(&installed, error);
    view.outage = outage_view(scenarios.outages());
    view
}

fn outage_view(outages: &Outages) -> Option<OutageView> {
    let (active, outage) = match outages.current() {
        Some(current) => (true, current),
        None => (false, outages.last()?),
    };
    let Outage {
        rule,
        generation,
        trigger,
        started_at,
        duration,
        connections_closed,
        ended_at,
        rebind,
        ..
    } = outage;
    Some(OutageView {
        active,
        rule,
        generation,
        trigger,
        started_at,
        ends_at: started_at + duration,
        ended_at,
        connections_closed,
        count: outages.count(),
        rebind_error: rebind.as_ref().map(|r| r.error.clone()),
        rebind_failing_since: rebind.map(|r| r.since),
    })
}

/// How long an outage lasts, for people.
pub(crate) fn outage_length(view: &OutageView) -> Duration {
    view.ends_at
        .duration_since(view.started_at)
        .unwrap_or_default()
}

fn view_of(installed: &Installed, error: Option<String>) -> ScenarioView {
    let rules = installed
        .scenario
        .rules
        .iter()
        .zip(installed.counters.iter())
        .map(|(rule, counters)| RuleView {
            id: rule.id.clone(),
            action: rule.action.name().to_string(),
            fired: counters.fired(),
            skipped: counters.skipped_count(),
            last: counters.last().map(firing_view),
        })
        .collect();
    ScenarioView {
        source: installed.origin.as_str().to_string(),
        path: installed.path.as_ref().map(|p| p.display().to_string()),
        generation: installed.generation,
        loaded_at: installed.loaded_at,
        error,
        rules,
        outage: None,
    }
}

fn firing_view(f: Firing) -> FiringView {
    FiringView {
        at: f.at,
        stream: f.stream,
        node: f.node,
        alias: f.type_url.map(|u| type_url::short_name(&u).to_string()),
        nonce: f.nonce,
    }
}
