//! Faults that end or stall a stream: the client reconnects with backoff and resubscribes
//! (C10, C11), keeping what it had (C13).

use xdsloop_client::{ConnectionReport, Report, Source};
use xdsloop_client::{Outgoing, Step};
use xdsloop_proto::type_url::CLUSTER;

use super::*;

/// Under `yaml` (a rule ending the stream at the 2nd CDS response), the client sees the
/// stream end as `status` says, backs off, reconnects and resubscribes with what it holds.
/// Returns the reason the client gave for the end.
async fn ended_then_resubscribed(source: Source, yaml: &str, status: Option<&str>) -> String {
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, source.clone(), |_| {}).await;
    let first = served.snapshot();
    let before = store_where(&client, |s| matches_snapshot(s, &first, &source)).await;
    reports = reports.resubscribe();
    served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    let end = report(&mut reports, |r| match r {
        Report::StreamClosed { end, .. } => Some(end.clone()),
        _ => None,
    })
    .await;
    assert_eq!(
        end.status.as_ref().map(|(code, _)| code.as_str()),
        status,
        "{end:?}"
    );
    report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::BackingOff { .. }) => Some(()),
        _ => None,
    })
    .await;
    assert!(client.store().borrow().holds(CLUSTER, "web"), "C13: kept");
    let resubscribe = report(&mut reports, |r| match r {
        Report::Sent(sent) if sent.request.type_url() == CLUSTER => Some((**sent).clone()),
        _ => None,
    })
    .await;
    assert_eq!(resubscribe.step, Step::Resubscribe);
    match resubscribe.request {
        Outgoing::Sotw(request) => {
            let held = before.of_type(CLUSTER).unwrap();
            assert_eq!(
                request.version_info, held.version,
                "the last version it applied"
            );
        }
        Outgoing::Delta(request) => {
            let sent: std::collections::BTreeMap<_, _> =
                request.initial_resource_versions.into_iter().collect();
            assert_eq!(
                sent,
                before.held_versions(CLUSTER),
                "initial_resource_versions"
            );
        }
    }
    // The rule fired once: the new stream brings the edit.
    let second = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &second, &source)).await;
    let closed_by = server_shows(&served, |streams| {
        let cds = streams
            .iter()
            .find_map(|s| s.types.get(CLUSTER)?.last_fault.clone())?;
        Some(cds.mark.action)
    })
    .await;
    assert!(matches!(closed_by, "close" | "reset"), "{closed_by}");
    client.stop().await;
    end.reason
}

const CLOSE: &str = "version: 1\nrules:\n- id: maintenance\n  match: {type: cds}\n  when: {nth: 2}\n  times: 1\n  do: {close: {code: UNAVAILABLE, message: maintenance}}\n";
const RESET: &str = "version: 1\nrules:\n- id: cut\n  match: {type: cds}\n  when: {nth: 2}\n  times: 1\n  do: {reset: {scope: stream}}\n";

#[tokio::test]
async fn close_sotw_reconnects_with_backoff_and_resubscribes() {
    ended_then_resubscribed(Source::Ads, CLOSE, Some("UNAVAILABLE")).await;
}

#[tokio::test]
async fn close_delta_resubscribes_with_initial_resource_versions() {
    ended_then_resubscribed(Source::AdsDelta, CLOSE, Some("UNAVAILABLE")).await;
}

#[tokio::test]
async fn reset_stream_ends_it_without_a_status_and_the_client_resubscribes() {
    ended_then_resubscribed(Source::Ads, RESET, None).await;
}

const RESET_CONNECTION: &str = "version: 1\nrules:\n- id: cut\n  match: {type: cds}\n  when: {nth: 2}\n  times: 1\n  do: {reset: {scope: connection}}\n";

/// The whole connection is reset (TCP RST, no gRPC status); the client backs off,
/// reconnects and resubscribes with the versions it holds (C10, C11, C13).
#[tokio::test]
async fn reset_connection_reconnects_with_backoff_and_resubscribes() {
    let reason = ended_then_resubscribed(Source::Ads, RESET_CONNECTION, None).await;
    // A TCP RST, as the client's HTTP/2 stack saw it (a stream reset says "stream error").
    assert!(reason.contains("connection reset"), "{reason}");
}

#[tokio::test]
async fn reset_connection_delta_resubscribes_with_initial_resource_versions() {
    let reason = ended_then_resubscribed(Source::AdsDelta, RESET_CONNECTION, None).await;
    assert!(reason.contains("connection reset"), "{reason}");
}

#[tokio::test]
async fn drop_leaves_the_client_on_its_last_version_until_the_next_change() {
    let yaml = "version: 1\nrules:\n- id: lost\n  match: {type: cds}\n  when: {nth: 2}\n  do: {drop: {}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    let good = store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    reports = reports.resubscribe();
    served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    // The server shows the response it meant to send, dropped, and waits for an answer.
    let pending = server_shows(&served, |streams| {
        let cds = streams.iter().find_map(|s| s.types.get(CLUSTER))?;
        let sent = cds.last_sent.as_ref()?;
        (sent.fault.as_ref()?.action == "drop").then(|| sent.nonce.clone())
    })
    .await;
    assert!(!pending.is_empty());
    let later = quiet_reports(&mut reports).await;
    assert!(
        !later
            .iter()
            .any(|r| matches!(r, Report::Update(u) if u.type_url == CLUSTER)),
        "nothing arrived: {later:#?}"
    );
    assert_eq!(
        client.store().borrow().of_type(CLUSTER),
        good.of_type(CLUSTER)
    );
    // The next change (3rd response) goes out.
    let third = served
        .edit_text("clusters.yaml", |t| t.replacen("0.5s", "0.75s", 1))
        .await;
    store_where(&client, |s| matches_snapshot(s, &third, &Source::Ads)).await;
    client.stop().await;
}

#[tokio::test]
async fn hang_stalls_the_stream_until_its_time_then_the_response_arrives() {
    let yaml = "version: 1\nrules:\n- id: stall\n  match: {type: cds}\n  when: {nth: 2}\n  do: {hang: {for: 1s}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    reports = reports.resubscribe();
    let second = served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    // While hung, the server tells the stream's timeline why nothing moves.
    server_shows(&served, |streams| {
        streams
            .iter()
            .flat_map(|s| s.recent.iter())
            .any(|e| format!("{e:?}").contains("hang for 1s"))
            .then_some(())
    })
    .await;
    store_where(&client, |s| matches_snapshot(s, &second, &Source::Ads)).await;
    let closed = quiet_reports(&mut reports).await;
    assert!(
        !closed
            .iter()
            .any(|r| matches!(r, Report::StreamClosed { .. })),
        "the stream survives a hang: {closed:#?}"
    );
    client.stop().await;
}
