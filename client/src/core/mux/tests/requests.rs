//! What the mux sends: node on first request, per-type version and nonce, ACK/NACK, and
//! resubscription on a new stream.

use std::sync::Arc;
use std::time::SystemTime;

use xdsloop_proto::discovery::{DeltaDiscoveryResponse, WireResource};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};

use super::*;
use crate::core::event::Failure;

#[test]
fn c1_node_goes_on_the_first_request_of_every_stream() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.add_watch(2, LISTENER, Interest::Wildcard, now);
    assert!(
        mux.take_output().requests.is_empty(),
        "nothing before a stream is live"
    );
    mux.on_stream_start(now);
    let out = mux.take_output();
    let nodes: Vec<bool> = out.requests.iter().map(Outgoing::has_node).collect();
    assert_eq!(nodes, vec![true, false]);
    mux.on_stream_end("gone");
    mux.on_stream_start(now);
    assert!(
        mux.take_output().requests[0].has_node(),
        "again on the next stream"
    );
}

#[test]
fn c2_each_type_has_its_own_version_and_nonce() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.add_watch(2, LISTENER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.take_output();
    respond(&mut mux, now, CLUSTER, "c1", "n1", vec![]);
    respond(&mut mux, now, LISTENER, "l7", "n2", vec![]);
    let out = mux.take_output();
    let acks: Vec<_> = acks(&out);
    assert_eq!(acks, vec![(CLUSTER, "c1", "n1"), (LISTENER, "l7", "n2")]);
}

#[test]
fn merged_watches_send_only_names_new_to_the_subscription() {
    let mut mux = mux(Variant::Delta);
    let now = t0();
    mux.on_stream_start(now);
    mux.add_watch(1, ENDPOINT, Interest::names(["a", "b"]), now);
    mux.add_watch(2, ENDPOINT, Interest::names(["b"]), now);
    let out = mux.take_output();
    assert_eq!(out.requests.len(), 1, "the second watch adds no new name");
    mux.add_watch(3, ENDPOINT, Interest::names(["b", "c"]), now);
    mux.remove_watch(1, now);
    let out = mux.take_output();
    let changes: Vec<_> = out
        .requests
        .iter()
        .map(|r| match r {
            Outgoing::Delta(d) => (
                d.resource_names_subscribe.clone(),
                d.resource_names_unsubscribe.clone(),
            ),
            Outgoing::Sotw(_) => unreachable!(),
        })
        .collect();
    assert_eq!(
        changes,
        vec![
            (vec!["c".to_string()], vec![]),
            (vec![], vec!["a".to_string()])
        ]
    );
}

#[test]
fn c5_nack_keeps_the_last_good_config_and_version() {
    let mut config = MuxConfig::new(Variant::Sotw, node());
    config.validator = Some(Arc::new(|_, name, _| {
        if name == "bad" {
            Err("refused".into())
        } else {
            Ok(())
        }
    }));
    let mut mux = Mux::new(config);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    respond(&mut mux, now, CLUSTER, "v1", "n1", vec![eds_cluster("a")]);
    mux.take_output();
    let rejected = sotw(
        CLUSTER,
        "v2",
        "n2",
        vec![eds_cluster("a"), eds_cluster("bad")],
    );
    mux.on_sotw_response(rejected, now, SystemTime::now());
    let out = mux.take_output();
    let nack = sotw_requests(&out)[0].clone();
    assert_eq!(
        (nack.version_info.as_str(), nack.response_nonce.as_str()),
        ("v1", "n2")
    );
    assert!(nack.error_detail.unwrap().message.contains("refused"));
    assert_eq!(mux.store().version(CLUSTER), Some("v1"));
    assert!(mux.store().holds(CLUSTER, "a") && !mux.store().holds(CLUSTER, "bad"));
    assert!(matches!(
        out.deliveries[0].1,
        Event::Failed {
            reason: Failure::Rejected(_),
            ..
        }
    ));
    assert_eq!(out.requests.len(), 1, "one NACK, nothing resent");
}

#[test]
fn c8_unrequested_resources_are_ignored_and_unwatched_types_nacked() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, ENDPOINT, Interest::names(["a"]), now);
    mux.on_stream_start(now);
    mux.take_output();
    let response = sotw(
        ENDPOINT,
        "v1",
        "n1",
        vec![endpoints("a"), endpoints("stranger")],
    );
    mux.on_sotw_response(response, now, SystemTime::now());
    assert!(!mux.store().holds(ENDPOINT, "stranger"));
    mux.take_output();
    respond(&mut mux, now, LISTENER, "x", "n9", vec![]);
    let out = mux.take_output();
    let reply = sotw_requests(&out)[0];
    assert_eq!(reply.response_nonce, "n9");
    assert_eq!(reply.error_detail.as_ref().unwrap().message, UNWATCHED);
}

#[test]
fn c11_resubscribe_every_type_in_fixed_order_with_last_versions() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, LISTENER, Interest::Wildcard, now);
    mux.add_watch(2, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    respond(&mut mux, now, CLUSTER, "c1", "n1", vec![eds_cluster("web")]);
    respond(&mut mux, now, ENDPOINT, "e1", "n2", vec![endpoints("web")]);
    respond(&mut mux, now, LISTENER, "l1", "n3", vec![]);
    mux.take_output();
    mux.on_stream_end("reset");
    assert!(
        mux.store().holds(ENDPOINT, "web"),
        "C13: applied config survives"
    );
    mux.on_stream_start(now);
    let out = mux.take_output();
    let resub: Vec<_> = acks(&out);
    assert_eq!(
        resub,
        vec![
            (CLUSTER, "c1", ""),
            (ENDPOINT, "e1", ""),
            (LISTENER, "l1", "")
        ]
    );
}

#[test]
fn c11_delta_resubscribe_sends_initial_resource_versions() {
    let mut mux = mux(Variant::Delta);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    let response = DeltaDiscoveryResponse {
        system_version_info: "s1".into(),
        resources: vec![WireResource {
            name: "web".into(),
            version: "h1".into(),
            resource: Some(eds_cluster("web")),
            ..Default::default()
        }],
        type_url: CLUSTER.into(),
        nonce: "n1".into(),
        ..Default::default()
    };
    mux.on_delta_response(response, now, SystemTime::now());
    mux.take_output();
    mux.on_stream_end("reset");
    mux.on_stream_start(now);
    let out = mux.take_output();
    let Outgoing::Delta(cds) = &out.requests[0] else {
        panic!()
    };
    assert_eq!(
        cds.initial_resource_versions.get("web").map(String::as_str),
        Some("h1")
    );
    let Outgoing::Delta(eds) = &out.requests[1] else {
        panic!()
    };
    assert_eq!(eds.resource_names_subscribe, vec!["web"]);
    assert!(eds.response_nonce.is_empty());
}
