//! Subscription callbacks decide ACK or NACK (Envoy's `SubscriptionCallbacks::onConfigUpdate`
//! returning a failure), against the real server over loopback through its testkit: a
//! rejection reaches the server as a NACK with the callbacks' message while the client keeps
//! its last good config; an acceptance is an ACK; SotW and Delta alike.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use xdsloop_client::envoy::envoy::config::cluster::v3::Cluster;
use xdsloop_client::type_url::CLUSTER;
use xdsloop_client::{
    Client, ClientConfig, Event, Interest, Rejection, Report, Source, Store, TypedEvent,
};
use xdsloop_server::testkit::{Resource, Resources, TestServer};

const WAIT: Duration = Duration::from_secs(10);
const REFUSED: &str = "cluster \"bad\" is not allowed here";

fn cluster(name: &str) -> Resource {
    let cluster = Cluster {
        name: name.into(),
        ..Default::default()
    };
    Resource::from_message(&cluster).unwrap()
}

fn set(version: &str, names: &[&str]) -> Resources {
    Resources::new(names.iter().map(|n| cluster(n))).version(version)
}

fn start(server: &TestServer, node: &str, source: Source) -> Client {
    let mut config = ClientConfig::new(server.addr().to_string(), node);
    config.source = source;
    Client::start(config, std::future::pending()).unwrap()
}

