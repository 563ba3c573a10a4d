use crate::protocol::machine::MachineHooks;
use crate::protocol::now::tests::now;
use std::sync::Arc;

use xdsloop_proto::{
    discovery::{DeltaDiscoveryRequest, DiscoveryRequest},
    type_url::{CLUSTER, ENDPOINT},
};

use super::*;
use crate::{
    protocol::{
        kind::StreamKind, machine::StreamMachine, request::SotwRequest, subscription::Verdict,
    },
    replay::script::sample::{self, *},
    test_support::{error, names, node},
};

fn replay(lines: &[serde_json::Value]) -> Arc<Replay> {
    Arc::new(Replay::new(script(lines).unwrap()))
}

fn sotw(replay: &Arc<Replay>) -> ReplayStream<Sotw> {
    ReplayStream::new(replay.clone(), StreamKind::ADS_SOTW)
}

fn request(type_url: &str, list: &[&str], version: &str, nonce: &str) -> SotwRequest {
    SotwRequest::from(DiscoveryRequest {
        version_info: version.into(),
        node: node("edge-1"),
        resource_names: names(list),
        type_url: type_url.into(),
        response_nonce: nonce.into(),
        ..Default::default()
    })
}

fn nack(type_url: &str, list: &[&str], nonce: &str) -> SotwRequest {
    let mut request = request(type_url, list, "", nonce);
    request.head.error_detail = error("bad");
    request
}

/// (nonce, version, names) of each response.
fn sent(out: &[crate::protocol::response::SotwResponse]) -> Vec<(String, String, Vec<String>)> {
    out.iter()
        .map(|r| {
            let message = r.to_message();
            let names = message.resources.iter().map(|any| {
                let codec = xdsloop_proto::Codec::envoy();
                codec.resource_name(&any.type_url, &any.value).unwrap()
            });
            (message.nonce, message.version_info, names.collect())
        })
        .collect()
}

fn owned(nonce: &str, version: &str, list: &[&str]) -> (String, String, Vec<String>) {
    (nonce.into(), version.into(), names(list))
}

#[test]
fn replay_answers_each_recorded_request_with_the_responses_after_it() {
    let replay = replay(&sotw_lines());
    let mut stream = sotw(&replay);
    let out = stream.on_request(request(CLUSTER, &[], "", ""), now());
    assert_eq!(sent(&out), [owned("3-1", "v1", &["a", "b"])]);
    assert_eq!(stream.node_id(), Some("edge-1"));
    let out = stream.on_request(request(ENDPOINT, &["b", "a"], "", ""), now());
    assert_eq!(sent(&out), [owned("3-2", "e1", &["a", "b"])]);
    assert!(
        stream
            .on_request(request(CLUSTER, &[], "v1", "3-1"), now())
            .is_empty()
    );
    assert_eq!(stream.exchange().verdict, Verdict::Ack);
    assert!(
        stream
            .on_request(nack(ENDPOINT, &["a", "b"], "3-2"), now())
            .is_empty()
    );
    assert_eq!(stream.exchange().verdict, Verdict::Nack);
    assert_eq!(stream.take_ending(), None);
    let view = replay.view();
    assert_eq!(
        (view.streams, view.bound, view.requests, view.matched),
        (1, 1, 4, 4)
    );
    assert_eq!(view.error, None);
}

#[test]
fn replay_accepts_another_order_across_types() {
    let replay = replay(&sotw_lines());
    let mut stream = sotw(&replay);
    let out = stream.on_request(request(ENDPOINT, &["a", "b"], "", ""), now());
    assert_eq!(sent(&out)[0].0, "3-2");
    let out = stream.on_request(request(CLUSTER, &[], "", ""), now());
    assert_eq!(sent(&out)[0].0, "3-1");
    assert_eq!(stream.take_ending(), None);
}

