use super::*;
use crate::protocol::delta::{DeltaStream, tests::request};
use crate::protocol::now::tests::now;
use crate::test_support::{error, names, snapshot, type_resources};
use xdsloop_proto::discovery::{DeltaDiscoveryRequest, DeltaDiscoveryResponse};
use xdsloop_proto::type_url::{CLUSTER as CDS, ENDPOINT as EDS};

fn interest(wildcard: bool, named: &[&str]) -> Interest {
    let mut interest = Interest::default();
    let mut subscribe = names(named);
    if wildcard {
        subscribe.push("*".into());
    }
    interest.apply_delta(true, &subscribe, &[]);
    interest
}

fn ask(stream: &mut DeltaStream, request: DeltaDiscoveryRequest) -> Vec<DeltaDiscoveryResponse> {
    stream.on_request_decoded(request, now())
}

fn known<'a>(stream: &'a DeltaStream, url: &str) -> &'a Known {
    &stream.s.types[url].known
}

/// `(name, held)` as the client holds them.
fn entries(known: &Known) -> Vec<(String, Option<String>)> {
    known.to_map().into_iter().collect()
}

fn held(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    let owned = list
        .iter()
        .map(|(n, v)| (n.to_string(), v.map(str::to_string)));
    owned.collect()
}

#[test]
fn a_synced_stream_keeps_no_names_of_its_own_and_shares_the_snapshots_resources() {
    let current = snapshot(1, &[(EDS, &[("a", "1"), ("b", "1"), ("c", "1")])]);
    let mut stream = DeltaStream::new(1, current.clone());
    let first = ask(&mut stream, request(EDS, &["a", "b", "gone"], &[], "")).remove(0);
    ask(&mut stream, request(EDS, &[], &[], &first.nonce));
    let known = known(&stream, EDS);
    assert_eq!(known.changes(), 0, "held exactly as the base says");
    let base = known.base.as_ref().expect("a base after the first answer");
    assert!(Arc::ptr_eq(
        &base.resources,
        current.get("node-1", EDS).unwrap()
    ));
    let expected = held(&[("a", Some("1")), ("b", Some("1")), ("gone", None)]);
    assert_eq!(
        entries(known),
        expected,
        "c is not subscribed, gone is told absent"
    );
}

#[test]
fn after_a_nack_the_rejected_versions_stay_held_in_the_base() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(CDS, &[("a", "1"), ("b", "1")])]));
    let first = ask(&mut stream, request(CDS, &[], &[], "")).remove(0);
    let rejected = snapshot(2, &[(CDS, &[("a", "2"), ("b", "1")])]);
    let pushed = stream.on_snapshot_decoded(rejected, now()).remove(0);
    let mut nack = request(CDS, &[], &[], &pushed.nonce);
    nack.error_detail = error("a: bad");
    assert!(ask(&mut stream, nack).is_empty());
    assert_ne!(first.nonce, pushed.nonce);
    let known = known(&stream, CDS);
    assert_eq!(known.changes(), 0);
    assert_eq!(
        known.get("a"),
        Some(Some("2")),
        "S3: the NACKed version is held"
    );
}

#[test]
fn after_a_partial_unsubscribe_the_name_is_forgotten_without_a_per_stream_entry() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(EDS, &[("a", "1"), ("b", "1")])]));
    let first = ask(&mut stream, request(EDS, &["a", "b"], &[], "")).remove(0);
    assert!(ask(&mut stream, request(EDS, &[], &["b"], &first.nonce)).is_empty());
    let known = known(&stream, EDS);
    assert_eq!(known.changes(), 0);
    assert_eq!(entries(known), held(&[("a", Some("1"))]));
}

#[test]
fn after_a_reload_that_changes_one_resource_the_base_is_the_new_snapshot() {
    let mut stream = DeltaStream::new(1, snapshot(1, &[(EDS, &[("a", "1"), ("b", "1")])]));
    let first = ask(&mut stream, request(EDS, &["a", "b"], &[], "")).remove(0);
    ask(&mut stream, request(EDS, &[], &[], &first.nonce));
    let reload = snapshot(2, &[(EDS, &[("a", "1"), ("b", "2")])]);
    let pushed = stream.on_snapshot_decoded(reload.clone(), now()).remove(0);
    assert_eq!(pushed.resources.len(), 1);
    let known = known(&stream, EDS);
    assert_eq!(known.changes(), 0);
    let base = known.base.as_ref().unwrap();
    assert!(Arc::ptr_eq(
        &base.resources,
        reload.get("node-1", EDS).unwrap()
    ));
    assert_eq!(entries(known), held(&[("a", Some("1")), ("b", Some("2"))]));
}

