use std::collections::HashMap;

use prost::{Message, Name};
use xdsloop_proto::discovery::{Any, DeltaDiscoveryRequest, DiscoveryRequest};
use xdsloop_proto::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_transcript::Transcript;
use xdsloop_transcript::line::Kind;

use super::*;
use crate::core::event::ReceivedResource;
use crate::core::request::nack_detail;
use crate::core::stream::StreamKey;

fn config(source: crate::config::Source) -> ClientConfig {
    let mut config = ClientConfig::new("127.0.0.1:18000", "edge-1");
    config.source = source;
    config
}

fn cluster(name: &str) -> Any {
    let cluster = Cluster {
        name: name.into(),
        ..Default::default()
    };
    Any {
        type_url: Cluster::type_url(),
        value: cluster.encode_to_vec(),
    }
}

fn stream(id: u64) -> StreamInfo {
    StreamInfo {
        id,
        ordinal: id as u32,
        key: StreamKey::Aggregated,
    }
}

fn sotw(step: Step, version: &str, nonce: &str, error: Option<&str>) -> Report {
    Report::Sent(Box::new(SentReport {
        stream: 1,
        step,
        request: Outgoing::Sotw(DiscoveryRequest {
            version_info: version.into(),
            response_nonce: nonce.into(),
            type_url: CLUSTER.into(),
            error_detail: error.map(nack_detail),
            ..Default::default()
        }),
    }))
}

fn received(nonce: &str) -> Report {
    Report::Received(Box::new(ReceivedReport {
        stream: 1,
        mode: Variant::Sotw,
        type_url: CLUSTER.into(),
        version: "v1".into(),
        nonce: nonce.into(),
        resources: vec![ReceivedResource {
            name: "web".into(),
            version: None,
            body: Some(cluster("web")),
            heartbeat: false,
        }],
        removed: Vec::new(),
        undecodable: 1,
        bytes: 42,
    }))
}

fn record(config: &ClientConfig, bodies: bool, reports: &[Report]) -> Transcript {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.jsonl");
    let mut recorder = Recorder::create(&path, config, bodies).unwrap();
    let t = SystemTime::now();
    for report in reports {
        recorder.record(report, t).unwrap();
    }
    recorder.gap(3, t).unwrap();
    recorder.finish(t).unwrap();
    xdsloop_transcript::read_file(&path).unwrap()
}

#[test]
fn the_client_side_reads_back_with_its_own_verdicts_and_streams_closed_at_shutdown() {
    let config = config(crate::config::Source::Ads);
    let transcript = record(
        &config,
        false,
        &[
            Report::StreamOpened(stream(1)),
            sotw(Step::Subscribe, "", "", None),
            received("1-1"),
            sotw(Step::Ack, "v1", "1-1", None),
            received("1-2"),
            sotw(Step::Nack, "v1", "1-2", Some("bad")),
            Report::Synced,
        ],
    );
    assert_eq!(transcript.header.side, Side::Client);
    assert!(transcript.header.tool.starts_with("xdsloop-client "));
    let events: Vec<&Event> = transcript.events.iter().map(|n| &n.event).collect();
    let kinds: Vec<Kind> = events.iter().map(|e| e.kind()).collect();
    use Kind::*;
    assert_eq!(
        kinds,
        [
            Open, Request, Response, Request, Response, Request, Gap, Close
        ],
        "Synced makes no line; the open stream is closed at the end"
    );
    let seqs: Vec<Option<u32>> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs[..6], [1, 2, 3, 4, 5, 6].map(Some));
    assert!(
        events
            .iter()
            .all(|e| e.kind() == Gap || e.node.as_deref() == Some("edge-1"))
    );
    let What::Open(open) = &events[0].what else {
        panic!()
    };
    assert_eq!(open.transport, "ads-sotw");
    assert_eq!(open.peer.as_deref(), Some("127.0.0.1:18000"));
    let verdicts: Vec<(Dir, Step, Verdict)> = events
        .iter()
        .filter_map(|e| match &e.what {
            What::Request(r) => Some((r.dir, r.step, r.verdict)),
            _ => None,
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (Dir::Out, Step::Subscribe, Verdict::Initial),
            (Dir::Out, Step::Ack, Verdict::Ack),
            (Dir::Out, Step::Nack, Verdict::Nack),
        ]
    );
    let What::Request(nack) = &events[5].what else {
        panic!()
    };
    assert_eq!(nack.error_detail.as_ref().unwrap().message, "bad");
    let What::Response(push) = &events[2].what else {
        panic!()
    };
    assert_eq!(
        (push.dir, push.undecodable, push.bytes),
        (Dir::In, 1, Some(42))
    );
    assert_eq!(push.resources[0].body, None, "bodies only when asked");
    let What::Close(close) = &events[7].what else {
        panic!()
    };
    assert_eq!(close.reason, CloseReason::Shutdown);
}

