use crate::protocol::now::tests::now;
use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DeltaDiscoveryResponse},
    type_url::CLUSTER as CDS,
};

use super::super::*;
use crate::{
    protocol::subscription::{Change, Verdict},
    test_support::{names, node, snapshot},
};

fn request(subscribe: &[&str], unsubscribe: &[&str], nonce: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: node("node-1"),
        type_url: CDS.to_string(),
        resource_names_subscribe: names(subscribe),
        resource_names_unsubscribe: names(unsubscribe),
        response_nonce: nonce.to_string(),
        ..Default::default()
    }
}

fn ask(
    stream: &mut DeltaStream,
    request: DeltaDiscoveryRequest,
) -> (Exchange, Vec<DeltaDiscoveryResponse>) {
    let out = stream.on_request_decoded(request, now());
    (MachineHooks::exchange(stream), out)
}

fn sent(response: &DeltaDiscoveryResponse) -> Vec<&str> {
    response.resources.iter().map(|r| r.name.as_str()).collect()
}

#[test]
fn exchange_says_what_each_request_was() {
    let start = snapshot(1, &[(CDS, &[("a", "1"), ("b", "1")])]);
    let mut stream = DeltaStream::new(1, start.clone());
    let (x, out) = ask(&mut stream, request(&["a"], &[], ""));
    assert_eq!(
        (x.verdict, x.first_for_type, x.change),
        (Verdict::Initial, true, Change::Widened)
    );
    let n1 = out[0].nonce.clone();
    let (x, _) = ask(&mut stream, request(&[], &[], &n1));
    assert_eq!((x.verdict, x.change), (Verdict::Ack, Change::None));
    let newer = stream.on_snapshot_decoded(snapshot(2, &[(CDS, &[("a", "2"), ("b", "1")])]), now());
    assert_eq!(newer.len(), 1);
    let (x, out) = ask(&mut stream, request(&["b"], &[], &n1));
    assert_eq!((x.verdict, x.change), (Verdict::Stale, Change::Widened));
    assert_eq!(sent(&out[0]), ["b"], "S4: Delta honours the change anyway");
    let (x, _) = ask(&mut stream, request(&["b"], &[], &out[0].nonce));
    assert_eq!(x.change, Change::None, "b was subscribed already");
    let (x, _) = ask(&mut stream, request(&[], &["a"], &out[0].nonce));
    assert_eq!(x.change, Change::Narrowed);
    let (x, _) = ask(&mut stream, request(&["*"], &[], ""));
    assert_eq!(x.change, Change::Widened, "the wildcard is new");
}

#[test]
fn repeat_last_resends_every_held_resource_with_a_fresh_nonce() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(CDS, &[("a", "1"), ("b", "1")])]));
    assert!(
        stream.repeat_last(CDS, now()).is_none(),
        "nothing subscribed"
    );
    let (_, out) = ask(&mut stream, request(&[], &[], ""));
    ask(&mut stream, request(&[], &[], &out[0].nonce));
    let again = stream
        .repeat_last(CDS, now())
        .expect("a resend")
        .to_message();
    assert_eq!(sent(&again), ["a", "b"]);
    assert_ne!(again.nonce, out[0].nonce);
    let (x, _) = ask(&mut stream, request(&[], &[], &again.nonce));
    assert_eq!(x.verdict, Verdict::Ack);
}

#[test]
fn held_moves_out_what_the_client_holds() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(CDS, &[("a", "1")])]));
    let (_, out) = ask(&mut stream, request(&["a", "gone"], &[], ""));
    ask(&mut stream, request(&[], &[], &out[0].nonce));
    let held = stream.held().types.remove(CDS).unwrap();
    assert!(held.acked);
    assert_eq!(
        held.last_acked.as_deref(),
        Some(out[0].system_version_info.as_str())
    );
    let known: Vec<(&str, Option<&str>)> = held
        .delta_known
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_deref()))
        .collect();
    assert_eq!(known, [("a", Some("1")), ("gone", None)]);
}
