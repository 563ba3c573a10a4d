//! `--record FILE`: the server writes a transcript of every stream, which the transcript
//! reader takes back line by line.

use std::path::Path;

use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::app::Recording;
use xdsloop_transcript::{
    Step,
    line::{Side, What},
    read_file,
};

use crate::harness::*;

/// A server recording to `path`, with clusters `a` and `b`.
async fn recording(path: &Path, resources: bool) -> FixtureServer {
    let files = [("clusters.json", vec![cluster("a"), cluster("b")])];
    let recording = Recording {
        path: path.to_path_buf(),
        resources,
    };
    FixtureServer::start_with(&files, |server| {
        server.configure(move |config| config.record = Some(recording.clone()))
    })
    .await
}

#[tokio::test]
async fn record_writes_every_message_of_a_session_and_the_reader_takes_it_back() {
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("server.jsonl");
    let server = recording(&path, false).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.nack(&first, &[], "").await;
    let registry = server.registry().clone();
    registry_until(&registry, "the NACK", |streams| {
        streams
            .iter()
            .any(|s| s.types.values().any(|t| t.last_nack.is_some()))
    })
    .await;
    let status = http_get(server.addr(), "/status").await.json();
    assert_eq!(status["recorder"]["path"], path.display().to_string());
    assert_eq!(status["recorder"]["lost"], 0);
    drop(client);
    registry_until(&registry, "the stream to close", |s| s.is_empty()).await;
    server.server.shutdown().await.unwrap();

    let transcript = read_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(transcript.header.side, Side::Server);
    assert!(!transcript.header.resources);
    let steps: Vec<Step> = transcript
        .events
        .iter()
        .filter_map(|n| n.event.step())
        .collect();
    use Step::*;
    assert_eq!(steps, [Established, Subscribe, Push, Nack, Closed]);
    let push = transcript.events.iter().find_map(|n| match &n.event.what {
        What::Response(r) => Some(r),
        _ => None,
    });
    let push = push.expect("the push is recorded");
    let names: Vec<&str> = push.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(push.resources.iter().all(|r| r.body.is_none()));
    assert_eq!(push.nonce, first.nonce);
    let nack = &transcript.events[3].event;
    assert_eq!(nack.node.as_deref(), Some("node-1"));
    let What::Request(nack) = &nack.what else {
        panic!("the NACK line");
    };
    assert_eq!(
        nack.error_detail.as_ref().unwrap().message,
        "rejected by the test"
    );
}

#[tokio::test]
async fn record_resources_adds_each_resource_as_proto3_json() {
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("server.jsonl");
    let server = recording(&path, true).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    client.subscribe(CLUSTER, &[]).await;
    drop(client);
    let registry = server.registry().clone();
    registry_until(&registry, "the stream to close", |s| s.is_empty()).await;
    server.server.shutdown().await.unwrap();

    let transcript = read_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(transcript.header.resources);
    let push = transcript.events.iter().find_map(|n| match &n.event.what {
        What::Response(r) => Some(r),
        _ => None,
    });
    let body = push.expect("the push").resources[0]
        .body
        .as_ref()
        .expect("a body");
    assert_eq!(body["@type"], CLUSTER);
    assert_eq!(body["name"], "a");
}

#[tokio::test]
async fn record_to_an_unwritable_path_is_a_clear_start_up_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = xdsloop_server::app::Config::new(dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    let path = dir.path().join("no-such-dir").join("t.jsonl");
    config.record = Some(Recording {
        path: path.clone(),
        resources: false,
    });
    let error = xdsloop_server::app::start(config)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("--record "), "{error}");
    assert!(error.contains(&path.display().to_string()), "{error}");
}
