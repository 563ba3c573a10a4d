use super::*;
use crate::protocol::now::tests::now;
use crate::test_support::{error, names, node, snapshot};
use xdsloop_proto::type_url::{CLUSTER as CDS, ENDPOINT as EDS, LISTENER as LDS};

pub(super) fn request(
    type_url: &str,
    subscribe: &[&str],
    unsubscribe: &[&str],
    nonce: &str,
) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: node("node-1"),
        type_url: type_url.to_string(),
        resource_names_subscribe: names(subscribe),
        resource_names_unsubscribe: names(unsubscribe),
        response_nonce: nonce.to_string(),
        ..Default::default()
    }
}

fn ack(response: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
    request(&response.type_url, &[], &[], &response.nonce)
}

/// `name@version` of each resource sent.
fn sent(response: &DeltaDiscoveryResponse) -> Vec<String> {
    let sent = response.resources.iter();
    sent.map(|r| format!("{}@{}", r.name, r.version)).collect()
}

fn clusters(generation: u64, list: &[(&str, &str)]) -> Arc<Snapshot> {
    snapshot(generation, &[(CDS, list)])
}

#[test]
fn s8_first_request_sends_every_resource_with_name_and_version() {
    let mut stream = DeltaStream::new(1, clusters(1, &[("a", "1"), ("b", "1")]));
    let legacy = stream
        .on_request_decoded(request(CDS, &[], &[], ""), now())
        .remove(0);
    assert_eq!(sent(&legacy), ["a@1", "b@1"]);
    assert_eq!(legacy.type_url, CDS);
    let any = legacy.resources[0].resource.as_ref().unwrap();
    assert_eq!(
        (any.type_url.as_str(), any.value.as_slice()),
        (CDS, &b"a@1"[..])
    );
    assert!(!legacy.system_version_info.is_empty() && !legacy.nonce.is_empty());
    let mut star = DeltaStream::new(2, clusters(1, &[("a", "1")]));
    assert_eq!(
        sent(&star.on_request_decoded(request(CDS, &["*"], &[], ""), now())[0]),
        ["a@1"]
    );
}

#[test]
fn s8_only_changes_are_sent_and_deletions_are_removed_resources() {
    let mut stream = DeltaStream::new(1, clusters(1, &[("a", "1"), ("b", "1"), ("c", "1")]));
    let first = stream
        .on_request_decoded(request(CDS, &[], &[], ""), now())
        .remove(0);
    assert!(
        stream.on_request_decoded(ack(&first), now()).is_empty(),
        "S3: an ACK causes no resend"
    );
    let next = clusters(2, &[("a", "2"), ("c", "1"), ("d", "1")]);
    let pushed = stream.on_snapshot_decoded(next, now()).remove(0);
    assert_eq!(sent(&pushed), ["a@2", "d@1"]);
    assert_eq!(pushed.removed_resources, ["b"]);
    assert!(
        stream
            .on_snapshot_decoded(clusters(3, &[("a", "2"), ("c", "1"), ("d", "1")]), now())
            .is_empty()
    );
}

#[test]
fn s8_missing_subscribed_names_are_reported_once_until_resubscribed() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(EDS, &[("a", "1")])]));
    let first = stream
        .on_request_decoded(request(EDS, &["a", "missing"], &[], ""), now())
        .remove(0);
    assert_eq!(
        (sent(&first), first.removed_resources.clone()),
        (vec!["a@1".into()], names(&["missing"]))
    );
    let changed = stream
        .on_snapshot_decoded(snapshot(2, &[(EDS, &[("a", "2")])]), now())
        .remove(0);
    assert!(
        changed.removed_resources.is_empty(),
        "absence is not repeated"
    );
    let again = stream
        .on_request_decoded(request(EDS, &["missing"], &[], &changed.nonce), now())
        .remove(0);
    assert_eq!(
        again.removed_resources,
        ["missing"],
        "a new subscription is answered"
    );
    let appears = stream.on_snapshot_decoded(
        snapshot(3, &[(EDS, &[("a", "2"), ("missing", "1")])]),
        now(),
    );
    assert_eq!(sent(&appears[0]), ["missing@1"]);
}

