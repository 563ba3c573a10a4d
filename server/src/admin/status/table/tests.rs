use super::*;
use crate::admin::status::{AckedView, SentView, WithheldView};

#[test]
fn ages_versions_and_messages_are_compact() {
    let now = SystemTime::now();
    let ago = |s| now - std::time::Duration::from_secs(s);
    assert_eq!(age(now, ago(0)), "just now");
    assert_eq!(age(now, ago(42)), "42s ago");
    assert_eq!(age(now, ago(125)), "2m ago");
    assert_eq!(
        age(now, now + std::time::Duration::from_secs(5)),
        "just now"
    );
    assert_eq!(short("0123456789abcdef"), "01234567");
    assert_eq!(short("v7"), "v7");
    assert_eq!(one_line("bad\n  field"), "bad field");
}

#[test]
fn a_stale_row_says_whether_the_older_response_was_answered() {
    let now = SystemTime::now();
    let sent = SentView {
        held: None,
        version: "v1".into(),
        nonce: "1-1".into(),
        resources: 1,
        at: now,
        fault: None,
    };
    let mut t = TypeView {
        type_url: "t".into(),
        alias: "cds".into(),
        state: SyncState::Stale,
        wildcard: true,
        names: Vec::new(),
        snapshot_version: "v2".into(),
        last_sent: Some(sent),
        last_acked: None,
        last_nack: None,
        heartbeats: None,
        last_fault: None,
        withheld: None,
    };
    assert_eq!(
        detail(&t, now),
        "sent just now, no answer; the snapshot moved on"
    );
    let nack_of = |nonce: &str| NackView {
        version: "v0".into(),
        nonce: nonce.into(),
        message: "bad\n  port".into(),
        at: now,
    };
    t.last_nack = Some(nack_of("1-0"));
    assert_eq!(
        detail(&t, now),
        "sent just now, no answer; the snapshot moved on",
        "a NACK of an older response does not answer the latest"
    );
    t.last_nack = Some(nack_of("1-1"));
    assert_eq!(detail(&t, now), "NACK of v0 just now: bad port");
    t.last_nack = None;
    t.last_acked = Some(AckedView {
        version: "v1".into(),
        nonce: "1-1".into(),
        at: now,
    });
    assert_eq!(detail(&t, now), "snapshot changed; push not acknowledged");
    let (rule, names) = ("hide-web".into(), vec!["web".into()]);
    t.withheld = Some(WithheldView {
        rule,
        names,
        waiting_since: now - std::time::Duration::from_secs(12),
        waited_ms: 12_000,
    });
    let withheld =
        "snapshot changed; push not acknowledged; withheld web by hide-web, client waiting 12s";
    assert_eq!(detail(&t, now), withheld);
}

#[test]
fn columns_line_up() {
    let rows = vec![
        vec!["A".to_string(), "BB".into(), "x".into()],
        vec!["long".to_string(), "1".into(), "last column free".into()],
    ];
    assert_eq!(align(&rows), "A     BB  x\nlong  1   last column free\n");
}
