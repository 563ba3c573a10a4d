//! Every judge rule that reads responses, with a push crossing the client's request on the
//! wire: the server sent a newer response while the client's answer to an older one was on
//! its way. A correct client cannot have known of the newer push, so each rule passes it; the
//! illegal variant next to it, the same exchange with what the client did know, fails.
//! (C1.node and C10.backoff read no responses: the stream's first request, and when streams
//! open.)

use std::{collections::HashMap, time::Instant};

use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::*;
use crate::protocol::subscription::{Change, Exchange, Verdict};

/// One ADS SotW stream (id 1) as the loop drives the judge: each push records its ledger
/// entry and goes by the judge; each request is judged against the ledger as it stands, then
/// classified the way the machine does.
struct Wire {
    judge: Judge,
    ledgers: HashMap<&'static str, Ledger>,
    issued: u64,
    now: Instant,
}

impl Wire {
    fn new() -> Self {
        Self {
            judge: Conformance::new(Mode::Report).judge(1, StreamKind::ADS_SOTW, None),
            ledgers: HashMap::new(),
            issued: 0,
            now: Instant::now(),
        }
    }

    /// The server pushes `version` of `url`; returns its nonce.
    fn push(&mut self, url: &'static str, version: &str) -> String {
        self.issued += 1;
        let nonce = format!("1-{}", self.issued);
        let ledger = self.ledgers.entry(url).or_default();
        ledger.record_sent(version, &nonce, 1, std::time::SystemTime::now());
        self.judge.on_response(url, &nonce, false, self.now);
        nonce
    }

