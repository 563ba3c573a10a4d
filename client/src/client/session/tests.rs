//! The reconnect loop against a closed port, with paused tokio time.

use std::time::Duration;

use tokio::time::Instant;

use crate::client::Client;
use crate::config::BackoffConfig;
use crate::config::ClientConfig;
use crate::core::event::{ConnectionReport, Report};

#[tokio::test(start_paused = true)]
async fn c10_unreachable_server_is_retried_with_growing_waits_not_a_tight_loop() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = ClientConfig::new(format!("127.0.0.1:{port}"), "n");
    config.backoff = BackoffConfig {
        initial: Duration::from_secs(1),
        max: Duration::from_secs(4),
        multiplier: 2.0,
        jitter: 0.0,
    };
    let client = Client::start(config, std::future::pending()).unwrap();
    let mut reports = client.reports();
    let _watch = client
        .subscribe(xdsloop_proto::type_url::CLUSTER, crate::Interest::Wildcard)
        .await
        .unwrap();
    let mut connects = Vec::new();
    let mut delays = Vec::new();
    while connects.len() < 4 {
        match reports.recv().await.unwrap() {
            Report::Connection(ConnectionReport::Connecting { attempt, .. }) => {
                connects.push((attempt, Instant::now()));
            }
            Report::Connection(ConnectionReport::BackingOff { delay, .. }) => delays.push(delay),
            _ => {}
        }
    }
    let attempts: Vec<u32> = connects.iter().map(|(a, _)| *a).collect();
    assert_eq!(attempts, vec![1, 2, 3, 4]);
    assert_eq!(delays[..3], [1, 2, 4].map(Duration::from_secs));
    for (pair, delay) in connects.windows(2).zip(&delays) {
        assert!(
            pair[1].1 - pair[0].1 >= *delay,
            "waited before re-connecting"
        );
    }
    client.stop().await;
}
