use super::*;
use crate::protocol::now::tests::now;
use crate::test_support::{error, node, resource, snapshot, sotw, type_resources};
use xdsloop_proto::type_url::{CLUSTER as CDS, ENDPOINT as EDS, LISTENER as LDS, ROUTE as RDS};

/// `name@version` of each resource in a response (the test resources' bytes).
fn held(response: &DiscoveryResponse) -> Vec<String> {
    let held = response.resources.iter();
    held.map(|any| String::from_utf8(any.value.clone()).unwrap())
        .collect()
}

fn base() -> Arc<Snapshot> {
    snapshot(
        1,
        &[
            (CDS, &[("c1", "1"), ("c2", "1")]),
            (EDS, &[("c1", "1"), ("c2", "1")]),
            (LDS, &[("l1", "1")]),
            (RDS, &[("r1", "1")]),
        ],
    )
}

/// A stream that subscribed to `type_url` and ACKed the first response; returns that response.
fn subscribed(stream: &mut SotwStream, type_url: &str, names: &[&str]) -> DiscoveryResponse {
    let first = stream
        .on_request_decoded(sotw(type_url, names, "", ""), now())
        .remove(0);
    let ack = sotw(type_url, names, &first.version_info, &first.nonce);
    assert!(stream.on_request_decoded(ack, now()).is_empty());
    first
}

#[test]
fn s1_each_response_has_type_url_fresh_nonce_and_matching_any() {
    let mut stream = SotwStream::new(1, base());
    let cds = stream.on_request_decoded(sotw(CDS, &[], "", ""), now());
    let eds = stream.on_request_decoded(sotw(EDS, &["c1"], "", ""), now());
    assert_eq!((cds.len(), eds.len()), (1, 1));
    assert_eq!(cds[0].type_url, CDS);
    assert_eq!(held(&cds[0]), ["c1@1", "c2@1"]);
    assert!(cds[0].resources.iter().all(|a| a.type_url == CDS));
    assert!(eds[0].resources.iter().all(|a| a.type_url == EDS));
    assert!(!cds[0].nonce.is_empty());
    assert_ne!(cds[0].nonce, eds[0].nonce);
    assert_eq!(stream.node_id(), Some("node-1"));
}

#[test]
fn s3_ack_causes_no_resend_and_a_change_is_pushed() {
    let mut stream = SotwStream::new(1, base());
    let first = subscribed(&mut stream, CDS, &[]);
    let same_content = base();
    assert!(stream.on_snapshot_decoded(same_content, now()).is_empty());
    let changed = snapshot(2, &[(CDS, &[("c1", "2"), ("c2", "1")])]);
    let pushed = stream.on_snapshot_decoded(changed, now());
    assert_eq!(pushed.len(), 1);
    assert_ne!(pushed[0].version_info, first.version_info);
    assert_ne!(pushed[0].nonce, first.nonce);
    assert_eq!(held(&pushed[0]), ["c1@2", "c2@1"]);
}

#[test]
fn s3_nack_is_recorded_and_the_content_is_not_resent_until_it_changes() {
    let mut stream = SotwStream::new(1, base());
    let first = stream
        .on_request_decoded(sotw(CDS, &[], "", ""), now())
        .remove(0);
    let mut nack = sotw(CDS, &[], "", &first.nonce);
    nack.error_detail = error("cluster c1: bad lb policy");
    assert!(stream.on_request_decoded(nack, now()).is_empty());
    let status = stream.take_status();
    let rejected = status[0].last_nack.as_ref().unwrap();
    assert_eq!(rejected.version, first.version_info);
    assert_eq!(rejected.message, "cluster c1: bad lb policy");
    // A reload that changes another type must not resend the rejected content.
    let other_type_changed = snapshot(
        2,
        &[(CDS, &[("c1", "1"), ("c2", "1")]), (LDS, &[("l9", "1")])],
    );
    assert!(
        stream
            .on_snapshot_decoded(other_type_changed, now())
            .is_empty()
    );
    let fixed = snapshot(3, &[(CDS, &[("c1", "2"), ("c2", "1")])]);
    let pushed = stream.on_snapshot_decoded(fixed, now());
    assert_eq!(held(&pushed[0]), ["c1@2", "c2@1"]);
}