#[test]
fn a_reload_with_the_same_content_moves_the_base_so_the_old_generation_is_freed() {
    let old = snapshot(1, &[(EDS, &[("a", "1")])]);
    let mut stream = DeltaStream::new(1, old.clone());
    ask(&mut stream, request(EDS, &["a"], &[], ""));
    let same = snapshot(2, &[(EDS, &[("a", "1")])]);
    assert!(stream.on_snapshot_decoded(same.clone(), now()).is_empty());
    let base = known(&stream, EDS).base.as_ref().unwrap();
    assert!(Arc::ptr_eq(
        &base.resources,
        same.get("node-1", EDS).unwrap()
    ));
}

#[test]
fn s9_declared_versions_are_per_stream_until_the_first_answer_folds_them_in() {
    let current = snapshot(1, &[(CDS, &[("a", "1"), ("b", "2")])]);
    let mut stream = DeltaStream::new(1, current);
    let mut resume = request(CDS, &[], &[], "");
    resume.initial_resource_versions = [("a", "1"), ("b", "1"), ("old", "1")]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let answer = ask(&mut stream, resume).remove(0);
    assert_eq!(answer.removed_resources, ["old"]);
    let known = known(&stream, CDS);
    assert_eq!(known.changes(), 0);
    assert_eq!(entries(known), held(&[("a", Some("1")), ("b", Some("2"))]));
}

#[test]
fn differences_from_the_base_are_kept_per_name_until_the_next_rebase() {
    let resources = type_resources(CDS, &[("a", "1"), ("b", "1")], None);
    let wildcard = interest(true, &["missing"]);
    let mut known = Known::based_on(&resources, &wildcard);
    let base = held(&[("a", Some("1")), ("b", Some("1")), ("missing", None)]);
    assert_eq!(entries(&known), base);
    known.remove("a");
    known.insert("b", Some("0"));
    known.remove("never-known");
    assert_eq!(
        known.changes(),
        2,
        "a forgotten, b at another version; nothing else"
    );
    let expected = held(&[("b", Some("0")), ("missing", None)]);
    assert_eq!(entries(&known), expected);
    assert_eq!((known.get("a"), known.get("b")), (None, Some(Some("0"))));
    known.insert("a", Some("1"));
    known.insert("b", Some("1"));
    known.retain(|n| n != "missing");
    known.rebase(&resources, &interest(true, &[]));
    assert_eq!(known.changes(), 0);
}

#[test]
fn held_hash_of_a_wildcard_base_is_the_snapshots_content_hash() {
    let resources = type_resources(CDS, &[("a", "1"), ("b", "2")], None);
    let wildcard = Known::based_on(&resources, &interest(true, &["missing"]));
    let mut named = Known::based_on(&resources, &interest(false, &["a", "b", "missing"]));
    assert_eq!(wildcard.held_hash(), resources.content_hash);
    assert_eq!(
        named.held_hash(),
        resources.content_hash,
        "computed name by name"
    );
    named.insert("b", Some("1"));
    assert_ne!(named.held_hash(), resources.content_hash);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "exactly its interest's share")]
fn rebase_refuses_a_state_the_base_does_not_describe() {
    let resources = type_resources(CDS, &[("a", "1")], None);
    let mut known = Known::default();
    known.insert("a", Some("0"));
    known.rebase(&resources, &interest(true, &[]));
}

#[test]
fn only_a_client_holding_exactly_its_base_under_the_same_interest_takes_the_diff() {
    let old = type_resources(EDS, &[("a", "1"), ("b", "1")], None);
    let new = type_resources(EDS, &[("a", "2"), ("c", "1")], None);
    let named = interest(false, &["a", "b"]);
    let mut known = Known::based_on(&old, &named);
    let diff = known.diff_to(&new, &named).expect("exactly the base");
    let upserted: Vec<&str> = diff.upserted.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        (upserted, diff.removed.clone()),
        (vec!["a", "c"], names(&["b"]))
    );
    assert!(
        known.diff_to(&new, &interest(false, &["a"])).is_none(),
        "interest changed"
    );
    known.remove("b");
    assert!(
        known.diff_to(&new, &named).is_none(),
        "differs from its base"
    );
}

#[test]
fn s8_a_push_through_the_diff_sends_the_change_and_reports_a_named_removal_once() {
    let start = snapshot(1, &[(EDS, &[("a", "1"), ("b", "1")])]);
    let mut stream = DeltaStream::new(1, start);
    let first = ask(&mut stream, request(EDS, &["a", "b"], &[], "")).remove(0);
    ask(&mut stream, request(EDS, &[], &[], &first.nonce));
    let pushed = stream
        .on_snapshot_decoded(snapshot(2, &[(EDS, &[("a", "2")])]), now())
        .remove(0);
    let sent: Vec<&str> = pushed.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        (sent, pushed.removed_resources.clone()),
        (vec!["a"], names(&["b"]))
    );
    ask(&mut stream, request(EDS, &[], &[], &pushed.nonce));
    let again = stream.on_snapshot_decoded(snapshot(3, &[(EDS, &[("a", "3")])]), now());
    assert!(
        again[0].removed_resources.is_empty(),
        "b's absence is not repeated"
    );
    assert_eq!(known(&stream, EDS).get("b"), Some(None));
}
