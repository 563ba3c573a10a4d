use std::time::Duration;

use xdsloop_proto::type_url::CLUSTER;

use super::*;

fn error(text: &str) -> ParseError {
    Scenario::from_yaml(text).expect_err("the scenario is refused")
}

/// The error is at `line:col` and says `what`.
fn refused_at(text: &str, line: usize, what: &str) -> ParseError {
    let e = error(text);
    assert_eq!(e.line, line, "{e}");
    assert!(e.column > 0, "{e}");
    assert!(e.to_string().contains(what), "{e} does not say {what:?}");
    e
}

#[test]
fn a_full_rule_reads_into_the_typed_model() {
    let s = Scenario::from_yaml(
        "version: 1\nrules:\n  - id: corrupt-web\n    match: { node: \"edge-*\", variant: sotw, \
         service: ads, type: cds }\n    when: { nth: 2 }\n    times: 1\n    do: { corrupt: { \
         resource: web } }\n  - do: { delay: 250ms }\n",
    )
    .unwrap();
    let rule = &s.rules[0];
    assert_eq!(rule.id, "corrupt-web");
    assert_eq!(rule.selector.node.as_deref(), Some("edge-*"));
    assert_eq!(rule.selector.variant, Some(Variant::Sotw));
    assert_eq!(rule.selector.service, Some(Service::Ads));
    assert_eq!(rule.selector.type_url.as_deref(), Some(CLUSTER));
    assert_eq!(rule.when.nth, Some(2));
    assert_eq!(rule.times, Some(1));
    assert_eq!(
        rule.action,
        Action::Corrupt {
            resource: Some("web".into())
        }
    );
    assert_eq!(
        s.rules[1].id, "rule-2",
        "the default id is rule-<n>, 1-based"
    );
    assert_eq!(s.rules[1].action, Action::Delay(Duration::from_millis(250)));
}

#[test]
fn every_action_of_the_schema_reads() {
    let actions = [
        ("{ delay: 2s }", "delay"),
        ("{ drop: {} }", "drop"),
        (
            "{ close: { code: UNAVAILABLE, message: maintenance } }",
            "close",
        ),
        ("{ reset: { scope: stream } }", "reset"),
        ("{ reset: { scope: connection } }", "reset"),
        ("{ hang: { for: 30s } }", "hang"),
        ("{ hang: {} }", "hang"),
        ("{ stale_nonce: {} }", "stale_nonce"),
        (
            "{ wrong_type_url: { in: response, type: eds } }",
            "wrong_type_url",
        ),
        ("{ duplicate: { resource: web } }", "duplicate"),
        ("{ corrupt: {} }", "corrupt"),
        ("{ oversize: { bytes: 8MiB } }", "oversize"),
        ("{ reorder: {} }", "reorder"),
        ("{ withhold: { names: [web, \"api-*\"] } }", "withhold"),
        ("{ ignore_acks: { nacks: true } }", "ignore_acks"),
    ];
    for (action, name) in actions {
        let text = format!("version: 1\nrules:\n  - match: {{ type: cds }}\n    do: {action}\n");
        let s = Scenario::from_yaml(&text).unwrap_or_else(|e| panic!("{action}: {e}"));
        assert_eq!(s.rules[0].action.name(), name);
    }
    let s = Scenario::from_yaml("version: 1\nrules:\n  - do: { oversize: { bytes: 8MiB } }\n");
    assert_eq!(
        s.unwrap().rules[0].action,
        Action::Oversize { bytes: 8 << 20 }
    );
}

/// An action whose fields are all optional may be written with no value, or `null`, for `{}`.
#[test]
fn an_action_with_no_fields_given_may_be_empty_or_null() {
    for action in [
        "drop:",
        "drop: null",
        "stale_nonce: ~",
        "hang: null",
        "close: null",
        "corrupt: null",
        "duplicate:",
        "reorder: null",
        "ignore_acks: null",
    ] {
        let text =
            format!("version: 1\nrules:\n  - match: {{ type: cds }}\n    do: {{ {action} }}\n");
        Scenario::from_yaml(&text).unwrap_or_else(|e| panic!("{action}: {e}"));
    }
}

#[test]
fn an_unknown_field_is_refused_with_its_place() {
    let e = refused_at(
        "version: 1\nrules:\n  - match: { type: cds }\n    wen: { nth: 2 }\n    do: { drop: {} }\n",
        4,
        "unknown field `wen`",
    );
    assert!(e.message.starts_with("rules[0]"), "{e}");
}

#[test]
fn an_unknown_action_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - do: { explode: {} }\n",
        3,
        "unknown variant `explode`",
    );
}

#[test]
fn a_bad_duration_is_refused_with_the_rule() {
    let e = refused_at(
        "version: 1\nrules:\n  - id: slow\n    do: { delay: soon }\n",
        4,
        "delay: \"soon\" is not a duration",
    );
    assert!(e.message.contains("(slow)"), "{e}");
}

