//! Server-wide rules in the file: `outage` and the `when.requested` moment read into the
//! model, and what does not make sense for them is refused with its place.

use super::*;

#[test]
fn an_outage_on_a_requested_resource_reads_into_the_model() {
    let text = "version: 1\nrules:\n  - id: primary-down\n    match: { node: \"edge-*\" }\n    \
                when: { requested: { type: cds, name: web } }\n    do: { outage: { for: 10s } }\n";
    let s = Scenario::from_yaml(text).unwrap_or_else(|e| panic!("{e}"));
    let rule = &s.rules[0];
    assert_eq!(
        rule.action,
        Action::Outage {
            duration: Duration::from_secs(10)
        }
    );
    assert_eq!(rule.action.name(), "outage");
    assert_eq!(
        rule.when.requested,
        Some(Requested {
            type_url: CLUSTER.into(),
            name: "web".into()
        })
    );
    let plain = Scenario::from_yaml("version: 1\nrules:\n  - do: { outage: { for: 500ms } }\n");
    assert!(plain.is_ok(), "at the installation: {plain:?}");
    let later = Scenario::from_yaml(
        "version: 1\nrules:\n  - when: { after: 3s }\n    do: { outage: { for: 1s } }\n",
    );
    assert!(later.is_ok(), "a time after it: {later:?}");
}

#[test]
fn an_outage_with_a_per_response_moment_is_refused_at_its_rule() {
    refused_at(
        "version: 1\nrules:\n  - id: down\n    match: { type: cds }\n    when: { nth: 2 }\n    do: { outage: { for: 10s } }\n",
        5,
        "`outage` is server-wide and fires once per installation: `when.nth` does not apply",
    );
    refused_at(
        "version: 1\nrules:\n  - match: { type: cds }\n    do: { outage: { for: 10s } }\n",
        3,
        "`match.type` does not apply",
    );
    refused_at(
        "version: 1\nrules:\n  - per_stream: 1\n    do: { outage: { for: 10s } }\n",
        3,
        "`per_stream` does not apply",
    );
    refused_at(
        "version: 1\nrules:\n  - do: { outage: { for: 0s } }\n",
        3,
        "`outage.for` must be above zero",
    );
    refused_at(
        "version: 1\nrules:\n  - do: { outage: { for: soon } }\n",
        3,
        "outage.for: \"soon\" is not a duration",
    );
}

#[test]
fn requested_goes_only_with_a_server_wide_action() {
    refused_at(
        "version: 1\nrules:\n  - id: cut\n    when: { requested: { type: cds, name: web } }\n    do: { close: {} }\n",
        4,
        "rules[0] (cut): `when.requested` is a server-wide moment",
    );
    refused_at(
        "version: 1\nrules:\n  - when: { requested: { type: cds, name: web }, after: 2s }\n    do: { outage: { for: 1s } }\n",
        3,
        "not both",
    );
}

#[test]
fn a_bad_requested_is_refused_where_it_is_written() {
    refused_at(
        "version: 1\nrules:\n  - when:\n      requested: { type: cds, nme: web }\n    do: { outage: { for: 1s } }\n",
        4,
        "unknown field `nme`, expected `type` or `name`",
    );
    refused_at(
        "version: 1\nrules:\n  - when: { requested: { type: cdz, name: web } }\n    do: { outage: { for: 1s } }\n",
        3,
        "when.requested.type: unknown type \"cdz\"",
    );
    refused_at(
        "version: 1\nrules:\n  - match: { service: rest }\n    do: { outage: { for: 1s } }\n",
        3,
        "not supported with `service: rest`",
    );
}

#[test]
fn rust_server_wide_rules_obey_the_same_checks() {
    let rule = Rule {
        id: "down".into(),
        selector: Match {
            service: Some(Service::Rest),
            ..Match::default()
        },
        action: Action::Outage {
            duration: Duration::from_secs(1),
        },
        ..Rule::default()
    };
    let e = Scenario { rules: vec![rule] }.check().unwrap_err();
    assert!(e.contains("not supported with `service: rest`"), "{e}");
}

#[test]
fn an_outage_is_bounded_and_not_narrowed_without_requested() {
    refused_at(
        "version: 1\nrules:\n  - do: { outage: { for: 1000d } }\n",
        3,
        "outage.for: at most",
    );
    refused_at(
        "version: 1\nrules:\n  - match: { node: edge-* }\n    do: { outage: { for: 10s } }\n",
        3,
        "`outage` without `when.requested` takes down the whole port",
    );
    let narrowed = "version: 1\nrules:\n  - match: { node: edge-* }\n    when: { requested: { type: cds, name: web } }\n    do: { outage: { for: 10s } }\n";
    assert!(Scenario::from_yaml(narrowed).is_ok());
}
