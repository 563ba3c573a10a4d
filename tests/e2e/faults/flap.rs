//! `flap`: a cluster alternately gone and back, as the real client applies it, over SotW
//! (missing from a CDS response = deleted) and Delta (`removed_resources`, then sent again).

use xdsloop_client::{Report, Source, UpdateReport, Verdict};
use xdsloop_proto::type_url::CLUSTER;

use super::*;

const BLINK: &str = "version: 1\nrules:\n- id: blink\n  match: {type: cds}\n  do: {flap: {names: [web], period: 300ms}}\n";

/// The next CDS update whose diff `says` holds.
async fn next_cds(
    reports: &mut tokio::sync::broadcast::Receiver<Report>,
    says: impl Fn(&UpdateReport) -> bool,
) -> UpdateReport {
    report(reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER && says(u) => Some(u.clone()),
        _ => None,
    })
    .await
}

async fn web_flaps_then_stays_once_the_rule_goes(source: Source) {
    let served = served_with(BLINK).await;
    let (client, mut reports) = client_of(&served, source, |_| {}).await;
    let web = |names: &Vec<String>| names.iter().any(|n| n == "web");
    let mut versions = std::collections::BTreeSet::new();
    for _ in 0..2 {
        let gone = next_cds(&mut reports, |u| web(&u.diff.removed)).await;
        assert_eq!(gone.verdict, Verdict::Ack, "{gone:?}");
        let back = next_cds(&mut reports, |u| web(&u.diff.added)).await;
        assert_eq!(back.verdict, Verdict::Ack, "{back:?}");
        assert_ne!(gone.version, back.version, "each state its own version");
        versions.extend([gone.version, back.version]);
    }
    assert_eq!(versions.len(), 2, "gone and back: one version each");
    let action = server_shows(&served, |streams| {
        let cds = streams.iter().find_map(|s| s.types.get(CLUSTER))?;
        cds.last_fault.as_ref().map(|f| f.mark.action)
    })
    .await;
    assert_eq!(action, "flap");
    assert!(fired(&served, 0) >= 2, "each removal is a firing");
    served.judge.check();

    // Taken away once more, the rule goes: web comes back and stays.
    next_cds(&mut reports, |u| web(&u.diff.removed)).await;
    scenarios(&served).clear();
    store_where(&client, |s| s.holds(CLUSTER, "web")).await;
    let later = quiet_reports(&mut reports).await;
    let removed = later
        .iter()
        .any(|r| matches!(r, Report::Update(u) if u.type_url == CLUSTER && web(&u.diff.removed)));
    assert!(!removed, "no more flapping: {later:?}");
    assert!(client.store().borrow().holds(CLUSTER, "web"));
    served.judge.check();
    client.stop().await;
}

#[tokio::test]
async fn flap_sotw_client_sees_web_removed_and_readded_until_the_rule_goes() {
    web_flaps_then_stays_once_the_rule_goes(Source::Ads).await;
}

#[tokio::test]
async fn flap_delta_client_sees_web_removed_and_readded_until_the_rule_goes() {
    web_flaps_then_stays_once_the_rule_goes(Source::AdsDelta).await;
}