#[test]
fn an_unknown_type_alias_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - match: { type: xds }\n    do: { drop: {} }\n",
        3,
        "match.type: unknown type \"xds\"",
    );
}

#[test]
fn a_bad_grpc_code_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - do: { close: { code: BROKEN } }\n",
        3,
        "\"BROKEN\" is not a gRPC code name",
    );
}

#[test]
fn nth_zero_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - match: { type: cds }\n    when: { nth: 0 }\n    do: { drop: {} }\n",
        4,
        "`when.nth` must be at least 1",
    );
}

#[test]
fn nth_without_a_type_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - when: { nth: 2 }\n    do: { drop: {} }\n",
        3,
        "`when.nth` needs `match.type`",
    );
}

#[test]
fn a_state_fault_with_a_response_moment_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - match: { type: cds }\n    when: { nth: 2 }\n    do: { withhold: { names: [web] } }\n",
        4,
        "its `when` may only hold `after`",
    );
}

#[test]
fn an_action_rest_cannot_do_is_refused_by_name_with_the_reason() {
    refused_at(
        "version: 1\nrules:\n  - match: { service: rest }\n    do: { stale_nonce: {} }\n",
        3,
        "`stale_nonce` is not supported with `service: rest`: a REST client echoes no nonce",
    );
    refused_at(
        "version: 1\nrules:\n  - match: { service: rest }\n    do: { reset: { scope: stream } }\n",
        3,
        "`reset` is not supported with `service: rest`: a poll has no stream to reset",
    );
    refused_at(
        "version: 1\nrules:\n  - match: { service: rest, type: cds }\n    when: { after_ack: v1 }\n    do: { delay: 1s }\n",
        4,
        "`when.after_ack` is not supported with `service: rest`",
    );
}

#[test]
fn rest_rules_with_one_shot_actions_are_accepted() {
    for action in [
        "delay: 1s",
        "close: { code: UNAVAILABLE, message: down }",
        "hang: {}",
        "withhold: { names: [web] }",
        "duplicate: {}",
        "corrupt: {}",
        "oversize: { bytes: 1MiB }",
        "wrong_type_url: { type: eds }",
    ] {
        let yaml = format!(
            "version: 1\nrules:\n  - match: {{ service: rest, type: cds }}\n    do: {{ {action} }}\n"
        );
        Scenario::from_yaml(&yaml).unwrap_or_else(|e| panic!("{action}: {e}"));
    }
}

#[test]
fn a_bad_id_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - id: Has Spaces\n    do: { drop: {} }\n",
        3,
        "must be [a-z0-9-]+",
    );
}

#[test]
fn a_duplicate_id_is_refused_at_its_second_use() {
    refused_at(
        "version: 1\nrules:\n  - id: a\n    do: { drop: {} }\n  - id: a\n    do: { drop: {} }\n",
        5,
        "the id \"a\" is used twice",
    );
}

#[test]
fn an_unknown_version_is_refused() {
    refused_at("version: 2\nrules: []\n", 1, "version: 2 is not known");
}

#[test]
fn a_bad_size_is_refused() {
    refused_at(
        "version: 1\nrules:\n  - do: { oversize: { bytes: 8 parsecs } }\n",
        3,
        "unknown unit",
    );
}

#[test]
fn rust_rules_obey_the_same_checks() {
    let scenarios = Scenarios::new();
    let bad = Scenario {
        rules: vec![Rule {
            when: When {
                nth: Some(1),
                ..When::default()
            },
            ..Rule::default()
        }],
    };
    let e = scenarios.set(bad).expect_err("nth without a type");
    assert!(e.contains("needs `match.type`"), "{e}");
    assert_eq!(
        scenarios.current().generation,
        0,
        "the empty scenario stays"
    );
    assert!(scenarios.rejected().is_some());
    let good = Scenario {
        rules: vec![Rule::default()],
    };
    assert_eq!(scenarios.set(good).unwrap().generation, 1);
    assert!(
        scenarios.rejected().is_none(),
        "a good one clears the error"
    );
}

#[test]
fn globs_match_runs_and_single_characters() {
    assert!(model::glob_matches("edge-*", "edge-1"));
    assert!(model::glob_matches("*", ""));
    assert!(model::glob_matches("e?ge-*-b", "edge-x-y-b"));
    assert!(!model::glob_matches("edge-?", "edge-12"));
    assert!(!model::glob_matches("edge", "edge-1"));
}

#[test]
fn the_counters_stop_at_times() {
    let counters = installed::RuleCounters::default();
    assert!(counters.try_take(Some(2)));
    assert!(counters.try_take(Some(2)));
    assert!(!counters.try_take(Some(2)));
    assert!(counters.is_spent(Some(2)));
    assert_eq!(counters.fired(), 2);
}

