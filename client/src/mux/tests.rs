//! The mux's state machine, driven by hand-made responses.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prost::{Message, Name};
use xdsloop_proto::discovery::{
    Any, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Node, WireResource,
};
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::envoy::envoy::config::cluster::v3::cluster::{
    ClusterDiscoveryType, DiscoveryType,
};
use xdsloop_proto::envoy::envoy::config::endpoint::v3::ClusterLoadAssignment;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};

use super::*;

fn node() -> Node {
    Node {
        id: "n1".into(),
        ..Default::default()
    }
}

fn mux(mode: Mode) -> Mux {
    let mut config = MuxConfig::new(mode, node());
    config.follow_deps = true;
    Mux::new(config)
}

fn eds_cluster(name: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        cluster_discovery_type: Some(ClusterDiscoveryType::Type(DiscoveryType::Eds as i32)),
        ..Default::default()
    };
    Any {
        type_url: Cluster::type_url(),
        value: cluster.encode_to_vec(),
    }
}

fn endpoints(name: &str) -> Any {
    let cla = ClusterLoadAssignment {
        cluster_name: name.into(),
        ..Default::default()
    };
    Any {
        type_url: ClusterLoadAssignment::type_url(),
        value: cla.encode_to_vec(),
    }
}

fn sotw(type_url: &str, version: &str, nonce: &str, resources: Vec<Any>) -> DiscoveryResponse {
    DiscoveryResponse {
        version_info: version.into(),
        resources,
        type_url: type_url.into(),
        nonce: nonce.into(),
        ..Default::default()
    }
}

fn sotw_requests(out: &Output) -> Vec<&DiscoveryRequest> {
    out.requests
        .iter()
        .map(|r| match r {
            Outgoing::Sotw(r) => r,
            Outgoing::Delta(_) => panic!("expected SotW"),
        })
        .collect()
}

fn t0() -> Instant {
    Instant::now()
}