/// The names an update would leave the subscription with (SotW) or adds (Delta).
fn names(update: &Event) -> Vec<String> {
    match update {
        Event::Sotw { resources, .. } => resources.iter().map(|r| r.name.clone()).collect(),
        Event::Delta { added, .. } => added.iter().map(|r| r.name.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Callbacks that refuse any update holding a cluster named "bad".
fn refuse_bad(update: &Event) -> Result<(), Rejection> {
    if names(update).iter().any(|n| n == "bad") {
        return Err(Rejection::new(REFUSED));
    }
    Ok(())
}

/// Waits until the client's store satisfies `holds`.
async fn store_until(client: &Client, holds: impl Fn(&Store) -> bool) -> Arc<Store> {
    let mut store = client.store();
    let found = tokio::time::timeout(WAIT, store.wait_for(|s| holds(s))).await;
    found.expect("the store in time").unwrap().clone()
}

fn held_names(store: &Store) -> Vec<String> {
    let held = store.of_type(CLUSTER);
    held.map(|t| t.resources.keys().cloned().collect())
        .unwrap_or_default()
}

/// Accept → ACK; reject → NACK with the message, old config kept; the next good push → ACK.
async fn callbacks_decide(source: Source, node: &str) {
    let server = TestServer::builder()
        .resources(set("v1", &["web"]))
        .start()
        .await
        .unwrap();
    let client = start(&server, node, source);
    let _clusters = client
        .subscribe_with(CLUSTER, Interest::Wildcard, refuse_bad)
        .await
        .unwrap();
    let good = server.await_ack(node, "cds", None, WAIT).await.unwrap();
    let store = store_until(&client, |s| s.holds(CLUSTER, "web")).await;
    let good_version = store.version(CLUSTER).map(str::to_string);

    let mark = server.mark();
    server
        .set_resources(None, set("v2", &["web", "bad"]))
        .unwrap();
    let nack = server
        .since(mark)
        .await_nack(node, "cds", WAIT)
        .await
        .unwrap();
    assert_eq!(
        nack.message, REFUSED,
        "the callbacks' message is the error_detail"
    );
    assert_ne!(nack.nonce, good.nonce);
    let store = client.store().borrow().clone();
    assert_eq!(
        held_names(&store),
        vec!["web"],
        "the rejected update was not applied"
    );
    assert_eq!(store.version(CLUSTER).map(str::to_string), good_version);

    let mark = server.mark();
    server
        .set_resources(None, set("v3", &["web", "api"]))
        .unwrap();
    server
        .since(mark)
        .await_ack(node, "cds", None, WAIT)
        .await
        .unwrap();
    let store = store_until(&client, |s| s.holds(CLUSTER, "api")).await;
    assert_eq!(held_names(&store), vec!["api", "web"]);
    client.stop().await;
}

#[tokio::test]
async fn sotw_callbacks_ack_what_they_accept_and_nack_what_they_reject() {
    callbacks_decide(Source::Ads, "sotw").await;
}

#[tokio::test]
async fn delta_callbacks_ack_what_they_accept_and_nack_what_they_reject() {
    callbacks_decide(Source::AdsDelta, "delta").await;
}

#[tokio::test]
async fn typed_callbacks_see_decoded_clusters_and_decide() {
    let server = TestServer::builder()
        .resources(set("v1", &["web"]))
        .start()
        .await
        .unwrap();
    let client = start(&server, "typed", Source::Ads);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let callbacks = move |update: &TypedEvent<Cluster>| -> Result<(), Rejection> {
        let TypedEvent::Sotw { resources, .. } = update else {
            return Ok(());
        };
        let names: Vec<String> = resources.iter().map(|c| c.resource.name.clone()).collect();
        log.lock().unwrap().push(names.clone());
        match names.iter().any(|n| n == "bad") {
            true => Err(Rejection::new(REFUSED)),
            false => Ok(()),
        }
    };
    let _clusters = client
        .subscribe_typed_with::<Cluster>(Interest::Wildcard, callbacks)
        .await
        .unwrap();
    server.await_ack("typed", "cds", None, WAIT).await.unwrap();
    server
        .set_resources(None, set("v2", &["bad", "web"]))
        .unwrap();
    let nack = server.await_nack("typed", "cds", WAIT).await.unwrap();
    assert_eq!(nack.message, REFUSED);
    assert_eq!(held_names(&client.store().borrow()), vec!["web"]);
    assert_eq!(*seen.lock().unwrap(), vec![vec!["web"], vec!["bad", "web"]]);
    client.stop().await;
}

#[tokio::test]
async fn one_rejection_among_several_subscriptions_nacks_the_update() {
    let server = TestServer::builder()
        .resources(set("v1", &["web"]))
        .start()
        .await
        .unwrap();
    let client = start(&server, "two", Source::Ads);
    let accept_all = |_: &Event| -> Result<(), Rejection> { Ok(()) };
    let _easy = client
        .subscribe_with(CLUSTER, Interest::Wildcard, accept_all)
        .await
        .unwrap();
    let _strict = client
        .subscribe_with(CLUSTER, Interest::names(["web", "bad"]), refuse_bad)
        .await
        .unwrap();
    let mut plain = client.subscribe(CLUSTER, Interest::Wildcard).await.unwrap();
    server.await_ack("two", "cds", None, WAIT).await.unwrap();
    server
        .set_resources(None, set("v2", &["web", "bad"]))
        .unwrap();
    let nack = server.await_nack("two", "cds", WAIT).await.unwrap();
    assert_eq!(nack.message, REFUSED);
    // The plain subscription got the first update, then hears the rejection, never "bad".
    loop {
        let event = tokio::time::timeout(WAIT, plain.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(!names(&event).contains(&"bad".to_string()), "{event:?}");
        if let Event::Failed { .. } = event {
            break;
        }
    }
    assert_eq!(held_names(&client.store().borrow()), vec!["web"]);
    client.stop().await;
}

#[tokio::test]
async fn callbacks_that_never_answer_reject_the_update_and_stop_still_completes() {
    let server = TestServer::builder()
        .resources(set("v1", &["web"]))
        .start()
        .await
        .unwrap();
    let mut config = ClientConfig::new(server.addr().to_string(), "stuck");
    config.callback_timeout = Duration::from_millis(300);
    let client = Client::start(config, std::future::pending()).unwrap();
    let (release, stuck) = std::sync::mpsc::channel::<()>();
    let never = move |_: &Event| -> Result<(), Rejection> {
        let _ = stuck.recv();
        Ok(())
    };
    let _clusters = client
        .subscribe_with(CLUSTER, Interest::Wildcard, never)
        .await
        .unwrap();
    let nack = server.await_nack("stuck", "cds", WAIT).await.unwrap();
    assert!(
        nack.message.contains("did not answer within 300ms"),
        "{}",
        nack.message
    );
    assert!(
        client.store().borrow().of_type(CLUSTER).is_none(),
        "nothing applied"
    );
    tokio::time::timeout(WAIT, client.stop())
        .await
        .expect("stop completes while the callbacks hang");
    drop(release);
}

#[tokio::test]
async fn rest_polls_at_an_accepted_version_report_no_further_update() {
    // An explicit fixture version: the server answers every poll in full (no 304).
    let server = TestServer::builder()
        .resources(set("v1", &["web"]))
        .start()
        .await
        .unwrap();
    let mut config = ClientConfig::new(server.addr().to_string(), "rest");
    config.source = Source::Rest;
    config.refresh_delay = Duration::from_millis(50);
    let client = Client::start(config, std::future::pending()).unwrap();
    let mut reports = client.reports();
    let polls = Arc::new(Mutex::new(0usize));
    let seen = polls.clone();
    let accept_all = move |_: &Event| -> Result<(), Rejection> {
        *seen.lock().unwrap() += 1;
        Ok(())
    };
    let _clusters = client
        .subscribe_with(CLUSTER, Interest::Wildcard, accept_all)
        .await
        .unwrap();
    loop {
        let report = tokio::time::timeout(WAIT, reports.recv()).await.unwrap();
        if let Report::Update(update) = report.unwrap()
            && update.type_url == CLUSTER
        {
            assert_eq!(update.version, "v1");
            break;
        }
    }
    // Twenty more polls' worth of time, every one answered with v1 again.
    let mut updates = Vec::new();
    let quiet = tokio::time::sleep(Duration::from_secs(1));
    tokio::pin!(quiet);
    loop {
        tokio::select! {
            _ = &mut quiet => break,
            report = reports.recv() => {
                if let Report::Update(update) = report.unwrap()
                    && update.type_url == CLUSTER
                {
                    updates.push(update.version);
                }
            }
        }
    }
    assert_eq!(
        updates,
        Vec::<String>::new(),
        "the accepted v1 is not handed to the mux again"
    );
    assert_eq!(*polls.lock().unwrap(), 1, "the callbacks decided once");
    client.stop().await;
}
