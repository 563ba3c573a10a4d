use crate::protocol::now::tests::now;
use std::sync::Arc;

use xdsloop_proto::{
    discovery::DiscoveryResponse,
    type_url::{CLUSTER as CDS, ENDPOINT as EDS},
};

use super::super::*;
use crate::test_support::exchange;
use crate::{
    protocol::subscription::{Change, Verdict},
    test_support::{error, snapshot, sotw},
};

fn base() -> Arc<Snapshot> {
    snapshot(
        1,
        &[(CDS, &[("c1", "1")]), (EDS, &[("a", "1"), ("b", "1")])],
    )
}

fn ask(
    stream: &mut SotwStream,
    request: xdsloop_proto::discovery::DiscoveryRequest,
) -> (Exchange, Vec<DiscoveryResponse>) {
    let out = stream.on_request_decoded(request, now());
    (MachineHooks::exchange(stream), out)
}

#[test]
fn exchange_says_what_each_request_was() {
    let mut stream = SotwStream::new(1, base());
    let (x, out) = ask(&mut stream, sotw(EDS, &["a"], "", ""));
    assert_eq!(x, exchange(Verdict::Initial, true, Change::Widened));
    let n1 = out[0].nonce.clone();
    let (x, _) = ask(&mut stream, sotw(EDS, &["a"], &out[0].version_info, &n1));
    assert_eq!(x, exchange(Verdict::Ack, false, Change::None));
    let (x, out) = ask(&mut stream, sotw(EDS, &["a", "b"], "", &n1));
    assert_eq!(x, exchange(Verdict::Ack, false, Change::Widened));
    let n2 = out[0].nonce.clone();
    let (x, out) = ask(&mut stream, sotw(EDS, &["b"], "", &n1));
    assert_eq!(x, exchange(Verdict::Stale, false, Change::None));
    assert!(out.is_empty(), "S4: ignored");
    let (x, _) = ask(&mut stream, sotw(EDS, &["a"], "", &n2));
    assert_eq!(x, exchange(Verdict::Ack, false, Change::Narrowed));
    let mut nack = sotw(EDS, &["a"], "", &n2);
    nack.error_detail = error("no");
    let (x, _) = ask(&mut stream, nack);
    assert_eq!(x, exchange(Verdict::Nack, false, Change::None));
    let (x, _) = ask(&mut stream, sotw("", &[], "", ""));
    assert_eq!(x.verdict, Verdict::Ignored, "no type URL");
    assert_eq!(stream.nonces_issued(), 2);
}

#[test]
fn repeat_last_resends_the_same_content_with_a_fresh_nonce() {
    let mut stream = SotwStream::new(1, base());
    assert!(
        stream.repeat_last(CDS, now()).is_none(),
        "no node, no subscription"
    );
    let (_, out) = ask(&mut stream, sotw(CDS, &[], "", ""));
    let first = &out[0];
    ask(
        &mut stream,
        sotw(CDS, &[], &first.version_info, &first.nonce),
    );
    stream.take_status();
    let again = stream
        .repeat_last(CDS, now())
        .expect("a resend")
        .to_message();
    assert_eq!(
        (&again.version_info, &again.resources),
        (&first.version_info, &first.resources)
    );
    assert_ne!(again.nonce, first.nonce);
    let ledger = stream.ledger(CDS).unwrap();
    assert_eq!(ledger.last_sent.as_ref().unwrap().nonce, again.nonce);
    assert!(!ledger.acked_latest(), "the resend waits for its own ACK");
    assert_eq!(stream.take_status().len(), 1, "its status changed");
    let (x, _) = ask(
        &mut stream,
        sotw(CDS, &[], &again.version_info, &again.nonce),
    );
    assert_eq!(x.verdict, Verdict::Ack);
    assert!(
        stream.repeat_last(EDS, now()).is_none(),
        "EDS is not subscribed"
    );
}

fn mark(action: &'static str) -> FaultMark {
    FaultMark {
        rule: "r1".into(),
        action,
    }
}

#[test]
fn note_wire_makes_a_reused_nonce_the_one_the_client_answers() {
    let mut stream = SotwStream::new(1, base());
    let (_, out) = ask(&mut stream, sotw(CDS, &[], "", ""));
    let n1 = out[0].nonce.clone();
    ask(&mut stream, sotw(CDS, &[], &out[0].version_info, &n1));
    let pushed = stream.on_snapshot_decoded(snapshot(2, &[(CDS, &[("c1", "2")])]), now());
    let n2 = pushed[0].nonce.clone();
    stream.take_status();
    let reused = WireFate::Sent { nonce: n1.clone() };
    stream.note_wire(CDS, &n2, mark("stale_nonce"), reused, now());
    let status = stream.take_status().remove(0);
    let sent = status.last_sent.unwrap();
    assert_eq!(
        (sent.nonce.as_str(), sent.fault),
        (n1.as_str(), Some(mark("stale_nonce")))
    );
    assert_eq!(status.last_fault.unwrap().mark, mark("stale_nonce"));
    let (x, _) = ask(&mut stream, sotw(CDS, &[], &pushed[0].version_info, &n1));
    assert_eq!(
        x.verdict,
        Verdict::Ack,
        "the client echoes what it was sent"
    );
    stream.take_status();
    stream.note_wire(CDS, "no-such-nonce", mark("drop"), WireFate::Dropped, now());
    assert!(
        stream.take_status().is_empty(),
        "only the latest response is corrected"
    );
}

#[test]
fn held_says_what_was_acked_per_type() {
    let mut stream = SotwStream::new(1, base());
    let (_, cds) = ask(&mut stream, sotw(CDS, &[], "", ""));
    ask(
        &mut stream,
        sotw(CDS, &[], &cds[0].version_info, &cds[0].nonce),
    );
    ask(&mut stream, sotw(EDS, &["a"], "", ""));
    let held = stream.held();
    let cds_held = &held.types[CDS];
    assert!(cds_held.acked && cds_held.interest.is_wildcard());
    assert_eq!(
        cds_held.last_acked.as_deref(),
        Some(cds[0].version_info.as_str())
    );
    let eds_held = &held.types[EDS];
    assert!(!eds_held.acked && eds_held.last_acked.is_none());
    assert!(eds_held.interest.names_contain("a"));
}
