//! Faults in time: a delayed response, a stream closed at an age, a push storm.

use xdsloop_client::{ConnectionReport, Report, Source, Verdict};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::*;

#[tokio::test]
async fn delay_holds_the_response_and_the_client_acks_it_late() {
    let yaml = "version: 1\nrules:\n- id: slow\n  match: {type: cds}\n  when: {nth: 2}\n  do: {delay: 500ms}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    reports = reports.resubscribe();
    let second = served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    // The server decided the response (PENDING, marked delay) before the client has it.
    let marked = server_shows(&served, |streams| {
        let cds = streams.iter().find_map(|s| s.types.get(CLUSTER))?;
        cds.last_sent.as_ref()?.fault.as_ref().map(|f| f.action)
    })
    .await;
    assert_eq!(marked, "delay");
    let update = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER => Some(u.clone()),
        _ => None,
    })
    .await;
    assert_eq!(update.verdict, Verdict::Ack);
    store_where(&client, |s| matches_snapshot(s, &second, &Source::Ads)).await;
    client.stop().await;
}

#[tokio::test]
async fn a_timed_close_ends_the_stream_at_its_age_and_the_client_reconnects() {
    let yaml = "version: 1\nrules:\n- id: deadline\n  when: {after: 300ms}\n  times: 1\n  do: {close: {code: UNAVAILABLE, message: stream age limit}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let end = report(&mut reports, |r| match r {
        Report::StreamClosed { end, .. } => Some(end.clone()),
        _ => None,
    })
    .await;
    let status = end.status.expect("a status");
    assert_eq!(status, ("UNAVAILABLE".into(), "stream age limit".into()));
    report(&mut reports, |r| match r {
        Report::Connection(ConnectionReport::Connected { .. }) => Some(()),
        _ => None,
    })
    .await;
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Ads)).await;
    assert_eq!(fired(&served, 0), 1);
    client.stop().await;
}

#[tokio::test]
async fn ignore_acks_storms_the_client_with_the_same_clusters() {
    let yaml = "version: 1\nrules:\n- id: storm\n  match: {type: cds}\n  times: 5\n  do: {ignore_acks: {}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let mut acks = Vec::new();
    while acks.len() < 6 {
        let update = report(&mut reports, |r| match r {
            Report::Update(u) if u.type_url == CLUSTER => Some(u.clone()),
            _ => None,
        })
        .await;
        assert_eq!(update.verdict, Verdict::Ack, "{update:?}");
        acks.push((update.version, update.nonce));
    }
    assert!(
        acks.iter().all(|(v, _)| *v == acks[0].0),
        "one version: {acks:?}"
    );
    let nonces: std::collections::BTreeSet<_> = acks.iter().map(|(_, n)| n).collect();
    assert_eq!(nonces.len(), 6, "each a fresh nonce");
    let later = quiet_reports(&mut reports).await;
    assert!(
        !later
            .iter()
            .any(|r| matches!(r, Report::Update(u) if u.type_url == CLUSTER)),
        "times: 5 ends the storm"
    );
    assert_eq!(fired(&served, 0), 5);
    client.stop().await;
}

/// Under a `withhold` of the endpoints of `web`, the client reports them not found once its
/// timer runs out, and holds the endpoints of `api`.
async fn withheld_is_not_found(source: Source) {
    let yaml = "version: 1\nrules:\n- id: hide-web\n  match: {type: eds}\n  do: {withhold: {names: [web]}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, source, |c| {
        c.not_found_timeout = std::time::Duration::from_millis(500);
    })
    .await;
    let missing = report(&mut reports, |r| match r {
        Report::NotFound {
            type_url, names, ..
        } if type_url == ENDPOINT => Some(names.clone()),
        _ => None,
    })
    .await;
    assert_eq!(missing, ["web"]);
    let store = client.store().borrow().clone();
    assert!(store.holds(ENDPOINT, "api") && !store.holds(ENDPOINT, "web"));
    let rule = server_shows(&served, |streams| {
        let eds = streams.iter().find_map(|s| s.types.get(ENDPOINT))?;
        eds.last_fault.as_ref().map(|f| f.mark.action)
    })
    .await;
    assert_eq!(rule, "withhold");
    client.stop().await;
}

#[tokio::test]
async fn withhold_sotw_makes_the_client_report_not_found_after_its_timer() {
    withheld_is_not_found(Source::Ads).await;
}

#[tokio::test]
async fn withhold_delta_makes_the_client_report_not_found_after_its_timer() {
    withheld_is_not_found(Source::AdsDelta).await;
}