#[test]
fn c1_node_goes_on_the_first_request_of_every_stream() {
    let mut mux = mux(Mode::Sotw);
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
    let mut mux = mux(Mode::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.add_watch(2, LISTENER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.take_output();
    mux.on_sotw_response(sotw(CLUSTER, "c1", "n1", vec![]), now, SystemTime::now());
    mux.on_sotw_response(sotw(LISTENER, "l7", "n2", vec![]), now, SystemTime::now());
    let out = mux.take_output();
    let acks: Vec<_> = sotw_requests(&out)
        .into_iter()
        .map(|r| {
            (
                r.type_url.as_str(),
                r.version_info.as_str(),
                r.response_nonce.as_str(),
            )
        })
        .collect();
    assert_eq!(acks, vec![(CLUSTER, "c1", "n1"), (LISTENER, "l7", "n2")]);
}

#[test]
fn merged_watches_send_only_names_new_to_the_subscription() {
    let mut mux = mux(Mode::Delta);
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
    let mut config = MuxConfig::new(Mode::Sotw, node());
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
    mux.on_sotw_response(
        sotw(CLUSTER, "v1", "n1", vec![eds_cluster("a")]),
        now,
        SystemTime::now(),
    );
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
    let mut mux = mux(Mode::Sotw);
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
    mux.on_sotw_response(sotw(LISTENER, "x", "n9", vec![]), now, SystemTime::now());
    let out = mux.take_output();
    let reply = sotw_requests(&out)[0];
    assert_eq!(reply.response_nonce, "n9");
    assert_eq!(
        reply.error_detail.as_ref().unwrap().message,
        update::UNWATCHED
    );
}

#[test]
fn c11_resubscribe_every_type_in_fixed_order_with_last_versions() {
    let mut mux = mux(Mode::Sotw);
    let now = t0();
    mux.add_watch(1, LISTENER, Interest::Wildcard, now);
    mux.add_watch(2, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.on_sotw_response(
        sotw(CLUSTER, "c1", "n1", vec![eds_cluster("web")]),
        now,
        SystemTime::now(),
    );
    mux.on_sotw_response(
        sotw(ENDPOINT, "e1", "n2", vec![endpoints("web")]),
        now,
        SystemTime::now(),
    );
    mux.on_sotw_response(sotw(LISTENER, "l1", "n3", vec![]), now, SystemTime::now());
    mux.take_output();
    mux.on_stream_end("reset");
    assert!(
        mux.store().holds(ENDPOINT, "web"),
        "C13: applied config survives"
    );
    mux.on_stream_start(now);
    let out = mux.take_output();
    let resub: Vec<_> = sotw_requests(&out)
        .into_iter()
        .map(|r| {
            (
                r.type_url.as_str(),
                r.version_info.as_str(),
                r.response_nonce.as_str(),
            )
        })
        .collect();
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
    let mut mux = mux(Mode::Delta);
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

#[test]
fn c12_one_cds_update_yields_one_eds_request_after_the_ack() {
    let mut mux = mux(Mode::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.take_output();
    let clusters = vec![eds_cluster("web"), eds_cluster("api")];
    mux.on_sotw_response(sotw(CLUSTER, "v1", "n1", clusters), now, SystemTime::now());
    let out = mux.take_output();
    let requests = sotw_requests(&out);
    assert_eq!(requests.len(), 2);
    assert_eq!(
        (
            requests[0].type_url.as_str(),
            requests[0].response_nonce.as_str()
        ),
        (CLUSTER, "n1")
    );
    assert_eq!(requests[1].type_url, ENDPOINT);
    assert_eq!(requests[1].resource_names, vec!["api", "web"]);
    let more = vec![eds_cluster("web"), eds_cluster("api"), eds_cluster("new")];
    mux.on_sotw_response(sotw(CLUSTER, "v2", "n2", more), now, SystemTime::now());
    let out = mux.take_output();
    let eds: Vec<_> = sotw_requests(&out)
        .into_iter()
        .filter(|r| r.type_url == ENDPOINT)
        .collect();
    assert_eq!(eds.len(), 1);
    assert_eq!(eds[0].resource_names, vec!["api", "new", "web"]);
}

#[test]
fn c12_removed_cluster_drops_its_endpoints() {
    let mut mux = mux(Mode::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.on_sotw_response(
        sotw(CLUSTER, "v1", "n1", vec![eds_cluster("web")]),
        now,
        SystemTime::now(),
    );
    mux.on_sotw_response(
        sotw(ENDPOINT, "e1", "n2", vec![endpoints("web")]),
        now,
        SystemTime::now(),
    );
    mux.take_output();
    mux.on_sotw_response(sotw(CLUSTER, "v2", "n3", vec![]), now, SystemTime::now());
    let out = mux.take_output();
    let eds = sotw_requests(&out)
        .into_iter()
        .find(|r| r.type_url == ENDPOINT)
        .unwrap();
    assert!(eds.resource_names.is_empty());
    assert!(!mux.store().holds(ENDPOINT, "web"));
}

#[test]
fn c14_not_found_timer_starts_when_the_request_is_sent() {
    let mut mux = mux(Mode::Sotw);
    let t = t0();
    mux.add_watch(1, ENDPOINT, Interest::names(["ghost"]), t);
    assert_eq!(mux.next_deadline(), None, "not sent yet: no timer");
    let later = t + Duration::from_secs(100);
    mux.on_stream_start(later);
    assert_eq!(mux.next_deadline(), Some(later + Duration::from_secs(15)));
    mux.take_output();
    mux.on_timer(later + Duration::from_secs(15), SystemTime::now());
    let out = mux.take_output();
    assert!(out.deliveries.iter().any(|(id, e)| *id == 1
        && *e
            == Event::Missing {
                type_url: ENDPOINT.into(),
                names: vec!["ghost".into()]
            }));
    assert!(
        out.reports
            .iter()
            .any(|r| matches!(r, Report::NotFound { .. }))
    );
}

#[test]
fn c14_delta_removal_reports_missing_at_once() {
    let mut mux = mux(Mode::Delta);
    let now = t0();
    mux.add_watch(1, ENDPOINT, Interest::names(["ghost"]), now);
    mux.on_stream_start(now);
    mux.take_output();
    let response = DeltaDiscoveryResponse {
        type_url: ENDPOINT.into(),
        nonce: "n1".into(),
        removed_resources: vec!["ghost".into()],
        ..Default::default()
    };
    mux.on_delta_response(response, now, SystemTime::now());
    let out = mux.take_output();
    assert!(
        out.deliveries
            .iter()
            .any(|(_, e)| matches!(e, Event::Missing { names, .. } if names == &["ghost"]))
    );
    assert_eq!(mux.next_deadline(), None);
}

#[test]
fn c15_new_watch_on_held_resource_is_served_without_a_request() {
    let mut mux = mux(Mode::Sotw);
    let now = t0();
    mux.add_watch(1, ENDPOINT, Interest::names(["a"]), now);
    mux.on_stream_start(now);
    mux.on_sotw_response(
        sotw(ENDPOINT, "v1", "n1", vec![endpoints("a")]),
        now,
        SystemTime::now(),
    );
    mux.take_output();
    mux.add_watch(2, ENDPOINT, Interest::names(["a"]), now);
    let out = mux.take_output();
    assert!(out.requests.is_empty());
    let (id, Event::Sotw { resources, .. }) = &out.deliveries[0] else {
        panic!()
    };
    assert_eq!((*id, resources[0].name.as_str()), (2, "a"));
}

#[test]
fn synced_is_reported_once_everything_wanted_has_arrived() {
    let mut mux = mux(Mode::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    mux.on_sotw_response(
        sotw(CLUSTER, "v1", "n1", vec![eds_cluster("web")]),
        now,
        SystemTime::now(),
    );
    let out = mux.take_output();
    assert!(
        !out.reports.contains(&Report::Synced),
        "endpoints still pending"
    );
    mux.on_sotw_response(
        sotw(ENDPOINT, "e1", "n2", vec![endpoints("web")]),
        now,
        SystemTime::now(),
    );
    assert!(mux.take_output().reports.contains(&Report::Synced));
}
