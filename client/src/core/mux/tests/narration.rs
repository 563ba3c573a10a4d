//! What the mux tells observers who follow the loop: the step each request takes, the streams
//! it opens and closes with their numbers, and (only when asked) each response as it arrived.

use std::time::SystemTime;

use xdsloop_proto::discovery::{DeltaDiscoveryResponse, WireResource};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::*;
use crate::core::event::{ReceivedReport, SentReport, Step};
use crate::core::stream::{StreamEnd, StreamInfo};

fn sent(out: &Output) -> Vec<(u64, &str, Step)> {
    out.reports
        .iter()
        .filter_map(|r| match r {
            Report::Sent(s) => Some(s.as_ref()),
            _ => None,
        })
        .map(|s: &SentReport| (s.stream, type_url::short_name(s.request.type_url()), s.step))
        .collect()
}

fn received(out: &Output) -> Vec<&ReceivedReport> {
    out.reports
        .iter()
        .filter_map(|r| match r {
            Report::Received(r) => Some(r.as_ref()),
            _ => None,
        })
        .collect()
}

fn narrating(mode: Variant, received: ReceivedReports) -> Mux {
    let mut config = MuxConfig::new(mode, node());
    config.follow_deps = true;
    config.received = received;
    Mux::new(config)
}

#[test]
fn requests_say_which_step_they_take_subscribe_ack_update_nack() {
    let mut mux = mux(Variant::Sotw);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    assert_eq!(sent(&mux.take_output()), [(1, "cds", Step::Subscribe)]);
    respond(
        &mut mux,
        now,
        CLUSTER,
        "v1",
        "1-1",
        vec![eds_cluster("web")],
    );
    assert_eq!(
        sent(&mux.take_output()),
        [(1, "cds", Step::Ack), (1, "eds", Step::Subscribe)],
        "the ACK first, then the dependent type's first request (C12)"
    );
    respond(
        &mut mux,
        now,
        CLUSTER,
        "v2",
        "1-2",
        vec![eds_cluster("web"), eds_cluster("api")],
    );
    assert_eq!(
        sent(&mux.take_output()),
        [(1, "cds", Step::Ack), (1, "eds", Step::Update)],
        "a wider EDS interest is an update, though SotW repeats the latest nonce"
    );
    let bad = Any {
        type_url: CLUSTER.into(),
        value: vec![0xff],
    };
    respond(&mut mux, now, CLUSTER, "v3", "1-3", vec![bad]);
    assert_eq!(sent(&mux.take_output()), [(1, "cds", Step::Nack)]);
}

#[test]
fn c11_the_first_request_on_a_new_stream_is_a_resubscription() {
    for mode in [Variant::Sotw, Variant::Delta] {
        let mut mux = mux(mode);
        let now = t0();
        mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
        mux.on_stream_start(now);
        mux.on_stream_end("reset");
        mux.on_stream_start(now);
        assert_eq!(
            sent(&mux.take_output()),
            [(1, "cds", Step::Subscribe), (2, "cds", Step::Resubscribe)],
            "{mode:?}: stream 2 carries the resubscription"
        );
        mux.add_watch(2, ENDPOINT, Interest::names(["web"]), now);
        assert_eq!(
            sent(&mux.take_output()),
            [(2, "eds", Step::Subscribe)],
            "{mode:?}: a type new on this stream and never sent before"
        );
    }
}

#[test]
fn streams_are_reported_with_their_numbers_and_how_they_ended() {
    let mut mux = mux(Variant::Delta);
    let now = t0();
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    let end = StreamEnd {
        reason: "Unavailable: bye".into(),
        status: Some(("UNAVAILABLE".into(), "bye".into())),
    };
    mux.on_stream_end(end.clone());
    mux.on_stream_end("closed twice: not reported");
    mux.on_stream_start(now);
    let streams: Vec<Report> = mux
        .take_output()
        .reports
        .into_iter()
        .filter(|r| matches!(r, Report::StreamOpened(_) | Report::StreamClosed { .. }))
        .collect();
    let info = |id, ordinal| StreamInfo {
        id,
        ordinal,
        key: StreamKey::Aggregated,
    };
    assert_eq!(
        streams,
        [
            Report::StreamOpened(info(1, 1)),
            Report::StreamClosed {
                stream: info(1, 1),
                end
            },
            Report::StreamOpened(info(2, 2)),
        ]
    );
}

#[test]
fn responses_are_reported_as_received_only_when_asked() {
    let now = t0();
    let mut quiet = mux(Variant::Sotw);
    quiet.add_watch(1, CLUSTER, Interest::Wildcard, now);
    quiet.on_stream_start(now);
    respond(
        &mut quiet,
        now,
        CLUSTER,
        "v1",
        "1-1",
        vec![eds_cluster("web")],
    );
    assert!(received(&quiet.take_output()).is_empty(), "off by default");

    let mut mux = narrating(Variant::Sotw, ReceivedReports::Names);
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    let garbage = Any {
        type_url: CLUSTER.into(),
        value: vec![0xff],
    };
    let resources = vec![eds_cluster("web"), garbage, eds_cluster("api")];
    respond(&mut mux, now, CLUSTER, "v1", "1-1", resources);
    let out = mux.take_output();
    let report = received(&out)[0];
    let names: Vec<_> = report.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["web", "api"]);
    assert_eq!((report.stream, report.version.as_str()), (1, "v1"));
    assert_eq!((report.nonce.as_str(), report.undecodable), ("1-1", 1));
    assert!(
        report
            .resources
            .iter()
            .all(|r| r.body.is_none() && r.version.is_none())
    );
    assert!(report.bytes > 0);
    let position = |f: fn(&Report) -> bool| out.reports.iter().position(f).unwrap();
    assert!(
        position(|r| matches!(r, Report::Received(_)))
            < position(|r| matches!(r, Report::Sent(s) if s.step == Step::Nack)),
        "push before the reply to it"
    );
}

#[test]
fn delta_responses_are_reported_with_versions_removals_and_bodies() {
    let now = t0();
    let mut mux = narrating(Variant::Delta, ReceivedReports::Bodies);
    mux.add_watch(1, CLUSTER, Interest::Wildcard, now);
    mux.on_stream_start(now);
    let web = eds_cluster("web");
    let response = DeltaDiscoveryResponse {
        system_version_info: "s1".into(),
        type_url: CLUSTER.into(),
        nonce: "1-1".into(),
        removed_resources: vec!["old".into()],
        resources: vec![WireResource {
            name: "web".into(),
            version: "h1".into(),
            resource: Some(web.clone()),
            ..Default::default()
        }],
        ..Default::default()
    };
    mux.on_delta_response(response, now, SystemTime::now());
    let out = mux.take_output();
    let report = received(&out)[0];
    assert_eq!(
        (report.version.as_str(), report.mode),
        ("s1", Variant::Delta)
    );
    assert_eq!(report.removed, ["old"]);
    let web_entry = &report.resources[0];
    assert_eq!(web_entry.name, "web");
    assert_eq!(web_entry.version.as_deref(), Some("h1"));
    assert_eq!(web_entry.body.as_ref(), Some(&web));
}