fn held(list: &[(&str, &str)]) -> std::collections::HashMap<String, String> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn s9_reconnect_skips_unchanged_wildcard_resources_but_answers_named_ones() {
    let current = snapshot(
        5,
        &[
            (CDS, &[("a", "1"), ("b", "2"), ("c", "1"), ("d", "1")]),
            (EDS, &[("e1", "1"), ("e2", "2")]),
        ],
    );
    let mut stream = DeltaStream::new(1, current);
    let mut wildcard = request(CDS, &["*", "a"], &[], "");
    wildcard.initial_resource_versions = held(&[("a", "1"), ("b", "1"), ("d", "1"), ("gone", "1")]);
    let answer = stream.on_request_decoded(wildcard, now()).remove(0);
    // d: unchanged and only covered by the wildcard, skipped. a: unchanged but named, sent.
    assert_eq!(sent(&answer), ["a@1", "b@2", "c@1"]);
    assert_eq!(answer.removed_resources, ["gone"]);
    let mut named = request(EDS, &["e1", "e2", "e3", "e4"], &[], "");
    named.initial_resource_versions = held(&[("e1", "1"), ("e2", "1"), ("e4", "1")]);
    let answer = stream.on_request_decoded(named, now()).remove(0);
    assert_eq!(
        (sent(&answer), answer.removed_resources.clone()),
        (vec!["e1@1".into(), "e2@2".into()], names(&["e3", "e4"])),
        "every named resource is answered: held-and-current, changed, never held, held-but-gone"
    );
    // Subscribing again to a held name is answered anyway.
    let again = stream
        .on_request_decoded(request(EDS, &["e1"], &[], &answer.nonce), now())
        .remove(0);
    assert_eq!(sent(&again), ["e1@1"]);
}

#[test]
fn s9_first_request_is_answered_even_when_nothing_changed() {
    let mut stream = DeltaStream::new(1, clusters(1, &[("a", "1")]));
    let mut resume = request(CDS, &[], &[], "");
    resume.initial_resource_versions = [("a".to_string(), "1".to_string())].into();
    let answer = stream.on_request_decoded(resume, now());
    assert_eq!(answer.len(), 1);
    assert!(answer[0].resources.is_empty() && answer[0].removed_resources.is_empty());
}

#[test]
fn s10_unsubscribed_names_are_no_longer_pushed() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(EDS, &[("a", "1"), ("b", "1")])]));
    let first = stream
        .on_request_decoded(request(EDS, &["a", "b"], &[], ""), now())
        .remove(0);
    assert!(
        stream
            .on_request_decoded(request(EDS, &[], &["b"], &first.nonce), now())
            .is_empty()
    );
    assert!(
        stream
            .on_snapshot_decoded(snapshot(2, &[(EDS, &[("a", "1"), ("b", "2")])]), now())
            .is_empty()
    );
    let pushed = stream
        .on_snapshot_decoded(snapshot(3, &[(EDS, &[("a", "2")])]), now())
        .remove(0);
    assert_eq!(sent(&pushed), ["a@2"]);
    assert!(
        pushed.removed_resources.is_empty(),
        "b is not ours any more"
    );
}

#[test]
fn s10_unsubscribing_a_name_a_wildcard_still_covers_sends_it_again() {
    let mut stream = DeltaStream::new(1, clusters(1, &[("a", "1")]));
    let first = stream
        .on_request_decoded(request(CDS, &["*", "a"], &[], ""), now())
        .remove(0);
    let answer = stream.on_request_decoded(request(CDS, &[], &["a"], &first.nonce), now());
    assert_eq!(sent(&answer[0]), ["a@1"]);
}

#[test]
fn unsubscribing_a_missing_name_under_a_wildcard_reports_it_removed() {
    // delta-unsubscribe.3: with "*" and a specific name, unsubscribing the name "must send a
    // response that includes the specific resource in either the removed_resources field (if
    // it is not included in the wildcard) or in the resources field".
    let mut stream = DeltaStream::new(1, clusters(1, &[("a", "1")]));
    let first = stream
        .on_request_decoded(request(CDS, &["*", "ghost"], &[], ""), now())
        .remove(0);
    assert_eq!(first.removed_resources, ["ghost"]);
    let answer = stream.on_request_decoded(request(CDS, &[], &["ghost"], &first.nonce), now());
    assert_eq!(answer.len(), 1, "the unsubscription must be answered");
    assert_eq!(answer[0].removed_resources, ["ghost"]);
    assert!(answer[0].resources.is_empty());
    // A phantom unsubscription (a name never subscribed) needs no answer.
    let phantom = stream.on_request_decoded(request(CDS, &[], &["never"], &answer[0].nonce), now());
    assert!(phantom.is_empty(), "{phantom:?}");
}

#[test]
fn adding_a_name_under_a_wildcard_is_a_widening() {
    let mut stream = DeltaStream::new(1, clusters(1, &[("a", "1")]));
    let first = stream
        .on_request_decoded(request(CDS, &["*"], &[], ""), now())
        .remove(0);
    stream.on_request_decoded(request(CDS, &["a"], &[], &first.nonce), now());
    assert_eq!(stream.exchange().change, Change::Widened);
    stream.on_request_decoded(request(CDS, &[], &["a"], ""), now());
    assert_eq!(stream.exchange().change, Change::Narrowed);
}

