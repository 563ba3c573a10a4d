//! Scenario rules on REST-JSON polls (docs/scenarios.md, "REST polling"): what the real
//! `xdsloop-client --source rest` does under them, what the HTTP answer looks like, and how
//! the server shows a firing (its counters, the rule's last firing on stream 0, a `rest`
//! line on the bus that `--record` writes).

use std::time::Duration;

use xdsloop_client::{ConnectionReport, Report, Source, Verdict};
use xdsloop_proto::type_url::CLUSTER;
use xdsloop_server::{
    events::Capture,
    events::What,
    events::{Received, to_line},
};

use super::*;
use crate::harness::{http_post, http_send};

/// A REST client polling every `refresh`, with `tweak` applied.
async fn rest_client(
    served: &FixtureServer,
    refresh: Duration,
    tweak: impl FnOnce(&mut ClientConfig),
) -> (
    xdsloop_client::Client,
    tokio::sync::broadcast::Receiver<Report>,
) {
    client_of(served, Source::Rest, |c| {
        c.refresh_delay = refresh;
        tweak(c);
    })
    .await
}

/// The server's fault counter.
fn faults_counted(served: &FixtureServer) -> u64 {
    served.registry().counters().faults
}

#[tokio::test]
async fn rest_corrupt_is_rejected_and_the_last_good_clusters_kept() {
    let yaml = "version: 1\nrules:\n- id: mangle\n  match: {service: rest, type: cds}\n  when: {nth: 2}\n  do: {corrupt: {resource: web}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = rest_client(&served, Duration::from_millis(500), |_| {}).await;
    let first = served.snapshot();
    let good = store_where(&client, |s| matches_snapshot(s, &first, &Source::Rest)).await;
    served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    let rejected = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER && u.verdict != Verdict::Ack => Some(u.clone()),
        _ => None,
    })
    .await;
    // No proto3 JSON parser takes the number where the name goes.
    assert!(
        matches!(&rejected.verdict, Verdict::Nack(m) if m.contains("not a DiscoveryResponse")),
        "{rejected:?}"
    );
    assert_eq!(
        client.store().borrow().of_type(CLUSTER),
        good.of_type(CLUSTER),
        "the last good clusters are kept"
    );
    assert_eq!(fired(&served, 0), 1);
    let last = scenarios(&served).current().counters[0].last().unwrap();
    assert_eq!((last.stream, last.node.as_deref()), (0, Some("client-e2e")));
    assert_eq!(
        faults_counted(&served),
        1,
        "counters.faults counts REST firings"
    );
    client.stop().await;
}

#[tokio::test]
async fn rest_close_unavailable_is_an_http_503_the_client_reports_and_polls_again() {
    let yaml = "version: 1\nrules:\n- id: down\n  match: {service: rest, type: cds}\n  times: 1\n  do: {close: {code: UNAVAILABLE, message: maintenance}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = rest_client(&served, Duration::from_millis(100), |_| {}).await;
    let reason = report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::ConnectFailed { reason, .. }) => Some(reason.clone()),
        _ => None,
    })
    .await;
    assert!(
        reason.contains("503") && reason.contains("maintenance"),
        "{reason}"
    );
    // Spent after one firing: the next poll gets the clusters.
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Rest)).await;
    assert_eq!(fired(&served, 0), 1);
    client.stop().await;
}

#[tokio::test]
async fn rest_close_answers_with_the_mapped_status_the_message_and_the_rule() {
    let yaml = "version: 1\nrules:\n- id: busy\n  match: {service: rest}\n  do: {close: {code: RESOURCE_EXHAUSTED, message: too many polls}}\n";
    let served = served_with(yaml).await;
    let poll = r#"{"node": {"id": "n1"}}"#;
    let answer = http_post(served.addr(), "/v3/discovery:clusters", poll).await;
    assert_eq!(answer.status, 429, "{answer:?}");
    assert_eq!(answer.body, "too many polls");
    assert_eq!(answer.header("x-xdsloop-fault"), Some("busy/close"));
}

#[tokio::test]
async fn rest_delay_is_recorded_as_a_rest_response_with_its_fault() {
    let yaml = "version: 1\nrules:\n- id: slow\n  match: {service: rest, type: cds}\n  times: 1\n  do: {delay: 200ms}\n";
    let served = served_with(yaml).await;
    let mut bus = served.registry().bus().listen(Capture::Full);
    let (client, _reports) = rest_client(&served, Duration::from_millis(100), |_| {}).await;
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Rest)).await;
    let event = tokio::time::timeout(WAIT, async {
        loop {
            if let Received::Event(event) = bus.recv().await
                && matches!(&event.what, What::Response(r) if r.fault.is_some())
            {
                return event;
            }
        }
    })
    .await
    .expect("the delayed response is on the bus");
    assert_eq!(event.stream, 0);
    let line = serde_json::to_value(to_line(&event, None)).unwrap();
    assert_eq!(line["transport"], "rest", "{line}");
    assert_eq!(line["type"], "cds", "{line}");
    assert_eq!(line["fault"]["rule"], "slow", "{line}");
    assert_eq!(line["fault"]["action"], "delay", "{line}");
    assert_eq!(faults_counted(&served), 1);
    client.stop().await;
}

#[tokio::test]
async fn rest_hang_without_a_service_leaves_the_poll_unanswered_until_the_client_gives_up() {
    // No `service`: the rule applies to streams and polls alike.
    let yaml =
        "version: 1\nrules:\n- id: stall\n  match: {type: cds}\n  times: 1\n  do: {hang: {}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = rest_client(&served, Duration::from_millis(100), |c| {
        c.request_timeout = Duration::from_millis(300);
    })
    .await;
    let reason = report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::ConnectFailed { reason, .. }) => Some(reason.clone()),
        _ => None,
    })
    .await;
    assert!(reason.contains("no answer within"), "{reason}");
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Rest)).await;
    assert_eq!(fired(&served, 0), 1);
    client.stop().await;
}

#[tokio::test]
async fn rest_refuses_a_stream_only_action_with_file_line_and_why() {
    let served = served_with("version: 1\nrules: []\n").await;
    let yaml = "version: 1\nrules:\n  - match: { service: rest }\n    do: { stale_nonce: {} }\n";
    let answer = http_send(served.addr(), "PUT", "/scenario", Some(yaml)).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    let error = answer.json()["error"].as_str().unwrap().to_string();
    assert!(
        error.starts_with("PUT /scenario:3:23: rules[0]: "),
        "{error}"
    );
    assert!(
        error.contains(
            "`stale_nonce` is not supported with `service: rest`: a REST client echoes no nonce"
        ),
        "{error}"
    );
}
