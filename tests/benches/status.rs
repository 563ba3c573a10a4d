//! `/status` with many open streams: starts the real server on a copy of `fixtures/demo`,
//! opens N SotW ADS streams (default 1,000) that subscribe to CDS, EDS, LDS and RDS and ACK
//! everything, waits until `/status` shows every (stream, type) SYNCED, then times GETs of
//! `/status` and the `status` command's table. Prints numbers; asserts nothing about time.
//!
//! `cargo bench -p xdsloop-tests --bench status [-- --streams N --rounds N]`

use std::{
    path::Path,
    time::{Duration, Instant},
};

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use xdsloop_proto::{
    discovery::{DiscoveryRequest, Node},
    envoy::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient,
    type_url::{CLUSTER, ENDPOINT, LISTENER, ROUTE},
};
use xdsloop_server::{
    app::{self, Config},
    status::{StatusDocument, remote, table},
};
use xdsloop_tests::copy_dir;

/// HTTP/2 servers commonly cap concurrent streams per connection (hyper: 200); stay below.
const STREAMS_PER_CONNECTION: usize = 100;
/// What each simulated client subscribes to, with its names (empty = wildcard).
const SUBSCRIPTIONS: [(&str, &[&str]); 4] = [
    (CLUSTER, &[]),
    (ENDPOINT, &["web", "api"]),
    (LISTENER, &[]),
    (ROUTE, &["local_route"]),
];

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name);
    at.and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let streams = arg("--streams", 1000);
    let rounds = arg("--rounds", 20);
    let fixtures = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo"),
        fixtures.path(),
    );
    let mut config = Config::new(fixtures.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    let running = app::start(config).await.unwrap_or_else(|e| panic!("{e}"));
    let admin = running.admin_addr.unwrap().to_string();

    let started = Instant::now();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut channel = None;
    for i in 0..streams {
        if i % STREAMS_PER_CONNECTION == 0 {
            let endpoint = Channel::from_shared(format!("http://{}", running.addr)).unwrap();
            channel = Some(endpoint.connect().await.expect("connects"));
        }
        let channel = channel.clone().unwrap();
        tokio::spawn(client(channel, format!("node-{i}"), stopped.clone()));
    }
    let doc = wait_synced(&admin, streams * SUBSCRIPTIONS.len()).await;
    println!(
        "{streams} streams × {} types SYNCED in {:?}",
        SUBSCRIPTIONS.len(),
        started.elapsed()
    );
    assert_eq!(doc.totals.open_streams, streams);

    let (mut times, mut size) = (Vec::with_capacity(rounds), 0);
    for _ in 0..rounds {
        let at = Instant::now();
        let body = remote::get(&admin, "/status").await.unwrap();
        times.push(at.elapsed());
        size = body.len();
    }
    report("GET /status", &mut times);
    println!(
        "  document: {size} bytes ({} bytes per stream)",
        size / streams.max(1)
    );

    let mut renders = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let at = Instant::now();
        let text = remote::command(&admin, remote::Output::Text).await.unwrap();
        renders.push(at.elapsed());
        size = text.len();
    }
    report("status command (GET + parse + table)", &mut renders);
    let rendered = table::render(&doc, std::time::SystemTime::now());
    println!("  table: {size} bytes, {} lines", rendered.lines().count());

    let _ = stop.send(true);
    running.shutdown().await.unwrap();
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let p50 = times[times.len() / 2];
    let max = times[times.len() - 1];
    println!("{what}: {} rounds, p50 {p50:?}, max {max:?}", times.len());
}

async fn wait_synced(admin: &str, pairs: usize) -> StatusDocument {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let doc = remote::fetch(admin).await.unwrap();
        if doc.totals.synced == pairs {
            return doc;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {pairs} SYNCED after 120 s: {:?}",
            doc.totals.synced,
            doc.totals
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One ADS stream that subscribes to [`SUBSCRIPTIONS`], ACKs every response, and stays open
/// until `stop`.
async fn client(channel: Channel, node: String, mut stop: tokio::sync::watch::Receiver<bool>) {
    // At most one request per type is outstanding: one ACK per response.
    let (requests, rx) = mpsc::channel(SUBSCRIPTIONS.len() * 2);
    let mut ads = AggregatedDiscoveryServiceClient::new(channel);
    let names_of = |url: &str| {
        let found = SUBSCRIPTIONS.iter().find(|(u, _)| *u == url);
        found.map_or(Vec::new(), |(_, n)| {
            n.iter().map(|s| s.to_string()).collect()
        })
    };
    for (i, (url, _)) in SUBSCRIPTIONS.iter().enumerate() {
        let node = (i == 0).then(|| Node {
            id: node.clone(),
            ..Default::default()
        });
        let request = DiscoveryRequest {
            node,
            type_url: url.to_string(),
            resource_names: names_of(url),
            ..Default::default()
        };
        requests.send(request).await.unwrap();
    }
    let Ok(response) = ads
        .stream_aggregated_resources(ReceiverStream::new(rx))
        .await
    else {
        return;
    };
    let mut responses = response.into_inner();
    loop {
        tokio::select! {
            message = responses.message() => {
                let Ok(Some(r)) = message else { return };
                let ack = DiscoveryRequest {
                    version_info: r.version_info.clone(),
                    resource_names: names_of(&r.type_url),
                    type_url: r.type_url.clone(),
                    response_nonce: r.nonce.clone(),
                    ..Default::default()
                };
                if requests.send(ack).await.is_err() {
                    return;
                }
            }
            _ = stop.changed() => return,
        }
    }
}