#[test]
fn s3_content_change_under_an_unchanged_explicit_version_is_pushed() {
    let with_version = |v: &str| {
        let mut s = Snapshot::default();
        let types = type_resources(CDS, &[("c1", v)], Some("v7"));
        s.base.insert(CDS.to_string(), types);
        Arc::new(s)
    };
    let mut stream = SotwStream::new(1, with_version("1"));
    subscribed(&mut stream, CDS, &[]);
    let pushed = stream.on_snapshot_decoded(with_version("2"), now());
    assert_eq!(pushed.len(), 1);
    assert_eq!(pushed[0].version_info, "v7");
}

/// Clusters `c1`, `c2` at content `1` under an explicit `version_info`.
fn clusters_at(version: &str) -> Arc<Snapshot> {
    let mut s = Snapshot::default();
    let types = type_resources(CDS, &[("c1", "1"), ("c2", "1")], Some(version));
    s.base.insert(CDS.to_string(), types);
    Arc::new(s)
}

#[test]
fn version_only_bump_is_pushed() {
    let mut stream = SotwStream::new(1, clusters_at("v1"));
    let first = subscribed(&mut stream, CDS, &[]);
    assert_eq!(first.version_info, "v1");
    let pushed = stream.on_snapshot_decoded(clusters_at("v2"), now());
    assert_eq!(pushed.len(), 1, "same content, new version_info");
    assert_eq!(pushed[0].version_info, "v2");
    assert_eq!(held(&pushed[0]), ["c1@1", "c2@1"]);
    assert!(
        stream
            .on_snapshot_decoded(clusters_at("v2"), now())
            .is_empty()
    );
    // A named subscription gets the new version too, with the resources it asked for.
    let mut named = SotwStream::new(2, clusters_at("v2"));
    subscribed(&mut named, CDS, &["c2"]);
    let pushed = named.on_snapshot_decoded(clusters_at("v3"), now());
    assert_eq!(
        (pushed[0].version_info.as_str(), held(&pushed[0])),
        ("v3", vec!["c2@1".to_string()])
    );
    // A change to a resource it did not ask for, under the same explicit version, is no
    // change for it.
    let mut other = (*clusters_at("v3")).clone();
    other.base.insert(
        CDS.into(),
        type_resources(CDS, &[("c1", "9"), ("c2", "1")], Some("v3")),
    );
    assert!(named.on_snapshot_decoded(Arc::new(other), now()).is_empty());
}

#[test]
fn s3_a_nacked_version_is_not_resent_but_a_version_bump_is() {
    let mut stream = SotwStream::new(1, clusters_at("v1"));
    let first = stream
        .on_request_decoded(sotw(CDS, &[], "", ""), now())
        .remove(0);
    let mut nack = sotw(CDS, &[], "", &first.nonce);
    nack.error_detail = error("rejected");
    assert!(stream.on_request_decoded(nack, now()).is_empty());
    assert!(
        stream
            .on_snapshot_decoded(clusters_at("v1"), now())
            .is_empty()
    );
    let pushed = stream.on_snapshot_decoded(clusters_at("v2"), now());
    assert_eq!(pushed.len(), 1, "a version bump is a change");
    assert_eq!(pushed[0].version_info, "v2");
}

#[test]
fn s4_stale_nonce_gets_no_response_and_the_fresh_one_does() {
    let mut stream = SotwStream::new(1, base());
    let first = stream
        .on_request_decoded(sotw(EDS, &["c1"], "", ""), now())
        .remove(0);
    let newer =
        stream.on_snapshot_decoded(snapshot(2, &[(EDS, &[("c1", "2"), ("c2", "1")])]), now());
    // The client asks for c2 while still answering the first response: stale.
    let stale = sotw(EDS, &["c1", "c2"], &first.version_info, &first.nonce);
    assert!(stream.on_request_decoded(stale, now()).is_empty());
    let fresh = sotw(EDS, &["c1", "c2"], &newer[0].version_info, &newer[0].nonce);
    let answer = stream.on_request_decoded(fresh, now());
    assert_eq!(held(&answer[0]), ["c1@2", "c2@1"]);
}

