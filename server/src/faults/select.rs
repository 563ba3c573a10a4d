//! Which rules apply to a stream, and when: selectors are decided once per stream (again when
//! its node becomes known or the scenario changes); moments per response.

use std::time::Duration;

use crate::{
    faults::scenario::model::{Action, Match, Rule, Service, Variant, When, glob_matches},
    protocol::kind::{self, StreamKind},
};

/// Whether `rule`'s selectors (all but the type) hold for a stream of `kind` from `node`.
pub(crate) fn selects_stream(selector: &Match, kind: StreamKind, node: Option<&str>) -> bool {
    let variant = match selector.variant {
        None => true,
        Some(Variant::Sotw) => kind.variant == kind::Variant::Sotw,
        Some(Variant::Delta) => kind.variant == kind::Variant::Delta,
    };
    let service = match selector.service {
        None => true,
        Some(Service::Ads) => kind.service == "ads",
        Some(Service::PerType) => kind.service != "ads" && !kind.is_rest(),
        Some(Service::Rest) => kind.is_rest(),
    };
    let node = match (&selector.node, node) {
        (None, _) => true,
        (Some(glob), Some(node)) => glob_matches(glob, node),
        // Not known yet: decided again once the first request names it.
        (Some(_), None) => false,
    };
    variant && service && node
}

/// Whether `rule` can act on streams of `kind`: on REST polls, only the one-shot actions
/// without `after_ack` (a rule without `service` applies to streams and polls alike, and on
/// polls only where it makes sense).
pub(crate) fn acts_on(rule: &Rule, kind: StreamKind) -> bool {
    // Server-wide rules are no stream's: `faults::server` keeps them.
    if rule.action.is_server_wide() || rule.when.requested.is_some() {
        return false;
    }
    !kind.is_rest() || (rule.action.rest_refusal().is_none() && rule.when.after_ack.is_none())
}

/// Whether the rule is about `type_url` (a rule without a type is about every type).
pub(crate) fn selects_type(selector: &Match, type_url: &str) -> bool {
    selector.type_url.as_deref().is_none_or(|t| t == type_url)
}

/// A stream-ending action that fires by itself at a stream age (`when: { after: D }` only).
pub(crate) fn is_timed(rule: &Rule) -> bool {
    rule.action.is_stream_level() && rule.when.after.is_some() && rule.when.is_only_time()
}

/// Acts on single responses (as opposed to batches, exchanges or a timer); `withhold` leaves
/// its resources out of each response of its type.
pub(crate) fn is_per_response(rule: &Rule) -> bool {
    !is_timed(rule)
        && !matches!(
            rule.action,
            Action::Reorder | Action::IgnoreAcks { .. } | Action::Flap { .. }
        )
}

/// What is known of one response when its moment is judged.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Moment<'a> {
    /// 1-based count of responses of its type on the stream (of batches, for `reorder`).
    pub n: u64,
    pub version: &'a str,
    pub age: Duration,
    /// The client ACKed the rule's `after_ack` version since the rule last fired.
    pub armed: bool,
}

/// Whether `when` holds at `moment`.
pub(crate) fn at_moment(when: &When, moment: Moment<'_>) -> bool {
    let count = match (when.nth, when.every) {
        (Some(nth), Some(every)) => moment.n >= nth && (moment.n - nth).is_multiple_of(every),
        (Some(nth), None) => moment.n == nth,
        (None, Some(every)) => moment.n.is_multiple_of(every),
        (None, None) => true,
    };
    count
        && when.version.as_deref().is_none_or(|v| v == moment.version)
        && (when.after_ack.is_none() || moment.armed)
        && when.after.is_none_or(|after| moment.age >= after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moment(n: u64) -> Moment<'static> {
        Moment {
            n,
            version: "v1",
            age: Duration::ZERO,
            armed: false,
        }
    }

    #[test]
    fn nth_and_every_pick_their_responses() {
        let nth = When {
            nth: Some(2),
            ..When::default()
        };
        let fired: Vec<u64> = (1..=6).filter(|&n| at_moment(&nth, moment(n))).collect();
        assert_eq!(fired, [2]);
        let every = When {
            nth: Some(2),
            every: Some(3),
            ..When::default()
        };
        let fired: Vec<u64> = (1..=9).filter(|&n| at_moment(&every, moment(n))).collect();
        assert_eq!(fired, [2, 5, 8]);
    }

    #[test]
    fn after_ack_waits_for_the_ack_and_after_for_the_age() {
        let when = When {
            after_ack: Some("v6".into()),
            ..When::default()
        };
        assert!(!at_moment(&when, moment(1)));
        let armed = Moment {
            armed: true,
            ..moment(1)
        };
        assert!(at_moment(&when, armed));
        let later = When {
            after: Some(Duration::from_secs(5)),
            ..When::default()
        };
        assert!(!at_moment(&later, moment(1)));
        let old = Moment {
            age: Duration::from_secs(5),
            ..moment(1)
        };
        assert!(at_moment(&later, old));
    }

    #[test]
    fn selectors_follow_variant_service_and_node_glob() {
        let selector = Match {
            node: Some("edge-*".into()),
            variant: Some(Variant::Delta),
            service: Some(Service::Ads),
            type_url: None,
        };
        assert!(selects_stream(
            &selector,
            StreamKind::ADS_DELTA,
            Some("edge-1")
        ));
        assert!(!selects_stream(
            &selector,
            StreamKind::ADS_SOTW,
            Some("edge-1")
        ));
        assert!(!selects_stream(
            &selector,
            StreamKind::ADS_DELTA,
            Some("core-1")
        ));
        assert!(!selects_stream(&selector, StreamKind::ADS_DELTA, None));
        let per_type = StreamKind {
            variant: kind::Variant::Delta,
            service: "clusters",
        };
        assert!(!selects_stream(&selector, per_type, Some("edge-1")));
    }

    #[test]
    fn rest_polls_are_their_own_service_and_take_only_one_shot_actions() {
        let service = |service| Match {
            service,
            ..Match::default()
        };
        let rest = StreamKind::REST;
        assert!(selects_stream(&service(Some(Service::Rest)), rest, None));
        assert!(selects_stream(&service(None), rest, None));
        assert!(!selects_stream(
            &service(Some(Service::PerType)),
            rest,
            None
        ));
        assert!(!selects_stream(&service(Some(Service::Ads)), rest, None));
        let per_type = StreamKind {
            variant: kind::Variant::Sotw,
            service: "clusters",
        };
        assert!(!selects_stream(
            &service(Some(Service::Rest)),
            per_type,
            None
        ));
        let rule = |action| Rule {
            action,
            ..Rule::default()
        };
        assert!(acts_on(&rule(Action::Delay(Duration::from_secs(1))), rest));
        assert!(!acts_on(&rule(Action::StaleNonce), rest));
        assert!(acts_on(&rule(Action::StaleNonce), StreamKind::ADS_SOTW));
        let after_ack = Rule {
            when: When {
                after_ack: Some("v1".into()),
                ..When::default()
            },
            ..rule(Action::Delay(Duration::from_secs(1)))
        };
        assert!(!acts_on(&after_ack, rest));
    }
}
