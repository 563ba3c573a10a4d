//! The per-stream tap over real gRPC: what an in-process listener on the server's event bus
//! sees of a stream, and what `/status` keeps of it (`recent`).

use std::sync::Arc;

use xdsloop_proto::{
    discovery::DeltaDiscoveryRequest,
    type_url::{CLUSTER, short_name},
};
use xdsloop_server::events::{Names, What, WireEvent, to_line};
use xdsloop_transcript::{Step, line::What as Line};

use crate::harness::*;

/// One line per event: `step type nonce [names]`, what a person reads in a transcript.
fn describe(event: &WireEvent) -> String {
    let line = to_line(event, None);
    let step = line.step().map_or("-", Step::label);
    match &line.what {
        Line::Open(open) => format!("{step} {}", open.transport),
        Line::Request(r) => format!("{step} {} {:?}", short_name(&r.type_url), r.nonce),
        Line::Response(r) => {
            let names: Vec<&str> = r.resources.iter().map(|e| e.name.as_str()).collect();
            format!("{step} {} {:?} {names:?}", short_name(&r.type_url), r.nonce)
        }
        Line::Close(close) => format!("{step} {:?}", close.reason),
        other => format!("{other:?}"),
    }
}

fn describe_all(events: &[Arc<WireEvent>]) -> Vec<String> {
    events.iter().map(|e| describe(e)).collect()
}

fn is_step(step: Step) -> impl Fn(&WireEvent) -> bool {
    move |event| to_line(event, None).step() == Some(step)
}

#[tokio::test]
async fn tap_a_sotw_stream_is_seen_open_subscribe_push_nack_stale_ack_close() {
    // With admin routes: a stream keeps the timeline `/status` shows only then.
    let admin = TestServer::builder().admin();
    let server = serve_with(admin, ResourceSet::default().with(cluster("a"))).await;
    let mut events = Events::listen(server.registry());
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let opened = events.opened().await;
    let stream = opened.stream;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.nack(&first, &[], "").await;
    let mut seen = vec![opened];
    seen.extend(events.of_stream_until(stream, is_step(Step::Nack)).await);
    // Only now: a push racing the NACK would make the NACK itself stale.
    server
        .set_resources(
            None,
            ResourceSet::default().with(cluster("a")).with(cluster("b")),
        )
        .unwrap();
    let second = client.recv().await;
    client.request(CLUSTER, &[], "", &first.nonce).await;
    client.ack(&second, &[]).await;
    seen.extend(events.of_stream_until(stream, is_step(Step::Ack)).await);
    drop(client);
    seen.extend(events.of_stream_until(stream, is_step(Step::Closed)).await);

    let (n1, n2) = (format!("{stream}-1"), format!("{stream}-2"));
    assert_eq!(
        describe_all(&seen),
        [
            "established ads-sotw".to_string(),
            "subscribe cds \"\"".into(),
            format!("push cds {n1:?} [\"a\"]"),
            format!("nack cds {n1:?}"),
            format!("push cds {n2:?} [\"a\", \"b\"]"),
            format!("ignored cds {n1:?}"),
            format!("ack cds {n2:?}"),
            "closed Client".into(),
        ]
    );
    assert!(seen[0].node.is_none(), "the node is unknown at open");
    assert!(
        seen[1..]
            .iter()
            .all(|e| e.node.as_deref() == Some("node-1"))
    );
    let seqs: Vec<u32> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=8).collect::<Vec<_>>());

    let counters = server.registry().counters();
    assert_eq!((counters.requests, counters.responses), (4, 2));
    assert_eq!((counters.acks, counters.nacks, counters.stale), (1, 1, 1));
    // The closed event goes out just before the stream leaves the open list.
    registry_until(server.registry(), "the stream to leave", |s| s.is_empty()).await;
    let closed = server.registry().recently_closed();
    let kept: Vec<u32> = closed[0].stream.recent.iter().map(|e| e.seq).collect();
    assert_eq!(kept, seqs, "the closed stream's timeline has it all");
}

