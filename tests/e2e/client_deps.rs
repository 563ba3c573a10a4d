//! Dependency following over the real server: a new cluster yields one EDS request naming it
//! (C12); a name never served is reported not-found (C14).

use std::time::Duration;

use xdsloop_client::Outgoing;
use xdsloop_client::{Client, Event, Interest, Report, Source, Variant, Verdict};
use xdsloop_proto::type_url::{CLUSTER, ENDPOINT};

use crate::client_support::*;

const EXTRA: &str = r#"
- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: extra
  type: EDS
  connect_timeout: 1s
  eds_cluster_config:
    eds_config:
      ads: {}
"#;

async fn new_cluster_yields_one_eds_request(source: Source) {
    let served = FixtureServer::demo().await;
    let (client, mut reports) = demo_client(config(served.addr(), source.clone())).await;
    let first = served.snapshot();
    store_where(&client, |s| matches_snapshot(s, &first, &source)).await;
    // Only what happens from here on.
    reports = reports.resubscribe();
    served.edit_text("clusters.yaml", |text| text + EXTRA).await;
    let cds = report(&mut reports, |r| match r {
        Report::Update(u) if u.type_url == CLUSTER => Some(u.clone()),
        _ => None,
    })
    .await;
    assert_eq!(
        (cds.verdict, cds.diff.added),
        (Verdict::Ack, vec!["extra".to_string()])
    );
    // Everything the client sends until the server answers for EDS (or goes quiet).
    let mut eds_requests = Vec::new();
    while let Ok(Ok(report)) = tokio::time::timeout(QUIET, reports.recv()).await {
        match report {
            Report::Sent(sent) if sent.request.type_url() == ENDPOINT => {
                eds_requests.push(sent.request)
            }
            Report::Update(u) if u.type_url == ENDPOINT => break,
            _ => {}
        }
    }
    assert_eq!(eds_requests.len(), 1, "{eds_requests:#?}");
    match &eds_requests[0] {
        Outgoing::Sotw(r) => assert_eq!(r.resource_names, ["api", "extra", "web"]),
        Outgoing::Delta(r) => assert_eq!(r.resource_names_subscribe, ["extra"]),
    }
    client.stop().await;
}

#[tokio::test]
async fn client_sotw_new_cluster_yields_one_eds_request_naming_it() {
    new_cluster_yields_one_eds_request(Source::Ads).await;
}

#[tokio::test]
async fn client_delta_new_cluster_yields_one_eds_request_naming_it() {
    new_cluster_yields_one_eds_request(Source::AdsDelta).await;
}

async fn never_served_name_is_not_found(source: Source) {
    let served = FixtureServer::demo().await;
    let mut config = config(served.addr(), source.clone());
    config.not_found_timeout = Duration::from_millis(300);
    let client = Client::start(config, std::future::pending()).unwrap();
    let mut reports = client.reports();
    let mut ghost = client
        .subscribe(ENDPOINT, Interest::names(["ghost", "web"]))
        .await
        .unwrap();
    let missing = tokio::time::timeout(WAIT, async {
        loop {
            match ghost.recv().await.expect("client runs") {
                Event::Missing { names, .. } => return names,
                _ => continue,
            }
        }
    })
    .await
    .expect("ghost reported missing");
    assert_eq!(missing, ["ghost"]);
    let reported = report(&mut reports, |r| match r {
        Report::NotFound { names, .. } => Some(names.clone()),
        _ => None,
    })
    .await;
    assert_eq!(reported, ["ghost"]);
    assert!(client.store().borrow().holds(ENDPOINT, "web"));
    client.stop().await;
}

#[tokio::test]
async fn client_sotw_never_served_name_is_reported_not_found() {
    never_served_name_is_not_found(Source::Ads).await;
}

#[tokio::test]
async fn client_delta_never_served_name_is_reported_not_found() {
    never_served_name_is_not_found(Source::AdsDelta).await;
}

async fn interest_changes_later(source: Source) {
    let served = FixtureServer::demo().await;
    let mut config = config(served.addr(), source.clone());
    config.follow_deps = false;
    let client = Client::start(config, std::future::pending()).unwrap();
    let mut endpoints = client
        .subscribe(ENDPOINT, Interest::names(["web"]))
        .await
        .unwrap();
    let names_of = |event: Event| match event {
        Event::Sotw { resources, .. } => resources.into_iter().map(|r| r.name).collect(),
        Event::Delta { added, .. } => added.into_iter().map(|r| r.name).collect(),
        other => panic!("unexpected {other:?}"),
    };
    let first: Vec<String> = names_of(next(&mut endpoints).await);
    assert_eq!(first, ["web"]);
    endpoints
        .set_interest(Interest::names(["web", "api"]))
        .await
        .unwrap();
    let second: Vec<String> = names_of(next(&mut endpoints).await);
    // SotW delivers the whole wanted set, Delta what was added.
    let expected: &[&str] = match source.variant() {
        Variant::Sotw => &["api", "web"],
        Variant::Delta => &["api"],
    };
    assert_eq!(second, expected);
    store_where(&client, |s| {
        s.holds(ENDPOINT, "api") && s.holds(ENDPOINT, "web")
    })
    .await;
    client.stop().await;
}

#[tokio::test]
async fn client_sotw_subscription_interest_changes_later() {
    interest_changes_later(Source::Ads).await;
}

#[tokio::test]
async fn client_delta_subscription_interest_changes_later() {
    interest_changes_later(Source::AdsDelta).await;
}

async fn next(subscription: &mut xdsloop_client::Subscription) -> Event {
    let event = tokio::time::timeout(WAIT, subscription.recv()).await;
    event.expect("an event in time").expect("client runs")
}
