//! TTLs on the client (C17): wrapped resources expire unless heartbeats refresh them, and a
//! heartbeat is ACKed without being an update.

use std::time::{Duration, SystemTime};

use prost::Message;
use xdsloop_proto::discovery::{DeltaDiscoveryResponse, WireResource};
use xdsloop_proto::envoy::google::protobuf::Duration as ProtoDuration;
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};
use xdsloop_proto::wrapper::RESOURCE_WRAPPER;

use super::*;

const TTL: Duration = Duration::from_secs(10);

fn ttl(seconds: i64) -> Option<ProtoDuration> {
    Some(ProtoDuration { seconds, nanos: 0 })
}

/// A SotW `Resource` wrapper: with `body`, the resource and its TTL; without, a heartbeat.
fn wrapper(name: &str, body: Option<Any>, seconds: i64) -> Any {
    let resource = WireResource {
        name: name.into(),
        resource: body,
        ttl: ttl(seconds),
        ..Default::default()
    };
    Any {
        type_url: RESOURCE_WRAPPER.into(),
        value: resource.encode_to_vec(),
    }
}

fn updates(out: &Output) -> usize {
    out.reports
        .iter()
        .filter(|r| matches!(r, Report::Update(_)))
        .count()
}

/// A mux that follows no dependencies: its only timers are the TTLs under test.
fn plain(mode: Variant) -> Mux {
    Mux::new(MuxConfig::new(mode, node()))
}

fn sotw_mux(type_url: &str, interest: Interest) -> (Mux, std::time::Instant) {
    let mut mux = plain(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, type_url, interest, now);
    mux.on_stream_start(now);
    mux.take_output();
    (mux, now)
}

#[test]
fn c17_heartbeat_refreshes_without_update_and_a_lapsed_ttl_expires() {
    let (mut mux, t0) = sotw_mux(ENDPOINT, Interest::names(["a"]));
    let wrapped = wrapper("a", Some(endpoints("a")), 10);
    respond(&mut mux, t0, ENDPOINT, "v1", "1", vec![wrapped]);
    assert_eq!(updates(&mux.take_output()), 1);
    assert_eq!(mux.next_deadline(), Some(t0 + TTL));

    let beat_at = t0 + Duration::from_secs(8);
    respond(
        &mut mux,
        beat_at,
        ENDPOINT,
        "v1",
        "2",
        vec![wrapper("a", None, 10)],
    );
    let out = mux.take_output();
    assert_eq!(updates(&out), 0, "a heartbeat is not an update");
    assert_eq!(acks(&out), [(ENDPOINT, "v1", "2")], "but it is ACKed");
    assert!(
        out.reports
            .iter()
            .any(|r| matches!(r, Report::Heartbeat { names, .. } if names == &["a"]))
    );
    assert_eq!(mux.next_deadline(), Some(beat_at + TTL));
    mux.on_timer(t0 + TTL, SystemTime::now());
    assert!(
        mux.store().holds(ENDPOINT, "a"),
        "refreshed: not expired at the first deadline"
    );

    mux.on_stream_end("the server went away");
    mux.on_timer(beat_at + TTL, SystemTime::now());
    let out = mux.take_output();
    assert!(
        !mux.store().holds(ENDPOINT, "a"),
        "expiry runs while disconnected"
    );
    let expired: Vec<_> = out
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::Expired { names, .. } => Some(names.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(expired, [vec!["a".to_string()]]);
    assert!(
        out.deliveries.iter().any(|(id, e)| *id == 1
            && matches!(e, Event::Sotw { resources, .. } if resources.is_empty()))
    );
    assert!(mux.next_deadline().is_none());
}

#[test]
fn c17_ttl_cleared_when_resent_without() {
    let (mut mux, t0) = sotw_mux(ENDPOINT, Interest::names(["a"]));
    respond(
        &mut mux,
        t0,
        ENDPOINT,
        "v1",
        "1",
        vec![wrapper("a", Some(endpoints("a")), 10)],
    );
    respond(&mut mux, t0, ENDPOINT, "v2", "2", vec![endpoints("a")]);
    assert!(mux.next_deadline().is_none());
    mux.on_timer(t0 + Duration::from_secs(3600), SystemTime::now());
    assert!(mux.store().holds(ENDPOINT, "a"));
}

#[test]
fn c17_a_heartbeat_in_a_new_version_or_of_the_wrong_type_is_nacked() {
    let (mut mux, t0) = sotw_mux(ENDPOINT, Interest::names(["a"]));
    respond(
        &mut mux,
        t0,
        ENDPOINT,
        "v1",
        "1",
        vec![wrapper("a", Some(endpoints("a")), 10)],
    );
    mux.take_output();
    respond(
        &mut mux,
        t0,
        ENDPOINT,
        "v2",
        "2",
        vec![wrapper("a", None, 10)],
    );
    let out = mux.take_output();
    let nack = out.requests[0].error().expect("NACKed");
    assert!(nack.contains("heartbeat") && nack.contains("v1"), "{nack}");
    respond(
        &mut mux,
        t0,
        ENDPOINT,
        "v3",
        "3",
        vec![wrapper("a", Some(eds_cluster("a")), 10)],
    );
    let out = mux.take_output();
    let nack = out.requests[0].error().expect("NACKed");
    assert!(nack.contains("does not match the response type"), "{nack}");
}

#[test]
fn c17_a_full_state_heartbeat_deletes_nothing() {
    let (mut mux, t0) = sotw_mux(CLUSTER, Interest::Wildcard);
    let clusters = vec![wrapper("a", Some(eds_cluster("a")), 10), eds_cluster("b")];
    respond(&mut mux, t0, CLUSTER, "v1", "1", clusters);
    let beats = vec![wrapper("a", None, 10), wrapper("b", None, 0)];
    respond(
        &mut mux,
        t0 + Duration::from_secs(5),
        CLUSTER,
        "v1",
        "2",
        beats,
    );
    assert!(mux.store().holds(CLUSTER, "a") && mux.store().holds(CLUSTER, "b"));
    assert_eq!(mux.next_deadline(), Some(t0 + Duration::from_secs(15)));
}

#[test]
fn c17_delta_heartbeat_refreshes_only_the_version_held() {
    let mut mux = plain(Variant::Delta);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::names(["a"]), now);
    mux.on_stream_start(now);
    let resource = |version: &str, body: Option<Any>| WireResource {
        name: "a".into(),
        version: version.into(),
        resource: body,
        ttl: ttl(10),
        ..Default::default()
    };
    let response = |nonce: &str, resources| DeltaDiscoveryResponse {
        system_version_info: "s1".into(),
        type_url: CLUSTER.into(),
        nonce: nonce.into(),
        resources,
        ..Default::default()
    };
    mux.on_delta_response(
        response("1", vec![resource("h1", Some(eds_cluster("a")))]),
        now,
        SystemTime::now(),
    );
    mux.take_output();
    let stale = now + Duration::from_secs(5);
    mux.on_delta_response(
        response("2", vec![resource("h0", None)]),
        stale,
        SystemTime::now(),
    );
    assert_eq!(
        mux.next_deadline(),
        Some(now + TTL),
        "another version: not a heartbeat"
    );
    let beat = now + Duration::from_secs(6);
    mux.on_delta_response(
        response("3", vec![resource("h1", None)]),
        beat,
        SystemTime::now(),
    );
    assert_eq!(mux.next_deadline(), Some(beat + TTL));
    assert_eq!(updates(&mux.take_output()), 0);
}