#[test]
fn flap_reads_into_names_and_a_period() {
    let s = Scenario::from_yaml(
        "version: 1\nrules:\n  - match: { type: cds }\n    do: { flap: { names: [web], period: 2s } }\n",
    );
    assert_eq!(
        s.unwrap().rules[0].action,
        Action::Flap {
            names: vec!["web".into()],
            period: std::time::Duration::from_secs(2)
        }
    );
}

#[test]
fn flap_of_eds_in_sotw_is_refused_it_could_remove_nothing() {
    let e = refused_at(
        "version: 1\nrules:\n  - match: { type: eds }\n    do: { flap: { names: [web], period: 2s } }\n",
        3,
        "`flap` of eds needs `match.variant: delta`",
    );
    assert!(e.to_string().contains("only LDS and CDS"), "{e}");
    let delta = "version: 1\nrules:\n  - match: { type: eds, variant: delta }\n    do: { flap: { names: [web], period: 2s } }\n";
    assert!(Scenario::from_yaml(delta).is_ok());
    refused_at(
        "version: 1\nrules:\n  - match: { type: cds }\n    do: { flap: { names: [web], period: 0s } }\n",
        4,
        "`flap.period` must be above zero",
    );
}

#[test]
fn reset_connection_reads_into_its_scope() {
    let s = Scenario::from_yaml("version: 1\nrules:\n  - do: { reset: { scope: connection } }\n");
    assert_eq!(
        s.unwrap().rules[0].action,
        Action::Reset {
            scope: crate::faults::scenario::ResetScope::Connection
        }
    );
}

/// Every size and duration has a bound, checked where the rule is read: an out-of-range value
/// is refused with its line, before the server spends memory or time on it.
#[test]
fn sizes_and_durations_out_of_range_are_refused_with_their_line() {
    for (rule, says) in [
        ("{ oversize: { bytes: 100GiB } }", "oversize.bytes: at most"),
        ("{ oversize: { bytes: 1GiB } }", "oversize.bytes: at most"),
        ("{ delay: 30d }", "delay: at most"),
        ("{ hang: { for: 400d } }", "hang.for: at most"),
        ("{ close: { message: MESSAGE } }", "close.message: at most"),
    ] {
        let rule = rule.replace("MESSAGE", &"x".repeat(5000));
        let text = format!("version: 1\nrules:\n  - id: big\n    do: {rule}\n");
        let e = refused_at(&text, 4, says);
        assert!(e.to_string().contains("(big)"), "{e}");
    }
    let text = "version: 1\nrules:\n  - match: { type: cds }\n    do: { flap: { names: [web], period: 1ms } }\n";
    refused_at(text, 4, "flap.period: at least");
    let text = "version: 1\nrules:\n  - when: { after: 1000d }\n    do: { close: {} }\n";
    refused_at(text, 3, "when.after: at most");
    // Each limit speaks of its own action: only hang's mentions hang.
    for rule in ["{ delay: 30d }", "{ outage: { for: 30d } }"] {
        let text = format!("version: 1\nrules:\n  - do: {rule}\n");
        let e = Scenario::from_yaml(&text).unwrap_err().to_string();
        assert!(!e.contains("hang"), "{e}");
    }
    // The largest values in range are taken.
    let text =
        "version: 1\nrules:\n  - do: { oversize: { bytes: 64MiB } }\n  - do: { delay: 1h }\n";
    Scenario::from_yaml(text).unwrap();
}

#[test]
fn rust_rules_obey_the_same_bounds() {
    let rule = Rule {
        action: Action::Oversize { bytes: 1 << 40 },
        ..Rule::default()
    };
    let e = rule.check().unwrap_err();
    assert!(e.starts_with("oversize.bytes: at most"), "{e}");
    let rule = Rule {
        action: Action::Delay(Duration::from_secs(1 << 40)),
        ..Rule::default()
    };
    assert!(rule.check().unwrap_err().starts_with("delay: at most"));
}
mod places;
mod server_wide;

/// `do` holds one action: none, or two, is refused with what was found and the rule.
#[test]
fn a_rule_with_no_action_or_two_says_one_action_per_rule() {
    let two = "version: 1\nrules:\n  - id: both\n    do: { delay: 2s, drop: {} }\n";
    let e = Scenario::from_yaml(two).unwrap_err().to_string();
    assert!(
        e.contains("do: 2 actions given (delay, drop); one action per rule"),
        "{e}"
    );
    let none = "version: 1\nrules:\n  - do: {}\n";
    let e = Scenario::from_yaml(none).unwrap_err().to_string();
    assert!(
        e.contains("do: no action given; one action per rule"),
        "{e}"
    );
    let one = "version: 1\nrules:\n  - do: { drop: {} }\n";
    Scenario::from_yaml(one).unwrap();
}
