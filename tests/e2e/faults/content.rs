//! Faults that change a response's content: the client NACKs it and keeps its last good
//! config (C5, C6), or, for a reused nonce, simply takes it.

use xdsloop_client::{Report, Source, Verdict};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use super::*;

/// Under `yaml` (a rule mangling the 2nd CDS response), an edit of the clusters is NACKed
/// with a message containing `says`, and the client keeps the clusters it had.
async fn second_cds_is_nacked(source: Source, yaml: &str, says: &str) {
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, source.clone(), |_| {}).await;
    let first = served.snapshot();
    let good = store_where(&client, |s| matches_snapshot(s, &first, &source)).await;
    served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    let nack = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER && u.verdict != Verdict::Ack => Some(u.clone()),
        _ => None,
    })
    .await;
    assert!(
        matches!(&nack.verdict, Verdict::Nack(m) if m.contains(says)),
        "{nack:?}"
    );
    assert_eq!(
        client.store().borrow().of_type(CLUSTER),
        good.of_type(CLUSTER),
        "the last good clusters are kept"
    );
    // The server shows the NACK on the response the rule touched.
    let rule = server_shows(&served, |streams| {
        let cds = streams.iter().find_map(|s| s.types.get(CLUSTER))?;
        cds.last_nack.as_ref()?;
        cds.last_fault.as_ref().map(|f| f.mark.rule.to_string())
    })
    .await;
    assert_eq!(rule, "mangle");
    assert_eq!(fired(&served, 0), 1);
    let counted = served
        .registry()
        .streams()
        .iter()
        .map(|s| s.faults_fired)
        .sum::<u64>();
    assert_eq!(counted, 1, "the stream counts the firing");
    client.stop().await;
}

const CORRUPT: &str = "version: 1\nrules:\n- id: mangle\n  match: {type: cds}\n  when: {nth: 2}\n  do: {corrupt: {resource: web}}\n";

#[tokio::test]
async fn corrupt_sotw_is_nacked_and_the_last_good_clusters_kept() {
    second_cds_is_nacked(Source::Ads, CORRUPT, "").await;
}

#[tokio::test]
async fn corrupt_delta_is_nacked_and_the_last_good_clusters_kept() {
    second_cds_is_nacked(Source::AdsDelta, CORRUPT, "").await;
}

#[tokio::test]
async fn wrong_type_url_in_a_resource_is_nacked() {
    let yaml = "version: 1\nrules:\n- id: mangle\n  match: {type: cds}\n  when: {nth: 2}\n  do: {wrong_type_url: {in: resource, type: eds}}\n";
    second_cds_is_nacked(Source::Ads, yaml, "").await;
}

#[tokio::test]
async fn duplicate_resource_is_nacked() {
    let yaml = "version: 1\nrules:\n- id: mangle\n  match: {type: cds}\n  when: {nth: 2}\n  do: {duplicate: {resource: api}}\n";
    second_cds_is_nacked(Source::Ads, yaml, "api").await;
}

#[tokio::test]
async fn stale_nonce_is_taken_and_its_echo_counts_as_the_ack() {
    let yaml = "version: 1\nrules:\n- id: reuse\n  match: {type: cds}\n  when: {nth: 2}\n  do: {stale_nonce: {}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    let first_nonce = server_shows(&served, |streams| {
        let cds = streams.iter().find_map(|s| s.types.get(CLUSTER))?;
        cds.last_acked.as_ref().map(|a| a.nonce.clone())
    })
    .await;
    let second = served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    let update = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER => Some(u.clone()),
        _ => None,
    })
    .await;
    assert_eq!(
        update.nonce, first_nonce,
        "the response reused the first nonce"
    );
    assert_eq!(
        update.verdict,
        Verdict::Ack,
        "the client does not check nonces"
    );
    store_where(&client, |s| matches_snapshot(s, &second, &Source::Ads)).await;
    let acked = server_shows(&served, |streams| {
        let cds = streams.iter().find_map(|s| s.types.get(CLUSTER))?;
        let acked = cds.last_acked.as_ref()?;
        (acked.version == second.get("client-e2e", CLUSTER)?.version).then(|| acked.nonce.clone())
    })
    .await;
    assert_eq!(
        acked, first_nonce,
        "the echo of the reused nonce is the ACK"
    );
    client.stop().await;
}

#[tokio::test]
async fn oversize_above_the_client_limit_breaks_the_stream_and_it_reconnects() {
    let yaml = "version: 1\nrules:\n- id: big\n  match: {type: cds}\n  times: 1\n  do: {oversize: {bytes: 256KiB}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) =
        client_of(&served, Source::Ads, |c| c.max_message_bytes = 64 * 1024).await;
    let closed = report(&mut reports, |r| match r {
        Report::StreamClosed { end, .. } => Some(end.clone()),
        _ => None,
    })
    .await;
    assert!(
        closed.reason.to_lowercase().contains("large")
            || closed.reason.to_lowercase().contains("out of range")
            || closed.reason.to_lowercase().contains("outofrange"),
        "{closed:?}"
    );
    // The rule fired once: the next stream gets the clusters.
    let snapshot = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &snapshot, &Source::Ads)).await;
    client.stop().await;
}

#[tokio::test]
async fn reorder_sends_endpoints_before_their_clusters() {
    let yaml = "version: 1\nrules:\n- id: deps-first\n  do: {reorder: {}}\n";
    let served = served_with(yaml).await;
    let (client, mut reports) = client_of(&served, Source::Ads, |_| {}).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &Source::Ads)).await;
    reports = reports.resubscribe();
    // One edit that changes a cluster and its endpoints: one batch of CDS and EDS.
    let dir = served.dir.path().to_path_buf();
    let eds = std::fs::read_to_string(dir.join("endpoints.yaml")).unwrap();
    std::fs::write(dir.join("endpoints.yaml"), eds.replacen("8081", "8089", 1)).unwrap();
    served
        .edit_text("clusters.yaml", |t| t.replacen("0.25s", "0.5s", 1))
        .await;
    let mut order = Vec::new();
    while order.len() < 2 {
        let url = report(&mut reports, |r| match r {
            Report::Update(u) if u.type_url == CLUSTER || u.type_url == ENDPOINT => {
                Some(u.type_url.clone())
            }
            _ => None,
        })
        .await;
        order.push(url);
    }
    assert_eq!(order, [ENDPOINT, CLUSTER]);
    assert!(fired(&served, 0) >= 1);
    client.stop().await;
}