#[test]
fn replay_mismatch_ends_the_stream_with_failed_precondition_naming_the_line() {
    let replay = replay(&sotw_lines());
    let mut stream = sotw(&replay);
    stream.on_request(request(CLUSTER, &[], "", ""), now());
    // The recording has the ACK of v1 at line 7; this client NACKs it.
    assert!(
        stream
            .on_request(nack(CLUSTER, &[], "3-1"), now())
            .is_empty()
    );
    let ending = stream.take_ending().expect("the stream ends");
    assert_eq!(ending.code, 9, "FAILED_PRECONDITION");
    let expected = "replay: rec.jsonl:7 expected cds ACK v\"v1\" n3-1 [], \
                    got cds NACK v\"\" n3-1 [] error 3 \"bad\"";
    assert_eq!(&*ending.message, expected);
    assert_eq!(
        replay.view().error,
        Some(Failure {
            line: Some(7),
            message: expected.to_string()
        })
    );
    // Whatever comes before the stream is closed is not answered.
    assert!(
        stream
            .on_request(request(CLUSTER, &[], "v1", "3-1"), now())
            .is_empty()
    );
    assert_eq!(stream.take_ending(), None, "said once");
}

#[test]
fn replay_request_beyond_the_recording_is_a_mismatch() {
    let replay = replay(&sotw_lines());
    let mut stream = sotw(&replay);
    stream.on_request(request(CLUSTER, &[], "", ""), now());
    stream.on_request(request(CLUSTER, &[], "v1", "3-1"), now());
    stream.on_request(request(CLUSTER, &["a"], "v1", "3-1"), now());
    let ending = stream.take_ending().expect("the stream ends");
    assert_eq!(
        &*ending.message,
        "replay: rec.jsonl:7 was the recorded stream's last cds request (stream 3 of node \
         \"edge-1\"), got cds ACK v\"v1\" n3-1 [a]"
    );
}

#[test]
fn replay_binds_each_stream_to_the_next_recorded_stream_of_its_node() {
    let mut lines = sotw_lines();
    lines.push(open(5, "ads-sotw"));
    lines.push(sample::request(
        5,
        "edge-1",
        "cds",
        "resubscribe",
        "v1",
        "",
        &[],
    ));
    lines.push(response(5, "edge-1", "cds", "v2", "5-1", &["c"]));
    let replay = replay(&lines);
    let mut first = sotw(&replay);
    assert_eq!(
        sent(&first.on_request(request(CLUSTER, &[], "", ""), now()))[0].0,
        "3-1"
    );
    let mut second = sotw(&replay);
    let out = second.on_request(request(CLUSTER, &[], "v1", ""), now());
    assert_eq!(sent(&out), [owned("5-1", "v2", &["c"])]);
    let mut third = sotw(&replay);
    assert!(
        third
            .on_request(request(CLUSTER, &[], "", ""), now())
            .is_empty()
    );
    assert_eq!(
        &*third.take_ending().unwrap().message,
        "replay: no recorded stream left for node \"edge-1\" on ads-sotw (the recording has 2, \
         all replayed already)"
    );
    let mut delta: ReplayStream<Delta> = ReplayStream::new(replay.clone(), StreamKind::ADS_DELTA);
    delta.on_request(
        DeltaDiscoveryRequest {
            node: node("edge-1"),
            type_url: CLUSTER.into(),
            ..Default::default()
        },
        now(),
    );
    assert_eq!(
        &*delta.take_ending().unwrap().message,
        "replay: rec.jsonl has no ads-delta stream of node \"edge-1\" (it has \"edge-1\" on \
         ads-sotw, \"edge-1\" on ads-sotw)"
    );
    let view = replay.view();
    assert_eq!((view.bound, view.failures), (2, 2));
    let first = view.error.unwrap().message;
    assert!(
        first.starts_with("replay: no recorded stream left"),
        "the first failure is kept: {first}"
    );
}