#[test]
fn record_resources_adds_each_body_and_closes_say_status_or_reset() {
    let config = config(crate::config::Source::AdsDelta);
    let end = |status: Option<(&str, &str)>| StreamEnd {
        reason: "gone".into(),
        status: status.map(|(c, m)| (c.to_string(), m.to_string())),
    };
    let transcript = record(
        &config,
        true,
        &[
            Report::StreamOpened(stream(1)),
            received("1-1"),
            Report::StreamClosed {
                stream: stream(1),
                end: end(Some(("UNAVAILABLE", "bye"))),
            },
            Report::StreamOpened(stream(2)),
            Report::StreamClosed {
                stream: stream(2),
                end: end(None),
            },
        ],
    );
    assert!(transcript.header.resources);
    let events: Vec<&Event> = transcript.events.iter().map(|n| &n.event).collect();
    let What::Open(open) = &events[0].what else {
        panic!()
    };
    assert_eq!(open.transport, "ads-delta");
    let What::Response(push) = &events[1].what else {
        panic!()
    };
    let body = push.resources[0].body.as_ref().unwrap();
    assert_eq!(body["@type"], CLUSTER);
    assert_eq!(body["name"], "web");
    let closes: Vec<&Close> = events
        .iter()
        .filter_map(|e| match &e.what {
            What::Close(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(
        closes.len(),
        2,
        "no shutdown close for streams already closed"
    );
    assert_eq!(closes[0].reason, CloseReason::Status);
    assert_eq!(closes[0].status.as_ref().unwrap().code, "UNAVAILABLE");
    assert_eq!(
        (closes[1].reason, &closes[1].status),
        (CloseReason::Reset, &None)
    );
}

#[test]
fn delta_requests_keep_their_subscription_changes_and_held_versions() {
    let sent = SentReport {
        stream: 2,
        step: Step::Resubscribe,
        request: Outgoing::Delta(DeltaDiscoveryRequest {
            type_url: CLUSTER.into(),
            resource_names_subscribe: vec!["*".into()],
            resource_names_unsubscribe: vec!["old".into()],
            initial_resource_versions: HashMap::from([("web".into(), "h1".into())]),
            ..Default::default()
        }),
    };
    let line = request(&sent);
    assert_eq!(
        (line.step, line.verdict),
        (Step::Resubscribe, Verdict::Initial)
    );
    let RequestBody::Delta {
        subscribe,
        unsubscribe,
        initial_resource_versions,
    } = line.body
    else {
        panic!("a Delta body")
    };
    assert_eq!(
        (subscribe, unsubscribe),
        (vec!["*".to_string()], vec!["old".to_string()])
    );
    assert_eq!(initial_resource_versions["web"], "h1");
}

#[test]
fn a_file_that_cannot_be_created_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/run.jsonl");
    let config = config(crate::config::Source::Ads);
    let error = Recorder::create(&path, &config, false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("--record") && error.contains("no/such/dir/run.jsonl"),
        "{error}"
    );
}
