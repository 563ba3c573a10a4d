//! A fleet node on a SotW stream: first request, ACK/NACK, CDS→EDS and LDS→RDS, reconnect.

use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE};

use super::*;

/// A SotW CDS+EDS node that has accepted cluster `a` (v1, nonce n1) and its endpoints (e1, n2).
fn configured_with_cluster_a() -> Node {
    let mut node = cds_eds_node(Variant::Sotw, &[]);
    node.on_stream_start();
    node.on_response(sotw(CLUSTER, "v1", "n1", vec![eds_cluster("a")]))
        .unwrap();
    node.on_response(sotw(ENDPOINT, "e1", "n2", vec![endpoints("a")]))
        .unwrap();
    node
}

#[test]
fn c1_sotw_first_request_is_cds_wildcard_with_the_node() {
    let mut node = cds_eds_node(Variant::Sotw, &[]);
    let start = node.on_stream_start();
    assert_eq!(start.len(), 1, "EDS waits for clusters: {start:?}");
    let Outgoing::Sotw(cds) = &start[0].to_outgoing() else {
        panic!()
    };
    assert_eq!(cds.type_url, CLUSTER);
    assert!(cds.resource_names.is_empty());
    assert_eq!(cds.node.as_ref().unwrap().id, "n0");
    assert!(!node.configured());
}

#[test]
fn c12_sotw_cds_ack_then_one_eds_request_for_the_eds_clusters() {
    let mut node = cds_eds_node(Variant::Sotw, &[]);
    node.on_stream_start();
    let clusters = vec![eds_cluster("b"), eds_cluster("a"), static_cluster("s")];
    let handled = node
        .on_response(sotw(CLUSTER, "v1", "n1", clusters))
        .unwrap();
    let requests = sotw_requests(&handled.requests);
    assert_eq!(requests.len(), 2);
    let (ack, eds) = (&requests[0], &requests[1]);
    assert_eq!(
        (ack.type_url.as_str(), ack.version_info.as_str()),
        (CLUSTER, "v1")
    );
    assert_eq!(ack.response_nonce, "n1");
    assert!(ack.error_detail.is_none() && ack.node.is_none());
    assert_eq!(eds.type_url, ENDPOINT);
    assert_eq!(eds.resource_names, vec!["a", "b"]);
    let outcome = handled.outcome.unwrap();
    assert!(outcome.first && outcome.changed && outcome.verdict.is_ok());
    assert_eq!(outcome.resources, 3);
    assert!(!node.configured(), "EDS was asked for and not yet received");

    let handled = node
        .on_response(sotw(
            ENDPOINT,
            "e1",
            "n2",
            vec![endpoints("a"), endpoints("b")],
        ))
        .unwrap();
    let requests = sotw_requests(&handled.requests);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].resource_names, vec!["a", "b"]);
    assert_eq!(requests[0].version_info, "e1");
    assert!(node.configured());
    assert_eq!(node.version(ENDPOINT), Some("e1"));
}

#[test]
fn c12_sotw_new_cluster_extends_eds_names_keeping_version_and_nonce() {
    let mut node = configured_with_cluster_a();
    let clusters = vec![eds_cluster("a"), eds_cluster("c")];
    let handled = node
        .on_response(sotw(CLUSTER, "v2", "n3", clusters))
        .unwrap();
    let requests = sotw_requests(&handled.requests);
    let eds = &requests[1];
    assert_eq!(eds.resource_names, vec!["a", "c"]);
    assert_eq!(
        (eds.version_info.as_str(), eds.response_nonce.as_str()),
        ("e1", "n2")
    );
    let outcome = handled.outcome.unwrap();
    assert!(!outcome.first && outcome.changed);
    assert_eq!(outcome.previous.as_deref(), Some("v1"));
    // The same CDS version again changes nothing and asks for nothing new.
    let clusters = vec![eds_cluster("a"), eds_cluster("c")];
    let handled = node
        .on_response(sotw(CLUSTER, "v2", "n4", clusters))
        .unwrap();
    assert_eq!(handled.requests.len(), 1);
    assert!(!handled.outcome.unwrap().changed);
}

