//! Resource TTLs and heartbeats end to end (S14-S16, C17): a fixture wraps an endpoint
//! resource with a TTL, the server sends it wrapped and heartbeats it, and xdsloop-client keeps
//! it while heartbeats come and lets it expire when they stop. Over SotW and Delta. The tap
//! (transcripts, `/status` recent lines) shows heartbeats as a step of their own.

use serde_json::{Value, json};
use tokio::sync::broadcast;
use xdsloop_client::{Client, Interest, Report, Source};
use xdsloop_proto::type_url::ENDPOINT;
use xdsloop_proto::wrapper::RESOURCE_WRAPPER;

use crate::client_support::{WAIT, config, drain, store_where};
use crate::harness::{Events, FixtureServer, endpoints, registry_until};

/// `endpoints(name)` wrapped with a TTL of `ttl_ms`.
fn wrapped(name: &str, port: u32, ttl_ms: u64) -> Value {
    json!({
        "@type": RESOURCE_WRAPPER,
        "ttl": format!("{}s", ttl_ms as f64 / 1000.0),
        "resource": endpoints(name, port),
    })
}

async fn client(server: &FixtureServer, source: Source) -> (Client, broadcast::Receiver<Report>) {
    let client = Client::start(config(server.addr(), source), std::future::pending()).unwrap();
    let reports = client.reports();
    let watch = Interest::names(["web", "api"]);
    drain(client.subscribe(ENDPOINT, watch).await.unwrap());
    store_where(&client, |s| {
        s.holds(ENDPOINT, "web") && s.holds(ENDPOINT, "api")
    })
    .await;
    let mut reports = reports;
    assert_eq!(next(&mut reports).await, Seen::Update, "the first response");
    (client, reports)
}

/// What happens to the endpoints from now on: heartbeat and expiry reports, in order.
#[derive(Debug, PartialEq)]
enum Seen {
    Heartbeat(Vec<String>),
    Expired(Vec<String>),
    Update,
}

/// The next report that is not a heartbeat.
async fn next_change(reports: &mut broadcast::Receiver<Report>) -> Seen {
    loop {
        let seen = next(reports).await;
        if !matches!(seen, Seen::Heartbeat(_)) {
            return seen;
        }
    }
}

