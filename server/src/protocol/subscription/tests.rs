use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn s6_legacy_wildcard_survives_empty_acks_but_not_explicit_names() {
    let mut interest = Interest::default();
    assert!(
        interest.replace::<&str>(&[]),
        "a fresh empty request is a wildcard"
    );
    assert!(interest.is_wildcard());
    assert!(
        !interest.replace::<&str>(&[]),
        "an empty ACK keeps the legacy wildcard"
    );
    assert!(interest.is_wildcard());
    assert!(interest.replace(&names(&["a"])));
    assert!(!interest.is_wildcard() && interest.contains("a"));
    assert!(
        !interest.replace::<&str>(&[]),
        "after names, empty means nothing"
    );
    assert!(interest.is_empty());
}

#[test]
fn s6_explicit_star_is_wildcard_alongside_names() {
    let mut interest = Interest::default();
    assert!(interest.replace(&names(&["*", "x"])));
    assert!(interest.is_wildcard() && interest.names_contain("x"));
    assert!(
        !interest.replace(&names(&["*", "x"])),
        "repeating is not widening"
    );
    assert!(!interest.replace(&names(&["x"])), "dropping * narrows");
    assert!(!interest.is_wildcard());
}

#[test]
fn s5_new_names_widen_removed_names_do_not() {
    let mut interest = Interest::default();
    assert!(interest.replace(&names(&["a", "b"])));
    assert!(!interest.replace(&names(&["a"])));
    assert!(
        interest.replace(&names(&["a", "b"])),
        "re-added name is new again"
    );
}

#[test]
fn delta_legacy_wildcard_and_star_unsubscribe() {
    let mut interest = Interest::default();
    interest.apply_delta(true, &[], &[]);
    assert!(interest.is_wildcard());
    interest.apply_delta(false, &names(&["a"]), &[]);
    assert!(
        interest.is_wildcard(),
        "Delta requests are diffs: wildcard stays"
    );
    interest.apply_delta(false, &[], &names(&["*"]));
    assert!(!interest.is_wildcard() && interest.contains("a"));
    interest.apply_delta(false, &[], &names(&["a"]));
    assert!(interest.is_empty());
    let mut named = Interest::default();
    named.apply_delta(true, &names(&["b"]), &[]);
    assert!(!named.is_wildcard() && named.contains("b"));
}

#[test]
fn s2_verdict_is_told_by_nonce_and_error_detail_only() {
    let mut ledger = Ledger::default();
    assert_eq!(ledger.classify("", false), Verdict::Initial);
    assert_eq!(ledger.classify("old-stream-nonce", false), Verdict::Initial);
    ledger.record_sent("v1", "1-1", 3, std::time::SystemTime::now());
    assert_eq!(ledger.classify("1-1", false), Verdict::Ack);
    assert_eq!(ledger.classify("1-1", true), Verdict::Nack);
    assert_eq!(ledger.classify("1-0", false), Verdict::Stale);
    assert_eq!(ledger.classify("", false), Verdict::Initial);
    let nack = ledger
        .record_nack("bad cluster", std::time::SystemTime::now())
        .clone();
    assert_eq!((nack.version.as_str(), nack.nonce.as_str()), ("v1", "1-1"));
    ledger.record_ack("v1", std::time::SystemTime::now());
    assert_eq!(ledger.last_acked.as_ref().unwrap().nonce, "1-1");
}

#[test]
fn nack_messages_are_bounded() {
    let mut ledger = Ledger::default();
    let long = "é".repeat(MAX_NACK_MESSAGE_BYTES);
    assert!(
        ledger
            .record_nack(&long, std::time::SystemTime::now())
            .message
            .len()
            <= MAX_NACK_MESSAGE_BYTES + 4
    );
}

#[test]
fn note_wire_corrects_only_the_latest_response_and_marks_it() {
    let mark = FaultMark {
        rule: "r".into(),
        action: "stale_nonce",
    };
    let mut ledger = Ledger::default();
    ledger.record_sent("v1", "1-1", 1, std::time::SystemTime::now());
    ledger.record_sent("v2", "1-2", 1, std::time::SystemTime::now());
    assert!(!ledger.note_wire(
        "1-1",
        mark.clone(),
        &WireFate::Dropped,
        std::time::SystemTime::now()
    ));
    assert!(ledger.last_fault.is_none(), "an older response is history");
    let reused = WireFate::Sent {
        nonce: "1-1".into(),
    };
    assert!(ledger.note_wire("1-2", mark.clone(), &reused, std::time::SystemTime::now()));
    let sent = ledger.last_sent.clone().unwrap();
    assert_eq!(
        (sent.nonce.as_str(), sent.fault),
        ("1-1", Some(mark.clone()))
    );
    assert_eq!(ledger.classify("1-1", false), Verdict::Ack);
    assert_eq!(ledger.last_fault.unwrap().mark, mark);
}

#[test]
fn acked_latest_needs_the_ack_of_the_newest_response() {
    let mut ledger = Ledger::default();
    assert!(!ledger.acked_latest());
    ledger.record_sent("v1", "1-1", 1, std::time::SystemTime::now());
    ledger.record_ack("v1", std::time::SystemTime::now());
    assert!(ledger.acked_latest());
    ledger.record_sent("v2", "1-2", 1, std::time::SystemTime::now());
    assert!(!ledger.acked_latest(), "v2 is not answered yet");
}

