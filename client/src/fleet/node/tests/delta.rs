//! A fleet node on a Delta stream: subscribe/unsubscribe changes, held versions, digests.

use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::*;

#[test]
fn c3_delta_follows_clusters_with_subscribe_and_unsubscribe_changes() {
    let mut node = cds_eds_node(Variant::Delta, &[]);
    let start = node.on_stream_start();
    let Outgoing::Delta(first) = &start[0].to_outgoing() else {
        panic!()
    };
    assert!(first.node.is_some() && first.resource_names_subscribe.is_empty());

    let clusters = vec![("a", "1", eds_cluster("a")), ("b", "1", eds_cluster("b"))];
    let handled = node
        .on_response(delta(CLUSTER, "n1", clusters, &[]))
        .unwrap();
    let requests = delta_requests(&handled.requests);
    assert_eq!(requests[0].response_nonce, "n1");
    assert!(requests[0].error_detail.is_none());
    assert_eq!(requests[1].type_url, ENDPOINT);
    assert_eq!(requests[1].resource_names_subscribe, vec!["a", "b"]);
    assert!(requests[1].node.is_none());

    let handled = node
        .on_response(delta(CLUSTER, "n2", vec![], &["b"]))
        .unwrap();
    let requests = delta_requests(&handled.requests);
    assert_eq!(requests[1].resource_names_unsubscribe, vec!["b"]);
    assert!(requests[1].resource_names_subscribe.is_empty());
    assert_eq!(node.held(CLUSTER), vec!["a"]);
}

#[test]
fn c11_delta_reconnect_declares_held_versions() {
    let mut node = cds_eds_node(Variant::Delta, &[]);
    node.on_stream_start();
    node.on_response(delta(
        CLUSTER,
        "n1",
        vec![("a", "7", eds_cluster("a"))],
        &[],
    ))
    .unwrap();
    node.on_response(delta(ENDPOINT, "n2", vec![("a", "3", endpoints("a"))], &[]))
        .unwrap();
    assert!(node.configured());
    let again = node.on_stream_start();
    let requests = delta_requests(&again);
    assert_eq!(requests[0].initial_resource_versions.get("a").unwrap(), "7");
    assert_eq!(requests[1].resource_names_subscribe, vec!["a"]);
    assert_eq!(requests[1].initial_resource_versions.get("a").unwrap(), "3");
}

#[test]
fn delta_without_system_version_reports_a_digest_equal_across_nodes() {
    let mut versions = Vec::new();
    for id in ["x", "y"] {
        let mut node = Node::new(id.into(), rules(Variant::Delta, &[CLUSTER], &[]));
        node.on_stream_start();
        let handled = node
            .on_response(delta(
                CLUSTER,
                "n1",
                vec![("a", "1", static_cluster("a"))],
                &[],
            ))
            .unwrap();
        versions.push(handled.outcome.unwrap().version);
    }
    assert_eq!(versions[0], versions[1]);
    assert!(versions[0].starts_with('#'));
}

#[test]
fn c6_delta_name_both_updated_and_removed_is_nacked() {
    let mut node = cds_eds_node(Variant::Delta, &[]);
    node.on_stream_start();
    let handled = node
        .on_response(delta(
            CLUSTER,
            "n1",
            vec![("a", "1", eds_cluster("a"))],
            &["a"],
        ))
        .unwrap();
    let requests = delta_requests(&handled.requests);
    assert_eq!(requests.len(), 1);
    assert!(requests[0].error_detail.is_some());
    assert!(node.held(CLUSTER).is_empty());
    // The same check holds for a type whose resources are not followed.
    let cds = delta(CLUSTER, "n2", vec![("a", "1", eds_cluster("a"))], &[]);
    node.on_response(cds).unwrap();
    let eds = delta(ENDPOINT, "n3", vec![("a", "1", endpoints("a"))], &["a"]);
    let handled = node.on_response(eds).unwrap();
    let requests = delta_requests(&handled.requests);
    assert!(requests[0].error_detail.is_some());
    assert!(node.held(ENDPOINT).is_empty());
}
