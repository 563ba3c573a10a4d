//! The judge as the stream loop drives it: rules found through `before`/`after`/`on_response`,
//! the modes, and the rules that span two streams through the shared node book.

use std::time::{Duration, Instant};

use super::*;
use crate::protocol::subscription::{Change, Exchange, Verdict};

const CDS: &str = xdsloop_proto::type_url::CLUSTER;

fn peer() -> Option<Peer> {
    Some(Peer {
        addr: "127.0.0.1:5000".into(),
        ip: "127.0.0.1".into(),
    })
}

fn request<'a>(version: &'a str, nonce: &'a str) -> RequestView<'a> {
    RequestView {
        type_url: CDS,
        version,
        nonce,
        has_node: true,
        node_id: Some("n"),
        error: None,
        initial_versions: None,
    }
}

fn exchange(verdict: Verdict, change: Change) -> Exchange {
    Exchange {
        verdict,
        first_for_type: false,
        change,
        wildcard: false,
    }
}

fn checks(judge: &mut Judge) -> Vec<&'static str> {
    judge.take_violations().iter().map(|v| v.check).collect()
}

/// Stream 1 got `v2` with nonce `1-1`.
fn sent() -> Ledger {
    let mut ledger = Ledger::default();
    ledger.record_sent("v2", "1-1", 1, std::time::SystemTime::now());
    ledger
}

#[test]
fn c4_ack_version_counts_only_for_a_plain_ack() {
    let now = Instant::now();
    let judges = Conformance::new(Mode::Report);
    let mut judge = judges.judge(1, StreamKind::ADS_SOTW, peer());
    let ledger = sent();
    judge.on_response(CDS, "1-1", false, now);
    judge.before(&request("v1", "1-1"), Some(&ledger), 1, now);
    judge.after(exchange(Verdict::Ack, Change::Widened));
    assert!(
        checks(&mut judge).is_empty(),
        "an interest change repeats the old version"
    );
    judge.before(&request("v1", "1-1"), Some(&ledger), 1, now);
    judge.after(exchange(Verdict::Ack, Change::None));
    assert_eq!(checks(&mut judge), ["C4.ack-version"]);
    assert!(judge.failure().is_none(), "report mode never ends a stream");
}

#[test]
fn strict_keeps_the_first_violation_and_off_finds_none() {
    let now = Instant::now();
    let bare = RequestView {
        has_node: false,
        node_id: None,
        ..request("", "bogus")
    };
    let mut strict = Conformance::new(Mode::Strict).judge(1, StreamKind::ADS_SOTW, peer());
    strict.before(&bare, None, 0, now);
    strict.after(exchange(Verdict::Initial, Change::Widened));
    assert_eq!(checks(&mut strict), ["C1.node", "C4.unknown-nonce"]);
    assert_eq!(strict.failure().map(|v| v.check), Some("C1.node"));
    let mut off = Judge::off();
    off.before(&bare, None, 0, now);
    off.after(exchange(Verdict::Initial, Change::Widened));
    assert!(checks(&mut off).is_empty());
    assert!(!off.wants_held());
}

