//! The scenario in the document and the table: its section, the FAULT column only where a rule
//! touched a row.

use super::*;
use crate::admin::status::scenario::{RuleView, ScenarioView};

#[test]
fn the_table_has_a_fault_column_only_when_a_rule_touched_a_row() {
    let mut doc = nacked_document();
    let plain = table::render(&doc, SystemTime::now());
    assert!(!plain.contains("FAULT"), "{plain}");
    assert!(!plain.contains("scenario"), "{plain}");
    doc.streams[0].types[0].last_fault = Some(FaultView {
        rule: "corrupt-web".into(),
        action: "corrupt".into(),
        at: SystemTime::now(),
    });
    doc.scenario = Some(ScenarioView {
        source: "file".into(),
        path: Some("faults.yaml".into()),
        generation: 1,
        loaded_at: SystemTime::now(),
        error: Some("faults.yaml:4:18: rules[0] (slow): delay: \"soon\" is not a duration".into()),
        rules: vec![
            RuleView {
                id: "corrupt-web".into(),
                action: "corrupt".into(),
                fired: 2,
                skipped: 0,
                last: None,
            },
            RuleView {
                id: "down".into(),
                action: "outage".into(),
                fired: 0,
                skipped: 1,
                last: None,
            },
        ],
        outage: None,
    });
    let text = table::render(&doc, SystemTime::now());
    let head = text.lines().find(|l| l.starts_with("NODE")).unwrap();
    assert!(
        head.contains("ACKED") && head.contains("FAULT  ") && head.ends_with("DETAIL"),
        "{text}"
    );
    assert!(text.contains("corrupt-web"), "{text}");
    assert!(
        text.contains(
            "scenario  faults.yaml · 2 rules · 2 fired, 1 skipped (corrupt-web 2, down 0 (1 skipped))"
        ),
        "{text}"
    );
    assert!(
        text.contains("scenario  REFUSED: faults.yaml:4:18"),
        "{text}"
    );
}

#[test]
fn the_table_says_when_an_outage_refuses_connections_and_that_one_is_over() {
    use crate::admin::status::scenario::OutageView;
    let mut doc = nacked_document();
    let started = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
    let mut outage = OutageView {
        active: true,
        rule: "primary-down".into(),
        generation: 1,
        trigger: "requested: cds web by node n on stream 3".into(),
        started_at: started,
        ends_at: started + std::time::Duration::from_secs(10),
        ended_at: None,
        connections_closed: 2,
        count: 1,
        rebind_error: None,
        rebind_failing_since: None,
    };
    doc.scenario = Some(ScenarioView {
        source: "api".into(),
        path: None,
        generation: 1,
        loaded_at: started,
        error: None,
        rules: Vec::new(),
        outage: Some(outage.clone()),
    });
    let text = table::render(&doc, SystemTime::now());
    assert!(
        text.contains(
            "OUTAGE    primary-down for 10s (requested: cds web by node n on stream 3): \
             refusing connections until 2027-01-15T08:00:10.000Z"
        ),
        "{text}"
    );
    outage.rebind_error = Some("Address already in use (os error 98)".into());
    doc.scenario.as_mut().unwrap().outage = Some(outage.clone());
    let text = table::render(&doc, SystemTime::now());
    assert!(
        text.contains(
            "over, but the xDS listener cannot be bound again (Address already in use (os error \
             98)); it was to last until 2027-01-15T08:00:10.000Z"
        ),
        "{text}"
    );
    outage.rebind_error = None;
    outage.active = false;
    outage.ended_at = Some(outage.ends_at);
    doc.scenario.as_mut().unwrap().outage = Some(outage);
    let text = table::render(&doc, SystemTime::now());
    assert!(text.contains("outage    primary-down for 10s"), "{text}");
    assert!(text.contains("over; it was to last until"), "{text}");
    doc.scenario.as_mut().unwrap().generation = 2;
    let text = table::render(&doc, SystemTime::now());
    assert!(
        text.contains("on stream 3, a rule of an earlier installation): over"),
        "{text}"
    );
}

#[test]
fn the_table_says_a_held_response_goes_out_later_or_never_when_its_stream_closed() {
    use crate::admin::status::{FaultMarkView, HeldView, SentView, SyncState};
    let mut doc = nacked_document();
    let now = SystemTime::now();
    let row = &mut doc.streams[0].types[0];
    row.state = SyncState::Pending;
    row.last_sent = Some(SentView {
        version: "v2".into(),
        nonce: "1-2".into(),
        resources: 1,
        at: now,
        fault: Some(FaultMarkView {
            rule: "slow".into(),
            action: "delay".into(),
        }),
        held: Some(HeldView {
            since: now,
            until: now + std::time::Duration::from_secs(30),
            never_sent: false,
        }),
    });
    let text = table::render(&doc, now);
    assert!(
        text.contains("held by slow (delay), goes out in 30.0s"),
        "{text}"
    );
    let row = &mut doc.streams[0].types[0];
    row.last_sent
        .as_mut()
        .unwrap()
        .held
        .as_mut()
        .unwrap()
        .never_sent = true;
    let text = table::render(&doc, now);
    assert!(
        text.contains("held by slow (delay), never sent (stream closed)"),
        "{text}"
    );
    assert!(!text.contains("goes out in"), "{text}");
}