async fn next(reports: &mut broadcast::Receiver<Report>) -> Seen {
    let wait = async {
        loop {
            match reports.recv().await.expect("reports flow") {
                Report::Heartbeat {
                    type_url, names, ..
                } if type_url == ENDPOINT => {
                    return Seen::Heartbeat(names);
                }
                Report::Expired {
                    type_url, names, ..
                } if type_url == ENDPOINT => {
                    return Seen::Expired(names);
                }
                Report::Update(u) if u.type_url == ENDPOINT => return Seen::Update,
                _ => {}
            }
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .expect("a report for the endpoints")
}

#[tokio::test]
async fn s14_s15_heartbeats_keep_a_ttl_resource_alive_sotw_and_delta() {
    let files = [(
        "eds.json",
        vec![wrapped("web", 8081, 1200), endpoints("api", 8082)],
    )];
    let server = FixtureServer::start(&files).await;
    for source in [Source::Ads, Source::AdsDelta] {
        let (client, mut reports) = client(&server, source.clone()).await;
        // Heartbeats every 400 ms; six in a row without an expiry outlive the TTL twice (a
        // TTL long enough that a busy machine's stall of a few hundred ms expires nothing).
        for _ in 0..6 {
            assert_eq!(
                next(&mut reports).await,
                Seen::Heartbeat(vec!["web".into()]),
                "{source:?}"
            );
        }
        assert!(client.store().borrow().holds(ENDPOINT, "web"));
        let streams = registry_until(server.registry(), "heartbeats in /status", |all| {
            all.iter().any(|s| {
                let eds = s.types.get(ENDPOINT).and_then(|t| t.heartbeats.clone());
                eds.is_some_and(|h| h.sent >= 3 && h.ttl_resources == 1)
            })
        })
        .await;
        assert!(!streams.is_empty());
        client.stop().await;
    }
}

#[tokio::test]
async fn s16_c17_a_ttl_resource_removed_from_the_fixtures_expires_on_the_client() {
    let files = [(
        "eds.json",
        vec![wrapped("web", 8081, 600), endpoints("api", 8082)],
    )];
    let server = FixtureServer::start(&files).await;
    for source in [Source::Ads, Source::AdsDelta] {
        let (client, mut reports) = client(&server, source.clone()).await;
        assert_eq!(
            next(&mut reports).await,
            Seen::Heartbeat(vec!["web".into()])
        );
        server.edit("eds.json", &[endpoints("api", 9092)]).await;
        assert_eq!(
            next_change(&mut reports).await,
            Seen::Update,
            "{source:?}: api changed"
        );
        // No removal for web: its heartbeats stop and the client lets it expire.
        let expired = next_change(&mut reports).await;
        assert_eq!(expired, Seen::Expired(vec!["web".into()]), "{source:?}");
        assert!(!client.store().borrow().holds(ENDPOINT, "web"));
        assert!(client.store().borrow().holds(ENDPOINT, "api"));
        client.stop().await;
        server
            .edit(
                "eds.json",
                &[wrapped("web", 8081, 600), endpoints("api", 8082)],
            )
            .await;
    }
}

#[tokio::test]
async fn c17_reconnect_mid_ttl_keeps_the_timer_and_refreshes() {
    // A TTL long enough for a restart to fit in it on a loaded machine.
    let ttl_ms = 5_000;
    let files = [(
        "eds.json",
        vec![wrapped("web", 8081, ttl_ms), endpoints("api", 8082)],
    )];
    let server = FixtureServer::start(&files).await;
    let (client, mut reports) = client(&server, Source::Ads).await;
    let server = server.restart().await;
    // The resubscription brings web again (a refresh), before any expiry.
    let resent = next_change(&mut reports).await;
    assert_eq!(resent, Seen::Update, "resent after the reconnect");
    let addr = server.addr();
    server.server.shutdown().await.unwrap();
    // With no server, nothing refreshes it: the timer runs on while disconnected.
    let expired = next_change(&mut reports).await;
    assert_eq!(
        expired,
        Seen::Expired(vec!["web".into()]),
        "server {addr} is gone"
    );
    assert!(
        client.store().borrow().holds(ENDPOINT, "api"),
        "no TTL, no expiry"
    );
    client.stop().await;
}

#[tokio::test]
async fn s15_the_tap_shows_heartbeats_as_their_own_step_and_their_acks() {
    use xdsloop_server::events::{Capture, What, WireEvent, to_line};
    use xdsloop_transcript::{Step, line::What as Line};

    let files = [(
        "eds.json",
        vec![wrapped("web", 8081, 600), endpoints("api", 8082)],
    )];
    let server = FixtureServer::start(&files).await;
    for source in [Source::Ads, Source::AdsDelta] {
        // Bodies asked for: a heartbeat still has none to give.
        let mut events = Events::listen_with(server.registry(), Capture::Bodies);
        let (client, _reports) = client(&server, source.clone()).await;
        let line = |event: &WireEvent| to_line(event, None);
        let beat = loop {
            let event = events.next().await;
            if line(&event).step() == Some(Step::Heartbeat) {
                break event;
            }
        };
        let Line::Response(response) = line(&beat).what else {
            panic!("a heartbeat is a response")
        };
        let names: Vec<&str> = response.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["web"], "{source:?}: what it keeps alive, not api");
        assert!(response.resources.iter().all(|r| r.body.is_none()));
        let answer = events
            .of_stream_until(beat.stream, |e| matches!(e.what, What::Request(_)))
            .await;
        let Line::Request(answer) = line(answer.last().unwrap()).what else {
            unreachable!()
        };
        assert_eq!(
            (answer.step, answer.nonce.as_str()),
            (Step::Ack, response.nonce.as_str()),
            "{source:?}: xdsloop-client ACKs the heartbeat"
        );
        client.stop().await;
    }
}

#[tokio::test]
async fn s15_a_heartbeat_lost_to_a_drop_fault_is_followed_by_the_next_and_the_resource_stays() {
    use xdsloop_server::scenario::Scenario;

    // Heartbeats every second: the one after the lost heartbeat comes a second before expiry,
    // a margin no scheduling stall of a busy test machine eats.
    let files = [(
        "eds.json",
        vec![wrapped("web", 8081, 3000), endpoints("api", 8082)],
    )];
    let server = FixtureServer::start(&files).await;
    for source in [Source::Ads, Source::AdsDelta] {
        // The first EDS response is the push, the second the first heartbeat: it never arrives.
        let yaml = "version: 1\nrules:\n  - match: { type: eds }\n    when: { nth: 2 }\n    times: 1\n    do: { drop: {} }\n";
        let scenario = Scenario::from_yaml(yaml).unwrap_or_else(|e| panic!("{e}"));
        server.running().unwrap().scenarios.set(scenario).unwrap();
        let (client, mut reports) = client(&server, source.clone()).await;
        // Three heartbeats arrive after the lost one; an expiry in between fails `next`'s match.
        for _ in 0..3 {
            assert_eq!(
                next(&mut reports).await,
                Seen::Heartbeat(vec!["web".into()]),
                "{source:?}: the heartbeat after the dropped one keeps web alive"
            );
        }
        let fired = server.running().unwrap().scenarios.current().counters[0].fired();
        assert_eq!(fired, 1, "{source:?}: the heartbeat was dropped");
        assert!(client.store().borrow().holds(ENDPOINT, "web"));
        client.stop().await;
    }
}
