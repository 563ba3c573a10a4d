//! The `scenario` section of `/status` (and the body of `GET /scenario`): what is in force,
//! where it came from, the last refused one, and per rule how often it fired.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use xdsloop_proto::type_url;

use super::rfc3339;
use crate::config::scenario::{Installed, Scenarios, installed::Firing};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioView {
    /// `none`, `file`, `api` or `code`.
    pub source: String,
    pub path: Option<String>,
    /// +1 per installation; 0: none ever installed.
    pub generation: u64,
    #[serde(with = "rfc3339")]
    pub loaded_at: SystemTime,
    /// Why the last scenario given was refused (the one shown stays in force).
    pub error: Option<String>,
    pub rules: Vec<RuleView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleView {
    pub id: String,
    pub action: String,
    pub fired: u64,
    /// Firings that had nothing to act on (`stale_nonce` before any nonce, a resource not in
    /// the response).
    pub skipped: u64,
    pub last: Option<FiringView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FiringView {
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    pub stream: u64,
    pub node: Option<String>,
    #[serde(rename = "type")]
    pub alias: Option<String>,
    pub nonce: Option<String>,
}

/// The section as of now.
pub fn view(scenarios: &Scenarios) -> ScenarioView {
    let installed = scenarios.current();
    let error = scenarios.rejected().map(|r| r.error);
    view_of(&installed, error)
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
