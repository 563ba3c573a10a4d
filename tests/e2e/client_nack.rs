//! A rejected update is NACKed once, recorded by the server, not resent, and the client keeps
//! the last good config (C5, C6, S3).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use xdsloop_server::testkit::poll_until;

use xdsloop_client::{Report, Source, Validator, Verdict};
use xdsloop_proto::type_url::CLUSTER;

use crate::client_support::*;

/// A validator that refuses the cluster `web` while `refuse` is set, and accepts all else.
pub(crate) fn refuse_web_cluster_while(refuse: &Arc<AtomicBool>) -> Validator {
    let flag = refuse.clone();
    Arc::new(move |type_url: &str, name: &str, _: &[u8]| {
        if flag.load(Ordering::SeqCst) && type_url == CLUSTER && name == "web" {
            Err("web refused by test".into())
        } else {
            Ok(())
        }
    })
}

pub(crate) async fn rejected_update_keeps_the_last_good_config(source: Source) {
    let served = FixtureServer::demo().await;
    let refuse = Arc::new(AtomicBool::new(false));
    let mut config = config(served.addr(), source.clone());
    config.validator = Some(refuse_web_cluster_while(&refuse));
    let (client, mut reports) = demo_client(config).await;
    let first = served.snapshot();
    let good = store_where(&client, |s| matches_snapshot(s, &first, &source)).await;
    // Only what happens from here on.
    reports = reports.resubscribe();
    refuse.store(true, Ordering::SeqCst);
    served
        .edit_text("clusters.yaml", |text| {
            text.replacen("connect_timeout: 0.25s", "connect_timeout: 0.5s", 1)
        })
        .await;
    let nack = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER => Some(u.clone()),
        _ => None,
    })
    .await;
    assert!(
        matches!(&nack.verdict, Verdict::Nack(m) if m.contains("web refused by test")),
        "{nack:?}"
    );

    // The server records the NACK with its message.
    let recorded = wait_until(|| {
        served.registry().streams().into_iter().find_map(|stream| {
            let cds = stream.types.get(CLUSTER)?;
            let nacked = cds.last_nack.as_ref()?;
            Some(format!("{nacked:?}"))
        })
    })
    .await;
    assert!(recorded.contains("web refused by test"), "{recorded}");

    // No resend loop: nothing more for CDS arrives, and the store is the last good one.
    let later = quiet_reports(&mut reports).await;
    let cds_updates = later
        .iter()
        .filter(|r| matches!(r, Report::Update(u) if u.type_url == CLUSTER))
        .count();
    assert_eq!(cds_updates, 0, "{later:#?}");
    let store = client.store().borrow().clone();
    assert_eq!(store.of_type(CLUSTER), good.of_type(CLUSTER));
    client.stop().await;
}

/// Polls a server-side condition (the server has no event stream for its status).
async fn wait_until<T>(mut probe: impl FnMut() -> Option<T>) -> T {
    let found = poll_until("the server state", WAIT, async || probe()).await;
    found.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn client_sotw_nack_is_recorded_and_keeps_the_last_good_config() {
    rejected_update_keeps_the_last_good_config(Source::Ads).await;
}

#[tokio::test]
async fn client_delta_nack_is_recorded_and_keeps_the_last_good_config() {
    rejected_update_keeps_the_last_good_config(Source::AdsDelta).await;
}