/// A stream of node `n` that subscribed to CDS, got `v2` and ACKed it, then closed.
fn first_stream(judges: &Conformance, now: Instant) {
    let mut judge = judges.judge(1, StreamKind::ADS_SOTW, peer());
    judge.before(&request("", ""), None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    judge.on_response(CDS, "1-1", false, now);
    let mut ledger = sent();
    judge.before(&request("v2", "1-1"), Some(&ledger), 1, now);
    judge.after(exchange(Verdict::Ack, Change::None));
    ledger.record_ack("v2", std::time::SystemTime::now());
    assert!(checks(&mut judge).is_empty());
    let mut held = Held::default();
    held.types.insert(
        CDS.to_string(),
        crate::protocol::held::TypeHeld {
            interest: {
                let mut interest = crate::protocol::subscription::Interest::default();
                interest.replace::<&str>(&[]);
                interest
            },
            last_acked: Some("v2".into()),
            acked: true,
            delta_known: Default::default(),
        },
    );
    assert!(judge.wants_held());
    judge.closed(held, false, now);
}

#[test]
fn c11_the_next_stream_on_the_connection_declares_the_acked_version() {
    let now = Instant::now();
    let judges = Conformance::new(Mode::Report);
    first_stream(&judges, now);
    let mut judge = judges.judge(2, StreamKind::ADS_SOTW, peer());
    judge.before(&request("", "1-1"), None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    assert_eq!(checks(&mut judge), ["C11.version", "C11.old-stream-nonce"]);
    judge.on_response(CDS, "2-1", false, now + Duration::from_secs(6));
    assert!(checks(&mut judge).is_empty(), "CDS came back");
}

#[test]
fn c11_types_a_held_type_not_asked_for_again_in_time() {
    let now = Instant::now();
    let judges = Conformance::new(Mode::Report);
    first_stream(&judges, now);
    let mut judge = judges.judge(2, StreamKind::ADS_SOTW, peer());
    let eds = RequestView {
        type_url: xdsloop_proto::type_url::ENDPOINT,
        ..request("", "")
    };
    judge.before(&eds, None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    assert!(checks(&mut judge).is_empty());
    judge.on_response(CDS, "2-1", false, now + Duration::from_secs(6));
    let found = judge.take_violations();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].check, "C11.types");
    assert!(found[0].message.ends_with(CDS), "{}", found[0].message);
}

#[test]
fn c11_another_connection_is_not_judged() {
    let now = Instant::now();
    let judges = Conformance::new(Mode::Report);
    first_stream(&judges, now);
    let other = Some(Peer {
        addr: "127.0.0.1:5001".into(),
        ip: "127.0.0.1".into(),
    });
    let mut judge = judges.judge(2, StreamKind::ADS_SOTW, other);
    judge.before(&request("", ""), None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    judge.on_response(CDS, "2-1", false, now + Duration::from_secs(6));
    assert!(
        checks(&mut judge).is_empty(),
        "a restarted process declares nothing"
    );
}

#[test]
fn c4_nonces_of_another_form_on_the_wire_turn_the_nonce_check_off() {
    let now = Instant::now();
    let mut judge = Conformance::new(Mode::Report).judge(9, StreamKind::ADS_SOTW, peer());
    judge.before(&request("", "7-1"), None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    assert_eq!(checks(&mut judge), ["C11.old-stream-nonce"]);
    // A replayed transcript's responses carry the recorded stream's nonces.
    judge.on_response(CDS, "7-2", false, now);
    judge.before(&request("", "7-2"), None, 0, now);
    judge.after(exchange(Verdict::Ack, Change::None));
    assert!(checks(&mut judge).is_empty());
}

#[test]
fn c4_an_answer_to_a_response_outside_the_ledger_passes() {
    // A TTL heartbeat goes on the wire with its own nonce but leaves the push ledger alone.
    let now = Instant::now();
    let mut judge = Conformance::new(Mode::Report).judge(1, StreamKind::ADS_SOTW, peer());
    let ledger = sent();
    judge.on_response(CDS, "1-1", false, now);
    judge.on_response(CDS, "1-2", false, now);
    judge.before(&request("v2", "1-2"), Some(&ledger), 2, now);
    judge.after(exchange(Verdict::Ack, Change::None));
    assert!(checks(&mut judge).is_empty());
    judge.before(&request("v2", "1-3"), Some(&ledger), 2, now);
    judge.after(exchange(Verdict::Stale, Change::None));
    assert_eq!(checks(&mut judge), ["C4.unknown-nonce"]);
}

#[test]
fn c1_same_node_passes_the_same_or_no_node_and_fails_another() {
    let now = Instant::now();
    let mut judge = Conformance::new(Mode::Report).judge(1, StreamKind::ADS_SOTW, peer());
    judge.before(&request("", ""), None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    let silent = RequestView {
        has_node: false,
        node_id: None,
        ..request("", "")
    };
    judge.before(&silent, None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::None));
    judge.before(&request("", ""), None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::None));
    assert!(
        checks(&mut judge).is_empty(),
        "the same node, or none, again"
    );
    let other = RequestView {
        node_id: Some("other"),
        ..request("", "")
    };
    judge.before(&other, None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::None));
    let found = judge.take_violations();
    assert_eq!(
        found.iter().map(|v| v.check).collect::<Vec<_>>(),
        ["C1.same-node"]
    );
    assert_eq!(found[0].sentences, ["basic-protocol.8"]);
    assert!(
        found[0]
            .to_string()
            .starts_with("C1.same-node (basic-protocol.8): "),
        "{}",
        found[0]
    );
}

#[test]
fn c2_type_url_is_required_on_ads_only() {
    let now = Instant::now();
    let bare = RequestView {
        type_url: "",
        ..request("", "")
    };
    let mut ads = Conformance::new(Mode::Report).judge(1, StreamKind::ADS_SOTW, peer());
    ads.before(&request("", ""), None, 0, now);
    ads.after(exchange(Verdict::Initial, Change::Widened));
    assert!(checks(&mut ads).is_empty());
    ads.before(&bare, None, 0, now);
    ads.after(exchange(Verdict::Ignored, Change::None));
    assert_eq!(checks(&mut ads), ["C2.type-url"]);
    let cds = StreamKind {
        service: "cds",
        ..StreamKind::ADS_SOTW
    };
    let mut single = Conformance::new(Mode::Report).judge(2, cds, peer());
    single.before(&bare, None, 0, now);
    single.after(exchange(Verdict::Initial, Change::Widened));
    assert!(
        checks(&mut single).is_empty(),
        "implicit on a per-type service"
    );
}

#[test]
fn c4_a_delta_answer_passing_over_a_response_fails_and_answering_each_passes() {
    let now = Instant::now();
    let mut judge = Conformance::new(Mode::Report).judge(1, StreamKind::ADS_DELTA, peer());
    judge.before(&request("", ""), None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    for n in ["1-1", "1-2"] {
        judge.on_response(CDS, n, false, now);
    }
    for n in ["1-1", "1-2"] {
        judge.before(&request("", n), None, 2, now);
        judge.after(exchange(Verdict::Ack, Change::None));
    }
    assert!(checks(&mut judge).is_empty(), "each answered, in order");
    for n in ["1-3", "1-4"] {
        judge.on_response(CDS, n, false, now);
    }
    judge.before(&request("", "1-4"), None, 4, now);
    judge.after(exchange(Verdict::Ack, Change::None));
    let found = judge.take_violations();
    assert_eq!(
        found.iter().map(|v| v.check).collect::<Vec<_>>(),
        ["C4.delta-unanswered"]
    );
    assert!(
        found[0].message.contains("passing over 1-3"),
        "{}",
        found[0].message
    );
    // SotW: an answer folded into the next one is what gRPC does; not judged.
    let mut sotw = Conformance::new(Mode::Report).judge(2, StreamKind::ADS_SOTW, peer());
    sotw.before(&request("", ""), None, 0, now);
    sotw.after(exchange(Verdict::Initial, Change::Widened));
    sotw.on_response(CDS, "2-1", false, now);
    sotw.on_response(CDS, "2-2", false, now);
    let mut ledger = Ledger::default();
    ledger.record_sent("v2", "2-2", 1, std::time::SystemTime::now());
    sotw.before(&request("v2", "2-2"), Some(&ledger), 2, now);
    sotw.after(exchange(Verdict::Ack, Change::None));
    assert!(checks(&mut sotw).is_empty());
}

#[test]
fn c11_initial_versions_belong_to_a_types_first_request_only() {
    let now = Instant::now();
    let held = std::collections::HashMap::from([("a".to_string(), "1".to_string())]);
    let resumed = RequestView {
        initial_versions: Some(&held),
        ..request("", "")
    };
    let mut judge = Conformance::new(Mode::Report).judge(1, StreamKind::ADS_DELTA, peer());
    judge.before(&resumed, None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::Widened));
    assert!(
        checks(&mut judge).is_empty(),
        "the first request of the type declares them"
    );
    judge.before(&resumed, None, 0, now);
    judge.after(exchange(Verdict::Initial, Change::None));
    assert_eq!(checks(&mut judge), ["C11.late-initial-versions"]);
}

#[test]
fn every_rule_names_sentences_of_the_spec_that_bind_clients_or_says_why_not() {
    for rule in rules::RULES {
        assert_eq!(
            rule.sentences.is_empty(),
            rule.beyond.is_some(),
            "{}",
            rule.id
        );
        for id in rule.sentences {
            let sentence = xdsloop_proto::spec::sentence(id)
                .unwrap_or_else(|| panic!("{}: no sentence {id}", rule.id));
            assert!(
                sentence.binds.client(),
                "{}: {id} does not bind clients",
                rule.id
            );
        }
    }
}

mod crossing;