    /// The client's request arrives; returns what the judge found.
    fn request(
        &mut self,
        url: &'static str,
        version: &str,
        nonce: &str,
        change: Change,
        nack: Option<&str>,
    ) -> Vec<&'static str> {
        let first = !self.ledgers.contains_key(url) && nonce.is_empty();
        let view = RequestView {
            type_url: url,
            version,
            nonce,
            has_node: true,
            node_id: Some("n"),
            error: nack.map(|m| (3, m)),
            initial_versions: None,
        };
        let ledger = self.ledgers.get(url);
        self.judge.before(&view, ledger, self.issued, self.now);
        let ledger = self.ledgers.entry(url).or_default();
        let verdict = ledger.classify(nonce, nack.is_some());
        match (verdict, nack) {
            (Verdict::Ack, _) => ledger.record_ack(version, std::time::SystemTime::now()),
            (Verdict::Nack, Some(m)) => {
                ledger.record_nack(m, std::time::SystemTime::now());
            }
            _ => {}
        }
        self.judge.after(Exchange {
            verdict,
            first_for_type: first,
            change,
            wildcard: false,
        });
        self.judge
            .take_violations()
            .iter()
            .map(|v| v.check)
            .collect()
    }

    fn ack(&mut self, url: &'static str, version: &str, nonce: &str) -> Vec<&'static str> {
        self.request(url, version, nonce, Change::None, None)
    }

    fn widen(&mut self, url: &'static str, version: &str, nonce: &str) -> Vec<&'static str> {
        self.request(url, version, nonce, Change::Widened, None)
    }
}

/// CDS `v1` pushed and ACKed, EDS subscribed, pushed (nonce `1-2`) and ACKed.
fn settled() -> Wire {
    let mut wire = Wire::new();
    assert!(wire.widen(CLUSTER, "", "").is_empty());
    let n = wire.push(CLUSTER, "c1");
    assert!(wire.ack(CLUSTER, "c1", &n).is_empty());
    assert!(wire.widen(ENDPOINT, "", "").is_empty());
    let n = wire.push(ENDPOINT, "e1");
    assert!(wire.ack(ENDPOINT, "e1", &n).is_empty());
    wire
}

#[test]
fn c12_before_ack_a_push_crossing_the_ack_and_the_dependent_request_passes() {
    let mut wire = settled();
    let c2 = wire.push(CLUSTER, "c2");
    // The client applies c2, ACKs it and asks for its new endpoints; c3 crosses both.
    wire.push(CLUSTER, "c3");
    assert!(wire.ack(CLUSTER, "c2", &c2).is_empty(), "a stale ACK");
    assert!(
        wire.widen(ENDPOINT, "e1", "1-2").is_empty(),
        "the client had not had c3 when it asked"
    );
}

#[test]
fn c12_before_ack_dependent_names_asked_after_a_parent_the_client_had_fails() {
    let mut wire = settled();
    // One edit: CDS c2 and EDS e2; the client ACKs e2 (so it had c2, sent before it) and asks
    // for c2's endpoints before it answered c2.
    wire.push(CLUSTER, "c2");
    let e2 = wire.push(ENDPOINT, "e2");
    assert!(wire.ack(ENDPOINT, "e2", &e2).is_empty());
    assert_eq!(wire.widen(ENDPOINT, "e2", &e2), ["C12.before-ack"]);
}

#[test]
fn c12_coalesce_a_push_crossing_the_dependent_requests_starts_a_new_count() {
    let mut wire = settled();
    let c2 = wire.push(CLUSTER, "c2");
    assert!(wire.ack(CLUSTER, "c2", &c2).is_empty());
    assert!(wire.widen(ENDPOINT, "e1", "1-2").is_empty());
    let c3 = wire.push(CLUSTER, "c3");
    // gRPC's buffered second request for c2, sent before c3 arrived, then c3's own.
    assert!(wire.widen(ENDPOINT, "e1", "1-2").is_empty());
    assert!(wire.ack(CLUSTER, "c3", &c3).is_empty());
    assert!(wire.widen(ENDPOINT, "e1", "1-2").is_empty());
    // A third since c3 is one too many.
    assert_eq!(wire.widen(ENDPOINT, "e1", "1-2"), ["C12.coalesce"]);
}

#[test]
fn c4_ack_version_an_ack_of_the_response_a_push_crossed_passes() {
    let mut wire = settled();
    let c2 = wire.push(CLUSTER, "c2");
    wire.push(CLUSTER, "c3");
    assert!(
        wire.ack(CLUSTER, "c2", &c2).is_empty(),
        "c2's ACK carries c2, though c3 is the latest"
    );
    let c4 = wire.push(CLUSTER, "c4");
    assert_eq!(wire.ack(CLUSTER, "c2", &c4), ["C4.ack-version"]);
}

#[test]
fn c4_unknown_nonce_an_older_nonce_after_a_crossing_push_passes() {
    let mut wire = settled();
    let c2 = wire.push(CLUSTER, "c2");
    wire.push(CLUSTER, "c3");
    assert!(wire.ack(CLUSTER, "c2", &c2).is_empty());
    assert_eq!(wire.ack(CLUSTER, "c3", "1-9"), ["C4.unknown-nonce"]);
}

#[test]
fn c5_nack_version_a_nack_crossed_by_a_push_passes() {
    let mut wire = settled();
    let c2 = wire.push(CLUSTER, "c2");
    // c3 crosses the NACK of c2: the NACK carries the version the client still holds.
    wire.push(CLUSTER, "c3");
    assert!(
        wire.request(CLUSTER, "c1", &c2, Change::None, Some("bad"))
            .is_empty()
    );
    let c4 = wire.push(CLUSTER, "c4");
    assert_eq!(
        wire.request(CLUSTER, "c3", &c4, Change::None, Some("bad")),
        ["C5.nack-version"],
        "c3 was never accepted"
    );
}

#[test]
fn c20_storm_requests_crossed_by_pushes_are_answers_not_a_storm() {
    let mut wire = settled();
    // A push storm: every push crosses the ACK of the one before.
    let mut previous = wire.push(CLUSTER, "c");
    for _ in 0..40 {
        let next = wire.push(CLUSTER, "c");
        assert!(wire.ack(CLUSTER, "c", &previous).is_empty());
        previous = next;
    }
    let found: Vec<_> = (0..21)
        .flat_map(|_| wire.ack(CLUSTER, "c", &previous))
        .collect();
    assert_eq!(found, ["C20.storm"], "21 requests, no response between");
}

#[test]
fn c5_nack_fields_a_nack_crossed_by_a_push_is_judged_on_its_own_fields() {
    let mut wire = settled();
    let c2 = wire.push(CLUSTER, "c2");
    wire.push(CLUSTER, "c3");
    assert!(
        wire.request(CLUSTER, "c1", &c2, Change::None, Some("bad cluster"))
            .is_empty()
    );
    assert_eq!(
        wire.request(CLUSTER, "c1", &c2, Change::None, Some(" ")),
        ["C5.nack-fields"]
    );
}

/// The stream of `wire` ends with what its ledgers say the client held.
fn close(wire: &mut Wire) {
    use crate::protocol::held::TypeHeld;
    let mut held = Held::default();
    for (url, ledger) in &wire.ledgers {
        let mut interest = crate::protocol::subscription::Interest::default();
        interest.replace::<&str>(&[]);
        let last_acked = ledger.last_acked.as_ref().map(|a| a.version.clone());
        let acked = ledger.acked_latest();
        let delta_known = Default::default();
        let t = TypeHeld {
            interest,
            last_acked,
            acked,
            delta_known,
        };
        held.types.insert(url.to_string(), t);
    }
    wire.judge.closed(held, false, wire.now);
}

fn peer() -> Option<Peer> {
    Some(Peer {
        addr: "127.0.0.1:5000".into(),
        ip: "127.0.0.1".into(),
    })
}

/// Stream 1 of a connection: CDS `c1` pushed and ACKed, then `crossing` (if any) pushed as
/// the stream ends; the next stream's first CDS request declares `declared`.
fn reconnect_declaring(crossing: Option<&str>, declared: &str) -> Vec<&'static str> {
    let judges = Conformance::new(Mode::Report);
    let mut first = Wire::new();
    first.judge = judges.judge(1, StreamKind::ADS_SOTW, peer());
    assert!(first.widen(CLUSTER, "", "").is_empty());
    let n = first.push(CLUSTER, "c1");
    assert!(first.ack(CLUSTER, "c1", &n).is_empty());
    if let Some(version) = crossing {
        first.push(CLUSTER, version);
    }
    close(&mut first);
    let mut second = Wire::new();
    second.judge = judges.judge(2, StreamKind::ADS_SOTW, peer());
    second.widen(CLUSTER, declared, "")
}

#[test]
fn c11_version_a_push_crossing_the_stream_s_end_may_be_declared_or_not() {
    // The client may or may not have applied c2 before the stream ended.
    assert!(reconnect_declaring(Some("c2"), "c1").is_empty());
    assert!(reconnect_declaring(Some("c2"), "c2").is_empty());
    // Without a crossing push it held c1, ACKed: that is what it must declare.
    assert!(reconnect_declaring(None, "c1").is_empty());
    assert_eq!(reconnect_declaring(None, "c0"), ["C11.version"]);
}