#[test]
fn s5_named_subscription_gets_existing_names_and_added_names_are_resent() {
    let mut stream = SotwStream::new(1, base());
    let first = subscribed(&mut stream, EDS, &["c1", "missing"]);
    assert_eq!(held(&first), ["c1@1"]);
    let added = sotw(
        EDS,
        &["c1", "c2", "missing"],
        &first.version_info,
        &first.nonce,
    );
    let answer = stream.on_request_decoded(added, now()).remove(0);
    assert_eq!(held(&answer), ["c1@1", "c2@1"]);
    let narrowed = sotw(EDS, &["c2"], &answer.version_info, &answer.nonce);
    assert!(stream.on_request_decoded(narrowed, now()).is_empty());
    // A change to a resource this stream did not ask for is no change of what it holds.
    let unrelated = snapshot(
        2,
        &[
            (EDS, &[("c1", "9"), ("c2", "1")]),
            (CDS, &[("c1", "1"), ("c2", "1")]),
        ],
    );
    assert!(stream.on_snapshot_decoded(unrelated, now()).is_empty());
    // Named LDS/CDS: the named ones that exist.
    let cds = stream.on_request_decoded(sotw(CDS, &["c2", "nope"], "", ""), now());
    assert_eq!(held(&cds[0]), ["c2@1"]);
}

#[test]
fn s6_legacy_wildcard_and_explicit_names_then_empty_unsubscribes() {
    let mut stream = SotwStream::new(1, base());
    let first = subscribed(&mut stream, CDS, &[]);
    assert_eq!(held(&first), ["c1@1", "c2@1"]);
    let named = sotw(CDS, &["c1"], &first.version_info, &first.nonce);
    let answer = stream.on_request_decoded(named, now()).remove(0);
    assert_eq!(held(&answer), ["c1@1"]);
    let empty = sotw(CDS, &[], &answer.version_info, &answer.nonce);
    assert!(stream.on_request_decoded(empty, now()).is_empty());
    let changed = snapshot(2, &[(CDS, &[("c1", "2")])]);
    assert!(
        stream.on_snapshot_decoded(changed, now()).is_empty(),
        "unsubscribed: nothing pushed"
    );
    let star = stream
        .on_request_decoded(sotw(CDS, &["*"], "", ""), now())
        .remove(0);
    assert_eq!(held(&star), ["c1@2"]);
}

#[test]
fn s7_acking_one_type_never_pushes_another() {
    let mut stream = SotwStream::new(1, base());
    let cds = stream
        .on_request_decoded(sotw(CDS, &[], "", ""), now())
        .remove(0);
    let eds = stream
        .on_request_decoded(sotw(EDS, &["c1"], "", ""), now())
        .remove(0);
    assert!(
        stream
            .on_request_decoded(sotw(CDS, &[], &cds.version_info, &cds.nonce), now())
            .is_empty()
    );
    assert!(
        stream
            .on_request_decoded(sotw(EDS, &["c1"], &eds.version_info, &eds.nonce), now())
            .is_empty()
    );
}

#[test]
fn s11_one_update_is_ordered_make_before_break() {
    let mut stream = SotwStream::new(1, base());
    for (url, names) in [
        (RDS, &["r1"][..]),
        (LDS, &[]),
        (EDS, &["c1", "c2"]),
        (CDS, &[]),
    ] {
        subscribed(&mut stream, url, names);
    }
    let all_changed = snapshot(
        2,
        &[
            (CDS, &[("c1", "2"), ("c2", "1")]),
            (EDS, &[("c1", "2"), ("c2", "1")]),
            (LDS, &[("l1", "2")]),
            (RDS, &[("r1", "2")]),
        ],
    );
    let order: Vec<String> = stream
        .on_snapshot_decoded(all_changed, now())
        .into_iter()
        .map(|r| r.type_url)
        .collect();
    assert_eq!(order, [CDS, EDS, LDS, RDS]);
    // Routes move off c2 while c2 is removed: the route update goes before the removal.
    let remove_c2 = snapshot(
        3,
        &[
            (CDS, &[("c1", "2")]),
            (EDS, &[("c1", "2"), ("c2", "1")]),
            (LDS, &[("l1", "2")]),
            (RDS, &[("r1", "3")]),
        ],
    );
    let order: Vec<String> = stream
        .on_snapshot_decoded(remove_c2, now())
        .into_iter()
        .map(|r| r.type_url)
        .collect();
    assert_eq!(order, [RDS, CDS]);
}

#[test]
fn s12_unknown_types_get_an_empty_response_and_missing_type_url_is_ignored() {
    let mut stream = SotwStream::new(1, base());
    let unknown = "type.googleapis.com/example.Unknown";
    let answer = stream.on_request_decoded(sotw(unknown, &[], "", ""), now());
    assert_eq!(answer.len(), 1);
    assert!(answer[0].resources.is_empty());
    assert!(
        stream
            .on_request_decoded(sotw("", &[], "", ""), now())
            .is_empty()
    );
    assert_eq!(
        held(&stream.on_request_decoded(sotw(CDS, &[], "", ""), now())[0]).len(),
        2
    );
}