#[test]
fn c5_sotw_nack_rule_keeps_the_last_accepted_version_and_names() {
    let mut node = cds_eds_node(Variant::Sotw, &[(CLUSTER, "bad")]);
    node.on_stream_start();
    node.on_response(sotw(CLUSTER, "v1", "n1", vec![eds_cluster("a")]))
        .unwrap();
    let clusters = vec![eds_cluster("a"), eds_cluster("bad")];
    let handled = node
        .on_response(sotw(CLUSTER, "v2", "n2", clusters))
        .unwrap();
    let requests = sotw_requests(&handled.requests);
    assert_eq!(requests.len(), 1, "no EDS change after a NACK");
    let nack = &requests[0];
    assert_eq!(
        (nack.version_info.as_str(), nack.response_nonce.as_str()),
        ("v1", "n2")
    );
    let detail = nack.error_detail.as_ref().unwrap();
    assert_ne!(detail.code, 0);
    assert!(detail.message.contains("bad"), "{}", detail.message);
    let outcome = handled.outcome.unwrap();
    assert_eq!(outcome.version, "v2");
    assert!(outcome.verdict.is_err() && !outcome.changed);
    assert_eq!(node.version(CLUSTER), Some("v1"));
}

#[test]
fn c6_duplicates_wrong_types_and_garbage_are_nacked() {
    let cases = vec![
        vec![eds_cluster("a"), eds_cluster("a")],
        vec![endpoints("a")],
        vec![any(CLUSTER, vec![0xff, 0xff, 0xff])],
    ];
    for resources in cases {
        let mut node = cds_eds_node(Variant::Sotw, &[]);
        node.on_stream_start();
        let handled = node
            .on_response(sotw(CLUSTER, "v1", "n1", resources))
            .unwrap();
        let requests = sotw_requests(&handled.requests);
        assert!(requests[0].error_detail.is_some(), "{requests:?}");
        assert_eq!(node.version(CLUSTER), None);
    }
}

#[test]
fn c8_response_for_a_type_never_asked_for_is_ignored() {
    let mut node = cds_eds_node(Variant::Sotw, &[]);
    node.on_stream_start();
    let handled = node
        .on_response(sotw(LISTENER, "l1", "n1", vec![]))
        .unwrap();
    assert_eq!(handled, Handled::default());
}

#[test]
fn c11_sotw_reconnect_resubscribes_every_type_with_versions_and_no_nonce() {
    let mut node = configured_with_cluster_a();
    let again = node.on_stream_start();
    let requests = sotw_requests(&again);
    assert_eq!(requests.len(), 2);
    assert!(requests[0].node.is_some() && requests[1].node.is_none());
    assert_eq!(
        (
            requests[0].type_url.as_str(),
            requests[0].version_info.as_str()
        ),
        (CLUSTER, "v1")
    );
    assert_eq!(requests[1].resource_names, vec!["a"]);
    assert!(requests.iter().all(|r| r.response_nonce.is_empty()));
}

#[test]
fn c12_sotw_listeners_drive_route_names() {
    let mut node = Node::new("n0".into(), rules(Variant::Sotw, &[ROUTE, LISTENER], &[]));
    let start = node.on_stream_start();
    assert_eq!(start.len(), 1);
    let handled = node
        .on_response(sotw(
            LISTENER,
            "l1",
            "n1",
            vec![listener("ingress", "local")],
        ))
        .unwrap();
    let requests = sotw_requests(&handled.requests);
    assert_eq!(requests[1].type_url, ROUTE);
    assert_eq!(requests[1].resource_names, vec!["local"]);
    node.on_response(sotw(ROUTE, "r1", "n2", vec![route("local")]))
        .unwrap();
    assert!(node.configured());
}
