use std::path::Path;

use serde_json::json;
use xdsloop_proto::{
    Codec,
    type_url::{CLUSTER, ENDPOINT},
};

use super::sample::*;
use super::*;

fn error(lines: &[serde_json::Value]) -> String {
    script(lines).unwrap_err().to_string()
}

#[test]
fn replay_script_groups_each_types_requests_with_the_responses_after_them() {
    let script = script(&sotw_lines()).unwrap();
    assert_eq!(script.file, "rec.jsonl");
    let [stream] = &script.streams[..] else {
        panic!("one stream: {:?}", script.streams);
    };
    assert_eq!((stream.id, stream.node.as_str()), (3, "edge-1"));
    assert_eq!(stream.transport, "ads-sotw");
    assert_eq!(stream.requests(), 4);
    let cds = &stream.types[CLUSTER];
    let lines: Vec<usize> = cds.iter().map(|t| t.line).collect();
    assert_eq!(lines, [3, 7]);
    let push = &cds[0].responses[0];
    assert_eq!(
        (push.line, push.nonce.as_str(), push.version.as_str()),
        (4, "3-1", "v1")
    );
    assert_eq!(push.removed, None, "a SotW response");
    let names: Vec<&str> = push.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        push.resources[0].version, "a-hash",
        "the recorded version, not a new hash"
    );
    assert_eq!(push.resources[0].type_url, CLUSTER);
    assert!(cds[1].responses.is_empty(), "nothing followed the ACK");
    let eds = &stream.types[ENDPOINT];
    assert_eq!(eds[0].responses[0].nonce, "3-2");
}

#[test]
fn replay_script_keeps_delta_removals_and_system_version() {
    let lines = [
        header("server", true),
        open(4, "ads-delta"),
        delta_request(4, "edge-1", "subscribe", "", &["a"]),
        delta_response(4, "edge-1", "4-1", &["a"]),
    ];
    let script = script(&lines).unwrap();
    let push = &script.streams[0].types[CLUSTER][0].responses[0];
    assert_eq!(push.version, "sv1");
    assert_eq!(push.removed.as_deref(), Some(&["gone".to_string()][..]));
}

#[test]
fn replay_refuses_a_client_recording_at_line_1() {
    let mut lines = sotw_lines();
    lines[0] = header("client", true);
    let error = error(&lines);
    assert!(
        error.starts_with("--replay rec.jsonl:1: a client recording"),
        "{error}"
    );
}

#[test]
fn replay_refuses_a_recording_without_bodies_naming_the_first_response() {
    // A real `--record` file, written without --record-resources.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/transcripts/demo-recorded.jsonl");
    let error = load(&path, &Codec::envoy()).unwrap_err().to_string();
    let expected = format!(
        "--replay {}:4: response without resources; record with --record-resources",
        path.display()
    );
    assert_eq!(error, expected);
}

#[test]
fn replay_refuses_a_resource_without_its_body() {
    let mut lines = sotw_lines();
    lines[5]["resources"][1]
        .as_object_mut()
        .unwrap()
        .remove("body");
    assert_eq!(
        error(&lines),
        "--replay rec.jsonl:6: response without resources; record with --record-resources"
    );
}

#[test]
fn replay_refuses_a_body_that_does_not_encode_naming_line_and_resource() {
    let mut lines = sotw_lines();
    lines[3]["resources"][0]["body"] = json!({"@type": CLUSTER, "name": "a", "no_such_field": 1});
    let error = error(&lines);
    assert!(
        error.starts_with("--replay rec.jsonl:4: resource \"a\": "),
        "{error}"
    );
    assert!(error.contains("no_such_field"), "{error}");
}

#[test]
fn replay_refuses_a_recording_with_a_gap() {
    let mut lines = sotw_lines();
    lines.insert(
        5,
        json!({"t": "2026-03-02T09:30:00Z", "kind": "gap", "lost": 7}),
    );
    let error = error(&lines);
    assert!(
        error.starts_with("--replay rec.jsonl:6: incomplete recording: 7 events were lost"),
        "{error}"
    );
}

#[test]
fn replay_refuses_a_recording_where_no_stream_received_a_request() {
    let lines = [header("server", true), open(1, "ads-sotw")];
    assert_eq!(
        error(&lines),
        "--replay rec.jsonl: no stream received a request: nothing to replay"
    );
}

#[test]
fn replay_script_keeps_the_status_the_server_ended_a_stream_with() {
    let close = |reason: &str, code: &str| {
        json!({"t": "2026-03-02T09:30:00Z", "stream": 3, "seq": 9, "kind": "close",
               "reason": reason, "status": {"code": code, "message": "closed by rule c"}})
    };
    let mut lines = sotw_lines();
    lines.push(close("fault", "UNAVAILABLE"));
    let ended = script(&lines).unwrap().streams[0].ended.clone();
    let expected = RecordedEnd {
        line: 9,
        code: 14,
        message: "closed by rule c".into(),
    };
    assert_eq!(ended, Some(expected));
    let mut lines = sotw_lines();
    lines.push(json!({"t": "2026-03-02T09:30:00Z", "stream": 3, "seq": 9, "kind": "close", "reason": "client"}));
    assert_eq!(
        script(&lines).unwrap().streams[0].ended,
        None,
        "the client left: nothing to act out"
    );
    let mut lines = sotw_lines();
    lines.push(close("status", "NO_SUCH_CODE"));
    assert_eq!(
        error(&lines),
        "--replay rec.jsonl:9: unknown gRPC status code \"NO_SUCH_CODE\""
    );
}
