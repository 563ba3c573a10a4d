//! Server-wide rules (`outage`): which of the scenario's rules are the server's rather than a
//! stream's, when each is due, and which request sets off a `when.requested` one. Pure: the
//! transport's driver ([`crate::transport::outage`]) keeps the time and acts.
//!
//! A server-wide rule fires at most once per installation: with no `when` at the
//! installation itself, with `when.after` that long after it, with `when.requested` at the
//! first request, of any client the rule's `match` selects, that asks for the resource while
//! the client does not hold it from that stream (never sent on it, or unsubscribed since): an
//! ACK or a resubscription of what the stream sent is not a new ask. Its
//! one firing is taken from the rule's shared counter, so of two streams asking at once only
//! one sets it off.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use super::select;
use crate::{
    faults::scenario::{
        Installed,
        installed::Firing,
        model::{Rule, glob_matches},
    },
    protocol::{fetch::FETCH_STREAM_ID, kind::StreamKind},
};
use xdsloop_proto::type_url;

/// A request as the server-wide rules see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked<'a> {
    pub stream: u64,
    pub kind: StreamKind,
    pub node: Option<&'a str>,
    pub type_url: &'a str,
    /// The names it subscribes (SotW: all of them; Delta: the new ones).
    pub names: &'a [&'a str],
    /// A wildcard subscription: every name of the type.
    pub wildcard: bool,
    /// The names of the type the client already holds from this stream (before this
    /// request): asking for one of them again (an ACK, a resubscription) is not a new ask.
    pub sent: &'a [&'a str],
}

/// Whether a request with these names subscribes to everything of its type: `*`, or (the
/// legacy form) no names on a stream's first request of LDS or CDS. `first` is SotW's
/// any-request-without-names or Delta's first request of the type.
pub(crate) fn is_wildcard(type_url: &str, names: &[&str], first: bool) -> bool {
    names.contains(&"*") || (names.is_empty() && first && type_url::full_state(type_url))
}

/// What set a server-wide rule off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The scenario was installed (a rule without `when`).
    Installed,
    /// `when.after` passed since the installation.
    After(Duration),
    /// A client asked for the resource.
    Requested {
        stream: u64,
        node: Option<String>,
        type_url: String,
        name: String,
    },
}

impl Trigger {
    /// The rule's firing at `at`, for `/status`: server-wide (stream 0) unless a stream's
    /// request set it off.
    pub(crate) fn firing(&self, at: SystemTime) -> Firing {
        match self {
            Trigger::Installed | Trigger::After(_) => Firing {
                at,
                stream: FETCH_STREAM_ID,
                node: None,
                type_url: None,
                nonce: None,
            },
            Trigger::Requested {
                stream,
                node,
                type_url,
                ..
            } => Firing {
                at,
                stream: *stream,
                node: node.clone(),
                type_url: Some(type_url.clone()),
                nonce: None,
            },
        }
    }

    /// For people: the log, `/status`, the transcript.
    pub(crate) fn describe(&self) -> String {
        match self {
            Trigger::Installed => "installed".into(),
            Trigger::After(after) => format!("{} after the installation", humanize(*after)),
            Trigger::Requested {
                stream,
                node,
                type_url,
                name,
            } => format!(
                "requested: {} {name} by node {} on stream {stream}",
                type_url::short_name(type_url),
                node.as_deref().unwrap_or("(unknown)")
            ),
        }
    }
}

fn humanize(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The server-wide rules of one installation.
#[derive(Debug, Clone)]
pub(crate) struct ServerRules {
    installed: Arc<Installed>,
    /// Indices of the server-wide rules in the scenario.
    indices: Vec<usize>,
}

impl ServerRules {
    pub(crate) fn of(installed: Arc<Installed>) -> Self {
        let indices = installed
            .scenario
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| is_server_wide(r))
            .map(|(i, _)| i)
            .collect();
        Self { installed, indices }
    }

    pub(crate) fn installed(&self) -> &Arc<Installed> {
        &self.installed
    }

    /// Some rule waits for a request: streams must report theirs.
    pub(crate) fn wants_requests(&self) -> bool {
        self.indices
            .iter()
            .any(|&i| self.rule(i).when.requested.is_some())
    }

    pub(crate) fn rule(&self, index: usize) -> &Rule {
        &self.installed.scenario.rules[index]
    }

    /// The rules that fire by time, with how long after the installation (zero: at it).
    pub(crate) fn timed(&self) -> Vec<(usize, Duration)> {
        self.indices
            .iter()
            .filter(|&&i| self.rule(i).when.requested.is_none())
            .map(|&i| (i, self.rule(i).when.after.unwrap_or_default()))
            .collect()
    }

    /// Takes rule `index`'s one chance; `false` if it fired or was skipped already. The
    /// firing is recorded once it happened ([`RuleCounters::record`]).
    pub(crate) fn take(&self, index: usize) -> bool {
        let counters = &self.installed.counters[index];
        !counters.is_settled() && counters.try_take(Some(1))
    }

    /// The `when.requested` rules `asked` sets off, each with what set it off; each is taken
    /// (no later request sets it off again).
    pub(crate) fn on_request(&self, asked: &Asked<'_>) -> Vec<(usize, Trigger)> {
        let mut fired = Vec::new();
        for &i in &self.indices {
            let rule = self.rule(i);
            let Some(requested) = &rule.when.requested else {
                continue;
            };
            if requested.type_url != asked.type_url
                || !select::selects_stream(&rule.selector, asked.kind, asked.node)
                || self.installed.counters[i].is_spent(Some(1))
            {
                continue;
            }
            let unsent = |n: &&str| !asked.sent.contains(n);
            let name = if asked.wildcard {
                let held = asked.sent.iter().any(|n| glob_matches(&requested.name, n));
                (!held).then_some(requested.name.as_str())
            } else {
                let names = asked.names.iter().copied().filter(unsent);
                names.into_iter().find(|n| glob_matches(&requested.name, n))
            };
            let Some(name) = name else { continue };
            if self.take(i) {
                let trigger = Trigger::Requested {
                    stream: asked.stream,
                    node: asked.node.map(str::to_string),
                    type_url: asked.type_url.to_string(),
                    name: name.to_string(),
                };
                fired.push((i, trigger));
            }
        }
        fired
    }
}