#[test]
fn a_withheld_name_keeps_the_time_its_wait_began_until_a_response_carries_it() {
    let mark = FaultMark {
        rule: "hide".into(),
        action: "withhold",
    };
    let withheld = |names: &[&str]| WireFate::Withheld {
        names: names.iter().map(|n| n.to_string()).collect(),
    };
    let since = |ledger: &Ledger| ledger.last_sent.as_ref().unwrap().withheld.clone().unwrap();
    let mut ledger = Ledger::default();
    ledger.record_sent("v1", "1-1", 2, std::time::SystemTime::now());
    assert!(ledger.note_wire(
        "1-1",
        mark.clone(),
        &withheld(&["web"]),
        std::time::SystemTime::now()
    ));
    let first = since(&ledger).since;
    std::thread::sleep(std::time::Duration::from_millis(5));
    ledger.record_sent("v2", "1-2", 2, std::time::SystemTime::now());
    assert!(ledger.note_wire(
        "1-2",
        mark.clone(),
        &withheld(&["web"]),
        std::time::SystemTime::now()
    ));
    assert_eq!(since(&ledger).since, first, "still waiting since the first");
    ledger.record_sent("v3", "1-3", 2, std::time::SystemTime::now());
    assert!(
        ledger.last_sent.as_ref().unwrap().withheld.is_none(),
        "web was sent"
    );
    ledger.record_sent("v4", "1-4", 2, std::time::SystemTime::now());
    assert!(ledger.note_wire(
        "1-4",
        mark,
        &withheld(&["web"]),
        std::time::SystemTime::now()
    ));
    assert!(since(&ledger).since > first, "a new wait after it was sent");
}

#[test]
fn a_response_withdrawn_after_a_withheld_one_leaves_that_one_withheld() {
    let mark = FaultMark {
        rule: "hide".into(),
        action: "withhold",
    };
    let mut ledger = Ledger::default();
    ledger.record_sent("v1", "1-1", 1, std::time::SystemTime::now());
    let fate = WireFate::Withheld {
        names: vec!["web".to_string()],
    };
    assert!(ledger.note_wire("1-1", mark, &fate, std::time::SystemTime::now()));
    ledger.record_sent("v2", "1-2", 2, std::time::SystemTime::now());
    assert!(ledger.withdraw("1-2").is_some());
    let latest = ledger.last_sent.as_ref().unwrap();
    assert_eq!(latest.nonce, "1-1");
    let withheld = latest.withheld.as_ref().expect("still withheld");
    assert_eq!(withheld.names, vec!["web".to_string()]);
    assert!(ledger.unsettled(), "a resync still owes the client web");
}

#[test]
fn a_resync_is_owed_only_where_a_fault_left_the_client_without_what_is_served() {
    let at = std::time::SystemTime::now;
    let mark = |action: &'static str| FaultMark {
        rule: "r".into(),
        action,
    };
    let mut ledger = Ledger::default();
    assert!(!ledger.unsettled(), "nothing sent");
    ledger.record_sent("v1", "1-1", 1, at());
    assert!(!ledger.unsettled(), "on its way, not answered yet");
    ledger.record_ack("v1", at());
    assert!(!ledger.unsettled(), "ACKed");

    ledger.record_sent("v1", "1-2", 1, at());
    let repeat = WireFate::Sent {
        nonce: "1-2".into(),
    };
    assert!(ledger.note_wire("1-2", mark("ignore_acks"), &repeat, at()));
    assert!(!ledger.unsettled(), "a storm's repeat is what is served");
    let late = WireFate::Delayed {
        by: std::time::Duration::from_secs(1),
    };
    assert!(ledger.note_wire("1-2", mark("delay"), &late, at()));
    assert!(!ledger.unsettled(), "a delayed response that went out");

    for (action, fate) in [
        ("drop", WireFate::Dropped),
        ("corrupt", WireFate::Mutated { kind: "corrupt" }),
        ("close", WireFate::Cut { kind: "close" }),
    ] {
        let mut ledger = Ledger::default();
        ledger.record_sent("v1", "1-1", 1, at());
        assert!(ledger.note_wire("1-1", mark(action), &fate, at()));
        assert!(ledger.unsettled(), "{action}");
    }
    let mut held = Ledger::default();
    held.record_sent("v1", "1-1", 1, at());
    let now = at();
    let fate = WireFate::Held {
        since: now,
        until: now,
    };
    assert!(held.note_wire("1-1", mark("delay"), &fate, now));
    assert!(held.unsettled(), "still held");

    let mut nacked = Ledger::default();
    nacked.record_sent("v1", "1-1", 1, at());
    nacked.record_nack("bad", at());
    assert!(nacked.unsettled(), "NACKed");

    // The response planned for this type went out under another: this type keeps its
    // previous response, which the client ACKed before the fault.
    let mut retyped = Ledger::default();
    retyped.record_sent("v1", "1-1", 1, at());
    retyped.record_ack("v1", at());
    retyped.record_sent("v2", "1-2", 1, at());
    let sent = retyped.withdraw("1-2").unwrap();
    let mut other = Ledger::default();
    other.adopt(sent, mark("wrong_type_url"), at());
    retyped.last_fault = other.last_fault.clone();
    assert!(retyped.unsettled(), "what was made for it never reached it");
}