#[test]
fn replay_delta_stream_sends_the_recorded_delta_responses() {
    let lines = [
        header("server", true),
        open(4, "ads-delta"),
        delta_request(4, "edge-1", "subscribe", "", &["a"]),
        delta_response(4, "edge-1", "4-1", &["a"]),
        delta_request(4, "edge-1", "ack", "4-1", &[]),
    ];
    let replay = replay(&lines);
    let mut stream: ReplayStream<Delta> = ReplayStream::new(replay.clone(), StreamKind::ADS_DELTA);
    let out = stream.on_request(
        DeltaDiscoveryRequest {
            node: node("edge-1"),
            type_url: CLUSTER.into(),
            resource_names_subscribe: names(&["a"]),
            ..Default::default()
        },
        now(),
    );
    let message = out[0].to_message();
    assert_eq!(
        (message.nonce.as_str(), message.system_version_info.as_str()),
        ("4-1", "sv1")
    );
    assert_eq!(message.removed_resources, ["gone"]);
    let resource = &message.resources[0];
    assert_eq!(
        (resource.name.as_str(), resource.version.as_str()),
        ("a", "a-hash")
    );
    assert_eq!(resource.resource.as_ref().unwrap().type_url, CLUSTER);
    let ack = stream.on_request(
        DeltaDiscoveryRequest {
            type_url: CLUSTER.into(),
            response_nonce: "4-1".into(),
            ..Default::default()
        },
        now(),
    );
    assert!(ack.is_empty());
    assert_eq!((stream.take_ending(), replay.view().matched), (None, 2));
}

#[test]
fn replay_ends_the_stream_with_the_recorded_status_once_every_request_arrived() {
    let mut lines = sotw_lines();
    lines.push(
        serde_json::json!({"t": "2026-03-02T09:30:00Z", "stream": 3, "seq": 9,
        "kind": "close", "reason": "fault", "status": {"code": "UNAVAILABLE", "message": "bye"}}),
    );
    let replay = replay(&lines);
    let mut stream = sotw(&replay);
    stream.on_request(request(CLUSTER, &[], "", ""), now());
    stream.on_request(request(ENDPOINT, &["a", "b"], "", ""), now());
    stream.on_request(nack(ENDPOINT, &["a", "b"], "3-2"), now());
    assert_eq!(stream.take_ending(), None, "the cds ACK is still to come");
    stream.on_request(request(CLUSTER, &[], "v1", "3-1"), now());
    let ending = stream.take_ending().expect("the recorded end");
    assert_eq!((ending.code, &*ending.message), (14, "bye"));
    let view = replay.view();
    assert_eq!((view.matched, view.failures, view.error), (4, 0, None));
}

#[test]
fn replay_timing_keeps_the_recorded_delay_between_a_request_and_its_responses() {
    let mut lines = sotw_lines();
    // The CDS push went out 2 s after the CDS subscription, the EDS push at once.
    lines[3]["t"] = serde_json::json!("2026-03-02T09:30:02.000000Z");
    lines.push(
        serde_json::json!({"t": "2026-03-02T09:30:09Z", "stream": 3, "seq": 9,
        "kind": "close", "reason": "status", "status": {"code": "UNAVAILABLE", "message": "bye"}}),
    );
    let replay = Arc::new(Replay::with_timing(script(&lines).unwrap(), true));
    let mut stream = sotw(&replay);
    let start = now();
    assert!(
        stream
            .on_request(request(CLUSTER, &[], "", ""), now())
            .is_empty()
    );
    assert!(stream.on_tick(start).is_empty(), "not yet");
    let due = start + std::time::Duration::from_secs(2);
    assert_eq!(stream.next_deadline(), Some(due.at));
    assert!(
        stream
            .on_request(request(ENDPOINT, &["a", "b"], "", ""), now())
            .is_empty()
    );
    let later = start + std::time::Duration::from_millis(10);
    assert!(
        stream.on_tick(later).is_empty(),
        "behind the CDS push, in recorded order"
    );
    let out = stream.on_tick(due);
    assert_eq!(
        sent(&out).into_iter().map(|s| s.0).collect::<Vec<_>>(),
        ["3-1", "3-2"]
    );
    assert_eq!(stream.next_deadline(), None);
    stream.on_request(request(CLUSTER, &[], "v1", "3-1"), now());
    stream.on_request(nack(ENDPOINT, &["a", "b"], "3-2"), now());
    stream.on_tick(due);
    assert_eq!(stream.take_ending().map(|e| e.code), Some(14));
}