/// A rule the server as a whole carries out, not a stream's fault stage.
pub(crate) fn is_server_wide(rule: &Rule) -> bool {
    rule.action.is_server_wide() || rule.when.requested.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::scenario::{
        Scenarios,
        model::{Action, Match, Requested, Scenario, When},
    };

    const CDS: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
    const LDS: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";

    fn outage(when: When, selector: Match) -> Rule {
        Rule {
            id: "down".into(),
            selector,
            when,
            action: Action::Outage {
                duration: Duration::from_secs(10),
            },
            ..Rule::default()
        }
    }

    fn requested(name: &str) -> When {
        When {
            requested: Some(Requested {
                type_url: CDS.into(),
                name: name.into(),
            }),
            ..When::default()
        }
    }

    fn rules(rules: Vec<Rule>) -> ServerRules {
        let scenarios = Scenarios::new();
        ServerRules::of(scenarios.set(Scenario { rules }).unwrap())
    }

    fn asked<'a>(node: &'a str, type_url: &'a str, names: &'a [&'a str]) -> Asked<'a> {
        Asked {
            stream: 7,
            kind: StreamKind::ADS_SOTW,
            node: Some(node),
            type_url,
            names,
            wildcard: false,
            sent: &[],
        }
    }

    #[test]
    fn requested_is_not_set_off_by_asking_again_for_what_the_stream_sent() {
        let rules = rules(vec![outage(requested("w*"), Match::default())]);
        let ack = Asked {
            sent: &["api", "web"],
            ..asked("a", CDS, &["api", "web"])
        };
        assert!(rules.on_request(&ack).is_empty(), "an ACK of web");
        let wildcard_ack = Asked {
            wildcard: true,
            ..ack
        };
        assert!(
            rules.on_request(&wildcard_ack).is_empty(),
            "a wildcard holding web"
        );
        let new_name = Asked {
            sent: &["api", "web"],
            ..asked("a", CDS, &["api", "web", "www"])
        };
        let fired = rules.on_request(&new_name);
        assert_eq!(fired.len(), 1);
        assert!(fired[0].1.describe().starts_with("requested: cds www "));
    }

    #[test]
    fn requested_fires_once_at_the_first_request_naming_the_resource() {
        let rules = rules(vec![outage(requested("web"), Match::default())]);
        assert!(rules.wants_requests());
        assert!(rules.timed().is_empty());
        assert!(rules.on_request(&asked("a", CDS, &["api"])).is_empty());
        assert!(
            rules.on_request(&asked("a", LDS, &["web"])).is_empty(),
            "another type's web"
        );
        let fired = rules.on_request(&asked("a", CDS, &["api", "web"]));
        assert_eq!(fired.len(), 1);
        assert_eq!(
            fired[0].1.describe(),
            "requested: cds web by node a on stream 7"
        );
        assert!(
            rules.on_request(&asked("b", CDS, &["web"])).is_empty(),
            "once per installation"
        );
        assert_eq!(rules.installed().counters[0].fired(), 1);
        assert_eq!(
            fired[0].1.firing(SystemTime::UNIX_EPOCH).node.as_deref(),
            Some("a")
        );
    }

    #[test]
    fn requested_follows_the_node_glob_and_counts_a_wildcard_as_every_name() {
        let selector = Match {
            node: Some("edge-*".into()),
            ..Match::default()
        };
        let rules = rules(vec![outage(requested("w*"), selector)]);
        assert!(rules.on_request(&asked("core-1", CDS, &["web"])).is_empty());
        let wildcard = Asked {
            wildcard: true,
            ..asked("edge-1", CDS, &[])
        };
        assert_eq!(rules.on_request(&wildcard).len(), 1);
    }

    #[test]
    fn an_outage_without_a_request_fires_by_time_and_stream_rules_are_not_server_wide() {
        let at_once = outage(When::default(), Match::default());
        let later = Rule {
            id: "later".into(),
            ..outage(
                When {
                    after: Some(Duration::from_secs(3)),
                    ..When::default()
                },
                Match::default(),
            )
        };
        let stream_rule = Rule {
            id: "cut".into(),
            ..Rule::default()
        };
        let rules = rules(vec![stream_rule, at_once, later]);
        assert!(!rules.wants_requests());
        assert_eq!(
            rules.timed(),
            vec![(1, Duration::ZERO), (2, Duration::from_secs(3))]
        );
        assert!(rules.take(1));
        assert!(!rules.take(1), "one firing per installation");
        rules.installed().counters[2].not_started();
        assert!(!rules.take(2), "a skipped outage does not fire later");
    }

    #[test]
    fn wildcards_are_star_or_no_names_first_on_lds_and_cds() {
        assert!(is_wildcard(CDS, &[], true));
        assert!(is_wildcard(CDS, &["*"], false));
        assert!(!is_wildcard(CDS, &[], false));
        assert!(!is_wildcard(
            "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
            &[],
            true
        ));
        assert!(!is_wildcard(CDS, &["web"], true));
    }
}