#[tokio::test]
async fn tap_a_delta_stream_shows_subscriptions_declared_versions_and_removals() {
    let server = serve(ResourceSet::default().with(cluster("a"))).await;
    let mut events = Events::listen(server.registry());
    let mut client = DeltaClient::connect(server.addr(), "node-1").await;
    let opened = events.opened().await;
    let stream = opened.stream;
    client
        .send(DeltaDiscoveryRequest {
            type_url: CLUSTER.to_string(),
            resource_names_subscribe: strings(&["a", "missing"]),
            initial_resource_versions: [("a".to_string(), "old".to_string())].into(),
            ..Default::default()
        })
        .await;
    let first = client.recv().await;
    client.ack(&first).await;
    // A nonce of the latest response would make this an ACK; without one it is an update.
    client.change(CLUSTER, &[], &["a"], "").await;
    let mut seen = vec![opened];
    seen.extend(events.of_stream_until(stream, is_step(Step::Update)).await);
    let steps: Vec<String> = seen.iter().map(|e| describe(e)).collect();
    assert_eq!(steps[0], "established ads-delta");
    assert!(steps[1].starts_with("subscribe cds"), "{steps:?}");
    let What::Request(subscribe) = &seen[1].what else {
        panic!("the subscription");
    };
    let Names::Delta {
        subscribe: names,
        initial_versions,
        ..
    } = &subscribe.names
    else {
        panic!("Delta names");
    };
    assert_eq!(names.items.len(), 2);
    assert_eq!(&*initial_versions.items[0].1, "old");
    let What::Response(push) = &seen[2].what else {
        panic!("the push");
    };
    assert_eq!(&*push.resources.items[0].0, "a");
    assert_eq!(&*push.removed.items[0], "missing");
    assert!(steps[3].starts_with("ack cds"), "{steps:?}");
    assert!(
        steps[4].starts_with("update cds"),
        "unsubscribing a: {steps:?}"
    );
}

#[tokio::test]
async fn tap_status_lists_each_streams_recent_events_as_transcript_lines() {
    let files = [("clusters.json", vec![cluster("a")])];
    let server = FixtureServer::start(&files).await;
    let mut client = SotwClient::connect(server.addr(), "node-1").await;
    let first = client.subscribe(CLUSTER, &[]).await;
    client.ack(&first, &[]).await;
    let registry = &server.registry();
    registry_until(registry, "the ACK", |streams| {
        streams.iter().any(|s| s.recent.len() == 4)
    })
    .await;
    let status = http_get(server.addr(), "/status").await.json();
    // Requests and responses say their loop step; the other lines their kind.
    let steps = |events: &serde_json::Value| -> Vec<String> {
        let events = events.as_array().expect("a list").iter();
        let step = |e: &serde_json::Value| {
            let step = e["step"].as_str().or(e["kind"].as_str());
            step.expect("a step or a kind").to_string()
        };
        events.map(step).collect()
    };
    let recent = &status["streams"][0]["recent"];
    assert_eq!(steps(recent), ["open", "subscribe", "push", "ack"]);
    assert_eq!(recent[2]["kind"], "response");
    assert_eq!(recent[2]["resources"][0]["name"], "a");
    assert_eq!(recent[3]["node"], "node-1");
    assert_eq!(status["counters"]["acks"], 1);
    drop(client);
    registry_until(registry, "the stream to close", |s| s.is_empty()).await;
    let status = http_get(server.addr(), "/status").await.json();
    let closed = &status["recently_closed"][0]["recent"];
    assert_eq!(steps(closed).last().map(String::as_str), Some("close"));
    assert_eq!(
        closed.as_array().unwrap().last().unwrap()["reason"],
        "client"
    );
}

#[tokio::test]
async fn tap_a_reconnected_node_resubscribes_what_its_closed_stream_had() {
    let server = serve(ResourceSet::default().with(cluster("a"))).await;
    let mut events = Events::listen(server.registry());
    let mut first = SotwClient::connect(server.addr(), "node-1").await;
    let stream = events.opened().await.stream;
    first.subscribe(CLUSTER, &[]).await;
    drop(first);
    events.of_stream_until(stream, is_step(Step::Closed)).await;
    registry_until(server.registry(), "the stream to leave", |s| s.is_empty()).await;

    let mut again = SotwClient::connect(server.addr(), "node-1").await;
    let stream = events.opened().await.stream;
    again.subscribe(CLUSTER, &[]).await;
    let seen = events.of_stream_until(stream, is_step(Step::Push)).await;
    assert!(
        describe(&seen[0]).starts_with("resubscribe cds"),
        "{:?}",
        describe_all(&seen)
    );
    let mut other = SotwClient::connect(server.addr(), "node-2").await;
    let stream = events.opened().await.stream;
    other.subscribe(CLUSTER, &[]).await;
    let seen = events.of_stream_until(stream, is_step(Step::Push)).await;
    assert!(
        describe(&seen[0]).starts_with("subscribe cds"),
        "another node is new"
    );
}