#[test]
fn s4_interest_changes_count_even_with_a_stale_nonce() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(EDS, &[("a", "1"), ("b", "1")])]));
    let first = stream
        .on_request_decoded(request(EDS, &["a"], &[], ""), now())
        .remove(0);
    let newer = stream.on_snapshot_decoded(snapshot(2, &[(EDS, &[("a", "2"), ("b", "1")])]), now());
    assert_eq!(newer.len(), 1);
    let stale = stream.on_request_decoded(request(EDS, &["b"], &[], &first.nonce), now());
    assert_eq!(sent(&stale[0]), ["b@1"]);
    let status = stream.take_status();
    assert!(
        status[0].last_acked.is_none(),
        "a stale nonce is not an ACK"
    );
}

#[test]
fn s3_nack_is_recorded_and_the_same_content_not_resent() {
    let mut stream = DeltaStream::new(1, clusters(1, &[("a", "1")]));
    let first = stream
        .on_request_decoded(request(CDS, &[], &[], ""), now())
        .remove(0);
    let mut nack = ack(&first);
    nack.error_detail = error("a: bad");
    assert!(stream.on_request_decoded(nack, now()).is_empty());
    let status = stream.take_status().remove(0);
    let rejected = status.last_nack.unwrap();
    assert_eq!(
        (rejected.version, rejected.message),
        (first.system_version_info, "a: bad".into())
    );
    let other = snapshot(2, &[(CDS, &[("a", "1")]), (LDS, &[("l", "1")])]);
    assert!(stream.on_snapshot_decoded(other, now()).is_empty());
    let fixed = stream.on_snapshot_decoded(clusters(3, &[("a", "2")]), now());
    assert_eq!(sent(&fixed[0]), ["a@2"]);
}

#[test]
fn s11_removal_only_responses_follow_updates_in_reverse_order() {
    let start = snapshot(
        1,
        &[
            (CDS, &[("a", "1"), ("b", "1")]),
            (EDS, &[("a", "1"), ("b", "1")]),
        ],
    );
    let mut stream = DeltaStream::new(1, start);
    stream.on_request_decoded(request(EDS, &["a", "b"], &[], ""), now());
    stream.on_request_decoded(request(CDS, &[], &[], ""), now());
    let added = snapshot(
        2,
        &[
            (CDS, &[("a", "1"), ("b", "1"), ("c", "1")]),
            (EDS, &[("a", "2"), ("b", "1")]),
        ],
    );
    let order: Vec<String> = stream
        .on_snapshot_decoded(added, now())
        .into_iter()
        .map(|r| r.type_url)
        .collect();
    assert_eq!(order, [CDS, EDS]);
    let removed = snapshot(3, &[(CDS, &[("a", "1")]), (EDS, &[("a", "2")])]);
    let order: Vec<String> = stream
        .on_snapshot_decoded(removed, now())
        .into_iter()
        .map(|r| r.type_url)
        .collect();
    assert_eq!(order, [EDS, CDS]);
}

#[test]
fn delta_version_only_bump_sends_nothing() {
    let at = |version: &str| {
        let mut s = Snapshot::default();
        let types = crate::test_support::type_resources(CDS, &[("a", "1")], Some(version));
        s.base.insert(CDS.to_string(), types);
        Arc::new(s)
    };
    let mut stream = DeltaStream::new(1, at("v1"));
    let first = stream
        .on_request_decoded(request(CDS, &[], &[], ""), now())
        .remove(0);
    assert_eq!(first.system_version_info, "v1");
    stream.on_request_decoded(ack(&first), now());
    // S8: only changed resources are sent, and a resource's version is its content hash.
    assert!(stream.on_snapshot_decoded(at("v2"), now()).is_empty());
}

#[test]
fn s18_delta_names_match_whatever_the_order_of_context_params() {
    let sorted = "xdstp://auth/envoy.config.cluster.v3.Cluster/a?a=1&z=2";
    let unsorted = "xdstp://auth/envoy.config.cluster.v3.Cluster/a?z=2&a=1";
    let mut stream = DeltaStream::new(1, clusters(1, &[(sorted, "1")]));
    let first = stream
        .on_request_decoded(request(CDS, &[unsorted], &[], ""), now())
        .remove(0);
    assert_eq!(sent(&first), [format!("{sorted}@1")]);
    assert!(
        first.removed_resources.is_empty(),
        "found, not reported missing"
    );
    stream.on_request_decoded(ack(&first), now());
    let gone = stream.on_request_decoded(request(CDS, &[], &[unsorted], ""), now());
    assert!(gone.is_empty());
    let pushed = stream.on_snapshot_decoded(clusters(2, &[(sorted, "2")]), now());
    assert!(
        pushed.is_empty(),
        "unsubscribed by its unsorted name: no longer pushed"
    );
}

mod machine_hooks;