#[test]
fn overlays_are_served_by_node_id() {
    let mut with_overlay = (*base()).clone();
    let mine = type_resources(CDS, &[("c1", "mine")], None);
    with_overlay
        .overlays
        .insert("node-2".into(), [(CDS.to_string(), mine)].into());
    let with_overlay = Arc::new(with_overlay);
    let mut one = SotwStream::new(1, with_overlay.clone());
    let mut two = SotwStream::new(2, with_overlay);
    let mut request = sotw(CDS, &[], "", "");
    assert_eq!(
        held(&one.on_request_decoded(request.clone(), now())[0]),
        ["c1@1", "c2@1"]
    );
    request.node = node("node-2");
    assert_eq!(
        held(&two.on_request_decoded(request, now())[0]),
        ["c1@mine"]
    );
}

#[test]
fn s18_request_names_match_whatever_the_order_of_context_params() {
    let sorted = "xdstp://auth/envoy.config.endpoint.v3.ClusterLoadAssignment/c1?a=1&z=2";
    let unsorted = "xdstp://auth/envoy.config.endpoint.v3.ClusterLoadAssignment/c1?z=2&a=1";
    let mut stream = SotwStream::new(1, snapshot(1, &[(EDS, &[(sorted, "1")])]));
    let first = stream
        .on_request_decoded(sotw(EDS, &[unsorted], "", ""), now())
        .remove(0);
    assert_eq!(held(&first), [format!("{sorted}@1")]);
    let status = stream.take_status();
    assert_eq!(
        &*status[0].names,
        [sorted],
        "subscribed under the served name"
    );
    let ack = sotw(EDS, &[unsorted], &first.version_info, &first.nonce);
    assert!(
        stream.on_request_decoded(ack, now()).is_empty(),
        "the same name again: no response"
    );
}

mod machine_hooks;

#[test]
fn a_named_subscription_is_pushed_only_when_its_own_resources_change() {
    // "The management server should only send updates to the Envoy client when the resources
    // in the DiscoveryResponse have changed" (resource-update.1): the response to [c1] holds
    // c1 alone, so an edit of c2 changes nothing in it.
    for url in [EDS, CDS] {
        let mut stream = SotwStream::new(1, snapshot(1, &[(url, &[("c1", "1"), ("c2", "1")])]));
        let first = subscribed(&mut stream, url, &["c1"]);
        let other = snapshot(2, &[(url, &[("c1", "1"), ("c2", "2")])]);
        assert!(
            stream.on_snapshot_decoded(other, now()).is_empty(),
            "{url}: c2 changed, [c1] was pushed again"
        );
        let own = snapshot(3, &[(url, &[("c1", "2"), ("c2", "2")])]);
        let pushed = stream.on_snapshot_decoded(own, now());
        assert_eq!(pushed.len(), 1, "{url}: c1 changed");
        assert_ne!(pushed[0].version_info, first.version_info);
        assert_eq!(held(&pushed[0]), ["c1@2"]);
        // What /status compares the client's holding with: the same stamp.
        let current = snapshot(4, &[(url, &[("c1", "2"), ("c2", "2")])]);
        let stamp = current.get("node-1", url).unwrap().named_stamp(["c1"]);
        assert_eq!(stream.take_status()[0].held_hash, Some(stamp));
    }
}

#[test]
fn a_named_subscription_is_pushed_when_its_own_document_version_is_bumped() {
    // One file per resource, each with its own version_info: a bump of c2's file is no change
    // for a client of [c1]; a bump of c1's file is, even with the same content.
    let at = |c1: &str, c2: &str| {
        let entries = [
            (resource(EDS, "c1", "1"), Some(c1)),
            (resource(EDS, "c2", "1"), Some(c2)),
        ];
        let mut s = Snapshot::default();
        s.base.insert(
            EDS.to_string(),
            Arc::new(TypeResources::from_documents(entries)),
        );
        Arc::new(s)
    };
    let mut stream = SotwStream::new(1, at("a1", "b1"));
    subscribed(&mut stream, EDS, &["c1"]);
    assert!(stream.on_snapshot_decoded(at("a1", "b2"), now()).is_empty());
    let pushed = stream.on_snapshot_decoded(at("a2", "b2"), now());
    assert_eq!(pushed.len(), 1, "c1's own version_info was bumped");
    assert_eq!(held(&pushed[0]), ["c1@1"]);
    assert!(stream.on_snapshot_decoded(at("a2", "b3"), now()).is_empty());
}
