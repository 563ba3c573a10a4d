use crate::protocol::machine::StreamMachine;
use crate::protocol::now::tests::now;
use xdsloop_proto::{
    discovery::DeltaDiscoveryRequest,
    type_url::{CLUSTER as CDS, ENDPOINT as EDS},
};

use super::*;
use crate::{
    protocol::{delta::DeltaStream, sotw::SotwStream, subscription::Exchange},
    test_support::{error, names, node, snapshot, sotw},
};

fn many(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("c{i:02}")).collect()
}

fn sotw_names(facts: &RequestFacts) -> (&[Box<str>], usize) {
    match &facts.names {
        Names::Sotw(names) => (&names.items, names.total),
        Names::Delta { .. } => panic!("a SotW request"),
    }
}

#[test]
fn request_facts_keep_a_summary_or_every_name() {
    let owned = many(12);
    let list: Vec<&str> = owned.iter().map(String::as_str).collect();
    let mut request = sotw(EDS, &list, "v1", "1-1");
    request.error_detail = error("bad endpoint");
    let request = SotwRequest::from(request);
    let summary = request.facts(Capture::Summary);
    assert_eq!(sotw_names(&summary).0.len(), SUMMARY_ITEMS);
    assert_eq!(sotw_names(&summary).1, 12);
    let full = request.facts(Capture::Full);
    assert_eq!(sotw_names(&full).0.len(), 12);
    assert_eq!(&*full.type_url, EDS);
    assert!(matches!(full.type_url, TypeName::Known(_)), "no allocation");
    assert_eq!((&*full.version, &*full.nonce), ("v1", "1-1"));
    let error = full.error.as_ref().expect("a NACK");
    assert_eq!((error.code, &*error.message), (3, "bad endpoint"));
    assert!(full.has_node);
    assert_eq!(full.summarized(), summary, "a summary of the full facts");
}

use crate::protocol::request::SotwRequest;

#[test]
fn response_facts_name_each_resource_from_the_manifest() {
    let mut stream = SotwStream::new(1, snapshot(1, &[(CDS, &[("a", "1"), ("b", "2")])]));
    let out = stream
        .on_request(sotw(CDS, &[], "", "").into(), now())
        .remove(0);
    let facts = out.facts(Capture::Full);
    let listed: Vec<(&str, &str)> = facts
        .resources
        .items
        .iter()
        .map(|(n, v)| (&**n, &**v))
        .collect();
    assert_eq!(listed, [("a", "1"), ("b", "2")]);
    assert_eq!(facts.bytes, out.encoded_len());
    assert_eq!((&*facts.nonce, facts.variant), ("1-1", Variant::Sotw));
    assert_eq!(&*facts.version, out.head.version_info);
    assert!(facts.bodies.is_none(), "bodies only when asked for");
    let bodies = out.facts(Capture::Bodies).bodies.expect("bodies");
    assert_eq!(
        bodies.iter().map(|r| &*r.name).collect::<Vec<_>>(),
        ["a", "b"]
    );
}

#[test]
fn delta_facts_carry_subscriptions_declared_versions_and_removals() {
    let mut stream = DeltaStream::new(2, snapshot(1, &[(CDS, &[("a", "1")])]));
    let request = DeltaDiscoveryRequest {
        node: node("n"),
        type_url: CDS.into(),
        resource_names_subscribe: names(&["a", "gone"]),
        initial_resource_versions: [("a".to_string(), "0".to_string())].into(),
        ..Default::default()
    };
    let facts = request.facts(Capture::Full);
    let Names::Delta {
        subscribe,
        initial_versions,
        ..
    } = &facts.names
    else {
        panic!("a Delta request");
    };
    assert_eq!(subscribe.total, 2);
    assert_eq!(&*initial_versions.items[0].1, "0");
    assert_eq!(&*facts.version, "", "Delta requests carry no version");
    let out = stream.on_request(request, now()).remove(0);
    let facts = out.facts(Capture::Full);
    assert_eq!(facts.variant, Variant::Delta);
    assert_eq!(&*facts.resources.items[0].0, "a");
    assert_eq!(&*facts.removed.items[0], "gone");
}

#[test]
fn settled_facts_tell_the_loop_step() {
    let mut facts = SotwRequest::from(sotw(CDS, &[], "", "")).facts(Capture::Summary);
    let initial = Exchange {
        verdict: Verdict::Initial,
        first_for_type: true,
        change: Change::Widened,
        wildcard: false,
    };
    facts.settle(initial, false);
    assert_eq!(facts.step(), Step::Subscribe);
    facts.settle(initial, true);
    assert_eq!(facts.step(), Step::Resubscribe, "the node had it before");
    let ack = Exchange {
        verdict: Verdict::Ack,
        first_for_type: false,
        change: Change::None,
        wildcard: false,
    };
    facts.settle(ack, true);
    assert_eq!(facts.step(), Step::Ack);
    let stale = Exchange {
        verdict: Verdict::Stale,
        ..ack
    };
    facts.settle(stale, true);
    assert_eq!(facts.step(), Step::Ignored);
}
