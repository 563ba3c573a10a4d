//! Fault rules on a test server: the scenario in force (`docs/scenarios.md`), installed at
//! start ([`super::Builder::scenario`]) or changed while clients are connected, and how often
//! each rule fired.

use std::sync::Arc;

use super::{Backing, KitError, TestServer};
use crate::{
    faults::scenario::{Installed, Scenario, Scenarios, outage::Outage},
    tap::{FaultFacts, What},
};

impl TestServer {
    /// Puts `scenario` in force on every stream, open and new, with its rule counters at 0. A
    /// scenario that breaks a rule is refused with [`KitError::Scenario`] and the one in force
    /// stays.
    pub fn set_scenario(&self, scenario: Scenario) -> Result<Arc<Installed>, KitError> {
        self.scenarios().set(scenario).map_err(KitError::Scenario)
    }

    /// Removes the scenario in force: the server behaves again, and every stream a fault
    /// left NACKED, PENDING or short gets the current resources again.
    pub fn clear_scenario(&self) {
        self.scenarios().clear();
    }

    /// Every stream a fault left NACKED, PENDING or short gets the current resources again;
    /// the scenario in force stays (`POST /resync`).
    pub fn resync(&self) {
        self.scenarios().resync();
    }

    /// The scenario in force, with one counter per rule (`counters[i].fired()`).
    pub fn scenario(&self) -> Arc<Installed> {
        self.scenarios().current()
    }

    /// How often the rule `id` of the scenario in force fired so far (`None`: no such rule).
    pub fn fired(&self, id: &str) -> Option<u64> {
        let installed = self.scenario();
        let at = installed
            .scenario
            .rules
            .iter()
            .position(|rule| rule.id == id)?;
        Some(installed.counters[at].fired())
    }

    /// The `outage` in progress: the xDS port refuses connections until `outage.until`.
    pub fn outage(&self) -> Option<Outage> {
        self.scenarios().outages().current()
    }

    /// The last `outage` that is over (`ended_at`: when the port listened again).
    pub fn last_outage(&self) -> Option<Outage> {
        self.scenarios().outages().last()
    }

    /// The faults no response carried, so far, with their stream (0: server-wide, such as an
    /// `outage`, or a REST poll's): what `--record` writes as `! FAULT` lines.
    pub fn fault_events(&self) -> Vec<(u64, FaultFacts)> {
        self.journal.read(|kept| {
            let found = kept.events.iter().filter_map(|e| match &e.what {
                What::Fault(facts) => Some((e.stream, (**facts).clone())),
                _ => None,
            });
            found.collect()
        })
    }

    /// The handle the server's streams follow (the admin's `/scenario` changes it too).
    fn scenarios(&self) -> &Scenarios {
        match &self.backing {
            Backing::Memory { server, .. } => server.scenarios(),
            Backing::Fixtures { running, .. } => &running.scenarios,
        }
    }
}

#[cfg(test)]
mod tests {
    use xdsloop_proto::type_url::CLUSTER;

    use super::*;
    use crate::faults::scenario::{Action, Match, Rule};

    fn rule_on(type_name: &str) -> Scenario {
        Scenario {
            rules: vec![Rule {
                id: "on-type".into(),
                selector: Match {
                    type_url: Some(type_name.into()),
                    ..Default::default()
                },
                action: Action::Drop,
                ..Default::default()
            }],
        }
    }

    #[tokio::test]
    async fn a_rule_built_in_code_takes_the_type_aliases_of_the_file() {
        let server = TestServer::builder().start().await.unwrap();
        let installed = server.set_scenario(rule_on("cds")).unwrap();
        let selected = installed.scenario.rules[0].selector.type_url.as_deref();
        assert_eq!(selected, Some(CLUSTER));

        let refused = server.set_scenario(rule_on("clusterz")).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("rules[0] (on-type): match.type: unknown type"),
            "{refused}"
        );
        // The refused scenario left the one in force.
        assert_eq!(server.fired("on-type"), Some(0));
    }
}
