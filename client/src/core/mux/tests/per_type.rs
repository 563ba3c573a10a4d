//! The mux with one stream per type (`grpc` / `delta-grpc`): the same protocol logic, with the
//! per-stream parts (node, liveness, timers, failures) kept per type.

use std::time::{Duration, Instant, SystemTime};

use xdsloop_proto::discovery::Node;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT, LISTENER};

use super::*;
use super::{eds_cluster, respond};

fn per_type(source: SourceKind) -> Mux {
    let node = Node {
        id: "n1".into(),
        ..Default::default()
    };
    let mut config = MuxConfig::for_source(source, node);
    config.follow_deps = true;
    config.not_found_timeout = Duration::from_secs(10);
    Mux::new(config)
}

fn key(type_url: &str) -> StreamKey {
    StreamKey::Type(type_url.to_string())
}

#[test]
fn each_type_has_its_own_stream_and_only_asked_types_want_one() {
    let mut mux = per_type(SourceKind::Grpc);
    let now = Instant::now();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.add_watch(2, LISTENER, Interest::Wildcard, now);
    mux.add_watch(3, ENDPOINT, Interest::names(Vec::<String>::new()), now);
    assert_eq!(mux.stream_of(CLUSTER), key(CLUSTER));
    let wanted: Vec<_> = mux.streams_wanted().into_iter().collect();
    assert_eq!(
        wanted,
        vec![key(CLUSTER), key(LISTENER)],
        "EDS wants nothing yet"
    );
    assert_eq!(
        per_type(SourceKind::Ads).streams_wanted(),
        Default::default(),
        "no types, no streams"
    );
}

#[test]
fn c1_every_per_type_stream_carries_the_node_on_its_first_request() {
    let mut mux = per_type(SourceKind::Grpc);
    let now = Instant::now();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.add_watch(2, LISTENER, Interest::Wildcard, now);
    assert!(mux.take_output().requests.is_empty(), "no stream open yet");
    mux.on_stream_open(&key(CLUSTER), now);
    let out = mux.take_output();
    assert_eq!(out.requests.len(), 1, "only the CDS stream is open");
    assert_eq!(out.requests[0].type_url(), CLUSTER);
    assert!(out.requests[0].has_node());
    mux.on_stream_open(&key(LISTENER), now);
    let out = mux.take_output();
    assert_eq!(out.requests.len(), 1);
    assert_eq!(out.requests[0].type_url(), LISTENER);
    assert!(
        out.requests[0].has_node(),
        "the LDS stream's first request too"
    );
}

#[test]
fn one_stream_ending_fails_only_its_own_type_and_resubscribes_only_it() {
    let mut mux = per_type(SourceKind::Grpc);
    let now = Instant::now();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.add_watch(2, LISTENER, Interest::Wildcard, now);
    mux.on_stream_open(&key(CLUSTER), now);
    mux.on_stream_open(&key(LISTENER), now);
    mux.take_output();
    respond(&mut mux, now, CLUSTER, "v1", "c1", vec![eds_cluster("web")]);
    mux.take_output();
    mux.on_stream_closed(&key(LISTENER), "reset");
    let out = mux.take_output();
    let failed: Vec<_> = out
        .deliveries
        .iter()
        .map(|(id, e)| (*id, matches!(e, Event::Failed { .. })))
        .collect();
    assert_eq!(failed, vec![(2, true)], "only the LDS watch hears of it");
    assert!(mux.store().holds(CLUSTER, "web"));
    mux.on_stream_open(&key(LISTENER), now);
    let out = mux.take_output();
    assert_eq!(out.requests.len(), 1);
    assert_eq!(out.requests[0].type_url(), LISTENER);
    assert!(out.requests[0].has_node());
}

#[test]
fn c12_dependencies_are_followed_onto_the_child_types_own_stream() {
    let mut mux = per_type(SourceKind::Grpc);
    let now = Instant::now();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_open(&key(CLUSTER), now);
    mux.take_output();
    respond(&mut mux, now, CLUSTER, "v1", "c1", vec![eds_cluster("web")]);
    let out = mux.take_output();
    assert_eq!(out.requests.len(), 1, "the CDS ACK; EDS has no stream yet");
    assert!(mux.streams_wanted().contains(&key(ENDPOINT)));
    mux.on_stream_open(&key(ENDPOINT), now);
    let out = mux.take_output();
    match &out.requests[..] {
        [Outgoing::Sotw(r)] => {
            assert_eq!(r.type_url, ENDPOINT);
            assert_eq!(r.resource_names, ["web"]);
            assert!(r.node.is_some());
        }
        other => panic!("expected one EDS request, got {other:?}"),
    }
}

#[test]
fn c14_not_found_timers_stop_only_with_their_own_stream() {
    let mut mux = per_type(SourceKind::DeltaGrpc);
    let now = Instant::now();
    mux.add_watch(1, CLUSTER, Interest::names(["a"]), now);
    mux.add_watch(2, ENDPOINT, Interest::names(["e"]), now);
    mux.on_stream_open(&key(CLUSTER), now);
    mux.on_stream_open(&key(ENDPOINT), now);
    mux.take_output();
    mux.on_stream_closed(&key(ENDPOINT), "reset");
    mux.on_timer(now + Duration::from_secs(11), SystemTime::now());
    let out = mux.take_output();
    let missing: Vec<_> = out
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::NotFound {
                type_url, names, ..
            } => Some((type_url.as_str(), names.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(missing, vec![(CLUSTER, vec!["a".to_string()])]);
}

#[test]
fn reports_name_the_source() {
    let mut mux = per_type(SourceKind::DeltaGrpc);
    let now = Instant::now();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_open(&key(CLUSTER), now);
    mux.take_output();
    mux.reject_update(CLUSTER, "", "", "unreadable", now, SystemTime::now());
    let out = mux.take_output();
    let update = out.reports.iter().find_map(|r| match r {
        Report::Update(u) => Some(u),
        _ => None,
    });
    let update = update.expect("an update report");
    assert_eq!(update.source, SourceKind::DeltaGrpc);
    assert_eq!(update.mode, Variant::Delta);
    assert_eq!(update.verdict, crate::Verdict::Nack("unreadable".into()));
    match &out.requests[..] {
        [Outgoing::Delta(r)] => assert_eq!(
            r.error_detail.as_ref().map(|e| e.message.as_str()),
            Some("unreadable")
        ),
        other => panic!("expected one Delta NACK, got {other:?}"),
    }
}
